"""Reductions: sum, prod, max, min, all, any, mean, var, std, argmax, argmin (and CAReduce)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, valid_tuple_axes
from numpy.exceptions import AxisError

import workbench.core.scalar as ps
import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.graph.basic import ancestors
from workbench.core.tensor import (
    All,
    Any,
    Argmax,
    Argmin,
    CAReduce,
    DimShuffle,
    Max,
    Min,
    Prod,
    Shape_i,
    Sum,
    TensorType,
)

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64"]
REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "all": np.all,
    "any": np.any, "mean": np.mean,
}  # fmt: skip


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 5, shape).astype(dtype)
    return (rng.random(shape) * 4 - 2).astype(dtype)


def _check_shapes(out, value, givens, inferred_shape):
    """The static shape admits the value and infer_shape predicts its shape."""
    assert out.type.ndim == value.ndim
    assert all(s is None or s == n for s, n in zip(out.type.shape, value.shape))
    assert inferred_shape(out, givens) == value.shape


# -- against NumPy on random shapes, axes and dtypes -----------------------------------------


@st.composite
def reduction_problems(draw):
    name = draw(st.sampled_from(sorted(REDUCTIONS)))
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    axis = draw(st.one_of(st.none(), valid_tuple_axes(len(shape)),
                          st.integers(-len(shape), len(shape) - 1) if shape else st.none()))
    if name in ("max", "min"):  # no identity: the reduced axes must not be empty
        axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
        if any(shape[a] == 0 for a in axes):
            shape = tuple(max(n, 1) for n in shape)
    keepdims = draw(st.booleans())
    static = tuple(draw(st.sampled_from([n, None])) for n in shape)
    return name, dtype, shape, static, axis, keepdims, draw(st.integers(0, 2**16))


@settings(max_examples=50, deadline=None)
@given(reduction_problems())
def test_reductions_match_numpy(evaluate, inferred_shape, problem):
    name, dtype, shape, static, axis, keepdims, seed = problem
    data = _values(np.random.default_rng(seed), shape, dtype)
    x = TensorType(dtype, static)("x")
    out = getattr(wt, name)(x, axis=axis, keepdims=keepdims)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # "Mean of empty slice"
        expected = REDUCTIONS[name](data, axis=axis, keepdims=keepdims)
    got = evaluate(out, {x: data})
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == "float32" else 1e-12)
    _check_shapes(out, got, {x: data}, inferred_shape)


@settings(max_examples=30, deadline=None)
@given(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_var_std_match_numpy(evaluate, inferred_shape, shape, data):
    axis = data.draw(st.one_of(st.none(), valid_tuple_axes(len(shape), min_size=1)))
    ddof = data.draw(st.sampled_from([0, 1, 1.5]))
    keepdims = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from(["float64", "float32", "int32"]))
    value = _values(np.random.default_rng(len(shape)), shape, dtype)
    x = TensorType(dtype, (None,) * len(shape))("x")
    for fn, ref in ((wt.var, np.var), (wt.std, np.std)):
        out = fn(x, axis=axis, ddof=ddof, keepdims=keepdims)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Degrees of freedom <= 0"
            expected = ref(value, axis=axis, ddof=ddof, keepdims=keepdims)
        got = evaluate(out, {x: value})
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == "float32" else 1e-10)
        _check_shapes(out, got, {x: value}, inferred_shape)


def test_non_contiguous_and_reversed_inputs(evaluate):
    base = np.arange(24.0).reshape(4, 6) ** 1.5
    x = wt.dmatrix("x")
    outputs = [wt.sum(x, 0), wt.max(x, 1), wt.mean(x), wt.argmax(x, 1), wt.prod(x, -1)]
    for value in (base.T, base[::-1, ::2], base[:, ::-1]):
        got = evaluate(outputs, {x: value})
        np.testing.assert_allclose(got[0], value.sum(0))
        np.testing.assert_allclose(got[1], value.max(1))
        np.testing.assert_allclose(got[2], value.mean())
        np.testing.assert_array_equal(got[3], value.argmax(1))
        np.testing.assert_allclose(got[4], value.prod(-1))


# -- dtypes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES + ["uint16", "uint32", "uint64", "float16",
                                            "complex64", "complex128"])
def test_sum_and_prod_dtypes_follow_numpy2(dtype):
    x = TensorType(dtype, (None,))("x")
    sample = np.ones(2, dtype=dtype)
    assert wt.sum(x).dtype == np.sum(sample).dtype
    assert wt.prod(x).dtype == np.prod(sample).dtype
    assert wt.max(x).dtype == dtype and wt.min(x).dtype == dtype
    assert wt.all(x).dtype == "bool" and wt.any(x).dtype == "bool"


def test_explicit_dtype_and_accumulator(evaluate):
    x = wt.ivector("x")
    s = wt.sum(x, dtype="float32")
    assert s.dtype == "float32" and str(s.owner.op) == "Sum{axes=None, dtype=float32}"
    assert evaluate(s, {x: np.array([1, 2, 3], "int32")}) == 6
    f = wt.fvector("f")
    wide = wt.sum(f, acc_dtype="float64")
    assert wide.dtype == "float32"
    assert str(wide.owner.op) == "Sum{axes=None, acc_dtype=float64}"
    value = np.full(10**4, 0.1, dtype=np.float32)
    assert evaluate(wide, {f: value}) == np.float32(np.sum(value, dtype=np.float64))


def test_integer_overflow_as_numpy(evaluate):
    b = wt.bvector("b")
    big = np.full(5, 100, dtype=np.int8)
    assert evaluate(wt.sum(b), {b: big}) == 500  # int8 accumulates in int64
    wrapped = evaluate(wt.sum(b, dtype="int8"), {b: big})
    assert wrapped.dtype == np.int8 and wrapped == np.sum(big, dtype=np.int8)
    l = wt.lvector("l")
    huge = np.array([2**62, 2**62], dtype=np.int64)
    with np.errstate(over="ignore"):
        assert evaluate(wt.sum(l), {l: huge}) == np.sum(huge)  # wraps around
    u = wt.tensor("uint8", shape=(None,))
    assert evaluate(wt.prod(u), {u: np.array([255, 255], np.uint8)}) == 255 * 255


def test_float32_stays_float32():
    x = wt.fmatrix("x")
    for out in (wt.sum(x), wt.prod(x, 0), wt.mean(x, 1), wt.var(x), wt.std(x, 0, ddof=1),
                wt.max(x), wt.mean(2 * x)):
        assert out.dtype == "float32", out


def test_mean_of_integers_is_default_float(evaluate):
    x = wt.imatrix("x")
    m = wt.mean(x, axis=1)
    assert m.dtype == "float64"
    value = np.array([[1, 2], [3, 6]], dtype=np.int32)
    np.testing.assert_array_equal(evaluate(m, {x: value}), [1.5, 4.5])
    assert wt.mean(wt.tensor("bool", shape=(3,))).dtype == "float64"
    assert wt.mean(x, dtype="float32").dtype == "float32"
    assert wt.var(x).dtype == "float64" and wt.std(x).dtype == "float64"


def test_mean_count_comes_from_the_shape(evaluate):
    unknown = wt.dmatrix("x")
    graph = ancestors([wt.mean(unknown, axis=1)])
    assert any(v.owner is not None and isinstance(v.owner.op, Shape_i) for v in graph)
    known = TensorType("float64", (2, 5))("y")
    graph = ancestors([wt.mean(known, axis=1)])
    assert not any(v.owner is not None and isinstance(v.owner.op, Shape_i) for v in graph)
    value = np.arange(10.0).reshape(2, 5)
    np.testing.assert_allclose(evaluate(wt.mean(unknown, 1), {unknown: value}), [2, 7])


def test_mean_of_empty_is_nan(evaluate):
    x = wt.dvector("x")
    assert np.isnan(evaluate(wt.mean(x), {x: np.zeros(0)}))


def test_var_std_ddof(evaluate):
    x = wt.dvector("x")
    value = np.array([1.0, 2.0, 4.0, 7.0])
    for ddof in (0, 1, 2, 1.5):
        np.testing.assert_allclose(evaluate(wt.var(x, ddof=ddof), {x: value}),
                                   np.var(value, ddof=ddof))
        np.testing.assert_allclose(evaluate(wt.std(x, ddof=ddof), {x: value}),
                                   np.std(value, ddof=ddof))
    # ddof >= n: the denominator is clipped at 0, as NumPy (inf here)
    assert evaluate(wt.var(x, ddof=4), {x: value}) == np.inf
    static = TensorType("float64", (4,))("s")
    assert evaluate(wt.var(static, ddof=5), {static: value}) == np.inf
    z = wt.zvector("z")
    cvalue = np.array([1 + 1j, 2 - 1j, 0.5j])
    got = evaluate(wt.var(z), {z: cvalue})
    assert got.dtype == np.float64 and np.isclose(got, np.var(cvalue))
    with pytest.raises(TypeError, match="ddof must be a number"):
        wt.var(x, ddof="1")


# -- keepdims and static shapes -------------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "all", "any", "mean", "var",
                                  "std"])
def test_keepdims_shapes(name):
    x = TensorType("float64", (2, None, 4))("x")
    fn = getattr(wt, name)
    assert fn(x, axis=1, keepdims=True).type.shape == (2, 1, 4)
    assert fn(x, axis=(0, 2), keepdims=True).type.shape == (1, None, 1)
    assert fn(x, keepdims=True).type.shape == (1, 1, 1)
    assert fn(x, axis=-1).type.shape == (2, None)
    assert fn(x).type.shape == ()


def test_keepdims_is_a_dimshuffle_after_the_reduction():
    x = wt.dtensor3("x")
    out = wt.sum(x, axis=(0, 2), keepdims=True)
    assert isinstance(out.owner.op, DimShuffle) and str(out.owner.op) == "DimShuffle{x,0,x}"
    assert isinstance(out.owner.inputs[0].owner.op, Sum)


def test_axis_none_and_all_axes_build_the_same_op():
    x = wt.dmatrix("x")
    assert wt.sum(x).owner.op == wt.sum(x, axis=(1, 0)).owner.op == Sum(None)
    assert wt.sum(x, axis=-1).owner.op == Sum((1,))


def test_zero_d_inputs(evaluate):
    x = wt.dscalar("x")
    for fn in (wt.sum, wt.prod, wt.max, wt.min, wt.mean):
        for axis in (None, 0, -1, ()):
            out = fn(x, axis=axis)
            assert out.type.shape == ()
            assert evaluate(out, {x: np.array(2.5)}) == 2.5
    assert evaluate(wt.argmax(x, axis=0), {x: np.array(2.5)}) == 0
    with pytest.raises(AxisError, match="axis 0 is out of bounds for array of dimension 0"):
        wt.sum(x, axis=(0,))


def test_empty_reductions(evaluate):
    x = wt.dmatrix("x")
    empty = np.zeros((0, 3))
    np.testing.assert_array_equal(evaluate(wt.sum(x, 0), {x: empty}), np.zeros(3))
    np.testing.assert_array_equal(evaluate(wt.prod(x, 0), {x: empty}), np.ones(3))
    assert evaluate(wt.all(x), {x: empty}) and not evaluate(wt.any(x), {x: empty})
    assert evaluate(wt.max(x, 1), {x: empty}).shape == (0,)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        evaluate(wt.max(x, 0), {x: empty})
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum"):
        evaluate(wt.min(x), {x: empty})
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        evaluate(wt.argmax(x), {x: empty})


def test_nan_and_inf_propagation(evaluate):
    x = wt.dvector("x")
    value = np.array([1.0, np.nan, np.inf, -2.0])
    got = evaluate([wt.max(x), wt.min(x), wt.sum(x), wt.argmax(x), wt.argmin(x), wt.all(x)],
                   {x: value})
    assert all(np.isnan(g) for g in got[:3])
    assert got[3] == np.argmax(value) == 1 and got[4] == np.argmin(value) == 1
    assert got[5]  # NaN is nonzero
    inf = np.array([1.0, np.inf])
    assert evaluate(wt.max(x), {x: inf}) == np.inf and evaluate(wt.sum(x), {x: inf}) == np.inf


def test_python_lists_and_arrays_are_accepted(evaluate):
    total = wt.sum([[1, 2], [3, 4]], axis=0)
    assert total.dtype == "int64"
    np.testing.assert_array_equal(evaluate(total, {}), [4, 6])
    assert evaluate(wt.mean(np.arange(4.0)), {}) == 1.5
    assert evaluate(wt.argmax([3.0, 7.0, 5.0]), {}) == 1
    assert evaluate(wt.any([0, 0, 1]), {})


# -- argmax / argmin -------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_argmax_argmin_match_numpy(evaluate, inferred_shape, shape, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    keepdims = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from(["float64", "float32", "int8", "uint8", "bool"]))
    value = _values(np.random.default_rng(sum(shape)), shape, dtype)
    x = TensorType(dtype, (None,) * len(shape))("x")
    for fn, ref in ((wt.argmax, np.argmax), (wt.argmin, np.argmin)):
        out = fn(x, axis=axis, keepdims=keepdims)
        got = evaluate(out, {x: value})
        expected = ref(value, axis=axis, keepdims=keepdims)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, expected)
        _check_shapes(out, got, {x: value}, inferred_shape)


def test_argmax_op():
    x = TensorType("float32", (2, None, 4))("x")
    out = wt.argmax(x, axis=-1)
    assert out.type == TensorType("int64", (2, None))
    assert out.owner.op == Argmax(2) and str(out.owner.op) == "Argmax{axis=2}"
    assert wt.argmin(x).owner.op == Argmin(None) and str(Argmin(None)) == "Argmin{axis=None}"
    assert Argmax(1) != Argmin(1) and hash(Argmax(1)) == hash(Argmax(1))
    assert Argmax(None).flops([(2, 3, 4)], [()]) == 24
    with pytest.raises(ValueError, match="must be None or >= 0"):
        Argmax(-1)


def test_max_and_argmax(evaluate):
    x = wt.dmatrix("x")
    value = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    maximum, index = wt.max_and_argmax(x, axis=1)
    got = evaluate([maximum, index], {x: value})
    np.testing.assert_array_equal(got[0], [5.0, 7.0])
    np.testing.assert_array_equal(got[1], [1, 0])
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        wt.max_and_argmax(x, axis=(0, -2))


# -- Ops: identity, printing, shapes, flops -------------------------------------------------


def test_careduce_ops_identity_and_printing():
    assert Sum((0, 2)) == Sum((2, 0)) and hash(Sum((0, 2))) == hash(Sum((0, 2)))
    assert Sum((0,)) != Prod((0,)) and Sum(None) != Sum((0,))
    assert Sum(1) == Sum((1,))
    assert str(Sum((0, 2))) == "Sum{axes=(0, 2)}"
    assert str(Max((1,))) == "Max{axes=(1,)}" and str(Min(None)) == "Min{axes=None}"
    assert str(All((0,))) == "All{axes=(0,)}" and str(Any(None)) == "Any{axes=None}"
    assert str(CAReduce(ps.or_, (0,))) == "CAReduce{or_, axes=(0,)}"
    assert isinstance(Prod(), CAReduce) and Prod().scalar_op == ps.mul
    assert Sum.__props__ == ("axis", "dtype", "acc_dtype")
    assert Max.__props__ == ("axis", "initial")
    assert Max(**Max((1,), initial=0)._props_dict()) == Max((1,), initial=0)
    assert Sum(**Sum((1,), dtype="float32")._props_dict()) == Sum((1,), dtype="float32")


def test_careduce_perform_contract(evaluate, inferred_shape):
    x = wt.itensor3("x")
    out = CAReduce(ps.or_, (0, 2))(x)
    assert out.type == TensorType("int32", (None,))
    value = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    got = evaluate(out, {x: value})
    np.testing.assert_array_equal(got, np.bitwise_or.reduce(value, axis=(0, 2)))
    assert inferred_shape(out, {x: value}) == (3,)
    y = wt.dvector("y")
    same = Sum(())(y)  # reducing no axis: a copy, never a view of the input
    data = np.arange(3.0)
    result = evaluate(same, {y: data})
    assert not np.shares_memory(result, data) and Sum(()).view_map == {}
    scalar_sum = evaluate(wt.sum(y), {y: data})
    assert isinstance(scalar_sum, np.ndarray) and scalar_sum.shape == ()


def test_reduction_flops_count_input_elements():
    assert Sum((0,)).flops([(3, 4)], [(4,)]) == 12
    assert Max(None).flops([(2, 3, 5)], [()]) == 30
    assert Sum(None).flops([(0, 4)], [()]) == 0


# -- errors ----------------------------------------------------------------------------------


def test_axis_errors_read_like_numpy():
    x = wt.dmatrix("x")
    with pytest.raises(AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        wt.sum(x, axis=2)
    with pytest.raises(IndexError, match="axis -3 is out of bounds for array of dimension 2"):
        wt.max(x, axis=(0, -3))
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        wt.argmax(x, axis=2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        wt.sum(x, axis=(0, 0))
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        wt.mean(x, axis=(1, -1))
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        wt.sum(x, axis=1.0)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        wt.argmin(x, axis=(0, 0))
    with pytest.raises(TypeError, match="must be known when the graph is built"):
        wt.sum(x, axis=wt.lscalar("a"))
    with pytest.raises(AxisError, match="axis 2 is out of bounds"):
        Sum((2,))(x)  # the Op checks too


def test_op_argument_errors():
    with pytest.raises(TypeError, match="needs a binary scalar Op"):
        CAReduce(ps.exp)
    with pytest.raises(TypeError, match="associative"):
        CAReduce(ps.sub)
    with pytest.raises(ValueError, match="distinct non-negative"):
        Sum((-1,))
    with pytest.raises(TypeError, match="or_ of dtypes"):
        CAReduce(ps.or_)(wt.dvector("x"))  # bitwise or of floats


def test_compiled_function_example():
    from workbench.core.compile.function import function

    x = wt.dmatrix("x")
    centred = x - x.mean(axis=0, keepdims=True)
    f = function([x], [centred.sum(axis=0), x.std(axis=1, ddof=1), x.argmax(axis=1)])
    value = np.array([[1.0, 4.0, 2.0], [3.0, 0.0, 5.0]])
    total, spread, where = f(value)
    np.testing.assert_allclose(total, 0.0, atol=1e-12)
    np.testing.assert_allclose(spread, value.std(axis=1, ddof=1))
    np.testing.assert_array_equal(where, [1, 2])


# -- argmax / argmin over several axes, as PyTensor allows ----------------------------------
def _arg_over_axes(numpy_fn, a, axes, keepdims):
    """NumPy reference: the kept axes first, the reduced ones flattened in C order last."""
    axes = sorted(d % a.ndim for d in axes)
    kept = [d for d in range(a.ndim) if d not in axes]
    moved = np.transpose(a, kept + axes).reshape([a.shape[d] for d in kept] + [-1])
    result = numpy_fn(moved, axis=-1)
    return np.expand_dims(result, tuple(axes)) if keepdims else result


@pytest.mark.parametrize("axes", [(0,), [1], (0, 1), [0, 2], (1, 2), (0, 1, 2), (-1, 0), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin_and_max_and_argmax_take_a_tuple_or_list_of_axes(axes, keepdims):
    t = wt.dtensor3("t")
    a = np.random.default_rng(3).standard_normal((2, 3, 4))
    for fn, numpy_fn in ((wt.argmax, np.argmax), (wt.argmin, np.argmin)):
        got = fn(t, axis=axes, keepdims=keepdims).eval({t: a})
        np.testing.assert_array_equal(got, _arg_over_axes(numpy_fn, a, axes, keepdims))
    top, where = wt.max_and_argmax(t, axis=axes, keepdims=keepdims)
    np.testing.assert_array_equal(top.eval({t: a}), np.max(a, axis=tuple(axes),
                                                            keepdims=keepdims))
    np.testing.assert_array_equal(where.eval({t: a}), _arg_over_axes(np.argmax, a, axes,
                                                                     keepdims))


# -- max/min with numpy's `initial` ---------------------------------------------------------



@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_max_min_initial_are_numpys_on_every_linker(linker):
    """`initial` is folded in first: it gives the value of an empty axis, bounds the
    result, and a NaN of the input still propagates (numpy.max(..., initial=...))."""
    x = wt.dmatrix("x")
    outs = [wt.max(x, 0, initial=0), wt.max(x, 1, initial=0.5), wt.min(x, None, initial=1),
            wt.max(x, (0, 1), keepdims=True, initial=-np.inf)]
    f = function([x], outs, linker=linker)
    rng = np.random.default_rng(3)
    values = [np.zeros((0, 3)), np.zeros((3, 0)), np.zeros((0, 0)), rng.normal(size=(3, 4)),
              -np.abs(rng.normal(size=(4, 3))), np.array([[1.0, np.nan], [-2.0, 3.0]]),
              rng.normal(size=(5, 6))[::2, ::-1]]
    for value in values:
        want = [np.max(value, 0, initial=0), np.max(value, 1, initial=0.5),
                np.min(value, None, initial=1),
                np.max(value, (0, 1), keepdims=True, initial=-np.inf)]
        for got, expected in zip(f(value), want):
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
    ints = wt.lvector("i")
    g = function([ints], wt.max(ints, initial=2), linker=linker)
    assert g(np.array([-5, 1], dtype=np.int64)) == 2 and g(np.array([7, 1])) == 7
    assert g(np.zeros(0, dtype=np.int64)) == 2


def test_initial_is_a_prop_checked_against_the_dtype():
    assert Max((0,), initial=0) != Max((0,)) and Max((0,), initial=0) == Max((0,), initial=0.0)
    assert str(Max((0,), initial=0)) == "Max{axes=(0,), initial=0}"
    x = wt.dmatrix("x")
    assert wt.max(x, 0, initial=0).type.shape == (None,)
    with pytest.raises(TypeError, match="Max initial must be None or a real number, got 'a'"):
        Max((0,), initial="a")
    with pytest.raises(TypeError, match="initial 0.5 is not a value of the input's dtype int64"):
        wt.max(wt.lvector("i"), initial=0.5)
