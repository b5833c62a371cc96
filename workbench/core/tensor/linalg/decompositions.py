"""Factorisations of stacks of matrices: `Cholesky` and `Eigh`, and the functions
`cholesky`, `eigh` and `eigvalsh`.

- ``cholesky(a, lower=True)``: the triangular factor of a symmetric (Hermitian)
  positive-definite matrix (``a = L L^H``; with ``lower=False`` the upper ``U`` with
  ``a = U^H U``, as scipy). Only the named triangle of `a` is read (numpy and LAPACK do the same). A
  matrix that is not positive definite raises `numpy.linalg.LinAlgError`
  ("cholesky: Matrix is not positive definite").
- ``eigh(a, UPLO="L")``: eigenvalues in ascending order and orthonormal eigenvectors
  (columns) of a symmetric (Hermitian) matrix, reading only the triangle `UPLO` names
  (numpy's convention); the eigenvalues are real for complex `a` too. ``eigvalsh``
  gives the eigenvalues alone (an `Eigh` without vectors).

Gradients. Cholesky by Murray's formula (Murray 2016, "Differentiation of the
Cholesky decomposition"): ``P = L^-T Phi(L^T gL) L^-1`` with Phi the lower triangle
with its diagonal halved, then the gradient of the read triangle is
``tril(P + P^T) - diag(P)``. Eigh: with ``F_ij = 1/(w_j - w_i)`` off the diagonal,
``ga = V (diag(gw) + F * (V^T gV)) V^T``, symmetrised onto the read triangle.
That formula assumes distinct eigenvalues: where two are equal the eigenvectors are
not unique, ``F`` divides by zero and the gradient through the eigenvectors is inf or
NaN. The gradient through the eigenvalues alone (`eigvalsh`, or an unused `V`) has
no such term and stays defined for repeated eigenvalues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Variable
from workbench.core.tensor.linalg.base import (
    LinAlgError,
    LinalgOp,
    add_axis,
    as_lapack_operands,
    diagonal_part,
    eye_like,
    linalg_error,
    sum_to_input,
    symmetric_from_triangle_grad,
    transpose,
    triangle,
)
from workbench.core.tensor.linalg.products import matmul

__all__ = ["Cholesky", "CholeskyGrad", "Eigh", "cho_factor", "cholesky", "eigh", "eigvalsh"]



class Cholesky(LinalgOp):
    """The Cholesky factor of each symmetric positive-definite matrix: lower ``L`` with
    ``a = L L^T`` reading the lower triangle, or (``lower=False``) upper ``U`` with
    ``a = U^T U`` reading the upper one."""

    __props__ = ("lower",)
    gufunc_signature = "(m,m)->(m,m)"
    function_name = "cholesky"

    def __init__(self, lower: bool = True) -> None:
        self.lower = bool(lower)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        (a,) = inputs
        try:
            if self.lower:
                factor = np.linalg.cholesky(a)
            else:
                factor = np.swapaxes(np.linalg.cholesky(np.swapaxes(a, -1, -2)), -1, -2)
        except LinAlgError as exc:
            raise linalg_error("cholesky", str(exc)) from None
        output_storage[0][0] = np.ascontiguousarray(factor,
                                                    dtype=node.outputs[0].type.numpy_dtype)

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        n = inputs[0][-1]
        return float(np.prod(inputs[0][:-2])) * n ** 3 / 3

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Murray's formula (see the module docstring) in one `CholeskyGrad` node for real
        dtypes; the upper case by transposition."""
        (factor,), (g,) = outputs, output_grads
        low = factor if self.lower else transpose(factor)
        g_low = g if self.lower else transpose(g)
        if not getattr(low.type.dtype, "is_complex", False):
            grad = CholeskyGrad()(low, g_low)
        else:
            grad = murray_graph(low, g_low)
        return [grad if self.lower else transpose(grad)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``dL = L Phi(L^-1 dS L^-T)`` with dS the symmetric change the read triangle
        implies."""
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.linalg.solvers import SolveTriangular

        (a,), (ea,) = inputs, eval_points
        if ea is None:
            return [None]
        factor = self(a)
        low = factor if self.lower else transpose(factor)
        ds = tm.add(triangle(ea, self.lower), transpose(triangle(ea, self.lower, strict=True)))
        if not self.lower:
            ds = transpose(ds)
        x = SolveTriangular(True, False, False, 2)(low, ds)  # L^-1 dS
        m = transpose(SolveTriangular(True, False, False, 2)(low, transpose(x)))  # .. L^-T
        phi = tm.sub(triangle(m, lower=True), tm.mul(0.5, diagonal_part(m)))
        dl = matmul(low, phi)
        return [dl if self.lower else transpose(dl)]


def murray_graph(low: Variable, g_low: Variable) -> Variable:
    """Murray's formula as a graph of triangular products and solves (what
    `CholeskyGrad` computes in one node)."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.linalg.solvers import TriangularMatmul

    inner = TriangularMatmul(True, True)(low, g_low)  # L^T gL (trmm)
    phi = tm.sub(triangle(inner, lower=True), tm.mul(0.5, diagonal_part(inner)))
    # P = L^-T phi L^-1, as two triangular solves with L^T
    left = SolveTriangularT(low, phi)
    p = transpose(SolveTriangularT(low, transpose(left)))
    return symmetric_from_triangle_grad(p, True)


class CholeskyGrad(LinalgOp):
    """The gradient of `Cholesky` (lower) with respect to the triangle it reads, from the
    factor ``L`` and the gradient ``gL`` of the factor, by Murray's formula in one node:
    with ``M`` the symmetric matrix whose lower triangle is that of ``L^T gL``,
    ``S = L^-T M L^-1`` and the result is ``tril(S)`` with its diagonal halved (equal to
    `murray_graph`). Its C forms only the lower triangles of ``L^T gL`` and of
    ``Phi L^-1`` (blocked gemm and trsm, n^3/3 each), then one full trsm: 5/3 n^3 flops
    where the graph's trmm and two trsm take 3 n^3.
    Real dtypes (complex gradients are refused before)."""

    __props__ = ()
    gufunc_signature = "(m,m),(m,m)->(m,m)"
    function_name = "cholesky_grad"

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        low, g = (np.asarray(v) for v in inputs)
        self.batch_shape(inputs)
        low = np.tril(low)
        inner = np.tril(np.matmul(np.swapaxes(low, -1, -2), g))
        m = inner + np.swapaxes(np.tril(inner, -1), -1, -2)
        eye = np.broadcast_to(np.eye(low.shape[-1], dtype=low.dtype), low.shape)
        try:
            inv = np.linalg.solve(low, eye)
        except LinAlgError as exc:
            raise linalg_error("solve_triangular", str(exc)) from None
        s = np.matmul(np.swapaxes(inv, -1, -2), np.matmul(m, inv))
        out = np.tril(s) - 0.5 * s * np.eye(s.shape[-1], dtype=s.dtype)
        output_storage[0][0] = np.ascontiguousarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        n = inputs[0][-1]
        return float(np.prod(outputs[0][:-2])) * 5 * n ** 3 / 3

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """With ``Y = L^-1``, ``W = L^T G``, ``H`` the output's gradient taken on the lower
        triangle of S (diagonal halved): ``gG = L sym(Y H Y^T)`` and
        ``gL = tril(G sym(Y H Y^T)^T) - tril(S (H + H^T) Y^T)``."""
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.linalg.solvers import SolveTriangular, TriangularMatmul

        (low, g), (out,), (h,) = inputs, outputs, output_grads
        h = tm.sub(triangle(h, lower=True), tm.mul(0.5, diagonal_part(h)))
        s = tm.add(out, transpose(out))

        def left_inv(x: Variable) -> Variable:  # L^-1 x
            return SolveTriangular(True, False, False, 2)(low, x)

        g_m = transpose(left_inv(transpose(left_inv(h))))  # Y H Y^T
        g_w = symmetric_from_triangle_grad(g_m, True)
        g_g = TriangularMatmul(True, False)(low, g_w)
        hh = tm.add(h, transpose(h))
        from_y = matmul(s, transpose(left_inv(hh)))  # S (H + H^T) Y^T
        g_low = triangle(tm.sub(matmul(g, transpose(g_w)), from_y), lower=True)
        return [sum_to_input(g_low, low, 2), sum_to_input(g_g, g, 2)]


def SolveTriangularT(low: Variable, rhs: Variable) -> Variable:  # noqa: N802
    """``L^-T rhs`` for a lower-triangular factor L."""
    from workbench.core.tensor.linalg.solvers import SolveTriangular

    return SolveTriangular(True, True, False, 2)(low, rhs)


class Eigh(LinalgOp):
    """Eigenvalues (ascending) and, when `compute_v`, orthonormal eigenvectors (columns)
    of each symmetric matrix, reading its lower triangle (``lower=True``, numpy's
    ``UPLO="L"``) or its upper one."""

    __props__ = ("lower", "compute_v")
    pprint_hidden = ("compute_v",)
    output_dtypes = ("real", None)  # a Hermitian matrix's eigenvalues are real

    def pprint_text(self, args: Sequence[str]) -> str:
        name = "eigh" if self.compute_v else "eigvalsh"
        return f"{name}({', '.join(args)}{'' if self.lower else ', UPLO=' + repr('U')})"

    def __init__(self, lower: bool = True, compute_v: bool = True) -> None:
        self.lower, self.compute_v = bool(lower), bool(compute_v)

    @property
    def function_name(self) -> str:  # type: ignore[override]
        """eigh, or eigvalsh without the vectors (the function messages name)."""
        return "eigh" if self.compute_v else "eigvalsh"

    @property
    def gufunc_signature(self) -> str:  # type: ignore[override]
        return "(m,m)->(m),(m,m)" if self.compute_v else "(m,m)->(m)"

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        (a,) = inputs
        dtype = node.outputs[0].type.numpy_dtype
        uplo = "L" if self.lower else "U"
        try:
            if self.compute_v:
                w, v = np.linalg.eigh(a, UPLO=uplo)
                output_storage[1][0] = np.ascontiguousarray(
                    v, dtype=node.outputs[1].type.numpy_dtype)
            else:
                w = np.linalg.eigvalsh(a, UPLO=uplo)
        except LinAlgError as exc:
            raise linalg_error(self.function_name, str(exc)) from None
        output_storage[0][0] = np.ascontiguousarray(w, dtype=dtype)

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        n = inputs[0][-1]
        return float(np.prod(inputs[0][:-2])) * (9 if self.compute_v else 4 / 3) * n ** 3

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``V (diag(gw) + F * (V^T gV)) V^T`` onto the read triangle (see the module
        docstring for repeated eigenvalues)."""
        from workbench.core.graph.type import is_disconnected
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.creation import zeros_like

        (a,) = inputs
        gw = output_grads[0]
        gv = output_grads[1] if self.compute_v else None
        w_connected = not is_disconnected(gw)
        v_connected = gv is not None and not is_disconnected(gv)
        if not (w_connected or v_connected):
            return [zeros_like(a)]
        if self.compute_v:
            w, v = outputs
        else:
            w, v = Eigh(self.lower, True)(a)
        terms = []
        if w_connected:
            terms.append(tm.mul(add_axis(gw, -2), v))  # V diag(gw)
        if v_connected:
            eye = eye_like(w)
            diff = tm.sub(add_axis(w, -2), add_axis(w, -1))  # w_j - w_i
            f = tm.true_div(tm.sub(1, eye), tm.add(diff, eye))  # 1/(w_j - w_i), 0 on the diagonal
            terms.append(matmul(v, tm.mul(f, matmul(transpose(v), gv))))
        inner = terms[0] if len(terms) == 1 else tm.add(*terms)
        full = matmul(inner, transpose(v))
        return [symmetric_from_triangle_grad(full, self.lower)]



# -- functions ---------------------------------------------------------------------------


def cholesky(a: Any, lower: bool = True) -> Variable:
    """The Cholesky factor of each symmetric positive-definite matrix of `a`: ``L`` with
    ``a = L L^T`` (numpy.linalg.cholesky), or ``U`` with ``a = U^T U`` when
    ``lower=False`` (scipy.linalg.cholesky's default)."""
    (a,) = as_lapack_operands("cholesky", a, min_ndims=(2,))
    return Cholesky(lower)(a)


def cho_factor(a: Any, lower: bool = False) -> tuple[Variable, bool]:
    """scipy.linalg.cho_factor: ``(c, lower)`` for `cho_solve`, `c` the Cholesky factor in
    its `lower` (or upper) triangle (the other triangle is zero here, where scipy leaves
    whatever `a` had)."""
    return cholesky(a, lower=lower), bool(lower)


def _uplo(uplo: str, function: str) -> bool:
    if not isinstance(uplo, str) or uplo.upper() not in ("L", "U"):
        raise ValueError(f"{function}: UPLO must be 'L' or 'U', got {uplo!r}")
    return uplo.upper() == "L"


def eigh(a: Any, UPLO: str = "L") -> tuple[Variable, Variable]:  # noqa: N803
    """numpy.linalg.eigh: ``(w, v)``, eigenvalues ascending and eigenvectors as columns,
    of each symmetric matrix of `a` (only the `UPLO` triangle is read)."""
    (a,) = as_lapack_operands("eigh", a, min_ndims=(2,))
    w, v = Eigh(_uplo(UPLO, "eigh"), True)(a)
    return w, v


def eigvalsh(a: Any, UPLO: str = "L") -> Variable:  # noqa: N803
    """numpy.linalg.eigvalsh: the eigenvalues (ascending) of each symmetric matrix."""
    (a,) = as_lapack_operands("eigvalsh", a, min_ndims=(2,))
    return Eigh(_uplo(UPLO, "eigvalsh"), False)(a)
