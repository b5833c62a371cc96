"""Tensor Variables and constants, their Python operators, and `as_tensor_variable`.

`TensorVariable` is what users manipulate: ``x + 2``, ``x.T``, ``x.astype('int8')``
build graph nodes. Equality stays identity (``x == y`` is not elementwise:
Variables must stay hashable dict keys); use `eq`/`neq` for elementwise tests.

Python numbers mixed with tensors are *weak* (NEP 50): they adopt the tensor's
dtype when the kinds allow, so ``float32_x + 2.5`` is float32 and ``int8_x + 1``
is int8 (`Elemwise.make_node` does this). On their own, `constant` gives Python
ints the smallest integer dtype holding them (``constant(2)`` is int8, as
PyTensor does), Python floats the default float dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.dtypes import Dtype, as_dtype
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.scalar.basic import (
    ScalarType,
    convert_data,
    is_python_scalar,
    python_constant_dtype,
)
from workbench.core.tensor.type import TensorType, format_shape


def _convertible(value: Any) -> bool:
    """Whether a binary operator should try `value` (else it returns NotImplemented)."""
    return isinstance(value, (Variable, np.ndarray, np.generic, list, tuple)) or is_python_scalar(
        value
    )


class _TensorOperators:
    """Properties, methods and Python operators shared by tensor Variables and constants."""

    __slots__ = ()
    # numpy must not turn `ndarray + variable` into an object array: deferring to
    # the Variable's reflected operator builds a graph node instead.
    __array_ufunc__ = None
    __array_priority__ = 1000

    # -- static information -----------------------------------------------------
    @property
    def dtype(self) -> Dtype:
        return self.type.dtype  # type: ignore[attr-defined]

    @property
    def ndim(self) -> int:
        return self.type.ndim  # type: ignore[attr-defined]

    @property
    def broadcastable(self) -> tuple[bool, ...]:
        return self.type.broadcastable  # type: ignore[attr-defined]

    @property
    def shape(self) -> Variable:
        """The symbolic shape: an int64 vector Variable (``x.type.shape`` is the static one)."""
        from workbench.core.tensor.shape import shape

        return shape(self)

    # -- methods ------------------------------------------------------------------
    def dimshuffle(self, *pattern: Any) -> Variable:
        """Reorder, add ('x') or drop (length-1) dimensions, e.g. ``x.dimshuffle('x', 1, 0)``."""
        from workbench.core.tensor.elemwise import dimshuffle

        if len(pattern) == 1 and isinstance(pattern[0], (list, tuple)):
            pattern = tuple(pattern[0])
        return dimshuffle(self, pattern)

    def transpose(self, *axes: Any) -> Variable:
        """Permute the dimensions (reverse them when no axes are given)."""
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(
                f"transpose axes {axes} are not a permutation of the {self.ndim} dimensions of "
                f"{self}"
            )
        return self.dimshuffle(*axes)

    @property
    def T(self) -> Variable:
        return self.transpose()

    def astype(self, dtype: Any) -> Variable:
        """This tensor converted to `dtype` (itself if it already has that dtype)."""
        from workbench.core.tensor.basic import cast

        return cast(self, dtype)

    # -- NumPy-style methods (each delegates to the module that owns the operation) --
    def sum(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Variable:
        from workbench.core.tensor.reduction import sum as sum_

        return sum_(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def prod(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Variable:
        from workbench.core.tensor.reduction import prod

        return prod(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def max(self, axis: Any = None, keepdims: bool = False) -> Variable:
        from workbench.core.tensor.reduction import max as max_

        return max_(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Variable:
        from workbench.core.tensor.reduction import min as min_

        return min_(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Variable:
        from workbench.core.tensor.reduction import all as all_

        return all_(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Variable:
        from workbench.core.tensor.reduction import any as any_

        return any_(self, axis=axis, keepdims=keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Variable:
        from workbench.core.tensor.reduction import mean

        return mean(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def var(self, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Variable:
        from workbench.core.tensor.reduction import var

        return var(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def std(self, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Variable:
        from workbench.core.tensor.reduction import std

        return std(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def argmax(self, axis: Any = None, keepdims: bool = False) -> Variable:
        from workbench.core.tensor.reduction import argmax

        return argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: Any = None, keepdims: bool = False) -> Variable:
        from workbench.core.tensor.reduction import argmin

        return argmin(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis: Any = None) -> Variable:
        from workbench.core.tensor.extra_ops import cumsum

        return cumsum(self, axis=axis)

    def cumprod(self, axis: Any = None) -> Variable:
        from workbench.core.tensor.extra_ops import cumprod

        return cumprod(self, axis=axis)

    def reshape(self, *shape: Any, ndim: int | None = None) -> Variable:
        from workbench.core.tensor.shape import reshape

        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return reshape(self, shape, ndim=ndim)

    def flatten(self, ndim: int = 1) -> Variable:
        from workbench.core.tensor.shape import flatten

        return flatten(self, ndim=ndim)

    def ravel(self) -> Variable:
        return self.flatten()

    def squeeze(self, axis: Any = None) -> Variable:
        from workbench.core.tensor.shape import squeeze

        return squeeze(self, axis=axis)

    def repeat(self, repeats: Any, axis: Any = None) -> Variable:
        from workbench.core.tensor.join import repeat

        return repeat(self, repeats, axis=axis)

    def dot(self, other: Any) -> Variable:
        from workbench.core.tensor.linalg import dot

        return dot(self, other)

    def norm(self, L: Any, axis: Any = None, keepdims: bool = False) -> Variable:  # noqa: N803
        """PyTensor's ``x.norm(L, axis)``: the L-norm of the entries over `axis` (all of
        them when None), i.e. ``wt.linalg.vector_norm(x, L, axis, keepdims)``."""
        from workbench.core.tensor.linalg.functions import vector_norm

        return vector_norm(self, L, axis, keepdims)

    def __matmul__(self, other: Any) -> Any:
        if not _convertible(other):
            return NotImplemented
        from workbench.core.tensor.linalg import matmul

        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        if not _convertible(other):
            return NotImplemented
        from workbench.core.tensor.linalg import matmul

        return matmul(other, self)

    def clip(self, a_min: Any, a_max: Any) -> Variable:
        from workbench.core.tensor.math import clip

        return clip(self, a_min, a_max)

    def round(self, decimals: int = 0) -> Variable:
        """Halves to even, at `decimals` decimal places (see array_utils.round)."""
        from workbench.core.tensor.math import round_half_to_even

        if decimals == 0:
            return round_half_to_even(self)
        from workbench.core.tensor.array_utils import round

        return round(self, decimals)

    # -- sorting, searching and indexing (array_utils.py, sort.py, counting.py) ----------
    def sort(self, axis: Any = -1, kind: str | None = None) -> Variable:
        from workbench.core.tensor.sort import sort

        return sort(self, axis=axis, kind=kind)

    def argsort(self, axis: Any = -1, kind: str | None = None) -> Variable:
        from workbench.core.tensor.sort import argsort

        return argsort(self, axis=axis, kind=kind)

    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None) -> Variable:
        from workbench.core.tensor.sort import searchsorted

        return searchsorted(self, v, side=side, sorter=sorter)

    def nonzero(self) -> list[Variable]:
        from workbench.core.tensor.counting import nonzero

        return nonzero(self)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Variable:
        from workbench.core.tensor.array_utils import diagonal

        return diagonal(self, offset, axis1, axis2)

    def take(self, indices: Any, axis: Any = None, mode: str = "raise") -> Variable:
        from workbench.core.tensor.array_utils import take

        return take(self, indices, axis=axis, mode=mode)

    def conj(self) -> Variable:
        from workbench.core.tensor.math import conj

        return conj(self)

    @property
    def real(self) -> Variable:
        from workbench.core.tensor.math import real

        return real(self)

    @property
    def imag(self) -> Variable:
        from workbench.core.tensor.math import imag

        return imag(self)

    def __getitem__(self, key: Any) -> Variable:
        from workbench.core.tensor.subtensor import getitem

        return getitem(self, key)

    # -- Python protocol ----------------------------------------------------------
    def __len__(self) -> int:
        raise TypeError(
            f"len() of a symbolic tensor is unknown until the graph runs; use x.shape[0] "
            f"for a symbolic length or x.type.shape[0] for the static one "
            f"({format_shape(self.type.shape)} here)"  # type: ignore[attr-defined]
        )

    def __bool__(self) -> bool:
        raise TypeError(
            "a symbolic tensor has no truth value: its value is only known when the graph "
            "runs. Use switch(cond, a, b) for a symbolic choice, or `is` to compare Variables"
        )

    def __iter__(self) -> Any:
        raise TypeError(
            "a symbolic tensor cannot be iterated over: its length is only known when the "
            "graph runs"
        )

    # -- operators ----------------------------------------------------------------
    def _apply(self, name: str, *args: Any) -> Any:
        if not all(_convertible(a) for a in args):
            return NotImplemented
        from workbench.core.tensor import math as tmath

        return getattr(tmath, name)(*args)

    def __add__(self, other: Any) -> Any: return self._apply("add", self, other)
    def __radd__(self, other: Any) -> Any: return self._apply("add", other, self)
    def __sub__(self, other: Any) -> Any: return self._apply("sub", self, other)
    def __rsub__(self, other: Any) -> Any: return self._apply("sub", other, self)
    def __mul__(self, other: Any) -> Any: return self._apply("mul", self, other)
    def __rmul__(self, other: Any) -> Any: return self._apply("mul", other, self)
    def __truediv__(self, other: Any) -> Any: return self._apply("true_div", self, other)
    def __rtruediv__(self, other: Any) -> Any: return self._apply("true_div", other, self)
    def __floordiv__(self, other: Any) -> Any: return self._apply("floor_div", self, other)
    def __rfloordiv__(self, other: Any) -> Any: return self._apply("floor_div", other, self)
    def __mod__(self, other: Any) -> Any: return self._apply("mod", self, other)
    def __rmod__(self, other: Any) -> Any: return self._apply("mod", other, self)
    def __pow__(self, other: Any) -> Any: return self._apply("pow", self, other)
    def __rpow__(self, other: Any) -> Any: return self._apply("pow", other, self)
    def __and__(self, other: Any) -> Any: return self._apply("and_", self, other)
    def __rand__(self, other: Any) -> Any: return self._apply("and_", other, self)
    def __or__(self, other: Any) -> Any: return self._apply("or_", self, other)
    def __ror__(self, other: Any) -> Any: return self._apply("or_", other, self)
    def __xor__(self, other: Any) -> Any: return self._apply("xor", self, other)
    def __rxor__(self, other: Any) -> Any: return self._apply("xor", other, self)
    def __lt__(self, other: Any) -> Any: return self._apply("lt", self, other)
    def __le__(self, other: Any) -> Any: return self._apply("le", self, other)
    def __gt__(self, other: Any) -> Any: return self._apply("gt", self, other)
    def __ge__(self, other: Any) -> Any: return self._apply("ge", self, other)
    def __neg__(self) -> Any: return self._apply("neg", self)
    def __abs__(self) -> Any: return self._apply("abs", self)
    def __invert__(self) -> Any: return self._apply("invert", self)

    def __pos__(self) -> Any:
        return self

    # `==` and `!=` are deliberately not overloaded: they keep Python's identity
    # semantics so Variables stay usable as dict keys and set members.


class TensorVariable(_TensorOperators, Variable):
    """A Variable whose Type is a TensorType."""

    __slots__ = ()


class TensorConstant(_TensorOperators, Constant):
    """A constant array in a graph; prints as ``TensorConstant{2.0}``."""

    __slots__ = ()


TensorType.variable_type = TensorVariable
TensorType.constant_type = TensorConstant


def _constant_array(value: Any, dtype: Any) -> np.ndarray:
    """`value` as a fresh array of the requested dtype (or the inferred one)."""
    if isinstance(value, Variable):
        raise TypeError(f"constant() needs data, got the symbolic variable {value}")
    if dtype is not None:
        d = as_dtype(dtype)
        if isinstance(value, (np.ndarray, np.generic)):
            return np.array(convert_data(value, d, True, f"constant of dtype {d}"), copy=True)
        try:  # an explicit dtype converts Python data, but never wraps integers around
            return np.array(value, dtype=d.numpy)
        except OverflowError as exc:
            raise OverflowError(f"constant of dtype {d}: {exc}") from None
        except ValueError as exc:
            raise TypeError(f"cannot make a constant of dtype {d} from {value!r}: {exc}") from None
    if isinstance(value, (np.ndarray, np.generic)):
        try:
            as_dtype(value.dtype)
        except TypeError:
            raise TypeError(f"constant() needs numeric data, got dtype {value.dtype}") from None
        return np.array(value, copy=True)
    d = python_constant_dtype(value)
    return np.array(value, dtype=d.numpy)


def constant(value: Any, name: str | None = None, ndim: int | None = None,
             dtype: Any = None) -> TensorConstant:
    """A TensorConstant holding a copy of `value` (number, nested list or array).

    Without `dtype`, numpy data keeps its dtype and Python data follows
    `python_constant_dtype` (ints: the smallest integer dtype, floats: the
    default float). `ndim` left-pads length-1 dimensions (or removes leading
    ones) to reach that rank. The static shape is the array's shape.
    """
    arr = _constant_array(value, dtype)
    if ndim is not None:
        if arr.ndim < ndim:
            arr = arr.reshape((1,) * (ndim - arr.ndim) + arr.shape)
        while arr.ndim > ndim and arr.shape[0] == 1:
            arr = arr.reshape(arr.shape[1:])
        if arr.ndim != ndim:
            raise ValueError(f"cannot make a constant of rank {ndim} from shape {arr.shape}")
    ttype = TensorType(as_dtype(arr.dtype), arr.shape)
    return TensorConstant(ttype, arr, name=name)


def as_tensor_variable(x: Any, name: str | None = None, ndim: int | None = None,
                       dtype: Any = None) -> Variable:
    """`x` as a tensor Variable.

    Tensor Variables are returned as they are (cast when `dtype` differs,
    reshaped by DimShuffle when `ndim` differs: leading length-1 dimensions
    are added or dropped); an Apply gives its default output; numbers, lists
    and arrays become constants (see `constant`). Raises TypeError for
    anything else, e.g. a Variable of another Type.
    """
    if isinstance(x, Apply):
        x = x.default_output()
    if isinstance(x, Variable):
        if isinstance(x.type, ScalarType):
            raise TypeError(
                f"{x} is a scalar Variable ({x.type}); scalar graphs are used inside "
                "Composite, not mixed with tensors"
            )
        if not isinstance(x.type, TensorType):
            raise TypeError(f"expected a tensor Variable, got {x} of type {x.type}")
        if dtype is not None and as_dtype(dtype) != x.type.dtype:
            from workbench.core.tensor.basic import cast

            x = cast(x, dtype)
        if ndim is not None and x.type.ndim != ndim:
            x = _to_ndim(x, ndim)
        if name is not None and x.name is None:
            x.name = name
        return x
    if isinstance(x, (str, bytes)):
        raise TypeError(f"cannot convert the string {x!r} to a tensor")
    if not (is_python_scalar(x) or isinstance(x, (np.ndarray, np.generic, list, tuple))):
        raise TypeError(
            f"cannot convert {type(x).__name__} object {x!r:.60} to a tensor Variable; "
            "expected a Variable, a number, a (nested) list or a numpy array"
        )
    return constant(x, name=name, ndim=ndim, dtype=dtype)


def _to_ndim(x: Variable, ndim: int) -> Variable:
    from workbench.core.tensor.elemwise import dimshuffle

    current = x.type.ndim
    if current < ndim:
        return dimshuffle(x, ("x",) * (ndim - current) + tuple(range(current)))
    extra = current - ndim
    if any(s != 1 for s in x.type.shape[:extra]):
        raise ValueError(
            f"cannot make {x} ({x.type}) of rank {ndim}: its leading dimensions "
            "are not all of static length 1"
        )
    return dimshuffle(x, tuple(range(extra, current)))
