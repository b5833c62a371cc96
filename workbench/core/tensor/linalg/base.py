"""What the Ops of `wt.linalg` share: a core signature, stacks of matrices, dtypes,
errors, and the small matrix helpers their gradients are written with.

Every decomposition and solver is a `LinalgOp` with a gufunc-style
`gufunc_signature` such as ``"(m,m),(m,n)->(m,n)"``: the core dimensions of each
input and output. Dimensions before the core ones are batch dimensions (a stack
of matrices); they broadcast between inputs like numpy's, and `make_node` and
`infer_shape` read the output shapes off the signature. A Blockwise wrapper can
use the same signature.

Dtypes: the Ops compute in float32 or float64 (LAPACK's s and d routines); the
functions of the namespace convert integer and boolean inputs to float64 and
mixed float inputs to the wider one, as numpy.linalg does. float16, bfloat16
and complex inputs are refused with a message saying what to do.

Failures (a singular matrix for `solve`/`inv`, a matrix that is not positive
definite for `cholesky`) raise `numpy.linalg.LinAlgError` naming the function,
on every linker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.tensor.blockwise import parse_gufunc_signature
from workbench.core.tensor.elemwise import broadcast_length, broadcast_static_shapes, dimshuffle
from workbench.core.tensor.type import TensorType, format_shape
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["LinAlgError", "LinalgOp", "as_float_operands", "linalg_error"]

#: The exception of failed factorisations, numpy's own (so `except np.linalg.LinAlgError` works).
LinAlgError = np.linalg.LinAlgError

#: The dtypes the Ops compute in.
COMPUTE_DTYPES = ("float32", "float64")


def linalg_error(function: str, message: str, batch_index: int | None = None) -> LinAlgError:
    """A LinAlgError whose message starts with the function's name (and says which matrix
    of a stack failed)."""
    where = f" (matrix {batch_index} of the stack)" if batch_index is not None else ""
    return LinAlgError(f"{function}: {message}{where}")


def min_length(m: Any, n: Any, symbolic: bool) -> Any:
    """``min(m, n)`` of two core lengths: an int, None (unknown) or, when `symbolic`, an
    int64 0-d Variable."""
    if isinstance(m, (int, np.integer)) and isinstance(n, (int, np.integer)):
        return int(min(m, n))
    if not symbolic:
        return 0 if 0 in (m, n) else None
    from workbench.core.tensor.math import minimum

    return minimum(m, n)


def _is_symbolic(var: Any) -> bool:
    return not isinstance(var, (int, np.integer))


class LinalgOp(Op):
    """Base of the linear-algebra Ops: inputs and outputs with core dimensions named by
    `gufunc_signature` and any number of leading batch dimensions.

    Subclasses set `gufunc_signature`, `function_name` (for messages) and
    `perform_core`/`perform`; `make_node` checks ranks, square matrices and matching
    core lengths, and builds the outputs (dtype: the inputs' common float dtype,
    or `output_dtypes` per output).
    """

    abstract = True
    gufunc_signature = ""
    function_name = ""
    #: per output, a dtype to force (None: the inputs' dtype)
    output_dtypes: tuple[str | None, ...] = ()

    @property
    def core_ndims(self) -> tuple[list[int], list[int]]:
        ins, outs = parse_gufunc_signature(self.gufunc_signature)
        return [len(c) for c in ins], [len(c) for c in outs]

    def check_inputs(self, inputs: Sequence[Variable]) -> None:
        """Ranks, dtypes and static core lengths against the signature."""
        ins, _ = parse_gufunc_signature(self.gufunc_signature)
        if len(inputs) != len(ins):
            raise TypeError(f"{self.function_name} takes {len(ins)} inputs, got {len(inputs)}")
        dtype = inputs[0].type.dtype
        known: dict[str, tuple[int, Variable]] = {}
        for position, (var, core) in enumerate(zip(inputs, ins)):
            what = var.name or f"input {position}"
            if var.type.ndim < len(core):
                raise ValueError(
                    f"{self.function_name}: {what} has {var.type.ndim} dimension(s) but needs at "
                    f"least {len(core)} (core dimensions {'(' + ','.join(core) + ')'})")
            if str(var.type.dtype) not in COMPUTE_DTYPES or var.type.dtype != dtype:
                raise TypeError(
                    f"{self}: all inputs must be float32 or float64 of one dtype, got {what} "
                    f"of type {var.type} (the functions of wt.linalg cast for you)")
            shape = var.type.shape[var.type.ndim - len(core):]
            for name, length in zip(core, shape):
                if length is None:
                    continue
                if name in known and known[name][0] != length and known[name][1] == what:
                    raise ValueError(f"{self.function_name}: last 2 dimensions of the array "
                                     f"must be square, got {what} of shape "
                                     f"{format_shape(var.type.shape)}")
                if name in known and known[name][0] != length:
                    raise ValueError(
                        f"{self.function_name}: core dimension {name!r} is {known[name][0]} in "
                        f"{known[name][1]} but {length} in {what} (shape "
                        f"{format_shape(var.type.shape)}); signature {self.gufunc_signature}")
                known.setdefault(name, (length, what))

    def make_node(self, *inputs: Any) -> Apply:
        inputs = [as_tensor_variable(v) for v in inputs]
        self.check_inputs(inputs)
        ins, outs = parse_gufunc_signature(self.gufunc_signature)
        batches = [v.type.shape[:v.type.ndim - len(c)] for v, c in zip(inputs, ins)]
        nb = max(len(b) for b in batches)
        batch = broadcast_static_shapes([(1,) * (nb - len(b)) + b for b in batches])
        if batch is None:
            raise ValueError(f"{self.function_name}: the batch dimensions "
                             f"{', '.join(format_shape(b) for b in batches)} cannot be broadcast "
                             "together")
        lengths: dict[str, int | None] = {}
        for var, core in zip(inputs, ins):
            for name, length in zip(core, var.type.shape[var.type.ndim - len(core):]):
                if lengths.get(name) is None:
                    lengths[name] = length
        lengths.update(self.derived_lengths(lengths, symbolic=False))
        dtype = inputs[0].type.dtype
        outputs = []
        for k, core in enumerate(outs):
            forced = self.output_dtypes[k] if k < len(self.output_dtypes) else None
            shape = batch + tuple(lengths.get(name) for name in core)
            outputs.append(TensorType(forced or dtype, shape)())
        return Apply(self, inputs, outputs)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        ins, outs = parse_gufunc_signature(self.gufunc_signature)
        nb = node.outputs[0].type.ndim - len(outs[0])
        batch: list[Any] = []
        for d in range(nb):
            static = node.outputs[0].type.shape[d]
            if static is not None:
                batch.append(static)
                continue
            candidates = []
            for var, shape, core in zip(node.inputs, input_shapes, ins):
                offset = nb - (var.type.ndim - len(core))
                if d >= offset and var.type.shape[d - offset] != 1:
                    candidates.append(shape[d - offset])
            batch.append(broadcast_length(candidates) if candidates else 1)
        lengths: dict[str, Any] = {}
        for shape, core in zip(input_shapes, ins):
            for name, length in zip(core, shape[len(shape) - len(core):]):
                if name not in lengths or (_is_symbolic(lengths[name])
                                           and not _is_symbolic(length)):
                    lengths[name] = length
        lengths.update(self.derived_lengths(lengths, symbolic=True))
        result = []
        for out, core in zip(node.outputs, outs):
            static_core = out.type.shape[nb:]
            result.append(tuple(batch) + tuple(
                s if s is not None else lengths[name] for s, name in zip(static_core, core)))
        return result

    def derived_lengths(self, lengths: dict[str, Any], symbolic: bool) -> dict[str, Any]:
        """Core lengths of the outputs that no input names (e.g. ``k = min(m, n)`` of an
        SVD), from the known ones: static ints or None when `symbolic` is False,
        ints or int64 0-d Variables when True."""
        return {}

    #: props not shown by pprint (implied by the inputs' ranks)
    pprint_hidden: tuple[str, ...] = ("b_ndim",)

    def pprint_text(self, args: Sequence[str]) -> str:
        """How pprint writes the node: the function's name, its arguments and the props
        that differ from the function's defaults (``solve(A, b, assume_a='pos')``)."""
        import inspect

        defaults = {name: param.default for name, param in
                    inspect.signature(type(self).__init__).parameters.items()
                    if param.default is not inspect.Parameter.empty}
        shown = [f"{name}={getattr(self, name)!r}" for name in self.__props__
                 if name not in self.pprint_hidden and name in defaults
                 and getattr(self, name) != defaults[name]]
        return f"{self.function_name}({', '.join([*args, *shown])})"

    def batch_shape(self, inputs: Sequence[np.ndarray]) -> tuple[int, ...]:
        """The broadcast batch shape of input values (numpy's error when they do not)."""
        ins, _ = parse_gufunc_signature(self.gufunc_signature)
        try:
            return np.broadcast_shapes(*(v.shape[:v.ndim - len(c)] for v, c in zip(inputs, ins)))
        except ValueError as exc:
            raise ValueError(f"{self.function_name}: {exc}") from None


# -- conversion of user inputs ---------------------------------------------------------


def as_float_operands(function: str, *values: Any, min_ndims: Sequence[int] = ()
                      ) -> list[Variable]:
    """The inputs of a linalg function as tensors of one compute dtype (float32 or
    float64): integers and booleans become float64, mixed floats the wider one.
    Refuses float16/bfloat16/complex (no LAPACK routine computes in them here) and
    too few dimensions."""
    from workbench.core.tensor.basic import cast

    tensors = [as_tensor_variable(v) for v in values]
    for position, var in enumerate(tensors):
        d = var.type.dtype
        what = var.name or f"input {position}"
        if d.is_complex or d in (dtypes.float16, dtypes.bfloat16):
            raise TypeError(f"{function}: {what} has dtype {d}; wt.linalg computes in float32 "
                            "or float64 (complex matrices are not supported yet): cast it first")
        need = min_ndims[position] if position < len(min_ndims) else 0
        if var.type.ndim < need:
            raise ValueError(f"{function}: {what} has {var.type.ndim} dimension(s), needs at "
                             f"least {need} (got type {var.type})")
    all_float32 = all(v.type.dtype == dtypes.float32 for v in tensors)
    dtype = dtypes.float32 if all_float32 else dtypes.float64
    return [v if v.type.dtype == dtype else cast(v, dtype) for v in tensors]


# -- matrix helpers for the gradients ----------------------------------------------------


def transpose(x: Variable) -> Variable:
    """`x` with its last two dimensions swapped (numpy's ``x.mT``)."""
    nd = x.type.ndim
    return dimshuffle(x, (*range(nd - 2), nd - 1, nd - 2))


def add_axis(x: Variable, position: int) -> Variable:
    """`x` with a length-1 dimension inserted at `position` (negative counts from the end)."""
    nd = x.type.ndim
    position = position if position >= 0 else nd + 1 + position
    order: list[Any] = list(range(nd))
    order.insert(position, "x")
    return dimshuffle(x, order)


def drop_axis(x: Variable, position: int) -> Variable:
    """`x` without its length-1 dimension at `position` (negative counts from the end)."""
    nd = x.type.ndim
    position = position if position >= 0 else nd + position
    return dimshuffle(x, [d for d in range(nd) if d != position])


def _triangle_mask(x: Variable, lower: bool, strict: bool = False) -> Variable:
    """A boolean (n, m) mask of the lower (or upper) triangle of `x`'s core matrices."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.creation import arange
    from workbench.core.tensor.shape import shape_tuple

    n, m = shape_tuple(x)[-2:]
    rows = dimshuffle(arange(n), (0, "x"))
    cols = dimshuffle(arange(m), ("x", 0))
    if lower:
        return tm.gt(rows, cols) if strict else tm.ge(rows, cols)
    return tm.lt(rows, cols) if strict else tm.le(rows, cols)


def triangle(x: Variable, lower: bool, strict: bool = False) -> Variable:
    """The lower (or upper) triangle of each core matrix of `x`, zeros elsewhere
    (numpy.tril / triu with k = 0, or k = -1 / 1 when `strict`)."""
    from workbench.core.tensor import math as tm

    return tm.switch(_triangle_mask(x, lower, strict), x, 0)


def diagonal_part(x: Variable) -> Variable:
    """Each core matrix of `x` with everything off its diagonal zeroed."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.creation import arange
    from workbench.core.tensor.shape import shape_tuple

    n = shape_tuple(x)[-1]
    idx = arange(n)
    mask = tm.eq(dimshuffle(idx, (0, "x")), dimshuffle(idx, ("x", 0)))
    return tm.switch(mask, x, 0)


def symmetric_from_triangle_grad(g: Variable, lower: bool) -> Variable:
    """The gradient with respect to the stored triangle of a symmetric matrix whose other
    triangle is implied: ``g_ij + g_ji`` below (above) the diagonal, ``g_ii`` on it, 0 in
    the triangle that is not read."""
    from workbench.core.tensor import math as tm

    return tm.sub(triangle(tm.add(g, transpose(g)), lower), diagonal_part(g))


def eye_like(w: Variable) -> Variable:
    """The identity matrix of w's dtype, as long as w's last dimension."""
    from workbench.core.tensor.creation import eye
    from workbench.core.tensor.shape import shape_tuple

    return eye(shape_tuple(w)[-1], dtype=w.type.dtype)


def batched_outer(u: Variable, v: Variable) -> Variable:
    """``u[..., :, None] * v[..., None, :]``."""
    from workbench.core.tensor import math as tm

    return tm.mul(add_axis(u, -1), add_axis(v, -2))


def sum_to_input(g: Variable, x: Variable, core: int) -> Variable:
    """`g`, computed at the broadcast batch shape, summed back to the batch shape of `x`
    (whose last `core` dimensions are its core dimensions)."""
    from workbench.core.tensor.reduction import sum as reduce_sum

    lead = g.type.ndim - x.type.ndim
    if lead > 0:
        g = reduce_sum(g, tuple(range(lead)))
    axes = tuple(d for d in range(x.type.ndim - core)
                 if x.type.shape[d] == 1 and g.type.shape[d] != 1)
    if axes:
        g = reduce_sum(g, axes, keepdims=True)
    if any(x.type.shape[d] is None for d in range(x.type.ndim - core)):
        from workbench.core.tensor.elemwise import sum_to_shape

        g = sum_to_shape(g, x, [g])  # a batch length 1 only known at run time
    return g
