"""Elemwise and DimShuffle: broadcasting, static shapes, dtypes, views and inplace."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import workbench.core.scalar as ps
import workbench.core.tensor as wt
from workbench.core.dtypes import default_float_dtype
from workbench.core.tensor import DimShuffle, Elemwise, TensorType, broadcast_static_shapes

# -- broadcasting against NumPy (property tests) --------------------------------------------

# scalar Op -> NumPy reference; int inputs of "/" are made default-float first (our rule).
BINARY_OPS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "true_div": np.true_divide,
    "int_div": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum,
    "lt": np.less, "ge": np.greater_equal, "eq": np.equal, "neq": np.not_equal,
}
DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64"]


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 4, shape).astype(dtype)  # small: no overflow in pow
    return (rng.random(shape) * 4 - 1).astype(dtype)


def _static(draw, shape):
    """Hide some of a runtime shape from the static type (None = unknown length)."""
    return tuple(draw(st.sampled_from([n, None])) for n in shape)


@st.composite
def binary_cases(draw):
    name = draw(st.sampled_from(sorted(BINARY_OPS)))
    shapes = draw(mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in range(2)]
    statics = [_static(draw, s) for s in shapes.input_shapes]
    seed = draw(st.integers(0, 2**16))
    return name, shapes.input_shapes, statics, dtypes, seed


def _reference(name, a, b):
    fn = BINARY_OPS[name]
    if name == "true_div" and a.dtype.kind in "biu" and b.dtype.kind in "biu":
        a, b = a.astype(default_float_dtype().numpy), b.astype(default_float_dtype().numpy)
    with np.errstate(all="ignore"):
        return fn(a, b)


@settings(max_examples=150, deadline=None)
@given(binary_cases())
def test_binary_elemwise_matches_numpy(evaluate, inferred_shape, case):
    name, shapes, statics, dtypes, seed = case
    op = ps.ALL_OPS[name]
    x = TensorType(dtypes[0], statics[0])("x")
    y = TensorType(dtypes[1], statics[1])("y")
    try:
        out = Elemwise(op)(x, y)
    except TypeError:
        # Only the documented refusals: "-" on booleans, "//" and "%" never fail here.
        assert name == "sub" and dtypes == ["bool", "bool"]
        return
    rng = np.random.default_rng(seed)
    a, b = _values(rng, shapes[0], dtypes[0]), _values(rng, shapes[1], dtypes[1])
    expected = _reference(name, a, b)
    value = evaluate(out, {x: a, y: b})  # also checks value against out.type, strictly
    assert isinstance(value, np.ndarray)
    assert value.dtype == out.type.numpy_dtype == expected.dtype
    assert value.shape == expected.shape
    assert all(s is None or s == n for s, n in zip(out.type.shape, value.shape))
    assert inferred_shape(out, {x: a, y: b}) == value.shape
    np.testing.assert_allclose(value, expected, rtol=1e-6, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), st.data())
def test_switch_broadcasts_three_inputs(evaluate, inferred_shape, shapes, data):
    s = shapes.input_shapes
    c = TensorType("bool", _static(data.draw, s[0]))("c")
    a = TensorType("int16", _static(data.draw, s[1]))("a")
    b = TensorType("float32", _static(data.draw, s[2]))("b")
    out = wt.switch(c, a, b)
    rng = np.random.default_rng(1)
    vc, va, vb = _values(rng, s[0], "bool"), _values(rng, s[1], "int16"), _values(
        rng, s[2], "float32")
    expected = np.where(vc, va, vb)
    value = evaluate(out, {c: vc, a: va, b: vb})
    assert value.dtype == expected.dtype == np.float32
    np.testing.assert_array_equal(value, expected)
    assert inferred_shape(out, {c: vc, a: va, b: vb}) == expected.shape


# -- static shapes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        ([(None,), (3,)], (3,)),
        ([(1,), (None,)], (None,)),
        ([(1,), (1,)], (1,)),
        ([(1,), (4,)], (4,)),
        ([(None, 1), (1, None)], (None, None)),
        ([(2, 3), (2, 4)], None),
    ],
)
def test_broadcast_static_shapes(shapes, expected):
    assert broadcast_static_shapes(shapes) == expected


def test_incompatible_static_shapes_fail_at_build_time():
    x, y = TensorType("float64", (2, 3))(), TensorType("float64", (4,))()
    with pytest.raises(ValueError) as info:
        x + y
    assert str(info.value) == (
        "Elemwise{add}: operands could not be broadcast together with shapes (2, 3) (4,)"
    )


def test_lower_rank_inputs_are_left_padded_by_dimshuffle():
    x, v = wt.dtensor3("x"), wt.dvector("v")
    out = x * v
    padded = out.owner.inputs[1]
    assert str(padded.owner.op) == "DimShuffle{x,x,0}"
    assert padded.type.shape == (1, 1, None)
    assert out.type.shape == (None, None, None)


def test_runtime_broadcasting_of_unknown_lengths(evaluate, inferred_shape):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    out = x + y
    a, b = np.ones((1, 4)), np.ones((3, 1))
    assert evaluate(out, {x: a, y: b}).shape == (3, 4)
    assert inferred_shape(out, {x: a, y: b}) == (3, 4)


def test_zero_dim_results_are_arrays(evaluate):
    x = wt.dscalar("x")
    value = evaluate(wt.exp(x) + 1, {x: np.array(0.0)})
    assert isinstance(value, np.ndarray) and value.shape == () and value == 2.0


# -- the Op itself -------------------------------------------------------------------------


def test_elemwise_identity_and_printing():
    assert Elemwise(ps.add) == Elemwise(ps.add)
    assert hash(Elemwise(ps.add)) == hash(Elemwise(ps.add))
    assert Elemwise(ps.add) != Elemwise(ps.mul)
    assert Elemwise(ps.add) != Elemwise(ps.add, {0: 0})
    assert str(Elemwise(ps.add)) == "Elemwise{add}"
    assert str(Elemwise(ps.add, {0: 0})) == "Elemwise{add,inplace}"
    assert str(Elemwise(ps.add, {0: 1})) == "Elemwise{add,inplace{0:1}}"
    assert Elemwise(ps.add, {0: 1}).destroy_map == {0: [1]}
    assert Elemwise(ps.add).destroy_map == {} and Elemwise(ps.add).view_map == {}


def test_elemwise_argument_errors():
    with pytest.raises(TypeError, match="needs a ScalarOp"):
        Elemwise(np.add)
    with pytest.raises(ValueError, match="inplace_pattern"):
        Elemwise(ps.add, {0: 5})
    with pytest.raises(TypeError, match="takes 2 inputs, got 1"):
        Elemwise(ps.add)(wt.dvector())
    with pytest.raises(TypeError, match="input 1 of Elemwise{add}"):
        Elemwise(ps.add)(wt.dvector(), "text")


def test_dtype_errors_name_the_op_and_dtypes():
    b = TensorType("bool", (None,))()
    with pytest.raises(TypeError, match=r"sub of dtypes \(bool, bool\) is invalid"):
        b - b
    with pytest.raises(TypeError, match=r"xor of dtypes \(float64, float64\)"):
        wt.dvector() ^ wt.dvector()


def test_outputs_never_alias_inputs(evaluate):
    x = wt.dvector("x")
    a = np.arange(3.0)
    out = evaluate(wt.identity(x), {x: a})
    assert not np.shares_memory(out, a)
    np.testing.assert_array_equal(out, a)


def test_inplace_writes_into_the_destroyed_input():
    x, y = wt.dvector("x"), wt.dvector("y")
    node = Elemwise(ps.add, {0: 0}).make_node(x, y)
    a, b = np.arange(3.0), np.ones(3)
    cells = [[None]]
    node.op.perform(node, [a, b], cells)
    assert cells[0][0] is a and a.tolist() == [1.0, 2.0, 3.0]
    # A kernel that must cast first still writes into the input.
    i = wt.ivector("i")
    node = Elemwise(ps.true_div, {0: 1}).make_node(i, y)
    ia, yb = np.array([1, 2, 3], dtype="int32"), np.full(3, 2.0)
    cells = [[None]]
    node.op.perform(node, [ia, yb], cells)
    assert cells[0][0] is yb and yb.tolist() == [0.5, 1.0, 1.5]


def test_inplace_needs_matching_dtype_and_full_shape():
    with pytest.raises(TypeError, match="cannot write output 0"):
        Elemwise(ps.add, {0: 0})(wt.ivector(), wt.dvector())
    with pytest.raises(ValueError, match="which broadcasts"):
        Elemwise(ps.add, {0: 0})(wt.drow(), wt.dmatrix())


def test_python_kernels_are_vectorised_for_elemwise(evaluate):
    """A scalar Op written with plain Python math (vectorized = False) still runs on arrays."""

    class Gamma(ps.UnaryScalarOp):
        default_preference = staticmethod(ps.upgrade_to_float_no_complex)
        vectorized = False

        def impl(self, x):
            return math.gamma(x)

    x = wt.dmatrix("x")
    out = Elemwise(Gamma())(x)
    assert str(out.owner.op) == "Elemwise{gamma}"
    data = np.array([[1.0, 2.5], [4.0, 0.5]])
    value = evaluate(out, {x: data})
    np.testing.assert_allclose(value, np.vectorize(math.gamma)(data))
    i = wt.ivector("i")
    assert evaluate(Elemwise(Gamma())(i), {i: np.array([3, 4], "int32")}).tolist() == [2.0, 6.0]


def test_composite_inside_elemwise(evaluate):
    s0, s1 = ps.get_scalar_type("float64")(), ps.get_scalar_type("float64")()
    comp = ps.Composite([s0, s1], [ps.exp(s0) * s1])
    x, y = wt.dmatrix("x"), wt.dvector("y")
    out = Elemwise(comp)(x, y)
    assert str(out.owner.op) == "Elemwise{Composite{(exp(i0) * i1)}}"
    a, b = np.random.default_rng(2).random((2, 3)), np.arange(3.0)
    np.testing.assert_allclose(evaluate(out, {x: a, y: b}), np.exp(a) * b)


def test_composite_output_ignoring_an_input_still_broadcasts(evaluate):
    s0, s1 = ps.get_scalar_type("float64")(), ps.get_scalar_type("float64")()
    comp = ps.Composite([s0, s1], [ps.exp(s0)])
    x, y = wt.dvector("x"), wt.dmatrix("y")
    value = evaluate(Elemwise(comp)(x, y), {x: np.zeros(3), y: np.zeros((2, 3))})
    assert value.shape == (2, 3) and value.flags.writeable


# -- DimShuffle ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ndim", "order", "text"),
    [(0, ("x", "x"), "DimShuffle{x,x}"), (2, (1, 0), "DimShuffle{1,0}"),
     (1, ("x", 0), "DimShuffle{x,0}"), (1, (), "DimShuffle{}")],
)
def test_dimshuffle_printing(ndim, order, text):
    assert str(DimShuffle(ndim, order)) == text


def test_dimshuffle_props():
    op = DimShuffle(3, (2, "x", 0))
    assert op == DimShuffle(3, [2, "x", 0]) and hash(op) == hash(DimShuffle(3, (2, "x", 0)))
    assert op.drop == (1,) and op.shuffle == (2, 0) and op.augment == (1,)
    assert not op.is_transpose and DimShuffle(2, (1, 0)).is_transpose
    assert op.view_map == {0: [0]}


@pytest.mark.parametrize(
    ("args", "error"),
    [((2, (0, 0)), ValueError), ((2, (2,)), ValueError), ((2, ("y",)), TypeError),
     ((-1, ()), TypeError), ((1, (True,)), TypeError)],
)
def test_dimshuffle_bad_patterns(args, error):
    with pytest.raises(error):
        DimShuffle(*args)


def test_dimshuffle_rank_and_drop_errors():
    with pytest.raises(ValueError, match="expects an input of rank 2"):
        DimShuffle(2, (1, 0))(wt.dvector())
    with pytest.raises(ValueError, match="drop dimension 1 .* has length 3"):
        DimShuffle(2, (0,))(TensorType("float64", (None, 3))())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=4), st.data())
def test_dimshuffle_matches_numpy_and_returns_views(evaluate, inferred_shape, shape, data):
    ndim = len(shape)
    perm = data.draw(st.permutations(range(ndim)))
    drop_mask = [data.draw(st.booleans()) if n == 1 else False for n in shape]
    kept = [d for d in perm if not drop_mask[d]]
    order = list(kept)
    for _ in range(data.draw(st.integers(0, 2))):
        order.insert(data.draw(st.integers(0, len(order))), "x")
    static = tuple(n if (n == 1 or data.draw(st.booleans())) else None for n in shape)
    x = TensorType("float32", static)("x")
    out = DimShuffle(ndim, order)(x)
    a = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    expected = a.transpose(perm)
    expected = expected.reshape([shape[d] for d in kept]) if ndim else expected
    for i, d in enumerate(order):
        if d == "x":
            expected = np.expand_dims(expected, i)
    value = evaluate(out, {x: a})
    np.testing.assert_array_equal(value, expected)
    assert value.size == 0 or np.shares_memory(value, a)
    assert inferred_shape(out, {x: a}) == value.shape
    assert all(s is None or s == n for s, n in zip(out.type.shape, value.shape))
