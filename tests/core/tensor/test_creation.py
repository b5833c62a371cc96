"""Creating tensors: Alloc, ARange, Eye and zeros / ones / full / *_like / arange / eye."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.dtypes import default_float_dtype_as, default_int_dtype_as
from workbench.core.graph.fg import FunctionGraph
from workbench.core.tensor import Alloc, ARange, Eye, TensorConstant, TensorType
from workbench.testing.cases_creation import CASES

FAST = settings(max_examples=30, deadline=None)


# -- the catalogue ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "dtype"),
    [(c, d) for c in CASES for d in c.float_dtypes],
    ids=[i for c in CASES for i in c.ids()],
)
def test_catalogue_case(case, dtype, evaluate, inferred_shape):
    inputs, out, values = case.graph(dtype)
    givens = dict(zip(inputs, values))
    got = evaluate(out, givens)
    expected = case.expected(dtype)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert all(s is None or s == n for s, n in zip(out.type.shape, got.shape))
    assert inferred_shape(out, givens) == got.shape


def test_a_graph_without_inputs_compiles():
    f = function([], [wt.zeros((2, 3)), wt.arange(4), wt.eye(2)])
    zeros, arange, eye = f()
    assert zeros.shape == (2, 3) and arange.tolist() == [0, 1, 2, 3] and eye.trace() == 2


# -- Alloc --------------------------------------------------------------------------------


def test_alloc_static_shapes():
    v, n = wt.dvector("v"), wt.lscalar("n")
    assert wt.alloc(v, 2, 3).type == TensorType("float64", (2, 3))
    assert wt.alloc(v, n, n).type == TensorType("float64", (None, None))
    assert wt.alloc(TensorType("float64", (3,))(), n, 3).type.shape == (None, 3)
    assert wt.alloc(TensorType("float64", (3,))(), n, n).type.shape == (None, 3)
    assert wt.alloc(TensorType("float64", (1,))(), 2, n).type.shape == (2, None)
    assert wt.alloc(1.5, (2, 3)).type == TensorType("float64", (2, 3))
    assert wt.alloc(wt.fscalar()).type == TensorType("float32", ())


def test_alloc_lengths_are_int64_and_disconnected():
    v, n = wt.dscalar("v"), wt.iscalar("n")
    out = wt.alloc(v, n, 3)
    node = out.owner
    assert isinstance(node.op, Alloc) and str(node.op) == "Alloc"
    assert [i.type for i in node.inputs[1:]] == [TensorType("int64", ())] * 2
    assert isinstance(node.inputs[2], TensorConstant) and node.inputs[2].data == 3
    assert node.op.connection_pattern(node) == [[True], [False], [False]]
    assert node.op.make_node(*node.inputs).outputs[0].type == out.type


def test_alloc_gives_a_fresh_writeable_array(evaluate):
    v = TensorType("float64", (2, 3))("v")
    out = wt.alloc(v, 2, 3)
    value = np.ones((2, 3))
    got = evaluate(out, {v: value})
    assert got is not value and not np.shares_memory(got, value) and got.flags.writeable
    assert not Alloc.view_map and not Alloc.destroy_map


def test_alloc_refusals(evaluate):
    with pytest.raises(ValueError, match="^negative dimensions are not allowed$"):
        wt.alloc(0.0, 2, -1)
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        wt.alloc(0.0, 2.5)
    with pytest.raises(TypeError, match="integer scalar"):
        wt.alloc(0.0, wt.dscalar())
    with pytest.raises(ValueError) as info:
        wt.alloc(TensorType("float64", (3,))(), 4, 5)
    assert str(info.value) == "could not broadcast input array from shape (3,) into shape (4,5)"
    with pytest.raises(ValueError, match="more dimensions than"):
        wt.alloc(wt.dmatrix(), 3)
    v, n = wt.dvector("v"), wt.lscalar("n")
    with pytest.raises(ValueError, match="^negative dimensions are not allowed$"):
        evaluate(wt.alloc(v, n, 2), {v: np.ones(2), n: np.array(-1)})
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\)"):
        evaluate(wt.alloc(v, 2, 2), {v: np.ones(3)})


def test_alloc_constant_folding_rule():
    small = wt.zeros((2, 3))
    assert small.owner.op.do_constant_folding(None, small.owner)
    big = wt.zeros((100, 100))
    assert not big.owner.op.do_constant_folding(None, big.owner)
    x = wt.dmatrix("x")
    fg = FunctionGraph([x], [x + wt.ones((2, 2)), wt.ones(3)])
    inner = fg.outputs[0].owner.inputs[1]
    assert inner.owner.op.do_constant_folding(fg, inner.owner)  # an intermediate: foldable
    out = fg.outputs[1]
    assert not out.owner.op.do_constant_folding(fg, out.owner)  # a graph output: kept


# -- zeros, ones, full ------------------------------------------------------------------


def test_shapes_as_ints_tuples_scalars_and_vectors():
    x, n = wt.dtensor3("x"), wt.lscalar("n")
    assert wt.zeros(3).type.shape == (3,)
    assert wt.zeros(()).type.shape == ()
    assert wt.zeros(np.int32(2)).type.shape == (2,)
    assert wt.zeros((n, 2)).type.shape == (None, 2)
    assert wt.zeros(n).type.shape == (None,)
    assert wt.ones(x.shape).type.shape == (None, None, None)
    assert wt.ones(TensorType("float64", (2, None, 4))().shape).type.shape == (2, None, 4)
    assert wt.full(wt.constant(np.array([2, 3])), 1.0).type.shape == (2, 3)
    assert wt.zeros(np.array([4, 1])).type.shape == (4, 1)


def test_shape_refusals():
    with pytest.raises(ValueError, match="^negative dimensions are not allowed$"):
        wt.zeros((2, -3))
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        wt.ones((2, 2.5))
    with pytest.raises(TypeError, match="'bool' object cannot be interpreted as an integer"):
        wt.zeros(True)
    with pytest.raises(ValueError, match="no static length"):
        wt.zeros(wt.lvector("s"))
    with pytest.raises(TypeError, match="integer vector"):
        wt.zeros(wt.dvector("s"))
    with pytest.raises(OverflowError):
        wt.full(3, 300, dtype="int8")


def test_symbolic_shape_vector(evaluate):
    s = TensorType("int64", (2,))("s")
    out = wt.zeros(s, dtype="int32")
    assert out.type == TensorType("int32", (None, None))
    assert evaluate(out, {s: np.array([3, 1])}).shape == (3, 1)


@pytest.mark.parametrize(
    ("build", "dtype"),
    [(lambda: wt.zeros(2), "float64"), (lambda: wt.ones(2, dtype="int8"), "int8"),
     (lambda: wt.full(2, 7), "int64"), (lambda: wt.full(2, 7.0), "float64"),
     (lambda: wt.full(2, True), "bool"), (lambda: wt.full(2, 1j), "complex128"),
     (lambda: wt.full(2, np.float32(1)), "float32"), (lambda: wt.full(2, [1, 2]), "int64"),
     (lambda: wt.full(2, wt.fscalar()), "float32"),
     (lambda: wt.full(2, wt.fscalar(), dtype="float64"), "float64"),
     (lambda: wt.zeros_like(wt.ivector()), "int32"),
     (lambda: wt.ones_like(wt.ivector(), dtype="float32"), "float32"),
     (lambda: wt.full_like(wt.bvector(), 2.7), "int8"), (lambda: wt.eye(2), "float64"),
     (lambda: wt.eye(2, dtype="int16"), "int16")],
)
def test_creation_dtypes(build, dtype):
    assert build().dtype == dtype


def test_default_dtypes_follow_the_settings():
    with default_float_dtype_as("float32"):
        assert wt.zeros(2).dtype == "float32" and wt.full(2, 1.5).dtype == "float32"
        assert wt.eye(2).dtype == "float32" and wt.arange(0.0, 1.0, 0.5).dtype == "float32"
    with default_int_dtype_as("int32"):
        assert wt.arange(5).dtype == "int32" and wt.full(2, 3).dtype == "int32"


def test_full_broadcasts_an_array_fill_value(evaluate):
    v = wt.dvector("v")
    out = wt.full((2, 3), v)
    assert out.type.shape == (2, 3)
    np.testing.assert_array_equal(evaluate(out, {v: np.arange(3.0)}), np.full((2, 3), [0, 1, 2]))
    with pytest.raises(ValueError, match="could not broadcast"):
        wt.full((2, 3), np.ones(4))


def test_like_functions_follow_the_model(evaluate, inferred_shape):
    x = TensorType("float32", (None, 3))("x")
    for out in (wt.zeros_like(x), wt.ones_like(x), wt.full_like(x, 0.5)):
        assert out.type == TensorType("float32", (None, 3))
        value = np.ones((4, 3), dtype="float32")
        assert evaluate(out, {x: value}).shape == (4, 3)
        assert inferred_shape(out, {x: value}) == (4, 3)
    static = wt.zeros_like(TensorType("float64", (2, 2))())
    assert static.type.shape == (2, 2)


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       dtype=st.sampled_from(["float64", "float32", "int32", "int64", "bool"]))
def test_filled_arrays_match_numpy(evaluate, shape, dtype):
    for out, expected in (
        (wt.zeros(shape, dtype=dtype), np.zeros(shape, dtype)),
        (wt.ones(shape, dtype=dtype), np.ones(shape, dtype)),
        (wt.full(shape, 1, dtype=dtype), np.full(shape, 1, dtype)),
    ):
        assert out.type.shape == expected.shape
        got = evaluate(out, {})
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
def test_zeros_with_symbolic_lengths(evaluate, inferred_shape, shape):
    lengths = [wt.lscalar(f"n{i}") for i in range(len(shape))]
    out = wt.zeros(tuple(lengths), dtype="int64")
    givens = {n: np.array(s) for n, s in zip(lengths, shape)}
    assert evaluate(out, givens).shape == shape
    assert inferred_shape(out, givens) == shape


# -- arange ---------------------------------------------------------------------------


def test_arange_static_length_and_str():
    assert wt.arange(5).type == TensorType("int64", (5,))
    assert wt.arange(0.0, 1.0, 0.1).type == TensorType("float64", (10,))
    assert wt.arange(5, 0, -1.5).type.shape == (4,)
    assert wt.arange(3, 1).type.shape == (0,)
    n = wt.iscalar("n")
    out = wt.arange(n)
    assert out.type == TensorType("int32", (None,))
    assert str(out.owner.op) == "ARange{dtype=int32}" and ARange("int32") == ARange("int32")
    assert out.owner.op.connection_pattern(out.owner) == [[True], [False], [True]]
    assert wt.arange(1, 2.5).dtype == "float64"  # the float scalar decides the kind


def test_arange_refusals(evaluate):
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        wt.arange(0, 5, 0)
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        wt.arange(wt.lscalar(), 5, 0)
    step = wt.lscalar("step")
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        evaluate(wt.arange(0, 5, step), {step: np.array(0)})
    with pytest.raises(TypeError, match="dtype bool"):
        wt.arange(3, dtype="bool")
    with pytest.raises(TypeError, match="dtype complex128"):
        wt.arange(3, dtype="complex128")
    with pytest.raises(TypeError, match="int or float scalar"):
        wt.arange(wt.lvector())
    with pytest.raises(TypeError, match="bool"):
        wt.arange(True)


@FAST
@given(start=st.integers(-10, 10), stop=st.integers(-10, 10),
       step=st.integers(-4, 4).filter(bool), as_float=st.booleans())
def test_arange_matches_numpy(evaluate, inferred_shape, start, stop, step, as_float):
    if as_float:
        start, stop, step = start / 3, stop / 2, step / 4
    expected = np.arange(start, stop, step)
    out = wt.arange(start, stop, step)
    assert out.type.shape == expected.shape
    np.testing.assert_array_equal(evaluate(out, {}), expected)
    a, b, c = wt.dscalar("a"), wt.dscalar("b"), wt.dscalar("c")
    symbolic = wt.arange(a, b, c)
    givens = {a: np.array(float(start)), b: np.array(float(stop)), c: np.array(float(step))}
    got = evaluate(symbolic, givens)
    np.testing.assert_array_equal(got, np.arange(float(start), float(stop), float(step)))
    assert inferred_shape(symbolic, givens) == got.shape


# -- eye --------------------------------------------------------------------------------


def test_eye_static_shape_and_inputs():
    out = wt.eye(3, 4, 1)
    assert out.type == TensorType("float64", (3, 4))
    assert str(out.owner.op) == "Eye{dtype=float64}" and Eye("float64") == Eye("float64")
    assert out.owner.op.connection_pattern(out.owner) == [[False]] * 3
    n = wt.lscalar("n")
    assert wt.eye(n).type.shape == (None, None)
    assert wt.eye(n, 2).type.shape == (None, 2)


def test_eye_refusals(evaluate):
    with pytest.raises(ValueError, match="^negative dimensions are not allowed$"):
        wt.eye(-1)
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        wt.eye(2.5)
    with pytest.raises(TypeError, match="k must be an integer"):
        wt.eye(2, k=0.5)
    n = wt.lscalar("n")
    with pytest.raises(ValueError, match="^negative dimensions are not allowed$"):
        evaluate(wt.eye(n), {n: np.array(-2)})


@FAST
@given(n=st.integers(0, 5), m=st.integers(0, 5) | st.none(), k=st.integers(-6, 6),
       dtype=st.sampled_from(["float64", "float32", "int32", "bool"]))
def test_eye_matches_numpy(evaluate, n, m, k, dtype):
    out = wt.eye(n, m, k, dtype=dtype)
    expected = np.eye(n, m, k, dtype=dtype)
    assert out.type.shape == expected.shape
    got = evaluate(out, {})
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
