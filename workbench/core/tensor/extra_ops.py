"""Cumulative operations: `CumOp` behind ``cumsum`` and ``cumprod``.

``cumsum(x, axis)`` keeps the shape of `x`; with ``axis=None`` it runs over
the flattened input, as NumPy does. Dtypes follow NumPy 2: bool and integers
narrower than 64 bits accumulate in int64 (unsigned: uint64), floats keep theirs.
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
from workbench.core.tensor.reduction import (
    accumulate_dtype,
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

    # grad: cumsum -> reversed cumsum of the output gradient; cumprod via the
    # exclusive products (autodiff issue).


def _cumulative(mode: str, x: TensorLike, axis: int | None, dtype: Any) -> Variable:
    x = as_tensor_variable(x)
    return CumOp(normalize_single_axis(axis, x.type.ndim), mode, dtype)(x)


def cumsum(x: TensorLike, axis: int | None = None, dtype: Any = None) -> Variable:
    """Cumulative sum along `axis` (None: of the flattened input), as ``numpy.cumsum``."""
    return _cumulative("add", x, axis, dtype)


def cumprod(x: TensorLike, axis: int | None = None, dtype: Any = None) -> Variable:
    """Cumulative product along `axis` (None: of the flattened input), as ``numpy.cumprod``."""
    return _cumulative("mul", x, axis, dtype)
