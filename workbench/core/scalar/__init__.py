"""Scalars: `ScalarType`, the scalar Ops (``add``, ``exp``, ``switch``, ...) and `Composite`.

Scalar Ops are the elementwise kernels the tensor layer lifts with `Elemwise`;
`Composite` fuses several of them into one. See `workbench.core.scalar.math`
for the dtype rules and `workbench.core.scalar.declared` for adding an Op.
"""

from workbench.core.scalar import math as _math
from workbench.core.scalar.basic import (
    BinaryScalarOp,
    Cast,
    DtypeRuleError,
    ScalarConstant,
    ScalarOp,
    ScalarType,
    ScalarVariable,
    UnaryScalarOp,
    angle_out,
    as_scalar,
    bool_out,
    cast,
    complex_to_real,
    get_scalar_type,
    int_or_bool_out,
    same_out,
    same_out_nobool,
    same_out_nocomplex,
    scalar_constant,
    upcast_out,
    upcast_out_bool_as_int8,
    upcast_out_int8_nocomplex,
    upcast_out_nobool,
    upgrade_to_float,
    upgrade_to_float_no_complex,
)
from workbench.core.scalar.composite import Composite
from workbench.core.scalar.declared import DeclaredOp, backend_entry, declare
from workbench.core.scalar.math import *  # noqa: F403  (every Op class and instance)

__all__ = [
    # types and variables
    "ScalarType", "ScalarVariable", "ScalarConstant", "get_scalar_type", "as_scalar",
    "scalar_constant",
    # Op base classes and dtype rules
    "ScalarOp", "UnaryScalarOp", "BinaryScalarOp", "Cast", "cast", "Composite", "DtypeRuleError",
    "upcast_out", "upcast_out_nobool", "upcast_out_bool_as_int8", "upcast_out_int8_nocomplex",
    "upgrade_to_float", "upgrade_to_float_no_complex", "same_out", "same_out_nobool",
    "same_out_nocomplex", "bool_out", "int_or_bool_out", "complex_to_real", "angle_out",
    # declaring an Op
    "declare", "DeclaredOp", "backend_entry",
    # the Op classes and shared instances (see workbench.core.scalar.math)
    *_math.__all__,
]  # fmt: skip
