"""RewriteTrace: steps, graph_at and view_at back and forth, filters, failed steps, printing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.graph.fg import FunctionGraph
from workbench.core.printing import dprint
from workbench.core.rewrite import (
    EquilibriumGraphRewriter,
    MergeRewriter,
    PatternNodeRewriter,
    RewriteFailureWarning,
    RewriteTrace,
    SequentialGraphRewriter,
    node_rewriter,
    run_rewriter,
)
from workbench.core.tensor.elemwise import Elemwise
from workbench.testing.cost import lines_executed

MUL, DIV = wt.mul.op, wt.true_div.op
MUL_DIV = PatternNodeRewriter((DIV, (MUL, "x", "y"), "y"), "x", name="trace_mul_div_same")
DOUBLE_NEG = PatternNodeRewriter((wt.neg.op, (wt.neg.op, "x")), "x", name="trace_double_neg")
EXP_LOG = PatternNodeRewriter((wt.exp.op, (wt.log.op, "x")), "x", name="trace_exp_log")


def text(fgraph: FunctionGraph) -> str:
    return dprint(fgraph, file="str")


def test_rewrite_graph_on_x_times_y_over_y_records_one_step():
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    fg, trace = wb.rewrite_graph([x * y / y], mode="FAST_RUN", trace=True)
    changed = trace.filter(changed_only=True)
    named = [s for s in changed if "mul_div" in s.rewrite]
    assert len(named) == 1
    step = named[0]
    assert step.pass_ == "canonicalize" and "canonicalize" in step.tags
    assert step.source is not None and ":" in step.source
    before = text(trace.graph_at(0))
    assert "true_div" in before and "mul" in before
    after = text(trace.graph_at(step.index))
    assert "true_div" not in after


def test_x_times_y_over_y_on_scalars_steps_through_its_domain_switch():
    x, y = wt.dscalar("x"), wt.dscalar("y")
    fg, trace = wb.rewrite_graph([x * y / y], trace=True)
    assert [s.rewrite for s in trace] == ["local_mul_div_same", "elemwise_fusion"]
    assert text(trace.graph_at(0)).splitlines()[0].startswith("Elemwise{true_div}")
    # x where y is finite and nonzero, NaN elsewhere (as x*y/y gives)
    assert text(trace.graph_at(1)).splitlines()[0].startswith("Elemwise{switch}")
    assert text(trace.graph_at(0)).splitlines()[0].startswith("Elemwise{true_div}")  # and back


def test_steps_record_nodes_counts_and_ids():
    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(wt.log(wt.neg(wt.neg(x)))) * 2.0])
    trace = run_rewriter(EquilibriumGraphRewriter([DOUBLE_NEG, EXP_LOG], name="eq"), fg)
    assert [s.rewrite for s in trace] == ["trace_double_neg", "trace_exp_log"]
    first, second = trace.steps
    assert len(trace) == 2 and trace[1] is first
    assert first.pass_ == "eq" and first.changed and not first.failed
    assert sorted(str(n.op) for n in first.removed) == ["Elemwise{neg}", "Elemwise{neg}"]
    assert first.introduced == []
    assert first.nodes_before - first.nodes_after == 2
    assert second.nodes_after == 2  # the DimShuffle of 2.0 and the mul
    assert first.removed_ids == [trace.node_id(n) for n in first.removed]
    assert first.time >= 0 and first.ops_after <= first.ops_before
    assert first.source.endswith(str(first.rewriter.source.split(":")[-1]))


def test_graph_at_steps_back_and_forth():
    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(wt.log(wt.neg(wt.neg(x)))) * 2.0])
    trace = run_rewriter(EquilibriumGraphRewriter([DOUBLE_NEG, EXP_LOG]), fg)
    sizes = {k: len(trace.graph_at(k).apply_nodes) for k in (0, 1, 2)}
    assert sizes == {0: 6, 1: 4, 2: 2}
    for k in (2, 0, 1, 2, 1, 0, 2):  # back and forth in any order
        for graph in (trace.graph_at(k), trace.view_at(k)):
            assert len(graph.apply_nodes) == sizes[k]
            graph.check_integrity()
    assert text(trace.graph_at(2)) == text(fg)
    # the views are separate graphs: the rewritten one is untouched
    assert len(fg.apply_nodes) == 2
    # values along the way are those of the input graph
    v = np.array([0.5, 2.0])
    for k in range(3):
        graph = trace.graph_at(k)
        f = wb.function(graph.inputs, graph.outputs[0], mode=wb.Mode("py", None))
        np.testing.assert_allclose(f(v), v * 2)
    with pytest.raises(IndexError, match=r"0 <= k <= 2, got 3"):
        trace.graph_at(3)


def test_graph_at_returns_a_graph_that_stays_at_its_step():
    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(wt.log(wt.neg(wt.neg(x)))) * 2.0])
    trace = run_rewriter(EquilibriumGraphRewriter([DOUBLE_NEG, EXP_LOG]), fg)
    first, last = trace.graph_at(0), trace.graph_at(len(trace))  # the README's line
    assert first is not last
    assert len(first.apply_nodes) == 6 and len(last.apply_nodes) == 2
    middle_text = text(trace.graph_at(1))
    kept = trace.graph_at(1)
    for k in (0, 2, 0):
        trace.view_at(k)
        trace.graph_at(k)
    assert text(kept) == middle_text and text(first) != text(last) == text(fg)
    first.check_integrity()
    kept.check_integrity()


def test_the_live_view_steps_one_step_at_the_cost_of_one_step():
    x = wt.dvector("x")
    out = x
    for _ in range(400):
        out = wt.neg(wt.neg(wt.exp(out)))
    trace = run_rewriter(EquilibriumGraphRewriter([DOUBLE_NEG]), FunctionGraph([x], [out]))
    assert len(trace) == 400
    trace.view_at(400)
    one_step = max(lines_executed(trace.view_at, k)[1] for k in (399, 398, 399, 400))
    _, all_steps = lines_executed(trace.view_at, 0)
    assert all_steps > 100 * one_step, (one_step, all_steps)
    assert len(trace.view_at(0).apply_nodes) == 1200
    # a graph to keep costs one copy of the graph at that step on top
    _, copy = lines_executed(trace.graph_at, 0)
    _, copy_after_one_step = lines_executed(trace.graph_at, 1)
    assert copy_after_one_step < copy


def test_removed_and_introduced_nodes_are_identifiable_in_the_views():
    @node_rewriter([wt.exp.op])
    def local_exp_to_sqr(fgraph, node):
        return [wt.sqr(node.inputs[0])]

    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(x) + 1.0])
    trace = run_rewriter(EquilibriumGraphRewriter([local_exp_to_sqr]), fg)
    (step,) = trace.steps
    (new_id,) = step.introduced_ids
    (old_id,) = step.removed_ids
    before, after = trace.graph_at(0), trace.graph_at(1)
    assert str(trace.node(new_id, after).op) == "Elemwise{sqr}"
    assert str(trace.node(old_id, before).op) == "Elemwise{exp}"
    with pytest.raises(KeyError, match=f"no node with id {new_id}"):
        trace.node(new_id, before)
    assert trace.node_id(trace.node(old_id, before)) == old_id
    assert trace.node(new_id) in trace.view_at(1).apply_nodes  # the live view
    assert trace.node_id(trace.node(old_id)) == old_id


def test_filters_and_table():
    x = wt.dvector("x")
    twice = wt.exp(wt.log(wt.neg(wt.neg(x))))
    fg = FunctionGraph([x], [twice + wt.exp(wt.log(wt.neg(wt.neg(x))))])
    pipeline = SequentialGraphRewriter(MergeRewriter("merge_a"),
                                       EquilibriumGraphRewriter([DOUBLE_NEG, EXP_LOG],
                                                                name="simplify"))
    trace = run_rewriter(pipeline, fg)
    passes = {s.pass_ for s in trace}
    assert passes == {"merge_a", "simplify"}
    assert all(s.pass_ == "simplify" for s in trace.filter(pass_="simplify"))
    assert [s.rewrite for s in trace.filter(rewrite="trace_exp_log")] == ["trace_exp_log"]
    assert all(s.changed for s in trace.filter(changed_only=True))
    table = str(trace)
    assert table.splitlines()[0].split()[:4] == ["step", "rewrite", "tags", "pass"]
    assert "trace_double_neg" in table and "simplify" in table
    assert "trace_exp_log" in str(trace.filter(rewrite="trace_exp_log"))
    assert trace.rewrites_used()["trace_double_neg"] == 1
    # a terminal too narrow for every column: the tags go, the pass stays
    full = max(len(line) for line in table.splitlines())
    narrow = trace.table(width=full - 1)
    assert narrow.splitlines()[0].split()[:4] == ["step", "rewrite", "pass", "nodes"]
    assert trace.table(width=full) == table


def test_failed_steps_are_recorded_with_traceback_and_warned_once():
    @node_rewriter([Elemwise])
    def local_explodes(fgraph, node):
        raise ZeroDivisionError("deliberate")

    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(wt.sin(wt.cos(x)))])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        trace = run_rewriter(EquilibriumGraphRewriter([local_explodes]), fg)
    assert len([w for w in record if issubclass(w.category, RewriteFailureWarning)]) == 1
    failed = trace.filter(failed=True)
    assert len(failed) == 3 and all(s.rewrite == "local_explodes" for s in failed)
    assert "ZeroDivisionError: deliberate" in failed[0].error
    assert "Traceback" in failed[0].error
    assert "FAILED" in str(trace)
    assert not any(s.changed for s in failed)


def test_trace_attaches_once_and_exposes_itself_on_the_graph():
    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(x)])
    trace = RewriteTrace()
    fg.attach_feature(trace)
    assert fg.rewrite_trace is trace
    with pytest.raises(Exception, match="already attached"):
        RewriteTrace().on_attach(fg)
    trace.close()
    assert fg.rewrite_trace is None
    assert len(trace) == 0 and text(trace.graph_at(0)) == text(fg)




def test_the_trace_and_history_keep_one_journal_the_graphs():
    """History's checkpoints and the trace's steps are marks in the graph's one journal; a
    change reverted to a checkpoint leaves no entry, and the trace still replays."""
    from workbench.core.graph.features import History

    x = wt.dvector("x")
    history = History()
    fg = FunctionGraph([x], [wt.exp(wt.exp(x))], features=[history])
    early = fg.outputs[0].owner.inputs[0]
    fg.replace(early, wt.log(fg.inputs[0]), reason="before the trace")  # step 0 has it
    trace = RewriteTrace()
    fg.attach_feature(trace)
    assert trace.journal is fg.journal and len(fg.journal) == 1
    inner = fg.outputs[0].owner.inputs[0]
    mark = fg.checkpoint()
    fg.replace(inner, fg.inputs[0], reason="tried")
    assert len(fg.journal) == mark + 1
    fg.revert(mark)
    assert len(fg.journal) == mark  # undone and gone: the journal is the graph's history
    fg.replace(inner, wt.sqrt(fg.inputs[0]), reason="kept")
    trace.close()
    assert [s.rewrite for s in trace.filter(changed_only=True)][-1] == "kept"
    first = dprint(trace.graph_at(0), file="str")
    last = dprint(trace.graph_at(len(trace)), file="str")
    assert "log" in first and "sqrt" not in first
    assert "sqrt" in last and "log" not in last
    fg.remove_feature(history)  # History gone: nobody keeps the journal
    assert fg.journal is None
