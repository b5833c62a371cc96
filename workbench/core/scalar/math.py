"""The scalar Ops: arithmetic, comparisons, logic, casts, switch and math functions.

Each Op is a small class naming its numpy kernel (`nfunc`) and its dtype rule,
with one module-level instance (``add``, ``exp``, ...) that users and rewrites
share. Dtype rules (see `workbench.core.scalar.basic`):

* arithmetic (``+ - * // % **``, maximum, minimum, clip): the promoted dtype, so
  integer overflow wraps as in numpy; ``-`` refuses booleans, ``// % **`` and
  square treat booleans as int8 (numpy does the same);
* true division and every transcendental function (exp, log, sin, sqrt,
  sigmoid, erf, ...): the promoted dtype, with bool/integer inputs raised to
  the *default float dtype* (float64 unless changed) rather than numpy's
  width-dependent float16/float32/float64;
* comparisons, isnan/isinf/isfinite: bool;
* abs, real, imag of complex: the real dtype of the same precision; angle of a
  real input follows the float rule;
* floor, ceil, round_half_to_even: the input dtype (numpy 2 keeps integers).
"""

from __future__ import annotations

import math as _pymath
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core.dtypes import Dtype, result_type
from workbench.core.scalar.basic import (
    BinaryScalarOp,
    ScalarOp,
    UnaryScalarOp,
    angle_out,
    bool_out,
    complex_to_real,
    int_or_bool_out,
    same_out,
    same_out_nobool,
    same_out_nocomplex,
    upcast_out,
    upcast_out_bool_as_int8,
    upcast_out_int8_nocomplex,
    upcast_out_nobool,
    upgrade_to_float,
    upgrade_to_float_no_complex,
)

# -- arithmetic --------------------------------------------------------------------


class Add(BinaryScalarOp):
    """x + y."""

    nfunc, symbol, precedence = "add", "+", 6
    default_preference = staticmethod(upcast_out)
    commutative = associative = True


class Sub(BinaryScalarOp):
    """x - y (not defined for booleans)."""

    nfunc, symbol, precedence = "subtract", "-", 6
    default_preference = staticmethod(upcast_out_nobool)


class Mul(BinaryScalarOp):
    """x * y."""

    nfunc, symbol, precedence = "multiply", "*", 7
    default_preference = staticmethod(upcast_out)
    commutative = associative = True


class TrueDiv(BinaryScalarOp):
    """x / y; integer operands give the default float dtype."""

    nfunc, symbol, precedence = "true_divide", "/", 7
    default_preference = staticmethod(upgrade_to_float)


class IntDiv(BinaryScalarOp):
    """x // y, rounding toward minus infinity (numpy's floor_divide)."""

    nfunc, symbol, precedence = "floor_divide", "//", 7
    default_preference = staticmethod(upcast_out_int8_nocomplex)


class Mod(BinaryScalarOp):
    """x % y with the sign of y (numpy's remainder)."""

    nfunc, symbol, precedence = "remainder", "%", 7
    default_preference = staticmethod(upcast_out_int8_nocomplex)


class Pow(BinaryScalarOp):
    """x ** y; integers to negative integer powers raise ValueError, as in numpy."""

    nfunc, symbol, precedence = "power", "**", 9
    default_preference = staticmethod(upcast_out_bool_as_int8)


class Maximum(BinaryScalarOp):
    """The larger of x and y (NaN if either is NaN)."""

    nfunc = "maximum"
    default_preference = staticmethod(upcast_out)
    commutative = associative = True


class Minimum(BinaryScalarOp):
    """The smaller of x and y (NaN if either is NaN)."""

    nfunc = "minimum"
    default_preference = staticmethod(upcast_out)
    commutative = associative = True


class Neg(UnaryScalarOp):
    """-x (not defined for booleans)."""

    nfunc, symbol, precedence = "negative", "-", 8
    default_preference = staticmethod(same_out_nobool)


class Abs(UnaryScalarOp):
    """|x|; complex inputs give the real dtype of the same precision."""

    nfunc = "absolute"
    default_preference = staticmethod(complex_to_real)
    input_cast = None


class Sqr(UnaryScalarOp):
    """x * x (named ``sqr``; booleans count as int8)."""

    nfunc = "square"
    default_preference = staticmethod(upcast_out_bool_as_int8)


class Reciprocal(UnaryScalarOp):
    """1 / x; integers give the default float dtype."""

    nfunc = "reciprocal"
    default_preference = staticmethod(upgrade_to_float)


class Sign(UnaryScalarOp):
    """-1, 0 or 1 with the input's dtype (z / |z| for complex)."""

    nfunc = "sign"
    default_preference = staticmethod(same_out_nobool)


class Identity(UnaryScalarOp):
    """x itself (a placeholder rewrites remove; Elemwise copies unless inplace)."""

    default_preference = staticmethod(same_out)
    input_cast = None

    def impl(self, x: Any) -> Any:
        return x


# -- comparisons and logic ---------------------------------------------------------


class _Comparison(BinaryScalarOp):
    """Compares in the promoted dtype of both inputs; the result is bool."""

    default_preference = staticmethod(bool_out)
    input_cast = "common"
    precedence = 4


class EQ(_Comparison):
    """x == y."""

    nfunc, symbol = "equal", "=="
    commutative = True


class NEQ(_Comparison):
    """x != y."""

    nfunc, symbol = "not_equal", "!="
    commutative = True


class LT(_Comparison):
    """x < y."""

    nfunc, symbol = "less", "<"


class GT(_Comparison):
    """x > y."""

    nfunc, symbol = "greater", ">"


class LE(_Comparison):
    """x <= y."""

    nfunc, symbol = "less_equal", "<="


class GE(_Comparison):
    """x >= y."""

    nfunc, symbol = "greater_equal", ">="


class AND(BinaryScalarOp):
    """Bitwise and (logical and for booleans)."""

    nfunc, symbol, precedence = "bitwise_and", "&", 3
    default_preference = staticmethod(int_or_bool_out)
    commutative = associative = True


class OR(BinaryScalarOp):
    """Bitwise or (logical or for booleans)."""

    nfunc, symbol, precedence = "bitwise_or", "|", 1
    default_preference = staticmethod(int_or_bool_out)
    commutative = associative = True


class XOR(BinaryScalarOp):
    """Bitwise exclusive or (logical xor for booleans)."""

    nfunc, symbol, precedence = "bitwise_xor", "^", 2
    default_preference = staticmethod(int_or_bool_out)
    commutative = associative = True


class Invert(UnaryScalarOp):
    """Bitwise not (logical not for booleans)."""

    nfunc, symbol, precedence = "invert", "~", 8
    default_preference = staticmethod(int_or_bool_out)


def _switch_out(cond: Dtype, a: Dtype, b: Dtype) -> tuple[Dtype, ...]:
    return (result_type(a, b),)


class Switch(ScalarOp):
    """``a if cond else b``, elementwise (numpy's where); the output promotes a and b."""

    nin = 3
    default_preference = staticmethod(_switch_out)
    input_cast = None
    dtype_inputs = (1, 2)

    def cast_inputs(self, inputs: Any, output_dtypes: Any) -> list[np.ndarray]:
        cond, a, b = inputs
        target = output_dtypes[0].numpy
        return [cond.astype(bool), a.astype(target, copy=False), b.astype(target, copy=False)]

    def impl(self, cond: Any, a: Any, b: Any) -> Any:
        return np.where(cond, a, b)


class Clip(ScalarOp):
    """x limited to [lo, hi], elementwise (numpy's clip): ``minimum(maximum(x, lo), hi)``.

    Inputs are (x, lo, hi); the output promotes all three, as ``np.clip`` does.
    When lo > hi the result is hi; a NaN in any input gives NaN. One Op rather
    than a maximum/minimum pair so fusion and generated code see a single step.
    """

    nin = 3
    nfunc = "clip"
    default_preference = staticmethod(upcast_out)


# -- float math --------------------------------------------------------------------


def _float_op(class_name: str, nfunc: str, doc: str, complex_ok: bool = True,
              name: str | None = None) -> type[UnaryScalarOp]:
    """A unary Op computing numpy's `nfunc` under the float rule."""
    rule = upgrade_to_float if complex_ok else upgrade_to_float_no_complex
    attrs = {
        "__doc__": doc,
        "nfunc": nfunc,
        "default_preference": staticmethod(rule),
        "__module__": __name__,
    }
    if name is not None:
        attrs["name"] = name
    return type(class_name, (UnaryScalarOp,), attrs)


Exp = _float_op("Exp", "exp", "e ** x.")
Exp2 = _float_op("Exp2", "exp2", "2 ** x.")
Expm1 = _float_op("Expm1", "expm1", "exp(x) - 1, accurate for small x.")
Log = _float_op("Log", "log", "Natural logarithm.")
Log2 = _float_op("Log2", "log2", "Base-2 logarithm.")
Log10 = _float_op("Log10", "log10", "Base-10 logarithm.")
Log1p = _float_op("Log1p", "log1p", "log(1 + x), accurate for small x.")
Sqrt = _float_op("Sqrt", "sqrt", "Square root (nan for negative reals).")
Sin = _float_op("Sin", "sin", "Sine.")
Cos = _float_op("Cos", "cos", "Cosine.")
Tan = _float_op("Tan", "tan", "Tangent.")
ArcSin = _float_op("ArcSin", "arcsin", "Inverse sine.")
ArcCos = _float_op("ArcCos", "arccos", "Inverse cosine.")
ArcTan = _float_op("ArcTan", "arctan", "Inverse tangent.")
Sinh = _float_op("Sinh", "sinh", "Hyperbolic sine.")
Cosh = _float_op("Cosh", "cosh", "Hyperbolic cosine.")
Tanh = _float_op("Tanh", "tanh", "Hyperbolic tangent.")
ArcSinh = _float_op("ArcSinh", "arcsinh", "Inverse hyperbolic sine.")
ArcCosh = _float_op("ArcCosh", "arccosh", "Inverse hyperbolic cosine.")
ArcTanh = _float_op("ArcTanh", "arctanh", "Inverse hyperbolic tangent.")


class ArcTan2(BinaryScalarOp):
    """arctan(y / x) in the right quadrant; inputs are (y, x) as in numpy."""

    nfunc = "arctan2"
    default_preference = staticmethod(upgrade_to_float_no_complex)


def _scipy_special(name: str) -> Callable[..., Any] | None:
    """scipy.special.<name> when scipy is installed (it is optional)."""
    try:
        import scipy.special
    except ImportError:  # pragma: no cover - scipy is present in development
        return None
    return getattr(scipy.special, name)


class _SpecialFunction(UnaryScalarOp):
    """A real function from scipy.special, with a pure-Python fallback."""

    default_preference = staticmethod(upgrade_to_float_no_complex)
    special_name = ""
    fallback: Callable[[float], float] = staticmethod(_pymath.erf)
    _kernel: Callable[..., Any] | None = None

    def impl(self, x: Any) -> Any:
        kernel = type(self)._kernel
        if kernel is None:
            kernel = _scipy_special(self.special_name)
            if kernel is None:
                kernel = np.vectorize(self.fallback, otypes=[np.float64])
            type(self)._kernel = kernel
        return kernel(x)


class Erf(_SpecialFunction):
    """The error function."""

    special_name = "erf"
    fallback = staticmethod(_pymath.erf)


class Erfc(_SpecialFunction):
    """1 - erf(x), accurate for large x."""

    special_name = "erfc"
    fallback = staticmethod(_pymath.erfc)


class Sigmoid(UnaryScalarOp):
    """1 / (1 + exp(-x)), computed without overflow."""

    default_preference = staticmethod(upgrade_to_float_no_complex)

    def impl(self, x: Any) -> Any:
        x = np.asarray(x)
        # exp of a non-positive number never overflows.
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


class Softplus(UnaryScalarOp):
    """log(1 + exp(x)), computed without overflow."""

    default_preference = staticmethod(upgrade_to_float_no_complex)

    def impl(self, x: Any) -> Any:
        return np.logaddexp(np.zeros((), dtype=np.asarray(x).dtype), x)


class Floor(UnaryScalarOp):
    """Largest integer <= x, in the input's dtype."""

    nfunc = "floor"
    default_preference = staticmethod(same_out_nocomplex)


class Ceil(UnaryScalarOp):
    """Smallest integer >= x, in the input's dtype."""

    nfunc = "ceil"
    default_preference = staticmethod(same_out_nocomplex)


class RoundHalfToEven(UnaryScalarOp):
    """Nearest integer, ties to even (numpy's round / rint), in the input's dtype."""

    nfunc = "rint"
    default_preference = staticmethod(same_out_nocomplex)
    name = "round_half_to_even"


class IsNan(UnaryScalarOp):
    """True where x is NaN."""

    nfunc = "isnan"
    default_preference = staticmethod(bool_out)
    input_cast = None


class IsInf(UnaryScalarOp):
    """True where x is +inf or -inf."""

    nfunc = "isinf"
    default_preference = staticmethod(bool_out)
    input_cast = None


class IsFinite(UnaryScalarOp):
    """True where x is neither NaN nor infinite."""

    nfunc = "isfinite"
    default_preference = staticmethod(bool_out)
    input_cast = None


class Real(UnaryScalarOp):
    """Real part (x itself for real inputs)."""

    nfunc = "real"
    default_preference = staticmethod(complex_to_real)
    input_cast = None


class Imag(UnaryScalarOp):
    """Imaginary part (zeros of the input's dtype for real inputs)."""

    nfunc = "imag"
    default_preference = staticmethod(complex_to_real)
    input_cast = None


class Conj(UnaryScalarOp):
    """Complex conjugate (x itself for real inputs)."""

    nfunc = "conjugate"
    default_preference = staticmethod(same_out)
    input_cast = None


class Angle(UnaryScalarOp):
    """Argument of a complex number; 0 or pi for real inputs."""

    nfunc = "angle"
    default_preference = staticmethod(angle_out)

    def cast_inputs(self, inputs: Any, output_dtypes: Any) -> list[np.ndarray]:
        (x,) = inputs
        if x.dtype.kind == "c":
            return [x]
        return [x.astype(output_dtypes[0].numpy)]


# -- the shared instances ------------------------------------------------------------

add = Add(name="add")
sub = Sub(name="sub")
mul = Mul(name="mul")
true_div = TrueDiv(name="true_div")
int_div = IntDiv(name="int_div")
mod = Mod(name="mod")
pow = Pow(name="pow")
neg = Neg(name="neg")
abs = Abs(name="abs")
maximum = Maximum(name="maximum")
minimum = Minimum(name="minimum")
sqr = Sqr(name="sqr")
reciprocal = Reciprocal(name="reciprocal")
sign = Sign(name="sign")
identity = Identity(name="identity")

eq = EQ(name="eq")
neq = NEQ(name="neq")
lt = LT(name="lt")
gt = GT(name="gt")
le = LE(name="le")
ge = GE(name="ge")
and_ = AND(name="and_")
or_ = OR(name="or_")
xor = XOR(name="xor")
invert = Invert(name="invert")
switch = Switch(name="switch")
clip = Clip(name="clip")

exp = Exp(name="exp")
exp2 = Exp2(name="exp2")
expm1 = Expm1(name="expm1")
log = Log(name="log")
log2 = Log2(name="log2")
log10 = Log10(name="log10")
log1p = Log1p(name="log1p")
sqrt = Sqrt(name="sqrt")
sin = Sin(name="sin")
cos = Cos(name="cos")
tan = Tan(name="tan")
arcsin = ArcSin(name="arcsin")
arccos = ArcCos(name="arccos")
arctan = ArcTan(name="arctan")
arctan2 = ArcTan2(name="arctan2")
sinh = Sinh(name="sinh")
cosh = Cosh(name="cosh")
tanh = Tanh(name="tanh")
arcsinh = ArcSinh(name="arcsinh")
arccosh = ArcCosh(name="arccosh")
arctanh = ArcTanh(name="arctanh")
sigmoid = Sigmoid(name="sigmoid")
softplus = Softplus(name="softplus")
erf = Erf(name="erf")
erfc = Erfc(name="erfc")
floor = Floor(name="floor")
ceil = Ceil(name="ceil")
round_half_to_even = RoundHalfToEven(name="round_half_to_even")
isnan = IsNan(name="isnan")
isinf = IsInf(name="isinf")
isfinite = IsFinite(name="isfinite")
real = Real(name="real")
imag = Imag(name="imag")
conj = Conj(name="conj")
angle = Angle(name="angle")

#: Every shared scalar Op instance by name (used by tests and by the tensor layer).
ALL_OPS: dict[str, ScalarOp] = {
    op.name: op for op in globals().copy().values() if isinstance(op, ScalarOp)
}
