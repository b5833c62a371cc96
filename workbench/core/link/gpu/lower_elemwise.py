"""Lowerings of the elementwise family: scalar Ops, Cast, Composite, Elemwise, DimShuffle.

Every scalar Op computes as `ScalarOp.compute` does on the host: the inputs are
first converted to the dtype the Op computes in (its `input_cast`), the torch
kernel runs, and the result is cast to the output dtype workbench's rules give.
So torch's own type promotion never decides a dtype (it differs from
workbench's on many pairs). Where NumPy and torch disagree on a value (integer
division or remainder by zero, which torch refuses) the kernel follows NumPy.

An Elemwise node is probed at link time on one-element tensors of its input
dtypes: if torch has no kernel for that combination (e.g. `maximum` of complex
numbers), the node runs on the host instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.core import dtypes
from workbench.core.graph.basic import Apply
from workbench.core.link.gpu.device import import_torch, torch_dtype
from workbench.core.link.gpu.registry import (
    Kernel,
    LowerContext,
    register_lowering,
    register_scalar,
    scalar_lowering_for,
)
from workbench.core.scalar import basic as sb
from workbench.core.scalar import math as sm
from workbench.core.scalar.composite import Composite
from workbench.core.scalar.declared import declared_attribute
from workbench.core.tensor.elemwise import DimShuffle, Elemwise, SumToShape

__all__ = ["astype", "declared_kernel", "scalar_kernel", "scalar_program"]


def astype(x: Any, dtype: Any) -> Any:
    """Tensor `x` converted to workbench dtype `dtype` (complex -> real keeps the real part)."""
    torch = import_torch()
    target = torch_dtype(dtype)
    if x.dtype == target:
        return x
    if x.is_complex() and not target.is_complex:
        x = torch.real(x)
    return x.to(target)


def _caster(dtype: Any) -> Any:
    """A function converting a tensor to workbench dtype `dtype` (None: unchanged)."""
    if dtype is None:
        return lambda x: x
    torch = import_torch()
    target = torch_dtype(dtype)
    real = not target.is_complex

    def cast(x: Any) -> Any:
        if x.dtype == target:
            return x
        if real and x.is_complex():
            x = torch.real(x)
        return x.to(target)

    return cast


def _input_dtypes(op: Any, in_dtypes: Sequence[dtypes.Dtype], out: dtypes.Dtype
                  ) -> list[dtypes.Dtype | None]:
    """The dtype each input is converted to before the kernel (`ScalarOp.cast_inputs`)."""
    if isinstance(op, sm.Switch):
        return [dtypes.bool_, out, out]
    if isinstance(op, sm.Angle):  # complex inputs stay complex
        return [None if d.is_complex else out for d in in_dtypes]
    if op.input_cast == "output":
        return [out for _ in in_dtypes]
    if op.input_cast == "common":
        common = dtypes.result_type(*in_dtypes)
        return [common for _ in in_dtypes]
    return [None for _ in in_dtypes]


def scalar_program(op: Any, in_dtypes: Sequence[Any], out_dtypes: Sequence[Any],
                   device: Any) -> Any:
    """A function of tensors (of `in_dtypes`) computing scalar Op `op` elementwise into
    tensors of exactly `out_dtypes`. Every dtype decision is taken here, at link time,
    so the function is plain torch code (which torch.compile can trace)."""
    in_dtypes = [dtypes.as_dtype(d) for d in in_dtypes]
    out_dtypes = [dtypes.as_dtype(d) for d in out_dtypes]
    if isinstance(op, Composite):
        return _composite_program(op, in_dtypes, out_dtypes, device)
    kernel = scalar_kernel(op)
    if kernel is None:
        raise NotImplementedError(f"no torch lowering for scalar Op {op} "
                                  f"({type(op).__name__})")
    casts = [_caster(d) for d in _input_dtypes(op, in_dtypes, out_dtypes[0])]
    finals = [_caster(d) for d in out_dtypes]
    several = op.nout > 1

    def run(*xs: Any) -> list[Any]:
        raw = kernel(op, *[cast(x) for cast, x in zip(casts, xs)])
        results = list(raw) if several else [raw]
        return [final(r) for final, r in zip(finals, results)]

    return run


def _composite_program(op: Composite, in_dtypes: list[dtypes.Dtype],
                       out_dtypes: list[dtypes.Dtype], device: Any) -> Any:
    """A Composite's steps chained, as `Composite.compute` runs them on the host."""
    from workbench.core.link.gpu.device import to_device

    plan = op._plan(tuple(in_dtypes))
    known: dict[Any, dtypes.Dtype] = {("i", k): d for k, d in enumerate(in_dtypes)}
    constants = {ref: to_device(value, device) for ref, value in op._constants.items()}
    for ref in constants:
        known[ref] = dtypes.as_dtype(ref[1])
    steps = []
    for n, ((inner, args), step_dtypes) in enumerate(zip(op._steps, plan.step_dtypes)):
        fn = scalar_program(inner, [known[a] for a in args], step_dtypes, device)
        steps.append((fn, tuple(args), n))
        for j, d in enumerate(step_dtypes):
            known[("n", n, j)] = dtypes.as_dtype(d)
    outputs = [(ref, _caster(d)) for ref, d in zip(op._output_refs, out_dtypes)]

    def run(*xs: Any) -> list[Any]:
        values = dict(constants)
        for k, x in enumerate(xs):
            values[("i", k)] = x
        for fn, args, n in steps:
            for j, result in enumerate(fn(*[values[a] for a in args])):
                values[("n", n, j)] = result
        return [final(values[ref]) for ref, final in outputs]

    return run


def scalar_kernel(op: Any) -> Any:
    """The torch kernel of scalar Op `op`: registered for its class (`register_scalar`,
    see `backend_entry`), else made from its declaration; None if it has neither."""
    found = scalar_lowering_for(op)
    return found if found is not None else declared_kernel(op)


# -- scalar kernels ---------------------------------------------------------------------
# Each receives tensors already in the dtype the Op computes in.


def declared_kernel(op: Any) -> Any:
    """The torch kernel of a declared Op: its `torch_function` (a dotted path in torch,
    e.g. "special.erfinv", or a function of the torch module and the tensors) called on
    the input tensors; None if it declares none."""
    path = declared_attribute(type(op), "torch_function")
    if path is None:
        return None
    if isinstance(path, staticmethod):
        expression = path.__func__

        def computed(op: Any, *xs: Any) -> Any:
            return expression(import_torch(), *xs)

        return computed

    def kernel(op: Any, *xs: Any) -> Any:
        fn = import_torch()
        for part in path.split("."):
            fn = getattr(fn, part)
        return fn(*xs)

    return kernel


def _unary(name: str) -> Any:
    def kernel(op: Any, x: Any) -> Any:
        return getattr(import_torch(), name)(x)

    return kernel


def _binary(name: str) -> Any:
    def kernel(op: Any, a: Any, b: Any) -> Any:
        return getattr(import_torch(), name)(a, b)

    return kernel


_UNARY = {
    sm.Floor: "floor", sm.Ceil: "ceil", sm.RoundHalfToEven: "round",
    sm.IsNan: "isnan", sm.IsInf: "isinf", sm.IsFinite: "isfinite", sm.Abs: "abs",
    sm.Reciprocal: "reciprocal", sm.Invert: "bitwise_not",
}  # fmt: skip
_BINARY = {
    sm.Add: "add", sm.Mul: "mul", sm.TrueDiv: "true_divide",
    sm.Maximum: "maximum", sm.Minimum: "minimum", sm.EQ: "eq", sm.NEQ: "ne",
    sm.LT: "lt", sm.GT: "gt", sm.LE: "le", sm.GE: "ge", sm.AND: "bitwise_and",
    sm.OR: "bitwise_or", sm.XOR: "bitwise_xor",
}  # fmt: skip
for _cls, _name in _UNARY.items():
    register_scalar(_cls)(_unary(_name))
for _cls, _name in _BINARY.items():
    register_scalar(_cls)(_binary(_name))


@register_scalar(sm.Sub)
def _sub(op: Any, a: Any, b: Any) -> Any:
    torch = import_torch()
    if a.dtype == torch.bool:  # numpy subtracts bools as xor
        return torch.bitwise_xor(a, b)
    return torch.sub(a, b)


@register_scalar(sm.Neg)
def _neg(op: Any, x: Any) -> Any:
    torch = import_torch()
    return torch.bitwise_not(x) if x.dtype == torch.bool else torch.neg(x)


@register_scalar(sm.Sign)
def _sign(op: Any, x: Any) -> Any:
    torch = import_torch()
    if x.is_complex():
        return torch.sgn(x)
    if x.dtype.is_floating_point:  # NumPy keeps NaN where torch gives 0
        return torch.where(torch.isnan(x), x, torch.sign(x))
    return torch.sign(x)


@register_scalar(sm.IntDiv, sm.Mod)
def _int_div_mod(op: Any, a: Any, b: Any) -> Any:
    """floor_divide / remainder; an integer divisor of 0 gives 0, as NumPy does."""
    torch = import_torch()
    fn = torch.floor_divide if isinstance(op, sm.IntDiv) else torch.remainder
    if a.dtype.is_floating_point or a.is_complex() or a.dtype == torch.bool:
        return fn(a, b)
    zero = b == 0
    safe = torch.where(zero, torch.ones_like(b), b)
    return torch.where(zero, torch.zeros((), dtype=a.dtype, device=a.device), fn(a, safe))


@register_scalar(sm.Pow)
def _pow(op: Any, a: Any, b: Any) -> Any:
    """torch.pow; integers to negative integer powers raise NumPy's ValueError (torch
    gives 0, which would be stored silently, e.g. by an update)."""
    torch = import_torch()
    exact = (a.dtype, b.dtype)
    if not any(d.is_floating_point or d.is_complex or d == torch.bool for d in exact) \
            and bool((b < 0).any()):
        raise ValueError("Integers to negative integer powers are not allowed.")
    return torch.pow(a, b)


@register_scalar(sm.Sqr)
def _sqr(op: Any, x: Any) -> Any:
    return x * x


@register_scalar(sm.Identity)
def _identity(op: Any, x: Any) -> Any:
    return x


@register_scalar(sm.Softplus)
def _softplus(op: Any, x: Any) -> Any:
    torch = import_torch()
    return torch.logaddexp(torch.zeros((), dtype=x.dtype, device=x.device), x)


@register_scalar(sm.Switch)
def _switch(op: Any, cond: Any, a: Any, b: Any) -> Any:
    return import_torch().where(cond, a, b)


@register_scalar(sm.Clip)
def _clip(op: Any, x: Any, lo: Any, hi: Any) -> Any:
    torch = import_torch()
    return torch.minimum(torch.maximum(x, lo), hi)


@register_scalar(sm.Real, sm.Imag, sm.Conj, sm.Angle)
def _complex_parts(op: Any, x: Any) -> Any:
    torch = import_torch()
    if isinstance(op, sm.Angle):
        return torch.angle(x)
    if x.is_complex():
        if isinstance(op, sm.Conj):
            return torch.conj_physical(x)
        return torch.real(x) if isinstance(op, sm.Real) else torch.imag(x)
    return torch.zeros_like(x) if isinstance(op, sm.Imag) else x


@register_scalar(sb.Cast)
def _cast(op: Any, x: Any) -> Any:
    return astype(x, op.o_type.dtype)


@register_scalar(Composite)
def _composite_marker(op: Any, *xs: Any) -> Any:  # built by scalar_program
    raise AssertionError("a Composite runs through scalar_program")


# -- tensor Ops ---------------------------------------------------------------------------


def _probe(kernel: Kernel, node: Apply, ctx: LowerContext) -> bool:
    """Whether `kernel` runs on one-element tensors of the node's input dtypes."""
    torch = ctx.torch
    try:
        args = [torch.ones((1,) * getattr(v.type, "ndim", 0), dtype=ctx.dtype(v),
                           device=ctx.device) for v in node.inputs]
        kernel(*args)
    except Exception:  # no torch kernel for this dtype combination
        return False
    return True


@register_lowering(Elemwise)
def lower_elemwise(node: Apply, ctx: LowerContext) -> Kernel | None:
    op = node.op.scalar_op
    if not isinstance(op, Composite) and scalar_kernel(op) is None:
        return None
    if isinstance(op, Composite) and not all(scalar_kernel(inner) is not None
                                             for inner, _ in op._steps):
        return None
    program = scalar_program(op, [v.type.dtype for v in node.inputs],
                             [out.type.dtype for out in node.outputs], ctx.device)
    torch = ctx.torch

    def kernel(*xs: Any) -> list[Any]:
        results = program(*xs)
        shape = torch.broadcast_shapes(*(x.shape for x in xs))
        # e.g. a Composite output that ignores some inputs: give it the full shape
        return [r if r.shape == shape else r.expand(shape).contiguous() for r in results]

    return kernel if _probe(kernel, node, ctx) else None


@register_lowering(DimShuffle)
def lower_dimshuffle(node: Apply, ctx: LowerContext) -> Kernel:
    op = node.op
    drop, shuffle, new_order = tuple(op.drop), list(op.shuffle), tuple(op.new_order)
    remaining = [d for d in range(op.input_ndim) if d not in drop]
    axes = [remaining.index(d) for d in shuffle] if drop else shuffle
    index = tuple(None if d == "x" else slice(None) for d in new_order)

    def kernel(x: Any) -> list[Any]:
        for d in sorted(drop, reverse=True):
            if x.shape[d] != 1:
                raise ValueError(f"{op}: dimension {d} to drop has length {x.shape[d]}, "
                                 f"not 1 (input shape {tuple(x.shape)})")
            x = x.squeeze(d)
        x = x.permute(*axes) if axes else x
        return [x[index] if index else x]

    return kernel


@register_lowering(SumToShape)
def lower_sum_to_shape(node: Apply, ctx: LowerContext) -> Kernel:
    def kernel(g: Any, *lengths: Any) -> list[Any]:
        shape = tuple(int(n) for n in lengths)
        axes = tuple(d for d in range(g.dim()) if shape[d] == 1 and g.shape[d] != 1)
        out = g.sum(dim=axes, keepdim=True, dtype=g.dtype) if axes else g
        if tuple(out.shape) != shape:
            raise ValueError(f"SumToShape: a gradient of shape {tuple(g.shape)} cannot be "
                             f"summed to the input shape {shape}")
        return [out]

    return kernel
