"""Accuracy in units in the last place (ulp), for tests that hold a computed result to
the bound its code path promises against a more precise reference."""

from __future__ import annotations

import numpy as np

__all__ = ["ulp_error"]


def ulp_error(got: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """|got - reference| in units of the spacing of `got`'s dtype at the reference, as
    float64, where both are finite (subnormal results count in the smallest subnormal).

    `reference` may be more precise than `got` (np.longdouble for float64 results): the
    difference is then taken in its precision, so an error below 1 ulp is measured, not
    rounded away."""
    got, reference = np.asarray(got), np.asarray(reference)
    finite = np.isfinite(reference) & np.isfinite(got)
    ref, value = reference[finite], got[finite]
    wide = np.result_type(value.dtype, ref.dtype, np.float64)
    with np.errstate(over="ignore"):  # the spacing of the largest finite value is inf
        spacing = np.spacing(np.abs(ref.astype(value.dtype))).astype(wide)
    return (np.abs(value.astype(wide) - ref.astype(wide)) / spacing).astype(np.float64)
