"""Random draws on torch: a `torch.Generator` seeded from the graph's NumPy generator.

The kernel copies the input `numpy.random.Generator`, takes one 63-bit seed from
it (which advances the copy: that copy is the node's next state), seeds a
`torch.Generator` on the device with it and draws there. The draws are
reproducible from the seed and the state still flows through the graph, but
they are not the draws NumPy's Generator (the py and c linkers) gives for that
seed: torch's streams and algorithms differ. Distributions without a kernel
here (and integers with array bounds) run on the host through `perform`,
with NumPy's draws.
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.link.gpu.registry import Kernel, LowerContext, register_lowering
from workbench.core.random.distributions import (
    BernoulliRV,
    ExponentialRV,
    IntegersRV,
    NormalRV,
    UniformRV,
)
from workbench.core.random.op import RandomVariable
from workbench.core.random.type import copy_generator

__all__ = ["lower_random"]


def _noise(torch: Any, kind: type, shape: tuple[int, ...], gen: Any, device: Any,
           dtype: Any) -> Any:
    if kind is NormalRV:
        return torch.randn(shape, generator=gen, device=device, dtype=dtype)
    if kind is ExponentialRV:
        return torch.empty(shape, device=device, dtype=dtype).exponential_(generator=gen)
    return torch.rand(shape, generator=gen, device=device, dtype=dtype)


@register_lowering(RandomVariable)
def lower_random(node: Apply, ctx: LowerContext) -> Kernel | None:
    op = node.op
    kind = type(op)
    if kind not in (NormalRV, UniformRV, ExponentialRV, BernoulliRV, IntegersRV):
        return None
    if kind is IntegersRV and any(p.type.ndim for p in node.inputs[2:]):
        return None
    torch, device = ctx.torch, ctx.device
    out_dtype = ctx.dtype(node.outputs[1])
    work = out_dtype if op.dtype.is_float else torch.float64

    def kernel(rng: Any, size: Any, *params: Any) -> list[Any]:
        rng = copy_generator(rng)
        gen = torch.Generator(device=device)
        gen.manual_seed(int(rng.integers(2**63)))
        if len(size):
            shape = tuple(int(s) for s in size.tolist())
        else:
            shape = tuple(torch.broadcast_shapes(*(p.shape for p in params)))
        if kind is IntegersRV:
            low, high = (int(p) for p in params)
            draw = torch.randint(low, high, shape, generator=gen, device=device,
                                 dtype=out_dtype)
            return [rng, draw]
        noise = _noise(torch, kind, shape, gen, device, work)
        if kind is NormalRV:
            draw = params[0] + params[1] * noise
        elif kind is UniformRV:
            draw = params[0] + (params[1] - params[0]) * noise
        elif kind is ExponentialRV:
            draw = params[0] * noise
        else:  # bernoulli
            draw = noise < params[0]
        return [rng, draw.to(out_dtype)]

    return kernel
