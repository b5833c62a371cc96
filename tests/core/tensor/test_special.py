"""The softmax family: softmax, log_softmax and logsumexp, checked against scipy.special."""

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, valid_tuple_axes
from numpy.exceptions import AxisError

import workbench.core.tensor as wt
from workbench.core.tensor import LogSoftmax, LogSumExp, Softmax, TensorType
from workbench.testing.cases_reduction import np_logsumexp

# -- against scipy on random shapes and axes ----------------------------------------------


@settings(max_examples=40, deadline=None)
@given(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), st.data())
def test_softmax_and_log_softmax_match_scipy(evaluate, inferred_shape, shape, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    dtype = data.draw(st.sampled_from(["float64", "float32"]))
    value = (np.random.default_rng(len(shape)).normal(size=shape) * 10).astype(dtype)
    x = TensorType(dtype, (None,) * len(shape))("x")
    for fn, ref in ((wt.softmax, scipy.special.softmax),
                    (wt.log_softmax, scipy.special.log_softmax)):
        out = fn(x, axis=axis)
        got = evaluate(out, {x: value})
        assert got.dtype == dtype and out.type.shape == x.type.shape
        np.testing.assert_allclose(got, ref(value, axis=axis),
                                   rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)
        assert inferred_shape(out, {x: value}) == shape


@settings(max_examples=40, deadline=None)
@given(array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), st.data())
def test_logsumexp_matches_numpy_and_scipy(evaluate, inferred_shape, shape, data):
    axis = data.draw(st.one_of(st.none(), valid_tuple_axes(len(shape))))
    keepdims = data.draw(st.booleans())
    static = tuple(data.draw(st.sampled_from([n, None])) for n in shape)
    value = np.random.default_rng(len(shape)).normal(size=shape) * 50
    x = TensorType("float64", static)("x")
    out = wt.logsumexp(x, axis=axis, keepdims=keepdims)
    got = evaluate(out, {x: value})
    expected = np_logsumexp(value, axis=axis, keepdims=keepdims)  # also right for empty input
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    if value.size:  # scipy mishandles some zero-size shapes
        scipy_value = scipy.special.logsumexp(value, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(got, scipy_value, rtol=1e-12)
    assert got.shape == np.shape(expected)
    assert all(s is None or s == n for s, n in zip(out.type.shape, got.shape))
    assert inferred_shape(out, {x: value}) == got.shape


def test_non_contiguous_inputs(evaluate):
    base = np.linspace(-3, 3, 12).reshape(3, 4)
    x = wt.dmatrix("x")
    outs = [wt.softmax(x), wt.log_softmax(x, 0), wt.logsumexp(x, 1)]
    for value in (base.T, base[::-1, ::-2]):
        got = evaluate(outs, {x: value})
        np.testing.assert_allclose(got[0], scipy.special.softmax(value, axis=-1))
        np.testing.assert_allclose(got[1], scipy.special.log_softmax(value, axis=0))
        np.testing.assert_allclose(got[2], scipy.special.logsumexp(value, axis=1))


# -- numerical stability --------------------------------------------------------------------


def test_softmax_of_large_values_is_finite(evaluate):
    x = wt.dvector("x")
    got = evaluate(wt.softmax(x), {x: np.array([1000.0, 0.0])})
    np.testing.assert_array_equal(got, [1.0, 0.0])
    got = evaluate(wt.softmax(x), {x: np.array([-1000.0, -1000.0])})
    np.testing.assert_array_equal(got, [0.5, 0.5])


def test_log_softmax_of_large_values(evaluate):
    x = wt.dvector("x")
    value = np.array([1000.0, 0.0, -1000.0])
    got = evaluate(wt.log_softmax(x), {x: value})
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, [0.0, -1000.0, -2000.0])
    f = wt.fvector("f")
    got32 = evaluate(wt.log_softmax(f), {f: np.array([100.0, 100.0], np.float32)})
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, np.log([0.5, 0.5]), rtol=1e-6)


def test_logsumexp_stability_and_non_finite_values(evaluate):
    x = wt.dvector("x")
    lse = wt.logsumexp(x)

    def run(values):
        return evaluate(lse, {x: np.array(values, dtype=np.float64)})

    np.testing.assert_allclose(run([1000.0, 1000.0]), 1000.0 + np.log(2.0))
    np.testing.assert_allclose(run([-1000.0, -1000.0]), -1000.0 + np.log(2.0))
    assert run([-np.inf, -np.inf]) == -np.inf
    assert run([-np.inf, 0.0]) == 0.0
    assert run([np.inf, 1.0]) == np.inf and run([np.inf, -np.inf]) == np.inf
    assert np.isnan(run([np.nan, 1.0]))
    assert run([]) == -np.inf  # the log of an empty sum
    for values in ([-np.inf, -np.inf], [np.inf, 1.0], [np.inf, -np.inf], [np.nan, 1.0]):
        np.testing.assert_array_equal(run(values), scipy.special.logsumexp(values))


def test_non_finite_rows_follow_scipy(evaluate):
    x = wt.dmatrix("x")
    value = np.array([[-np.inf, -np.inf], [np.inf, 0.0], [-np.inf, 0.0], [np.nan, 1.0]])
    got = evaluate([wt.softmax(x), wt.log_softmax(x), wt.logsumexp(x, axis=1)], {x: value})
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[0], scipy.special.softmax(value, axis=1))
        np.testing.assert_array_equal(got[1], scipy.special.log_softmax(value, axis=1))
        np.testing.assert_array_equal(got[2], scipy.special.logsumexp(value, axis=1))


# -- dtypes, shapes, empty and 0-d ------------------------------------------------------------


@pytest.mark.parametrize("fn", [wt.softmax, wt.log_softmax, wt.logsumexp])
def test_dtypes(evaluate, fn):
    assert fn(wt.fmatrix("f")).dtype == "float32"
    assert fn(wt.imatrix("i")).dtype == "float64"
    assert fn(wt.tensor("bool", shape=(3,))).dtype == "float64"
    h = wt.tensor("float16", shape=(None,))
    out = fn(h)
    assert out.dtype == "float16"
    value = np.array([1.0, 2.0, 3.0], np.float16)
    got = evaluate(out, {h: value})
    expected = {wt.softmax: scipy.special.softmax, wt.log_softmax: scipy.special.log_softmax,
                wt.logsumexp: scipy.special.logsumexp}[fn](value.astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=2e-3)
    with pytest.raises(TypeError, match="real inputs"):
        fn(wt.zmatrix("z"))


def test_integer_inputs(evaluate):
    i = wt.ivector("i")
    value = np.array([1, 2, 3], np.int32)
    np.testing.assert_allclose(evaluate(wt.softmax(i), {i: value}),
                               scipy.special.softmax(value.astype(float)))
    np.testing.assert_allclose(evaluate(wt.logsumexp([1, 2, 3]), {}),
                               scipy.special.logsumexp([1.0, 2.0, 3.0]))


def test_empty_and_zero_d(evaluate):
    x = wt.dmatrix("x")
    empty = np.zeros((2, 0))
    assert evaluate(wt.softmax(x), {x: empty}).shape == (2, 0)
    assert evaluate(wt.log_softmax(x, axis=0), {x: empty}).shape == (2, 0)
    np.testing.assert_array_equal(evaluate(wt.logsumexp(x, 1), {x: empty}), [-np.inf] * 2)
    assert evaluate(wt.logsumexp(x, 0), {x: empty}).shape == (0,)
    s = wt.dscalar("s")
    assert evaluate(wt.softmax(s), {s: np.array(3.0)}) == 1.0
    assert evaluate(wt.log_softmax(s), {s: np.array(3.0)}) == 0.0
    assert evaluate(wt.logsumexp(s), {s: np.array(3.0)}) == 3.0


def test_logsumexp_keepdims_and_static_shapes():
    x = TensorType("float64", (2, 3, None))("x")
    assert wt.logsumexp(x).type.shape == ()
    assert wt.logsumexp(x, keepdims=True).type.shape == (1, 1, 1)
    assert wt.logsumexp(x, axis=-1).type.shape == (2, 3)
    assert wt.logsumexp(x, axis=(0, 2), keepdims=True).type.shape == (1, 3, 1)
    assert wt.softmax(x, axis=1).type.shape == (2, 3, None)


# -- Ops ---------------------------------------------------------------------------------------


def test_ops_identity_printing_and_flops():
    x = wt.dtensor3("x")
    assert wt.softmax(x).owner.op == Softmax(2) and str(Softmax(2)) == "Softmax{axis=2}"
    assert wt.softmax(x, axis=None).owner.op == Softmax(None)
    assert str(LogSoftmax(0)) == "LogSoftmax{axis=0}" and LogSoftmax(0) != Softmax(0)
    assert hash(LogSoftmax(1)) == hash(LogSoftmax(1))
    assert wt.logsumexp(x, axis=(2, 0)).owner.op == LogSumExp((0, 2))
    assert wt.logsumexp(x, axis=(0, 1, 2)).owner.op == LogSumExp(None)
    assert str(LogSumExp((1,), keepdims=True)) == "LogSumExp{axes=(1,), keepdims=True}"
    assert str(LogSumExp(None)) == "LogSumExp{axes=None}"
    assert Softmax(1).flops([(3, 4)], [(3, 4)]) > 0 and LogSumExp(None).flops([(3, 4)], [()]) > 0


def test_errors():
    x = wt.dmatrix("x")
    with pytest.raises(AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        wt.softmax(x, axis=2)
    with pytest.raises(AxisError, match="axis -3 is out of bounds for array of dimension 2"):
        wt.log_softmax(x, axis=-3)
    with pytest.raises(AxisError, match="axis 5 is out of bounds"):
        wt.logsumexp(x, axis=(0, 5))
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        wt.logsumexp(x, axis=(1, -1))
    with pytest.raises(TypeError, match="'tuple' object cannot be interpreted as an integer"):
        wt.softmax(x, axis=(0, 1))
    with pytest.raises(ValueError, match="non-negative"):
        Softmax(-1)
    with pytest.raises(AxisError):
        Softmax(3)(x)
