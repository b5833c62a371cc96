"""Inplace rewrites: intermediates are overwritten, inputs and values still needed never are."""

from __future__ import annotations

import io

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
import workbench.io as graph_io
from workbench.core.compile.mode import Mode, RewriteQuery
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite import rewrite_graph
from workbench.core.rewrite.rules.inplace import inplace_rewriter
from workbench.core.tensor.elemwise import Elemwise
from workbench.core.tensor.subtensor import IncSubtensor

ONLY_INPLACE = Mode(rewriter=inplace_rewriter)
NO_FUSION = Mode(rewriter=RewriteQuery(exclude=("fusion",)))


def _inplace_nodes(fgraph: FunctionGraph) -> list:
    return [n for n in fgraph.apply_nodes if n.op.destroy_map]


def _shown(fgraph: FunctionGraph) -> str:
    out = io.StringIO()
    wb.dprint(fgraph, file=out)
    return out.getvalue()


def test_an_intermediate_is_reused_and_inputs_are_untouched() -> None:
    x = wt.vector("x")
    f = wb.function([x], wt.tanh(wt.exp(x)) * 2.0, mode=NO_FUSION)
    text = _shown(f.maker.fgraph)
    assert "Elemwise{tanh,inplace}" in text
    assert "Elemwise{exp}" in text  # exp reads the input x: it may not overwrite it
    v = np.array([0.1, -0.2, 0.3])
    kept = v.copy()
    for _ in range(3):
        np.testing.assert_allclose(f(v), np.tanh(np.exp(kept)) * 2)
    np.testing.assert_array_equal(v, kept)


def test_fused_nodes_write_into_intermediates_with_fast_run() -> None:
    m, v = wt.matrix("m"), wt.vector("v")
    a = wt.dot(m, v)  # not elementwise: its result is an intermediate the fused node may reuse
    f = wb.function([m, v], wt.exp(a) + wt.sin(a), mode="FAST_RUN")
    shown = _shown(f.maker.fgraph)
    assert shown.startswith("Elemwise{Composite{") and ",inplace}" in shown, shown
    mv, vv = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, 0.25])
    np.testing.assert_allclose(f(mv, vv), np.exp(mv @ vv) + np.sin(mv @ vv))
    np.testing.assert_array_equal(vv, [0.5, 0.25])


def test_a_function_input_is_never_destroyed() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    f = wb.function([x, y], x * y + 1.0, mode="FAST_RUN")
    u, w = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    for _ in range(2):
        np.testing.assert_allclose(f(u, w), [4.0, 9.0])
    np.testing.assert_array_equal(u, [1.0, 2.0])
    np.testing.assert_array_equal(w, [3.0, 4.0])


def test_a_value_used_later_is_never_destroyed() -> None:
    x = wt.vector("x")
    a = wt.exp(x)
    b = wt.tanh(a)
    f = wb.function([x], [b * a, a], mode=ONLY_INPLACE)
    for node in _inplace_nodes(f.maker.fgraph):
        destroyed = [node.inputs[i] for ins in node.op.destroy_map.values() for i in ins]
        assert all(v.owner is None or v.owner.op != a.owner.op for v in destroyed)
    v = np.array([0.5, 1.5])
    r_ba, r_a = f(v)
    np.testing.assert_allclose(r_a, np.exp(v))
    np.testing.assert_allclose(r_ba, np.tanh(np.exp(v)) * np.exp(v))


def test_readers_run_before_the_destroyer() -> None:
    x = wt.vector("x")
    a = wt.exp(x)
    out = wt.tanh(a) + wt.sum(a)  # tanh may overwrite a once the sum has read it
    f = wb.function([x], out, mode=ONLY_INPLACE)
    fgraph = f.maker.fgraph
    tanh_node = next(n for n in fgraph.apply_nodes
                     if isinstance(n.op, Elemwise) and str(n.op.scalar_op) == "tanh")
    assert tanh_node.op.destroy_map == {0: [0]}
    v = np.array([0.1, 0.2, 0.3])
    for _ in range(2):
        np.testing.assert_allclose(f(v), np.tanh(np.exp(v)) + np.exp(v).sum())


def test_inc_subtensor_overwrites_an_intermediate_only() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    on_intermediate = wt.inc_subtensor(wt.exp(x)[1:3], y)
    on_input = wt.set_subtensor(x[0:2], y)
    f = wb.function([x, y], [on_intermediate, on_input], mode=ONLY_INPLACE)
    shown = _shown(f.maker.fgraph)
    assert "IncSubtensor{1:3;inplace}" in shown
    assert "SetSubtensor{0:2}" in shown  # x is an input: copied, not overwritten
    u, w = np.array([0.0, 1.0, 2.0, 3.0]), np.array([10.0, 20.0])
    r1, r2 = f(u, w)
    expected = np.exp(u)
    expected[1:3] += w
    np.testing.assert_allclose(r1, expected)
    np.testing.assert_allclose(r2, [10.0, 20.0, 2.0, 3.0])
    np.testing.assert_array_equal(u, [0.0, 1.0, 2.0, 3.0])


def test_gemm_overwrites_its_accumulated_operand_when_it_is_an_intermediate() -> None:
    from workbench.core.tensor.blas import gemm_no_inplace

    a, b = wt.matrix("a"), wt.matrix("b")
    z = wt.exp(wt.dot(a, b))  # certainly of the product's shape: it can hold the result
    out = gemm_no_inplace(z, wt.constant(2.0), a, b, wt.constant(1.0))
    f = wb.function([a, b], out, mode=ONLY_INPLACE)
    (node,) = [n for n in f.maker.fgraph.apply_nodes if "Gemm" in type(n.op).__name__]
    assert node.op.inplace and node.op.destroy_map == {0: [0]}
    av, bv = np.eye(2), np.arange(4.0).reshape(2, 2)
    np.testing.assert_allclose(f(av, bv), 2 * av @ bv + np.exp(av @ bv))
    np.testing.assert_array_equal(av, np.eye(2))


def test_gemm_in_place_on_an_operand_that_may_broadcast_checks_at_run_time() -> None:
    from workbench.core.tensor.blas import gemm_no_inplace

    a, b, c = wt.matrix("a"), wt.matrix("b"), wt.matrix("c")
    out = gemm_no_inplace(wt.exp(c), wt.constant(2.0), a, b, wt.constant(1.0))
    f = wb.function([a, b, c], out, mode=ONLY_INPLACE)
    # Gemm checks the shapes itself (`inplace_falls_back`): written in place when exp(c)
    # has the product's shape, a new result when it broadcasts
    assert _inplace_nodes(f.maker.fgraph)
    av, bv = np.eye(2), np.arange(4.0).reshape(2, 2)
    for cv in (np.ones((1, 2)), np.ones((2, 2))):
        np.testing.assert_allclose(f(av, bv, cv), 2 * av @ bv + np.exp(cv))


def test_lengths_unknown_statically_may_broadcast_at_run_time() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    f = wb.function([x, y], wt.exp(x) + wt.exp(y), mode=NO_FUSION)
    # Neither exp may hold the sum: either could have length 1 and broadcast.
    assert not _inplace_nodes(f.maker.fgraph)
    np.testing.assert_allclose(f(np.zeros(1), np.zeros(3)), [2.0, 2.0, 2.0])
    g = wb.function([x], wt.exp(x) + wt.sin(x), mode=NO_FUSION)
    assert _inplace_nodes(g.maker.fgraph)  # same length for sure: exp(x) is reused
    np.testing.assert_allclose(g(np.zeros(2)), [1.0, 1.0])


def test_broadcast_to_views_are_never_written() -> None:
    x = wt.vector("x")
    b = wt.broadcast_to(wt.exp(x), (2, x.shape[0]))
    f = wb.function([x], wt.tanh(b), mode=ONLY_INPLACE)
    assert not _inplace_nodes(f.maker.fgraph)
    v = np.array([0.0, 1.0])
    np.testing.assert_allclose(f(v), np.tanh(np.broadcast_to(np.exp(v), (2, 2))))


def test_broadcast_inputs_are_not_overwritten() -> None:
    m, row = wt.matrix("m"), wt.row("row")
    out = wt.exp(row) + wt.exp(m)  # exp(row) has a length-1 dimension: it cannot hold the sum
    fgraph = rewrite_graph(out, mode=NO_FUSION)
    for node in _inplace_nodes(fgraph):
        for ins in node.op.destroy_map.values():
            assert node.inputs[ins[0]].type == node.outputs[0].type
    f = wb.function([m, row], out, mode=NO_FUSION)
    mv, rv = np.ones((3, 2)), np.array([[0.0, 1.0]])
    np.testing.assert_allclose(f(mv, rv), np.exp(rv) + np.exp(mv))


def test_inplace_steps_are_recorded_by_name() -> None:
    x = wt.vector("x")
    _, trace = rewrite_graph(wt.tanh(wt.exp(x)), mode=NO_FUSION, trace=True)
    assert "inplace" in [step.rewrite for step in trace.steps]


def test_lazy_graphs_only_overwrite_values_nobody_else_reads() -> None:
    # The lazy VM runs nodes on demand, without the DestroyHandler's orderings.
    from workbench.core.ifelse import ifelse

    a, b = wt.vector("a"), wt.vector("b")
    weights = wt.constant(np.array([1.0, 2.0, 3.0, 4.0]))
    out = ifelse(a.sum() > b.sum(), a - b, b - a)
    grads = wb.grad((out * weights).sum(), [a, b])
    f = wb.function([a, b], grads, mode="FAST_RUN")
    av, bv = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 0.1, 0.2, 0.3])
    for _ in range(2):
        ga, gb = f(av, bv)
        np.testing.assert_allclose(ga, [1.0, 2.0, 3.0, 4.0])
        np.testing.assert_allclose(gb, [-1.0, -2.0, -3.0, -4.0])


# -- inplace Ops the user made: the caller's arrays are protected ------------------------
def _inplace_exp(x):
    return Elemwise(wt.exp(x).owner.op.scalar_op, inplace_pattern={0: 0})(x)


def _inplace_set(target, value):
    node = wt.set_subtensor(target, value).owner
    return IncSubtensor(node.op.idx_list, set_instead_of_inc=True, inplace=True)(*node.inputs)


@pytest.mark.parametrize("linker", ["py", "c", "gpu", "debug"])
def test_an_explicit_inplace_elemwise_leaves_the_callers_input_alone(linker: str) -> None:
    x = wt.dvector("x")
    f = wb.function([x], _inplace_exp(x), linker=linker)
    v = np.array([0.0, 1.0])
    for _ in range(2):
        np.testing.assert_allclose(f(v), np.exp([0.0, 1.0]))
    np.testing.assert_array_equal(v, [0.0, 1.0])


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE", "DEBUG"])
@pytest.mark.parametrize("linker", ["py", "c"])
def test_an_explicit_inplace_set_subtensor_leaves_the_callers_input_alone(
        mode: str, linker: str) -> None:
    m, row = wt.dmatrix("m"), wt.dvector("row")
    whole = _inplace_set(m[0], row)
    through_view = _inplace_set(m[1:][0], row)  # m[1:] is a view of the input m
    f = wb.function([m, row], [whole, through_view], mode=mode, linker=linker)
    a = np.zeros((2, 2))
    r1, r2 = f(a, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(r1, [[1.0, 2.0], [0.0, 0.0]])
    np.testing.assert_array_equal(r2, [[1.0, 2.0]])
    np.testing.assert_array_equal(a, np.zeros((2, 2)))


def test_an_inplace_op_read_from_a_graph_file_leaves_the_input_alone(tmp_path) -> None:
    x = wt.dvector("x")
    graph_io.save([_inplace_exp(x)], tmp_path / "g.json", inputs=[x])
    inputs, outputs = graph_io.load(tmp_path / "g.json")
    assert outputs[0].owner.op.destroy_map == {0: [0]}
    f = wb.function(inputs, outputs[0])
    v = np.array([0.0, 1.0])
    np.testing.assert_allclose(f(v), np.exp([0.0, 1.0]))
    np.testing.assert_array_equal(v, [0.0, 1.0])


def test_shared_values_and_constants_are_never_overwritten() -> None:
    s = wb.shared(np.array([0.0, 1.0]), name="s")
    c = wt.constant(np.array([2.0, 3.0]))
    f = wb.function([], [_inplace_exp(s), _inplace_exp(c)])
    for _ in range(2):
        r_s, r_c = f()
        np.testing.assert_allclose(r_s, np.exp([0.0, 1.0]))
        np.testing.assert_allclose(r_c, np.exp([2.0, 3.0]))
    np.testing.assert_array_equal(s.get_value(borrow=True), [0.0, 1.0])


def test_an_explicit_inplace_op_on_a_value_read_afterwards_copies() -> None:
    x = wt.dvector("x")
    h = wt.exp(x)
    destroyed = _inplace_exp(h)
    f = wb.function([x], [destroyed + h, h])  # h is read after, and is an output
    v = np.array([0.0, 0.5])
    total, h_value = f(v)
    np.testing.assert_allclose(total, np.exp(np.exp(v)) + np.exp(v))
    np.testing.assert_allclose(h_value, np.exp(v))


def test_an_input_marked_mutable_may_be_overwritten() -> None:
    x = wt.dvector("x")
    f = wb.function([wb.In(x, mutable=True)], _inplace_exp(x), linker="py")
    assert _inplace_nodes(f.maker.fgraph)  # the user's inplace Op is kept
    v = np.array([0.0, 1.0])
    out = f(v)
    np.testing.assert_allclose(out, np.exp([0.0, 1.0]))


def test_prechecking_many_readers_of_a_view_of_an_input_stays_linear() -> None:
    # 1,000 Elemwise nodes reading one view of an input: each inplace precheck walked
    # all of its readers before refusing to overwrite the input (quadratic)
    from workbench.testing.cost import lines_executed

    x = wt.dvector("x")
    row = x.dimshuffle("x", 0)
    work = []
    for n in (100, 1000):
        fgraph = FunctionGraph([x], [wt.concatenate([row * (1.0 + i / n) for i in range(n)])])
        work.append(lines_executed(inplace_rewriter.apply, fgraph)[1])
        assert not any(isinstance(node.op, Elemwise) and node.op.inplace_pattern
                       for node in fgraph.apply_nodes)  # the input is never destroyed
    assert work[1] < 15 * work[0], f"10x the readers, {work[1] / work[0]:.1f}x the work"


def test_the_inplace_step_keeps_the_outputs_name() -> None:
    """An output called `cost` is still `cost` after the inplace pass replaced its node."""
    x = wt.vector("x")
    cost = (wt.exp(x) * 2.0).sum() / 3.0
    cost.name = "cost"
    fgraph, trace = rewrite_graph(cost, mode=NO_FUSION, trace=True)
    assert any(step.rewrite == "inplace" for step in trace.steps)
    assert [o.name for o in fgraph.outputs] == ["cost"]
    assert _inplace_nodes(fgraph)
