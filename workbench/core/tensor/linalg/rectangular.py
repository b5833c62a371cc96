"""Factorisations of rectangular matrices: `SVD` and `QR`, and the functions `svd`,
`svdvals`, `qr` (numpy.linalg's semantics, stacks of matrices included).

- ``svd(a, full_matrices=True, compute_uv=True)``: ``(U, S, Vh)`` with ``a = U diag(S)
  Vh``, singular values descending (real for complex `a`, `Vh` then ``V^H``);
  ``compute_uv=False`` gives ``S`` alone.
- ``qr(a, mode="reduced"|"complete"|"r")``: ``(Q, R)`` with orthonormal columns in
  `Q` and upper-triangular `R` (LAPACK's Householder signs, as numpy); "r" gives `R`.

Gradients. Singular values alone: ``U diag(gS) Vh``. Through the singular vectors of
the thin SVD (Townsend 2016, "Differentiating the singular value decomposition"):
with ``F_ij = 1/(s_j^2 - s_i^2)`` off the diagonal,
``ga = U [ (F*(U^T gU - gU^T U)) S + diag(gS) + S (F*(V^T gV - gV^T V)) ] V^T
+ (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)``: undefined (inf/NaN) for
repeated or zero singular values, and not implemented through the extra columns of
``full_matrices=True`` of a non-square matrix. QR (tall or square matrices, m >= n):
``M = R gR^T - gQ^T Q``, ``ga = (gQ + Q copyltu(M)) R^-T`` (Walter and Lehmann; Seeger
et al.), with ``copyltu(M)`` the symmetric matrix of M's lower triangle; for wide
matrices (m < n) the gradient is not implemented.
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
    eye_like,
    linalg_error,
    min_length,
    transpose,
    triangle,
)
from workbench.core.tensor.linalg.products import matmul

__all__ = ["QR", "SVD", "qr", "svd", "svdvals"]

QR_MODES = ("reduced", "complete", "r")



def _connected(g: Variable | None) -> bool:
    from workbench.core.graph.type import is_disconnected

    return g is not None and not is_disconnected(g)


class _RectangularOp(LinalgOp):
    """What SVD and QR share: k = min(m, n), the cost, storing numpy's results."""

    abstract = True

    def derived_lengths(self, lengths: dict[str, Any], symbolic: bool) -> dict[str, Any]:
        return {"k": min_length(lengths.get("m"), lengths.get("n"), symbolic)}

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        m, n = inputs[0][-2:]
        return float(np.prod(inputs[0][:-2])) * 4 * m * n * min(m, n)

    @staticmethod
    def store(node: Apply, results: Sequence[Any], output_storage: list[list[Any]]) -> None:
        for storage, value, out in zip(output_storage, results, node.outputs):
            storage[0] = np.ascontiguousarray(value, dtype=out.type.numpy_dtype)


class SVD(_RectangularOp):
    """The singular value decomposition of each matrix (numpy.linalg.svd): outputs
    ``(U, S, Vh)``, or ``S`` alone when not `compute_uv`."""

    __props__ = ("full_matrices", "compute_uv")
    function_name = "svd"

    def __init__(self, full_matrices: bool = True, compute_uv: bool = True) -> None:
        self.full_matrices, self.compute_uv = bool(full_matrices), bool(compute_uv)

    @property
    def output_dtypes(self) -> tuple[str | None, ...]:  # type: ignore[override]
        """The singular values are real (for complex `a` too)."""
        return (None, "real", None) if self.compute_uv else ("real",)

    @property
    def gufunc_signature(self) -> str:  # type: ignore[override]
        if not self.compute_uv:
            return "(m,n)->(k)"
        return "(m,n)->(m,m),(k),(n,n)" if self.full_matrices else "(m,n)->(m,k),(k),(k,n)"

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        try:
            result = np.linalg.svd(inputs[0], full_matrices=self.full_matrices,
                                   compute_uv=self.compute_uv)
        except LinAlgError as exc:
            raise linalg_error("svd", str(exc)) from None
        self.store(node, result if self.compute_uv else (result,), output_storage)

    def outputs_agree(self, node: Apply, expected: Sequence[Any], got: Sequence[Any]
                      ) -> bool | None:
        """Singular vectors are not unique (signs; any basis of a repeated or zero
        singular value's space), so two LAPACK builds may return different U and Vh
        for the same matrix: they agree when the singular values and the products
        ``U[:, :k] * S @ Vh[:k]`` do."""
        if not self.compute_uv:
            return None
        (u_a, s_a, vh_a), (u_b, s_b, vh_b) = expected, got
        if not node.outputs[1].type.values_eq_approx(s_a, s_b):
            return False
        k = s_a.shape[-1]
        tol = 1e-4 if s_a.dtype == np.float32 else 1e-10
        scale = max(1.0, float(np.abs(s_a).max(initial=0.0)))
        product_a = (u_a[..., :k] * s_a[..., None, :]) @ vh_a[..., :k, :]
        product_b = (u_b[..., :k] * s_b[..., None, :]) @ vh_b[..., :k, :]
        return bool(np.allclose(product_a, product_b, rtol=tol, atol=tol * scale))

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Townsend's formula (see the module docstring)."""
        from workbench.core.graph.type import grad_not_implemented
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.creation import zeros_like

        (a,) = inputs
        if not self.compute_uv:
            gu = gvh = None
            (gs,) = output_grads
            u, s, vh = SVD(False, True)(a)
        else:
            gu, gs, gvh = output_grads
            u, s, vh = outputs
        u_on, v_on, s_on = _connected(gu), _connected(gvh), _connected(gs)
        if not (u_on or v_on or s_on):
            return [zeros_like(a)]
        if self.compute_uv and self.full_matrices and (u_on or v_on):
            m, n = a.type.shape[-2:]
            if m is None or n is None or m != n:
                return [grad_not_implemented(
                    self, 0, a, "through U or Vh of full_matrices=True (use "
                    "full_matrices=False, or only the singular values)")]
        v = transpose(vh)
        inner = []
        if s_on:
            inner.append(tm.mul(add_axis(gs, -2), eye_like(s)))  # diag(gs)
        terms = []
        if u_on or v_on:
            s2 = tm.sqr(s)
            eye = eye_like(s)
            diff = tm.sub(add_axis(s2, -2), add_axis(s2, -1))  # s_j^2 - s_i^2
            f = tm.true_div(tm.sub(1, eye), tm.add(diff, eye))
            s_row = add_axis(s, -2)  # X * s_row scales X's columns: X S
            s_col = add_axis(s, -1)  # s_col * X scales X's rows: S X
        if u_on:
            utgu = matmul(transpose(u), gu)
            inner.append(tm.mul(tm.mul(f, tm.sub(utgu, transpose(utgu))), s_row))
            # (I - U U^T) gU S^-1 V^T
            rest = tm.sub(gu, matmul(u, utgu))
            terms.append(matmul(tm.true_div(rest, s_row), vh))
        if v_on:
            gv = transpose(gvh)
            vtgv = matmul(transpose(v), gv)
            inner.append(tm.mul(s_col, tm.mul(f, tm.sub(vtgv, transpose(vtgv)))))
            # U S^-1 gV^T (I - V V^T)
            rest = tm.sub(gvh, matmul(matmul(gvh, v), vh))
            terms.append(matmul(u, tm.true_div(rest, s_col)))
        middle = inner[0] if len(inner) == 1 else tm.add(*inner)
        total = matmul(matmul(u, middle), vh)
        for term in terms:
            total = tm.add(total, term)
        return [total]



class QR(_RectangularOp):
    """The QR factorisation of each matrix (numpy.linalg.qr) in `mode` "reduced"
    (``Q`` (m, k), ``R`` (k, n)), "complete" (``Q`` (m, m), ``R`` (m, n)) or "r" (``R``)."""

    __props__ = ("mode",)
    function_name = "qr"

    def __init__(self, mode: str = "reduced") -> None:
        if mode not in QR_MODES:
            raise ValueError(f"qr: mode must be one of {', '.join(QR_MODES)}, got {mode!r}")
        self.mode = mode

    @property
    def gufunc_signature(self) -> str:  # type: ignore[override]
        return {"reduced": "(m,n)->(m,k),(k,n)", "complete": "(m,n)->(m,m),(m,n)",
                "r": "(m,n)->(k,n)"}[self.mode]

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        result = np.linalg.qr(inputs[0], mode=self.mode)
        self.store(node, (result,) if self.mode == "r" else tuple(result), output_storage)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``(gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T`` for m >= n (module docstring)."""
        from workbench.core.graph.type import grad_not_implemented
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.creation import zeros_like
        from workbench.core.tensor.linalg.solvers import SolveTriangular

        (a,) = inputs
        m, n = a.type.shape[-2:]
        if m is not None and n is not None and m < n:
            return [grad_not_implemented(self, 0, a, "of a wide matrix (m < n)")]
        if self.mode == "r":
            (gr,) = output_grads
            gq = None
            q, r = QR("reduced")(a)
        else:
            gq, gr = output_grads
            q, r = outputs
            if self.mode == "complete" and _connected(gq) and (m is None or n is None or m != n):
                return [grad_not_implemented(self, 0, a, "through the Q of mode='complete' "
                                             "(use mode='reduced')")]
        q_on, r_on = _connected(gq), _connected(gr)
        if not (q_on or r_on):
            return [zeros_like(a)]
        terms = []
        if r_on:
            terms.append(matmul(r, transpose(gr)))
        if q_on:
            terms.append(tm.neg(matmul(transpose(gq), q)))
        big_m = terms[0] if len(terms) == 1 else tm.add(*terms)
        copyltu = tm.add(triangle(big_m, True), transpose(triangle(big_m, True, strict=True)))
        left = matmul(q, copyltu)
        if q_on:
            left = tm.add(gq, left)
        # left R^-T = (R^-1 left^T)^T
        return [transpose(SolveTriangular(False, False, False, 2)(r, transpose(left)))]


# -- functions ---------------------------------------------------------------------------


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """numpy.linalg.svd: ``(U, S, Vh)`` of each matrix of `a` (``S`` alone when
    ``compute_uv=False``), singular values in descending order."""
    (a,) = as_lapack_operands("svd", a, min_ndims=(2,))
    if not compute_uv:
        return SVD(full_matrices, False)(a)
    u, s, vh = SVD(full_matrices, True)(a)
    return u, s, vh


def svdvals(a: Any) -> Variable:
    """numpy.linalg.svdvals: the singular values of each matrix, descending."""
    (a,) = as_lapack_operands("svdvals", a, min_ndims=(2,))
    return SVD(False, False)(a)


def qr(a: Any, mode: str = "reduced") -> Any:
    """numpy.linalg.qr: ``(Q, R)`` of each matrix of `a` ("reduced" or "complete"), or
    ``R`` (mode "r")."""
    (a,) = as_lapack_operands("qr", a, min_ndims=(2,))
    if mode == "r":
        return QR("r")(a)
    q, r = QR(mode)(a)
    return q, r
