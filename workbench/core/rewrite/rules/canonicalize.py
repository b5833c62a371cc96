"""Canonicalize: bring graphs to one simple, equivalent form before anything else.

Canonical forms make the later passes simpler (each looks for one form of a
pattern) and remove useless nodes early. This module holds the structural
rules: DimShuffles merged, removed when they do nothing, and lifted through
Elemwise toward the inputs (where they meet and merge with the DimShuffles
that broadcasting inserted); useless `Reshape`, `SpecifyShape` and casts;
nested sums over axes; the shape of an `Alloc` read from its lengths. The
arithmetic rules (neutral and absorbing elements, ``x*y/y``, constants
collected, constant exponents, exp/log) live in `elemwise_algebra`, imported
here so that importing this module registers the whole family.

Each rule looks only at its node and the node's direct inputs (O(1) per node).
Domain: these rules move, drop or merge no arithmetic (a lossless cast, sums
over axes merged up to rounding), so they hold for every input value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant
from workbench.core.rewrite.db import register_canonicalize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.rewrite.rules import elemwise_algebra  # noqa: F401  (registers the family)
from workbench.core.rewrite.rules.rule_utils import broadcast_like, scalar_op_of, single_client
from workbench.core.scalar.basic import Cast
from workbench.core.tensor.basic import cast
from workbench.core.tensor.creation import Alloc
from workbench.core.tensor.elemwise import DimShuffle, Elemwise, SumToShape
from workbench.core.tensor.join import as_int_vector
from workbench.core.tensor.reduction import Sum
from workbench.core.tensor.reshape import Reshape
from workbench.core.tensor.shape import NoneConst, Shape, Shape_i, SpecifyShape

__all__ = [
    "local_dimshuffle_merge", "local_dimshuffle_identity", "local_dimshuffle_lift",
    "local_useless_reshape", "local_useless_specify_shape", "local_useless_cast",
    "local_cast_cast", "local_sum_sum", "local_shape_of_alloc", "local_shape_i_of_alloc",
    "local_useless_sum_to_shape",
]  # fmt: skip


# -- DimShuffle ------------------------------------------------------------------------


@register_canonicalize
@node_rewriter([DimShuffle])
def local_dimshuffle_merge(fgraph: Any, node: Apply) -> Any:
    """``DimShuffle{a}(DimShuffle{b}(x)) -> DimShuffle{a∘b}(x)`` (or x when the
    composition is the identity)."""
    (inner,) = node.inputs
    if inner.owner is None or not isinstance(inner.owner.op, DimShuffle):
        return None
    first = inner.owner.op.new_order
    composed = tuple("x" if d == "x" else first[d] for d in node.op.new_order)
    x = inner.owner.inputs[0]
    if composed == tuple(range(x.type.ndim)):
        return [x]
    return [DimShuffle(x.type.ndim, composed)(x)]


@register_canonicalize
@node_rewriter([DimShuffle])
def local_dimshuffle_identity(fgraph: Any, node: Apply) -> Any:
    """A DimShuffle that keeps every dimension in place is its input."""
    if node.op.new_order == tuple(range(node.op.input_ndim)):
        return [node.inputs[0]]
    return None


@register_canonicalize
@node_rewriter([DimShuffle])
def local_dimshuffle_lift(fgraph: Any, node: Apply) -> Any:
    """``DimShuffle(elemwise(x, y)) -> elemwise(DimShuffle(x), DimShuffle(y))``.

    Applies when the Elemwise result is used only by this DimShuffle (so
    nothing is computed twice) and at least one input is itself a DimShuffle
    or a constant (so the lifted DimShuffles merge or fold: that is when it
    helps). All Elemwise inputs have the output's rank, so the same
    DimShuffle applies to each; a dropped dimension has static length 1 in
    every input because it has in the output.
    """
    (inner,) = node.inputs
    if scalar_op_of(inner.owner) is None or len(inner.owner.outputs) != 1:
        return None
    if not single_client(fgraph, inner):
        return None
    inputs = inner.owner.inputs
    if not any(isinstance(v, Constant)
               or (v.owner is not None and isinstance(v.owner.op, DimShuffle)) for v in inputs):
        return None
    shuffled = [node.op(v) for v in inputs]
    new = inner.owner.op(*shuffled)
    return [broadcast_like(new, node.outputs[0], node, fgraph=fgraph)]


# -- reshape, specify_shape, casts --------------------------------------------------


@register_canonicalize
@node_rewriter([Reshape])
def local_useless_reshape(fgraph: Any, node: Apply) -> Any:
    """A Reshape to the input's own shape: same static shape (fully known), or the
    shape vector is ``x.shape``."""
    x, shape = node.inputs
    out = node.outputs[0]
    if x.type.ndim != out.type.ndim:
        return None
    if all(s is not None for s in x.type.shape) and x.type.shape == out.type.shape:
        return [x]
    if shape.owner is not None and isinstance(shape.owner.op, Shape) and shape.owner.inputs[0] is x:
        return [broadcast_like(x, out, node, fgraph=fgraph)]
    return None


@register_canonicalize
@node_rewriter([SpecifyShape])
def local_useless_specify_shape(fgraph: Any, node: Apply) -> Any:
    """A SpecifyShape promising nothing the input's type does not already say."""
    x, *lengths = node.inputs
    for known, length in zip(x.type.shape, lengths):
        if length is NoneConst or (isinstance(length, Constant) and length.data is None):
            continue
        if isinstance(length, Constant) and known is not None and int(length.data) == known:
            continue
        return None
    return [x]


@register_canonicalize
@node_rewriter([Elemwise])
def local_useless_cast(fgraph: Any, node: Apply) -> Any:
    """A cast to the dtype the input already has."""
    if scalar_op_of(node, Cast) is None:
        return None
    (x,) = node.inputs
    if x.type.dtype == node.outputs[0].type.dtype:
        return [x]
    return None


def _lossless(src: Any, dst: Any) -> bool:
    """True if every value of dtype `src` converts exactly to dtype `dst`."""
    try:
        return bool(np.can_cast(src.numpy, dst.numpy, casting="safe"))
    except TypeError:
        return False


@register_canonicalize
@node_rewriter([Elemwise])
def local_cast_cast(fgraph: Any, node: Apply) -> Any:
    """``cast(cast(x, d1), d2) -> cast(x, d2)`` when the first cast is lossless
    (int32 -> float64 -> float32 is float32 of x; int64 -> float64 is not lossless)."""
    if scalar_op_of(node, Cast) is None:
        return None
    (inner,) = node.inputs
    if scalar_op_of(inner.owner, Cast) is None:
        return None
    x = inner.owner.inputs[0]
    if not _lossless(x.type.dtype, inner.type.dtype):
        return None
    return [cast(x, node.outputs[0].type.dtype)]


# -- reductions ----------------------------------------------------------------------


@register_canonicalize
@node_rewriter([Sum])
def local_sum_sum(fgraph: Any, node: Apply) -> Any:
    """``sum(sum(x, a), b) -> sum(x, a ∪ b)`` (b renumbered to x's axes).

    Only for sums with default dtypes whose inner result has no other client.
    """
    (inner,) = node.inputs
    if inner.owner is None or type(inner.owner.op) is not Sum:
        return None
    first, second = inner.owner.op, node.op
    if any(op.dtype is not None or op.acc_dtype is not None for op in (first, second)):
        return None
    if not single_client(fgraph, inner):
        return None
    x = inner.owner.inputs[0]
    ndim = x.type.ndim
    axes_a = tuple(range(ndim)) if first.axis is None else first.axis
    remaining = [i for i in range(ndim) if i not in axes_a]
    axes_b = tuple(range(len(remaining))) if second.axis is None else second.axis
    merged = tuple(sorted(set(axes_a) | {remaining[j] for j in axes_b}))
    new = Sum(axis=None if merged == tuple(range(ndim)) else merged)(x)
    if new.type != node.outputs[0].type:
        return None
    return [new]


# -- shapes of allocations -------------------------------------------------------------


@register_canonicalize
@node_rewriter([Shape])
def local_shape_of_alloc(fgraph: Any, node: Apply) -> Any:
    """``shape(alloc(v, *lengths)) -> lengths`` as an int64 vector (no allocation needed)."""
    (x,) = node.inputs
    if x.owner is None or not isinstance(x.owner.op, Alloc):
        return None
    static = x.type.shape
    lengths = [s if s is not None else n for s, n in zip(static, x.owner.inputs[1:])]
    return [broadcast_like(as_int_vector(lengths), node.outputs[0], node, fgraph=fgraph)]


@register_canonicalize
@node_rewriter([Shape_i])
def local_shape_i_of_alloc(fgraph: Any, node: Apply) -> Any:
    """``Shape_i{i}(alloc(v, *lengths)) -> lengths[i]``."""
    (x,) = node.inputs
    if x.owner is None or not isinstance(x.owner.op, Alloc):
        return None
    length = x.owner.inputs[1 + node.op.i]
    return [broadcast_like(length, node.outputs[0], node, fgraph=fgraph)]


@register_canonicalize
@node_rewriter([SumToShape])
def local_useless_sum_to_shape(fgraph: Any, node: Apply) -> Any:
    """``SumToShape(g, *lengths) -> g`` when no dimension can be summed: each requested
    length is a constant other than 1, or g's length there is 1 or provably the
    requested one (the ShapeFeature). Gradients of Elemwise whose operands had one
    shape are full of these. Domain: every g (nothing is computed)."""
    from workbench.core.tensor.shape_feature import get_shape_feature, same_length

    g, *lengths = node.inputs
    feature = get_shape_feature(fgraph)
    for d, want in enumerate(lengths):
        wanted = int(want.data) if isinstance(want, Constant) else None
        if (wanted is not None and wanted != 1) or g.type.shape[d] == 1:
            continue
        if not same_length(feature.get_length(g, d), want):
            return None
    return [broadcast_like(g, node.outputs[0], node, fgraph=fgraph)]
