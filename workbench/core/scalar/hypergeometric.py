"""The Gauss hypergeometric function 2F1(a, b; c; x) for real x <= 1: one algorithm,
written once over an array namespace (`ArrayOps`: NumPy for the Python kernel, torch
for the GPU linker's); the C linker's scalar transcription is `wb_hyp2f1` in
link/c/special_math.py.

Regions (y = 1 - x, d = c - a - b):
- x = 0, or a = 0 or b = 0 (c != 0): 1, whatever the other arguments (SciPy's).
- a or b a non-positive integer: the series terminates (a polynomial), any finite x
  (x > 1 too; NaN at +-inf, where SciPy's values have no pattern).
- x = 1: Gauss's sum Gamma(c) Gamma(d) / (Gamma(c - a) Gamma(c - b)) (inf for d <= 0).
- x < -2, a - b not near an integer: DLMF 15.8.2, two series in 1/x.
- -2 <= x < -0.5 (or a - b near an integer): Pfaff, (1 - x)^-a 2F1(a, c - b; c; x/(x - 1)).
- |x| <= 0.5 and 0.5 < x <= 0.9: the defining series.
- 0.9 < x < 1 and |d| < `FAR_D`: the linear transformation to 1 - x (DLMF 15.8.4), two series in y
  that converge fast, ``Gamma(c) Gamma(d) / (Gamma(c-a) Gamma(c-b)) 2F1(a, b; 1-d; y)
  + y^d Gamma(c) Gamma(-d) / (Gamma(a) Gamma(b)) 2F1(c-a, c-b; 1+d; y)``; where d is
  within `NEAR_INTEGER` of an integer m those two terms cancel (each ~ 1/(d - m)):
  there the value is the quadratic in e = d - m through the limiting form with digamma
  terms at e = 0 (Abramowitz and Stegun 15.3.10 and 15.3.11 for m >= 0; m < 0 first by
  Euler's transformation ``y^d 2F1(c - a, c - b; c; x)``, whose d is -m) and the two-term
  values at e = +-`STEP`.
A series that does not converge in `TERMS` terms gives NaN, never an unconverged value.

Derivatives: in x, ``(a b / c) 2F1(a + 1, b + 1; c + 1; x)`` (the same function, so as
accurate near x = 1). In a, b and c they are double series of digamma-weighted terms
(no closed form): not implemented, and `grad` says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from workbench.core.scalar.special_kernels import digamma, gammaln

__all__ = ["FAR_D", "NEAR_INTEGER", "NUMPY_OPS", "STEP", "TERMS", "ArrayOps", "TorchOps", "hyp2f1",
           "hyp2f1_numpy", "hyp2f1_torch"]

#: Terms after which a series that has not converged gives NaN.
TERMS = 3000
#: |d - m| below which the two-term transformation, which loses about log10(1/|d - m|)
#: digits there, is replaced by a quadratic in e = d - m through the limiting (digamma)
#: form at e = 0 and the two-term values at e = +-STEP.
NEAR_INTEGER = 3e-6
STEP = 3e-5
#: |c - a - b| from which x near 1 keeps the defining series (its terms then fall like
#: n^-(c-a-b+1): fast when positive; overflow to NaN when very negative).
FAR_D = 50.0


class ArrayOps:
    """The array functions the algorithm uses (NumPy's)."""

    def __init__(self, lgamma: Any, digamma: Any) -> None:
        self.lgamma, self.digamma = lgamma, digamma
        self.where, self.log, self.abs, self.floor = np.where, np.log, np.abs, np.floor
        self.round, self.isnan, self.power, self.exp = np.round, np.isnan, np.power, np.exp

    def full_like(self, x: Any, value: float) -> Any:
        return np.full_like(x, value)

    def any(self, x: Any) -> bool:
        return bool(np.any(x))

    def max_int(self, x: Any) -> int:
        """The largest entry as an int (0 for none)."""
        return int(np.max(x)) if np.size(x) else 0


class TorchOps(ArrayOps):
    """The same functions from torch."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.lgamma, self.digamma = torch.lgamma, torch.special.digamma
        self.where, self.log, self.abs, self.floor = (torch.where, torch.log, torch.abs,
                                                      torch.floor)
        self.round, self.isnan, self.power, self.exp = (torch.round, torch.isnan,
                                                        torch.pow, torch.exp)

    def full_like(self, x: Any, value: float) -> Any:
        return self.torch.full_like(x, value)

    def any(self, x: Any) -> bool:
        return bool(x.any())

    def max_int(self, x: Any) -> int:
        return int(x.max()) if x.numel() else 0


def _gamma_sign(ops: ArrayOps, x: Any) -> Any:
    return ops.where((x >= 0) | (ops.floor(-x) % 2 == 1), 1.0, -1.0)


def _pole(ops: ArrayOps, x: Any) -> Any:
    return (x <= 0) & (x == ops.floor(x))


def _gamma(ops: ArrayOps, x: Any) -> Any:
    """Gamma(x) (NaN at the poles)."""
    value = _gamma_sign(ops, x) * ops.exp(ops.lgamma(x))
    return ops.where(_pole(ops, x), math.nan, value)


def _rgamma(ops: ArrayOps, x: Any) -> Any:
    """1 / Gamma(x), 0 at the poles."""
    pole = _pole(ops, x)
    safe = ops.where(pole, 1.0, x)
    return ops.where(pole, 0.0, _gamma_sign(ops, safe) * ops.exp(-ops.lgamma(safe)))


def series(ops: ArrayOps, a: Any, b: Any, c: Any, z: Any) -> Any:
    """sum over n of (a)_n (b)_n / ((c)_n n!) z^n, until the terms stop mattering; NaN
    where TERMS terms do not get there."""
    term = z * 0 + 1.0
    total = term
    for n in range(TERMS):
        term = term * (a + n) * (b + n) / ((c + n) * (n + 1)) * z
        total = total + term
        if not ops.any(ops.abs(term) > 1e-17 * ops.abs(total)):
            break
    return ops.where(ops.abs(term) > 1e-15 * ops.abs(total), math.nan, total)


def _integer_d(ops: ArrayOps, a: Any, b: Any, c: Any, y: Any, m: Any) -> Any:
    """2F1(a, b; a + b + m; 1 - y) for an integer m >= 0 (A&S 15.3.10, 15.3.11):
    ``Gamma(m) Gamma(c) / (Gamma(a+m) Gamma(b+m)) sum_{n<m} (a)_n (b)_n / (n! (1-m)_n) y^n
    - (-y)^m Gamma(c) / (Gamma(a) Gamma(b)) sum_n (a+m)_n (b+m)_n / (n! (n+m)!) y^n
    [ln y - psi(n+1) - psi(n+m+1) + psi(a+n+m) + psi(b+n+m)]``."""
    finite = y * 0.0
    term = y * 0 + 1.0
    for n in range(ops.max_int(m)):
        finite = finite + ops.where(n < m, term, 0.0)
        term = term * (a + n) * (b + n) / ((n + 1) * (1 - m + n)) * y
    first = ops.where(m > 0, _gamma(ops, ops.where(m > 0, m, 1.0)) * _gamma(ops, c)
                      * _rgamma(ops, a + m) * _rgamma(ops, b + m) * finite, 0.0)
    log_y = ops.log(y)
    psi_1 = ops.digamma(y * 0 + 1.0)  # psi(n + 1)
    psi_m = ops.digamma(m + 1.0)  # psi(n + m + 1)
    psi_a, psi_b = ops.digamma(a + m), ops.digamma(b + m)  # psi(a + n + m), psi(b + n + m)
    coefficient = ops.exp(-ops.lgamma(m + 1.0))  # 1 / m!
    total = coefficient * (log_y - psi_1 - psi_m + psi_a + psi_b)
    for n in range(TERMS):
        coefficient = coefficient * (a + m + n) * (b + m + n) / ((n + 1) * (n + m + 1)) * y
        psi_1, psi_m = psi_1 + 1.0 / (n + 1), psi_m + 1.0 / (n + m + 1)
        psi_a, psi_b = psi_a + 1.0 / (a + m + n), psi_b + 1.0 / (b + m + n)
        step = coefficient * (log_y - psi_1 - psi_m + psi_a + psi_b)
        total = total + step
        if not ops.any(ops.abs(step) > 1e-17 * ops.abs(total)):
            break
    sign = ops.where(m % 2 == 1, -1.0, 1.0)
    second = sign * ops.power(y, m) * _gamma(ops, c) * _rgamma(ops, a) * _rgamma(ops, b) * total
    return first - second


def _two_terms(ops: ArrayOps, a: Any, b: Any, d: Any, y: Any) -> Any:
    """2F1(a, b; a + b + d; 1 - y) by DLMF 15.8.4 (d not an integer)."""
    c = a + b + d
    return (_gamma(ops, c) * _gamma(ops, d) * _rgamma(ops, c - a) * _rgamma(ops, c - b)
            * series(ops, a, b, 1.0 - d, y)
            + ops.power(y, d) * _gamma(ops, c) * _gamma(ops, -d) * _rgamma(ops, a)
            * _rgamma(ops, b) * series(ops, c - a, c - b, 1.0 + d, y))


def _near_one(ops: ArrayOps, a: Any, b: Any, c: Any, x: Any) -> Any:
    """2F1 for 0.9 < x < 1 by the transformation to y = 1 - x (module docstring)."""
    y = 1.0 - x
    d = c - a - b
    m = ops.round(d)
    e = d - m
    near = ops.abs(e) < NEAR_INTEGER
    two = _two_terms(ops, a, b, ops.where(near, 0.5, d), y)
    # the limiting form at e = 0: m >= 0 directly, m < 0 after Euler's transformation
    flip = m < 0
    c0 = a + b + m  # c at e = 0
    aa, bb = ops.where(flip, c0 - a, a), ops.where(flip, c0 - b, b)
    mm = ops.where(near, ops.abs(m), 0.0)
    limit = _integer_d(ops, aa, bb, aa + bb + mm, y, mm)
    limit = ops.where(flip, ops.power(y, ops.where(near, m, 0.0)) * limit, limit)
    # quadratic in e through e = -STEP, 0, STEP (the two outer ones by two terms)
    mn = ops.where(near, m, 0.5)
    up = _two_terms(ops, a, b, mn + STEP, y)
    down = _two_terms(ops, a, b, mn - STEP, y)
    slope = (up - down) / (2 * STEP)
    curve = (up + down - 2 * limit) / (2 * STEP * STEP)
    return ops.where(near, limit + e * (slope + e * curve), two)


def hyp2f1(ops: ArrayOps, a: Any, b: Any, c: Any, x: Any) -> Any:
    """2F1(a, b; c; x) on arrays of one shape (module docstring)."""
    terminating = _pole(ops, a) | _pole(ops, b)
    difference = a - b
    inverse = (x < -2.0) & (ops.abs(difference - ops.round(difference)) >= 0.05) & ~terminating
    far = ops.where(inverse, x, -4.0)
    w = 1.0 / far
    by_inverse = (_gamma(ops, c) * _gamma(ops, b - a) * _rgamma(ops, b) * _rgamma(ops, c - a)
                  * ops.power(-far, -a) * series(ops, a, a - c + 1.0, a - b + 1.0, w)
                  + _gamma(ops, c) * _gamma(ops, a - b) * _rgamma(ops, a) * _rgamma(ops, c - b)
                  * ops.power(-far, -b) * series(ops, b, b - c + 1.0, b - a + 1.0, w))
    near_one = (x > 0.9) & (x < 1) & ~terminating & (ops.abs(c - a - b) < FAR_D)
    pfaff = (x < -0.5) & ~inverse & ~terminating
    plain = terminating | ((x >= -0.5) & (x < 1) & ~near_one)
    # each lane's series argument; 0 where another region answers (no wasted terms)
    z = ops.where(pfaff, x / (x - 1.0), ops.where(plain, x, 0.0))
    direct = series(ops, a, ops.where(pfaff, c - b, b), c, z)
    value = ops.where(pfaff, ops.power(1.0 - x, -a) * direct, direct)
    value = ops.where(near_one, _near_one(ops, a, b, c, ops.where(near_one, x, 0.95)), value)
    d = c - a - b
    # (+ 0.0: a zero from a pole of Gamma(c - a) or Gamma(c - b) is SciPy's +0)
    gauss = ops.where(d > 0, ops.exp(ops.lgamma(c) + ops.lgamma(d) - ops.lgamma(c - a)
                                     - ops.lgamma(c - b))
                      * _gamma_sign(ops, c) * _gamma_sign(ops, d) * _gamma_sign(ops, c - a)
                      * _gamma_sign(ops, c - b) + 0.0, ops.where(ops.isnan(d), math.nan,
                                                                 math.inf))
    value = ops.where((x == 1) & ~terminating, gauss, ops.where(inverse, by_inverse, value))
    # a polynomial is defined at any finite x (x > 1 too, as SciPy); SciPy's 1 at x = 0
    # and for a = 0 or b = 0 (c != 0) whatever the other arguments, NaN included
    undefined = ops.where(terminating, ops.abs(x) == math.inf, x > 1)
    undefined = undefined | _pole(ops, c) | ops.isnan(x)
    one = (x == 0) | (((a == 0) | (b == 0)) & (c != 0))
    return ops.where(one, 1.0, ops.where(undefined, math.nan, value))


NUMPY_OPS = ArrayOps(gammaln, digamma)


def hyp2f1_numpy(a: Any, b: Any, c: Any, x: Any) -> np.ndarray:
    """The NumPy kernel: float64 arrays broadcast together."""
    arrays = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, c, x)))
    with np.errstate(all="ignore"):
        return np.asarray(hyp2f1(NUMPY_OPS, *arrays), dtype=np.float64)


def hyp2f1_torch(torch: Any, a: Any, b: Any, c: Any, x: Any) -> Any:
    """The torch kernel: the same algorithm on tensors broadcast together."""
    return hyp2f1(TorchOps(torch), *torch.broadcast_tensors(a, b, c, x))
