"""Special functions as declared scalar Ops (SciPy's names and conventions).

One `declare` per function: NumPy kernel (`special_kernels`, no SciPy at run time), C
function (the C library's where it has one, else the backend's own ``wb_*`` of
`workbench.core.link.c.special_math`), torch function (`torch.special`, or a small
torch expression), derivative, test domain and SciPy reference (used by tests only).

On torch (the gpu linker), betaln, beta, logit and polygamma (n >= 1) are the NumPy
kernels' algorithm written once over both namespaces (`special_kernels.betaln_over`:
Stirling's series where one argument is large, SciPy's values at the poles; `logit_over`:
torch's logit loses all digits next to 1/2; `hurwitz_zeta_over`: torch's trigamma is
5e-10 off), erfcx below 0 splits x^2 exactly as the NumPy kernel does; betaln,
beta, gamma, digamma, erfcinv, erfcx, i0, i1, i0e, i1e, logit, xlogy and xlog1py compute
in float64 on torch and cast back, so a float32 graph neither overflows an intermediate
(i0 near 89, erfcinv near 1e-45) nor loses float32 digits (torch's float32 erfcx was 15
ulp off at -4, i1e 9 at 8, gamma's exp(lgamma) 53 near 1e-29).

Gradients: every function of x has its derivative; polygamma is not differentiable in
its integer order n; betaln/beta in both arguments; gammainc/gammaincc in x by the
closed form and in a numerically (`gammainc_da`: Richardson-extrapolated central
differences, 5e-8 relative at worst, a down to the smallest subnormal), which is
differentiable in x only (so the second derivative of gammainc in a is undefined). On
torch, gammainc/gammaincc are torch.special's except for small a and x <= 1.1, where
torch's are wrong and the NumPy kernel's series of Q runs on torch.
"""

from __future__ import annotations

import math as _pymath
from typing import Any

import numpy as np

from workbench.core.scalar import math as sm
from workbench.core.scalar import special_kernels as kernels
from workbench.core.scalar.declared import declare
from workbench.core.scalar.hypergeometric import hyp2f1_numpy, hyp2f1_torch
from workbench.core.scalar.incomplete_gamma_asymptotic import (
    TEMME_ABOVE,
    TEMME_WITHIN,
    temme_over,
)

_SQRT_PI_OVER_2 = _pymath.sqrt(_pymath.pi) / 2
_TWO_OVER_SQRT_PI = 2 / _pymath.sqrt(_pymath.pi)
_LN2 = _pymath.log(2.0)


def _in_float64(expression: Any) -> Any:
    """A torch expression computed in float64 and cast back to its inputs' dtype: for the
    float32 cases where an intermediate (exp, a quotient, lgamma's cancellation)
    overflows or loses digits in float32."""
    def computed(torch: Any, *xs: Any) -> Any:
        return expression(torch, *(x.double() for x in xs)).to(xs[0].dtype)
    return computed


def _torch_betaln(torch: Any, a: Any, b: Any) -> Any:
    return kernels.betaln_over(torch, torch.lgamma, a, b)


def _torch_beta(torch: Any, a: Any, b: Any) -> Any:
    return kernels.beta_over(torch, torch.lgamma, a, b)


def _torch_gammaln(torch: Any, x: Any) -> Any:
    """SciPy's -inf at -inf (torch's lgamma gives +inf there)."""
    return torch.where(torch.isneginf(x), x, torch.special.gammaln(x))


def _torch_gamma_sign(torch: Any, x: Any) -> Any:
    odd = torch.remainder(torch.floor(-x), 2) == 1
    return torch.where((x >= 0) | odd, torch.ones_like(x), -torch.ones_like(x))


def _torch_gamma(torch: Any, x: Any) -> Any:
    """sign * exp(lgamma), with SciPy's poles: +-inf at +-0, NaN at the negative integers
    and -inf."""
    value = _torch_gamma_sign(torch, x) * torch.exp(torch.lgamma(x))
    pole = (x <= 0) & (x == torch.floor(x))
    at_pole = torch.where(x == 0, torch.copysign(torch.full_like(x, float("inf")), x),
                          torch.full_like(x, float("nan")))
    return torch.where(pole, at_pole, value)


def _torch_digamma(torch: Any, x: Any) -> Any:
    """torch.special.digamma; left of 0 (off the poles) by the reflection psi(1 - x) -
    pi cot(pi x) with pi x reduced exactly (`special_kernels.pi_cot_pi`), as the host's:
    torch's own reflection was 5% off next to a pole (-15 + 2e-15)."""
    reflect = (x < 0) & (x != torch.floor(x))
    value = torch.special.digamma(torch.where(reflect, 1 - x, x))
    return torch.where(reflect, value - kernels.pi_cot_pi(x, torch), value)


def _torch_polygamma(torch: Any, n: Any, x: Any) -> Any:
    """digamma for n = 0 (`_torch_digamma`); for n >= 1 the NumPy kernel's algorithm, (-1)^(n+1) n!
    zeta(n + 1, x) (`special_kernels.hurwitz_zeta_over`: torch's trigamma is 5e-10 off),
    for x < 0 by the reflection (-1)^n psi^(n)(1 - x) - d^n/dx^n pi cot(pi x) (n <=
    REFLECT_MAX_ORDER); one pass per distinct order present; in float64 whatever the
    dtype."""
    n, x = torch.broadcast_tensors(n, x)
    dtype, n, x = x.dtype, n.double(), x.double()
    out = torch.full_like(x, float("nan"))
    for order in torch.unique(n).tolist():
        if not (_pymath.isfinite(order) and order >= 0 and order == int(order)):
            continue
        where = n == order
        xs = x[where]
        if order == 0:
            out[where] = _torch_digamma(torch, xs)
            continue
        reflect = (xs < 0) & (xs != torch.floor(xs)) & (order <= kernels.REFLECT_MAX_ORDER)
        zeta = kernels.hurwitz_zeta_over(torch, torch.full_like(xs, order + 1.0),
                                         torch.where(reflect, 1 - xs, xs))
        factorial = _pymath.inf if order > 170 else float(_pymath.factorial(int(order)))
        value = (1.0 if int(order) % 2 == 1 else -1.0) * factorial * zeta
        if bool(reflect.any()):
            g = kernels.cot_derivatives(kernels.pi_cot_pi(xs, torch), int(order))[-1]
            value = torch.where(reflect, (-1) ** int(order) * value - g, value)
        out[where] = value
    # (-1)^(n+1) inf at the poles, as SciPy
    pole = (n >= 1) & (x <= 0) & (x == torch.floor(x))
    signed_inf = torch.where(torch.remainder(n, 2) == 1, float("inf"), float("-inf"))
    return torch.where(pole, signed_inf.to(x.dtype), out).to(dtype)


def _nan_in_nan_out(kernel: Any) -> Any:
    """A two-argument torch kernel giving NaN wherever an argument is NaN, as SciPy: torch's
    gammainc / gammaincc answer x = 0, x = inf and a = inf before reading the other one."""
    def propagating(torch: Any, a: Any, x: Any) -> Any:
        value = kernel(torch, a, x)
        return torch.where(torch.isnan(a) | torch.isnan(x), float("nan"), value)
    return propagating


def _torch_gammainc(upper: bool) -> Any:
    """torch.special's gammainc / gammaincc, with the NumPy kernel's Temme expansion for
    large a near x = a (`incomplete_gamma_asymptotic.temme_over`: torch's own is 7e-12 off
    at a = x = 3e5), its series of Q for small a and SciPy's NaN at a = x = inf."""
    def incomplete(torch: Any, a: Any, x: Any) -> Any:
        dtype, a, x = a.dtype, a.double(), x.double()
        own = (torch.special.gammaincc if upper else torch.special.gammainc)(a, x)
        temme = ((a > TEMME_ABOVE) & torch.isfinite(a) & torch.isfinite(x)
                 & ((x - a).abs() < TEMME_WITHIN * a))
        by_temme = temme_over(torch, torch.special.erfc, torch.where(temme, a, 100.0),
                              torch.where(temme, x, 100.0), upper)
        value = torch.where(temme, by_temme, own)
        # small a, x <= 1.1 (`q_series_region`): torch's are wrong there (gammaincc(1.2e-209,
        # 1.02) 2.7 times too large, gammainc of a subnormal a 0): the kernel's series of Q
        small = kernels.q_series_region(a, x, torch) & (a > 0) & (x > 0)
        if bool(small.any()):
            q = kernels.gammaincc_small_a(torch.where(small, a, 0.5), torch.where(small, x, 0.5),
                                          torch, torch.lgamma)
            value = torch.where(small, q if upper else 1 - q, value)
        return torch.where(torch.isposinf(a) & torch.isposinf(x), float("nan"), value).to(dtype)
    return incomplete


def _torch_gammainc_da(torch: Any, a: Any, x: Any) -> Any:
    a, x = a.double(), x.double()  # differences need float64 whatever the dtype
    a = torch.clamp(a, min=kernels.GAMMAINC_DA_SMALLEST_A)
    h = kernels.gammainc_step(a, x, torch)
    p, q = _torch_gammainc(upper=False), _torch_gammainc(upper=True)
    lower = p(torch, a, x) < 0.5

    def f(shifted: Any) -> Any:  # the smaller of P and -Q, as the NumPy kernel does
        return torch.where(lower, p(torch, shifted, x), -q(torch, shifted, x))

    wide = (f(a + h) - f(a - h)) / (2 * h)
    narrow = (f(a + h / 2) - f(a - h / 2)) / h
    return (4 * narrow - wide) / 3


def _torch_erfcinv(torch: Any, q: Any) -> Any:
    """-ndtri(q / 2) / sqrt 2; NaN below 0 (ndtri(-0.0) is -inf); for a subnormal q, whose
    half rounds (erfcinv(5e-324) would be inf), two Newton steps on log erfc(x) = log q
    from -ndtri(q) / sqrt 2, as the NumPy kernel's tail."""
    x = torch.special.ndtri(q / 2) * (-1 / _pymath.sqrt(2.0))
    start = torch.special.ndtri(q) * (-1 / _pymath.sqrt(2.0))
    refined = start
    for _ in range(3):
        scaled = torch.special.erfcx(refined)
        refined = refined + (torch.log(scaled) - refined * refined - torch.log(q)) * (
            scaled * (_pymath.sqrt(_pymath.pi) / 2))
    x = torch.where((q > 0) & (q < 2.0 ** -1021), refined, x)
    return torch.where(q < 0, torch.full_like(q, float("nan")), x)


def _torch_erfcx(torch: Any, x: Any) -> Any:
    """torch's erfcx for x >= 0; 2 exp(x^2) - erfcx(-x) below with x^2 split exactly
    (`special_kernels.exp_square`: torch's own is 5.7e-14 off at -25.7)."""
    negative = 2.0 * kernels.exp_square(torch, x) - torch.special.erfcx(-x)
    return torch.where(x < 0, negative, torch.special.erfcx(x))


def _torch_erfinv(torch: Any, y: Any) -> Any:
    """erfinv, with SciPy's +0.0 at -0.0."""
    return torch.special.erfinv(y) + 0.0


def _torch_logaddexp2(torch: Any, x: Any, y: Any) -> Any:
    """log2(2^x + 2^y), x + 1 where x == y as NumPy (torch's is 5e-17 off at -1, -1)."""
    return torch.where(x == y, x + 1, torch.logaddexp2(x, y))


def _torch_log1mexp(torch: Any, x: Any) -> Any:
    return torch.where(x > -_LN2, torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def _torch_bessel(order: int) -> Any:
    """torch's I0 or I1, past |x| = 700 as e^-|x| I times e^(|x|/2) twice: torch's exp(x)
    overflows from 709.8, I itself only from 713.99 (I0) and 713.98 (I1)."""
    def bessel(torch: Any, x: Any) -> Any:
        plain = getattr(torch.special, f"i{order}")(x)
        half = torch.exp(0.5 * x.abs())
        scaled = getattr(torch.special, f"i{order}e")(x) * half * half
        return torch.where((x.abs() > 700) & torch.isfinite(x), scaled, plain)
    return bessel


def _torch_scaled_bessel(order: int) -> Any:
    """torch's i0e or i1e, in float64 (its float32 i1e was 9 ulp off at x = 8)."""
    def scaled(torch: Any, x: Any) -> Any:
        return getattr(torch.special, f"i{order}e")(x)
    return _in_float64(scaled)


#: From this x on, erfcx's derivative is its asymptotic series (see `_erfcx_derivative`).
_ERFCX_SERIES_FROM = 15.0
#: (-1)^k (2k - 1)!! for k = 1..12: erfcx'(x) = (2 / sqrt(pi)) sum_k c_k (2 x^2)^-k
_ERFCX_DERIVATIVE_SERIES = tuple((-1) ** k * _pymath.prod(range(1, 2 * k, 2))
                                 for k in range(1, 13))


def _erfcx_derivative(x: Any, z: Any) -> Any:
    """erfcx'(x) = 2 x erfcx(x) - 2 / sqrt(pi); from x = `_ERFCX_SERIES_FROM` on, where
    those two cancel (2 x^2 ulp: 2e-8 off at x = 1e4, every digit from 1e8), its
    asymptotic series, twelve terms (1e-19 relative at 15, where the difference is within
    5e-14); 0 at +inf (it was NaN)."""
    large = sm.ge(x, _ERFCX_SERIES_FROM)
    xs = sm.switch(large, x, _ERFCX_SERIES_FROM)
    t = 0.5 / xs / xs
    series = 0.0
    for coefficient in reversed(_ERFCX_DERIVATIVE_SERIES):
        series = (series + coefficient) * t
    return sm.switch(large, _TWO_OVER_SQRT_PI * series, 2 * x * z - _TWO_OVER_SQRT_PI)


def _log1mexp_derivative(x: Any, z: Any) -> Any:
    """-1 / expm1(-x), -inf at both zeros (at +0.0, -1 / expm1(-0.0) was +inf)."""
    return -1 / sm.expm1(sm.abs(x))


def _i1_derivative(x: Any, z: Any) -> Any:
    """I1'(x) = I0(x) - I1(x) / x, 1/2 at 0."""
    return sm.switch(sm.eq(x, 0), 0.5, i0(x) - z / x)


#: From this |x| on, the derivatives of i0e and i1e are their asymptotic series.
_SCALED_BESSEL_SERIES_FROM = 50.0


def _scaled_bessel_series(order: int) -> tuple[float, ...]:
    """(k + 1/2) c_k for k = 0..14, c_k the coefficients of e^-x I_order(x) ~
    (2 pi x)^-1/2 sum c_k x^-k: c_k = (-1)^k prod_j (4 order^2 - (2j - 1)^2) / (k! 8^k)."""
    coefficients, c = [], 1.0
    for k in range(15):
        coefficients.append((k + 0.5) * c)
        c *= -(4 * order * order - (2 * k + 1) ** 2) / ((k + 1) * 8)
    return tuple(coefficients)


_SCALED_BESSEL_SERIES = {order: _scaled_bessel_series(order) for order in (0, 1)}


def _scaled_bessel_derivative(order: int, x: Any, direct: Any) -> Any:
    """The derivative of e^-|x| I_order(x) at |x| >= `_SCALED_BESSEL_SERIES_FROM` by its
    asymptotic series, -(2 pi a)^-1/2 / a sum (k + 1/2) c_k a^-k at a = |x| (15 terms:
    1e-18 relative at 50), times sign(x) for order 0 (odd) and 1 for order 1 (even);
    `direct` below. The closed forms (I1e - sign I0e, I0e - I1e (sign + 1/x)) cancel x ulp:
    2e-13 off at 1e3, 1e-6 at 1e10, every digit from 1e16."""
    large = sm.ge(sm.abs(x), _SCALED_BESSEL_SERIES_FROM)
    a = sm.switch(large, sm.abs(x), _SCALED_BESSEL_SERIES_FROM)
    inverse = 1.0 / a
    series = 0.0
    for coefficient in reversed(_SCALED_BESSEL_SERIES[order]):
        series = series * inverse + coefficient
    slope = -series * inverse / sm.sqrt(2 * _pymath.pi * a)
    return sm.switch(large, sm.sign(x) * slope if order == 0 else slope, direct)


def _i0e_derivative(x: Any, z: Any) -> Any:
    """(e^-|x| I0)' = I1e - sign(x) I0e (`_scaled_bessel_derivative` for large |x|)."""
    return _scaled_bessel_derivative(0, x, i1e(x) - sm.sign(x) * z)


def _i1e_derivative(x: Any, z: Any) -> Any:
    """(e^-|x| I1)' = I0e - I1e (sign(x) + 1/x), 1/2 at 0 (`_scaled_bessel_derivative` for
    large |x|)."""
    return _scaled_bessel_derivative(
        1, x, sm.switch(sm.eq(x, 0), 0.5, i0e(x) - z * (sm.sign(x) + 1 / x)))


gammaln = declare(
    "GammaLn", "gammaln", "log |Gamma(x)| (SciPy's gammaln); +inf at the poles, -inf "
    "at -inf.",
    numpy=kernels.gammaln, c="wb_gammaln", torch=_torch_gammaln,
    derivative=lambda x, z: digamma(x), domain=(0.1, 10), reference="scipy.special.gammaln")
gamma = declare(
    "Gamma", "gamma", "The gamma function; +-inf at +-0, NaN at the negative integers.",
    numpy=kernels.gamma, c="tgamma", torch=_in_float64(_torch_gamma),
    derivative=lambda x, z: z * digamma(x), domain=(0.2, 5), reference="scipy.special.gamma")
digamma = declare(
    "Digamma", "digamma", "psi(x) = Gamma'(x) / Gamma(x) (SciPy's digamma / psi).",
    numpy=kernels.digamma, c="wb_digamma", torch=_in_float64(_torch_digamma),
    derivative=lambda x, z: polygamma(1.0, x), domain=(0.1, 10),
    reference="scipy.special.digamma")
polygamma = declare(
    "PolyGamma", "polygamma", "The n-th derivative of digamma at x (n = 0, 1, 2, ...; "
    "NaN for other n); x < 0 by the reflection formula, accurate for any x up to n = 140.",
    nin=2, numpy=kernels.polygamma, c="wb_polygamma",
    torch=_torch_polygamma,
    derivative=lambda n, x, z: (None, polygamma(n + 1.0, x)),
    domain=((1, 1), (0.5, 5)), reference="scipy.special.polygamma",
    grad="not differentiable in the integer order n (x: tests/core/scalar/test_special.py)",
    fixed_inputs=(0,))
betaln = declare(
    "BetaLn", "betaln", "log |B(a, b)|, accurate for large a and b.", nin=2,
    numpy=kernels.betaln, c="wb_betaln", torch=_in_float64(_torch_betaln),
    derivative=lambda a, b, z: (_digamma_difference(a, b), _digamma_difference(b, a)),
    domain=((0.5, 5), (0.5, 5)), reference="scipy.special.betaln")
beta = declare(
    "Beta", "beta", "The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b).", nin=2,
    numpy=kernels.beta, c="wb_beta", torch=_in_float64(_torch_beta),
    derivative=lambda a, b, z: (z * _digamma_difference(a, b),
                                z * _digamma_difference(b, a)),
    domain=((0.5, 5), (0.5, 5)), reference="scipy.special.beta")
erfinv = declare(
    "ErfInv", "erfinv", "The inverse of erf on (-1, 1).",
    numpy=kernels.erfinv, c="wb_erfinv", torch=_torch_erfinv,
    derivative=lambda x, z: sm.exp(z * z) * _SQRT_PI_OVER_2, domain=(-0.9, 0.9),
    reference="scipy.special.erfinv")
erfcinv = declare(
    "ErfcInv", "erfcinv", "The inverse of erfc on (0, 2).",
    numpy=kernels.erfcinv, c="wb_erfcinv", torch=_in_float64(_torch_erfcinv),
    derivative=lambda x, z: sm.exp(z * z) * -_SQRT_PI_OVER_2, domain=(0.1, 1.9),
    reference="scipy.special.erfcinv")
erfcx = declare(
    "Erfcx", "erfcx", "exp(x ** 2) * erfc(x), without overflow for large x.",
    numpy=kernels.erfcx, c="wb_erfcx", torch=_in_float64(_torch_erfcx),
    derivative=_erfcx_derivative, domain=(-2, 5),
    reference="scipy.special.erfcx")
log1mexp = declare(
    "Log1mExp", "log1mexp", "log(1 - exp(x)) for x <= 0 (PyTensor's log1mexp), accurate "
    "near 0 and for large -x.", numpy=kernels.log1mexp, c="wb_log1mexp",
    torch=_torch_log1mexp, derivative=_log1mexp_derivative, domain=(-5, -0.1),
    reference=lambda x: np.log(-np.expm1(x)))  # accurate on the domain; SciPy has none
logit = declare(
    "Logit", "logit", "log(p / (1 - p)), the inverse of sigmoid (expit).",
    numpy=kernels.logit, c="wb_logit", torch=_in_float64(kernels.logit_over),
    derivative=lambda x, z: 1 / (x * (1 - x)), domain=(0.05, 0.95),
    reference="scipy.special.logit")
xlogy = declare(
    "XLogY", "xlogy", "x * log(y), 0 where x == 0 (unless y is NaN).", nin=2,
    numpy=kernels.xlogy, c="wb_xlogy",
    torch=_in_float64(lambda torch, x, y: torch.special.xlogy(x, y)),
    derivative=lambda x, y, z: (sm.log(y), x / y), domain=((-2, 2), (0.1, 5)),
    reference="scipy.special.xlogy")
xlog1py = declare(
    "XLog1pY", "xlog1py", "x * log1p(y), 0 where x == 0 (unless y is NaN).", nin=2,
    numpy=kernels.xlog1py, c="wb_xlog1py",
    torch=_in_float64(lambda torch, x, y: torch.special.xlog1py(x, y)),
    derivative=lambda x, y, z: (sm.log1p(y), x / (y + 1)), domain=((-2, 2), (-0.9, 5)),
    reference="scipy.special.xlog1py")
logaddexp2 = declare(
    "LogAddExp2", "logaddexp2", "log2(2 ** x + 2 ** y), without overflow (NumPy's "
    "logaddexp2).", nin=2, numpy="logaddexp2", c="wb_logaddexp2", torch=_torch_logaddexp2,
    derivative=lambda x, y, z: (sm.sigmoid((x - y) * _LN2), sm.sigmoid((y - x) * _LN2)),
    domain=((-4, 4), (-4, 4)))
i0 = declare(
    "I0", "i0", "The modified Bessel function of the first kind of order 0 (NaN at "
    "+-inf, as SciPy).", numpy=kernels.i0, c="wb_i0",
    torch=_in_float64(_torch_bessel(0)), derivative=lambda x, z: i1(x),
    domain=(-5, 5), reference="scipy.special.i0")
i1 = declare(
    "I1", "i1", "The modified Bessel function of the first kind of order 1 (NaN at "
    "+-inf, as SciPy).", numpy=kernels.i1, c="wb_i1",
    torch=_in_float64(_torch_bessel(1)), derivative=_i1_derivative,
    domain=(-5, 5), reference="scipy.special.i1")
i0e = declare(
    "I0e", "i0e", "exp(-|x|) * i0(x), without overflow.",
    numpy=kernels.i0e, c="wb_i0e", torch=_torch_scaled_bessel(0),
    derivative=_i0e_derivative, domain=(-5, 5),
    reference="scipy.special.i0e")
i1e = declare(
    "I1e", "i1e", "exp(-|x|) * i1(x), without overflow.",
    numpy=kernels.i1e, c="wb_i1e", torch=_torch_scaled_bessel(1),
    derivative=_i1e_derivative,
    domain=(-5, 5), reference="scipy.special.i1e")
gammainc_da = declare(
    "GammaIncDa", "gammainc_da", "dP(a, x) / da, numerically: Richardson-extrapolated "
    "central differences of gammainc in a (5e-8 relative at worst; the gradient of "
    "gammainc and gammaincc in a).", nin=2, numpy=kernels.gammainc_da, c="wb_gammainc_da",
    torch=_torch_gammainc_da, domain=((0.5, 5), (0.1, 5)),
    derivative=lambda a, x, z: (None, sm.exp((a - 1) * sm.log(x) - x - gammaln(a))
                                * (sm.log(x) - digamma(a))),
    reference="workbench.testing.cases_elemwise.gammainc_da_reference",
    grad="a numerical derivative: differentiable in x only", fixed_inputs=(0,))
gammainc = declare(
    "GammaInc", "gammainc", "The regularized lower incomplete gamma function P(a, x) "
    "(a >= 0, x >= 0; at a = 0 SciPy's limit, 1 for x > 0; Temme's expansion for large a "
    "near x = a, on every linker; elsewhere torch's own on gpu).", nin=2,
    numpy=kernels.gammainc, c="wb_gammainc",
    torch=_nan_in_nan_out(_torch_gammainc(upper=False)),
    derivative=lambda a, x, z: (gammainc_da(a, x),
                                sm.exp((a - 1) * sm.log(x) - x - gammaln(a))),
    domain=((0.5, 5), (0.1, 5)), reference="scipy.special.gammainc")
gammaincc = declare(
    "GammaIncc", "gammaincc", "The regularized upper incomplete gamma function "
    "Q(a, x) = 1 - P(a, x) (0 at a = 0 for x > 0).", nin=2,
    numpy=kernels.gammaincc, c="wb_gammaincc",
    torch=_nan_in_nan_out(_torch_gammainc(upper=True)),
    derivative=lambda a, x, z: (-gammainc_da(a, x),
                                -sm.exp((a - 1) * sm.log(x) - x - gammaln(a))),
    domain=((0.5, 5), (0.1, 5)), reference="scipy.special.gammaincc")
def _digamma_difference(x: Any, h: Any) -> Any:
    """psi(x) - psi(x + h) as a scalar graph: the derivative of betaln in its argument x,
    h the other. Where x and x + h are both past `DIGAMMA_ASYMPTOTIC_FROM`, the difference
    of digamma's asymptotic series taken term by term, t = log1p(h / x) = log((x + h) / x):
    -t - h / (2 x (x + h)) - sum c_k x^-2k (-expm1(-2k t)), which does not cancel where
    h << x (psi(b) - psi(a + b) lost every digit: 0, not -5e-16, at a = 0.5, b = 1e15).
    The unused branch gets safe values, so no inf * 0 reaches a second derivative."""
    large = sm.and_(sm.ge(x, kernels.DIGAMMA_ASYMPTOTIC_FROM),
                    sm.ge(x + h, kernels.DIGAMMA_ASYMPTOTIC_FROM))
    xs = sm.switch(large, x, kernels.DIGAMMA_ASYMPTOTIC_FROM)
    hs = sm.switch(large, h, 0.0)
    t = sm.log1p(hs / xs)
    inv2 = 1.0 / (xs * xs)
    series = 0.0
    power = inv2
    for k, coefficient in enumerate(kernels.DIGAMMA_SERIES, start=1):
        series = series - coefficient * power * sm.expm1(-2.0 * k * t)
        power = power * inv2
    asymptotic = -t - (hs / xs) * 0.5 / (xs + hs) - series
    return sm.switch(large, asymptotic, digamma(x) - digamma(x + h))


def _hyp2f1_parameter_grad(position: int, parameter: Any) -> Any:
    """The refused gradient of hyp2f1 in a, b or c (a NullType naming the parameter)."""
    from workbench.core.graph.type import grad_not_implemented

    return grad_not_implemented("Hyp2F1", position, parameter, f"the derivative in "
                                f"{'abc'[position]} (a double series of digamma-weighted "
                                "terms) is not implemented; hyp2f1 is differentiable in x")


hyp2f1 = declare(
    "Hyp2F1", "hyp2f1", "The Gauss hypergeometric function 2F1(a, b; c; x), real x <= 1 "
    "(NaN above, except for a polynomial: a or b a non-positive integer; 1 at x = 0 and "
    "for a = 0 or b = 0, as SciPy). Near x = 1 by the transformation to 1 - x, with the "
    "limiting digamma form where c - a - b is near an integer (scalar/hypergeometric.py: "
    "relative error within about 1e-9 of mpmath there, 1e-12 elsewhere on x in [-1000, 1), "
    "|a|, |b| <= 50, c near a or b included). Differentiable in x: "
    "2F1' = (a b / c) 2F1(a + 1, b + 1; c + 1; x), as accurate as 2F1 itself. The "
    "derivatives in a, b and c (double series of digamma-weighted terms) are not "
    "implemented: grad raises, naming them.", nin=4,
    numpy=hyp2f1_numpy, c="wb_hyp2f1", torch=hyp2f1_torch,
    derivative=lambda a, b, c, x, z: (*(_hyp2f1_parameter_grad(k, v)
                                        for k, v in enumerate((a, b, c))),
                                      a * b / c * hyp2f1(a + 1, b + 1, c + 1, x)),
    domain=((-2, 2), (-2, 2), (1.5, 4), (-3, 0.8)), reference="scipy.special.hyp2f1",
    grad="differentiable in x only (tests/core/scalar/test_hyp2f1.py)",
    fixed_inputs=(0, 1, 2))

__all__ = ["beta", "betaln", "digamma", "erfcinv", "erfcx", "erfinv", "gamma", "gammainc",
           "gammainc_da", "gammaincc", "gammaln", "hyp2f1", "i0", "i0e", "i1", "i1e", "log1mexp",
           "logaddexp2", "logit", "polygamma", "xlog1py", "xlogy"]
