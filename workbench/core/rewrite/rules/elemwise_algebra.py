"""Canonicalize, arithmetic part: elementwise algebra brought to one simple form.

Canonical forms make later passes simpler (stabilize and specialize look for
one shape of a pattern, not ten) and remove useless work: neutral elements
(``x+0``, ``x*1``, ``x-0``, ``x/1``, ``x**1``), absorbing ones (``x*0``),
``x*y/y``, ``x-x``, ``-(-x)``, constants collected through nested sums and
products, constant exponents as dedicated Ops (``x**2 -> sqr(x)``,
``x**0.5 -> sqrt(x)``, ``x**-1 -> reciprocal(x)``), and ``exp(log(x))`` /
``log(exp(x))``.

Domains: a rule may only replace an expression by one that gives NumPy's value
of the original wherever the original is defined *and* wherever it is not (NaN
stays NaN, an infinity stays that infinity). Each rule's docstring states the
inputs on which the plain identity holds and how the rule keeps the others:
it applies only where nothing is outside (``x*0 -> 0`` for integers, whose
values are all finite), or its replacement carries the domain
(``exp(log(x)) -> switch(x >= 0, |x|, nan)``). Two freedoms remain, both
toward the exact value: reassociated constants (``(x+1)+2 -> x+3``) round
once instead of twice, and a replacement may skip an intermediate overflow
(``log(exp(800))`` is 800, not inf). The sign of a zero result is not kept
(``-0.0 + 0`` is ``-0.0``), as in PyTensor. tests/core/rewrite/
test_rewrite_domains.py checks every rule against NumPy outside its domain.
Every replacement keeps the old output's dtype and run-time shape
(`broadcast_like`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant
from workbench.core.rewrite.db import register_canonicalize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.rewrite.rules.rule_utils import (
    UNIFORM_CHECK_LIMIT,
    alloc_operand,
    broadcast_like,
    constant_data,
    filled,
    is_constant_value,
    is_float,
    owner_scalar_op,
    same_shape,
    scalar_op_of,
    single_client,
    uniform_constant,
)
from workbench.core.scalar import math as smath
from workbench.core.tensor import math as tm
from workbench.core.tensor.creation import Alloc, alloc
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import constant

__all__ = [
    "local_mul_div_same", "local_mul_div_same_left", "local_add_zero",
    "local_sub_zero", "local_mul_one", "local_div_one", "local_mul_zero", "local_sub_self",
    "local_neg_neg", "local_mul_alloc", "local_add_constants", "local_mul_constants",
    "local_pow_constant",
    "local_exp_log", "local_log_exp",
]  # fmt: skip


def _numeric(node: Apply) -> bool:
    """Outputs neither bool (where + is `or`) nor of another Type than tensors."""
    out = node.outputs[0]
    return isinstance(out.type, TensorType) and not out.type.dtype.is_bool


def _finite_nonzero_constant(var: Any) -> bool:
    """A constant (possibly broadcast) with every element finite and nonzero."""
    data = constant_data(var)
    if data is None or data.dtype.kind not in "iufc" or data.size > UNIFORM_CHECK_LIMIT:
        return False
    return bool(np.all(np.isfinite(data)) and np.all(data != 0))


def _nan_like(out: Any) -> Any:
    """A 0-d NaN constant of `out`'s (float) dtype."""
    return constant(np.asarray(np.nan, dtype=out.type.dtype.numpy))


def _mul_div_same(fgraph: Any, node: Apply, x_first: bool) -> Any:
    """``x*y/y -> x`` where ``x*y`` (``y*x`` unless `x_first`) is a float product.

    Domain of the identity: y finite and nonzero (``x*0/0``, ``x*inf/inf`` and
    ``x*nan/nan`` are NaN) and no wrap-around (an integer product may wrap, so
    the product must be float). A constant y that is finite and nonzero
    everywhere gives x; any other y gives ``switch(isfinite(y) & (y != 0), x, nan)``,
    which keeps the NaNs. Either skips the rounding, overflow or underflow of
    ``x*y`` (x is exact).
    """
    if scalar_op_of(node, smath.TrueDiv) is None:
        return None
    product, y = node.inputs
    if owner_scalar_op(product, smath.Mul) is None or not is_float(product):
        return None
    x, other = product.owner.inputs if x_first else product.owner.inputs[::-1]
    if other is not y and not (isinstance(y, Constant) and y.equals(other)):
        return None
    out = node.outputs[0]
    if _finite_nonzero_constant(y):
        return [broadcast_like(x, out, node, dropped=[y], fgraph=fgraph)]
    if y.type.dtype.is_complex:
        return None
    inside = tm.and_(tm.isfinite(y), tm.neq(y, 0))
    return [broadcast_like(tm.switch(inside, x, _nan_like(out)), out, node, fgraph=fgraph)]


@register_canonicalize
@node_rewriter([tm.true_div.op])
def local_mul_div_same(fgraph: Any, node: Apply) -> Any:
    """``x*y/y -> x`` (see `_mul_div_same` for its domain)."""
    return _mul_div_same(fgraph, node, x_first=True)


@register_canonicalize
@node_rewriter([tm.true_div.op])
def local_mul_div_same_left(fgraph: Any, node: Apply) -> Any:
    """``y*x/y -> x`` (see `_mul_div_same` for its domain)."""
    return _mul_div_same(fgraph, node, x_first=False)


def _always_finite(var: Any) -> bool:
    """True for integer and bool tensors: no value of theirs is NaN or infinite."""
    dtype = var.type.dtype
    return bool(dtype.is_bool or dtype.is_int)


def _drop_neutral(fgraph: Any, node: Apply, scalar_class: type, neutral: float,
                  positions: tuple[int, ...]) -> Any:
    """Replace a binary Elemwise by its other operand when the operand at one of
    `positions` is the constant `neutral`."""
    if scalar_op_of(node, scalar_class) is None or not _numeric(node):
        return None
    for pos in positions:
        if is_constant_value(node.inputs[pos], neutral):
            other = node.inputs[1 - pos]
            dropped = [node.inputs[pos]]
            return [broadcast_like(other, node.outputs[0], node, dropped=dropped,
                                   fgraph=fgraph)]
    return None


@register_canonicalize
@node_rewriter([tm.add.op])
def local_add_zero(fgraph: Any, node: Apply) -> Any:
    """``x + 0 -> x`` and ``0 + x -> x``. Domain: every x (NaN and infinities pass
    through unchanged; only the sign of a zero may change: ``-0.0 + 0`` is 0.0)."""
    return _drop_neutral(fgraph, node, smath.Add, 0, (0, 1))


@register_canonicalize
@node_rewriter([tm.sub.op])
def local_sub_zero(fgraph: Any, node: Apply) -> Any:
    """``x - 0 -> x``. Domain: every x (as ``local_add_zero``)."""
    return _drop_neutral(fgraph, node, smath.Sub, 0, (1,))


@register_canonicalize
@node_rewriter([tm.mul.op])
def local_mul_one(fgraph: Any, node: Apply) -> Any:
    """``x * 1 -> x`` and ``1 * x -> x``. Domain: every x (exact, NaN included)."""
    return _drop_neutral(fgraph, node, smath.Mul, 1, (0, 1))


@register_canonicalize
@node_rewriter([tm.mul.op])
def local_mul_alloc(fgraph: Any, node: Apply) -> Any:
    """``x * alloc(v, *shape) -> x * v`` when x already has the product's shape (the
    ShapeFeature proves it), and ``-> x`` when v is 1: the ones (or the ``1/n`` of a
    mean) a gradient starts from, filled to a shape only to be multiplied in.
    Domain: every x (the same products, NaN included)."""
    if scalar_op_of(node, smath.Mul) is None or not _numeric(node) or len(node.inputs) != 2:
        return None
    out = node.outputs[0]
    for pos in (0, 1):
        filled_with = alloc_operand(node.inputs[pos])
        other = node.inputs[1 - pos]
        if filled_with is None:
            continue
        if same_shape(fgraph, other, out):
            if is_constant_value(filled_with, 1):
                return [broadcast_like(other, out, node, fgraph=fgraph)]
            return [broadcast_like(tm.mul(filled_with, other), out, node, fgraph=fgraph)]
        data = constant_data(other)
        allocated = node.inputs[pos].owner
        if data is not None and data.size == 1 and isinstance(allocated.op, Alloc):
            # alloc(v, *shape) * c -> alloc(v * c, *shape): the constant joins the value
            value = tm.mul(filled_with, constant(data.reshape(())))
            return [broadcast_like(alloc(value, *allocated.inputs[1:]), out, node,
                                   fgraph=fgraph)]
    return None


@register_canonicalize
@node_rewriter([tm.true_div.op])
def local_div_one(fgraph: Any, node: Apply) -> Any:
    """``x / 1 -> x`` (cast to the float output dtype for integer x). Domain: every x
    (exact, NaN included)."""
    return _drop_neutral(fgraph, node, smath.TrueDiv, 1, (1,))


@register_canonicalize
@node_rewriter([tm.mul.op])
def local_mul_zero(fgraph: Any, node: Apply) -> Any:
    """``x * 0 -> zeros`` of the output's shape and dtype.

    Domain: finite x (``nan*0`` and ``inf*0`` are NaN), so only integer or bool x,
    whose every value is finite; a float x keeps its product.
    """
    if scalar_op_of(node, smath.Mul) is None or not _numeric(node):
        return None
    for pos in (0, 1):
        other = node.inputs[1 - pos]
        if is_constant_value(node.inputs[pos], 0) and _always_finite(other):
            return [filled(0, node.outputs[0], node, fgraph)]
    return None


@register_canonicalize
@node_rewriter([tm.sub.op])
def local_sub_self(fgraph: Any, node: Apply) -> Any:
    """``x - x -> zeros``. Domain: finite x (``inf - inf`` is NaN), so integer x only."""
    if scalar_op_of(node, smath.Sub) is None or not _numeric(node):
        return None
    x, y = node.inputs
    if x is not y or not _always_finite(x):
        return None
    return [filled(0, node.outputs[0], node, fgraph)]


@register_canonicalize
@node_rewriter([tm.neg.op])
def local_neg_neg(fgraph: Any, node: Apply) -> Any:
    """``-(-x) -> x``. Domain: every x (integers wrap around twice, exactly)."""
    if scalar_op_of(node, smath.Neg) is None:
        return None
    (inner,) = node.inputs
    if owner_scalar_op(inner, smath.Neg) is None:
        return None
    return [broadcast_like(inner.owner.inputs[0], node.outputs[0], node, fgraph=fgraph)]


def _lost_range(value: np.ndarray, parts: tuple[Any, ...], product: bool) -> bool:
    """True if float `value`, combined from finite `parts`, overflowed to an infinity
    or (a `product` of nonzero parts) underflowed to zero or a subnormal."""
    if value.dtype.kind not in "fc":
        return False  # integers wrap around exactly, in any order
    if not all(np.isfinite(p) for p in parts):
        return False
    if not np.isfinite(value):
        return True
    tiny = np.finfo(value.dtype).tiny
    return bool(product and all(p != 0 for p in parts) and abs(value) < tiny)


def _collect_constants(fgraph: Any, node: Apply, scalar_class: type, combine: Any,
                       product: bool) -> Any:
    """``(x op c1) op c2 -> x op (c1 op c2)`` for a commutative, associative `op`.

    The constants may sit on either side; the inner node must have no other
    client (otherwise both would be computed). Domain: every x as long as the
    combined constant is as exact as its parts: not when finite constants combine
    to an infinity (``(x*1e200)*1e200`` would give NaN at x = 0) or nonzero ones
    to zero or a subnormal (``(x*1e-200)*1e-200`` would give 0 at x = 1e300).
    Otherwise the result differs only by the rounding of the skipped intermediate.
    """
    if scalar_op_of(node, scalar_class) is None or not _numeric(node):
        return None
    out = node.outputs[0]
    for pos in (0, 1):
        c2 = uniform_constant(node.inputs[pos])
        inner = node.inputs[1 - pos]
        if c2 is None or owner_scalar_op(inner, scalar_class) is None:
            continue
        if not single_client(fgraph, inner):
            continue
        for ipos in (0, 1):
            c1 = uniform_constant(inner.owner.inputs[ipos])
            if c1 is None:
                continue
            x = inner.owner.inputs[1 - ipos]
            if x.type.dtype != out.type.dtype:
                continue  # the promotion happened at the constants: keep the order
            # every constant kept its static shape: broadcasting them is harmless only
            # when all have length 1 (the scalar-like constants the user writes)
            consts = (node.inputs[pos], inner.owner.inputs[ipos])
            if any(s != 1 for c in consts for s in c.type.shape):
                continue
            with np.errstate(all="ignore"):
                value = np.asarray(combine(c1, c2)).astype(out.type.dtype.numpy)
            if _lost_range(value, (c1, c2), product):
                continue
            folded = node.op(x, constant(value))
            return [broadcast_like(folded, out, node, fgraph=fgraph)]
    return None


@register_canonicalize
@node_rewriter([tm.add.op])
def local_add_constants(fgraph: Any, node: Apply) -> Any:
    """``(x + 1) + 2 -> x + 3`` (constants collected through nested sums; see
    `_collect_constants` for the domain)."""
    return _collect_constants(fgraph, node, smath.Add, lambda a, b: a + b, product=False)


@register_canonicalize
@node_rewriter([tm.mul.op])
def local_mul_constants(fgraph: Any, node: Apply) -> Any:
    """``2 * (3 * x) -> 6 * x`` (constants collected through nested products; see
    `_collect_constants` for the domain)."""
    return _collect_constants(fgraph, node, smath.Mul, lambda a, b: a * b, product=True)


@register_canonicalize
@node_rewriter([tm.pow.op])
def local_pow_constant(fgraph: Any, node: Apply) -> Any:
    """Constant exponents as dedicated Ops: ``x**2 -> sqr(x)``, ``x**0.5 -> sqrt(x)``,
    ``x**-1 -> reciprocal(x)``, ``x**1 -> x``, ``x**0 -> ones``.

    The float-only forms (sqrt, reciprocal) apply only to real float outputs: numpy
    refuses integers to negative integer powers. Domain: every x; NumPy's power
    itself takes these shortcuts for these exponents, so NaN, infinities and
    negative bases (``(-4)**0.5`` and ``sqrt(-4)`` are NaN, ``(-inf)**0.5`` too)
    give the same values.
    """
    if scalar_op_of(node, smath.Pow) is None or not _numeric(node):
        return None
    base, exponent = node.inputs
    value = uniform_constant(exponent)
    if value is None or isinstance(value, complex):
        return None
    out = node.outputs[0]
    if value == 0:
        return [filled(1, out, node, fgraph)]
    if value == 1:
        new = base
    elif value == 2:
        new = tm.sqr(base)
    elif value == 0.5 and out.type.dtype.is_float:
        new = tm.sqrt(base)
    elif value == -1 and out.type.dtype.is_float:
        new = tm.reciprocal(base)
    else:
        return None
    return [broadcast_like(new, out, node, dropped=[exponent], fgraph=fgraph)]


@register_canonicalize
@node_rewriter([tm.exp.op])
def local_exp_log(fgraph: Any, node: Apply) -> Any:
    """``exp(log(x)) -> switch(x >= 0, |x|, nan)``.

    Domain of the identity: x >= 0 (``log`` of a negative number is NaN; ``log(0)``
    is -inf, whose exp is 0). The switch keeps NaN outside it, as NumPy gives;
    ``|x|`` makes ``-0.0`` give 0.0 as ``exp(-inf)`` does. Real x only.
    """
    if scalar_op_of(node, smath.Exp) is None:
        return None
    (inner,) = node.inputs
    if owner_scalar_op(inner, smath.Log) is None:
        return None
    x = inner.owner.inputs[0]
    if x.type.dtype.is_complex:
        return None
    out = node.outputs[0]
    new = tm.switch(tm.ge(x, 0), tm.abs(x), _nan_like(out))
    return [broadcast_like(new, out, node, fgraph=fgraph)]


@register_canonicalize
@node_rewriter([tm.log.op])
def local_log_exp(fgraph: Any, node: Apply) -> Any:
    """``log(exp(x)) -> x`` for real x. Domain: every x (NaN and infinities give
    themselves); it also skips the overflow of exp (``log(exp(800))`` is 800)."""
    if scalar_op_of(node, smath.Log) is None:
        return None
    (inner,) = node.inputs
    if owner_scalar_op(inner, smath.Exp) is None:
        return None
    x = inner.owner.inputs[0]
    if x.type.dtype.is_complex:
        return None
    return [broadcast_like(x, node.outputs[0], node, fgraph=fgraph)]
