"""Shared variables: graph inputs whose value lives with the variable, across calls.

They live in the link layer next to `Container`, the storage cell they own; the
compile layer and the backends (`link.gpu`) build on them.

A `SharedVariable` holds its value in a `Container` (a storage cell with a
Type). Every compiled function that uses it reads that same cell, so
`set_value` is seen by the next call without recompiling, and `updates` write
into it after a call.

`shared(value)` picks a constructor from a registry: the most recently
registered constructor that accepts the value wins (the tensor constructor for
arrays and numbers); any other Python object becomes a `Generic` shared
variable. A constructor returns None for values it does not handle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core.graph.basic import Variable, describe_value
from workbench.core.graph.type import Type, generic
from workbench.core.link.vm import Container, copy_value, may_share_memory

__all__ = [
    "SharedVariable", "shared", "shared_constructor", "shared_constructors",
    "tensor_constructor", "generic_constructor", "reworded_error",
]  # fmt: skip


class SharedVariable(Variable):
    """A graph input with a value of its own, kept in `container`.

    Compiled functions use it as an implicit input (read from `container.storage`)
    and may update it (`updates=`). Use `get_value` / `set_value` to read and change
    the value from Python.
    """

    # No __slots__: instances keep a __dict__, which lets subclasses also inherit
    # from a Variable subclass with slots (e.g. TensorSharedVariable).

    def __init__(
        self,
        type: Type,
        value: Any,
        strict: bool = False,
        allow_downcast: bool | None = None,
        container: Container | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(type, None, None, name)
        if container is None:
            try:
                filtered = type.filter(value, strict, allow_downcast)
            except (TypeError, ValueError) as exc:
                raise reworded_error(exc, f"cannot make a shared variable of type {type} "
                               f"from {describe_value(value)}: {exc}") from exc
            container = Container(type, [filtered], name=name, strict=strict,
                                  allow_downcast=allow_downcast)
        self.container = container

    def get_value(self, borrow: bool = False) -> Any:
        """The current value; a copy unless `borrow` (then changing it changes the variable)."""
        value = self.container.storage[0]
        return value if borrow else copy_value(value)

    def set_value(self, value: Any, borrow: bool = False) -> None:
        """Set a new value, filtered through the type; copied unless `borrow`.

        Raises TypeError/ValueError naming this variable and its type when the value
        does not fit the type.
        """
        container = self.container
        try:
            filtered = self.type.filter(value, container.strict, container.allow_downcast)
        except (TypeError, ValueError) as exc:
            raise reworded_error(
                exc,
                f"cannot set the value of shared variable {self._label()}: expected a value "
                f"of type {self.type}, got {describe_value(value)}: {exc}",
            ) from exc
        if not borrow and may_share_memory(self.type, filtered, value):
            filtered = copy_value(filtered)
        container.storage[0] = filtered

    @property
    def value(self) -> Any:
        """The current value, not copied (like `get_value(borrow=True)`)."""
        return self.container.storage[0]

    def _label(self) -> str:
        return repr(self.name) if self.name else str(self)

    def clone(self, name: str | None = None) -> SharedVariable:
        """A new shared variable (no owner) sharing this one's container."""
        cp = self.__class__.__new__(self.__class__)
        cp.__dict__.update(self.__dict__)
        Variable.__init__(cp, self.type, None, None, self.name if name is None else name)
        cp.tag.__dict__.update(vars(self.tag))
        cp.container = self.container
        return cp

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        return f"<shared {self.type}>"


def reworded_error(exc: Exception, message: str) -> Exception:
    """An exception of the same class as `exc` (or its TypeError/ValueError base) with
    a new message."""
    try:
        return type(exc)(message)
    except Exception:
        return TypeError(message) if isinstance(exc, TypeError) else ValueError(message)


# -- constructors ----------------------------------------------------------------

#: Constructors tried by `shared`, the last registered first. Each is called as
#: `ctor(value, name=, strict=, allow_downcast=, borrow=, **kwargs)` and returns a
#: SharedVariable, or None if it does not handle this kind of value.
shared_constructors: list[Callable[..., SharedVariable | None]] = []


def shared_constructor(ctor: Callable[..., SharedVariable | None], remove: bool = False
                       ) -> Callable[..., SharedVariable | None]:
    """Register `ctor` (a decorator) so that `shared` tries it before older ones."""
    if remove:
        if ctor in shared_constructors:
            shared_constructors.remove(ctor)
    elif ctor not in shared_constructors:
        shared_constructors.append(ctor)
    return ctor


def shared(value: Any, name: str | None = None, strict: bool = False,
           allow_downcast: bool | None = None, borrow: bool = False, **kwargs: Any
           ) -> SharedVariable:
    """A shared variable holding `value` (copied unless `borrow`).

    Arrays and numbers give a TensorSharedVariable (keyword `shape` sets its static
    shape); any other object a Generic shared variable. `strict` and
    `allow_downcast` are used when filtering this value and later `set_value` ones.
    """
    if isinstance(value, Variable):
        raise TypeError(
            f"shared() takes a value, not a symbolic Variable ({value}); "
            "evaluate it first or use the Variable directly in the graph"
        )
    for ctor in reversed(shared_constructors):
        var = ctor(value, name=name, strict=strict, allow_downcast=allow_downcast,
                   borrow=borrow, **kwargs)
        if var is not None:
            return var
    return generic_constructor(value, name=name, strict=strict,
                               allow_downcast=allow_downcast, borrow=borrow, **kwargs)


def generic_constructor(value: Any, name: str | None = None, strict: bool = False,
                        allow_downcast: bool | None = None, borrow: bool = False,
                        **kwargs: Any) -> SharedVariable:
    """The fallback: a shared variable of Type Generic holding any Python object."""
    if kwargs:
        raise TypeError(
            f"shared(): unexpected keyword arguments {sorted(kwargs)} for a value of "
            f"Python type {type(value).__name__} (Generic shared variable)"
        )
    if not borrow:
        value = copy_value(value)
    return SharedVariable(generic, value, strict=strict, allow_downcast=allow_downcast,
                          name=name)


_tensor_shared_class: type | None = None


def _tensor_shared_variable_class() -> type:
    """TensorSharedVariable(SharedVariable, TensorVariable), built on first use so that
    this module does not import the tensor library at import time."""
    global _tensor_shared_class
    if _tensor_shared_class is None:
        from workbench.core.tensor import TensorVariable

        _tensor_shared_class = type(
            "TensorSharedVariable",
            (SharedVariable, TensorVariable),
            {
                "__doc__": "A shared variable holding an ndarray: usable wherever a "
                           "TensorVariable is.",
                "__module__": __name__,
            },
        )
    return _tensor_shared_class


def __getattr__(name: str) -> Any:
    if name == "TensorSharedVariable":
        return _tensor_shared_variable_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@shared_constructor
def tensor_constructor(value: Any, name: str | None = None, strict: bool = False,
                       allow_downcast: bool | None = None, borrow: bool = False,
                       shape: tuple[int | None, ...] | None = None, **kwargs: Any
                       ) -> SharedVariable | None:
    """A TensorSharedVariable for an ndarray, a NumPy scalar or a Python number.

    The static shape is unknown in every dimension unless `shape` is given, since
    `set_value` may change it. Returns None for other values.
    """
    if isinstance(value, (np.ndarray, np.generic)):
        array = value
    elif isinstance(value, (bool, int, float, complex)):
        from workbench.core import dtypes

        array = np.asarray(value, dtype=dtypes.numpy_dtype(dtypes.dtype_of(value)))
    else:
        return None
    try:
        from workbench.core.tensor import TensorType
    except ImportError as exc:  # the tensor library is not there (yet): Generic
        if exc.name and exc.name.startswith("workbench.core.tensor"):
            return None
        raise
    if kwargs:
        raise TypeError(f"shared(): unexpected keyword arguments {sorted(kwargs)} for an array")
    array = np.asarray(array)
    if shape is None:
        shape = (None,) * array.ndim
    ttype = TensorType(array.dtype, shape=tuple(shape))
    if not borrow:
        array = array.copy()
    cls = _tensor_shared_variable_class()
    return cls(ttype, array, strict=strict, allow_downcast=allow_downcast, name=name)
