"""Factorisations of rectangular matrices: `SVD` and `QR`, and the functions `svd`,
`svdvals`, `qr` (numpy.linalg's semantics, stacks of matrices included).

- ``svd(a, full_matrices=True, compute_uv=True)``: ``(U, S, Vh)`` with ``a = U diag(S)
  Vh``, singular values descending (real for complex `a`, `Vh` then ``V^H``);
  ``compute_uv=False`` gives ``S`` alone.
- ``qr(a, mode="reduced"|"complete"|"r"|"raw")``: ``(Q, R)`` with orthonormal columns in
  `Q` and upper-triangular `R` (LAPACK's Householder signs, as numpy); "r" gives `R`;
  "raw" gives numpy's ``(h, tau)``: LAPACK geqrf's Householder reflectors and R in `h`
  (shape (..., n, m): the transpose of geqrf's column-major result) and their scaling
  factors `tau` (..., k). "raw" has no gradient (reflectors are LAPACK's storage
  format; use "reduced").

Gradients. Singular values alone: ``U diag(gS) Vh``. Through the singular vectors of
the thin SVD (Townsend 2016, "Differentiating the singular value decomposition"):
with ``F_ij = 1/(s_j^2 - s_i^2)`` off the diagonal,
``ga = U [ (F*(U^T gU - gU^T U)) S + diag(gS) + S (F*(V^T gV - gV^T V)) ] V^T
+ (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)``: undefined (inf/NaN) for
repeated or zero singular values. ``full_matrices=True`` of a square matrix is the
thin SVD. Of a non-square one, the extra columns of U (rows of Vh) are an arbitrary
basis of the complement: a loss that reads them is not a function of `a`, so the
gradient is given only when the graph shows they are unused (the output gradient of
U is zero beyond column k, as when only ``U[..., :k]`` is used; likewise Vh's rows),
computed from the thin factors; otherwise it is refused naming the case (PyTorch
instead drops those columns' gradient silently). Where the shape is known only when
run, the gradient is built and checks then that those columns get no gradient (a
ValueError naming the case where they do; none for a square matrix).

QR, ``M = R gR^T - gQ^T Q``, ``ga = (gQ + Q copyltu(M)) R^-T`` (Walter and Lehmann;
Seeger et al.) for m >= n, ``copyltu(M)`` the symmetric matrix of M's lower triangle.
A wide matrix (m < n) splits as ``a = [X | Y]`` with X square, ``R = [U | V]``,
``X = Q U``, ``Y = Q V``: ``gY = Q gV`` and gX is the square formula with R = U and
``gQ + Y gV^T`` for gQ (the derivation PyTorch and JAX use). When the shape is not
known statically the split is made at k = min(m, n) when run, which covers both.
Q of mode='complete' of a tall matrix has an arbitrary complement: refused.
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

__all__ = ["QR", "SVD", "qr", "svd", "svdvals"]  # zero_beyond: a gradient helper, not wt.linalg API

QR_MODES = ("reduced", "complete", "r", "raw")



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
        m, n = a.type.shape[-2:]
        if self.compute_uv and self.full_matrices and (m is None or n is None or m != n):
            # the thin factors: U[..., :k] and Vh[..., :k, :], k = min(m, n)
            nd = a.type.ndim
            k = None if m is None or n is None else min(m, n)
            if k is not None and ((u_on and not zero_beyond(gu, 1, k)) or (
                    v_on and not zero_beyond(gvh, 2, k))):
                return [grad_not_implemented(
                    self, 0, a, "through the extra columns of U (rows of Vh) of "
                    "full_matrices=True of a non-square matrix: they are an arbitrary "
                    "basis of the "
                    "complement; use full_matrices=False, or only U[..., :k] and "
                    "Vh[..., :k, :] with k = min(m, n)")]
            batch = (slice(None),) * (nd - 2)
            if k is None:  # known when run: the extra columns must get no gradient then
                from workbench.core.tensor.reduction import all as reduce_all
                from workbench.core.tensor.shape import check_and_raise, shape_tuple

                k = tm.minimum(shape_tuple(a)[-2], shape_tuple(a)[-1])
                if u_on:
                    extra = gu[(*batch, slice(None), slice(k, None))]
                    gu = check_and_raise(gu, [reduce_all(tm.eq(extra, 0))], "ValueError",
                                         _EXTRA_COLUMNS)
                if v_on:
                    extra = gvh[(*batch, slice(k, None))]
                    gvh = check_and_raise(gvh, [reduce_all(tm.eq(extra, 0))], "ValueError",
                                          _EXTRA_COLUMNS)
            columns, rows = (*batch, slice(None), slice(None, k)), (*batch, slice(None, k))
            u, vh = u[columns], vh[rows]
            gu = gu[columns] if u_on else gu
            gvh = gvh[rows] if v_on else gvh
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
    (``Q`` (m, k), ``R`` (k, n)), "complete" (``Q`` (m, m), ``R`` (m, n)), "r" (``R``)
    or "raw" (``h`` (n, m), ``tau`` (k): geqrf's reflectors, module docstring)."""

    __props__ = ("mode",)
    function_name = "qr"

    def __init__(self, mode: str = "reduced") -> None:
        if mode not in QR_MODES:
            raise ValueError(f"qr: mode must be one of {', '.join(QR_MODES)}, got {mode!r}")
        self.mode = mode

    @property
    def gufunc_signature(self) -> str:  # type: ignore[override]
        return {"reduced": "(m,n)->(m,k),(k,n)", "complete": "(m,n)->(m,m),(m,n)",
                "r": "(m,n)->(k,n)", "raw": "(m,n)->(n,m),(k)"}[self.mode]

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        result = np.linalg.qr(inputs[0], mode=self.mode)
        self.store(node, (result,) if self.mode == "r" else tuple(result), output_storage)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``(gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T`` for m >= n, the split ``[X | Y]``
        for m < n (module docstring)."""
        from workbench.core.graph.type import grad_not_implemented
        from workbench.core.tensor.creation import zeros_like

        (a,) = inputs
        m, n = a.type.shape[-2:]
        if self.mode == "raw":
            return [grad_not_implemented(self, 0, a, "through qr(mode='raw'): Householder "
                                         "reflectors are LAPACK's storage, not a function "
                                         "to differentiate (use mode='reduced')")]
        if self.mode == "r":
            (gr,) = output_grads
            gq = None
            q, r = QR("reduced")(a)
        else:
            gq, gr = output_grads
            q, r = outputs
        q_on, r_on = _connected(gq), _connected(gr)
        if not (q_on or r_on):
            return [zeros_like(a)]
        if self.mode == "complete" and (m is None or n is None or m > n):
            # the reduced factors Q[..., :k] and R[..., :k, :] (k = min(m, n)); R's rows
            # below k are zero whatever a is, Q's columns beyond k an arbitrary basis
            if m is not None and n is not None and q_on and not zero_beyond(gq, 1, n):
                return [grad_not_implemented(
                    self, 0, a, "through the extra columns of the Q of mode='complete' of a "
                    "tall matrix: they are an arbitrary basis of the complement; use "
                    "mode='reduced', or only Q[..., :n]")]
            q, r, gq, gr = _reduced_part(a, q, r, gq if q_on else None, gr if r_on else None)
        if m is not None and n is not None and m >= n:
            return [_qr_grad_tall(q, r, gq if q_on else None, gr if r_on else None)]
        return [_qr_grad_split(a, q, r, gq if q_on else None, gr if r_on else None)]


_EXTRA_Q_COLUMNS = (
    "qr: the gradient reaches the extra columns of the Q that mode='complete' gives a tall "
    "matrix: they are an arbitrary basis of the complement, with no gradient; use "
    "mode='reduced', or only Q[..., :n]")


def _reduced_part(a: Variable, q: Variable, r: Variable, gq: Variable | None,
                  gr: Variable | None) -> tuple[Variable, Variable, Any, Any]:
    """The complete factors and their gradients cut to the reduced ones (k = min(m, n)):
    ``Q[..., :k]``, ``R[..., :k, :]``. Where k is known only when run, the gradient of
    Q's columns beyond k must be zero then (ValueError otherwise)."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.reduction import all as reduce_all
    from workbench.core.tensor.shape import check_and_raise, shape_tuple

    m, n = a.type.shape[-2:]
    batch = (slice(None),) * (a.type.ndim - 2)
    if m is not None and n is not None:
        k: Any = min(m, n)
    else:
        k = tm.minimum(shape_tuple(a)[-2], shape_tuple(a)[-1])
        if gq is not None:
            extra = gq[(*batch, slice(None), slice(k, None))]
            gq = check_and_raise(gq, [reduce_all(tm.eq(extra, 0))], "ValueError",
                                 _EXTRA_Q_COLUMNS)
    columns, rows = (*batch, slice(None), slice(None, k)), (*batch, slice(None, k))
    return (q[columns], r[rows], None if gq is None else gq[columns],
            None if gr is None else gr[rows])


def _qr_grad_tall(q: Variable, r: Variable, gq: Variable | None, gr: Variable | None
                  ) -> Variable:
    """``(gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T`` (R square: m >= n)."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.linalg.solvers import SolveTriangular

    terms = []
    if gr is not None:
        terms.append(matmul(r, transpose(gr)))
    if gq is not None:
        terms.append(tm.neg(matmul(transpose(gq), q)))
    big_m = terms[0] if len(terms) == 1 else tm.add(*terms)
    copyltu = tm.add(triangle(big_m, True), transpose(triangle(big_m, True, strict=True)))
    left = matmul(q, copyltu)
    if gq is not None:
        left = tm.add(gq, left)
    # left R^-T = (R^-1 left^T)^T
    return transpose(SolveTriangular(False, False, False, 2)(r, transpose(left)))


def _qr_grad_split(a: Variable, q: Variable, r: Variable, gq: Variable | None,
                   gr: Variable | None) -> Variable:
    """The gradient for any shape: split at k = min(m, n) when run, ``a = [X | Y]``,
    ``R = [U | V]``; ``gX`` by the square formula with ``gQ + Y gV^T``, ``gY = Q gV``
    (Y, V and gV have no columns when m >= n)."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.creation import zeros_like
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.shape import shape_tuple

    nd = a.type.ndim
    k = tm.minimum(shape_tuple(a)[-2], shape_tuple(a)[-1])
    batch = (slice(None),) * (nd - 2)
    left_part, right_part = (*batch, slice(None), slice(None, k)), (*batch, slice(None),
                                                                     slice(k, None))
    x_r, y = r[left_part], a[right_part]
    g_left = g_right = None
    if gr is not None:
        g_left, g_right = gr[left_part], gr[right_part]
    gq_total = gq
    if g_right is not None:
        spill = matmul(y, transpose(g_right))
        gq_total = spill if gq_total is None else tm.add(gq_total, spill)
    gx = _qr_grad_tall(q, x_r, gq_total, g_left)
    if g_right is None:
        return concatenate([gx, zeros_like(y)], axis=nd - 1)
    return concatenate([gx, matmul(q, g_right)], axis=nd - 1)


_EXTRA_COLUMNS = (
    "svd: the gradient reaches the extra columns of U (or rows of Vh) that "
    "full_matrices=True gives a non-square matrix: they are an arbitrary basis of the "
    "complement, with no gradient; use full_matrices=False, or only U[..., :k] and "
    "Vh[..., :k, :] with k = min(m, n)")


def zero_beyond(g: Variable, from_end: int, k: int) -> bool:
    """Whether the graph of `g` shows it is zero at positions >= k along its axis
    ``ndim - from_end``: a zero constant or fill, a set/increment of such a tensor only
    within ``[:k]`` of that axis (also as the core Op of a Blockwise), a sum of those,
    or a reduction or reshape of one that leaves that axis and those after it alone.
    (How the gradient of ``U[..., :k]`` looks, vectorized or not.)"""
    from workbench.core.graph.basic import Constant
    from workbench.core.scalar import math as smath
    from workbench.core.tensor.blockwise import Blockwise
    from workbench.core.tensor.creation import Alloc
    from workbench.core.tensor.elemwise import Elemwise
    from workbench.core.tensor.reduction import Sum
    from workbench.core.tensor.reshape import Reshape
    from workbench.core.tensor.subtensor import IncSubtensor

    nd = g.type.ndim
    if nd < from_end:
        return False
    if isinstance(g, Constant):
        data = np.asarray(g.data)
        return data.ndim == nd and not np.any(
            np.take(data, range(k, data.shape[nd - from_end]), axis=nd - from_end))
    owner = g.owner
    if owner is None:
        return False
    op, inputs = owner.op, owner.inputs
    core = op.core_op if isinstance(op, Blockwise) else op
    if isinstance(op, Alloc):
        return isinstance(inputs[0], Constant) and not np.any(inputs[0].data)
    if isinstance(op, Elemwise) and isinstance(op.scalar_op, smath.Add):
        length = g.type.shape[nd - from_end]
        return all(x.type.ndim >= from_end and x.type.shape[x.type.ndim - from_end] == length
                   and zero_beyond(x, from_end, k) for x in inputs)
    if isinstance(op, Sum):  # reducing only axes before the one looked at
        before = inputs[0].type.ndim - from_end
        return op.axis is not None and all(a < before for a in op.axis) and zero_beyond(
            inputs[0], from_end, k)
    if isinstance(op, Reshape):  # the last from_end lengths kept: the same trailing blocks
        tail_in, tail_out = inputs[0].type.shape[-from_end:], g.type.shape[-from_end:]
        return (None not in tail_out and tuple(tail_in) == tuple(tail_out)
                and zero_beyond(inputs[0], from_end, k))
    if isinstance(core, IncSubtensor):
        # the axis among the core Op's dimensions (a Blockwise's are its last ones)
        core_nd = len(op.core_outputs[0]) if core is not op else nd
        axis = core_nd - from_end
        length = g.type.shape[nd - from_end]
        if axis < 0 or axis >= len(core.idx_list) or length is None:
            return False
        return _within(core.idx_list[axis], length, k) and zero_beyond(inputs[0], from_end, k)
    return False


def _within(entry: Any, length: int, k: int) -> bool:
    """Whether the index entry (an int or a slice, of an axis of `length`) picks only
    positions below k."""
    from workbench.core.tensor.indexing import SYMBOLIC, SliceEntry

    if isinstance(entry, SliceEntry):
        if SYMBOLIC in (entry.start, entry.stop, entry.step):
            return False
        return all(i < k for i in range(*slice(entry.start, entry.stop,
                                                  entry.step).indices(length)))
    return entry is not SYMBOLIC and int(entry) % length < k


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
    """numpy.linalg.qr: ``(Q, R)`` of each matrix of `a` ("reduced" or "complete"),
    ``R`` (mode "r") or ``(h, tau)`` (mode "raw")."""
    (a,) = as_lapack_operands("qr", a, min_ndims=(2,))
    if mode == "r":
        return QR("r")(a)
    first, second = QR(mode)(a)
    return first, second
