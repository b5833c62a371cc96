"""Random draws on torch: a `torch.Generator` seeded from the graph's NumPy generator.

The kernel takes one 63-bit seed from the input `numpy.random.Generator` (a copy
of it, or the generator itself for an inplace draw: that generator, advanced, is
the node's next state), seeds a `torch.Generator` on the device with it and draws
there. The draws are reproducible from the seed and the state still flows through
the graph, but they are not the draws NumPy's Generator (the py and c linkers)
gives for that seed: torch's streams and algorithms differ. Every distribution
has a kernel (the shaped ones: gamma, beta, binomial, dirichlet,
multivariate_normal and choice in lower_random_shaped.py), except integers with
array bounds, which runs on the host through `perform`, with NumPy's draws.
Each kernel first makes NumPy's checks of the parameters (`param_checks`: the same
ValueError as the py and c linkers), once per parameter tensor.

A constant `size` (and integers' constant bounds) is read at lowering time, so a
draw in a loop on the device reads nothing back from it at each step; a size
computed on the device is read back at each draw.
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply, Constant
from workbench.core.link.gpu.host_shapes import shape_ints
from workbench.core.link.gpu.registry import Kernel, LowerContext, register_lowering
from workbench.core.random.distributions import (
    BernoulliRV,
    CategoricalRV,
    ExponentialRV,
    IntegersRV,
    NormalRV,
    PermutationRV,
    PoissonRV,
    UniformRV,
)
from workbench.core.random.op import RandomVariable
from workbench.core.random.type import copy_generator

__all__ = ["lower_random", "seeded_generators"]


def seeded_generators(torch: Any, device: Any, rng: Any, inplace: bool) -> tuple[Any, Any]:
    """(the node's next NumPy state, a torch.Generator on `device` seeded from it): the
    input generator itself when the draw is inplace, else a copy, advanced by one seed."""
    if not inplace:
        rng = copy_generator(rng)
    gen = torch.Generator(device=device)
    gen.manual_seed(int(rng.integers(2**63)))
    return rng, gen


def _noise(torch: Any, kind: type, shape: tuple[int, ...], gen: Any, device: Any,
           dtype: Any) -> Any:
    if kind is NormalRV:
        return torch.randn(shape, generator=gen, device=device, dtype=dtype)
    if kind is ExponentialRV:
        return torch.empty(shape, device=device, dtype=dtype).exponential_(generator=gen)
    return torch.rand(shape, generator=gen, device=device, dtype=dtype)


def size_reader(node: Apply) -> Any:
    """A function of a draw's `size` value giving its shape (None for NumPy's
    ``size=None``): a constant's shape is read here, once; lengths kept on the host
    (host_shapes.py) as they are; else read from the device."""
    size = node.inputs[1]
    if isinstance(size, Constant):
        fixed = tuple(int(s) for s in size.data) if len(size.data) else None
        return lambda _: fixed
    return lambda value: shape_ints(value) or None


def _discrete_kernel(node: Apply, torch: Any, device: Any, out_dtype: Any, inplace: bool
                     ) -> Kernel:
    """Poisson counts, categorical indices and permutations, drawn by torch."""
    kind, shape_of = type(node.op), size_reader(node)

    def kernel(rng: Any, size: Any, *params: Any) -> list[Any]:
        rng, gen = seeded_generators(torch, device, rng, inplace)
        shape = shape_of(size)
        if kind is PermutationRV:
            (x,) = params
            if x.dim() == 0:
                return [rng, torch.randperm(int(x), generator=gen, device=device)
                        .to(out_dtype)]
            return [rng, x[torch.randperm(x.shape[0], generator=gen, device=device)]]
        if kind is PoissonRV:
            (lam,) = params
            lam = lam.to(torch.float64)
            if shape is not None:
                lam = lam.expand(shape)
            return [rng, torch.poisson(lam.contiguous(), generator=gen).to(out_dtype)]
        (p,) = params  # categorical
        batch = shape if shape is not None else tuple(p.shape[:-1])
        rows = p.to(torch.float64).expand(*batch, p.shape[-1]).reshape(-1, p.shape[-1])
        if rows.shape[0] == 0:
            return [rng, torch.empty(batch, dtype=out_dtype, device=device)]
        picked = torch.multinomial(rows, 1, replacement=True, generator=gen)
        return [rng, picked.reshape(batch).to(out_dtype)]

    return kernel


def _bounds_checked(torch: Any, low: Any, high: Any) -> Any:
    """high - low, after NumPy's check that low < high everywhere (reads the device)."""
    span = high.to(torch.int64) - low.to(torch.int64)
    if bool((span <= 0).any()):
        raise ValueError("integers: low >= high")
    return span


def _integers(node: Apply, torch: Any, device: Any, out_dtype: Any) -> Any:
    """integers(low, high) as `draw(gen, shape, low, high)`: constant scalar bounds read
    here, once, for torch.randint; array (or computed) bounds as ``low + r % (high -
    low)`` for r uniform in [0, 2**62) (a bias below (high - low) / 2**62), their check
    low < high run once per bounds tensor (PerTensor)."""
    from workbench.core.link.gpu.lower_random_shaped import PerTensor

    bounds = node.inputs[2:]
    if all(isinstance(p, Constant) and not p.type.ndim for p in bounds):
        low, high = (int(p.data) for p in bounds)

        def draw_scalar(gen: Any, shape: tuple[int, ...], *_: Any) -> Any:
            if low >= high:
                raise ValueError("integers: low >= high")
            return torch.randint(low, high, shape, generator=gen, device=device,
                                 dtype=out_dtype)

        return draw_scalar
    span_of = PerTensor(lambda low, high: _bounds_checked(torch, low, high))

    def draw(gen: Any, shape: tuple[int, ...], low: Any, high: Any) -> Any:
        span = span_of(low, high)
        r = torch.randint(0, 2**62, shape, generator=gen, device=device, dtype=torch.int64)
        return (low.to(torch.int64) + r % span).to(out_dtype)

    return draw


def _checking(kernel: Kernel | None, op: RandomVariable, torch: Any) -> Kernel | None:
    """`kernel` after NumPy's checks of the parameters (`RandomVariable.check_params`,
    NumPy's messages), run once per parameter tensor (PerTensor), before any draw."""
    if kernel is None or not op.param_checks:
        return kernel
    from workbench.core.link.gpu.lower_random_shaped import PerTensor

    checked = PerTensor(lambda *params: op.check_params(params, torch))

    def run(rng: Any, size: Any, *params: Any) -> list[Any]:
        checked(*params)
        return kernel(rng, size, *params)

    return run


@register_lowering(RandomVariable)
def lower_random(node: Apply, ctx: LowerContext) -> Kernel | None:
    return _checking(_draw_kernel(node, ctx), node.op, ctx.torch)


def _draw_kernel(node: Apply, ctx: LowerContext) -> Kernel | None:
    op = node.op
    kind = type(op)
    if kind in (PoissonRV, CategoricalRV, PermutationRV):
        return _discrete_kernel(node, ctx.torch, ctx.device, ctx.dtype(node.outputs[1]),
                                op.inplace)
    from workbench.core.link.gpu.lower_random_shaped import shaped_kernel

    shaped = shaped_kernel(node, ctx)
    if shaped is not None:
        return shaped
    if kind not in (NormalRV, UniformRV, ExponentialRV, BernoulliRV, IntegersRV):
        return None
    torch, device = ctx.torch, ctx.device
    out_dtype = ctx.dtype(node.outputs[1])
    work = out_dtype if op.dtype.is_float else torch.float64
    shape_of = size_reader(node)
    integers = _integers(node, torch, device, out_dtype) if kind is IntegersRV else None

    def kernel(rng: Any, size: Any, *params: Any) -> list[Any]:
        rng, gen = seeded_generators(torch, device, rng, op.inplace)
        shape = shape_of(size)
        if shape is None:
            shape = tuple(torch.broadcast_shapes(*(p.shape for p in params)))
        if integers is not None:
            return [rng, integers(gen, shape, *params)]
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
