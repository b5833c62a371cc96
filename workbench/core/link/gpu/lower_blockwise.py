"""Blockwise on torch: the core Op's kernel mapped over the batch with `torch.vmap`.

The inputs' batch dimensions are broadcast to the full batch shape, then the
core kernel (the core Op's own lowering) is vmapped once per batch dimension:
one batched torch call, no Python loop per item. Inputs without batch dimensions
are not mapped (`in_dims=None`): the kernel reads them as they are. A kernel that
is not vmap-safe (one reading a batched index as an int, or needing real storage:
`data_ptr`, `.numpy()`, in-place writes) is called item by item instead, for every
core Op alike. A core Op without a lowering runs on the host through `perform`.
"""

from __future__ import annotations

from itertools import product
from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.link.gpu.registry import Kernel, LowerContext, lowering_for, register_lowering
from workbench.core.tensor.blockwise import Blockwise

__all__ = ["lower_blockwise"]


@register_lowering(Blockwise)
def lower_blockwise(node: Apply, ctx: LowerContext) -> Kernel | None:
    op = node.op
    core = op._core_node_of(node)
    lower_core = lowering_for(op.core_op)
    core_kernel = lower_core(core, ctx) if lower_core is not None else None
    if core_kernel is None:
        return None
    torch = ctx.torch
    nb = op.batch_ndim(node)
    core_ndims = [len(c) for c in op.core_inputs]
    # an input with no batch dimensions (a length, an index, a shared matrix) is the
    # same for every item: passed to the core kernel as it is, outside vmap, so that
    # the kernel may read it as a Python int (vmap refuses `.item()` on a mapped tensor)
    batched = tuple(v.type.ndim > c for v, c in zip(node.inputs, core_ndims))
    in_dims = tuple(0 if b else None for b in batched)

    def one(*items: Any) -> tuple[Any, ...]:
        return tuple(core_kernel(*items))

    mapped = one
    for _ in range(nb):
        mapped = torch.vmap(mapped, in_dims=in_dims)

    def kernel(*inputs: Any) -> list[Any]:
        batch = torch.broadcast_shapes(*(x.shape[:x.dim() - c]
                                         for x, c in zip(inputs, core_ndims)))
        if batch.numel() == 0:  # no item to map: the core lengths from the inputs' shapes
            return _empty(inputs)
        expanded = [x.expand(*batch, *x.shape[x.dim() - c:]) if b else x
                    for x, c, b in zip(inputs, core_ndims, batched)]
        if vmap_refused:
            return _loop(expanded, tuple(batch))
        try:
            return list(mapped(*expanded))
        except (RuntimeError, TypeError, ValueError, NotImplementedError) as refusal:
            # the kernel is not vmap-safe: it reads a batched index as an int (`.item()`),
            # or needs real storage (`data_ptr`, `.numpy()`, in-place or `out=` writes),
            # which torch's batched tensors lack. Item by item, the kernel sees real
            # tensors: if it fails there too, that error is the real one and is raised.
            result = _loop(expanded, tuple(batch))
            vmap_refused.append(refusal)  # the loop works: use it from now on
            return result

    vmap_refused: list[Exception] = []
    out_dtypes = [ctx.dtype(out) for out in node.outputs]

    def _empty(inputs: tuple[Any, ...]) -> list[Any]:
        """The outputs of an empty batch, shaped as on every linker (the values of
        unbatched inputs are read on the host only where a core length is computed)."""
        shapes = [tuple(x.shape) for x in inputs]
        values = _HostValues(inputs, batched)
        return [torch.empty(shape, dtype=dtype, device=ctx.device)
                for shape, dtype in zip(op.empty_batch_output_shapes(node, shapes, values),
                                        out_dtypes)]

    def _loop(expanded: list[Any], batch: tuple[int, ...]) -> list[Any]:
        """The core kernel item by item, for a kernel that torch.vmap cannot map."""
        items = [core_kernel(*(x[idx] if b else x for x, b in zip(expanded, batched)))
                 for idx in product(*map(range, batch))]
        return [torch.stack([item[j] for item in items]).reshape(*batch, *items[0][j].shape)
                for j in range(len(items[0]))]

    return kernel


class _HostValues:
    """The inputs' values on the host, copied there only when asked for (an unbatched input
    whose value gives a core length); a batched input's value is never read."""

    def __init__(self, inputs: tuple[Any, ...], batched: tuple[bool, ...]) -> None:
        self.inputs, self.batched = inputs, batched

    def __getitem__(self, k: int) -> Any:
        x = self.inputs[k]
        return None if self.batched[k] else x.detach().cpu().numpy() if hasattr(x, "detach") else x
