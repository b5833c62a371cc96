"""The rewrite database: registration, tags, queries by tag and by name."""

from __future__ import annotations

import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite import (
    EquilibriumGraphRewriter,
    MergeRewriter,
    PassDatabase,
    RewriteDatabase,
    SequentialGraphRewriter,
    WalkingGraphRewriter,
    node_rewriter,
    rewrite_db,
    run_rewriter,
)
from workbench.core.rewrite.db import _register_in


@node_rewriter([wt.exp.op])
def local_db_exp_to_sqr(fgraph, node):
    return [wt.sqr(node.inputs[0])]


@node_rewriter([wt.log.op])
def local_db_log_to_neg(fgraph, node):
    return [-node.inputs[0]]


def small_db() -> RewriteDatabase:
    db = RewriteDatabase("test_db")
    inner = PassDatabase("simplify")
    inner.register("local_db_exp_to_sqr", local_db_exp_to_sqr, "fast_run", "simplify")
    inner.register("local_db_log_to_neg", local_db_log_to_neg, "fast_run", "simplify", "risky")
    db.register("merge", MergeRewriter(), "fast_run", "fast_compile", "merge", position=0)
    db.register("simplify", inner, "fast_run", "simplify", position=1)
    return db


def ops_after(db: RewriteDatabase, **query) -> list[str]:
    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(x) + wt.log(x)])
    db.query(**query).rewrite(fg)
    return sorted(str(n.op) for n in fg.apply_nodes)


def test_queries_by_tags_and_names():
    db = small_db()
    assert ops_after(db) == ["Elemwise{add}", "Elemwise{neg}", "Elemwise{sqr}"]
    assert ops_after(db, include=("fast_compile",)) == [
        "Elemwise{add}", "Elemwise{exp}", "Elemwise{log}"]
    assert ops_after(db, exclude=("risky",)) == ["Elemwise{add}", "Elemwise{log}", "Elemwise{sqr}"]
    assert ops_after(db, exclude=("local_db_exp_to_sqr",)) == [
        "Elemwise{add}", "Elemwise{exp}", "Elemwise{neg}"]
    assert ops_after(db, exclude=("simplify",)) == ["Elemwise{add}", "Elemwise{exp}",
                                                    "Elemwise{log}"]
    # a single rewrite by name, even though its pass was not asked for by tag
    assert ops_after(db, include=("local_db_log_to_neg",)) == [
        "Elemwise{add}", "Elemwise{exp}", "Elemwise{neg}"]
    assert ops_after(db, require=("risky",)) == ["Elemwise{add}", "Elemwise{exp}",
                                                 "Elemwise{neg}"]


def test_query_builds_a_pipeline_of_passes():
    pipeline = small_db().query()
    assert isinstance(pipeline, SequentialGraphRewriter)
    assert [str(p) for p in pipeline] == ["merge", "simplify"]
    assert isinstance(pipeline.rewriters[1], EquilibriumGraphRewriter)


def test_names_lookup_tags_and_errors():
    db = small_db()
    assert db.names() == ["merge", "simplify", "local_db_exp_to_sqr", "local_db_log_to_neg"]
    assert db["local_db_log_to_neg"] is local_db_log_to_neg
    assert "risky" in db.tags_of("local_db_log_to_neg")
    assert "risky" in db.all_tags()
    assert "nope" not in db
    with pytest.raises(KeyError, match="no rewrite named 'nope'"):
        db["nope"]
    with pytest.raises(ValueError, match="already registered"):
        db.register("merge", MergeRewriter())
    with pytest.raises(TypeError, match="tags must be strings"):
        db.register("other", MergeRewriter(), 3)
    with pytest.raises(TypeError, match="include"):
        db.query(include=[1])
    assert db.remove("local_db_exp_to_sqr") is local_db_exp_to_sqr
    assert "local_db_exp_to_sqr" not in db


def test_sequence_pass_walks_node_rewriters_then_runs_graph_rewriters():
    seq = PassDatabase("late", kind="sequence")
    seq.register("local_db_exp_to_sqr", local_db_exp_to_sqr, "fast_run")
    seq.register("merge_late", MergeRewriter("merge_late"), "fast_run")
    rewriter = seq.query()
    assert str(rewriter) == "late"  # one pass of the trace, named after the database
    assert isinstance(rewriter.inner.rewriters[0], WalkingGraphRewriter)
    assert str(rewriter.inner.rewriters[1]) == "merge_late"
    assert seq.query(include=("nothing",)) is None
    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(x) + wt.exp(x)])
    trace = run_rewriter(rewriter, fg)
    assert trace.steps and {s.pass_ for s in trace.steps} == {"late"}


def test_global_database_passes_and_tags():
    names = [e.name for e in rewrite_db._ordered()]
    assert names == ["merge1", "canonicalize", "stabilize", "specialize", "fusion", "inplace",
                     "merge2", "protect_inputs", "backend_dtypes"]
    assert "constant_folding" in rewrite_db
    assert {"canonicalize", "fast_run", "fast_compile"} <= rewrite_db.tags_of("constant_folding")
    compile_passes = [str(p) for p in rewrite_db.query(include=("fast_compile",))]
    assert compile_passes[0] == "merge1" and compile_passes[-3] == "merge2"
    # what linking needs runs last in every query, unless excluded by name or tag
    assert compile_passes[-2:] == ["protect_inputs", "backend_dtypes"]
    assert [str(p) for p in rewrite_db.query(include=())] == compile_passes[-2:]
    assert "backend_dtypes" not in [str(p) for p in rewrite_db.query(exclude=("casting",))]
    assert "fusion" not in compile_passes and "stabilize" not in compile_passes


def test_register_decorators_add_pass_tags_and_are_stackable():
    register_testpass = _register_in("stabilize")

    @register_testpass("my_tag")
    @node_rewriter([wt.exp.op])
    def local_db_registered(fgraph, node):
        return None

    try:
        assert rewrite_db["local_db_registered"] is local_db_registered
        tags = rewrite_db.tags_of("local_db_registered")
        assert {"stabilize", "fast_run", "my_tag"} <= tags
        assert "fast_compile" not in tags
        with pytest.raises(TypeError, match="above @node_rewriter"):
            register_testpass(lambda fgraph, node: None)
    finally:
        rewrite_db.remove("local_db_registered")
    assert "local_db_registered" not in rewrite_db


def test_rewrite_graph_exclude_by_name():
    x = wt.dvector("x")
    fg = wb.rewrite_graph([wt.exp(x) * 1.0], exclude=("constant_folding",))
    assert fg.outputs[0].owner is not None
    with pytest.raises(TypeError, match="not a Variable"):
        wb.rewrite_graph([3])
