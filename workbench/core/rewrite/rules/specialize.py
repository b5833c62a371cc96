"""Specialize: replace general operations by faster special cases.

Runs after canonicalize and stabilize, on graphs already in canonical form.
Small integer powers become multiplications (``x**3 -> sqr(x)*x``,
``x**4 -> sqr(sqr(x))``, negative ones their reciprocal for floats), which
are much cheaper than ``pow``. ``alpha*dot(x, y) + beta*z`` (and
``dot(x, y) + z``, with the terms in either order) becomes one `Gemm` node for
matrix products and one `Gemv` node for matrix-vector (or vector-matrix)
products, so a BLAS linker makes one call instead of three loops; the
inplace pass may then let them write into z.

Each rule looks only at its node and its direct inputs (O(1) per node).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.rewrite.db import register_specialize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.rewrite.rules.rule_utils import (
    broadcast_like,
    is_float,
    owner_scalar_op,
    scalar_op_of,
    single_client,
    uniform_constant,
)
from workbench.core.scalar import math as smath
from workbench.core.tensor import math as tm
from workbench.core.tensor.basic import cast
from workbench.core.tensor.blas import gemm_no_inplace, gemv_no_inplace
from workbench.core.tensor.elemwise import DimShuffle
from workbench.core.tensor.linalg import Dot
from workbench.core.tensor.variable import constant

__all__ = ["local_pow_specialize", "local_dot_to_gemm", "local_dot_to_gemv",
           "MAX_POW_TO_MUL"]

#: The largest |exponent| `local_pow_specialize` turns into multiplications.
MAX_POW_TO_MUL = 4


def _power_by_products(x: Variable, n: int) -> Variable:
    """x**n for 1 <= n <= MAX_POW_TO_MUL by squarings and products."""
    if n == 1:
        return x
    if n == 2:
        return tm.sqr(x)
    if n == 3:
        return tm.mul(tm.sqr(x), x)
    return tm.sqr(tm.sqr(x))


@register_specialize
@node_rewriter([tm.pow.op])
def local_pow_specialize(fgraph: Any, node: Apply) -> Any:
    """``x**n -> products of x`` for small integer n (negative n: the reciprocal, floats only).

    Domain: every x. Signs, zeros (``(-0.0)**-3`` is -inf), infinities and NaN
    give pow's values; integers wrap around as pow's repeated products do. Float
    results may differ from pow's by the rounding of one or two more products (a
    subnormal result may round to 0).
    """
    x, exponent = node.inputs
    value = uniform_constant(exponent)
    if value is None or isinstance(value, (bool, complex)) or value != int(value):
        return None
    n = int(value)
    out = node.outputs[0]
    if n == 0 or abs(n) > MAX_POW_TO_MUL or (n < 0 and not is_float(out)):
        return None
    if out.type.dtype.is_bool:
        return None
    base = x if x.type.dtype == out.type.dtype else cast(x, out.type.dtype)
    new = _power_by_products(base, abs(n))
    if n < 0:
        new = tm.reciprocal(new)
    return [broadcast_like(new, out, node, dropped=[exponent], fgraph=fgraph)]


# -- BLAS ---------------------------------------------------------------------------


def _as_0d(var: Variable) -> Variable | None:
    """`var` as a 0-d tensor if it holds one value broadcast (all static lengths 1)."""
    if any(s != 1 for s in var.type.shape):
        return None
    if isinstance(var, Constant):
        return constant(np.asarray(var.data).reshape(()))
    if var.owner is not None and isinstance(var.owner.op, DimShuffle):
        inner = var.owner.inputs[0]
        if inner.type.ndim == 0:
            return inner
    return DimShuffle(var.type.ndim, ())(var)


def _split_scale(fgraph: Any, var: Variable) -> tuple[Variable | None, Variable]:
    """(scale, term) for ``scale * term`` with a 0-d-like scale; (None, var) otherwise."""
    if owner_scalar_op(var, smath.Mul) is None or not single_client(fgraph, var):
        return None, var
    a, b = var.owner.inputs
    for scale, term in ((a, b), (b, a)):
        if term.type.ndim == var.type.ndim and term.type.dtype == var.type.dtype:
            s = _as_0d(scale)
            if s is not None:
                return s, term
    return None, var


def _dot_inputs(fgraph: Any, var: Variable, out: Variable) -> tuple[Variable, Variable] | None:
    """The operands of `var` if it is a single-use Dot in `out`'s dtype."""
    if var.owner is None or not isinstance(var.owner.op, Dot) or not single_client(fgraph, var):
        return None
    x, y = var.owner.inputs
    dtype = out.type.dtype
    if x.type.dtype != dtype or y.type.dtype != dtype or var.type.dtype != dtype:
        return None
    return x, y


def _negated(var: Variable) -> Variable:
    """-var, folded when var is a constant (this pass runs after constant folding)."""
    if isinstance(var, Constant):
        return constant(-np.asarray(var.data))
    return tm.neg(var)


def _to_blas(fgraph: Any, node: Apply, want_matrix: bool) -> Any:
    """Shared body of the gemm and gemv rewrites on an ``add`` or ``sub`` node."""
    if scalar_op_of(node, smath.Add) is not None:
        signs = (1, 1)
    elif scalar_op_of(node, smath.Sub) is not None:  # z - alpha*dot: alpha negated
        signs = (1, -1)
    else:
        return None
    out = node.outputs[0]
    if not is_float(out) or out.type.ndim != (2 if want_matrix else 1):
        return None
    one = constant(np.asarray(1, dtype=out.type.dtype.numpy))
    for first, second in ((0, 1), (1, 0)):
        alpha, product = _split_scale(fgraph, node.inputs[first])
        operands = _dot_inputs(fgraph, product, out)
        if operands is None:
            continue
        beta, z = _split_scale(fgraph, node.inputs[second])
        if z.type.dtype != out.type.dtype or z.type.ndim != out.type.ndim:
            continue
        x, y = operands
        alpha = one if alpha is None else cast(alpha, out.type.dtype)
        beta = one if beta is None else cast(beta, out.type.dtype)
        alpha = _negated(alpha) if signs[first] < 0 else alpha
        beta = _negated(beta) if signs[second] < 0 else beta
        if want_matrix:
            if x.type.ndim != 2 or y.type.ndim != 2:
                continue
            new = gemm_no_inplace(z, alpha, x, y, beta)
        elif x.type.ndim == 2 and y.type.ndim == 1:
            new = gemv_no_inplace(z, alpha, x, y, beta)
        elif x.type.ndim == 1 and y.type.ndim == 2:
            new = gemv_no_inplace(z, alpha, DimShuffle(2, (1, 0))(y), x, beta)
        else:
            continue
        return [broadcast_like(new, out, node, fgraph=fgraph)]
    return None


@register_specialize
@node_rewriter([tm.add.op, tm.sub.op])
def local_dot_to_gemm(fgraph: Any, node: Apply) -> Any:
    """``alpha*dot(x, y) + beta*z -> gemm(z, alpha, x, y, beta)`` for matrices
    (alpha and beta default to 1; z may be a broadcast row or column); a difference
    negates the subtracted scale (``z - a*dot(x, y)`` is ``gemm(z, -a, x, y, 1)``)."""
    return _to_blas(fgraph, node, want_matrix=True)


@register_specialize
@node_rewriter([tm.add.op, tm.sub.op])
def local_dot_to_gemv(fgraph: Any, node: Apply) -> Any:
    """``alpha*dot(A, x) + beta*y -> gemv(y, alpha, A, x, beta)``; a vector-matrix
    product ``dot(x, A)`` uses the transpose of A."""
    return _to_blas(fgraph, node, want_matrix=False)
