"""The functions of `wt.linalg` built from other Ops (no Op of their own, so every linker
runs them and their gradients come from their parts): `norm`, `vector_norm`,
`matrix_norm`, `trace`, `diagonal`, `kron`, `block_diag`, `matrix_power`, `pinv`,
`lstsq`; and `trace_np` (numpy.trace, top-level ``wt.trace``).

Semantics are numpy.linalg's (scipy.linalg's for `block_diag`): dtypes (integers give
float64 norms, complex inputs real ones; `pinv` and `lstsq` use conjugate
transposes), `axis`, `keepdims`, the vector orders (``None``/2, ``inf``, ``-inf``, 0,
1, any p) and the matrix orders (``"fro"``, ``"nuc"``, 1, -1, 2, -2, ``inf``,
``-inf``; 2, -2 and ``"nuc"`` through the singular values), with numpy's errors for
orders that do not exist. `pinv` cuts singular values at ``rcond * largest`` (numpy's
default 1e-15, or ``rtol``); `lstsq` returns numpy's ``(x, residuals, rank, s)``,
`residuals` empty unless the matrix has full column rank and more rows than columns.
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
)
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["block_diag", "diagonal", "kron", "lstsq", "matrix_norm", "matrix_power", "norm",
           "pinv", "trace", "trace_np", "vector_norm"]


def _tm() -> Any:
    from workbench.core.tensor import math as tm

    return tm


def _red() -> Any:
    from workbench.core.tensor import reduction

    return reduction


def _float(x: Any, function: str) -> Variable:
    """`x` as a tensor in a float or complex dtype (integers and booleans become float64,
    as numpy's norms); float16/bfloat16 stay themselves here (no LAPACK involved)."""
    from workbench.core.tensor.basic import cast

    x = as_tensor_variable(x)
    d = x.type.dtype
    return x if d.is_float or d.is_complex else cast(x, "float64")


def _abs_squared(x: Variable) -> Variable:
    """``|x|^2`` elementwise, real (the squared modulus for complex x)."""
    tm = _tm()
    return tm.sqr(tm.abs(x) if x.type.dtype.is_complex else x)


def _normalize_axes(axis: Any, ndim: int, function: str) -> tuple[int, ...]:
    from workbench.core.tensor.shape import normalize_axis

    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(normalize_axis(a, ndim, f"{function} axis") for a in axes)


def _restore_dims(result: Variable, axes: tuple[int, ...], ndim: int) -> Variable:
    """`result` (the reduced axes dropped) with length-1 dimensions at `axes` (keepdims)."""
    for a in sorted(axes):
        result = add_axis(result, a)
    return result


def _max_magnitude(v: Variable, axis: Any) -> Variable:
    """The maximum of the non-negative `v` over `axis` (an int, a tuple or None), 0 over
    an empty axis: numpy.linalg's norms reduce with 0 as the initial value (``inf``,
    matrix 1, 2 and ``inf`` norms of empty inputs are 0; ``-inf``, -1, -2 still raise).
    Starting the fold at 0 rather than -inf changes no other result, as ``v >= 0``, and
    a NaN still propagates."""
    if v.type.ndim == 0:
        return v
    return _red().max(v, axis=axis, initial=0)


def vector_norm(x: Any, ord: Any = 2, axis: Any = None, keepdims: bool = False) -> Variable:  # noqa: A002
    """numpy.linalg.vector_norm: the p-norm over `axis` (None: all entries, as one vector).
    Also ``x.norm(L, axis)`` on tensors (PyTensor's alias)."""
    tm, red = _tm(), _red()
    x = _float(x, "vector_norm")
    if isinstance(ord, str):
        raise ValueError(f"vector_norm: invalid norm order {ord!r} for vectors")
    ndim = x.type.ndim
    axes = tuple(range(ndim)) if axis is None else _normalize_axes(axis, ndim, "vector_norm")
    ax: Any = axes if axes else None
    if ndim == 0:
        ax = None
    p = 2 if ord is None else ord
    if p == np.inf:
        out = _max_magnitude(tm.abs(x), ax)
    elif p == -np.inf:
        out = red.min(tm.abs(x), axis=ax)
    elif p == 0:
        out = red.sum(tm.neq(x, 0), axis=ax, dtype=real_dtype(x.type.dtype))
    elif p == 1:
        out = red.sum(tm.abs(x), axis=ax)
    elif p == 2:
        out = tm.sqrt(red.sum(_abs_squared(x), axis=ax))
    else:
        out = tm.pow(red.sum(tm.pow(tm.abs(x), p), axis=ax), 1.0 / p)
    if out.type.dtype != real_dtype(x.type.dtype):
        from workbench.core.tensor.basic import cast

        out = cast(out, real_dtype(x.type.dtype))
    return _restore_dims(out, axes, ndim) if keepdims and ndim else out


def _matrix_norm_axes(x: Variable, ord: Any, row: int, col: int) -> Variable:  # noqa: A002
    """The matrix norm of `ord` over axes (row, col), both dropped."""
    tm, red = _tm(), _red()
    if row == col:
        raise ValueError("norm: duplicate axes given")
    if ord in (2, -2, "nuc"):
        from workbench.core.tensor.elemwise import dimshuffle
        from workbench.core.tensor.linalg.rectangular import SVD

        nd = x.type.ndim
        rest = [d for d in range(nd) if d not in (row, col)]
        moved = dimshuffle(x, [*rest, row, col])
        (a,) = as_lapack_operands("norm", moved)
        s = SVD(False, False)(a)
        return {2: _max_magnitude, -2: red.min, "nuc": red.sum}[ord](s, axis=-1)
    if ord in (None, "fro", "f"):
        return tm.sqrt(red.sum(_abs_squared(x), axis=(row, col)))
    if ord in (1, -1):
        reduce = _max_magnitude if ord == 1 else red.min
        sums = red.sum(tm.abs(x), axis=row)
        return reduce(sums, axis=col - 1 if col > row else col)
    if ord in (np.inf, -np.inf):
        reduce = _max_magnitude if ord == np.inf else red.min
        sums = red.sum(tm.abs(x), axis=col)
        return reduce(sums, axis=row - 1 if row > col else row)
    raise ValueError(f"norm: invalid norm order {ord!r} for matrices")


def matrix_norm(x: Any, keepdims: bool = False, ord: Any = "fro") -> Variable:  # noqa: A002
    """numpy.linalg.matrix_norm: the matrix norm over the last two axes."""
    x = _float(x, "matrix_norm")
    if x.type.ndim < 2:
        raise ValueError(f"matrix_norm: x must have at least 2 dimensions, got {x.type}")
    nd = x.type.ndim
    out = _matrix_norm_axes(x, ord, nd - 2, nd - 1)
    return _restore_dims(out, (nd - 2, nd - 1), nd) if keepdims else out


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Variable:  # noqa: A002
    """numpy.linalg.norm: a vector norm (1-d `x` or an int `axis`) or a matrix norm (2-d
    `x` or a pair of axes); with neither `ord` nor `axis`, the 2-norm of all entries."""
    x = _float(x, "norm")
    nd = x.type.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            return vector_norm(x, 2, None, keepdims)
        if nd not in (1, 2):
            raise ValueError("norm: improper number of dimensions to norm (give axis for "
                             f"an input of rank {nd} with ord={ord!r})")
        axes = tuple(range(nd))
    else:
        axes = _normalize_axes(axis, nd, "norm")
    if len(axes) == 1:
        return vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        out = _matrix_norm_axes(x, ord, *axes)
        return _restore_dims(out, axes, nd) if keepdims else out
    raise ValueError(f"norm: improper number of dimensions to norm: axis={axis!r}")


def diagonal(x: Any, offset: int = 0) -> Variable:
    """numpy.linalg.diagonal: the `offset` diagonal of the last two axes."""
    from workbench.core.tensor.array_utils import diagonal as array_diagonal

    return array_diagonal(x, offset, -2, -1)


def trace(x: Any, offset: int = 0, dtype: Any = None) -> Variable:
    """numpy.linalg.trace: the sum of the `offset` diagonal of the last two axes."""
    return _red().sum(diagonal(x, offset), axis=-1, dtype=dtype)


def trace_np(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None
             ) -> Variable:
    """numpy.trace: the sum of the `offset` diagonal of the (axis1, axis2) planes."""
    from workbench.core.tensor.array_utils import diagonal as array_diagonal

    return _red().sum(array_diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _times(m: Any, n: Any) -> Any:
    if isinstance(m, (int, np.integer)) and isinstance(n, (int, np.integer)):
        return int(m) * int(n)
    return _tm().mul(m, n)


def kron(a: Any, b: Any) -> Variable:
    """numpy.kron: the Kronecker product (the operand of lower rank gets leading length-1
    dimensions): an outer product with the axes interleaved, then a reshape."""
    from workbench.core.tensor.elemwise import dimshuffle
    from workbench.core.tensor.reshape import reshape
    from workbench.core.tensor.shape import shape_tuple

    a, b = as_tensor_variable(a), as_tensor_variable(b)
    nd = max(a.type.ndim, b.type.ndim)
    if nd == 0:
        return _tm().mul(a, b)
    a = dimshuffle(a, ["x"] * (nd - a.type.ndim) + list(range(a.type.ndim)))
    b = dimshuffle(b, ["x"] * (nd - b.type.ndim) + list(range(b.type.ndim)))
    a_order: list[Any] = []
    b_order: list[Any] = []
    for d in range(nd):
        a_order += [d, "x"]
        b_order += ["x", d]
    product = _tm().mul(dimshuffle(a, a_order), dimshuffle(b, b_order))
    lengths = [_times(m, n) for m, n in zip(shape_tuple(a), shape_tuple(b))]
    return reshape(product, tuple(lengths))


def block_diag(*arrs: Any) -> Variable:
    """scipy.linalg.block_diag: the matrices on the diagonal of a zero matrix (a 1-d input
    is one row, a 0-d one a 1x1 block); the dtype promotes the inputs'. Dimensions
    before the last two are batch dimensions, broadcast between the inputs (scipy >=
    1.15): one block-diagonal matrix per batch index."""
    from workbench.core.dtypes import result_type
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.creation import zeros
    from workbench.core.tensor.elemwise import dimshuffle
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.shape import shape_tuple

    if not arrs:
        return zeros((1, 0), "float64")
    blocks = []
    for arr in arrs:
        v = as_tensor_variable(arr)
        if v.type.ndim == 0:
            v = dimshuffle(v, ("x", "x"))
        elif v.type.ndim == 1:
            v = dimshuffle(v, ("x", 0))
        blocks.append(v)
    dtype = result_type(*[b.type.dtype for b in blocks])
    blocks = [b if b.type.dtype == dtype else cast(b, dtype) for b in blocks]
    batch = _common_batch(blocks)
    blocks = [_broadcast_batch(b, batch) for b in blocks]
    shapes = [shape_tuple(b)[-2:] for b in blocks]
    rows = []
    for i, (block, (r, _)) in enumerate(zip(blocks, shapes)):
        before = [s[1] for s in shapes[:i]]
        after = [s[1] for s in shapes[i + 1:]]
        parts = []
        if before:
            parts.append(zeros((*batch, r, _length_sum(before)), dtype))
        parts.append(block)
        if after:
            parts.append(zeros((*batch, r, _length_sum(after)), dtype))
        rows.append(parts[0] if len(parts) == 1 else concatenate(parts, axis=-1))
    return rows[0] if len(rows) == 1 else concatenate(rows, axis=-2)


def _common_batch(blocks: list[Variable]) -> tuple[Any, ...]:
    """The broadcast batch shape (dimensions before the last two) of `blocks`: ints where
    known, lengths computed when run otherwise; ValueError for static lengths that
    cannot broadcast."""
    from workbench.core.tensor.elemwise import broadcast_length, broadcast_static_shapes
    from workbench.core.tensor.shape import shape_tuple

    nb = max(b.type.ndim - 2 for b in blocks)
    if nb == 0:
        return ()
    static = [(1,) * (nb - b.type.ndim + 2) + b.type.shape[:-2] for b in blocks]
    if broadcast_static_shapes(static) is None:
        raise ValueError("block_diag: the batch dimensions "
                         f"{', '.join(str(b.type.shape[:-2]) for b in blocks)} cannot be "
                         "broadcast together")
    lengths = [(1,) * (nb - b.type.ndim + 2) + tuple(shape_tuple(b)[:-2]) for b in blocks]
    return tuple(broadcast_length(list(axis)) for axis in zip(*lengths))


def _broadcast_batch(block: Variable, batch: tuple[Any, ...]) -> Variable:
    """`block` broadcast to the batch shape `batch` (its core matrix unchanged)."""
    from workbench.core.tensor.reshape import broadcast_to
    from workbench.core.tensor.shape import shape_tuple

    if not batch:
        return block
    return broadcast_to(block, (*batch, *shape_tuple(block)[-2:]))


def _length_sum(lengths: list[Any]) -> Any:
    total = lengths[0]
    for n in lengths[1:]:
        if isinstance(total, (int, np.integer)) and isinstance(n, (int, np.integer)):
            total = int(total) + int(n)
        else:
            total = _tm().add(total, n)
    return total


def matrix_power(a: Any, n: int) -> Variable:
    """numpy.linalg.matrix_power: `a` (stacks of square matrices) to the integer power
    `n` by repeated squaring; ``n = 0`` gives identities, ``n < 0`` powers of the inverse."""
    from workbench.core.tensor.creation import eye, zeros_like
    from workbench.core.tensor.linalg.products import matmul
    from workbench.core.tensor.linalg.solvers import inv
    from workbench.core.tensor.shape import shape_tuple

    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}")
    a = as_tensor_variable(a)
    if a.type.ndim < 2:
        raise LinAlgError(f"matrix_power: a must have at least 2 dimensions, got {a.type}")
    a = shape_checked("matrix_power", "(m,m)->(m,m)", a)  # numpy's LinAlgError, now or run
    n = int(n)
    if n == 0:
        return _tm().add(zeros_like(a), eye(shape_tuple(a)[-1], dtype=a.type.dtype))
    if n < 0:
        a, n = inv(a), -n
    result = None
    power = a
    while n:
        if n & 1:
            result = power if result is None else matmul(result, power)
        n >>= 1
        if n:
            power = matmul(power, power)
    return result


def _cutoff(s: Variable, rcond: Any) -> Variable:
    """``rcond * max(s)`` per matrix (0 for an empty matrix), as a column-broadcastable
    value; `s` holds non-negative values; `rcond` is one value or one per matrix of the
    stack (numpy's ``rcond[..., newaxis]``)."""
    from workbench.core.tensor.creation import zeros
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.shape import shape_tuple

    padded = concatenate([s, zeros((*shape_tuple(s)[:-1], 1), s.type.dtype)], axis=-1)
    rcond = add_axis(as_tensor_variable(rcond), -1)
    return _tm().mul(rcond, _red().max(padded, axis=-1, keepdims=True))


#: `pinv`'s rtol when not given (numpy's _NoValue: rtol=None means max(m, n) * eps)
_NOT_GIVEN: Any = object()


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *,
         rtol: Any = _NOT_GIVEN) -> Variable:
    """numpy.linalg.pinv: the Moore-Penrose pseudo-inverse of each matrix, through its SVD
    (its eigendecomposition when `hermitian`); singular values at most
    ``rcond * largest`` count as zero (rcond: one value or one per matrix of the stack;
    numpy's default 1e-15, or `rtol`, whose None means ``max(m, n) * eps``)."""
    from workbench.core.tensor.linalg.decompositions import eigh
    from workbench.core.tensor.linalg.products import matmul
    from workbench.core.tensor.linalg.rectangular import svd
    from workbench.core.tensor.shape import shape_tuple

    tm = _tm()
    if rcond is not None and rtol is not _NOT_GIVEN:
        raise ValueError("pinv: rtol and rcond cannot both be set")
    (a,) = as_lapack_operands("pinv", a, min_ndims=(2,))
    cut = rcond if rcond is not None else (1e-15 if rtol is _NOT_GIVEN else rtol)
    if cut is None:  # rtol=None: numpy's max(m, n) * eps
        real = np.dtype(str(real_dtype(a.type.dtype)))
        cut = tm.mul(tm.maximum(*shape_tuple(a)[-2:]), np.asarray(np.finfo(real).eps, real))
    if hermitian:
        w, v = eigh(a)
        keep = tm.gt(tm.abs(w), _cutoff(tm.abs(w), cut))
        w_inv = tm.switch(keep, tm.true_div(1, tm.switch(keep, w, 1)), 0)
        return matmul(tm.mul(v, add_axis(w_inv, -2)), conj_transpose(v))
    u, s, vh = svd(a, full_matrices=False)
    keep = tm.gt(s, _cutoff(s, cut))
    s_inv = tm.switch(keep, tm.true_div(1, tm.switch(keep, s, 1)), 0)
    return matmul(tm.mul(conj_transpose(vh), add_axis(s_inv, -2)), conj_transpose(u))


def lstsq(a: Any, b: Any, rcond: Any = None) -> tuple[Variable, Variable, Variable, Variable]:
    """numpy.linalg.lstsq: ``(x, residuals, rank, s)`` for the least-squares solution of
    ``a @ x = b`` (2-d `a`, 1-d or 2-d `b`): the minimum-norm `x` through the SVD,
    singular values at most ``rcond * largest`` ignored (default ``eps * max(m, n)``).

    As LAPACK's gelsd under NumPy, an `rcond` <= 0 or >= 1 means the unit roundoff
    (eps / 2: ``rcond=-1``, NumPy's default before 1.14, is common) and a NaN one keeps
    every singular value. (NumPy computes float32 in float64, and so cuts at float64's
    eps; the float32 SVD here cuts at float32's.) The residuals are ``|b - a x|^2``:
    for an ill-conditioned full-rank `a` they are ill-conditioned themselves (a's
    column space moves with a's rounding), and gelsd's ``|b - u u^H b|^2`` is further
    from the exact value (60-digit mpmath, singular values down to 1e-14: median
    relative error 6e-6 against 1e-6 here), so this differs from NumPy there."""
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.linalg.products import matmul
    from workbench.core.tensor.linalg.rectangular import svd
    from workbench.core.tensor.shape import check_and_raise, shape_tuple

    tm, red = _tm(), _red()
    a, b = as_lapack_operands("lstsq", a, b, min_ndims=(2, 1))
    if a.type.ndim != 2 or b.type.ndim > 2:
        raise LinAlgError(f"lstsq: a must be 2-d and b 1-d or 2-d, got {a.type} and {b.type}")
    # numpy's LinAlgError for b's rows, now or when run (the products would raise another)
    a = shape_checked("lstsq", "(m,n),(m)->(m,n)" if b.type.ndim == 1 else
                      "(m,n),(m,k)->(m,n)", a, b)
    # gelsd fails on an inf as on a NaN in a (numpy's svd gives NaN for an inf)
    a = check_and_raise(a, [red.all(tm.isfinite(a))], "LinAlgError",
                        "lstsq: SVD did not converge in Linear Least Squares (a holds an "
                        "inf or a NaN)")
    m, n = shape_tuple(a)
    u, s, vh = svd(a, full_matrices=False)
    eps = float(np.finfo(a.type.dtype.numpy).eps)
    if rcond is None:
        rcond = tm.mul(eps, cast(tm.maximum(m, n), real_dtype(a.type.dtype)))
    else:  # gelsd's rule
        rcond = as_tensor_variable(rcond)
        rcond = tm.switch(tm.or_(tm.le(rcond, 0), tm.ge(rcond, 1)), eps / 2, rcond)
    keep = tm.invert(tm.le(s, _cutoff(s, rcond)))  # gelsd: s <= tol is zero (NaN tol: none)
    s_inv = tm.switch(keep, tm.true_div(1, tm.switch(keep, s, 1)), 0)
    rank = red.sum(keep, dtype="int32")  # numpy's dtype of the rank
    coef = matmul(conj_transpose(u), b)  # (k,) or (k, nrhs)
    coef = tm.mul(coef, s_inv if b.type.ndim == 1 else add_axis(s_inv, -1))
    x = matmul(conj_transpose(vh), coef)
    squares = red.sum(_abs_squared(tm.sub(b, matmul(a, x))), axis=0)
    if b.type.ndim == 1:
        squares = add_axis(squares, 0)
    full = tm.and_(tm.eq(rank, n), tm.gt(m, n))
    residuals = squares[:tm.mul(cast(full, "int64"), shape_tuple(squares)[0])]
    return x, residuals, rank, s
