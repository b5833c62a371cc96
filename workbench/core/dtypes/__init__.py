"""Data types: names, promotion, default dtypes and per-backend dtype support.

Import everything from here (``from workbench.core import dtypes``); the
submodules split the topic along its concepts:

* `base`: the :class:`Dtype` objects (one interned ``str`` per name:
  ``Dtype("float32") is float32``), the dtype tuples, `as_dtype`, predicates,
  `finfo` / `iinfo`;
* `promotion`: the promotion lattice (`promote_types`, `result_type` with weak
  Python scalars as in NEP 50, `can_cast`, `dtype_of`, `infer_dtype`);
* `defaults`: the default float / int / complex dtypes, process-wide with
  per-block overrides (``with default_float_dtype_as("float32"):``);
* `backends`: which dtypes each backend supports, the casting modes for the
  ones it lacks and :class:`UnsupportedDtypeError`.
"""

from __future__ import annotations

from workbench.core.dtypes.backends import (
    CASTING_MODES,
    UnsupportedDtypeError,
    casting_mode,
    casting_mode_as,
    check_supported,
    declare_backend_later,
    is_supported,
    register_backend_dtypes,
    registered_backends,
    resolve_unsupported,
    run_in_python,
    runs_in_python,
    set_casting_mode,
    supported_dtypes,
    unregister_backend_dtypes,
    unsupported_dtypes,
)
from workbench.core.dtypes.base import (
    DTYPES,
    Dtype,
    DtypeLike,
    all_complex_dtypes,
    all_dtypes,
    all_float_dtypes,
    all_int_dtypes,
    all_numeric_dtypes,
    all_signed_int_dtypes,
    all_uint_dtypes,
    as_dtype,
    bfloat16,
    bool_,
    complex64,
    complex128,
    finfo,
    float16,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    is_bool_dtype,
    is_complex_dtype,
    is_float_dtype,
    is_int_dtype,
    is_numeric_dtype,
    is_signed_int_dtype,
    is_uint_dtype,
    numpy_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from workbench.core.dtypes.defaults import (
    default_complex_dtype,
    default_float_dtype,
    default_float_dtype_as,
    default_int_dtype,
    default_int_dtype_as,
    set_default_float_dtype,
    set_default_int_dtype,
)
from workbench.core.dtypes.promotion import (
    can_cast,
    dtype_of,
    infer_dtype,
    promote_types,
    result_type,
    weak_or_dtype,
)

__all__ = [  # noqa: RUF022 (grouped by topic)
    # dtypes
    "Dtype", "DtypeLike", "DTYPES", "as_dtype", "numpy_dtype", "dtype_of", "finfo", "iinfo",
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bfloat16", "float16", "float32", "float64", "complex64", "complex128",
    "all_dtypes", "all_numeric_dtypes", "all_int_dtypes", "all_signed_int_dtypes",
    "all_uint_dtypes", "all_float_dtypes", "all_complex_dtypes",
    "is_bool_dtype", "is_int_dtype", "is_signed_int_dtype", "is_uint_dtype", "is_float_dtype",
    "is_complex_dtype", "is_numeric_dtype",
    # promotion and casting
    "promote_types", "result_type", "weak_or_dtype", "can_cast", "infer_dtype",
    # defaults
    "default_float_dtype", "set_default_float_dtype", "default_float_dtype_as",
    "default_int_dtype", "set_default_int_dtype", "default_int_dtype_as", "default_complex_dtype",
    # backends and casting modes
    "register_backend_dtypes", "unregister_backend_dtypes", "registered_backends",
    "declare_backend_later",
    "supported_dtypes", "unsupported_dtypes", "is_supported", "check_supported",
    "UnsupportedDtypeError", "CASTING_MODES", "casting_mode", "set_casting_mode",
    "casting_mode_as", "resolve_unsupported", "run_in_python", "runs_in_python",
]  # fmt: skip


def __getattr__(name: str) -> Dtype:
    # ``dtypes.bool`` without shadowing the builtin inside this module.
    if name == "bool":
        return bool_
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
