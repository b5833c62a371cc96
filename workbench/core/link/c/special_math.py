"""C for the special functions that the C library lacks, by C function name.

A declared scalar Op names its C function (`DeclaredOp.c_function`); names starting
with ``wb_`` are written here: ``wb_<name>_float64`` (and ``_float32``, which computes
in double) as static inline functions, each the same algorithm as its NumPy kernel in
`workbench.core.scalar.special_kernels` (read that module's docstring for the
methods and their sources). `support_code(names)` returns the C of the functions a
module uses, with the functions they call, so a module compiles only what it needs.
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.core.scalar import hypergeometric, incomplete_gamma_asymptotic, special_kernels

__all__ = ["SPECIAL_C", "support_code"]

_PRELUDE = r"""
#ifndef WB_SPECIAL_PRELUDE
#define WB_SPECIAL_PRELUDE
#define WB_PI 3.14159265358979323846
#define WB_SQRT_PI 1.77245385090551602730
#define WB_LN_SQRT_2PI 0.91893853320467274178
#define WB_LN2 0.69314718055994530942
#define WB_FLOAT32_OF(NAME) \
static inline float NAME##_float32(float x) { return (float)NAME##_float64((double)x); }
#define WB_FLOAT32_OF4(NAME) \
static inline float NAME##_float32(float a, float b, float c, float x) { \
  return (float)NAME##_float64((double)a, (double)b, (double)c, (double)x); }
#define WB_FLOAT32_OF2(NAME) \
static inline float NAME##_float32(float x, float y) { \
  return (float)NAME##_float64((double)x, (double)y); }
#endif
"""

#: name -> (C source, names of the functions it calls)
SPECIAL_C: dict[str, tuple[str, tuple[str, ...]]] = {}


def _define(name: str, source: str, *needs: str) -> None:
    SPECIAL_C[name] = (source, needs)


_define("wb_pi_cot_pi", r"""
#define WB_COT_SERIES_BELOW """ + repr(special_kernels.COT_SERIES_BELOW) + r"""
static inline double wb_pi_cot_pi(double x) {
  /* pi cot(pi x) with pi x reduced exactly (special_kernels.pi_cot_pi) */
  double r = x - round(x);
  if (fabs(r) < WB_COT_SERIES_BELOW) return 1 / r - (WB_PI * WB_PI / 3) * r;
  if (fabs(r) <= 0.25) return WB_PI / tan(WB_PI * r);
  return WB_PI * copysign(tan(WB_PI * (0.5 - fabs(r))), r);  /* 0 at the half-integers */
}
""")

_define("wb_gammaln", r"""
static inline double wb_gammaln_float64(double x) {
  return x == -INFINITY ? x : lgamma(x);  /* SciPy's -inf at -inf (C's lgamma: +inf) */
}
WB_FLOAT32_OF(wb_gammaln)
""")

_define("wb_pi_cot_pi_derivative", r"""
#define WB_REFLECT_MAX_ORDER """ + str(special_kernels.REFLECT_MAX_ORDER) + r"""
static inline double wb_pi_cot_pi_derivative(int n, double x) {
  /* g = pi cot(pi x): g' = -(pi^2 + g^2), g^(m+1) = -sum_k C(m, k) g^(k) g^(m-k) */
  double g[WB_REFLECT_MAX_ORDER + 1];
  g[0] = wb_pi_cot_pi(x);
  if (n >= 1) g[1] = -(WB_PI * WB_PI + g[0] * g[0]);
  for (int m = 1; m < n; m++) {
    double total = 0, binomial = 1;  /* C(m, k) */
    int k = 0;
    for (; 2 * k + 1 <= m; k++) {
      total += 2 * binomial * g[k] * g[m - k];
      binomial = binomial * (m - k) / (k + 1);
    }
    if (m % 2 == 0) total += binomial * g[k] * g[k];
    g[m + 1] = -total;
  }
  return g[n];
}
""", "wb_pi_cot_pi")

_define("wb_digamma", r"""
static inline double wb_digamma_float64(double x) {
  static const double c[7] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132,
                              -691.0 / 32760, 1.0 / 12};
  if (x == 0) return signbit(x) ? INFINITY : -INFINITY;
  if (isinf(x)) return x > 0 ? x : NAN;
  if (x < 0 && x == floor(x)) return NAN;
  double total = 0, y = x;
  if (x < 0.5) { total = -wb_pi_cot_pi(x); y = 1 - x; }
  while (y < 10) { total -= 1 / y; y += 1; }
  double inv2 = 1 / (y * y), s = 0;
  for (int k = 6; k >= 0; k--) s = (s + c[k]) * inv2;
  return total + log(y) - 0.5 / y - s;
}
WB_FLOAT32_OF(wb_digamma)
""", "wb_pi_cot_pi")

_define("wb_hurwitz_zeta", r"""
static inline double wb_hurwitz_zeta_float64(double s, double q) {
  /* Euler-Maclaurin: terms while q + k < 10 (at least 9), then 12 Bernoulli corrections */
  static const double em[12] = {
    1.0 / 6 / 2, -1.0 / 30 / 24, 1.0 / 42 / 720, -1.0 / 30 / 40320, 5.0 / 66 / 3628800,
    -691.0 / 2730 / 479001600, 7.0 / 6 / 87178291200.0, -3617.0 / 510 / 20922789888000.0,
    43867.0 / 798 / 6402373705728000.0, -174611.0 / 330 / 2432902008176640000.0,
    854513.0 / 138 / 1.1240007277776077e21, -236364091.0 / 2730 / 6.204484017332394e23};
  if (q <= 0 && q == floor(q)) return INFINITY;
  if (isnan(q) || q < -1e6) return NAN;  /* as special_kernels.ZETA_MOST_STEPS: no hang */
  double total = 0, w = q;
  for (int k = 0; k < 9 || w < 10; k++) { total += pow(w, -s); w += 1; }
  total += pow(w, 1 - s) / (s - 1) + 0.5 * pow(w, -s);
  double factor = s * pow(w, -s - 1);
  for (int j = 1; j <= 12; j++) {
    total += em[j - 1] * factor;
    factor *= (s + 2 * j - 1) * (s + 2 * j) / (w * w);
  }
  return total;
}
""")

_define("wb_polygamma", r"""
static inline double wb_polygamma_float64(double n, double x) {
  if (!(n >= 0) || n != floor(n)) return NAN;
  if (n == 0) return wb_digamma_float64(x);
  double sign = fmod(n, 2.0) == 1.0 ? 1.0 : -1.0;
  if (n <= WB_REFLECT_MAX_ORDER && x < 0 && x != floor(x))  /* the reflection */
    return -tgamma(n + 1) * wb_hurwitz_zeta_float64(n + 1, 1 - x)  /* (-1)^n psi^(n)(1-x) */
           - wb_pi_cot_pi_derivative((int)n, x);
  return sign * tgamma(n + 1) * wb_hurwitz_zeta_float64(n + 1, x);
}
WB_FLOAT32_OF2(wb_polygamma)
""", "wb_digamma", "wb_hurwitz_zeta", "wb_pi_cot_pi_derivative")

_define("wb_stirling", r"""
static inline double wb_stirling_float64(double x) {
  /* lgamma(x) - ((x - 1/2) ln x - x + ln sqrt(2 pi)) for x >= 10 */
  static const double c[7] = {1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188,
                              -691.0 / 360360, 1.0 / 156};
  double inv2 = 1 / (x * x), s = 0;
  for (int k = 6; k >= 1; k--) s = (s + c[k]) * inv2;
  return (s + c[0]) / x;
}
""")

_define("wb_betaln", r"""
/* SciPy's B(a, b) where a or b is a non-positive integer n (or -inf), the other p
   (special_kernels.beta_poles): 1 there, with B = sign B(a2, b2) where *finite, sign inf
   elsewhere */
static inline int wb_beta_pole(double a, double b, int *finite, double *a2, double *b2,
                               double *sign) {
  int pole_a = a <= 0 && a == floor(a);
  if (!pole_a && !(b <= 0 && b == floor(b))) return 0;
  double n = pole_a ? a : b, p = pole_a ? b : a;
  int reflected = n > -INFINITY && isfinite(p) && p == floor(p) && n + p < 1;  /* exact */
  *sign = (reflected && fmod(p, 2.0) != 0) ? -1.0 : 1.0;
  *finite = reflected && p > 0;
  *a2 = 1 - (n + p);
  *b2 = p;
  return 1;
}
static inline double wb_betaln_regular(double a, double b) {
  double small = a < b ? a : b, large = a < b ? b : a;
  /* B ~ Gamma(small) large^-small: 0 for small > 0, +-inf for small < 0 */
  if (large == INFINITY && isfinite(small)) return small > 0 ? -INFINITY : INFINITY;
  /* Stirling where one argument is >= 10 (the other negative too, while a + b >= 10) */
  if (!(large >= 10) || !(small > 0 || small + large >= 10) || isinf(large))
    return lgamma(a) + lgamma(b) - lgamma(a + b);
  double ratio = small / large;
  double corr_large = wb_stirling_float64(large);
  double corr_sum = wb_stirling_float64(large + small);
  if (small >= 10)
    return WB_LN_SQRT_2PI - 0.5 * log(large) + (small - 0.5) * log(ratio)
           - small * log1p(ratio) - (large - 0.5) * log1p(ratio)  /* a + b may overflow */
           + wb_stirling_float64(small) + corr_large - corr_sum;
  double bracket = small * log(large) + (small + large - 0.5) * log1p(ratio) - small
                   + corr_sum - corr_large;
  return lgamma(small) - bracket;
}
static inline double wb_betaln_float64(double a, double b) {
  int finite;
  double a2, b2, sign;
  if (wb_beta_pole(a, b, &finite, &a2, &b2, &sign))
    return finite ? wb_betaln_regular(a2, b2) : INFINITY;
  return wb_betaln_regular(a, b);
}
WB_FLOAT32_OF2(wb_betaln)
""", "wb_stirling")

_define("wb_beta", r"""
static inline double wb_gamma_sign(double x) {
  return (x >= 0 || fmod(floor(-x), 2.0) == 1.0) ? 1.0 : -1.0;  /* 1 at 0: B's pole +inf */
}
static inline double wb_beta_float64(double a, double b) {
  int finite;
  double a2, b2, sign = 1.0;
  if (wb_beta_pole(a, b, &finite, &a2, &b2, &sign)) {
    if (!finite) return sign * INFINITY;
    a = a2;
    b = b2;
  }
  /* a + b at a pole: B = 0 with the sign of Gamma(a) Gamma(b) (SciPy's) */
  double s = a + b, sign_ab = (s <= 0 && s == floor(s)) ? 1.0 : wb_gamma_sign(s);
  return sign * wb_gamma_sign(a) * wb_gamma_sign(b) * sign_ab * exp(wb_betaln_float64(a, b));
}
WB_FLOAT32_OF2(wb_beta)
""", "wb_betaln")

_define("wb_erfcx", r"""
static inline double wb_erfcx_float64(double x) {
  if (x < 5) {  /* exp(x^2) with x^2 = hi + lo exactly (special_kernels.exp_square) */
    double hi = x * x, lo = fabs(x) < 27 ? fma(x, x, -hi) : 0.0;
    return exp(hi) * (1.0 + lo) * erfc(x);
  }
  if (isinf(x)) return 0;
  if (isnan(x)) return x;
  /* erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))) */
  double fraction = x;
  for (int k = 60; k >= 1; k--) fraction = x + (k / 2.0) / fraction;
  return (1 / WB_SQRT_PI) / fraction;  /* sqrt(pi) x overflows near 1e308 */
}
WB_FLOAT32_OF(wb_erfcx)
""")

_define("wb_erfinv_parts", r"""
static inline double wb_winitzki(double log_1_minus_y2) {
  const double a = 0.147, t = 2 / (WB_PI * a) + 0.5 * log_1_minus_y2;
  return sqrt(sqrt(t * t - log_1_minus_y2 / a) - t);
}
static inline double wb_erfinv_small(double y) {  /* |y| <= 1/2: Halley on erf(x) - y */
  double x = (y > 0 ? 1 : (y < 0 ? -1 : 0)) * wb_winitzki(log1p(-y * y));
  for (int i = 0; i < 3; i++) {
    double f = erf(x) - y, slope = (2 / WB_SQRT_PI) * exp(-x * x);
    x -= f / (slope + x * f);
  }
  return x;
}
static inline double wb_erfcinv_tail(double q) {  /* 0 < q <= 1/2: Halley on ln erfc */
  double log_q = log(q), x = wb_winitzki(log_q + log1p(1.0 - q));
  for (int i = 0; i < 3; i++) {
    double e = wb_erfcx_float64(x);
    double g = log(e) - x * x - log_q, slope = -(2 / WB_SQRT_PI) / e;
    double curvature = slope * (-2 * x - slope);
    x -= g / (slope - g * curvature / (2 * slope));
  }
  return x;
}
""", "wb_erfcx")

_define("wb_erfinv", r"""
static inline double wb_erfinv_float64(double y) {
  double a = fabs(y);
  if (!(a <= 1)) return NAN;
  if (a == 1) return y > 0 ? INFINITY : -INFINITY;
  if (a <= 0.5) return wb_erfinv_small(y);
  return (y > 0 ? 1 : -1) * wb_erfcinv_tail(1.0 - a);
}
WB_FLOAT32_OF(wb_erfinv)
""", "wb_erfinv_parts")

_define("wb_erfcinv", r"""
static inline double wb_erfcinv_float64(double q) {
  if (!(q >= 0 && q <= 2)) return NAN;
  if (q == 0) return INFINITY;
  if (q == 2) return -INFINITY;
  if (q == 1) return -0.0;  /* SciPy's -ndtri(1/2) / sqrt 2 */
  double lower = q < 2 - q ? q : 2 - q, sign = q <= 1 ? 1 : -1;
  if (lower <= 0.5) return sign * wb_erfcinv_tail(lower);
  return wb_erfinv_small(1.0 - q);
}
WB_FLOAT32_OF(wb_erfcinv)
""", "wb_erfinv_parts")

_define("wb_log1mexp", r"""
static inline double wb_log1mexp_float64(double x) {
  return x > -WB_LN2 ? log(-expm1(x)) : log1p(-exp(x));
}
WB_FLOAT32_OF(wb_log1mexp)
""")

_define("wb_logit", r"""
static inline double wb_logit_float64(double p) {
  if (p >= 0.25 && p <= 0.75) return log1p((2 * p - 1) / (1 - p));
  return log(p) - log1p(-p);
}
WB_FLOAT32_OF(wb_logit)
""")

_define("wb_xlogy", r"""
static inline double wb_xlogy_float64(double x, double y) {
  return (x == 0 && !isnan(y)) ? 0.0 : x * log(y);
}
WB_FLOAT32_OF2(wb_xlogy)
""")

_define("wb_xlog1py", r"""
static inline double wb_xlog1py_float64(double x, double y) {
  return (x == 0 && !isnan(y)) ? 0.0 : x * log1p(y);
}
WB_FLOAT32_OF2(wb_xlog1py)
""")

_define("wb_logaddexp2", r"""
static inline double wb_logaddexp2_float64(double x, double y) {
  /* as NumPy's npy_logaddexp2: equal arguments give x + 1 */
  if (x == y) return x + 1;
  double d = x - y;
  if (d > 0) return x + log1p(exp2(-d)) / WB_LN2;
  if (d <= 0) return y + log1p(exp2(d)) / WB_LN2;
  return d;  /* NaN */
}
WB_FLOAT32_OF2(wb_logaddexp2)
""")

_define("wb_bessel", r"""
/* I0, I1: power series below 30, asymptotic expansion above; `scaled`: times exp(-|x|) */
static inline double wb_bessel_i(int order, double x, int scaled) {
  if (isnan(x)) return x;
  double ax = fabs(x), value;
  if (ax < 30) {
    double q = 0.25 * ax * ax, term = order == 0 ? 1.0 : 0.5 * ax, total;
    if (order == 1 && term + term < ax) term = nextafter(term, INFINITY);  /* a subnormal tie */
    total = term;
    for (int k = 1; k < 80; k++) { term *= q / (k * (k + order)); total += term; }
    value = scaled ? total * exp(-ax) : total;
  } else if (isinf(ax)) {
    value = scaled ? 0.0 : NAN;  /* SciPy's (and torch's) NaN for I0, I1 */
  } else {
    double mu = 4.0 * order * order, term = 1, total = 1;
    for (int k = 1; k < 30; k++) {
      term = -term * (mu - (double)(2 * k - 1) * (2 * k - 1)) / (k * 8.0 * ax);
      total += term;
    }
    total /= sqrt(2 * WB_PI) * sqrt(ax);  /* sqrt(2 pi ax) overflows near 1e308 */
    double half = exp(0.5 * ax);  /* e^x in two halves: finite up to I's own overflow */
    value = scaled ? total : total * half * half;
  }
  return (order == 1 && x < 0) ? -value : value;
}
static inline double wb_i0_float64(double x) { return wb_bessel_i(0, x, 0); }
static inline double wb_i1_float64(double x) { return wb_bessel_i(1, x, 0); }
static inline double wb_i0e_float64(double x) { return wb_bessel_i(0, x, 1); }
static inline double wb_i1e_float64(double x) { return wb_bessel_i(1, x, 1); }
WB_FLOAT32_OF(wb_i0)
WB_FLOAT32_OF(wb_i1)
WB_FLOAT32_OF(wb_i0e)
WB_FLOAT32_OF(wb_i1e)
""")
for _bessel in ("wb_i0", "wb_i1", "wb_i0e", "wb_i1e"):
    SPECIAL_C[_bessel] = ("", ("wb_bessel",))

_define("wb_gammainc_temme", r"""
#define WB_TEMME_ABOVE """ + repr(incomplete_gamma_asymptotic.TEMME_ABOVE) + r"""
#define WB_TEMME_WITHIN """ + repr(incomplete_gamma_asymptotic.TEMME_WITHIN) + r"""
static const double wb_temme_d[25][25] = {""" + ",\n".join(
    "{" + ", ".join(repr(v) for v in row) + "}" for row in incomplete_gamma_asymptotic.TEMME_D
) + r"""};
static inline double wb_log1pmx(double t) {
  /* log(1 + t) - t (incomplete_gamma_asymptotic.log1pmx_over) */
  if (!(fabs(t) <= 0.5)) return log1p(t) - t;
  const double u = t / (2.0 + t), u2 = u * u;
  double tail = 0;
  for (int k = 16; k >= 1; k--) tail = (tail + 2.0 / (2 * k + 1)) * u2;
  return -t * u + u * tail;
}
static inline double wb_gammainc_temme(double a, double x, int upper) {
  /* Temme's uniform expansion (incomplete_gamma_asymptotic.temme_over) */
  const double sigma = (x - a) / a, log_term = wb_log1pmx(sigma);
  const double e2 = -2.0 * log_term;
  const double eta = (sigma < 0 ? -1.0 : 1.0) * sqrt(e2 > 0 ? e2 : 0.0);
  const double sign = upper ? 1.0 : -1.0;
  double total = 0;
  for (int k = 24; k >= 0; k--) {
    double ck = 0;
    for (int n = 24; n >= 0; n--) ck = ck * eta + wb_temme_d[k][n];
    total = total / a + ck;
  }
  return 0.5 * erfc(sign * eta * sqrt(a / 2.0))
         + sign * exp(a * log_term) * total / sqrt(2.0 * WB_PI * a);
}
""")

_define("wb_lgamma1p", r"""
static inline double wb_lgamma1p(double a) {  /* lgamma(1 + a), its Taylor series near 0 */
  static const double c[] = {""" + ", ".join(map(repr, special_kernels.LGAMMA1P_SERIES)) + r"""};
  if (!(fabs(a) < """ + repr(special_kernels.LGAMMA1P_SERIES_BELOW) + r""")) return lgamma(1 + a);
  double poly = 0;
  for (int k = (int)(sizeof c / sizeof c[0]) - 1; k >= 0; k--) poly = poly * a + c[k];
  return -""" + repr(special_kernels.EULER_GAMMA) + r""" * a + poly * a * a;
}
""")

_define("wb_gammainc_both", r"""
/* P(a, x) (upper = 0) or Q(a, x) (upper = 1): series for x < a + 1, else the continued
   fraction for Q by the modified Lentz method */
static inline double wb_gammainc_both(double a, double x, int upper) {
  if (isnan(a) || isnan(x) || a < 0 || x < 0) return NAN;
  if (a == 0) return x > 0 ? (upper ? 0.0 : 1.0) : NAN;  /* SciPy's limit a -> 0 */
  if (x == 0) return upper ? 1.0 : 0.0;
  if (isinf(a)) return isinf(x) ? NAN : (upper ? 1.0 : 0.0);  /* SciPy's NaN at (inf, inf) */
  if (isinf(x)) return upper ? 0.0 : 1.0;
  if (a > WB_TEMME_ABOVE && fabs(x - a) < WB_TEMME_WITHIN * a)  /* large a near x = a */
    return wb_gammainc_temme(a, x, upper);
  if (x <= 1.1 && a < fmax(x, -0.5 / log(x))) {  /* special_kernels.q_series_region */
    double e = a * log(x) - wb_lgamma1p(a), term = 1, total = 0;
    for (int n = 1; n < """ + str(special_kernels.Q_SERIES_TERMS) + r"""; n++) {
      term *= -x / n; total += term / (a + n);
    }
    double q = -expm1(e) - a * exp(e) * total;
    return upper ? q : 1 - q;
  }
  /* x^a e^-x / Gamma(a); below a = 1 as a x^a e^-x / Gamma(1 + a): no large lgamma(a) */
  double prefactor = a < 1 ? a * pow(x, a) * exp(-x - wb_lgamma1p(a))
                           : exp(a * log(x) - x - lgamma(a));
  if (x < a + 1) {
    double term = 1 / a, total = term, denominator = a;
    for (int i = 0; i < 2000; i++) {
      denominator += 1; term *= x / denominator; total += term;
      if (fabs(term) <= fabs(total) * 1e-17) break;
    }
    double p = prefactor * total;
    return upper ? 1 - p : p;
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 2000; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b; if (fabs(d) < tiny) d = tiny;
    c = b + an / c; if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (fabs(delta - 1) <= 1e-16) break;
  }
  double q = prefactor * h;
  return upper ? q : 1 - q;
}
static inline double wb_gammainc_float64(double a, double x) {
  return wb_gammainc_both(a, x, 0);
}
static inline double wb_gammaincc_float64(double a, double x) {
  return wb_gammainc_both(a, x, 1);
}
WB_FLOAT32_OF2(wb_gammainc)
WB_FLOAT32_OF2(wb_gammaincc)
""", "wb_gammainc_temme", "wb_lgamma1p")
_define("wb_gammainc_da", r"""
static inline double wb_gammainc_da_float64(double a, double x) {
  /* dP/da: central differences with steps h and h/2, Richardson-extrapolated */
  /* (special_kernels.gammainc_da and gammainc_step) */
  const double smallest = """ + repr(special_kernels.GAMMAINC_DA_SMALLEST_A) + r""";
  if (a < smallest) a = smallest;
  double h = 1e-3 * (a > 1 ? a : 1.0), scale = fabs(log(x));
  scale = scale < 1 ? 1 : (scale > 1e3 ? 1e3 : scale);
  if (h > 0.25 * a) h = 0.25 * a;
  if (h > 1e-2 / scale) h = 1e-2 / scale;
  /* differences of the smaller of P and -Q */
  int upper = !(wb_gammainc_both(a, x, 0) < 0.5);
  double wide = (wb_gammainc_both(a + h, x, upper) - wb_gammainc_both(a - h, x, upper))
                / (2 * h);
  double narrow = (wb_gammainc_both(a + h / 2, x, upper)
                   - wb_gammainc_both(a - h / 2, x, upper)) / h;
  return (upper ? -1 : 1) * (4 * narrow - wide) / 3;
}
WB_FLOAT32_OF2(wb_gammainc_da)
""", "wb_gammainc_both")
SPECIAL_C["wb_gammainc"] = ("", ("wb_gammainc_both",))
SPECIAL_C["wb_gammaincc"] = ("", ("wb_gammainc_both",))


#: 2F1: the algorithm of scalar/hypergeometric.py (its constants), one double at a time.
_HYP2F1_C = r"""
/* a value and the summed magnitude of what made it (size / |value|: the cancellation) */
typedef struct { double value, size; } wb_sized;
static inline double wb_cancellation(wb_sized s) {
  double r = s.size / fabs(s.value);
  return (isnan(r) || s.value == 0) ? INFINITY : r;
}
static inline wb_sized wb_less_cancelling(wb_sized best, wb_sized other) {
  return wb_cancellation(other) < wb_cancellation(best) ? other : best;
}
static inline wb_sized wb_sized_scaled(double factor, wb_sized s) {
  wb_sized r = {factor * s.value, fabs(factor) * s.size};
  return r;
}
static inline wb_sized wb_hyp2f1_sized_series(double a, double b, double c, double z) {
  double term = 1, total = 1, size = 1;
  for (int n = 0; n < 3000; n++) {
    term *= (a + n) * (b + n) / ((c + n) * (n + 1)) * z;
    total += term;
    size += fabs(term);
    if (!(fabs(term) > 1e-17 * fabs(total))) break;
  }
  wb_sized r = {fabs(term) > 1e-15 * fabs(total) ? NAN : total, size};  /* not converged */
  return r;
}
static inline double wb_rgamma(double x) {
  return (x <= 0 && x == floor(x)) ? 0.0 : 1 / tgamma(x);
}
/* 2F1(a, b; c; 1 - y) by DLMF 15.8.4 (c - a - b not an integer); c itself, not
   a + b + d (scalar/hypergeometric.py) */
static inline wb_sized wb_hyp2f1_two(double a, double b, double c, double y) {
  const double d = c - a - b;
  const double f1 = tgamma(c) * tgamma(d) * wb_rgamma(c - a) * wb_rgamma(c - b);
  const double f2 = pow(y, d) * tgamma(c) * tgamma(-d) * wb_rgamma(a) * wb_rgamma(b);
  const wb_sized s1 = wb_hyp2f1_sized_series(a, b, 1 - d, y);
  const wb_sized s2 = wb_hyp2f1_sized_series(c - a, c - b, 1 + d, y);
  wb_sized r = {f1 * s1.value + f2 * s2.value, fabs(f1) * s1.size + fabs(f2) * s2.size};
  return r;
}
/* 2F1(a, b; a + b + m; 1 - y) for an integer m >= 0 (A&S 15.3.10, 15.3.11) */
static inline wb_sized wb_hyp2f1_integer(double a, double b, double y, int m) {
  const double c = a + b + m;
  double finite = 0, term = 1;
  for (int n = 0; n < m; n++) {
    finite += term;
    term *= (a + n) * (b + n) / ((n + 1) * (1.0 - m + n)) * y;
  }
  const double first = m > 0 ? tgamma(m) * tgamma(c) * wb_rgamma(a + m) * wb_rgamma(b + m)
                                 * finite : 0.0;
  const double log_y = log(y);
  double psi1 = wb_digamma_float64(1.0), psim = wb_digamma_float64(m + 1.0);
  double psia = wb_digamma_float64(a + m), psib = wb_digamma_float64(b + m);
  double coefficient = exp(-lgamma(m + 1.0));
  double total = coefficient * (log_y - psi1 - psim + psia + psib);
  for (int n = 0; n < 3000; n++) {
    coefficient *= (a + m + n) * (b + m + n) / ((n + 1.0) * (n + m + 1.0)) * y;
    psi1 += 1.0 / (n + 1); psim += 1.0 / (n + m + 1);
    psia += 1.0 / (a + m + n); psib += 1.0 / (b + m + n);
    const double step = coefficient * (log_y - psi1 - psim + psia + psib);
    total += step;
    if (!(fabs(step) > 1e-17 * fabs(total))) break;
  }
  const double sign = (m %% 2 == 1) ? -1.0 : 1.0;
  const double second = sign * pow(y, m) * tgamma(c) * wb_rgamma(a) * wb_rgamma(b) * total;
  wb_sized r = {first - second, fabs(first) + fabs(second)};
  return r;
}
/* 2F1(a, b; c; 1 - y), 0 < y < 0.1: the transformation to y; near an integer c - a - b,
   the quadratic through the limiting form and two two-term values */
static inline wb_sized wb_hyp2f1_near_one(double a, double b, double c, double y) {
  const double d = c - a - b, m = round(d), e = d - m;
  if (!(fabs(e) < %(near)r)) return wb_hyp2f1_two(a, b, c, y);
  const double c0 = a + b + m;
  wb_sized limit = m < 0 ? wb_sized_scaled(pow(y, m),
                                           wb_hyp2f1_integer(c0 - a, c0 - b, y, (int)-m))
                         : wb_hyp2f1_integer(a, b, y, (int)m);
  const double up = wb_hyp2f1_two(a, b, a + b + (m + %(step)r), y).value;
  const double down = wb_hyp2f1_two(a, b, a + b + (m - %(step)r), y).value;
  const double slope = (up - down) / (2 * %(step)r);
  const double curve = (up + down - 2 * limit.value) / (2 * %(step)r * %(step)r);
  limit.value += e * (slope + e * curve);
  return limit;
}
/* 2F1(a, b; c; z), 0 <= z < 1, y = 1 - z exactly: the series, or where z > 0.9 the
   transformation to y if it cancels less */
static inline wb_sized wb_hyp2f1_unit(double a, double b, double c, double z, double y) {
  const wb_sized direct = wb_hyp2f1_sized_series(a, b, c, z);
  if (!(z > 0.9) || (a <= 0 && a == floor(a)) || (b <= 0 && b == floor(b))
      || !(fabs(c - a - b) < %(far)r))
    return direct;
  return wb_less_cancelling(direct, wb_hyp2f1_near_one(a, b, c, y));
}
static inline double wb_hyp2f1_float64(double a, double b, double c, double x) {
  if (x == 0 || ((a == 0 || b == 0) && c != 0)) return 1.0;  /* SciPy's, NaN or not */
  if (isnan(x) || (c <= 0 && c == floor(c))) return NAN;
  const int terminating = (a <= 0 && a == floor(a)) || (b <= 0 && b == floor(b));
  if (terminating && isinf(x)) return NAN;
  if (!terminating && x > 1) return NAN;
  if (!terminating && c == a) return pow(1 - x, -b);  /* exact */
  if (!terminating && c == b) return pow(1 - x, -a);
  if (x == 1 && !terminating) {  /* Gauss; an infinity with the sign of the x -> 1 limit */
    const double d = c - a - b;
    if (isnan(d)) return NAN;
    if (!(d > 0))
      return wb_gamma_sign(c) * wb_gamma_sign(-d) * wb_gamma_sign(a) * wb_gamma_sign(b)
             * INFINITY;
    double sign = wb_gamma_sign(c) * wb_gamma_sign(d) * wb_gamma_sign(c - a)
                  * wb_gamma_sign(c - b);  /* (+ 0.0: a zero is SciPy's +0) */
    return sign * exp(lgamma(c) + lgamma(d) - lgamma(c - a) - lgamma(c - b)) + 0.0;
  }
  if (x >= 1) return wb_hyp2f1_sized_series(a, b, c, x).value;  /* a polynomial */
  wb_sized best = {NAN, INFINITY};
  if (x < 0 || x <= 0.5) {  /* Pfaff's two forms, z = x / (x - 1) */
    const double y = 1 / (1 - x), z = isinf(x) ? 1.0 : -x * y;
    wb_sized by_a, by_b;
    if (x < 0) {
      by_a = wb_hyp2f1_unit(a, c - b, c, z, y);
      by_b = wb_hyp2f1_unit(b, c - a, c, z, y);
    } else {
      by_a = wb_hyp2f1_sized_series(a, c - b, c, z);
      by_b = wb_hyp2f1_sized_series(b, c - a, c, z);
    }
    best = wb_less_cancelling(wb_sized_scaled(pow(y, a), by_a),
                              wb_sized_scaled(pow(y, b), by_b));
  }
  if (x < 0) {
    if (x >= -1 || terminating)
      best = wb_less_cancelling(wb_hyp2f1_sized_series(a, b, c, x), best);
  } else {  /* the series or the transformation to 1 - x, and Euler's */
    best = wb_less_cancelling(wb_hyp2f1_unit(a, b, c, x, 1 - x), best);
    best = wb_less_cancelling(best, wb_sized_scaled(pow(1 - x, c - a - b),
                                                    wb_hyp2f1_unit(c - a, c - b, c, x, 1 - x)));
  }
  return best.value;
}
WB_FLOAT32_OF4(wb_hyp2f1)
"""
_define("wb_hyp2f1", _HYP2F1_C % {"near": hypergeometric.NEAR_INTEGER,
                                  "step": hypergeometric.STEP, "far": hypergeometric.FAR_D},
        "wb_beta", "wb_digamma")


def support_code(names: Iterable[str]) -> str:
    """The C defining the special functions `names` (unknown names are skipped) and the
    functions they call, each once, callees first."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered or name not in SPECIAL_C:
            return
        for need in SPECIAL_C[name][1]:
            visit(need)
        ordered.append(name)

    for name in sorted(set(names)):
        visit(name)
    if not ordered:
        return ""
    # each function guarded, so modules that bundle several nodes define it once
    guarded = []
    for name in ordered:
        guard = f"{name.upper()}_DEFINED"
        guarded.append(f"#ifndef {guard}\n#define {guard}\n{SPECIAL_C[name][0]}\n#endif\n")
    return _PRELUDE + "".join(guarded)
