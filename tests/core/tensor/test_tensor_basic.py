"""Casting tensors between dtypes."""

import ml_dtypes
import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core.scalar import Cast, get_scalar_type
from workbench.core.tensor import Elemwise, TensorType, cast


def test_cast_builds_an_elemwise_of_the_scalar_cast():
    x = wt.dmatrix("x")
    y = cast(x, "float32")
    assert isinstance(y.owner.op, Elemwise)
    assert str(y.owner.op) == "Elemwise{Cast{float32}}"
    assert y.owner.op.scalar_op == Cast(get_scalar_type("float32"))
    assert y.type == TensorType("float32", (None, None))
    assert cast(x, "float64") is x
    assert x.astype("float32").owner.op == y.owner.op


@pytest.mark.parametrize(
    ("source", "target", "data", "expected"),
    [
        ("float64", "int32", [1.7, -1.7, 2.0], [1, -1, 2]),
        ("int16", "int8", [127, 128, -129], [127, -128, 127]),
        ("float64", "bool", [0.0, 0.5, -2.0], [False, True, True]),
        ("complex128", "float64", [1 + 2j, -3j], [1.0, 0.0]),
        ("int8", "float16", [1, -2], [1.0, -2.0]),
    ],
)
def test_cast_values_follow_numpy_astype(evaluate, source, target, data, expected):
    x = TensorType(source, (None,))("x")
    value = evaluate(cast(x, target), {x: np.array(data, dtype=source)})
    assert value.dtype == np.dtype(target)
    assert value.tolist() == expected


def test_cast_to_bfloat16(evaluate):
    x = wt.fvector("x")
    value = evaluate(cast(x, "bfloat16"), {x: np.array([1.0, 1.00390625], dtype="float32")})
    assert value.dtype == np.dtype(ml_dtypes.bfloat16)
    assert value.astype("float32").tolist() == [1.0, 1.0]


def test_cast_of_data_and_bad_dtypes():
    assert cast([1, 2], "float32").dtype == "float32"
    with pytest.raises(TypeError, match="unknown dtype"):
        cast(wt.dvector(), "float128")


def test_cast_of_a_constant_is_not_folded_here(evaluate):
    c = cast(2.5, "int8")
    assert c.owner is not None  # constant folding is a rewrite, not graph building
    assert evaluate(c).tolist() == 2
