"""wt.linalg's LAPACK-backed functions beyond the catalogue: failures (singular and
indefinite matrices) on every linker, dtypes, refusals, R_op against finite
differences, the gufunc signatures, printing and that the C linker runs LAPACK."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.linalg import (
    QR,
    SVD,
    Cholesky,
    Det,
    Eigh,
    Inv,
    SLogDet,
    Solve,
    SolveTriangular,
    TriangularMatmul,
)

la = wt.linalg
rng = np.random.default_rng(42)


def _linkers() -> list[object]:
    linkers: list[object] = ["py"]
    if has_compiler():
        linkers.append("c")
    try:
        import torch  # noqa: F401

        from workbench.core.link.gpu import GpuLinker

        linkers.append(GpuLinker(device="cpu"))
    except ImportError:
        pass
    return linkers


LINKERS = _linkers()
IDS = [str(getattr(linker, "name", linker)) if isinstance(linker, str) else "gpu"
       for linker in LINKERS]

FAILURES = [
    ("solve", lambda a, b: la.solve(a, b), [np.ones((3, 3)), np.ones(3)], "solve: Singular"),
    ("solve_sym", lambda a, b: la.solve(a, b, assume_a="sym"), [np.ones((3, 3)), np.ones(3)],
     "solve: Singular"),
    ("solve_her", lambda a, b: la.solve(a, b, assume_a="her", lower=True),
     [np.ones((2, 3, 3)), np.ones(3)], "solve: Singular"),
    ("inv", lambda a: la.inv(a), [np.ones((2, 3, 3))], "inv: Singular"),
    ("cholesky", lambda a: la.cholesky(a), [-np.eye(3)], "cholesky: Matrix is not positive"),
    ("solve_pos", lambda a, b: la.solve(a, b, assume_a="pos"), [-np.eye(3), np.ones(3)],
     "solve: Matrix is not positive definite"),
    ("solve_triangular", lambda a, b: la.solve_triangular(a, b),
     [np.triu(np.ones((3, 3)), 1), np.ones(3)],
     "solve_triangular: singular matrix: resolution failed at diagonal 0"),
]


@pytest.mark.parametrize("linker", LINKERS, ids=IDS)
@pytest.mark.parametrize(("name", "build", "values", "message"), FAILURES,
                         ids=[f[0] for f in FAILURES])
def test_failures_raise_linalg_error_naming_the_function(linker, name, build, values, message):
    inputs = [wt.tensor("float64", shape=(None,) * np.ndim(v)) for v in values]
    f = wb.function(inputs, build(*inputs), linker=linker)
    with pytest.raises(np.linalg.LinAlgError, match=message.replace("(", r"\(")):
        f(*values)


NAN_FAILURES = [
    ("svd_values", lambda a: la.svd(a, compute_uv=False)),
    ("svd_vectors", lambda a: la.svd(a)),
    ("pinv", lambda a: la.pinv(a)),
]


@pytest.mark.parametrize(("name", "build"), NAN_FAILURES, ids=[f[0] for f in NAN_FAILURES])
def test_a_nan_matrix_fails_the_same_on_the_py_and_c_linkers(name, build):
    # LAPACK's gesdd refuses a NaN matrix (info < 0): C once left its outputs unset
    a = wt.dmatrix("a")
    nan = np.full((2, 2), np.nan)
    with pytest.raises(np.linalg.LinAlgError) as py_error:
        wb.function([a], build(a), linker="py")(nan)
    assert str(py_error.value) == "svd: SVD did not converge"
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.svd(nan)
    if not has_compiler():
        pytest.skip("no C compiler")
    with pytest.raises(np.linalg.LinAlgError) as c_error:
        wb.function([a], build(a), linker="c")(nan)
    assert str(c_error.value).startswith(str(py_error.value))


@pytest.mark.parametrize("linker", ["py", "c"])
def test_eigh_of_a_nan_matrix_is_nan_as_numpys(linker):
    if linker == "c" and not has_compiler():
        pytest.skip("no C compiler")
    a = wt.dmatrix("a")
    nan = np.full((2, 2), np.nan)
    w, v = wb.function([a], list(la.eigh(a)), linker=linker)(nan)
    expected_w, expected_v = np.linalg.eigh(nan)
    np.testing.assert_array_equal(w, expected_w)
    np.testing.assert_array_equal(v, expected_v)


@pytest.mark.parametrize("linker", LINKERS, ids=IDS)
def test_singular_det_and_slogdet_are_numpys(linker):
    a = wt.dtensor3("a")
    sign, logdet = la.slogdet(a)
    f = wb.function([a], [la.det(a), sign, logdet], linker=linker)
    value = np.stack([np.ones((3, 3)), np.eye(3) * 2])
    det, s, ld = f(value)
    np.testing.assert_allclose(det, [0.0, 8.0], atol=1e-12)
    np.testing.assert_array_equal(s, [0.0, 1.0])
    assert ld[0] == -np.inf and np.isclose(ld[1], np.log(8))


@pytest.mark.parametrize("linker", LINKERS, ids=IDS)
def test_slogdet_sign_of_a_matrix_with_nan_or_inf_is_numpys(linker):
    # numpy flips the sign for a negative entry of U's diagonal only (a NaN or +inf
    # keeps it): c gave NaN (u / |u|), gpu 0 (torch's slogdet)
    a = wt.dtensor3("a")
    # (the non-finite entries where no elimination step reads them: LAPACK builds
    # may pivot differently among NaN rows)
    value = np.stack([np.diag([-2.0, -2.0, np.nan]), np.diag([np.inf, -2.0, 1.0]),
                      np.diag([-np.inf, 1.0, 2.0]), np.array([[0.0, 1, 0], [1, 0, 0],
                                                              [0, 0, np.inf]]),
                      np.diag([1.0, -np.inf, np.nan]), np.zeros((3, 3))])
    sign, logdet = wb.function([a], list(la.slogdet(a)), linker=linker)(value)
    want = np.linalg.slogdet(value)
    np.testing.assert_array_equal(sign, want[0])
    np.testing.assert_array_equal(logdet, want[1])


@pytest.mark.parametrize("linker", LINKERS, ids=IDS)
def test_the_other_triangle_is_never_read(linker):
    a = wt.dmatrix("a")
    spd = np.array([[4.0, 1.0], [1.0, 3.0]])
    garbage = np.tril(spd) + np.triu(np.full((2, 2), 1e6), 1)
    f = wb.function([a], [la.cholesky(a), la.eigvalsh(a), la.solve(a, np.ones(2),
                                                                    assume_a="pos",
                                                                    lower=True)],
                    linker=linker)
    chol, w, x = f(garbage)
    np.testing.assert_allclose(chol, np.linalg.cholesky(spd))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(spd))
    np.testing.assert_allclose(x, np.linalg.solve(spd, np.ones(2)))


def test_dtypes_follow_numpy_linalg():
    assert la.inv(wt.imatrix()).type.dtype == "float64"
    assert la.inv(wt.fmatrix()).type.dtype == "float32"
    assert la.solve(wt.fmatrix(), wt.dvector()).type.dtype == "float64"
    assert la.solve(wt.fmatrix(), wt.lvector()).type.dtype == "float64"
    assert la.det(wt.ftensor3()).type.dtype == "float32"


def test_refusals_name_the_function():
    with pytest.raises(TypeError, match="cholesky: array type float16 is unsupported"):
        la.cholesky(wt.tensor("float16", shape=(None, None)))
    with pytest.raises(ValueError, match="det: .*at least 2"):
        la.det(wt.dvector("v"))
    with pytest.raises(ValueError, match="inv: last 2 dimensions .* square"):
        la.inv(wt.tensor("float64", shape=(2, 3)))
    with pytest.raises(ValueError, match="solve: b has 4 in its core dimension 'm' where a "
                       "has 3"):
        la.solve(wt.tensor("float64", shape=(3, 3)), wt.tensor("float64", shape=(4,)))
    with pytest.raises(ValueError, match="solve: assume_a"):
        la.solve(wt.dmatrix(), wt.dvector(), assume_a="band")


def test_static_shapes_come_from_the_signature():
    a = wt.tensor("float64", shape=(5, 1, 3, 3))
    b = wt.tensor("float64", shape=(4, 3, 2))
    assert la.solve(a, b).type.shape == (5, 4, 3, 2)
    assert la.det(a).type.shape == (5, 1)
    w, v = la.eigh(a)
    assert w.type.shape == (5, 1, 3) and v.type.shape == (5, 1, 3, 3)
    assert la.solve(a, wt.tensor("float64", shape=(3,))).type.shape == (5, 1, 3)


def test_core_signatures_for_blockwise():
    assert Solve(b_ndim=2).gufunc_signature == "(m,m),(m,n)->(m,n)"
    assert Solve(b_ndim=1).gufunc_signature == "(m,m),(m)->(m)"
    assert SolveTriangular().gufunc_signature == "(m,m),(m,n)->(m,n)"
    assert Cholesky().gufunc_signature == "(m,m)->(m,m)"
    assert Inv().gufunc_signature == "(m,m)->(m,m)"
    assert Det().gufunc_signature == "(m,m)->()"
    assert SLogDet().gufunc_signature == "(m,m)->(),()"
    assert Eigh().gufunc_signature == "(m,m)->(m),(m,m)"
    assert Eigh(compute_v=False).gufunc_signature == "(m,m)->(m)"
    assert SVD(full_matrices=False).gufunc_signature == "(m,n)->(m,k),(k),(k,n)"
    assert SVD(compute_uv=False).gufunc_signature == "(m,n)->(k)"
    assert QR("complete").gufunc_signature == "(m,n)->(m,m),(m,n)"


def test_rectangular_static_shapes_use_the_smaller_side():
    a = wt.tensor("float64", shape=(2, 5, 3))
    u, s, vh = la.svd(a, full_matrices=False)
    assert (u.type.shape, s.type.shape, vh.type.shape) == ((2, 5, 3), (2, 3), (2, 3, 3))
    u, s, vh = la.svd(a)
    assert (u.type.shape, vh.type.shape) == ((2, 5, 5), (2, 3, 3))
    q, r = la.qr(a)
    assert (q.type.shape, r.type.shape) == ((2, 5, 3), (2, 3, 3))
    assert la.svdvals(wt.tensor("float64", shape=(None, 4))).type.shape == (None,)


def test_printing():
    a, b = wt.dmatrix("A"), wt.dvector("b")
    assert wb.pprint(la.solve(la.cholesky(a), b, assume_a="pos")) == (
        "solve(cholesky(A), b, assume_a='pos')")
    assert wb.pprint(la.slogdet(a)[1] + la.svd(a, full_matrices=False)[1].sum()) == (
        "slogdet(A)[1] + sum(svd(A, full_matrices=False)[1])")
    assert wb.pprint(la.eigvalsh(a, UPLO="U")) == "eigvalsh(A, UPLO='U')"
    assert wb.pprint(la.solve_triangular(a, b, lower=True, trans="T")) == (
        "solve_triangular(A, b, lower=True, trans=True)")
    assert str(Cholesky(lower=False)) == "Cholesky{lower=False}"  # dprint's name
    # the solve that inv(A) @ b became names inv in its messages, but reads as a solve
    from workbench.core.tensor.linalg.solvers import Solve
    assert wb.pprint(Solve(b_ndim=1, function_name="inv")(a, b)) == "solve(A, b)"


def _spd(n):
    m = rng.uniform(-1, 1, (n, n))
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize(("name", "build", "values"), [
    ("solve", lambda a, b: la.solve(a, b), [_spd(3), rng.random((3, 2))]),
    ("solve_sym", lambda a, b: la.solve(a, b, assume_a="sym", lower=True),
     [_spd(3), rng.random(3)]),
    ("inv", lambda a: la.inv(a), [_spd(3)]),
    ("det", lambda a: la.det(a), [_spd(3)]),
    ("slogdet", lambda a: la.slogdet(a)[1], [_spd(3)]),
    ("cholesky", lambda a: la.cholesky(a), [_spd(3)]),
    ("cholesky_upper", lambda a: la.cholesky(a, lower=False), [_spd(3)]),
])
def test_r_op_matches_finite_differences(name, build, values):
    inputs = [wt.tensor("float64", shape=(None,) * np.ndim(v)) for v in values]
    points = [wt.tensor("float64", shape=(None,) * np.ndim(v)) for v in values]
    out = build(*inputs)
    jvp = wb.function(inputs + points,
                      wb.Rop(out, inputs, points, use_op_rop_implementation=True))
    f = wb.function(inputs, out)
    directions = [rng.uniform(-1, 1, np.shape(v)) for v in values]
    eps = 1e-6
    plus = f(*[v + eps * d for v, d in zip(values, directions)])
    minus = f(*[v - eps * d for v, d in zip(values, directions)])
    np.testing.assert_allclose(jvp(*values, *directions), (plus - minus) / (2 * eps),
                               rtol=1e-5, atol=1e-7)


def test_eigh_gradient_with_repeated_eigenvalues():
    """Through the eigenvalues only: defined. Through the eigenvectors: not (inf/NaN)."""
    a = wt.dmatrix("a")
    w, v = la.eigh(a)
    values_only = wb.function([a], wb.grad(w.sum() + (w ** 2).sum(), a))
    np.testing.assert_allclose(values_only(np.eye(3)), np.tril(2 * np.eye(3) + np.eye(3)))
    through_vectors = wb.function([a], wb.grad((v[0] ** 2).sum() + w.sum(), a))
    assert not np.all(np.isfinite(through_vectors(np.eye(3))))


def test_gradient_sums_over_broadcast_batch_dimensions():
    wb.verify_grad(lambda a, b: la.solve(a, b).sum(),
                   [np.stack([_spd(3), _spd(3)])[:, None], rng.random((1, 4, 3, 2))])
    wb.verify_grad(lambda a, b: (la.solve_triangular(a, b, lower=True) ** 2).sum(),
                   [_spd(3) + np.eye(3), rng.random((2, 3, 1))])


@pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")
def test_the_c_linker_runs_lapack_for_every_op():
    from workbench.core.link.c.ops.lapack import lapack_available

    if not lapack_available():
        pytest.skip("no LAPACK in the BLAS found here")
    a, b = wt.dtensor3("a"), wt.dmatrix("b")
    sign, logdet = la.slogdet(a)
    w, v = la.eigh(a)
    outs = [la.solve(a, b), la.solve_triangular(a, b), la.cholesky(a), la.inv(a), la.det(a),
            logdet, w, v, la.svdvals(a), *la.qr(a), TriangularMatmul(True, True)(a, a)]
    from workbench.core.compile.mode import get_mode

    # det and slogdet of a matrix also factorised would come from the factor's diagonal
    mode = get_mode("FAST_RUN").excluding("local_det_from_cholesky")
    f = wb.function([a, b], outs, linker="c", mode=mode)
    c_ops = {type(node.op) for node in f.linker.report.c_nodes}
    assert {Solve, SolveTriangular, Cholesky, Inv, Det, SLogDet, Eigh, SVD, QR,
            TriangularMatmul} <= c_ops
    values = [np.stack([_spd(3), _spd(3)]), rng.random((3, 2))]
    ref = wb.function([a, b], outs, linker="py")(*values)
    for got, want in zip(f(*values), ref):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _hilbert(n):
    i = np.arange(n)
    return 1.0 / (i[:, None] + i[None, :] + 1)


PY_AND_C = [linker for linker in LINKERS if linker in ("py", "c")]

ILL_CONDITIONED = [
    ("solve", lambda a, b: la.solve(a, b), 14),
    ("solve_sym", lambda a, b: la.solve(a, b, assume_a="sym"), 14),
    ("solve_her", lambda a, b: la.solve(a, b, assume_a="her", lower=True), 14),
    ("solve_pos", lambda a, b: la.solve(a, b, assume_a="pos"), 12),
    ("inv", lambda a, b: la.inv(a) @ b, 14),
]


@pytest.mark.parametrize("linker", PY_AND_C)
@pytest.mark.parametrize(("name", "build", "n"), ILL_CONDITIONED,
                         ids=[c[0] for c in ILL_CONDITIONED])
def test_an_ill_conditioned_matrix_warns_as_scipy(linker, name, build, n):
    """scipy.linalg.solve/inv warn LinAlgWarning when the reciprocal condition number is
    below the machine epsilon (a Hilbert matrix of order 12-14: about 1e-17)."""
    a, b = wt.dmatrix("a"), wt.dvector("b")
    from workbench.core.compile.mode import get_mode

    mode = get_mode("FAST_RUN").excluding("local_inv_dot_to_solve")
    f = wb.function([a, b], build(a, b), linker=linker, mode=mode)
    function = "inv" if name == "inv" else "solve"
    with pytest.warns(la.LinAlgWarning, match=rf"{function}: Ill-conditioned matrix \(rcond="
                      r"[0-9.e-]+\): result may not be accurate$"):
        f(_hilbert(n), np.ones(n))


@pytest.mark.parametrize("linker", PY_AND_C)
def test_the_warning_names_the_matrix_of_a_stack_and_can_be_an_error(linker):
    a = wt.dtensor3("a")
    f = wb.function([a], la.inv(a), linker=linker)
    stack = np.stack([np.eye(12), _hilbert(12) + 0.0, np.eye(12)])
    with pytest.warns(la.LinAlgWarning, match=r"\(matrix 1 of the stack\)"):
        f(stack)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", la.LinAlgWarning)
        with pytest.raises(la.LinAlgWarning, match="inv: Ill-conditioned"):
            f(stack)
        f(np.stack([np.eye(3) * 2, np.eye(3)]))  # well-conditioned: silent


@pytest.mark.parametrize("linker", PY_AND_C)
def test_float32_uses_its_own_epsilon(linker):
    """Hilbert of order 8: rcond about 3e-10, below float32's epsilon (1.2e-7) and far
    above float64's (2.2e-16), as scipy."""
    import warnings

    a, b = wt.fmatrix("a"), wt.fvector("b")
    f = wb.function([a, b], la.solve(a, b), linker=linker)
    with pytest.warns(la.LinAlgWarning):
        f(_hilbert(8).astype("float32"), np.ones(8, "float32"))
    a64, b64 = wt.dmatrix("a"), wt.dvector("b")
    f64 = wb.function([a64, b64], la.solve(a64, b64), linker=linker)
    with warnings.catch_warnings():
        warnings.simplefilter("error", la.LinAlgWarning)
        f64(_hilbert(8), np.ones(8))


def test_linalg_warning_is_a_runtime_warning_exported_from_wt_linalg():
    assert issubclass(la.LinAlgWarning, RuntimeWarning)
    assert "LinAlgWarning" in la.__all__


@pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_c_condition_estimate_is_gecons(dtype):
    """The C linker estimates rcond by gecon's algorithm with faster solves: the same
    estimate as LAPACK's gecon on the same LU factors (those of a^T, norm "I")."""
    import re
    import warnings

    from scipy.linalg import lapack

    a, b = wt.tensor(dtype, shape=(None, None)), wt.tensor(dtype, shape=(None,))
    f = wb.function([a, b], la.solve(a, b), linker="c")
    generator = np.random.default_rng(1)
    getrf, gecon = (lapack.sgetrf, lapack.sgecon) if dtype == "float32" else (
        lapack.dgetrf, lapack.dgecon)
    eps = np.finfo(dtype).eps
    for n, decades in ((3, 18), (8, 17), (30, 20), (60, 16.5)):
        if dtype == "float32":
            decades /= 2
        u, _ = np.linalg.qr(generator.standard_normal((n, n)))
        v, _ = np.linalg.qr(generator.standard_normal((n, n)))
        value = ((u * np.logspace(0, -decades, n)) @ v.T).astype(dtype)
        lu, _, info = getrf(value.T.copy())
        assert info == 0
        expected, _ = gecon(lu, np.abs(value).sum(axis=0).max(), norm="I")
        assert expected < eps
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f(value, np.ones(n, dtype))
        (warning,) = [w for w in caught if issubclass(w.category, la.LinAlgWarning)]
        got = float(re.search(r"rcond=([^)]*)\)", str(warning.message)).group(1))
        np.testing.assert_allclose(got, expected, rtol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(_spd(5).astype(dtype), np.ones(5, dtype))  # well conditioned: no warning
