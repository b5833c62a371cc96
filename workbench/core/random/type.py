"""The Type of a random generator's state, and shared variables holding one.

A value of `RandomGeneratorType` is a `numpy.random.Generator`. Random Ops take
one as an input and return the advanced generator as an output, so the state
of a random stream flows through the graph like any other value: a compiled
function reads it from a shared variable and writes the new one back as an
update. Nothing random is hidden inside an Op.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from workbench.core.graph.basic import Variable
from workbench.core.graph.type import Type
from workbench.core.link.shared import SharedVariable, shared_constructor

__all__ = [
    "RandomGeneratorSharedVariable", "RandomGeneratorType", "random_generator_type",
    "copy_generator", "generator_constructor",
]  # fmt: skip


class RandomGeneratorType(Type):
    """The state of a `numpy.random.Generator` (its bit generator and position)."""

    __props__ = ()

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        if isinstance(data, np.random.Generator):
            return data
        raise TypeError(
            f"expected a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), got "
            f"{type(data).__name__} {data!r}"
        )

    def values_eq(self, a: Any, b: Any) -> bool:
        """Two generators are equal when their bit generators are in the same state."""
        sa, sb = a.bit_generator.state, b.bit_generator.state
        return _states_equal(sa, sb)

    def may_share_memory(self, a: Any, b: Any) -> bool:
        return a is b

    def get_size(self, shape_info: Any) -> int:
        return 0

    def random_value(self, rng: np.random.Generator) -> np.random.Generator:
        """A generator in a random state (what DEBUG mode feeds a graph to check it)."""
        return np.random.default_rng(int(rng.integers(2**63)))

    def __str__(self) -> str:
        return "RandomGeneratorType"


def _states_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_states_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


random_generator_type = RandomGeneratorType()


def copy_generator(rng: np.random.Generator) -> np.random.Generator:
    """An independent copy of `rng` in the same state (4x cheaper than deepcopy: a new bit
    generator of the same kind and seed sequence, given the state)."""
    bits = rng.bit_generator
    try:
        fresh = type(bits)(bits.seed_seq)
        fresh.state = bits.state
    except (TypeError, ValueError, AttributeError):  # a bit generator of another make
        return copy.deepcopy(rng)
    return np.random.Generator(fresh)


class RandomGeneratorSharedVariable(SharedVariable):
    """A shared variable holding a `numpy.random.Generator`.

    `default_update` (set by `RandomStream`) is the expression of its next state:
    a compiled function that draws from it adds that update unless given
    another (or `no_default_updates=True`).
    """

    def __str__(self) -> str:
        return self.name if self.name is not None else "RNG"

    def default_update_in(self, variables: set[Variable]) -> Variable:
        """The update `function` gives this generator in a graph of `variables`: its
        `default_update`, or, when the draw that comes from is not in the graph (the
        graph holds a copy of it, e.g. vectorized), the next state of the one draw there
        that reads this generator."""
        update = self.default_update
        if update in variables:
            return update
        readers = {v.owner for v in variables if v.owner is not None
                   and self in v.owner.inputs and len(v.owner.outputs) == 2
                   and v.owner.outputs[0].type == self.type}
        return readers.pop().outputs[0] if len(readers) == 1 else update


@shared_constructor
def generator_constructor(value: Any, name: str | None = None, strict: bool = False,
                          allow_downcast: bool | None = None, borrow: bool = False,
                          **kwargs: Any) -> SharedVariable | None:
    """`shared(numpy.random.default_rng(seed))`: a RandomGeneratorSharedVariable (the
    generator is deep-copied unless `borrow`, so the caller's object never advances)."""
    if not isinstance(value, np.random.Generator):
        return None
    if kwargs:
        raise TypeError(f"shared(): unexpected keyword arguments {sorted(kwargs)} for a "
                        "numpy.random.Generator")
    if not borrow:
        value = copy.deepcopy(value)
    return RandomGeneratorSharedVariable(random_generator_type, value, strict=strict,
                                         allow_downcast=allow_downcast, name=name)


def as_generator_variable(rng: Any) -> Variable:
    """`rng` as a Variable of RandomGeneratorType: a Variable of that type is returned as
    is; a `numpy.random.Generator` becomes a constant (a copy: the same draws every call)."""
    from workbench.core.graph.basic import Constant

    if isinstance(rng, Variable):
        if not isinstance(rng.type, RandomGeneratorType):
            raise TypeError(f"rng must be a random generator variable, got {rng} of type "
                            f"{rng.type}; make one with shared(numpy.random.default_rng(seed))")
        return rng
    if isinstance(rng, np.random.Generator):
        return Constant(random_generator_type, copy.deepcopy(rng))
    raise TypeError(
        f"rng must be a shared random generator (shared(numpy.random.default_rng(seed))) or "
        f"a numpy.random.Generator, got {type(rng).__name__} {rng!r}"
    )
