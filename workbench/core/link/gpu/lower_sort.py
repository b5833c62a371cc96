"""Lowerings of sorting, searching and counting: Sort, Argsort, TopK, SearchSorted,
Unique, Bincount and Nonzero.

Sorts use ``torch.sort(stable=True)`` (NaN sorts last, as in NumPy). `TopK`
sorts too rather than calling ``torch.topk``, whose order among equal values is
unspecified: the linkers must agree on the positions. `Unique` is computed from
one stable sort (values, first positions, inverse and counts at once; NaNs
counted as one value, as NumPy's ``equal_nan=True``). `SearchSorted` of floats
searches integer keys ordered as NumPy orders floats (NaN above +inf), where
torch's own comparisons send NaN nowhere. Complex values and the
unsigned dtypes torch cannot sort run on the host (the lowering declines them).
"""

from __future__ import annotations

from typing import Any

from workbench.core import dtypes
from workbench.core.graph.basic import Apply
from workbench.core.link.gpu.lower_elemwise import astype
from workbench.core.link.gpu.registry import Kernel, LowerContext, register_lowering
from workbench.core.tensor.counting import Bincount, Nonzero, Unique, check_bincount_range
from workbench.core.tensor.sort import Argsort, SearchSorted, Sort, TopK

#: dtypes torch.sort has no kernel for (complex; the wide unsigned integers)
_UNSORTABLE = {dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.complex64,
               dtypes.complex128}


def _sortable(node: Apply) -> bool:
    return all(v.type.dtype not in _UNSORTABLE for v in node.inputs)


@register_lowering(Sort, Argsort)
def lower_sort(node: Apply, ctx: LowerContext) -> Kernel | None:
    if not _sortable(node):
        return None
    torch, axis = ctx.torch, node.op.axis
    want_indices = isinstance(node.op, Argsort)

    def kernel(x: Any) -> list[Any]:
        values, indices = torch.sort(x, dim=axis, stable=True)
        return [indices.to(torch.int64) if want_indices else values]

    return kernel


@register_lowering(TopK)
def lower_topk(node: Apply, ctx: LowerContext) -> Kernel | None:
    if not _sortable(node):
        return None
    torch, op = ctx.torch, node.op

    def kernel(x: Any) -> list[Any]:
        if op.k > x.shape[op.axis]:
            raise ValueError(f"{op}: k={op.k} is larger than axis {op.axis} of x, of shape "
                             f"{tuple(x.shape)}")
        values, indices = torch.sort(x, dim=op.axis, descending=op.largest, stable=True)
        return [values.narrow(op.axis, 0, op.k).contiguous(),
                indices.narrow(op.axis, 0, op.k).to(torch.int64).contiguous()]

    return kernel


def _ordered_keys(x: Any, torch: Any) -> Any:
    """Signed integers ordered as NumPy orders the floats `x` when it sorts and
    searches: -0.0 equal to 0.0, every NaN equal to every other and above +inf.
    (torch compares NaN as neither below nor above anything, so its binary search
    goes astray on a sorted array that ends in NaNs.)"""
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    x = torch.where(x == 0, torch.zeros_like(x), x)  # -0.0 -> +0.0
    x = torch.where(torch.isnan(x), torch.full_like(x, float("nan")), x)  # one positive NaN
    keys = x.view(bits)
    sign_bits = torch.iinfo(bits).max  # a negative float: flip all but the sign bit
    return keys ^ ((keys >> (8 * x.element_size() - 1)) & sign_bits)


@register_lowering(SearchSorted)
def lower_searchsorted(node: Apply, ctx: LowerContext) -> Kernel | None:
    a, v = node.inputs
    if not _sortable(node):
        return None
    torch, right = ctx.torch, node.op.side == "right"
    work = dtypes.promote_types(a.type.dtype, v.type.dtype)
    if work.is_bool:
        work = dtypes.int64

    def kernel(a: Any, v: Any) -> list[Any]:
        a, v = astype(a, work), astype(v, work)
        if work.is_float:
            a, v = _ordered_keys(a, torch), _ordered_keys(v, torch)
        return [torch.searchsorted(a.contiguous(), v.reshape(-1), right=right)
                .reshape(v.shape).to(torch.int64)]

    return kernel


@register_lowering(Unique)
def lower_unique(node: Apply, ctx: LowerContext) -> Kernel | None:
    if not _sortable(node):
        return None
    torch, op = ctx.torch, node.op
    is_float = node.inputs[0].type.dtype.is_float
    if op.axis is not None:
        if op.return_index:
            return None  # torch.unique(dim=...) has no first positions: run on the host
        return _unique_slices(node, ctx)

    def kernel(x: Any) -> list[Any]:
        flat = x.reshape(-1)
        values, order = torch.sort(flat, stable=True)
        starts = torch.ones_like(values, dtype=torch.bool)
        if values.numel() > 1:
            changed = values[1:] != values[:-1]
            if is_float and op.equal_nan:  # NaNs (sorted last) one value
                changed &= ~(torch.isnan(values[1:]) & torch.isnan(values[:-1]))
            starts[1:] = changed
        outputs = [values[starts]]
        if op.return_index:
            outputs.append(order[starts].to(torch.int64))
        if op.return_inverse:
            group = torch.cumsum(starts.to(torch.int64), 0) - 1
            inverse = torch.empty_like(group)
            inverse[order] = group
            outputs.append(inverse.reshape(x.shape))
        if op.return_counts:
            first = torch.nonzero(starts).reshape(-1)
            ends = torch.cat([first[1:], first.new_tensor([values.numel()])])
            outputs.append((ends - first).to(torch.int64))
        return outputs

    return kernel


def _unique_slices(node: Apply, ctx: LowerContext) -> Kernel:
    """Unique with an axis: torch.unique(dim=axis), which sorts the slices
    lexicographically as NumPy does, but puts a NaN first, where NumPy puts it last:
    slices holding a NaN are computed by `perform` on the host, and so is an empty
    input (torch refuses one with an empty dimension other than `axis`)."""
    torch, op = ctx.torch, node.op
    is_float = node.inputs[0].type.dtype.is_float

    def kernel(x: Any) -> list[Any]:
        if x.numel() == 0 or (is_float and bool(torch.isnan(x).any())):
            storage: list[list[Any]] = [[None] for _ in node.outputs]
            op.perform(node, [x.cpu().numpy()], storage)
            return [torch.as_tensor(s[0], device=x.device) for s in storage]
        values, inverse, counts = torch.unique(x, sorted=True, return_inverse=True,
                                               return_counts=True, dim=op.axis)
        outputs = [values]
        if op.return_inverse:
            outputs.append(inverse.to(torch.int64))
        if op.return_counts:
            outputs.append(counts.to(torch.int64))
        return outputs

    return kernel


@register_lowering(Bincount)
def lower_bincount(node: Apply, ctx: LowerContext) -> Kernel:
    torch, minlength = ctx.torch, node.op.minlength

    def kernel(x: Any, *weights: Any) -> list[Any]:
        x = x.to(torch.int64)
        if x.numel():
            check_bincount_range(int(x.min()), int(x.max()))
        w = astype(weights[0], dtypes.float64) if weights else None
        if w is not None and len(w) != len(x):  # perform's message, not torch's
            raise ValueError(f"bincount: weights and x must have the same length, got "
                             f"{len(w)} and {len(x)}")
        out = torch.bincount(x, w, minlength=minlength)
        return [out.to(torch.float64 if weights else torch.int64)]

    return kernel


@register_lowering(Nonzero)
def lower_nonzero(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch

    def kernel(x: Any) -> list[Any]:
        return [p.to(torch.int64) for p in torch.nonzero(x, as_tuple=True)]

    return kernel
