"""Composite: a scalar program packaged as one scalar Op."""

import numpy as np
import pytest

import workbench.core.scalar as ps
from workbench.core.scalar import Composite, get_scalar_type
from workbench.core.tensor import dvector

f64, f32 = get_scalar_type("float64"), get_scalar_type("float32")


def _inputs(n, t=f64):
    return [t(f"s{i}") for i in range(n)]


def test_formula_and_name():
    x, y = _inputs(2)
    comp = Composite([x, y], [ps.exp(x) * y])
    assert str(comp) == comp.name == "Composite{(exp(i0) * i1)}"
    assert comp.nin == 2 and comp.nout == 1
    assert str(Composite([x], [-x + 2.0])) == "Composite{((-i0) + 2.0)}"
    assert str(Composite([x, y], [x + y, ps.exp(x)])) == "Composite{(i0 + i1), exp(i0)}"
    assert str(Composite([x, y], [y])) == "Composite{i1}"
    assert Composite([x], [x], name="passthrough").name == "passthrough"


def test_equality_is_structural():
    x, y = _inputs(2)
    a, b = _inputs(2)
    c1 = Composite([x, y], [ps.exp(x) * y])
    c2 = Composite([a, b], [ps.exp(a) * b])
    assert c1 == c2 and hash(c1) == hash(c2)
    assert c1 != Composite([x, y], [ps.exp(y) * x])
    assert c1 != Composite([x, y], [ps.exp(x) + y])
    assert Composite([x], [x * 2.0]) != Composite([x], [x * 3.0])


def test_evaluation_matches_the_parts():
    x, y, z = _inputs(3)
    comp = Composite([x, y, z], [ps.switch(x > y, ps.sqrt(x), y * z) / 2.0, ps.tanh(z)])
    a, b, c = np.float64(4.0), np.float64(1.0), np.float64(-0.5)
    first, second = comp.impl(a, b, c)
    assert first == 1.0 and second == np.tanh(c)
    node = comp.make_node(*_inputs(3))
    cells = [[None], [None]]
    comp.perform(node, [b, a, c], cells)
    assert cells[0][0] == (a * c) / 2.0 and isinstance(cells[0][0], np.float64)


def test_vectorised_compute_broadcasts_arrays():
    x, y = _inputs(2)
    comp = Composite([x, y], [ps.exp(x) * y])
    a, b = np.linspace(0, 1, 6).reshape(2, 3), np.arange(3.0)
    (out,) = comp.compute([a, b], ["float64"])
    np.testing.assert_allclose(out, np.exp(a) * b)


def test_output_dtypes_follow_the_actual_inputs():
    x, y = _inputs(2)
    comp = Composite([x, y], [ps.exp(x) * y, x < y])
    assert comp.output_dtypes(["float64", "float64"]) == ("float64", "bool")
    assert comp.output_dtypes(["float32", "float32"]) == ("float32", "bool")
    assert comp.output_dtypes(["int8", "float32"]) == ("float64", "bool")
    node = comp.make_node(f32(), f32())
    assert [o.type for o in node.outputs] == [f32, get_scalar_type("bool")]


def test_the_inner_graph_is_a_copy():
    x, y = _inputs(2)
    out = ps.exp(x) * y
    comp = Composite([x, y], [out])
    assert comp.inputs[0] is not x and comp.outputs[0] is not out
    assert comp.inputs[0].type == x.type


def test_nested_composites():
    x, y = _inputs(2)
    inner = Composite([x, y], [x * y])
    a, b = _inputs(2)
    outer = Composite([a, b], [ps.exp(inner(a, b))])
    assert str(outer) == "Composite{exp(Composite{(i0 * i1)}(i0, i1))}"
    assert outer.impl(np.float64(2.0), np.float64(0.5)) == np.exp(1.0)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda x, y: Composite([x], [x + y]), ValueError, "neither one of its inputs"),
        (lambda x, y: Composite([x + y], [x]), ValueError, "free scalar Variable"),
        (lambda x, y: Composite([x, x], [x]), ValueError, "distinct"),
        (lambda x, y: Composite([x], []), ValueError, "at least one output"),
        (lambda x, y: Composite([dvector()], [x]), TypeError, "input 0 must be a scalar"),
        (lambda x, y: Composite([x], [dvector()]), TypeError, "output 0 must be a scalar"),
    ],
)
def test_invalid_graphs(make, error, message):
    x, y = _inputs(2)
    with pytest.raises(error, match=message):
        make(x, y)


def test_arity_is_checked():
    x, y = _inputs(2)
    comp = Composite([x, y], [x + y])
    with pytest.raises(TypeError, match="takes 2 inputs, got 1"):
        comp(f64())
