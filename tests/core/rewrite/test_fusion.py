"""Elemwise fusion: elementwise chains and DAGs become one Elemwise over a Composite."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import Mode, RewriteQuery
from workbench.core.graph import utils as graph_utils
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite import rewrite_graph
from workbench.core.rewrite.merge import MergeRewriter
from workbench.core.rewrite.rules.fusion import (
    MAX_FUSED_INPUTS,
    MAX_FUSED_NODES,
    elemwise_fusion,
    find_regions,
    fuse_elemwise,
)
from workbench.core.scalar.composite import Composite
from workbench.core.tensor.elemwise import Elemwise
from workbench.testing.cost import lines_executed
from workbench.testing.random_graphs import SMOOTH, DrawChooser, arrays_agree, generate

NO_REWRITES = Mode(linker="py", rewriter=None)


def _elemwise_nodes(fgraph: FunctionGraph) -> list:
    return [n for n in fgraph.apply_nodes if isinstance(n.op, Elemwise)]


def _chain(x: wt.TensorVariable, n: int) -> wt.TensorVariable:
    z = x
    for i in range(n):
        z = wt.tanh(z) * 0.999 if i % 2 == 0 else z * 1.0001 + 0.5
    return z


def _chain_reference(x: np.ndarray, n: int) -> np.ndarray:
    z = x
    for i in range(n):
        z = np.tanh(z) * 0.999 if i % 2 == 0 else z * 1.0001 + 0.5
    return z


def test_the_issue_expression_compiles_to_one_elemwise() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    expr = wt.exp(x) * wt.sin(y) + x**2 / (1 + y * y) - wt.tanh(x * y)
    f = wb.function([x, y], expr, mode="FAST_RUN")
    nodes = list(f.maker.fgraph.apply_nodes)
    assert len(nodes) == 1
    (node,) = nodes
    assert isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, Composite)
    shown = io.StringIO()
    wb.dprint(f.maker.fgraph, file=shown)
    assert shown.getvalue().startswith("Elemwise{Composite{")
    a, b = np.linspace(-1, 1, 7), np.linspace(0.5, 2, 7)
    expected = np.exp(a) * np.sin(b) + a**2 / (1 + b * b) - np.tanh(a * b)
    np.testing.assert_allclose(f(a, b), expected, rtol=1e-12)


def test_fusion_is_a_named_step_of_the_trace() -> None:
    x = wt.vector("x")
    fgraph, trace = rewrite_graph(wt.exp(x) * 2.0 + wt.sin(x), mode="FAST_RUN", trace=True)
    assert len(fgraph.apply_nodes) == 1
    assert "elemwise_fusion" in [step.rewrite for step in trace.steps]


def test_long_chain_becomes_one_node_per_max_fused_nodes_in_linear_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_utils, "capture_source_locations", False)  # faster building
    x = wt.vector("x")
    work = []
    for n in (100, 1000):
        fgraph = FunctionGraph([x], [_chain(x, n)])
        MergeRewriter().apply(fgraph)  # (as before fusion in every mode: one of each constant)
        n_elemwise = len(_elemwise_nodes(fgraph))
        work.append(lines_executed(fuse_elemwise, fgraph)[1])
        # one fused loop per MAX_FUSED_NODES nodes; the equal middle chunks share one Op, so
        # the C linker compiles them once
        fused = _elemwise_nodes(fgraph)
        assert len(fused) == -(-n_elemwise // MAX_FUSED_NODES)
        assert len({node.op for node in fused}) <= 3
    assert work[1] < 12 * work[0], f"10x the chain, {work[1] / work[0]:.1f}x the work"
    f = wb.function([x], _chain(x, 1000),
                    mode=Mode(rewriter=elemwise_fusion))
    a = np.linspace(-2, 2, 5)
    np.testing.assert_allclose(f(a), _chain_reference(a, 1000), rtol=1e-12)


def test_region_finding_grows_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_utils, "capture_source_locations", False)
    x = wt.vector("x")
    work = []
    for n in (200, 2000):
        order = FunctionGraph([x], [_chain(x, n)]).toposort()
        regions, lines = lines_executed(find_regions, order)
        work.append(lines)
        n_elemwise = sum(isinstance(node.op, Elemwise) for node in order)
        assert all(len(r) <= MAX_FUSED_NODES for r in regions)
        assert sum(len(r) for r in regions) == n_elemwise  # every node in some region
    assert work[1] < 12 * work[0], f"10x the chain, {work[1] / work[0]:.1f}x the work"


def test_a_value_used_elsewhere_is_an_extra_output_not_recomputed() -> None:
    x = wt.vector("x")
    shared_value = wt.exp(x) * 2.0
    out = wt.tanh(shared_value) + 1.0
    total = wt.sum(shared_value)
    f = wb.function([x], [out, total, shared_value], mode=Mode(rewriter=elemwise_fusion))
    fgraph = f.maker.fgraph
    fused = _elemwise_nodes(fgraph)
    assert len(fused) == 1
    (node,) = fused
    assert len(node.outputs) == 2  # the shared value and the final sum are both exported
    _, steps, _ = node.op.scalar_op.signature
    assert [op.name for op, _ in steps].count("exp") == 1  # exp(x) computed once
    a = np.array([0.1, 0.2, -0.3])
    r_out, r_total, r_shared = f(a)
    np.testing.assert_allclose(r_shared, np.exp(a) * 2)
    np.testing.assert_allclose(r_total, np.sum(np.exp(a) * 2))
    np.testing.assert_allclose(r_out, np.tanh(np.exp(a) * 2) + 1)


def test_fusion_never_creates_a_cycle_through_another_op() -> None:
    # exp(x) feeds sum, whose result feeds the mul: exp and mul cannot be one node.
    x = wt.vector("x")
    a = wt.exp(x)
    out = wt.tanh(a * wt.sum(a)) + a
    fgraph = FunctionGraph([x], [out])
    fuse_elemwise(fgraph)
    fgraph.check_integrity()
    fgraph.toposort()  # raises on a cycle
    f = wb.function([x], out, mode=Mode(rewriter=elemwise_fusion))
    v = np.array([0.5, -0.5])
    e = np.exp(v)
    np.testing.assert_allclose(f(v), np.tanh(e * e.sum()) + e)


def test_scalar_constants_become_composite_constants() -> None:
    x = wt.matrix("x")
    fgraph = FunctionGraph([x], [wt.exp(x) * 2.0 + 1.0])
    fuse_elemwise(fgraph)
    (node,) = fgraph.apply_nodes
    assert node.inputs == [fgraph.inputs[0]]
    assert "2.0" in node.op.scalar_op.formula


def test_different_static_shapes_are_not_fused() -> None:
    row = wt.tensor(dtype="float64", shape=(1, None), name="row")
    m = wt.matrix("m")
    out = wt.exp(row) + m  # exp(row) has shape (1, ?), the sum (?, ?)
    fgraph = FunctionGraph([row, m], [out])
    fuse_elemwise(fgraph)
    assert len(_elemwise_nodes(fgraph)) == 2
    f = wb.function([row, m], out, mode=Mode(rewriter=elemwise_fusion))
    r, mv = np.ones((1, 3)), np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f(r, mv), np.exp(r) + mv)


def test_fusion_without_inplace_keeps_inputs() -> None:
    x = wt.vector("x")
    mode = Mode(rewriter=RewriteQuery(exclude=("inplace",)))
    f = wb.function([x], wt.exp(x) + wt.sin(x), mode=mode)
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(f(v), np.exp(v) + np.sin(v))
    np.testing.assert_array_equal(v, [1.0, 2.0])


_UNARY = [(wt.exp, np.exp), (wt.tanh, np.tanh), (wt.sin, np.sin), (wt.neg, np.negative)]
_BINARY = [(wt.add, np.add), (wt.mul, np.multiply), (wt.sub, np.subtract),
           (wt.maximum, np.maximum)]


@st.composite
def _expressions(draw: st.DrawFn, depth: int = 4) -> tuple:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return ("leaf", draw(st.integers(0, 2)))
    if draw(st.booleans()):
        return ("un", draw(st.integers(0, len(_UNARY) - 1)), draw(_expressions(depth - 1)))
    return ("bin", draw(st.integers(0, len(_BINARY) - 1)), draw(_expressions(depth - 1)),
            draw(_expressions(depth - 1)))


def _build(tree: tuple, leaves: list, symbolic: bool) -> object:
    kind = tree[0]
    if kind == "leaf":
        return leaves[tree[1]]
    if kind == "un":
        fn = _UNARY[tree[1]][0 if symbolic else 1]
        return fn(_build(tree[2], leaves, symbolic))
    fn = _BINARY[tree[1]][0 if symbolic else 1]
    return fn(_build(tree[2], leaves, symbolic), _build(tree[3], leaves, symbolic))


@settings(max_examples=25, deadline=None)
@given(_expressions(), _expressions())
def test_fusion_preserves_values_of_random_expressions(t1: tuple, t2: tuple) -> None:
    xs = [wt.vector("a"), wt.vector("b"), wt.vector("c")]
    outs = [_build(t1, xs, True), _build(t2, xs, True)]
    outs = [o if o not in xs else o * 1.0 for o in outs]
    f = wb.function(xs, outs, mode=Mode(rewriter=elemwise_fusion), on_unused_input="ignore")
    vals = [np.linspace(-1, 1, 4) * (k + 1) for k in range(3)]
    got = f(*vals)
    for tree, value in zip((t1, t2), got):
        expected = _build(tree, vals, False)
        np.testing.assert_allclose(value, np.broadcast_to(expected, value.shape), rtol=1e-12)


def test_exported_values_keep_their_own_shape_when_lengths_may_broadcast() -> None:
    # a = exp(x) is used by the sum; a + y may be longer than a (x of length 1 at run
    # time): a cannot be an output of the fused node, which has the broadcast shape.
    x, y = wt.vector("x"), wt.vector("y")
    a = wt.exp(x)
    out = wt.tanh(a + y) * 2.0
    f = wb.function([x, y], [out, wt.sum(a)], mode=Mode(rewriter=elemwise_fusion))
    r_out, r_sum = f(np.zeros(1), np.zeros(3))
    np.testing.assert_allclose(r_out, np.tanh(np.ones(3)) * 2)
    assert r_sum == 1.0
    fused = [n for n in _elemwise_nodes(f.maker.fgraph)
             if isinstance(n.op.scalar_op, Composite)]
    assert len(fused) == 1 and len(fused[0].outputs) == 1  # exp(x) stayed on its own
    # With the same source of lengths, the shared value is an extra output instead.
    e = wt.exp(x)
    g = wb.function([x], [wt.tanh(e + x), wt.sum(e)], mode=Mode(rewriter=elemwise_fusion))
    (node,) = [n for n in g.maker.fgraph.apply_nodes if isinstance(n.op, Elemwise)]
    assert len(node.outputs) == 2


def _leaves_and_reenters(fgraph: FunctionGraph, region: list) -> bool:
    """Whether some path leaves `region` and comes back into it (the region is not
    convex: fusing it would make the fused node feed itself)."""
    members = set(region)
    stack = [client for node in region for out in node.outputs
             for client, _ in fgraph.clients[out] if client != "output"
             and client not in members]
    seen: set = set()
    while stack:
        node = stack.pop()
        if node in members:
            return True
        if node in seen:
            continue
        seen.add(node)
        stack.extend(client for out in node.outputs for client, _ in fgraph.clients[out]
                     if client != "output")
    return False


def test_fusion_keeps_regions_convex_in_the_issue_reproducers() -> None:
    # Each graph has two elemwise nodes joined through a node left outside the region
    # (std + logsumexp, a max, a sigmoid's division): fusing both made a cycle.
    x, y, v = wt.dvector("x"), wt.dvector("y"), wt.dvector("v")
    a = np.array([0.5, 1.0, 2.0])
    f = wb.function([x], wb.grad(wt.logsumexp(wt.std(x), keepdims=True).sum(), x))
    np.testing.assert_allclose(f(a), [-0.35634832, -0.08908708, 0.4454354], rtol=1e-7)

    e = wt.sqr(wt.exp(x))
    out = wt.cast(wt.eq(e, wt.max(e)), "float64") * (wt.exp(x) * 2) * wt.exp(x)
    got = wb.function([x], out)(a)
    np.testing.assert_allclose(got, np.where(a == a.max(), 2 * np.exp(2 * a), 0.0))

    # the binary cross-entropy of PyTensor's logistic-regression tutorial
    p = 1 / (1 + wt.exp(-v))
    xent = y * wt.log(p)
    labels = np.array([0.0, 1.0, 1.0])
    value, grad = wb.function([y, v], [xent, wb.grad(xent.sum(), v)])(labels, a)
    sig = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(value, labels * np.log(sig), rtol=1e-12)
    np.testing.assert_allclose(grad, labels * (1 - sig), rtol=1e-12)


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_fusion_regions_are_convex_on_random_graphs_and_their_gradients(data) -> None:
    graph = generate(DrawChooser(data), SMOOTH, max_steps=10)
    note(str(graph))
    inputs, outputs = graph.symbolic()
    grads = wb.grad(graph.cost(outputs), inputs, disconnected_inputs="ignore")
    fgraph = rewrite_graph([*outputs, *grads], inputs=inputs, exclude=("fusion", "inplace"))
    regions = find_regions(fgraph.toposort())
    for region in regions:
        assert not _leaves_and_reenters(fgraph, region), (str(graph), region)
    before = wb.function(inputs, [*outputs, *grads], mode=NO_REWRITES,
                         on_unused_input="ignore")(*graph.values)
    fuse_elemwise(fgraph)
    fgraph.toposort()  # raises on a cycle
    after = wb.function(fgraph.inputs, fgraph.outputs, mode=NO_REWRITES,
                         on_unused_input="ignore")(*graph.values)
    for got, want in zip(after, before):
        assert arrays_agree(got, want, rtol=1e-12, atol=1e-14), str(graph)


def test_constants_are_data_so_terms_differing_in_them_share_one_kind() -> None:
    # each term used to fuse into a Composite of its own constants: a C kind per term
    x = wt.dvector("x")

    def terms(n: int) -> wt.TensorVariable:
        return wt.stack([wt.sin(x * (1.0 + i / n)) + i / n for i in range(n)]).sum(0)

    kinds = []
    for n in (10, 40):
        fgraph = rewrite_graph(terms(n), mode="FAST_RUN")
        kinds.append({node.op for node in _elemwise_nodes(fgraph)})
    assert len(kinds[1]) == len(kinds[0]) <= 3
    f = wb.function([x], terms(12), linker="c")
    a = np.linspace(-1, 1, 5)
    expected = sum(np.sin(a * (1.0 + i / 12)) + i / 12 for i in range(12))
    np.testing.assert_allclose(f(a), expected, rtol=1e-12)


def test_small_literals_stay_in_the_composite() -> None:
    x = wt.dvector("x")
    fgraph = rewrite_graph(wt.exp(x) * 2.0 + 1.0, mode="FAST_RUN")
    (node,) = _elemwise_nodes(fgraph)
    assert node.inputs == [fgraph.inputs[0]]


def test_a_fused_node_reads_at_most_max_fused_inputs_values() -> None:
    # a sum of 2,000 scalars fused into nodes of hundreds of inputs: minutes of C compile
    xs = [wt.dscalar(f"x{i}") for i in range(200)]
    fgraph = rewrite_graph(sum(xs[1:], xs[0]), mode="FAST_RUN")
    fused = _elemwise_nodes(fgraph)
    assert all(len(node.inputs) <= MAX_FUSED_INPUTS for node in fused)
    assert len(fused) < 200 / (MAX_FUSED_INPUTS / 2) and len({n.op for n in fused}) <= 3
    f = wb.function(xs, sum(xs[1:], xs[0]), linker="c")
    assert f(*[float(i) for i in range(200)]) == sum(range(200))
