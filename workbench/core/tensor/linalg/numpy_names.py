"""The numpy.linalg names a NumPy or PyTensor user types by habit, composed from other
Ops (no Op of their own, so every linker runs them and their gradients come from their
parts): `matrix_rank`, `cond`, `multi_dot`, and NumPy 2's array-API names
`matrix_transpose`, `vecdot` and `cross` (numpy.linalg.cross: 3-vectors only).

`multi_dot` picks its parenthesisation when the graph is built (`matrix_chain_order`,
NumPy's dynamic programme) from the operands' static shapes; with a length unknown
there, it multiplies left to right. `cond` inverts through the SVD rather than LU, so
an exactly singular matrix gives NumPy's inf for every order (a matrix singular only up
to rounding gives a huge finite value, as NumPy, not necessarily the same one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Variable
from workbench.core.tensor.linalg.base import (
    LinAlgError,
    add_axis,
    as_lapack_operands,
    conj_transpose,
    real_dtype,
    shape_checked,
    transpose,
)
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["cond", "cross", "matrix_rank", "matrix_transpose", "multi_dot", "vecdot"]

def _tm() -> Any:
    from workbench.core.tensor import math as tm

    return tm


def _red() -> Any:
    from workbench.core.tensor import reduction

    return reduction


def matrix_transpose(x: Any) -> Variable:
    """numpy.linalg.matrix_transpose (``x.mT``): the last two axes swapped."""
    x = as_tensor_variable(x)
    if x.type.ndim < 2:
        raise ValueError("matrix_transpose: x must have at least 2 dimensions, got "
                         f"{x.type.ndim} (type {x.type})")
    return transpose(x)


def _vector_axis(x: Variable, axis: int, name: str, function: str) -> Variable:
    """`x` with its vectors (along `axis`) moved to the last axis."""
    from workbench.core.tensor.reshape import moveaxis
    from workbench.core.tensor.shape import normalize_axis

    if x.type.ndim == 0:
        raise ValueError(f"{function}: {name} must have at least 1 dimension, got a 0-d "
                         f"{x.type}")
    a = normalize_axis(axis, x.type.ndim, f"{function} axis of {name}")
    return x if a == x.type.ndim - 1 else moveaxis(x, a, -1)


def _same_length(function: str, x1: Variable, x2: Variable, required: int | None = None
                 ) -> tuple[Variable, Variable]:
    """`x1`, `x2` (vectors on their last axis) checked to have vectors of one length (and
    of `required` length when given): at once for static lengths, else when run."""
    from workbench.core.tensor.shape import check_and_raise, shape_tuple

    n1, n2 = x1.type.shape[-1], x2.type.shape[-1]
    if required is not None:
        if (n1 is not None and n1 != required) or (n2 is not None and n2 != required):
            raise ValueError(f"{function}: both inputs must be (arrays of) {required}-"
                             f"dimensional vectors, got lengths {n1} and {n2}")
        conditions = [_tm().eq(shape_tuple(v)[-1], required) for v in (x1, x2)
                      if v.type.shape[-1] is None]
        message = (f"{function}: both inputs must be (arrays of) {required}-dimensional "
                   "vectors")
    else:
        if n1 is not None and n2 is not None and n1 != n2:
            raise ValueError(f"{function}: x1 and x2 must have vectors of one length along "
                             f"the axis, got {n1} and {n2}")
        conditions = ([] if n1 is not None and n2 is not None
                      else [_tm().eq(shape_tuple(x1)[-1], shape_tuple(x2)[-1])])
        message = f"{function}: x1 and x2 must have vectors of one length along the axis"
    if conditions:
        x1 = check_and_raise(x1, conditions, "ValueError", message)
    return x1, x2


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Variable:
    """numpy.linalg.vecdot: ``sum(conj(x1) * x2)`` over `axis` of each operand, the other
    axes broadcast; the dtype is the operands' common one (integers stay integers)."""
    from workbench.core.dtypes import result_type

    tm = _tm()
    x1, x2 = as_tensor_variable(x1), as_tensor_variable(x2)
    x1 = _vector_axis(x1, axis, "x1", "vecdot")
    x2 = _vector_axis(x2, axis, "x2", "vecdot")
    x1, x2 = _same_length("vecdot", x1, x2)
    dtype = result_type(x1.type.dtype, x2.type.dtype)
    if x1.type.dtype.is_complex:
        x1 = tm.conj(x1)
    return _red().sum(tm.mul(x1, x2), axis=-1, dtype=dtype)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Variable:
    """numpy.linalg.cross: the cross product of the 3-vectors along `axis` (2-vectors,
    which ``wt.cross`` still takes as NumPy's numpy.cross does, are refused)."""
    from workbench.core.tensor.grids import cross as numpy_cross

    x1, x2 = as_tensor_variable(x1), as_tensor_variable(x2)
    v1 = _vector_axis(x1, axis, "x1", "cross")
    v2 = _vector_axis(x2, axis, "x2", "cross")
    v1, v2 = _same_length("cross", v1, v2, required=3)
    out = numpy_cross(v1, v2)
    return out if axis in (-1, None) else _move_last_to(out, axis)


def _move_last_to(x: Variable, axis: int) -> Variable:
    from workbench.core.tensor.reshape import moveaxis
    from workbench.core.tensor.shape import normalize_axis

    return moveaxis(x, -1, normalize_axis(axis, x.type.ndim, "cross axis"))


# -- matrix_rank and cond ------------------------------------------------------------------


def _singular_values(a: Variable, hermitian: bool) -> Variable:
    """The singular values of each matrix of `a` (the eigenvalues' moduli when
    `hermitian`, as numpy.linalg.svd(hermitian=True))."""
    from workbench.core.tensor.linalg.decompositions import eigvalsh
    from workbench.core.tensor.linalg.rectangular import SVD

    if hermitian:
        return _tm().abs(eigvalsh(a))
    return SVD(False, False)(a)


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *,  # noqa: N803
                rtol: Any = None) -> Variable:
    """numpy.linalg.matrix_rank: the number of singular values above a threshold for each
    matrix of `A` (int64). The threshold is `tol` (one value or one per matrix), else
    ``rtol * largest`` with `rtol` defaulting to ``max(m, n) * eps``. An input of fewer
    than 2 dimensions gives 1 unless all its entries are 0. No gradient: the output is
    an integer."""
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.shape import shape_tuple

    tm, red = _tm(), _red()
    if tol is not None and rtol is not None:
        raise ValueError("matrix_rank: tol and rtol cannot both be set")
    A = as_tensor_variable(A)  # noqa: N806
    if A.type.ndim < 2:
        return cast(red.any(tm.neq(A, 0)), "int64")
    (a,) = as_lapack_operands("matrix_rank", A)
    s = _singular_values(a, hermitian)
    if tol is None:
        if rtol is None:
            real = np.dtype(str(real_dtype(a.type.dtype)))
            rtol = tm.mul(cast(tm.maximum(*shape_tuple(a)[-2:]), real),
                          np.asarray(np.finfo(real).eps, real))
        else:
            rtol = add_axis(as_tensor_variable(rtol), -1)
        tol = tm.mul(red.max(s, axis=-1, keepdims=True), rtol)
    else:
        tol = add_axis(as_tensor_variable(tol), -1)
    return red.sum(tm.gt(s, tol), axis=-1, dtype="int64")


def cond(x: Any, p: Any = None) -> Variable:
    """numpy.linalg.cond: the condition number of each matrix of `x` in the norm `p`
    (None/2: largest over smallest singular value, -2: the reverse; 1, -1, inf, -inf,
    'fro', 'nuc': ``norm(x, p) * norm(inv(x), p)``, square matrices only, the inverse
    through the SVD). As NumPy, an exactly singular matrix gives inf (also for 'nuc',
    where NumPy's SVD of its NaN inverse raises instead), a NaN result becomes inf
    unless the matrix holds a NaN, and an empty matrix raises LinAlgError. The gradient
    comes from the SVD's (distinct singular values)."""
    from workbench.core.tensor.linalg.functions import norm
    from workbench.core.tensor.linalg.products import matmul
    from workbench.core.tensor.linalg.rectangular import svd
    from workbench.core.tensor.shape import check_and_raise, shape_tuple

    tm, red = _tm(), _red()
    if not (p is None or (p in ("fro", "f", "nuc") if isinstance(p, str)
                          else p in (1, -1, 2, -2, np.inf, -np.inf))):
        raise ValueError(f"cond: p must be one of None, 1, -1, 2, -2, inf, -inf, 'fro', "
                         f"'nuc', got {p!r}")
    (x,) = as_lapack_operands("cond", x, min_ndims=(2,))
    m, n = shape_tuple(x)[-2:]
    x = check_and_raise(x, [_nonempty(m, n)], "LinAlgError",
                        "cond: not defined on empty matrices (x has a zero-length matrix "
                        "dimension)")
    if p is None or p == 2 or p == -2:
        s = _singular_values(x, False)
        largest, smallest = s[..., 0], s[..., -1]
        r = tm.true_div(smallest, largest) if p == -2 else tm.true_div(largest, smallest)
    else:
        x = shape_checked("cond", "(m,m)->(m,m)", x)  # numpy's LinAlgError: square
        if p in ("nuc", "fro", "f"):  # norms of the singular values: no U, V needed
            s = _singular_values(x, False)
        else:
            u, s, vh = svd(x, full_matrices=False)
        # the inverse through the SVD; an exactly singular matrix (a zero singular
        # value) has no inverse and gives inf, with no inf * 0 in the products
        nonzero = tm.gt(s, 0)
        s_inv = tm.switch(nonzero, tm.true_div(1, tm.switch(nonzero, s, 1)), 0)
        if p == "nuc":
            r = tm.mul(red.sum(s, axis=-1), red.sum(s_inv, axis=-1))
        elif p in ("fro", "f"):
            r = tm.sqrt(tm.mul(*[red.sum(tm.sqr(v), axis=-1) for v in (s, s_inv)]))
        else:
            inverse = matmul(tm.mul(conj_transpose(vh), add_axis(s_inv, -2)),
                             conj_transpose(u))
            r = tm.mul(norm(x, p, axis=(-2, -1)), norm(inverse, p, axis=(-2, -1)))
        singular = red.any(tm.invert(nonzero), axis=-1)
        r = tm.switch(singular, np.asarray(np.inf, str(r.type.dtype)), r)
    return _nan_to_inf(r, x)


def _nan_to_inf(r: Variable, x: Variable) -> Variable:
    """`r` with NaN made inf where the matrix of `x` holds no NaN (numpy.linalg.cond)."""
    tm = _tm()
    has_nan = _red().any(tm.isnan(x), axis=(-2, -1))
    return tm.switch(tm.and_(tm.isnan(r), tm.invert(has_nan)),
                     np.asarray(np.inf, str(r.type.dtype)), r)


def _nonempty(m: Any, n: Any) -> Any:
    """``m * n > 0`` (a bool when both lengths are static)."""
    if isinstance(m, (int, np.integer)) and isinstance(n, (int, np.integer)):
        return bool(m * n > 0)
    return _tm().gt(_tm().mul(m, n), 0)


# -- multi_dot -----------------------------------------------------------------------------


def matrix_chain_order(dims: list[int]) -> list[list[int]]:
    """The cheapest parenthesisation of the product of matrices ``i`` of shape
    ``(dims[i], dims[i + 1])`` (the textbook dynamic programme NumPy's multi_dot uses):
    ``split[i][j]`` is where the product of matrices i..j is split."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = -1
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] < 0 or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays: list[Variable], split: list[list[int]] | None, i: int, j: int
           ) -> Variable:
    from workbench.core.tensor.linalg.products import dot

    if i == j:
        return arrays[i]
    if split is None:  # a length unknown when built: left to right
        return dot(_chain(arrays, None, i, j - 1), arrays[j])
    k = split[i][j]
    return dot(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


def multi_dot(arrays: Any, *, out: Any = None) -> Variable:
    """numpy.linalg.multi_dot: the product of two or more matrices (the first may be a
    row vector, the last a column vector, given 1-d), in the cheapest order for the
    static shapes (`matrix_chain_order`; left to right when a length is unknown)."""
    from workbench.core.tensor.elemwise import dimshuffle

    if out is not None:
        raise TypeError("multi_dot: out= is not supported (a graph has no output buffer)")
    arrays = [as_tensor_variable(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: expecting at least two arrays, got {len(arrays)}")
    first_vector, last_vector = arrays[0].type.ndim == 1, arrays[-1].type.ndim == 1
    if first_vector:
        arrays[0] = dimshuffle(arrays[0], ("x", 0))
    if last_vector:
        arrays[-1] = dimshuffle(arrays[-1], (0, "x"))
    for position, a in enumerate(arrays):
        if a.type.ndim != 2:
            raise LinAlgError(f"multi_dot: array {position} must be two-dimensional (1-d "
                              f"allowed first and last), got {a.type.ndim} dimensions "
                              f"(type {a.type})")
    dims = [a.type.shape[0] for a in arrays] + [arrays[-1].type.shape[1]]
    split = (matrix_chain_order(dims) if len(arrays) > 2 and None not in dims else None)
    result = _chain(arrays, split, 0, len(arrays) - 1)
    if first_vector and last_vector:
        return dimshuffle(result, ())
    if first_vector:
        return dimshuffle(result, (1,))
    if last_vector:
        return dimshuffle(result, (0,))
    return result
