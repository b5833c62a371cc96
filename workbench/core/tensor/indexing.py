"""The index of a tensor as data: parsing a NumPy index (ints, slices, ``None``,
``...``, index arrays) into entries, checking it against a tensor's type, and the
lengths of slices, static (known while building) or symbolic.

An entry is an int (a constant index), `SYMBOLIC` (a scalar input of the node), a
`SliceEntry` whose parts are ints, None or `SYMBOLIC`, and, in advanced indices
only, `ADVANCED` (an index array input), ``None`` or ``Ellipsis``. The Ops built on
this (`Subtensor`, `IncSubtensor`, the advanced ones) are in subtensor.py and
advanced_subtensor.py.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from workbench.core.dtypes import int64
from workbench.core.graph.basic import Constant, Variable
from workbench.core.tensor import math as tmath
from workbench.core.tensor.basic import cast
from workbench.core.tensor.type import StaticShape, TensorType
from workbench.core.tensor.variable import as_tensor_variable, constant

__all__ = [
    "ADVANCED", "FULL_SLICE", "INDEX_LIMIT", "SYMBOLIC", "SliceEntry", "check_index",
    "checked_scalar_index", "clamped_slice_part", "encode", "fill", "parse_index",
    "slice_length", "static_slice_length",
]  # fmt: skip

INDEX_ERROR = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)
SLICE_ERROR = "slice indices must be integers or None or have an __index__ method"


# -- the representation of an index ------------------------------------------------


class IndexMarker:
    """A placeholder in an `idx_list` for a part of the index given as a node input."""

    __slots__ = ("name", "label")

    def __init__(self, name: str, label: str) -> None:
        self.name = name
        self.label = label

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name  # unpickles to the module-level singleton

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IndexMarker) and other.name == self.name


#: An integer scalar given as an input (an index, or a slice's start/stop/step).
SYMBOLIC = IndexMarker("SYMBOLIC", "i")
#: An integer array or boolean mask given as an input (advanced indexing only).
ADVANCED = IndexMarker("ADVANCED", "array")


class SliceEntry(NamedTuple):
    """A slice in an `idx_list`; each part is an int, None or `SYMBOLIC`.

    (Python's `slice` is not hashable before 3.12, and Op props must be.)
    """

    start: Any = None
    stop: Any = None
    step: Any = None

    def __str__(self) -> str:
        labels = ("start", "stop", "step")
        parts = ["" if p is None else labels[k] if p is SYMBOLIC else str(p)
                 for k, p in enumerate(self)]
        return ":".join(parts if self.step is not None else parts[:2])


FULL_SLICE = SliceEntry(None, None, None)


def entry_str(entry: Any) -> str:
    """How an idx_list entry prints in an Op's name (``1:3``, ``::-1``, ``i``, ``None``)."""
    if entry is Ellipsis:
        return "..."
    if isinstance(entry, IndexMarker):
        return entry.label
    return str(entry)


#: The largest index magnitude kept as is: every part of an index must fit the int64 the
#: compiled linkers compute with (and its negation must fit too).
INDEX_LIMIT = 2**63 - 1


def clamped_slice_part(value: int) -> int:
    """A constant slice start, stop or step within +-INDEX_LIMIT, as NumPy clamps them:
    no axis is that long, so the slice selects the same elements."""
    return max(-INDEX_LIMIT, min(INDEX_LIMIT, value))


def checked_scalar_index(value: int) -> int:
    """A constant integer index, or IndexError when no axis can be that long (beyond
    int64: the compiled linkers would wrap it to another element)."""
    if not -INDEX_LIMIT <= value <= INDEX_LIMIT:
        raise IndexError(f"index {value} is out of bounds for any axis: lengths and "
                         "indices fit in int64")
    return value


def normalize_entry(entry: Any, allow_advanced: bool) -> Any:
    """An idx_list entry given to an Op constructor, checked (Python slices accepted;
    constant slice parts clamped, scalar indices beyond int64 refused)."""
    if isinstance(entry, slice):
        entry = SliceEntry(entry.start, entry.stop, entry.step)
    if isinstance(entry, SliceEntry):
        parts = []
        for p in entry:
            if p is None or p is SYMBOLIC:
                parts.append(p)
            elif isinstance(p, (int, np.integer)) and not isinstance(p, bool):
                parts.append(clamped_slice_part(int(p)))
            else:
                raise TypeError(f"slice parts in an idx_list must be ints, None or SYMBOLIC, "
                                f"got {p!r}")
        if parts[2] == 0:
            raise ValueError("slice step cannot be zero")
        return SliceEntry(*parts)
    if entry is SYMBOLIC:
        return entry
    if isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
        return checked_scalar_index(int(entry))
    if allow_advanced and (entry is ADVANCED or entry is None or entry is Ellipsis):
        return entry
    kind = "advanced " if allow_advanced else "basic "
    raise TypeError(f"invalid entry {entry!r} in the idx_list of a {kind}index")


def fill(idx_list: Sequence[Any], items: Iterable[Any]) -> list[Any]:
    """`idx_list` with its markers replaced, in order, by `items` (Variables or values)."""
    it = iter(items)
    filled: list[Any] = []
    for entry in idx_list:
        if isinstance(entry, SliceEntry):
            filled.append(SliceEntry(*(next(it) if p is SYMBOLIC else p for p in entry)))
        elif isinstance(entry, IndexMarker):
            filled.append(next(it))
        else:
            filled.append(entry)
    return filled


def count_inputs(idx_list: Sequence[Any]) -> int:
    """How many node inputs (after x, y) an idx_list takes."""
    n = 0
    for entry in idx_list:
        if isinstance(entry, SliceEntry):
            n += sum(p is SYMBOLIC for p in entry)
        elif isinstance(entry, IndexMarker):
            n += 1
    return n


def encode(entries: Sequence[Any]) -> tuple[tuple[Any, ...], list[Variable]]:
    """(idx_list, inputs) for parsed entries: Variables become markers and inputs."""
    idx_list: list[Any] = []
    inputs: list[Variable] = []
    for entry in entries:
        if isinstance(entry, SliceEntry):
            parts = []
            for p in entry:
                if isinstance(p, Variable):
                    parts.append(SYMBOLIC)
                    inputs.append(p)
                else:
                    parts.append(p)
            idx_list.append(SliceEntry(*parts))
        elif isinstance(entry, Variable):
            idx_list.append(ADVANCED if is_array_index(entry) else SYMBOLIC)
            inputs.append(entry)
        else:
            idx_list.append(entry)
    return tuple(idx_list), inputs


def index_tuple(idx_list: Sequence[Any], values: Sequence[Any]) -> tuple[Any, ...]:
    """The NumPy index for run-time `values` of the symbolic parts."""
    result: list[Any] = []
    for entry in fill(idx_list, values):
        if isinstance(entry, SliceEntry):
            result.append(slice(*(None if p is None else int(p) for p in entry)))
        elif isinstance(entry, np.ndarray) and entry.ndim == 0 and entry.dtype.kind in "iu":
            result.append(int(entry))
        else:
            result.append(entry)
    return tuple(result)


def is_array_index(var: Variable) -> bool:
    """Whether a tensor index Variable is advanced (an int array or a boolean mask)."""
    return var.type.dtype.is_bool or var.type.ndim > 0


def strip_trailing_full_slices(entries: list[Any]) -> list[Any]:
    while entries and isinstance(entries[-1], SliceEntry) and entries[-1] == FULL_SLICE:
        entries.pop()
    return entries


# -- parsing a NumPy index -----------------------------------------------------------


def _slice_part(value: Any) -> int | Variable | None:
    """A slice's start, stop or step as None, a Python int or an integer scalar Variable."""
    if value is None:
        return None
    if isinstance(value, Variable):
        var = as_tensor_variable(value)
        if var.type.ndim != 0 or not var.type.dtype.is_int:
            raise TypeError(SLICE_ERROR)
        return clamped_slice_part(int(var.data)) if isinstance(var, Constant) else var
    try:
        return clamped_slice_part(operator.index(value))
    except TypeError:
        raise TypeError(SLICE_ERROR) from None


def _parse_entry(entry: Any) -> Any:
    """One entry of a NumPy index as None, Ellipsis, int, SliceEntry or tensor Variable."""
    if entry is None or entry is Ellipsis:
        return entry
    if isinstance(entry, slice):
        parts = [_slice_part(p) for p in (entry.start, entry.stop, entry.step)]
        if isinstance(parts[2], int) and parts[2] in (0, 1):
            if parts[2] == 0:
                raise ValueError("slice step cannot be zero")
            parts[2] = None  # a step of 1 is no step
        return SliceEntry(*parts)
    if isinstance(entry, (bool, np.bool_)):  # a 0-d boolean mask, as NumPy reads it
        return constant(np.array(bool(entry)))
    if isinstance(entry, (int, np.integer)):
        return checked_scalar_index(int(entry))
    if isinstance(entry, Variable):
        try:
            var = as_tensor_variable(entry)
        except TypeError:
            raise IndexError(INDEX_ERROR) from None
        dtype = var.type.dtype
        if dtype.is_int and var.type.ndim == 0:
            return checked_scalar_index(int(var.data)) if isinstance(var, Constant) else var
        if dtype.is_int or dtype.is_bool:
            return var
        raise IndexError(INDEX_ERROR)
    if isinstance(entry, (list, tuple, np.ndarray)):
        try:
            arr = np.asarray(entry)
        except ValueError:  # ragged nested lists
            raise IndexError(INDEX_ERROR) from None
        if isinstance(entry, (list, tuple)) and arr.size == 0:
            arr = arr.astype(np.int64)
        if arr.dtype.kind == "b":
            return constant(arr)
        if arr.dtype.kind in "iu":
            return checked_scalar_index(int(arr)) if arr.ndim == 0 else constant(arr)
        raise IndexError(INDEX_ERROR)
    raise IndexError(INDEX_ERROR)


def parse_index(key: Any) -> list[Any]:
    """A NumPy index as a list of parsed entries (see `_parse_entry`)."""
    entries = key if isinstance(key, tuple) else (key,)
    parsed = [_parse_entry(e) for e in entries]
    if sum(e is Ellipsis for e in parsed) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    return parsed


def consumed_dims(entries: Sequence[Any]) -> int:
    """How many dimensions of the indexed array the entries index."""
    n = 0
    for e in entries:
        if e is None or e is Ellipsis:
            continue
        if isinstance(e, Variable) and e.type.dtype.is_bool:
            n += e.type.ndim
        else:
            n += 1
    return n


def check_index(x_type: TensorType, entries: Sequence[Any]) -> None:
    """Raise NumPy's IndexError for an index that cannot apply to arrays of `x_type`:
    too many indices, constant integers out of static bounds, masks of the wrong shape.

    (Constant index arrays are checked with the broadcast of all of them, by
    `advanced_static_shape`: NumPy checks no index when that broadcast is empty.)"""
    n_consumed = consumed_dims(entries)
    ndim = x_type.ndim
    if n_consumed > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {n_consumed} "
            "were indexed"
        )
    axis = 0
    for e in entries:
        if e is None:
            continue
        if e is Ellipsis:
            axis += ndim - n_consumed
            continue
        length = x_type.shape[axis] if axis < ndim else None
        if isinstance(e, int):
            if length is not None and not -length <= e < length:
                raise IndexError(f"index {e} is out of bounds for axis {axis} with size {length}")
        elif isinstance(e, Variable) and e.type.dtype.is_bool:
            for k, mask_len in enumerate(e.type.shape):
                x_len = x_type.shape[axis + k]
                # (NumPy lets a mask dimension of length 0 index an axis of any length.)
                if mask_len and x_len is not None and mask_len != x_len:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {axis + k}; "
                        f"size of axis is {x_len} but size of corresponding boolean axis is "
                        f"{mask_len}"
                    )
            axis += e.type.ndim
            continue
        axis += 1


def expand_ellipsis(entries: list[Any], ndim: int) -> list[Any]:
    """Entries with the Ellipsis replaced by full slices and full slices appended."""
    n_consumed = consumed_dims(entries)
    if any(e is Ellipsis for e in entries):
        at = next(k for k, e in enumerate(entries) if e is Ellipsis)
        entries = entries[:at] + [FULL_SLICE] * (ndim - n_consumed) + entries[at + 1:]
    else:
        entries = entries + [FULL_SLICE] * (ndim - n_consumed)
    return entries


# -- slice lengths -----------------------------------------------------------------


def static_slice_length(length: int | None, entry: SliceEntry) -> int | None:
    """The length of ``a[slice]`` along an axis of static `length`, if it is certain."""
    if length == 0:
        return 0
    if not all(p is None or isinstance(p, int) for p in entry):
        return None
    start, stop, step = entry
    if length is not None:
        return len(range(*slice(start, stop, step).indices(length)))
    step = 1 if step is None else step
    if step > 0 and stop == 0:
        return 0
    if start is not None and stop is not None and (start >= 0) == (stop >= 0):
        if (step > 0 and stop <= start) or (step < 0 and stop >= start):
            return 0
    return None


def basic_static_shape(x_shape: StaticShape, entries: Sequence[Any]) -> StaticShape:
    """Static output shape of basic indexing (ints and SliceEntries, no None/Ellipsis)."""
    shape: list[int | None] = []
    for axis, e in enumerate(entries):
        if isinstance(e, SliceEntry):
            shape.append(static_slice_length(x_shape[axis], e))
    shape.extend(x_shape[len(entries):])
    return tuple(shape)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer))


def _imax(a: Any, b: Any) -> Any:
    return max(a, b) if _is_int(a) and _is_int(b) else tmath.maximum(a, b)


def _imin(a: Any, b: Any) -> Any:
    return min(a, b) if _is_int(a) and _is_int(b) else tmath.minimum(a, b)


def _wrap_negative(i: Any, n: Any) -> Any:
    """``i + n`` if i < 0 else i (for ints or int64 scalar Variables)."""
    if _is_int(i):
        return i + n if i < 0 else i
    return tmath.switch(tmath.lt(i, 0), i + n, i)


def _length_for_step(n: Any, start: Any, stop: Any, step: Any, positive: bool) -> Any:
    """Slice length for a step of known sign (step may be symbolic)."""
    if positive:
        lo, hi = 0, n
        first = 0 if start is None else _imin(_imax(_wrap_negative(start, n), lo), hi)
        last = n if stop is None else _imin(_imax(_wrap_negative(stop, n), lo), hi)
        span, stride = last - first, step
    else:
        lo, hi = -1, n - 1
        first = hi if start is None else _imin(_imax(_wrap_negative(start, n), lo), hi)
        last = -1 if stop is None else _imin(_imax(_wrap_negative(stop, n), lo), hi)
        span, stride = first - last, -step
    if _is_int(stride) and stride == 1:
        return _imax(span, 0)
    count = (span + stride - 1) // stride if _is_int(span) and _is_int(stride) else \
        tmath.floor_div(span + stride - 1, stride)
    return _imax(count, 0)


def slice_length(n: Any, start: Any = None, stop: Any = None, step: Any = None) -> Any:
    """The length of ``a[start:stop:step]`` for an axis of length `n`, as Python's
    ``slice.indices`` computes it, with ints or integer scalar Variables (result: an
    int, or an int64 scalar Variable)."""
    parts = [p if p is None or _is_int(p) else cast(p, int64) for p in (start, stop, step)]
    start, stop, step = parts
    if _is_int(n) and all(p is None or _is_int(p) for p in parts):
        return len(range(*slice(start, stop, step).indices(int(n))))
    if start is None and stop is None and step is None:
        return n
    if step is None or _is_int(step):
        result = _length_for_step(n, start, stop, 1 if step is None else step,
                                  step is None or step > 0)
    else:
        result = tmath.switch(tmath.gt(step, 0),
                              _length_for_step(n, start, stop, step, True),
                              _length_for_step(n, start, stop, step, False))
    if isinstance(result, Variable) and result.type.dtype != int64:
        result = cast(result, int64)
    return result
