"""Random variables with explicit, seeded state.

    import workbench as wb
    srng = wb.random.RandomStream(seed=0)
    x = srng.normal(0.0, 1.0, size=(2, 3))
    f = wb.function([], x)          # the generator state is an implicit update
    f(), f()                        # two different draws; reproducible from the seed

or, functional, over a shared `numpy.random.Generator` you update yourself:

    rng = wb.shared(np.random.default_rng(42))
    x = wb.random.normal(0.0, 1.0, size=3, rng=rng)
    f = wb.function([], x, updates={rng: wb.random.next_rng(x)})
    f(), f()                        # == g = np.random.default_rng(42); g.normal(0, 1, 3) twice

The state is a value of `RandomGeneratorType` flowing through the graph (see
op.py). Linkers: py and c run the NumPy Generator (c through `perform`, which
its report lists); the gpu linker seeds a `torch.Generator` from the state,
so its draws are reproducible but differ from NumPy's.
"""

from workbench.core.random import rewrites as _rewrites  # noqa: F401  (registers them)
from workbench.core.random import vectorize as _vectorize  # noqa: F401  (registers the rule)
from workbench.core.random.distributions import *  # noqa: F403
from workbench.core.random.distributions import __all__ as _distributions_all
from workbench.core.random.op import RandomVariable, as_size_vector
from workbench.core.random.stream import RandomStream, default_stream, next_rng
from workbench.core.random.type import (
    RandomGeneratorSharedVariable,
    RandomGeneratorType,
    random_generator_type,
)

__all__ = [
    *_distributions_all, "RandomGeneratorSharedVariable", "RandomGeneratorType",
    "RandomStream", "RandomVariable", "as_size_vector", "default_stream", "next_rng",
    "random_generator_type",
]  # fmt: skip
