"""Helpers shared by the canonicalize, stabilize and specialize rules.

Everything here looks at one node and its direct inputs, so each rule stays
O(1) per node. The central helper is `broadcast_like`: a replacement must have
exactly the old output's type AND the old output's run-time shape. Tensors of
unknown length broadcast at run time here (numpy semantics), so dropping an
operand (``x*y/y -> x``, ``x*0 -> zeros``) may shrink the result; then the
replacement is wrapped in an `Alloc` to the broadcast shape, computed from the
node's inputs by its Op's `infer_shape`. When static shapes prove nothing was
lost (the dropped operands have length 1 in every dimension, as scalar
constants do), the replacement is used as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.scalar.basic import ScalarOp
from workbench.core.tensor.basic import cast
from workbench.core.tensor.creation import alloc
from workbench.core.tensor.elemwise import DimShuffle, Elemwise, broadcast_length
from workbench.core.tensor.shape import shape_i, specify_shape
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable, constant

#: Constants with more elements than this are not inspected for a uniform value.
UNIFORM_CHECK_LIMIT = 4096


def scalar_op_of(node: Apply | None, *classes: type) -> ScalarOp | None:
    """The scalar Op of `node` if it is a plain (not in-place) Elemwise of one of `classes`."""
    if node is None:
        return None
    op = node.op
    if not isinstance(op, Elemwise) or op.inplace_pattern:
        return None
    if classes and not isinstance(op.scalar_op, classes):
        return None
    return op.scalar_op


def owner_scalar_op(var: Variable, *classes: type) -> ScalarOp | None:
    """`scalar_op_of` for the node computing `var`."""
    return scalar_op_of(var.owner, *classes)


def constant_data(var: Variable) -> np.ndarray | None:
    """The array of `var` if it is a tensor constant, possibly behind DimShuffles
    (which only broadcast or drop length-1 axes, so the values are the same)."""
    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    if not isinstance(var, Constant) or not isinstance(var.type, TensorType):
        return None
    return np.asarray(var.data)


def uniform_constant(var: Variable) -> Any:
    """The value of every element of `var` if it is a constant (possibly behind
    DimShuffles) whose elements all have one value; None otherwise."""
    data = constant_data(var)
    if data is None or data.size == 0 or data.size > UNIFORM_CHECK_LIMIT:
        return None
    first = data.reshape(-1)[0]
    if data.size > 1 and not np.all(data == first):
        return None
    return first.item()


def is_constant_value(var: Variable, value: float) -> bool:
    """True if `var` is a uniform constant equal to `value`."""
    found = uniform_constant(var)
    return found is not None and not isinstance(found, bool) and found == value


def single_client(fgraph: Any, var: Variable) -> bool:
    """True if `var` is used exactly once in `fgraph` (and is not an output)."""
    clients = fgraph.clients.get(var, ()) if fgraph is not None else ()
    return len(clients) == 1 and not isinstance(clients[0][0], str)


def broadcast_like(new: Any, old: Variable, node: Apply, dropped: Sequence[Variable] = (),
                   fgraph: Any = None) -> Variable:
    """`new` made a drop-in replacement for `old` (an output of `node`).

    Casts to `old`'s dtype, left-pads dimensions, and when `new` may be
    shorter than `old` in some dimension at run time (because an operand in
    `dropped` took part in the broadcast), allocates it to `old`'s shape.
    Finally a SpecifyShape refines static lengths `new` does not know.
    """
    new = as_tensor_variable(new)
    otype = old.type
    if new.type.dtype != otype.dtype:
        new = cast(new, otype.dtype)
    if new.type.ndim < otype.ndim:
        pad = otype.ndim - new.type.ndim
        new = DimShuffle(new.type.ndim, ("x",) * pad + tuple(range(new.type.ndim)))(new)
    if new.type.ndim != otype.ndim:
        raise ValueError(f"cannot replace {old} ({otype}) by {new} ({new.type}): ranks differ")
    if not _same_length_everywhere(new, old, dropped) and not same_shape(fgraph, new, old):
        new = alloc(new, *_output_lengths(old, [new, *dropped]))
    if new.type != otype:
        new = specify_shape(new, otype.shape)
    return new


def _same_length_everywhere(new: Variable, old: Variable, dropped: Sequence[Variable]) -> bool:
    """True if static shapes prove `new` has `old`'s run-time length in every dimension."""
    ndim = len(old.type.shape)
    for d, (n, o) in enumerate(zip(new.type.shape, old.type.shape)):
        if n is not None:
            if n == o or (o is None and n != 1):
                continue
            return False
        for var in dropped:  # n unknown: only operands of static length 1 leave it alone
            shape = var.type.shape
            k = d - (ndim - len(shape))
            if k >= 0 and shape[k] != 1:
                return False
    return True


def same_shape(fgraph: Any, new: Variable, old: Variable) -> bool:
    """True if the fgraph's ShapeFeature proves `new` and `old` have one run-time shape
    (e.g. ``x`` and ``x * ones(x.shape[0])``)."""
    if fgraph is None or old.owner is None:
        return False
    from workbench.core.tensor.shape_feature import get_shape_feature

    try:
        return get_shape_feature(fgraph).same_shape(new, old)
    except (KeyError, TypeError, ValueError):  # a variable the feature has not seen
        return False


def alloc_operand(var: Variable) -> Variable | None:
    """The value `var` is filled with if it is an Alloc, e.g. the ones a gradient starts
    from (it broadcasts like the Alloc's own result); behind DimShuffles only a 0-d
    value (a DimShuffle may transpose what a vector value fills)."""
    from workbench.core.tensor.creation import Alloc

    shuffled = False
    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var, shuffled = var.owner.inputs[0], True
    if var.owner is None or not isinstance(var.owner.op, Alloc):
        return None
    value = var.owner.inputs[0]
    return None if shuffled and value.type.ndim != 0 else value


def _output_lengths(old: Variable, operands: Sequence[Variable]) -> list[Any]:
    """The run-time lengths of `old`, the broadcast of `operands` (static where known).

    A dimension where a single operand can be longer than 1 reads that
    operand's `Shape_i`; several give numpy's broadcast rule as a `switch`.
    """
    ndim = old.type.ndim
    unique: list[Variable] = []
    for var in operands:
        if not any(var is u for u in unique):
            unique.append(var)
    lengths: list[Any] = []
    for d, known in enumerate(old.type.shape):
        if known is not None:
            lengths.append(known)
            continue
        candidates = []
        for var in unique:
            k = d - (ndim - var.type.ndim)
            if k >= 0 and var.type.shape[k] != 1:
                candidates.append(var.type.shape[k] if var.type.shape[k] is not None
                                  else shape_i(var, k))
        lengths.append(broadcast_length(candidates))
    return lengths


def filled(value: Any, old: Variable, node: Apply, fgraph: Any = None) -> Variable:
    """An array of `value` with exactly `old`'s type and run-time shape (e.g. for ``x*0``)."""
    data = np.asarray(value, dtype=old.type.dtype.numpy)
    return broadcast_like(constant(data), old, node, dropped=node.inputs, fgraph=fgraph)


def is_float(var: Variable) -> bool:
    """True for float and complex tensors (where x/1, x**0.5 and friends keep their meaning)."""
    d = var.type.dtype
    return bool(d.is_float or d.is_complex)


def computed_unconditionally(fgraph: Any, node: Apply) -> bool:
    """True if every run of `fgraph` computes `node`: an output needs it along a path
    that enters no branch of a lazy Op (an `IfElse` evaluates only its condition for
    sure; other lazy Ops nothing). A rule that reuses a node's result elsewhere (e.g.
    a Cholesky factor for a determinant) must not move it out of an untaken branch,
    where it could raise. Walks the graph from its outputs (unlike the helpers above)."""
    from workbench.core.ifelse import IfElse

    if fgraph is None:
        return False
    seen: set[Apply] = set()
    stack = [v.owner for v in fgraph.outputs if v.owner is not None]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current is node:
            return True
        inputs = current.inputs
        if getattr(current.op, "lazy", False):
            inputs = inputs[:1] if isinstance(current.op, IfElse) else []
        stack.extend(v.owner for v in inputs if v.owner is not None and v.owner not in seen)
    return False
