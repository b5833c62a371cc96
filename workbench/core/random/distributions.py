"""The distributions: one RandomVariable subclass each, and the functions that draw.

Every function takes the parameters, then `size` (NumPy's meaning), `rng` (a
shared generator variable, or a `numpy.random.Generator` used as a constant
state) and `dtype`, and returns the draw; the advanced generator is
``draw.owner.outputs[0]``. With the same generator state, a compiled graph
draws exactly what the NumPy `Generator` method of the same name draws with
the same arguments, except where a docstring says how a distribution NumPy
lacks is built (bernoulli, categorical) or how batched parameters are looped
(dirichlet, multivariate_normal).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Variable
from workbench.core.random.op import RandomVariable
from workbench.core.tensor.variable import as_tensor_variable

__all__ = [
    "bernoulli", "beta", "binomial", "categorical", "choice", "dirichlet", "exponential",
    "gamma", "integers", "multivariate_normal", "normal", "permutation", "poisson", "uniform",
    "DISTRIBUTIONS",
]  # fmt: skip


class NormalRV(RandomVariable):
    """normal(loc, scale): the draw is loc + scale * eps for a standard normal eps."""

    method = "normal"
    ndims_params = (0, 0)
    param_checks = ((1, "non_negative", "scale < 0"),)

    def partials(self, params: Sequence[Variable], draw: Variable) -> list[Any]:
        loc, scale = params
        return [1.0, (draw - loc) / scale]


class UniformRV(RandomVariable):
    """uniform(low, high): the draw is low + (high - low) * u for u uniform on [0, 1)."""

    method = "uniform"
    ndims_params = (0, 0)

    def partials(self, params: Sequence[Variable], draw: Variable) -> list[Any]:
        low, high = params
        u = (draw - low) / (high - low)
        return [1.0 - u, u]


class ExponentialRV(RandomVariable):
    """exponential(scale): the draw is scale * e for a standard exponential e."""

    method = "exponential"
    ndims_params = (0,)
    param_checks = ((0, "non_negative", "scale < 0"),)

    def partials(self, params: Sequence[Variable], draw: Variable) -> list[Any]:
        (scale,) = params
        return [draw / scale]


class GammaRV(RandomVariable):
    """gamma(shape, scale): differentiable in `scale` (the draw is scale * a standard
    gamma draw z) and in `shape` by implicit reparameterisation (Figurnov et al. 2018):
    holding u = P(shape, z) fixed, dz/dshape = -(dP/dshape)(shape, z) / pdf(z; shape),
    with P = wt.gammainc and its derivative wt.gammainc_da. An unbiased pathwise
    gradient of E[f(draw)], not the derivative of NumPy's sampler at a fixed seed."""

    method = "gamma"
    ndims_params = (0, 0)
    param_checks = ((0, "non_negative", "shape < 0"), (1, "non_negative", "scale < 0"))

    def partials(self, params: Sequence[Variable], draw: Variable) -> list[Any]:
        from workbench.core.tensor import math as tm

        shape, scale = params
        z = draw / scale
        log_pdf = (shape - 1.0) * tm.log(z) - z - tm.gammaln(shape)
        dz = -tm.gammainc_da(shape, z) / tm.exp(log_pdf)
        return [scale * dz, z]


class BetaRV(RandomVariable):
    method = "beta"
    ndims_params = (0, 0)
    param_checks = ((0, "positive", "a <= 0"), (1, "positive", "b <= 0"))


class PoissonRV(RandomVariable):
    method = "poisson"
    ndims_params = (0,)
    param_checks = ((0, "poisson", "lam < 0 or lam is NaN"),)


class BinomialRV(RandomVariable):
    """binomial(n, p): NumPy's; a float scalar n is taken as NumPy takes it (truncated
    to an int; NaN refused), a float array n refused as NumPy refuses it."""

    method = "binomial"
    ndims_params = (0, 0)
    param_checks = ((1, "unit_interval", "p < 0, p > 1 or p is NaN"),
                    (0, "non_negative", "n < 0"))

    def make_node(self, rng: Any, size: Any, n: Any, p: Any) -> Any:
        n = as_tensor_variable(n)
        if n.type.dtype.is_float and n.type.ndim:
            raise TypeError(f"binomial: n must be integers, got {n} of type {n.type} (NumPy's "
                            "Generator.binomial takes a float n only as a scalar)")
        return super().make_node(rng, size, n, p)

    def draw(self, rng: np.random.Generator, size: Any, n: Any, p: Any) -> Any:
        n = np.asarray(n)
        return rng.binomial(int(n) if n.dtype.kind == "f" else n, p, size=size)


class BernoulliRV(RandomVariable):
    """bernoulli(p): NumPy's ``binomial(1, p, size)``."""

    method = "bernoulli"
    ndims_params = (0,)
    param_checks = ((0, "unit_interval", "p < 0, p > 1 or p is NaN"),)

    def draw(self, rng: np.random.Generator, size: Any, p: Any) -> Any:
        return rng.binomial(1, p, size=size)


class IntegersRV(RandomVariable):
    """integers(low, high): NumPy's ``integers(low, high, size, dtype)`` (high excluded)."""

    method = "integers"
    ndims_params = (0, 0)

    def draw(self, rng: np.random.Generator, size: Any, low: Any, high: Any) -> Any:
        return rng.integers(low, high, size=size, dtype=self.dtype.numpy)


class CategoricalRV(RandomVariable):
    """categorical(p): the index k with probability p[..., k]. NumPy has no such method;
    the draw is the inverse CDF at ``u = rng.uniform(size=batch_shape)``:
    ``(u[..., None] >= cumsum(p, -1)).sum(-1)``."""

    method = "categorical"
    ndims_params = (1,)

    def draw(self, rng: np.random.Generator, size: Any, p: Any) -> Any:
        p = np.asarray(p)
        batch = size if size is not None else p.shape[:-1]
        u = rng.uniform(size=batch)
        cdf = np.cumsum(p, axis=-1)
        cdf = cdf / cdf[..., -1:]
        k = (np.asarray(u)[..., None] >= cdf).sum(axis=-1)
        return np.minimum(k, p.shape[-1] - 1)


class _LoopedBatchRV(RandomVariable):
    """Vector draws whose NumPy method takes unbatched parameters only: a batch is drawn
    one item after another in C order, each item one call of the NumPy method."""

    def draw(self, rng: np.random.Generator, size: Any, *params: Any) -> Any:
        params = [np.asarray(p) for p in params]
        batch = [p.shape[: p.ndim - nd] for p, nd in zip(params, self.ndims_params)]
        if not any(batch):
            return getattr(rng, self.method)(*params, size=size)
        shape = tuple(size) if size is not None else np.broadcast_shapes(*batch)
        params = [np.broadcast_to(p, shape + p.shape[p.ndim - nd:])
                  for p, nd in zip(params, self.ndims_params)]
        out = np.empty(shape + self.support_shape_of(params), dtype=self.dtype.numpy)
        for idx in np.ndindex(*shape):
            out[idx] = getattr(rng, self.method)(*(p[idx] for p in params))
        return out


class DirichletRV(_LoopedBatchRV):
    method = "dirichlet"
    ndim_supp = 1
    ndims_params = (1,)

    def support_shape(self, params: Sequence[Variable]) -> tuple[int | None, ...]:
        return (params[0].type.shape[-1],)

    def support_shape_of(self, params: Sequence[Any]) -> tuple[int, ...]:
        return (params[0].shape[-1],)


class MultivariateNormalRV(_LoopedBatchRV):
    method = "multivariate_normal"
    ndim_supp = 1
    ndims_params = (1, 2)

    def support_shape(self, params: Sequence[Variable]) -> tuple[int | None, ...]:
        return (params[0].type.shape[-1],)

    def support_shape_of(self, params: Sequence[Any]) -> tuple[int, ...]:
        return (params[0].shape[-1],)


class ChoiceRV(RandomVariable):
    """choice(a, p): NumPy's ``choice(a, size, replace, p)``; `a` is an int (choose from
    range(a)) or an array whose rows are chosen; `p` an optional vector of probabilities
    (empty: uniform)."""

    __props__ = ("dtype", "inplace", "replace")
    method = "choice"
    ndims_params = (1, 1)
    batched_params = False

    def __init__(self, dtype: str = "int64", inplace: bool = False, replace: bool = True
                 ) -> None:
        super().__init__(dtype, inplace)
        self.replace = bool(replace)

    def __str__(self) -> str:
        return f"choice_rv{{{self.dtype}, replace={self.replace}}}"

    def batch_shape_of_params(self, params: Sequence[Variable]) -> tuple[int | None, ...]:
        return ()

    def support_shape(self, params: Sequence[Variable]) -> tuple[int | None, ...]:
        """One element of the population: a row of a 2+-d `a` (NumPy's axis=0), so the
        draw's shape is ``size + a.shape[1:]``."""
        return () if self.from_range else tuple(params[0].type.shape[1:])

    @property
    def independent_batch(self) -> bool:  # type: ignore[override]
        """Without replacement, the entries of one draw depend on each other."""
        return self.replace

    def draw(self, rng: np.random.Generator, size: Any, a: Any, p: Any) -> Any:
        population = int(a[0]) if self.from_range else a
        return rng.choice(population, size=size, replace=self.replace,
                          p=None if p.size == 0 else p)

    #: `a` holds one int n and the population is range(n)
    from_range = False


class ChoiceFromRangeRV(ChoiceRV):
    """choice(n, ...) with an int n: the population is range(n) (a is a length-1 vector)."""

    from_range = True


class PermutationRV(RandomVariable):
    """permutation(x): NumPy's ``permutation(x)``; an int gives a permuted range(x), an
    array its rows shuffled. No `size`."""

    method = "permutation"
    ndims_params = (0,)
    batched_params = False
    independent_batch = False

    def batch_shape_of_params(self, params: Sequence[Variable]) -> tuple[int | None, ...]:
        return ()

    def support_shape(self, params: Sequence[Variable]) -> tuple[int | None, ...]:
        (x,) = params
        if x.type.ndim == 0:
            from workbench.core.graph.basic import Constant

            return (int(x.data),) if isinstance(x, Constant) else (None,)
        return tuple(x.type.shape)

    def draw(self, rng: np.random.Generator, size: Any, x: Any) -> Any:
        x = np.asarray(x)
        return rng.permutation(int(x) if x.ndim == 0 else x)


# -- the functions -------------------------------------------------------------------------


def _draw(op: RandomVariable, params: Sequence[Any], size: Any, rng: Any) -> Variable:
    if rng is None:  # a new generator of the process-wide stream, updated by function
        from workbench.core.random.stream import default_stream

        return default_stream().gen(lambda rng: op(rng, size, *params))
    return op(rng, size, *params)


def _float_dtype(dtype: Any) -> Any:
    if dtype is not None:
        return dtype
    from workbench.core import dtypes

    return dtypes.default_float_dtype()


def normal(loc: Any = 0.0, scale: Any = 1.0, size: Any = None, rng: Any = None,
           dtype: Any = None) -> Variable:
    """Normal draws (NumPy's ``Generator.normal``); differentiable in loc and scale."""
    return _draw(NormalRV(_float_dtype(dtype)), (loc, scale), size, rng)


def uniform(low: Any = 0.0, high: Any = 1.0, size: Any = None, rng: Any = None,
            dtype: Any = None) -> Variable:
    """Uniform draws on [low, high); differentiable in low and high."""
    return _draw(UniformRV(_float_dtype(dtype)), (low, high), size, rng)


def exponential(scale: Any = 1.0, size: Any = None, rng: Any = None, dtype: Any = None
                ) -> Variable:
    """Exponential draws with mean `scale`; differentiable in scale."""
    return _draw(ExponentialRV(_float_dtype(dtype)), (scale,), size, rng)


def gamma(shape: Any, scale: Any = 1.0, size: Any = None, rng: Any = None, dtype: Any = None
          ) -> Variable:
    """Gamma draws (NumPy's shape/scale form); differentiable in scale."""
    return _draw(GammaRV(_float_dtype(dtype)), (shape, scale), size, rng)


def beta(a: Any, b: Any, size: Any = None, rng: Any = None, dtype: Any = None) -> Variable:
    """Beta draws (not differentiable)."""
    return _draw(BetaRV(_float_dtype(dtype)), (a, b), size, rng)


def poisson(lam: Any = 1.0, size: Any = None, rng: Any = None, dtype: Any = "int64"
            ) -> Variable:
    """Poisson counts."""
    return _draw(PoissonRV(dtype), (lam,), size, rng)


def binomial(n: Any, p: Any, size: Any = None, rng: Any = None, dtype: Any = "int64"
             ) -> Variable:
    """Binomial counts."""
    return _draw(BinomialRV(dtype), (n, p), size, rng)


def bernoulli(p: Any = 0.5, size: Any = None, rng: Any = None, dtype: Any = "int64"
              ) -> Variable:
    """1 with probability p, else 0 (NumPy's ``binomial(1, p, size)``)."""
    return _draw(BernoulliRV(dtype), (p,), size, rng)


def integers(low: Any, high: Any = None, size: Any = None, rng: Any = None,
             dtype: Any = "int64") -> Variable:
    """Integers in [low, high) (in [0, low) when high is None), as NumPy's ``integers``."""
    if high is None:
        low, high = 0, low
    return _draw(IntegersRV(dtype), (low, high), size, rng)


def categorical(p: Any, size: Any = None, rng: Any = None, dtype: Any = "int64") -> Variable:
    """Indices k drawn with probability p[..., k] (batched over p's leading dimensions)."""
    return _draw(CategoricalRV(dtype), (p,), size, rng)


def dirichlet(alpha: Any, size: Any = None, rng: Any = None, dtype: Any = None) -> Variable:
    """Dirichlet vectors; batched `alpha` draws one NumPy call per batch item."""
    return _draw(DirichletRV(_float_dtype(dtype)), (alpha,), size, rng)


def multivariate_normal(mean: Any, cov: Any, size: Any = None, rng: Any = None,
                        dtype: Any = None) -> Variable:
    """Multivariate normal vectors; batched mean/cov draw one NumPy call per batch item."""
    return _draw(MultivariateNormalRV(_float_dtype(dtype)), (mean, cov), size, rng)


def choice(a: Any, size: Any = None, replace: bool = True, p: Any = None, rng: Any = None
           ) -> Variable:
    """Elements of `a` (or of range(a) for an int), as NumPy's ``choice``."""
    p_var = as_tensor_variable(np.zeros(0) if p is None else p)
    if isinstance(a, (int, np.integer)) or (isinstance(a, Variable) and a.type.ndim == 0):
        a_var = as_tensor_variable(a).dimshuffle("x")
        op: RandomVariable = ChoiceFromRangeRV("int64", replace=replace)
    else:
        a_var = as_tensor_variable(a)
        op = ChoiceRV(a_var.type.dtype, replace=replace)
    return _draw(op, (a_var, p_var), size, rng)


def permutation(x: Any, rng: Any = None) -> Variable:
    """A permutation of range(x) for an int x, or of the rows of array x."""
    x_var = as_tensor_variable(x)
    dtype = "int64" if x_var.type.ndim == 0 else x_var.type.dtype
    return _draw(PermutationRV(dtype), (x_var,), None, rng)


#: name -> function, for the RandomStream methods and the docs
DISTRIBUTIONS = {f.__name__: f for f in (
    normal, uniform, exponential, gamma, beta, poisson, binomial, bernoulli, integers,
    categorical, dirichlet, multivariate_normal, choice, permutation)}
