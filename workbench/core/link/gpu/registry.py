"""The lowering registries: how each Op class (and each scalar Op class) becomes torch code.

A *lowering* is a function `lower(node, ctx)` registered for an Op class; it
looks at the node once, at link time, and returns a *kernel*: a function of the
node's input values (tensors on `ctx.device`, or plain Python values for
non-tensor inputs) returning the list of output tensors. It returns None when
this particular node cannot run on torch (a dtype without a kernel, say): the
node then runs on the host through `Op.perform`.

Scalar Ops (inside `Elemwise` and `Composite`) have their own registry:
`register_scalar(ScalarOpClass)(fn)` where `fn(op, *tensors)` computes the Op
elementwise on tensors already converted to the dtype the Op computes in.

Lookup walks the class's MRO, so a subclass inherits its base's lowering unless
it registers its own. The lowerings live beside this module, one per Op
family; importing `workbench.core.link.gpu` registers them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.core.graph.basic import Apply

__all__ = [
    "Kernel", "LowerContext", "Lowering", "ScalarKernel", "lowering_for", "register_lowering",
    "register_scalar", "registered_lowerings", "registered_scalar_lowerings",
    "scalar_lowering_for",
]  # fmt: skip

Kernel = Callable[..., list[Any]]
Lowering = Callable[[Apply, "LowerContext"], Kernel | None]
ScalarKernel = Callable[..., Any]


@dataclass
class LowerContext:
    """What a lowering may need: the torch module, the device, the linker's options."""

    torch: Any
    device: Any
    options: dict[str, Any] = field(default_factory=dict)

    def dtype(self, var_or_dtype: Any) -> Any:
        """The torch dtype of a Variable's dtype (or of a dtype)."""
        from workbench.core.link.gpu.device import torch_dtype

        dtype = getattr(getattr(var_or_dtype, "type", None), "dtype", var_or_dtype)
        return torch_dtype(dtype)


_lowerings: dict[type, Lowering] = {}
_scalar_lowerings: dict[type, ScalarKernel] = {}


def register_lowering(*op_classes: type) -> Callable[[Lowering], Lowering]:
    """Decorator: `fn(node, ctx) -> kernel | None` lowers nodes of these Op classes."""
    if not op_classes:
        raise TypeError("register_lowering needs at least one Op class")
    for cls in op_classes:
        if not isinstance(cls, type):
            raise TypeError(f"register_lowering: expected an Op class, got {cls!r} of type "
                            f"{type(cls).__name__}")

    def decorate(fn: Lowering) -> Lowering:
        for cls in op_classes:
            _lowerings[cls] = fn
        return fn

    return decorate


def register_scalar(*op_classes: type) -> Callable[[ScalarKernel], ScalarKernel]:
    """Decorator: `fn(op, *tensors) -> tensor` computes these scalar Ops elementwise."""

    for cls in op_classes:
        if not isinstance(cls, type):
            raise TypeError(f"register_scalar: expected a ScalarOp class, got {cls!r} of type "
                            f"{type(cls).__name__}")

    def decorate(fn: ScalarKernel) -> ScalarKernel:
        for cls in op_classes:
            _scalar_lowerings[cls] = fn
        return fn

    return decorate


def _lookup(table: dict[type, Any], cls: type) -> Any:
    for base in cls.__mro__:
        found = table.get(base)
        if found is not None:
            return found
    return None


def lowering_for(op: Any) -> Lowering | None:
    """The lowering registered for `op`'s class (or a base class), or None."""
    return _lookup(_lowerings, type(op))


def scalar_lowering_for(scalar_op: Any) -> ScalarKernel | None:
    """The kernel registered for the class of `scalar_op`, or for a base class that
    computes the same (`backend_entry`: a subclass overriding `impl` gets none)."""
    from workbench.core.scalar.declared import backend_entry

    return backend_entry(_scalar_lowerings, type(scalar_op))


def registered_lowerings() -> dict[type, Lowering]:
    return dict(_lowerings)


def registered_scalar_lowerings() -> dict[type, ScalarKernel]:
    return dict(_scalar_lowerings)
