"""TensorVariable and TensorConstant: seed 001's graph, operators, weak scalars, conversion."""

import operator

import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core.dtypes import default_float_dtype_as
from workbench.core.graph.basic import Apply
from workbench.core.printing import dprint
from workbench.core.scalar import get_scalar_type
from workbench.core.tensor import (
    DimShuffle,
    Elemwise,
    Shape,
    TensorConstant,
    TensorType,
    TensorVariable,
    as_tensor_variable,
    constant,
)

rng = np.random.default_rng(0)

# -- seed 001, with workbench names ---------------------------------------------------------


def test_seed_001_mul_by_python_float():
    x = wt.dmatrix("x")
    y = x * 2.0
    assert isinstance(y.owner, Apply)
    assert y.owner.op.name == "Elemwise{mul}"
    assert isinstance(y.owner.op, Elemwise) and y.owner.op.scalar_op.name == "mul"
    assert len(y.owner.inputs) == 2
    assert y.owner.inputs[0] is x
    broadcast = y.owner.inputs[1]
    assert isinstance(broadcast, TensorVariable)
    assert str(broadcast) == "DimShuffle{x,x}.0"
    assert isinstance(broadcast.owner.op, DimShuffle)
    (two,) = broadcast.owner.inputs
    assert isinstance(two, TensorConstant) and str(two) == "TensorConstant{2.0}"
    assert dprint(y, file="str") == (
        "Elemwise{mul} [id A]\n"
        " |x [id B]\n"
        " |DimShuffle{x,x} [id C]\n"
        " | |TensorConstant{2.0} [id D]"
    )


def test_seed_001_negation_of_ivector():
    x = wt.ivector()
    y = -x
    assert y.owner.op == Elemwise(wt.neg.op.scalar_op)
    assert y.owner.op.scalar_op.name == "neg"
    assert y.type == wt.ivector and x.type == wt.ivector


def test_seed_001_dmatrix_plus_dmatrix(evaluate):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    z = x + y
    assert z.owner.inputs == [x, y] and x.owner is None
    a, b = rng.random((2, 3)), rng.random((2, 3))
    np.testing.assert_array_equal(evaluate(z, {x: a, y: b}), a + b)


# -- operators ----------------------------------------------------------------------------

BINARY = [
    (operator.add, np.add), (operator.sub, np.subtract), (operator.mul, np.multiply),
    (operator.truediv, np.true_divide), (operator.floordiv, np.floor_divide),
    (operator.mod, np.remainder), (operator.pow, np.power),
    (operator.lt, np.less), (operator.le, np.less_equal),
    (operator.gt, np.greater), (operator.ge, np.greater_equal),
]


@pytest.mark.parametrize(("py_op", "np_op"), BINARY, ids=lambda f: getattr(f, "__name__", ""))
def test_binary_operators_match_numpy(evaluate, py_op, np_op):
    x, y = wt.dmatrix("x"), wt.drow("y")
    a, b = rng.random((3, 4)) + 0.5, rng.random((1, 4)) + 0.5
    for expr, expected in [
        (py_op(x, y), np_op(a, b)),
        (py_op(x, 1.5), np_op(a, 1.5)),
        (py_op(1.5, x), np_op(1.5, a)),  # reflected operators
        (py_op(b, x), np_op(b, a)),  # a numpy array on the left defers to the Variable
    ]:
        assert isinstance(expr, TensorVariable)
        out = evaluate(expr, {x: a, y: b})
        assert out.dtype == expected.dtype
        np.testing.assert_allclose(out, expected)


@pytest.mark.parametrize(
    ("py_op", "np_op"),
    [(operator.and_, np.bitwise_and), (operator.or_, np.bitwise_or),
     (operator.xor, np.bitwise_xor)],
)
def test_bitwise_operators(evaluate, py_op, np_op):
    x, y = wt.ivector("x"), wt.ivector("y")
    a = rng.integers(-50, 50, 6).astype("int32")
    b = rng.integers(-50, 50, 6).astype("int32")
    np.testing.assert_array_equal(evaluate(py_op(x, y), {x: a, y: b}), np_op(a, b))
    np.testing.assert_array_equal(evaluate(py_op(3, x), {x: a}), np_op(3, a))
    p, q = wt.TensorType("bool", (None,))("p"), wt.TensorType("bool", (None,))("q")
    u, v = np.array([True, True, False, False]), np.array([True, False, True, False])
    np.testing.assert_array_equal(evaluate(py_op(p, q), {p: u, q: v}), np_op(u, v))


def test_unary_operators(evaluate):
    x = wt.dvector("x")
    a = rng.standard_normal(5)
    np.testing.assert_array_equal(evaluate(-x, {x: a}), -a)
    np.testing.assert_array_equal(evaluate(abs(x), {x: a}), np.abs(a))
    assert +x is x
    i = wt.bvector("i")
    b = np.array([0, 1, -5], dtype="int8")
    np.testing.assert_array_equal(evaluate(~i, {i: b}), ~b)


def test_equality_is_identity_and_variables_hash():
    x, y = wt.dvector(), wt.dvector()
    assert (x == x) is True and (x == y) is False and (x != y) is True
    assert len({x, y, x}) == 2
    assert {x: 1}[x] == 1


def test_unsupported_operands_give_python_type_errors():
    x = wt.dvector()
    with pytest.raises(TypeError, match="not supported"):
        x < "a"  # noqa: B015
    with pytest.raises(TypeError):
        x + object()


def test_symbolic_variables_have_no_len_truth_or_iteration():
    x = wt.dmatrix("x")
    with pytest.raises(TypeError, match=r"x.shape\[0\]"):
        len(x)
    with pytest.raises(TypeError, match="no truth value"):
        bool(x)
    with pytest.raises(TypeError, match="no truth value"):
        if x > 0:
            pass
    with pytest.raises(TypeError, match="cannot be iterated"):
        iter(x)


# -- weak Python scalars (NEP 50) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        ("float32", 2.5, "float32"),
        ("float16", 2.5, "float16"),
        ("int8", 1, "int8"),
        ("uint8", 3, "uint8"),
        ("int8", 1.5, "float64"),
        ("bool", 1, "int64"),
        ("bool", True, "bool"),
        ("float32", 1j, "complex64"),
        ("bfloat16", 2.0, "bfloat16"),
    ],
)
def test_python_scalars_are_weak(dtype, value, expected):
    x = TensorType(dtype, (None,))()
    assert (x + value).dtype == expected
    assert (value + x).dtype == expected


def test_weak_scalar_values_are_exact(evaluate):
    x = wt.fvector("x")
    a = np.array([1.0, 2.0], dtype="float32")
    out = evaluate(x * 2.5, {x: a})
    assert out.dtype == np.float32 and out.tolist() == [2.5, 5.0]
    i = wt.bvector("i")
    out = evaluate(2 ** i, {i: np.array([0, 1, 6], dtype="int8")})
    assert out.dtype == np.int8 and out.tolist() == [1, 2, 64]


def test_weak_int_overflow_is_an_error():
    with pytest.raises(OverflowError, match="1000 does not fit in int8"):
        wt.bvector() + 1000


def test_weak_float_with_int_follows_default_float():
    with default_float_dtype_as("float32"):
        assert (wt.bvector() + 1.5).dtype == "float32"
        assert (wt.bvector() / 2).dtype == "float32"


def test_comparisons_with_weak_scalars_give_bool(evaluate):
    i = wt.bvector("i")
    expr = i < 1.5
    assert expr.dtype == "bool"
    out = evaluate(expr, {i: np.array([1, 2], dtype="int8")})
    assert out.tolist() == [True, False]


# -- properties and methods ------------------------------------------------------------------


def test_static_properties():
    x = TensorType("float32", (1, None, 3))("x")
    assert x.dtype == "float32" and x.ndim == 3
    assert x.broadcastable == (True, False, False)
    assert x.type.shape == (1, None, 3)


def test_symbolic_shape(evaluate):
    x = wt.dmatrix("x")
    s = x.shape
    assert isinstance(s.owner.op, Shape)
    assert s.type == TensorType("int64", (2,))
    out = evaluate(s, {x: np.zeros((3, 5))})
    assert out.dtype == np.int64 and out.tolist() == [3, 5]


def test_transpose_and_dimshuffle(evaluate):
    x = wt.dtensor3("x")
    a = rng.random((2, 3, 4))
    np.testing.assert_array_equal(evaluate(x.T, {x: a}), a.T)
    np.testing.assert_array_equal(evaluate(x.transpose(1, 0, 2), {x: a}), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(evaluate(x.transpose([2, 0, 1]), {x: a}),
                                  a.transpose(2, 0, 1))
    assert str(x.T.owner.op) == "DimShuffle{2,1,0}"
    assert x.dimshuffle(0, 1, 2) is x
    assert x.dimshuffle([0, "x", 1, 2]).type.shape == (None, 1, None, None)
    with pytest.raises(ValueError, match="not a permutation"):
        x.transpose(0, 1)


def test_astype(evaluate):
    x = wt.dvector("x")
    y = x.astype("int16")
    assert y.dtype == "int16" and str(y.owner.op) == "Elemwise{Cast{int16}}"
    assert x.astype("float64") is x
    assert evaluate(y, {x: np.array([1.7, -1.7])}).tolist() == [1, -1]


# -- constants -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (2, "int8"), (-128, "int8"), (300, "int16"), (70000, "int32"), (2**40, "int64"),
        (2.0, "float64"), (True, "bool"), (1 + 2j, "complex128"),
        ([1, 2, 3], "int8"), ([1, 1000], "int16"), ([1.0, 2], "float64"),
        (np.float32(1.0), "float32"), (np.arange(3, dtype="uint16"), "uint16"),
    ],
)
def test_constant_dtypes(value, dtype):
    c = constant(value)
    assert isinstance(c, TensorConstant)
    assert c.dtype == dtype
    assert c.type.shape == np.shape(value)


def test_constant_float_follows_default_float():
    with default_float_dtype_as("float32"):
        assert constant(2.5).dtype == "float32"
        assert constant([1.5]).dtype == "float32"
        assert constant(1j).dtype == "complex64"


def test_constant_options():
    c = constant(3, dtype="float32", name="three")
    assert c.dtype == "float32" and c.name == "three" and str(c) == "three"
    assert constant([1, 2], ndim=3).type.shape == (1, 1, 2)
    assert constant([[5]], ndim=0).type.shape == ()
    with pytest.raises(ValueError):
        constant([[1, 2]], ndim=0)


def test_constant_with_explicit_dtype():
    assert constant([0.1, 0.2], dtype="float32").data.dtype == np.float32
    assert constant(np.arange(3.0), dtype="int8").data.tolist() == [0, 1, 2]
    assert constant(1.9, dtype="int16").data == 1
    with pytest.raises(OverflowError, match="int8"):
        constant(1000, dtype="int8")


def test_constant_copies_its_data():
    data = np.zeros(3)
    c = constant(data)
    data[0] = 1.0
    assert c.data[0] == 0.0


def test_constant_rejects_non_numeric_data():
    with pytest.raises(TypeError):
        constant(np.array(["a"]))
    with pytest.raises(TypeError):
        constant(wt.dvector())


def test_constant_printing():
    assert str(constant(2)) == "TensorConstant{2}"
    assert str(constant(2.0)) == "TensorConstant{2.0}"


# -- as_tensor_variable ----------------------------------------------------------------------


def test_as_tensor_variable_passes_variables_through():
    x = wt.dvector("x")
    assert as_tensor_variable(x) is x
    node = (x + 1).owner
    assert as_tensor_variable(node) is node.outputs[0]


def test_as_tensor_variable_ndim_and_dtype():
    x = wt.dvector("x")
    padded = as_tensor_variable(x, ndim=3)
    assert padded.type.shape == (1, 1, None)
    row = wt.drow("r")
    assert as_tensor_variable(row, ndim=1).type.shape == (None,)
    with pytest.raises(ValueError, match="static length 1"):
        as_tensor_variable(wt.dmatrix(), ndim=1)
    assert as_tensor_variable(x, dtype="float32").dtype == "float32"


def test_as_tensor_variable_from_data():
    c = as_tensor_variable([[1.0, 2.0]], name="c")
    assert isinstance(c, TensorConstant) and c.type.shape == (1, 2) and c.name == "c"
    assert as_tensor_variable(np.float32(1)).dtype == "float32"
    assert as_tensor_variable(7).dtype == "int8"


@pytest.mark.parametrize("bad", ["abc", object(), {1: 2}, None])
def test_as_tensor_variable_rejects_other_objects(bad):
    with pytest.raises(TypeError):
        as_tensor_variable(bad)


def test_as_tensor_variable_rejects_scalar_graph_variables():
    with pytest.raises(TypeError, match="scalar Variable"):
        as_tensor_variable(get_scalar_type("float64")())
