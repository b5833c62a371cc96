"""The elementwise tensor functions against NumPy, and their dtype rules."""

import math

import ml_dtypes
import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core.dtypes import default_float_dtype_as
from workbench.core.tensor import TensorType

rng = np.random.default_rng(42)

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])

# name -> (NumPy reference, (low, high) of test inputs)
FLOAT_FUNCTIONS = {
    "exp": (np.exp, (-3, 3)),
    "exp2": (np.exp2, (-3, 3)),
    "expm1": (np.expm1, (-3, 3)),
    "log": (np.log, (0.1, 5)),
    "log2": (np.log2, (0.1, 5)),
    "log10": (np.log10, (0.1, 5)),
    "log1p": (np.log1p, (0, 5)),
    "sqrt": (np.sqrt, (0, 5)),
    "reciprocal": (np.reciprocal, (0.5, 5)),
    "sin": (np.sin, (-3, 3)),
    "cos": (np.cos, (-3, 3)),
    "tan": (np.tan, (-1, 1)),
    "arcsin": (np.arcsin, (-1, 1)),
    "arccos": (np.arccos, (-1, 1)),
    "arctan": (np.arctan, (-3, 3)),
    "sinh": (np.sinh, (-3, 3)),
    "cosh": (np.cosh, (-3, 3)),
    "tanh": (np.tanh, (-3, 3)),
    "arcsinh": (np.arcsinh, (-3, 3)),
    "arccosh": (np.arccosh, (1, 5)),
    "arctanh": (np.arctanh, (-0.9, 0.9)),
    "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), (-5, 5)),
    "softplus": (lambda v: np.log1p(np.exp(v)), (-5, 5)),
    "erf": (_erf, (-2, 2)),
    "erfc": (_erfc, (-2, 2)),
}
REAL_ONLY = {"sigmoid", "softplus", "erf", "erfc"}
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]


def _inputs(dtype, low, high, shape=(2, 5)):
    if dtype in ("int8", "int32", "uint8"):
        low_i, high_i = max(math.ceil(low), 0 if dtype == "uint8" else -100), math.floor(high)
        return rng.integers(low_i, high_i + 1, shape).astype(dtype)
    values = rng.uniform(low, high, shape)
    if dtype.startswith("complex"):
        values = values + 1j * rng.uniform(-0.5, 0.5, shape)
    return values.astype(TensorType(dtype, ()).numpy_dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + ["complex128"])
@pytest.mark.parametrize("name", sorted(FLOAT_FUNCTIONS))
def test_float_functions_match_numpy(evaluate, name, dtype):
    reference, (low, high) = FLOAT_FUNCTIONS[name]
    x = TensorType(dtype, (None, None))("x")
    if dtype.startswith("complex") and name in REAL_ONLY:
        with pytest.raises(TypeError, match="not defined for complex numbers"):
            getattr(wt, name)(x)
        return
    out = getattr(wt, name)(x)
    assert out.dtype == dtype
    assert str(out.owner.op) == f"Elemwise{{{name}}}"
    data = _inputs(dtype, low, high)
    value = evaluate(out, {x: data})
    wide = data.astype(np.complex128 if dtype.startswith("complex") else np.float64)
    expected = reference(wide)
    assert out.type.values_eq_approx(value, expected.astype(value.dtype)), (value, expected)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32"])
@pytest.mark.parametrize("name", sorted(FLOAT_FUNCTIONS))
def test_float_functions_of_integers_give_the_default_float(evaluate, name, dtype):
    """Documented choice: every integer width gives the default float dtype (NumPy would
    give float16 for int8); the NumPy reference therefore casts its input first."""
    reference, (low, high) = FLOAT_FUNCTIONS[name]
    x = TensorType(dtype, (None,))("x")
    out = getattr(wt, name)(x)
    assert out.dtype == "float64"
    data = _inputs(dtype if dtype != "bool" else "uint8", max(low, 0) if dtype == "bool" else low,
                   min(high, 1) if dtype == "bool" else high, (6,)).astype(dtype)
    with np.errstate(all="ignore"):
        expected = reference(data.astype("float64"))
    np.testing.assert_allclose(evaluate(out, {x: data}), expected, rtol=1e-12)
    with default_float_dtype_as("float32"):
        assert getattr(wt, name)(x).dtype == "float32"


def test_true_div_of_integers(evaluate):
    x, y = wt.bvector("x"), wt.bvector("y")
    out = x / y
    assert out.dtype == "float64"
    a, b = np.array([1, 7], dtype="int8"), np.array([2, 2], dtype="int8")
    np.testing.assert_array_equal(evaluate(out, {x: a, y: b}), [0.5, 3.5])
    with default_float_dtype_as("float32"):
        assert (x / y).dtype == "float32"


@pytest.mark.parametrize(
    ("name", "reference"),
    [("floor", np.floor), ("ceil", np.ceil), ("round_half_to_even", np.round),
     ("sign", np.sign), ("neg", np.negative), ("abs", np.abs), ("sqr", np.square)],
)
@pytest.mark.parametrize("dtype", ["int8", "int32", "float32", "float64"])
def test_dtype_preserving_functions(evaluate, name, reference, dtype):
    x = TensorType(dtype, (None,))("x")
    out = getattr(wt, name)(x)
    assert out.dtype == dtype
    data = np.array([-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7]).astype(dtype)
    value = evaluate(out, {x: data})
    np.testing.assert_array_equal(value, reference(data))


def test_round_is_half_to_even(evaluate):
    x = wt.dvector("x")
    value = evaluate(wt.round_half_to_even(x), {x: np.array([0.5, 1.5, 2.5, -0.5])})
    assert value.tolist() == [0.0, 2.0, 2.0, -0.0]


def test_predicates_give_bool(evaluate):
    x = wt.fvector("x")
    data = np.array([1.0, np.nan, np.inf, -np.inf], dtype="float32")
    for name, reference in [("isnan", np.isnan), ("isinf", np.isinf),
                            ("isfinite", np.isfinite)]:
        out = getattr(wt, name)(x)
        assert out.dtype == "bool"
        np.testing.assert_array_equal(evaluate(out, {x: data}), reference(data))


@pytest.mark.parametrize(("dtype", "real_dtype"), [("complex64", "float32"),
                                                  ("complex128", "float64")])
def test_complex_parts(evaluate, dtype, real_dtype):
    z = TensorType(dtype, (None,))("z")
    data = np.array([1 + 2j, -3 - 0.5j, 1j], dtype=dtype)
    for name, reference, out_dtype in [
        ("abs", np.abs, real_dtype), ("real", np.real, real_dtype),
        ("imag", np.imag, real_dtype), ("angle", np.angle, real_dtype),
        ("conj", np.conj, dtype),
    ]:
        out = getattr(wt, name)(z)
        assert out.dtype == out_dtype, name
        value = evaluate(out, {z: data})
        np.testing.assert_allclose(value, reference(data), rtol=1e-6)


def test_parts_of_real_inputs(evaluate):
    x = wt.bvector("x")
    data = np.array([-2, 0, 3], dtype="int8")
    assert evaluate(wt.real(x), {x: data}).tolist() == [-2, 0, 3]
    assert evaluate(wt.imag(x), {x: data}).dtype == np.int8
    assert wt.angle(x).dtype == "float64"
    # NumPy gives float16 for int8; workbench computes in the default float dtype.
    np.testing.assert_allclose(evaluate(wt.angle(x), {x: data}), np.angle(data.astype("f8")))


def test_comparisons_and_logic(evaluate):
    x, y = wt.ivector("x"), wt.fvector("y")
    a = np.array([1, 2, 3], dtype="int32")
    b = np.array([2.0, 2.0, 2.0], dtype="float32")
    for name, reference in [("eq", np.equal), ("neq", np.not_equal), ("lt", np.less),
                            ("gt", np.greater), ("le", np.less_equal),
                            ("ge", np.greater_equal)]:
        out = getattr(wt, name)(x, y)
        assert out.dtype == "bool"
        np.testing.assert_array_equal(evaluate(out, {x: a, y: b}), reference(a, b))
    np.testing.assert_array_equal(evaluate(wt.invert(x), {x: a}), np.invert(a))
    assert wt.and_(x, wt.bvector()).dtype == "int32"


def test_maximum_minimum_and_nan(evaluate):
    x, y = wt.dvector("x"), wt.dvector("y")
    a, b = np.array([1.0, np.nan, 3.0]), np.array([2.0, 1.0, -1.0])
    np.testing.assert_array_equal(evaluate(wt.maximum(x, y), {x: a, y: b}), np.maximum(a, b))
    np.testing.assert_array_equal(evaluate(wt.minimum(x, y), {x: a, y: b}), np.minimum(a, b))


def test_arctan2(evaluate):
    y, x = wt.dvector("y"), wt.ivector("x")
    a, b = np.array([1.0, -1.0, 0.5]), np.array([-1, 2, 0], dtype="int32")
    np.testing.assert_allclose(evaluate(wt.arctan2(y, x), {y: a, x: b}), np.arctan2(a, b))


def test_integer_arithmetic_wraps_like_numpy(evaluate):
    x = wt.bvector("x")
    data = np.array([100, 127, -128], dtype="int8")
    out = evaluate(x * 2, {x: data})
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, data * np.int8(2))
    u = TensorType("uint8", (None,))("u")
    assert evaluate(u - 1, {u: np.array([0], dtype="uint8")}).tolist() == [255]


def test_integer_division_and_modulo_follow_python_signs(evaluate):
    x, y = wt.ivector("x"), wt.ivector("y")
    a, b = np.array([7, -7, 7, -7], dtype="int32"), np.array([2, 2, -2, -2], dtype="int32")
    assert evaluate(x // y, {x: a, y: b}).tolist() == [3, -4, -4, 3]
    assert evaluate(x % y, {x: a, y: b}).tolist() == [1, 1, -1, -1]


def test_negative_integer_powers_are_an_error(evaluate):
    x = wt.ivector("x")
    with pytest.raises(ValueError, match="negative integer powers"):
        evaluate(x ** -1, {x: np.array([2], dtype="int32")})


def test_variadic_add_and_mul(evaluate):
    x, y, z = wt.dvector("x"), wt.dvector("y"), wt.dvector("z")
    a, b, c = np.ones(2), np.full(2, 2.0), np.full(2, 3.0)
    assert evaluate(wt.add(x, y, z), {x: a, y: b, z: c}).tolist() == [6.0, 6.0]
    assert evaluate(wt.mul(x, y, z), {x: a, y: b, z: c}).tolist() == [6.0, 6.0]
    assert wt.add.op == wt.Elemwise(wt.add.op.scalar_op)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: -TensorType("bool", (None,))(), r"neg of dtypes \(bool\)"),
        (lambda: wt.erf(wt.zvector()), r"erf of dtypes \(complex128\).*complex"),
        (lambda: wt.floor(wt.zvector()), r"floor of dtypes \(complex128\)"),
        (lambda: wt.invert(wt.dvector()), r"invert of dtypes \(float64\)"),
        (lambda: wt.zvector() // 2, r"int_div of dtypes"),
    ],
)
def test_invalid_dtypes_are_refused_when_building(build, message):
    with pytest.raises(TypeError, match=message):
        build()


def test_bfloat16_arithmetic(evaluate):
    x = TensorType("bfloat16", (None,))("x")
    data = np.array([1.5, -2.0, 0.25], dtype=ml_dtypes.bfloat16)
    out = x * x + 1.0
    assert out.dtype == "bfloat16"
    value = evaluate(out, {x: data})
    assert value.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(value.astype("float32"), [3.25, 5.0, 1.0625])
    mixed = x + wt.wvector("w")  # bfloat16 with int16 promotes to float32 (the table)
    assert mixed.dtype == "float32"
    value = evaluate(mixed, {x: data, mixed.owner.inputs[1]: np.array([1, 2, 3], "int16")})
    assert value.dtype == np.float32 and value.tolist() == [2.5, 0.0, 3.25]
