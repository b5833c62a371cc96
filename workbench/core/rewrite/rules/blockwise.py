"""Rewrites of Blockwise nodes (tensor/blockwise.py): back to the core Op where the batch
adds nothing, and into the Elemwise when the core Op is one."""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.rewrite.db import register_canonicalize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.tensor.blockwise import Blockwise
from workbench.core.tensor.elemwise import DimShuffle, Elemwise

__all__ = ["local_blockwise_of_elemwise", "local_useless_blockwise"]


def _batch_ndims(node: Apply) -> list[int]:
    return [v.type.ndim - len(c) for v, c in zip(node.inputs, node.op.core_inputs)]


@register_canonicalize
@node_rewriter([Blockwise])
def local_useless_blockwise(fgraph: Any, node: Apply) -> Any:
    """A Blockwise whose batch dimensions are all 1 (or absent) is its core Op, applied
    to the inputs without those dimensions and given them back after."""
    if isinstance(node.op.core_op, Elemwise):
        return None  # local_blockwise_of_elemwise keeps the batch without a loop
    nb = node.op.batch_ndim(node)
    batch = _batch_ndims(node)
    if any(s != 1 for v, b in zip(node.inputs, batch) for s in v.type.shape[:b]):
        return None
    core_inputs = [v if b == 0 else DimShuffle(v.type.ndim, tuple(range(b, v.type.ndim)))(v)
                   for v, b in zip(node.inputs, batch)]
    outs = node.op.core_op(*core_inputs, return_list=True)
    if nb == 0:
        return outs
    return [DimShuffle(o.type.ndim, ("x",) * nb + tuple(range(o.type.ndim)))(o) for o in outs]


@register_canonicalize
@node_rewriter([Blockwise])
def local_blockwise_of_elemwise(fgraph: Any, node: Apply) -> Any:
    """``Blockwise{Elemwise{f}}(x, y) -> Elemwise{f}(x', y')``: an Elemwise already
    broadcasts, once each input's batch and core dimensions are aligned (x', y')."""
    op = node.op
    if not isinstance(op.core_op, Elemwise):
        return None
    nb = op.batch_ndim(node)
    ndim = max(len(c) for c in op.core_outputs)
    aligned = []
    for var, b, core in zip(node.inputs, _batch_ndims(node), op.core_inputs):
        order = (("x",) * (nb - b) + tuple(range(b)) + ("x",) * (ndim - len(core))
                 + tuple(range(b, b + len(core))))
        aligned.append(var if order == tuple(range(var.type.ndim)) else
                       DimShuffle(var.type.ndim, order)(var))
    outs = op.core_op(*aligned, return_list=True)
    if any(o.type.dtype != n.type.dtype or o.type.ndim != n.type.ndim
           for o, n in zip(outs, node.outputs)):
        return None
    return outs
