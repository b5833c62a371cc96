"""Changing the shape of a tensor: `Reshape`, `BroadcastTo` and the DimShuffle functions.

``reshape``, ``flatten``/``ravel``, ``squeeze``, ``expand_dims``, ``transpose``,
``swapaxes``, ``moveaxis``, ``atleast_1d/2d/3d``, ``broadcast_to`` and
``broadcast_arrays`` follow NumPy's arguments and error messages; as far as
static shapes tell, bad arguments are refused when the graph is built. All of
them give views of their input (numpy may copy when reshaping a
non-contiguous array; the result is never written to).

One difference with NumPy: ``squeeze(x)`` without an axis drops the dimensions
whose length is *statically* 1 (``x.type.shape``); NumPy drops those that are 1
at run time, which a graph cannot know when it is built. Name the axis to drop a
dimension of unknown length: ``squeeze(x, 0)`` checks at run time that it is 1.

Gradients: Reshape reshapes the output gradient back; BroadcastTo sums it over
the broadcast dimensions with `sum_to`, which also handles dimensions of unknown
static length that numpy broadcasts at run time. The DimShuffle functions need
nothing of their own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import int64
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.op import Op
from workbench.core.graph.type import disconnected_type
from workbench.core.tensor import math as tm
from workbench.core.tensor.elemwise import broadcast_static_shapes, dimshuffle
from workbench.core.tensor.join import (
    Length,
    as_int_vector,
    as_length,
    grad_for,
    known_vector_entries,
    length_product,
    vector_entries,
)
from workbench.core.tensor.shape import (
    format_numpy_shape,
    is_int,
    normalize_axis,
    normalize_axis_tuple,
    shape_tuple,
    specify_shape,
)
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable, constant

__all__ = ["BroadcastTo", "Reshape", "atleast_1d", "atleast_2d", "atleast_3d",
           "broadcast_arrays", "broadcast_to", "expand_dims", "flatten", "moveaxis", "ravel",
           "reshape", "squeeze", "swapaxes", "transpose"]


def _reshape_text(entries: Sequence[int | None]) -> str:
    """A requested shape as numpy prints it: ``(4,newaxis)``; unknown entries as ``?``."""
    return format_numpy_shape("newaxis" if e is not None and e < 0 else e for e in entries)


# -- Reshape ----------------------------------------------------------------------------


class Reshape(Op):
    """The elements of a tensor in a new shape of rank `ndim` (C order), as numpy.reshape.

    Inputs: the tensor and an int64 vector of `ndim` lengths, at most one of
    them negative (-1: inferred from the size). Constant lengths give the
    output's static shape (the unknown one too when the input's size is
    static). The output is a view of the input when numpy can make one (a
    copy otherwise, e.g. for a transposed input). Prints ``Reshape{2}``.
    """

    __props__ = ("ndim",)
    view_map = {0: [0]}

    def __init__(self, ndim: int) -> None:
        if not is_int(ndim) or ndim < 0:
            raise TypeError(f"Reshape needs a non-negative int ndim, got {ndim!r}")
        self.ndim = int(ndim)

    def __str__(self) -> str:
        return f"Reshape{{{self.ndim}}}"

    def make_node(self, x: Any, shape: Any) -> Apply:
        x = as_tensor_variable(x)
        if isinstance(shape, (list, tuple)):
            shape = as_int_vector([as_length(s, "reshape length") for s in shape])
        shape = as_tensor_variable(shape)
        if shape.type.ndim != 1 or not shape.type.dtype.is_int:
            raise TypeError(f"{self} needs an integer vector shape, got {shape} ({shape.type})")
        if shape.type.shape[0] not in (None, self.ndim):
            raise ValueError(
                f"{self} needs a shape of length {self.ndim}, got {shape} ({shape.type})"
            )
        if shape.type.dtype != int64:
            shape = (constant(np.asarray(shape.data, dtype=np.int64))
                     if isinstance(shape, Constant) else shape.astype(int64))
        entries = known_vector_entries(shape) or [None] * self.ndim
        out_shape = _static_reshape(x.type.shape, entries)
        return Apply(self, [x, shape], [TensorType(x.type.dtype, out_shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, shape = inputs
        if len(shape) != self.ndim:
            raise ValueError(f"{self}: expected a shape of length {self.ndim}, got {tuple(shape)}")
        output_storage[0][0] = np.reshape(x, tuple(int(s) for s in shape))

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        static = node.outputs[0].type.shape
        if None not in static:
            return [static]
        entries = vector_entries(node.inputs[1], self.ndim)
        size = length_product(input_shapes[0])
        result: list[Length] = []
        for i, (known, entry) in enumerate(zip(static, entries)):
            if known is not None:
                result.append(known)
                continue
            # A negative entry (numpy allows one) stands for size // (product of the others).
            others = length_product([e for j, e in enumerate(entries) if j != i])
            rest = size // others if is_int(size) and is_int(others) else tm.floor_div(
                size, others if is_int(others) else tm.maximum(others, 1))
            if is_int(entry):
                result.append(rest)
            else:
                result.append(tm.switch(tm.lt(entry, 0), rest, entry))
        return [tuple(result)]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True], [False]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """The output gradient reshaped back to the input's (symbolic) shape; the shape
        vector is disconnected."""
        x = inputs[0]
        return [grad_for(reshape(output_grads[0], list(shape_tuple(x))), x), disconnected_type()]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The eval point reshaped the same way."""
        if eval_points[0] is None:
            return [None]
        return [Reshape(self.ndim)(eval_points[0], inputs[1])]


def _static_reshape(in_shape: Sequence[int | None], entries: Sequence[int | None]
                    ) -> tuple[int | None, ...]:
    """The static output shape of a reshape, or numpy's ValueError when it cannot work."""
    negative = [i for i, e in enumerate(entries) if e is not None and e < 0]
    if len(negative) > 1:
        raise ValueError("can only specify one unknown dimension")
    out = [e if e is not None and e >= 0 else None for e in entries]
    if None in in_shape:
        size = 0 if 0 in in_shape else None
    else:
        size = math.prod(in_shape)  # type: ignore[arg-type]
    if size is None:
        return tuple(out)
    unknown = [i for i, e in enumerate(entries) if e is None or e < 0]
    known = math.prod(e for e in entries if e is not None and e >= 0)
    if not unknown:
        if known != size:
            raise ValueError(f"cannot reshape array of size {size} into shape "
                             f"{_reshape_text(entries)}")
    elif len(unknown) == 1:
        # Whether the entry is -1 or the right length, it has to be size // known.
        if known == 0 or size % known:
            if known == 0 and size == 0 and not negative:
                return tuple(out)  # a symbolic length of a zero-size array: anything goes
            raise ValueError(f"cannot reshape array of size {size} into shape "
                             f"{_reshape_text(entries)}")
        out[unknown[0]] = size // known
    return tuple(out)


def reshape(x: Any, shape: Any, ndim: int | None = None) -> Variable:
    """`x` with shape `shape`, as numpy.reshape (``x.reshape(2, -1)`` is the method form).

    `shape` is an int, a sequence of ints and/or integer 0-d tensors (one may
    be -1), or an integer vector Variable; then the output rank `ndim` comes
    from the vector's static length, or must be given.
    """
    x = as_tensor_variable(x)
    if isinstance(shape, Variable):
        vec = as_tensor_variable(shape)
        if vec.type.ndim == 0:
            shape = (vec,)
        elif vec.type.ndim == 1:
            if not vec.type.dtype.is_int:
                raise TypeError(f"reshape needs an integer shape, got {vec} ({vec.type})")
            length = vec.type.shape[0]
            if ndim is None:
                if length is None:
                    raise ValueError(
                        f"reshape: the length of the shape vector {vec} is not known "
                        "statically; pass ndim= (the rank of the result)"
                    )
                ndim = length
            elif length is not None and length != ndim:
                raise ValueError(f"reshape: ndim={ndim} but the shape vector {vec} has "
                                 f"length {length}")
            return Reshape(ndim)(x, vec)
        else:
            raise TypeError(f"reshape needs a shape vector, got {vec} ({vec.type})")
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if is_int(shape):
        shape = (shape,)
    try:
        entries = [as_length(s, "reshape length") for s in shape]
    except TypeError as exc:
        if "not iterable" in str(exc):
            raise TypeError(f"reshape: the shape must be an int or a sequence, "
                            f"got {shape!r}") from None
        raise
    if ndim is not None and ndim != len(entries):
        raise ValueError(f"reshape: ndim={ndim} but the shape has {len(entries)} entries")
    return Reshape(len(entries))(x, as_int_vector(entries))


def flatten(x: Any, ndim: int = 1) -> Variable:
    """`x` with its dimensions from `ndim - 1` on merged into one (``ndim=1``: a vector).

    The first ``ndim - 1`` dimensions are kept, as PyTensor's flatten; `x`
    itself when it already has rank `ndim`.
    """
    x = as_tensor_variable(x)
    if not is_int(ndim) or ndim < 1 or (ndim > 1 and ndim > x.type.ndim):
        raise ValueError(f"flatten: ndim={ndim!r} must be between 1 and the rank "
                         f"{max(x.type.ndim, 1)} of {x}")
    if ndim == x.type.ndim:
        return x
    if ndim == 1:
        return reshape(x, (-1,))
    lengths = shape_tuple(x)
    return reshape(x, [*lengths[:ndim - 1], length_product(lengths[ndim - 1:])])


def ravel(x: Any) -> Variable:
    """`x` as a vector (C order), as numpy.ravel."""
    return flatten(x, 1)


# -- DimShuffle functions -----------------------------------------------------------------


def squeeze(x: Any, axis: Any = None) -> Variable:
    """`x` without length-1 dimensions, as numpy.squeeze.

    ``axis=None`` drops the dimensions whose length is *statically* 1 (numpy
    looks at run-time lengths, which a graph does not know). A named axis of
    unknown length is checked at run time (a SpecifyShape to 1); one whose
    static length is not 1 is refused.
    """
    x = as_tensor_variable(x)
    ndim = x.type.ndim
    if axis is None:
        drop = [d for d, n in enumerate(x.type.shape) if n == 1]
    elif ndim == 0:
        normalize_axis_tuple(axis, 1, repeated="duplicate value in 'axis'")  # numpy allows 0
        return x
    else:
        drop = list(normalize_axis_tuple(axis, ndim, repeated="duplicate value in 'axis'"))
        if any(x.type.shape[d] not in (None, 1) for d in drop):
            raise ValueError(
                "cannot select an axis to squeeze out which has size not equal to one"
            )
        if any(x.type.shape[d] is None for d in drop):
            x = specify_shape(x, [1 if d in drop else None for d in range(ndim)])
    if not drop:
        return x
    return dimshuffle(x, [d for d in range(ndim) if d not in drop])


def expand_dims(x: Any, axis: Any) -> Variable:
    """`x` with length-1 dimensions inserted at `axis` (int or tuple), as numpy.expand_dims."""
    x = as_tensor_variable(x)
    count = 1 if is_int(axis) else len(tuple(axis))
    out_ndim = x.type.ndim + count
    axes = normalize_axis_tuple(axis, out_ndim)
    remaining = iter(range(x.type.ndim))
    return dimshuffle(x, ["x" if d in axes else next(remaining) for d in range(out_ndim)])


def transpose(x: Any, axes: Sequence[int] | None = None) -> Variable:
    """`x` with its dimensions permuted (reversed by default), as numpy.transpose."""
    x = as_tensor_variable(x)
    ndim = x.type.ndim
    if axes is None:
        return dimshuffle(x, tuple(reversed(range(ndim))))
    axes = tuple(axes)
    if len(axes) != ndim:
        raise ValueError("axes don't match array")
    order = normalize_axis_tuple(axes, ndim, repeated="repeated axis in transpose")
    return dimshuffle(x, order)


def swapaxes(x: Any, axis1: int, axis2: int) -> Variable:
    """`x` with two dimensions exchanged, as numpy.swapaxes."""
    x = as_tensor_variable(x)
    a = normalize_axis(axis1, x.type.ndim, "axis1")
    b = normalize_axis(axis2, x.type.ndim, "axis2")
    order = list(range(x.type.ndim))
    order[a], order[b] = order[b], order[a]
    return dimshuffle(x, order)


def moveaxis(x: Any, source: Any, destination: Any) -> Variable:
    """`x` with the dimensions `source` moved to positions `destination`, as numpy.moveaxis."""
    x = as_tensor_variable(x)
    ndim = x.type.ndim
    src = normalize_axis_tuple(source, ndim, "source", "repeated axis in `source` argument")
    dst = normalize_axis_tuple(destination, ndim, "destination",
                               "repeated axis in `destination` argument")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [d for d in range(ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return dimshuffle(x, order)


def _atleast(xs: Sequence[Any], ndim: int) -> Variable | list[Variable]:
    results = []
    for value in xs:
        x = as_tensor_variable(value)
        if x.type.ndim >= ndim:
            results.append(x)
        elif x.type.ndim == 0:
            results.append(dimshuffle(x, ("x",) * ndim))
        elif x.type.ndim == 1:  # a vector is a row; with ndim 3 it is (1, n, 1)
            results.append(dimshuffle(x, ("x", 0, "x")[:ndim]))
        else:  # a matrix becomes (m, n, 1)
            results.append(dimshuffle(x, (0, 1, "x")))
    return results[0] if len(results) == 1 else results


def atleast_1d(*xs: Any) -> Variable | list[Variable]:
    """Each argument with at least one dimension, as numpy.atleast_1d."""
    return _atleast(xs, 1)


def atleast_2d(*xs: Any) -> Variable | list[Variable]:
    """Each argument with at least two dimensions (vectors become rows), as numpy.atleast_2d."""
    return _atleast(xs, 2)


def atleast_3d(*xs: Any) -> Variable | list[Variable]:
    """Each argument with at least three dimensions, as numpy.atleast_3d
    (``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``)."""
    return _atleast(xs, 3)


# -- BroadcastTo --------------------------------------------------------------------------


class BroadcastTo(Op):
    """A tensor broadcast to a shape, as numpy.broadcast_to: a read-only view.

    Inputs: the tensor, then one integer 0-d tensor per output dimension (at
    least as many as the input has). The output is a view of the input
    (`view_map`) whose elements overlap in memory: it must never be written,
    so no in-place Op may destroy it.
    """

    __props__ = ()
    view_map = {0: [0]}
    read_only_view = True

    def make_node(self, x: Any, *shape: Any) -> Apply:
        x = as_tensor_variable(x)
        lengths: list[Variable] = []
        targets: list[int | None] = []
        for s in shape:
            s = as_length(s, "broadcast_to length")
            if is_int(s):
                if s < 0:
                    raise ValueError("all elements of broadcast shape must be non-negative")
                s = constant(np.int64(s))
            lengths.append(s)
            targets.append(int(s.data) if isinstance(s, Constant) else None)
        if len(targets) < x.type.ndim:
            raise ValueError("input operand has more dimensions than allowed by the axis "
                             "remapping")
        lead = len(targets) - x.type.ndim
        out: list[int | None] = []
        for d, target in enumerate(targets):
            have = x.type.shape[d - lead] if d >= lead else 1
            if target is not None:
                if have is not None and have not in (1, target):
                    raise ValueError(
                        "operands could not be broadcast together with remapped shapes "
                        f"[original->remapped]: {format_numpy_shape(x.type.shape)}  and "
                        f"requested shape {format_numpy_shape(targets)}"
                    )
                out.append(target)
            else:
                out.append(have if have not in (None, 1) else None)
        return Apply(self, [x, *lengths], [TensorType(x.type.dtype, tuple(out))()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, *shape = inputs
        output_storage[0][0] = np.broadcast_to(x, tuple(int(s) for s in shape))

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        static = node.outputs[0].type.shape
        return [tuple(n if n is not None else s for n, s in zip(static, node.inputs[1:]))]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True]] + [[False] for _ in node.inputs[1:]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """The output gradient summed over the broadcast dimensions (`sum_to`); the
        lengths are disconnected."""
        x = inputs[0]
        return [grad_for(sum_to(output_grads[0], x), x)] + [disconnected_type() for _ in inputs[1:]]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The eval point broadcast the same way."""
        if eval_points[0] is None:
            return [None]
        return [BroadcastTo()(eval_points[0], *inputs[1:])]


def sum_to(g: Variable, x: Variable) -> Variable:
    """`g`, of the shape `x` was broadcast to, summed back to the shape of `x`.

    The gradient of every broadcast: sums over the leading dimensions `x` lacks
    and over the dimensions where `x` has static length 1. A dimension of
    unknown static length may still be 1 at run time (numpy broadcasts it), so
    each such dimension is reshaped into ``(len_x, len_g // len_x)`` and summed
    over the second part: ``(n, 1)`` when the lengths agree, ``(1, n)`` when `x`
    was broadcast; one graph for both cases, no branch.
    """
    from workbench.core.tensor.reduction import sum as sum_

    lead = g.type.ndim - x.type.ndim
    if lead < 0:
        raise ValueError(f"sum_to: {g} ({g.type}) has fewer dimensions than {x} ({x.type})")
    if lead:
        g = sum_(g, axis=tuple(range(lead)))
    ones = [d for d in range(x.type.ndim) if x.type.shape[d] == 1 and g.type.shape[d] != 1]
    if ones:
        g = sum_(g, axis=tuple(ones), keepdims=True)
    unknown = [d for d in range(x.type.ndim)
               if x.type.shape[d] is None and g.type.shape[d] not in (1,)]
    if unknown:
        x_lengths = shape_tuple(x)
        g_lengths = shape_tuple(g)
        target: list[Length] = []
        summed: list[int] = []
        for d in range(x.type.ndim):
            target.append(g_lengths[d] if d not in unknown else x_lengths[d])
            if d in unknown:
                target.append(tm.floor_div(g_lengths[d], tm.maximum(x_lengths[d], 1)))
                summed.append(len(target) - 1)
        g = sum_(reshape(g, target), axis=tuple(summed))
    if any(a is not None and b is None for a, b in zip(x.type.shape, g.type.shape)):
        g = specify_shape(g, x.type.shape)
    return g


def _shape_entries(shape: Any, what: str) -> list[Length]:
    """A shape argument (int, sequence, or int vector Variable of static length) as lengths."""
    if isinstance(shape, Variable):
        vec = as_tensor_variable(shape)
        if vec.type.ndim == 0:
            return [as_length(vec, what)]
        if vec.type.ndim != 1 or not vec.type.dtype.is_int:
            raise TypeError(f"{what} must be an integer vector, got {vec} ({vec.type})")
        return vector_entries(vec)
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if is_int(shape):
        return [int(shape)]
    return [as_length(s, what) for s in shape]


def broadcast_to(x: Any, shape: Any) -> Variable:
    """`x` broadcast to `shape` (ints and/or integer 0-d tensors), as numpy.broadcast_to:
    a read-only view. `x` itself when its static shape is already `shape`."""
    x = as_tensor_variable(x)
    entries = _shape_entries(shape, "broadcast_to length")
    if len(entries) == x.type.ndim and all(
        is_int(e) and e == n for e, n in zip(entries, x.type.shape)
    ):
        return x
    return BroadcastTo()(x, *entries)


def broadcast_arrays(*xs: Any) -> list[Variable]:
    """The arguments broadcast against each other (read-only views), as numpy.broadcast_arrays."""
    tensors = [as_tensor_variable(x) for x in xs]
    if not tensors:
        return []
    ndim = max(t.type.ndim for t in tensors)
    padded = [(1,) * (ndim - t.type.ndim) + t.type.shape for t in tensors]
    static = broadcast_static_shapes(padded)
    if static is None:
        for i, a in enumerate(padded):
            for j in range(i + 1, len(padded)):
                if broadcast_static_shapes([a, padded[j]]) is None:
                    raise ValueError(
                        "shape mismatch: objects cannot be broadcast to a single shape.  "
                        f"Mismatch is between arg {i} with shape "
                        f"{format_numpy_shape(tensors[i].type.shape)} and arg {j} with shape "
                        f"{format_numpy_shape(tensors[j].type.shape)}."
                    )
    target: list[Length] = []
    for d, length in enumerate(static):  # type: ignore[arg-type]
        if length is not None:
            target.append(length)
            continue
        candidates: list[Variable] = []
        for t in tensors:
            k = d - (ndim - t.type.ndim)
            if k >= 0 and t.type.shape[k] != 1:
                candidates.append(shape_tuple(t)[k])
        result = candidates[0]
        for other in candidates[1:]:  # the length that is not 1 (zero included)
            result = tm.switch(tm.eq(result, 1), other, result)
        target.append(result)
    return [broadcast_to(t, target) for t in tensors]
