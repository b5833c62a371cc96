"""Converting data for scalar and tensor Types: the one conversion policy that
`ScalarType.filter` and `TensorType.filter` share (`convert_data`), and the dtype a
weak Python scalar takes next to typed operands (`resolve_weak_scalars`, NEP 50).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from workbench.core import dtypes as _dt
from workbench.core.dtypes import Dtype, as_dtype, can_cast, default_float_dtype, result_type
from workbench.core.graph.basic import Variable, describe_value

PythonScalar = bool | int | float | complex


def is_python_scalar(value: Any) -> bool:
    """True for plain Python bool/int/float/complex (weak under NEP 50), not numpy scalars."""
    return isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic)


def python_constant_dtype(value: Any) -> Dtype:
    """The dtype a constant built from Python data gets when no dtype is requested.

    Integers take the smallest signed integer dtype that holds every value (so
    ``2`` is int8, as the SpecifyShape inputs of seed 000 show), floats the
    default float dtype, complex numbers the default complex dtype and bools bool.
    `value` is a Python scalar or a (nested) list/tuple of them.
    """
    if is_python_scalar(value):
        arr = np.asarray(value)
    else:
        try:
            arr = np.asarray(value)
        except (ValueError, OverflowError) as exc:
            raise ValueError(
                f"cannot make a constant from {describe_value(value)}: {exc}"
            ) from None
    kind = arr.dtype.kind
    if kind == "b":
        return _dt.bool_
    if kind in "iu":
        if arr.size == 0:
            return _dt.int8
        low, high = int(arr.min()), int(arr.max())
        for candidate in _dt.all_signed_int_dtypes:
            info = np.iinfo(candidate.numpy)
            if info.min <= low and high <= info.max:
                return candidate
        return _dt.uint64
    if kind == "f":
        return default_float_dtype()
    if kind == "c":
        return _dt.default_complex_dtype()
    raise TypeError(f"cannot make a numeric constant from {describe_value(value)}")


def weak_scalar_array(value: PythonScalar, dtype: Dtype) -> np.ndarray:
    """A Python scalar as a 0-d array of `dtype`, refusing integer overflow.

    Used when a weak Python scalar adopts the dtype of the other operands:
    ``int8_var + 1`` makes an int8 ``1``; ``int8_var + 1000`` is an error rather
    than a silent wrap-around.
    """
    if isinstance(value, int) and not isinstance(value, bool) and dtype.is_int:
        info = np.iinfo(dtype.numpy)
        if not info.min <= value <= info.max:
            raise OverflowError(
                f"Python integer {value} does not fit in {dtype}, the dtype of the other "
                f"operand(s); cast that operand to a wider dtype first"
            )
    return np.asarray(value, dtype=dtype.numpy)


class WeakScalars(NamedTuple):
    """How an Op's inputs resolve their weak Python scalars (see `resolve_weak_scalars`)."""

    #: input position -> the 0-d array that Python scalar becomes
    arrays: dict[int, np.ndarray]
    #: input position -> the dtype that (strong) input must be cast to first
    casts: dict[int, Dtype]


def resolve_weak_scalars(inputs: Sequence[Any], strong_dtypes: Sequence[Dtype | None],
                         dtype_inputs: Sequence[int] | None = None) -> WeakScalars:
    """Constants for the weak Python scalars among an Op's `inputs`, and casts that make
    the Op compute in ``result_type`` of its operands (NEP 50 as `dtypes` defines it).

    `strong_dtypes[i]` is the dtype of input i when it is not a Python scalar.
    The scalars at the positions `dtype_inputs` (default: all) take the
    `result_type` of those positions, so ``int8 + 1`` makes an int8 ``1`` and
    ``int8 + 1.5`` a default-float ``1.5``; scalars elsewhere (a switch
    condition) get their own dtype.

    A weak scalar of a higher kind can give a dtype that a strong operand does
    not cast to safely: with float32 as default float, ``int32 * 1.5`` is
    float32, but int32 and float32 promote to float64. Those operands are then
    cast to that dtype (`casts`), so the Op's own promotion agrees with
    `result_type`. Shared by scalar Ops and `Elemwise`.
    """
    weak = [i for i, x in enumerate(inputs) if is_python_scalar(x)]
    context = range(len(inputs)) if dtype_inputs is None else dtype_inputs
    strong = [i for i in context if i not in weak]
    values = [inputs[i] for i in context if i in weak]
    target = result_type(*(strong_dtypes[i] for i in strong), *values) if values else None
    arrays = {}
    for i in weak:
        if i in context and target is not None:
            arrays[i] = weak_scalar_array(inputs[i], target)
        else:
            arrays[i] = np.asarray(inputs[i], dtype=python_constant_dtype(inputs[i]).numpy)
    casts: dict[int, Dtype] = {}
    if target is not None:
        for i in strong:
            if _dt.promote_types(strong_dtypes[i], target) is not target:  # type: ignore[arg-type]
                casts[i] = target
    return WeakScalars(arrays, casts)


def convert_data(data: Any, dtype: Dtype, allow_downcast: bool | None, owner: str) -> np.ndarray:
    """Non-strict conversion of `data` to an ndarray of `dtype` (rank is not checked).

    The rules, shared by `ScalarType` and `TensorType`:

    * numpy data (arrays, numpy scalars) is converted only by a safe cast
      (`dtypes.can_cast`), or by any cast when `allow_downcast` is true;
    * Python data (scalars, nested lists) is accepted when the conversion keeps
      every value exactly (``[1, 2]`` into int8, ``3`` into float32) and never
      turns floats into integers; with ``allow_downcast=None`` a single Python
      float may also be rounded into a narrower float dtype (``0.1`` into
      float32), the long-standing Theano convention;
    * anything else raises TypeError naming `owner` (the expected type).
    """
    target = dtype.numpy
    if isinstance(data, (np.ndarray, np.generic)):
        arr = native_byte_order(np.asarray(data))
        source = dtype_of_array(arr, owner)
        if source is dtype:
            return arr
        if allow_downcast or can_cast(source, dtype):
            return astype_dropping_imaginary(arr, dtype)
        raise TypeError(
            f"{owner} cannot hold a value of dtype {source} without risking loss of "
            f"precision; cast it explicitly (e.g. .astype('{dtype}')) or pass "
            f"allow_downcast=True"
        )
    if isinstance(data, Variable):
        raise TypeError(
            f"{owner} expected a value, got the symbolic variable {data}; "
            "symbolic variables are inputs of graphs, not data"
        )
    if allow_downcast:
        try:
            return astype_dropping_imaginary(np.asarray(data), dtype)
        except (TypeError, ValueError, OverflowError) as exc:
            raise TypeError(f"{owner} cannot convert {describe_value(data)}: {exc}") from None
    try:
        raw = np.asarray(data)
    except (ValueError, OverflowError) as exc:
        raise TypeError(f"{owner} cannot convert {describe_value(data)}: {exc}") from None
    source = dtype_of_array(raw, owner)
    if source is dtype or can_cast(source, dtype):
        return raw.astype(target)
    lossy_kind = _KIND_ORDER[source.kind] > _KIND_ORDER[dtype.kind]
    if not lossy_kind:
        with np.errstate(all="ignore"):
            converted = raw.astype(target)
            same = np.array_equal(converted.astype(raw.dtype), raw, equal_nan=source.kind in "fc")
        if same:
            return converted
        if allow_downcast is None and isinstance(data, float) and dtype.is_float:
            return converted
    raise TypeError(
        f"{owner} cannot hold {describe_value(data)} (dtype {source}) without loss of "
        f"precision; convert it explicitly or pass allow_downcast=True"
    )


_KIND_ORDER = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def native_byte_order(arr: np.ndarray) -> np.ndarray:
    """`arr`, or a copy in this machine's byte order when it is byte-swapped (``>f8`` on
    x86): compiled kernels read the raw bytes, so every array they see must be native."""
    if arr.dtype.isnative:
        return arr
    return arr.astype(arr.dtype.newbyteorder("="))


def dtype_of_array(arr: np.ndarray, owner: str) -> Dtype:
    try:
        return as_dtype(arr.dtype)
    except TypeError:
        raise TypeError(
            f"{owner} expected numeric data, got an array of dtype {arr.dtype}"
        ) from None


def astype_dropping_imaginary(arr: np.ndarray, dtype: Dtype) -> np.ndarray:
    """`arr.astype(dtype)`, dropping the imaginary part silently for complex -> real."""
    if arr.dtype.kind == "c" and not dtype.is_complex:
        arr = arr.real
    with np.errstate(all="ignore"):
        return arr.astype(dtype.numpy)
