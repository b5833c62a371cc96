"""Lowerings of indexing: Subtensor, IncSubtensor (set/inc_subtensor), AdvancedSubtensor,
AdvancedIncSubtensor.

Torch indexing follows NumPy's except in two places handled here: slices with a
negative step (torch has none: they become an `index_select` of the positions
the slice visits) and integers mixed with index arrays (NumPy broadcasts them
with the arrays, so in an advanced index they become 0-d index tensors).

Writing uses the *positions* of the indexed elements: the same index applied to
`arange(x.numel())` gives the flat positions to write, so basic and advanced
indices, negative steps and masks all share one path. Repeated positions
accumulate when incrementing (NumPy's `add.at`) and the last write wins when
setting (NumPy's order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.link.gpu.lower_elemwise import astype
from workbench.core.link.gpu.registry import Kernel, LowerContext, register_lowering
from workbench.core.tensor.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor
from workbench.core.tensor.subtensor import IncSubtensor, SliceEntry, Subtensor, fill


def _entries(torch: Any, idx_list: Sequence[Any], values: Sequence[Any], advanced: bool
             ) -> list[Any]:
    """The index as torch understands it (slices, ints, None, Ellipsis, index tensors)."""
    entries: list[Any] = []
    for entry in fill(idx_list, values):
        if isinstance(entry, SliceEntry):
            entries.append(slice(*(None if p is None else int(p) for p in entry)))
        elif isinstance(entry, torch.Tensor):
            if entry.dtype == torch.bool:
                entries.append(entry)
            elif entry.dim() == 0 and not advanced:
                entries.append(int(entry))
            else:
                entries.append(entry.to(torch.int64))
        elif isinstance(entry, int) and not isinstance(entry, bool) and advanced:
            entries.append(torch.tensor(entry, dtype=torch.int64))
        else:
            entries.append(entry)
    return entries


def _consumed(torch: Any, entry: Any) -> int:
    """How many axes of the indexed tensor an entry indexes (a 0-d mask: none)."""
    if entry is None or entry is Ellipsis:
        return 0
    if isinstance(entry, torch.Tensor) and entry.dtype == torch.bool:
        return entry.dim()
    return 1


def _is_advanced(torch: Any, entry: Any) -> bool:
    return isinstance(entry, torch.Tensor)


def needs_numpy_positions(torch: Any, x: Any, entries: list[Any]) -> bool:
    """Whether torch might read this advanced index of `x` differently from NumPy:
    several advanced entries (ints mixed with arrays, arrays separated by slices, None
    or an Ellipsis, where NumPy moves the broadcast dimensions first); an empty `x`
    (torch's errors differ from NumPy's there); a mask with a length-0 dimension
    (NumPy lets it index an axis of any length, torch does not).
    """
    n_advanced = sum(_is_advanced(torch, e) for e in entries)
    if n_advanced != 1:
        return n_advanced > 1
    empty_mask = any(isinstance(e, torch.Tensor) and e.dtype == torch.bool and e.dim() > 0
                     and e.numel() == 0 for e in entries)
    return x.numel() == 0 or empty_mask


def numpy_positions(torch: Any, shape: tuple[int, ...], entries: list[Any], device: Any
                    ) -> Any:
    """The flat positions `np.arange(prod(shape)).reshape(shape)[index]` (NumPy's rules,
    computed on the host: the index arrays are copied there)."""
    import numpy as np

    from workbench.core.link.gpu.device import to_device

    index = _host_index(torch, entries)
    positions = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    return to_device(np.ascontiguousarray(positions[index]), device)


#: Torch selects nothing for slice steps this large (2**63 - 1, where NumPy selects one
#: element) and warns about starts and stops beyond it.
_TORCH_SLICE_LIMIT = 2**31


def _torch_misreads(entry: Any) -> bool:
    """Whether torch reads this entry differently from NumPy: a slice with a negative
    step (torch has none) or a huge part."""
    if not isinstance(entry, slice):
        return False
    if entry.step is not None and entry.step < 0:
        return True
    return any(p is not None and abs(p) >= _TORCH_SLICE_LIMIT
               for p in (entry.start, entry.stop, entry.step))


def apply_index(torch: Any, x: Any, entries: list[Any]) -> Any:
    """`x[entries]` with NumPy's meaning (negative-step slices included)."""
    if needs_numpy_positions(torch, x, entries):
        return x.reshape(-1)[numpy_positions(torch, tuple(x.shape), entries, x.device)]
    try:
        result = _torch_index(torch, x, entries)
    except IndexError:  # torch's message counts the index arrays' dimensions, not x's axes
        check_like_numpy(torch, tuple(x.shape), entries)
        raise
    if result.numel() == 0 and any(isinstance(e, torch.Tensor) and e.dtype != torch.bool
                                   and e.numel() for e in entries):
        check_like_numpy(torch, tuple(x.shape), entries)  # torch checks none of them
    return result


def check_like_numpy(torch: Any, shape: tuple[int, ...], entries: list[Any]) -> None:
    """Raise NumPy's IndexError if NumPy refuses this index of an array of `shape`
    (on a view without data: no memory for x, the index arrays copied to the host)."""
    import numpy as np

    np.broadcast_to(np.zeros((), np.int8), shape)[_host_index(torch, entries)]


def _host_index(torch: Any, entries: list[Any]) -> tuple[Any, ...]:
    """The index for NumPy: its index tensors copied to the host."""
    from workbench.core.link.gpu.device import to_host

    return tuple(to_host(e) if isinstance(e, torch.Tensor) else e for e in entries)


def _torch_index(torch: Any, x: Any, entries: list[Any]) -> Any:
    """`x[entries]` by torch, slices it reads differently from NumPy rewritten first."""
    if any(_torch_misreads(e) for e in entries):
        if not any(e is Ellipsis for e in entries):
            entries = [*entries, Ellipsis]
        used = sum(_consumed(torch, e) for e in entries)
        dim = 0
        fixed = []
        for entry in entries:
            if entry is Ellipsis:
                dim += x.dim() - used
            elif isinstance(entry, slice) and entry.step is not None and entry.step < 0:
                positions = range(*entry.indices(x.shape[dim]))
                picks = torch.tensor(list(positions), dtype=torch.int64, device=x.device)
                x = x.index_select(dim, picks)
                entry = slice(None)
            elif _torch_misreads(entry):  # huge parts: the same slice in the axis' bounds
                n = int(x.shape[dim])
                start, stop, step = entry.indices(n)
                entry = slice(start, stop, min(step, max(n, 1)))
            if entry is not Ellipsis:
                dim += _consumed(torch, entry)
            fixed.append(entry)
        entries = fixed
    entries = [e.to(x.device) if isinstance(e, torch.Tensor) else e for e in entries]
    return x[tuple(entries)]


@register_lowering(Subtensor, AdvancedSubtensor)
def lower_subtensor(node: Apply, ctx: LowerContext) -> Kernel:
    torch, idx_list = ctx.torch, node.op.idx_list
    advanced = isinstance(node.op, AdvancedSubtensor)

    def kernel(x: Any, *values: Any) -> list[Any]:
        result = apply_index(torch, x, _entries(torch, idx_list, values, advanced))
        return [result.clone() if advanced and result.data_ptr() == x.data_ptr() else result]

    return kernel


def write_at(torch: Any, x: Any, y: Any, entries: list[Any], set_instead_of_inc: bool
             ) -> Any:
    """A copy of `x` with `y` set at (or added to) `x[entries]`."""
    if needs_numpy_positions(torch, x, entries):
        where = numpy_positions(torch, tuple(x.shape), entries, x.device)
    else:
        positions = torch.arange(x.numel(), device=x.device).reshape(x.shape)
        where = apply_index(torch, positions, entries)
    out = x.clone(memory_format=torch.contiguous_format)
    flat = out.view(-1)
    values = astype(y, _wb_dtype(x)).broadcast_to(where.shape).reshape(-1)
    where = where.reshape(-1)
    if not set_instead_of_inc:
        flat.index_put_((where,), values, accumulate=True)
        return out
    if where.numel() > 1:
        unique, inverse = torch.unique(where, return_inverse=True)
        if unique.numel() < where.numel():  # repeated positions: the last write wins
            order = torch.arange(where.numel(), device=x.device)
            last = torch.full((unique.numel(),), -1, dtype=torch.int64, device=x.device)
            last = last.scatter_reduce(0, inverse, order, reduce="amax")
            where, values = where[last], values[last]
    flat[where] = values
    return out


def _wb_dtype(x: Any) -> Any:
    from workbench.core.link.gpu.device import workbench_dtype

    return workbench_dtype(x.dtype)


@register_lowering(IncSubtensor, AdvancedIncSubtensor)
def lower_inc_subtensor(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op
    advanced = isinstance(op, AdvancedIncSubtensor)

    def kernel(x: Any, y: Any, *values: Any) -> list[Any]:
        entries = _entries(torch, op.idx_list, values, advanced)
        return [write_at(torch, x, y, entries, op.set_instead_of_inc)]

    return kernel
