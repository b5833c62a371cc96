"""Cumulative operations: `CumOp` behind ``cumsum`` and ``cumprod``.

``cumsum(x, axis)`` keeps the shape of `x`; with ``axis=None`` it runs over
the flattened input, as NumPy does. Dtypes follow NumPy 2: bool and integers
narrower than 64 bits accumulate in int64 (unsigned: uint64), floats keep theirs.

Gradients: cumsum's is the reversed cumulative sum of the output gradient;
cumprod's is exact even with zeros in the input (see `_cumprod_grad`); integer
outputs give zeros. cumsum has an `R_op` (it is linear).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.exceptions import AxisError

from workbench.core.dtypes import as_dtype
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.tensor.join import float_zeros_like
from workbench.core.tensor.reduction import (
    accumulate_dtype,
    as_grad_of,
    conj_if_complex,
    is_int_like,
    lengths_product,
    normalize_single_axis,
)
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["CumOp", "cumsum", "cumprod"]

TensorLike = Any  # a tensor Variable, a number, a (nested) list or a numpy array

_MODES = {"add": np.cumsum, "mul": np.cumprod}


class CumOp(Op):
    """Cumulative sum (`mode` "add") or product ("mul") along `axis` (None: flattened).

    `dtype` is the output (and accumulation) dtype; None follows NumPy 2's
    rule (see the module). Prints as ``CumOp{add, axis=1}``.
    """

    __props__ = ("axis", "mode", "dtype")

    def __init__(self, axis: int | None = None, mode: str = "add", dtype: Any = None) -> None:
        if mode not in _MODES:
            raise ValueError(f"CumOp mode must be 'add' or 'mul', got {mode!r}")
        if axis is not None:
            if isinstance(axis, (bool, np.bool_)) or int(axis) < 0:
                raise ValueError(
                    f"CumOp axis must be None or a non-negative int, got {axis!r} (the "
                    "functions cumsum/cumprod accept negative axes)"
                )
            axis = int(axis)
        self.axis = axis
        self.mode = mode
        self.dtype = None if dtype is None else as_dtype(dtype)

    def __str__(self) -> str:
        dtype = "" if self.dtype is None else f", dtype={self.dtype}"
        return f"CumOp{{{self.mode}, axis={self.axis}{dtype}}}"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if self.axis is None:
            static = x.type.shape
            shape: tuple[int | None, ...] = (
                (math.prod(static),) if None not in static else (None,)  # type: ignore[arg-type]
            )
        else:
            if self.axis >= x.type.ndim:
                raise AxisError(self.axis, x.type.ndim)
            shape = x.type.shape
        dtype = self.dtype if self.dtype is not None else accumulate_dtype(x.type.dtype)
        return Apply(self, [x], [TensorType(dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        out_dtype = node.outputs[0].type.dtype.numpy
        with np.errstate(over="ignore", invalid="ignore"):
            result = _MODES[self.mode](inputs[0], axis=self.axis, dtype=out_dtype)
        output_storage[0][0] = np.asarray(result, dtype=out_dtype)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        if self.axis is None:
            return [(lengths_product(input_shapes[0]),)]
        return [input_shapes[0]]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """One operation per input element."""
        return float(math.prod(inputs[0]))

    # -- differentiation ------------------------------------------------------------
    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """cumsum: the reversed cumulative sum of the output gradient; cumprod: see
        `_cumprod_grad` (exact with zeros). With ``axis=None`` the computation runs on
        the flattened input and is reshaped back; integer outputs give zeros."""
        (x,), (out,), (gz,) = inputs, outputs, output_grads
        if is_int_like(out):
            return [float_zeros_like(x)]
        if self.axis is None:
            from workbench.core.tensor.reshape import flatten, reshape
            from workbench.core.tensor.shape import shape_tuple

            flat = flatten(x, 1) if x.type.ndim != 1 else x
            g = _cum_grad(self.mode, flat, out, gz, 0)
            if x.type.ndim != 1:
                g = reshape(g, shape_tuple(x))
        else:
            g = _cum_grad(self.mode, x, out, gz, self.axis)
        return [as_grad_of(g, x)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """cumsum is linear: the cumsum of the evaluation point. cumprod uses the
        double-L_op construction of `Rop` (MethodNotDefined here)."""
        if eval_points[0] is None:
            return [None]
        if self.mode == "add":
            return [self(eval_points[0])]
        raise MethodNotDefined(f"{self} has no R_op; Rop falls back to two L_ops")


def _reverse(v: Variable, axis: int) -> Variable:
    """`v` reversed along `axis` (a step -1 slice)."""
    key = (slice(None),) * axis + (slice(None, None, -1),)
    return v[key]


def _reverse_cumsum(v: Variable, axis: int) -> Variable:
    """``sum(v[j] for j >= i)`` along `axis`: the transpose of a cumulative sum."""
    return _reverse(CumOp(axis, "add")(_reverse(v, axis)), axis)


def _cum_grad(mode: str, x: Variable, out: Variable, gz: Variable, axis: int) -> Variable:
    if mode == "add":
        return _reverse_cumsum(gz, axis)
    return _cumprod_grad(x, out, gz, axis)


def _cumprod_grad(x: Variable, out: Variable, gz: Variable, axis: int) -> Variable:
    """Gradient of ``out = cumprod(x)`` along `axis`, exact when `x` has zeros.

    ``gx[i] = sum_{j >= i} gz[j] * prod_{k <= j, k != i} x[k]``. Let z be the
    position of the first zero along the axis. Before it, ``gx[i] =
    reverse_cumsum(gz * out)[i] / x[i]`` (PyTensor's formula, valid as x[i] != 0);
    at z it is ``reverse_cumsum(gz * cumprod(x with x[z] := 1))[z]``; after z,
    every product contains x[z] = 0, so 0. The positions come from a cumulative
    count of zeros, so the graph has no data-dependent branch. Second order is
    exact away from zeros (at an exact zero the switches miss cross terms, as for
    `prod`).
    """
    from workbench.core.tensor.math import and_, eq, mul, switch, true_div

    is_zero = eq(x, 0)
    zeros_so_far = CumOp(axis, "add", "int64")(is_zero)
    first_zero = and_(is_zero, eq(zeros_so_far, 1))
    regular = true_div(_reverse_cumsum(mul(gz, conj_if_complex(out)), axis),
                       conj_if_complex(switch(is_zero, 1, x)))
    without_first_zero = CumOp(axis, "mul", out.type.dtype)(switch(first_zero, 1, x))
    at_first_zero = _reverse_cumsum(mul(gz, conj_if_complex(without_first_zero)), axis)
    return switch(eq(zeros_so_far, 0), regular, switch(first_zero, at_first_zero, 0))


def _cumulative(mode: str, x: TensorLike, axis: int | None, dtype: Any) -> Variable:
    x = as_tensor_variable(x)
    return CumOp(normalize_single_axis(axis, x.type.ndim), mode, dtype)(x)


def cumsum(x: TensorLike, axis: int | None = None, dtype: Any = None) -> Variable:
    """Cumulative sum along `axis` (None: of the flattened input), as ``numpy.cumsum``."""
    return _cumulative("add", x, axis, dtype)


def cumprod(x: TensorLike, axis: int | None = None, dtype: Any = None) -> Variable:
    """Cumulative product along `axis` (None: of the flattened input), as ``numpy.cumprod``."""
    return _cumulative("mul", x, axis, dtype)
