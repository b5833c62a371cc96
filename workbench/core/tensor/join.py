"""Joining and splitting tensors: `Join` (concatenate, stack), `Split` and `Repeat`.

The functions follow NumPy: ``concatenate``, ``stack``, ``hstack``, ``vstack``,
``split``, ``array_split``, ``repeat`` and ``tile`` take the same arguments and
refuse, at build time and with NumPy's messages, what NumPy would refuse as
far as static shapes tell. Axes are Python ints (props of the Ops), never
symbolic.

`Split` takes the *sizes* of its pieces (an int vector), so its pieces never
overlap and its gradient is a concatenation; `split` turns NumPy's
``indices_or_sections`` into sizes. Its outputs are views of its input.

This module also builds and reads the small int vectors that carry shapes
(`as_int_vector`, `vector_entries`), used by `Reshape` and `Split`, and holds the
small helpers the gradients of the shape, join, creation and indexing Ops share
(`float_zeros_like`, `grad_for`). Gradients:
Join splits the output gradient, Split joins its output gradients (zeros for
unused outputs), Repeat sums over the copies; sizes, counts and axes are
disconnected (seed 003).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.dtypes import int64
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.op import Op
from workbench.core.graph.type import disconnected_type, grad_dtype, is_disconnected
from workbench.core.tensor import math as tm
from workbench.core.tensor.elemwise import DimShuffle, dimshuffle
from workbench.core.tensor.shape import (
    Shape,
    Shape_i,
    format_numpy_shape,
    is_int,
    normalize_axis,
    shape_tuple,
    specify_shape,
)
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable, constant

__all__ = ["Join", "Repeat", "Split", "array_split", "concatenate", "hstack", "repeat", "split",
           "stack", "tile", "vstack"]

Length = Any  # an int or an integer 0-d tensor Variable


# -- lengths and int vectors ------------------------------------------------------------


def as_length(value: Any, what: str = "length") -> Length:
    """A length argument as a Python int or an integer 0-d tensor Variable (TypeError else)."""
    if is_int(value):
        return int(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    if isinstance(value, Variable):
        var = as_tensor_variable(value)
        if var.type.ndim == 0 and var.type.dtype.is_int:
            if isinstance(var, Constant):
                return int(var.data)
            return var
        raise TypeError(f"{what} must be an integer scalar, got {var} of type {var.type}")
    raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer "
                    f"({what} {value!r})")


def as_int_vector(entries: Sequence[Length]) -> Variable:
    """An int64 vector of static length ``len(entries)`` holding ints and/or 0-d Variables.

    All ints give a constant; otherwise a `Join` of the entries (each made a
    length-1 vector), which `vector_entries` can read back without computing.
    """
    if all(is_int(e) for e in entries):
        return constant(np.array([int(e) for e in entries], dtype=np.int64))
    pieces = []
    for e in entries:
        scalar = constant(np.int64(e)) if is_int(e) else as_tensor_variable(e)
        if scalar.type.dtype != int64:
            scalar = scalar.astype(int64)
        pieces.append(DimShuffle(0, ("x",))(scalar))
    return Join(0)(*pieces)


def _known_scalar(var: Variable) -> int | None:
    """The value of a 0-d integer Variable when it is statically known."""
    if isinstance(var, Constant):
        return int(var.data)
    owner = var.owner
    if owner is not None and isinstance(owner.op, Shape_i):
        return owner.inputs[0].type.shape[owner.op.i]
    return None


def known_vector_entries(vec: Variable) -> list[int | None] | None:
    """The entries of an int vector as far as the graph tells statically (None: unknown).

    Returns None when even the length of the vector is unknown.
    """
    if isinstance(vec, Constant):
        return [int(v) for v in np.asarray(vec.data).reshape(-1)]
    owner = vec.owner
    if owner is not None:
        if isinstance(owner.op, Shape):
            return list(owner.inputs[0].type.shape)
        if isinstance(owner.op, DimShuffle) and owner.op.new_order == ("x",):
            return [_known_scalar(owner.inputs[0])]
        if isinstance(owner.op, Join) and owner.op.axis == 0:
            parts = [known_vector_entries(v) for v in owner.inputs]
            if all(p is not None for p in parts):
                return [e for p in parts for e in p]  # type: ignore[union-attr]
    n = vec.type.shape[0]
    return None if n is None else [None] * n


def vector_entries(vec: Variable, n: int | None = None) -> list[Length]:
    """The entries of an int vector of length `n` as ints or 0-d Variables (for infer_shape).

    Reads through the graphs `as_int_vector` and `shape` build; any other
    vector is cut into its entries by a `Split`.
    """
    if n is None:
        n = vec.type.shape[0]
        if n is None:
            raise ValueError(f"the length of the vector {vec} is not known statically")
    if isinstance(vec, Constant):
        return [int(v) for v in np.asarray(vec.data).reshape(-1)]
    owner = vec.owner
    if owner is not None:
        if isinstance(owner.op, Shape):
            return list(shape_tuple(owner.inputs[0]))
        if isinstance(owner.op, DimShuffle) and owner.op.new_order == ("x",):
            value = _known_scalar(owner.inputs[0])
            return [owner.inputs[0] if value is None else value]
        if isinstance(owner.op, Join) and owner.op.axis == 0 and all(
            v.type.shape[0] is not None for v in owner.inputs
        ):
            return [e for v in owner.inputs for e in vector_entries(v)]
    if vec.type.shape[0] is None:
        vec = specify_shape(vec, (n,))
    if n == 0:
        return []
    pieces = Split(n, 0)(vec, constant(np.ones(n, dtype=np.int64)), return_list=True)
    return [DimShuffle(1, ())(p) for p in pieces]


def length_product(values: Sequence[Length]) -> Length:
    """The product of lengths: an int when all are ints, else a 0-d Variable."""
    known = 1
    symbolic = None
    for v in values:
        if is_int(v):
            known *= int(v)
        else:
            symbolic = v if symbolic is None else tm.mul(symbolic, v)
    if symbolic is None:
        return known
    return symbolic if known == 1 else tm.mul(symbolic, known)


def length_sum(values: Sequence[Length]) -> Length:
    """The sum of lengths: an int when all are ints, else a 0-d Variable."""
    known = 0
    symbolic = None
    for v in values:
        if is_int(v):
            known += int(v)
        else:
            symbolic = v if symbolic is None else tm.add(symbolic, v)
    if symbolic is None:
        return known
    return symbolic if known == 0 else tm.add(symbolic, known)


def _int_vector_input(value: Any, what: str) -> Variable:
    """A 1-d integer tensor input (ints, a list, an array or a Variable) as an int64 vector."""
    if isinstance(value, (list, tuple)):
        return as_int_vector([as_length(v, what) for v in value])
    var = as_tensor_variable(value)
    if var.type.ndim != 1 or not var.type.dtype.is_int:
        raise TypeError(f"{what} must be an integer vector, got {var} of type {var.type}")
    if var.type.dtype == int64:
        return var
    if isinstance(var, Constant):
        return constant(np.asarray(var.data, dtype=np.int64))
    return var.astype(int64)


# -- gradient helpers (shared by the shape, join, creation and indexing Ops) --------------


def float_zeros_like(x: Variable) -> Variable:
    """Zeros of the shape of `x` in a float dtype: the gradient of an integer-valued input
    (seed 003: gradients never carry integer dtypes)."""
    from workbench.core.tensor.creation import zeros_like

    return zeros_like(x, dtype=grad_dtype(x))


def grad_for(g: Variable, x: Variable) -> Variable:
    """The gradient term `g` made fit for input `x`: cast to x's dtype when x is float or
    complex (a Join of float32 and float64 sends float64 pieces back), float zeros when x
    is integer or boolean (its gradient is zero, never integer-typed)."""
    dtype = x.type.dtype
    if not (dtype.is_float or dtype.is_complex):
        return float_zeros_like(x)
    if g.type.dtype != dtype:
        from workbench.core.tensor.basic import cast

        if g.type.dtype.is_complex and not dtype.is_complex:
            from workbench.core.tensor.math import real

            g = real(g)
        g = cast(g, dtype)
    return g


# -- Join -------------------------------------------------------------------------------


class Join(Op):
    """Concatenate tensors of equal rank along the Python int `axis` (numpy's concatenate).

    The output dtype promotes the inputs' dtypes; its static length along
    `axis` is the sum of the inputs' when all are known, and its other
    lengths are those any input knows. Prints ``Join{axis=0}``.
    """

    __props__ = ("axis",)

    def __init__(self, axis: int) -> None:
        if not is_int(axis):
            raise TypeError(f"Join needs a Python int axis, got {axis!r}")
        self.axis = int(axis)

    def make_node(self, *tensors: Any) -> Apply:
        if not tensors:
            raise ValueError("need at least one array to concatenate")
        xs = [as_tensor_variable(t) for t in tensors]
        ndim = xs[0].type.ndim
        if any(x.type.ndim == 0 for x in xs):
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        for i, x in enumerate(xs[1:], start=1):
            if x.type.ndim != ndim:
                raise ValueError(
                    "all the input arrays must have same number of dimensions, but the array "
                    f"at index 0 has {ndim} dimension(s) and the array at index {i} has "
                    f"{x.type.ndim} dimension(s)"
                )
        axis = normalize_axis(self.axis, ndim)
        shape: list[int | None] = []
        for d in range(ndim):
            lengths = [x.type.shape[d] for x in xs]
            if d == axis:
                shape.append(None if None in lengths else sum(lengths))  # type: ignore[arg-type]
                continue
            first = next((i for i, n in enumerate(lengths) if n is not None), None)
            for i, n in enumerate(lengths):
                if n is not None and n != lengths[first]:  # type: ignore[index]
                    raise ValueError(
                        "all the input array dimensions except for the concatenation axis "
                        f"must match exactly, but along dimension {d}, the array at index "
                        f"{first} has size {lengths[first]} and the array at index {i} has "  # type: ignore[index]
                        f"size {n}"
                    )
            shape.append(None if first is None else lengths[first])
        dtype = dtypes.result_type(*(x.type.dtype for x in xs))
        return Apply(self, xs, [TensorType(dtype, tuple(shape))()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        out_dtype = node.outputs[0].type.numpy_dtype
        arrays = [x if x.dtype == out_dtype else x.astype(out_dtype) for x in inputs]
        axis = self.axis % node.outputs[0].type.ndim
        output_storage[0][0] = np.concatenate(arrays, axis=axis)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        static = node.outputs[0].type.shape
        axis = self.axis % len(static)
        shape = []
        for d, length in enumerate(static):
            if length is not None:
                shape.append(length)
            elif d == axis:
                shape.append(length_sum([s[d] for s in input_shapes]))
            else:
                shape.append(input_shapes[0][d])
        return [tuple(shape)]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Cut the output gradient along `axis` at the inputs' (symbolic) lengths: a `Split`.

        Integer inputs get float zeros (their gradient is zero, seed 003).
        """
        (gz,) = output_grads
        axis = self.axis % outputs[0].type.ndim
        sizes = [shape_tuple(x)[axis] for x in inputs]
        pieces = _split_by_sizes(gz, sizes, axis)
        return [grad_for(p, x) for p, x in zip(pieces, inputs)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The Join of the eval points (zeros for inputs without one)."""
        if all(e is None for e in eval_points):
            return [None]
        points = [float_zeros_like(x) if e is None else e for x, e in zip(inputs, eval_points)]
        return [Join(self.axis)(*points)]


def concatenate(tensors: Sequence[Any], axis: int | None = 0) -> Variable:
    """Join `tensors` (all of the same rank, at least 1) along `axis`, as numpy.concatenate.

    ``axis=None`` flattens every tensor first. One tensor is returned as it is.
    """
    if isinstance(tensors, Variable):
        raise TypeError("concatenate takes a sequence of tensors, not a single tensor")
    xs = [as_tensor_variable(t) for t in tensors]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        from workbench.core.tensor.reshape import ravel

        xs = [ravel(x) for x in xs]
        axis = 0
    if len(xs) == 1:
        x = xs[0]
        if x.type.ndim == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        normalize_axis(axis, x.type.ndim)
        return x
    return Join(axis)(*xs)


def stack(tensors: Sequence[Any], axis: int = 0) -> Variable:
    """Join tensors of the same shape along a new `axis`, as numpy.stack."""
    if isinstance(tensors, Variable):
        raise TypeError("stack takes a sequence of tensors, not a single tensor")
    xs = [as_tensor_variable(t) for t in tensors]
    if not xs:
        raise ValueError("need at least one array to stack")
    ndim = xs[0].type.ndim
    for x in xs[1:]:
        if x.type.ndim != ndim or any(
            a is not None and b is not None and a != b
            for a, b in zip(x.type.shape, xs[0].type.shape)
        ):
            raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis(axis, ndim + 1)
    pattern = list(range(ndim))
    pattern.insert(axis, "x")
    return concatenate([dimshuffle(x, pattern) for x in xs], axis=axis)


def vstack(tensors: Sequence[Any]) -> Variable:
    """Stack tensors vertically (rows; 1-d tensors become rows), as numpy.vstack."""
    from workbench.core.tensor.reshape import atleast_2d

    return concatenate([atleast_2d(t) for t in tensors], axis=0)


def hstack(tensors: Sequence[Any]) -> Variable:
    """Stack tensors horizontally (columns; 1-d tensors end to end), as numpy.hstack."""
    from workbench.core.tensor.reshape import atleast_1d

    xs = [atleast_1d(t) for t in tensors]
    return concatenate(xs, axis=0 if xs and xs[0].type.ndim == 1 else 1)


# -- Split ------------------------------------------------------------------------------


class Split(Op):
    """Cut a tensor along `axis` into `n_splits` consecutive pieces of the given sizes.

    Inputs: the tensor and an int vector of `n_splits` non-negative sizes
    adding up to the length of `axis` (checked at run time, statically when
    known). Each output is a view of the input (`view_map`). Prints
    ``Split{n_splits=3, axis=0}``.
    """

    __props__ = ("n_splits", "axis")

    def __init__(self, n_splits: int, axis: int = 0) -> None:
        if not is_int(n_splits) or n_splits < 1:
            raise ValueError(f"Split needs a positive number of pieces, got {n_splits!r}")
        if not is_int(axis):
            raise TypeError(f"Split needs a Python int axis, got {axis!r}")
        self.n_splits = int(n_splits)
        self.axis = int(axis)
        self.view_map = {i: [0] for i in range(self.n_splits)}

    def make_node(self, x: Any, sizes: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.type.ndim == 0:
            raise ValueError("Split: a zero-dimensional array cannot be split")
        axis = normalize_axis(self.axis, x.type.ndim)
        sizes = _int_vector_input(sizes, "Split sizes")
        if sizes.type.shape[0] not in (None, self.n_splits):
            raise ValueError(
                f"{self} needs {self.n_splits} sizes, got a vector of length {sizes.type.shape[0]}"
            )
        known = known_vector_entries(sizes) or [None] * self.n_splits
        if any(s is not None and s < 0 for s in known):
            raise ValueError(f"{self}: the sizes {format_numpy_shape(known)} must be >= 0")
        length = x.type.shape[axis]
        if length is not None and None not in known and sum(known) != length:  # type: ignore[arg-type]
            raise ValueError(
                f"{self}: the sizes {format_numpy_shape(known)} add up to "
                f"{sum(known)}, not to the length {length} of axis {axis} of {x} ({x.type})"  # type: ignore[arg-type]
            )
        outputs = []
        for s in known:
            shape = list(x.type.shape)
            shape[axis] = s
            outputs.append(TensorType(x.type.dtype, tuple(shape))())
        return Apply(self, [x, sizes], outputs)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, sizes = inputs
        axis = self.axis % x.ndim
        sizes = np.asarray(sizes)
        if sizes.shape != (self.n_splits,):
            raise ValueError(f"{self}: expected {self.n_splits} sizes, got {sizes.shape[0]}")
        if (sizes < 0).any() or sizes.sum() != x.shape[axis]:
            shown = tuple(int(s) for s in sizes)
            hint = (" (array split does not result in an equal division)"
                    if len(set(shown)) == 1 else "")
            raise ValueError(
                f"{self}: the sizes {shown} do not cut axis {axis} of length "
                f"{x.shape[axis]} into consecutive pieces{hint}"
            )
        start = 0
        for cell, size in zip(output_storage, sizes.tolist()):
            index = [slice(None)] * x.ndim
            index[axis] = slice(start, start + size)
            cell[0] = x[tuple(index)]
            start += size

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        x_shape = input_shapes[0]
        axis = self.axis % len(x_shape)
        sizes = vector_entries(node.inputs[1], self.n_splits)
        result = []
        for out, size in zip(node.outputs, sizes):
            shape = list(x_shape)
            static = out.type.shape[axis]
            shape[axis] = static if static is not None else size
            result.append(tuple(shape))
        return result

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True] * self.n_splits, [False] * self.n_splits]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """The output gradients joined back along `axis`; an output the cost does not use
        (a DisconnectedType gradient) contributes zeros of its shape. The sizes are
        disconnected (they only decide where the cuts are)."""
        x, _ = inputs
        if all(is_disconnected(g) for g in output_grads):
            return [disconnected_type(), disconnected_type()]
        if not (x.type.dtype.is_float or x.type.dtype.is_complex):
            return [float_zeros_like(x), disconnected_type()]
        parts = [float_zeros_like(out) if is_disconnected(g) else g
                 for out, g in zip(outputs, output_grads)]
        dtype = dtypes.result_type(*(p.type.dtype for p in parts))
        parts = [p if p.type.dtype == dtype else p.astype(dtype) for p in parts]
        joined = parts[0] if len(parts) == 1 else Join(self.axis)(*parts)
        return [grad_for(joined, x), disconnected_type()]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The same cuts of the eval point of the tensor."""
        if eval_points[0] is None:
            return [None] * self.n_splits
        return Split(self.n_splits, self.axis)(eval_points[0], inputs[1], return_list=True)


def _slice_bound(index: Length, length: Length) -> Length:
    """Where a slice bound `index` falls in ``range(length + 1)``, as Python slices clip it."""
    if is_int(index) and is_int(length):
        return slice(index, None).indices(length)[0]
    if is_int(index):
        return tm.maximum(length + index, 0) if index < 0 else tm.minimum(length, index)
    moved = tm.switch(tm.lt(index, 0), index + length, index)
    return tm.minimum(tm.maximum(moved, 0), length)


def _split_by_sizes(x: Variable, sizes: Sequence[Length], axis: int) -> list[Variable]:
    if len(sizes) == 1:
        return [x]
    return Split(len(sizes), axis)(x, as_int_vector(sizes), return_list=True)


def split(x: Any, indices_or_sections: Any, axis: int = 0) -> list[Variable]:
    """Cut `x` along `axis` into pieces (views), as numpy.split.

    An int N gives N equal pieces ("array split does not result in an equal
    division" when the length is known not to divide; checked at run time
    otherwise). A sequence of indices cuts before each index, with Python's
    slice rules (negative indices count from the end; an index before the
    previous one gives an empty piece and an overlapping next piece, as numpy).
    """
    x = as_tensor_variable(x)
    if x.type.ndim == 0:
        raise ValueError("split: a zero-dimensional array cannot be split")
    axis = normalize_axis(axis, x.type.ndim)
    if is_int(indices_or_sections) or (
        isinstance(indices_or_sections, Variable) and indices_or_sections.type.ndim == 0
    ):
        n = as_length(indices_or_sections, "the number of sections")
        if not is_int(n):
            raise TypeError("split: the number of sections must be a Python int")
        if n <= 0:
            raise ValueError("number sections must be larger than 0.")
        length = x.type.shape[axis]
        if length is not None:
            if length % n:
                raise ValueError("array split does not result in an equal division")
            return _split_by_sizes(x, [length // n] * n, axis)
        size = tm.floor_div(shape_tuple(x)[axis], n)
        return _split_by_sizes(x, [size] * n, axis)
    return _split_at(x, indices_or_sections, axis)


def _sub(a: Length, b: Length) -> Length:
    if is_int(b) and b == 0:
        return a
    return a - b if is_int(a) and is_int(b) else tm.sub(a, b)


def _split_at(x: Variable, indices: Any, axis: int) -> list[Variable]:
    """numpy.split with a sequence of indices."""
    if isinstance(indices, Variable):
        var = as_tensor_variable(indices)
        if var.type.ndim != 1 or var.type.shape[0] is None:
            raise TypeError("split: a symbolic vector of indices needs a static length")
        bounds = vector_entries(_int_vector_input(var, "split indices"))
    else:
        if isinstance(indices, np.ndarray):
            indices = indices.tolist()
        bounds = [as_length(i, "split index") for i in indices]
    length = shape_tuple(x)[axis]
    starts = [0, *(_slice_bound(b, length) for b in bounds)]
    stops = [*starts[1:], length]
    ints = [b for b in bounds if is_int(b)]
    if all(is_int(b) for b in starts):
        monotone = all(a <= b for a, b in zip(starts, starts[1:]))
    else:  # clipping to [0, length] keeps sorted bounds of one sign sorted
        monotone = len(ints) == len(bounds) and ints == sorted(ints) and (
            all(b >= 0 for b in ints) or all(b < 0 for b in ints))
    if monotone:
        return _split_by_sizes(x, [_sub(b, a) for a, b in zip(starts, stops)], axis)
    # Unsorted, mixed-sign or symbolic bounds: each piece on its own, as x[start:stop].
    pieces = []
    for a, b in zip(starts, stops):
        size = _sub(b, a)
        size = max(size, 0) if is_int(size) else tm.maximum(size, 0)
        rest = _sub(_sub(length, a), size)
        pieces.append(Split(3, axis)(x, as_int_vector([a, size, rest]), return_list=True)[1])
    return pieces


def array_split(x: Any, sections: int, axis: int = 0) -> list[Variable]:
    """Cut `x` along `axis` into `sections` pieces whose lengths differ by at most one
    (the first ones longer), as numpy.array_split; a sequence of indices acts as in `split`."""
    x = as_tensor_variable(x)
    if not is_int(sections):
        return split(x, sections, axis)
    if x.type.ndim == 0:
        raise ValueError("array_split: a zero-dimensional array cannot be split")
    axis = normalize_axis(axis, x.type.ndim)
    if sections <= 0:
        raise ValueError("number sections must be larger than 0.")
    length = shape_tuple(x)[axis]
    if is_int(length):
        sizes: list[Length] = [(length + sections - 1 - i) // sections for i in range(sections)]
    else:
        sizes = [tm.floor_div(length + (sections - 1 - i), sections) for i in range(sections)]
    return _split_by_sizes(x, sizes, axis)


# -- Repeat -----------------------------------------------------------------------------


class Repeat(Op):
    """Repeat each element of a tensor along `axis`, as numpy.repeat with an axis.

    Inputs: the tensor and the repeats, an integer 0-d tensor (the same count
    for every element) or vector (one count per element along `axis`, or a
    single count). Prints ``Repeat{axis=0}``.
    """

    __props__ = ("axis",)

    def __init__(self, axis: int) -> None:
        if not is_int(axis):
            raise TypeError(f"Repeat needs a Python int axis, got {axis!r}")
        self.axis = int(axis)

    def make_node(self, x: Any, repeats: Any) -> Apply:
        x = as_tensor_variable(x)
        axis = normalize_axis(self.axis, x.type.ndim)
        if isinstance(repeats, (list, tuple)):
            repeats = _int_vector_input(repeats, "repeats")
        elif is_int(repeats):
            repeats = constant(np.int64(repeats))
        repeats = as_tensor_variable(repeats)
        if repeats.type.ndim > 1 or not repeats.type.dtype.is_int:
            raise TypeError(
                f"repeats must be an integer scalar or vector, got {repeats} of type {repeats.type}"
            )
        length = x.type.shape[axis]
        out_length: int | None = None
        if isinstance(repeats, Constant):
            counts = np.asarray(repeats.data)
            if (counts < 0).any():
                raise ValueError("repeats may not contain negative values.")
            if counts.ndim == 1 and counts.shape[0] != 1:
                if length is not None and counts.shape[0] != length:
                    raise ValueError(
                        "operands could not be broadcast together with shape "
                        f"({length},) ({counts.shape[0]},)"
                    )
                out_length = int(counts.sum())
            elif length is not None:
                out_length = length * int(counts.reshape(()))
        shape = list(x.type.shape)
        shape[axis] = out_length
        return Apply(self, [x, repeats], [TensorType(x.type.dtype, tuple(shape))()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, repeats = inputs
        output_storage[0][0] = np.repeat(x, repeats, axis=self.axis % x.ndim)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        x_shape = list(input_shapes[0])
        axis = self.axis % len(x_shape)
        static = node.outputs[0].type.shape[axis]
        repeats = node.inputs[1]
        if static is not None:
            x_shape[axis] = static
        elif repeats.type.ndim == 0:
            x_shape[axis] = tm.mul(x_shape[axis], repeats)
        elif repeats.type.shape[0] == 1:
            x_shape[axis] = tm.mul(x_shape[axis], DimShuffle(1, ())(repeats))
        elif repeats.type.shape[0] is not None:
            x_shape[axis] = length_sum(vector_entries(repeats))
        else:
            x_shape[axis] = _vector_sum(repeats, x_shape[axis], node.outputs[0], axis)
        return [tuple(x_shape)]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True], [False]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Each element gets the sum of the output gradient over its copies; the repeats
        are disconnected (they are counts).

        One count for all (a 0-d `repeats`): a reshape that puts each run of copies on an
        axis of its own, then a sum over it. One count per element: a segment sum,
        ``inc_subtensor(zeros[..., repeat(arange(n), repeats)], gz)``.
        """
        from workbench.core.tensor.reduction import sum as sum_
        from workbench.core.tensor.reshape import reshape

        x, repeats = inputs
        (gz,) = output_grads
        if not (x.type.dtype.is_float or x.type.dtype.is_complex):
            return [float_zeros_like(x), disconnected_type()]
        axis = self.axis % x.type.ndim
        lengths = shape_tuple(x)
        if repeats.type.ndim == 0:
            count = repeats if repeats.type.dtype == int64 else repeats.astype(int64)
            grouped = reshape(gz, [*lengths[:axis], lengths[axis], count, *lengths[axis + 1:]])
            return [grad_for(sum_(grouped, axis=axis + 1), x), disconnected_type()]
        from workbench.core.tensor.creation import arange, zeros_like
        from workbench.core.tensor.subtensor import getitem, inc_subtensor

        owner = Repeat(0)(arange(lengths[axis], dtype=int64), repeats)
        zeros = zeros_like(x, dtype=gz.type.dtype)
        key = (slice(None),) * axis + (owner,)
        return [grad_for(inc_subtensor(getitem(zeros, key), gz), x), disconnected_type()]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The eval point of the tensor repeated the same way."""
        if eval_points[0] is None:
            return [None]
        return [Repeat(self.axis)(eval_points[0], inputs[1])]


def _vector_sum(repeats: Variable, length: Length, output: Variable, axis: int) -> Length:
    """sum(repeats) for a vector of unknown static length (one count, or one per element)."""
    try:
        from workbench.core.tensor.reduction import sum as sum_
    except ImportError:  # the reduction family is not there yet: ask the output itself
        from workbench.core.tensor.shape import shape_i

        return shape_i(output, axis)
    return sum_(repeats) * tm.switch(tm.eq(Shape_i(0)(repeats), 1), length, 1)


def repeat(x: Any, repeats: Any, axis: int | None = None) -> Variable:
    """Repeat elements of `x`, as numpy.repeat: `repeats` is an int (or integer 0-d
    tensor) or one count per element; ``axis=None`` works on the flattened tensor."""
    x = as_tensor_variable(x)
    if axis is None:
        from workbench.core.tensor.reshape import ravel

        x = ravel(x)
        axis = 0
    if isinstance(repeats, float) or (isinstance(repeats, Variable)
                                      and not as_tensor_variable(repeats).dtype.is_int):
        raise TypeError(f"repeats must be integers, got {repeats!r}")
    return Repeat(normalize_axis(axis, x.type.ndim))(x, repeats)


def tile(x: Any, reps: Any) -> Variable:
    """`x` repeated `reps` times along each dimension, as numpy.tile.

    `reps` is an int or a sequence of ints (or integer 0-d tensors); when it
    is longer than the rank of `x`, `x` gets leading length-1 dimensions,
    when shorter, it is padded with ones in front. Built from DimShuffle,
    `broadcast_to` and `reshape`, so it needs no Op (nor gradient) of its own.
    """
    from workbench.core.tensor.reshape import broadcast_to, reshape

    x = as_tensor_variable(x)
    if isinstance(reps, np.ndarray):
        reps = reps.tolist()
    if isinstance(reps, Variable) and as_tensor_variable(reps).type.ndim == 1:
        counts = vector_entries(_int_vector_input(reps, "tile reps"))
    elif isinstance(reps, (list, tuple)):
        counts = [as_length(r, "tile reps") for r in reps]
    else:
        counts = [as_length(reps, "tile reps")]
    if any(is_int(r) and r < 0 for r in counts):
        raise ValueError("negative dimensions are not allowed")
    ndim = max(len(counts), x.type.ndim)
    x = dimshuffle(x, ("x",) * (ndim - x.type.ndim) + tuple(range(x.type.ndim)))
    counts = [1] * (ndim - len(counts)) + counts
    if all(is_int(r) and r == 1 for r in counts):
        return x
    lengths = shape_tuple(x)
    pattern: list[int | str] = []
    target: list[Length] = []
    for d, r in enumerate(counts):
        if not (is_int(r) and r == 1):
            pattern.append("x")
            target.append(r)
        pattern.append(d)
        target.append(lengths[d])
    tiled = broadcast_to(dimshuffle(x, pattern), target)
    return reshape(tiled, [length_product([r, n]) for r, n in zip(counts, lengths)])
