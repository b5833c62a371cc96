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
    upgrade_to_float_no_complex,
    zero_gradient,
)

# -- gradient helpers --------------------------------------------------------------
# Gradients follow seed 003 (see `ScalarOp.L_op`, which applies the integer rules and
# the dtype of each gradient). For complex numbers the convention is PyTensor's: the
# gradient of a real cost C wrt z = x + iy is dC/dx + i dC/dy, so a holomorphic f
# contributes ``gz * conj(f'(z))`` (`_chain`).

Vars = Sequence[Variable]


def _chain(gz: Variable, derivative: Variable) -> Variable:
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
        return [_chain(gz, self.derivative(_as_out(x, z), z))]


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
        return [_chain(gz, y), _chain(gz, x)]


class TrueDiv(BinaryScalarOp):
    """x / y; integer operands give the default float dtype."""

    nfunc, symbol, precedence = "true_divide", "/", 7
    default_preference = staticmethod(upgrade_to_float)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        (z,), (gz,) = outputs, output_grads
        x, y = (_as_out(v, z) for v in inputs)
        return [_chain(gz, 1 / y), _chain(gz, -(x / (y * y)))]


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
        gy = switch(eq(x, 0), 0, _chain(gz, z * log(x)))
        return [_chain(gz, y * x ** (y - 1)), gy]


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


Derivative = Callable[[Variable, Variable], Variable]


def _float_op(class_name: str, nfunc: str, doc: str, derivative: Derivative,
              complex_ok: bool = True, name: str | None = None) -> type[UnaryScalarOp]:
    """A unary Op computing numpy's `nfunc` under the float rule.

    `derivative(x, z)` is f'(x) as a scalar graph, given x (in the output dtype)
    and the output z = f(x), which it may reuse (exp' = z).
    """
    rule = upgrade_to_float if complex_ok else upgrade_to_float_no_complex
    attrs = {
        "__doc__": doc,
        "nfunc": nfunc,
        "default_preference": staticmethod(rule),
        "derivative": lambda self, x, z: derivative(x, z),
        "__module__": __name__,
    }
    if name is not None:
        attrs["name"] = name
    return type(class_name, (_Smooth,), attrs)


_LN2, _LN10 = _pymath.log(2.0), _pymath.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / _pymath.sqrt(_pymath.pi)

Exp = _float_op("Exp", "exp", "e ** x.", lambda x, z: z)
Exp2 = _float_op("Exp2", "exp2", "2 ** x.", lambda x, z: z * _LN2)
Expm1 = _float_op("Expm1", "expm1", "exp(x) - 1, accurate for small x.", lambda x, z: z + 1)
Log = _float_op("Log", "log", "Natural logarithm.", lambda x, z: 1 / x)
Log2 = _float_op("Log2", "log2", "Base-2 logarithm.", lambda x, z: 1 / (x * _LN2))
Log10 = _float_op("Log10", "log10", "Base-10 logarithm.", lambda x, z: 1 / (x * _LN10))
Log1p = _float_op("Log1p", "log1p", "log(1 + x), accurate for small x.",
                  lambda x, z: 1 / (x + 1))
Sqrt = _float_op("Sqrt", "sqrt", "Square root (nan for negative reals).",
                 lambda x, z: 0.5 / z)
Sin = _float_op("Sin", "sin", "Sine.", lambda x, z: cos(x))
Cos = _float_op("Cos", "cos", "Cosine.", lambda x, z: -sin(x))
Tan = _float_op("Tan", "tan", "Tangent.", lambda x, z: z * z + 1)
ArcSin = _float_op("ArcSin", "arcsin", "Inverse sine.", lambda x, z: 1 / sqrt(1 - x * x))
ArcCos = _float_op("ArcCos", "arccos", "Inverse cosine.", lambda x, z: -1 / sqrt(1 - x * x))
ArcTan = _float_op("ArcTan", "arctan", "Inverse tangent.", lambda x, z: 1 / (x * x + 1))
Sinh = _float_op("Sinh", "sinh", "Hyperbolic sine.", lambda x, z: cosh(x))
Cosh = _float_op("Cosh", "cosh", "Hyperbolic cosine.", lambda x, z: sinh(x))
Tanh = _float_op("Tanh", "tanh", "Hyperbolic tangent.", lambda x, z: 1 - z * z)
ArcSinh = _float_op("ArcSinh", "arcsinh", "Inverse hyperbolic sine.",
                    lambda x, z: 1 / sqrt(x * x + 1))
ArcCosh = _float_op("ArcCosh", "arccosh", "Inverse hyperbolic cosine.",
                    lambda x, z: 1 / sqrt(x * x - 1))
ArcTanh = _float_op("ArcTanh", "arctanh", "Inverse hyperbolic tangent.",
                    lambda x, z: 1 / (1 - x * x))


class ArcTan2(BinaryScalarOp):
    """arctan(y / x) in the right quadrant; inputs are (y, x) as in numpy."""

    nfunc = "arctan2"
    default_preference = staticmethod(upgrade_to_float_no_complex)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """d/dy = x / (x**2 + y**2), d/dx = -y / (x**2 + y**2)."""
        (z,), (gz,) = outputs, output_grads
        y, x = (_as_out(v, z) for v in inputs)
        scale = gz / (x * x + y * y)
        return [scale * x, -(scale * y)]


def _scipy_special(name: str) -> Callable[..., Any] | None:
    """scipy.special.<name> when scipy is installed (it is optional)."""
    try:
        import scipy.special
    except ImportError:  # pragma: no cover - scipy is present in development
        return None
    return getattr(scipy.special, name)


class _SpecialFunction(_Smooth):
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

    def derivative(self, x: Variable, z: Variable) -> Variable:
        return exp(-(x * x)) * _TWO_OVER_SQRT_PI


class Erfc(_SpecialFunction):
    """1 - erf(x), accurate for large x."""

    special_name = "erfc"
    fallback = staticmethod(_pymath.erfc)

    def derivative(self, x: Variable, z: Variable) -> Variable:
        return exp(-(x * x)) * -_TWO_OVER_SQRT_PI


class Sigmoid(_Smooth):
    """1 / (1 + exp(-x)), computed without overflow."""

    default_preference = staticmethod(upgrade_to_float_no_complex)

    def impl(self, x: Any) -> Any:
        x = np.asarray(x)
        # exp of a non-positive number never overflows.
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    def derivative(self, x: Variable, z: Variable) -> Variable:
        return z * (1 - z)


class Softplus(_Smooth):
    """log(1 + exp(x)), computed without overflow."""

    default_preference = staticmethod(upgrade_to_float_no_complex)

    def impl(self, x: Any) -> Any:
        return np.logaddexp(np.zeros((), dtype=np.asarray(x).dtype), x)

    def derivative(self, x: Variable, z: Variable) -> Variable:
        return sigmoid(x)


class LogAddExp(BinaryScalarOp):
    """log(exp(x) + exp(y)), computed without overflow (NumPy's logaddexp)."""

    nfunc = "logaddexp"
    default_preference = staticmethod(upgrade_to_float_no_complex)

    def grad_terms(self, inputs: Vars, outputs: Vars, output_grads: Vars) -> list[Variable]:
        """d/dx = sigmoid(x - y), d/dy = sigmoid(y - x): finite where exp would overflow."""
        (z,), (gz,) = outputs, output_grads
        x, y = (_as_out(v, z) for v in inputs)
        return [gz * sigmoid(x - y), gz * sigmoid(y - x)]


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
logaddexp = LogAddExp(name="logaddexp")
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
