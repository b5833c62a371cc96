"""RandomStream: draws whose generator states are shared variables updated by `function`.

    srng = wb.random.RandomStream(seed=42)
    x = srng.normal(0, 1, size=(3,))
    f = wb.function([], x)      # each call draws anew: the state is an implicit update

Each draw gets its own generator, a shared variable holding
``numpy.random.default_rng(numpy.random.SeedSequence(seed, spawn_key=(k,)))`` for
the k-th draw of the stream, whose `default_update` is the draw's advanced
generator. So a compiled function is reproducible from the seed, draws differ
from call to call, draws of one stream are independent, and two functions
share a state only when they use the same draw (the shared variable is then
visible in both graphs; `dprint` prints it and its update).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core.graph.basic import Variable
from workbench.core.random import distributions
from workbench.core.random.type import RandomGeneratorSharedVariable, generator_constructor

__all__ = ["RandomStream", "default_stream", "next_rng"]


def next_rng(draw: Variable) -> Variable:
    """The generator state after `draw` (the update to give its shared generator)."""
    from workbench.core.random.op import RandomVariable

    owner = draw.owner
    if owner is None or not isinstance(owner.op, RandomVariable):
        raise TypeError(f"{draw} is not a random draw (made by a RandomVariable)")
    return owner.outputs[0]


class RandomStream:
    """A source of random draws with explicit, seeded state (see the module docstring).

    Methods: one per distribution (`normal`, `uniform`, `bernoulli`, `binomial`,
    `categorical`, `choice`, `permutation`, `integers`, `poisson`, `gamma`, `beta`,
    `exponential`, `dirichlet`, `multivariate_normal`), with the same arguments as
    the functions of `workbench.random` but no `rng`. `seed(s)` re-seeds every
    generator of the stream; `state_updates` lists (generator, next state) pairs.
    """

    def __init__(self, seed: int | None = None, name: str = "rng") -> None:
        self.name = name
        self.state_updates: list[tuple[RandomGeneratorSharedVariable, Variable]] = []
        self._entropy = np.random.SeedSequence(seed).entropy

    def _generator(self, k: int) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence(self._entropy, spawn_key=(k,)))

    def seed(self, seed: int | None = None) -> None:
        """Re-seed every generator: the next calls of compiled functions draw what a fresh
        stream with this seed would draw on its first calls."""
        self._entropy = np.random.SeedSequence(seed).entropy
        for k, (rng, _) in enumerate(self.state_updates):
            rng.set_value(self._generator(k), borrow=True)

    def gen(self, fn: Callable[..., Variable], *args: Any, **kwargs: Any) -> Variable:
        """Draw with distribution function `fn` from a new generator of this stream."""
        if "rng" in kwargs:
            raise TypeError("a RandomStream draw takes no rng: the stream makes its own")
        k = len(self.state_updates)
        rng = generator_constructor(self._generator(k), name=f"{self.name}{k}", borrow=True)
        draw = fn(*args, rng=rng, **kwargs)
        update = next_rng(draw)
        rng.default_update = update
        self.state_updates.append((rng, update))
        return draw

    def __repr__(self) -> str:
        return f"RandomStream(name={self.name!r}, draws={len(self.state_updates)})"


def _method(fn: Callable[..., Variable]) -> Callable[..., Variable]:
    def method(self: RandomStream, *args: Any, **kwargs: Any) -> Variable:
        return self.gen(fn, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__qualname__ = f"RandomStream.{fn.__name__}"
    method.__doc__ = fn.__doc__
    return method


for _name, _fn in distributions.DISTRIBUTIONS.items():
    setattr(RandomStream, _name, _method(_fn))

_default_stream: list[RandomStream] = []


def default_stream() -> RandomStream:
    """The process-wide stream (unseeded) used by the functions when no `rng` is given."""
    if not _default_stream:
        _default_stream.append(RandomStream(name="default_rng"))
    return _default_stream[0]
