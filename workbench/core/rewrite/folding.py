"""Constant folding: a node whose inputs are all constants is computed at compile time.

Honours `Op.do_constant_folding(fgraph, node)`; nodes without inputs, lazy Ops
and Ops that destroy an input are left alone.
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite.engine import FromFunctionNodeRewriter

__all__ = ["constant_folding"]


def _make_constant(var: Variable, value: Any) -> Constant:
    from workbench.core.tensor.type import TensorType

    if isinstance(var.type, TensorType):
        from workbench.core.tensor.variable import TensorConstant

        return TensorConstant(var.type, value)
    return Constant(var.type, value)


def _fold(fgraph: FunctionGraph, node: Apply) -> Any:
    """Computes a node whose inputs are all constants and returns Constants for its outputs.

    Honours `Op.do_constant_folding`. Nodes without inputs and lazy ops are left alone.
    """
    if not node.inputs or not all(isinstance(v, Constant) for v in node.inputs):
        return None
    op = node.op
    if getattr(op, "destroy_map", None) or not op.do_constant_folding(fgraph, node):
        return None
    storage = {v: [v.data] for v in node.inputs}
    compute = {v: [True] for v in node.inputs}
    for out in node.outputs:
        storage[out] = [None]
        compute[out] = [False]
    thunk = op.make_thunk(node, storage, compute, [], impl="py")
    if getattr(thunk, "lazy", False):
        return None
    thunk()
    result = []
    for out in node.outputs:
        value = storage[out][0]
        value = out.type.filter(value)
        result.append(_make_constant(out, value))
    return result


constant_folding = FromFunctionNodeRewriter(_fold, None, name="constant_folding")
constant_folding.__doc__ = _fold.__doc__
