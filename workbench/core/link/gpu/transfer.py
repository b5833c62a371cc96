"""Moving values between the host and the device: transfer rewrites, device storage.

The transfer Ops `ToDevice` and `ToHost` are graph objects and live in the tensor
layer (`workbench.core.tensor.transfer`; re-exported here). On the GPU linker
every value already lives on the device, so a `ToDevice` output of the graph is
returned as a device tensor, while other outputs come back as NumPy arrays.

The transfer rewrites live with the other rules (`rewrite/rules/transfer.py`), so
the rewrite database is the same whether or not this package was imported.

Shared variables whose value stays on the device between calls:
`device_shared(value)` (or `shared(value, target="gpu")`, through the GPU backend's
record) keeps its value as a tensor in a `DeviceCell`; the GPU linker reads
and updates it there, while `get_value` and every other reader see NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.tensor.transfer import (
    DEVICE_TARGETS,
    HOST_TARGETS,
    ToDevice,
    ToHost,
    to_device_op,
    to_host_op,
    transfer,
)

__all__ = [
    "DeviceCell", "ToDevice", "ToHost", "device_shared", "is_device_cell", "keep_on_device",
    "shared_with_target", "to_device_op", "to_host_op", "transfer",
]  # fmt: skip


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
    from workbench.core.link.gpu.device import resolve_device
    from workbench.core.link.shared import tensor_constructor

    var = tensor_constructor(value, name=name, **kwargs)
    if var is None:
        raise TypeError(f"device_shared needs an array or a number, got "
                        f"{type(value).__name__}")
    var.container.storage = DeviceCell(var.container.storage[0], resolve_device(device))
    return var


def keep_on_device(variable: Any, device: Any = None) -> Any:
    """Move an existing shared variable's value onto `device`, where it then stays (the
    variable, and every function already using it, keep working); returns it."""
    from workbench.core.link.gpu.device import resolve_device
    from workbench.core.link.shared import SharedVariable

    if not isinstance(variable, SharedVariable):
        raise TypeError(f"keep_on_device needs a shared variable, got {variable!r} of type "
                        f"{type(variable).__name__}")
    storage = variable.container.storage
    if isinstance(storage, DeviceCell):
        return variable
    cell = DeviceCell(storage[0], resolve_device(device))
    variable.container.storage = cell
    return variable


def shared_with_target(value: Any, name: str | None = None, strict: bool = False,
                        allow_downcast: bool | None = None, borrow: bool = False,
                        target: str | None = None, **kwargs: Any) -> Any:
    """`shared(value, target="gpu")`: a device shared variable; other targets: host."""
    if target is None:
        return None
    from workbench.core.link.shared import shared

    if target in DEVICE_TARGETS:
        return device_shared(value, name=name, strict=strict, allow_downcast=allow_downcast,
                             borrow=borrow, **kwargs)
    if target in HOST_TARGETS:
        return shared(value, name=name, strict=strict, allow_downcast=allow_downcast,
                      borrow=borrow, **kwargs)
    raise ValueError(f"shared(): unknown target {target!r}; use one of "
                     f"{DEVICE_TARGETS + HOST_TARGETS}")
