"""Promotion: the dtype an operation on mixed dtypes produces, and which casts are allowed.

Promotion follows a lattice of *safe casts*: ``a`` casts safely to ``b`` when ``b``
can hold every value of ``a`` (``int64``/``uint64`` -> ``float64`` is counted as
safe, as NumPy does).  ``promote_types(a, b)`` is the first dtype, in order of
kind (bool < integer < float < complex) and then width, that both ``a`` and
``b`` cast safely to.  This reproduces the Python Array API promotion table plus
the extra pairs workbench resolves like Ivy (see ``tests/data/dtypes``).

Python scalars are *weak* (NEP 50 / Array API): they adopt the dtype of the
array operands whenever the kinds allow it, e.g. ``float32 array + 2.5`` stays
``float32``; otherwise they take the default dtype of their kind
(`defaults`).  Part of :mod:`workbench.core.dtypes`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from workbench.core.dtypes.base import (
    Dtype,
    DtypeLike,
    all_dtypes,
    as_dtype,
    bfloat16,
    bool_,
    complex64,
    complex128,
    finfo,
    float16,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from workbench.core.dtypes.defaults import (
    default_complex_dtype,
    default_float_dtype,
    default_int_dtype,
)

# bool < integers (signed or not) < real floats < complex
_KIND_RANK: dict[str, int] = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}

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


def weak_or_dtype(value: object, dtype: Dtype) -> object:
    """`value` itself where it is a Python scalar (weak in `result_type`: ``isclose(x, 0.1)``
    of a float32 x compares in float32, as NumPy 2), else `dtype` (of its tensor)."""
    return value if type(value) in _WEAK_RANK else dtype


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


def _value_fits(value: bool | complex, to: Dtype) -> bool:
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
