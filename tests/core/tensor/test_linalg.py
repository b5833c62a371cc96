"""Products: Dot, MatMul and dot / matmul / tensordot / outer / matvec / vecmat."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.graph.basic import ancestors
from workbench.core.tensor import Dot, MatMul, TensorType
from workbench.testing.cases_linalg import CASES

FAST = settings(max_examples=30, deadline=None)


def _ops(out):
    return {type(v.owner.op) for v in ancestors([out]) if v.owner is not None}


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
    rtol, atol = case.tolerance(got.dtype.name if got.dtype.kind in "fc" else "float64")
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    assert all(s is None or s == n for s, n in zip(out.type.shape, got.shape))
    assert inferred_shape(out, givens) == got.shape


# -- Dot ------------------------------------------------------------------------------


def test_matrix_times_static_matrix_has_static_columns():
    x = wt.dmatrix("x")
    w = TensorType("float64", (3, 4))("w")
    y = x @ w
    assert y.type == TensorType("float64", (None, 4))
    assert isinstance(y.owner.op, Dot)  # a 2-d product is a Dot, for the BLAS rewrites
    assert str(y.owner.op) == "Dot" and Dot() == Dot() and hash(Dot()) == hash(Dot())
    assert wt.dot(x, w).type == y.type and x.dot(w).type == y.type


@pytest.mark.parametrize(
    ("xshape", "yshape", "out"),
    [((5,), (5,), ()), ((2, 5), (5,), (2,)), ((5,), (5, 3), (3,)), ((2, 5), (5, 3), (2, 3)),
     ((None, 5), (None, None), (None, None)), ((2, None), (None,), (2,))],
)
def test_dot_static_shapes(xshape, yshape, out):
    x, y = TensorType("float64", xshape)(), TensorType("float64", yshape)()
    assert wt.dot(x, y).type.shape == out


@pytest.mark.parametrize(
    ("xshape", "yshape", "message"),
    [((2, 3), (4, 5), "dot: x has shape (2, 3) and y has shape (4, 5): inner dimensions 3 and 4 "
                      "differ"),
     ((3,), (4,), "dot: x has shape (3,) and y has shape (4,): inner dimensions 3 and 4 differ"),
     ((2, 3), (4, None), "dot: x has shape (2, 3) and y has shape (4, ?): inner dimensions 3 "
                         "and 4 differ"),
     ((2, 3, 4), (5, 6), "dot: x has shape (2, 3, 4) and y has shape (5, 6): inner dimensions "
                         "4 and 5 differ")],
)
def test_dot_refuses_misaligned_static_shapes_naming_the_operands(xshape, yshape, message):
    x, y = TensorType("float64", xshape)("x"), TensorType("float64", yshape)("y")
    with pytest.raises(ValueError) as info:
        wt.dot(x, y)
    assert str(info.value) == message


def test_dot_op_takes_only_vectors_and_matrices():
    with pytest.raises(TypeError, match="rank 1 or 2"):
        Dot()(wt.dtensor3(), wt.dmatrix())
    with pytest.raises(TypeError, match="rank 1 or 2"):
        Dot()(wt.dscalar(), wt.dvector())


def test_dot_run_time_mismatch_is_numpys(evaluate):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    with pytest.raises(ValueError, match=r"shapes \(2,3\) and \(4,5\) not aligned"):
        evaluate(wt.dot(x, y), {x: np.ones((2, 3)), y: np.ones((4, 5))})


@pytest.mark.parametrize(
    ("a", "b", "out"),
    [("float32", "float32", "float32"), ("float32", "int32", "float64"),
     ("float32", "int16", "float32"), ("int32", "int64", "int64"), ("int8", "int8", "int8"),
     ("complex64", "float64", "complex128"), ("bool", "bool", "bool")],
)
def test_dot_and_matmul_promote_dtypes(a, b, out, evaluate):
    from workbench.core.dtypes import promote_types

    assert promote_types(a, b) == out
    x, y = TensorType(a, (None, None))("x"), TensorType(b, (None, None))("y")
    z = wt.dot(x, y)
    assert z.dtype == out
    xv = (np.arange(6).reshape(2, 3) % 3).astype(a)
    yv = (np.arange(6).reshape(3, 2) % 2).astype(b)
    got = evaluate(z, {x: xv, y: yv})
    assert got.dtype == out
    np.testing.assert_array_equal(got, np.dot(xv, yv).astype(out))
    batched = wt.matmul(TensorType(a, (None, None, None))(), TensorType(b, (None, None))())
    assert batched.dtype == out


def test_dot_with_a_number_multiplies_and_keeps_float32():
    x = wt.fmatrix("x")
    assert x.dot(2).dtype == "float32"  # Python numbers are weak, as everywhere in workbench
    assert isinstance(wt.dot(wt.dscalar(), x).owner.op, wt.Elemwise)
    assert wt.dot(x, 2.0).owner.op == wt.mul.op


def test_vector_dot_vector_is_a_0d_array(evaluate):
    x, y = wt.dvector("x"), wt.dvector("y")
    got = evaluate(wt.dot(x, y), {x: np.arange(3.0), y: np.ones(3)})
    assert isinstance(got, np.ndarray) and got.shape == () and got == 3.0


def test_dot_flops_and_infer_shape(inferred_shape):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    z = wt.dot(x, y)
    assert Dot().flops([(3, 4), (4, 5)], [(3, 5)]) == 2 * 3 * 4 * 5
    assert Dot().flops([(4,), (4,)], [()]) == 8
    assert inferred_shape(z, {x: np.ones((3, 4)), y: np.ones((4, 5))}) == (3, 5)


def test_dot_handles_strided_inputs(evaluate):
    x, y = wt.dmatrix("x"), wt.dvector("y")
    base = np.random.default_rng(0).normal(size=(6, 5))
    xv, yv = base.T[::-1], base[::-1, 1]  # transposed, negative strides
    assert not xv.flags.c_contiguous
    np.testing.assert_allclose(evaluate(wt.dot(x, y), {x: xv, y: yv}), np.dot(xv, yv))


def test_dot_does_not_modify_its_inputs(evaluate):
    x, y = wt.fmatrix("x"), wt.imatrix("y")
    xv, yv = np.ones((2, 3), "float32"), np.ones((3, 2), "int32")
    evaluate(wt.dot(x, y), {x: xv, y: yv})
    assert xv.dtype == "float32" and yv.dtype == "int32" and (xv == 1).all() and (yv == 1).all()


def test_integer_dot_overflows_like_numpy(evaluate):
    x, y = wt.ivector("x"), wt.ivector("y")
    big = np.full(3, 2**20, dtype="int32")
    with np.errstate(over="ignore"):
        expected = np.dot(big, big)
    assert evaluate(wt.dot(x, y), {x: big, y: big}) == expected


def test_nan_and_inf_propagate(evaluate):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    xv = np.array([[np.nan, 1.0], [np.inf, 1.0], [1.0, 1.0]])
    yv = np.array([[1.0], [2.0]])
    got = evaluate(x @ y, {x: xv, y: yv})
    np.testing.assert_array_equal(got, np.dot(xv, yv))


# -- MatMul ---------------------------------------------------------------------------


def test_matmul_builds_dot_without_batch_dimensions_and_matmul_with():
    v, m, t = wt.dvector(), wt.dmatrix(), wt.dtensor3()
    for x, y in ((m, m), (v, m), (m, v), (v, v)):
        assert isinstance((x @ y).owner.op, Dot)
    for x, y in ((t, m), (m, t), (t, v), (v, t), (t, t)):
        assert isinstance((x @ y).owner.op, MatMul)
    assert str(MatMul()) == "MatMul" and MatMul() == MatMul()


def test_matmul_with_numpy_operands(evaluate):
    x = wt.dtensor3("x")
    w = np.arange(6.0).reshape(3, 2)
    xv = np.ones((2, 4, 3))
    assert evaluate(x @ w, {x: xv}).tolist() == (xv @ w).tolist()
    assert evaluate(w.T @ x, {x: np.ones((2, 3, 5))}).shape == (2, 2, 5)  # __rmatmul__


@pytest.mark.parametrize(
    ("xshape", "yshape", "out"),
    [((None, 1, 3, 4), (5, 4, 2), (None, 5, 3, 2)), ((2, 3, 4), (4,), (2, 3)),
     ((4,), (None, 4, 6), (None, 6)), ((1, 2, 3), (7, 3, 1), (7, 2, 1)),
     ((None, 2, 3), (None, 3, 1), (None, 2, 1)), ((1, 2, 3), (None, 3, 4), (None, 2, 4))],
)
def test_matmul_static_shapes(xshape, yshape, out):
    x, y = TensorType("float32", xshape)(), TensorType("float32", yshape)()
    z = x @ y
    assert z.type == TensorType("float32", out)


def test_matmul_refusals_name_the_op_the_operands_and_their_shapes():
    with pytest.raises(ValueError) as info:
        wt.matmul(wt.dscalar("a"), wt.dvector("v"))
    assert str(info.value) == (
        "matmul: a has shape () and v has shape (?,): a is a scalar, and matmul needs at "
        "least one dimension (use * to multiply by a scalar)"
    )
    with pytest.raises(ValueError, match="the right operand is a scalar"):
        wt.dvector() @ 2.0
    x, w = TensorType("float64", (2, 4))("x"), TensorType("float64", (3, None))("w")
    with pytest.raises(ValueError) as info:
        x @ w
    assert str(info.value) == (
        "matmul: x has shape (2, 4) and w has shape (3, ?): inner dimensions 4 and 3 differ"
    )
    with pytest.raises(ValueError) as info:
        TensorType("float64", (2, 2, 3))() @ TensorType("float64", (5, 3, 5))()
    assert str(info.value) == (
        "matmul: the left operand has shape (2, 2, 3) and the right operand has shape "
        "(5, 3, 5): the batch dimensions (2,) and (5,) cannot be broadcast together"
    )
    assert "gufunc" not in str(info.value)


def test_matmul_infer_shape_with_unknown_batch_lengths(inferred_shape):
    x, y = wt.dtensor4("x"), wt.dtensor3("y")
    z = wt.matmul(x, y)
    givens = {x: np.ones((2, 1, 3, 4)), y: np.ones((5, 4, 6))}
    assert inferred_shape(z, givens) == (2, 5, 3, 6)
    row = TensorType("float64", (1, None, None))("row")
    w = wt.matmul(x, row)
    assert inferred_shape(w, {x: np.ones((2, 7, 3, 4)), row: np.ones((1, 4, 2))}) == (2, 7, 3, 2)


def test_matmul_infer_shape_of_a_zero_batch_against_a_length_one_batch(inferred_shape):
    x, y = wt.dtensor3("x"), wt.dtensor3("y")
    pairs = [(np.ones((0, 2, 3)), np.ones((1, 3, 4))), (np.ones((1, 2, 3)), np.ones((0, 3, 4)))]
    for xv, yv in pairs:
        assert inferred_shape(x @ y, {x: xv, y: yv}) == np.matmul(xv, yv).shape


def test_matmul_flops():
    assert MatMul().flops([(2, 3, 4), (2, 4, 5)], [(2, 3, 5)]) == 2 * 2 * 3 * 4 * 5


def test_matmul_float32_stays_float32(evaluate):
    x, y = wt.ftensor3("x"), wt.fmatrix("y")
    z = x @ y
    assert z.dtype == "float32"
    got = evaluate(z, {x: np.ones((2, 3, 4), "float32"), y: np.ones((4, 2), "float32")})
    assert got.dtype == np.float32


def test_matmul_in_bfloat16_keeps_its_dtype(evaluate):
    x, y = wt.tensor("bfloat16", (None, None, None), "x"), wt.tensor("bfloat16", (None, None), "y")
    z = x @ y
    xv = np.ones((2, 3, 4), z.type.numpy_dtype)
    got = evaluate(z, {x: xv, y: np.ones((4, 2), z.type.numpy_dtype)})
    assert got.dtype == z.type.numpy_dtype and float(got[0, 0, 0]) == 4.0


@st.composite
def _matmul_operands(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(
        signature="(m?,n),(n,p?)->(m?,p?)", max_dims=4, max_side=4))
    dtype = draw(st.sampled_from(["float64", "float32", "int32"]))
    x = draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=st.integers(-3, 3)))
    y = draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=st.integers(-3, 3)))
    return x, y


@FAST
@given(_matmul_operands())
def test_matmul_matches_numpy_on_broadcast_batches(evaluate, operands):
    xv, yv = operands
    x = TensorType(str(xv.dtype), (None,) * xv.ndim)("x")
    y = TensorType(str(yv.dtype), (None,) * yv.ndim)("y")
    z = x @ y
    got = evaluate(z, {x: xv, y: yv})
    expected = np.matmul(xv, yv)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    static = (TensorType(str(xv.dtype), xv.shape)() @ TensorType(str(yv.dtype), yv.shape)())
    assert static.type.shape == expected.shape


def test_matmul_with_the_python_vm():
    x, w = wt.dtensor3("x"), wt.dmatrix("w")
    f = function([x, w], [x @ w, wt.dot(w.T, w)])
    xv, wv = np.ones((2, 3, 4)), np.arange(8.0).reshape(4, 2)
    batched, gram = f(xv, wv)
    np.testing.assert_allclose(batched, xv @ wv)
    np.testing.assert_allclose(gram, wv.T @ wv)


# -- tensordot, outer, matvec, vecmat ----------------------------------------------------


@FAST
@given(st.data())
def test_tensordot_matches_numpy(evaluate, data):
    a_shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    n = data.draw(st.integers(0, len(a_shape)))
    summed = a_shape[len(a_shape) - n:]
    b_free = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    b_shape = summed + b_free
    a_val = np.arange(np.prod(a_shape), dtype="float64").reshape(a_shape) - 2
    b_val = np.arange(np.prod(b_shape), dtype="float64").reshape(b_shape) % 5
    a = TensorType("float64", (None,) * len(a_shape))("a")
    b = TensorType("float64", (None,) * len(b_shape))("b")
    out = wt.tensordot(a, b, axes=n)
    got = evaluate(out, {a: a_val, b: b_val})
    np.testing.assert_allclose(got, np.tensordot(a_val, b_val, axes=n))
    assert Dot in _ops(out)


def test_tensordot_static_shape_and_structure():
    a = TensorType("float32", (2, 3, 4))("a")
    b = TensorType("float32", (4, 3, 5))("b")
    out = wt.tensordot(a, b, axes=([1, 2], [1, 0]))
    assert out.type == TensorType("float32", (2, 5))
    assert isinstance(out.owner.op, Dot)  # one free axis on each side: no final reshape
    assert {wt.DimShuffle, Dot} <= _ops(out)
    assert wt.dot(wt.dtensor3(), wt.dmatrix()).type.ndim == 3


def test_tensordot_refusals():
    a, b = wt.dmatrix("a"), wt.dmatrix("b")
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds for array of "
                                                       "dimension 2"):
        wt.tensordot(a, b, axes=([2], [0]))
    with pytest.raises(ValueError, match="shape-mismatch for sum"):
        wt.tensordot(a, b, axes=([0], [0, 1]))
    with pytest.raises(ValueError, match="shape-mismatch for sum: axis 1 of a has length 3"):
        wt.tensordot(TensorType("float64", (2, 3))(), TensorType("float64", (4, 5))(), axes=1)
    with pytest.raises(ValueError, match="repeated axis"):
        wt.tensordot(a, b, axes=([0, 0], [0, 1]))
    with pytest.raises(ValueError, match="non-negative"):
        wt.tensordot(a, b, axes=-1)
    with pytest.raises(ValueError, match="cannot sum over 3 axes"):
        wt.tensordot(a, b, axes=3)
    with pytest.raises(TypeError, match="pair of axis sequences"):
        wt.tensordot(a, b, axes=1.5)
    with pytest.raises(TypeError, match="must be an integer"):
        wt.tensordot(a, b, axes=([0.5], [0]))


def test_outer_of_vectors_is_an_elemwise_product(evaluate):
    x, y = wt.fvector("x"), wt.fvector("y")
    z = wt.outer(x, y)
    assert z.type == TensorType("float32", (None, None))
    assert isinstance(z.owner.op, wt.Elemwise)
    xv, yv = np.arange(3, dtype="float32"), np.arange(4, dtype="float32")
    np.testing.assert_array_equal(evaluate(z, {x: xv, y: yv}), np.outer(xv, yv))


def test_matvec_and_vecmat(evaluate):
    a, v = wt.dtensor3("a"), wt.dvector("v")
    av, vv = np.random.default_rng(1).normal(size=(2, 3, 4)), np.arange(4.0)
    out = wt.matvec(a, v)
    assert out.type.ndim == 2
    np.testing.assert_allclose(evaluate(out, {a: av, v: vv}), np.matvec(av, vv))
    assert isinstance(wt.matvec(wt.dmatrix(), v).owner.op, Dot)
    assert isinstance(wt.vecmat(v, wt.dmatrix()).owner.op, Dot)
    static = wt.matvec(TensorType("float64", (5, 3, 4))(), TensorType("float64", (2, 1, 4))())
    assert static.type.shape == (2, 5, 3)


def test_matvec_and_vecmat_refusals():
    with pytest.raises(ValueError) as info:
        wt.matvec(wt.dvector("a"), wt.dvector("v"))
    assert str(info.value) == (
        "matvec: a has shape (?,) and v has shape (?,): a needs at least 2 dimensions"
    )
    with pytest.raises(ValueError) as info:
        wt.matvec(TensorType("float64", (2, 3))("a"), TensorType("float64", (4,))("v"))
    assert str(info.value) == (
        "matvec: a has shape (2, 3) and v has shape (4,): inner dimensions 3 and 4 differ"
    )
    with pytest.raises(ValueError, match="vecmat: .*inner dimensions 3 and 4 differ"):
        wt.vecmat(TensorType("float64", (3,))(), TensorType("float64", (4, 2))())
