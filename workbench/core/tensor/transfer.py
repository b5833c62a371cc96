"""Transfer Ops: `ToDevice` and `ToHost` mark where a value moves between host and device.

`x.transfer("gpu")` inserts a `ToDevice` node and `x.transfer("cpu")` a `ToHost`
node (through `register_transfer`, done by the GPU backend). Both keep x's
Type: placement is not part of the type. They live in the tensor layer, not in
`link.gpu`, because they are graph objects: a graph file names them and must
load without the GPU backend. On the Python linker they are the identity; the
GPU linker and its rewrites (`workbench.core.link.gpu.transfer`) give them
their meaning.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core.graph.basic import Variable
from workbench.core.tensor.identity_ops import TensorIdentity
from workbench.core.tensor.type import TensorType

__all__ = [
    "DEVICE_TARGETS", "HOST_TARGETS", "ToDevice", "ToHost", "Transfer", "to_device_op",
    "to_host_op", "transfer",
]  # fmt: skip

DEVICE_TARGETS = ("gpu", "cuda", "device")
HOST_TARGETS = ("cpu", "host")


class Transfer(TensorIdentity):
    """The identity, marking where a value moves between host and device."""

    abstract = True

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        """The gradient moves back the other way."""
        back = to_host_op if isinstance(self, ToDevice) else to_device_op
        return [back(output_grads[0])]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        return [None if eval_points[0] is None else self(eval_points[0])]


class ToDevice(Transfer):
    """Host -> device (target "gpu")."""

    abstract = False

    def __str__(self) -> str:
        return "ToDevice"


class ToHost(Transfer):
    """Device -> host (target "cpu")."""

    abstract = False

    def __str__(self) -> str:
        return "ToHost"


to_device_op = ToDevice()
to_host_op = ToHost()


def transfer(var: Variable, target: str) -> Variable | None:
    """The registered transfer function: tensors to "gpu"/"cuda"/"device" or "cpu"/"host"."""
    if not isinstance(var.type, TensorType) or not isinstance(target, str):
        return None
    owner = var.owner
    if target in DEVICE_TARGETS:
        if owner is not None and isinstance(owner.op, ToDevice):
            return var
        if owner is not None and isinstance(owner.op, ToHost):
            return owner.inputs[0]
        return to_device_op(var)
    if target in HOST_TARGETS:
        if owner is not None and isinstance(owner.op, ToDevice):
            return owner.inputs[0]
        if owner is not None and isinstance(owner.op, ToHost):
            return var
        return to_host_op(var)
    return None
