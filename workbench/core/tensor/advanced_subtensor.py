"""Advanced indexing: integer arrays and boolean masks (``x[[0, 2]]``, ``x[x > 0]``).

`AdvancedSubtensor` keeps the whole index structure in its `idx_list` (ints,
slices, ``None``, ``...`` and `ADVANCED` placeholders for the index arrays, see
`workbench.core.tensor.subtensor`) and lets NumPy apply it, so every NumPy rule
holds, including "advanced indices separated by a slice, ``None`` or ``...`` put
their broadcast dimensions first" (integers count as advanced indices there).
The static output shape follows the same rules; a boolean mask gives a length
known only for constant masks. `AdvancedIncSubtensor` writes into such an index:
repeated indices accumulate when incrementing (``np.add.at``) and the last write
wins when setting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import int64
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.op import Op
from workbench.core.tensor import math as tmath
from workbench.core.tensor.basic import cast
from workbench.core.tensor.elemwise import broadcast_static_shapes
from workbench.core.tensor.indexing import (
    ADVANCED,
    FULL_SLICE,
    SYMBOLIC,
    SliceEntry,
    check_index,
    consumed_dims,
    encode,
    entry_str,
    fill,
    index_tuple,
    normalize_entry,
    slice_length,
    static_slice_length,
)
from workbench.core.tensor.subtensor import (
    inc_subtensor_grads,
    inc_subtensor_rop,
    prepare_value,
)
from workbench.core.tensor.type import StaticShape, TensorType, format_shape
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["AdvancedIncSubtensor", "AdvancedIndexPlan", "AdvancedSubtensor"]


# -- the layout of an advanced index -----------------------------------------------


class AdvancedIndexPlan:
    """Where each output dimension of an advanced index comes from (the Ops' static
    shapes and the C linker's code read it).

    `basic`: the non-advanced output dimensions in order, each ("new",) for None,
    ("slice", axis, entry) or ("dim", axis) for an axis kept whole; `advanced`:
    the advanced entries (ints, scalar Variables, index arrays) with their axis;
    `insert_at`: where, among `basic`, the broadcast advanced dimensions go.
    """

    def __init__(self, idx_list: Sequence[Any], entries: Sequence[Any], ndim: int) -> None:
        n_consumed = consumed_dims(entries)
        axis = 0
        self.basic: list[tuple[Any, ...]] = []
        self.advanced: list[tuple[Any, int]] = []
        positions: list[int] = []
        first_at = 0
        for pos, (marker, entry) in enumerate(zip(idx_list, entries)):
            if marker is None:
                self.basic.append(("new",))
            elif marker is Ellipsis:
                for _ in range(ndim - n_consumed):
                    self.basic.append(("dim", axis))
                    axis += 1
            elif isinstance(marker, SliceEntry):
                self.basic.append(("slice", axis, entry))
                axis += 1
            else:
                if not positions:
                    first_at = len(self.basic)
                positions.append(pos)
                self.advanced.append((entry, axis))
                axis += entry.type.ndim if _is_mask(entry) else 1
        self.basic.extend(("dim", a) for a in range(axis, ndim))
        adjacent = bool(positions) and positions == list(range(positions[0], positions[-1] + 1))
        self.insert_at = first_at if adjacent else 0


def _is_mask(entry: Any) -> bool:
    return isinstance(entry, Variable) and entry.type.dtype.is_bool


def _static_index_shape(entry: Any) -> StaticShape:
    """The static shape an advanced entry broadcasts with (a mask: its count of True)."""
    if isinstance(entry, int):
        return ()
    if _is_mask(entry):
        if isinstance(entry, Constant):
            return (int(np.count_nonzero(entry.data)),)
        return (None,)
    return entry.type.shape


def _padded(shapes: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    rank = max((len(s) for s in shapes), default=0)
    return [(1,) * (rank - len(s)) + tuple(s) for s in shapes]


def advanced_static_shape(x_shape: StaticShape, idx_list: Sequence[Any],
                          entries: Sequence[Any]) -> StaticShape:
    """The static shape of ``x[index]`` for an advanced index (NumPy's layout rules).

    Raises NumPy's IndexError when the index arrays cannot broadcast together, then
    for a constant index array out of the static bounds of the axis it indexes.
    """
    plan = AdvancedIndexPlan(idx_list, entries, len(x_shape))
    index_shapes = [_static_index_shape(e) for e, _ in plan.advanced]
    broadcast = broadcast_static_shapes(_padded(index_shapes))
    if broadcast is None:
        shown = " ".join(format_shape(s) for s in index_shapes if s)
        raise IndexError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shown}"
        )
    _check_array_bounds(x_shape, plan, broadcast)
    basic: list[int | None] = []
    for part in plan.basic:
        if part[0] == "new":
            basic.append(1)
        elif part[0] == "slice":
            basic.append(static_slice_length(x_shape[part[1]], part[2]))
        else:
            basic.append(x_shape[part[1]])
    at = plan.insert_at
    return tuple(basic[:at]) + broadcast + tuple(basic[at:])


def _check_array_bounds(x_shape: StaticShape, plan: AdvancedIndexPlan,
                        broadcast: StaticShape) -> None:
    """Raise NumPy's IndexError for a constant integer array holding an index out of the
    static bounds of its axis, when the broadcast of the index arrays is surely not
    empty: NumPy reads (and checks) no index of an empty broadcast, so
    ``np.zeros((3, 0))[[], [5]]`` is an empty array. (Integers are always checked,
    by `check_index`.)"""
    if not all(n is not None and n > 0 for n in broadcast):
        return  # empty, or maybe empty: run time (NumPy) decides
    for entry, axis in plan.advanced:
        if not isinstance(entry, Constant) or _is_mask(entry) or x_shape[axis] is None:
            continue  # (a 0-d mask may come after the last axis)
        length = x_shape[axis]
        data = np.asarray(entry.data).ravel()
        bad = data[(data < -length) | (data >= length)]
        if bad.size:
            raise IndexError(
                f"index {int(bad[0])} is out of bounds for axis {axis} with size {length}"
            )


def _convert_index_inputs(op: Op, idx_list: Sequence[Any], inputs: Sequence[Any]
                          ) -> list[Variable]:
    """Index inputs checked against their markers: scalars for SYMBOLIC, arrays for ADVANCED."""
    markers: list[Any] = []
    for entry in idx_list:
        if isinstance(entry, SliceEntry):
            markers.extend(p for p in entry if p is SYMBOLIC)
        elif entry is SYMBOLIC or entry is ADVANCED:
            markers.append(entry)
    if len(inputs) != len(markers):
        raise TypeError(f"{op} takes {len(markers)} index inputs, got {len(inputs)}")
    converted = []
    for k, (marker, value) in enumerate(zip(markers, inputs)):
        var = as_tensor_variable(value)
        dtype = var.type.dtype
        if marker is SYMBOLIC and (var.type.ndim != 0 or not dtype.is_int):
            raise TypeError(
                f"{op}: index input {k} must be an integer scalar, got {var} of type {var.type}"
            )
        if marker is ADVANCED and not (dtype.is_int or dtype.is_bool):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                "integer or boolean arrays are valid indices"
            )
        converted.append(var)
    return converted


def _check_structure(idx_list: tuple[Any, ...]) -> None:
    if sum(e is Ellipsis for e in idx_list) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")


def _idx_str(idx_list: Sequence[Any]) -> str:
    return ", ".join("None" if e is None else entry_str(e) for e in idx_list)


# -- Ops ---------------------------------------------------------------------------


class AdvancedSubtensor(Op):
    """Indexing with integer arrays and/or boolean masks mixed with basic entries: a copy.

    `idx_list` may hold ints, `SYMBOLIC`, `SliceEntry`s, None, Ellipsis and
    `ADVANCED`; the inputs are ``x`` then, in order, one integer scalar per
    `SYMBOLIC` and one integer array or boolean mask per `ADVANCED`.
    Prints as ``AdvancedSubtensor{:, array}``.
    """

    __props__ = ("idx_list",)

    def __init__(self, idx_list: Iterable[Any]) -> None:
        self.idx_list: tuple[Any, ...] = tuple(normalize_entry(e, True) for e in idx_list)
        _check_structure(self.idx_list)

    def __str__(self) -> str:
        return f"AdvancedSubtensor{{{_idx_str(self.idx_list)}}}"

    def make_node(self, x: Any, *inputs: Any) -> Apply:
        x = as_tensor_variable(x)
        indices = _convert_index_inputs(self, self.idx_list, inputs)
        entries = fill(self.idx_list, indices)
        check_index(x.type, entries)
        shape = advanced_static_shape(x.type.shape, self.idx_list, entries)
        return Apply(self, [x, *indices], [TensorType(x.type.dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, *values = inputs
        result = np.asarray(x[index_tuple(self.idx_list, values)])
        if np.may_share_memory(result, x):  # only 0-d integer "arrays": basic indexing
            result = result.copy()
        output_storage[0][0] = result

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        x_shape = input_shapes[0]
        static = node.outputs[0].type.shape
        shapes_of = {id(v): s for v, s in zip(node.inputs[1:], input_shapes[1:])}
        entries = fill(self.idx_list, node.inputs[1:])
        plan = AdvancedIndexPlan(self.idx_list, entries, len(x_shape))
        index_shapes: list[tuple[Any, ...]] = []
        static_shapes: list[StaticShape] = []
        for entry, _ in plan.advanced:
            static_shapes.append(_static_index_shape(entry))
            if _is_mask(entry):
                index_shapes.append((_mask_count(entry),))
            elif isinstance(entry, int) or entry.type.ndim == 0:
                index_shapes.append(())
            else:
                index_shapes.append(tuple(shapes_of[id(entry)]))
        basic: list[Any] = []
        for part in plan.basic:
            if part[0] == "new":
                basic.append(1)
            elif part[0] == "slice":
                basic.append(slice_length(x_shape[part[1]], *part[2]))
            else:
                basic.append(x_shape[part[1]])
        broadcast = _broadcast_lengths(_padded(index_shapes), _padded(static_shapes))
        at = plan.insert_at
        shape = list(basic[:at]) + broadcast + list(basic[at:])
        return [tuple(shape[d] if s is None else s for d, s in enumerate(static))]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True]] + [[False] for _ in node.inputs[1:]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """The output gradient added into zeros of x's shape at the index (an
        `AdvancedIncSubtensor`): an element read several times (repeated indices)
        accumulates the gradient of every copy. The index inputs are disconnected."""
        from workbench.core.graph.type import disconnected_type
        from workbench.core.tensor.join import float_zeros_like, grad_for

        x, *indices = inputs
        rest = [disconnected_type() for _ in indices]
        if not (x.type.dtype.is_float or x.type.dtype.is_complex):
            return [float_zeros_like(x), *rest]
        gz = grad_for(output_grads[0], x)
        return [AdvancedIncSubtensor(self.idx_list)(float_zeros_like(x), gz, *indices), *rest]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The same index applied to the eval point."""
        if eval_points[0] is None:
            return [None]
        return [AdvancedSubtensor(self.idx_list)(eval_points[0], *inputs[1:])]


def _mask_count(mask: Variable) -> Any:
    """The number of True values of a boolean mask (an int, or an int64 scalar Variable)."""
    if isinstance(mask, Constant):
        return int(np.count_nonzero(mask.data))
    from workbench.core.tensor.reduction import sum as sum_

    return cast(sum_(cast(mask, int64)), int64)


def _broadcast_lengths(shapes: list[tuple[Any, ...]], static: list[StaticShape]) -> list[Any]:
    """Symbolic broadcast of index shapes (lengths are ints or int64 scalar Variables)."""
    result: list[Any] = []
    known = broadcast_static_shapes(static) if static else ()
    for d in range(len(shapes[0]) if shapes else 0):
        if known is not None and known[d] is not None:
            result.append(known[d])
            continue
        candidates: list[Any] = []
        for shape, stat in zip(shapes, static):
            if stat[d] != 1 and not any(shape[d] is c for c in candidates):
                candidates.append(shape[d])
        if not candidates:
            result.append(1)
            continue
        # Not maximum(): a length 1 broadcast with a length 0 gives 0.
        length = candidates[0]
        for other in candidates[1:]:
            length = tmath.switch(tmath.eq(length, 1), other, length)
        result.append(length)
    return result


class AdvancedIncSubtensor(Op):
    """``x`` with ``x[idx]`` (an advanced index) replaced by or incremented with ``y``.

    Inputs: ``x``, ``y`` (x's dtype, broadcastable to ``x[idx]``), then the index
    inputs of `idx_list` (as for `AdvancedSubtensor`). Incrementing accumulates
    over repeated indices (``np.add.at``); setting keeps the last write. The
    output is a copy of x unless `inplace` (`destroy_map`). Prints as
    ``AdvancedSetSubtensor{array}`` / ``AdvancedIncSubtensor{array}``.
    """

    __props__ = ("idx_list", "set_instead_of_inc", "inplace")

    def __init__(self, idx_list: Iterable[Any], set_instead_of_inc: bool = False,
                 inplace: bool = False) -> None:
        self.idx_list: tuple[Any, ...] = tuple(normalize_entry(e, True) for e in idx_list)
        _check_structure(self.idx_list)
        self.set_instead_of_inc = bool(set_instead_of_inc)
        self.inplace = bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        name = "AdvancedSetSubtensor" if self.set_instead_of_inc else "AdvancedIncSubtensor"
        return f"{name}{{{_idx_str(self.idx_list)}{';inplace' if self.inplace else ''}}}"

    def make_node(self, x: Any, y: Any, *inputs: Any) -> Apply:
        x = as_tensor_variable(x)
        indices = _convert_index_inputs(self, self.idx_list, inputs)
        entries = fill(self.idx_list, indices)
        check_index(x.type, entries)
        target = advanced_static_shape(x.type.shape, self.idx_list, entries)
        y = prepare_value(x, y, target, self.set_instead_of_inc, advanced=True)
        return Apply(self, [x, y, *indices], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, y, *values = inputs
        out = x if self.inplace else x.copy()
        idx = index_tuple(self.idx_list, values)
        if self.set_instead_of_inc:
            out[idx] = y
        else:
            np.add.at(out, idx, y)
        output_storage[0][0] = out

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True], [True]] + [[False] for _ in node.inputs[2:]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """As `IncSubtensor`'s, reading the gradient of y with an `AdvancedSubtensor`.

        Incrementing: x gets gz, each write of y the gradient at its position (repeated
        indices: every write counts). Setting with repeated indices: the last write
        wins (as `perform`, numpy's order), so only the winning writes of y get a
        gradient; the losers are found by writing the positions 0..k-1 of the writes
        with the same index and reading back which one survived.
        """
        grads = inc_subtensor_grads(self, AdvancedSubtensor(self.idx_list), inputs,
                                     output_grads)
        x, y, *indices = inputs
        if not self.set_instead_of_inc or not _may_repeat(self.idx_list, indices) or not (
                x.type.dtype.is_float or x.type.dtype.is_complex):
            return grads
        from workbench.core.tensor.join import grad_for
        from workbench.core.tensor.math import eq, mul
        from workbench.core.tensor.reshape import reshape, sum_to
        from workbench.core.tensor.shape import shape_tuple as lengths_of

        read = AdvancedSubtensor(self.idx_list)
        gz = grad_for(output_grads[0], x)
        g_read = read(gz, *indices)
        target = lengths_of(g_read)
        from workbench.core.tensor.creation import arange, full
        from workbench.core.tensor.join import length_product

        positions = reshape(arange(length_product(target), dtype=int64), list(target))
        written = AdvancedIncSubtensor(self.idx_list, set_instead_of_inc=True)(
            full(lengths_of(x), -1, dtype=int64), positions, *indices)
        winner = eq(read(written, *indices), positions)
        gy = grad_for(sum_to(mul(g_read, cast(winner, gz.type.dtype)), y), y)
        return [grads[0], gy, *grads[2:]]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The same write, of y's eval point into x's (zeros for a missing one)."""
        return inc_subtensor_rop(self, inputs, eval_points)


def _may_repeat(idx_list: Sequence[Any], indices: Sequence[Variable]) -> bool:
    """Whether an advanced index may write one element twice: not when its only arrays
    are boolean masks, or one constant integer array without duplicates."""
    arrays = [v for v in indices if v.type.ndim > 0 or v.type.dtype.is_bool]
    ints = [v for v in arrays if not v.type.dtype.is_bool]
    if not ints:
        return False
    if len(arrays) == 1 and isinstance(ints[0], Constant):
        data = np.asarray(ints[0].data).ravel()
        return len(np.unique(data)) != len(data)  # (-1 and n-1 name the same element)
    return True


def advanced_getitem(x: Variable, entries: list[Any]) -> Variable:
    """``x[entries]`` for parsed entries holding at least one index array (see getitem)."""
    entries = list(entries)
    # Trailing full slices are no-ops, unless an Ellipsis before them would then expand
    # to more dimensions (x[..., [0], :] is not x[..., [0]]); a trailing Ellipsis is one.
    while entries:
        last = entries[-1]
        if last is Ellipsis or (isinstance(last, SliceEntry) and last == FULL_SLICE
                                and not any(e is Ellipsis for e in entries)):
            entries.pop()
        else:
            break
    idx_list, inputs = encode(entries)
    return AdvancedSubtensor(idx_list)(x, *inputs)
