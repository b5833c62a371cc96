"""RandomVariable: the Op of a random draw, with the generator state as input and output.

A node of a RandomVariable has inputs ``(rng, size, *params)`` and outputs
``(next_rng, draw)``; its default output is the draw. `perform` copies the
generator, draws with the NumPy `Generator` method of the same name and
returns the advanced copy, so the same input state always gives the same draw
(the node is a pure function of its inputs) and the state only moves forward
through updates. The inplace variant (``inplace=True``, destroy_map {0: [0]})
advances the input generator itself, saving the copy (a few µs per draw,
benchmarks/bench_random.py): the inplace pass makes it when the compiled call
updates that generator (`function` marks an updated shared generator mutable) and
the DestroyHandler finds every other reader of the old state can run first; a
generator passed in, held as a constant or not updated is never mutated. Inside a
loop body, the generator the loop carries as its state is such a value
(`Scan.mutable_inner_inputs`): the body's draws advance it in place at every step,
the loop having copied the outer generator once for the call. Hence:

- constant folding never computes a draw (`do_constant_folding` is False: a
  draw must change from one call to the next);
- the merge pass may merge two nodes only when they have the same generator
  state and parameters, which give the same draw anyway (distinct streams are
  distinct inputs and are never merged).

`size` is an int64 vector (empty for NumPy's ``size=None``); the parameters
broadcast like NumPy's. A subclass names its NumPy method (`method`), the rank
of one draw (`ndim_supp`), the rank of each parameter in one draw
(`ndims_params`) and, when the draw is a differentiable function of its
parameters for fixed noise, its derivatives (`partials`), from which both
`L_op` and `R_op` follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.op import Op
from workbench.core.random.type import (
    RandomGeneratorType,
    as_generator_variable,
    copy_generator,
)
from workbench.core.tensor.elemwise import broadcast_static_shapes
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["RandomVariable", "as_size_vector"]

StaticShape = tuple[int | None, ...]


def as_size_vector(size: Any) -> Variable:
    """NumPy's `size` argument (None, an int, a sequence of ints and/or integer scalars,
    or an integer vector) as an int64 vector of static length; None gives length 0."""
    from workbench.core.tensor.join import as_int_vector, as_length

    if size is None:
        return as_int_vector([])
    if isinstance(size, Variable):
        vec = as_tensor_variable(size)
        if vec.type.ndim == 0:
            return as_int_vector([as_length(vec, "size")])
        if vec.type.ndim != 1 or not vec.type.dtype.is_int or vec.type.shape[0] is None:
            raise TypeError(f"size must be an integer vector of known length, got {vec} of "
                            f"type {vec.type}")
        return vec
    if isinstance(size, (int, np.integer)):
        size = (size,)
    return as_int_vector([as_length(s, "size") for s in size])


class RandomVariable(Op):
    """A random draw from the distribution named by `method` (see the module docstring).

    `dtype`: the dtype of the draw. `inplace`: advance the input generator itself
    instead of a copy (only safe when nothing else reads that state).
    """

    __props__ = ("dtype", "inplace")
    default_output = 1
    #: the NumPy Generator method drawing from this distribution
    method = ""
    #: rank of one draw (0: scalar draws, 1: vector draws such as dirichlet)
    ndim_supp = 0
    #: rank of each parameter within one draw
    ndims_params: tuple[int, ...] = ()
    #: NumPy's checks of the parameters, as (parameter index, constraint, NumPy's
    #: message) with a constraint of `violates`; the py and C linkers leave them to NumPy,
    #: the torch kernels run `check_params` (the same messages)
    param_checks: tuple[tuple[int, str, str], ...] = ()
    #: whether a parameter's dimensions before its last `ndims_params` are batch
    #: dimensions of the draw (False for choice and permutation: a parameter is a whole
    #: population, and the draw's shape is set by `size` and `support_shape`)
    batched_params = True
    #: whether the entries along the batch dimensions are independent given the
    #: parameters (so a part of a draw has the law of a smaller draw: rewrites.py)
    independent_batch = True
    #: what the C linker's report says of these nodes
    why_no_c_code = ("random draws run NumPy's Generator through perform inside the C loop "
                     "(the same draws as the py linker)")

    def __init__(self, dtype: str = "float64", inplace: bool = False) -> None:
        self.dtype = dtypes.as_dtype(dtype)
        self.inplace = inplace
        if inplace:
            self.destroy_map = {0: [0]}

    def __str__(self) -> str:
        return f"{self.method}_rv{{{self.dtype}{', inplace' if self.inplace else ''}}}"

    # -- building -----------------------------------------------------------------
    def make_node(self, rng: Any, size: Any, *params: Any) -> Apply:
        rng = as_generator_variable(rng)
        size = size if isinstance(size, Variable) and size.type.ndim == 1 else \
            as_size_vector(size)
        params = [as_tensor_variable(p) for p in params]
        if len(params) != len(self.ndims_params):
            raise TypeError(f"{self.method} takes {len(self.ndims_params)} parameters, got "
                            f"{len(params)}")
        for p, nd in zip(params, self.ndims_params):
            if p.type.ndim < nd:
                raise ValueError(f"{self.method}: parameter {p} ({p.type}) needs at least {nd} "
                                 f"dimension{'s' if nd != 1 else ''}")
        shape = self.static_shape(size, params)
        draw = TensorType(self.dtype, shape)()
        return Apply(self, [rng, size, *params], [rng.type(), draw])

    def batch_shape_of_params(self, params: Sequence[Variable]) -> StaticShape:
        """The broadcast of the parameters' batch shapes (ValueError if they cannot)."""
        batch = [p.type.shape[: p.type.ndim - nd] for p, nd in zip(params, self.ndims_params)]
        ndim = max((len(b) for b in batch), default=0)
        padded = [(1,) * (ndim - len(b)) + tuple(b) for b in batch]
        result = broadcast_static_shapes(padded) if padded else ()
        if result is None:
            raise ValueError(f"{self.method}: the parameters' shapes "
                             f"{[p.type.shape for p in params]} do not broadcast")
        return result

    def support_shape(self, params: Sequence[Variable]) -> StaticShape:
        """The static shape of one draw (() for scalar distributions)."""
        return ()

    def static_shape(self, size: Variable, params: Sequence[Variable]) -> StaticShape:
        n = size.type.shape[0]
        if n == 0:
            batch = self.batch_shape_of_params(params)
        elif isinstance(size, Constant):
            batch = tuple(int(s) for s in np.asarray(size.data).reshape(-1))
        else:
            from workbench.core.tensor.join import vector_entries

            batch = tuple(e if isinstance(e, int) else None for e in vector_entries(size))
        if n and self.batched_params:
            self.check_size_fits(batch, params)
        return tuple(batch) + tuple(self.support_shape(params))

    def check_size_fits(self, size: StaticShape, params: Sequence[Variable]) -> None:
        """NumPy's rule for an explicit `size`: each parameter's batch shape broadcasts to
        it unchanged (right-aligned, each length 1 or size's); ValueError where the static
        shapes say it cannot, as NumPy's "shape mismatch" at the call."""
        for k, (p, nd) in enumerate(zip(params, self.ndims_params)):
            batch = p.type.shape[: p.type.ndim - nd]
            aligned = zip(batch[::-1], size[::-1])
            if len(batch) > len(size) or any(
                    b is not None and s is not None and b not in (1, s) for b, s in aligned):
                raise ValueError(
                    f"{self.method}: size {tuple(size)} does not fit parameter {k} of shape "
                    f"{p.type.shape} (shape mismatch: its batch shape {tuple(batch)} "
                    f"cannot be broadcast to size, as NumPy requires)")

    # -- running ------------------------------------------------------------------
    def check_params(self, params: Sequence[Any], xp: Any) -> None:
        """Raise NumPy's ValueError where a parameter value breaks `param_checks`; `xp` is
        the array module of `params` (numpy or torch: reads the device once per check)."""
        for index, constraint, message in self.param_checks:
            if violates(constraint, params[index], xp):
                raise ValueError(message)

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        return False

    def draw(self, rng: np.random.Generator, size: tuple[int, ...] | None,
             *params: np.ndarray) -> Any:
        """The NumPy draw (override when the method's arguments differ)."""
        return getattr(rng, self.method)(*params, size=size)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        rng, size, *params = inputs
        if not self.inplace:
            rng = copy_generator(rng)
        size_t = tuple(int(s) for s in size) if len(size) else None
        value = self.draw(rng, size_t, *params)
        output_storage[0][0] = rng
        output_storage[1][0] = np.asarray(value, dtype=self.dtype.numpy)

    # -- differentiation ------------------------------------------------------------
    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        # the state and size move the generator; the parameters only shape the draw
        return [[True, True], [True, True]] + [[False, True]] * (len(node.inputs) - 2)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        from workbench.core.graph.type import grad_undefined, is_disconnected

        rng, size, *params = inputs
        g = output_grads[1]
        why = (f"a draw of {self.method} is not a differentiable function of its "
               "parameters (it has no reparameterisation); use a score-function estimator")
        head = [grad_undefined(self, 0, rng, "the generator state is not differentiable"),
                grad_undefined(self, 1, size, "size is an integer")]
        if is_disconnected(g):
            from workbench.core.graph.type import disconnected_type

            return head + [disconnected_type() for _ in params]
        partials = self.partials(params, outputs[1])
        return head + [
            grad_undefined(self, 2 + i, p, why) if d is None else _sum_to(g * d, p)
            for i, (p, d) in enumerate(zip(params, partials))
        ]

    def partials(self, params: Sequence[Variable], draw: Variable) -> list[Any]:
        """Per parameter, the derivative of the draw holding the noise fixed, elementwise
        (broadcastable to the draw), or None where the draw is not differentiable."""
        return [None] * len(params)

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The draw's change along the parameters' `eval_points`, noise fixed (the same
        state draws the same noise); the generator state has none."""
        from workbench.core.graph.utils import MethodNotDefined

        draw = self.make_node(*inputs).outputs[1]  # merged with the node itself later
        terms = []
        for k, (d, v) in enumerate(zip(self.partials(list(inputs[2:]), draw),
                                       eval_points[2:])):
            if v is None:
                continue
            if d is None:
                raise MethodNotDefined(f"{self}: the draw is not differentiable in its "
                                       f"parameter {k}")
            terms.append(d * v)
        if not terms:
            return [None, None]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        if total.type.ndim < draw.type.ndim or total.type.shape != draw.type.shape:
            from workbench.core.tensor.reshape import broadcast_to
            from workbench.core.tensor.shape import shape_tuple

            total = broadcast_to(total, shape_tuple(draw))
        return [None, total]


#: NumPy's largest Poisson mean (Generator.poisson: "lam value too large" above it)
POISSON_LAM_MAX = float(np.iinfo(np.int64).max - np.sqrt(np.iinfo(np.int64).max) * 10)


def violates(constraint: str, x: Any, xp: Any) -> bool:
    """Whether array `x` (of module `xp`) breaks NumPy's constraint of that name:
    ``non_negative`` (a sign bit set, NaN allowed), ``positive`` (NaN allowed),
    ``unit_interval`` (in [0, 1], NaN not) or ``poisson`` (non-negative, not NaN; a
    value not below POISSON_LAM_MAX, NaN included, raises NumPy's "too large" first)."""
    if constraint == "non_negative":
        return bool((xp.signbit(x) & ~xp.isnan(x)).any())
    if constraint == "positive":
        return bool((x <= 0).any())
    if constraint == "unit_interval":
        return not bool(((x >= 0) & (x <= 1)).all())
    if constraint == "poisson":
        if not bool((x <= POISSON_LAM_MAX).all()):  # NaN too, as NumPy says
            raise ValueError("lam value too large")
        return not bool((x >= 0).all())
    raise KeyError(f"unknown parameter constraint {constraint!r}")


def _sum_to(g: Variable, p: Variable) -> Variable:
    """`g`, of the draw's shape, summed to the shape of parameter `p` (in p's float dtype)."""
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.reshape import sum_to

    out = sum_to(g, p)
    return cast(out, p.type.dtype) if p.type.dtype.is_float and out.type.dtype != p.type.dtype \
        else out


def is_generator(var: Variable) -> bool:
    return isinstance(var.type, RandomGeneratorType)
