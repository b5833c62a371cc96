"""Elementwise Ops on tensors: `Elemwise` (a scalar Op over arrays) and `DimShuffle`.

``Elemwise(scalar.add)`` applies ``add`` to every element, with numpy
broadcasting. Building a node makes the broadcasting explicit: an input of
lower rank is left-padded with length-1 dimensions by a `DimShuffle` (so
``matrix * 2.0`` has a ``DimShuffle{x,x}`` of the constant as its second
input, as in seed 001), static lengths are checked (a mismatch is a
ValueError at build time, not at run time) and the output's static shape is
the broadcast of the inputs' static shapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import as_dtype
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.scalar import math as smath
from workbench.core.scalar.basic import ScalarOp, is_python_scalar, weak_scalar_arrays
from workbench.core.tensor.type import StaticShape, TensorType, format_shape
from workbench.core.tensor.variable import TensorConstant, as_tensor_variable

# -- DimShuffle --------------------------------------------------------------------


class DimShuffle(Op):
    """Reorder the dimensions of a tensor, insert length-1 dimensions, drop length-1 ones.

    `new_order` lists, for each output dimension, the input dimension it comes
    from, or ``'x'`` for a new length-1 dimension. Input dimensions missing
    from `new_order` are dropped; only dimensions of static length 1 can be.
    ``DimShuffle(2, (1, 0))`` transposes a matrix and prints ``DimShuffle{1,0}``;
    ``DimShuffle(0, ('x', 'x'))`` turns a 0-d tensor into a 1x1 matrix.

    The output is a view of the input (`view_map`), never a copy.
    """

    __props__ = ("input_ndim", "new_order")
    view_map = {0: [0]}

    def __init__(self, input_ndim: int, new_order: Iterable[int | str]) -> None:
        if not isinstance(input_ndim, (int, np.integer)) or input_ndim < 0:
            raise TypeError(f"DimShuffle input_ndim must be a non-negative int, got {input_ndim!r}")
        self.input_ndim = int(input_ndim)
        order: list[int | str] = []
        for entry in new_order:
            if entry == "x":
                order.append("x")
            elif isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
                if not 0 <= entry < self.input_ndim:
                    raise ValueError(
                        f"DimShuffle entry {entry} is not a dimension of a rank-{self.input_ndim} "
                        "input"
                    )
                order.append(int(entry))
            else:
                raise TypeError(f"DimShuffle entries must be ints or 'x', got {entry!r}")
        kept = [d for d in order if d != "x"]
        if len(set(kept)) != len(kept):
            raise ValueError(f"DimShuffle pattern {tuple(order)} repeats a dimension")
        self.new_order: tuple[int | str, ...] = tuple(order)
        self.shuffle: tuple[int, ...] = tuple(kept)  # type: ignore[arg-type]
        self.drop: tuple[int, ...] = tuple(d for d in range(self.input_ndim) if d not in kept)
        self.augment: tuple[int, ...] = tuple(i for i, d in enumerate(order) if d == "x")

    def __str__(self) -> str:
        return "DimShuffle{" + ",".join(str(d) for d in self.new_order) + "}"

    @property
    def is_transpose(self) -> bool:
        """Only a permutation: no dimension added or dropped."""
        return not self.drop and not self.augment

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.type.ndim != self.input_ndim:
            raise ValueError(
                f"{self} expects an input of rank {self.input_ndim}, got {x} of type {x.type} "
                f"(rank {x.type.ndim})"
            )
        for d in self.drop:
            if x.type.shape[d] != 1:
                length = "?" if x.type.shape[d] is None else x.type.shape[d]
                raise ValueError(
                    f"{self} would drop dimension {d} of {x} ({x.type}), but only dimensions of "
                    f"static length 1 can be dropped (this one has length {length})"
                )
        shape = tuple(1 if d == "x" else x.type.shape[d] for d in self.new_order)
        return Apply(self, [x], [TensorType(x.type.dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        (x,) = inputs
        if self.drop:
            for d in self.drop:
                if x.shape[d] != 1:
                    raise ValueError(
                        f"{self}: dimension {d} to drop has length {x.shape[d]}, not 1 "
                        f"(input shape {x.shape})"
                    )
            # The trailing Ellipsis keeps a 0-d result a view, not a numpy scalar.
            x = x[tuple(0 if d in self.drop else slice(None) for d in range(x.ndim)) + (...,)]
            remaining = [d for d in range(self.input_ndim) if d not in self.drop]
            axes = [remaining.index(d) for d in self.shuffle]
        else:
            axes = list(self.shuffle)
        view = np.asarray(x).transpose(axes)
        if self.augment:
            view = view[tuple(None if d == "x" else slice(None) for d in self.new_order)]
        output_storage[0][0] = view

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        (shape,) = input_shapes
        return [tuple(1 if d == "x" else shape[d] for d in self.new_order)]


def dimshuffle(x: Any, pattern: Sequence[int | str]) -> Variable:
    """`x` with its dimensions rearranged by `pattern` (see DimShuffle); `x` if unchanged."""
    x = as_tensor_variable(x)
    pattern = tuple(pattern)
    if pattern == tuple(range(x.type.ndim)):
        return x
    return DimShuffle(x.type.ndim, pattern)(x)


def _left_pad(x: Variable, ndim: int) -> Variable:
    """`x` with length-1 dimensions added in front to reach rank `ndim` (numpy broadcasting)."""
    missing = ndim - x.type.ndim
    if missing == 0:
        return x
    return DimShuffle(x.type.ndim, ("x",) * missing + tuple(range(x.type.ndim)))(x)


# -- Elemwise ----------------------------------------------------------------------


def broadcast_static_shapes(shapes: Sequence[StaticShape]) -> StaticShape | None:
    """The broadcast of static shapes of equal rank, or None if they cannot broadcast.

    Per dimension: a known length other than 1 wins (unknown lengths must
    match it at run time); all 1 gives 1; otherwise the length is unknown.
    """
    result: list[int | None] = []
    for dims in zip(*shapes):
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            return None
        if known:
            result.append(known.pop())
        elif all(d == 1 for d in dims):
            result.append(1)
        else:
            result.append(None)
    return tuple(result)


class Elemwise(Op):
    """A scalar Op applied elementwise to tensors, with numpy broadcasting.

    `inplace_pattern` maps an output index to the index of the input it
    overwrites (declared in `destroy_map`); without it outputs never alias
    inputs. Prints as ``Elemwise{add}`` (``Elemwise{add,inplace}`` when output 0
    overwrites input 0). `perform` runs the scalar Op's numpy kernel over whole
    arrays (`ScalarOp.compute`), so results have exactly the output dtypes.
    """

    __props__ = ("scalar_op", "inplace_pattern")

    def __init__(self, scalar_op: ScalarOp, inplace_pattern: Mapping[int, int] | None = None
                 ) -> None:
        if not isinstance(scalar_op, ScalarOp):
            raise TypeError(f"Elemwise needs a ScalarOp, got {scalar_op!r}")
        self.scalar_op = scalar_op
        pattern = dict(inplace_pattern or {})
        for out, inp in pattern.items():
            if not (0 <= out < scalar_op.nout) or (scalar_op.nin >= 0
                                                    and not 0 <= inp < scalar_op.nin):
                raise ValueError(f"invalid inplace_pattern {pattern} for {scalar_op}")
        self.inplace_pattern: tuple[tuple[int, int], ...] = tuple(sorted(pattern.items()))
        self.destroy_map = {out: [inp] for out, inp in self.inplace_pattern}
        self.view_map = {}

    def __str__(self) -> str:
        if not self.inplace_pattern:
            return f"Elemwise{{{self.scalar_op}}}"
        if self.inplace_pattern == ((0, 0),):
            return f"Elemwise{{{self.scalar_op},inplace}}"
        pairs = ",".join(f"{o}:{i}" for o, i in self.inplace_pattern)
        return f"Elemwise{{{self.scalar_op},inplace{{{pairs}}}}}"

    # -- building -----------------------------------------------------------------
    def _convert_inputs(self, inputs: Sequence[Any]) -> list[Variable]:
        """Tensor Variables for the inputs; weak Python scalars adopt the operands' dtype."""
        converted: list[Any] = list(inputs)
        for i, x in enumerate(inputs):
            if not is_python_scalar(x):
                try:
                    converted[i] = as_tensor_variable(x)
                except TypeError as exc:
                    raise TypeError(f"input {i} of {self}: {exc}") from None
        dtypes = [None if is_python_scalar(x) else x.type.dtype for x in converted]
        try:
            weak = weak_scalar_arrays(inputs, dtypes, self.scalar_op.dtype_inputs)
        except OverflowError as exc:
            raise OverflowError(f"{self}: {exc}") from None
        for i, data in weak.items():
            converted[i] = TensorConstant(TensorType(as_dtype(data.dtype), ()), data)
        return converted

    def make_node(self, *inputs: Any) -> Apply:
        op = self.scalar_op
        if op.nin >= 0 and len(inputs) != op.nin:
            raise TypeError(f"{self} takes {op.nin} inputs, got {len(inputs)}")
        if not inputs:
            raise TypeError(f"{self} needs at least one input")
        variables = self._convert_inputs(inputs)
        ndim = max(v.type.ndim for v in variables)
        padded = [_left_pad(v, ndim) for v in variables]
        shape = broadcast_static_shapes([v.type.shape for v in padded])
        if shape is None:
            shown = " ".join(format_shape(v.type.shape) for v in variables)
            raise ValueError(
                f"{self}: operands could not be broadcast together with shapes {shown}"
            )
        dtypes = op.output_dtypes([v.type.dtype for v in padded])
        for out, inp in self.inplace_pattern:
            itype = padded[inp].type
            if itype.dtype != dtypes[out]:
                raise TypeError(
                    f"{self} cannot write output {out} (dtype {dtypes[out]}) into input {inp} "
                    f"of dtype {itype.dtype}"
                )
            if any(s == 1 and o != 1 for s, o in zip(itype.shape, shape)):
                raise ValueError(
                    f"{self} cannot write output {out} of static shape {format_shape(shape)} "
                    f"into input {inp} of static shape {format_shape(itype.shape)}, which "
                    "broadcasts"
                )
        outputs = [TensorType(d, shape)() for d in dtypes]
        return Apply(self, padded, outputs)

    # -- running ------------------------------------------------------------------
    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        op = self.scalar_op
        dtypes = [out.type.dtype for out in node.outputs]
        if self.inplace_pattern and self._perform_inplace(inputs, output_storage, dtypes):
            return
        results = op.compute(inputs, dtypes)
        shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
        destroyed = dict(self.inplace_pattern)
        for k, (cell, result) in enumerate(zip(output_storage, results)):
            if result.shape != shape:  # e.g. a Composite output that ignores some inputs
                result = np.broadcast_to(result, shape).copy()
            if k in destroyed:
                target = inputs[destroyed[k]]
                if result is not target:
                    np.copyto(target, result)
                result = target
            elif any(np.may_share_memory(result, x) for x in inputs):
                result = result.copy()  # kernels like identity return their input
            cell[0] = result

    def _perform_inplace(self, inputs: Sequence[Any], output_storage: list[list[Any]],
                         dtypes: Sequence[Any]) -> bool:
        """Run the numpy ufunc with ``out=`` the destroyed input when no cast is needed."""
        op = self.scalar_op
        if op.nfunc is None or op.nout != 1:
            return False
        args = op.cast_inputs([np.asarray(x) for x in inputs], dtypes)
        if any(a is not x for a, x in zip(args, inputs)):
            return False
        target = inputs[self.inplace_pattern[0][1]]
        if target.dtype != dtypes[0].numpy:
            return False
        with np.errstate(all="ignore"):
            getattr(np, op.nfunc)(*args, out=target)
        output_storage[0][0] = target
        return True

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        static = node.outputs[0].type.shape
        shape: list[Any] = []
        for d, length in enumerate(static):
            if length is not None:
                shape.append(length)
                continue
            candidates: list[Any] = []
            for var, in_shape in zip(node.inputs, input_shapes):
                if var.type.shape[d] != 1 and not any(in_shape[d] is c for c in candidates):
                    candidates.append(in_shape[d])
            shape.append(_broadcast_length(candidates))
        return [tuple(shape) for _ in node.outputs]

    # Gradients (L_op / grad) come with the autodiff issue: Elemwise will build
    # them from its scalar Op's scalar gradient graph.


def _broadcast_length(lengths: list[Any]) -> Any:
    """The broadcast of several lengths (ints or int64 scalar Variables).

    A length of 1 yields to the others, so (0 vs 1) gives 0: taking the
    maximum would be wrong for zero-size dimensions.
    """
    known = [int(n) for n in lengths if isinstance(n, (int, np.integer)) and int(n) != 1]
    if known:
        return known[0]
    symbolic = [n for n in lengths if not isinstance(n, (int, np.integer))]
    if not symbolic:
        return 1
    result = symbolic[0]
    for other in symbolic[1:]:
        is_one = Elemwise(smath.eq)(result, 1)
        result = Elemwise(smath.switch)(is_one, other, result)
    return result
