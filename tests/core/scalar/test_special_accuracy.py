"""Accuracy of the logistic, log-sum and error-function inverses over the whole float range,
against mpmath, on every linker, in float64 and float32.

Each function is evaluated on log-spaced grids that reach the extremes of the dtype
(subnormals to the largest finite value, both signs where the function is defined there)
and compared with 40-digit mpmath: the relative error must stay within BOUND (an absolute
floor of one subnormal step where the result underflows; for logaddexp and logaddexp2,
whose results cross zero, relative to max(|result|, 1)). Their values at +-inf and NaN
are SciPy's: tests/core/scalar/test_special_limits.py.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import available_linkers

mpmath = pytest.importorskip("mpmath")
sp = pytest.importorskip("scipy.special")

HAS_GPU = importlib.util.find_spec("torch") is not None and "gpu" in available_linkers()
LINKERS = [name for name in ("py", "c") if name in available_linkers()] + (
    ["gpu"] if HAS_GPU else [])
pytestmark = pytest.mark.filterwarnings("ignore:workbench GPU linker")

#: the largest relative error allowed, by dtype (float32: 2 ulp, the C sigmoid computes
#: in float; the others in double, rounded once)
BOUND = {"float64": 1e-15, "float32": 2.4e-7}
SUBNORMAL = {"float64": 5e-324, "float32": 1.4e-45}


def _span(dtype: str, n: int = 300) -> np.ndarray:
    """Positive values from the smallest subnormal to the largest finite one."""
    info = np.finfo(dtype)
    with np.errstate(over="ignore"):  # (10 ** log10(max) rounds above max: the last is inf)
        values = np.geomspace(float(info.smallest_subnormal), float(info.max), n)
    values[-1] = float(info.max)
    return values.astype(dtype)


def _near(point: float, dtype: str, n: int = 100) -> np.ndarray:
    """point +- log-spaced offsets from one ulp to 1/4."""
    offsets = np.geomspace(float(np.finfo(dtype).eps), 0.25, n)
    return np.concatenate([point - offsets, point + offsets]).astype(dtype)


def _log1mexp(x):
    return mpmath.log(-mpmath.expm1(x)) if x > -0.5 else mpmath.log1p(-mpmath.exp(x))


def _erfcx(x):
    if x > 1e8:  # (mpmath's erfc gives up there) the asymptotic series, to 1e-32
        return (1 - 1 / (2 * x * x)) / (x * mpmath.sqrt(mpmath.pi))
    return mpmath.erfc(x) * mpmath.exp(x * x)


def _erfcinv(q):
    """The root of erfc(x) = q (mpmath's erfinv(1 - q) would need 330 digits for q near
    5e-324), started from SciPy's value, which is off by at most a few ulp there."""
    if q == 0:
        return mpmath.inf
    start = float(sp.erfcinv(float(q))) if float(q) > 1e-300 else 27.0
    return mpmath.findroot(lambda x: mpmath.log(mpmath.erfc(x)) - mpmath.log(q), start)


def _erfinv(y):
    return mpmath.erfinv(y) if abs(y) <= 0.5 else mpmath.sign(y) * _erfcinv(1 - abs(y))


def _logaddexp(x, y):
    high, low = max(x, y), min(x, y)
    return high + mpmath.log1p(mpmath.exp(low - high))


def _logaddexp2(x, y):
    high, low = max(x, y), min(x, y)
    return high + mpmath.log1p(mpmath.power(2, low - high)) / mpmath.log(2)


def _pairs(first: np.ndarray, second: np.ndarray, n: int = 1500) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(20261127)
    return rng.choice(first, n), rng.choice(second, n)


def _grid(name: str, dtype: str) -> tuple[np.ndarray, ...]:
    span = _span(dtype)
    both = np.concatenate([-span, [0.0], span]).astype(dtype)
    below_one = span[span < 1]
    if name in ("expit", "log1pexp"):
        return (both,)
    if name == "logit":
        return (np.concatenate([below_one[below_one <= 0.5], _near(0.5, dtype),
                                (1 - _near(0.0, dtype)[100:]).astype(dtype)]),)
    if name == "log1mexp":
        return (-span,)
    if name == "erfcx":
        return (np.concatenate([span, -span[span < 26.5]]).astype(dtype),)
    if name == "erfinv":
        inside = np.concatenate([below_one, 1 - below_one[below_one > 1e-16]]).astype(dtype)
        return (np.concatenate([inside, -inside]),)
    if name == "erfcinv":
        return (np.concatenate([below_one, _near(1.0, dtype), 2 - below_one[below_one > 1e-16],
                                [1.0, 1.5]]).astype(dtype),)
    if name in ("logaddexp", "logaddexp2"):
        return _pairs(both, both)
    if name == "xlogy":
        return _pairs(np.concatenate([-span, span]), span)
    if name == "xlog1py":
        return _pairs(np.concatenate([-span, span]),
                      np.concatenate([span, -below_one, (-1 + _near(0.0, dtype)[100:])
                                      .astype(dtype)]))
    raise KeyError(name)


#: name -> the function at 40 digits
REFERENCE = {
    "expit": lambda x: 1 / (1 + mpmath.exp(-x)),
    "log1pexp": lambda x: mpmath.log1p(mpmath.exp(x)),
    "logit": lambda p: mpmath.log(p) - mpmath.log1p(-p),
    "log1mexp": _log1mexp,
    "erfcx": _erfcx,
    "erfinv": _erfinv,
    "erfcinv": _erfcinv,
    "logaddexp": _logaddexp,
    "logaddexp2": _logaddexp2,
    "xlogy": lambda x, y: x * mpmath.log(y),
    "xlog1py": lambda x, y: x * mpmath.log1p(y),
}
CROSSING_ZERO = {"logaddexp", "logaddexp2"}


@functools.cache
def _case(name: str, dtype: str) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    inputs = _grid(name, dtype)
    mpmath.mp.dps = 40
    with mpmath.workdps(40):
        want = np.array([float(REFERENCE[name](*(mpmath.mpf(float(v)) for v in args)))
                         for args in zip(*inputs)])
    with np.errstate(over="ignore"):
        return inputs, want.astype(dtype).astype(np.float64)


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_accuracy_over_the_whole_range(name: str, dtype: str, linker: str) -> None:
    inputs, want = _case(name, dtype)
    variables = [wt.tensor(dtype, shape=(None,)) for _ in inputs]
    got = wb.function(variables, getattr(wt, name)(*variables), linker=linker)(*inputs)
    assert got.dtype == dtype
    got = got.astype(np.float64)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])  # overflow where it must
    scale = np.abs(want)
    if name in CROSSING_ZERO:
        scale = np.maximum(scale, 1.0)
    with np.errstate(invalid="ignore"):  # (inf - inf where both overflow: not counted)
        error = np.abs(got - want) - SUBNORMAL[dtype]
    relative = np.where(finite, np.maximum(error, 0) / np.where(scale > 0, scale, 1.0), 0.0)
    worst = int(np.argmax(relative))
    assert relative[worst] <= BOUND[dtype], (
        f"{name} on {linker} ({dtype}): relative error {relative[worst]:.3g} at "
        f"{[float(i[worst]) for i in inputs]}: got {got[worst]!r}, want {want[worst]!r}")
