"""Per-backend dtype support and the casting modes for dtypes a backend lacks.

Each backend (linker) declares the dtypes it computes in, optionally minus some
per op.  When a graph needs a dtype its backend lacks, `resolve_unsupported`
picks a replacement according to the casting mode (a process-wide setting with
a per-block override, like the default dtypes), or raises
:class:`UnsupportedDtypeError` naming the modes that would help.  Part of
:mod:`workbench.core.dtypes`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from workbench.core.dtypes.base import (
    Dtype,
    DtypeLike,
    all_complex_dtypes,
    all_dtypes,
    all_float_dtypes,
    all_int_dtypes,
    all_signed_int_dtypes,
    all_uint_dtypes,
    as_dtype,
    bfloat16,
    float16,
)
from workbench.core.dtypes.defaults import (
    Setting,
    default_float_dtype,
    default_int_dtype,
)
from workbench.core.dtypes.promotion import can_cast


class _BackendDtypes(NamedTuple):
    supported: frozenset[Dtype]
    per_op: dict[str, frozenset[Dtype]]  # op name -> dtypes the op lacks


_BACKENDS: dict[str, _BackendDtypes] = {}
#: backend -> (whether it can run here, what declares its dtypes): see declare_backend_later
_LATER: dict[str, tuple[Callable[[], bool], Callable[[], None]]] = {}


def register_backend_dtypes(
    backend: str,
    supported: Iterable[DtypeLike],
    *,
    per_op: Mapping[str, Iterable[DtypeLike]] | None = None,
) -> None:
    """Declare the dtypes ``backend`` handles (replacing any earlier declaration).

    ``per_op`` maps an op name to the dtypes that op does NOT support on this
    backend, on top of the backend-wide ``supported`` set.
    """
    _BACKENDS[backend] = _BackendDtypes(
        frozenset(as_dtype(d) for d in supported),
        {name: frozenset(as_dtype(d) for d in ds) for name, ds in (per_op or {}).items()},
    )


def declare_backend_later(backend: str, declare: Callable[[], None],
                          available: Callable[[], bool] = lambda: True) -> None:
    """Name ``backend`` now, and let ``declare()`` (which calls `register_backend_dtypes`)
    declare its dtypes when they are first asked for: for a backend whose declaration
    needs a heavy import or a device probe. ``available()`` says whether the backend can
    run here (e.g. its library is installed); one that cannot is not listed."""
    _LATER[backend] = (available, declare)


def unregister_backend_dtypes(backend: str) -> None:
    """Forget a backend's dtype declaration, made or to be made (``KeyError`` if unknown)."""
    if _LATER.pop(backend, None) is not None:
        _BACKENDS.pop(backend, None)
        return
    _lookup_backend(backend)
    del _BACKENDS[backend]


def registered_backends() -> tuple[str, ...]:
    """Names of the backends with a dtype declaration: those declared, and those to be
    declared on first use (`declare_backend_later`) that can run here. The built-in
    backends (c, gpu) are declared by their records when workbench's compile layer
    loads (`workbench.core.compile.backends`)."""
    later = [b for b, (available, _) in _LATER.items() if b not in _BACKENDS and available()]
    return (*_BACKENDS, *later)


def _lookup_backend(backend: str) -> _BackendDtypes:
    if backend not in _BACKENDS and backend in _LATER:
        available, declare = _LATER[backend]
        if available():
            declare()
    try:
        return _BACKENDS[backend]
    except KeyError:
        known = ", ".join(repr(b) for b in registered_backends())
        raise KeyError(f"unknown backend {backend!r}; registered backends: {known}") from None


def _op_excluded(info: _BackendDtypes, op: object) -> frozenset[Dtype]:
    """Dtypes ``op`` lacks; a non-str op is looked up by ``str(op)`` and class name."""
    if op is None or not info.per_op:
        return frozenset()
    if isinstance(op, str):
        return info.per_op.get(op, frozenset())
    empty: frozenset[Dtype] = frozenset()
    return info.per_op.get(str(op), empty) | info.per_op.get(type(op).__name__, empty)


def is_supported(backend: str, dtype: DtypeLike, op: object = None) -> bool:
    """Whether ``backend`` (and ``op`` on it, if given) supports ``dtype``."""
    info = _lookup_backend(backend)
    d = as_dtype(dtype)
    return d in info.supported and d not in _op_excluded(info, op)


def supported_dtypes(backend: str, op: object = None) -> tuple[Dtype, ...]:
    """Dtypes ``backend`` (and ``op`` on it, if given) supports, in ``all_dtypes`` order."""
    info = _lookup_backend(backend)
    excluded = _op_excluded(info, op)
    return tuple(d for d in all_dtypes if d in info.supported and d not in excluded)


def unsupported_dtypes(backend: str, op: object = None) -> tuple[Dtype, ...]:
    """Dtypes ``backend`` (and ``op`` on it, if given) lacks, in ``all_dtypes`` order."""
    ok = set(supported_dtypes(backend, op))
    return tuple(d for d in all_dtypes if d not in ok)


#: Per backend, dtypes it lacks whose nodes it runs through their Python implementation
#: (`Op.perform`, NumPy's arithmetic in that dtype) when no casting mode is set, instead
#: of refusing them: the C linker runs float16 nodes this way inside its C loop.
_RUN_IN_PYTHON: dict[str, frozenset[Dtype]] = {}


def run_in_python(backend: str, dtype_names: Iterable[DtypeLike]) -> None:
    """Declare that `backend` runs nodes of these (unsupported) dtypes through `perform`
    when no casting mode is set (a casting mode still converts them)."""
    _RUN_IN_PYTHON[backend] = frozenset(as_dtype(d) for d in dtype_names)


def runs_in_python(backend: str, dtype: DtypeLike) -> bool:
    """Whether `backend` runs nodes of `dtype` through their Python implementation."""
    return as_dtype(dtype) in _RUN_IN_PYTHON.get(backend, frozenset())


# The Python/NumPy VM handles everything.
register_backend_dtypes("py", all_dtypes)


# --------------------------------------------------------------------------- casting modes

CASTING_MODES: tuple[str, ...] = ("upcast", "downcast", "crosscast", "cast")

_casting_mode = Setting("workbench_casting_mode", None)


def _check_mode(mode: str | None) -> str | None:
    if mode is not None and mode not in CASTING_MODES:
        raise ValueError(f"casting mode must be None or one of {CASTING_MODES}, got {mode!r}")
    return mode


def casting_mode() -> str | None:
    """The active casting mode for unsupported dtypes (None: off, the default)."""
    return _casting_mode.get()


def set_casting_mode(mode: str | None) -> None:
    """Set the casting mode: None, 'upcast', 'downcast', 'crosscast' or 'cast'.

    Process-wide, except inside a ``casting_mode_as`` block.
    """
    _casting_mode.set(_check_mode(mode))


def casting_mode_as(mode: str | None) -> contextlib.AbstractContextManager[str | None]:
    """Temporarily set the casting mode; restored on exit, even on error."""
    return _casting_mode.override(_check_mode(mode))


# Same-group orderings used by upcast/downcast (narrowest first).
_CAST_GROUPS: tuple[tuple[Dtype, ...], ...] = (
    all_signed_int_dtypes,
    all_uint_dtypes,
    all_float_dtypes,
    all_complex_dtypes,
)


def _wider(d: Dtype) -> tuple[Dtype, ...]:
    """Same-group dtypes wider than ``d``, nearest first."""
    for group in _CAST_GROUPS:
        if d in group:
            wider = group[group.index(d) + 1 :]
            if d is bfloat16:  # float16 has less range than bfloat16: skip it
                wider = tuple(w for w in wider if w is not float16)
            return wider
    return ()


def _narrower(d: Dtype) -> tuple[Dtype, ...]:
    """Same-group dtypes narrower than ``d``, nearest first."""
    for group in _CAST_GROUPS:
        if d in group:
            return group[: group.index(d)][::-1]
    return ()


def _first_supported(candidates: Iterable[Dtype], backend: str, op: object) -> Dtype | None:
    return next((c for c in candidates if is_supported(backend, c, op)), None)


def _crosscast(d: Dtype, backend: str, op: object) -> Dtype | None:
    """int/uint/bool -> default float when no integer dtype is supported;
    float -> default int when no float dtype is supported; complex -> nothing."""
    if d.is_bool or (d.is_int and _first_supported(all_int_dtypes, backend, op) is None):
        return _first_supported((default_float_dtype(),), backend, op)
    if d.is_float and _first_supported(all_float_dtypes, backend, op) is None:
        return _first_supported((default_int_dtype(),), backend, op)
    return None


def _apply_mode(mode: str, d: Dtype, backend: str, op: object) -> Dtype | None:
    """The dtype ``mode`` converts unsupported ``d`` to, or None if it cannot."""
    if mode == "upcast":
        return _first_supported(_wider(d), backend, op)
    if mode == "downcast":
        return _first_supported(_narrower(d), backend, op)
    if mode == "crosscast":
        return _crosscast(d, backend, op)
    return (
        _crosscast(d, backend, op)
        or _first_supported(_wider(d), backend, op)
        or _first_supported(_narrower(d), backend, op)
    )


class UnsupportedDtypeError(TypeError):
    """A backend (or one op on it) cannot handle a dtype.

    Attributes: ``op``, ``dtype``, ``backend``, ``resolutions`` (casting mode ->
    the dtype that mode would convert to) and ``suggested_modes`` (its keys).
    """

    __module__ = "workbench.core.dtypes"  # the public home: pickles and tracebacks name it

    def __init__(
        self,
        dtype: DtypeLike,
        backend: str,
        op: object = None,
        resolutions: Mapping[str, Dtype] | None = None,
    ) -> None:
        self.dtype = as_dtype(dtype)
        self.backend = backend
        self.op = op
        if resolutions is None:
            resolutions = {}
            for mode in CASTING_MODES:
                target = _apply_mode(mode, self.dtype, backend, op)
                if target is not None:
                    resolutions[mode] = target
        self.resolutions: dict[str, Dtype] = dict(resolutions)
        #: the modes whose target holds every value of the dtype (the ones advised)
        self.suggested_modes: list[str] = [
            m for m, d in self.resolutions.items() if can_cast(self.dtype, d)]
        super().__init__(self._message())

    def _message(self) -> str:
        where = (
            f"Backend {self.backend!r}"
            if self.op is None
            else f"{self.op} on backend {self.backend!r}"
        )
        text = f"{where} does not support dtype {self.dtype}"
        lossy = {m: d for m, d in self.resolutions.items() if m not in self.suggested_modes}
        if self.suggested_modes:
            modes = ", ".join(f"{m!r} (-> {self.resolutions[m]})" for m in self.suggested_modes)
            text = (f"{text}; set a casting mode to convert it: {modes}"
                    " (see set_casting_mode / casting_mode_as)")
        else:
            supported = ", ".join(supported_dtypes(self.backend, self.op)) or "none"
            text = (f"{text}, and no casting mode can convert it without changing values "
                    f"(supported dtypes: {supported}); cast it explicitly to one that "
                    "holds your values")
        if lossy:
            modes = " and ".join(f"{m!r} (-> {d})" for m, d in lossy.items())
            text += (f"; {modes} would change values {self.dtype} holds and the target "
                     "does not (wrapped or rounded), so they are not advised")
        return text

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (type(self), (self.dtype, self.backend, self.op, self.resolutions))


def check_supported(dtype: DtypeLike, backend: str, op: object = None) -> None:
    """Raise :class:`UnsupportedDtypeError` unless ``backend``/``op`` supports ``dtype``."""
    if not is_supported(backend, dtype, op):
        raise UnsupportedDtypeError(dtype, backend, op)


def resolve_unsupported(
    dtype: DtypeLike, backend: str, op: object = None, mode: str | None = None
) -> Dtype:
    """The dtype to compute ``dtype`` in on ``backend``/``op``.

    ``dtype`` itself when supported; otherwise the conversion chosen by ``mode``
    (None: the current :func:`casting_mode`):

    * 'upcast': next wider supported dtype of the same group (signed int,
      unsigned int, float, complex); bfloat16 skips float16, which has less range;
    * 'downcast': next narrower supported dtype of the same group;
    * 'crosscast': int/uint/bool -> default float when the op supports no
      integer dtype, float -> default int when it supports no float dtype;
    * 'cast': crosscast, then upcast, then downcast.

    Raises :class:`UnsupportedDtypeError` when no conversion applies.
    """
    d = as_dtype(dtype)
    if is_supported(backend, d, op):
        return d
    mode = _check_mode(casting_mode() if mode is None else mode)
    if mode is not None:
        target = _apply_mode(mode, d, backend, op)
        if target is not None:
            return target
    raise UnsupportedDtypeError(d, backend, op)
