"""Indexing tensors: ``x[1:3, ::-1]``, ``x[i]``, ``x[None, ...]``, and writing into them.

`getitem` (behind ``TensorVariable.__getitem__``) parses a NumPy index and
builds the graph for it:

- basic indexing (ints, slices, ``None``, ``...``) gives a `Subtensor`, a view
  of its input; ``None`` entries become a `DimShuffle` around it;
- any integer array or boolean mask gives an `AdvancedSubtensor`
  (`workbench.core.tensor.advanced_subtensor`), a copy, following NumPy's rules.

The *structure* of an index (which entries are ints, slices, arrays, and which
parts are constants) lives in the Op's `idx_list` prop; its symbolic parts
(scalar Variables, index arrays) are the node's inputs after ``x``. In an
`idx_list` an entry is an int (a constant index), `SYMBOLIC` (a scalar input),
a `SliceEntry` whose parts are ints, None or `SYMBOLIC`, and, in advanced
indices only, `ADVANCED` (an index array input), ``None`` or ``Ellipsis``.

`set_subtensor(x[idx], y)` and `inc_subtensor(x[idx], y)` return a new ``x``
whose indexed part is replaced by / incremented with ``y`` (`IncSubtensor`,
`AdvancedIncSubtensor`).

Gradients: reading ``x[idx]`` writes the output gradient into zeros at idx
(repeated advanced indices accumulate); writing gives x the output gradient
(zeroed at idx when setting) and y the gradient at idx summed over the
dimensions y was broadcast along. Index inputs are disconnected.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from workbench.core.dtypes import can_cast, int64
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.op import Op
from workbench.core.scalar.basic import is_python_scalar
from workbench.core.tensor import math as tmath
from workbench.core.tensor.basic import cast
from workbench.core.tensor.elemwise import DimShuffle, dimshuffle
from workbench.core.tensor.shape import Shape, shape_i, specify_shape
from workbench.core.tensor.type import StaticShape, TensorType, format_shape
from workbench.core.tensor.variable import as_tensor_variable, constant

__all__ = [
    "ADVANCED", "IncSubtensor", "SYMBOLIC", "SliceEntry", "Subtensor", "getitem",
    "inc_subtensor", "set_subtensor", "slice_length",
]  # fmt: skip

INDEX_ERROR = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)
SLICE_ERROR = "slice indices must be integers or None or have an __index__ method"


# -- the representation of an index ------------------------------------------------


class _Marker:
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
        return isinstance(other, _Marker) and other.name == self.name


#: An integer scalar given as an input (an index, or a slice's start/stop/step).
SYMBOLIC = _Marker("SYMBOLIC", "i")
#: An integer array or boolean mask given as an input (advanced indexing only).
ADVANCED = _Marker("ADVANCED", "array")


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
    if isinstance(entry, _Marker):
        return entry.label
    return str(entry)


def _normalize_entry(entry: Any, allow_advanced: bool) -> Any:
    """An idx_list entry given to an Op constructor, checked (Python slices accepted)."""
    if isinstance(entry, slice):
        entry = SliceEntry(entry.start, entry.stop, entry.step)
    if isinstance(entry, SliceEntry):
        parts = []
        for p in entry:
            if p is None or p is SYMBOLIC:
                parts.append(p)
            elif isinstance(p, (int, np.integer)) and not isinstance(p, bool):
                parts.append(int(p))
            else:
                raise TypeError(f"slice parts in an idx_list must be ints, None or SYMBOLIC, "
                                f"got {p!r}")
        if parts[2] == 0:
            raise ValueError("slice step cannot be zero")
        return SliceEntry(*parts)
    if entry is SYMBOLIC:
        return entry
    if isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
        return int(entry)
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
        elif isinstance(entry, _Marker):
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
        elif isinstance(entry, _Marker):
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
        return int(var.data) if isinstance(var, Constant) else var
    try:
        return operator.index(value)
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
        return int(entry)
    if isinstance(entry, Variable):
        try:
            var = as_tensor_variable(entry)
        except TypeError:
            raise IndexError(INDEX_ERROR) from None
        dtype = var.type.dtype
        if dtype.is_int and var.type.ndim == 0:
            return int(var.data) if isinstance(var, Constant) else var
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
            return int(arr) if arr.ndim == 0 else constant(arr)
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
    too many indices, constant indices out of static bounds, masks of the wrong shape."""
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
        elif isinstance(e, Constant) and length is not None:
            data = np.asarray(e.data).ravel()
            bad = data[(data < -length) | (data >= length)]
            if bad.size:
                raise IndexError(
                    f"index {int(bad[0])} is out of bounds for axis {axis} with size {length}"
                )
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


# -- Ops ---------------------------------------------------------------------------


def _convert_scalar_inputs(op: Op, inputs: Sequence[Any]) -> list[Variable]:
    converted = []
    for k, value in enumerate(inputs):
        var = as_tensor_variable(value)
        if var.type.ndim != 0 or not var.type.dtype.is_int:
            raise TypeError(
                f"{op}: index input {k} must be an integer scalar, got {var} of type {var.type}"
            )
        converted.append(var)
    return converted


class Subtensor(Op):
    """Basic indexing with ints and slices (``x[1:3, i]``): a view of the input.

    `idx_list` holds ints, `SYMBOLIC` and `SliceEntry`s (Python slices are
    accepted and converted); the node's inputs are ``x`` followed by one integer
    scalar per `SYMBOLIC`. Prints as ``Subtensor{1:3, ::-1}`` or ``Subtensor{i, :}``.
    """

    __props__ = ("idx_list",)
    view_map = {0: [0]}

    def __init__(self, idx_list: Iterable[Any]) -> None:
        self.idx_list: tuple[Any, ...] = tuple(_normalize_entry(e, False) for e in idx_list)

    def __str__(self) -> str:
        return f"{type(self).__name__}{{{', '.join(entry_str(e) for e in self.idx_list)}}}"

    def make_node(self, x: Any, *inputs: Any) -> Apply:
        x = as_tensor_variable(x)
        expected = count_inputs(self.idx_list)
        if len(inputs) != expected:
            raise TypeError(f"{self} takes {expected} index inputs after x, got {len(inputs)}")
        scalars = _convert_scalar_inputs(self, inputs)
        entries = fill(self.idx_list, scalars)
        check_index(x.type, entries)
        out = TensorType(x.type.dtype, basic_static_shape(x.type.shape, entries))()
        return Apply(self, [x, *scalars], [out])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, *values = inputs
        # The trailing Ellipsis makes numpy return a 0-d view instead of a scalar.
        output_storage[0][0] = x[index_tuple(self.idx_list, values) + (Ellipsis,)]

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        x_shape = input_shapes[0]
        static = iter(node.outputs[0].type.shape)
        shape: list[Any] = []
        entries = fill(self.idx_list, node.inputs[1:])
        for axis, e in enumerate(entries):
            if isinstance(e, SliceEntry):
                known = next(static)
                shape.append(known if known is not None else slice_length(x_shape[axis], *e))
        shape.extend(x_shape[len(entries):])
        return [tuple(shape)]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True]] + [[False] for _ in node.inputs[1:]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """The output gradient written into zeros of x's shape at the index (an
        `IncSubtensor`); the index inputs are disconnected (they are positions)."""
        from workbench.core.tensor.join import disconnected, float_zeros_like, grad_for

        x, *indices = inputs
        (gz,) = output_grads
        if not (x.type.dtype.is_float or x.type.dtype.is_complex):
            return [float_zeros_like(x)] + [disconnected() for _ in indices]
        gz = grad_for(gz, x)
        gx = IncSubtensor(self.idx_list)(float_zeros_like(x), gz, *indices)
        return [gx] + [disconnected() for _ in indices]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The same index applied to the eval point."""
        if eval_points[0] is None:
            return [None]
        return [Subtensor(self.idx_list)(eval_points[0], *inputs[1:])]


class IncSubtensor(Op):
    """``x`` with ``x[idx]`` replaced by (`set_instead_of_inc`) or incremented with ``y``.

    Inputs: ``x``, ``y`` (same dtype as x, broadcastable to ``x[idx]``), then the
    index scalars of `idx_list` (as for `Subtensor`). The output has x's Type; it
    is a fresh copy of x unless `inplace` (then x is overwritten: `destroy_map`).
    Prints as ``SetSubtensor{1:3}`` or ``IncSubtensor{i}`` (``...;inplace``).
    """

    __props__ = ("idx_list", "set_instead_of_inc", "inplace")

    def __init__(self, idx_list: Iterable[Any], set_instead_of_inc: bool = False,
                 inplace: bool = False) -> None:
        self.idx_list: tuple[Any, ...] = tuple(_normalize_entry(e, False) for e in idx_list)
        self.set_instead_of_inc = bool(set_instead_of_inc)
        self.inplace = bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        name = "SetSubtensor" if self.set_instead_of_inc else "IncSubtensor"
        inner = ", ".join(entry_str(e) for e in self.idx_list)
        return f"{name}{{{inner}{';inplace' if self.inplace else ''}}}"

    def make_node(self, x: Any, y: Any, *inputs: Any) -> Apply:
        x = as_tensor_variable(x)
        expected = count_inputs(self.idx_list)
        if len(inputs) != expected:
            raise TypeError(
                f"{self} takes x, y and {expected} index inputs, got {2 + len(inputs)} inputs"
            )
        scalars = _convert_scalar_inputs(self, inputs)
        entries = fill(self.idx_list, scalars)
        check_index(x.type, entries)
        target = basic_static_shape(x.type.shape, entries)
        y = prepare_value(x, y, target, self.set_instead_of_inc, advanced=False)
        return Apply(self, [x, y, *scalars], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, y, *values = inputs
        out = x if self.inplace else x.copy()
        idx = index_tuple(self.idx_list, values) + (Ellipsis,)
        if self.set_instead_of_inc:
            out[idx] = y
        else:
            out[idx] += y
        output_storage[0][0] = out

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True], [True]] + [[False] for _ in node.inputs[2:]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """x gets the output gradient (zeroed at the index when setting: those values
        were overwritten), y the output gradient at the index summed over the dimensions
        y was broadcast along; the index inputs are disconnected."""
        return _inc_subtensor_grads(self, Subtensor(self.idx_list), inputs, output_grads)

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The same write, of y's eval point into x's (zeros for a missing one)."""
        return _inc_subtensor_rop(self, inputs, eval_points)


def _inc_subtensor_grads(op: Op, read: Op, inputs: Sequence[Variable],
                         output_grads: Sequence[Variable]) -> list[Variable]:
    """L_op of `IncSubtensor` and `AdvancedIncSubtensor`; `read` indexes like `op` writes.

    (Setting through repeated advanced indices is handled by `AdvancedIncSubtensor`.)
    """
    from workbench.core.tensor.join import disconnected, float_zeros_like, grad_for
    from workbench.core.tensor.reshape import sum_to

    x, y, *indices = inputs
    (gz,) = output_grads
    rest = [disconnected() for _ in indices]
    if not (x.type.dtype.is_float or x.type.dtype.is_complex):
        return [float_zeros_like(x), float_zeros_like(y), *rest]
    gz = grad_for(gz, x)
    if op.set_instead_of_inc:  # type: ignore[attr-defined]
        gx = type(op)(op.idx_list, set_instead_of_inc=True)(  # type: ignore[attr-defined]
            gz, constant(0, dtype=gz.type.dtype), *indices)
    else:
        gx = gz
    gy = grad_for(sum_to(read(gz, *indices), y), y)
    return [gx, gy, *rest]


def _inc_subtensor_rop(op: Op, inputs: Sequence[Variable],
                       eval_points: Sequence[Variable | None]) -> list[Variable | None]:
    from workbench.core.tensor.join import float_zeros_like

    x, y, *indices = inputs
    e_x, e_y = eval_points[0], eval_points[1]
    if e_x is None and e_y is None:
        return [None]
    e_x = float_zeros_like(x) if e_x is None else e_x
    e_y = float_zeros_like(y) if e_y is None else e_y
    return [type(op)(op.idx_list, op.set_instead_of_inc)(e_x, e_y, *indices)]  # type: ignore[attr-defined]


def prepare_value(x: Variable, y: Any, target: StaticShape, set_instead_of_inc: bool,
                  advanced: bool) -> Variable:
    """`y` ready to be written into ``x[idx]`` of static shape `target`.

    Its dtype must cast safely to x's (Python numbers by value): it is then
    cast. Leading length-1 dimensions beyond the target's rank are dropped when
    setting (as NumPy assignment does); other shapes must broadcast to `target`.
    """
    what = "set_subtensor" if set_instead_of_inc else "inc_subtensor"
    dtype = x.type.dtype
    if is_python_scalar(y):
        if not can_cast(y, dtype):
            raise TypeError(f"{what}: cannot write {y!r} into {x} of dtype {dtype}")
        y = constant(y, dtype=dtype)
    else:
        y = as_tensor_variable(y)
        if y.type.dtype != dtype:
            if not can_cast(y.type.dtype, dtype):
                raise TypeError(
                    f"{what}: cannot write values of dtype {y.type.dtype} into {x} of dtype "
                    f"{dtype} without losing precision; cast them first (y.astype('{dtype}'))"
                )
            y = cast(y, dtype)

    def mismatch() -> ValueError:
        y_shape, t_shape = format_shape(y.type.shape), format_shape(target)
        if advanced:
            return ValueError(f"shape mismatch: value array of shape {y_shape} could not be "
                              f"broadcast to indexing result of shape {t_shape}")
        return ValueError(f"could not broadcast input array from shape {y_shape} into shape "
                          f"{t_shape}")

    extra = y.type.ndim - len(target)
    if extra > 0:
        if not set_instead_of_inc or any(s != 1 for s in y.type.shape[:extra]):
            raise mismatch()
        y = dimshuffle(y, tuple(range(extra, y.type.ndim)))
    padded = (1,) * (len(target) - y.type.ndim) + y.type.shape
    for y_len, t_len in zip(padded, target):
        if y_len is not None and y_len != 1 and t_len is not None and y_len != t_len:
            raise mismatch()
    return y


# -- functions ---------------------------------------------------------------------


def _newaxis_pattern(entries: Sequence[Any]) -> tuple[Any, ...] | None:
    """DimShuffle pattern inserting the None entries (None when there are none)."""
    if not any(e is None for e in entries):
        return None
    pattern: list[Any] = []
    kept = 0
    for e in entries:
        if e is None:
            pattern.append("x")
        elif isinstance(e, SliceEntry):
            pattern.append(kept)
            kept += 1
    return tuple(pattern)


def getitem(x: Any, key: Any) -> Variable:
    """``x[key]`` with NumPy's semantics (the function behind ``TensorVariable.__getitem__``).

    Basic indices give a `Subtensor` view (with a `DimShuffle` for ``None``);
    any integer array or boolean mask gives an `AdvancedSubtensor`. Errors
    are NumPy's, raised at build time when the static information shows them.
    """
    x = as_tensor_variable(x)
    entries = parse_index(key)
    check_index(x.type, entries)
    if any(isinstance(e, Variable) and is_array_index(e) for e in entries):
        from workbench.core.tensor.advanced_subtensor import advanced_getitem

        return advanced_getitem(x, entries)
    entries = expand_ellipsis(entries, x.type.ndim)
    if (x.owner is not None and isinstance(x.owner.op, Shape) and len(entries) == 1
            and isinstance(entries[0], int)):
        ndim = x.type.shape[0]
        return shape_i(x.owner.inputs[0], entries[0] % ndim)
    pattern = _newaxis_pattern(entries)
    core = strip_trailing_full_slices([e for e in entries if e is not None])
    if pattern is not None and not core:
        return DimShuffle(x.type.ndim, pattern)(x)  # only new axes: no Subtensor needed
    if not core and x.type.ndim > 0:
        core = [FULL_SLICE]
    idx_list, inputs = encode(core)
    out = Subtensor(idx_list)(x, *inputs)
    if pattern is not None:
        out = DimShuffle(out.type.ndim, pattern)(out)
    return out


_NOT_INDEXING = (
    "{what}: the first argument must be an indexing expression x[idx] (the output of a "
    "Subtensor or AdvancedSubtensor), got {expr}{owner}; write {what}(x[idx], y)"
)


def _incsubtensor(expr: Any, y: Any, set_instead_of_inc: bool) -> Variable:
    from workbench.core.tensor.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor

    what = "set_subtensor" if set_instead_of_inc else "inc_subtensor"
    if not isinstance(expr, Variable):
        raise TypeError(_NOT_INDEXING.format(what=what, expr=repr(expr), owner=""))
    owner = expr.owner
    if owner is not None and _only_adds_axes(owner.op):
        y = _undo_newaxes(expr, y, owner.op)
        base = owner.inputs[0]
        if base.owner is None or not isinstance(base.owner.op, (Subtensor, AdvancedSubtensor)):
            base = getitem(base, Ellipsis)
        owner = base.owner
    if owner is None or not isinstance(owner.op, (Subtensor, AdvancedSubtensor)):
        made_by = "" if owner is None else f" (computed by {owner.op})"
        raise TypeError(_NOT_INDEXING.format(what=what, expr=expr, owner=made_by))
    x, *indices = owner.inputs
    if isinstance(owner.op, Subtensor):
        return IncSubtensor(owner.op.idx_list, set_instead_of_inc)(x, y, *indices)
    return AdvancedIncSubtensor(owner.op.idx_list, set_instead_of_inc)(x, y, *indices)


def _only_adds_axes(op: Op) -> bool:
    """Whether `op` is a DimShuffle that only inserts new axes (what ``None`` builds)."""
    return (isinstance(op, DimShuffle) and bool(op.augment) and not op.drop
            and list(op.shuffle) == sorted(op.shuffle))


def _undo_newaxes(expr: Variable, y: Any, op: DimShuffle) -> Variable:
    """`y` for ``expr`` = DimShuffle(new axes)(base), made to fit ``base`` instead."""
    if not is_python_scalar(y):
        y = as_tensor_variable(y)
        if y.type.ndim > expr.type.ndim:
            return y  # prepare_value will drop leading length-1 dimensions or refuse
        y = as_tensor_variable(y, ndim=expr.type.ndim)
        for d in op.augment:
            if y.type.shape[d] not in (None, 1):
                raise ValueError(
                    f"could not broadcast input array from shape {format_shape(y.type.shape)} "
                    f"into shape {format_shape(expr.type.shape)}"
                )
        lengths = [1 if d in op.augment and y.type.shape[d] is None else None
                   for d in range(y.type.ndim)]
        if any(n is not None for n in lengths):
            y = specify_shape(y, lengths)
        y = dimshuffle(y, tuple(d for d in range(y.type.ndim) if d not in op.augment))
    return y


def set_subtensor(x: Variable, y: Any) -> Variable:
    """The array ``x`` was indexed from, with the part ``x`` replaced by ``y``.

    `x` must be an indexing expression (``set_subtensor(a[1:3], y)`` is NumPy's
    ``a[1:3] = y`` on a copy of ``a``). ``y`` broadcasts to ``x``'s shape and is
    cast to its dtype (a TypeError if that loses precision). With repeated
    advanced indices the last write wins, as in NumPy.
    """
    return _incsubtensor(x, y, True)


def inc_subtensor(x: Variable, y: Any) -> Variable:
    """The array ``x`` was indexed from, with ``y`` added to the part ``x``.

    Like `set_subtensor`, but adds; repeated advanced indices accumulate
    (``np.add.at``), unlike NumPy's ``a[idx] += y``.
    """
    return _incsubtensor(x, y, False)
