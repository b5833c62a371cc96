"""The transfer rewrites (canonicalize, tag `transfer`): chains of transfers collapse.

`ToHost(ToDevice(x))` and `ToDevice(ToHost(x))` become `x`, and a node fed by
`ToHost(v)` moves onto the device (it reads `v` and its outputs are transferred
instead) when the device computes its Op, so a chain of transfers moves once.
They are in the database from the start, like every rule, whether or not the GPU
backend was ever imported: which backend computes an Op on the device is asked of
`device_computes`, which the GPU backend's record sets (`compile/backends.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.core.graph.basic import Apply, Variable
from workbench.core.rewrite.db import register_canonicalize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.tensor.transfer import ToDevice, ToHost, Transfer, to_host_op

__all__ = ["local_compute_on_device", "local_cut_transfer_pairs", "set_device_computes"]


def _no_device(op: Any) -> bool:
    return False


#: Whether the device computes an Op (the GPU backend's answer; False until one is declared).
_device_computes: list[Callable[[Any], bool]] = [_no_device]


def set_device_computes(question: Callable[[Any], bool]) -> None:
    """Let `question(op)` say whether the device computes `op` (the GPU backend does)."""
    _device_computes[0] = question


@register_canonicalize("transfer")
@node_rewriter([ToDevice, ToHost])
def local_cut_transfer_pairs(fgraph: Any, node: Apply) -> list[Variable] | None:
    """``ToHost(ToDevice(x))`` and ``ToDevice(ToHost(x))`` -> ``x``."""
    (x,) = node.inputs
    inner = x.owner
    if inner is not None and isinstance(inner.op, Transfer) and \
            type(inner.op) is not type(node.op):
        return [inner.inputs[0]]
    return None


@register_canonicalize("transfer")
@node_rewriter(None)
def local_compute_on_device(fgraph: Any, node: Apply) -> list[Variable] | None:
    """``op(ToHost(a), b)`` -> ``ToHost(op(a, b))``: compute where the data is, move once."""
    if isinstance(node.op, Transfer):
        return None
    if not any(v.owner is not None and isinstance(v.owner.op, ToHost) for v in node.inputs):
        return None
    if not _device_computes[0](node.op):
        return None
    inputs = [v.owner.inputs[0] if v.owner is not None and isinstance(v.owner.op, ToHost)
              else v for v in node.inputs]
    new = node.op.make_node(*inputs)
    if any(a.type != b.type for a, b in zip(new.outputs, node.outputs)):
        return None
    return [to_host_op(out) for out in new.outputs]
