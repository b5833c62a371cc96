"""Stabilize: replace numerically fragile expressions by stable equivalents.

The naive forms lose everything at the extremes: ``log(1+x)`` is 0 for tiny
x, ``exp(x)-1`` cancels, ``log(sigmoid(x))`` is ``log(0) = -inf`` for x
below about -745, ``log(sum(exp(x)))`` overflows for x above about 709, and
``log(softmax(x))`` is ``log(0)`` where one logit dominates (also indexed:
``log(softmax(x)[0])``), ``log(exp(x) + exp(y))`` overflows above 709,
``log1p(expm1(x))`` too, and ``sqrt(sqr(x))`` above 1e154. These rules run
after canonicalize (so they see one form: constants on either side of ``+``,
the keepdims DimShuffle of a Sum) and swap in `log1p`, `expm1`, `softplus`,
`sigmoid(-x)`, `LogSumExp`, `LogSoftmax`, `logaddexp`, x itself and ``|x|``.
The softmax cross-entropy ``-sum(y * log(softmax(x)))`` becomes stable through
``log(softmax) -> log_softmax``, and its gradient through
``local_log_softmax_grad`` (no division by a probability that underflowed to
0). The sigmoid and softplus hidden in ``1/(1+exp(x))``, ``log1p(exp(x))`` and
their gradients are in `stabilize_sigmoid`.

Each rule looks only at its node and its direct inputs, or a short chain of
them (indexing between a log and a softmax).
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.rewrite.db import register_stabilize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.rewrite.rules.rule_utils import (
    broadcast_like,
    is_constant_value,
    is_float,
    owner_scalar_op,
    scalar_op_of,
)
from workbench.core.scalar import math as smath
from workbench.core.tensor import math as tm
from workbench.core.tensor.advanced_subtensor import AdvancedSubtensor
from workbench.core.tensor.elemwise import DimShuffle
from workbench.core.tensor.reduction import Sum
from workbench.core.tensor.special import LogSoftmax, LogSumExp, Softmax
from workbench.core.tensor.subtensor import Subtensor

__all__ = [
    "local_log1p", "local_expm1", "local_log_sigmoid", "local_one_minus_sigmoid",
    "local_log_sum_exp", "local_log_softmax", "local_log_softmax_grad", "local_log_add_exp",
    "local_log1p_expm1", "local_sqrt_sqr",
]  # fmt: skip


@register_stabilize
@node_rewriter([tm.log.op])
def local_log1p(fgraph: Any, node: Apply) -> Any:
    """``log(1 + x) -> log1p(x)`` (and ``log(x + 1)``): exact for tiny x.

    Domain: every x (both are NaN below -1 and -inf at -1)."""
    (arg,) = node.inputs
    if owner_scalar_op(arg, smath.Add) is None or not is_float(node.outputs[0]):
        return None
    a, b = arg.owner.inputs
    for one, x in ((a, b), (b, a)):
        if is_constant_value(one, 1):
            return [broadcast_like(tm.log1p(x), node.outputs[0], node, dropped=[one],
                                   fgraph=fgraph)]
    return None


@register_stabilize
@node_rewriter([tm.sub.op])
def local_expm1(fgraph: Any, node: Apply) -> Any:
    """``exp(x) - 1 -> expm1(x)``: no cancellation for small x. Domain: every x
    (-1 at -inf, inf at inf, NaN at NaN)."""
    e, one = node.inputs
    if not is_constant_value(one, 1) or owner_scalar_op(e, smath.Exp) is None:
        return None
    if not is_float(node.outputs[0]):
        return None
    x = e.owner.inputs[0]
    return [broadcast_like(tm.expm1(x), node.outputs[0], node, dropped=[one], fgraph=fgraph)]


@register_stabilize
@node_rewriter([tm.log.op])
def local_log_sigmoid(fgraph: Any, node: Apply) -> Any:
    """``log(sigmoid(x)) -> -softplus(-x)``: finite (about x) for very negative x.

    Domain: every x (-inf at -inf, 0 at inf, NaN at NaN)."""
    (arg,) = node.inputs
    if owner_scalar_op(arg, smath.Sigmoid) is None:
        return None
    x = arg.owner.inputs[0]
    return [broadcast_like(tm.neg(tm.softplus(tm.neg(x))), node.outputs[0], node,
                           fgraph=fgraph)]


@register_stabilize
@node_rewriter([tm.sub.op])
def local_one_minus_sigmoid(fgraph: Any, node: Apply) -> Any:
    """``1 - sigmoid(x) -> sigmoid(-x)``: keeps the tiny values 1 - s rounds to 0.

    Domain: every x."""
    one, s = node.inputs
    if not is_constant_value(one, 1) or owner_scalar_op(s, smath.Sigmoid) is None:
        return None
    x = s.owner.inputs[0]
    return [broadcast_like(tm.sigmoid(tm.neg(x)), node.outputs[0], node, dropped=[one],
                           fgraph=fgraph)]


@register_stabilize
@node_rewriter([tm.log.op])
def local_log_sum_exp(fgraph: Any, node: Apply) -> Any:
    """``log(sum(exp(x), axis)) -> logsumexp(x, axis)`` (max-shifted: no overflow).

    Also through the DimShuffle that ``keepdims=True`` (or any reshuffle)
    puts between the Sum and the log: it is applied to the LogSumExp. Domain:
    every x (LogSumExp shifts by finite maxima only: -inf for empty or all -inf
    rows, inf where an element is inf, NaN where one is NaN, as the naive form).
    """
    (arg,) = node.inputs
    shuffle = None
    if arg.owner is not None and isinstance(arg.owner.op, DimShuffle):
        shuffle = arg.owner.op
        arg = arg.owner.inputs[0]
    if arg.owner is None or type(arg.owner.op) is not Sum:
        return None
    sum_op = arg.owner.op
    if sum_op.dtype is not None or sum_op.acc_dtype is not None:
        return None
    (e,) = arg.owner.inputs
    if owner_scalar_op(e, smath.Exp) is None:
        return None
    x = e.owner.inputs[0]
    if not is_float(e) or e.type.dtype != x.type.dtype or x.type.dtype.is_complex:
        return None
    new = LogSumExp(sum_op.axis, keepdims=False)(x)
    if shuffle is not None:
        new = shuffle(new)
    return [broadcast_like(new, node.outputs[0], node, fgraph=fgraph)]


#: Ops that only select or rearrange elements: log of their result is their result
#: of the log, so ``log(softmax(x)[i])`` is ``log_softmax(x)[i]``.
_SELECTIONS = (Subtensor, AdvancedSubtensor, DimShuffle)


@register_stabilize
@node_rewriter([tm.log.op])
def local_log_softmax(fgraph: Any, node: Apply) -> Any:
    """``log(softmax(x)) -> log_softmax(x)``: finite where a probability underflows.

    Also through indexing and reshuffles of the softmax (``log(softmax(x)[0])``
    is ``log_softmax(x)[0]``). This also stabilizes the softmax cross-entropy
    ``-sum(y * log(softmax(x)))``. Domain: every x. A row holding NaN is NaN
    either way; a row holding +inf is NaN throughout as a softmax, while its
    log_softmax keeps -inf for the finite entries (their limit, as scipy's
    log_softmax).
    """
    if scalar_op_of(node) is None:
        return None
    (arg,) = node.inputs
    selections: list[Apply] = []
    while arg.owner is not None and isinstance(arg.owner.op, _SELECTIONS):
        selections.append(arg.owner)
        arg = arg.owner.inputs[0]
    if arg.owner is None or type(arg.owner.op) is not Softmax:
        return None
    new = LogSoftmax(arg.owner.op.axis)(arg.owner.inputs[0])
    for selection in reversed(selections):
        new = selection.op(new, *selection.inputs[1:])
    return [broadcast_like(new, node.outputs[0], node, fgraph=fgraph)]


@register_stabilize
@node_rewriter([tm.log.op])
def local_log_add_exp(fgraph: Any, node: Apply) -> Any:
    """``log(exp(x) + exp(y)) -> logaddexp(x, y)``: no overflow for large x or y.

    Domain: every real x and y (NumPy's logaddexp: equal infinities give
    themselves, NaN gives NaN).
    """
    (arg,) = node.inputs
    if owner_scalar_op(arg, smath.Add) is None or not is_float(node.outputs[0]):
        return None
    terms = arg.owner.inputs
    if any(owner_scalar_op(t, smath.Exp) is None for t in terms):
        return None
    exponents = [t.owner.inputs[0] for t in terms]
    if any(e.type.dtype.is_complex for e in exponents):
        return None
    new = tm.logaddexp(exponents[0], exponents[1])
    for e in exponents[2:]:
        new = tm.logaddexp(new, e)
    return [broadcast_like(new, node.outputs[0], node, fgraph=fgraph)]


@register_stabilize
@node_rewriter([tm.log1p.op])
def local_log1p_expm1(fgraph: Any, node: Apply) -> Any:
    """``log1p(expm1(x)) -> x``: exact where expm1 overflows (x above about 709).

    Domain: every real x (-inf at -inf, NaN at NaN).
    """
    (arg,) = node.inputs
    if owner_scalar_op(arg, smath.Expm1) is None:
        return None
    x = arg.owner.inputs[0]
    if x.type.dtype.is_complex:
        return None
    return [broadcast_like(x, node.outputs[0], node, fgraph=fgraph)]


@register_stabilize
@node_rewriter([tm.sqrt.op])
def local_sqrt_sqr(fgraph: Any, node: Apply) -> Any:
    """``sqrt(sqr(x)) -> abs(x)`` (and ``sqrt(x * x)``): no overflow of the square.

    Domain: every real float x (NaN and infinities give themselves). Not for
    integers, whose square wraps around, nor complex numbers (``sqrt(z**2)`` is
    z or -z, not ``|z|``).
    """
    (arg,) = node.inputs
    if owner_scalar_op(arg, smath.Sqr) is not None:
        x = arg.owner.inputs[0]
    elif owner_scalar_op(arg, smath.Mul) is not None and arg.owner.inputs[0] is arg.owner.inputs[1]:
        x = arg.owner.inputs[0]
    else:
        return None
    if not x.type.dtype.is_float:
        return None
    return [broadcast_like(tm.abs(x), node.outputs[0], node, fgraph=fgraph)]


def _over(var: Any, divisor: Any) -> Any:
    """g when `var` is ``g / divisor`` or ``g * (1 / divisor)`` (either order), else None."""
    if owner_scalar_op(var, smath.TrueDiv) is not None:
        num, den = var.owner.inputs
        return num if den is divisor else None
    if owner_scalar_op(var, smath.Mul) is None or len(var.owner.inputs) != 2:
        return None
    a, b = var.owner.inputs
    for g, inverse in ((a, b), (b, a)):
        if owner_scalar_op(inverse, smath.TrueDiv) is not None:
            one, den = inverse.owner.inputs
            if den is divisor and is_constant_value(one, 1):
                return g
    return None


@register_stabilize
@node_rewriter([tm.mul.op])
def local_log_softmax_grad(fgraph: Any, node: Apply) -> Any:
    """``s * (g/s - sum(g/s * s)) -> g - s * sum(g)`` for s = softmax(x).

    This is what backpropagating through ``log(softmax(x))`` builds: the gradient of
    log divides by the probabilities, and one that underflowed to 0 makes it
    ``0 * inf = NaN`` for the whole row, although the cost (log_softmax) is finite.
    Domain: every s = softmax(x) and g; the NaN it removes came from rounding
    only (a softmax is never 0 in exact arithmetic).
    """
    if len(node.inputs) != 2 or not is_float(node.outputs[0]):
        return None
    for s, diff in (node.inputs, node.inputs[::-1]):
        if s.owner is None or type(s.owner.op) is not Softmax:
            continue
        if owner_scalar_op(diff, smath.Sub) is None:
            continue
        g_over_s, summed = diff.owner.inputs
        g = _over(g_over_s, s)
        if g is None:
            continue
        shuffle = None
        if summed.owner is not None and isinstance(summed.owner.op, DimShuffle):
            shuffle, summed = summed.owner.op, summed.owner.inputs[0]
        if summed.owner is None or type(summed.owner.op) is not Sum:
            continue
        product = summed.owner.inputs[0]
        if (owner_scalar_op(product, smath.Mul) is None
                or sorted(map(id, product.owner.inputs)) != sorted((id(g_over_s), id(s)))):
            continue
        total = summed.owner.op(g)
        if shuffle is not None:
            total = shuffle(total)
        return [broadcast_like(tm.sub(g, tm.mul(s, total)), node.outputs[0], node,
                               fgraph=fgraph)]
    return None
