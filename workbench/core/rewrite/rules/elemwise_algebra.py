"""Canonicalize, arithmetic part: elementwise algebra brought to one simple form.

Canonical forms make later passes simpler (stabilize and specialize look for
one shape of a pattern, not ten) and remove useless work: neutral elements
(``x+0``, ``x*1``, ``x-0``, ``x/1``, ``x**1``), absorbing ones (``x*0``),
``x*y/y``, ``x-x``, ``-(-x)``, constants collected through nested sums and
products, constant exponents as dedicated Ops (``x**2 -> sqr(x)``,
``x**0.5 -> sqrt(x)``, ``x**-1 -> reciprocal(x)``), and ``exp(log(x))`` /
``log(exp(x))``.

Like PyTensor's FAST_RUN these trade IEEE corner cases for speed, and say so:
``x*0 -> 0`` and ``x-x -> 0`` even where x is NaN or infinite, ``x*y/y -> x``
even where y is 0, ``exp(log(x)) -> x`` even for negative x. Every replacement
keeps the old output's dtype and run-time shape (`broadcast_like`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply
from workbench.core.rewrite.db import register_canonicalize
from workbench.core.rewrite.engine import PatternNodeRewriter, node_rewriter
from workbench.core.rewrite.rules.rule_utils import (
    broadcast_like,
    filled,
    is_constant_value,
    is_float,
    owner_scalar_op,
    scalar_op_of,
    single_client,
    uniform_constant,
)
from workbench.core.scalar import math as smath
from workbench.core.tensor import math as tm
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import constant

__all__ = [
    "ShapeSafePattern", "local_mul_div_same", "local_mul_div_same_left", "local_add_zero",
    "local_sub_zero", "local_mul_one", "local_div_one", "local_mul_zero", "local_sub_self",
    "local_neg_neg", "local_add_constants", "local_mul_constants", "local_pow_constant",
    "local_exp_log", "local_log_exp",
]  # fmt: skip


def _numeric(node: Apply) -> bool:
    """Outputs neither bool (where + is `or`) nor of another Type than tensors."""
    out = node.outputs[0]
    return isinstance(out.type, TensorType) and not out.type.dtype.is_bool


class ShapeSafePattern(PatternNodeRewriter):
    """A PatternNodeRewriter whose result goes through `broadcast_like`.

    `dropped` names the pattern variables that no longer appear in the result
    but took part in the old output's broadcast; when they might have made it
    larger, the result is allocated to the old shape (and always cast to the
    old dtype), so the pattern needs no shape or dtype constraints.
    """

    def __init__(self, in_pattern: Any, out_pattern: Any, dropped: tuple[str, ...] = (),
                 name: str | None = None, allow_multiple_clients: bool = False) -> None:
        super().__init__(in_pattern, out_pattern, name=name,
                         allow_multiple_clients=allow_multiple_clients)
        self.dropped = dropped

    def transform(self, fgraph: Any, node: Apply) -> Any:
        if len(node.outputs) != 1:
            return None
        binding: dict[str, Any] = {}
        old = node.outputs[0]
        if not self._match(fgraph, self.in_pattern, old, binding, top=True):
            return None
        new = self._build(self.out_pattern, binding, old)
        dropped = [binding[name] for name in self.dropped]
        return [broadcast_like(new, old, node, dropped=dropped, fgraph=fgraph)]


# x*y/y -> x (seed 001), wrong only where y is 0, inf or NaN (as in PyTensor).
local_mul_div_same = register_canonicalize(ShapeSafePattern(
    (tm.true_div.op, (tm.mul.op, "x", "y"), "y"), "x", dropped=("y",),
    name="local_mul_div_same", allow_multiple_clients=True))
local_mul_div_same_left = register_canonicalize(ShapeSafePattern(
    (tm.true_div.op, (tm.mul.op, "y", "x"), "y"), "x", dropped=("y",),
    name="local_mul_div_same_left", allow_multiple_clients=True))


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
    """``x + 0 -> x`` and ``0 + x -> x``."""
    return _drop_neutral(fgraph, node, smath.Add, 0, (0, 1))


@register_canonicalize
@node_rewriter([tm.sub.op])
def local_sub_zero(fgraph: Any, node: Apply) -> Any:
    """``x - 0 -> x``."""
    return _drop_neutral(fgraph, node, smath.Sub, 0, (1,))


@register_canonicalize
@node_rewriter([tm.mul.op])
def local_mul_one(fgraph: Any, node: Apply) -> Any:
    """``x * 1 -> x`` and ``1 * x -> x``."""
    return _drop_neutral(fgraph, node, smath.Mul, 1, (0, 1))


@register_canonicalize
@node_rewriter([tm.true_div.op])
def local_div_one(fgraph: Any, node: Apply) -> Any:
    """``x / 1 -> x`` (cast to the float output dtype for integer x)."""
    return _drop_neutral(fgraph, node, smath.TrueDiv, 1, (1,))


@register_canonicalize
@node_rewriter([tm.mul.op])
def local_mul_zero(fgraph: Any, node: Apply) -> Any:
    """``x * 0 -> zeros`` of the output's shape and dtype.

    Not IEEE-exact: NaN*0 and inf*0 are NaN, the rewrite gives 0 (PyTensor's
    FAST_RUN does the same; exclude ``local_mul_zero`` to keep NaNs).
    """
    if scalar_op_of(node, smath.Mul) is None or not _numeric(node):
        return None
    if any(is_constant_value(v, 0) for v in node.inputs):
        return [filled(0, node.outputs[0], node, fgraph)]
    return None


@register_canonicalize
@node_rewriter([tm.sub.op])
def local_sub_self(fgraph: Any, node: Apply) -> Any:
    """``x - x -> zeros`` (not IEEE-exact for inf and NaN, as ``local_mul_zero``)."""
    if scalar_op_of(node, smath.Sub) is None or not _numeric(node):
        return None
    x, y = node.inputs
    if x is not y:
        return None
    return [filled(0, node.outputs[0], node, fgraph)]


@register_canonicalize
@node_rewriter([tm.neg.op])
def local_neg_neg(fgraph: Any, node: Apply) -> Any:
    """``-(-x) -> x``."""
    if scalar_op_of(node, smath.Neg) is None:
        return None
    (inner,) = node.inputs
    if owner_scalar_op(inner, smath.Neg) is None:
        return None
    return [broadcast_like(inner.owner.inputs[0], node.outputs[0], node, fgraph=fgraph)]


def _collect_constants(fgraph: Any, node: Apply, scalar_class: type, combine: Any) -> Any:
    """``(x op c1) op c2 -> x op (c1 op c2)`` for a commutative, associative `op`.

    The constants may sit on either side; the inner node must have no other
    client (otherwise both would be computed).
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
            folded = node.op(x, constant(value))
            return [broadcast_like(folded, out, node, fgraph=fgraph)]
    return None


@register_canonicalize
@node_rewriter([tm.add.op])
def local_add_constants(fgraph: Any, node: Apply) -> Any:
    """``(x + 1) + 2 -> x + 3`` (constants collected through nested sums)."""
    return _collect_constants(fgraph, node, smath.Add, lambda a, b: a + b)


@register_canonicalize
@node_rewriter([tm.mul.op])
def local_mul_constants(fgraph: Any, node: Apply) -> Any:
    """``2 * (3 * x) -> 6 * x`` (constants collected through nested products)."""
    return _collect_constants(fgraph, node, smath.Mul, lambda a, b: a * b)


@register_canonicalize
@node_rewriter([tm.pow.op])
def local_pow_constant(fgraph: Any, node: Apply) -> Any:
    """Constant exponents as dedicated Ops: ``x**2 -> sqr(x)``, ``x**0.5 -> sqrt(x)``,
    ``x**-1 -> reciprocal(x)``, ``x**1 -> x``, ``x**0 -> ones``.

    The float-only forms (sqrt, reciprocal) apply only to float outputs: numpy
    refuses integers to negative integer powers.
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
    elif value == 0.5 and is_float(out):
        new = tm.sqrt(base)
    elif value == -1 and is_float(out):
        new = tm.reciprocal(base)
    else:
        return None
    return [broadcast_like(new, out, node, dropped=[exponent], fgraph=fgraph)]


@register_canonicalize
@node_rewriter([tm.exp.op])
def local_exp_log(fgraph: Any, node: Apply) -> Any:
    """``exp(log(x)) -> x`` (for x > 0; negative x gave NaN before, x after)."""
    if scalar_op_of(node, smath.Exp) is None:
        return None
    (inner,) = node.inputs
    if owner_scalar_op(inner, smath.Log) is None:
        return None
    x = inner.owner.inputs[0]
    if x.type.dtype.is_complex:
        return None
    return [broadcast_like(x, node.outputs[0], node, fgraph=fgraph)]


@register_canonicalize
@node_rewriter([tm.log.op])
def local_log_exp(fgraph: Any, node: Apply) -> Any:
    """``log(exp(x)) -> x`` for real x (also where exp(x) overflowed to inf)."""
    if scalar_op_of(node, smath.Log) is None:
        return None
    (inner,) = node.inputs
    if owner_scalar_op(inner, smath.Exp) is None:
        return None
    x = inner.owner.inputs[0]
    if x.type.dtype.is_complex:
        return None
    return [broadcast_like(x, node.outputs[0], node, fgraph=fgraph)]
