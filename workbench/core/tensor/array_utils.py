"""NumPy's array utilities, built from the library's existing Ops.

Nothing here defines an Op: each function composes indexing, `switch`, `Join`,
`ARange` and elementwise math, so printing, static shapes, `infer_shape`,
gradients and every linker come from those Ops. The shapes the graphs take:

- ``diagonal(x, offset, axis1, axis2)``: the two axes moved last, then an
  advanced index ``[..., arange(L) + r0, arange(L) + c0]`` (NumPy's result
  order: the diagonal last); ``diag`` of a vector sets that index of a zero matrix.
- ``tril``/``triu``/``tri``: a boolean mask from two broadcast `arange`s and a
  `switch` (NaN and inf above the diagonal become 0, as in NumPy).
- ``take``/``take_along_axis``/``put_along_axis``: advanced indexing (and
  `set_subtensor`/`inc_subtensor`; `inc` accumulates repeated indices, as
  ``numpy.add.at``).
- ``flip``: a step -1 slice; ``roll``: a `Join` of two slices per axis.
- ``isclose``/``allclose``: NumPy 2's formula, computed in the floating dtype
  both inputs promote to (integers: float64).
- ``round``: `round_half_to_even` of ``x * 10**decimals``.

Each function takes tensors, NumPy arrays or numbers, and raises with a
message naming the argument, what it expects and what it got.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Constant, Variable
from workbench.core.tensor.basic import cast
from workbench.core.tensor.shape import normalize_axis, normalize_axis_tuple, shape_tuple
from workbench.core.tensor.variable import as_tensor_variable, constant

__all__ = [
    "allclose", "as_tensor", "diag", "diagonal", "flip", "isclose", "put_along_axis", "roll",
    "round", "take", "take_along_axis", "tri", "tril", "triu",
]  # fmt: skip

TensorLike = Any

#: PyTensor's name for `as_tensor_variable`, typed by habit.
as_tensor = as_tensor_variable


def _tensor(x: TensorLike, func: str, arg: str) -> Variable:
    try:
        return as_tensor_variable(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{func}: {arg} must be a tensor, an array or a number, got "
                        f"{type(x).__name__} ({exc})") from None


def _python_int(value: Any, func: str, arg: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{func}: {arg} must be a Python int, got {value!r} "
                        f"({type(value).__name__})")
    return int(value)


def _int_scalar(value: Any, func: str, arg: str) -> Any:
    """A Python int, or a 0-d integer tensor (kept symbolic)."""
    if isinstance(value, Variable):
        if value.type.ndim != 0 or not value.type.dtype.is_int:
            raise TypeError(f"{func}: {arg} must be an int or a 0-d integer tensor, got "
                            f"{value.type}")
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{func}: {arg} must be an int or a 0-d integer tensor, got "
                        f"{value!r} ({type(value).__name__})")
    return int(value)


def _static(n: Any) -> int | None:
    if isinstance(n, (int, np.integer)):
        return int(n)
    if isinstance(n, Constant):
        return int(n.data)
    return None


def _maximum(a: Any, b: Any) -> Any:
    if _static(a) is not None and _static(b) is not None:
        return max(_static(a), _static(b))
    from workbench.core.tensor.math import maximum

    return maximum(a, b)


def _minimum(a: Any, b: Any) -> Any:
    if _static(a) is not None and _static(b) is not None:
        return min(_static(a), _static(b))
    from workbench.core.tensor.math import minimum

    return minimum(a, b)


def _along(v: Variable, axis: int, ndim: int) -> Variable:
    """A vector `v` as a rank-`ndim` tensor whose only non-broadcast axis is `axis`."""
    from workbench.core.tensor.elemwise import dimshuffle

    return dimshuffle(v, ["x" if d != axis else 0 for d in range(ndim)])


def _arange(n: Any, start: Any = 0) -> Variable:
    from workbench.core.tensor.creation import arange

    return arange(n, dtype="int64") + start if _static(start) != 0 else arange(n, dtype="int64")


# -- diagonals ---------------------------------------------------------------------------


def _diagonal_index(n1: Any, n2: Any, offset: int) -> tuple[Variable, Variable]:
    """Row and column positions of the `offset` diagonal of an n1 x n2 matrix."""
    row0, col0 = max(0, -offset), max(0, offset)
    length = _maximum(_minimum(n1 - row0 if row0 else n1, n2 - col0 if col0 else n2), 0)
    return _arange(length, row0), _arange(length, col0)


def diagonal(x: TensorLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Variable:
    """numpy.diagonal: the `offset` diagonal of the (axis1, axis2) planes, as the last axis.

    ``offset`` > 0 is above the main diagonal, < 0 below. Differentiable in `x`
    (the gradient scatters into a zero array).
    """
    from workbench.core.tensor.elemwise import dimshuffle

    x = _tensor(x, "diagonal", "x")
    ndim = x.type.ndim
    if ndim < 2:
        raise ValueError(f"diagonal: x must have at least 2 dimensions, got {x.type}")
    offset = _python_int(offset, "diagonal", "offset")
    a1 = normalize_axis(axis1, ndim, "axis1")
    a2 = normalize_axis(axis2, ndim, "axis2")
    if a1 == a2:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same, both are {a1}")
    rest = [d for d in range(ndim) if d not in (a1, a2)]
    lengths = shape_tuple(x)
    rows, cols = _diagonal_index(lengths[a1], lengths[a2], offset)
    moved = dimshuffle(x, [*rest, a1, a2])
    return moved[(slice(None),) * len(rest) + (rows, cols)]


def diag(v: TensorLike, k: int = 0) -> Variable:
    """numpy.diag: of a vector, the square matrix with `v` on diagonal `k`; of a
    matrix, its diagonal `k`."""
    from workbench.core.tensor.creation import zeros
    from workbench.core.tensor.subtensor import set_subtensor

    v = _tensor(v, "diag", "v")
    k = _python_int(k, "diag", "k")
    if v.type.ndim == 2:
        return diagonal(v, k)
    if v.type.ndim != 1:
        raise ValueError(f"diag: v must be 1-d (to build a matrix) or 2-d (to read its "
                         f"diagonal), got {v.type}")
    (n,) = shape_tuple(v)
    size = n + abs(k)
    rows, cols = _diagonal_index(size, size, k)
    return set_subtensor(zeros((size, size), v.type.dtype)[rows, cols], v)


# -- triangles ----------------------------------------------------------------------------


def _lower_mask(n: Any, m: Any, k: Any) -> Variable:
    """Boolean n x m mask: True where column <= row + k."""
    from workbench.core.tensor.math import ge

    rows = _along(_arange(n), 0, 2)
    return ge(rows if _static(k) == 0 else rows + k, _along(_arange(m), 1, 2))


def tri(N: Any, M: Any = None, k: Any = 0, dtype: Any = None) -> Variable:
    """numpy.tri: an N x M array with ones at and below diagonal `k` (dtype: the
    default float dtype unless given)."""
    N = _int_scalar(N, "tri", "N")
    M = N if M is None else _int_scalar(M, "tri", "M")
    k = _int_scalar(k, "tri", "k")
    return cast(_lower_mask(N, M, k), dtypes.infer_dtype(dtype))


def _triangle(x: TensorLike, k: Any, func: str, lower: bool) -> Variable:
    from workbench.core.tensor.math import invert, switch

    x = _tensor(x, func, "m")
    if x.type.ndim < 1:
        raise ValueError(f"{func}: m must have at least 1 dimension, got {x.type}")
    k = _int_scalar(k, func, "k")
    lengths = shape_tuple(x)
    n, m = (lengths[0], lengths[0]) if x.type.ndim == 1 else lengths[-2:]
    # triu keeps column >= row + k: the complement of tril's mask at k - 1
    mask = _lower_mask(n, m, k) if lower else invert(_lower_mask(n, m, k - 1))
    return switch(mask, x, constant(np.zeros((), x.type.dtype.numpy)))


def tril(m: TensorLike, k: Any = 0) -> Variable:
    """numpy.tril: `m` with the entries above diagonal `k` of its last two axes set to 0
    (a vector is broadcast to a square matrix first, as in NumPy)."""
    return _triangle(m, k, "tril", lower=True)


def triu(m: TensorLike, k: Any = 0) -> Variable:
    """numpy.triu: `m` with the entries below diagonal `k` of its last two axes set to 0."""
    return _triangle(m, k, "triu", lower=False)


# -- comparisons ---------------------------------------------------------------------------


def isclose(a: TensorLike, b: TensorLike, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Variable:
    """numpy.isclose: ``|a - b| <= atol + rtol * |b|`` elementwise (infinities close only
    to themselves; NaNs to NaNs when `equal_nan`). A boolean tensor."""
    from workbench.core.tensor.math import abs, and_, eq, isfinite, isnan, le, or_

    ta, tb = _tensor(a, "isclose", "a"), _tensor(b, "isclose", "b")
    # a Python number is weak (NEP 50): isclose(float32 x, 0.1) compares in float32
    work = dtypes.result_type(dtypes.weak_or_dtype(a, ta.type.dtype),
                              dtypes.weak_or_dtype(b, tb.type.dtype), 1.0)
    x, y = cast(ta, work), cast(tb, work)
    close = or_(and_(le(abs(x - y), atol + rtol * abs(y)), isfinite(y)), eq(x, y))
    if equal_nan:
        close = or_(close, and_(isnan(x), isnan(y)))
    return close


def allclose(a: TensorLike, b: TensorLike, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Variable:
    """numpy.allclose: whether `isclose` holds everywhere (a 0-d boolean tensor)."""
    from workbench.core.tensor.reduction import all

    return all(isclose(a, b, rtol, atol, equal_nan))


# -- indexing -----------------------------------------------------------------------------

_TAKE_MODES = ("raise", "wrap", "clip")


def _int_indices(indices: TensorLike, func: str, error: type[Exception] = TypeError
                 ) -> Variable:
    indices = _tensor(indices, func, "indices")
    if not indices.type.dtype.is_int:
        raise error(f"{func}: indices must have an integer dtype, got {indices.type}")
    return indices


def take(a: TensorLike, indices: TensorLike, axis: int | None = None,
         mode: str = "raise") -> Variable:
    """numpy.take: the entries of `a` at `indices` along `axis` (None: of the flattened
    `a`). `mode` "raise" refuses out-of-range indices when run, "wrap" wraps them,
    "clip" clips them. Boolean indices are read as 0 and 1, as NumPy casts them; a 0-d
    `a` is a 1-d one for axis 0 or -1, as in NumPy."""
    from workbench.core.tensor.math import clip, mod
    from workbench.core.tensor.reshape import flatten

    a = _tensor(a, "take", "a")
    indices = _tensor(indices, "take", "indices")
    if indices.type.dtype.is_bool:
        indices = cast(indices, "int64")
    indices = _int_indices(indices, "take")
    if mode not in _TAKE_MODES:
        raise ValueError(f"take: mode must be one of {_TAKE_MODES}, got {mode!r}")
    if axis is None or (a.type.ndim == 0 and axis in (0, -1)):
        a, axis = flatten(a), 0
    axis = normalize_axis(axis, a.type.ndim, "axis")
    n = shape_tuple(a)[axis]
    if mode == "clip":
        indices = clip(indices, 0, n - 1)
    elif mode == "wrap":
        indices = mod(indices, n)
    return a[(slice(None),) * axis + (indices,)]


def _along_axis_index(arr: Variable, indices: Variable, axis: int) -> tuple[Variable, ...]:
    """NumPy's fancy index for take/put_along_axis: `indices` on `axis`, broadcast
    aranges elsewhere."""
    ndim = arr.type.ndim
    lengths = shape_tuple(arr)
    return tuple(indices if d == axis else _along(_arange(lengths[d]), d, ndim)
                 for d in range(ndim))


def _along_axis_args(func: str, arr: TensorLike, indices: TensorLike, axis: int | None
                     ) -> tuple[Variable, Variable, int]:
    from workbench.core.tensor.reshape import flatten

    arr = _tensor(arr, func, "arr")
    indices = _int_indices(indices, func, IndexError)  # NumPy's error, booleans included
    if axis is None:
        if indices.type.ndim != 1:
            raise ValueError(f"{func}: with axis=None, indices must be 1-d, got "
                             f"{indices.type}")
        return flatten(arr), indices, 0
    if indices.type.ndim != arr.type.ndim:
        raise ValueError(f"{func}: indices and arr must have the same number of dimensions, "
                         f"got indices {indices.type} and arr {arr.type}")
    return arr, indices, normalize_axis(axis, arr.type.ndim, "axis")


def take_along_axis(arr: TensorLike, indices: TensorLike, axis: int | None = -1) -> Variable:
    """numpy.take_along_axis: ``arr`` read at `indices` along `axis` (the other axes of
    the two broadcast against each other)."""
    arr, indices, axis = _along_axis_args("take_along_axis", arr, indices, axis)
    return arr[_along_axis_index(arr, indices, axis)]


def _put_values(values: TensorLike, arr: Variable, inc: bool) -> tuple[Variable, Any]:
    """`values` for put_along_axis and the dtype to write them in, as NumPy does.

    Setting casts `values` to arr's dtype (``arr[idx] = values``: floats truncate into
    integers, complex values into real arrays lose their imaginary part with NumPy's
    ComplexWarning); a Python int out of arr's range is refused (NumPy's OverflowError).
    Adding computes ``arr[idx] + values`` in their promoted dtype and casts the sum back
    (``numpy.add.at``), Python numbers promoting weakly.
    """
    target = arr.type.dtype
    if isinstance(values, (bool, int, float, complex)):  # judged by value, as NumPy does
        dtype = dtypes.result_type(target, values) if inc else target
        try:
            values = np.asarray(values, dtype.numpy)
        except (OverflowError, TypeError) as exc:
            if not (inc and isinstance(exc, OverflowError)):
                raise type(exc)(f"put_along_axis: cannot write values {values!r} into "
                                f"arr of dtype {target}: {exc}") from None
            values = np.asarray(values)  # numpy.add.at adds it in int64, then wraps
    values = _tensor(values, "put_along_axis", "values")
    work = dtypes.result_type(target, values.type.dtype) if inc else target
    return (values if values.type.dtype == work else cast(values, work)), work


def put_along_axis(arr: TensorLike, indices: TensorLike, values: TensorLike,
                   axis: int | None, inc: bool = False) -> Variable:
    """numpy.put_along_axis as a new tensor: `arr` with `values` written at `indices`
    along `axis` (``inc=True``: added, repeated indices accumulating as numpy.add.at).

    With ``axis=None`` the values go into the flattened `arr` (NumPy's ``arr.flat``) and
    the result keeps arr's shape. `values` are cast to arr's dtype as NumPy does (see
    `_put_values`); with ``inc=True`` and a cast that truncates (floats added into an
    integer array), repeated indices are summed before the one truncation, where
    numpy.add.at truncates after each addition.
    """
    from workbench.core.tensor.reshape import reshape
    from workbench.core.tensor.subtensor import inc_subtensor, set_subtensor

    original = _tensor(arr, "put_along_axis", "arr")
    arr, indices, axis_ = _along_axis_args("put_along_axis", original, indices, axis)
    values, work = _put_values(values, arr, inc)
    into = arr if work == arr.type.dtype else cast(arr, work)
    target = into[_along_axis_index(into, indices, axis_)]
    out = (inc_subtensor if inc else set_subtensor)(target, values)
    if out.type.dtype != original.type.dtype:
        out = cast(out, original.type.dtype)
    if axis is None and original.type.ndim != 1:
        out = reshape(out, shape_tuple(original))
    return out


# -- reordering ---------------------------------------------------------------------------


def flip(m: TensorLike, axis: Any = None) -> Variable:
    """numpy.flip: `m` with the order of its entries reversed along `axis` (None: all)."""
    m = _tensor(m, "flip", "m")
    ndim = m.type.ndim
    axes = range(ndim) if axis is None else normalize_axis_tuple(axis, ndim, "axis")
    return m[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(ndim))]


def _roll_one(x: Variable, shift: Any, axis: int) -> Variable:
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.math import maximum, mod

    n = shape_tuple(x)[axis]
    if _static(n) is not None and _static(shift) is not None:
        cut = _static(n) - _static(shift) % _static(n) if _static(n) else 0
        if cut in (0, _static(n)):
            return x
    else:
        cut = n - mod(shift, maximum(n, 1))
    before = (slice(None),) * axis
    return concatenate([x[before + (slice(cut, None),)], x[before + (slice(None, cut),)]],
                       axis)


def roll(a: TensorLike, shift: Any, axis: Any = None) -> Variable:
    """numpy.roll: entries shifted by `shift` along `axis`, those leaving one end coming
    back at the other (None: of the flattened `a`, reshaped back). `shift` is an int, a
    0-d integer tensor, or one per axis; shifts on a repeated axis add up."""
    from workbench.core.tensor.reshape import flatten, reshape

    a = _tensor(a, "roll", "a")
    if axis is None:
        if a.type.ndim == 1:
            return roll(a, shift, 0)
        return reshape(roll(flatten(a), shift, 0), shape_tuple(a))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = list(shift) if isinstance(shift, (list, tuple)) else [shift]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift and axis must have the same length, got {len(shifts)} "
                         f"shifts and {len(axes)} axes")
    total: dict[int, Any] = {}
    for s, ax in zip(shifts, axes):
        d = normalize_axis(ax, a.type.ndim, "axis")
        s = _int_scalar(s, "roll", "shift")
        total[d] = s if d not in total else total[d] + s
    for d, s in total.items():
        a = _roll_one(a, s, d)
    return a


# -- rounding -------------------------------------------------------------------------------


def _power_of_ten(decimals: int) -> float:
    """``10.0 ** |decimals|`` as NumPy's round computes it, by multiplying 1e9 by 10 one
    step at a time (pow differs by an ulp from 10**23 on: round(0.35, 300) was an ulp
    off NumPy's); inf past float64's range (then NumPy's round gives NaN), not Python's
    OverflowError."""
    n = abs(decimals)
    if n < 9:
        return float(10 ** n)
    power = np.float64(1e9)
    with np.errstate(over="ignore"):
        for _ in range(min(n, 400) - 9):  # (inf from 309 on)
            power = power * np.float64(10.0)
    return float(power)


def round(x: TensorLike, decimals: int = 0) -> Variable:
    """numpy.round: to `decimals` decimal places, halves to even (``round(2.5) == 2``).

    Floats compute ``rint(x * 10**decimals) / 10**decimals`` as NumPy does (NaN when
    ``10**decimals`` overflows); integers are unchanged for ``decimals >= 0`` and rounded
    to tens, hundreds, ... (in float64, cast back) for negative ones; booleans give
    float16, as NumPy's rint, and are refused with other decimals, as NumPy refuses
    them. The gradient is 0 (piecewise constant).
    """
    from workbench.core.tensor.math import round_half_to_even

    x = _tensor(x, "round", "x")
    decimals = _python_int(decimals, "round", "decimals")
    d = x.type.dtype
    if d.is_complex:
        raise TypeError(f"round: complex inputs are not supported, got {x.type}")
    if d.is_bool:
        if decimals:
            raise TypeError(f"round: boolean x with decimals={decimals} is refused, as NumPy "
                            f"cannot write the float result into booleans; got {x.type}")
        return round_half_to_even(cast(x, "float16"))
    if d.is_int:
        if decimals >= 0:
            return x
        scale = _power_of_ten(decimals)
        return cast(round_half_to_even(cast(x, "float64") / scale) * scale, d)
    if decimals == 0:
        return round_half_to_even(x)
    scale = _power_of_ten(decimals)
    if decimals > 0:
        return round_half_to_even(x * scale) / scale
    return round_half_to_even(x / scale) * scale
