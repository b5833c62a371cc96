"""Dtype objects: names, kinds, sizes, NumPy equivalents, predicates and limits.

Every dtype is a :class:`Dtype`, a ``str`` subclass whose value is the canonical
name (``"float32"``, ``"bool"``, ...).  There is exactly one ``Dtype`` object per
name, so ``Dtype("float32") is float32``.  Part of :mod:`workbench.core.dtypes`;
import the names from there.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import ml_dtypes
import numpy as np


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

_INSTANCES: dict[str, Dtype] = {}


class Dtype(str):
    """A workbench data type: a ``str`` holding the canonical dtype name.

    ``Dtype(x)`` accepts anything :func:`as_dtype` accepts and returns the
    unique instance for that name; unknown names raise ``TypeError``.
    """

    __slots__ = ()
    __module__ = "workbench.core.dtypes"  # the public home: pickles and reprs name it

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
