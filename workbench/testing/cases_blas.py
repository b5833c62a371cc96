"""Catalogue cases of the BLAS-style Ops `Gemm` and `Gemv` (workbench.core.tensor.blas).

They normally appear only through the specialize rewrites; here they are built
directly, with the accumulated operand full-size, broadcasting (a bias row),
alpha/beta symbolic and constant, and ``beta == 0`` (the operand is ignored).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]


def _blas() -> Any:
    from workbench.core.tensor import blas

    return blas


def _gemm(z: Any, alpha: Any, x: Any, y: Any, beta: Any) -> Any:
    return _blas().gemm(z, alpha, x, y, beta)


def _gemv(y: Any, alpha: Any, a: Any, x: Any, beta: Any) -> Any:
    return _blas().gemv(y, alpha, a, x, beta)


def _gemm_constants(z: Any, x: Any, y: Any) -> Any:
    return _blas().gemm(z, 0.5, x, y, 2.0)


def _gemm_beta_zero(z: Any, x: Any, y: Any) -> Any:
    return _blas().gemm(z, 1.5, x, y, 0.0)


def _ref_blas(z: Any, alpha: Any, x: Any, y: Any, beta: Any) -> Any:
    return np.asarray(beta * z + alpha * np.dot(x, y), dtype=z.dtype)


def _ref_constants(z: Any, x: Any, y: Any) -> Any:
    return np.asarray(2.0 * z + 0.5 * np.dot(x, y), dtype=z.dtype)


def _ref_beta_zero(z: Any, x: Any, y: Any) -> Any:
    return np.asarray(1.5 * np.dot(x, y), dtype=x.dtype)


CASES = [
    Case("gemm", _gemm, _ref_blas,
         (Arg((3, 2)), Arg(()), Arg((3, 4)), Arg((4, 2)), Arg(()))),
    Case("gemm_bias_row", _gemm, _ref_blas,
         (Arg((1, 2), static=True), Arg(()), Arg((3, 4)), Arg((4, 2)), Arg(()))),
    Case("gemm_constant_scales", _gemm_constants, _ref_constants,
         (Arg((3, 2)), Arg((3, 4)), Arg((4, 2)))),
    Case("gemm_beta_zero", _gemm_beta_zero, _ref_beta_zero,
         (Arg((2, 2)), Arg((2, 5)), Arg((5, 2)))),
    Case("gemm_zero_inner", _gemm, _ref_blas,
         (Arg((3, 2)), Arg(()), Arg((3, 0)), Arg((0, 2)), Arg(()))),
    Case("gemm_complex", _gemm, _ref_blas,
         (Arg((2, 2), "complex128"), Arg((), "complex128"), Arg((2, 3), "complex128"),
          Arg((3, 2), "complex128"), Arg((), "complex128")),
         float_dtypes=("float64",), grad="complex inputs (holomorphic gradients come later)"),
    Case("gemv", _gemv, _ref_blas,
         (Arg((3,)), Arg(()), Arg((3, 4)), Arg((4,)), Arg(()))),
    Case("gemv_static", _gemv, _ref_blas,
         (Arg((3,), static=True), Arg(()), Arg((3, 4), static=True), Arg((4,), static=True),
          Arg(()))),
]
