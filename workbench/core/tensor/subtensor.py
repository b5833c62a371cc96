"""Indexing tensors: ``x[1:3, ::-1]``, ``x[i]``, ``x[None, ...]``, and writing into them.

`getitem` (behind ``TensorVariable.__getitem__``) parses a NumPy index and
builds the graph for it:

- basic indexing (ints, slices, ``None``, ``...``) gives a `Subtensor`, a view
  of its input; ``None`` entries become a `DimShuffle` around it;
- any integer array or boolean mask gives an `AdvancedSubtensor`
  (`workbench.core.tensor.advanced_subtensor`), a copy, following NumPy's rules.

The *structure* of an index (which entries are ints, slices, arrays, and which
parts are constants; indexing.py parses and checks it) lives in the Op's `idx_list`
prop; its symbolic parts (scalar Variables, index arrays) are the node's inputs after
``x``. In an
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

from collections.abc import Iterable, Sequence
from typing import Any

from workbench.core.dtypes import can_cast
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.scalar.basic import is_python_scalar
from workbench.core.tensor.basic import cast
from workbench.core.tensor.elemwise import DimShuffle, dimshuffle
from workbench.core.tensor.indexing import (  # ADVANCED..slice_length: re-exported
    ADVANCED,
    FULL_SLICE,
    SYMBOLIC,
    SliceEntry,
    basic_static_shape,
    check_index,
    count_inputs,
    encode,
    entry_str,
    expand_ellipsis,
    fill,
    index_tuple,
    is_array_index,
    normalize_entry,
    parse_index,
    slice_length,
    strip_trailing_full_slices,
)
from workbench.core.tensor.shape import Shape, shape_i, specify_shape
from workbench.core.tensor.type import StaticShape, TensorType, format_shape
from workbench.core.tensor.variable import as_tensor_variable, constant

__all__ = [
    "ADVANCED", "IncSubtensor", "SYMBOLIC", "SliceEntry", "Subtensor", "getitem",
    "inc_subtensor", "set_subtensor", "slice_length",
]  # fmt: skip

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
        self.idx_list: tuple[Any, ...] = tuple(normalize_entry(e, False) for e in idx_list)

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
        from workbench.core.graph.type import disconnected_type
        from workbench.core.tensor.join import float_zeros_like, grad_for

        x, *indices = inputs
        (gz,) = output_grads
        if not (x.type.dtype.is_float or x.type.dtype.is_complex):
            return [float_zeros_like(x)] + [disconnected_type() for _ in indices]
        gz = grad_for(gz, x)
        gx = IncSubtensor(self.idx_list)(float_zeros_like(x), gz, *indices)
        return [gx] + [disconnected_type() for _ in indices]

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
        self.idx_list: tuple[Any, ...] = tuple(normalize_entry(e, False) for e in idx_list)
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
        return inc_subtensor_grads(self, Subtensor(self.idx_list), inputs, output_grads)

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The same write, of y's eval point into x's (zeros for a missing one)."""
        return inc_subtensor_rop(self, inputs, eval_points)


def inc_subtensor_grads(op: Op, read: Op, inputs: Sequence[Variable],
                         output_grads: Sequence[Variable]) -> list[Variable]:
    """L_op of `IncSubtensor` and `AdvancedIncSubtensor`; `read` indexes like `op` writes.

    (Setting through repeated advanced indices is handled by `AdvancedIncSubtensor`.)
    """
    from workbench.core.graph.type import disconnected_type
    from workbench.core.tensor.join import float_zeros_like, grad_for
    from workbench.core.tensor.reshape import sum_to

    x, y, *indices = inputs
    (gz,) = output_grads
    rest = [disconnected_type() for _ in indices]
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


def inc_subtensor_rop(op: Op, inputs: Sequence[Variable],
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
