"""The Gauss hypergeometric function 2F1(a, b; c; x) for real x <= 1: one algorithm,
written once over an array namespace (`ArrayOps`: NumPy for the Python kernel, torch
for the GPU linker's); the C linker's scalar transcription is `wb_hyp2f1` in
link/c/special_math.py.

Where the value is much smaller than the terms of a transformation (c near a or b, large
|a| or |b|: errors of 10 orders of magnitude, negative values) the textbook choice of one
transformation per region cancels; so every form that applies is evaluated, each with
the summed magnitude of its terms, and the one that cancelled least is kept
(`_least_cancelling`). With y = 1 - x, d = c - a - b:
- x = 0, or a = 0 or b = 0 (c != 0): 1, whatever the other arguments (SciPy's).
- a or b a non-positive integer: a polynomial, defined at any finite x (x > 1 too; NaN
  at +-inf, where SciPy's values have no pattern).
- c == a or c == b: exactly (1 - x)^-b or (1 - x)^-a.
- x = 1: Gauss's sum Gamma(c) Gamma(d) / (Gamma(c - a) Gamma(c - b)); for d <= 0 an
  infinity with the sign of Gamma(c) Gamma(-d) / (Gamma(a) Gamma(b)) (SciPy's).
- x < 0: Pfaff's two forms (1 - x)^-a 2F1(a, c - b; c; z), (1 - x)^-b 2F1(b, c - a; c; z),
  z = x / (x - 1) in (0, 1) with 1 - z = 1 / (1 - x) exactly, each by `_unit`; and the
  series at x where it converges (x >= -1, or a or b a non-positive integer: a polynomial).
- 0 <= x < 1: `_unit` at x, Euler's (1 - x)^d 2F1(c - a, c - b; c; x), and for x <= 1/2
  Pfaff's two forms by their series (z in [-1, 0]).
- `_unit` (0 <= z < 1): the defining series, and for z > 0.9 with |d| < `FAR_D` the
  linear transformation to y (DLMF 15.8.4), two series in y that converge fast,
  ``Gamma(c) Gamma(d) / (Gamma(c-a) Gamma(c-b)) 2F1(a, b; 1-d; y)
  + y^d Gamma(c) Gamma(-d) / (Gamma(a) Gamma(b)) 2F1(c-a, c-b; 1+d; y)``; where d is
  within `NEAR_INTEGER` of an integer m those two terms cancel (each ~ 1/(d - m)):
  there the value is the quadratic in e = d - m through the limiting form with digamma
  terms at e = 0 (Abramowitz and Stegun 15.3.10 and 15.3.11 for m >= 0; m < 0 first by
  Euler's transformation ``y^d 2F1(c - a, c - b; c; x)``, whose d is -m) and the two-term
  values at e = +-`STEP`.
Measured against 40-digit mpmath (tests/core/scalar/test_hypergeometric.py): relative
error within 1e-12 for x in [-1000, 1) with a, b in [-20, 50], c near a or b included;
about 1e-9 where c - a - b (or, for x < 0, a - b) is within 3e-6 of an integer and the
transformation to y is used.
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
#: |c - a - b| from which x near 1 keeps the defining series (the Gamma functions of the
#: transformation to 1 - x overflow; the series' terms fall like n^-(c-a-b+1): fast when
#: positive, NaN (not converged) when very negative).
FAR_D = 150.0


class ArrayOps:
    """The array functions the algorithm uses (NumPy's)."""

    def __init__(self, lgamma: Any, digamma: Any) -> None:
        self.lgamma, self.digamma = lgamma, digamma
        self.where, self.log, self.abs, self.floor = np.where, np.log, np.abs, np.floor
        self.round, self.isnan, self.power, self.exp = np.round, np.isnan, np.power, np.exp
        self.isinf = np.isinf

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
        self.isinf = torch.isinf

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


def sized_series(ops: ArrayOps, a: Any, b: Any, c: Any, z: Any) -> tuple[Any, Any]:
    """(sum, sum of the terms' magnitudes) of the series of `series`: the second over the
    first's magnitude is how many times the sum cancelled (1: no cancellation)."""
    term = z * 0 + 1.0
    total, size = term, term
    for n in range(TERMS):
        term = term * (a + n) * (b + n) / ((c + n) * (n + 1)) * z
        total, size = total + term, size + ops.abs(term)
        if not ops.any(ops.abs(term) > 1e-17 * ops.abs(total)):
            break
    return ops.where(ops.abs(term) > 1e-15 * ops.abs(total), math.nan, total), size


def series(ops: ArrayOps, a: Any, b: Any, c: Any, z: Any) -> Any:
    """sum over n of (a)_n (b)_n / ((c)_n n!) z^n, until the terms stop mattering; NaN
    where TERMS terms do not get there."""
    return sized_series(ops, a, b, c, z)[0]


def _integer_d(ops: ArrayOps, a: Any, b: Any, c: Any, y: Any, m: Any) -> tuple[Any, Any]:
    """2F1(a, b; a + b + m; 1 - y) for an integer m >= 0 (A&S 15.3.10, 15.3.11):
    ``Gamma(m) Gamma(c) / (Gamma(a+m) Gamma(b+m)) sum_{n<m} (a)_n (b)_n / (n! (1-m)_n) y^n
    - (-y)^m Gamma(c) / (Gamma(a) Gamma(b)) sum_n (a+m)_n (b+m)_n / (n! (n+m)!) y^n
    [ln y - psi(n+1) - psi(n+m+1) + psi(a+n+m) + psi(b+n+m)]``; with the size of the two
    parts (|first| + |second|) beside the value."""
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
    return first - second, ops.abs(first) + ops.abs(second)


def _two_terms(ops: ArrayOps, a: Any, b: Any, c: Any, y: Any) -> tuple[Any, Any]:
    """2F1(a, b; c; 1 - y) by DLMF 15.8.4 (c - a - b not an integer), and the size of
    its terms (as `sized_series`). (c itself, not a + b + d: where c is near a or b, the
    rounding of a + b + d would be a large relative error in c - a or c - b.)"""
    d = c - a - b
    first, first_size = sized_series(ops, a, b, 1.0 - d, y)
    second, second_size = sized_series(ops, c - a, c - b, 1.0 + d, y)
    f1 = _gamma(ops, c) * _gamma(ops, d) * _rgamma(ops, c - a) * _rgamma(ops, c - b)
    f2 = ops.power(y, d) * _gamma(ops, c) * _gamma(ops, -d) * _rgamma(ops, a) * _rgamma(ops, b)
    return f1 * first + f2 * second, ops.abs(f1) * first_size + ops.abs(f2) * second_size


def _near_one(ops: ArrayOps, a: Any, b: Any, c: Any, y: Any) -> tuple[Any, Any]:
    """2F1(a, b; c; 1 - y) for 0 < y < 0.1 by the transformation to y (module
    docstring), and the size of the terms it added."""
    d = c - a - b
    m = ops.round(d)
    e = d - m
    near = ops.abs(e) < NEAR_INTEGER
    two, two_size = _two_terms(ops, a, b, ops.where(near, a + b + 0.5, c), y)
    # the limiting form at e = 0: m >= 0 directly, m < 0 after Euler's transformation
    flip = m < 0
    c0 = a + b + m  # c at e = 0
    aa, bb = ops.where(flip, c0 - a, a), ops.where(flip, c0 - b, b)
    mm = ops.where(near, ops.abs(m), 0.0)
    limit, limit_size = _integer_d(ops, aa, bb, aa + bb + mm, y, mm)
    euler = ops.where(flip, ops.power(y, ops.where(near, m, 0.0)), 1.0)
    limit, limit_size = euler * limit, ops.abs(euler) * limit_size
    # quadratic in e through e = -STEP, 0, STEP (the two outer ones by two terms)
    mn = ops.where(near, m, 0.5)
    up = _two_terms(ops, a, b, a + b + (mn + STEP), y)[0]
    down = _two_terms(ops, a, b, a + b + (mn - STEP), y)[0]
    slope = (up - down) / (2 * STEP)
    curve = (up + down - 2 * limit) / (2 * STEP * STEP)
    return (ops.where(near, limit + e * (slope + e * curve), two),
            ops.where(near, limit_size, two_size))


def _unit(ops: ArrayOps, a: Any, b: Any, c: Any, z: Any, y: Any) -> tuple[Any, Any]:
    """2F1(a, b; c; z) for 0 <= z < 1 (y = 1 - z, passed exactly): the series, and where
    z > 0.9 also the transformation to y, the one whose sums cancel less (a series that
    has not converged counts as cancelling completely); with the size of the terms summed
    (over the value's magnitude: the cancellation)."""
    terminating = _pole(ops, a) | _pole(ops, b)
    near = (z > 0.9) & ~terminating & (ops.abs(c - a - b) < FAR_D)
    direct, direct_size = sized_series(ops, a, b, c, z)
    far, far_size = _near_one(ops, a, b, c, ops.where(near, y, 0.05))
    use_far = near & (_cancellation(ops, far, far_size)
                      < _cancellation(ops, direct, direct_size))
    return ops.where(use_far, far, direct), ops.where(use_far, far_size, direct_size)


def _cancellation(ops: ArrayOps, value: Any, size: Any) -> Any:
    """size / |value|, inf where the value is NaN or 0."""
    ratio = size / ops.abs(value)
    return ops.where(ops.isnan(ratio) | (value == 0), math.inf, ratio)


def _least_cancelling(ops: ArrayOps, *candidates: tuple[Any, Any]) -> tuple[Any, Any]:
    """Of (value, size) pairs for the same function, per element the one that cancelled
    least (the first of equals)."""
    best, best_size = candidates[0]
    for value, size in candidates[1:]:
        better = _cancellation(ops, value, size) < _cancellation(ops, best, best_size)
        best, best_size = ops.where(better, value, best), ops.where(better, size, best_size)
    return best, best_size


def _scaled(ops: ArrayOps, factor: Any, pair: tuple[Any, Any]) -> tuple[Any, Any]:
    return factor * pair[0], ops.abs(factor) * pair[1]


def _pick(ops: ArrayOps, where: Any, first: tuple[Any, Any],
          second: tuple[Any, Any]) -> tuple[Any, Any]:
    return ops.where(where, first[0], second[0]), ops.where(where, first[1], second[1])


def _excluded(ops: ArrayOps, where: Any, pair: tuple[Any, Any]) -> tuple[Any, Any]:
    """The pair, with an infinite size (never the least cancelling) outside `where`."""
    return pair[0], ops.where(where, pair[1], math.inf)


def hyp2f1(ops: ArrayOps, a: Any, b: Any, c: Any, x: Any) -> Any:
    """2F1(a, b; c; x) on arrays of one shape (module docstring)."""
    terminating = _pole(ops, a) | _pole(ops, b)
    # exact: 2F1(a, b; a; x) = (1 - x)^-b, 2F1(a, b; b; x) = (1 - x)^-a
    equal_a, equal_b = (c == a) & ~terminating, (c == b) & ~terminating & (c != a)
    exact = ops.power(1.0 - x, -ops.where(equal_a, b, a))
    inside = ~equal_a & ~equal_b & ((x < 1) | terminating)  # (x = 1: Gauss's sum below)
    negative = inside & (x < 0)
    positive = inside & (x >= 0) & (x <= 1)
    # Pfaff's two forms (1 - x)^-a 2F1(a, c - b; c; z), (1 - x)^-b 2F1(b, c - a; c; z) with
    # z = x / (x - 1): for x < 0, z in (0, 1) and 1 - z = 1 / (1 - x) passed exactly; for
    # 0 <= x <= 1/2, z in [-1, 0], by the series
    pfaff = negative | (positive & (x <= 0.5))
    xp = ops.where(pfaff, x, 0.0)
    y = 1.0 / (1.0 - xp)
    z = ops.where(ops.isinf(xp), 1.0, xp * -y)
    zn, zs = ops.where(negative, z, 0.0), ops.where(negative, 0.0, z)
    by_a = _pick(ops, negative, _unit(ops, a, c - b, c, zn, y),
                 sized_series(ops, a, c - b, c, zs))
    by_b = _pick(ops, negative, _unit(ops, b, c - a, c, zn, y),
                 sized_series(ops, b, c - a, c, zs))
    # at x itself: the series where it converges (-1 <= x < 0, or a polynomial), for
    # 0 <= x < 1 the series or the transformation to 1 - x (`_unit`), and there also
    # Euler's (1 - x)^(c - a - b) 2F1(c - a, c - b; c; x)
    beyond = terminating & (x > 1) & ~ops.isinf(x)  # (a polynomial: x > 1 too)
    at_x = (negative & ((x >= -1.0) | terminating)) | beyond
    xs, xu = ops.where(at_x, x, 0.0), ops.where(positive, x, 0.0)
    plain = _pick(ops, negative | beyond, sized_series(ops, a, b, c, xs),
                  _unit(ops, a, b, c, xu, 1.0 - xu))
    euler = _scaled(ops, ops.power(1.0 - xu, c - a - b),
                    _unit(ops, c - a, c - b, c, xu, 1.0 - xu))
    value = _least_cancelling(ops, _excluded(ops, at_x | positive, plain),
                              _excluded(ops, pfaff, _scaled(ops, ops.power(y, a), by_a)),
                              _excluded(ops, pfaff, _scaled(ops, ops.power(y, b), by_b)),
                              _excluded(ops, positive & (x < 1), euler))[0]
    value = ops.where(equal_a | equal_b, exact, value)
    d = c - a - b
    # Gauss's sum (+ 0.0: a zero from a pole of Gamma(c - a) or Gamma(c - b) is SciPy's
    # +0); where d <= 0 an infinity with the sign of Gamma(c) Gamma(-d) / (Gamma(a) Gamma(b)),
    # the leading term of 2F1 as x -> 1 (SciPy's)
    gauss = ops.where(d > 0, ops.exp(ops.lgamma(c) + ops.lgamma(d) - ops.lgamma(c - a)
                                     - ops.lgamma(c - b))
                      * _gamma_sign(ops, c) * _gamma_sign(ops, d) * _gamma_sign(ops, c - a)
                      * _gamma_sign(ops, c - b) + 0.0,
                      ops.where(ops.isnan(d), math.nan,
                                _gamma_sign(ops, c) * _gamma_sign(ops, -d) * _gamma_sign(ops, a)
                                * _gamma_sign(ops, b) * math.inf))
    value = ops.where((x == 1) & ~terminating & ~equal_a & ~equal_b, gauss, value)
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
