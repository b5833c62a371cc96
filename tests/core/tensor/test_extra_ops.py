"""Cumulative operations: cumsum and cumprod (CumOp)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from numpy.exceptions import AxisError

import workbench.core.tensor as wt
from workbench.core.tensor import CumOp, TensorType

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64"]


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 4, shape).astype(dtype)
    return (rng.random(shape) * 2 - 1).astype(dtype)


@settings(max_examples=50, deadline=None)
@given(array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), st.data())
def test_cumsum_cumprod_match_numpy(evaluate, inferred_shape, shape, data):
    ndim = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.none()))
    dtype = data.draw(st.sampled_from(DTYPES))
    static = tuple(data.draw(st.sampled_from([n, None])) for n in shape)
    value = _values(np.random.default_rng(ndim), shape, dtype)
    x = TensorType(dtype, static)("x")
    for fn, ref in ((wt.cumsum, np.cumsum), (wt.cumprod, np.cumprod)):
        out = fn(x, axis=axis)
        got = evaluate(out, {x: value})
        expected = ref(value, axis=axis)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == "float32" else 1e-12)
        assert all(s is None or s == n for s, n in zip(out.type.shape, got.shape))
        assert inferred_shape(out, {x: value}) == got.shape


def test_flattening_and_static_shapes():
    known = TensorType("float64", (2, 3))("k")
    assert wt.cumsum(known).type.shape == (6,)
    assert wt.cumsum(known, axis=0).type.shape == (2, 3)
    partly = TensorType("float64", (2, None))("p")
    assert wt.cumprod(partly).type.shape == (None,)
    assert wt.cumsum(wt.dscalar("s")).type.shape == (1,)
    assert wt.cumsum(wt.dscalar("s"), axis=0).type.shape == (1,)  # 0-d acts as 1-d


def test_method_and_list_inputs(evaluate):
    x = wt.dmatrix("x")
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(evaluate(x.cumsum(axis=1), {x: value}), value.cumsum(1))
    np.testing.assert_array_equal(evaluate(x.cumprod(), {x: value}), value.cumprod())
    out = wt.cumsum([1, 2, 3])
    assert out.dtype == "int64"
    np.testing.assert_array_equal(evaluate(out, {}), [1, 3, 6])


def test_non_contiguous_inputs(evaluate):
    base = np.arange(1.0, 13.0).reshape(3, 4)
    x = wt.dmatrix("x")
    for value in (base.T, base[::-1, ::2]):
        got = evaluate([wt.cumsum(x, 0), wt.cumprod(x, -1), wt.cumsum(x)], {x: value})
        np.testing.assert_array_equal(got[0], np.cumsum(value, 0))
        np.testing.assert_allclose(got[1], np.cumprod(value, -1))
        np.testing.assert_array_equal(got[2], np.cumsum(value))


@pytest.mark.parametrize("dtype", DTYPES + ["uint16", "uint32", "uint64", "float16",
                                            "complex64"])
def test_dtypes_follow_numpy2(dtype):
    x = TensorType(dtype, (None,))("x")
    sample = np.ones(2, dtype=dtype)
    assert wt.cumsum(x).dtype == np.cumsum(sample).dtype
    assert wt.cumprod(x).dtype == np.cumprod(sample).dtype


def test_explicit_dtype_and_overflow(evaluate):
    b = wt.bvector("b")
    value = np.full(4, 100, dtype=np.int8)
    np.testing.assert_array_equal(evaluate(wt.cumsum(b), {b: value}), [100, 200, 300, 400])
    wrapped = evaluate(wt.cumsum(b, dtype="int8"), {b: value})
    assert wrapped.dtype == np.int8
    np.testing.assert_array_equal(wrapped, np.cumsum(value, dtype=np.int8))
    f = wt.cumsum(b, dtype="float32")
    assert f.dtype == "float32" and str(f.owner.op) == "CumOp{add, axis=None, dtype=float32}"


def test_nan_and_empty(evaluate):
    x = wt.dvector("x")
    got = evaluate(wt.cumsum(x), {x: np.array([1.0, np.nan, 2.0])})
    assert got[0] == 1.0 and np.isnan(got[1:]).all()
    assert evaluate(wt.cumprod(x), {x: np.zeros(0)}).shape == (0,)


def test_op_identity_printing_and_flops():
    x = wt.dtensor3("x")
    assert wt.cumsum(x, axis=-1).owner.op == CumOp(2, "add")
    assert wt.cumprod(x).owner.op == CumOp(None, "mul")
    assert str(CumOp(1, "add")) == "CumOp{add, axis=1}"
    assert str(CumOp(None, "mul")) == "CumOp{mul, axis=None}"
    assert CumOp(1, "add") != CumOp(1, "mul") and hash(CumOp(0)) == hash(CumOp(0, "add"))
    assert CumOp(0).flops([(3, 4)], [(3, 4)]) == 12


def test_errors():
    x = wt.dmatrix("x")
    with pytest.raises(AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        wt.cumsum(x, axis=2)
    with pytest.raises(AxisError, match="axis -3 is out of bounds for array of dimension 2"):
        wt.cumprod(x, axis=-3)
    with pytest.raises(AxisError, match="axis 1 is out of bounds for array of dimension 1"):
        wt.cumsum(wt.dscalar("s"), axis=1)
    with pytest.raises(TypeError, match="'tuple' object cannot be interpreted as an integer"):
        wt.cumsum(x, axis=(0,))
    with pytest.raises(ValueError, match="mode must be 'add' or 'mul'"):
        CumOp(0, "max")
    with pytest.raises(ValueError, match="non-negative"):
        CumOp(-1)
    with pytest.raises(AxisError):
        CumOp(2)(x)
