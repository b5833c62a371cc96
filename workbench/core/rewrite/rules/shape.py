"""Shape rewrites: the shape of a computed tensor without computing it.

``(exp(x) @ W).shape[0]`` is ``Shape_i{0}(Dot(exp(x), W))``; the ShapeFeature
(workbench.core.tensor.shape_feature) knows, through each Op's `infer_shape`,
that it equals ``Shape_i{0}(x)``, so the rewrite replaces it and exp and Dot
leave the graph. ``Shape(computed)`` becomes the vector of the inferred
lengths, and static lengths become constants. These run inside canonicalize.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite.db import register_shape
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.tensor.shape import Shape, Shape_i
from workbench.core.tensor.shape_feature import get_shape_feature
from workbench.core.tensor.variable import constant

__all__ = ["local_shape_i_of_computed", "local_shape_of_computed"]


def _is_own_length(entry: Any, var: Variable, d: int) -> bool:
    """Whether `entry` is just ``Shape_i{d}(var)`` (nothing gained by substituting it)."""
    owner = getattr(entry, "owner", None)
    return (owner is not None and isinstance(owner.op, Shape_i) and owner.op.i == d
            and owner.inputs[0] is var)


def _as_length(entry: Any) -> Variable:
    if isinstance(entry, Variable):
        return entry
    return constant(np.array(int(entry), dtype=np.int64))


@register_shape
@node_rewriter([Shape_i])
def local_shape_i_of_computed(fgraph: FunctionGraph, node: Apply) -> list[Variable] | None:
    """``Shape_i{d}(x)`` -> the length inferred from x's ancestors (or its static length)."""
    (x,) = node.inputs
    d = node.op.i
    static = x.type.shape[d]
    if static is not None:
        return [_as_length(static)]
    if x.owner is None or isinstance(x, Constant):
        return None
    entry = get_shape_feature(fgraph).get_length(x, d)
    if _is_own_length(entry, x, d):
        return None
    return [_as_length(entry)]


@register_shape
@node_rewriter([Shape])
def local_shape_of_computed(fgraph: FunctionGraph, node: Apply) -> list[Variable] | None:
    """``Shape(x)`` -> the vector of x's inferred lengths, when some are known without x."""
    from workbench.core.tensor.join import stack

    (x,) = node.inputs
    if x.type.ndim == 0:
        return [constant(np.zeros(0, dtype=np.int64))]
    if all(s is not None for s in x.type.shape):
        return [constant(np.array(x.type.shape, dtype=np.int64))]
    if x.owner is None or isinstance(x, Constant):
        return None
    shape = get_shape_feature(fgraph).get_shape(x)
    assert shape is not None
    if all(_is_own_length(e, x, d) for d, e in enumerate(shape)):
        return None
    return [stack([_as_length(e) for e in shape])]

