"""Products of tensors: `Dot` (numpy.dot of 1-d/2-d operands), `MatMul` (batched
numpy.matmul) and the functions built on them (`dot`, `matmul`, `tensordot`,
`outer`, `matvec`, `vecmat`).

`Dot` is the one node the BLAS rewrites look for (gemm, gemv, ger), so every
product of operands of rank 1 or 2 becomes a `Dot`, whichever function built it:
``x @ W`` of two matrices, ``dot(x, y)``, the core of ``tensordot`` (which moves
the summed axes together with a DimShuffle, reshapes both operands to matrices
and reshapes the product back). `MatMul` is only used when there are batch
dimensions. Both compute in the promoted dtype (``float32 @ int32`` is float64,
as in numpy) and check static core lengths at build time, naming the operands and
their shapes (``matmul: x has shape (2, 4) and w has shape (3, ?): inner dimensions
4 and 3 differ``); at run time the messages are numpy's.

Gradients: ``gx = gz @ y^T``, ``gy = x^T @ gz`` (outer products for the 1-d
cases); `MatMul` sums each gradient over the batch dimensions its operand was
broadcast along, including broadcasting only known at run time. Integer
products (dot of ints) give zero gradients; an integer operand of a float
product gets the gradient a float one would (seed 003). Both Ops have an `R_op`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import promote_types
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.scalar.basic import is_python_scalar
from workbench.core.tensor.elemwise import broadcast_static_shapes, dimshuffle
from workbench.core.tensor.join import length_product
from workbench.core.tensor.math import conj, eq, mul, switch
from workbench.core.tensor.shape import format_numpy_shape, normalize_axis, shape_tuple
from workbench.core.tensor.type import StaticShape, TensorType, format_shape
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["Dot", "MatMul", "dot", "matmul", "matvec", "outer", "tensordot", "vecmat"]

TensorLike = Any  # a tensor Variable, a number, a (nested) list or a numpy array

def _compute(func: Any, node: Apply, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """`func(x, y)` in the output dtype: inputs converted first (so BLAS sees one
    dtype), the result converted only if numpy chose another dtype (bfloat16)."""
    dtype = node.outputs[0].type.numpy_dtype
    x, y = (v if v.dtype == dtype else v.astype(dtype) for v in inputs)
    result = np.asarray(func(x, y))
    if result.dtype != dtype:
        result = result.astype(dtype)
    return result


# -- Dot ---------------------------------------------------------------------------


class Dot(Op):
    """numpy.dot of two operands of rank 1 or 2: vector.vector (a 0-d result),
    matrix.vector, vector.matrix and matrix.matrix.

    The output dtype is the promotion of the input dtypes; its static shape drops
    the summed dimension (``(?, ?) . (3, 4)`` is ``(?, 4)``). A static mismatch of
    the summed lengths is refused at build time, naming both operands. `perform`
    runs `np.dot` (BLAS for float and complex dtypes).
    """

    __props__ = ()

    def make_node(self, x: TensorLike, y: TensorLike) -> Apply:
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        for position, var in enumerate((x, y)):
            if var.type.ndim not in (1, 2):
                raise TypeError(
                    f"Dot takes operands of rank 1 or 2, got input {position} {var} of type "
                    f"{var.type} (rank {var.type.ndim}); use dot() or tensordot() for other ranks"
                )
        _check_dot_aligned(x, y)
        shape = x.type.shape[:-1] + y.type.shape[1:]
        out = TensorType(promote_types(x.type.dtype, y.type.dtype), shape)()
        return Apply(self, [x, y], [out])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = _compute(np.dot, node, inputs)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        x_shape, y_shape = input_shapes
        return [tuple(x_shape[:-1]) + tuple(y_shape[1:])]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """2*m*k*n: one multiply and one add per term of each output element."""
        return 2 * math.prod(outputs[0]) * inputs[0][-1]

    # -- differentiation ------------------------------------------------------------
    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``gx = gz . y^T`` and ``gy = x^T . gz``, with the 1-d cases as products and
        outer products. An integer product (dot of ints) is a step function: zeros.
        An integer operand of a float product gets the same gradient as a float one
        would, in the float dtype (seed 003)."""
        from workbench.core.tensor.join import float_zeros_like
        from workbench.core.tensor.reduction import (
            as_grad_of,
            conj_if_complex,
            is_int_like,
        )

        (x, y), (out,), (gz,) = inputs, outputs, output_grads
        if is_int_like(out):
            return [float_zeros_like(x), float_zeros_like(y)]
        xd, yd = x.type.ndim, y.type.ndim
        x, y = conj_if_complex(x), conj_if_complex(y)  # gz * conj(d out / d input)
        if xd == 1 and yd == 1:  # gz is 0-d
            gx, gy = mul(gz, y), mul(gz, x)
        elif xd == 2 and yd == 1:  # gz (n,)
            gx, gy = _outer(gz, y), _dot(_t(x), gz)
        elif xd == 1 and yd == 2:  # gz (m,)
            gx, gy = _dot(y, gz), _outer(x, gz)
        else:
            gx, gy = _dot(gz, _t(y)), _dot(_t(x), gz)
        return [as_grad_of(gx, inputs[0]), as_grad_of(gy, inputs[1])]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``dot(ex, y) + dot(x, ey)`` (the terms whose evaluation point is given)."""
        return [_product_rule(_dot, inputs, eval_points)]


def _operands(name: str, x: Variable, y: Variable) -> str:
    """The start of a build-time refusal: `name`, both operands and their static shapes."""
    left, right = x.name or "the left operand", y.name or "the right operand"
    return (f"{name}: {left} has shape {format_shape(x.type.shape)} and {right} has shape "
            f"{format_shape(y.type.shape)}")


def _check_dot_aligned(x: Variable, y: Variable, name: str = "dot") -> None:
    """The build-time check of a product: the last axis of x against the second-to-last
    (or only) axis of y."""
    xk, yk = x.type.shape[-1], y.type.shape[max(y.type.ndim - 2, 0)]
    if xk is not None and yk is not None and xk != yk:
        raise ValueError(f"{_operands(name, x, y)}: inner dimensions {xk} and {yk} differ")


_dot = Dot()


def dot(x: TensorLike, y: TensorLike) -> Variable:
    """numpy.dot: the sum product over the last axis of `x` and the second-to-last
    axis of `y` (its only axis when `y` is a vector).

    Operands of rank 1 or 2 give a `Dot` node; higher ranks go through `tensordot`
    (whose core is a `Dot`). A 0-d operand multiplies elementwise; a Python number
    is then weak (``float32_x.dot(2)`` stays float32, unlike numpy.dot).
    """
    if is_python_scalar(x) or is_python_scalar(y):
        return mul(x, y)
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if x.type.ndim == 0 or y.type.ndim == 0:
        return mul(x, y)
    if x.type.ndim <= 2 and y.type.ndim <= 2:
        return _dot(x, y)
    _check_dot_aligned(x, y)
    return tensordot(x, y, axes=([x.type.ndim - 1], [max(y.type.ndim - 2, 0)]))


# -- MatMul ------------------------------------------------------------------------


def _matmul_static_shape(x: Variable, y: Variable, name: str = "matmul") -> StaticShape:
    """The static output shape of numpy.matmul(x, y), refusing what numpy refuses."""
    for var in (x, y):
        if var.type.ndim == 0:
            what = var.name or ("the left operand" if var is x else "the right operand")
            raise ValueError(f"{_operands(name, x, y)}: {what} is a scalar, and {name} needs "
                             "at least one dimension (use * to multiply by a scalar)")
    _check_dot_aligned(x, y, name)
    xs, ys = x.type.shape, y.type.shape
    x_batch, y_batch = xs[:-2], ys[:-2]
    ndim = max(len(x_batch), len(y_batch))
    padded = [(1,) * (ndim - len(b)) + b for b in (x_batch, y_batch)]
    batch = broadcast_static_shapes(padded)
    core = (xs[-2],) if len(xs) >= 2 else ()
    core += (ys[-1],) if len(ys) >= 2 else ()
    if batch is None:
        raise ValueError(f"{_operands(name, x, y)}: the batch dimensions "
                         f"{format_shape(x_batch)} and {format_shape(y_batch)} cannot be "
                         "broadcast together")
    return batch + core


class MatMul(Op):
    """numpy.matmul: matrix products over broadcast batch dimensions.

    Operands are (..., n, k) and (..., k, m); a 1-d first operand is a row
    (k,) and a 1-d second operand a column (k,), whose length-1 dimension is
    dropped from the result, as numpy does. 0-d operands are refused. The batch
    dimensions broadcast like an Elemwise; the output dtype is the promotion of
    the inputs. The `matmul` function only builds this Op when there are batch
    dimensions (otherwise it builds a `Dot`).
    """

    __props__ = ()

    def make_node(self, x: TensorLike, y: TensorLike) -> Apply:
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        shape = _matmul_static_shape(x, y)
        out = TensorType(promote_types(x.type.dtype, y.type.dtype), shape)()
        return Apply(self, [x, y], [out])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = _compute(np.matmul, node, inputs)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        x, y = node.inputs
        x_shape, y_shape = input_shapes
        static = node.outputs[0].type.shape
        n_batch = len(static) - (x.type.ndim >= 2) - (y.type.ndim >= 2)
        batch: list[Any] = []
        for d in range(n_batch):  # d counts batch dimensions from the left of the output
            if static[d] is not None:
                batch.append(static[d])
                continue
            candidates: list[Any] = []
            for var, shape in ((x, x_shape), (y, y_shape)):
                offset = n_batch - (var.type.ndim - 2)
                if d >= offset and var.type.shape[d - offset] != 1:
                    candidates.append(shape[d - offset])
            batch.append(_broadcast_length(candidates))
        core = (x_shape[-2],) if x.type.ndim >= 2 else ()
        core += (y_shape[-1],) if y.type.ndim >= 2 else ()
        return [tuple(batch) + tuple(core)]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """2*k per output element (batch * n * m of them)."""
        return 2 * math.prod(outputs[0]) * inputs[0][-1]

    # -- differentiation ------------------------------------------------------------
    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``gx = gz @ swapaxes(y)`` and ``gy = swapaxes(x) @ gz``, each summed over the
        batch dimensions its input was broadcast along (see `_sum_to_operand`).

        A 1-d operand is promoted as in the forward product (a row for `x`, a column
        for `y`) and the added dimension dropped again. Integer products give zeros.
        """
        from workbench.core.tensor.join import float_zeros_like
        from workbench.core.tensor.reduction import (
            as_grad_of,
            conj_if_complex,
            is_int_like,
        )

        (x, y), (out,), (gz,) = inputs, outputs, output_grads
        if is_int_like(out):
            return [float_zeros_like(x), float_zeros_like(y)]
        x2 = x if x.type.ndim >= 2 else dimshuffle(x, ("x", 0))
        y2 = y if y.type.ndim >= 2 else dimshuffle(y, (0, "x"))
        gz2 = gz
        if x.type.ndim == 1:  # put back the row dimension before the last core one
            pos = gz2.type.ndim - (1 if y.type.ndim >= 2 else 0)
            gz2 = _insert_axis(gz2, pos)
        if y.type.ndim == 1:
            gz2 = _insert_axis(gz2, gz2.type.ndim)
        gx = matmul(gz2, _swap_last(conj_if_complex(y2)))  # gz * conj(d out / d input)
        gy = matmul(_swap_last(conj_if_complex(x2)), gz2)
        gx = _sum_to_operand(gx, x2, y2)
        gy = _sum_to_operand(gy, y2, x2)
        if x.type.ndim == 1:
            gx = dimshuffle(gx, (1,))
        if y.type.ndim == 1:
            gy = dimshuffle(gy, (0,))
        return [as_grad_of(gx, x), as_grad_of(gy, y)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``ex @ y + x @ ey`` (the terms whose evaluation point is given)."""
        return [_product_rule(matmul, inputs, eval_points)]


# -- gradient helpers --------------------------------------------------------------


def _t(v: Variable) -> Variable:
    """The transpose of a matrix."""
    return dimshuffle(v, (1, 0))


def _outer(u: Variable, v: Variable) -> Variable:
    """``u[:, None] * v[None, :]`` for two vectors."""
    return mul(dimshuffle(u, (0, "x")), dimshuffle(v, ("x", 0)))


def _insert_axis(v: Variable, pos: int) -> Variable:
    """`v` with a length-1 dimension inserted at `pos`."""
    order: list[int | str] = list(range(v.type.ndim))
    order.insert(pos, "x")
    return dimshuffle(v, order)


def _swap_last(v: Variable) -> Variable:
    """`v` (rank >= 2) with its last two dimensions swapped."""
    nd = v.type.ndim
    return dimshuffle(v, (*range(nd - 2), nd - 1, nd - 2))


def _product_rule(product: Any, inputs: Sequence[Variable],
                  eval_points: Sequence[Variable | None]) -> Variable | None:
    """``product(ex, y) + product(x, ey)`` for a bilinear `product`, skipping None points."""
    from workbench.core.tensor.math import add

    (x, y), (ex, ey) = inputs, eval_points
    terms = []
    if ex is not None:
        terms.append(product(ex, y))
    if ey is not None:
        terms.append(product(x, ey))
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else add(*terms)


def _sum_to_operand(g: Variable, operand: Variable, other: Variable) -> Variable:
    """`g` (shaped like the batched product) summed to the shape of `operand`.

    The leading batch dimensions `operand` lacks are summed away; so are those
    where it is statically 1 and the product is not. Where its length is unknown
    and `other` may have broadcast it at run time (their batch dims both unknown),
    the dimension is split as ``(len_operand, len_g // len_operand)`` by a reshape
    and summed over the second part: a sum when the operand had length 1, nothing
    otherwise, with no data-dependent branch.
    """
    from workbench.core.tensor.reduction import sum as reduce_sum
    from workbench.core.tensor.reshape import reshape

    lead = g.type.ndim - operand.type.ndim
    if lead:
        g = reduce_sum(g, tuple(range(lead)))
    n_batch = operand.type.ndim - 2
    other_lead = n_batch - (other.type.ndim - 2)  # batch dims of `operand` `other` lacks
    ones = tuple(d for d in range(n_batch)
                 if operand.type.shape[d] == 1 and g.type.shape[d] != 1)
    if ones:
        g = reduce_sum(g, ones, keepdims=True)
    for d in range(n_batch):
        if (operand.type.shape[d] is not None or g.type.shape[d] == 1 or d < other_lead
                or other.type.shape[d - other_lead] == 1):
            continue
        g_shape, op_len = shape_tuple(g), shape_tuple(operand)[d]
        parts = _int_div_at_least_one(g_shape[d], op_len)
        split = reshape(g, (*g_shape[:d], op_len, parts, *g_shape[d + 1:]))
        g = reduce_sum(split, d + 1)
    return g


def _int_div_at_least_one(n: Any, m: Any) -> Any:
    """``n // max(m, 1)`` on int64 lengths."""
    from workbench.core.tensor.math import floor_div, maximum

    return floor_div(n, maximum(m, 1))


def _broadcast_length(lengths: list[Any]) -> Any:
    """The broadcast of lengths none of which is statically 1 (ints or int64 0-d Variables).

    For lengths that broadcast, the result is the first one unless it is 1 (so a
    length 0 against a length 1 gives 0, which a maximum would not).
    """
    result = lengths[0]
    for other in lengths[1:]:
        if isinstance(result, (int, np.integer)) and isinstance(other, (int, np.integer)):
            result = other if result == 1 else result
        else:
            result = switch(eq(result, 1), other, result)
    return result


_matmul = MatMul()


def matmul(x: TensorLike, y: TensorLike) -> Variable:
    """numpy.matmul (the ``@`` operator): batched matrix product with 1-d promotion.

    Operands of rank 1 and 2 give a `Dot` node (the same product, and the node
    the BLAS rewrites know); batch dimensions give a `MatMul` node.
    """
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    _matmul_static_shape(x, y)  # numpy.matmul's refusals, even when a Dot is built
    if x.type.ndim <= 2 and y.type.ndim <= 2:
        return _dot(x, y)
    return _matmul(x, y)


def matvec(a: TensorLike, v: TensorLike) -> Variable:
    """numpy.matvec: matrix-vector products over broadcast batch dimensions,
    ``a`` (..., m, n) and ``v`` (..., n) giving (..., m)."""
    a, v = as_tensor_variable(a), as_tensor_variable(v)
    _check_vector_product("matvec", a, v, matrix_first=True)
    if a.type.ndim == 2 and v.type.ndim == 1:
        return _dot(a, v)
    column = dimshuffle(v, (*range(v.type.ndim), "x"))  # (..., n, 1)
    product = matmul(a, column)  # (..., m, 1)
    return dimshuffle(product, tuple(range(product.type.ndim - 1)))


def vecmat(v: TensorLike, a: TensorLike) -> Variable:
    """numpy.vecmat: vector-matrix products over broadcast batch dimensions,
    ``conj(v)`` (..., n) times ``a`` (..., n, m) giving (..., m)."""
    v, a = as_tensor_variable(v), as_tensor_variable(a)
    _check_vector_product("vecmat", v, a, matrix_first=False)
    if v.type.dtype.is_complex:
        v = conj(v)
    if v.type.ndim == 1 and a.type.ndim == 2:
        return _dot(v, a)
    row = dimshuffle(v, (*range(v.type.ndim - 1), "x", v.type.ndim - 1))  # (..., 1, n)
    product = matmul(row, a)  # (..., 1, m)
    nd = product.type.ndim
    return dimshuffle(product, (*range(nd - 2), nd - 1))


def _check_vector_product(name: str, first: Variable, second: Variable,
                          matrix_first: bool) -> None:
    """The build-time checks of matvec / vecmat: ranks and the shared core length."""
    required = (2, 1) if matrix_first else (1, 2)
    for position, (var, need) in enumerate(zip((first, second), required)):
        if var.type.ndim < need:
            what = var.name or ("the left operand", "the right operand")[position]
            raise ValueError(f"{_operands(name, first, second)}: {what} needs at least "
                             f"{need} dimension{'s' if need > 1 else ''}")
    n_first = first.type.shape[-1]
    n_second = second.type.shape[-1] if matrix_first else second.type.shape[-2]
    if n_first is not None and n_second is not None and n_first != n_second:
        raise ValueError(f"{_operands(name, first, second)}: inner dimensions {n_first} and "
                         f"{n_second} differ")


# -- tensordot and outer -----------------------------------------------------------


def _normalize_tensordot_axes(axes: Any, a_ndim: int, b_ndim: int
                              ) -> tuple[list[int], list[int]]:
    """numpy.tensordot's `axes` (an int N, or a pair of ints / int sequences) as two
    lists of non-negative axes of equal length."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0:
            raise ValueError(f"tensordot: axes must be a non-negative int, got {n}")
        if n > a_ndim or n > b_ndim:
            raise ValueError(
                f"tensordot: cannot sum over {n} axes of operands of ranks {a_ndim} and {b_ndim}"
            )
        return list(range(a_ndim - n, a_ndim)), list(range(n))
    try:
        a_axes, b_axes = axes
    except (TypeError, ValueError):
        raise TypeError(
            "tensordot: axes must be an int or a pair of axis sequences, e.g. ([1], [0]); "
            f"got {axes!r}"
        ) from None
    pair = []
    for which, (given, ndim) in enumerate(((a_axes, a_ndim), (b_axes, b_ndim))):
        entries = [given] if isinstance(given, (int, np.integer)) else list(given)
        normalized = [normalize_axis(axis, ndim, "tensordot axes") for axis in entries]
        if len(set(normalized)) != len(normalized):
            raise ValueError(
                f"tensordot: repeated axis in the axes of {'ab'[which]}: {tuple(entries)}"
            )
        pair.append(normalized)
    if len(pair[0]) != len(pair[1]):
        raise ValueError(
            f"shape-mismatch for sum: {len(pair[0])} axes of a against {len(pair[1])} axes of b"
        )
    return pair[0], pair[1]


def tensordot(a: TensorLike, b: TensorLike, axes: Any = 2) -> Variable:
    """numpy.tensordot: the sum of products over `axes` of `a` and `b`.

    `axes` is an int N (the last N axes of `a` with the first N of `b`) or a
    pair of axis sequences. Built as DimShuffle (summed axes together) ->
    reshape to matrices -> `Dot` -> reshape to ``free axes of a + free axes of b``;
    reshapes are skipped where the operands already have the right rank.
    """
    from workbench.core.tensor.shape import reshape

    a, b = as_tensor_variable(a), as_tensor_variable(b)
    a_axes, b_axes = _normalize_tensordot_axes(axes, a.type.ndim, b.type.ndim)
    for ia, ib in zip(a_axes, b_axes):
        la, lb = a.type.shape[ia], b.type.shape[ib]
        if la is not None and lb is not None and la != lb:
            raise ValueError(
                f"shape-mismatch for sum: axis {ia} of a has length {la}, axis {ib} of b has "
                f"length {lb} (shapes {format_numpy_shape(a.type.shape)} and "
                f"{format_numpy_shape(b.type.shape)})"
            )
    a_free = [i for i in range(a.type.ndim) if i not in a_axes]
    b_free = [i for i in range(b.type.ndim) if i not in b_axes]
    a_shape, b_shape = shape_tuple(a), shape_tuple(b)
    # The summed lengths: static from either side when one is known.
    summed = [
        a.type.shape[ia] if a.type.shape[ia] is not None
        else b.type.shape[ib] if b.type.shape[ib] is not None
        else a_shape[ia]
        for ia, ib in zip(a_axes, b_axes)
    ]
    k = length_product(summed)

    a_moved = dimshuffle(a, a_free + a_axes)  # (free..., summed...)
    if len(a_axes) == 1 and len(a_free) <= 1:
        a_mat = a_moved
    elif a_free:
        a_mat = reshape(a_moved, (length_product([a_shape[i] for i in a_free]), k))
    else:
        a_mat = reshape(a_moved, (k,))

    b_moved = dimshuffle(b, b_axes + b_free)  # (summed..., free...)
    if len(b_axes) == 1 and len(b_free) <= 1:
        b_mat = b_moved
    elif b_free:
        b_mat = reshape(b_moved, (k, length_product([b_shape[i] for i in b_free])))
    else:
        b_mat = reshape(b_moved, (k,))

    product = _dot(a_mat, b_mat)
    if len(a_free) <= 1 and len(b_free) <= 1:
        return product
    out_shape = [a_shape[i] for i in a_free] + [b_shape[i] for i in b_free]
    return reshape(product, tuple(out_shape))


def outer(x: TensorLike, y: TensorLike) -> Variable:
    """numpy.outer: ``x.ravel()[:, None] * y.ravel()[None, :]`` (an Elemwise product)."""
    def flat(v: Variable) -> Variable:
        if v.type.ndim == 0:
            return dimshuffle(v, ("x",))
        if v.type.ndim == 1:
            return v
        from workbench.core.tensor.shape import flatten

        return flatten(v, ndim=1)

    x, y = flat(as_tensor_variable(x)), flat(as_tensor_variable(y))
    return mul(dimshuffle(x, (0, "x")), dimshuffle(y, ("x", 0)))
