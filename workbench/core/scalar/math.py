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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import Dtype, result_type
from workbench.core.graph.basic import Variable
from workbench.core.graph.type import grad_not_implemented
from workbench.core.scalar.basic import (
    BinaryScalarOp,
    ScalarOp,
    UnaryScalarOp,
    angle_out,
    bool_out,
    cast,
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
    zero_gradient,
)
from workbench.core.scalar.declared import DeclaredOp, declare

# -- gradient helpers --------------------------------------------------------------
# Gradients follow seed 003 (see `ScalarOp.L_op`, which applies the integer rules and
# the dtype of each gradient). For complex numbers the convention is PyTensor's: the
# gradient of a real cost C wrt z = x + iy is dC/dx + i dC/dy, so a holomorphic f
# contributes ``gz * conj(f'(z))`` (`_chain`).

Vars = Sequence[Variable]


def chain_rule(gz: Variable, derivative: Variable) -> Variable:
    """gz times the derivative (its conjugate for complex numbers)."""
    if derivative.type.dtype.is_complex:
        derivative = conj(derivative)
    return gz * derivative


def _as_out(x: Variable, z: Variable) -> Variable:
    """`x` in the dtype the Op computes in (its output's), as the kernel sees it."""
    return cast(x, z.type.dtype)


class _Smooth(UnaryScalarOp):
    """A unary Op with a derivative formula: ``gz * f'(x)`` (f' may reuse the output z)."""

    def derivative(self, x: Variable, z: Variable) -> Variable:
        raise NotImplementedError

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        (x,), (z,), (gz,) = inputs, outputs, output_grads
        return [chain_rule(gz, self.derivative(_as_out(x, z), z))]


class _PiecewiseConstant(UnaryScalarOp):
    """A unary Op that is constant almost everywhere: zero gradient (floor, sign, ...)."""

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        return [zero_gradient(inputs[0])]


# -- arithmetic --------------------------------------------------------------------


class Add(BinaryScalarOp):
    """x + y."""

    nfunc, symbol, precedence = "add", "+", 6
    default_preference = staticmethod(upcast_out)
    commutative = associative = True

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        return [output_grads[0]] * len(inputs)


class Sub(BinaryScalarOp):
    """x - y (not defined for booleans)."""

    nfunc, symbol, precedence = "subtract", "-", 6
    default_preference = staticmethod(upcast_out_nobool)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        (gz,) = output_grads
        return [gz, -gz]


class Mul(BinaryScalarOp):
    """x * y."""

    nfunc, symbol, precedence = "multiply", "*", 7
    default_preference = staticmethod(upcast_out)
    commutative = associative = True

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        (z,), (gz,) = outputs, output_grads
        x, y = (_as_out(v, z) for v in inputs)
        return [chain_rule(gz, y), chain_rule(gz, x)]


class TrueDiv(BinaryScalarOp):
    """x / y; integer operands give the default float dtype."""

    nfunc, symbol, precedence = "true_divide", "/", 7
    default_preference = staticmethod(upgrade_to_float)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        (z,), (gz,) = outputs, output_grads
        x, y = (_as_out(v, z) for v in inputs)
        return [chain_rule(gz, 1 / y), chain_rule(gz, -(x / (y * y)))]


class IntDiv(BinaryScalarOp):
    """x // y, rounding toward minus infinity (numpy's floor_divide)."""

    nfunc, symbol, precedence = "floor_divide", "//", 7
    default_preference = staticmethod(upcast_out_int8_nocomplex)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        return [zero_gradient(x) for x in inputs]  # a step function of x and y


class Mod(BinaryScalarOp):
    """x % y with the sign of y (numpy's remainder)."""

    nfunc, symbol, precedence = "remainder", "%", 7
    default_preference = staticmethod(upcast_out_int8_nocomplex)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """x % y = x - y * floor(x / y): d/dx = 1, d/dy = -floor(x / y) (off the jumps)."""
        (z,), (gz,) = outputs, output_grads
        x, y = (_as_out(v, z) for v in inputs)
        return [gz, -gz * int_div(x, y)]


class Pow(BinaryScalarOp):
    """x ** y; integers to negative integer powers raise ValueError, as in numpy."""

    nfunc, symbol, precedence = "power", "**", 9
    default_preference = staticmethod(upcast_out_bool_as_int8)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """d/dx = y * x**(y-1); d/dy = x**y * log(x), taken as 0 where x == 0.

        At x == 0 the y-derivative is 0 for y > 0 (0**y stays 0); setting it to 0
        rather than nan (0 * -inf) follows PyTensor. x < 0 gives nan wrt y.
        """
        (z,), (gz,) = outputs, output_grads
        x, y = (_as_out(v, z) for v in inputs)
        gy = switch(eq(x, 0), 0, chain_rule(gz, z * log(x)))
        return [chain_rule(gz, y * x ** (y - 1)), gy]


class Maximum(BinaryScalarOp):
    """The larger of x and y (NaN if either is NaN)."""

    nfunc = "maximum"
    default_preference = staticmethod(upcast_out)
    commutative = associative = True

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """The gradient goes to the selected input; on ties (x == y) all of it goes to x."""
        x, y = inputs
        (gz,) = output_grads
        pick_x = ge(x, y)
        return [switch(pick_x, gz, 0), switch(pick_x, 0, gz)]


class Minimum(BinaryScalarOp):
    """The smaller of x and y (NaN if either is NaN)."""

    nfunc = "minimum"
    default_preference = staticmethod(upcast_out)
    commutative = associative = True

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """The gradient goes to the selected input; on ties (x == y) all of it goes to x."""
        x, y = inputs
        (gz,) = output_grads
        pick_x = le(x, y)
        return [switch(pick_x, gz, 0), switch(pick_x, 0, gz)]


class Neg(UnaryScalarOp):
    """-x (not defined for booleans)."""

    nfunc, symbol, precedence = "negative", "-", 8
    default_preference = staticmethod(same_out_nobool)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        return [-output_grads[0]]


class Abs(UnaryScalarOp):
    """|x|; complex inputs give the real dtype of the same precision."""

    nfunc = "absolute"
    default_preference = staticmethod(complex_to_real)
    input_cast = None

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """sign(x) for reals (0 at 0); x / |x| for complex x (nan at 0)."""
        (x,), (z,), (gz,) = inputs, outputs, output_grads
        if x.type.dtype.is_complex:
            return [gz * (x / z)]
        return [gz * sign(_as_out(x, z))]


class Sqr(_Smooth):
    """x * x (named ``sqr``; booleans count as int8)."""

    nfunc = "square"
    default_preference = staticmethod(upcast_out_bool_as_int8)

    def derivative(self, x: Variable, z: Variable) -> Variable:
        return x * 2


class Reciprocal(_Smooth):
    """1 / x; integers give the default float dtype."""

    nfunc = "reciprocal"
    default_preference = staticmethod(upgrade_to_float)

    def derivative(self, x: Variable, z: Variable) -> Variable:
        return -(z * z)


class Sign(UnaryScalarOp):
    """-1, 0 or 1 with the input's dtype (z / |z| for complex)."""

    nfunc = "sign"
    default_preference = staticmethod(same_out_nobool)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """Zero for reals (a step function); not implemented for complex z / |z|."""
        (x,) = inputs
        if x.type.dtype.is_complex:
            return [grad_not_implemented(self, 0, x, "sign of a complex number")]
        return [zero_gradient(x)]


class Identity(UnaryScalarOp):
    """x itself (a placeholder rewrites remove; Elemwise copies unless inplace)."""

    default_preference = staticmethod(same_out)
    input_cast = None

    def impl(self, x: Any) -> Any:
        return x

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        return [output_grads[0]]


# -- comparisons and logic ---------------------------------------------------------


class _Comparison(BinaryScalarOp):
    """Compares in the promoted dtype of both inputs; the result is bool."""

    default_preference = staticmethod(bool_out)
    input_cast = "common"
    precedence = 1  # Python: comparisons bind looser than | ^ & (printing._PRECEDENCE)


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

    nfunc, symbol, precedence = "bitwise_and", "&", 4
    default_preference = staticmethod(int_or_bool_out)
    commutative = associative = True


class OR(BinaryScalarOp):
    """Bitwise or (logical or for booleans)."""

    nfunc, symbol, precedence = "bitwise_or", "|", 2
    default_preference = staticmethod(int_or_bool_out)
    commutative = associative = True


class XOR(BinaryScalarOp):
    """Bitwise exclusive or (logical xor for booleans)."""

    nfunc, symbol, precedence = "bitwise_xor", "^", 3
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

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """Each branch gets the gradient where it is selected; the condition gets zero.

        The condition is piecewise constant in its effect, so its gradient is 0
        (not undefined): a cost through ``switch(x > 0, x, 0)`` has gradient
        ``x > 0`` wrt x.
        """
        cond, _, _ = inputs
        (gz,) = output_grads
        return [zero_gradient(cond), switch(cond, gz, 0), switch(cond, 0, gz)]


class Clip(ScalarOp):
    """x limited to [lo, hi], elementwise (numpy's clip): ``minimum(maximum(x, lo), hi)``.

    Inputs are (x, lo, hi); the output promotes all three, as ``np.clip`` does.
    When lo > hi the result is hi; a NaN in any input gives NaN. One Op rather
    than a maximum/minimum pair so fusion and generated code see a single step.
    """

    nin = 3
    nfunc = "clip"
    default_preference = staticmethod(upcast_out)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """The gradient goes to whichever of x, lo, hi the output equals.

        Follows ``minimum(maximum(x, lo), hi)`` with ties to the first argument:
        x gets it for lo <= x <= hi (a bound touched by x counts as inside), lo
        where x < lo <= hi, hi where hi < max(x, lo) (so hi when lo > hi).
        """
        x, lo, hi = inputs
        (gz,) = output_grads
        inside_hi = le(maximum(x, lo), hi)
        x_wins = and_(inside_hi, ge(x, lo))
        lo_wins = and_(inside_hi, lt(x, lo))
        return [switch(x_wins, gz, 0), switch(lo_wins, gz, 0), switch(inside_hi, 0, gz)]


# -- float math --------------------------------------------------------------------
# One `declare` per function: its NumPy kernel, C function, torch function, derivative
# f'(x) given x (in the output dtype) and z = f(x), complex support and test domain.
# Everything else (C and torch kernels, tensor functions, test cases) derives from it.

_LN2, _LN10 = _pymath.log(2.0), _pymath.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / _pymath.sqrt(_pymath.pi)


def _libm(name: str) -> Callable[..., Any]:
    """A NumPy-array kernel for C-library function `name` that NumPy lacks (erf, erfc):
    Python's `math` function (the C library's) per element, in float64."""
    return np.vectorize(getattr(_pymath, name), otypes=[np.float64])


def _sigmoid_kernel(x: Any) -> Any:
    x = np.asarray(x)
    e = np.exp(-np.abs(x))  # exp of a non-positive number never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _torch_sigmoid(torch: Any, x: Any) -> Any:
    """torch's sigmoid, e^x below -80 (sigmoid = e^x (1 - e^x ...)): torch's float32 one
    is 0 from -88, where exp(-x) overflows, instead of the subnormal e^x (5.3e-44 at
    -99.6)."""
    return torch.where(x < -80, torch.exp(x), torch.sigmoid(x))


def _softplus_kernel(x: Any) -> Any:
    return np.logaddexp(np.zeros((), dtype=np.asarray(x).dtype), x)


exp = declare("Exp", "exp", "e ** x.", numpy="exp", c="exp", torch="exp",
              derivative=lambda x, z: z, complex_ok=True, domain=(-3, 3))
exp2 = declare("Exp2", "exp2", "2 ** x.", numpy="exp2", c="exp2", torch="exp2",
               derivative=lambda x, z: z * _LN2, complex_ok=True, domain=(-3, 3))
expm1 = declare("Expm1", "expm1", "exp(x) - 1, accurate for small x.", numpy="expm1",
                c="expm1", torch="expm1", derivative=lambda x, z: z + 1, complex_ok=True,
                domain=(-3, 3))
log = declare("Log", "log", "Natural logarithm.", numpy="log", c="log", torch="log",
              derivative=lambda x, z: 1 / x, complex_ok=True, domain=(0.1, 5))
log2 = declare("Log2", "log2", "Base-2 logarithm.", numpy="log2", c="log2", torch="log2",
               derivative=lambda x, z: 1 / (x * _LN2), complex_ok=True, domain=(0.1, 5))
log10 = declare("Log10", "log10", "Base-10 logarithm.", numpy="log10", c="log10",
                torch="log10", derivative=lambda x, z: 1 / (x * _LN10), complex_ok=True,
                domain=(0.1, 5))
log1p = declare("Log1p", "log1p", "log(1 + x), accurate for small x.", numpy="log1p",
                c="log1p", torch="log1p", derivative=lambda x, z: 1 / (x + 1),
                complex_ok=True, domain=(-0.9, 5))
sqrt = declare("Sqrt", "sqrt", "Square root (nan for negative reals).", numpy="sqrt",
               c="sqrt", torch="sqrt", derivative=lambda x, z: 0.5 / z, complex_ok=True,
               domain=(0.1, 5))
sin = declare("Sin", "sin", "Sine.", numpy="sin", c="sin", torch="sin",
              derivative=lambda x, z: cos(x), complex_ok=True, domain=(-3, 3))
cos = declare("Cos", "cos", "Cosine.", numpy="cos", c="cos", torch="cos",
              derivative=lambda x, z: -sin(x), complex_ok=True, domain=(-3, 3))
tan = declare("Tan", "tan", "Tangent.", numpy="tan", c="tan", torch="tan",
              derivative=lambda x, z: z * z + 1, complex_ok=True, domain=(-1.2, 1.2))
arcsin = declare("ArcSin", "arcsin", "Inverse sine.", numpy="arcsin", c="asin", torch="asin",
                 derivative=lambda x, z: 1 / sqrt(1 - x * x), complex_ok=True,
                 domain=(-0.8, 0.8))
arccos = declare("ArcCos", "arccos", "Inverse cosine.", numpy="arccos", c="acos",
                 torch="acos", derivative=lambda x, z: -1 / sqrt(1 - x * x), complex_ok=True,
                 domain=(-0.8, 0.8))
arctan = declare("ArcTan", "arctan", "Inverse tangent.", numpy="arctan", c="atan",
                 torch="atan", derivative=lambda x, z: 1 / (x * x + 1), complex_ok=True,
                 domain=(-3, 3))
sinh = declare("Sinh", "sinh", "Hyperbolic sine.", numpy="sinh", c="sinh", torch="sinh",
               derivative=lambda x, z: cosh(x), complex_ok=True, domain=(-3, 3))
cosh = declare("Cosh", "cosh", "Hyperbolic cosine.", numpy="cosh", c="cosh", torch="cosh",
               derivative=lambda x, z: sinh(x), complex_ok=True, domain=(-3, 3))
tanh = declare("Tanh", "tanh", "Hyperbolic tangent.", numpy="tanh", c="tanh", torch="tanh",
               derivative=lambda x, z: 1 - z * z, complex_ok=True, domain=(-3, 3))
arcsinh = declare("ArcSinh", "arcsinh", "Inverse hyperbolic sine.", numpy="arcsinh",
                  c="asinh", torch="asinh", derivative=lambda x, z: 1 / sqrt(x * x + 1),
                  complex_ok=True, domain=(-3, 3))
arccosh = declare("ArcCosh", "arccosh", "Inverse hyperbolic cosine.", numpy="arccosh",
                  c="acosh", torch="acosh", derivative=lambda x, z: 1 / sqrt(x * x - 1),
                  complex_ok=True, domain=(1.5, 5))
arctanh = declare("ArcTanh", "arctanh", "Inverse hyperbolic tangent.", numpy="arctanh",
                  c="atanh", torch="atanh", derivative=lambda x, z: 1 / (1 - x * x),
                  complex_ok=True, domain=(-0.8, 0.8))
arctan2 = declare("ArcTan2", "arctan2", "arctan(y / x) in the right quadrant; inputs are "
                  "(y, x) as in numpy.", nin=2, numpy="arctan2", c="atan2", torch="atan2",
                  derivative=lambda y, x, z: (x / (x * x + y * y), -(y / (x * x + y * y))),
                  domain=((0.5, 2), (0.5, 2)))
erf = declare("Erf", "erf", "The error function.", numpy=_libm("erf"), c="erf", torch="erf",
              derivative=lambda x, z: exp(-(x * x)) * _TWO_OVER_SQRT_PI, domain=(-2, 2),
              reference="math.erf")
erfc = declare("Erfc", "erfc", "1 - erf(x), accurate for large x.", numpy=_libm("erfc"),
               c="erfc", torch="erfc",
               derivative=lambda x, z: exp(-(x * x)) * -_TWO_OVER_SQRT_PI, domain=(-2, 2),
               reference="math.erfc")
sigmoid = declare("Sigmoid", "sigmoid", "1 / (1 + exp(-x)), computed without overflow.",
                  numpy=_sigmoid_kernel, c="wb_sigmoid", torch=_torch_sigmoid,
                  derivative=lambda x, z: z * (1 - z), domain=(-6, 6),
                  reference=lambda x: 1 / (1 + np.exp(-x)))
softplus = declare("Softplus", "softplus", "log(1 + exp(x)), computed without overflow.",
                   numpy=_softplus_kernel, c="wb_softplus", torch=None,
                   derivative=lambda x, z: sigmoid(x), domain=(-6, 6),
                   reference=lambda x: np.logaddexp(0.0, x))
logaddexp = declare("LogAddExp", "logaddexp", "log(exp(x) + exp(y)), computed without "
                    "overflow (NumPy's logaddexp).", nin=2, numpy="logaddexp", c=None,
                    torch="logaddexp", domain=((-4, 4), (-4, 4)),
                    derivative=lambda x, y, z: (sigmoid(x - y), sigmoid(y - x)))


class Floor(_PiecewiseConstant):
    """Largest integer <= x, in the input's dtype."""

    nfunc = "floor"
    default_preference = staticmethod(same_out_nocomplex)


class Ceil(_PiecewiseConstant):
    """Smallest integer >= x, in the input's dtype."""

    nfunc = "ceil"
    default_preference = staticmethod(same_out_nocomplex)


class RoundHalfToEven(_PiecewiseConstant):
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

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """gz for real x; gz + 0j for complex x (only the real part moves the output)."""
        return [output_grads[0]]


class Imag(UnaryScalarOp):
    """Imaginary part (zeros of the input's dtype for real inputs)."""

    nfunc = "imag"
    default_preference = staticmethod(complex_to_real)
    input_cast = None

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """gz * 1j for complex x; zero for real x (the output is always 0)."""
        (x,), (gz,) = inputs, output_grads
        if not x.type.dtype.is_complex:
            return [zero_gradient(x)]
        return [cast(gz, x.type.dtype) * 1j]


class Conj(UnaryScalarOp):
    """Complex conjugate (x itself for real inputs)."""

    nfunc = "conjugate"
    default_preference = staticmethod(same_out)
    input_cast = None

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        gz = output_grads[0]
        return [conj(gz) if gz.type.dtype.is_complex else gz]


class Angle(UnaryScalarOp):
    """Argument of a complex number; 0 or pi for real inputs."""

    nfunc = "angle"
    default_preference = staticmethod(angle_out)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """1j * gz / conj(z) for complex z (the gradient of atan2(Im z, Re z)); 0 for reals."""
        (x,), (gz,) = inputs, output_grads
        if not x.type.dtype.is_complex:
            return [zero_gradient(x)]
        return [(cast(gz, x.type.dtype) * 1j) / conj(x)]

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

from workbench.core.scalar.special import *  # noqa: E402,F403  (gammaln, erfinv, ...)

#: Every shared scalar Op instance by name (used by tests and by the tensor layer).
ALL_OPS: dict[str, ScalarOp] = {
    op.name: op for op in globals().copy().values() if isinstance(op, ScalarOp)
}

#: The Ops made by `declare`, in declaration order; their classes are bound here by
#: their names (``Exp is type(exp)``) so rewrites and users can test for them.
DECLARED_OPS: tuple[DeclaredOp, ...] = tuple(
    op for op in ALL_OPS.values() if isinstance(op, DeclaredOp))
globals().update({type(op).__name__: type(op) for op in DECLARED_OPS})

__all__ = [
    "ALL_OPS", "DECLARED_OPS", "chain_rule",
    *(name for name, value in globals().copy().items()
      if isinstance(value, type) and issubclass(value, ScalarOp)
      and value.__module__ == __name__ and not name.startswith("_")),
    *ALL_OPS,
]
