"""OpFromGraph gradient overrides in graph files: an OpFromGraph override is stored (once),
a callable is traced into one when saved or refused with a clear error; values and
gradients after loading equal those before, on py and c."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench import io as graph_io
from workbench.core.compile.op_from_graph import OpFromGraph

LINKERS = ["py", "c"]
VALUE = np.array([0.2, 1.7, -2.6])


def _straight_through():
    """Rounds forward; the callable override passes 3x the gradient back."""
    x = wt.dvector("x")
    return OpFromGraph([x], [wt.round_half_to_even(x)], name="straight_through",
                       lop_overrides=lambda inputs, outputs, grads: [grads[0] * 3.0])


def _round_trip(outputs, inputs, tmp_path):
    path = tmp_path / "graph.json"
    graph_io.save(outputs, path, inputs=inputs)
    return graph_io.load(path)


def _value_and_grad(inputs, cost, linker):
    return wb.function(inputs, [cost, wb.grad(cost, inputs[0])], linker=linker)(VALUE)


@pytest.mark.parametrize("linker", LINKERS)
def test_a_callable_lop_override_is_traced_and_round_trips(linker, tmp_path):
    y = wt.dvector("y")
    cost = (_straight_through()(y) ** 2).sum()
    loaded = _round_trip(cost, [y], tmp_path)
    (op,) = {n.op for n in wb.FunctionGraph(loaded.inputs, loaded.outputs).apply_nodes
             if isinstance(n.op, OpFromGraph)}
    assert isinstance(op.lop_overrides, OpFromGraph) and str(op.lop_overrides) == \
        "lop_straight_through"
    before = _value_and_grad([y], cost, linker)
    after = _value_and_grad(loaded.inputs, loaded.outputs[0], linker)
    np.testing.assert_array_equal(before[1], 2.0 * np.round(VALUE) * 3.0)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("linker", LINKERS)
def test_an_op_from_graph_override_shared_by_two_ops_is_stored_once(linker, tmp_path):
    x, out, gz = wt.dvector("x"), wt.dvector("out"), wt.dvector("gz")
    halve = OpFromGraph([x, out, gz], [0.5 * gz * out], name="halve_grad")
    a = OpFromGraph([x], [wt.exp(x)], name="exp_halved", lop_overrides=halve)
    b = OpFromGraph([x], [wt.sin(x) + 2.0], name="sin_halved", lop_overrides=halve)
    y = wt.dvector("y")
    cost = (a(y) * b(y)).sum()
    document = graph_io.to_document(cost, inputs=[y])
    text = str(document)
    assert text.count("'graph'") == 3  # exp_halved, halve_grad (once), sin_halved
    assert text.count("{'same_inner_op': 0, 'name': 'halve_grad'}") == 1
    loaded = _round_trip(cost, [y], tmp_path)
    before = _value_and_grad([y], cost, linker)
    after = _value_and_grad(loaded.inputs, loaded.outputs[0], linker)
    want = 0.5 * (np.sin(VALUE) + 2.0) * np.exp(VALUE) + 0.5 * np.exp(VALUE) * (
        np.sin(VALUE) + 2.0)
    np.testing.assert_allclose(before[1], want, rtol=1e-14)
    for bv, av in zip(before, after):
        np.testing.assert_array_equal(av, bv)


@pytest.mark.parametrize("linker", LINKERS)
def test_rop_overrides_round_trip(linker, tmp_path):
    x = wt.dvector("x")
    fake = OpFromGraph([x], [x ** 2], name="square_fake_rop",
                       rop_overrides=lambda inputs, points: [points[0] * 10.0 + inputs[0]])
    y, v = wt.dvector("y"), wt.dvector("v")
    out = fake(y)
    loaded = _round_trip(out, [y], tmp_path)
    (y2,), (out2,) = loaded.inputs, loaded.outputs
    v2 = wt.dvector("v2")
    ones = np.ones(3)
    before = wb.function([y, v], wb.Rop(out, y, v), linker=linker)(VALUE, ones)
    after = wb.function([y2, v2], wb.Rop(out2, y2, v2), linker=linker)(VALUE, ones)
    np.testing.assert_array_equal(before, 10.0 + VALUE)
    np.testing.assert_array_equal(after, before)


def test_a_traced_override_gets_zeros_for_a_disconnected_output_gradient():
    x = wt.dvector("x")
    both = OpFromGraph([x], [x * 2.0, x * 3.0], name="two_outputs",
                       lop_overrides=lambda i, o, g: [g[0] + g[1]])
    y = wt.dvector("y")
    loaded = graph_io.from_document(graph_io.to_document(both(y)[0].sum(), inputs=[y]))
    (y2,), (cost,) = loaded.inputs, loaded.outputs
    grad = wb.function([y2], wb.grad(cost, y2))(VALUE)  # only output 0 reaches the cost
    np.testing.assert_array_equal(grad, np.ones(3))


def test_an_override_that_cannot_be_traced_is_refused_naming_the_op():
    x = wt.dvector("x")
    y = wt.dvector("y")
    scale = wb.shared(np.float64(2.0), name="scale")

    def numeric(inputs, outputs, grads):
        return [np.ones(3) * float(np.asarray(grads[0]).sum())]  # needs numbers

    cases = [
        (numeric, "straight_numeric", "calling it on symbolic variables"),
        (lambda i, o, g: [None], "returns_none", "for input 0 it returns None"),
        (lambda i, o, g: [g[0], g[0]], "too_many", "returns 2 results for 1 inputs"),
        (lambda i, o, g: [g[0] * scale], "reads_shared", "the shared variable scale"),
    ]
    for override, name, why in cases:
        op = OpFromGraph([x], [x * 1.0], name=name, lop_overrides=override)
        with pytest.raises(TypeError, match=name) as info:
            graph_io.to_document(op(y).sum(), inputs=[y])
        assert why in str(info.value)
        assert "cannot be saved in a graph file" in str(info.value)


def test_a_forged_reference_is_a_graph_file_error():
    y = wt.dvector("y")
    document = graph_io.to_document((_straight_through()(y)).sum(), inputs=[y])
    props = document["nodes"][0]["op"]["props"]
    props["lop_overrides"] = {"same_inner_op": 3}
    with pytest.raises(graph_io.GraphFileError, match="same_inner_op"):
        graph_io.from_document(document)
    props["lop_overrides"] = {"same_inner_op": True}
    with pytest.raises(graph_io.GraphFileError, match="same_inner_op"):
        graph_io.from_document(document)


def test_a_reference_naming_another_op_is_a_graph_file_error():
    x, out, gz = wt.dvector("x"), wt.dvector("out"), wt.dvector("gz")
    halve = OpFromGraph([x, out, gz], [0.5 * gz], name="halve_grad")
    a = OpFromGraph([x], [wt.exp(x)], name="exp_halved", lop_overrides=halve)
    b = OpFromGraph([x], [wt.sin(x)], name="sin_halved", lop_overrides=halve)
    y = wt.dvector("y")
    document = graph_io.to_document((a(y) * b(y)).sum(), inputs=[y])
    (second,) = [n["op"]["props"]["lop_overrides"] for n in document["nodes"]
                 if "same_inner_op" in n["op"].get("props", {}).get("lop_overrides", {})]
    second["name"] = "other_grad"
    with pytest.raises(graph_io.GraphFileError, match="other_grad"):
        graph_io.from_document(document)
