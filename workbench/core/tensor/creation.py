"""Creating tensors: `Alloc` (a value broadcast to a shape), `ARange`, `Eye` and the
numpy-style functions built on them (`zeros`, `ones`, `full`, `*_like`, `arange`,
`eye`).

Lengths may be Python ints or integer 0-d tensor Variables; they enter graphs as
int64 0-d tensors (constants when known, so static shapes follow them). Negative
lengths are refused with numpy's "negative dimensions are not allowed", at build
time when they are known and at run time otherwise; non-integer lengths are a
TypeError. Dtypes follow `workbench.core.dtypes.infer_dtype` (seed 004): the
explicit dtype, else the dtype of the array or relevant scalar argument, else the
default float (`zeros`, `eye`, ...) or the promotion of start/stop/step (`arange`).

Gradients: Alloc sums the output gradient back to the value's shape; ARange
differentiates with respect to start and step (stop only sets the length); every
length, and all of Eye's inputs, are disconnected.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import Dtype, DtypeLike, as_dtype, bfloat16, float64, infer_dtype, int64
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.op import Op
from workbench.core.scalar.basic import is_python_scalar
from workbench.core.tensor.basic import cast
from workbench.core.tensor.join import as_length, vector_entries
from workbench.core.tensor.math import ceil, maximum, sub, true_div
from workbench.core.tensor.shape import format_numpy_shape, shape_tuple
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable, constant

__all__ = [
    "ARange", "Alloc", "Eye", "alloc", "arange", "eye", "full", "full_like", "ones", "ones_like",
    "zeros", "zeros_like",
]  # fmt: skip

TensorLike = Any  # a tensor Variable, a number, a (nested) list or a numpy array
ShapeLike = Any  # an int, a sequence of ints / integer scalar Variables, or an int vector Variable

NEGATIVE_DIMENSIONS = "negative dimensions are not allowed"


# -- lengths -----------------------------------------------------------------------


def _int64_length(n: Any, what: str) -> Variable:
    """A length (an int or an integer 0-d tensor) as an int64 0-d tensor Variable.

    Known negative lengths raise numpy's ValueError; floats, bools and other
    non-integers numpy's TypeError (by `join.as_length`).
    """
    length = as_length(n, what)
    if isinstance(length, int):
        if length < 0:
            raise ValueError(NEGATIVE_DIMENSIONS)
        return constant(length, dtype=int64)
    return length if length.type.dtype == int64 else cast(length, int64)


def _shape_entries(shape: ShapeLike, what: str) -> list[Any]:
    """The entries of a shape argument: ints and integer 0-d Variables.

    `shape` is an int, a sequence (of ints and integer scalar Variables), or an
    integer vector Variable of static length (``x.shape``, a constant, ...).
    """
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if isinstance(shape, Variable):
        var = as_tensor_variable(shape)
        if var.type.ndim == 0:
            return [var]
        if var.type.ndim != 1 or not var.type.dtype.is_int:
            raise TypeError(
                f"{what}: a symbolic shape must be an integer vector, got {var} of type "
                f"{var.type}"
            )
        if var.type.shape[0] is None:
            raise ValueError(
                f"{what}: the shape vector {var} has no static length, so the rank of the "
                "result is unknown; give a tuple of lengths or specify_shape the vector"
            )
        return vector_entries(var)
    if isinstance(shape, (list, tuple)):
        return list(shape)
    return [shape]


def _static_length(var: Variable) -> int | None:
    return int(var.data) if isinstance(var, Constant) else None


# -- Alloc -------------------------------------------------------------------------

#: Alloc outputs with more elements than this are never folded into constants.
ALLOC_FOLD_LIMIT = 1024


class Alloc(Op):
    """`value` broadcast to a shape, in a fresh writeable array: ``Alloc(value, *lengths)``.

    The lengths are int64 0-d tensors; the value's dimensions align with the
    last ones (numpy broadcasting), and it keeps its dtype. Constant lengths
    fix the output's static shape, and so does a static value length other
    than 1. The lengths only shape the output (`connection_pattern`).
    """

    __props__ = ()

    def make_node(self, value: TensorLike, *shape: Any) -> Apply:
        value = as_tensor_variable(value)
        lengths = [_int64_length(n, "alloc") for n in shape]
        ndim = len(lengths)
        if value.type.ndim > ndim:
            raise ValueError(
                f"alloc: the value {value} ({value.type}) has more dimensions than the "
                f"{ndim} of the requested shape"
            )
        offset = ndim - value.type.ndim
        static: list[int | None] = []
        for i, length in enumerate(lengths):
            known = value.type.shape[i - offset] if i >= offset else 1
            wanted = _static_length(length)
            if wanted is None:
                static.append(None if known in (None, 1) else known)
                continue
            if known not in (None, 1, wanted):
                requested = tuple(_static_length(n) for n in lengths)
                raise ValueError(
                    f"could not broadcast input array from shape "
                    f"{format_numpy_shape(value.type.shape)} into shape "
                    f"{format_numpy_shape(requested)}"
                )
            static.append(wanted)
        out = TensorType(value.type.dtype, tuple(static))()
        return Apply(self, [value, *lengths], [out])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        value, *lengths = inputs
        shape = tuple(int(n) for n in lengths)
        if any(n < 0 for n in shape):
            raise ValueError(NEGATIVE_DIMENSIONS)
        out = np.empty(shape, dtype=node.outputs[0].type.numpy_dtype)
        out[...] = value
        output_storage[0][0] = out

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        static = node.outputs[0].type.shape
        return [tuple(s if s is not None else n for s, n in zip(static, node.inputs[1:]))]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True]] + [[False] for _ in node.inputs[1:]]

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        """Fold only small allocations that no one may write into.

        A folded Alloc becomes a constant: read-only (so in-place clients could no
        longer reuse the buffer), shared by every call, and stored in the graph
        file. So keep the Alloc when its size is not static or exceeds
        `ALLOC_FOLD_LIMIT` elements, or when it is an output of the graph
        (callers get a fresh writeable array on each call).
        """
        shape = node.outputs[0].type.shape
        if any(n is None for n in shape) or math.prod(shape) > ALLOC_FOLD_LIMIT:
            return False
        outputs = getattr(fgraph, "outputs", None) or ()
        return not any(out is node.outputs[0] for out in outputs)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """The value gets the output gradient summed over the broadcast dimensions (the
        new leading ones and those where it has length 1, `reshape.sum_to`); the
        lengths are disconnected (seed 003's example)."""
        from workbench.core.graph.type import disconnected_type
        from workbench.core.tensor.join import grad_for
        from workbench.core.tensor.reshape import sum_to

        value = inputs[0]
        gx = grad_for(sum_to(output_grads[0], value), value)
        return [gx] + [disconnected_type() for _ in inputs[1:]]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The eval point of the value allocated to the same shape."""
        if eval_points[0] is None:
            return [None]
        return [_alloc(eval_points[0], *inputs[1:])]


_alloc = Alloc()


def alloc(value: TensorLike, *shape: Any) -> Variable:
    """`value` broadcast to `shape` (ints or integer scalar Variables), as a new array.

    ``alloc(x, 3, 4)`` and ``alloc(x, (3, 4))`` are the same.
    """
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = tuple(_shape_entries(shape[0], "alloc"))
    return _alloc(value, *shape)


def _filled(shape: ShapeLike, value: Any, dtype: Dtype, what: str) -> Variable:
    """An Alloc of `value` (converted to `dtype`) to `shape`."""
    entries = _shape_entries(shape, what)
    if isinstance(value, Variable):
        fill = cast(value, dtype)
    else:
        fill = constant(value, dtype=dtype)
    return _alloc(fill, *[_int64_length(n, what) for n in entries])


def zeros(shape: ShapeLike, dtype: DtypeLike | None = None) -> Variable:
    """An array of zeros of `shape` (an int, a tuple of lengths or an int vector Variable).

    `dtype` defaults to the default float dtype.
    """
    return _filled(shape, 0, infer_dtype(dtype), "zeros")


def ones(shape: ShapeLike, dtype: DtypeLike | None = None) -> Variable:
    """An array of ones of `shape`; `dtype` defaults to the default float dtype."""
    return _filled(shape, 1, infer_dtype(dtype), "ones")


def _fill_dtype(fill_value: Any, dtype: DtypeLike | None) -> Dtype:
    """Dtype of `full`: explicit, else the fill value's (a Python scalar takes the default
    of its kind: int -> default int, float -> default float)."""
    if isinstance(fill_value, Variable) or hasattr(fill_value, "dtype"):
        return infer_dtype(dtype, arrays=[fill_value])
    if is_python_scalar(fill_value):
        return infer_dtype(dtype, scalars=[fill_value])
    return infer_dtype(dtype, arrays=[np.asarray(fill_value)])


def full(shape: ShapeLike, fill_value: TensorLike, dtype: DtypeLike | None = None) -> Variable:
    """An array of `shape` filled with `fill_value` (a number, an array or a Variable,
    broadcast to `shape`). `dtype` defaults to the fill value's dtype."""
    return _filled(shape, fill_value, _fill_dtype(fill_value, dtype), "full")


def _like(x: TensorLike, value: Any, dtype: DtypeLike | None, what: str) -> Variable:
    x = as_tensor_variable(x)
    d = x.type.dtype if dtype is None else as_dtype(dtype)
    return _filled(list(shape_tuple(x)), value, d, what)


def zeros_like(x: TensorLike, dtype: DtypeLike | None = None) -> Variable:
    """Zeros of the shape of `x` and (unless `dtype` is given) its dtype."""
    return _like(x, 0, dtype, "zeros_like")


def ones_like(x: TensorLike, dtype: DtypeLike | None = None) -> Variable:
    """Ones of the shape of `x` and (unless `dtype` is given) its dtype."""
    return _like(x, 1, dtype, "ones_like")


def full_like(x: TensorLike, fill_value: TensorLike, dtype: DtypeLike | None = None
              ) -> Variable:
    """`fill_value` broadcast to the shape of `x`, in the dtype of `x` unless `dtype` is given
    (the fill value is converted to it, as numpy.full_like does)."""
    return _like(x, fill_value, dtype, "full_like")


# -- ARange ------------------------------------------------------------------------


class ARange(Op):
    """numpy.arange(start, stop, step) in `dtype`: ``ARange{dtype=int64}``.

    The inputs are 0-d int or float tensors of any dtype; the values are
    computed from them as numpy computes them (length ``ceil((stop - start) /
    step)``, at least 0). Constant inputs give a static length. `stop` only
    decides the length (`connection_pattern`).
    """

    __props__ = ("dtype",)

    def __init__(self, dtype: DtypeLike) -> None:
        d = as_dtype(dtype)
        if not (d.is_int or d.is_float):
            raise TypeError(f"arange: dtype {d} is not supported (integer and float dtypes are)")
        self.dtype = d

    def make_node(self, start: TensorLike, stop: TensorLike, step: TensorLike) -> Apply:
        inputs = []
        for name, value in (("start", start), ("stop", stop), ("step", step)):
            var = _arange_scalar(value)
            if var.type.ndim != 0 or not (var.type.dtype.is_int or var.type.dtype.is_float):
                raise TypeError(
                    f"arange: {name} must be an int or float scalar, got {var} of type {var.type}"
                )
            inputs.append(var)
        length = None
        if all(isinstance(v, Constant) for v in inputs):
            length = _arange_length(*(v.data.item() for v in inputs))
        elif isinstance(inputs[2], Constant) and inputs[2].data == 0:
            raise ZeroDivisionError("arange: the step is 0 (division by zero)")
        return Apply(self, inputs, [TensorType(self.dtype, (length,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        start, stop, step = (np.asarray(v).item() for v in inputs)
        if step == 0:
            raise ZeroDivisionError("arange: the step is 0 (division by zero)")
        dtype = self.dtype
        if dtype is bfloat16:  # numpy has no arange loop for ml_dtypes' bfloat16
            result = np.arange(start, stop, step, dtype=np.float32).astype(dtype.numpy)
        else:
            result = np.arange(start, stop, step, dtype=dtype.numpy)
        output_storage[0][0] = result

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        (length,) = node.outputs[0].type.shape
        if length is not None:
            return [(length,)]
        start, stop, step = (cast(v, float64) for v in node.inputs)
        count = cast(ceil(true_div(sub(stop, start), step)), int64)
        return [(maximum(count, 0),)]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True], [False], [True]]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Element i is ``start + i * step``: d/dstart = sum(gz), d/dstep = sum(i * gz).

        `stop` only decides the length: disconnected. An integer output has zero
        gradients (float zeros); so do integer start/step inputs.
        """
        from workbench.core.graph.type import disconnected_type
        from workbench.core.tensor.join import float_zeros_like, grad_for
        from workbench.core.tensor.math import mul
        from workbench.core.tensor.reduction import sum as sum_
        from workbench.core.tensor.shape import shape_i

        start, _, step = inputs
        (gz,) = output_grads
        if not self.dtype.is_float:
            return [float_zeros_like(start), disconnected_type(), float_zeros_like(step)]
        n = outputs[0].type.shape[0]
        positions = ARange(gz.type.dtype)(0, shape_i(outputs[0], 0) if n is None else n, 1)
        g_start = grad_for(sum_(gz), start)
        g_step = grad_for(sum_(mul(gz, positions)), step)
        return [g_start, disconnected_type(), g_step]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """d(start + i * step) = d_start + i * d_step (stop moves no value)."""
        from workbench.core.tensor.math import add, mul
        from workbench.core.tensor.shape import shape_i

        e_start, _, e_step = eval_points
        if not self.dtype.is_float or (e_start is None and e_step is None):
            return [None]
        positions = ARange(self.dtype)(0, shape_i(self(*inputs), 0), 1)
        result = mul(positions, 0) if e_step is None else mul(positions, cast(e_step, self.dtype))
        if e_start is not None:
            result = add(result, cast(e_start, self.dtype))
        return [cast(result, self.dtype)]


def _arange_scalar(value: Any) -> Variable:
    """A start/stop/step argument as a 0-d tensor; Python numbers keep full precision
    (int -> int64, float -> float64), since numpy computes the length from them."""
    if isinstance(value, bool) or isinstance(value, np.bool_):
        raise TypeError(f"arange: bool arguments are not supported (got {value!r})")
    if is_python_scalar(value):
        return constant(value, dtype=as_dtype(type(value)))
    return as_tensor_variable(value)


def _arange_length(start: Any, stop: Any, step: Any) -> int:
    """numpy.arange's length: ceil((stop - start) / step), at least 0."""
    if step == 0:
        raise ZeroDivisionError("arange: the step is 0 (division by zero)")
    return max(0, math.ceil((stop - start) / step))


def arange(start: TensorLike, stop: TensorLike | None = None, step: TensorLike = 1,
           dtype: DtypeLike | None = None) -> Variable:
    """numpy.arange: evenly spaced values in [start, stop) (``arange(n)`` is 0 .. n-1).

    Arguments are numbers or 0-d int/float Variables. Without `dtype`, the
    dtype is the promotion of start, stop and step (Python numbers are weak:
    ``arange(5)`` has the default int dtype, ``arange(0., 1., .1)`` the default
    float dtype, ``arange(n)`` of an int32 `n` is int32).
    """
    if stop is None:
        start, stop = 0, start
    d = infer_dtype(dtype, scalars=[start, stop, step])
    if d.is_bool or d.is_complex:
        raise TypeError(f"arange: dtype {d} is not supported (integer and float dtypes are)")
    return ARange(d)(start, stop, step)


# -- Eye ---------------------------------------------------------------------------


class Eye(Op):
    """numpy.eye(n, m, k) in `dtype`: ones on the k-th diagonal, zeros elsewhere.

    The inputs are int64 0-d tensors n, m (lengths) and k (the diagonal: 0 the
    main one, > 0 above, < 0 below). Constant n and m fix the static shape.
    """

    __props__ = ("dtype",)

    def __init__(self, dtype: DtypeLike) -> None:
        self.dtype = as_dtype(dtype)

    def make_node(self, n: Any, m: Any, k: Any) -> Apply:
        n, m = _int64_length(n, "eye length"), _int64_length(m, "eye length")
        k = _as_offset(k)
        out = TensorType(self.dtype, (_static_length(n), _static_length(m)))()
        return Apply(self, [n, m, k], [out])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        n, m, k = (int(v) for v in inputs)
        if n < 0 or m < 0:
            raise ValueError(NEGATIVE_DIMENSIONS)
        output_storage[0][0] = np.eye(n, m, k, dtype=self.dtype.numpy)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        static = node.outputs[0].type.shape
        return [tuple(s if s is not None else v for s, v in zip(static, node.inputs[:2]))]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[False], [False], [False]]  # lengths and a diagonal position

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """No input moves a value of the output: all three are disconnected."""
        from workbench.core.graph.type import disconnected_type

        return [disconnected_type() for _ in inputs]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        return [None]


def _as_offset(k: Any) -> Variable:
    """The diagonal offset of `eye` as an int64 0-d tensor (any sign)."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
        return constant(int(k), dtype=int64)
    if isinstance(k, Variable):
        var = as_tensor_variable(k)
        if var.type.ndim == 0 and var.type.dtype.is_int:
                return cast(var, int64)
    raise TypeError(f"eye: k must be an integer, got {k!r}")


def eye(n: Any, m: Any = None, k: Any = 0, dtype: DtypeLike | None = None) -> Variable:
    """numpy.eye: an n x m array (m defaults to n) with ones on the k-th diagonal.

    `dtype` defaults to the default float dtype.
    """
    return Eye(infer_dtype(dtype))(n, n if m is None else m, k)
