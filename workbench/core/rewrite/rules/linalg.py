"""Rewrites of linear algebra that PyTensor users know, each a named rule in the trace.

Stabilize:
- ``local_inv_dot_to_solve``: ``inv(a) @ b -> solve(a, b)`` and ``b @ inv(a) ->
  solve(a^T, b^T)^T`` (one LU solve instead of an inverse and a product; more
  accurate). Only when nothing else uses the inverse.
- ``local_log_det_to_slogdet``: ``log(det(a)) -> log(sign) + logabsdet`` of `slogdet`
  (no overflow of the determinant; ``log(sign)`` keeps log's NaN for a negative
  determinant and -inf for a singular one) and ``log(abs(det(a))) -> logabsdet``.
- ``local_det_grad_cancel``: ``(n / det(a)) * det(a) -> n``, the factor the gradient
  of ``log(det(a))`` carries (log's ``g / det`` times Det's ``g det a^-T``): without it
  the gradient is ``0 * inf = NaN`` whenever the determinant under- or overflows
  while the value, through `slogdet`, is finite.

Specialize (the structure of a matrix known from how it was built: a Cholesky
factor or its transpose is triangular; ``diag(v)`` -- a set of the same index pair
into zeros -- and ``eye(n) * x`` are diagonal):
- ``local_det_of_triangular``: ``det(t) -> prod(diagonal(t))`` for a triangular or
  diagonal `t` (so ``det(diag(x)) -> prod(x)`` up to reading the diagonal), and
  ``slogdet(t)`` from the diagonal the same way.
- ``local_det_from_cholesky``: ``det(a)`` / ``slogdet(a)`` of a matrix known Hermitian
  (``x @ x^H``, ``s + s^H``, a real diagonal; ``^H`` is ``^T`` for real dtypes) that
  the graph also factorises (``cholesky(a)``) from that factor's diagonal:
  ``prod(diag(L))^2`` and ``(1, 2 sum(log(diag(L))))``, no LU. Exact for the
  positive-definite matrices the factorisation accepts (it raises for the others, and
  stays in the graph); declined for any other `a`, whose other triangle the factor
  never read, and for a factor only a lazy `ifelse` branch computes.
- ``local_solve_triangular_matrix``: ``solve(t, b)`` with a known triangular `t` (a
  Cholesky factor, ``tril(x)``/``triu(x)``, or their transposes) becomes
  `solve_triangular` (a transposed factor through ``trans``, no copy; ``tril(x)`` is
  read as x's lower triangle, without the mask). General solves only: with
  ``assume_a="sym"|"her"|"pos"`` the solve mirrors the triangle it reads.
- ``local_solve_diagonal_matrix``: ``solve(d, b) -> DiagonalSolve(diagonal(d), b)``
  (``b / diagonal(d)``, O(n k) instead of an O(n^3) LU) for a known diagonal `d`. A
  zero on the diagonal raises the solve's LinAlgError there too (one comparison per
  entry), and the solve's `check_finite` is kept (declined for ``eye(n) * x`` when it
  checks: ``0 * inf`` off the diagonal is a NaN the check would have found). A
  conjugate triangular solve divides by ``conj(d)``; a Hermitian or positive-definite
  one by ``real(d)`` (LAPACK's reading), the latter raising for ``real(d) <= 0``.
- ``local_cholesky_outer_product``: ``L @ L^T -> a`` (the symmetric matrix the
  factor's triangle describes) for ``L = cholesky(a)``, and ``U^T @ U`` for the
  upper factor, where the factorisation stays in the graph for another use: it still
  raises for an `a` that is not positive definite, so the product's outcome cannot
  change. An inf or a NaN in `a` spreads through the factor into the product (NaN
  rows and columns, where `a` has the one entry), so the product stays, lazily, for
  such an `a`: ``ifelse(all(isfinite(a)), a, L @ L^T)`` (an O(n^2) check for the
  O(n^3) product). Where the product is the factor's only use the rewrite would drop that
  error (``L @ L^T`` of a negative-definite `a` would give `a`, where SciPy raises):
  that is ``local_cholesky_outer_product_unchecked``, in no default mode, tagged
  ``drops_checks`` (`DROPS_CHECKS`, as random draws' ``changes_draws``): ask for it
  by name or tag where `a` is known positive definite.

For an inf or a NaN, ``inv(a) @ b`` and an unchecked solve (``check_finite=False``)
stay as written, in the lazy else branch of an ``ifelse(all(isfinite(...)), new, old)``
(`_finite_or_kept`): LU, a substitution and ``b / d`` each spread them their own way
(the general solve's rule: tensor/linalg/solvers.py), and the check is O(n^2) next to
the O(n^3) saved.

A rewrite never turns an error of the graph into a value in the default modes: the
rules that read only a diagonal keep the square check of the Op they replace (a
ShapeCheck where the lengths are known only when run, `_square`), and an ``eye(n)`` of
a length known only when run counts as diagonal only where it cannot spread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Variable
from workbench.core.rewrite.db import (
    DROPS_CHECKS,
    register_specialize,
    register_stabilize,
    specialize_db,
)
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.rewrite.rules.rule_utils import (
    alloc_operand,
    broadcast_like,
    computed_unconditionally,
    constant_data,
    is_constant_value,
    owner_scalar_op,
    single_client,
)
from workbench.core.scalar import math as smath
from workbench.core.tensor import math as tm
from workbench.core.tensor.creation import Eye
from workbench.core.tensor.elemwise import DimShuffle, Elemwise
from workbench.core.tensor.linalg.base import transpose
from workbench.core.tensor.linalg.decompositions import Cholesky
from workbench.core.tensor.linalg.products import Dot, MatMul
from workbench.core.tensor.linalg.solvers import (
    Det,
    DiagonalSolve,
    Inv,
    SLogDet,
    Solve,
    SolveTriangular,
)
from workbench.core.tensor.shape import Shape_i

__all__ = [
    "diag_vector", "diagonal_matrix", "local_cholesky_outer_product",
    "local_cholesky_outer_product_unchecked", "local_det_from_cholesky",
    "local_det_grad_cancel", "local_det_of_triangular", "local_inv_dot_to_solve",
    "local_log_det_to_slogdet",
    "local_solve_diagonal_matrix", "local_solve_triangular_matrix", "masked_triangle",
    "adjoint_of", "symmetric_matrix", "transposed_source", "triangular_structure",
]  # fmt: skip


# -- what a matrix is known to be ----------------------------------------------------------


def transposed_source(var: Variable) -> Variable | None:
    """`v` if `var` is `v` with its last two dimensions swapped (a DimShuffle)."""
    node = var.owner
    if node is None or not isinstance(node.op, DimShuffle):
        return None
    nd = node.op.input_ndim
    if nd < 2 or tuple(node.op.new_order) != (*range(nd - 2), nd - 1, nd - 2):
        return None
    return node.inputs[0]


def adjoint_of(y: Variable, x: Variable) -> bool:
    """Whether `y` is known to be x's conjugate transpose: ``x^T`` for a real `x`,
    ``conj(x)^T`` or ``conj(x^T)`` for a complex one (a complex ``x^T`` is not)."""
    if not x.type.dtype.is_complex:
        return transposed_source(y) is x
    if owner_scalar_op(y, smath.Conj) is not None and transposed_source(y.owner.inputs[0]) is x:
        return True
    source = transposed_source(y)
    return (source is not None and owner_scalar_op(source, smath.Conj) is not None
            and source.owner.inputs[0] is x)


def symmetric_matrix(var: Variable) -> bool:
    """Whether `var` is known Hermitian (symmetric when real) by construction, as a
    Cholesky factorisation reads it: ``x @ x^H`` / ``x^H @ x`` (a Dot or MatMul),
    ``s + s^H``, or a real diagonal matrix. A complex ``s + s^T`` or ``x @ x^T`` is
    complex-symmetric, not Hermitian, and a complex diagonal has an imaginary part
    the factorisation drops: none of them counts."""
    node = var.owner
    if node is None or var.type.ndim < 2:
        return False
    if ((isinstance(node.op, (Dot, MatMul))
         or (isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, smath.Add)))
            and len(node.inputs) == 2):
        x, y = node.inputs
        return adjoint_of(y, x) or adjoint_of(x, y)
    return var.type.ndim == 2 and not var.type.dtype.is_complex and diagonal_matrix(var)


def diagonal_matrix(var: Variable) -> bool:
    """Whether `var` (rank 2) is known to be diagonal: the same index pair set or added
    into zeros (``diag(v)``), or a product with ``eye(n)``."""
    from workbench.core.tensor.advanced_subtensor import AdvancedIncSubtensor

    if var.type.ndim != 2 or var.owner is None:
        return False
    node = var.owner
    if isinstance(node.op, AdvancedIncSubtensor):
        zeros = alloc_operand(node.inputs[0])
        return (len(node.op.idx_list) == 2 and len(node.inputs) == 4
                and node.inputs[2] is node.inputs[3]
                and zeros is not None and is_constant_value(zeros, 0))
    if isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, smath.Mul):
        for operand in node.inputs:
            # the diagonal factor must be square and not broadcast over the product: a
            # folded (1, 1) constant (2 * a) has no off-diagonal entries but spreads
            if _spreads(operand, var):
                continue
            if (operand.owner is not None and isinstance(operand.owner.op, Eye)
                    and is_constant_value(operand.owner.inputs[2], 0)
                    and _same_length(*operand.owner.inputs[:2])
                    and _eye_not_spread(operand, node)):
                return True
            data = constant_data(operand)
            if data is not None and data.ndim == 2 and data.shape[0] == data.shape[1] \
                    and not np.any(data[~np.eye(*data.shape, dtype=bool)]):
                return True  # a folded eye(n)
    return False


def _spreads(operand: Variable, product: Variable) -> bool:
    """Whether `operand` of an elementwise `product` may be broadcast along an axis (its
    length 1 there while the product's is not known to be 1)."""
    return any(o == 1 and p != 1 for o, p in zip(operand.type.shape, product.type.shape))


def _eye_not_spread(eye: Variable, node: Apply) -> bool:
    """Whether the ``eye(n)`` operand of the product `node` keeps its diagonal: its
    lengths are known (`_spreads` decided on them), or the product has two operands and
    `n` is a length of the other one, ``eye(x.shape[0]) * x`` (an eye of a length
    known only when run may be ``eye(1)``, which spreads over a larger matrix; with
    ``n`` a length of `x` that product is 1 x 1 or not square, and the solve or
    determinant checks that)."""
    if None not in eye.type.shape:
        return True
    if len(node.inputs) != 2:
        return False
    (other,) = [v for v in node.inputs if v is not eye] or [eye]
    n = eye.owner.inputs[0]
    return (n.owner is not None and isinstance(n.owner.op, Shape_i)
            and n.owner.inputs[0] is other)


def _same_length(n: Variable, m: Variable) -> bool:
    """Whether the lengths `n` and `m` of an ``eye(n, m)`` are known equal (square)."""
    if n is m:
        return True
    a, b = constant_data(n), constant_data(m)
    return a is not None and b is not None and int(a) == int(b)


def diag_vector(var: Variable) -> Variable | None:
    """`v` when `var` is exactly ``diag(v)``: `v` set at positions ``arange(n)`` of both
    axes of an n x n matrix of zeros, n being v's length."""
    from workbench.core.tensor.advanced_subtensor import AdvancedIncSubtensor
    from workbench.core.tensor.creation import Alloc, ARange

    if not diagonal_matrix(var) or not isinstance(var.owner.op, AdvancedIncSubtensor):
        return None
    node = var.owner
    zeros, v, index = node.inputs[0], node.inputs[1], node.inputs[2]
    if not node.op.set_instead_of_inc or v.type.ndim != 1 or index.owner is None:
        return None
    if not isinstance(index.owner.op, ARange):
        return None
    start, _, step = index.owner.inputs
    if not (is_constant_value(start, 0) and is_constant_value(step, 1)):
        return None
    if zeros.owner is None or not isinstance(zeros.owner.op, Alloc):
        return None
    rows, cols = zeros.owner.inputs[1:]
    n = v.type.shape[0]
    def is_length(length: Variable) -> bool:
        if n is not None and is_constant_value(length, n):
            return True
        return (length.owner is not None and isinstance(length.owner.op, Shape_i)
                and length.owner.op.i == 0 and length.owner.inputs[0] is v)
    # the index covers rows 0..stop-1 and v (length n) broadcasts to it: stop is n
    return v if is_length(rows) and is_length(cols) else None


def _index_grid(var: Variable, order: tuple[Any, ...]) -> bool:
    """Whether `var` is ``arange(n)`` (start 0, step 1) laid out by a DimShuffle `order`."""
    from workbench.core.tensor.creation import ARange

    node = var.owner
    if node is None or not isinstance(node.op, DimShuffle) or tuple(node.op.new_order) != order:
        return False
    inner = node.inputs[0].owner
    return (inner is not None and isinstance(inner.op, ARange)
            and is_constant_value(inner.inputs[0], 0) and is_constant_value(inner.inputs[2], 1))


def masked_triangle(var: Variable) -> tuple[Variable, bool, int] | None:
    """``(x, lower, k)`` when `var` is ``tril(x, k)`` (lower) or ``triu(x, k)`` as
    wt.tril/wt.triu build them: ``switch(row + k >= col, x, 0)`` (for triu the negation of
    ``row + k - 1 >= col``), for a 2-d mask of row and column indices."""
    node = var.owner
    if node is None or not isinstance(node.op, Elemwise) or not isinstance(
            node.op.scalar_op, smath.Switch):
        return None
    cond, x, other = node.inputs
    if not is_constant_value(other, 0) or x.type.ndim < 2:
        return None
    flipped = transposed_source(cond)  # the transpose lifted into the switch's inputs
    if flipped is not None and flipped.type.ndim == 2:
        cond = flipped
    negated = owner_scalar_op(cond, smath.Invert) is not None
    if negated:
        cond = cond.owner.inputs[0]
    if owner_scalar_op(cond, smath.GE) is None:
        return None
    rows, cols = cond.owner.inputs
    k = 0
    if owner_scalar_op(rows, smath.Add) is not None:
        first, second = rows.owner.inputs
        offset = constant_data(second)
        if offset is None or offset.size != 1:
            return None
        rows, k = first, int(offset.reshape(-1)[0])
    if not (_index_grid(rows, (0, "x")) and _index_grid(cols, ("x", 0))):
        return None
    lower, k = (False, k + 1) if negated else (True, k)  # not (row + k >= col): triu k + 1
    if flipped is not None:  # tril(m, k)^T = triu(m^T, -k)
        lower, k = not lower, -k
    return x, lower, k


def triangular_structure(var: Variable) -> tuple[Variable, bool, bool] | None:
    """``(t, lower, transposed)`` when `var` is known triangular: `t` is a Cholesky factor
    (lower or upper), a ``tril``/``triu`` result or a diagonal matrix, and `var` is `t` or
    its transpose. A diagonal matrix counts as lower."""
    transposed = False
    source = transposed_source(var)
    if source is not None:
        var, transposed = source, True
    if var.owner is not None and isinstance(var.owner.op, Cholesky):
        return var, var.owner.op.lower, transposed
    masked = masked_triangle(var)
    if masked is not None:
        _, lower, k = masked
        if (lower and k <= 0) or (not lower and k >= 0):
            return var, lower, transposed
    if diagonal_matrix(var):
        return var, True, transposed
    return None


def _diagonal(t: Variable) -> Variable:
    """The diagonal of each core matrix of `t`, as the last axis."""
    from workbench.core.tensor.array_utils import diagonal

    return diagonal(t, 0, -2, -1)


def _square(function: str, var: Variable) -> Variable:
    """`var`, checked square as `function` checks its matrix (`shape_checked`: a
    ShapeCheck raising what `function` raises, where the lengths are known only when
    run), unless it is square by construction (a Cholesky factor or its transpose).
    A rule that reads only the diagonal of a triangle or of a diagonal matrix
    (``tril(x)`` of a 2 x 3 `x`) keeps the error of the Op it replaces."""
    from workbench.core.tensor.linalg.base import shape_checked

    source = transposed_source(var)
    factor = var if source is None else source
    if factor.owner is not None and isinstance(factor.owner.op, Cholesky):
        return var
    return shape_checked(function, "(m,m)->(m,m)", var)


def _cast_like(new: Variable, old: Variable) -> Variable:
    from workbench.core.tensor.basic import cast

    return new if new.type.dtype == old.type.dtype else cast(new, old.type.dtype)


# -- stabilize -------------------------------------------------------------------------------


@register_stabilize
@node_rewriter([Dot, MatMul])
def local_inv_dot_to_solve(fgraph: Any, node: Apply) -> Any:
    """``inv(a) @ b -> solve(a, b)``; ``b @ inv(a) -> solve(a^T, b^T)^T``.

    Domain: every nonsingular, finite `a` and finite `b` (a singular one raises
    LinAlgError either way; for an inf or a NaN the product stays, `_finite_or_kept`,
    where an LU solve would spread it otherwise than ``inv``). Shapes
    the graph checks when run raise as the user's graph would: a non-square `a` inv's
    LinAlgError naming `a` (not solve's ValueError on a transposed `a`), a `b` that does
    not fit the product's error, named after the product (`_product_checked`); a
    singular `a` inv's LinAlgError (the solve's `function_name`), and an ill-conditioned
    one inv's warning."""
    x, y = node.inputs
    out = node.outputs[0]
    if _is_fallback(fgraph, out):
        return None
    if x.owner is not None and isinstance(x.owner.op, Inv) and single_client(fgraph, x):
        (a,) = x.owner.inputs
        if y.type.dtype != a.type.dtype or y.type.ndim < 1:
            return None
        b_ndim = 1 if y.type.ndim == 1 else 2
        checked = _product_checked(node, _square("inv", a), y, True)
        new = Solve("gen", False, b_ndim, function_name="inv")(checked, y)
        return [_finite_or_kept(fgraph, node, _cast_like(new, out), [a, y])]
    if y.owner is not None and isinstance(y.owner.op, Inv) and single_client(fgraph, y):
        (a,) = y.owner.inputs
        if x.type.dtype != a.type.dtype or x.type.ndim < 1:
            return None
        checked = _product_checked(node, _square("inv", a), x, False)
        if x.type.ndim == 1:  # x @ inv(a) = inv(a)^T x = solve(a^T, x)
            new = Solve("gen", False, 1, function_name="inv")(transpose(checked), x)
        else:
            new = transpose(Solve("gen", False, 2, function_name="inv")(transpose(checked),
                                                                         transpose(x)))
        return [_finite_or_kept(fgraph, node, _cast_like(new, out), [a, x])]
    return None


def _product_checked(node: Apply, a: Variable, other: Variable, inverse_first: bool
                     ) -> Variable:
    """`a`, checked (`shape_checked`) to fit `other` in the product `node` as ``inv(a)``
    does: ``inv(a) @ other`` (`inverse_first`) or ``other @ inv(a)``. The error names
    the product (``dot``/``matmul``), whose error the unrewritten graph raises, not the
    solve it became."""
    from workbench.core.tensor.linalg.base import shape_checked

    core = "m" if other.type.ndim == 1 else ("m,n" if inverse_first else "n,m")
    function = "dot" if isinstance(node.op, Dot) else "matmul"
    return shape_checked(function, f"(m,m),({core})->({core})", a, other)


@register_stabilize
@node_rewriter([tm.log.op])
def local_log_det_to_slogdet(fgraph: Any, node: Apply) -> Any:
    """``log(det(a)) -> log(sign) + logabsdet``, ``log(|det(a)|) -> logabsdet``.

    Domain: every `a`; a negative determinant still gives NaN, a singular one -inf."""
    (arg,) = node.inputs
    absolute = owner_scalar_op(arg, smath.Abs) is not None
    inner = arg.owner.inputs[0] if absolute else arg
    if inner.owner is None or not isinstance(inner.owner.op, Det):
        return None
    sign, logdet = SLogDet()(inner.owner.inputs[0])
    new = logdet if absolute else tm.add(tm.log(sign), logdet)
    return [_cast_like(new, node.outputs[0])]


def _mul_factors(var: Variable) -> list[Variable]:
    """The factors of a tree of plain Elemwise products ending in `var` (the gradient
    nests them: ``(g * (1 / d)) * d``)."""
    if owner_scalar_op(var, smath.Mul) is None:
        return [var]
    return [f for v in var.owner.inputs for f in _mul_factors(v)]


@register_stabilize
@node_rewriter([tm.mul.op])
def local_det_grad_cancel(fgraph: Any, node: Apply) -> Any:
    """``mul(..., n / det(a), ..., det(a), ...) -> mul(..., n, ...)`` (also for
    ``reciprocal(det(a))``, and ``(n / |det(a)|) sign(det(a)) det(a)`` of a real
    ``log(|det(a)|)``): the product log's and Det's gradients build for
    ``grad(log(det(a)))``, which is ``0 * inf = NaN`` once the determinant under- or
    overflows although the gradient ``n a^-T`` is finite.

    Domain: every `a` whose determinant is nonzero and finite; at a singular `a` the
    gradient's ``inv(a)`` stays in the graph and raises as before."""
    from workbench.core.tensor.math import mul

    factors = _mul_factors(node.outputs[0])
    for i, f in enumerate(factors):
        if owner_scalar_op(f, smath.TrueDiv) is not None:
            numerator, det = f.owner.inputs
        elif owner_scalar_op(f, smath.Reciprocal) is not None:
            numerator, det = None, f.owner.inputs[0]
        else:
            continue
        rest = factors[:i] + factors[i + 1:]
        cancelled = [det]
        if owner_scalar_op(det, smath.Abs) is not None:  # log|det|: (n / |d|) sign(d) d
            det = det.owner.inputs[0]
            signs = [v for v in rest if owner_scalar_op(v, smath.Sign) is not None
                     and v.owner.inputs[0] is det]
            if not signs or det.type.dtype.is_complex:
                continue
            cancelled = [signs[0], det]
        if det.owner is None or not isinstance(det.owner.op, Det):
            continue
        if not all(any(v is r for r in rest) for v in cancelled):
            continue
        for v in cancelled:
            del rest[next(j for j, r in enumerate(rest) if r is v)]
        kept = rest if numerator is None else [numerator, *rest]
        new = mul(*kept) if len(kept) > 1 else (kept[0] if kept else np.ones((), "int8"))
        return [broadcast_like(new, node.outputs[0], node, dropped=[f, *cancelled],
                               fgraph=fgraph)]
    return None


# -- specialize ------------------------------------------------------------------------------


@register_specialize
@node_rewriter([Det, SLogDet])
def local_det_of_triangular(fgraph: Any, node: Apply) -> Any:
    """``det(t) -> prod(diagonal(t))``; ``slogdet(t) -> (prod(sign(d)), sum(log|d|))``
    for a triangular or diagonal `t` (see `triangular_structure`).

    Domain: every `t` of that structure (exact: its determinant is that product)."""
    from workbench.core.tensor.reduction import any as reduce_any
    from workbench.core.tensor.reduction import prod
    from workbench.core.tensor.reduction import sum as reduce_sum

    (a,) = node.inputs
    if triangular_structure(a) is None:
        return None
    d = diag_vector(a)
    d = _diagonal(_square(node.op.function_name, a)) if d is None else d
    if isinstance(node.op, Det):
        return [_cast_like(prod(d, axis=-1), node.outputs[0])]
    # numpy's: a 0 on the diagonal gives (0, -inf) whatever else it holds (a NaN too);
    # a real entry flips the sign only when < 0 (a NaN does not)
    singular = reduce_any(tm.eq(d, 0), axis=-1)
    if d.type.dtype.is_complex:
        sign = prod(tm.sign(d), axis=-1)
    else:
        sign = prod(tm.switch(tm.lt(d, 0), -1, 1), axis=-1)
    sign = tm.switch(singular, 0, sign)
    logdet = tm.switch(singular, -np.inf, reduce_sum(tm.log(tm.abs(d)), axis=-1))
    return [_cast_like(sign, node.outputs[0]), _cast_like(logdet, node.outputs[1])]


@register_specialize
@node_rewriter([Det, SLogDet])
def local_det_from_cholesky(fgraph: Any, node: Apply) -> Any:
    """``det(a) -> prod(diag(L))^2``, ``slogdet(a) -> (1, 2 sum(log(diag(L))))`` where the
    graph also computes ``L = cholesky(a)`` and `a` is known symmetric
    (`symmetric_matrix`): Cholesky reads one triangle only, so a non-symmetric `a`
    would get the determinant of another matrix.

    Domain: symmetric positive-definite `a` (the graph's Cholesky raises for others).
    Only a Cholesky every run computes (`computed_unconditionally`): one in an untaken
    `ifelse` branch would raise where the determinant has a value."""
    from workbench.core.tensor.reduction import prod
    from workbench.core.tensor.reduction import sum as reduce_sum

    (a,) = node.inputs
    if not symmetric_matrix(a):
        return None
    factor = None
    for client, _ in (fgraph.clients.get(a, ()) if fgraph is not None else ()):
        if (not isinstance(client, str) and isinstance(client.op, Cholesky)
                and computed_unconditionally(fgraph, client)):
            factor = client.outputs[0]
            break
    if factor is None:
        return None
    d = _diagonal(factor)
    if isinstance(node.op, Det):
        return [_cast_like(tm.sqr(prod(d, axis=-1)), node.outputs[0])]
    logdet = tm.mul(2, reduce_sum(tm.log(d), axis=-1))
    from workbench.core.tensor.creation import ones_like

    sign = ones_like(logdet)
    return [_cast_like(sign, node.outputs[0]), _cast_like(logdet, node.outputs[1])]


@register_specialize
@node_rewriter([Solve])
def local_solve_triangular_matrix(fgraph: Any, node: Apply) -> Any:
    """``solve(t, b) -> solve_triangular(...)`` for a Cholesky factor `t` or its
    transpose (read in place through ``trans``), for a general solve (``assume_a="gen"``)
    only: "sym"/"her"/"pos" read one triangle of `t` and mirror it (a triangular `t`
    is then the symmetric matrix of that triangle, or its diagonal), "tri" already is
    a triangular solve of the triangle it names.

    Domain: every `b`; a zero on the diagonal raises LinAlgError either way, and an
    inf or a NaN scipy's ValueError when the solve checks for them (`check_finite`); an
    unchecked solve of them stays (`_finite_or_kept`: a substitution spreads them
    otherwise than the general solve's rule)."""
    op = node.op
    if op.assume_a != "gen" or _is_fallback(fgraph, node.outputs[0]):
        return None
    a, b = node.inputs
    found = triangular_structure(a)
    if found is None or diagonal_matrix(found[0]):
        return None
    t, lower, transposed = found
    masked = masked_triangle(t)
    if masked is not None and masked[2] == 0 and not op.check_finite:
        # tril(x) / triu(x): the solve reads that triangle of x itself (not when the
        # solve checks for infs and NaNs: x's other triangle may hold some)
        t = masked[0]
    new = SolveTriangular(lower, transposed, False, op.b_ndim, check_finite=op.check_finite)(t, b)
    return [_finite_or_kept(fgraph, node, new, [found[0], b])]


@register_specialize
@node_rewriter([Solve, SolveTriangular])
def local_solve_diagonal_matrix(fgraph: Any, node: Apply) -> Any:
    """``solve(d, b) -> b / diagonal(d)`` (as a column for a matrix `b`) for a known
    diagonal `d`.

    Domain: every `d` and `b`: a zero on the diagonal raises LinAlgError, an inf or a
    NaN the ValueError of `check_finite`, as the solve did; an unchecked solve of a
    non-finite `d` or `b` stays (`_finite_or_kept`)."""
    op = node.op
    a, b = node.inputs
    if not diagonal_matrix(a) or _is_fallback(fgraph, node.outputs[0]):
        return None
    d = v = diag_vector(a)
    from_vector = d is not None
    if d is None:
        if op.check_finite:  # eye(n) * x: a NaN off the diagonal (0 * inf) is not in d
            return None
        d = _diagonal(_square(op.function_name, a))
    unit = isinstance(op, SolveTriangular) and op.unit_diagonal
    if unit and op.check_finite:
        return None
    if isinstance(op, SolveTriangular) and op.conjugate:  # trans="C": conj(d)
        d = tm.conj(d)
    hermitian = isinstance(op, Solve) and op.assume_a in ("her", "pos")
    positive = isinstance(op, Solve) and op.assume_a == "pos"
    if unit:  # the identity: x = b
        new = b
    else:
        new = DiagonalSolve(op.b_ndim, op.check_finite, hermitian, positive,
                            warn=isinstance(op, Solve))(_cast_like(d, a), b)
    # diag(v) holds v and zeros; eye(n) * x may have 0 * inf off its diagonal
    return [_finite_or_kept(fgraph, node, new, [v, b] if from_vector else [a, b])]


def _finite_or_kept(fgraph: Any, node: Apply, new: Variable, values: list[Variable]
                    ) -> Variable:
    """`new` for the solve `node`, where its inputs (their entries: `values`) are
    finite; the solve itself (in the lazy else branch of an `ifelse`) where they hold an
    inf or a NaN, for an unchecked solve: a structured solve (``b / d``, a substitution)
    spreads them otherwise than the solve's own rule (solvers.py), and a solve otherwise
    than ``inv(a) @ b``. A checked solve raises for them, the same either way: `new`
    alone."""
    if getattr(node.op, "check_finite", False):
        return new
    from workbench.core.ifelse import ifelse

    finite = [_finite(v) for v in values]
    cond = finite[0] if len(finite) == 1 else tm.and_(*finite)
    return ifelse(cond, _cast_like(new, node.outputs[0]), node.op(*node.inputs))


def _finite(var: Variable) -> Variable:
    """Whether every entry of `var` is finite (a 0-d boolean)."""
    from workbench.core.tensor.reduction import all as reduce_all

    return reduce_all(tm.isfinite(var))


def _factor_kept(fgraph: Any, factor: Variable) -> bool:
    """Whether the graph uses the Cholesky `factor` other than in products and
    transposes (a graph output, a solve, a sum...): its factorisation then stays in
    the graph, and raises for a matrix that is not positive definite."""
    for client, _ in (fgraph.clients.get(factor, ()) if fgraph is not None else ()):
        if isinstance(client, str) or not isinstance(client.op, (Dot, MatMul, DimShuffle)):
            return True
    return False


@register_specialize
@node_rewriter([Dot, MatMul])
def local_cholesky_outer_product(fgraph: Any, node: Apply) -> Any:
    """``cholesky(a) @ cholesky(a)^T -> a`` (and ``U^T @ U`` for the upper factor), `a`
    made symmetric from the triangle the factorisation read, where the factorisation
    stays in the graph (`_factor_kept`), and `a` is finite: the product is kept, in the
    lazy else branch of an `ifelse`, for an `a` with an inf or a NaN.

    Domain: every `a`: one that is not positive definite still raises, in the
    factorisation that stays; one that is not finite gets the product."""
    return _cholesky_outer_product(fgraph, node, checked=True)


@node_rewriter([Dot, MatMul])
def local_cholesky_outer_product_unchecked(fgraph: Any, node: Apply) -> Any:
    """`local_cholesky_outer_product` also where the product is the factor's only use:
    the factorisation goes, and with it its error.

    Domain: a positive-definite, finite `a` only (for another, the graph raised
    LinAlgError, or gave NaNs for an inf or a NaN, and the rewritten one returns `a`): in
    no default mode (tag ``drops_checks``)."""
    return _cholesky_outer_product(fgraph, node, checked=False)


# not FAST_RUN: it turns the factorisation's error into a value (module docstring)
specialize_db.register("local_cholesky_outer_product_unchecked",
                       local_cholesky_outer_product_unchecked, "specialize",
                       "assumes_positive_definite", DROPS_CHECKS)


def _cholesky_outer_product(fgraph: Any, node: Apply, checked: bool) -> Any:
    """``L @ L^T -> a`` (see the two rules); `checked`: only where the factor is kept."""
    from workbench.core.tensor.linalg.base import triangle

    x, y = node.inputs
    if x.type.ndim < 2 or y.type.ndim < 2 or x.type.dtype.is_complex:
        return None  # complex: a = L L^H, and ^T here is a plain transpose
    for factor, other, first_is_factor in ((x, y, True), (y, x, False)):
        if factor.owner is None or not isinstance(factor.owner.op, Cholesky):
            continue
        if transposed_source(other) is not factor:
            continue
        lower = factor.owner.op.lower
        # L @ L^T for the lower factor, U^T @ U for the upper one
        if first_is_factor != lower:
            continue
        if checked and not _factor_kept(fgraph, factor):
            continue
        (a,) = factor.owner.inputs
        sym = _cast_like(tm.add(triangle(a, lower), transpose(triangle(a, lower, strict=True))),
                         node.outputs[0])
        if not checked:
            return [sym]
        if _is_fallback(fgraph, node.outputs[0]):
            return None  # the product this rule left for a matrix with an inf or a NaN
        # a = L L^T only for a finite a: an inf or a NaN spreads through the factor and its
        # product (NaN rows and columns; +inf on the diagonal gives 0 * inf), not in a
        from workbench.core.ifelse import ifelse

        product = node.op(*node.inputs)
        return [ifelse(_finite(a), sym, _cast_like(product, node.outputs[0]))]
    return None


def _is_fallback(fgraph: Any, var: Variable) -> bool:
    """Whether `var` is the else branch of an `IfElse` (where `local_cholesky_outer_product`
    and `_finite_or_kept` keep the product or the solve for input that is not finite)."""
    from workbench.core.ifelse import IfElse

    for client, i in (fgraph.clients.get(var, ()) if fgraph is not None else ()):
        if not isinstance(client, str) and isinstance(client.op, IfElse) \
                and i > client.op.n_outs:
            return True
    return False
