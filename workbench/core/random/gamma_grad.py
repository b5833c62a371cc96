"""The implicit reparameterisation gradient of gamma draws in their shape parameter.

For z ~ Gamma(alpha, 1) with CDF P(alpha, z) (the regularised lower incomplete
gamma function), holding u = P(alpha, z) fixed gives (Figurnov et al., 2018)

    dz/dalpha = -(dP/dalpha)(alpha, z) / p(z; alpha),  p(z; alpha) = z^(alpha-1) e^-z / G(alpha)

`GammaShapeGrad` computes it elementwise in NumPy: P by its series (z < alpha + 1)
or its continued fraction (otherwise), dP/dalpha by a central difference of P.
It is an unbiased pathwise gradient of E[f(z)], not the derivative of NumPy's
rejection sampler at a fixed seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.graph.type import grad_not_implemented
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["GammaShapeGrad", "regularized_lower_gamma"]

_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _lgam(a: np.ndarray) -> np.ndarray:
    return np.asarray(_lgamma(a), dtype=np.float64)


def regularized_lower_gamma(a: np.ndarray, x: np.ndarray, iterations: int = 400
                            ) -> np.ndarray:
    """P(a, x) for a > 0, x >= 0, elementwise (series below a + 1, continued fraction above)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    result = np.zeros(a.shape)
    positive = x > 0
    low = positive & (x < a + 1)
    high = positive & ~low
    if low.any():
        aa, xx = a[low], x[low]
        term = 1.0 / aa
        total = term.copy()
        ap = aa.copy()
        for _ in range(iterations):
            ap = ap + 1
            term = term * xx / ap
            total = total + term
            if np.all(np.abs(term) < np.abs(total) * 1e-17):
                break
        result[low] = total * np.exp(-xx + aa * np.log(xx) - _lgam(aa))
    if high.any():  # Q(a, x) by the modified Lentz continued fraction; P = 1 - Q
        aa, xx = a[high], x[high]
        tiny = 1e-300
        b = xx + 1 - aa
        c = np.full(aa.shape, 1 / tiny)
        d = 1 / b
        h = d.copy()
        for i in range(1, iterations):
            an = -i * (i - aa)
            b = b + 2
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1 / d
            delta = d * c
            h = h * delta
            if np.all(np.abs(delta - 1) < 1e-16):
                break
        result[high] = 1 - np.exp(-xx + aa * np.log(xx) - _lgam(aa)) * h
    return result


class GammaShapeGrad(Op):
    """dz/dalpha of standard gamma draws z at shape alpha (see the module docstring)."""

    __props__ = ()

    def make_node(self, z: Any, alpha: Any) -> Apply:
        z, alpha = as_tensor_variable(z), as_tensor_variable(alpha)
        if alpha.type.ndim > z.type.ndim:
            raise ValueError(f"{self}: alpha {alpha.type} has more dimensions than z {z.type}")
        return Apply(self, [z, alpha], [TensorType("float64", z.type.shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        z, alpha = np.broadcast_arrays(np.asarray(inputs[0], np.float64),
                                       np.asarray(inputs[1], np.float64))
        h = 1e-5 * np.maximum(alpha, 1e-2)
        dp = (regularized_lower_gamma(alpha + h, z) - regularized_lower_gamma(alpha - h, z)) \
            / (2 * h)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pdf = (alpha - 1) * np.log(z) - z - _lgam(alpha)
            grad = np.where(z > 0, -dp / np.exp(log_pdf), 0.0)
        output_storage[0][0] = np.asarray(grad, dtype=np.float64).reshape(z.shape)

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        return [grad_not_implemented(self, k, x, "second derivatives of gamma draws")
                for k, x in enumerate(inputs)]
