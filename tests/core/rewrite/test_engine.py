"""The rewrite engine: node and pattern rewriters, walks, equilibrium, merge, constant folding."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.graph.basic import Apply, Constant
from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.op import Op
from workbench.core.rewrite import (
    EquilibriumGraphRewriter,
    MergeRewriter,
    PatternNodeRewriter,
    RewriteCycleWarning,
    RewriteFailureWarning,
    RewriteTrace,
    SequentialGraphRewriter,
    WalkingGraphRewriter,
    constant_folding,
    node_rewriter,
    run_rewriter,
)
from workbench.core.tensor.elemwise import Elemwise

MUL, DIV, ADD, SUB = wt.mul.op, wt.true_div.op, wt.add.op, wt.sub.op


def ops_of(fgraph: FunctionGraph) -> list[str]:
    """The graph's Ops, leaving out the DimShuffles that broadcast constants."""
    return sorted(str(node.op) for node in fgraph.apply_nodes
                  if not (str(node.op).startswith("DimShuffle")
                          and isinstance(node.inputs[0], Constant)))


def mul_div_same() -> PatternNodeRewriter:
    return PatternNodeRewriter((DIV, (MUL, "x", "y"), "y"), "x", name="test_mul_div_same")


# -- node rewriters ---------------------------------------------------------------------


def test_node_rewriter_decorator_names_tracks_and_source():
    @node_rewriter([Elemwise])
    def local_exp_to_zero(fgraph, node):
        return None

    assert local_exp_to_zero.name == "local_exp_to_zero"
    assert local_exp_to_zero.tracks() == [Elemwise]
    assert local_exp_to_zero.source.startswith(__file__ + ":")
    with pytest.raises(TypeError, match="list of Op classes"):
        node_rewriter(Elemwise)


def test_node_rewriter_is_only_tried_on_tracked_nodes():
    seen = []

    @node_rewriter([wt.exp.op])
    def local_watch(fgraph, node):
        seen.append(str(node.op))

    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(x) + wt.log(x) * 2])
    WalkingGraphRewriter([local_watch]).rewrite(fg)
    assert seen == ["Elemwise{exp}"]


def test_list_and_dict_results_replace_outputs_and_keep_names():
    @node_rewriter([wt.exp.op])
    def local_exp_to_sqr(fgraph, node):
        return [wt.sqr(node.inputs[0])]

    @node_rewriter([wt.log.op])
    def local_log_to_neg(fgraph, node):
        return {node.outputs[0]: -node.inputs[0]}

    x = wt.dvector("x")
    out = wt.exp(x) + wt.log(x)
    out.name = "total"
    e = wt.exp(x)
    e.name = "e"
    fg = FunctionGraph([x], [out, e])
    WalkingGraphRewriter([local_exp_to_sqr, local_log_to_neg]).rewrite(fg)
    assert "Elemwise{exp}" not in ops_of(fg) and "Elemwise{log}" not in ops_of(fg)
    assert fg.outputs[1].name == "e"  # the replacement took the old name
    f = wb.function([fg.inputs[0]], fg.outputs, mode=wb.Mode("py", None))
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(f(v)[0], v**2 - v)


def test_pattern_rewriter_x_times_y_over_y():
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    fg = FunctionGraph([x, y], [x * y / y])
    WalkingGraphRewriter([mul_div_same()]).rewrite(fg)
    assert fg.outputs[0] is fg.inputs[0]
    # the same variable must match "y" twice: x*y/z is left alone
    z = wt.dmatrix("z")
    fg = FunctionGraph([x, y, z], [x * y / z])
    WalkingGraphRewriter([mul_div_same()]).rewrite(fg)
    assert ops_of(fg) == ["Elemwise{mul}", "Elemwise{true_div}"]


def test_pattern_rewriter_constraints_constants_and_multiple_clients():
    x = wt.dvector("x")
    is_x = {"pattern": "a", "constraint": lambda v: v.name == "x"}
    rw = PatternNodeRewriter((ADD, is_x, 0.0), "a", name="add_zero_of_x")
    y = wt.dvector("y")
    fg = FunctionGraph([x, y], [x + 0.0, y + 0.0, x + 1.0])
    WalkingGraphRewriter([rw]).rewrite(fg)
    assert fg.outputs[0] is fg.inputs[0]  # constraint holds, constant matched by value
    assert fg.outputs[1].owner is not None  # constraint fails on y
    assert fg.outputs[2].owner is not None  # 1.0 is not 0.0
    # an inner node with another client is not absorbed unless allowed
    a, b = wt.dvector("a"), wt.dvector("b")
    prod = a * b
    fg = FunctionGraph([a, b], [prod / b, prod])
    WalkingGraphRewriter([mul_div_same()]).rewrite(fg)
    assert fg.outputs[0].owner is not None
    rw = PatternNodeRewriter((DIV, (MUL, "x", "y"), "y"), "x", allow_multiple_clients=True)
    WalkingGraphRewriter([rw]).rewrite(fg)
    assert fg.outputs[0] is fg.inputs[0]


def test_pattern_output_builds_new_nodes():
    rw = PatternNodeRewriter((SUB, "x", (wt.neg.op, "y")), (ADD, "x", "y"), name="sub_neg")
    x, y = wt.dvector("x"), wt.dvector("y")
    fg = FunctionGraph([x, y], [x - (-y)])
    WalkingGraphRewriter([rw]).rewrite(fg)
    assert ops_of(fg) == ["Elemwise{add}"]


def test_walking_orders():
    order = {"in_to_out": [], "out_to_in": []}

    def make(kind):
        @node_rewriter([Elemwise])
        def local_record(fgraph, node):
            order[kind].append(str(node.op))
        return local_record

    x = wt.dvector("x")
    out = wt.log(wt.exp(x))
    for kind in order:
        fg = FunctionGraph([x], [out])
        WalkingGraphRewriter([make(kind)], order=kind).rewrite(fg)
    assert order["in_to_out"] == ["Elemwise{exp}", "Elemwise{log}"]
    assert order["out_to_in"] == ["Elemwise{log}", "Elemwise{exp}"]
    with pytest.raises(ValueError, match="order"):
        WalkingGraphRewriter([make("in_to_out")], order="sideways")


def test_equilibrium_reaches_a_fixed_point_through_new_nodes():
    # neg(neg(x)) -> x, applied repeatedly, removes any even number of negations
    rw = PatternNodeRewriter((wt.neg.op, (wt.neg.op, "x")), "x", name="double_neg")
    x = wt.dvector("x")
    out = x
    for _ in range(8):
        out = -out
    fg = FunctionGraph([x], [out * 2])
    EquilibriumGraphRewriter([rw]).rewrite(fg)
    assert ops_of(fg) == ["Elemwise{mul}"]
    walk = FunctionGraph([x], [out * 2])
    WalkingGraphRewriter([rw]).rewrite(walk)  # one pass does not get there
    assert len(walk.apply_nodes) > 1


def test_equilibrium_revisits_a_node_when_its_input_changes():
    # log(exp(x)) -> x only once exp(2*x) has become exp(x + x) -> ... chain of two rewrites
    to_add = PatternNodeRewriter((MUL, "x", 2.0), (ADD, "x", "x"), name="mul2_to_add")
    log_exp = PatternNodeRewriter((wt.log.op, (wt.exp.op, "x")), "x", name="log_exp")
    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.log(wt.exp(x * 2.0)) + 1.0])
    EquilibriumGraphRewriter([log_exp, to_add]).rewrite(fg)
    assert ops_of(fg) == ["Elemwise{add}", "Elemwise{add}"]


def test_equilibrium_detects_rewrites_that_undo_each_other():
    exp_to_sqr = PatternNodeRewriter((wt.exp.op, "x"), (wt.sqr.op, "x"), name="exp_to_sqr")
    sqr_to_exp = PatternNodeRewriter((wt.sqr.op, "x"), (wt.exp.op, "x"), name="sqr_to_exp")
    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(x)])
    with pytest.warns(RewriteCycleWarning, match="undo each other") as record:
        EquilibriumGraphRewriter([exp_to_sqr, sqr_to_exp]).rewrite(fg)
    assert len([w for w in record if issubclass(w.category, RewriteCycleWarning)]) == 1
    text = str(record[0].message)
    assert "exp_to_sqr" in text and "sqr_to_exp" in text
    fg.check_integrity()


def test_equilibrium_is_bounded_by_max_use_ratio():
    counter = {"n": 0}

    @node_rewriter([wt.exp.op])
    def local_grow(fgraph, node):  # always makes a new, different node
        counter["n"] += 1
        return [wt.exp(node.inputs[0] + float(counter["n"]))]

    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(x)])
    with pytest.warns(RewriteCycleWarning, match="stopped after"):
        EquilibriumGraphRewriter([local_grow], max_use_ratio=3).rewrite(fg)
    assert counter["n"] < 200


def test_merge_identical_nodes_and_equal_constants():
    x = wt.dvector("x")
    a = wt.exp(x) + wt.constant(np.array(2.0))
    b = wt.exp(x) + wt.constant(np.array(2.0))
    fg = FunctionGraph([x], [a * b])
    assert len(fg.apply_nodes) == 7  # exp, DimShuffle of 2.0 and add, twice; mul
    MergeRewriter().rewrite(fg)
    assert ops_of(fg) == ["Elemwise{add}", "Elemwise{exp}", "Elemwise{mul}"]
    assert len(fg.apply_nodes) == 4
    mul = fg.outputs[0].owner
    assert mul.inputs[0] is mul.inputs[1]
    constants = {v for v in fg.variables if isinstance(v, Constant)}
    assert len(constants) == 1
    fg.check_integrity()


def test_merge_keeps_different_constants_apart():
    x = wt.dvector("x")
    fg = FunctionGraph([x], [(x + 2.0) * (x + 3.0)])
    MergeRewriter().rewrite(fg)
    assert len([n for n in fg.apply_nodes if str(n.op) == "Elemwise{add}"]) == 2


class NoFoldOp(Op):
    """An op of this test's own that refuses constant folding."""

    __props__ = ()

    def make_node(self, x):
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * 3

    def do_constant_folding(self, fgraph, node):
        return False


def test_constant_folding_computes_constant_nodes():
    x = wt.dvector("x")
    c = wt.constant(np.array([1.0, 4.0]))
    fg = FunctionGraph([x], [x + wt.sqrt(c) * 2.0])
    EquilibriumGraphRewriter([constant_folding]).rewrite(fg)
    assert ops_of(fg) == ["Elemwise{add}"]
    folded = fg.outputs[0].owner.inputs[1]
    assert isinstance(folded, Constant)
    np.testing.assert_allclose(folded.data, [2.0, 4.0])


def test_constant_folding_honours_do_constant_folding():
    x = wt.dvector("x")
    c = wt.constant(np.array([1.0, 4.0]))
    fg = FunctionGraph([x], [x + NoFoldOp()(c)])
    EquilibriumGraphRewriter([constant_folding]).rewrite(fg)
    assert any(isinstance(n.op, NoFoldOp) for n in fg.apply_nodes)


def test_replacement_types_are_validated():
    @node_rewriter([wt.exp.op])
    def local_bad_type(fgraph, node):  # a matrix for a vector
        return [wt.dmatrix("m")]

    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(x)])
    with pytest.warns(RewriteFailureWarning, match="local_bad_type"):
        WalkingGraphRewriter([local_bad_type]).rewrite(fg)
    assert ops_of(fg) == ["Elemwise{exp}"]  # unchanged
    fg.check_integrity()


def test_a_failing_rewrite_is_recorded_and_warned_once():
    @node_rewriter([Elemwise])
    def local_broken(fgraph, node):
        raise RuntimeError("boom")

    x = wt.dvector("x")
    fg = FunctionGraph([x], [wt.exp(wt.log(wt.sin(x)))])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        trace = run_rewriter(EquilibriumGraphRewriter([local_broken]), fg)
    assert len([w for w in record if issubclass(w.category, RewriteFailureWarning)]) == 1
    assert isinstance(trace, RewriteTrace)
    failed = trace.filter(failed=True)
    assert len(failed) == 3 and "RuntimeError: boom" in failed[0].error
    assert len(fg.apply_nodes) == 3
    # strict (DEBUG) stops at the first failure
    fg2 = FunctionGraph([x], [wt.exp(x)])
    with pytest.raises(RuntimeError, match="boom"):
        run_rewriter(EquilibriumGraphRewriter([local_broken]), fg2, strict=True)


def test_sequential_runs_passes_in_order():
    x = wt.dvector("x")
    double_neg = PatternNodeRewriter((wt.neg.op, (wt.neg.op, "x")), "x", name="double_neg")
    seq = SequentialGraphRewriter(MergeRewriter(), EquilibriumGraphRewriter([double_neg]),
                                  name="pipeline")
    fg = FunctionGraph([x], [wt.neg(wt.neg(x)) + wt.neg(wt.neg(x))])
    seq.rewrite(fg)
    assert ops_of(fg) == ["Elemwise{add}"]
    assert list(seq.last_times) == ["merge", "equilibrium"]
    with pytest.raises(TypeError, match="GraphRewriters"):
        SequentialGraphRewriter(double_neg)


def test_dispatch_by_scalar_op_class_is_exact():
    seen = []

    @node_rewriter([MUL])
    def local_mul_only(fgraph, node):
        seen.append(str(node.op))

    x = wt.dvector("x")
    fg = FunctionGraph([x], [(x * 2.0) + (x - 1.0) * x])
    EquilibriumGraphRewriter([local_mul_only]).rewrite(fg)
    assert sorted(seen) == ["Elemwise{mul}", "Elemwise{mul}"]
