"""Default dtypes: what Python numbers and dtype-less creation give.

The default float and int dtypes are process-wide settings; ``set_*`` changes
them and the ``*_as`` context managers override them for a ``with`` block in
the current thread (or async task) only.  ``Setting`` is the mechanism, also
used for the casting mode (`backends`).  Part of :mod:`workbench.core.dtypes`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from workbench.core.dtypes.base import (
    Dtype,
    DtypeLike,
    as_dtype,
    complex64,
    complex128,
    float64,
    int64,
)

_UNSET: Any = object()


class Setting:
    """A process-wide value that ``with`` blocks can override in the current context.

    ``set`` changes the process-wide value, or, inside an override block, only
    that block's value (which the block's exit then undoes).  Overrides live in a
    ``ContextVar``, so they nest correctly and do not leak into other threads.
    """

    def __init__(self, name: str, value: Any) -> None:
        self._value = value
        self._override: contextvars.ContextVar[Any] = contextvars.ContextVar(name, default=_UNSET)

    def get(self) -> Any:
        value = self._override.get()
        return self._value if value is _UNSET else value

    def set(self, value: Any) -> None:
        if self._override.get() is _UNSET:
            self._value = value
        else:
            self._override.set(value)

    @contextlib.contextmanager
    def override(self, value: Any) -> Iterator[Any]:
        token = self._override.set(value)
        try:
            yield value
        finally:
            self._override.reset(token)


_default_float = Setting("workbench_default_float_dtype", float64)
_default_int = Setting("workbench_default_int_dtype", int64)


def _as_float_dtype(d: DtypeLike) -> Dtype:
    d = as_dtype(d)
    if not d.is_float:
        raise TypeError(f"default float dtype must be a real float dtype, got {d}")
    return d


def _as_int_dtype(d: DtypeLike) -> Dtype:
    d = as_dtype(d)
    if not d.is_int:
        raise TypeError(f"default int dtype must be an integer dtype, got {d}")
    return d


def default_float_dtype() -> Dtype:
    """Dtype for Python floats and float-by-default creation (initially float64)."""
    return _default_float.get()


def set_default_float_dtype(d: DtypeLike) -> None:
    """Set the default float dtype (``TypeError`` if ``d`` is not a real float).

    Process-wide, except inside a ``default_float_dtype_as`` block, where it
    lasts until the block ends.
    """
    _default_float.set(_as_float_dtype(d))


def default_int_dtype() -> Dtype:
    """Dtype for Python ints (initially int64)."""
    return _default_int.get()


def set_default_int_dtype(d: DtypeLike) -> None:
    """Set the default int dtype (``TypeError`` if ``d`` is not an integer dtype).

    Process-wide, except inside a ``default_int_dtype_as`` block.
    """
    _default_int.set(_as_int_dtype(d))


def default_complex_dtype() -> Dtype:
    """complex128 when the default float is float64, else complex64.

    (The promotion of the default float with complex64, written out so that
    this module does not depend on the promotion table.)
    """
    return complex128 if default_float_dtype() is float64 else complex64


def default_float_dtype_as(d: DtypeLike) -> contextlib.AbstractContextManager[Dtype]:
    """Temporarily set the default float dtype: ``with default_float_dtype_as("float32"):``.

    The previous default is restored on exit, even on error.
    """
    return _default_float.override(_as_float_dtype(d))


def default_int_dtype_as(d: DtypeLike) -> contextlib.AbstractContextManager[Dtype]:
    """Temporarily set the default int dtype; restored on exit, even on error."""
    return _default_int.override(_as_int_dtype(d))
