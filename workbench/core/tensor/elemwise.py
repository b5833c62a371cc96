"""Elementwise Ops on tensors: `Elemwise` (a scalar Op over arrays) and `DimShuffle`.

``Elemwise(scalar.add)`` applies ``add`` to every element, with numpy
broadcasting. Building a node makes the broadcasting explicit: an input of
lower rank is left-padded with length-1 dimensions by a `DimShuffle` (so
``matrix * 2.0`` has a ``DimShuffle{x,x}`` of the constant as its second
input, as in seed 001), static lengths are checked (a mismatch is a
ValueError at build time, not at run time) and the output's static shape is
the broadcast of the inputs' static shapes.

Gradients: `Elemwise.L_op` lifts the scalar Op's scalar gradient graph
(`ScalarOp.L_op`) to Elemwise nodes and sums each gradient back to its input's
shape (statically, or with `SumToShape` when broadcasting is only decided at
run time); `Elemwise.R_op` derives forward derivatives from the same scalar
graphs. `DimShuffle` differentiates as the inverse DimShuffle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import as_dtype, default_float_dtype
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.op import Op
from workbench.core.graph.type import (
    DisconnectedType,
    NullType,
    disconnected_type,
    grad_dtype,
    grad_not_implemented,
    is_disconnected,
)
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.scalar import math as smath
from workbench.core.scalar.basic import (
    ScalarOp,
    get_scalar_type,
    is_python_scalar,
    resolve_weak_scalars,
    scalar_constant,
)
from workbench.core.scalar.declared import declared_attribute
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

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        """The inverse DimShuffle of the output gradient.

        Added length-1 dimensions are dropped (summed first if the gradient
        does not know them to be of length 1); dropped ones come back as
        length-1 dimensions. Integer/bool inputs get float zeros (seed 003).
        """
        (x,), (gz,) = inputs, output_grads
        if not (x.type.dtype.is_float or x.type.dtype.is_complex):
            from workbench.core.tensor.creation import zeros_like

            return [zeros_like(x, dtype=default_float_dtype())]
        gz = as_tensor_variable(gz)
        if any(gz.type.shape[i] != 1 for i in self.augment):
            from workbench.core.tensor.reduction import sum as sum_

            gz = sum_(gz, axis=self.augment, keepdims=True)
        order: list[int | str] = ["x"] * self.input_ndim
        for out_dim, in_dim in enumerate(self.new_order):
            if in_dim != "x":
                order[in_dim] = out_dim  # type: ignore[index]
        result = DimShuffle(gz.type.ndim, order)(gz)
        return [_cast_to(result, grad_dtype(x.type.dtype))]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        (v,) = eval_points
        return [None if v is None else self(v)]


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
        """Tensor Variables for the inputs; weak Python scalars adopt the operands' dtype
        (operands that would promote past `result_type` are cast to it first)."""
        converted: list[Any] = list(inputs)
        for i, x in enumerate(inputs):
            if not is_python_scalar(x):
                try:
                    converted[i] = as_tensor_variable(x)
                except TypeError as exc:
                    raise TypeError(f"input {i} of {self}: {exc}") from None
        dtypes = [None if is_python_scalar(x) else x.type.dtype for x in converted]
        try:
            weak = resolve_weak_scalars(inputs, dtypes, self.scalar_op.dtype_inputs)
        except OverflowError as exc:
            raise OverflowError(f"{self}: {exc}") from None
        for i, data in weak.arrays.items():
            converted[i] = TensorConstant(TensorType(as_dtype(data.dtype), ()), data)
        if weak.casts:
            from workbench.core.tensor.basic import cast  # basic builds on Elemwise

            for i, dtype in weak.casts.items():
                converted[i] = cast(converted[i], dtype)
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
        nfunc = declared_attribute(type(op), "nfunc")  # None if a subclass overrides impl
        if nfunc is None or op.nout != 1:
            return False
        args = op.cast_inputs([np.asarray(x) for x in inputs], dtypes)
        if any(a is not x for a, x in zip(args, inputs)):
            return False
        target = inputs[self.inplace_pattern[0][1]]
        if target.dtype != dtypes[0].numpy:
            return False
        with np.errstate(all="ignore"):
            getattr(np, nfunc)(*args, out=target)
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
            shape.append(broadcast_length(candidates))
        return [tuple(shape) for _ in node.outputs]

    # -- differentiation -----------------------------------------------------------
    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Gradients from the scalar Op's scalar gradient graph, lifted to tensors.

        The scalar Op's `L_op` runs on placeholder scalars; each scalar node of
        its result becomes an Elemwise of the same scalar Op over the tensors
        (so the gradient is elementwise too, and fusion can fuse it). A
        gradient is then summed (keepdims) over the dimensions its input
        broadcast along *statically* (length 1 in the input's type, not in
        the output's), and through a `SumToShape` over those where it may
        broadcast at run time (unknown static length); a constant gradient
        (zero) is filled to the input's shape. Integer and bool inputs get float
        gradients (seed 003); NullType gradients pass through.
        """
        if all(is_disconnected(g) for g in output_grads):
            return [DisconnectedType()() for _ in inputs]
        for g in output_grads:
            if isinstance(getattr(g, "type", None), NullType):
                return [g for _ in inputs]
        s_inputs = [get_scalar_type(x.type.dtype)() for x in inputs]
        s_outputs = [get_scalar_type(o.type.dtype)() for o in outputs]
        s_ograds: list[Variable] = []
        lifted: dict[Variable, Variable] = dict(zip(s_inputs, inputs))
        lifted.update(zip(s_outputs, outputs))
        for g in output_grads:
            if is_disconnected(g):
                s_ograds.append(DisconnectedType()())
            else:
                s_g = get_scalar_type(g.type.dtype)()
                lifted[s_g] = g
                s_ograds.append(s_g)
        try:
            s_igrads = self.scalar_op.L_op(s_inputs, s_outputs, s_ograds)
        except MethodNotDefined:
                return [grad_not_implemented(self, i, x, f"{self.scalar_op} defines no grad")
                    for i, x in enumerate(inputs)]
        if len(s_igrads) != len(inputs):
            raise ValueError(
                f"{self.scalar_op}.L_op returned {len(s_igrads)} gradients for "
                f"{len(inputs)} inputs"
            )
        result: list[Variable] = []
        for x, s_g in zip(inputs, s_igrads):
            if isinstance(s_g.type, (NullType, DisconnectedType)):
                result.append(s_g)
                continue
            others = [v for v in inputs if v is not x]
            result.append(_fit_to_input(lift_scalar_graph(s_g, lifted), x, others))
        return result

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """Jacobian-vector products: sum_i df/dx_i * v_i, elementwise.

        The partial derivatives are the scalar Op's gradients for an output
        gradient of 1 (of 0 for the other outputs). Complex Ops raise
        MethodNotDefined (their gradients hold conj(f'), not f'), so forward mode
        falls back to the double-L_op construction.
        """
        if all(v is None for v in eval_points):
            return [None] * self.scalar_op.nout
        if any(v.type.dtype.is_complex for v in inputs):
            raise MethodNotDefined(f"{self}.R_op for complex inputs")
        s_inputs = [get_scalar_type(x.type.dtype)() for x in inputs]
        s_outputs = self.scalar_op(*s_inputs, return_list=True)
        if any(o.type.dtype.is_complex for o in s_outputs):
            raise MethodNotDefined(f"{self}.R_op for complex outputs")
        lifted: dict[Variable, Variable] = dict(zip(s_inputs, inputs))
        s_points: list[Variable | None] = []
        for v in eval_points:
            if v is None:
                s_points.append(None)
                continue
            s_v = get_scalar_type(v.type.dtype)()
            lifted[s_v] = v
            s_points.append(s_v)
        results: list[Variable | None] = []
        for j, s_out in enumerate(s_outputs):
            out = lift_scalar_graph(s_out, lifted)
            out_dtype = grad_dtype(s_out.type.dtype)
            ones = [scalar_constant(1 if k == j else 0, dtype=grad_dtype(o.type.dtype))
                    for k, o in enumerate(s_outputs)]
            s_grads = self.scalar_op.L_op(s_inputs, s_outputs, ones)
            total: Variable | None = None
            for s_g, s_v in zip(s_grads, s_points):
                if s_v is None:
                    continue
                if isinstance(s_g.type, NullType):
                    raise MethodNotDefined(f"{self}.R_op: {s_g.type.why_null}")
                term = s_g * s_v
                total = term if total is None else total + term
            if total is None:
                total = scalar_constant(0, dtype=out_dtype)
            r = _cast_to(lift_scalar_graph(total, lifted), out_dtype)
            results.append(_broadcast_like(r, out))
        return results


# -- gradient helpers -----------------------------------------------------------------


class SumToShape(Op):
    """``SumToShape()(g, *lengths)``: `g` summed (keepdims) over the dimensions whose
    requested length is 1 and where `g` is longer: the gradient of numpy broadcasting,
    decided at run time.

    Elemwise broadcasts like numpy, also along dimensions whose static length is
    unknown, so a gradient computed at the output's shape must be brought back
    to the input's shape when the values arrive. The lengths (int 0-d tensors,
    usually ``shape_i`` of the input) only shape the result (`connection_pattern`);
    taking them rather than the input itself lets the input be overwritten in
    place before the gradient is reduced. The output may be `g` itself.
    """

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, g: Any, *lengths: Any) -> Apply:
        g = as_tensor_variable(g)
        lengths_v = [as_tensor_variable(n) for n in lengths]
        if len(lengths_v) != g.type.ndim or any(
            n.type.ndim != 0 or not n.type.dtype.is_int for n in lengths_v
        ):
            raise ValueError(
                f"SumToShape: {g} ({g.type}) needs {g.type.ndim} integer 0-d lengths, got "
                f"{[str(n.type) for n in lengths_v]}"
            )
        static = tuple(int(n.data) if isinstance(n, Constant) else None for n in lengths_v)
        return Apply(self, [g, *lengths_v], [TensorType(g.type.dtype, static)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        g, *lengths = inputs
        shape = tuple(int(n) for n in lengths)
        axes = tuple(d for d in range(g.ndim) if shape[d] == 1 and g.shape[d] != 1)
        out = g.sum(axis=axes, keepdims=True, dtype=g.dtype) if axes else g
        if out.shape != shape:
            raise ValueError(
                f"SumToShape: a gradient of shape {g.shape} cannot be summed to the input "
                f"shape {shape}"
            )
        output_storage[0][0] = out

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        static = node.outputs[0].type.shape
        return [tuple(s if s is not None else n for s, n in zip(static, node.inputs[1:]))]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True]] + [[False] for _ in node.inputs[1:]]

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        """The output gradient broadcast back to the shape of `g`; lengths disconnected."""
        from workbench.core.tensor.creation import alloc
        from workbench.core.tensor.shape import shape_tuple

        g, *lengths = inputs
        (gz,) = output_grads
        return [alloc(gz, *shape_tuple(g))] + [disconnected_type() for _ in lengths]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        v = eval_points[0]
        return [None if v is None else self(v, *inputs[1:])]


def sum_to_shape(g: Variable, x: Variable, others: Sequence[Variable]) -> Variable:
    """`g` (at the broadcast shape of `x` and `others`) brought to the shape of `x`.

    Dimensions where `x` has static length 1 are summed statically; a
    `SumToShape` handles those whose length is unknown while another operand
    may be longer (numpy broadcasting at run time).
    """
    axes = tuple(d for d in range(x.type.ndim)
                 if x.type.shape[d] == 1 and g.type.shape[d] != 1)
    if axes:
        from workbench.core.tensor.reduction import sum as sum_

        g = sum_(g, axis=axes, keepdims=True)
    if any(x.type.shape[d] is None and g.type.shape[d] != 1
           and any(o.type.shape[d] != 1 for o in others) for d in range(x.type.ndim)):
        from workbench.core.tensor.shape import shape_tuple

        g = SumToShape()(g, *shape_tuple(x))
    return g


def _cast_to(x: Variable, dtype: Any) -> Variable:
    from workbench.core.tensor.basic import cast

    return cast(x, dtype)


def lift_scalar_graph(var: Variable, lifted: dict[Variable, Variable]) -> Variable:
    """The tensor counterpart of the scalar Variable `var`: each scalar node becomes an
    Elemwise of the same scalar Op.

    `lifted` maps the scalar placeholders to their tensors and is extended with
    every variable lifted (so shared subexpressions are built once); scalar
    constants become 0-d tensor constants, which Elemwise broadcasts.
    """
    from workbench.core.tensor.variable import TensorConstant

    stack = [var]
    while stack:
        current = stack[-1]
        if current in lifted:
            stack.pop()
            continue
        node = current.owner
        if node is None:
            if not isinstance(current, Constant):
                raise ValueError(
                    f"the scalar gradient graph depends on {current} ({current.type}), which "
                    "is not one of the node's inputs, outputs or output gradients"
                )
            data = np.asarray(current.data)
            lifted[current] = TensorConstant(TensorType(as_dtype(data.dtype), ()), data)
            stack.pop()
            continue
        missing = [v for v in node.inputs if v not in lifted]
        if missing:
            stack.extend(missing)
            continue
        outs = Elemwise(node.op)(*[lifted[v] for v in node.inputs], return_list=True)
        lifted.update(zip(node.outputs, outs))
        stack.pop()
    return lifted[var]


def _broadcast_like(g: Variable, target: Variable) -> Variable:
    """`g` broadcast to the shape of `target` when its type says it may be smaller."""
    if g.type.ndim == target.type.ndim and all(
        gs != 1 or ts == 1 for gs, ts in zip(g.type.shape, target.type.shape)
    ):
        return g
    from workbench.core.tensor.creation import alloc
    from workbench.core.tensor.shape import shape_tuple

    return alloc(g, *shape_tuple(target))


def _fit_to_input(g: Variable, x: Variable, others: Sequence[Variable]) -> Variable:
    """A gradient computed at the output's shape brought to the type of input `x`.

    Sums over the dimensions `x` was broadcast along (`sum_to_shape`), fills a
    gradient that is smaller than `x` (a constant), casts to the gradient dtype.
    """
    if g.type.ndim == x.type.ndim:
        g = sum_to_shape(g, x, others)
    g = _broadcast_like(g, x)
    return _cast_to(g, grad_dtype(x.type.dtype))


def broadcast_length(lengths: list[Any]) -> Any:
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
