"""Torch kernels of the random draws whose shapes or algorithms take more than one call:
gamma, beta, binomial, dirichlet, multivariate_normal and choice.

Each draws with a `torch.Generator` seeded from the graph's state (lower_random.py's
`seeded_generators`), so its draws are reproducible from the seed but are not NumPy's:

- gamma(shape, scale): ``scale * torch._standard_gamma(shape)``;
- beta(a, b): ``X / (X + Y)`` for standard gamma draws X of a and Y of b;
- binomial(n, p): ``torch.binomial``;
- dirichlet(alpha): ``torch._sample_dirichlet`` over alpha broadcast to the draw;
- multivariate_normal(mean, cov): ``mean + L z`` for standard normal z and a factor L
  of cov with ``L L^T = cov``: the Cholesky factor, or, for a covariance that is only
  positive semi-definite, ``V sqrt(w)`` of its eigendecomposition (NumPy factors by SVD);
- choice(a, size, replace, p): ``torch.randint``, ``torch.randperm`` or
  ``torch.multinomial``, with NumPy's checks (a sample larger than the population
  without replacement, probabilities that are negative or do not sum to 1: ValueError).
"""

from __future__ import annotations

import math
from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.link.gpu.registry import Kernel, LowerContext
from workbench.core.random.distributions import (
    BetaRV,
    BinomialRV,
    ChoiceRV,
    DirichletRV,
    GammaRV,
    MultivariateNormalRV,
)

__all__ = ["shaped_kernel"]

#: NumPy's tolerance on the sum of choice's probabilities
_P_SUM_TOLERANCE = math.sqrt(2.0**-52)


class PerTensor:
    """`compute(*tensors)` for the last tensors given, reused while the same tensors come
    again unmodified (constants, or a loop's non-sequences at every step): a check or a
    factorisation that reads the device runs once per tensor, not once per draw."""

    def __init__(self, compute: Any) -> None:
        self.compute = compute
        self.seen: tuple[tuple[Any, int], ...] = ()
        self.value: Any = None

    def __call__(self, *tensors: Any) -> Any:
        seen = tuple((t, t._version) for t in tensors)
        if len(seen) != len(self.seen) or any(
                t is not old or v != old_v for (t, v), (old, old_v) in zip(seen, self.seen)):
            self.value = self.compute(*tensors)  # (kept: their memory is not reused meanwhile)
            self.seen = seen
        return self.value


def _gamma(torch: Any, gen: Any, shape: tuple[int, ...], alpha: Any) -> Any:
    return torch._standard_gamma(alpha.expand(shape).contiguous(), generator=gen)


def _cov_factor(torch: Any, cov: Any) -> Any:
    """L with L L^T = cov, per matrix of a stack: Cholesky where it succeeds, else from the
    eigendecomposition (a positive semi-definite cov, as NumPy accepts)."""
    factor, info = torch.linalg.cholesky_ex(cov)
    if bool((info != 0).any()):
        w, v = torch.linalg.eigh(cov)
        eig_factor = v * torch.sqrt(torch.clamp(w, min=0.0)).unsqueeze(-2)
        bad = (info != 0).reshape(*info.shape, 1, 1)
        factor = torch.where(bad, eig_factor, factor)
    return factor


def _check_p(p: Any) -> None:
    """NumPy's check of choice's probabilities (reads the device)."""
    if bool((p < 0).any()) or abs(float(p.sum()) - 1.0) > _P_SUM_TOLERANCE:
        raise ValueError("choice: probabilities must be non-negative and sum to 1")


def _choice(torch: Any, gen: Any, device: Any, op: ChoiceRV, shape: tuple[int, ...],
            a: Any, p: Any, population: Any, check_p: Any) -> Any:
    n = population(a) if op.from_range else int(a.shape[0])
    count = math.prod(shape)
    if p.numel():
        if p.shape[0] != n:
            raise ValueError(f"choice: p has {p.shape[0]} probabilities for a population of "
                             f"{n}")
        check_p(p)
    if not op.replace and count > n:
        raise ValueError(f"choice: cannot take a sample of {count} from a population of {n} "
                         "without replacement")
    if count == 0:
        index = torch.empty(0, dtype=torch.int64, device=device)
    elif p.numel():
        index = torch.multinomial(p.to(torch.float64), count, replacement=op.replace,
                                  generator=gen)
    elif op.replace:
        index = torch.randint(0, n, (count,), generator=gen, device=device)
    else:
        index = torch.randperm(n, generator=gen, device=device)[:count]
    index = index.reshape(shape)
    return index if op.from_range else a[index]


def shaped_kernel(node: Apply, ctx: LowerContext) -> Kernel | None:
    """The torch kernel of a node of one of this module's distributions, else None."""
    from workbench.core.link.gpu.lower_random import seeded_generators, size_reader

    op = node.op
    kinds = (GammaRV, BetaRV, BinomialRV, DirichletRV, MultivariateNormalRV, ChoiceRV)
    if not isinstance(op, kinds):
        return None
    torch, device = ctx.torch, ctx.device
    out_dtype = ctx.dtype(node.outputs[1])
    work = out_dtype if op.dtype.is_float else torch.float64
    shape_of = size_reader(node)  # a constant size read here, once
    # device reads once per tensor of parameters, not per draw
    cov_factor = PerTensor(lambda cov: _cov_factor(torch, cov.to(work)))
    population, check_p = PerTensor(lambda a: int(a[0])), PerTensor(_check_p)

    def kernel(rng: Any, size: Any, *params: Any) -> list[Any]:
        rng, gen = seeded_generators(torch, device, rng, op.inplace)
        if isinstance(op, ChoiceRV):
            draw = _choice(torch, gen, device, op, shape_of(size) or (), *params, population,
                           check_p)
            return [rng, draw.to(out_dtype)]
        given, params = params, [p.to(work) for p in params]
        if isinstance(op, BinomialRV) and given[0].is_floating_point():
            params[0] = torch.trunc(params[0])
        shape = shape_of(size)
        if shape is None:  # the parameters' broadcast
            shape = tuple(torch.broadcast_shapes(
                *(p.shape[: p.dim() - nd] for p, nd in zip(params, op.ndims_params))))
        if isinstance(op, GammaRV):
            alpha, scale = params
            draw = _gamma(torch, gen, shape, alpha) * scale
        elif isinstance(op, BetaRV):
            a, b = params
            x, y = _gamma(torch, gen, shape, a), _gamma(torch, gen, shape, b)
            draw = x / (x + y)
        elif isinstance(op, BinomialRV):
            n, p = params  # a float n (a scalar) is truncated, as NumPy takes it
            draw = torch.binomial(n.expand(shape).contiguous(), p.expand(shape).contiguous(),
                                  generator=gen)
        elif isinstance(op, DirichletRV):
            (alpha,) = params
            alpha = alpha.expand(*shape, alpha.shape[-1]).contiguous()
            draw = torch._sample_dirichlet(alpha, generator=gen)
        else:  # multivariate normal
            mean, cov = params
            k = mean.shape[-1]
            z = torch.randn((*shape, k, 1), generator=gen, device=device, dtype=work)
            factor = cov_factor(given[1]).expand(*shape, k, k)
            draw = mean + (factor @ z).squeeze(-1)
        return [rng, draw.to(out_dtype)]

    return kernel
