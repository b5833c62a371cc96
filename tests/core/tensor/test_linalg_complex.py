"""wt.linalg's dtypes beyond the catalogue (tests of values are in
workbench/testing/cases_linalg_complex.py): numpy.linalg's promotion, real outputs
of complex inputs, float16 refused as numpy refuses it, and the gradients of complex
inputs refused with a message naming the Op and the dtype."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.graph.utils import MethodNotDefined
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
)

la = wt.linalg


def _t(dtype, ndim=2, name=None):
    return wt.tensor(dtype, shape=(None,) * ndim, name=name)


@pytest.mark.parametrize(("a", "b", "want"), [
    ("complex64", "complex64", "complex64"),
    ("complex64", "float32", "complex64"),
    ("complex64", "float64", "complex128"),
    ("float32", "complex128", "complex128"),
    ("complex64", "int32", "complex128"),
    ("int64", "int8", "float64"),
])
def test_solve_dtype_is_numpys(a, b, want):
    x = la.solve(_t(a), _t(b, 1))
    assert x.type.dtype == want
    expected = np.linalg.solve(np.eye(2, dtype=a), np.ones(2, dtype=b)).dtype
    assert str(expected) == want


def test_real_outputs_of_complex_inputs():
    a = _t("complex64", 3)
    sign, logdet = la.slogdet(a)
    w, v = la.eigh(a)
    u, s, vh = la.svd(a)
    assert (sign.type.dtype, logdet.type.dtype) == ("complex64", "float32")
    assert (w.type.dtype, v.type.dtype) == ("float32", "complex64")
    assert (u.type.dtype, s.type.dtype, vh.type.dtype) == ("complex64", "float32", "complex64")
    assert la.eigvalsh(a).type.dtype == "float32"
    assert la.svdvals(a).type.dtype == "float32"
    assert la.norm(a, axis=(-2, -1)).type.dtype == "float32"
    assert la.det(_t("complex128")).type.dtype == "complex128"


@pytest.mark.parametrize("name", ["inv", "det", "cholesky", "eigvalsh", "svdvals", "pinv"])
def test_float16_is_refused_as_numpy_refuses_it(name):
    """numpy.linalg raises TypeError for float16 (scipy.linalg would upcast to float32):
    the names of wt.linalg are numpy's, so they raise too."""
    with pytest.raises(TypeError, match="array type float16 is unsupported in linalg"):
        getattr(np.linalg, name)(np.eye(2, dtype=np.float16))
    with pytest.raises(TypeError, match=f"{name}: array type float16 is unsupported in linalg"):
        getattr(la, name)(_t("float16", name="A"))


def test_expm_of_bfloat16_is_refused():
    with pytest.raises(TypeError, match="expm: array type bfloat16 is unsupported"):
        la.expm(_t("bfloat16"))


def test_float16_refusal_names_the_input():
    with pytest.raises(TypeError, match=r"solve: array type float16 .*\bb\b has type"):
        la.solve(_t("float32", name="A"), _t("float16", 1, name="b"))


def test_norms_of_float16_stay_float16_as_numpy():
    x = _t("float16", 1)
    assert la.norm(x).type.dtype == "float16"
    assert np.linalg.norm(np.ones(3, np.float16)).dtype == np.float16


COMPLEX_GRADS = [
    ("Solve", lambda a: wt.real(la.solve(a, a[0])).sum()),
    ("Inv", lambda a: wt.imag(la.inv(a)).sum()),
    ("SLogDet", lambda a: la.slogdet(a)[1].sum()),
    ("Eigh", lambda a: la.eigvalsh(a).sum()),
    ("SVD", lambda a: la.svdvals(a).sum()),
    ("Cholesky", lambda a: wt.real(la.cholesky(a)).sum()),
    ("QR", lambda a: wt.real(la.qr(a)[1]).sum()),
    ("Expm", lambda a: wt.real(la.expm(a)).sum()),
    ("Det", lambda a: wt.real(la.det(a)).sum()),
    ("SolveTriangular", lambda a: wt.real(la.solve_triangular(a, a[0])).sum()),
]


@pytest.mark.parametrize(("op", "cost"), COMPLEX_GRADS, ids=[c[0] for c in COMPLEX_GRADS])
@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_gradients_of_complex_inputs_are_refused_naming_op_and_dtype(op, cost, dtype):
    a = _t(dtype, name="A")
    with pytest.raises(wb.NullTypeGradError, match=rf"{op}.* not implemented: complex "
                       rf"inputs \({dtype}\): workbench has no complex gradient convention"):
        wb.grad(cost(a), a)


def test_gradient_of_real_inputs_still_works_beside_the_refusal():
    a = wt.dmatrix("a")
    g = wb.function([a], wb.grad(la.slogdet(a)[1], a))
    value = np.array([[2.0, 1.0], [0.5, 3.0]])
    np.testing.assert_allclose(g(value), np.linalg.inv(value).T)


def test_r_op_of_complex_inputs_is_refused():
    a, e = _t("complex128", name="A"), _t("complex128", name="E")
    with pytest.raises(MethodNotDefined, match=r"Inv.*R_op for complex inputs \(complex128\)"):
        wb.Rop(la.inv(a), [a], [e], use_op_rop_implementation=True)


@pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")
@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_the_c_linker_runs_lapack_for_complex_matrices(dtype):
    """Every LAPACK-backed Op runs its c/z routine (none falls back to perform), and
    agrees with the Python linker (numpy.linalg)."""
    from workbench.core.compile.mode import get_mode
    from workbench.core.link.c.ops.lapack import lapack_available

    if not lapack_available():
        pytest.skip("no LAPACK in the BLAS found here")
    a, b = _t(dtype, 3, "a"), _t(dtype, 2, "b")
    sign, logdet = la.slogdet(a)
    w, v = la.eigh(a)
    u, s, vh = la.svd(a, full_matrices=False)
    outs = [la.solve(a, b), la.solve(a, b, assume_a="sym"), la.solve(a, b, assume_a="her"),
            la.solve(a, b, assume_a="pos", lower=True), la.solve_triangular(a, b, trans=2),
            la.cholesky(a), la.inv(a), la.det(a), sign, logdet, w, v @ la.base.transpose(
                wt.conj(v)), u * s[..., None, :] @ vh, *la.qr(a)]
    mode = get_mode("FAST_RUN").excluding("local_det_from_cholesky")
    f = wb.function([a, b], outs, linker="c", mode=mode)
    c_ops = {type(node.op) for node in f.linker.report.c_nodes}
    assert {Solve, SolveTriangular, Cholesky, Inv, Det, SLogDet, Eigh, SVD, QR} <= c_ops
    rng = np.random.default_rng(3)
    m = rng.uniform(-1, 1, (2, 3, 3)) + 1j * rng.uniform(-1, 1, (2, 3, 3))
    hpd = (m @ np.conj(np.swapaxes(m, -1, -2)) + 3 * np.eye(3)).astype(dtype)
    rhs = (rng.uniform(-1, 1, (3, 2)) + 1j * rng.uniform(-1, 1, (3, 2))).astype(dtype)
    tol = 1e-4 if dtype == "complex64" else 1e-10
    for got, want in zip(f(hpd, rhs), wb.function([a, b], outs, linker="py", mode=mode)(
            hpd, rhs)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _linkers():
    linkers = ["py"]
    if has_compiler():
        linkers.append("c")
    try:
        import torch  # noqa: F401

        from workbench.core.link.gpu import GpuLinker

        linkers.append(GpuLinker(device="cpu"))
    except ImportError:
        pass
    return linkers


@pytest.mark.parametrize("linker", _linkers(), ids=lambda lk: lk if isinstance(lk, str) else "gpu")
@pytest.mark.parametrize("assume_a", ["gen", "sym", "her"])
def test_a_singular_complex_matrix_raises_on_every_linker(linker, assume_a):
    a, b = _t("complex128", name="a"), _t("complex128", 1, name="b")
    f = wb.function([a, b], [la.solve(a, b, assume_a=assume_a)], linker=linker)
    u = np.array([1, 1j, 2])
    # rank one: symmetric for "gen"/"sym", Hermitian (real diagonal) for "her"
    singular = np.outer(u, np.conj(u)) if assume_a == "her" else np.full((3, 3), 1 + 1j)
    with pytest.raises(np.linalg.LinAlgError, match="solve: Singular"):
        f(singular, np.ones(3, complex))
    stack = _t("complex128", 3, name="stack")
    g = wb.function([stack], la.inv(stack), linker=linker)
    with pytest.raises(np.linalg.LinAlgError, match="inv: Singular"):
        g(np.stack([np.eye(3, dtype=complex), np.full((3, 3), 1j)]))
