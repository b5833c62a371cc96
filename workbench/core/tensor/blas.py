"""BLAS-style fused products: `Gemm` (``beta*z + alpha*dot(x, y)``) and `Gemv`
(``beta*y + alpha*dot(A, x)``).

Nobody builds these by hand: the specialize rewrites (``local_dot_to_gemm``,
``local_dot_to_gemv``) turn ``alpha*dot(x, y) + beta*z`` into them, so that a
linker with real BLAS can make one call where the graph had three nodes. Here
`perform` uses numpy (`np.dot`, then scale and accumulate); the C linker brings
the true BLAS call.

Inputs are ``(z, alpha, x, y, beta)`` for Gemm and ``(y, alpha, A, x, beta)`` for
Gemv, all of one float or complex dtype; alpha and beta are 0-d. The
accumulated operand may broadcast against the product (a bias row), as numpy's
``+`` would. With ``beta == 0`` the accumulated operand is ignored, NaN
included, as BLAS does. ``inplace=True`` writes the result into the accumulated
operand (`destroy_map`) when it has the result's shape at run time; one that
broadcasts keeps its value and the result is a new array, as without inplace
(`inplace_falls_back`). Only the inplace rewrites set it, when that operand is not
needed elsewhere and its static shape does not broadcast; so a shared weight of
unknown static shape is updated in its own storage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply
from workbench.core.graph.op import Op
from workbench.core.tensor.elemwise import broadcast_length, broadcast_static_shapes
from workbench.core.tensor.type import TensorType, format_shape
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["Gemm", "Gemv", "gemm", "gemv", "gemm_no_inplace", "gemv_no_inplace"]


class _Blas(Op):
    """Shared parts of Gemm and Gemv: input checks, perform, shapes and flops."""

    abstract = True
    __props__ = ("inplace",)
    #: ranks of (accumulated operand, left factor, right factor)
    ranks: tuple[int, int, int] = (2, 2, 2)
    signature = "(z, alpha, x, y, beta)"

    #: Inplace, it writes into its accumulated operand only when that has the result's
    #: shape at run time, else it makes a new result: the inplace rewrite needs no proof
    #: that the shapes are equal (rewrite/rules/inplace.py).
    inplace_falls_back = True

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def make_node(self, z: Any, alpha: Any, x: Any, y: Any, beta: Any) -> Apply:
        z, x, y = (as_tensor_variable(v) for v in (z, x, y))
        alpha, beta = as_tensor_variable(alpha), as_tensor_variable(beta)
        names = ("accumulated operand", "left factor", "right factor")
        for var, rank, what in zip((z, x, y), self.ranks, names):
            if var.type.ndim != rank:
                raise TypeError(
                    f"{self} {self.signature}: the {what} must have rank {rank}, got {var} "
                    f"of type {var.type}"
                )
        for var, what in ((alpha, "alpha"), (beta, "beta")):
            if var.type.ndim != 0:
                raise TypeError(f"{self}: {what} must be 0-d, got {var} of type {var.type}")
        dtype = z.type.dtype
        if not (dtype.is_float or dtype.is_complex):
            raise TypeError(f"{self} needs float or complex operands, got dtype {dtype}")
        for var, what in zip((alpha, x, y, beta), ("alpha", "x", "y", "beta")):
            if var.type.dtype != dtype:
                raise TypeError(
                    f"{self}: all operands must share one dtype; {what} ({var}) has "
                    f"{var.type.dtype}, the accumulated operand {dtype} (cast first)"
                )
        xk, yk = x.type.shape[-1], y.type.shape[0]
        if xk is not None and yk is not None and xk != yk:
            raise ValueError(
                f"{self}: shapes {format_shape(x.type.shape)} and {format_shape(y.type.shape)} "
                "not aligned"
            )
        product = x.type.shape[:-1] + y.type.shape[1:]
        shape = broadcast_static_shapes([z.type.shape, product])
        if shape is None:
            raise ValueError(
                f"{self}: the accumulated operand of shape {format_shape(z.type.shape)} cannot "
                f"broadcast against the product of shape {format_shape(product)}"
            )
        if self.inplace and any(n is not None and n != m for n, m in zip(z.type.shape, shape)):
            raise ValueError(
                f"{self} writes into its accumulated operand, which must not broadcast: its "
                f"static shape {format_shape(z.type.shape)} cannot be the result's "
                f"{format_shape(shape)}"
            )
        return Apply(self, [z, alpha, x, y, beta], [TensorType(dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        z, alpha, x, y, beta = inputs
        dtype = node.outputs[0].type.numpy_dtype
        result = np.asarray(np.dot(x, y), dtype=dtype)
        if alpha != 1:
            result *= alpha
        shape = np.broadcast_shapes(z.shape, result.shape)  # z's shape counts even unread
        if shape != result.shape:
            result = np.broadcast_to(result, shape).copy()
        if beta != 0:
            if beta == 1:
                result += z
            else:
                result += beta * z
        if self.inplace and z.shape == result.shape:
            z[...] = result
            result = z  # (a z that broadcasts keeps its value: the result is new)
        output_storage[0][0] = result

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        z_shape, _, x_shape, y_shape, _ = input_shapes
        product = tuple(x_shape[:-1]) + tuple(y_shape[1:])
        z_static = node.inputs[0].type.shape
        shape: list[Any] = []
        for d, known in enumerate(node.outputs[0].type.shape):
            if known is not None:
                shape.append(known)
            elif z_static[d] == 1:
                shape.append(product[d])
            else:
                shape.append(broadcast_length([z_shape[d], product[d]]))
        return [tuple(shape)]

    def L_op(self, inputs: Sequence[Any], outputs: Sequence[Any], output_grads: Sequence[Any]
             ) -> list[Any]:
        """The gradients of ``beta*z + alpha*dot(x, y)``: ``beta*gz`` summed back to z's
        shape, ``sum(gz*z)`` for beta, ``sum(gz*dot(x, y))`` for alpha, and Dot's
        gradients of ``alpha*gz`` for x and y."""
        from workbench.core.tensor.elemwise import sum_to_shape
        from workbench.core.tensor.linalg import Dot
        from workbench.core.tensor.math import mul
        from workbench.core.tensor.reduction import as_grad_of
        from workbench.core.tensor.reduction import sum as sum_

        z, alpha, x, y, beta = inputs
        (gz,) = output_grads
        product = Dot()(x, y)
        g_z = sum_to_shape(mul(gz, beta), z, [product])
        g_alpha = sum_(mul(gz, product))
        g_beta = sum_(mul(gz, z))
        g_x, g_y = Dot().L_op([x, y], [product], [mul(gz, alpha)])
        return [as_grad_of(g, v) for g, v in
                ((g_z, z), (g_alpha, alpha), (g_x, x), (g_y, y), (g_beta, beta))]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """2*m*k*n for the product, plus a scale and an accumulation per output element."""
        k = inputs[2][-1]
        return float(2 * math.prod(outputs[0]) * k + 3 * math.prod(outputs[0]))


class Gemm(_Blas):
    """``beta*z + alpha*dot(x, y)`` for matrices z, x, y and 0-d alpha, beta (BLAS gemm).

    Inputs ``(z, alpha, x, y, beta)``; prints ``Gemm{inplace=False}`` (or True).
    """

    abstract = False
    __props__ = ("inplace",)
    ranks = (2, 2, 2)
    signature = "(z, alpha, x, y, beta)"


class Gemv(_Blas):
    """``beta*y + alpha*dot(A, x)`` for vectors y, x, a matrix A and 0-d alpha, beta (gemv).

    Inputs ``(y, alpha, A, x, beta)``; prints ``Gemv{inplace=False}`` (or True).
    """

    abstract = False
    __props__ = ("inplace",)
    ranks = (1, 2, 1)
    signature = "(y, alpha, A, x, beta)"


gemm_no_inplace = Gemm(inplace=False)
gemv_no_inplace = Gemv(inplace=False)


def gemm(z: Any, alpha: Any, x: Any, y: Any, beta: Any) -> Any:
    """``beta*z + alpha*dot(x, y)`` as one Gemm node (Python numbers take z's dtype)."""
    z = as_tensor_variable(z)
    d = z.type.dtype
    return gemm_no_inplace(z, _as(alpha, d), _as(x, d), _as(y, d), _as(beta, d))


def gemv(y: Any, alpha: Any, a: Any, x: Any, beta: Any) -> Any:
    """``beta*y + alpha*dot(a, x)`` as one Gemv node (Python numbers take y's dtype)."""
    y = as_tensor_variable(y)
    d = y.type.dtype
    return gemv_no_inplace(y, _as(alpha, d), _as(a, d), _as(x, d), _as(beta, d))


def _as(value: Any, dtype: Any) -> Any:
    if isinstance(value, (int, float, complex, np.number)):
        return as_tensor_variable(np.asarray(value, dtype=dtype.numpy))
    return as_tensor_variable(value)
