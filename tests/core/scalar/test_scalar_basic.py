"""ScalarType, scalar Variables and the scalar Ops: dtype rules, kernels, printing hints."""

import math

import ml_dtypes
import numpy as np
import pytest

import workbench.core.scalar as ps
from workbench.core.dtypes import default_float_dtype_as
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.printing import pprint
from workbench.core.scalar import ScalarConstant, ScalarType, ScalarVariable, get_scalar_type

f64, f32, i8 = get_scalar_type("float64"), get_scalar_type("float32"), get_scalar_type("int8")

# -- ScalarType ----------------------------------------------------------------------------


def test_scalar_type_identity_and_printing():
    assert str(f64) == "ScalarType(float64)"
    assert ScalarType("float64") == f64 and hash(ScalarType("float64")) == hash(f64)
    assert ScalarType("float64") != f32
    assert get_scalar_type("float64") is f64
    assert f64.clone(dtype="int8") == i8
    assert isinstance(f64("x"), ScalarVariable) and f64("x").name == "x"


def test_scalar_filter():
    assert f64.filter(np.float64(1.5), strict=True) == 1.5
    with pytest.raises(TypeError, match="strict"):
        f64.filter(1.5, strict=True)
    with pytest.raises(TypeError, match="dtype float32"):
        f64.filter(np.float32(1.5), strict=True)
    value = f32.filter(2)
    assert isinstance(value, np.float32) and value == 2
    assert isinstance(f32.filter(0.1), np.float32)  # Python floats may be rounded
    with pytest.raises(TypeError):
        f32.filter(np.float64(0.1))
    with pytest.raises(TypeError):
        i8.filter(1000)
    with pytest.raises(ValueError, match="single number"):
        f64.filter([1.0, 2.0])
    bf = get_scalar_type("bfloat16").filter(1.5)
    assert bf.dtype == np.dtype(ml_dtypes.bfloat16)


def test_scalar_values_and_sizes():
    assert f64.values_eq(np.float64("nan"), np.float64("nan"))
    assert f64.values_eq_approx(np.float64(1.0), np.float64(1.0 + 1e-9))
    assert not i8.values_eq_approx(np.int8(1), np.int8(2))
    assert f32.get_size(f32.get_shape_info(np.float32(1))) == 4


# -- scalar Variables --------------------------------------------------------------------------


def test_scalar_operators_build_scalar_ops():
    x, y = f64("x"), f64("y")
    z = (x + y) * 2.0 - x / y
    assert z.owner.op is ps.sub
    assert isinstance(z, ScalarVariable) and z.type == f64
    assert (-x).owner.op is ps.neg and abs(x).owner.op is ps.abs
    assert (x < y).type == get_scalar_type("bool")
    assert (2 ** x).owner.op is ps.pow
    with pytest.raises(TypeError, match="no truth value"):
        bool(x)
    with pytest.raises(TypeError):
        x + "a"


def test_weak_python_scalars_in_scalar_graphs():
    assert (f32() + 2.5).type == f32
    assert (i8() + 1).type == i8
    assert (i8() + 1.5).type == f64
    with pytest.raises(OverflowError, match="does not fit in int8"):
        i8() + 300
    assert ps.switch(True, i8(), 1).type == i8  # the condition does not take part


def test_scalar_constants():
    c = ps.scalar_constant(2)
    assert isinstance(c, ScalarConstant) and c.type == i8 and c.data == 2
    assert ps.scalar_constant(2.0).type == f64
    assert ps.as_scalar(np.float32(1)).type == f32
    with pytest.raises(TypeError):
        ps.as_scalar(np.zeros(3))


# -- dtype rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "dtypes", "expected"),
    [
        (ps.add, ("int8", "float32"), "float32"),
        (ps.add, ("int8", "uint8"), "int16"),
        (ps.add, ("bool", "bool"), "bool"),
        (ps.mul, ("int64", "uint64"), "float64"),
        (ps.true_div, ("int8", "int8"), "float64"),
        (ps.true_div, ("int16", "float16"), "float32"),
        (ps.int_div, ("bool", "bool"), "int8"),
        (ps.mod, ("int8", "int16"), "int16"),
        (ps.pow, ("bool", "bool"), "int8"),
        (ps.sqr, ("bool",), "int8"),
        (ps.exp, ("int8",), "float64"),
        (ps.exp, ("bool",), "float64"),
        (ps.exp, ("float16",), "float16"),
        (ps.exp, ("complex64",), "complex64"),
        (ps.sigmoid, ("bfloat16",), "bfloat16"),
        (ps.lt, ("int8", "float64"), "bool"),
        (ps.abs, ("complex64",), "float32"),
        (ps.abs, ("int8",), "int8"),
        (ps.real, ("complex128",), "float64"),
        (ps.angle, ("int32",), "float64"),
        (ps.floor, ("int16",), "int16"),
        (ps.and_, ("bool", "int8"), "int8"),
        (ps.switch, ("bool", "int8", "float32"), "float32"),
        (ps.isnan, ("float32",), "bool"),
        (ps.identity, ("uint16",), "uint16"),
    ],
)
def test_dtype_rules(op, dtypes, expected):
    assert op.output_dtypes(dtypes) == (expected,)


def test_transcendental_rule_follows_the_default_float():
    with default_float_dtype_as("float32"):
        assert ps.exp.output_dtypes(["int64"]) == ("float32",)
        assert ps.true_div.output_dtypes(["int64", "int64"]) == ("float32",)


@pytest.mark.parametrize(
    ("op", "dtypes"),
    [(ps.sub, ("bool", "bool")), (ps.neg, ("bool",)), (ps.sign, ("bool",)),
     (ps.erf, ("complex64",)), (ps.xor, ("float32", "int8")), (ps.int_div, ("complex64",) * 2),
     (ps.floor, ("complex128",)), (ps.arctan2, ("complex64", "float32"))],
)
def test_refused_dtypes(op, dtypes):
    with pytest.raises(TypeError, match=rf"{op.name} of dtypes \("):
        op.output_dtypes(dtypes)


# -- the Ops ------------------------------------------------------------------------------------


def test_every_op_is_described():
    assert len(ps.ALL_OPS) >= 60
    for name, op in ps.ALL_OPS.items():
        assert op.name == name == str(op)
        assert op.nin in (1, 2, 3, 4) and op.nout == 1
        if op.nfunc is not None:
            assert callable(getattr(np, op.nfunc))
        assert op == type(op)() if not isinstance(op, ps.Cast) else True
        assert hash(op) == hash(type(op)())
        if op.symbol is not None:
            assert op.precedence is not None
    assert ps.add.symbol == "+" and ps.pow.symbol == "**" and ps.exp.symbol is None
    assert ps.add.commutative and ps.add.associative and not ps.sub.commutative


def test_ops_with_different_rules_differ():
    assert ps.Add(ps.upcast_out) == ps.add
    assert ps.Add(ps.upgrade_to_float) != ps.add


SCALAR_REFERENCES = {
    "add": (lambda a, b: a + b, (1.5, 2.0)),
    "sub": (lambda a, b: a - b, (1.5, 2.0)),
    "mul": (lambda a, b: a * b, (1.5, 2.0)),
    "true_div": (lambda a, b: a / b, (1.5, 2.0)),
    "int_div": (lambda a, b: a // b, (-7.0, 2.0)),
    "mod": (lambda a, b: a % b, (-7.0, 2.0)),
    "pow": (lambda a, b: a**b, (1.5, 2.0)),
    "maximum": (max, (1.5, 2.0)),
    "minimum": (min, (1.5, 2.0)),
    "arctan2": (math.atan2, (1.0, -2.0)),
    "logaddexp": (lambda a, b: math.log(math.exp(a) + math.exp(b)), (0.5, -1.0)),
    "exp": (math.exp, (0.5,)),
    "log1p": (math.log1p, (0.5,)),
    "erf": (math.erf, (0.5,)),
    "erfc": (math.erfc, (0.5,)),
    "sigmoid": (lambda a: 1 / (1 + math.exp(-a)), (0.5,)),
    "softplus": (lambda a: math.log1p(math.exp(a)), (0.5,)),
    "sqr": (lambda a: a * a, (-1.5,)),
    "reciprocal": (lambda a: 1 / a, (4.0,)),
    "floor": (math.floor, (-1.5,)),
    "ceil": (math.ceil, (-1.5,)),
    "round_half_to_even": (round, (2.5,)),
}


@pytest.mark.parametrize("name", sorted(SCALAR_REFERENCES))
def test_perform_on_scalars(name):
    reference, args = SCALAR_REFERENCES[name]
    op = ps.ALL_OPS[name]
    variables = [f64() for _ in args]
    node = op.make_node(*variables)
    cells = [[None]]
    op.perform(node, [np.float64(a) for a in args], cells)
    value = cells[0][0]
    assert isinstance(value, np.float64)
    assert value == pytest.approx(reference(*args), rel=1e-12)


def test_compute_returns_exact_dtypes_and_arrays():
    (out,) = ps.exp.compute([np.arange(3, dtype="int8")], ["float64"])
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, np.exp(np.arange(3.0)))
    (out,) = ps.lt.compute([np.int8(1), np.float32(1.5)], ["bool"])
    assert isinstance(out, np.ndarray) and out.dtype == np.bool_ and out


def test_switch_kernel():
    (out,) = ps.switch.compute(
        [np.array([1, 0, 2]), np.int8(5), np.array([0.5, 0.5, 0.5])], ["float64"]
    )
    assert out.tolist() == [5.0, 0.5, 5.0]


def test_low_precision_inputs_fall_back_to_float32():
    class NoHalfLoop(ps.UnaryScalarOp):
        default_preference = staticmethod(ps.upgrade_to_float)

        def impl(self, x):
            if x.dtype.itemsize < 4:
                raise TypeError("no loop for this dtype")
            return np.exp(x)

    op = NoHalfLoop()
    data = np.array([0.0, 1.0], dtype=ml_dtypes.bfloat16)
    (out,) = op.compute([data], ["bfloat16"])
    assert out.dtype == data.dtype
    assert out.astype("float32").tolist() == [1.0, pytest.approx(2.71875)]
    with pytest.raises(TypeError, match="no loop"):
        op.compute([np.array([1], dtype="int8")], ["int8"])


def test_impl_without_kernel_is_reported():
    class Nothing(ps.UnaryScalarOp):
        default_preference = staticmethod(ps.same_out)

    with pytest.raises(MethodNotDefined):
        Nothing().impl(1.0)


def test_scalar_op_arity_and_input_errors():
    with pytest.raises(TypeError, match="add takes 2 inputs, got 1"):
        ps.add(f64())
    with pytest.raises(TypeError, match="input 0 of add"):
        ps.add(np.zeros(3), f64())
    with pytest.raises(TypeError, match="needs an output_types_preference"):
        ps.ScalarOp()


def test_scalar_cast():
    x = f64("x")
    y = ps.cast(x, "int16")
    assert str(y.owner.op) == "Cast{int16}" and y.type == get_scalar_type("int16")
    assert ps.cast(x, "float64") is x
    assert ps.Cast("int16") == ps.Cast(get_scalar_type("int16"))
    assert ps.Cast("int16") != ps.Cast("int8")
    (out,) = ps.Cast("int16").compute([np.array([1.9, -1.9])], ["int16"])
    assert out.tolist() == [1, -1]


def test_pprint_uses_symbols_and_precedence():
    from workbench.core.tensor import dvector, exp

    x, y = dvector("x"), dvector("y")
    assert pprint(exp(x) * (y + x)) == "exp(x) * (y + x)"
    # the weak 2 took the dtype of x: a float64 constant
    assert pprint(-(x - y) ** 2) == "-(x - y) ** 2.0"
