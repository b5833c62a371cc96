"""Special functions at their limits, on every linker: overflow, underflow, poles, signed
zeros, infinities and NaN, against SciPy.

Each function is evaluated on a grid of special values (+-0, subnormals, +-1e-300,
integers, half-integers, +-1e15, +-1e300, +-1e308, +-inf, NaN; every pair of them for a
function of two inputs) and must give SciPy's value: equal infinities and zeros with equal
signs, NaN where SciPy gives NaN, finite values to 1e-12 relative. Where SciPy's value is an
artifact (an intermediate that overflows although the function does not), the
mathematical value is expected instead: each such departure is listed in DEPARTURES with
its reason and its value from 40-digit mpmath.
"""

from __future__ import annotations

import importlib.util
import itertools
import math

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import available_linkers

sp = pytest.importorskip("scipy.special")
mpmath = pytest.importorskip("mpmath")

HAS_GPU = importlib.util.find_spec("torch") is not None and "gpu" in available_linkers()
LINKERS = [name for name in ("py", "c") if name in available_linkers()] + (
    ["gpu"] if HAS_GPU else [])
pytestmark = pytest.mark.filterwarnings("ignore:workbench GPU linker")

INF, NAN, TINY = math.inf, math.nan, 5e-324
#: the special values every function of one input is evaluated at
EDGES = (0.0, -0.0, TINY, -TINY, 1e-310, -1e-310, 1e-300, -1e-300, 1.0, -1.0, -3.0, -2.0,
         2.0, 3.0, 0.5, -0.5, 1.5, -1.5, -2.5, 2.5, 1e15, -1e15, 1e300, -1e300, 1e308,
         -1e308, INF, -INF, NAN)
#: the values a function of two inputs takes in each argument (all pairs are evaluated)
PAIR_EDGES = (0.0, -0.0, 1e-310, -1e-310, 1e-300, 1.0, -1.0, -3.0, -2.0, 2.0, 0.5, -0.5,
              -2.5, 1e15, -1e15, 1e300, -1e300, 1e308, INF, -INF, NAN)


def _mp(fn, *args: float, digits: int = 40) -> float:
    """fn of mpmath numbers at `digits` digits, as a float."""
    mpmath.mp.dps = digits
    return float(fn(*(mpmath.mpf(a) for a in args)))


def _loggamma(x: float) -> float:
    return _mp(lambda t: mpmath.log(abs(mpmath.gamma(t))), x)


def _log_abs_beta(a: float, b: float) -> float:
    """log |B(a, b)| at 400 digits (exact integer arithmetic up to 1e308; mpmath takes the
    limit where Gamma's poles cancel)."""
    if _both_poles(a, b):
        return INF
    return _mp(lambda x, y: mpmath.log(abs(mpmath.beta(x, y))), a, b, digits=400)


def _both_poles(a: float, b: float) -> bool:
    return a <= 0 and b <= 0 and a == math.floor(a) and b == math.floor(b)


def _beta(a: float, b: float) -> float:
    """B(a, b) at 400 digits; where both are non-positive integers SciPy's (-1)^b inf (its
    rule for small integers: mpmath's inf has no sign), a zero with the sign of
    Gamma(a) Gamma(b) (SciPy's)."""
    if _both_poles(a, b):
        return math.copysign(INF, 1 - 2 * (b % 2))
    mpmath.mp.dps = 400
    value = mpmath.beta(mpmath.mpf(a), mpmath.mpf(b))
    if value == 0:  # a + b a pole
        return math.copysign(0.0, mpmath.gamma(a) * mpmath.gamma(b))
    return float(value)


def _subnormal(x: np.ndarray) -> np.ndarray:
    return (x != 0) & (np.abs(x) < 2.2250738585072014e-308)


def _beta_artifacts(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where SciPy's B(a, b) is an artifact: a subnormal argument (Gamma(a) overflows an
    intermediate: inf or NaN), both arguments >= 1e300 or one +inf beside a finite one
    (inf - inf: NaN; B tends to 0), or a non-positive integer below -2^31 with an integer
    partner (its int cast fails: inf, where the limit (-1)^p B(1 - n - p, p) is finite)."""
    with np.errstate(invalid="ignore"):
        subnormal = (_subnormal(a) & np.isfinite(b)) | (_subnormal(b) & np.isfinite(a))
        subnormal &= ~((a == np.floor(a)) & (a <= 0)) & ~((b == np.floor(b)) & (b <= 0))
        huge = (np.minimum(a, b) >= 1e300) & ~(np.isinf(a) & np.isinf(b))
        huge |= (np.isposinf(a) & (b > 0) & np.isfinite(b))
        huge |= (np.isposinf(b) & (a > 0) & np.isfinite(a))
        integers = np.isfinite(a) & np.isfinite(b) & (a == np.floor(a)) & (b == np.floor(b))
        beyond_int = integers & (np.minimum(a, b) < -2.0 ** 31)
        return subnormal | huge | beyond_int


#: name -> [(why SciPy's value is not the function's, where (a mask of the arguments),
#: the function's value there, from mpmath)]
DEPARTURES = {
    "gammaln": [("SciPy's Gamma(x) overflows an intermediate; log |Gamma| = -log |x| is finite",
                 _subnormal, _loggamma)],
    "i0": [("SciPy's exp(x) overflows from 709.8; I0 itself only from 713.99",
            lambda x: (np.abs(x) > 709.8) & (np.abs(x) < 713.98),
            lambda x: _mp(lambda t: mpmath.besseli(0, t), x))],
    "i1": [("SciPy's exp(x) overflows from 709.8; I1 itself only from 713.98",
            lambda x: (np.abs(x) > 709.8) & (np.abs(x) < 713.98),
            lambda x: _mp(lambda t: mpmath.besseli(1, t), x))],
    "erfcinv": [("SciPy's -ndtri(q / 2) / sqrt 2 halves a subnormal q to 0: inf, where "
                 "erfc(27.2) = 5e-324", lambda q: _subnormal(q) & (q > 0),
                 lambda q: _mp(lambda t: mpmath.erfinv(1 - t), q, digits=400))],
    "beta": [("an intermediate overflow or int cast in SciPy", _beta_artifacts, _beta)],
    "betaln": [("an intermediate overflow or int cast in SciPy", _beta_artifacts,
                _log_abs_beta)],
}
#: arguments added to the grid for a function: where its departures show
EXTRA = {"i0": [(712.0,), (-713.5,)], "i1": [(712.0,), (-713.5,)]}

def _log1mexp(x: np.ndarray) -> np.ndarray:
    """log(1 - e^x) (SciPy has none; PyTensor's semantics: NaN above 0, -inf at 0)."""
    return np.where(x > -math.log(2), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


#: name -> the SciPy (or NumPy) function with its semantics
UNARY = {"gamma": sp.gamma, "gammaln": sp.gammaln, "i0": sp.i0, "i1": sp.i1, "i0e": sp.i0e,
         "i1e": sp.i1e, "erfinv": sp.erfinv, "erfcinv": sp.erfcinv, "erfcx": sp.erfcx,
         "expit": sp.expit, "log1pexp": lambda x: np.logaddexp(0.0, x), "logit": sp.logit,
         "log1mexp": _log1mexp}
BINARY = {"beta": sp.beta, "betaln": sp.betaln, "xlogy": sp.xlogy, "xlog1py": sp.xlog1py,
          "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2}


def _differ(got: np.ndarray, want: np.ndarray, rtol: float) -> np.ndarray:
    """Where got and want disagree: NaN against a number, another infinity or zero (signs
    included), or finite values further apart than rtol relative."""
    nan_mismatch = np.isnan(got) != np.isnan(want)
    exact = ~np.isfinite(want) | ~np.isfinite(got) | (want == 0) | (got == 0)
    with np.errstate(invalid="ignore"):
        exact_mismatch = exact & ~np.isnan(want) & ~np.isnan(got) & (
            (got != want) | (np.signbit(got) != np.signbit(want)))
        close = np.abs(got - want) <= rtol * np.abs(want)
    return nan_mismatch | exact_mismatch | (~exact & ~np.isnan(want) & ~close)


def _expected(name: str, columns: list[np.ndarray], reference) -> np.ndarray:
    with np.errstate(all="ignore"):
        want = np.asarray(reference(*columns), dtype=np.float64).copy()
    for _, where, value in DEPARTURES.get(name, []):
        for k in np.flatnonzero(where(*columns)):
            want[k] = value(*(float(c[k]) for c in columns))
    return want


def _check(name: str, columns: list[np.ndarray], reference, linker: str,
           dtype: str = "float64") -> None:
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        inputs = [c.astype(dtype) for c in columns]
    variables = [wt.tensor(dtype, shape=(None,)) for _ in inputs]
    got = wb.function(variables, getattr(wt, name)(*variables), linker=linker)(*inputs)
    assert got.dtype == dtype
    want = _expected(name, [i.astype(np.float64) for i in inputs], reference)
    rtol = 1e-12
    if dtype == "float32":
        with np.errstate(over="ignore"):
            want, rtol = want.astype(np.float32), 1e-6
    bad = _differ(got.astype(np.float64), want.astype(np.float64), rtol)
    cases = [f"{name}({', '.join(repr(float(i[k])) for i in inputs)}) = {got[k]!r}, "
             f"want {want[k]!r}" for k in np.flatnonzero(bad)[:8]]
    assert not bad.any(), f"{bad.sum()} disagreements on {linker} ({dtype}): {cases}"


def _grid(name: str) -> list[np.ndarray]:
    extra = EXTRA.get(name, [])
    if name in UNARY:
        return [np.array(EDGES + tuple(a[0] for a in extra))]
    pairs = list(itertools.product(PAIR_EDGES, PAIR_EDGES)) + extra
    return [np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])]


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_limits_as_scipy(name: str, dtype: str, linker: str) -> None:
    reference = UNARY.get(name) or BINARY[name]
    _check(name, _grid(name), reference, linker, dtype)


# -- the modified Bessel functions up to their overflow -------------------------------------

@pytest.mark.parametrize("linker", LINKERS)
def test_bessel_up_to_overflow_and_scaled_without_underflow(linker: str) -> None:
    """I0 and I1 are finite up to 713.98 (SciPy's overflow from 709.8 is its exp(x)), then
    inf; the scaled forms follow 1 / sqrt(2 pi x) to 1e308 (no underflow), I1 odd."""
    x = np.concatenate([np.linspace(700, 713.9, 40), np.geomspace(1e3, 1e308, 40)])
    x = np.concatenate([x, -x])
    v = wt.dvector()
    f = wb.function([v], [wt.i0(v), wt.i1(v), wt.i0e(v), wt.i1e(v)], linker=linker)
    i0, i1, i0e, i1e = f(x)
    for order, plain, scaled in ((0, i0, i0e), (1, i1, i1e)):
        want = np.array([_mp(lambda t, n=order: mpmath.besseli(n, t), t) for t in x])
        want_scaled = np.array([_mp(lambda t, n=order: mpmath.besseli(n, t)
                                    * mpmath.exp(-abs(t)), t) for t in x])
        np.testing.assert_allclose(plain, want, rtol=1e-14, err_msg=f"i{order}")
        np.testing.assert_allclose(scaled, want_scaled, rtol=1e-14, err_msg=f"i{order}e")
    assert np.all(np.isinf(f(np.array([714.0, -714.0]))[0]))


# -- gamma and log-gamma ---------------------------------------------------------------------

@pytest.mark.parametrize("linker", LINKERS)
def test_gammaln_accurate_next_to_its_zeros(linker: str) -> None:
    """lgamma(x) crosses zero at 1 and 2: relative accuracy there (CPython's math.lgamma,
    which the py linker used, was 4e-6 off at 1 - 1e-10; SciPy's is 6e-7 off)."""
    near = np.geomspace(1e-16, 0.25, 200)
    x = np.concatenate([1 - near, 1 + near, 2 - near, 2 + near, [0.5, 3.0, 1e5, 1e300]])
    v = wt.dvector()
    got = wb.function([v], wt.gammaln(v), linker=linker)(x)
    want = np.array([_loggamma(t) for t in x])
    np.testing.assert_allclose(got, want, rtol=2e-15, atol=0)


@pytest.mark.parametrize("linker", LINKERS)
def test_gamma_keeps_the_sign_of_a_tiny_argument(linker: str) -> None:
    """Gamma(x) ~ 1/x overflows for |x| < 5.6e-309 with x's sign (py gave +inf for
    -1e-310), +-inf at +-0, NaN at the negative integers and -inf, +inf past 171.6."""
    x = np.array([-1e-310, -TINY, 1e-310, 0.0, -0.0, -1.0, -2.0, -INF, 171.7, -1e-300])
    v = wt.dvector()
    got = wb.function([v], wt.gamma(v), linker=linker)(x)
    np.testing.assert_array_equal(got[:9], [-INF, -INF, INF, INF, -INF, NAN, NAN, NAN, INF])
    np.testing.assert_allclose(got[9], -1e300, rtol=1e-13)  # torch: exp(lgamma(x))
    assert np.array_equal(np.signbit(got[:5]), [True, True, False, False, True])


# -- beta and log-beta ------------------------------------------------------------------------

@pytest.mark.parametrize("linker", LINKERS)
def test_betaln_with_one_negative_and_one_large_argument(linker: str) -> None:
    """log |B(a, b)| for a < 0 (not an integer) and b large: Stirling's series as for a > 0
    (lgamma(b) - lgamma(a + b) cancelled: betaln(-2.5, 1e15) was 84, not 86.29)."""
    a = np.repeat([-2.5, -0.5, -10.5, 0.5], 30)
    b = np.tile(np.geomspace(20, 1e15, 30), 4)
    x, y = wt.dvector(), wt.dvector()
    got = wb.function([x, y], [wt.betaln(x, y), wt.beta(x, y)], linker=linker)(a, b)
    np.testing.assert_allclose(got[0], [_log_abs_beta(s, t) for s, t in zip(a, b)], rtol=1e-14)
    np.testing.assert_allclose(got[1], [_beta(s, t) for s, t in zip(a, b)], rtol=1e-12)


# -- the hypergeometric function -------------------------------------------------------------

@pytest.mark.parametrize("linker", LINKERS)
def test_hyp2f1_where_scipy_defines_it_beyond_its_domain(linker: str) -> None:
    """1 at x = 0 and for a = 0 or b = 0 (c != 0), whatever the other arguments (NaN, a
    pole of c, x > 1 included); a polynomial (a or b a non-positive integer) at x > 1; NaN,
    not inf, at x = 1 with a NaN parameter; SciPy's +0 where Gamma(c - a) has a pole. The
    rest stays NaN where SciPy answers inf for an undefined value (x > 1 otherwise, c a
    non-positive integer, x = +-inf: the docstring of hyp2f1)."""
    rows = [(2.5, -0.5, -2.0, 0.0), (NAN, 1.0, 3.0, 0.0), (0.0, NAN, 1.5, 7.0),
            (-0.5, 0.0, -3.0, NAN), (0.0, 2.0, 0.5, -INF), (-2.0, -2.0, -0.5, 1.5),
            (-2.0, -0.5, 3.5, 1.5), (-3.0, 2.5, 1.0, 4.0), (-1.0, 0.5, 1.5, 1e300),
            (-0.5, NAN, 0.5, 1.0), (-0.5, -0.5, -0.5, 1.0), (0.5, 1.5, 2.5, 0.5)]
    columns = [np.array(c) for c in zip(*rows)]
    variables = [wt.dvector() for _ in columns]
    got = wb.function(variables, wt.hyp2f1(*variables), linker=linker)(*columns)
    want = sp.hyp2f1(*columns)
    assert not _differ(got, want, 1e-14).any(), (got, want)
    undefined = [(0.5, 0.5, 1.0, 1.5), (0.5, 0.5, -2.0, 0.5), (-2.0, 1.0, 1.0, -INF)]
    columns = [np.array(c) for c in zip(*undefined)]
    assert np.isnan(wb.function(variables, wt.hyp2f1(*variables), linker=linker)(*columns)).all()
