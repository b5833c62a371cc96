"""Catalogue cases of the functions of `wt.linalg` composed from other Ops: `norm` (every
vector and matrix order, `axis`, `keepdims`), `vector_norm`, `matrix_norm`,
``x.norm(L, axis)``, `trace` (numpy.linalg's and numpy's), `diagonal`, `kron`,
`block_diag`, `matrix_power`, `pinv` and `lstsq`. References are numpy's (and, for
`block_diag`, a NumPy transcription of scipy.linalg.block_diag)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.testing.cases_lapack import matrix
from workbench.testing.catalog import Arg, Case, numpy_reference, tensor_function

__all__ = ["CASES"]

INT_ONLY = "no float inputs"
EMPTY = "empty input: nothing to differentiate"


def _la() -> Any:
    import workbench.core.tensor as wt

    return wt.linalg


def _call(name: str, *args: Any, **kwargs: Any) -> Callable[..., Any]:
    return tensor_function(f"linalg.{name}", *args, **kwargs)


_np = numpy_reference


def _norm_cases() -> list[Case]:
    cases = []
    for name, order in (("2", None), ("1", 1), ("inf", np.inf), ("minus_inf", -np.inf),
                        ("0", 0), ("3", 3), ("half", 0.5)):
        cases.append(Case(f"norm_vector_{name}", _call("norm", order),
                          _np(np.linalg.norm, order), (Arg((5,)),)))
    for name, order in (("fro", "fro"), ("nuc", "nuc"), ("1", 1), ("minus_1", -1),
                        ("2", 2), ("minus_2", -2), ("inf", np.inf), ("minus_inf", -np.inf)):
        cases.append(Case(f"norm_matrix_{name}", _call("norm", order),
                          _np(np.linalg.norm, order), (Arg((3, 4)),)))
    cases += [
        Case("norm_all_entries", _call("norm"), _np(np.linalg.norm), (Arg((2, 3, 2)),)),
        Case("norm_inf_of_empty_axis", _call("norm", np.inf, axis=0),
             _np(np.linalg.norm, np.inf, axis=0), (Arg((0, 3)),), grad="an empty input"),
        Case("norm_matrix_2_empty", _call("norm", 2), _np(np.linalg.norm, 2), (Arg((3, 0)),),
             grad="an empty input"),
        Case("norm_axis_keepdims", _call("norm", 3, axis=1, keepdims=True),
             _np(np.linalg.norm, 3, axis=1, keepdims=True), (Arg((2, 3, 4)),)),
        Case("norm_axes_nuc", _call("norm", "nuc", axis=(2, 0)),
             _np(np.linalg.norm, "nuc", axis=(2, 0)), (Arg((2, 3, 4)),)),
        Case("norm_axes_1_keepdims", _call("norm", 1, axis=(2, 0), keepdims=True),
             _np(np.linalg.norm, 1, axis=(2, 0), keepdims=True), (Arg((2, 3, 4)),)),
        Case("norm_int", _call("norm"), _np(np.linalg.norm), (Arg((5,), "int64"),),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("vector_norm_axes", _call("vector_norm", 1, axis=(0, 2)),
             _np(np.linalg.vector_norm, ord=1, axis=(0, 2)), (Arg((2, 3, 4)),)),
        Case("matrix_norm_stack", _call("matrix_norm", ord=2),
             _np(np.linalg.matrix_norm, ord=2), (Arg((2, 3, 4)),)),
        Case("norm_method", _norm_method, _norm_method_ref, (Arg((3, 4)),)),
    ]
    return cases


def _norm_method(x: Any) -> Any:
    return x.norm(3, axis=1)


def _norm_method_ref(x: Any) -> Any:
    return (np.abs(x) ** 3).sum(axis=1) ** (1 / 3)


def _trace_np(x: Any) -> Any:
    import workbench.core.tensor as wt

    return wt.trace(x, 1, axis1=0, axis2=2)


def block_diag_reference(*arrs: Any) -> Any:
    """A NumPy transcription of scipy.linalg.block_diag."""
    blocks = [np.atleast_2d(a) for a in arrs]
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    out = np.zeros((rows, cols), dtype=np.result_type(*blocks))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _block_diag(*arrs: Any) -> Any:
    return _la().block_diag(*arrs)


def _kron_top_level(a: Any, b: Any) -> Any:
    import workbench.core.tensor as wt

    return wt.kron(a, b)


def _other_cases() -> list[Case]:
    square = matrix((2, 3, 3))
    return [
        Case("trace", _call("trace"), _np(np.linalg.trace), (Arg((2, 3, 3)),)),
        Case("trace_offset", _call("trace", 1), _np(np.linalg.trace, offset=1),
             (Arg((3, 4)),)),
        Case("trace_numpy_axes", _trace_np, _np(np.trace, 1, axis1=0, axis2=2),
             (Arg((3, 2, 4)),)),
        Case("trace_int", _call("trace"), _np(np.linalg.trace), (Arg((3, 3), "int32"),),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("diagonal", _call("diagonal", -1), _np(np.linalg.diagonal, offset=-1),
             (Arg((2, 3, 4)),)),
        Case("kron_matrix_vector", _call("kron"), _np(np.kron), (Arg((2, 3)), Arg((4,)))),
        Case("kron_rank3", _kron_top_level, _np(np.kron), (Arg((2, 1, 3)), Arg((2, 2)))),
        Case("block_diag", _block_diag, block_diag_reference,
             (Arg((2, 3)), Arg((4,)), Arg(()), Arg((1, 2)))),
        Case("block_diag_int_float", _block_diag, block_diag_reference,
             (Arg((2, 2), "int32"), Arg((1, 3)))),
        Case("matrix_power_3", _call("matrix_power", 3),
             _np(np.linalg.matrix_power, 3), (square,)),
        Case("matrix_power_0", _call("matrix_power", 0),
             _np(np.linalg.matrix_power, 0), (square,), grad="the identity is constant"),
        Case("matrix_power_minus_2", _call("matrix_power", -2),
             _np(np.linalg.matrix_power, -2), (square,)),
        Case("matrix_power_int", _call("matrix_power", 4),
             _np(np.linalg.matrix_power, 4), (Arg((3, 3), "int64"),),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("pinv", _call("pinv"), _np(np.linalg.pinv), (Arg((2, 4, 3)),)),
        Case("pinv_rank_deficient", _call("pinv"), _np(np.linalg.pinv),
             (Arg((3, 4), sample=lambda rng, shape, dtype: np.ones(shape, dtype)),),
             float_dtypes=("float64",),  # numpy's default rcond 1e-15 is below float32's
             grad="repeated (zero) singular values"),  # rounding: a tie either way

        Case("pinv_empty_matrices", _call("pinv"), _np(np.linalg.pinv), (Arg((2, 0, 0)),),
             grad=EMPTY),
        Case("pinv_hermitian", _call("pinv", hermitian=True),
             _np(np.linalg.pinv, hermitian=True),
             (Arg((3, 3), sample=_symmetric),)),
        Case("lstsq_tall", _call("lstsq"), _np(np.linalg.lstsq), (Arg((5, 3)), Arg((5,))),
             grad="the rank output is an integer; x is checked in lstsq_solution"),
        Case("lstsq_wide_matrix_rhs", _call("lstsq"), _np(np.linalg.lstsq),
             (Arg((2, 4)), Arg((2, 3))), grad="an empty residuals output"),
        Case("lstsq_solution", _lstsq_x, _lstsq_x_ref, (Arg((5, 3)), Arg((5, 2)))),
    ]


def _symmetric(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    m = rng.uniform(-1, 1, size=shape)
    return (m + m.T + 3 * np.eye(shape[0])).astype(dtype)


def _lstsq_x(a: Any, b: Any) -> Any:
    return _la().lstsq(a, b)[0]


def _lstsq_x_ref(a: Any, b: Any) -> Any:
    return np.linalg.lstsq(a, b)[0]


def expm_taylor(a: Any) -> Any:
    """The reference matrix exponential: scaled until the 1-norm is below 1/2, a Taylor
    series of 30 terms, squared back (independent of the Padé method under test); in
    float64, or complex128 for complex `a`."""
    a = np.asarray(a, dtype=np.result_type(np.asarray(a).dtype, np.float64))
    out = np.empty_like(a)
    for index in np.ndindex(a.shape[:-2]):
        m = a[index]
        norm = np.abs(m).sum(axis=0).max() if m.size else 0.0
        s = max(0, int(np.ceil(np.log2(norm / 0.5)))) if norm > 0.5 else 0
        m = m / 2.0 ** s
        term = total = np.eye(m.shape[0])
        for k in range(1, 30):
            term = term @ m / k
            total = total + term
        for _ in range(s):
            total = total @ total
        out[index] = total
    return out


def _expm_cases() -> list[Case]:
    def scaled(factor: float) -> Callable[..., Any]:
        def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
            return (factor * rng.uniform(-1, 1, size=shape)).astype(dtype)

        return sample

    expm = _call("expm")
    return [
        Case("expm_small_norm", expm, expm_taylor, (Arg((3, 3), sample=scaled(0.01)),)),
        Case("expm", expm, expm_taylor, (Arg((4, 4), sample=scaled(0.5)),)),
        Case("expm_scaled_and_squared", expm, expm_taylor, (Arg((3, 3), sample=scaled(4.0)),),
             rtol=1e-6, float_dtypes=("float64",)),
        # float32 is computed in float32 (as scipy.linalg.expm): its squarings amplify
        # single-precision rounding as scipy's do (about 1e-6 relative here)
        Case("expm_scaled_and_squared_single", expm, expm_taylor,
             (Arg((3, 3), sample=scaled(4.0)),), rtol=1e-5, float_dtypes=("float32",)),
        Case("expm_stack", expm, expm_taylor, (Arg((2, 3, 3), sample=scaled(1.0)),)),
        Case("expm_empty", expm, expm_taylor, (Arg((0, 0)),), grad=EMPTY),
    ]


CASES: list[Case] = [*_norm_cases(), *_other_cases(), *_expm_cases()]
