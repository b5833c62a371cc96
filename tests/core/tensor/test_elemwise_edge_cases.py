"""Elementwise functions at the edges: empty and 0-d arrays, strided inputs, overflow,
NaN/inf, division by zero, `clip`, and broadcasting/promotion over all dtypes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import workbench.core.tensor as wt
from workbench.core import dtypes
from workbench.core.compile.function import function
from workbench.core.scalar import math as smath
from workbench.core.tensor import Elemwise, TensorType
from workbench.testing import cases_elemwise


def run(inputs, outputs, *values):
    """Compile with the Python VM and call, turning every warning into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return function(inputs, outputs)(*values)


# -- zero-size and 0-d -------------------------------------------------------------------

UNARY = ["exp", "neg", "abs", "sqr", "sign", "floor", "isnan", "sigmoid", "identity"]
BINARY = ["add", "sub", "mul", "true_div", "floor_div", "mod", "pow", "maximum", "lt", "eq",
          "arctan2"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 4)])
def test_unary_of_zero_size(name, shape):
    x = wt.tensor("float32", shape=(None,) * len(shape))
    out = run([x], getattr(wt, name)(x), np.zeros(shape, np.float32))
    assert out.shape == shape
    assert out.dtype == getattr(wt, name)(x).type.dtype.numpy


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize(("a", "b"), [((0, 3), (3,)), ((0, 3), (1, 1)), ((0,), ()),
                                      ((2, 0), (2, 1))])
def test_binary_of_zero_size_broadcasts_like_numpy(name, a, b):
    x = wt.tensor("float64", shape=(None,) * len(a))
    y = wt.tensor("float64", shape=(None,) * len(b))
    out = run([x, y], getattr(wt, name)(x, y), np.ones(a), np.ones(b))
    assert out.shape == np.broadcast_shapes(a, b)


def test_zero_size_static_shapes_broadcast(inferred_shape):
    x = TensorType("float64", (0, 3))("x")
    y = TensorType("float64", (1, 3))("y")
    z = x + y
    assert z.type.shape == (0, 3)
    assert inferred_shape(z, {x: np.ones((0, 3)), y: np.ones((1, 3))}) == (0, 3)


def test_infer_shape_of_zero_length_against_runtime_one(inferred_shape):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    assert inferred_shape(x + y, {x: np.ones((0, 3)), y: np.ones((1, 3))}) == (0, 3)


@pytest.mark.parametrize("name", UNARY + ["clip"])
def test_0d_inputs_give_0d_arrays_not_numpy_scalars(name, evaluate):
    x = wt.dscalar("x")
    out_var = wt.clip(x, -1.0, 1.0) if name == "clip" else getattr(wt, name)(x)
    value = evaluate(out_var, {x: np.array(0.75)})  # strict: an ndarray of the Type's dtype
    assert isinstance(value, np.ndarray) and value.shape == ()
    compiled = run([x], out_var, np.array(0.75))
    assert isinstance(compiled, np.ndarray) and compiled.shape == ()


def test_0d_broadcasts_against_anything():
    s, m = wt.fscalar("s"), wt.ftensor3("m")
    m_value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = run([s, m], [s * m, wt.maximum(s, m), wt.switch(s > 2, m, s)], np.float32(3), m_value)
    np.testing.assert_array_equal(out[0], 3 * m_value)
    np.testing.assert_array_equal(out[1], np.maximum(np.float32(3), m_value))
    np.testing.assert_array_equal(out[2], m_value)
    assert all(o.dtype == np.float32 for o in out)


# -- strided inputs -----------------------------------------------------------------------

_BASE = np.arange(1, 25, dtype=np.float64).reshape(4, 6) / 7.0
STRIDED = {
    "reversed": _BASE[::-1],
    "reversed_columns": _BASE[:, ::-1],
    "transposed": _BASE.T,
    "every_other_column": _BASE[:, ::2],
    "fortran": np.asfortranarray(_BASE),
    "broadcast_view": np.broadcast_to(_BASE[:1], (4, 6)),
}


@pytest.mark.parametrize("layout", sorted(STRIDED))
@pytest.mark.parametrize(("name", "reference"), [
    ("exp", np.exp), ("log", np.log), ("sqr", np.square),
    ("sigmoid", lambda v: 1 / (1 + np.exp(-v))), ("round_half_to_even", np.rint),
    ("sign", np.sign),
])
def test_unary_of_non_contiguous_inputs(layout, name, reference):
    value = STRIDED[layout]
    before = value.copy()
    x = wt.dmatrix("x")
    out = run([x], getattr(wt, name)(x), value)
    np.testing.assert_allclose(out, reference(value), rtol=1e-12)
    np.testing.assert_array_equal(value, before)


@pytest.mark.parametrize("layout", sorted(STRIDED))
def test_binary_and_ternary_of_non_contiguous_inputs(layout):
    value = STRIDED[layout]
    other = (value[::-1, ::-1] * 0.5 + 0.1)[::-1, ::-1]  # negative strides, same shape
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    outs = run([x, y], [x - y, wt.arctan2(x, y), wt.clip(x, y, 2.0), x.T * y.T], value, other)
    np.testing.assert_allclose(outs[0], value - other)
    np.testing.assert_allclose(outs[1], np.arctan2(value, other))
    np.testing.assert_allclose(outs[2], np.clip(value, other, 2.0))
    np.testing.assert_allclose(outs[3], value.T * other.T)


def test_strided_integer_and_complex_inputs():
    ints = np.arange(-12, 12, dtype=np.int16).reshape(4, 6)[::-1, ::2]
    cplx = (np.arange(12) + 1j * np.arange(12)[::-1]).reshape(3, 4).T.astype(np.complex64)
    i, z = wt.tensor("int16", shape=(None, None)), wt.cmatrix("z")
    outs = run([i, z], [i // 5, i % 5, wt.abs(z), wt.angle(z), z.conj()], ints, cplx)
    np.testing.assert_array_equal(outs[0], ints // 5)
    np.testing.assert_array_equal(outs[1], ints % 5)
    np.testing.assert_allclose(outs[2], np.abs(cplx), rtol=1e-6)
    np.testing.assert_allclose(outs[3], np.angle(cplx), rtol=1e-6)
    np.testing.assert_array_equal(outs[4], np.conj(cplx))
    assert outs[2].dtype == outs[3].dtype == np.float32


# -- integer overflow -----------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "build", "values", "expected"), [
    ("int8", lambda x: x + 1, [127, -128], [-128, -127]),
    ("int8", lambda x: x - 1, [-128, 0], [127, -1]),
    ("uint8", lambda x: x - 1, [0, 200], [255, 199]),
    ("uint8", lambda x: x + 100, [200, 155], [44, 255]),
    ("int8", lambda x: -x, [-128, 5], [-128, -5]),
    ("int8", wt.abs, [-128, -3], [-128, 3]),
    ("int16", lambda x: x * 300, [300, -300], [24464, -24464]),
    ("int32", wt.sqr, [65536, 3], [0, 9]),
    ("uint16", lambda x: ~x, [0, 65535], [65535, 0]),
    ("int64", lambda x: x + 1, [2**63 - 1, 0], [-(2**63), 1]),
])
def test_integer_overflow_wraps_like_numpy(dtype, build, values, expected):
    x = wt.tensor(dtype, shape=(None,))
    value = np.array(values, dtype=dtype)
    out = run([x], build(x), value)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.array(expected).astype(dtype))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, build_numpy(build, value))


def build_numpy(build, value):
    """The same lambda applied to a NumPy array (the wt functions map to NumPy's)."""
    if build is wt.abs:
        return np.abs(value)
    if build is wt.sqr:
        return np.square(value)
    return build(value)


def test_overflowing_casts_wrap_like_numpy_astype():
    x = wt.lvector("x")
    value = np.array([300, -129, 2**40 + 5], dtype=np.int64)
    outs = run([x], [wt.cast(x, "int8"), wt.cast(x, "uint8"), wt.cast(x, "int32")], value)
    for out, dtype in zip(outs, ["int8", "uint8", "int32"]):
        np.testing.assert_array_equal(out, value.astype(dtype))


def test_python_int_that_does_not_fit_is_refused_at_build_time():
    with pytest.raises(OverflowError, match="does not fit in int8"):
        wt.bvector("x") + 1000
    with pytest.raises(OverflowError, match="does not fit in int8"):
        wt.bvector("x").clip(0, 300)


# -- NaN and inf ------------------------------------------------------------------------------

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0])


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize(("name", "reference"), [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sign", np.sign),
    ("tanh", np.tanh), ("reciprocal", np.reciprocal), ("floor", np.floor),
    ("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite), ("abs", np.abs),
    ("arcsin", np.arcsin), ("arccosh", np.arccosh), ("log1p", np.log1p), ("expm1", np.expm1),
])
def test_specials_propagate_like_numpy(dtype, name, reference):
    x = wt.tensor(dtype, shape=(None,))
    value = SPECIALS.astype(dtype)
    out = run([x], getattr(wt, name)(x), value)
    with np.errstate(all="ignore"):
        expected = reference(value)
    assert out.dtype == expected.dtype
    # NaN, infinities and zeros exactly where NumPy has them; finite values within the
    # C linker's vector math bound (a few ulp; NumPy itself is not always correctly
    # rounded either)
    exact = ~np.isfinite(expected) | (expected == 0) | (out.dtype.kind == "b")
    np.testing.assert_array_equal(out[exact], expected[exact])
    if out.dtype.kind == "f":
        np.testing.assert_array_max_ulp(out[~exact], expected[~exact], maxulp=4)
    signed = ~np.isnan(expected) if expected.dtype.kind == "f" else slice(None)
    # (the sign of a NaN carries no meaning and differs between libm implementations)
    np.testing.assert_array_equal(np.signbit(out[signed]), np.signbit(expected[signed]))


def test_named_special_values():
    x = wt.dvector("x")
    value = np.array([np.inf, -np.inf, 0.0, -1.0, np.nan])
    exp, log, sign = run([x], [wt.exp(x), wt.log(x), wt.sign(x)], value)
    assert exp[0] == np.inf and exp[1] == 0.0  # exp(inf), exp(-inf)
    assert log[2] == -np.inf  # log(0)
    assert np.isnan(log[3]) and np.isnan(log[1])  # log(-1), log(-inf)
    assert np.isnan(sign[4])  # sign(nan)
    np.testing.assert_array_equal(sign[:4], [1.0, -1.0, 0.0, -1.0])


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_propagate_nan_from_either_side(name):
    x, y = wt.dvector("x"), wt.dvector("y")
    a = np.array([np.nan, 1.0, np.nan, -np.inf])
    b = np.array([1.0, np.nan, np.nan, np.inf])
    out = run([x, y], getattr(wt, name)(x, y), a, b)
    np.testing.assert_array_equal(out, getattr(np, name)(a, b))
    assert np.isnan(out[:3]).all()


def test_comparisons_with_nan_are_false_except_neq():
    x = wt.dvector("x")
    value = np.array([np.nan, 1.0])
    lt, eq, neq = run([x], [x < 1.0, wt.eq(x, x), wt.neq(x, x)], value)
    np.testing.assert_array_equal(lt, [False, False])
    np.testing.assert_array_equal(eq, [False, True])
    np.testing.assert_array_equal(neq, [True, False])


def test_overflow_to_inf_gives_no_warning():
    x = wt.fvector("x")
    out = run([x], [wt.exp(x), x * x, wt.cosh(x)], np.array([100.0, 1e30], np.float32))
    assert np.isinf(out[0]).all() and np.isinf(out[2]).all()
    assert out[1][0] == 1e4 and out[1][1] == np.inf
    assert all(o.dtype == np.float32 for o in out)


# -- division by zero -------------------------------------------------------------------------


def test_float_division_by_zero_follows_ieee():
    x, y = wt.dvector("x"), wt.dvector("y")
    num = np.array([1.0, -1.0, 0.0, 2.0])
    den = np.zeros(4)
    outs = run([x, y], [x / y, x // y, x % y, wt.reciprocal(y)], num, den)
    with np.errstate(all="ignore"):
        for out, expected in zip(outs, [num / den, num // den, num % den, 1 / den]):
            np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(outs[0], [np.inf, -np.inf, np.nan, np.inf])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_integer_division_by_zero_gives_numpy_zero_without_warning(dtype):
    x, y = wt.tensor(dtype, shape=(None,)), wt.tensor(dtype, shape=(None,))
    num = np.array([7, 0, 3], dtype=dtype)
    den = np.array([0, 0, 2], dtype=dtype)
    floor, rem, true = run([x, y], [x // y, x % y, x / y], num, den)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(floor, num // den)
        np.testing.assert_array_equal(rem, num % den)
    np.testing.assert_array_equal(floor, [0, 0, 1])
    np.testing.assert_array_equal(rem, [0, 0, 1])
    assert true.dtype == np.float64
    np.testing.assert_array_equal(true, [np.inf, np.nan, 1.5])


def test_most_negative_int_divided_by_minus_one_wraps():
    x, y = wt.bvector("x"), wt.bvector("y")
    out = run([x, y], x // y, np.array([-128], np.int8), np.array([-1], np.int8))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, np.array([-128], np.int8) // np.int8(-1))


# -- clip -----------------------------------------------------------------------------------


def test_clip_is_one_elemwise_and_keeps_float32():
    x = wt.fmatrix("x")
    y = x.clip(-1, 1.5)
    assert str(y.owner.op) == "Elemwise{clip}"
    assert isinstance(y.owner.op.scalar_op, smath.Clip)
    assert y.type == TensorType("float32", (None, None))
    assert wt.clip(x, None, None) is x
    assert str(wt.clip(x, None, 1.0).owner.op) == "Elemwise{minimum}"
    assert str(wt.clip(x, 0.0, None).owner.op) == "Elemwise{maximum}"


@pytest.mark.parametrize(("x_dtype", "bound", "out_dtype"), [
    ("int8", 1.5, "float64"), ("int8", 3, "int8"), ("uint8", -1, None), ("float32", 2, "float32"),
    ("bool", False, "bool"), ("float16", 0.5, "float16"),
])
def test_clip_dtype_follows_numpy_promotion(x_dtype, bound, out_dtype):
    x = wt.tensor(x_dtype, shape=(None,))
    if out_dtype is None:
        with pytest.raises(OverflowError):
            wt.clip(x, bound, 10)
        return
    hi = 10 if x_dtype != "bool" else True
    y = wt.clip(x, bound, hi)
    assert y.dtype == out_dtype
    value = (np.arange(-3, 5) % 2 == 0) if x_dtype == "bool" else np.arange(-3, 5).astype(x_dtype)
    out = run([x], y, value)
    expected = np.clip(value, bound, hi)
    assert out.dtype == np.dtype(out_dtype)
    np.testing.assert_array_equal(out, expected.astype(out_dtype))


def test_clip_static_shape_and_broadcasting(inferred_shape):
    x = TensorType("float64", (None, 4))("x")
    lo = TensorType("float64", (3, 1))("lo")
    y = wt.clip(x, lo, 1.0)
    assert y.type.shape == (3, 4)
    with pytest.raises(ValueError, match="could not be broadcast"):
        wt.clip(x, TensorType("float64", (5,))("bad"), 1.0)


def test_clip_inplace_writes_into_x():
    x = np.array([-3.0, 0.5, 9.0])
    op = Elemwise(smath.clip, {0: 0})
    xv = wt.dvector("x")
    node = op.make_node(xv, -1.0, 1.0)
    cells = [[None]]
    op.perform(node, [x, np.array(-1.0), np.array(1.0)], cells)
    assert cells[0][0] is x
    np.testing.assert_array_equal(x, [-1.0, 0.5, 1.0])


# -- broadcasting and promotion over the dtypes (property tests) -----------------------------

#: every dtype NumPy can combine with the others (bfloat16 only mixes with itself).
NUMPY_DTYPES = [str(d) for d in dtypes.all_dtypes if str(d) != "bfloat16"]

BINARY_REFERENCES = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "lt": np.less, "eq": np.equal, "ge": np.greater_equal,
    "true_div": np.true_divide,
}
COMPARISONS = {"lt", "eq", "ge"}


def _sample(rng, shape, dtype):
    d = dtypes.as_dtype(dtype)
    if d.is_bool:
        return rng.random(shape) < 0.5
    if d.is_int:
        low = 0 if d.is_uint else -20
        return rng.integers(low, 20, size=shape).astype(d.numpy)
    values = rng.integers(-8, 9, size=shape) / 4  # exact in every float dtype: ties in compares
    if d.is_complex:
        values = values + 1j * (rng.integers(-8, 9, size=shape) / 4)
    return values.astype(d.numpy)


def _expected_dtype(name, a, b):
    if name in COMPARISONS:
        return dtypes.bool_
    promoted = dtypes.result_type(a, b)
    if name == "true_div" and (promoted.is_int or promoted.is_bool):
        return dtypes.default_float_dtype()
    return promoted


@settings(max_examples=50, deadline=None)
@given(name=st.sampled_from(sorted(BINARY_REFERENCES)),
       shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3),
       dtype_pair=st.tuples(st.sampled_from(NUMPY_DTYPES), st.sampled_from(NUMPY_DTYPES)),
       seed=st.integers(0, 2**16))
def test_binary_broadcasting_and_promotion_over_all_dtypes(name, shapes, dtype_pair, seed):
    a_shape, b_shape = shapes.input_shapes
    a_dtype, b_dtype = dtype_pair
    x = wt.tensor(a_dtype, shape=(None,) * len(a_shape))
    y = wt.tensor(b_dtype, shape=(None,) * len(b_shape))
    rng = np.random.default_rng(seed)
    a, b = _sample(rng, a_shape, a_dtype), _sample(rng, b_shape, b_dtype)
    promoted = dtypes.result_type(a_dtype, b_dtype)
    if name == "sub" and promoted.is_bool:
        with pytest.raises(TypeError, match="not defined for booleans"):
            getattr(wt, name)(x, y)
        with pytest.raises(TypeError):
            np.subtract(a, b)
        return
    out_var = getattr(wt, name)(x, y)
    expected_dtype = _expected_dtype(name, a_dtype, b_dtype)
    assert out_var.type.dtype == expected_dtype
    out = run([x, y], out_var, a, b)
    assert out.dtype == expected_dtype.numpy
    assert out.shape == shapes.result_shape
    # NumPy computes in the promoted dtype (workbench's rule for true division of ints).
    target = promoted if name in COMPARISONS else expected_dtype
    with np.errstate(all="ignore"):
        expected = BINARY_REFERENCES[name](a.astype(target.numpy), b.astype(target.numpy))
    if expected_dtype.is_float or expected_dtype.is_complex:
        rtol = 1e-2 if expected_dtype.itemsize <= 2 else 1e-6
        np.testing.assert_allclose(out, expected, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(out, expected)


UNARY_REFERENCES = {"exp": np.exp, "sqrt": np.sqrt, "abs": np.abs, "neg": np.negative,
                    "sin": np.sin, "sign": np.sign, "isfinite": np.isfinite, "sqr": np.square}


@settings(max_examples=50, deadline=None)
@given(name=st.sampled_from(sorted(UNARY_REFERENCES)),
       shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       dtype=st.sampled_from([str(d) for d in dtypes.all_dtypes]), seed=st.integers(0, 2**16))
def test_unary_dtype_rules_over_all_dtypes(name, shape, dtype, seed):
    x = wt.tensor(dtype, shape=(None,) * len(shape))
    d = dtypes.as_dtype(dtype)
    if name in ("neg", "sign") and d.is_bool:
        with pytest.raises(TypeError, match="boolean"):
            getattr(wt, name)(x)
        return
    out_var = getattr(wt, name)(x)
    value = _sample(np.random.default_rng(seed), shape, dtype)
    if name in ("exp", "sqrt", "sin"):  # float math: integers go to the default float
        expected_dtype = dtypes.default_float_dtype() if (d.is_int or d.is_bool) else d
        ref_input = value.astype(expected_dtype.numpy)
    elif name == "abs":
        expected_dtype = {"complex64": dtypes.float32, "complex128": dtypes.float64}.get(dtype, d)
        ref_input = value
    elif name == "isfinite":
        expected_dtype, ref_input = dtypes.bool_, value
    elif name == "sqr" and d.is_bool:
        expected_dtype, ref_input = dtypes.int8, value.astype(np.int8)
    else:
        expected_dtype, ref_input = d, value
    assert out_var.type.dtype == expected_dtype
    out = run([x], out_var, value)
    assert out.dtype == expected_dtype.numpy and out.shape == shape
    if d is dtypes.bfloat16:
        ref_input = ref_input.astype(np.float32)
    with np.errstate(all="ignore"):
        expected = np.asarray(UNARY_REFERENCES[name](ref_input))
    if expected_dtype.is_float or expected_dtype.is_complex:
        rtol = 1e-2 if expected_dtype.itemsize <= 2 else 1e-5
        np.testing.assert_allclose(out.astype(expected.dtype), expected, rtol=rtol, atol=1e-6,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(out, expected)


# -- the elementwise catalogue's references -----------------------------------------------------


@pytest.mark.parametrize("case", cases_elemwise.CASES, ids=lambda c: c.name)
def test_elemwise_references_have_the_promised_dtypes(case):
    """Each reference returns exactly the dtype workbench promises (not only close values)."""
    for float_dtype in case.float_dtypes:
        _, outputs, _ = case.graph(float_dtype)
        outs = outputs if isinstance(outputs, list) else [outputs]
        expected = case.expected(float_dtype)
        expected = expected if isinstance(expected, list) else [expected]
        for var, want in zip(outs, expected):
            assert np.asarray(want).dtype == var.type.dtype.numpy, (case.name, float_dtype)
