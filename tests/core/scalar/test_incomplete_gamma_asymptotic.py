"""gammainc / gammaincc for large a near x = a (Temme's uniform expansion,
scalar/incomplete_gamma_asymptotic.py, on py, c and gpu alike): against mpmath where it
can answer (a up to 1e4), against SciPy (Cephes' igam: the same expansion) up to a = 1e17;
and at a = +inf."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import available_linkers
from workbench.core.scalar.incomplete_gamma_asymptotic import log1pmx_over

mpmath = pytest.importorskip("mpmath")
sp = pytest.importorskip("scipy.special")

LINKERS = [name for name in ("py", "c") if name in available_linkers()] + (
    ["gpu"] if importlib.util.find_spec("torch") and "gpu" in available_linkers() else [])
pytestmark = pytest.mark.filterwarnings("ignore:workbench GPU linker")


def _both(linker: str, a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    av, xv = wt.dvector("a"), wt.dvector("x")
    f = wb.function([av, xv], [wt.gammainc(av, xv), wt.gammaincc(av, xv)], linker=linker)
    p, q = f(a, x)
    return p, q


def _exact(a: float, x: float) -> tuple[float, float]:
    """P and Q by the series sum x^n / ((a + 1) ... (a + n)), with digits enough for Q = 1 - P
    down to exp(-a 0.045) (|x - a| < 0.3 a)."""
    digits = 40 + int(0.05 * a / 2.3)
    with mpmath.workdps(digits):
        a_, x_ = mpmath.mpf(a), mpmath.mpf(x)
        term = total = 1 / a_
        k = 0
        while abs(term) > total * mpmath.mpf(10) ** -(digits + 5):
            k += 1
            term = term * x_ / (a_ + k)
            total += term
        p = total * mpmath.exp(a_ * mpmath.log(x_) - x_ - mpmath.loggamma(a_))
        return float(p), float(1 - p)


@pytest.mark.parametrize("linker", LINKERS)
def test_large_a_near_x_against_mpmath(linker: str) -> None:
    """a in (20, 1e4), x - a within 0.3 a or 5 sqrt(a): relative error of P and Q within
    3e-13 (measured 1.0e-13 on py and c, SciPy's own 8e-14: in the tails the relative
    error grows with a eta^2 / 2, the function's condition). Before: 1e-4 at a = 3e5."""
    rng = np.random.default_rng(8)
    n = 120
    a = 10 ** rng.uniform(np.log10(20.5), 4, n)
    spread = np.where(rng.random(n) < 0.5, 0.3, np.minimum(0.3, 5 / np.sqrt(a)))
    x = a * (1 + rng.uniform(-1, 1, n) * spread)
    want = np.array([_exact(u, v) for u, v in zip(a, x)])
    p, q = _both(linker, a, x)
    for got, ref in ((p, want[:, 0]), (q, want[:, 1])):
        tiny = ref < 1e-300
        assert (np.abs(got - ref) / ref)[~tiny].max() <= 3e-13


@pytest.mark.parametrize("linker", LINKERS)
def test_huge_a_at_and_near_x_equal_a(linker: str) -> None:
    """a = x from 3e5 to 1e17 (P(1e7, 1e7) was 0.2366 on py and c, true 0.50004; NaN at
    1e17) and x = a + k sqrt(a), |k| <= 4.4: against SciPy, which uses the same expansion
    there, within 1e-13. (Beyond |k| = 4.5 SciPy leaves it for a series cut at 2000 terms:
    P(3.6e10, a - 4.78 sqrt(a)) = 4.5e-8 there, where ours gives 8.7e-7, close to the
    normal limit Phi(-4.78) = 8.8e-7.)"""
    a = np.array([3e5, 1e6, 1e7, 1e8, 1e10, 1e12, 1e17])
    p, q = _both(linker, a, a)
    np.testing.assert_allclose(p, sp.gammainc(a, a), rtol=1e-14)
    np.testing.assert_allclose(q, sp.gammaincc(a, a), rtol=1e-14)
    rng = np.random.default_rng(2)
    a = 10 ** rng.uniform(4, 17, 200)
    x = a + rng.uniform(-4.4, 4.4, 200) * np.sqrt(a)
    p, q = _both(linker, a, x)
    np.testing.assert_allclose(p, sp.gammainc(a, x), rtol=1e-13)
    np.testing.assert_allclose(q, sp.gammaincc(a, x), rtol=1e-13)
    np.testing.assert_allclose(_both(linker, np.array([1e6]), np.array([0.999e6]))[0],
                               [0.15865521357430365], rtol=1e-13)


@pytest.mark.parametrize("linker", LINKERS)
def test_infinite_a(linker: str) -> None:
    """P(inf, x) = 0 and Q(inf, x) = 1 for finite x (the py linker gave P(1, x)), NaN at
    (inf, inf) as SciPy."""
    p, q = _both(linker, np.full(3, np.inf), np.array([1.0, 1e300, np.inf]))
    np.testing.assert_array_equal(p, [0.0, 0.0, np.nan])
    np.testing.assert_array_equal(q, [1.0, 1.0, np.nan])


def test_log1pmx_keeps_its_relative_accuracy_near_zero() -> None:
    t = np.array([1e-300, -1e-12, 1e-6, -0.01, 0.2, -0.3, 0.5, -0.5, 0.7, -0.9, 5.0])
    with mpmath.workdps(40):
        want = np.array([float(mpmath.log1p(v) - v) for v in t])
    np.testing.assert_allclose(log1pmx_over(np, t), want, rtol=3e-16)
