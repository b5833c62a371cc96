"""Linear systems and what LU gives: `Solve`, `SolveTriangular`, `Inv`, `Det`, `SLogDet`,
and the functions `solve`, `solve_triangular`, `cho_solve`, `inv`, `det`, `slogdet`.

Semantics are numpy.linalg's and scipy.linalg's:

- ``solve(a, b, assume_a="gen"|"sym"|"her"|"pos"|"tri", lower=False)``: ``a @ x = b``.
  With ``"sym"``, ``"her"`` and ``"pos"`` only the triangle named by `lower` is read
  (the other is implied: by symmetry ``a = a^T`` for "sym", also for complex `a` as in
  scipy; by ``a = a^H`` for "her" and "pos", whose diagonal's imaginary part is not
  read), with ``"tri"`` only that triangle (scipy's ``assume_a`` values;
  ``"general"``, ``"symmetric"``, ``"hermitian"``, ``"positive definite"`` and
  ``"triangular"`` are accepted too). For real matrices "her" is "sym". scipy 1.15's
  structure names work too (`STRUCTURES`): ``"upper triangular"``/``"lower
  triangular"`` (that triangle, whatever `lower`), ``"diagonal"`` (only the diagonal
  is read: ``b / diag(a)``), ``"tridiagonal"`` (only the three central diagonals, by
  LU) and ``"banded"`` (a general solve: scipy's band is every nonzero entry of `a`);
  ``transposed=True`` solves ``a^T x = b`` (real `a` only, as scipy). The C linker
  solves "sym"/"her" with LAPACK's symmetric-indefinite sysv/hesv (as scipy), "pos"
  with posv; torch has no sysv, so the gpu linker and `perform` solve the mirrored
  matrix by LU (the same solution; LU costs twice the flops). `b` of rank 1
  is one right-hand side; otherwise `b` is a stack of matrices (``(..., m, k)``) whose
  batch dimensions broadcast with `a`'s, as numpy.linalg.solve does.
- ``solve_triangular(a, b, lower=False, trans=0, unit_diagonal=False)``: scipy's
  (``trans=2``/"C" the conjugate transpose).
- ``cho_solve((c, lower), b)``: two triangular solves with the Cholesky factor `c`
  (``a = c c^H``, or ``c^H c`` for an upper `c`).

As scipy.linalg, `solve`, `solve_triangular` and `cho_solve` check their inputs for
infinities and NaNs by default (``check_finite=True``: ValueError "array must not
contain infs or NaNs", O(n^2) next to the O(n^3) solve) and skip the check with
``check_finite=False``; the Ops' prop `check_finite` (default False, so that rewrites
and gradients, which build their own solves, never add a check the user's graph did
not make). Wrong shapes raise ValueError (scipy's), before any other check.

An unchecked solve (``check_finite=False``) of an inf or a NaN: a factorising solve
(`Solve` "gen", "sym", "her", "pos": LU, LDL^T, Cholesky) gives what its algorithm
makes of it, and numpy, scipy, OpenBLAS and torch differ (partial NaNs, infs, finite
values, or a singular-matrix error), so workbench defines it, the same on every linker
(`nan_rule`, `not_finite_systems`): each solution whose `a` has an inf or a NaN in the
part the solve reads (all of it for "gen", the triangle for the others) is NaN, with no
error; each column of the solution whose column of `b` has one is NaN; the others are
solved as usual. A triangular solve (`SolveTriangular`, `Solve` "tri") is a
substitution, whose IEEE arithmetic is the same everywhere: it gives scipy's values
(``[[2, 0], [inf, 3]]`` gives ``[0.5, -inf]``); `DiagonalSolve` is ``b / d``.

A singular matrix raises `numpy.linalg.LinAlgError` ("solve: Singular matrix", with
the pivot where LAPACK found it on the C linker); ``det`` of a singular matrix is 0 and
``slogdet`` gives ``(0, -inf)``, as in numpy. Empty matrices give empty results
(``det`` of a 0x0 matrix is 1). An ill-conditioned matrix (reciprocal condition number
below the dtype's machine epsilon) makes `solve` (but not "tri") and `inv` warn
`LinAlgWarning` ("solve: Ill-conditioned matrix (rcond=...)") as scipy does, on the
py and C linkers (see base.py).

Gradients (all batched; `sum_to_input` undoes batch broadcasting): for ``x = a^-1 b``,
``gb = a^-T gx`` (a solve with the transpose) and ``ga = -gb x^T``, restricted to
the triangle that is read (and symmetrised for "sym"/"pos"); ``inv``:
``-y^T gy y^T``; ``det``: ``g d a^-T``; ``slogdet``: ``g a^-T`` (the sign has
zero gradient). `R_op` exists for `Solve`, `Inv`, `Det` and `SLogDet`.
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
    batched_outer,
    drop_axis,
    linalg_error,
    shape_checked,
    sum_to_input,
    symmetric_from_triangle_grad,
    transpose,
    triangle,
    warn_if_ill_conditioned,
    warn_ill_conditioned,
)
from workbench.core.tensor.linalg.products import matmul

__all__ = ["Det", "DiagonalSolve", "Inv", "SLogDet", "Solve", "SolveTriangular",
           "TriangularMatmul", "cho_solve", "det", "inv", "slogdet", "solve", "solve_triangular"]

#: scipy's names of the matrix structures `solve` may assume, by their short form.
ASSUME_A = {"gen": "gen", "general": "gen", "sym": "sym", "symmetric": "sym",
            "her": "her", "hermitian": "her", "pos": "pos", "positive definite": "pos",
            "tri": "tri", "triangular": "tri"}

#: scipy's (>= 1.15) structures whose solver reads fewer entries of `a`, as `solve`
#: computes them: (the solve, the triangle a triangular one reads)
STRUCTURES = {"upper triangular": ("tri", False), "lower triangular": ("tri", True),
              "diagonal": ("diagonal", None), "tridiagonal": ("tridiagonal", None),
              "banded": ("gen", None)}

#: the assume_a values whose matrix is one triangle and its mirror image
SYMMETRIC = ("sym", "her", "pos")



def symmetrized(a: np.ndarray, lower: bool, hermitian: bool = False) -> np.ndarray:
    """The symmetric matrices whose `lower` (or upper) triangle is that of `a`; when
    `hermitian` and `a` is complex, the Hermitian ones (the mirror conjugated, the
    diagonal's imaginary part dropped, as LAPACK's Hermitian routines read it)."""
    t = np.tril(a) if lower else np.triu(a)
    strict = np.tril(a, -1) if lower else np.triu(a, 1)
    mirror = np.swapaxes(strict, -1, -2)
    if not (hermitian and np.iscomplexobj(a)):
        return t + mirror
    n = a.shape[-1]
    full = t + np.conj(mirror)
    full[..., np.arange(n), np.arange(n)] = full[..., np.arange(n), np.arange(n)].real
    return full


def triangular_solve_np(function: str, a: np.ndarray, b: np.ndarray, lower: bool,
                        trans: bool, unit_diagonal: bool, conjugate: bool = False
                        ) -> np.ndarray:
    """``op(t)^-1 b`` with t the `lower`/upper triangle of `a` (unit diagonal if asked),
    op the transpose when `trans` (conjugated when `conjugate`); b has core shape (m, k).
    A zero on the diagonal raises scipy's "singular matrix: resolution failed at diagonal i"."""
    t = np.tril(a) if lower else np.triu(a)
    n = a.shape[-1]
    if unit_diagonal:
        t = t.copy()
        t[..., np.arange(n), np.arange(n)] = 1
    zero = np.diagonal(t, axis1=-2, axis2=-1) == 0
    if zero.any():
        flat = zero.reshape(-1, n)
        row = int(np.argmax(flat.any(axis=1)))
        batch = row if t.ndim > 2 else None
        raise linalg_error(function, "singular matrix: resolution failed at diagonal "
                           f"{int(np.argmax(flat[row]))}", batch)
    if trans:
        t = np.swapaxes(t, -1, -2)
        if conjugate:
            t = np.conj(t)
    if np.isfinite(t).all() and np.isfinite(b).all():
        return np.linalg.solve(t, b)
    return _substitution(t, b, lower != trans)


def _substitution(t: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """``t^-1 b`` for a triangular `t` or a `b` holding an inf or a NaN, by substitution (what
    scipy's trtrs and the C linker run), so such entries reach the result as there
    (``[[2, 0], [inf, 3]]`` gives ``[0.5, -inf]``) and not as LU's NaN everywhere or a
    singular-matrix error."""
    shape = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = np.broadcast_to(t, (*shape, *t.shape[-2:]))
    x = np.array(np.broadcast_to(b, (*shape, *b.shape[-2:])),
                 dtype=np.result_type(t, b), copy=True)
    n = t.shape[-1]
    with np.errstate(all="ignore"):
        for j in (range(n) if lower else range(n - 1, -1, -1)):
            done = slice(0, j) if lower else slice(j + 1, n)
            rest = x[..., j, :] - np.einsum("...k,...kc->...c", t[..., j, done],
                                             x[..., done, :])
            x[..., j, :] = rest / t[..., j, j, None]
    return x


def not_finite_message(function: str, what: str) -> str:
    """scipy's message for an input with an infinity or a NaN when `check_finite`."""
    return (f"{function}: array must not contain infs or NaNs ({what} has one; "
            "check_finite=False skips this check, as in scipy.linalg)")


class _SolveOp(LinalgOp):
    """What Solve and SolveTriangular share: `b_ndim` (1: a stack of vectors, signature
    ``(m,m),(m)->(m)``; 2: of matrices, ``(m,m),(m,n)->(m,n)``), `check_finite`
    (scipy's ValueError for an input with an infinity or a NaN) and `perform` around
    `solve_matrices`, which sees `b` as matrices."""

    abstract = True
    b_ndim = 2
    check_finite = False
    pprint_hidden = ("b_ndim", "check_finite")
    #: whether the rule of non-finite input of unchecked solves applies (module
    #: docstring): the factorising solves only
    nan_rule = False

    def unchecked(self) -> _SolveOp:
        """This Op without `check_finite` (for the solves a gradient builds)."""
        if not self.check_finite:
            return self
        return type(self)(**{p: getattr(self, p) for p in self.__props__
                             if p != "check_finite"})

    def check_finite_values(self, a: Any, b: Any, isfinite: Any) -> None:
        """scipy's ValueError when `check_finite` and `a` or `b` has an inf or a NaN
        (`isfinite(x)` is True when every entry of x is finite)."""
        if not self.check_finite:
            return
        for what, value in (("a", a), ("b", b)):
            if not isfinite(value):
                raise ValueError(not_finite_message(self.function_name, what))

    @property
    def gufunc_signature(self) -> str:  # type: ignore[override]
        return "(m,m),(m)->(m)" if self.b_ndim == 1 else "(m,m),(m,n)->(m,n)"

    @staticmethod
    def checked_b_ndim(op_name: str, b_ndim: int) -> int:
        if b_ndim not in (1, 2):
            raise ValueError(f"{op_name}: b_ndim must be 1 or 2, got {b_ndim!r}")
        return int(b_ndim)

    def solve_matrices(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def read_triangle(self) -> tuple[bool, int] | None:
        """The part of `a` the solve reads, for the rule of non-finite input (module
        docstring): None for all of it, else ``(lower, k)``: ``tril(a, k)`` or
        ``triu(a, k)``."""
        return None

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        a, b = inputs
        self.batch_shape(inputs)
        self.check_finite_values(a, b, lambda v: bool(np.isfinite(v).all()))
        b2 = b[..., None] if self.b_ndim == 1 else b
        bad = not_finite_systems(self, a, b2) if self.nan_rule else None
        if bad is None:
            x = self.solve_matrices(a, b2)
        else:  # the rule of non-finite input: those systems solved as I x = 0, then NaN
            a_bad, columns_bad = bad
            eye = np.eye(a.shape[-1], dtype=a.dtype)
            x = self.solve_matrices(np.where(a_bad[..., None, None], eye, a),
                                    np.where(columns_bad[..., None, :], 0, b2))
            x = np.where((a_bad[..., None] | columns_bad)[..., None, :], np.nan, x)
        if self.b_ndim == 1:
            x = x[..., 0]
        output_storage[0][0] = np.asarray(x, dtype=node.outputs[0].type.numpy_dtype)


def not_finite_systems(op: _SolveOp, a: Any, b2: Any, xp: Any = np) -> tuple[Any, Any] | None:
    """``(a_bad, columns_bad)`` when some system of the unchecked solve `op` has an inf
    or a NaN where the rule of non-finite input looks (module docstring): per matrix of
    `a`'s stack whether the part `op` reads has one, per column of `b2` (a stack of
    matrices) whether it has one; None when everything is finite. `xp`: numpy, or torch
    for its tensors (the gpu linker's)."""
    triangle = op.read_triangle()
    if triangle is not None:
        lower, k = triangle
        a = xp.tril(a, k) if lower else xp.triu(a, k)
    a_bad = ~xp.isfinite(a).all(-1).all(-1)
    columns_bad = ~xp.isfinite(b2).all(-2)
    if not (a_bad.any() or columns_bad.any()):
        return None
    return a_bad, columns_bad


class Solve(_SolveOp):
    """``x`` with ``a @ x = b`` for stacks of square matrices `a`.

    Props: `assume_a` ("gen", "sym", "her", "pos" or "tri"), `lower` (which triangle of
    `a` "sym"/"her"/"pos"/"tri" read) and `b_ndim` (1: `b` is a stack of vectors, core signature
    ``(m,m),(m)->(m)``; 2: of matrices, ``(m,m),(m,n)->(m,n)``); `function_name`: the
    function its errors and warnings name ("solve"; "inv" for the solve
    ``inv(a) @ b`` became, whose singular matrix is then inv's error).
    """

    __props__ = ("assume_a", "lower", "b_ndim", "check_finite", "function_name")
    # A formula shows what the node computes: solve(K, y), also for the solve that
    # inv(K) @ y became (whose messages name inv).
    pprint_name = "solve"
    pprint_hidden = ("b_ndim", "check_finite", "function_name")

    def __init__(self, assume_a: str = "gen", lower: bool = False, b_ndim: int = 2,
                 check_finite: bool = False, function_name: str = "solve") -> None:
        if assume_a not in ASSUME_A.values():
            raise ValueError(f"Solve: assume_a must be one of {sorted(set(ASSUME_A.values()))}, "
                             f"got {assume_a!r}")
        self.assume_a, self.lower = assume_a, bool(lower)
        self.b_ndim = self.checked_b_ndim("Solve", b_ndim)
        self.check_finite = bool(check_finite)
        self.function_name = str(function_name)

    def __str__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self._props_dict().items()
                          if k != "function_name" or v != "solve")
        return f"Solve{{{shown}}}"

    @property
    def nan_rule(self) -> bool:  # type: ignore[override]
        return self.assume_a != "tri"

    def read_triangle(self) -> tuple[bool, int] | None:
        return None if self.assume_a == "gen" else (self.lower, 0)

    def solve_matrices(self, a: np.ndarray, b2: np.ndarray) -> np.ndarray:
        try:
            if self.assume_a == "tri":
                x = triangular_solve_np(self.function_name, a, b2, self.lower, False, False)
            elif self.assume_a == "gen":
                x = np.linalg.solve(a, b2)
                warn_if_ill_conditioned(self.function_name, a)
            else:
                s = symmetrized(a, self.lower, hermitian=self.assume_a != "sym")
                if self.assume_a == "pos":
                    try:
                        np.linalg.cholesky(s)
                    except LinAlgError:
                        raise linalg_error(self.function_name, "Matrix is not positive definite "
                                           "(assume_a='pos')") from None
                x = np.linalg.solve(s, b2)
                warn_if_ill_conditioned(self.function_name, s)
        except LinAlgError as exc:
            if str(exc).startswith(self.function_name):
                raise
            raise linalg_error(self.function_name, str(exc)) from None
        return x

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        n = inputs[0][-1]
        k = inputs[1][-1] if self.b_ndim == 2 else 1
        batch = float(np.prod(outputs[0][:len(outputs[0]) - self.b_ndim]))
        return batch * (2 / 3 * n ** 3 + 2 * n * n * k)

    def _solve_transposed(self, a: Variable, g: Variable) -> Variable:
        """``a^-T g`` with the same structure assumption."""
        if self.assume_a in SYMMETRIC:
            return Solve(self.assume_a, self.lower, self.b_ndim)(a, g)
        if self.assume_a == "tri":
            return SolveTriangular(self.lower, True, False, self.b_ndim)(a, g)
        return Solve("gen", False, self.b_ndim)(transpose(a), g)

    def grad_of_matrix(self, a: Variable, g_full: Variable) -> Variable:
        """The gradient with respect to `a` from that with respect to the full matrix
        the solve used (restricted to the triangle it read)."""
        if self.assume_a in SYMMETRIC:
            return symmetric_from_triangle_grad(g_full, self.lower)
        if self.assume_a == "tri":
            return triangle(g_full, self.lower)
        return g_full

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        (a, b), (x,), (gx,) = inputs, outputs, output_grads
        gb = self._solve_transposed(a, gx)
        if self.b_ndim == 1:
            ga = -batched_outer(gb, x)
        else:
            ga = -matmul(gb, transpose(x))
        ga = self.grad_of_matrix(a, ga)
        return [sum_to_input(ga, a, 2), sum_to_input(gb, b, self.b_ndim)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``dx = a^-1 (db - da x)``."""
        (a, b), (ea, eb) = inputs, eval_points
        if ea is None and eb is None:
            return [None]
        x = self(a, b)
        solve = self.unchecked()
        rhs = eb
        if ea is not None:
            ea = self._effective(ea)
            if self.b_ndim == 1:
                prod = drop_axis(matmul(ea, add_axis(x, -1)), -1)
            else:
                prod = matmul(ea, x)
            rhs = -prod if rhs is None else rhs - prod
        return [solve(a, rhs)]

    def _effective(self, ea: Variable) -> Variable:
        """The change of the matrix the solve used when `a` changes by `ea`."""
        from workbench.core.tensor import math as tm

        if self.assume_a in SYMMETRIC:
            t = triangle(ea, self.lower)
            return tm.add(t, transpose(triangle(ea, self.lower, strict=True)))
        if self.assume_a == "tri":
            return triangle(ea, self.lower)
        return ea


class SolveTriangular(_SolveOp):
    """``op(t)^-1 b`` with `t` the lower (or upper) triangle of `a`, op the transpose
    when `trans` (the conjugate transpose when also `conjugate`: scipy's ``trans=2``),
    a unit diagonal assumed when `unit_diagonal` (scipy.linalg's solve_triangular);
    `b_ndim` as in `Solve`."""

    __props__ = ("lower", "trans", "unit_diagonal", "b_ndim", "conjugate", "check_finite")
    function_name = "solve_triangular"

    def __init__(self, lower: bool = False, trans: bool = False, unit_diagonal: bool = False,
                 b_ndim: int = 2, conjugate: bool = False, check_finite: bool = False) -> None:
        self.lower, self.trans = bool(lower), bool(trans)
        self.unit_diagonal = bool(unit_diagonal)
        self.b_ndim = self.checked_b_ndim("SolveTriangular", b_ndim)
        self.conjugate = bool(conjugate) and self.trans
        self.check_finite = bool(check_finite)

    def solve_matrices(self, a: np.ndarray, b2: np.ndarray) -> np.ndarray:
        return triangular_solve_np("solve_triangular", a, b2, self.lower, self.trans,
                                   self.unit_diagonal, self.conjugate)

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        n = inputs[0][-1]
        return float(np.prod(outputs[0])) * n

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``gb = op(t)^-T gx``; ``gt = -gb x^T`` (or its transpose when `trans`), on the
        triangle read (without the diagonal when it is a unit one)."""
        (a, b), (x,), (gx,) = inputs, outputs, output_grads
        gb = SolveTriangular(self.lower, not self.trans, self.unit_diagonal, self.b_ndim)(a, gx)
        if self.b_ndim == 1:
            g_op = -batched_outer(gb, x)
        else:
            g_op = -matmul(gb, transpose(x))
        g = transpose(g_op) if self.trans else g_op
        ga = triangle(g, self.lower, strict=self.unit_diagonal)
        return [sum_to_input(ga, a, 2), sum_to_input(gb, b, self.b_ndim)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``dx = op(t)^-1 (db - op(dt) x)``, dt the change of the triangle read."""
        from workbench.core.tensor import math as tm

        (a, b), (ea, eb) = inputs, eval_points
        if ea is None and eb is None:
            return [None]
        x = self(a, b)
        rhs = eb
        if ea is not None:
            dt = triangle(ea, self.lower, strict=self.unit_diagonal)
            if self.trans:
                dt = tm.conj(transpose(dt)) if self.conjugate else transpose(dt)
            if self.b_ndim == 1:
                prod = drop_axis(matmul(dt, add_axis(x, -1)), -1)
            else:
                prod = matmul(dt, x)
            rhs = tm.neg(prod) if rhs is None else tm.sub(rhs, prod)
        return [self.unchecked()(a, rhs)]


class TriangularMatmul(LinalgOp):
    """``op(t) @ b`` with `t` the lower (or upper) triangle of `a` and op the transpose
    when `trans` (BLAS trmm: half the work of a general product). The gradients of
    the factorisations use it; no rewrite builds it from ``@`` yet."""

    __props__ = ("lower", "trans")
    gufunc_signature = "(m,m),(m,n)->(m,n)"
    function_name = "triangular_matmul"
    b_ndim = 2  # the right operand is a stack of matrices (as Solve's b_ndim=2)

    def __init__(self, lower: bool = True, trans: bool = False) -> None:
        self.lower, self.trans = bool(lower), bool(trans)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        a, b = inputs
        self.batch_shape(inputs)
        t = np.tril(a) if self.lower else np.triu(a)
        if self.trans:
            t = np.swapaxes(t, -1, -2)
        output_storage[0][0] = np.asarray(np.matmul(t, b),
                                          dtype=node.outputs[0].type.numpy_dtype)

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        return float(np.prod(outputs[0])) * inputs[0][-1]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``gb = op(t)^T gc``; ``gt = gc b^T`` (``b gc^T`` when `trans`) on the triangle."""
        (a, b), (gc,) = inputs, output_grads
        gb = TriangularMatmul(self.lower, not self.trans)(a, gc)
        g_t = matmul(b, transpose(gc)) if self.trans else matmul(gc, transpose(b))
        return [sum_to_input(triangle(g_t, self.lower), a, 2), sum_to_input(gb, b, 2)]


class DiagonalSolve(_SolveOp):
    """``x`` with ``diag(d) @ x = b``: ``b / d`` (row-wise for a matrix `b`), what
    ``solve`` of a known diagonal matrix becomes (rules/linalg.py). A zero in `d`
    raises the solve's LinAlgError ("solve: Singular matrix"), never inf: the
    rewrite must not turn the solve's error into a value. `b_ndim` and
    `check_finite` as in `Solve` (`d` is the diagonal of the solve's `a`).
    `hermitian`: the solve read a Hermitian matrix (``assume_a="her"|"pos"``), whose
    diagonal LAPACK takes as real: ``b / real(d)`` (after the finite check of `d`).
    `positive`: it assumed a positive-definite one (``"pos"``): an entry of
    ``real(d)`` <= 0 raises its "not positive definite" LinAlgError. `warn`: the solve
    warned `LinAlgWarning` for an ill-conditioned matrix (`solve`, not
    `solve_triangular`): so does this, with the exact reciprocal condition number of a
    diagonal matrix, ``min|d| / max|d|`` (py and C; not gpu, as `Solve`)."""

    __props__ = ("b_ndim", "check_finite", "hermitian", "positive", "warn")
    pprint_hidden = ("b_ndim", "check_finite", "warn")
    function_name = "solve"

    def __init__(self, b_ndim: int = 2, check_finite: bool = False, hermitian: bool = False,
                 positive: bool = False, warn: bool = False) -> None:
        self.b_ndim = self.checked_b_ndim("DiagonalSolve", b_ndim)
        self.check_finite = bool(check_finite)
        self.positive = bool(positive)
        self.hermitian = bool(hermitian) or self.positive
        self.warn = bool(warn)

    @property
    def gufunc_signature(self) -> str:  # type: ignore[override]
        return "(m),(m)->(m)" if self.b_ndim == 1 else "(m),(m,n)->(m,n)"

    def pprint_text(self, args: Sequence[str]) -> str:
        d, b = args
        return f"solve(diag({d}), {b})"

    def solve_matrices(self, d: np.ndarray, b2: np.ndarray) -> np.ndarray:
        if self.hermitian:
            d = d.real
        if self.positive and (d <= 0).any():
            row = int(np.argmax((d <= 0).reshape(-1, d.shape[-1]).any(axis=1)))
            raise linalg_error("solve", "Matrix is not positive definite (assume_a='pos')",
                               row if d.ndim > 1 else None)
        zero = d == 0
        if zero.any():
            flat = zero.reshape(-1, d.shape[-1])
            row = int(np.argmax(flat.any(axis=1)))
            raise linalg_error("solve", "Singular matrix: the diagonal matrix has a zero at "
                               f"position {int(np.argmax(flat[row]))}",
                               row if d.ndim > 1 else None)
        if self.warn and d.shape[-1]:
            batch = np.broadcast_shapes(d.shape[:-1], b2.shape[:-2])
            magnitude = np.abs(np.broadcast_to(d, (*batch, d.shape[-1])))
            with np.errstate(invalid="ignore"):
                rcond = (magnitude.min(axis=-1) / magnitude.max(axis=-1)).reshape(-1)
            bad = np.flatnonzero(rcond < np.finfo(d.dtype).eps)  # a NaN never warns
            if bad.size:
                warn_ill_conditioned("solve", float(rcond[bad[0]]),
                                     int(bad[0]) if batch else None)
        return b2 / d[..., None]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        return float(np.prod(outputs[0]))

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``gb = gx / d``; ``gd = -sum(gb * x)`` over b's columns."""
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.reduction import sum as reduce_sum

        (d, b), (x,), (gx,) = inputs, outputs, output_grads
        gb = DiagonalSolve(self.b_ndim, hermitian=self.hermitian)(d, gx)
        gd = tm.neg(tm.mul(gb, x))
        if self.b_ndim == 2:
            gd = reduce_sum(gd, axis=-1)
        if self.hermitian:  # only real(d) is read
            gd = tm.real(gd)
        return [sum_to_input(gd, d, 1), sum_to_input(gb, b, self.b_ndim)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``dx = (db - dd x) / d``."""
        from workbench.core.tensor import math as tm

        (d, b), (ed, eb) = inputs, eval_points
        if ed is None and eb is None:
            return [None]
        x = self(d, b)
        rhs = eb
        if ed is not None:
            ed = tm.real(ed) if self.hermitian else ed
            prod = tm.mul(ed if self.b_ndim == 1 else add_axis(ed, -1), x)
            rhs = tm.neg(prod) if rhs is None else tm.sub(rhs, prod)
        return [DiagonalSolve(self.b_ndim, hermitian=self.hermitian)(d, rhs)]


class Inv(LinalgOp):
    """The inverse of each square matrix (numpy.linalg.inv); a singular one raises."""

    __props__ = ()
    gufunc_signature = "(m,m)->(m,m)"
    function_name = "inv"

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        try:
            y = np.linalg.inv(inputs[0])
        except LinAlgError as exc:
            raise linalg_error("inv", str(exc)) from None
        warn_if_ill_conditioned("inv", inputs[0], y)
        output_storage[0][0] = np.asarray(y, dtype=node.outputs[0].type.numpy_dtype)

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        n = inputs[0][-1]
        return float(np.prod(inputs[0][:-2])) * 2 * n ** 3

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``-y^T gy y^T``."""
        (y,), (gy,) = outputs, output_grads
        yt = transpose(y)
        return [-matmul(matmul(yt, gy), yt)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``-y ea y``."""
        (ea,) = eval_points
        if ea is None:
            return [None]
        y = self(inputs[0])
        return [-matmul(matmul(y, ea), y)]


class Det(LinalgOp):
    """The determinant of each square matrix (numpy.linalg.det): 0 for a singular
    matrix, 1 for a 0x0 one."""

    __props__ = ()
    gufunc_signature = "(m,m)->()"
    function_name = "det"

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = np.asarray(np.linalg.det(inputs[0]),
                                          dtype=node.outputs[0].type.numpy_dtype)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``g d a^-T`` (undefined, as inf/NaN, at a singular matrix)."""
        from workbench.core.tensor import math as tm

        (a,), (d,), (g,) = inputs, outputs, output_grads
        scale = add_axis(add_axis(tm.mul(g, d), -1), -1)
        return [tm.mul(scale, transpose(Inv()(a)))]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``d trace(a^-1 ea)``."""
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.reduction import sum as reduce_sum

        (a,), (ea,) = inputs, eval_points
        if ea is None:
            return [None]
        inner = tm.mul(transpose(Inv()(a)), ea)
        return [tm.mul(self(a), reduce_sum(inner, axis=(-2, -1)))]


class SLogDet(LinalgOp):
    """``(sign, log|det|)`` of each square matrix (numpy.linalg.slogdet): ``(0, -inf)``
    for a singular matrix."""

    __props__ = ()
    gufunc_signature = "(m,m)->(),()"
    function_name = "slogdet"
    output_dtypes = (None, "real")  # the sign is complex (unit modulus) for complex a

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        sign, logdet = np.linalg.slogdet(inputs[0])
        output_storage[0][0] = np.asarray(sign, dtype=node.outputs[0].type.numpy_dtype)
        output_storage[1][0] = np.asarray(logdet, dtype=node.outputs[1].type.numpy_dtype)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``g a^-T`` for log|det|; the sign is piecewise constant (no gradient)."""
        from workbench.core.graph.type import is_disconnected
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.creation import zeros_like

        (a,), (_, g) = inputs, output_grads
        if is_disconnected(g):
            return [zeros_like(a)]
        return [tm.mul(add_axis(add_axis(g, -1), -1), transpose(Inv()(a)))]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The sign does not change; ``d log|det| = trace(a^-1 ea)``."""
        from workbench.core.tensor import math as tm
        from workbench.core.tensor.creation import zeros_like
        from workbench.core.tensor.reduction import sum as reduce_sum

        (a,), (ea,) = inputs, eval_points
        if ea is None:
            return [None, None]
        sign, _ = self(a)
        inner = tm.mul(transpose(Inv()(a)), ea)
        return [zeros_like(sign), reduce_sum(inner, axis=(-2, -1))]


# -- functions -------------------------------------------------------------------------


def _b_ndim(b: Variable) -> int:
    return 1 if b.type.ndim == 1 else 2


def solve(a: Any, b: Any, assume_a: str = "gen", lower: bool = False,
          check_finite: bool = True, transposed: bool = False) -> Variable:
    """``x`` with ``a @ x = b`` (``a^T x = b`` when `transposed`; scipy.linalg.solve's
    `assume_a`, `lower`, `check_finite`, `transposed` and errors; numpy's batching: `b`
    of rank 1 is one vector, otherwise a stack of matrices)."""
    key = assume_a.lower() if isinstance(assume_a, str) else assume_a
    if key not in ASSUME_A and key not in STRUCTURES:
        raise ValueError("solve: assume_a must be one of "
                         f"{', '.join(map(repr, [*ASSUME_A, *STRUCTURES]))}; got {assume_a!r}")
    a, b = as_lapack_operands("solve", a, b, min_ndims=(2, 1))
    if transposed and a.type.dtype.is_complex:
        raise NotImplementedError("solve: transposed=True solves a^T x = b for a real a only "
                                  "(scipy.linalg.solve refuses complex matrices too)")
    kind, triangle_lower = STRUCTURES.get(key, (ASSUME_A.get(key), None))
    lower = lower if triangle_lower is None else triangle_lower
    nd = _b_ndim(b)
    if kind == "tri" and transposed:
        return SolveTriangular(lower, True, False, nd, False, check_finite)(a, b)
    if kind in ("diagonal", "tridiagonal"):
        return _banded_solve(a, b, kind == "diagonal", transposed, check_finite)
    if transposed and kind == "gen":  # sym, her (real) and pos: a^T is a
        a = transpose(a)
    return Solve(kind, lower, nd, check_finite)(a, b)


def _banded_solve(a: Variable, b: Variable, diagonal: bool, transposed: bool,
                  check_finite: bool) -> Variable:
    """scipy's ``assume_a="diagonal"`` (``b / diag(a)``) or ``"tridiagonal"`` (a general
    solve of a's three central diagonals): the other entries of `a` are never read,
    but checked for infinities and NaNs when `check_finite`, as scipy does."""
    from workbench.core.tensor import math as tm
    from workbench.core.tensor.array_utils import diagonal as diagonal_of
    from workbench.core.tensor.creation import arange
    from workbench.core.tensor.reduction import all as reduce_all
    from workbench.core.tensor.shape import check_and_raise, shape_tuple

    a = shape_checked("solve", "(m,m)->(m,m)", a)
    if check_finite:
        a = check_and_raise(a, [reduce_all(tm.isfinite(a))], "ValueError",
                            not_finite_message("solve", "a"))
    nd = _b_ndim(b)
    if diagonal:
        return DiagonalSolve(nd, check_finite, warn=True)(diagonal_of(a, 0, -2, -1), b)
    idx = arange(shape_tuple(a)[-1])
    band = tm.le(tm.abs(tm.sub(add_axis(idx, -1), add_axis(idx, 0))), 1)
    band_of_a = tm.switch(band, transpose(a) if transposed else a, 0)
    return Solve("gen", False, nd, check_finite)(band_of_a, b)


def solve_triangular(a: Any, b: Any, lower: bool = False, trans: Any = 0,
                     unit_diagonal: bool = False, check_finite: bool = True) -> Variable:
    """scipy.linalg.solve_triangular: ``op(t)^-1 b`` for the lower (or upper) triangle
    `t` of `a`; `trans` is 0/"N" (t), 1/"T" (its transpose) or 2/"C" (its conjugate
    transpose); `check_finite` as scipy's."""
    if trans in (0, "N", "n"):
        transposed = False
    elif trans in (1, 2, "T", "t", "C", "c"):
        transposed = True
    else:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C'; got "
                         f"{trans!r}")
    a, b = as_lapack_operands("solve_triangular", a, b, min_ndims=(2, 1))
    conjugate = a.type.dtype.is_complex and trans in (2, "C", "c")
    return SolveTriangular(lower, transposed, unit_diagonal, _b_ndim(b), conjugate,
                           check_finite)(a, b)


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, check_finite: bool = True) -> Variable:
    """scipy.linalg.cho_solve: ``x`` with ``a @ x = b`` given the Cholesky factor `c` of
    `a` (``(c, lower)``; only that triangle of `c` is read): two triangular solves, the
    first checking `c` and `b` when `check_finite` (scipy's). A zero on c's diagonal
    raises LinAlgError (scipy's potrs divides by it and returns inf/NaN)."""
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise TypeError("cho_solve takes (c, lower) and b, as scipy.linalg.cho_solve; got "
                        f"{c_and_lower!r}") from None
    c, b = as_lapack_operands("cho_solve", c, b, min_ndims=(2, 1))
    nd = _b_ndim(b)
    conj = c.type.dtype.is_complex  # a = c c^H: the transposed solve is conjugated
    first = SolveTriangular(bool(lower), not lower, False, nd, conj, check_finite)(c, b)
    return SolveTriangular(bool(lower), bool(lower), False, nd, conj)(c, first)


def inv(a: Any) -> Variable:
    """numpy.linalg.inv: the inverse of each square matrix of `a`."""
    (a,) = as_lapack_operands("inv", a, min_ndims=(2,))
    return Inv()(a)


def det(a: Any) -> Variable:
    """numpy.linalg.det: the determinant of each square matrix of `a`."""
    (a,) = as_lapack_operands("det", a, min_ndims=(2,))
    return Det()(a)


def slogdet(a: Any) -> tuple[Variable, Variable]:
    """numpy.linalg.slogdet: ``(sign, logabsdet)`` of each square matrix of `a`."""
    (a,) = as_lapack_operands("slogdet", a, min_ndims=(2,))
    sign, logdet = SLogDet()(a)
    return sign, logdet
