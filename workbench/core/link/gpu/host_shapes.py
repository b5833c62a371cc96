"""Shapes kept on the host: a shape read from a tensor and only used as a shape stays
Python ints, never a device tensor read back.

`x.shape[0]` is a `Shape_i` node; on the device its value would be a tensor built from
the host's `x.shape` and read back by the node using it as a length (an `Alloc`, a
`Reshape`, a draw's `size`): a copy to the device and a read back, at every step of a
loop with shape work. When every reader of such a value uses it as a shape (directly,
or through the `DimShuffle{x}` and `Join` that build a shape vector from lengths and
constants), the linker runs those nodes here instead: `Shape_i` gives an int, `Shape`,
`DimShuffle{x}` and `Join` give tuples of ints, and the readers take ints (`int(n)`,
`shape_ints(v)`). A shape read by anything else (arithmetic, a graph output) stays a
device tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.fg import OUTPUT, FunctionGraph
from workbench.core.random.op import RandomVariable
from workbench.core.tensor.creation import Alloc, Eye
from workbench.core.tensor.elemwise import DimShuffle
from workbench.core.tensor.join import Join
from workbench.core.tensor.reshape import BroadcastTo, Reshape
from workbench.core.tensor.shape import Shape, Shape_i, SpecifyShape

__all__ = ["host_shape_kernel", "host_shape_values", "shape_ints"]


def shape_ints(value: Any) -> tuple[int, ...]:
    """The lengths of a shape value: a host tuple as it is, a device vector read back."""
    return value if isinstance(value, tuple) else tuple(int(n) for n in value.tolist())


def _reads_as_shape(node: Apply, i: int) -> bool:
    """Whether input `i` of `node` is used only as lengths (read as ints by its kernel)."""
    op = node.op
    if isinstance(op, Alloc | BroadcastTo | SpecifyShape):
        return i >= 1
    if isinstance(op, Reshape | RandomVariable):
        return i == 1  # the target shape; a draw's size
    return isinstance(op, Eye)


def _builds_shape(node: Apply) -> bool:
    """Whether `node` can compute its output on the host from lengths and constants."""
    op = node.op
    if isinstance(op, Shape | Shape_i):
        return True
    if isinstance(op, DimShuffle):
        return op.input_ndim == 0 and tuple(op.new_order) == ("x",)
    return isinstance(op, Join) and node.outputs[0].type.ndim == 1


def host_shape_values(fgraph: FunctionGraph) -> frozenset[Variable]:
    """The variables of `fgraph` to keep as host ints: outputs of shape-building nodes
    whose every client reads them as a shape or builds a host shape from them. (A length
    computed on the device that such a node reads is read back there, once, as the
    reader of the shape would have.)"""
    kept = {node.outputs[0] for node in fgraph.toposort()
            if len(node.outputs) == 1 and _builds_shape(node)}
    changed = True
    while changed:  # drop what breaks a rule until nothing does (the largest such set)
        changed = False
        for var in list(kept):
            clients = fgraph.clients.get(var, ())
            if not clients or not all(
                    client != OUTPUT and (_reads_as_shape(client, i) or client.outputs[0] in kept)
                    for client, i in clients):
                kept.discard(var)
                changed = True
    return frozenset(kept)


def host_shape_kernel(node: Apply) -> Any:
    """The host kernel of a node whose output `host_shape_values` kept: ints in and out
    (constants read here, once)."""
    op = node.op
    if isinstance(op, Shape):
        return lambda x: [tuple(x.shape)]
    if isinstance(op, Shape_i):
        i = op.i
        return lambda x: [x.shape[i]]
    fixed = [tuple(int(n) for n in np.ravel(v.data)) if isinstance(v, Constant) else None
             for v in node.inputs]
    if isinstance(op, DimShuffle):
        return (lambda _: [fixed[0]]) if fixed[0] is not None else (lambda n: [(int(n),)])

    def join(*parts: Any) -> list[Any]:
        return [tuple(n for k, part in enumerate(parts)
                      for n in (fixed[k] if fixed[k] is not None else shape_ints(part)))]

    return join
