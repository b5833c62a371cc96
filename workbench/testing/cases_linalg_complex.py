"""Catalogue cases of `wt.linalg` on complex matrices (complex128, and complex64 where a
case says so), and integer inputs that numpy.linalg upcasts to float64.

The conventions are numpy's and scipy's: Hermitian matrices for `cholesky`, `eigh`,
``assume_a="pos"``/``"her"`` (the mirror of the read triangle conjugated), complex
symmetric ones for ``assume_a="sym"``; real eigenvalues, singular values and log|det|;
conjugate transposes in `cho_solve`, `pinv`, `lstsq` and ``trans=2``. References are
NumPy (the triangle a function reads made explicit). Eigenvectors and singular vectors
are unique up to a unit complex factor per column, so those cases divide each column
by the phase of its first entry, in the graph and in the reference alike.

The gradients of complex linear algebra are refused (workbench has no complex
gradient convention yet); tests/core/tensor/test_linalg_complex.py checks the message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.testing.cases_linalg_functions import block_diag_reference, expm_taylor
from workbench.testing.catalog import Arg, Case, numpy_reference, tensor_function

__all__ = ["CASES"]

Z, C = "complex128", "complex64"
COMPLEX_GRAD = "complex inputs: workbench has no complex gradient convention yet (refused)"
INT_ONLY = "no float inputs"


def _uniform(rng: np.random.Generator, shape: tuple[int, ...]) -> Any:
    return rng.uniform(-1, 1, size=shape) + 1j * rng.uniform(-1, 1, size=shape)


def _well_conditioned(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Random complex entries plus n on the diagonal (diagonally dominant)."""
    return (_uniform(rng, shape) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _hpd(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """``m m^H + n I``: Hermitian positive definite."""
    m = _uniform(rng, shape)
    return (m @ np.conj(np.swapaxes(m, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _factor(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    return np.linalg.cholesky(_hpd(rng, shape, Z)).astype(dtype)


def _small(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    return (0.5 * _uniform(rng, shape)).astype(dtype)


def matrix(shape: tuple[int, ...], dtype: str = Z) -> Arg:
    return Arg(shape, dtype, sample=_well_conditioned)


def hpd(shape: tuple[int, ...], dtype: str = Z) -> Arg:
    return Arg(shape, dtype, sample=_hpd)


def vectors(shape: tuple[int, ...], dtype: str = Z) -> Arg:
    return Arg(shape, dtype, -1.0, 1.0)


def _case(name: str, build: Callable[..., Any], reference: Callable[..., Any],
          args: tuple[Arg, ...], **kwargs: Any) -> Case:
    kwargs.setdefault("grad", COMPLEX_GRAD)
    return Case(name, build, reference, args, float_dtypes=("float64",), **kwargs)


_call = tensor_function
_np = numpy_reference


def _mirrored(a: Any, lower: bool, hermitian: bool) -> Any:
    """The matrix the `lower` (or upper) triangle of `a` describes (LAPACK's reading)."""
    t = np.tril(a) if lower else np.triu(a)
    strict = np.tril(a, -1) if lower else np.triu(a, 1)
    mirror = np.swapaxes(strict, -1, -2)
    if not hermitian:
        return t + mirror
    full = t + np.conj(mirror)
    n = a.shape[-1]
    full[..., np.arange(n), np.arange(n)] = full[..., np.arange(n), np.arange(n)].real
    return full


def _solve_ref(assume_a: str, lower: bool = False) -> Callable[..., Any]:
    def reference(a: Any, b: Any) -> Any:
        if assume_a in ("sym", "her", "pos"):
            a = _mirrored(a, lower, assume_a != "sym")
        elif assume_a == "tri":
            a = np.tril(a) if lower else np.triu(a)
        if b.ndim == 1:
            return np.linalg.solve(a, b[..., None])[..., 0]
        return np.linalg.solve(a, b)

    return reference


def _triangular_ref(lower: bool, trans: int) -> Callable[..., Any]:
    def reference(a: Any, b: Any) -> Any:
        t = np.tril(a) if lower else np.triu(a)
        if trans:
            t = np.swapaxes(t, -1, -2)
        if trans == 2:
            t = np.conj(t)
        return np.linalg.solve(t, b)

    return reference


def _cho_solve(lower: bool) -> Callable[..., Any]:
    def build(c: Any, b: Any) -> Any:
        import workbench.core.tensor as wt

        return wt.linalg.cho_solve((c, lower), b)

    return build


def _cho_solve_ref(lower: bool) -> Callable[..., Any]:
    def reference(c: Any, b: Any) -> Any:
        t = np.tril(c) if lower else np.triu(c)
        th = np.conj(np.swapaxes(t, -1, -2))
        return np.linalg.solve(t @ th if lower else th @ t, b)

    return reference


def _upper_factor(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    return np.ascontiguousarray(np.conj(np.swapaxes(_factor(rng, shape, dtype), -1, -2)))


def _cholesky_upper_ref(a: Any) -> Any:
    return np.conj(np.swapaxes(np.linalg.cholesky(a), -1, -2))


def _phases(first_row: Any) -> Any:
    """The unit complex factor of each column's first entry, in the graph."""
    import workbench.core.tensor as wt

    return first_row / wt.abs(first_row)


def _first_row(v: Any) -> Any:
    return v[(slice(None),) * (v.type.ndim - 2) + (slice(0, 1),)]


def _eigh_normalized(a: Any) -> Any:
    import workbench.core.tensor as wt

    w, v = wt.linalg.eigh(a)
    return w, v * wt.conj(_phases(_first_row(v)))


def _eigh_normalized_ref(a: Any) -> Any:
    w, v = np.linalg.eigh(a)
    first = v[..., :1, :]
    return w, v * np.conj(first / np.abs(first))


def _svd_thin(a: Any) -> Any:
    import workbench.core.tensor as wt

    u, s, vh = wt.linalg.svd(a, full_matrices=False)
    p = _phases(_first_row(u))
    return u * wt.conj(p), s, vh * wt.linalg.base.transpose(p)


def _svd_thin_ref(a: Any) -> Any:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    first = u[..., :1, :]
    p = first / np.abs(first)
    return u * np.conj(p), s, vh * np.swapaxes(p, -1, -2)


def _slogdet_ref(a: Any) -> Any:
    sign, logdet = np.linalg.slogdet(a)
    return [np.asarray(sign), np.asarray(logdet)]


def _lstsq_x(a: Any, b: Any) -> Any:
    import workbench.core.tensor as wt

    return wt.linalg.lstsq(a, b)[0]


def _lstsq_x_ref(a: Any, b: Any) -> Any:
    return np.linalg.lstsq(a, b)[0]


def _solver_cases() -> list[Case]:
    la = "linalg."
    return [
        _case("solve", _call(la + "solve"), _solve_ref("gen"), (matrix((4, 4)), vectors((4, 2)))),
        _case("solve_complex64_stack_vector", _call(la + "solve"), _solve_ref("gen"),
              (matrix((2, 3, 3), C), vectors((3,), C))),
        _case("solve_mixed_float32_complex64", _call(la + "solve"), _solve_ref("gen"),
              (matrix((3, 3), C), Arg((3,), "float32"))),
        _case("solve_sym_lower", _call(la + "solve", assume_a="sym", lower=True),
              _solve_ref("sym", True), (matrix((4, 4)), vectors((4, 2)))),
        _case("solve_her_upper", _call(la + "solve", assume_a="her"), _solve_ref("her"),
              (matrix((2, 3, 3)), vectors((2, 3, 1)))),
        _case("solve_pos_lower", _call(la + "solve", assume_a="pos", lower=True),
              _solve_ref("pos", True), (hpd((4, 4)), vectors((4,)))),
        _case("solve_pos_upper_complex64", _call(la + "solve", assume_a="pos"),
              _solve_ref("pos"), (hpd((3, 3), C), vectors((3, 2), C))),
        _case("solve_tri", _call(la + "solve", assume_a="tri", lower=True),
              _solve_ref("tri", True), (matrix((3, 3)), vectors((3, 2)))),
        _case("solve_triangular_conjugate_transpose",
              _call(la + "solve_triangular", trans=2), _triangular_ref(False, 2),
              (matrix((3, 3)), vectors((3, 2)))),
        _case("solve_triangular_transpose", _call(la + "solve_triangular", lower=True, trans=1),
              _triangular_ref(True, 1), (matrix((2, 3, 3)), vectors((2, 3, 2)))),
        _case("cho_solve_lower", _cho_solve(True), _cho_solve_ref(True),
              (Arg((4, 4), Z, sample=_factor), vectors((4, 2)))),
        _case("cho_solve_upper_complex64", _cho_solve(False), _cho_solve_ref(False),
              (Arg((3, 3), C, sample=_upper_factor), vectors((3, 1), C))),
        _case("inv", _call(la + "inv"), _np(np.linalg.inv), (matrix((2, 3, 3)),)),
        _case("inv_complex64", _call(la + "inv"), _np(np.linalg.inv), (matrix((4, 4), C),)),
        _case("det", _call(la + "det"), _np(np.linalg.det), (matrix((2, 3, 3)),)),
        _case("slogdet", _call(la + "slogdet"), _slogdet_ref, (matrix((2, 3, 3)),)),
        _case("slogdet_complex64", _call(la + "slogdet"), _slogdet_ref, (matrix((4, 4), C),)),
        _case("matrix_power_3", _call(la + "matrix_power", 3),
              _np(np.linalg.matrix_power, 3), (vectors((2, 3, 3)),)),
        _case("matrix_power_minus_2", _call(la + "matrix_power", -2),
              _np(np.linalg.matrix_power, -2), (matrix((3, 3)),)),
        _case("expm", _call(la + "expm"), expm_taylor, (Arg((2, 3, 3), Z, sample=_small),)),
    ]


def _factorization_cases() -> list[Case]:
    la = "linalg."
    return [
        _case("cholesky", _call(la + "cholesky"), _np(np.linalg.cholesky), (hpd((2, 4, 4)),)),
        _case("cholesky_upper_complex64", _call(la + "cholesky", lower=False),
              _cholesky_upper_ref, (hpd((3, 3), C),)),
        _case("eigvalsh", _call(la + "eigvalsh"), _np(np.linalg.eigvalsh), (hpd((2, 4, 4)),)),
        _case("eigvalsh_upper_reads_one_triangle", _call(la + "eigvalsh", UPLO="U"),
              _np(np.linalg.eigvalsh, UPLO="U"), (matrix((3, 3)),)),
        _case("eigh", _eigh_normalized, _eigh_normalized_ref, (hpd((2, 3, 3)),)),
        _case("eigh_complex64", _eigh_normalized, _eigh_normalized_ref, (hpd((4, 4), C),)),
        _case("svdvals", _call(la + "svdvals"), _np(np.linalg.svd, compute_uv=False),
              (vectors((2, 4, 3)),)),
        _case("svd_thin", _svd_thin, _svd_thin_ref, (vectors((2, 3, 4)),)),
        _case("svd_thin_complex64", _svd_thin, _svd_thin_ref, (vectors((4, 3), C),)),
        _case("qr_reduced", _call(la + "qr"), _np(np.linalg.qr), (vectors((2, 4, 3)),)),
        _case("qr_complete_complex64", _call(la + "qr", "complete"),
              _np(np.linalg.qr, "complete"), (vectors((3, 2), C),)),
        _case("pinv", _call(la + "pinv"), _np(np.linalg.pinv), (vectors((2, 4, 3)),)),
        _case("pinv_hermitian", _call(la + "pinv", hermitian=True),
              _np(np.linalg.pinv, hermitian=True), (hpd((3, 3)),)),
        _case("lstsq_solution", _lstsq_x, _lstsq_x_ref, (vectors((5, 3)), vectors((5, 2)))),
        _case("lstsq", _call(la + "lstsq"), _np(np.linalg.lstsq),
              (vectors((5, 3)), vectors((5,)))),
    ]


def _composed_cases() -> list[Case]:
    la = "linalg."
    cases = []
    for name, order in (("fro", "fro"), ("nuc", "nuc"), ("2", 2), ("1", 1), ("inf", np.inf)):
        cases.append(_case(f"norm_matrix_{name}", _call(la + "norm", order),
                           _np(np.linalg.norm, order), (vectors((3, 4)),)))
    for name, order in (("2", None), ("3", 3), ("0", 0), ("minus_inf", -np.inf)):
        cases.append(_case(f"norm_vector_{name}", _call(la + "norm", order),
                           _np(np.linalg.norm, order), (vectors((5,), C),)))
    cases += [
        _case("norm_axis_keepdims", _call(la + "norm", axis=1, keepdims=True),
              _np(np.linalg.norm, axis=1, keepdims=True), (vectors((2, 3, 4)),)),
        _case("trace", _call(la + "trace"), _np(np.linalg.trace), (vectors((2, 3, 3)),)),
        _case("kron", _call(la + "kron"), _np(np.kron), (vectors((2, 3)), vectors((2, 2)))),
        _case("block_diag_complex_and_float", _call(la + "block_diag"), block_diag_reference,
              (vectors((2, 2)), Arg((1, 3), "float64"))),
        # integers: numpy.linalg computes in float64
        Case("inv_int64", _call(la + "inv"), _np(np.linalg.inv),
             (Arg((3, 3), "int64", sample=lambda rng, shape, dtype: (
                 rng.integers(-2, 3, size=shape) + 8 * np.eye(3)).astype(dtype)),),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("solve_int32", _call(la + "solve"), _solve_ref("gen"),
             (Arg((3, 3), "int32", sample=lambda rng, shape, dtype: (
                 rng.integers(-2, 3, size=shape) + 8 * np.eye(3)).astype(dtype)),
              Arg((3,), "int32")),
             float_dtypes=("float64",), grad=INT_ONLY),
    ]
    return cases


CASES: list[Case] = [*_solver_cases(), *_factorization_cases(), *_composed_cases()]
