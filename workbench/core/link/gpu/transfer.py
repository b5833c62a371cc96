"""Moving values between the host and the device: transfer Ops, rewrites, device storage.

`x.transfer("gpu")` inserts a `ToDevice` node and `x.transfer("cpu")` a `ToHost`
node (seed 000's transfer targets, through `register_transfer`). Both keep x's
Type: placement is not part of the type. On the Python linker they are the
identity; on the GPU linker every value already lives on the device, so a
`ToDevice` output of the graph is returned as a device tensor, while other
outputs come back as NumPy arrays.

Rewrites (canonicalize): `ToHost(ToDevice(x))` and `ToDevice(ToHost(x))` become
`x`, and a node fed by `ToHost(v)` is moved onto the device (it reads `v` and its
outputs are transferred instead), so a chain of transfers collapses to one.

Shared variables whose value stays on the device between calls:
`device_shared(value)` (or `shared(value, target="gpu")` once this package is
imported) keeps its value as a tensor in a `DeviceCell`; the GPU linker reads
and updates it there, while `get_value` and every other reader see NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.rewrite.db import register_canonicalize
from workbench.core.rewrite.engine import node_rewriter

__all__ = [
    "DeviceCell", "ToDevice", "ToHost", "device_shared", "is_device_cell", "keep_on_device",
    "to_device_op", "to_host_op", "transfer",
]  # fmt: skip

DEVICE_TARGETS = ("gpu", "cuda", "device")
HOST_TARGETS = ("cpu", "host")


class _Transfer(Op):
    """The identity, marking where a value moves between host and device."""

    abstract = True
    __props__ = ()
    view_map = {0: [0]}  # noqa: RUF012 (the Op contract's class attribute)

    def make_node(self, x: Any) -> Apply:
        from workbench.core.tensor.variable import as_tensor_variable

        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = inputs[0]

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        """The gradient moves back the other way."""
        back = to_host_op if isinstance(self, ToDevice) else to_device_op
        return [back(output_grads[0])]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        return [None if eval_points[0] is None else self(eval_points[0])]


class ToDevice(_Transfer):
    """Host -> device (target "gpu")."""

    abstract = False

    def __str__(self) -> str:
        return "ToDevice"


class ToHost(_Transfer):
    """Device -> host (target "cpu")."""

    abstract = False

    def __str__(self) -> str:
        return "ToHost"


to_device_op = ToDevice()
to_host_op = ToHost()


def transfer(var: Variable, target: str) -> Variable | None:
    """The registered transfer function: tensors to "gpu"/"cuda"/"device" or "cpu"/"host"."""
    from workbench.core.tensor.type import TensorType

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



# -- rewrites ---------------------------------------------------------------------------------


@register_canonicalize
@node_rewriter([ToDevice, ToHost])
def local_cut_transfer_pairs(fgraph: Any, node: Apply) -> list[Variable] | None:
    """``ToHost(ToDevice(x))`` and ``ToDevice(ToHost(x))`` -> ``x``."""
    (x,) = node.inputs
    inner = x.owner
    if inner is not None and isinstance(inner.op, _Transfer) and \
            type(inner.op) is not type(node.op):
        return [inner.inputs[0]]
    return None


@register_canonicalize
@node_rewriter(None)
def local_compute_on_device(fgraph: Any, node: Apply) -> list[Variable] | None:
    """``op(ToHost(a), b)`` -> ``ToHost(op(a, b))``: compute where the data is, move once."""
    if isinstance(node.op, _Transfer):
        return None
    if not any(v.owner is not None and isinstance(v.owner.op, ToHost) for v in node.inputs):
        return None
    from workbench.core.link.gpu.registry import lowering_for

    if lowering_for(node.op) is None:
        return None
    inputs = [v.owner.inputs[0] if v.owner is not None and isinstance(v.owner.op, ToHost)
              else v for v in node.inputs]
    new = node.op.make_node(*inputs)
    if any(a.type != b.type for a, b in zip(new.outputs, node.outputs)):
        return None
    return [to_host_op(out) for out in new.outputs]


# -- device storage --------------------------------------------------------------------------


class DeviceCell(list):
    """A storage cell whose value is a tensor on a device.

    Readers get NumPy (`cell[0]`); the GPU linker reads and writes the tensor itself
    (`cell.tensor`). Writing a NumPy value uploads it; writing a tensor stores it.
    """

    def __init__(self, value: Any, device: Any) -> None:
        super().__init__([None])
        self.device = device
        self[0] = value

    @property
    def tensor(self) -> Any:
        return list.__getitem__(self, 0)

    @tensor.setter
    def tensor(self, value: Any) -> None:
        list.__setitem__(self, 0, value)

    def __getitem__(self, index: Any) -> Any:
        from workbench.core.link.gpu.device import to_host

        return to_host(list.__getitem__(self, index))

    def __setitem__(self, index: Any, value: Any) -> None:
        from workbench.core.link.gpu.device import to_device

        if isinstance(value, (bool, int, float, complex)):
            value = np.asarray(value)
        list.__setitem__(self, index, None if value is None else to_device(value, self.device))

    def __repr__(self) -> str:
        return f"DeviceCell({self.tensor!r})"


def is_device_cell(cell: Any) -> bool:
    return isinstance(cell, DeviceCell)


def device_shared(value: Any, name: str | None = None, device: Any = None,
                  **kwargs: Any) -> Any:
    """A tensor shared variable whose value lives on `device` (None: config.device).

    Functions compiled with the GPU linker read and update it on the device; other
    linkers and `get_value()` see NumPy arrays (copied from the device).
    """
    from workbench.core.compile.shared import tensor_constructor
    from workbench.core.link.gpu.device import resolve_device

    var = tensor_constructor(value, name=name, **kwargs)
    if var is None:
        raise TypeError(f"device_shared needs an array or a number, got "
                        f"{type(value).__name__}")
    var.container.storage = DeviceCell(var.container.storage[0], resolve_device(device))
    return var


def keep_on_device(variable: Any, device: Any = None) -> Any:
    """Move an existing shared variable's value onto `device`, where it then stays (the
    variable, and every function already using it, keep working); returns it."""
    from workbench.core.compile.shared import SharedVariable
    from workbench.core.link.gpu.device import resolve_device

    if not isinstance(variable, SharedVariable):
        raise TypeError(f"keep_on_device needs a shared variable, got {variable!r} of type "
                        f"{type(variable).__name__}")
    storage = variable.container.storage
    if isinstance(storage, DeviceCell):
        return variable
    cell = DeviceCell(storage[0], resolve_device(device))
    variable.container.storage = cell
    return variable


def _shared_with_target(value: Any, name: str | None = None, strict: bool = False,
                        allow_downcast: bool | None = None, borrow: bool = False,
                        target: str | None = None, **kwargs: Any) -> Any:
    """`shared(value, target="gpu")`: a device shared variable; other targets: host."""
    if target is None:
        return None
    from workbench.core.compile.shared import shared

    if target in DEVICE_TARGETS:
        return device_shared(value, name=name, strict=strict, allow_downcast=allow_downcast,
                             borrow=borrow, **kwargs)
    if target in HOST_TARGETS:
        return shared(value, name=name, strict=strict, allow_downcast=allow_downcast,
                      borrow=borrow, **kwargs)
    raise ValueError(f"shared(): unknown target {target!r}; use one of "
                     f"{DEVICE_TARGETS + HOST_TARGETS}")
