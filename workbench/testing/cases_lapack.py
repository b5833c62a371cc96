"""Catalogue cases of the LAPACK-backed functions of `wt.linalg`: `solve` (every
`assume_a`), `solve_triangular`, `cho_solve`, `cholesky`, `inv`, `det`, `slogdet`,
`eigh` and `eigvalsh`, hence the `Solve`, `SolveTriangular`, `Cholesky`, `Inv`,
`Det`, `SLogDet` and `Eigh` Ops, and `DiagonalSolve` (a rewrite's).

Inputs are well-conditioned (a random matrix plus a multiple of the identity) or
symmetric positive definite where the function needs it; shapes cover single
matrices, stacks, broadcast batch dimensions, vectors and matrices as right-hand
sides, static shapes and empty matrices. References are numpy.linalg, with the
triangle a function reads made explicit (``np.tril``/``np.triu``). Eigenvectors
are only defined up to sign, so the eigh cases scale each eigenvector (column) by
the sign of its first entry, in the graph and in the reference alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]

EMPTY = "empty matrices: nothing to differentiate"
PIECEWISE = "the sign of a determinant is piecewise constant"


def _la() -> Any:
    import workbench.core.tensor as wt

    return wt.linalg


def _well_conditioned(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Random entries in [-1, 1) plus n on the diagonal (diagonally dominant)."""
    n = shape[-1]
    return (rng.uniform(-1, 1, size=shape) + n * np.eye(n)).astype(dtype)


def _spd(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """``m m^T + n I``: symmetric positive definite."""
    m = rng.uniform(-1, 1, size=shape)
    n = shape[-1]
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dtype)


def _cholesky_factor(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    return np.linalg.cholesky(_spd(rng, shape, "float64")).astype(dtype)


def matrix(shape: tuple[int, ...], **kwargs: Any) -> Arg:
    return Arg(shape, sample=_well_conditioned, **kwargs)


def spd(shape: tuple[int, ...], **kwargs: Any) -> Arg:
    return Arg(shape, sample=_spd, **kwargs)


def _symmetrized(a: Any, lower: bool) -> Any:
    t = np.tril(a) if lower else np.triu(a)
    strict = np.tril(a, -1) if lower else np.triu(a, 1)
    return t + np.swapaxes(strict, -1, -2)


def _solve_ref(lower: bool = False, assume_a: str = "gen") -> Callable[..., Any]:
    def reference(a: Any, b: Any) -> Any:
        if assume_a in ("sym", "pos"):
            a = _symmetrized(a, lower)
        elif assume_a == "tri":
            a = np.tril(a) if lower else np.triu(a)
        if b.ndim == 1:
            return np.linalg.solve(a, b[..., None])[..., 0]
        return np.linalg.solve(a, b)

    return reference


def _solve(**kwargs: Any) -> Callable[..., Any]:
    def build(a: Any, b: Any) -> Any:
        return _la().solve(a, b, **kwargs)

    return build


def _solve_cases() -> list[Case]:
    cases = [
        Case("solve_vector", _solve(), _solve_ref(), (matrix((4, 4)), Arg((4,)))),
        Case("solve_matrix", _solve(), _solve_ref(), (matrix((4, 4)), Arg((4, 3)))),
        Case("solve_stack", _solve(), _solve_ref(), (matrix((2, 3, 3)), Arg((2, 3, 2)))),
        Case("solve_broadcast_batch", _solve(), _solve_ref(),
             (matrix((2, 1, 3, 3)), Arg((4, 3, 2)))),
        Case("solve_stack_vector", _solve(), _solve_ref(), (matrix((2, 3, 3)), Arg((3,)))),
        Case("solve_static_shapes", _solve(), _solve_ref(),
             (matrix((3, 3), static=True), Arg((3, 2), static=True))),
        Case("solve_constant_matrix", _solve(), _solve_ref(),
             (matrix((3, 3), constant=True), Arg((3,)))),
        Case("solve_empty", _solve(), _solve_ref(), (Arg((0, 0)), Arg((0, 2))), grad=EMPTY),
        Case("solve_sym_lower", _solve(assume_a="sym", lower=True),
             _solve_ref(True, "sym"), (matrix((4, 4)), Arg((4, 2)))),
        Case("solve_sym_upper", _solve(assume_a="symmetric"), _solve_ref(False, "sym"),
             (matrix((4, 4)), Arg((4,)))),
        Case("solve_pos_lower", _solve(assume_a="pos", lower=True), _solve_ref(True, "pos"),
             (spd((4, 4)), Arg((4, 2)))),
        Case("solve_pos_upper_stack", _solve(assume_a="pos"), _solve_ref(False, "pos"),
             (spd((2, 3, 3)), Arg((2, 3, 1)))),
        Case("solve_tri_lower", _solve(assume_a="tri", lower=True), _solve_ref(True, "tri"),
             (matrix((4, 4)), Arg((4, 2)))),
        Case("solve_tri_upper", _solve(assume_a="triangular"), _solve_ref(False, "tri"),
             (matrix((4, 4)), Arg((4,)))),
    ]
    return cases


def _nonzero(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Entries of modulus in [0.5, 2) and either sign: a diagonal without zeros."""
    return (rng.uniform(0.5, 2, size=shape) * rng.choice([-1, 1], size=shape)).astype(dtype)


def _positive(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Entries in [0.5, 2): the diagonal of a positive-definite matrix."""
    return rng.uniform(0.5, 2, size=shape).astype(dtype)


def _diagonal_solve(b_ndim: int, check_finite: bool = False,
                    positive: bool = False) -> Callable[..., Any]:
    def build(d: Any, b: Any) -> Any:
        return _la().DiagonalSolve(b_ndim, check_finite, positive, positive)(d, b)

    return build


def _diagonal_solve_ref(b_ndim: int) -> Callable[..., Any]:
    """numpy.linalg.solve of the diagonal matrices (the solve the Op replaces)."""
    def reference(d: Any, b: Any) -> Any:
        a = d[..., None] * np.eye(d.shape[-1], dtype=d.dtype)
        if b_ndim == 1:
            return np.linalg.solve(a, b[..., None])[..., 0]
        return np.linalg.solve(a, b)

    return reference


def _diagonal_cases() -> list[Case]:
    """`DiagonalSolve`, what solve of a known diagonal matrix becomes."""
    return [
        Case("diagonal_solve_matrix", _diagonal_solve(2), _diagonal_solve_ref(2),
             (Arg((4,), sample=_nonzero), Arg((4, 3)))),
        Case("diagonal_solve_vector_checked", _diagonal_solve(1, True), _diagonal_solve_ref(1),
             (Arg((3,), sample=_nonzero), Arg((3,)))),
        Case("diagonal_solve_broadcast_batch", _diagonal_solve(1), _diagonal_solve_ref(1),
             (Arg((2, 3), sample=_nonzero), Arg((3,)))),
        Case("diagonal_solve_positive_definite", _diagonal_solve(2, positive=True),
             _diagonal_solve_ref(2), (Arg((3,), sample=_positive), Arg((3, 2)))),
        Case("diagonal_solve_empty", _diagonal_solve(2), _diagonal_solve_ref(2),
             (Arg((0,)), Arg((0, 2))), grad=EMPTY),
    ]


def _solve_triangular(**kwargs: Any) -> Callable[..., Any]:
    def build(a: Any, b: Any) -> Any:
        return _la().solve_triangular(a, b, **kwargs)

    return build


def _triangular_ref(lower: bool = False, trans: bool = False, unit: bool = False
                    ) -> Callable[..., Any]:
    def reference(a: Any, b: Any) -> Any:
        t = np.tril(a) if lower else np.triu(a)
        if unit:
            n = a.shape[-1]
            t = t.copy()
            t[..., np.arange(n), np.arange(n)] = 1
        if trans:
            t = np.swapaxes(t, -1, -2)
        if b.ndim == 1:
            return np.linalg.solve(t, b[..., None])[..., 0]
        return np.linalg.solve(t, b)

    return reference


def _cho_solve(c: Any, b: Any) -> Any:
    return _la().cho_solve((c, True), b)


def _cho_solve_upper(c: Any, b: Any) -> Any:
    return _la().cho_solve((c, False), b)


def _triangular_matmul(lower: bool, trans: bool) -> Callable[..., Any]:
    def build(a: Any, b: Any) -> Any:
        return _la().TriangularMatmul(lower, trans)(a, b)

    return build


def _cholesky_grad(low: Any, g: Any) -> Any:
    from workbench.core.tensor.linalg.decompositions import CholeskyGrad

    return CholeskyGrad()(low, g)


def _cholesky_grad_ref(low: Any, g: Any) -> Any:
    """Murray's formula as written: ``P = L^-T Phi(L^T gL) L^-1``, then
    ``tril(P + P^T) - diag(P)``."""
    low = np.tril(low)
    inner = np.swapaxes(low, -1, -2) @ g
    eye = np.eye(low.shape[-1])
    phi = np.tril(inner) - 0.5 * inner * eye
    lt = np.swapaxes(low, -1, -2)
    p = np.swapaxes(np.linalg.solve(lt, np.swapaxes(np.linalg.solve(lt, phi), -1, -2)), -1, -2)
    return np.tril(p + np.swapaxes(p, -1, -2)) - p * eye


def _triangular_matmul_ref(lower: bool, trans: bool) -> Callable[..., Any]:
    def reference(a: Any, b: Any) -> Any:
        t = np.tril(a) if lower else np.triu(a)
        return np.matmul(np.swapaxes(t, -1, -2) if trans else t, b)

    return reference


def _cho_factor_solve(a: Any, b: Any) -> Any:
    return _la().cho_solve(_la().cho_factor(a), b)


def _cho_solve_ref(lower: bool) -> Callable[..., Any]:
    def reference(c: Any, b: Any) -> Any:
        t = np.tril(c) if lower else np.triu(c)
        a = t @ t.T if lower else t.T @ t
        return np.linalg.solve(a, b)

    return reference


def _upper_factor(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    return np.ascontiguousarray(_cholesky_factor(rng, shape, dtype).T)


def _triangular_cases() -> list[Case]:
    return [
        Case("solve_triangular_lower", _solve_triangular(lower=True), _triangular_ref(True),
             (matrix((4, 4)), Arg((4, 2)))),
        Case("solve_triangular_upper_vector", _solve_triangular(), _triangular_ref(),
             (matrix((4, 4)), Arg((4,)))),
        Case("solve_triangular_trans", _solve_triangular(lower=True, trans="T"),
             _triangular_ref(True, True), (matrix((3, 3)), Arg((3, 2)))),
        Case("solve_triangular_unit_diagonal", _solve_triangular(trans=1, unit_diagonal=True),
             _triangular_ref(False, True, True), (matrix((3, 3)), Arg((3,)))),
        Case("solve_triangular_stack", _solve_triangular(lower=True), _triangular_ref(True),
             (matrix((2, 3, 3)), Arg((1, 3, 2)))),
        Case("cho_solve_lower", _cho_solve, _cho_solve_ref(True),
             (Arg((4, 4), sample=_cholesky_factor), Arg((4, 2)))),
        Case("cho_solve_upper", _cho_solve_upper, _cho_solve_ref(False),
             (Arg((3, 3), sample=_upper_factor), Arg((3,)))),
        Case("triangular_matmul_lower_trans", _triangular_matmul(True, True),
             _triangular_matmul_ref(True, True), (matrix((4, 4)), Arg((4, 3)))),
        Case("triangular_matmul_upper_stack", _triangular_matmul(False, False),
             _triangular_matmul_ref(False, False), (matrix((2, 3, 3)), Arg((1, 3, 2)))),
        Case("cholesky_grad", _cholesky_grad, _cholesky_grad_ref,
             (Arg((4, 4), sample=_cholesky_factor), Arg((4, 4)))),
        Case("cholesky_grad_stack", _cholesky_grad, _cholesky_grad_ref,
             (Arg((2, 3, 3), sample=_cholesky_factor), Arg((1, 3, 3)))),
        Case("cho_factor_then_cho_solve", _cho_factor_solve, _solve_ref(False, "pos"),
             (spd((4, 4)), Arg((4, 2)))),
    ]


def _call(name: str, **kwargs: Any) -> Callable[..., Any]:
    def build(*args: Any) -> Any:
        return getattr(_la(), name)(*args, **kwargs)

    build.__name__ = name
    return build


def _np(func: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    def reference(*args: Any) -> Any:
        result = func(*args, **kwargs)
        return tuple(np.asarray(r) for r in result) if isinstance(result, tuple) else result

    return reference


def _cholesky_upper_ref(a: Any) -> Any:
    return np.swapaxes(np.linalg.cholesky(np.swapaxes(a, -1, -2)), -1, -2)


def _slogdet_ref(a: Any) -> Any:
    sign, logdet = np.linalg.slogdet(a)
    return np.asarray(sign), np.asarray(logdet)


def _slogdet_logdet(a: Any) -> Any:
    return _la().slogdet(a)[1]


def _slogdet_logdet_ref(a: Any) -> Any:
    return np.asarray(np.linalg.slogdet(a)[1])


def _eigh_normalized(uplo: str) -> Callable[..., Any]:
    """eigh with each eigenvector's sign fixed by its first entry."""
    def build(a: Any) -> Any:
        import workbench.core.tensor as wt

        w, v = _la().eigh(a, UPLO=uplo)
        nd = v.type.ndim
        first = v[(slice(None),) * (nd - 2) + (slice(0, 1),)]
        return w, v * wt.sign(first)

    return build


def _eigh_normalized_ref(uplo: str) -> Callable[..., Any]:
    def reference(a: Any) -> Any:
        w, v = np.linalg.eigh(a, UPLO=uplo)
        return w, v * np.sign(v[..., :1, :])

    return reference


def _factorization_cases() -> list[Case]:
    return [
        Case("cholesky", _call("cholesky"), _np(np.linalg.cholesky), (spd((4, 4)),)),
        Case("cholesky_upper", _call("cholesky", lower=False), _cholesky_upper_ref,
             (spd((4, 4)),)),
        Case("cholesky_stack", _call("cholesky"), _np(np.linalg.cholesky), (spd((2, 3, 3)),)),
        Case("cholesky_static_shape", _call("cholesky"), _np(np.linalg.cholesky),
             (spd((3, 3), static=True),)),
        Case("cholesky_empty", _call("cholesky"), _np(np.linalg.cholesky), (Arg((0, 0)),),
             grad=EMPTY),
        Case("inv", _call("inv"), _np(np.linalg.inv), (matrix((4, 4)),)),
        Case("inv_stack", _call("inv"), _np(np.linalg.inv), (matrix((2, 3, 3)),)),
        Case("inv_empty_stack", _call("inv"), _np(np.linalg.inv), (Arg((0, 3, 3)),),
             grad=EMPTY),
        Case("det", _call("det"), _np(np.linalg.det), (matrix((4, 4)),)),
        Case("det_stack", _call("det"), _np(np.linalg.det), (matrix((3, 2, 2)),)),
        Case("det_of_empty_matrix", _call("det"), _np(np.linalg.det), (Arg((0, 0)),),
             grad=EMPTY),
        Case("det_singular", _call("det"), _np(np.linalg.det),
             (Arg((3, 3), sample=lambda rng, shape, dtype: np.ones(shape, dtype)),),
             grad="the gradient of det at a singular matrix needs its inverse"),
        Case("slogdet", _call("slogdet"), _slogdet_ref, (matrix((4, 4)),), grad=PIECEWISE),
        Case("slogdet_logdet", _slogdet_logdet, _slogdet_logdet_ref, (matrix((2, 3, 3)),)),
        Case("slogdet_negative", _slogdet_logdet, _slogdet_logdet_ref,
             (Arg((3, 3), sample=lambda rng, shape, dtype: -_well_conditioned(rng, shape,
                                                                              dtype)),)),
        Case("eigvalsh", _call("eigvalsh"), _np(np.linalg.eigvalsh), (spd((4, 4)),)),
        Case("eigvalsh_upper_stack", _call("eigvalsh", UPLO="U"),
             _np(np.linalg.eigvalsh, UPLO="U"), (matrix((2, 3, 3)),)),
        Case("eigh", _eigh_normalized("L"), _eigh_normalized_ref("L"), (spd((4, 4)),)),
        Case("eigh_upper_stack", _eigh_normalized("U"), _eigh_normalized_ref("U"),
             (matrix((2, 3, 3)),)),
    ]


def _first_row_signs(u: Any) -> Any:
    """The sign of each column's first entry (per matrix of a stack), as a row."""
    import workbench.core.tensor as wt

    nd = u.type.ndim
    return wt.sign(u[(slice(None),) * (nd - 2) + (slice(0, 1),)])


def _svd_thin(a: Any) -> Any:
    """The thin SVD with each singular pair's sign fixed by U's first row."""
    u, s, vh = _la().svd(a, full_matrices=False)
    signs = _first_row_signs(u)
    return u * signs, s, vh * _la().base.transpose(signs)


def _svd_thin_ref(a: Any) -> Any:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    signs = np.sign(u[..., :1, :])
    return u * signs, s, vh * np.swapaxes(signs, -1, -2)


def _svd_full_square(a: Any) -> Any:
    u, s, vh = _la().svd(a)
    signs = _first_row_signs(u)
    return u * signs, s, vh * _la().base.transpose(signs)


def _svd_full_square_ref(a: Any) -> Any:
    u, s, vh = np.linalg.svd(a)
    signs = np.sign(u[..., :1, :])
    return u * signs, s, vh * np.swapaxes(signs, -1, -2)


def _svd_full_checks(a: Any) -> Any:
    """Full U and Vh are unique only up to the complement's basis: check that they are
    orthogonal and rebuild `a`."""
    import workbench.core.tensor as wt

    u, s, vh = _la().svd(a)
    k = s.shape[-1]
    rebuilt = (u[:, :k] * s) @ vh[:k]
    return rebuilt, u.T @ u, vh @ vh.T, wt.shape(u), wt.shape(vh)


def _svd_full_checks_ref(a: Any) -> Any:
    m, n = a.shape
    return a, np.eye(m), np.eye(n), np.array([m, m]), np.array([n, n])


def _qr(mode: str) -> Callable[..., Any]:
    def build(a: Any) -> Any:
        return _la().qr(a, mode=mode)

    return build


def _qr_ref(mode: str) -> Callable[..., Any]:
    def reference(a: Any) -> Any:
        result = np.linalg.qr(a, mode=mode)
        return result if mode == "r" else tuple(result)

    return reference


RAW = "qr(mode='raw') has no gradient: Householder reflectors are LAPACK's storage"
FULL_UV = ("gradient through the extra columns of U/Vh of full_matrices=True of a non-square "
           "matrix: not defined (an arbitrary basis), refused")


def _svd_full_used(a: Any) -> Any:
    """Full U and Vh of a non-square matrix used only through their first k columns
    (rows): the gradient is defined and computed from the thin factors."""
    u, s, vh = _la().svd(a)
    k = min(a.type.shape)
    u, vh = u[:, :k], vh[:k]
    signs = _first_row_signs(u)
    return u * signs, s, vh * _la().base.transpose(signs)


def _svd_full_used_ref(a: Any) -> Any:
    return _svd_thin_ref(a)


def _rectangular_cases() -> list[Case]:
    return [
        Case("svdvals", _call("svdvals"), _np(np.linalg.svd, compute_uv=False),
             (Arg((4, 3)),)),
        Case("svd_values_only_stack", _call("svd", compute_uv=False),
             _np(np.linalg.svd, compute_uv=False), (Arg((2, 3, 4)),)),
        Case("svd_thin_tall", _svd_thin, _svd_thin_ref, (Arg((4, 3)),)),
        Case("svd_thin_wide", _svd_thin, _svd_thin_ref, (Arg((3, 4)),)),
        Case("svd_thin_stack", _svd_thin, _svd_thin_ref, (Arg((2, 3, 3)),)),
        Case("svd_full_square", _svd_full_square, _svd_full_square_ref,
             (Arg((3, 3), static=True),)),
        Case("svd_full_tall", _svd_full_checks, _svd_full_checks_ref, (Arg((4, 2)),),
             grad=FULL_UV),
        Case("svd_full_tall_used_columns", _svd_full_used, _svd_full_used_ref,
             (Arg((4, 2), static=True),)),
        Case("svd_full_wide_used_rows", _svd_full_used, _svd_full_used_ref,
             (Arg((2, 3), static=True),)),
        Case("svd_static_shapes", _call("svd", full_matrices=False), _np(np.linalg.svd,
                                                                          full_matrices=False),
             (Arg((4, 2), static=True, sample=lambda rng, shape, dtype: np.eye(4, 2,
                                                                                dtype=dtype)),),
             grad="the identity's singular values are repeated"),
        Case("svd_empty", _call("svd", compute_uv=False), _np(np.linalg.svd, compute_uv=False),
             (Arg((0, 3)),), grad=EMPTY),
        Case("qr_reduced", _qr("reduced"), _qr_ref("reduced"), (Arg((4, 3)),)),
        Case("qr_complete_square", _qr("complete"), _qr_ref("complete"),
             (Arg((3, 3), static=True),)),
        Case("qr_complete_tall", _qr("complete"), _qr_ref("complete"), (Arg((4, 2)),),
             grad="gradient through Q of mode='complete' of a tall matrix: not implemented"),
        Case("qr_r", _qr("r"), _qr_ref("r"), (Arg((4, 3)),)),
        Case("qr_stack", _qr("reduced"), _qr_ref("reduced"), (Arg((2, 3, 3)),)),
        Case("qr_wide", _qr("reduced"), _qr_ref("reduced"), (Arg((2, 4), static=True),)),
        Case("qr_wide_shape_unknown", _qr("reduced"), _qr_ref("reduced"), (Arg((3, 5)),)),
        Case("qr_wide_stack_r", _qr("r"), _qr_ref("r"), (Arg((2, 2, 3)),)),
        Case("qr_complete_wide", _qr("complete"), _qr_ref("complete"),
             (Arg((2, 3), static=True),)),
        Case("qr_empty", _qr("reduced"), _qr_ref("reduced"), (Arg((0, 3)),), grad=EMPTY),
        Case("qr_raw", _qr("raw"), _qr_ref("raw"), (Arg((4, 3)),), grad=RAW),
        Case("qr_raw_wide_stack", _qr("raw"), _qr_ref("raw"), (Arg((2, 2, 5)),), grad=RAW),
        Case("qr_raw_empty", _qr("raw"), _qr_ref("raw"), (Arg((3, 0)),), grad=RAW),
    ]


CASES: list[Case] = [*_solve_cases(), *_diagonal_cases(), *_triangular_cases(),
                     *_factorization_cases(), *_rectangular_cases()]
