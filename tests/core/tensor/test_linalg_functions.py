"""The composed functions of wt.linalg: numpy's refusals, the top-level names and the
PyTensor alias ``x.norm(L, axis)`` (values are in the catalogue, cases_linalg_functions)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.gradcheck import verify_grad

la = wt.linalg



def test_invalid_norm_orders_are_refused_like_numpy():
    with pytest.raises(ValueError, match="invalid norm order 'fro' for vectors"):
        la.norm(wt.dvector(), "fro")
    with pytest.raises(ValueError, match="invalid norm order 3 for matrices"):
        la.norm(wt.dmatrix(), 3)
    with pytest.raises(ValueError, match="improper number of dimensions"):
        la.norm(wt.dtensor3(), 1)
    with pytest.raises(ValueError, match="duplicate axes"):
        la.norm(wt.dtensor3(), "fro", axis=(1, 1))


def test_matrix_power_refusals():
    with pytest.raises(TypeError, match="exponent must be an integer"):
        la.matrix_power(wt.dmatrix(), 1.5)
    with pytest.raises(ValueError, match="square"):
        la.matrix_power(wt.tensor("float64", shape=(2, 3)), 2)


def test_top_level_names_are_numpys():
    a = wt.dtensor3("a")
    f = wb.function([a], [wt.trace(a), wt.kron(a, a)])
    value = np.arange(24.0).reshape(2, 3, 4)
    trace, kron = f(value)
    np.testing.assert_allclose(trace, np.trace(value))
    np.testing.assert_allclose(kron, np.kron(value, value))
    assert {"trace", "kron", "linalg"} <= set(wt.__all__)


def test_the_pytensor_norm_alias():
    x = wt.dmatrix("x")
    f = wb.function([x], [x.norm(1), x.norm(2, axis=0), x.norm(np.inf, axis=1, keepdims=True)])
    value = np.array([[3.0, -4.0], [1.0, 2.0]])
    l1, l2, linf = f(value)
    assert l1 == 10.0
    np.testing.assert_allclose(l2, np.linalg.norm(value, axis=0))
    np.testing.assert_allclose(linf, [[4.0], [2.0]])
    wb.verify_grad(lambda v: v.norm(3), [value])


def test_block_diag_of_nothing_is_scipys_empty_row():
    out = la.block_diag()
    assert wb.function([], out)().shape == (1, 0)


@pytest.mark.parametrize("scale", [1e-3, 0.2, 1.0, 5.0, 40.0])
def test_expm_matches_scipy_across_norms(scale):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(int(scale * 1000))
    value = scale * rng.standard_normal((2, 5, 5))
    a = wt.dtensor3("a")
    got = wb.function([a], la.expm(a))(value)
    np.testing.assert_allclose(got, scipy_linalg.expm(value), rtol=1e-10, atol=1e-12)


@pytest.mark.linkers("py", "c")
def test_expm_of_a_triangular_matrix_is_exact_on_its_diagonal(linker):
    # the squarings doubled the rounding errors of the diagonal: the nilpotent N gave
    # 0.99999976 on py; the diagonal and superdiagonal are now recomputed exactly
    # (Al-Mohy and Higham 2009), also in float32 (the c linker's lower triangle
    # reached -2e5 there) and for lower triangular matrices
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    rng = np.random.default_rng(4)
    upper = np.triu(rng.standard_normal((4, 4))) * 30
    cases = [np.array([[0.0, 1e10], [0.0, 0.0]]), np.array([[10.0, 1e9], [0.0, 10.0 + 1e-7]]),
             upper, upper.T.copy(), np.diag([-50.0, 3.0, 80.0])]
    for dtype, rtol in (("float64", 2e-13), ("float32", 2e-6)):
        a = wt.matrix("a", dtype=dtype)
        f = wb.function([a], la.expm(a), linker=linker)
        for value in cases:
            value = value.astype(dtype)
            exact = np.array(mp.expm(mp.matrix(value.astype(np.float64).tolist())).tolist(),
                             dtype=np.float64)
            got = f(value)
            assert got.dtype == dtype
            assert (got[exact == 0] == 0).all()  # the zero triangle stays zero
            np.testing.assert_allclose(got, exact, rtol=rtol, atol=0)


def test_expm_r_op_is_the_frechet_derivative():
    rng = np.random.default_rng(0)
    a, e = wt.dmatrix("a"), wt.dmatrix("e")
    jvp = wb.function([a, e], wb.Rop(la.expm(a), a, e, use_op_rop_implementation=True))
    value, direction = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    f = wb.function([a], la.expm(a))
    eps = 1e-6
    numeric = (f(value + eps * direction) - f(value - eps * direction)) / (2 * eps)
    np.testing.assert_allclose(jvp(value, direction), numeric, rtol=1e-6, atol=1e-8)


def test_debug_mode_accepts_another_basis_of_a_rank_deficient_matrix_singular_vectors() -> None:
    """Two LAPACK builds may pick different singular vectors for the zero singular
    values of ones((3, 4)); DebugMode compares what is unique (S and U*S@Vh)."""
    from workbench.core.graph.basic import Apply
    from workbench.core.tensor.linalg.rectangular import SVD

    a = np.ones((3, 4))
    op = SVD(full_matrices=False)
    node: Apply = op.make_node(wt.dmatrix("a"))
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    flipped = (u.copy(), s, vh.copy())
    flipped[0][:, 1:] = flipped[0][:, [2, 1]]  # another basis of U's null space...
    flipped[2][1:] = flipped[2][[2, 1]]  # ...with Vh's rows swapped to match
    assert not np.allclose(flipped[0], u)
    assert op.outputs_agree(node, (u, s, vh), flipped) is True
    wrong = (u, s, vh * 2.0)
    assert op.outputs_agree(node, (u, s, vh), wrong) is False


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_norms_of_empty_axes_are_numpys(linker: str) -> None:
    """The maximum-based orders (vector inf, matrix 1, 2, inf) give 0 over an empty axis,
    as numpy.linalg (they raised); the minimum-based ones raise NumPy's ValueError."""
    x = wt.dmatrix("x")
    orders = [(np.inf, 0), (np.inf, -1), (0, 0), (-1, 0), (2, 0), (None, 0), (3, 0),
              (np.inf, None), (1, None), (2, None), ("fro", None), ("nuc", None)]
    outs = [la.norm(x, o, axis=a) for o, a in orders]
    f = wb.function([x], outs, linker=linker)
    for shape in ((0, 3), (3, 0), (0, 0)):
        value = np.zeros(shape)
        with np.errstate(divide="ignore"):
            want = [np.linalg.norm(value, o, axis=a) for o, a in orders]
        for got, expected in zip(f(value), want):
            assert got.shape == expected.shape
            np.testing.assert_array_equal(got, expected)
    g = wb.function([x], [la.norm(x, -np.inf, axis=0)], linker=linker)
    with pytest.raises(ValueError, match="zero-size array"):
        g(np.zeros((0, 3)))


def test_lstsq_rank_is_numpys_int32(linker):
    a, b = wt.dmatrix("a"), wt.dvector("b")
    x, residuals, rank, s = la.lstsq(a, b)
    assert rank.type.dtype == "int32" and rank.type.ndim == 0
    values = (np.vander(np.arange(4.0), 3), np.arange(4.0))
    got = wb.function([a, b], [rank, x], linker=linker)(*values)[0]
    want = np.linalg.lstsq(*values)[2]
    assert got.dtype == want.dtype == np.int32 and got == want == 3


@pytest.mark.parametrize("rcond", [None, -1, 0, 1e-300, 0.5, 1.0, 2.0, np.nan])
def test_lstsq_rcond_follows_gelsd_as_numpy(linker, rcond):
    # gelsd takes rcond <= 0 or >= 1 as the unit roundoff: rcond=-1 (NumPy's default
    # before 1.14) gave x = [1, 1e17] at rank 2 here, rcond=1 rank 0
    a, b = wt.dmatrix("a"), wt.dmatrix("b")
    f = wb.function([a, b], list(la.lstsq(a, b, rcond=rcond)), linker=linker)
    rng = np.random.default_rng(5)
    u, _ = np.linalg.qr(rng.standard_normal((5, 3)))
    v, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    matrices = [np.array([[1.0, 0.0], [0.0, 1e-17], [0.0, 0.0]]),
                np.array([[1.0, 0.0], [0.0, 1.5e-16], [0.0, 0.0]])]
    if rcond not in (1e-300,) and not (rcond is not None and np.isnan(rcond)):
        matrices.append(u @ np.diag([1.0, 0.5, 1e-17]) @ v.T)  # (its 1e-17 is rounding)
    for matrix in matrices:
        rhs = np.ones((matrix.shape[0], 1))
        x, _, rank, _ = f(matrix, rhs)
        want = np.linalg.lstsq(matrix, rhs, rcond=rcond)
        assert rank == want[2]
        np.testing.assert_allclose(x, want[0], rtol=1e-6, atol=1e-12)


def test_qr_raw_is_numpys_reflectors_and_has_no_gradient(linker):
    a = wt.dmatrix("a")
    h, tau = la.qr(a, mode="raw")
    value = np.random.default_rng(0).random((5, 3))
    got_h, got_tau = wb.function([a], [h, tau], linker=linker)(value)
    want_h, want_tau = np.linalg.qr(value, mode="raw")
    assert got_h.shape == want_h.shape == (3, 5) and got_tau.shape == (3,)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_tau, want_tau, rtol=1e-12)
    with pytest.raises(wb.NullTypeGradError, match="mode='raw'"):
        wb.grad(h.sum(), a)
    with pytest.raises(ValueError, match="qr: mode must be one of reduced, complete, r, raw"):
        la.qr(a, mode="economic")


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_maximum_norms_are_one_max_from_zero_and_propagate_nan(linker: str) -> None:
    """Vector inf and matrix 1, 2, inf norms fold their maximum from 0 (numpy's initial),
    in place: no join of a zero slice however unknown the lengths; the values are
    numpy's, empty axes included, and a NaN in gives NaN out (order 2 aside: numpy's SVD
    refuses NaN)."""
    from workbench.core.tensor.join import Join
    from workbench.core.tensor.reduction import Max

    x = wt.dmatrix("x")
    orders = [(np.inf, 0), (np.inf, 1), (1, None), (np.inf, None), (2, None)]
    outs = [la.norm(x, o, axis=a) for o, a in orders]
    f = wb.function([x], outs, linker=linker)
    nodes = f.maker.fgraph.toposort()
    assert not any(isinstance(n.op, Join) for n in nodes)
    assert all(n.op.initial == 0 for n in nodes if isinstance(n.op, Max))
    rng = np.random.default_rng(19)
    for value in (rng.normal(size=(3, 4)), -np.abs(rng.normal(size=(4, 2))),
                  np.zeros((0, 3)), np.zeros((2, 0))):
        want = [np.linalg.norm(value, o, axis=a) for o, a in orders]
        for got, expected in zip(f(value), want):
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)
    nan = rng.normal(size=(3, 4))
    nan[1, 2] = np.nan
    got = wb.function([x], outs[:4], linker=linker)(nan)  # order 2: LinAlgError, as numpy
    for g, (o, a) in zip(got, orders):
        np.testing.assert_array_equal(g, np.linalg.norm(nan, o, axis=a))
    assert np.isnan(got[0][2]) and np.isnan(got[1][1]) and np.isnan(got[2]) and np.isnan(got[3])


def test_maximum_norm_gradients() -> None:
    rng = np.random.default_rng(20)
    value = rng.normal(size=(3, 4))  # distinct magnitudes and sums: no ties
    for o, a in [(np.inf, 1), (1, None), (np.inf, None), (2, None)]:
        verify_grad(lambda m, o=o, a=a: la.norm(m, o, axis=a), [value], rng=rng)


@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv_takes_one_rcond_per_matrix_and_numpys_rtol_none(linker, hermitian):
    # rcond of shape (4,) for a stack of four 4x4 matrices cut each matrix's singular
    # values with all four values (broadcast along s) instead of one per matrix
    rng = np.random.default_rng(5)
    stack = rng.standard_normal((4, 4, 4)) * np.array([1.0, 0.6, 0.3, 1e-9])
    if hermitian:
        stack = stack @ np.swapaxes(stack, -1, -2)
    rcond = np.array([0.9, 0.5, 0.2, 1e-15])
    a, r = wt.dtensor3("a"), wt.dvector("r")
    f = wb.function([a, r], [la.pinv(a, rcond=r, hermitian=hermitian),
                             la.pinv(a, rcond=rcond, hermitian=hermitian),
                             la.pinv(a, rtol=None, hermitian=hermitian),
                             la.pinv(a, hermitian=hermitian)], linker=linker)
    per_matrix, constant, rtol_none, default = f(stack, rcond)
    want = np.linalg.pinv(stack, rcond=rcond, hermitian=hermitian)
    np.testing.assert_allclose(per_matrix, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(constant, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rtol_none, np.linalg.pinv(stack, rtol=None, hermitian=hermitian),
                               rtol=1e-7)
    np.testing.assert_allclose(default, np.linalg.pinv(stack, hermitian=hermitian), rtol=1e-7)
    # rtol=None is numpy's max(m, n) * eps (4.4e-16 here), not the default 1e-15
    d = np.diag([1.0, 6e-16])[None]
    kept, cut = f(d, np.zeros(1))[2:]
    assert kept[0, 1, 1] == pytest.approx(1 / 6e-16) and cut[0, 1, 1] == 0.0
    with pytest.raises(ValueError, match="rtol and rcond cannot both be set"):
        la.pinv(a, rcond=0.1, rtol=None)


def test_block_diag_batches_as_scipy(linker):
    # leading dimensions are batch dimensions broadcast between the inputs (scipy >=
    # 1.15); a 3-d input raised 'every input must have at most 2'
    import scipy.linalg as sl

    rng = np.random.default_rng(6)
    values = [rng.standard_normal((3, 1, 2, 2)), rng.standard_normal((4, 1, 3)), np.arange(3.0)]
    inputs = [wt.tensor("float64", shape=(None,) * v.ndim) for v in values]
    f = wb.function(inputs, la.block_diag(*inputs), linker=linker)
    np.testing.assert_array_equal(f(*values), sl.block_diag(*values))
    assert la.block_diag(*[wt.tensor("float64", shape=v.shape) for v in values]
                         ).type.shape == (3, 4, 4, 8)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        la.block_diag(wt.tensor("float64", shape=(2, 2, 2)), wt.tensor("float64", shape=(3, 1, 1)))
    verify_grad(la.block_diag, [values[0], values[1]], rng=rng)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_expm_of_a_diagonal_matrix_is_the_exponential_of_its_diagonal(linker, dtype):
    # as scipy: diag(inf, -inf, nan) gives diag(inf, 0, nan) with zeros elsewhere, where
    # every linker gave NaN everywhere (a non-finite matrix)
    import scipy.linalg as sl

    values = np.stack([np.diag([np.inf, -np.inf, 1.0]), np.diag([np.nan, 2.0, -1.0]),
                       np.diag([30.0, -30.0, 0.0]), np.triu(np.full((3, 3), np.inf))])
    values = values.astype(dtype)
    a = wt.tensor(dtype, shape=(None, None, None))
    got = wb.function([a], la.expm(a), linker=linker)(values)
    with np.errstate(invalid="ignore"):
        want = np.stack([sl.expm(m) for m in values[:3]])
    np.testing.assert_allclose(got[:3], want, rtol=1e-6, equal_nan=True)
    assert got.dtype == values.dtype
    assert np.isnan(got[3]).all()  # not diagonal: NaN as before
