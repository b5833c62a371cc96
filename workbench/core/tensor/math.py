"""Elementwise tensor functions: arithmetic, comparisons, logic and math.

Each function builds an `Elemwise` node of the scalar Op of the same name, so
``exp(x)`` prints as ``Elemwise{exp}``. Arguments may be tensor Variables,
numbers, lists or arrays; Python numbers are weak (``float32_x * 2.5`` stays
float32). Broadcasting follows numpy. Dtype rules are those of
`workbench.core.scalar.math`: notably, true division and transcendental
functions of integers give the default float dtype, comparisons give bool.

The Elemwise Op behind each function is its ``.op`` attribute (``exp.op``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.core.graph.basic import Variable
from workbench.core.scalar import math as smath
from workbench.core.scalar.basic import ScalarOp
from workbench.core.tensor.elemwise import Elemwise
from workbench.core.tensor.variable import as_tensor_variable

TensorLike = Any  # a tensor Variable, a number, a (nested) list or a numpy array


def _unary(scalar_op: ScalarOp, name: str, doc: str) -> Callable[[TensorLike], Variable]:
    op = Elemwise(scalar_op)

    def function(x: TensorLike) -> Variable:
        return op(x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.op = op  # type: ignore[attr-defined]
    return function


def _binary(scalar_op: ScalarOp, name: str, doc: str
            ) -> Callable[[TensorLike, TensorLike], Variable]:
    op = Elemwise(scalar_op)

    def function(x: TensorLike, y: TensorLike) -> Variable:
        return op(x, y)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.op = op  # type: ignore[attr-defined]
    return function


# -- arithmetic --------------------------------------------------------------------

_add = Elemwise(smath.add)
_mul = Elemwise(smath.mul)


def add(x: TensorLike, y: TensorLike, *others: TensorLike) -> Variable:
    """x + y (+ others...), elementwise, folded left to right."""
    result = _add(x, y)
    for other in others:
        result = _add(result, other)
    return result


def mul(x: TensorLike, y: TensorLike, *others: TensorLike) -> Variable:
    """x * y (* others...), elementwise, folded left to right."""
    result = _mul(x, y)
    for other in others:
        result = _mul(result, other)
    return result


add.op = _add  # type: ignore[attr-defined]
mul.op = _mul  # type: ignore[attr-defined]

sub = _binary(smath.sub, "sub", "x - y, elementwise (not defined for booleans).")
true_div = _binary(smath.true_div, "true_div",
                   "x / y, elementwise; integer inputs give the default float dtype.")
floor_div = _binary(smath.int_div, "floor_div",
                    "x // y, elementwise, rounding toward minus infinity.")
int_div = floor_div
mod = _binary(smath.mod, "mod", "x % y, elementwise, with the sign of y (numpy's remainder).")
pow = _binary(smath.pow, "pow", "x ** y, elementwise.")
maximum = _binary(smath.maximum, "maximum", "The elementwise larger of x and y (NaN wins).")
minimum = _binary(smath.minimum, "minimum", "The elementwise smaller of x and y (NaN wins).")
neg = _unary(smath.neg, "neg", "-x, elementwise (not defined for booleans).")
abs = _unary(smath.abs, "abs", "|x|, elementwise; complex inputs give real outputs.")
sqr = _unary(smath.sqr, "sqr", "x * x, elementwise.")
square = sqr
reciprocal = _unary(smath.reciprocal, "reciprocal",
                    "1 / x, elementwise; integer inputs give the default float dtype.")
sign = _unary(smath.sign, "sign", "-1, 0 or 1 elementwise, in the input's dtype.")
identity = _unary(smath.identity, "identity", "A copy of x (an Elemwise rewrites remove).")

# -- comparisons and logic ---------------------------------------------------------

eq = _binary(smath.eq, "eq", "x == y, elementwise (bool). `==` on Variables is identity.")
neq = _binary(smath.neq, "neq", "x != y, elementwise (bool). `!=` on Variables is identity.")
lt = _binary(smath.lt, "lt", "x < y, elementwise (bool).")
gt = _binary(smath.gt, "gt", "x > y, elementwise (bool).")
le = _binary(smath.le, "le", "x <= y, elementwise (bool).")
ge = _binary(smath.ge, "ge", "x >= y, elementwise (bool).")
and_ = _binary(smath.and_, "and_", "x & y: bitwise and of integers, logical and of booleans.")
or_ = _binary(smath.or_, "or_", "x | y: bitwise or of integers, logical or of booleans.")
xor = _binary(smath.xor, "xor", "x ^ y: bitwise xor of integers, logical xor of booleans.")
invert = _unary(smath.invert, "invert", "~x: bitwise not of integers, logical not of booleans.")

_switch = Elemwise(smath.switch)


def switch(cond: TensorLike, ift: TensorLike, iff: TensorLike) -> Variable:
    """`ift` where `cond` is true, else `iff`, elementwise (numpy's ``where``).

    The output dtype promotes `ift` and `iff`; `cond` is read as booleans.
    """
    return _switch(cond, ift, iff)


switch.op = _switch  # type: ignore[attr-defined]
where = switch

_clip = Elemwise(smath.clip)


def clip(x: TensorLike, a_min: TensorLike | None, a_max: TensorLike | None) -> Variable:
    """`x` limited to [a_min, a_max], elementwise, as ``np.clip``.

    The bounds broadcast against `x` and take part in dtype promotion (weak
    Python numbers adopt `x`'s dtype). One bound may be None (no limit on that
    side: a plain `minimum` / `maximum`); with both None, `x` is returned.
    Where a_min > a_max the result is a_max; NaN in any input gives NaN.
    """
    if a_min is None and a_max is None:
        return as_tensor_variable(x)
    if a_min is None:
        return minimum(x, a_max)
    if a_max is None:
        return maximum(x, a_min)
    return _clip(x, a_min, a_max)


clip.op = _clip  # type: ignore[attr-defined]

# -- math --------------------------------------------------------------------------
# Integer and bool inputs give the default float dtype (float64 unless changed).


def elemwise_function(scalar_op: ScalarOp, name: str | None = None,
                      doc: str | None = None) -> Callable[..., Variable]:
    """The tensor function of `scalar_op`: ``f(x)`` (or ``f(x, y)``) builds an
    ``Elemwise{name}`` node; its Op is ``f.op``. Every declared scalar Op gets one here
    (`workbench.core.scalar.declared`); call this for an Op declared elsewhere."""
    name = name or scalar_op.name
    if doc is None:
        doc = f"{(type(scalar_op).__doc__ or name).strip()} Elementwise."
    if scalar_op.nin == 1:
        return _unary(scalar_op, name, doc)
    if scalar_op.nin == 2:
        return _binary(scalar_op, name, doc)
    op = Elemwise(scalar_op)

    def function(*xs: TensorLike) -> Variable:
        return op(*xs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.op = op  # type: ignore[attr-defined]
    return function


#: The tensor functions of the declared Ops (exp, log, erf, ...), by name.
DECLARED_FUNCTIONS = {op.name: elemwise_function(op) for op in smath.DECLARED_OPS}
globals().update(DECLARED_FUNCTIONS)
log1pexp = DECLARED_FUNCTIONS["softplus"]  # SciPy's / PyTensor's names for the same Op
expit = DECLARED_FUNCTIONS["sigmoid"]

floor = _unary(smath.floor, "floor", "Largest integer <= x, elementwise, in x's dtype.")
ceil = _unary(smath.ceil, "ceil", "Smallest integer >= x, elementwise, in x's dtype.")
round_half_to_even = _unary(smath.round_half_to_even, "round_half_to_even",
                            "Nearest integer with ties to even (numpy's round), in x's dtype.")
isnan = _unary(smath.isnan, "isnan", "True where x is NaN.")
isinf = _unary(smath.isinf, "isinf", "True where x is +inf or -inf.")
isfinite = _unary(smath.isfinite, "isfinite", "True where x is neither NaN nor infinite.")
real = _unary(smath.real, "real", "Real part, elementwise (x itself for real x).")
imag = _unary(smath.imag, "imag", "Imaginary part, elementwise (zeros for real x).")
conj = _unary(smath.conj, "conj", "Complex conjugate, elementwise (x itself for real x).")
angle = _unary(smath.angle, "angle", "Argument of complex x, elementwise (0 or pi for reals).")

__all__ = [
    "add", "sub", "mul", "true_div", "floor_div", "int_div", "mod", "pow", "neg", "abs",
    "maximum", "minimum", "sqr", "square", "reciprocal", "sign", "identity",
    "eq", "neq", "lt", "gt", "le", "ge", "and_", "or_", "xor", "invert", "switch", "where",
    "clip", "floor", "ceil", "round_half_to_even", "isnan", "isinf", "isfinite", "real", "imag",
    "conj", "angle", "elemwise_function", "log1pexp", "expit",
    *DECLARED_FUNCTIONS,
]  # fmt: skip
