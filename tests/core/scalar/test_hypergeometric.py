"""hyp2f1 (scalar/hypergeometric.py) against 40-digit mpmath on every region, on the py
and c linkers and torch: x near 1 with c - a - b small or near an integer (where the
defining series does not converge), its derivative in x there, and the refusal of the
derivatives in a, b and c."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import available_linkers
from workbench.core.gradcheck import verify_grad
from workbench.core.graph.type import NullTypeGradError

sp = pytest.importorskip("scipy.special")
mpmath = pytest.importorskip("mpmath")

HOST_LINKERS = [name for name in ("py", "c") if name in available_linkers()]
ALL_LINKERS = HOST_LINKERS + (["gpu"] if importlib.util.find_spec("torch") else [])


def exact(fn, *arrays) -> np.ndarray:
    mpmath.mp.dps = 40
    return np.array([float(fn(*map(mpmath.mpf, map(float, t)))) for t in zip(*arrays)])


def run(linker: str, *arrays) -> np.ndarray:
    vs = [wt.dvector() for _ in range(4)]
    return wb.function(vs, wt.hyp2f1(*vs), linker=linker)(*arrays)


#: x region -> (bound on the error against mpmath, relative with floor 1e-3; against
#: SciPy, whose own error reaches 7e-12 on [-2, -0.5]; most NaNs allowed of 300)
REGIONS = {(-0.5, 0.5): (1e-13, 5e-12, 0), (-2.0, -0.5): (5e-10, 5e-10, 0),
           (-1000.0, -2.0): (5e-12, 1e-11, 30), (0.5, 0.9): (1e-11, 1e-11, 0),
           (0.9, 0.999999): (1e-11, 1e-9, 0)}


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.parametrize("linker", ALL_LINKERS)
@pytest.mark.parametrize("region", sorted(REGIONS))
def test_hyp2f1_accuracy(region, linker: str) -> None:
    """a, b in [-5, 5], c in [0.5, 10]. Where a series would not converge in 3000 terms
    (x < -2 with a - b within 0.05 of an integer: Pfaff's series near z = 1) the result is
    NaN, never a wrong value: at most `nans` of 300 here."""
    mp_bound, scipy_bound, nans = REGIONS[region]
    rng = np.random.default_rng(7)
    n = 300
    a, b = rng.uniform(-5, 5, n), rng.uniform(-5, 5, n)
    c, x = rng.uniform(0.5, 10, n), rng.uniform(*region, n)
    got = run(linker, a, b, c, x)
    converged = ~np.isnan(got)
    assert (~converged).sum() <= nans
    want = exact(mpmath.hyp2f1, a, b, c, x)
    scale = np.maximum(np.abs(want), 1e-3)
    assert (np.abs(got - want) / scale)[converged].max() <= mp_bound
    assert (np.abs(got - sp.hyp2f1(a, b, c, x)) / scale)[converged].max() <= scipy_bound


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_hyp2f1_near_one_with_c_minus_a_minus_b_near_an_integer(linker: str) -> None:
    """1 - x down to 1e-10 and c - a - b within 0 .. 0.3 of -2 .. 2: the transformation to
    1 - x, and the limiting digamma form where c - a - b is within 3e-6 of an integer
    (relative error measured at most 5e-10 there; SciPy's reaches 1e-9)."""
    rng = np.random.default_rng(3)
    n = 400
    a, b = rng.uniform(-2, 3, n), rng.uniform(-2, 3, n)
    offset = rng.choice([0.0, 1e-12, 1e-9, 1e-7, 2e-6, 5e-6, 1e-4, 0.3], n)
    c = a + b + rng.choice([-2, -1, 0, 1, 2], n) + offset
    c = np.where(c <= 0, c + 4, c)  # away from the poles of c
    x = 1 - 10 ** rng.uniform(-10, -1, n)
    got = run(linker, a, b, c, x)
    want = exact(mpmath.hyp2f1, a, b, c, x)
    assert not np.isnan(got).any()
    assert (np.abs(got - want) / np.abs(want)).max() <= 1e-9


def _cancelling_regions(rng: np.random.Generator, n: int):
    """Where the value is much smaller than the terms of the textbook transformations:
    c at or near a or b (2F1(a, b; a; x) = (1 - x)^-b), large |b|; x in [-1000, 1)."""
    a, b = rng.uniform(-6, 8, n), rng.uniform(-20, 20, n)
    delta = rng.choice([0.0, 1e-12, -1e-12, 1e-8, -1e-8, 1e-4, -1e-4, 1e-2, -0.3], n)
    far = -10 ** rng.uniform(0, 3, n)
    yield "c = a + delta, x < -1", a, b, a + delta, far
    yield "c = b + delta, x < -1", b, a, a + delta, far
    yield "c = a + delta, -1 <= x < 1", a, b, a + delta, rng.uniform(-1, 0.999, n)
    a, b, c = rng.uniform(-5, 5, n), rng.uniform(-50, 50, n), rng.uniform(0.5, 10, n)
    yield "|b| <= 50, x < -1", a, b, c, far
    yield "|b| <= 50, -1 <= x < 1", a, b, c, rng.uniform(-1, 0.999, n)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_hyp2f1_where_the_transformations_cancel(linker: str) -> None:
    """Each of Pfaff's two forms, Euler's, the series and the transformation to 1 - x is
    evaluated where it applies, and the one whose sums cancelled least is kept: relative
    error within 1e-12 of 40-digit mpmath (measured: 6.3e-13 on torch, 3.6e-13 on py; it
    was 1e1 .. 1e2 here, negative values and NaN, before), no NaN."""
    rng = np.random.default_rng(19)
    for region, a, b, c, x in _cancelling_regions(rng, 120):
        got = run(linker, a, b, c, x)
        want = exact(mpmath.hyp2f1, a, b, c, x)
        error = np.abs(got - want) / np.abs(want)
        assert not np.isnan(got).any(), region
        assert error.max() <= 1e-12, (region, error.max())


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.parametrize("linker", ALL_LINKERS)
def test_hyp2f1_exact_reductions_and_the_sign_of_its_infinity_at_one(linker: str) -> None:
    """2F1(a, b; a; x) = (1 - x)^-b and 2F1(a, b; b; x) = (1 - x)^-a whatever x <= 1 (the
    audit's cases, once off by 10 orders of magnitude and negative); at x = 1 with
    c - a - b <= 0 an infinity with the sign of Gamma(c) Gamma(a + b - c) / (Gamma(a) Gamma(b))
    (SciPy's: -inf for (-2.5, 7.5; 1))."""
    a = np.array([-2.5, 0.5, -3.5, -2.5, 3.0, 0.7])
    b = np.array([12.5, 12.5, 12.5, 7.5, -4.5, 2.5])
    c = np.array([-2.5, 0.5, -3.5, -2.5, -4.5, 2.5])
    x = np.array([-30.0, -30.0, -30.0, -10.0, -1e3, 0.999])
    want = np.where(c == a, (1 - x) ** -b, (1 - x) ** -a)
    np.testing.assert_allclose(run(linker, a, b, c, x), want, rtol=1e-14)
    a1 = np.array([-2.5, 7.5, -1.5, 1.5, -0.5, 2.0, -1.5])
    b1 = np.array([7.5, -2.5, 2.5, 1.5, 2.5, 3.0, -2.5])
    c1 = np.array([1.0, 1.0, 1.0, 3.0, 1.0, 2.5, -4.5])
    got = run(linker, a1, b1, c1, np.ones(7))
    want = sp.hyp2f1(a1, b1, c1, 1.0)
    assert np.isinf(want).all()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("linker", HOST_LINKERS)
def test_hyp2f1_derivative_in_x_near_one(linker: str) -> None:
    """(a b / c) 2F1(a + 1, b + 1; c + 1; x): finite and accurate where it used to be NaN
    (c - a - b small: the derivative's c - a - b is one less, near -1)."""
    a, b = np.array([0.5, 1.5, -0.3, 2.0]), np.array([0.7, 0.25, 1.1, 3.0])
    c = a + b + np.array([1e-3, 0.0, 2e-7, -0.5])
    x = np.array([0.999, 0.9999, 0.95, 0.99])
    xv = wt.dvector("x")
    grad = wb.function([xv], wb.grad(wt.hyp2f1(a, b, c, xv).sum(), xv), linker=linker)(x)
    want = exact(lambda a, b, c, x: a * b / c * mpmath.hyp2f1(a + 1, b + 1, c + 1, x),
                 a, b, c, x)
    np.testing.assert_allclose(grad, want, rtol=1e-9)
    verify_grad(lambda x: wt.hyp2f1(0.5, 0.7, 1.2 + 1e-7, x),
                [np.array([0.93, 0.97, 0.995])], rng=np.random.default_rng(0))


def test_hyp2f1_special_values_and_gradient_in_x() -> None:
    vs = [wt.dvector() for _ in range(4)]
    f = wb.function(vs, wt.hyp2f1(*vs))
    got = f(np.array([1.0, 1.0, 0.5, 1.0, -2.0]), np.array([1.0, 2.0, 0.5, 1.0, 1.5]),
            np.array([3.0, 2.0, 2.0, -1.0, 2.0]), np.array([1.0, 1.0, 1.5, 0.5, 1.0]))
    np.testing.assert_allclose(got[[0, 4]], [2.0, 0.125])  # Gauss's sum; a polynomial
    assert np.isinf(got[1]) and np.isnan(got[2]) and np.isnan(got[3])  # c-a-b <= 0, x > 1, pole
    rng = np.random.default_rng(1)
    verify_grad(lambda x: wt.hyp2f1(0.7, -1.3, 2.2, x), [rng.uniform(-3, 0.8, (4, 3))],
                rng=rng)


@pytest.mark.parametrize("position", [0, 1, 2])
def test_hyp2f1_derivatives_in_a_b_c_are_refused_naming_them(position: int) -> None:
    params = [wt.dscalar(name) for name in "abc"]
    args = [*params, wt.dscalar("x")]
    with pytest.raises(NullTypeGradError,
                       match=f"the derivative in {'abc'[position]} .* is not implemented"):
        wb.grad(wt.hyp2f1(*args), params[position])
