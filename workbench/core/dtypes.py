"""Data types: names, promotion, default dtypes and per-backend dtype support.

Every dtype is a :class:`Dtype`, a ``str`` subclass whose value is the canonical
name (``"float32"``, ``"bool"``, ...).  There is exactly one ``Dtype`` object per
name, so ``Dtype("float32") is float32``.

Promotion follows a lattice of *safe casts*: ``a`` casts safely to ``b`` when ``b``
can hold every value of ``a`` (``int64``/``uint64`` -> ``float64`` is counted as
safe, as NumPy does).  ``promote_types(a, b)`` is the first dtype, in order of
kind (bool < integer < float < complex) and then width, that both ``a`` and
``b`` cast safely to.  This reproduces the Python Array API promotion table plus
the extra pairs workbench resolves like Ivy (see ``tests/data/dtypes``).

Python scalars are *weak* (NEP 50 / Array API): they adopt the dtype of the
array operands whenever the kinds allow it, e.g. ``float32 array + 2.5`` stays
``float32``.

The default float/int dtypes and the casting mode for dtypes a backend lacks are
process-wide settings; the ``*_as`` context managers override them for a
``with`` block in the current thread (or async task) only.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

__all__ = [  # noqa: RUF022 (grouped by topic)
    # dtypes
    "Dtype", "DtypeLike", "DTYPES", "as_dtype", "numpy_dtype", "dtype_of", "finfo", "iinfo",
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bfloat16", "float16", "float32", "float64", "complex64", "complex128",
    "all_dtypes", "all_numeric_dtypes", "all_int_dtypes", "all_signed_int_dtypes",
    "all_uint_dtypes", "all_float_dtypes", "all_complex_dtypes",
    "is_bool_dtype", "is_int_dtype", "is_signed_int_dtype", "is_uint_dtype", "is_float_dtype",
    "is_complex_dtype", "is_numeric_dtype",
    # promotion and casting
    "promote_types", "result_type", "can_cast", "infer_dtype",
    # defaults
    "default_float_dtype", "set_default_float_dtype", "default_float_dtype_as",
    "default_int_dtype", "set_default_int_dtype", "default_int_dtype_as", "default_complex_dtype",
    # backends and casting modes
    "register_backend_dtypes", "unregister_backend_dtypes", "registered_backends",
    "supported_dtypes", "unsupported_dtypes", "is_supported", "check_supported",
    "UnsupportedDtypeError", "CASTING_MODES", "casting_mode", "set_casting_mode",
    "casting_mode_as", "resolve_unsupported",
]  # fmt: skip


class _Spec(NamedTuple):
    kind: str  # 'b', 'i', 'u', 'f' or 'c'
    itemsize: int  # bytes


# name -> (kind, itemsize); the order here is the order of ``all_dtypes``.
_SPECS: dict[str, _Spec] = {
    "bool": _Spec("b", 1),
    "int8": _Spec("i", 1), "int16": _Spec("i", 2), "int32": _Spec("i", 4), "int64": _Spec("i", 8),
    "uint8": _Spec("u", 1), "uint16": _Spec("u", 2), "uint32": _Spec("u", 4),
    "uint64": _Spec("u", 8),
    "bfloat16": _Spec("f", 2), "float16": _Spec("f", 2), "float32": _Spec("f", 4),
    "float64": _Spec("f", 8),
    "complex64": _Spec("c", 8), "complex128": _Spec("c", 16),
}  # fmt: skip

# bool < integers (signed or not) < real floats < complex
_KIND_RANK: dict[str, int] = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}

_INSTANCES: dict[str, Dtype] = {}


class Dtype(str):
    """A workbench data type: a ``str`` holding the canonical dtype name.

    ``Dtype(x)`` accepts anything :func:`as_dtype` accepts and returns the
    unique instance for that name; unknown names raise ``TypeError``.
    """

    __slots__ = ()

    def __new__(cls, value: object) -> Dtype:
        return as_dtype(value)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (Dtype, (str(self),))

    @property
    def kind(self) -> str:
        """One-letter kind: 'b' bool, 'i' signed int, 'u' unsigned int, 'f' float, 'c' complex."""
        return _SPECS[self].kind

    @property
    def itemsize(self) -> int:
        """Size of one element in bytes."""
        return _SPECS[self].itemsize

    @property
    def bits(self) -> int:
        """Size of one element in bits."""
        return 8 * _SPECS[self].itemsize

    @property
    def is_bool(self) -> bool:
        """True for bool."""
        return _SPECS[self].kind == "b"

    @property
    def is_int(self) -> bool:
        """True for signed and unsigned integers (not bool)."""
        return _SPECS[self].kind in "iu"

    @property
    def is_signed_int(self) -> bool:
        """True for int8 ... int64."""
        return _SPECS[self].kind == "i"

    @property
    def is_uint(self) -> bool:
        """True for uint8 ... uint64."""
        return _SPECS[self].kind == "u"

    @property
    def is_float(self) -> bool:
        """True for real floating dtypes, including bfloat16 and float16."""
        return _SPECS[self].kind == "f"

    @property
    def is_complex(self) -> bool:
        """True for complex64 and complex128."""
        return _SPECS[self].kind == "c"

    @property
    def is_numeric(self) -> bool:
        """True for every dtype except bool."""
        return _SPECS[self].kind != "b"

    @property
    def numpy(self) -> np.dtype[Any]:
        """The NumPy dtype object (``ml_dtypes.bfloat16`` for bfloat16)."""
        return _NUMPY_DTYPES[self]


def _new_dtype(name: str) -> Dtype:
    inst = str.__new__(Dtype, name)
    _INSTANCES[name] = inst
    return inst


bool_ = _new_dtype("bool")
int8 = _new_dtype("int8")
int16 = _new_dtype("int16")
int32 = _new_dtype("int32")
int64 = _new_dtype("int64")
uint8 = _new_dtype("uint8")
uint16 = _new_dtype("uint16")
uint32 = _new_dtype("uint32")
uint64 = _new_dtype("uint64")
bfloat16 = _new_dtype("bfloat16")
float16 = _new_dtype("float16")
float32 = _new_dtype("float32")
float64 = _new_dtype("float64")
complex64 = _new_dtype("complex64")
complex128 = _new_dtype("complex128")

#: Canonical name -> Dtype for all 15 dtypes (``DTYPES["bool"] is bool_``).
DTYPES: dict[str, Dtype] = {name: _INSTANCES[name] for name in _SPECS}

all_dtypes: tuple[Dtype, ...] = tuple(DTYPES.values())
all_numeric_dtypes: tuple[Dtype, ...] = tuple(d for d in all_dtypes if d.is_numeric)
all_signed_int_dtypes: tuple[Dtype, ...] = (int8, int16, int32, int64)
all_uint_dtypes: tuple[Dtype, ...] = (uint8, uint16, uint32, uint64)
all_int_dtypes: tuple[Dtype, ...] = all_signed_int_dtypes + all_uint_dtypes
all_float_dtypes: tuple[Dtype, ...] = (bfloat16, float16, float32, float64)
all_complex_dtypes: tuple[Dtype, ...] = (complex64, complex128)

# Extra spellings accepted by ``as_dtype``.
_ALIASES: dict[str, Dtype] = {"bool_": bool_, "int": int64, "float": float64, "complex": complex128}
_BY_NAME: dict[str, Dtype] = {**DTYPES, **_ALIASES}
_PYTHON_TYPES: dict[type, Dtype] = {bool: bool_, int: int64, float: float64, complex: complex128}

# NumPy has no bfloat16; ml_dtypes provides one.
_NUMPY_DTYPES: dict[Dtype, np.dtype[Any]] = {
    d: np.dtype(ml_dtypes.bfloat16 if d is bfloat16 else str(d)) for d in all_dtypes
}

#: Anything ``as_dtype`` understands.
DtypeLike = Dtype | str | np.dtype | type


def __getattr__(name: str) -> Dtype:
    # ``dtypes.bool`` without shadowing the builtin inside this module.
    if name == "bool":
        return bool_
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def as_dtype(x: object) -> Dtype:
    """Normalize a dtype spec to a :class:`Dtype`.

    Accepts a ``Dtype``, a name or alias (``'float'`` -> float64, ``'int'`` ->
    int64, ``'complex'`` -> complex128, ``'bool_'``), a NumPy dtype or scalar type,
    ``ml_dtypes.bfloat16`` and the Python types ``bool``/``int``/``float``/``complex``
    (-> bool/int64/float64/complex128).  Raises ``TypeError`` otherwise.
    """
    if isinstance(x, Dtype):
        return x
    if isinstance(x, str):
        try:
            return _BY_NAME[x]
        except KeyError:
            raise TypeError(
                f"unknown dtype {x!r}; valid names are {', '.join(DTYPES)}"
                f" (aliases: {', '.join(_ALIASES)})"
            ) from None
    if isinstance(x, type) and x in _PYTHON_TYPES:
        return _PYTHON_TYPES[x]
    if isinstance(x, (np.dtype, type)):
        try:
            name = np.dtype(x).name
        except (TypeError, ValueError):
            name = None
        if name in DTYPES:
            return DTYPES[name]
        raise TypeError(f"unsupported dtype {x!r}; workbench supports {', '.join(DTYPES)}")
    raise TypeError(f"cannot interpret {x!r} (type {type(x).__name__}) as a dtype")


def numpy_dtype(d: DtypeLike) -> np.dtype[Any]:
    """The NumPy dtype for ``d`` (bfloat16 maps to ``ml_dtypes.bfloat16``)."""
    return as_dtype(d).numpy


# --------------------------------------------------------------------------- predicates


def is_bool_dtype(d: DtypeLike) -> bool:
    """True for bool."""
    return as_dtype(d).is_bool


def is_int_dtype(d: DtypeLike) -> bool:
    """True for signed or unsigned integer dtypes."""
    return as_dtype(d).is_int


def is_signed_int_dtype(d: DtypeLike) -> bool:
    """True for int8, int16, int32 and int64."""
    return as_dtype(d).is_signed_int


def is_uint_dtype(d: DtypeLike) -> bool:
    """True for uint8, uint16, uint32 and uint64."""
    return as_dtype(d).is_uint


def is_float_dtype(d: DtypeLike) -> bool:
    """True for real floating dtypes (bfloat16, float16, float32, float64)."""
    return as_dtype(d).is_float


def is_complex_dtype(d: DtypeLike) -> bool:
    """True for complex64 and complex128."""
    return as_dtype(d).is_complex


def is_numeric_dtype(d: DtypeLike) -> bool:
    """True for every dtype except bool."""
    return as_dtype(d).is_numeric


def finfo(d: DtypeLike) -> Any:
    """Machine limits of a float or complex dtype (works for bfloat16)."""
    d = as_dtype(d)
    if not (d.is_float or d.is_complex):
        raise TypeError(f"finfo() needs a float or complex dtype, got {d}")
    if d is bfloat16:
        return ml_dtypes.finfo(d.numpy)
    return np.finfo(d.numpy)


def iinfo(d: DtypeLike) -> np.iinfo:
    """Machine limits of an integer dtype."""
    d = as_dtype(d)
    if not d.is_int:
        raise TypeError(f"iinfo() needs an integer dtype, got {d}")
    return np.iinfo(d.numpy)


# --------------------------------------------------------------------------- promotion

# Direct safe casts; the full relation is their transitive closure.
_SAFE_CASTS: dict[Dtype, tuple[Dtype, ...]] = {
    bool_: (int8, uint8),
    int8: (int16, bfloat16, float16),
    uint8: (uint16, int16, bfloat16, float16),
    int16: (int32, float32),
    uint16: (uint32, int32, float32),
    int32: (int64, float64),
    uint32: (uint64, int64, float64),
    int64: (float64,),
    uint64: (float64,),
    bfloat16: (float32, complex64),
    float16: (float32, complex64),
    float32: (float64, complex64),
    float64: (complex128,),
    complex64: (complex128,),
    complex128: (),
}

# Candidate results in preference order: by kind, then by width.  Every safe
# cast goes to a later entry, so "first common safe target" is well defined.
_PREFERENCE: tuple[Dtype, ...] = (
    bool_, uint8, int8, uint16, int16, uint32, int32, uint64, int64,
    bfloat16, float16, float32, float64, complex64, complex128,
)  # fmt: skip
_BIT: dict[Dtype, int] = {d: 1 << i for i, d in enumerate(_PREFERENCE)}
_ALL_BITS = (1 << len(_PREFERENCE)) - 1


def _safe_target_masks() -> dict[Dtype, int]:
    """Bit mask of every dtype each dtype casts safely to (itself included)."""
    masks: dict[Dtype, int] = {}
    for d in reversed(_PREFERENCE):  # targets are later, so already computed
        mask = _BIT[d]
        for target in _SAFE_CASTS[d]:
            mask |= masks[target]
        masks[d] = mask
    return masks


_SAFE_MASK: dict[Dtype, int] = _safe_target_masks()


def _first_of(mask: int) -> Dtype:
    """The most preferred dtype whose bit is set in ``mask``."""
    return _PREFERENCE[(mask & -mask).bit_length() - 1]


_PROMOTION_TABLE: dict[tuple[Dtype, Dtype], Dtype] = {
    (a, b): _first_of(_SAFE_MASK[a] & _SAFE_MASK[b]) for a in all_dtypes for b in all_dtypes
}


def promote_types(a: DtypeLike, b: DtypeLike) -> Dtype:
    """The dtype two operands of dtypes ``a`` and ``b`` promote to (a table lookup)."""
    try:
        return _PROMOTION_TABLE[a, b]
    except (KeyError, TypeError):
        return _PROMOTION_TABLE[as_dtype(a), as_dtype(b)]


_WEAK_RANK: dict[type, int] = {bool: 0, int: 1, float: 2, complex: 3}


def _classify(x: object) -> Dtype | int:
    """A strong operand's Dtype, or the kind rank (0-3) of a weak Python scalar."""
    if isinstance(x, (str, np.dtype, type)):
        return as_dtype(x)
    if isinstance(x, np.generic):
        return as_dtype(x.dtype)
    for py_type, rank in _WEAK_RANK.items():  # bool is checked before int
        if isinstance(x, py_type):
            return rank
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        raise TypeError(f"cannot determine a dtype for {type(x).__name__} object {x!r}")
    return as_dtype(dtype)


def _weak_default(rank: int) -> Dtype:
    """Dtype of a lone Python scalar of the given kind rank."""
    if rank == 0:
        return bool_
    if rank == 1:
        return default_int_dtype()
    if rank == 2:
        return default_float_dtype()
    return default_complex_dtype()


def result_type(*args: object) -> Dtype:
    """Dtype of an operation combining ``args``.

    Dtypes, NumPy arrays and scalars and objects with a ``.dtype`` are strong;
    Python ``bool``/``int``/``float``/``complex`` values are weak and only raise
    the result's kind when the strong operands' kind is lower.  Several strong
    dtypes give their least common safe target, independent of argument order.
    """
    if not args:
        raise ValueError("result_type() needs at least one argument")
    mask = _ALL_BITS
    has_strong = False
    weak = -1
    for x in args:
        c = _classify(x)
        if isinstance(c, Dtype):
            mask &= _SAFE_MASK[c]
            has_strong = True
        elif c > weak:
            weak = c
    if not has_strong:
        return _weak_default(weak)
    strong = _first_of(mask)
    if weak <= _KIND_RANK[strong.kind]:
        return strong
    if weak == 3 and strong.is_float:  # complex scalar with a real float array
        return _PROMOTION_TABLE[strong, complex64]
    return _weak_default(weak)


def dtype_of(value: object) -> Dtype:
    """Dtype of an array, NumPy scalar, object with ``.dtype`` or Python scalar.

    Python scalars take the defaults: bool -> bool, int -> default int,
    float -> default float, complex -> default complex.
    """
    c = _classify(value)
    return c if isinstance(c, Dtype) else _weak_default(c)


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _value_fits(value: bool | int | float | complex, to: Dtype) -> bool:
    """Whether a Python scalar converts to ``to`` without changing kind or overflowing."""
    if isinstance(value, bool):
        return True
    if to.is_bool:
        return False
    if isinstance(value, int):
        if to.is_int:
            info = iinfo(to)
            return int(info.min) <= value <= int(info.max)
        return abs(value) <= float(finfo(to).max)
    if to.is_int or (isinstance(value, complex) and not to.is_complex):
        return False
    limit = float(finfo(to).max)
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    return all(not math.isfinite(p) or abs(p) <= limit for p in parts)


def can_cast(from_: object, to: DtypeLike, casting: str = "safe") -> bool:
    """Whether ``from_`` (a dtype, array or Python scalar) may be cast to ``to``.

    ``casting``: 'no'/'equiv' (same dtype), 'safe' (``promote_types(from_, to) ==
    to``), 'same_kind' (safe, or ``to``'s kind is not lower: bool < int < float <
    complex) or 'unsafe' (always).  A Python scalar is judged by its value: e.g.
    ``can_cast(300, int8)`` is False but ``can_cast(100, int8)`` is True.
    """
    if casting not in _CASTINGS:
        raise ValueError(f"casting must be one of {_CASTINGS}, got {casting!r}")
    to = as_dtype(to)
    source = _classify(from_)
    if casting == "unsafe":
        return True
    if isinstance(source, int):  # a weak Python scalar: judge its value
        if casting in ("no", "equiv"):
            return _weak_default(source) is to
        if casting == "same_kind":
            return _KIND_RANK[to.kind] >= source
        return _value_fits(from_, to)  # type: ignore[arg-type]
    if casting in ("no", "equiv"):
        return source is to
    if _PROMOTION_TABLE[source, to] is to:
        return True
    return casting == "same_kind" and _KIND_RANK[to.kind] >= _KIND_RANK[source.kind]


# --------------------------------------------------------------------------- defaults

_UNSET: Any = object()


class _Setting:
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


_default_float = _Setting("workbench_default_float_dtype", float64)
_default_int = _Setting("workbench_default_int_dtype", int64)


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
    """complex128 when the default float is float64, else complex64."""
    return _PROMOTION_TABLE[default_float_dtype(), complex64]


def default_float_dtype_as(d: DtypeLike) -> contextlib.AbstractContextManager[Dtype]:
    """Temporarily set the default float dtype: ``with default_float_dtype_as("float32"):``.

    The previous default is restored on exit, even on error.
    """
    return _default_float.override(_as_float_dtype(d))


def default_int_dtype_as(d: DtypeLike) -> contextlib.AbstractContextManager[Dtype]:
    """Temporarily set the default int dtype; restored on exit, even on error."""
    return _default_int.override(_as_int_dtype(d))


_KIND_DEFAULTS = {"bool": 0, "int": 1, "float": 2, "complex": 3}


def infer_dtype(
    dtype: DtypeLike | None = None,
    *,
    arrays: Iterable[object] = (),
    scalars: Iterable[object] = (),
    kind: str | None = None,
) -> Dtype:
    """Dtype for a creation function (``zeros``, ``arange``, ``full``, ...).

    In order: the explicit ``dtype``; else the dtype of the first of ``arrays``
    with a ``.dtype``; else the ``result_type`` of the relevant ``scalars``
    (``None`` entries skipped), so ``arange(0, 1.5)`` gives the default float;
    else the default for ``kind`` ('bool', 'int', 'float' (the default) or 'complex').
    """
    if dtype is not None:
        return as_dtype(dtype)
    for a in arrays:
        array_dtype = getattr(a, "dtype", None)
        if array_dtype is not None:
            return as_dtype(array_dtype)
    relevant = [s for s in scalars if s is not None]
    if relevant:
        return result_type(*relevant)
    key = "float" if kind is None else kind
    if key not in _KIND_DEFAULTS:
        raise ValueError(f"kind must be one of {tuple(_KIND_DEFAULTS)} or None, got {kind!r}")
    return _weak_default(_KIND_DEFAULTS[key])


# --------------------------------------------------------------------------- backends


class _BackendDtypes(NamedTuple):
    supported: frozenset[Dtype]
    per_op: dict[str, frozenset[Dtype]]  # op name -> dtypes the op lacks


_BACKENDS: dict[str, _BackendDtypes] = {}


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


def unregister_backend_dtypes(backend: str) -> None:
    """Forget a backend's dtype declaration (``KeyError`` if unknown)."""
    _lookup_backend(backend)
    del _BACKENDS[backend]


def registered_backends() -> tuple[str, ...]:
    """Names of the backends with a dtype declaration."""
    return tuple(_BACKENDS)


def _lookup_backend(backend: str) -> _BackendDtypes:
    try:
        return _BACKENDS[backend]
    except KeyError:
        known = ", ".join(repr(b) for b in _BACKENDS)
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


# The Python/NumPy VM handles everything.
register_backend_dtypes("py", all_dtypes)


# --------------------------------------------------------------------------- casting modes

CASTING_MODES: tuple[str, ...] = ("upcast", "downcast", "crosscast", "cast")

_casting_mode = _Setting("workbench_casting_mode", None)


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
        self.suggested_modes: list[str] = list(self.resolutions)
        super().__init__(self._message())

    def _message(self) -> str:
        where = (
            f"Backend {self.backend!r}"
            if self.op is None
            else f"{self.op} on backend {self.backend!r}"
        )
        text = f"{where} does not support dtype {self.dtype}"
        if self.resolutions:
            modes = ", ".join(f"{m!r} (-> {d})" for m, d in self.resolutions.items())
            return (
                f"{text}; set a casting mode to convert it: {modes}"
                " (see set_casting_mode / casting_mode_as)"
            )
        supported = ", ".join(supported_dtypes(self.backend, self.op)) or "none"
        return f"{text}, and no casting mode can convert it (supported dtypes: {supported})"

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
