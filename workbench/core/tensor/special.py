"""Softmax family: `Softmax`, `LogSoftmax` and `LogSumExp`, each one numerically stable Op.

They are single Ops on purpose: stabilising rewrites turn the naive
``log(sum(exp(x)))`` into `LogSumExp`, and backends emit one fused kernel per
row for them. Each subtracts the maximum along the axis before exponentiating,
so ``logsumexp([1000, 1000])`` is ``1000 + log 2``, not ``inf``. Non-finite
values follow ``scipy.special``: a row of only ``-inf`` has logsumexp ``-inf``,
a ``+inf`` entry gives ``+inf``, NaN propagates. Integer and bool inputs give
the default float dtype; float16 and bfloat16 are computed in float32.

Gradients read the node's output: softmax ``y * (g - sum(g * y))``, log-softmax
``g - exp(y) * sum(g)``, logsumexp ``g * exp(x - out)`` (the softmax over the
reduced axes, so it never overflows); each also has a cheap `R_op`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.exceptions import AxisError

from workbench.core.dtypes import Dtype, default_float_dtype
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.tensor.reduction import (
    as_grad_of,
    canonical_axes,
    keep_reduced_dims,
    normalize_axis,
    normalize_single_axis,
    op_axis,
    reduced_shape,
)
from workbench.core.tensor.reduction import (
    sum as reduce_sum,
)
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["Softmax", "LogSoftmax", "LogSumExp", "softmax", "log_softmax", "logsumexp"]

TensorLike = Any  # a tensor Variable, a number, a (nested) list or a numpy array
_LOW_PRECISION = (np.dtype(np.float16), np.dtype("bfloat16"))


def _float_type_of(op: Op, x: Variable) -> Dtype:
    """The output dtype: floats keep theirs, bool and ints give the default float."""
    dtype = x.type.dtype
    if dtype.is_complex:
        raise TypeError(f"{op} is defined for real inputs, got {x} of dtype {dtype}")
    return dtype if dtype.is_float else default_float_dtype()


def _working_array(x: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    """`x` in the dtype the kernel computes in (float32 for float16/bfloat16)."""
    work = np.dtype(np.float32) if out_dtype in _LOW_PRECISION else out_dtype
    return np.asarray(x, dtype=work)


def _stable_shift(x: np.ndarray, axis: int | tuple[int, ...] | None) -> np.ndarray:
    """The max along `axis` (kept dims), with non-finite maxima replaced by 0 as scipy does.

    Empty axes give 0 instead of an error, so empty rows reduce to log(0) = -inf.
    """
    shift = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    return np.where(np.isfinite(shift), shift, 0).astype(x.dtype, copy=False)


class _AxisOp(Op):
    """Shared parts of Softmax and LogSoftmax: one axis (None = all elements), same shape."""

    abstract = True
    __props__ = ("axis",)

    def __init__(self, axis: int | None = -1) -> None:
        if axis is not None:
            if isinstance(axis, (bool, np.bool_)) or int(axis) < 0:
                raise ValueError(
                    f"{type(self).__name__} axis must be None or a non-negative int, got "
                    f"{axis!r} (the functions softmax/log_softmax accept negative axes)"
                )
            axis = int(axis)
        self.axis = axis

    def __str__(self) -> str:
        return f"{type(self).__name__}{{axis={self.axis}}}"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        out_dtype = _float_type_of(self, x)
        if self.axis is not None and self.axis >= x.type.ndim:
            raise AxisError(self.axis, x.type.ndim)
        return Apply(self, [x], [TensorType(out_dtype, x.type.shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        out_dtype = node.outputs[0].type.dtype.numpy
        x = _working_array(inputs[0], out_dtype)
        if x.size == 0:
            result = np.empty(x.shape, dtype=out_dtype)
        else:
            with np.errstate(all="ignore"):
                result = self.kernel(x)
        output_storage[0][0] = np.asarray(result, dtype=out_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _sum(self, v: Variable) -> Variable:
        """The sum of `v` along the Op's axis (None: all), with kept dims."""
        return reduce_sum(v, self.axis, keepdims=True)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """About five operations per element: max, subtract, exp, sum, divide (or subtract)."""
        return 5.0 * math.prod(inputs[0])


class Softmax(_AxisOp):
    """``exp(x) / sum(exp(x))`` along `axis`, computed as ``exp(x - max)`` normalised.

    Rows containing ``+inf`` or made only of ``-inf`` give NaN, as scipy's softmax.
    """

    abstract = False
    __props__ = ("axis",)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        e = np.exp(x - np.max(x, axis=self.axis, keepdims=True))
        e /= np.sum(e, axis=self.axis, keepdims=True)
        return e

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``y * (gy - sum(gy * y, axis))`` with y the softmax (kept dims)."""
        from workbench.core.tensor.math import mul, sub

        (x,), (y,), (gy,) = inputs, outputs, output_grads
        gx = mul(y, sub(gy, self._sum(mul(gy, y))))
        return [as_grad_of(gx, x)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``y * (v - sum(v * y, axis))``: the Jacobian of softmax is symmetric."""
        from workbench.core.tensor.math import mul, sub

        (v,) = eval_points
        if v is None:
            return [None]
        y = self(inputs[0])
        return [mul(y, sub(v, self._sum(mul(v, y))))]


class LogSoftmax(_AxisOp):
    """``x - logsumexp(x)`` along `axis`, without overflow (scipy's log_softmax)."""

    abstract = False
    __props__ = ("axis",)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        shifted = x - _stable_shift(x, self.axis)
        return shifted - np.log(np.sum(np.exp(shifted), axis=self.axis, keepdims=True))

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``gy - exp(y) * sum(gy, axis)`` with y the log-softmax (exp(y) the softmax)."""
        from workbench.core.tensor.math import exp, mul, sub

        (x,), (y,), (gy,) = inputs, outputs, output_grads
        return [as_grad_of(sub(gy, mul(exp(y), self._sum(gy))), x)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``v - sum(softmax(x) * v, axis)``."""
        from workbench.core.tensor.math import exp, mul, sub

        (v,) = eval_points
        if v is None:
            return [None]
        return [sub(v, self._sum(mul(exp(self(inputs[0])), v)))]


class LogSumExp(Op):
    """``log(sum(exp(x)))`` over `axis` (sorted non-negative ints, None = all), stably.

    `keepdims` keeps the reduced dimensions with length 1. An empty axis gives
    ``-inf`` (the log of an empty sum). Prints as ``LogSumExp{axes=(1,)}``.
    """

    __props__ = ("axis", "keepdims")

    def __init__(self, axis: Any = None, keepdims: bool = False) -> None:
        self.axis = op_axis(axis)
        self.keepdims = bool(keepdims)

    def __str__(self) -> str:
        keep = ", keepdims=True" if self.keepdims else ""
        return f"LogSumExp{{axes={self.axis}{keep}}}"

    def _axes(self, ndim: int) -> tuple[int, ...]:
        if self.axis is None:
            return tuple(range(ndim))
        for a in self.axis:
            if a >= ndim:
                raise AxisError(a, ndim)
        return self.axis

    def _out_shape(self, shape: Sequence[Any]) -> tuple[Any, ...]:
        axes = self._axes(len(shape))
        if self.keepdims:
            return tuple(1 if i in axes else s for i, s in enumerate(shape))
        return reduced_shape(shape, axes)

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        out_dtype = _float_type_of(self, x)
        return Apply(self, [x], [TensorType(out_dtype, self._out_shape(x.type.shape))()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        out_dtype = node.outputs[0].type.dtype.numpy
        x = _working_array(inputs[0], out_dtype)
        with np.errstate(all="ignore"):
            shift = _stable_shift(x, self.axis)
            result = np.log(np.sum(np.exp(x - shift), axis=self.axis, keepdims=True)) + shift
        result = result.reshape(self._out_shape(x.shape))
        output_storage[0][0] = np.asarray(result, dtype=out_dtype)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [self._out_shape(input_shapes[0])]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """About four operations per element: max, subtract, exp, sum."""
        return 4.0 * math.prod(inputs[0])

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``gz * exp(x - out)``: the output gradient (reduced dims put back) times the
        softmax of `x` over the reduced axes, read from the output itself."""
        from workbench.core.tensor.math import exp, mul, sub

        (x,), (out,), (gz,) = inputs, outputs, output_grads
        ndim = x.type.ndim
        axes = self._axes(ndim)
        if not self.keepdims:
            out, gz = keep_reduced_dims(out, ndim, axes), keep_reduced_dims(gz, ndim, axes)
        gx = mul(gz, exp(sub(x, out)))
        return [as_grad_of(gx, x)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``sum(softmax(x) * v)`` over the reduced axes."""
        from workbench.core.tensor.math import exp, mul, sub

        (v,) = eval_points
        if v is None:
            return [None]
        x = inputs[0]
        ndim = x.type.ndim
        axes = self._axes(ndim)
        out = self(x)
        if not self.keepdims:
            out = keep_reduced_dims(out, ndim, axes)
        return [reduce_sum(mul(exp(sub(x, out)), v), axes, keepdims=self.keepdims)]


def _single_axis_op(op_class: type[_AxisOp], x: TensorLike, axis: int | None) -> Variable:
    x = as_tensor_variable(x)
    if axis is None:
        return op_class(None)(x)
    return op_class(normalize_single_axis(axis, x.type.ndim))(x)


def softmax(x: TensorLike, axis: int | None = -1) -> Variable:
    """Softmax along `axis` (default the last; None: over all elements), as scipy's.

    Stable for large inputs: ``softmax([1000, 0])`` is ``[1, 0]``.
    """
    return _single_axis_op(Softmax, x, axis)


def log_softmax(x: TensorLike, axis: int | None = -1) -> Variable:
    """Log of the softmax along `axis`, computed without overflow or log(0)."""
    return _single_axis_op(LogSoftmax, x, axis)


def logsumexp(x: TensorLike, axis: Any = None, keepdims: bool = False) -> Variable:
    """``log(sum(exp(x), axis))`` computed stably, as ``scipy.special.logsumexp``.

    `axis` is None (all), an int or a tuple; negative axes count from the end.
    """
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.type.ndim)
    return LogSumExp(canonical_axes(axes, x.type.ndim), keepdims)(x)
