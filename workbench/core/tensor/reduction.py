"""Reductions: `CAReduce` and its named forms (`Sum`, `Max`, ...), `Argmax`/`Argmin`,
and the NumPy-style functions built on them (``sum``, ``mean``, ``var``, ``argmax``, ...).

A `CAReduce` ("commutative-associative reduce") folds a binary scalar Op over
some axes with the numpy ufunc's ``reduce``. The Op itself only drops the
reduced axes: ``keepdims=True`` is a `DimShuffle` adding length-1 dimensions
after it, so rewrites and backends see one simple reduction. ``mean``, ``var``
and ``std`` are compositions (sum / count, ...) whose count comes from the
symbolic shape, so they work whether or not the static shape is known.

Axes follow NumPy: an int, a tuple (or list) of ints, negative values, or None
for all axes; an out-of-range axis raises `numpy.exceptions.AxisError` (both a
ValueError and an IndexError) and a repeated one ValueError, at build time.

Gradients (`CAReduce.L_op`, by scalar Op): a sum spreads the output gradient
back over the reduced axes (DimShuffle then Alloc to the input's shape); a
product is exact with zeros; max/min route it to every position equal to the
extremum (tied positions all receive it, as in PyTensor); integer and bool
outputs (`All`, `Any`, `Argmax`, integer sums) give float zeros (seed 003).
mean/var/std are differentiated through their composition. The helpers
`input_grad_dtype`, `as_grad_of`, `is_int_like`,
`conj_if_complex` and `broadcast_back` are shared with special, extra_ops and
linalg. Complex inputs follow the scalar Ops' convention: each contribution is
``gz * conj(derivative)``.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import Any as _Any  # `Any` is the name of the reduction Op below

import numpy as np
from numpy.exceptions import AxisError

from workbench.core.dtypes import Dtype, as_dtype, bfloat16, default_float_dtype, float16
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.graph.type import grad_not_implemented
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.scalar import math as smath
from workbench.core.scalar.basic import ScalarOp
from workbench.core.scalar.declared import declared_attribute
from workbench.core.tensor.elemwise import DimShuffle
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = [
    "CAReduce", "Sum", "Prod", "Max", "Min", "All", "Any", "Argmax", "Argmin",
    "sum", "prod", "max", "min", "all", "any", "mean", "var", "std",
    "argmax", "argmin", "max_and_argmax",
]  # fmt: skip

AxisLike = _Any  # None, an int, or a sequence of ints
TensorLike = _Any  # a tensor Variable, a number, a (nested) list or a numpy array


# -- axes ---------------------------------------------------------------------------


def _axis_index(axis: _Any, ndim: int) -> int:
    """One axis as a non-negative int (numpy's AxisError / TypeError otherwise)."""
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError("an integer is required for the axis, got a bool")
    index = operator.index(axis)  # "'float' object cannot be interpreted as an integer"
    if not -ndim <= index < ndim:
        raise AxisError(index, ndim)
    return index % ndim if ndim else index


def normalize_axis(axis: AxisLike, ndim: int) -> tuple[int, ...]:
    """`axis` (None, int, or sequence of ints) as a sorted tuple of non-negative axes.

    None means every axis. Like NumPy, a 0-d input accepts the int axes 0 and
    -1 (reducing nothing). Raises AxisError for an axis out of range and
    ValueError for a repeated one.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (list, tuple)):
        axes = [_axis_index(a, ndim) for a in axis]
        if len(set(axes)) != len(axes):
            raise ValueError("duplicate value in 'axis'")
        return tuple(sorted(axes))
    if isinstance(axis, Variable):
        raise TypeError(f"the axis must be known when the graph is built, got the Variable {axis}")
    if ndim == 0 and not isinstance(axis, (bool, np.bool_)) and operator.index(axis) in (0, -1):
        return ()
    return (_axis_index(axis, ndim),)


def normalize_single_axis(axis: _Any, ndim: int) -> int | None:
    """A single axis (or None) for argmax/cumsum-like functions; 0-d inputs act as 1-d.

    A tuple raises numpy's TypeError ("'tuple' object cannot be interpreted as
    an integer"); on a 0-d input, axes 0 and -1 mean None.
    """
    if axis is None:
        return None
    if isinstance(axis, Variable):
        raise TypeError(f"the axis must be known when the graph is built, got the Variable {axis}")
    index = _axis_index(axis, builtins.max(ndim, 1))
    return None if ndim == 0 else index


def op_axis(axis: AxisLike) -> tuple[int, ...] | None:
    """The `axis` property of an Op: None, or a sorted tuple of distinct non-negative ints."""
    if axis is None:
        return None
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, (bool, np.bool_)):
        axis = (axis,)
    try:
        axes = tuple(int(operator.index(a)) for a in axis)
    except TypeError:
        raise TypeError(
            f"axis must be None or a tuple of non-negative ints, got {axis!r}"
        ) from None
    if builtins.any(a < 0 for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"axis must be None or distinct non-negative ints, got {axis!r}")
    return tuple(sorted(axes))


def canonical_axes(axes: tuple[int, ...], ndim: int) -> tuple[int, ...] | None:
    """None when `axes` covers every dimension (one Op for "reduce everything")."""
    return None if len(axes) == ndim else axes


def _check_axes(axis: tuple[int, ...] | None, x: Variable) -> tuple[int, ...]:
    ndim = x.type.ndim
    if axis is None:
        return tuple(range(ndim))
    for a in axis:
        if a >= ndim:
            raise AxisError(a, ndim)
    return axis


def reduced_shape(shape: Sequence[_Any], axes: tuple[int, ...]) -> tuple[_Any, ...]:
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def keep_reduced_dims(out: Variable, ndim: int, axes: tuple[int, ...]) -> Variable:
    """`out` (the reduction of a rank-`ndim` tensor over `axes`) with length-1 dims put back."""
    if not axes:
        return out
    pattern: list[int | str] = []
    kept = 0
    for i in range(ndim):
        if i in axes:
            pattern.append("x")
        else:
            pattern.append(kept)
            kept += 1
    return DimShuffle(out.type.ndim, pattern)(out)


def lengths_product(lengths: Sequence[_Any]) -> _Any:
    """The product of lengths (ints or int64 0-d Variables): an int when all are ints."""
    from workbench.core.tensor.math import mul

    static = math.prod(int(n) for n in lengths if not isinstance(n, Variable))
    symbolic = [n for n in lengths if isinstance(n, Variable)]
    if not symbolic:
        return static
    result = symbolic[0]
    for n in symbolic[1:]:
        result = mul(result, n)
    return result if static == 1 else mul(result, static)


def _count(x: Variable, axes: tuple[int, ...]) -> _Any:
    """How many elements a reduction of `x` over `axes` combines (int or int64 Variable)."""
    from workbench.core.tensor.shape import shape_i

    return lengths_product(
        [x.type.shape[a] if x.type.shape[a] is not None else shape_i(x, a) for a in axes]
    )


# -- gradient helpers (shared with special, extra_ops and linalg) -------------------


def input_grad_dtype(x: Variable, fallback: Dtype) -> Dtype:
    """The dtype of a gradient with respect to `x`: x's own when it is float or complex,
    else `fallback` (gradients never carry integer dtypes, seed 003)."""
    dtype = x.type.dtype
    if dtype.is_float or dtype.is_complex:
        return dtype
    return fallback if (fallback.is_float or fallback.is_complex) else default_float_dtype()


def as_grad_of(g: Variable, x: Variable) -> Variable:
    """`g` in the dtype of the gradient of `x` (see `input_grad_dtype`), so each Op returns
    gradients of its input's type (a float32 input never gets a float64 gradient).
    A complex `g` for a real `x` stays complex (as `grad` does: no silent loss of
    the imaginary part)."""
    from workbench.core.tensor.basic import cast

    if g.type.dtype.is_complex and not x.type.dtype.is_complex:
        return g
    return cast(g, input_grad_dtype(x, g.type.dtype))


def is_int_like(var: Variable) -> bool:
    """Whether `var` holds integers or booleans (so no gradient flows through it)."""
    dtype = var.type.dtype
    return not (dtype.is_float or dtype.is_complex)


def conj_if_complex(v: Variable) -> Variable:
    """conj(v) for complex `v`, `v` itself otherwise: the gradient convention of the
    scalar Ops (a contribution is ``gz * conj(f'(z))``), without a no-op node for reals."""
    if not v.type.dtype.is_complex:
        return v
    from workbench.core.tensor.math import conj

    return conj(v)


def broadcast_back(g: Variable, x: Variable, axes: tuple[int, ...]) -> Variable:
    """`g` (a reduction of something shaped like `x` over `axes`) spread back to x's shape:
    the reduced axes re-inserted as length-1 dims, then an `Alloc` to ``x.shape``."""
    from workbench.core.tensor.creation import alloc
    from workbench.core.tensor.shape import shape_tuple

    expanded = keep_reduced_dims(g, x.type.ndim, axes)
    if not axes:
        return expanded
    return alloc(expanded, *shape_tuple(x))


# -- dtype rules --------------------------------------------------------------------


def accumulate_dtype(dtype: Dtype) -> Dtype:
    """The dtype NumPy 2 sums/multiplies `dtype` in (on a 64-bit platform).

    bool and signed ints narrower than 64 bits give int64, unsigned ints
    uint64; floats and complex keep their dtype.
    """
    if dtype.is_bool or dtype.is_signed_int:
        return as_dtype("int64")
    if dtype.is_uint:
        return as_dtype("uint64")
    return dtype


def _float_out(dtype: Dtype) -> Dtype:
    """Floats and complex keep their dtype; bool and ints give the default float."""
    return dtype if dtype.is_float or dtype.is_complex else default_float_dtype()


# -- CAReduce -----------------------------------------------------------------------


class CAReduce(Op):
    """Reduce a tensor over `axis` (sorted non-negative ints, None = all) with a binary
    commutative and associative scalar Op, by its numpy ufunc's ``reduce``.

    `dtype` is the output dtype (default: the scalar Op's output dtype for the
    input's dtype, or the rule of the subclass); `acc_dtype` the dtype the
    ufunc accumulates in (default: the output dtype). Prints as
    ``CAReduce{maximum, axes=(0,)}``; subclasses as ``Sum{axes=(0, 2)}``.
    """

    __props__ = ("scalar_op", "axis", "dtype", "acc_dtype")
    #: numpy's ``initial`` of the reduce: None, or the value folded in first (`Max`/`Min`)
    initial: int | float | None = None

    def __init__(self, scalar_op: ScalarOp, axis: AxisLike = None, dtype: _Any = None,
                 acc_dtype: _Any = None) -> None:
        if not isinstance(scalar_op, ScalarOp) or scalar_op.nin != 2 or scalar_op.nout != 1:
            raise TypeError(f"CAReduce needs a binary scalar Op, got {scalar_op!r}")
        # the ufunc only if the class computing the Op names it (a subclass overriding
        # `impl` does not reduce with its parent's ufunc)
        ufunc = getattr(np, declared_attribute(type(scalar_op), "nfunc") or "", None)
        if not isinstance(ufunc, np.ufunc) or not scalar_op.associative:
            raise TypeError(
                f"CAReduce needs an associative scalar Op with a numpy ufunc, got {scalar_op}"
            )
        self.scalar_op = scalar_op
        self.ufunc = ufunc
        self.axis = op_axis(axis)
        self.dtype = None if dtype is None else as_dtype(dtype)
        self.acc_dtype = None if acc_dtype is None else as_dtype(acc_dtype)

    def __init_subclass__(cls, **kwargs: _Any) -> None:
        own_str = "__str__" in cls.__dict__
        super().__init_subclass__(**kwargs)
        if not own_str:  # keep CAReduce's tidy form rather than the generated one
            cls.__str__ = CAReduce.__str__  # type: ignore[method-assign]

    def __str__(self) -> str:
        parts = [f"axes={self.axis}"]
        if type(self) is CAReduce:
            parts.insert(0, str(self.scalar_op))
        if self.dtype is not None:
            parts.append(f"dtype={self.dtype}")
        if self.acc_dtype is not None:
            parts.append(f"acc_dtype={self.acc_dtype}")
        if self.initial is not None:
            parts.append(f"initial={self.initial}")
        return f"{type(self).__name__}{{{', '.join(parts)}}}"

    # -- dtypes (subclasses override the defaults) -------------------------------
    def default_dtype(self, dtype: Dtype) -> Dtype:
        """The output dtype when none is given, for an input of `dtype`."""
        return self.scalar_op.output_dtypes([dtype, dtype])[0]

    def output_dtype(self, dtype: Dtype) -> Dtype:
        return self.dtype if self.dtype is not None else self.default_dtype(dtype)

    def prepare_value(self, x: np.ndarray) -> np.ndarray:
        """The input as the ufunc should see it (All/Any read booleans)."""
        return x

    # -- building and running -------------------------------------------------------
    def make_node(self, x: _Any) -> Apply:
        x = as_tensor_variable(x)
        axes = _check_axes(self.axis, x)
        try:
            out_dtype = self.output_dtype(x.type.dtype)
        except TypeError as exc:
            raise TypeError(f"{self}: {exc}") from None
        if self.initial is not None:
            _check_initial(self, self.acc_dtype or out_dtype)
        out = TensorType(out_dtype, reduced_shape(x.type.shape, axes))()
        return Apply(self, [x], [out])

    def perform(self, node: Apply, inputs: Sequence[_Any], output_storage: list[list[_Any]]
                ) -> None:
        x = self.prepare_value(np.asarray(inputs[0]))
        out_dtype = node.outputs[0].type.dtype.numpy
        acc = self.acc_dtype.numpy if self.acc_dtype is not None else out_dtype
        with np.errstate(over="ignore", invalid="ignore"):
            extra = {} if self.initial is None else {"initial": self.initial}
            result = np.asarray(self.ufunc.reduce(x, axis=self.axis, dtype=acc, **extra))
        if result.dtype != out_dtype:
            result = result.astype(out_dtype)
        elif np.may_share_memory(result, inputs[0]):
            result = result.copy()
        output_storage[0][0] = result

    def infer_shape(self, fgraph: _Any, node: Apply, input_shapes: list[tuple[_Any, ...]]
                    ) -> list[tuple[_Any, ...]]:
        axes = _check_axes(self.axis, node.inputs[0])
        return [reduced_shape(input_shapes[0], axes)]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """One operation per input element."""
        return float(math.prod(inputs[0]))

    # -- differentiation ------------------------------------------------------------
    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Gradient by the scalar Op: add (`Sum`), mul (`Prod`), maximum/minimum
        (`Max`/`Min`). An integer or bool output (`All`, `Any`, integer sums) is a
        step function: zeros, in a float dtype, whatever the output gradient."""
        (x,), (out,), (gz,) = inputs, outputs, output_grads
        if is_int_like(out):
            from workbench.core.tensor.join import float_zeros_like

            return [float_zeros_like(x)]
        axes = _check_axes(self.axis, x)
        op = self.scalar_op
        if isinstance(op, smath.Add):
            return [broadcast_back(as_grad_of(gz, x), x, axes)]
        if isinstance(op, smath.Mul):
            return [as_grad_of(_prod_grad(x, out, gz, axes), x)]
        if isinstance(op, (smath.Maximum, smath.Minimum)):
            return [as_grad_of(_extremum_grad(x, out, gz, axes), x)]
        return [grad_not_implemented(self, 0, x, f"no gradient rule for a reduction by {op}")]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """Sum is linear: the same sum of the evaluation point. Other reductions use the
        double-L_op construction of `Rop` (MethodNotDefined here)."""
        if eval_points[0] is None:
            return [None]
        if isinstance(self.scalar_op, smath.Add):
            return [self(eval_points[0])]
        raise MethodNotDefined(f"{self} has no R_op; Rop falls back to two L_ops")


class Sum(CAReduce):
    """Sum over `axis`; bool and small integers accumulate in int64 (uint64) like NumPy 2."""

    __props__ = ("axis", "dtype", "acc_dtype")

    def __init__(self, axis: AxisLike = None, dtype: _Any = None, acc_dtype: _Any = None) -> None:
        super().__init__(smath.add, axis, dtype, acc_dtype)

    def default_dtype(self, dtype: Dtype) -> Dtype:
        return accumulate_dtype(dtype)


class Prod(CAReduce):
    """Product over `axis`; dtypes as `Sum`."""

    __props__ = ("axis", "dtype", "acc_dtype")

    def __init__(self, axis: AxisLike = None, dtype: _Any = None, acc_dtype: _Any = None) -> None:
        super().__init__(smath.mul, axis, dtype, acc_dtype)

    def default_dtype(self, dtype: Dtype) -> Dtype:
        return accumulate_dtype(dtype)


def _initial_value(initial: _Any, op: str) -> int | float | None:
    """`initial` of a Max/Min as a plain Python int or float (None: no initial value)."""
    if initial is None:
        return None
    if isinstance(initial, (bool, np.bool_)) or not isinstance(
            initial, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op} initial must be None or a real number, got {initial!r}")
    return initial.item() if isinstance(initial, np.generic) else initial


def _check_initial(op: CAReduce, dtype: Dtype) -> None:
    """A TypeError unless `op.initial` is a value of `dtype` (0.5 is no int64)."""
    with np.errstate(all="ignore"):
        held = np.array(op.initial).astype(dtype.numpy)
    if not (held == op.initial or np.isnan(op.initial)):
        raise TypeError(f"{op}: initial {op.initial!r} is not a value of the input's "
                        f"dtype {dtype}")


class Max(CAReduce):
    """Maximum over `axis` (NaN propagates); keeps the dtype. An empty reduced axis
    raises numpy's ValueError at run time (maximum has no identity), unless `initial`
    is given: numpy's ``initial``, the value folded in first (an empty axis gives it)."""

    __props__ = ("axis", "initial")

    def __init__(self, axis: AxisLike = None, initial: int | float | None = None) -> None:
        super().__init__(smath.maximum, axis)
        self.initial = _initial_value(initial, "Max")

    def default_dtype(self, dtype: Dtype) -> Dtype:
        return dtype


class Min(CAReduce):
    """Minimum over `axis` (NaN propagates); keeps the dtype. See `Max`."""

    __props__ = ("axis", "initial")

    def __init__(self, axis: AxisLike = None, initial: int | float | None = None) -> None:
        super().__init__(smath.minimum, axis)
        self.initial = _initial_value(initial, "Min")

    def default_dtype(self, dtype: Dtype) -> Dtype:
        return dtype


class All(CAReduce):
    """Whether every element over `axis` is nonzero (bool; True for an empty axis)."""

    __props__ = ("axis",)

    def __init__(self, axis: AxisLike = None) -> None:
        super().__init__(smath.and_, axis)

    def default_dtype(self, dtype: Dtype) -> Dtype:
        return as_dtype("bool")

    def prepare_value(self, x: np.ndarray) -> np.ndarray:
        return x if x.dtype == np.bool_ else x.astype(bool)


class Any(CAReduce):
    """Whether some element over `axis` is nonzero (bool; False for an empty axis)."""

    __props__ = ("axis",)

    def __init__(self, axis: AxisLike = None) -> None:
        super().__init__(smath.or_, axis)

    def default_dtype(self, dtype: Dtype) -> Dtype:
        return as_dtype("bool")

    def prepare_value(self, x: np.ndarray) -> np.ndarray:
        return x if x.dtype == np.bool_ else x.astype(bool)


# -- argmax / argmin ----------------------------------------------------------------


class ArgReduce(Op):
    """Index (int64) of the extreme element along `axis`; None = of the flattened input."""

    abstract = True
    __props__ = ("axis",)
    numpy_function: _Any = None

    def __init__(self, axis: int | None = None) -> None:
        if axis is not None:
            if isinstance(axis, (bool, np.bool_)) or operator.index(axis) < 0:
                raise ValueError(f"{type(self).__name__} axis must be None or >= 0, got {axis!r}")
            axis = int(operator.index(axis))
        self.axis = axis

    def __str__(self) -> str:
        return f"{type(self).__name__}{{axis={self.axis}}}"

    def make_node(self, x: _Any) -> Apply:
        x = as_tensor_variable(x)
        axes = _check_axes(None if self.axis is None else (self.axis,), x)
        out = TensorType("int64", reduced_shape(x.type.shape, axes))()
        return Apply(self, [x], [out])

    def perform(self, node: Apply, inputs: Sequence[_Any], output_storage: list[list[_Any]]
                ) -> None:
        result = type(self).numpy_function(inputs[0], axis=self.axis)
        output_storage[0][0] = np.asarray(result, dtype=np.int64)

    def infer_shape(self, fgraph: _Any, node: Apply, input_shapes: list[tuple[_Any, ...]]
                    ) -> list[tuple[_Any, ...]]:
        if self.axis is None:
            return [()]
        return [reduced_shape(input_shapes[0], (self.axis,))]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """One comparison per input element."""
        return float(math.prod(inputs[0]))

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """An integer output: zero almost everywhere, so zeros (float) for the input.
        (The axis is a property, so there is no axis input to call undefined.)"""
        from workbench.core.tensor.join import float_zeros_like

        return [float_zeros_like(inputs[0])]


class Argmax(ArgReduce):
    """Index of the largest element along `axis` (the first one on ties; NaN wins)."""

    abstract = False
    __props__ = ("axis",)
    numpy_function = staticmethod(np.argmax)

    def __str__(self) -> str:
        return f"Argmax{{axis={self.axis}}}"


class Argmin(ArgReduce):
    """Index of the smallest element along `axis` (the first one on ties; NaN wins)."""

    abstract = False
    __props__ = ("axis",)
    numpy_function = staticmethod(np.argmin)

    def __str__(self) -> str:
        return f"Argmin{{axis={self.axis}}}"


def _prod_grad(x: Variable, out: Variable, gz: Variable, axes: tuple[int, ...]) -> Variable:
    """d prod / d x_i = product of the other elements, robust to zeros (as PyTensor).

    In a reduced slice with no zero it is ``prod / x_i``; with exactly one zero,
    the zero's position gets the product of the non-zero elements and the others
    get 0; with two zeros or more, every position gets 0. Built with switches on
    ``x == 0`` so no division by zero ever reaches the result.

    The first derivative is exact everywhere; its own derivative (second order)
    is exact away from zeros, but at an input exactly 0 the branch chosen by the
    switch misses the cross terms d(prod of the others)/d(the zero) (PyTensor
    has the same limit: its ProdWithoutZeros has no gradient).
    """
    from workbench.core.tensor.math import and_, eq, mul, switch, true_div

    ndim = x.type.ndim
    gz_e = keep_reduced_dims(gz, ndim, axes)
    out_e = keep_reduced_dims(out, ndim, axes)
    is_zero = eq(x, 0)
    n_zeros = sum(is_zero, axes, keepdims=True)
    safe_x = switch(is_zero, 1, x)
    no_zero = mul(gz_e, conj_if_complex(true_div(out_e, safe_x)))
    at_the_zero = mul(gz_e, conj_if_complex(prod(safe_x, axes, keepdims=True)))  # non-zeros
    one_zero = switch(and_(eq(n_zeros, 1), is_zero), at_the_zero, 0)
    return switch(eq(n_zeros, 0), no_zero, one_zero)


def _extremum_grad(x: Variable, out: Variable, gz: Variable, axes: tuple[int, ...]) -> Variable:
    """The output gradient routed to the positions equal to the max (min). Ties are not
    split: every tied position receives the whole gradient (PyTensor's rule), so the
    gradient of a max with k tied maxima sums to k times the output gradient."""
    from workbench.core.tensor.math import eq, mul

    ndim = x.type.ndim
    return mul(eq(x, keep_reduced_dims(out, ndim, axes)), keep_reduced_dims(gz, ndim, axes))


# -- functions ----------------------------------------------------------------------


def _reduce(op_class: type[CAReduce], x: TensorLike, axis: AxisLike, keepdims: bool,
            **kwargs: _Any) -> Variable:
    x = as_tensor_variable(x)
    ndim = x.type.ndim
    axes = normalize_axis(axis, ndim)
    out = op_class(axis=canonical_axes(axes, ndim), **kwargs)(x)
    return keep_reduced_dims(out, ndim, axes) if keepdims else out


def sum(x: TensorLike, axis: AxisLike = None, keepdims: bool = False, dtype: _Any = None, *,
        acc_dtype: _Any = None) -> Variable:
    """Sum of the elements over `axis` (None: all), as ``numpy.sum``.

    bool and integers narrower than 64 bits accumulate in int64 (unsigned:
    uint64) unless `dtype` is given; `acc_dtype` may ask for a wider accumulator.
    """
    return _reduce(Sum, x, axis, keepdims, dtype=dtype, acc_dtype=acc_dtype)


def prod(x: TensorLike, axis: AxisLike = None, keepdims: bool = False, dtype: _Any = None, *,
         acc_dtype: _Any = None) -> Variable:
    """Product of the elements over `axis`, as ``numpy.prod`` (dtypes as `sum`)."""
    return _reduce(Prod, x, axis, keepdims, dtype=dtype, acc_dtype=acc_dtype)


def max(x: TensorLike, axis: AxisLike = None, keepdims: bool = False,
        initial: int | float | None = None) -> Variable:
    """Largest element over `axis`, as ``numpy.max``: an empty axis gives `initial`, or an
    error at run time when there is none."""
    return _reduce(Max, x, axis, keepdims, initial=initial)


def min(x: TensorLike, axis: AxisLike = None, keepdims: bool = False,
        initial: int | float | None = None) -> Variable:
    """Smallest element over `axis`, as ``numpy.min``: an empty axis gives `initial`, or an
    error at run time when there is none."""
    return _reduce(Min, x, axis, keepdims, initial=initial)


def all(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Variable:
    """Whether all elements over `axis` are nonzero (bool), as ``numpy.all``."""
    return _reduce(All, x, axis, keepdims)


def any(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Variable:
    """Whether any element over `axis` is nonzero (bool), as ``numpy.any``."""
    return _reduce(Any, x, axis, keepdims)


def mean(x: TensorLike, axis: AxisLike = None, keepdims: bool = False, dtype: _Any = None
         ) -> Variable:
    """Mean over `axis`: ``sum / count`` with the count read from the (symbolic) shape.

    Integer and bool inputs give the default float dtype, floats keep theirs
    (float16 and bfloat16 accumulate in float32, like NumPy's float16). An
    empty axis gives NaN.
    """
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.math import true_div

    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.type.ndim)
    out_dtype = as_dtype(dtype) if dtype is not None else _float_out(x.type.dtype)
    acc = as_dtype("float32") if out_dtype in (float16, bfloat16) else out_dtype
    # An explicit dtype only where it differs from Sum's own rule (a plain Sum merges better).
    total = sum(x, axes, keepdims=keepdims,
                dtype=None if accumulate_dtype(x.type.dtype) == acc else acc)
    count = _count(x, axes)
    if isinstance(count, Variable) and not total.type.dtype.is_int:
        count = cast(count, total.type.dtype)  # an int64 count would upcast float32
    return cast(true_div(total, count), out_dtype)


def var(x: TensorLike, axis: AxisLike = None, ddof: int | float = 0, keepdims: bool = False
        ) -> Variable:
    """Variance over `axis`: ``sum(|x - mean|**2) / max(count - ddof, 0)``, as ``numpy.var``.

    Integer inputs give the default float dtype; complex inputs a real result.
    """
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.math import conj, maximum, mul, real, sqr, sub, true_div

    x = as_tensor_variable(x)
    if isinstance(ddof, Variable) or not isinstance(ddof, (int, float, np.integer, np.floating)):
        raise TypeError(f"ddof must be a number, got {ddof!r}")
    axes = normalize_axis(axis, x.type.ndim)
    xf = cast(x, _float_out(x.type.dtype))
    deviation = sub(xf, mean(xf, axes, keepdims=True))
    if xf.type.dtype.is_complex:
        squares = real(mul(deviation, conj(deviation)))
    else:
        squares = sqr(deviation)
    total = sum(squares, axes, keepdims=keepdims)
    count = _count(x, axes)
    if isinstance(count, Variable):
        if ddof != 0:
            count = maximum(sub(count, ddof), 0)
        denominator = cast(count, total.type.dtype)
    else:
        denominator = builtins.max(count - ddof, 0)
    return true_div(total, denominator)


def std(x: TensorLike, axis: AxisLike = None, ddof: int | float = 0, keepdims: bool = False
        ) -> Variable:
    """Standard deviation over `axis`: ``sqrt(var(x, axis, ddof))``, as ``numpy.std``."""
    from workbench.core.tensor.math import sqrt

    return sqrt(var(x, axis=axis, ddof=ddof, keepdims=keepdims))


def _arg_reduce(op_class: type[ArgReduce], x: TensorLike, axis: _Any, keepdims: bool
                ) -> Variable:
    x = as_tensor_variable(x)
    ndim = x.type.ndim
    if isinstance(axis, (list, tuple)) and len(axis) != 1:
        axes = normalize_axis(axis, ndim)
        out = _arg_reduce_axes(op_class, x, axes)
        return keep_reduced_dims(out, ndim, axes) if keepdims else out
    if isinstance(axis, (list, tuple)):
        axis = axis[0]
    index = normalize_single_axis(axis, ndim)
    out = op_class(index)(x)
    if not keepdims:
        return out
    return keep_reduced_dims(out, ndim, tuple(range(ndim)) if index is None else (index,))


def _arg_reduce_axes(op_class: type[ArgReduce], x: Variable, axes: tuple[int, ...]
                     ) -> Variable:
    """The index of the extreme element over several axes, as PyTensor gives it: into
    the C-order flattening of those axes (the kept axes moved first, the reduced ones
    merged into a last axis that the single-axis Op reduces)."""
    from workbench.core.tensor.reshape import flatten

    ndim = x.type.ndim
    kept = [d for d in range(ndim) if d not in axes]
    if not axes:  # nothing reduced: every element is its own extreme, at index 0
        return op_class(ndim)(DimShuffle(ndim, [*range(ndim), "x"])(x))
    order = kept + list(axes)
    moved = x if order == list(range(ndim)) else DimShuffle(ndim, order)(x)
    return op_class(len(kept))(flatten(moved, len(kept) + 1))


def argmax(x: TensorLike, axis: _Any = None, keepdims: bool = False) -> Variable:
    """Index (int64) of the largest element along `axis`, as ``numpy.argmax``.

    With axis None the index is into the flattened input; with a tuple or list of
    axes (as PyTensor allows), into the C-order flattening of those axes.
    """
    return _arg_reduce(Argmax, x, axis, keepdims)


def argmin(x: TensorLike, axis: _Any = None, keepdims: bool = False) -> Variable:
    """Index (int64) of the smallest element along `axis`, as ``numpy.argmin`` (a tuple
    or list of axes as for `argmax`)."""
    return _arg_reduce(Argmin, x, axis, keepdims)


def max_and_argmax(x: TensorLike, axis: _Any = None, keepdims: bool = False
                   ) -> tuple[Variable, Variable]:
    """``(max(x, axis), argmax(x, axis))`` for an axis, a tuple or list of axes, or None
    (flattened)."""
    x = as_tensor_variable(x)
    if not isinstance(axis, (list, tuple)):
        normalize_single_axis(axis, x.type.ndim)  # the argmax rules for `axis`
    return max(x, axis, keepdims), argmax(x, axis, keepdims)
