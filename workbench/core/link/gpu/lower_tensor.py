"""Lowerings of reductions, dot/gemm/gemv, softmax family, cumulative ops, creation,
shape and reshape Ops, join/split/repeat.

Each kernel converts its inputs to the dtype workbench computes in (as the
Op's `perform` does) and returns outputs in exactly the node's output dtypes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Apply, Constant
from workbench.core.ifelse import IfElse
from workbench.core.link.gpu.host_shapes import shape_ints
from workbench.core.link.gpu.lower_elemwise import astype
from workbench.core.link.gpu.registry import Kernel, LowerContext, register_lowering
from workbench.core.scalar import math as sm
from workbench.core.tensor.blas import Gemm, Gemv
from workbench.core.tensor.creation import NEGATIVE_DIMENSIONS, Alloc, ARange, Eye
from workbench.core.tensor.extra_ops import CumOp
from workbench.core.tensor.grad_control import IdentityGradOp
from workbench.core.tensor.join import Join, Repeat, Split
from workbench.core.tensor.linalg import Dot, MatMul
from workbench.core.tensor.reduction import All, Argmax, ArgReduce, CAReduce
from workbench.core.tensor.reduction import Any as AnyOp
from workbench.core.tensor.reshape import BroadcastTo, Reshape
from workbench.core.tensor.shape import (
    CHECK_ERRORS,
    CheckAndRaise,
    Shape,
    Shape_i,
    SpecifyShape,
)
from workbench.core.tensor.special import LogSoftmax, LogSumExp, Softmax
from workbench.core.tensor.transfer import Transfer

_LOW = (dtypes.float16, dtypes.bfloat16)


def _out_dtype(node: Apply, k: int = 0) -> dtypes.Dtype:
    return node.outputs[k].type.dtype


# -- reductions -----------------------------------------------------------------------------


@register_lowering(CAReduce)
def lower_careduce(node: Apply, ctx: LowerContext) -> Kernel | None:
    op = node.op
    torch = ctx.torch
    out = _out_dtype(node)
    acc = op.acc_dtype if op.acc_dtype is not None else out
    axis = op.axis
    scalar = op.scalar_op
    to_bool = isinstance(op, (All, AnyOp))
    if isinstance(scalar, (sm.AND, sm.OR)) and not (to_bool or acc.is_bool):
        return None  # bitwise reductions of integers: no torch kernel
    if isinstance(scalar, sm.Add):
        def reduce(x: Any, dims: tuple[int, ...]) -> Any:
            return torch.sum(x, dim=dims)
    elif isinstance(scalar, sm.Mul):
        def reduce(x: Any, dims: tuple[int, ...]) -> Any:
            for d in sorted(dims, reverse=True):
                x = torch.prod(x, dim=d)
            return x
    elif isinstance(scalar, (sm.Maximum, sm.Minimum)):
        if acc.is_complex:
            return None  # torch does not order complex numbers
        is_max = isinstance(scalar, sm.Maximum)
        fn = torch.amax if is_max else torch.amin
        initial = op.initial

        def reduce(x: Any, dims: tuple[int, ...]) -> Any:
            if any(x.shape[d] == 0 for d in dims):
                if initial is not None:  # numpy's `initial`: the value of an empty fold
                    kept = [n for d, n in enumerate(x.shape) if d not in dims]
                    return torch.full(kept, initial, dtype=x.dtype, device=x.device)
                raise ValueError(f"{op}: zero-size array to reduction operation which has "
                                 "no identity")
            result = fn(x, dim=dims)
            if initial is None:
                return result
            # fmax/fmin would drop a NaN of x; where() keeps it (x's NaN propagates)
            bound = torch.tensor(initial, dtype=result.dtype, device=result.device)
            past = (result < bound if is_max else result > bound) | torch.isnan(bound)
            return torch.where(past, bound, result)
    elif isinstance(scalar, (sm.AND, sm.OR)):
        fn = torch.all if isinstance(scalar, sm.AND) else torch.any

        def reduce(x: Any, dims: tuple[int, ...]) -> Any:
            for d in sorted(dims, reverse=True):
                x = fn(x, dim=d)
            return x
    else:
        return None

    def kernel(x: Any) -> list[Any]:
        if to_bool:
            x = x != 0 if x.dtype != torch.bool else x
        x = astype(x, acc)
        dims = tuple(range(x.dim())) if axis is None else tuple(axis)
        result = reduce(x, dims) if dims else x.clone()
        return [astype(result, out)]

    return kernel


@register_lowering(ArgReduce)
def lower_argreduce(node: Apply, ctx: LowerContext) -> Kernel | None:
    torch = ctx.torch
    if node.inputs[0].type.dtype.is_complex:
        return None
    fn = torch.argmax if isinstance(node.op, Argmax) else torch.argmin
    axis = node.op.axis

    def kernel(x: Any) -> list[Any]:
        if x.dtype == torch.bool:
            x = x.to(torch.uint8)
        if axis is None:
            x = x.reshape(-1)
        if x.numel() == 0:
            raise ValueError(f"{node.op}: attempt to get argmax/argmin of an empty sequence")
        return [fn(x, dim=0 if axis is None else axis).to(torch.int64)]

    return kernel


# -- products --------------------------------------------------------------------------------


def _dot(ctx: LowerContext, x: Any, y: Any, dtype: dtypes.Dtype) -> Any:
    """numpy.dot in `dtype` (bool: any of the products; integers exact)."""
    torch = ctx.torch
    work = dtypes.int64 if dtype.is_bool else dtype
    if work in _LOW and ctx.device.type == "cpu":
        work = dtypes.float32
    if work.is_int and ctx.device.type != "cpu":
        work = dtypes.float64  # CUDA has no integer GEMM; exact below 2**53
    x, y = astype(x, work), astype(y, work)
    if x.dim() == 0 or y.dim() == 0:
        result = x * y
    elif x.dim() <= 2 and y.dim() <= 2:  # BLAS reads transposed views without copying
        result = torch.matmul(x, y)
    else:
        result = torch.tensordot(x, y, dims=([x.dim() - 1], [max(y.dim() - 2, 0)]))
    if dtype.is_bool:
        return result != 0
    if work.is_float and dtype.is_int:
        result = torch.round(result)
    return astype(result, dtype)


@register_lowering(Dot)
def lower_dot(node: Apply, ctx: LowerContext) -> Kernel:
    dtype = _out_dtype(node)
    return lambda x, y: [_dot(ctx, x, y, dtype)]


@register_lowering(MatMul)
def lower_matmul(node: Apply, ctx: LowerContext) -> Kernel:
    dtype = _out_dtype(node)
    torch = ctx.torch

    def kernel(x: Any, y: Any) -> list[Any]:
        work = dtypes.int64 if dtype.is_bool else dtype
        if work in _LOW and ctx.device.type == "cpu":
            work = dtypes.float32
        result = torch.matmul(astype(x, work), astype(y, work))
        return [result != 0 if dtype.is_bool else astype(result, dtype)]

    return kernel


@register_lowering(Gemm, Gemv)
def lower_blas(node: Apply, ctx: LowerContext) -> Kernel:
    dtype = _out_dtype(node)
    op = node.op
    # constant coefficients are read here, once: the kernel then reads nothing back from
    # the device (a Gemv in a loop's body would otherwise wait for it at every step)
    fixed_alpha, fixed_beta = (np.asarray(v.data).item() if isinstance(v, Constant) else None
                               for v in (node.inputs[1], node.inputs[4]))

    def kernel(z: Any, alpha: Any, x: Any, y: Any, beta: Any) -> list[Any]:
        result = _dot(ctx, x, y, dtype)
        a = astype(alpha, dtype) if fixed_alpha is None else fixed_alpha
        b = astype(beta, dtype) if fixed_beta is None else fixed_beta
        if bool(a != 1):
            result = result * a
        if bool(b != 0):
            result = astype(result + (z if bool(b == 1) else b * astype(z, dtype)), dtype)
        if op.inplace and tuple(z.shape) != tuple(result.shape):
            raise ValueError(f"{op}: cannot write a result of shape {tuple(result.shape)} "
                             f"into the accumulated operand of shape {tuple(z.shape)}")
        return [result]

    return kernel


# -- softmax family ------------------------------------------------------------------------


def _working(x: Any, out: dtypes.Dtype) -> Any:
    return astype(x, dtypes.float32 if out in _LOW else out)


def _stable_shift(torch: Any, x: Any, dims: tuple[int, ...]) -> Any:
    """The max over `dims` (kept), non-finite maxima (and empty axes) replaced by 0."""
    if x.numel() == 0:
        shape = [1 if d in dims else n for d, n in enumerate(x.shape)]
        return torch.zeros(shape, dtype=x.dtype, device=x.device)
    shift = torch.amax(x, dim=dims, keepdim=True)
    return torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))


@register_lowering(Softmax, LogSoftmax)
def lower_softmax(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch
    out = _out_dtype(node)
    axis, log = node.op.axis, isinstance(node.op, LogSoftmax)

    def kernel(x: Any) -> list[Any]:
        w = _working(x, out)
        if w.numel() == 0:
            return [astype(w.clone(), out)]
        dims = tuple(range(w.dim())) if axis is None else (axis,)
        if log:
            shifted = w - _stable_shift(torch, w, dims)
            result = shifted - torch.log(torch.sum(torch.exp(shifted), dim=dims, keepdim=True))
        elif axis is None:
            result = torch.softmax(w.reshape(-1), dim=0).reshape(w.shape)
        else:  # torch's kernel gives scipy's NaN rows (+inf, or only -inf) as well
            result = torch.softmax(w, dim=axis)
        return [astype(result, out)]

    return kernel


@register_lowering(LogSumExp)
def lower_logsumexp(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch
    op, out = node.op, _out_dtype(node)

    def kernel(x: Any) -> list[Any]:
        w = _working(x, out)
        dims = op._axes(w.dim())
        shift = _stable_shift(torch, w, dims)
        if dims:
            total = torch.sum(torch.exp(w - shift), dim=dims, keepdim=True)
        else:
            total = torch.exp(w - shift)
        result = torch.log(total) + shift
        return [astype(result.reshape(op._out_shape(tuple(w.shape))), out)]

    return kernel


@register_lowering(CumOp)
def lower_cumop(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch
    op, out = node.op, _out_dtype(node)
    fn = torch.cumsum if op.mode == "add" else torch.cumprod

    def kernel(x: Any) -> list[Any]:
        x = astype(x, out)
        if op.axis is None:
            x = x.reshape(-1)
        return [fn(x, dim=0 if op.axis is None else op.axis)]

    return kernel


# -- creation -----------------------------------------------------------------------------


def _lengths(values: Any) -> tuple[int, ...]:
    shape = tuple(int(n) for n in values)
    if any(n < 0 for n in shape):
        raise ValueError(NEGATIVE_DIMENSIONS)
    return shape


@register_lowering(Alloc)
def lower_alloc(node: Apply, ctx: LowerContext) -> Kernel:
    out = _out_dtype(node)

    def kernel(value: Any, *lengths: Any) -> list[Any]:
        shape = _lengths(lengths)
        return [astype(value, out).expand(shape).clone()]

    return kernel


@register_lowering(ARange)
def lower_arange(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch
    out = node.op.dtype
    work = dtypes.float64 if out.is_float else out

    def kernel(start: Any, stop: Any, step: Any) -> list[Any]:
        start, stop, step = (v.item() for v in (start, stop, step))
        if step == 0:
            raise ZeroDivisionError("arange: the step is 0 (division by zero)")
        result = torch.arange(start, stop, step, dtype=ctx.dtype(work), device=ctx.device)
        return [astype(result, out)]

    return kernel


@register_lowering(Eye)
def lower_eye(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch
    out = node.op.dtype

    def kernel(n: Any, m: Any, k: Any) -> list[Any]:
        n, m = _lengths((n, m))
        rows = torch.arange(n, device=ctx.device).unsqueeze(1)
        cols = torch.arange(m, device=ctx.device).unsqueeze(0)
        return [astype(cols - rows == int(k), out)]

    return kernel


# -- shapes ---------------------------------------------------------------------------------


@register_lowering(Shape)
def lower_shape(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch
    return lambda x: [torch.tensor(tuple(x.shape), dtype=torch.int64, device=ctx.device)]


@register_lowering(Shape_i)
def lower_shape_i(node: Apply, ctx: LowerContext) -> Kernel:
    torch, i = ctx.torch, node.op.i
    return lambda x: [torch.tensor(x.shape[i], dtype=torch.int64, device=ctx.device)]


@register_lowering(SpecifyShape)
def lower_specify_shape(node: Apply, ctx: LowerContext) -> Kernel:
    from workbench.core.tensor.type import format_shape

    def kernel(x: Any, *lengths: Any) -> list[Any]:
        expected = tuple(None if n is None else int(n) for n in lengths)
        if x.dim() != len(expected) or any(
                e is not None and e != a for e, a in zip(expected, x.shape)):
            raise AssertionError(f"SpecifyShape: expected shape {format_shape(expected)}, "
                                 f"got shape {tuple(x.shape)}")
        return [x]

    return kernel


@register_lowering(CheckAndRaise)
def lower_check_and_raise(node: Apply, ctx: LowerContext) -> Kernel:
    error, message = CHECK_ERRORS[node.op.error], node.op.message

    def kernel(x: Any, *conditions: Any) -> list[Any]:
        if not all(bool(c) for c in conditions):  # reads the conditions back to the host
            raise error(message)
        return [x]

    return kernel


@register_lowering(Reshape)
def lower_reshape(node: Apply, ctx: LowerContext) -> Kernel:
    op = node.op

    def kernel(x: Any, shape: Any) -> list[Any]:
        lengths = shape_ints(shape)
        if len(lengths) != op.ndim:
            raise ValueError(f"{op}: expected a shape of length {op.ndim}, got {tuple(lengths)}")
        try:
            return [x.reshape(lengths)]
        except RuntimeError as exc:
            raise ValueError(f"cannot reshape array of size {x.numel()} into shape "
                             f"{tuple(lengths)} ({exc})") from None

    return kernel


@register_lowering(BroadcastTo)
def lower_broadcast_to(node: Apply, ctx: LowerContext) -> Kernel:
    def kernel(x: Any, *shape: Any) -> list[Any]:
        target = tuple(int(s) for s in shape)
        try:
            return [x.broadcast_to(target)]
        except RuntimeError as exc:
            raise ValueError(f"operands could not be broadcast: input shape {tuple(x.shape)}"
                             f" to {target} ({exc})") from None

    return kernel


# -- join, split, repeat ----------------------------------------------------------------------


@register_lowering(Join)
def lower_join(node: Apply, ctx: LowerContext) -> Kernel:
    torch, out = ctx.torch, _out_dtype(node)
    axis = node.op.axis % node.outputs[0].type.ndim
    return lambda *xs: [torch.cat([astype(x, out) for x in xs], dim=axis)]


@register_lowering(Split)
def lower_split(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op

    def kernel(x: Any, sizes: Any) -> list[Any]:
        axis = op.axis % x.dim()
        lengths = [int(s) for s in sizes.reshape(-1).tolist()]
        if tuple(sizes.shape) != (op.n_splits,):
            raise ValueError(f"{op}: expected {op.n_splits} sizes, got {sizes.shape[0]}")
        if any(s < 0 for s in lengths) or sum(lengths) != x.shape[axis]:
            raise ValueError(f"{op}: the sizes {tuple(lengths)} do not cut axis {axis} of "
                             f"length {x.shape[axis]} into consecutive pieces")
        return list(torch.split(x, lengths, dim=axis))

    return kernel


@register_lowering(Repeat)
def lower_repeat(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op

    def kernel(x: Any, repeats: Any) -> list[Any]:
        axis = op.axis % x.dim()
        counts = repeats.to(torch.int64)
        if counts.dim() == 1 and counts.shape[0] == 1:
            counts = counts.reshape(())
        if bool((counts < 0).any()):
            raise ValueError("repeat: negative dimensions are not allowed")
        if counts.dim() == 1 and counts.shape[0] != x.shape[axis]:
            raise ValueError(f"repeat: operands could not be broadcast together with shape "
                             f"({x.shape[axis]},) ({counts.shape[0]},)")
        return [torch.repeat_interleave(x, counts, dim=axis)]

    return kernel


# -- identities -----------------------------------------------------------------------------


@register_lowering(IdentityGradOp, Transfer)
def lower_identity(node: Apply, ctx: LowerContext) -> Kernel:
    """Ops that only change gradients, and transfers: values are already on the device
    (the linker moves graph inputs there and outputs back)."""
    return lambda x: [x]


# -- if-else ---------------------------------------------------------------------------------


@register_lowering(IfElse)
def lower_ifelse(node: Apply, ctx: LowerContext) -> Kernel:
    """The eager form (both branches computed), used with `lazy=False`; the linker
    otherwise gives IfElse a lazy thunk that computes only the taken branch."""
    n = node.op.n_outs

    def kernel(cond: Any, *branches: Any) -> list[Any]:
        return list(branches[:n] if bool(cond) else branches[n:])

    return kernel
