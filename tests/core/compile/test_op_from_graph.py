"""OpFromGraph: values and gradients equal to the inlined graph on every linker,
overrides, nesting, inlining, graph files."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench import io as graph_io
from workbench.core.compile.mode import available_linkers
from workbench.core.compile.op_from_graph import OpFromGraph

LINKERS = available_linkers()
pytestmark = pytest.mark.filterwarnings("ignore:.*no CUDA device")
RNG = np.random.default_rng(0)
VALUES = [RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2)), RNG.normal(size=2)]


def _dense():
    x, w, b = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("b")
    return OpFromGraph([x, w, b], [wt.tanh(x @ w + b)], name="dense_layer")


def _plain(x, w, b):
    return wt.tanh(x @ w + b)


def _cost(layer):
    x, w, b = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B")
    h = layer(x, w, b)
    cost = (h ** 2).sum() + wt.exp(h).mean()
    return [x, w, b], [cost, *wb.grad(cost, [x, w, b])]


def _ofg_nodes(f):
    return [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, OpFromGraph)]


@pytest.mark.parametrize("linker", LINKERS)
def test_values_and_gradients_equal_the_inlined_graph(linker):
    inputs, outs = _cost(_dense())
    ref_inputs, ref_outs = _cost(_plain)
    got = wb.function(inputs, outs, linker=linker)(*VALUES)
    want = wb.function(ref_inputs, ref_outs, linker=linker)(*VALUES)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_the_node_stays_one_unit_and_its_gradient_is_an_op_from_graph():
    inputs, outs = _cost(_dense())
    f = wb.function(inputs, outs, linker="py")
    names = sorted(str(n.op) for n in _ofg_nodes(f))
    assert "dense_layer" in names and "grad_dense_layer" in names


def test_inline_lets_the_rewriter_expand_it():
    x, w, b = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("b")
    dense = OpFromGraph([x, w, b], [wt.tanh(x @ w + b)], inline=True, name="dense_inline")
    inputs, outs = _cost(dense)
    f = wb.function(inputs, outs)
    assert _ofg_nodes(f) == []
    ref_inputs, ref_outs = _cost(_plain)
    for g, w_ in zip(f(*VALUES), wb.function(ref_inputs, ref_outs)(*VALUES)):
        np.testing.assert_allclose(g, w_, rtol=1e-12)


def test_verify_grad_through_an_op_from_graph():
    dense = _dense()
    wb.verify_grad(lambda x, w, b: dense(x, w, b).sum(), VALUES)


def test_lop_overrides_are_used():
    x = wt.dvector("x")
    # a "straight-through" op: rounds forward, passes the gradient unchanged backward
    straight = OpFromGraph([x], [wt.round_half_to_even(x)], name="straight_through",
                           lop_overrides=lambda inputs, outputs, grads: [grads[0]])
    y = wt.dvector("y")
    g = wb.grad((straight(y) * 3.0).sum(), y)
    np.testing.assert_array_equal(wb.function([y], g)(np.array([0.2, 1.7])), [3.0, 3.0])


def test_an_op_from_graph_as_lop_override():
    x, gz = wt.dvector("x"), wt.dvector("gz")
    out = wt.dvector("out")
    double_grad = OpFromGraph([x, out, gz], [2.0 * gz], name="double_grad")
    op = OpFromGraph([x], [x * 1.0], name="identity_with_double_grad",
                     lop_overrides=double_grad)
    y = wt.dvector("y")
    g = wb.grad(op(y).sum(), y)
    np.testing.assert_array_equal(wb.function([y], g)(np.ones(3)), [2.0, 2.0, 2.0])


def test_rop_default_and_override():
    x = wt.dvector("x")
    square = OpFromGraph([x], [x ** 2], name="square")
    y, v = wt.dvector("y"), wt.dvector("v")
    jv = wb.Rop(square(y), y, v)
    np.testing.assert_allclose(wb.function([y, v], jv)(np.array([1.0, 2.0]), np.ones(2)),
                               [2.0, 4.0])
    fake = OpFromGraph([x], [x ** 2], name="square_fake_rop",
                       rop_overrides=lambda inputs, points: [points[0] * 10.0])
    jv = wb.Rop(fake(y), y, v)
    f = wb.function([y, v], jv, on_unused_input="ignore")  # the fake R_op ignores y
    np.testing.assert_allclose(f(np.array([1.0, 2.0]), np.ones(2)),
                               [10.0, 10.0])


@pytest.mark.parametrize("linker", LINKERS)
def test_nested_op_from_graph(linker):
    dense = _dense()
    x, w, b = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("b")
    w2 = wt.dmatrix("w2")
    two_layers = OpFromGraph([x, w, b, w2], [dense(x, w, b) @ w2], name="two_layers")
    X, W, B, W2 = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B"), wt.dmatrix("W2")
    cost = (two_layers(X, W, B, W2) ** 2).sum()
    ref = (_plain(X, W, B) @ W2 ** 1.0) ** 2
    ref_cost = ref.sum()
    values = [*VALUES, RNG.normal(size=(2, 5))]
    got = wb.function([X, W, B, W2], [cost, *wb.grad(cost, [W, B, W2])], linker=linker)
    want = wb.function([X, W, B, W2], [ref_cost, *wb.grad(ref_cost, [W, B, W2])],
                       linker=linker)
    for g, w_ in zip(got(*values), want(*values)):
        np.testing.assert_allclose(g, w_, rtol=1e-12, atol=1e-12)


def test_a_graph_file_round_trips_it():
    dense = _dense()
    x, w, b = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B")
    h = dense(dense(x, w, b), w, b)  # one Op, two nodes
    document = graph_io.to_document(h, inputs=[x, w, b])
    loaded = graph_io.from_document(document)
    assert str(loaded.outputs[0].owner.op) == "dense_layer"
    assert loaded.outputs[0].owner.op == h.owner.op
    values = [RNG.normal(size=(3, 4)), RNG.normal(size=(4, 4)), RNG.normal(size=4)]
    want = wb.function([x, w, b], h)(*values)
    got = wb.function(loaded.inputs, loaded.outputs[0])(*values)
    np.testing.assert_allclose(got, want)


def test_dprint_names_it_and_shows_its_inner_graph():
    inputs, outs = _cost(_dense())
    text = wb.dprint(outs[0], file="str")
    assert "dense_layer [id" in text and "dense_layer of [id" in text and "Dot" in text


def test_errors_name_the_problem():
    x = wt.dvector("x")
    with pytest.raises(ValueError, match="not among its inputs"):
        OpFromGraph([x], [x + wt.dvector("z")])
    op = OpFromGraph([x], [x * 2.0], name="twice")
    with pytest.raises(TypeError, match="twice takes 1 inputs, got 2"):
        op(x, x)
    with pytest.raises(TypeError, match="expects TensorType"):
        op(wt.dmatrix("m"))
    with_override = OpFromGraph([x], [x * 2.0], name="twice_none",
                                lop_overrides=lambda i, o, g: [None])
    with pytest.raises(TypeError, match="twice_none.*cannot be saved in a graph file"):
        graph_io.to_document(with_override(x), inputs=[x])


def test_a_graph_file_stores_an_inner_graph_once():
    dense = _dense()
    x, w, b = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B")
    document = graph_io.to_document(dense(dense(x, w, b), w, b), inputs=[x, w, b])
    ops = [node["op"] for node in document["nodes"]]
    assert sum("graph" in op for op in ops) == 1
    assert {"same_op_as": 0} in ops
    document["nodes"][1]["op"] = {"same_op_as": 5}
    with pytest.raises(graph_io.GraphFileError, match=r"nodes\[1\].op.same_op_as"):
        graph_io.from_document(document)


@pytest.mark.parametrize("linker", LINKERS)
def test_the_inner_graph_is_linked_by_the_same_kind_of_linker(linker):
    dense = _dense()
    x, w, b = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B")
    f = wb.function([x, w, b], dense(x, w, b) * 2.0, linker=linker)
    f(*[RNG.normal(size=(3, 4)), RNG.normal(size=(4, 4)), RNG.normal(size=4)])
    (kind,) = dense._linked
    assert kind.split(":")[0] == linker
    if linker == "gpu":
        from workbench.core.link.gpu import host_nodes

        assert host_nodes(f) == []  # run on the device, not through perform on the host


def test_shared_variables_inside_become_inputs_and_get_gradients():
    w = wb.shared(RNG.normal(size=(4, 2)), name="w")
    b = wb.shared(np.zeros(2), name="b")
    x = wt.dmatrix("x")
    layer = OpFromGraph([x], [wt.tanh(x @ w + b)], name="layer_with_weights")
    X = wt.dmatrix("X")
    h = layer(X)
    assert h.owner.inputs[1:] == [w, b]
    cost = (h ** 2).sum()
    f = wb.function([X], [cost, *wb.grad(cost, [w, b])])
    ref = (wt.tanh(X @ w + b) ** 2).sum()
    g = wb.function([X], [ref, *wb.grad(ref, [w, b])])
    value = RNG.normal(size=(3, 4))
    for got, want in zip(f(value), g(value)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    w.set_value(np.zeros((4, 2)))  # the node reads the shared value at each call
    assert f(value)[0] == 0.0


def test_vectorize_graph_batches_the_inner_graph_under_the_same_name():
    dense = _dense()
    x, w, b = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B")
    h = dense(x, w, b)
    xs = wt.dtensor3("Xs")
    batched = wb.vectorize_graph(h, {x: xs})
    assert str(batched.owner.op) == "dense_layer" and batched.type.ndim == 3
    values = [RNG.normal(size=(7, 2, 4)), RNG.normal(size=(4, 2)), RNG.normal(size=2)]
    f = wb.function([xs, w, b], [batched, wb.grad((batched ** 2).sum(), w)])
    one = wb.function([x, w, b], [h, wb.grad((h ** 2).sum(), w)])
    got, gw = f(*values)
    loop = [one(values[0][i], values[1], values[2]) for i in range(7)]
    np.testing.assert_allclose(got, np.stack([r[0] for r in loop]), rtol=1e-12)
    np.testing.assert_allclose(gw, sum(r[1] for r in loop), rtol=1e-10)
    # with overrides (written for one example) each item is one call: a Blockwise
    x1 = wt.dmatrix("x1")
    odd = OpFromGraph([x1], [x1 * 2.0], name="odd", lop_overrides=lambda i, o, g: g)
    from workbench.core.tensor.blockwise import Blockwise

    assert isinstance(wb.vectorize_graph(odd(x), {x: xs}).owner.op, Blockwise)


def test_the_profiler_shows_the_time_inside_it_per_inner_node():
    dense = _dense()
    x, w, b = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B")
    f = wb.function([x, w, b], (dense(x, w, b) ** 2).sum())
    stats = wb.profile(f, np.ones((2, 4)), np.ones((4, 2)), np.ones(2), calls=3)
    (inner,) = stats.inner().values()
    assert any("tanh" in str(n.op) for n in inner.order)
    assert "Inside dense_layer" in str(stats)
