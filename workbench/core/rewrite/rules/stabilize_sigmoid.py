"""Stabilize, logistic part: the sigmoid and softplus hidden in exp, log1p and 1/(1+exp).

``1/(1+exp(x))`` is ``sigmoid(-x)``, ``log1p(exp(x))`` is ``softplus(x)`` and
``log1p(-sigmoid(x))`` is ``-softplus(x)``; written naively they overflow for x
above about 709 (37 for the last, where ``1 - sigmoid(x)`` rounds to 0). The
gradient of ``1/(1+exp(x))`` is ``-exp(x) / (1+exp(x))**2``, which is
``inf / inf = NaN`` there: as ``-exp(x) * sigmoid(-x)**2`` (after
``local_reciprocal_1_plus_exp``) it becomes ``-sigmoid(x) * sigmoid(-x)``
through ``local_exp_times_sigmoid``, finite everywhere (-0.0 at x = 1000, as
PyTensor gives). These rules run in the stabilize pass with those of
`stabilize`; the NaN they remove came from rounding (an overflow or an
underflow), never from outside the expression's domain.
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply, Variable
from workbench.core.rewrite.db import register_stabilize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.rewrite.rules.rule_utils import (
    broadcast_like,
    is_constant_value,
    owner_scalar_op,
    single_client,
)
from workbench.core.scalar import math as smath
from workbench.core.tensor import math as tm

__all__ = [
    "local_log1p_exp", "local_log1p_neg_sigmoid", "local_reciprocal_1_plus_exp",
    "local_exp_times_sigmoid",
]  # fmt: skip


def _real_float(var: Variable) -> bool:
    return bool(var.type.dtype.is_float)


def _negated(var: Variable) -> Variable:
    """-var, without a double negation when var is already ``-u``."""
    if owner_scalar_op(var, smath.Neg) is not None:
        return var.owner.inputs[0]
    return tm.neg(var)


def _is_negation(a: Variable, b: Variable) -> bool:
    """True if a is ``-b`` or b is ``-a``."""
    return ((owner_scalar_op(a, smath.Neg) is not None and a.owner.inputs[0] is b)
            or (owner_scalar_op(b, smath.Neg) is not None and b.owner.inputs[0] is a))


@register_stabilize
@node_rewriter([tm.log1p.op])
def local_log1p_exp(fgraph: Any, node: Apply) -> Any:
    """``log1p(exp(x)) -> softplus(x)`` (``log(1 + exp(x))`` gets here through
    ``local_log1p``): x, not inf, for large x. Domain: every real x."""
    (arg,) = node.inputs
    if owner_scalar_op(arg, smath.Exp) is None or not _real_float(node.outputs[0]):
        return None
    x = arg.owner.inputs[0]
    return [broadcast_like(tm.softplus(x), node.outputs[0], node, fgraph=fgraph)]


@register_stabilize
@node_rewriter([tm.log1p.op])
def local_log1p_neg_sigmoid(fgraph: Any, node: Apply) -> Any:
    """``log1p(-sigmoid(x)) -> -softplus(x)``: about -x, not -inf, for x above 37.

    Domain: every real x (``log1p(-1) = -inf`` at x = inf either way)."""
    (arg,) = node.inputs
    if owner_scalar_op(arg, smath.Neg) is None:
        return None
    s = arg.owner.inputs[0]
    if owner_scalar_op(s, smath.Sigmoid) is None or not _real_float(node.outputs[0]):
        return None
    x = s.owner.inputs[0]
    return [broadcast_like(tm.neg(tm.softplus(x)), node.outputs[0], node, fgraph=fgraph)]


def _one_plus_exp(var: Variable) -> Variable | None:
    """x if `var` is ``1 + exp(x)`` or ``exp(x) + 1``."""
    if owner_scalar_op(var, smath.Add) is None:
        return None
    a, b = var.owner.inputs
    for one, e in ((a, b), (b, a)):
        if is_constant_value(one, 1) and owner_scalar_op(e, smath.Exp) is not None:
            return e.owner.inputs[0]
    return None


def _squared_one_plus_exp(var: Variable) -> Variable | None:
    """x if `var` is ``sqr(1 + exp(x))`` or ``(1 + exp(x)) * (1 + exp(x))``."""
    if owner_scalar_op(var, smath.Sqr) is not None:
        return _one_plus_exp(var.owner.inputs[0])
    if owner_scalar_op(var, smath.Mul) is not None:
        a, b = var.owner.inputs
        if a is b:
            return _one_plus_exp(a)
    return None


@register_stabilize
@node_rewriter([tm.true_div.op, tm.reciprocal.op])
def local_reciprocal_1_plus_exp(fgraph: Any, node: Apply) -> Any:
    """``g / (1 + exp(x)) -> g * sigmoid(-x)`` and ``g / (1 + exp(x))**2 ->
    g * sigmoid(-x)**2`` (g = 1: no product; also ``reciprocal(1 + exp(x))``).

    Domain: every real x and g (at x = inf both sides are ``g * 0``, at -inf ``g``).
    """
    out = node.outputs[0]
    if not _real_float(out):
        return None
    if owner_scalar_op(out, smath.Reciprocal) is not None:
        g, denominator = None, node.inputs[0]
    elif owner_scalar_op(out, smath.TrueDiv) is not None:
        g, denominator = node.inputs
    else:
        return None
    x = _one_plus_exp(denominator)
    if x is not None:
        new = tm.sigmoid(_negated(x))
    else:
        x = _squared_one_plus_exp(denominator)
        if x is None:
            return None
        new = tm.sqr(tm.sigmoid(_negated(x)))
    dropped = []
    if g is not None and is_constant_value(g, 1):
        dropped = [g]  # a broadcast 1 may have shaped the quotient
    elif g is not None:
        new = tm.mul(g, new)
    return [broadcast_like(new, out, node, dropped=dropped, fgraph=fgraph)]


def _product_factors(fgraph: Any, var: Variable, top: bool = False
                     ) -> tuple[bool, list[Variable]]:
    """(negated, factors) of the product tree of `var`: through binary products,
    negations and squares that have no other client (so nothing is computed twice)."""
    if not top and not single_client(fgraph, var):
        return False, [var]
    if owner_scalar_op(var, smath.Mul) is not None and len(var.owner.inputs) == 2:
        neg_a, a = _product_factors(fgraph, var.owner.inputs[0])
        neg_b, b = _product_factors(fgraph, var.owner.inputs[1])
        return neg_a != neg_b, a + b
    if owner_scalar_op(var, smath.Neg) is not None:
        negated, factors = _product_factors(fgraph, var.owner.inputs[0])
        return not negated, factors
    if owner_scalar_op(var, smath.Sqr) is not None:
        negated, factors = _product_factors(fgraph, var.owner.inputs[0])
        return False, factors + factors
    return False, [var]


@register_stabilize
@node_rewriter([tm.mul.op])
def local_exp_times_sigmoid(fgraph: Any, node: Apply) -> Any:
    """``exp(x) * sigmoid(-x) -> sigmoid(x)`` anywhere in a product tree (of binary
    products, negations and squares).

    Both are ``e**x / (1 + e**x)``; for x above about 709 the product is
    ``inf * 0 = NaN``, an overflow, where sigmoid(x) is 1. Domain: every real x.
    """
    out = node.outputs[0]
    if not _real_float(out):
        return None
    negated, factors = _product_factors(fgraph, out, top=True)
    for i, e in enumerate(factors):
        if owner_scalar_op(e, smath.Exp) is None:
            continue
        x = e.owner.inputs[0]
        for j, s in enumerate(factors):
            if owner_scalar_op(s, smath.Sigmoid) is None or not _is_negation(s.owner.inputs[0], x):
                continue
            rest = [f for k, f in enumerate(factors) if k not in (i, j)]
            new = tm.sigmoid(x)
            for f in rest:
                new = tm.mul(new, f)
            if negated:
                new = tm.neg(new)
            return [broadcast_like(new, out, node, fgraph=fgraph)]
    return None
