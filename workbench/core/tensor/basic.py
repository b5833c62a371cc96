"""Basic tensor operations: casting between dtypes.

A cast is an `Elemwise` of the scalar `Cast` Op, so it prints as
``Elemwise{Cast{float32}}`` and fuses like any other elementwise operation.
"""

from __future__ import annotations

from typing import Any

from workbench.core.dtypes import as_dtype
from workbench.core.graph.basic import Variable
from workbench.core.scalar.basic import Cast, get_scalar_type
from workbench.core.tensor.elemwise import Elemwise
from workbench.core.tensor.variable import as_tensor_variable

_cast_ops: dict[Any, Elemwise] = {}


def cast_op(dtype: Any) -> Elemwise:
    """The (shared) Elemwise that converts to `dtype`."""
    d = as_dtype(dtype)
    op = _cast_ops.get(d)
    if op is None:
        op = _cast_ops[d] = Elemwise(Cast(get_scalar_type(d)))
    return op


def cast(x: Any, dtype: Any) -> Variable:
    """`x` converted to `dtype`; `x` itself when it already has that dtype.

    Float to integer truncates toward zero and complex to real drops the
    imaginary part, as numpy's ``astype`` does.
    """
    var = as_tensor_variable(x)
    if var.type.dtype == as_dtype(dtype):
        return var
    return cast_op(dtype)(var)


def astype(x: Any, dtype: Any) -> Variable:
    """Alias of `cast` (and the function behind ``x.astype(dtype)``)."""
    return cast(x, dtype)
