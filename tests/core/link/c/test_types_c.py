"""C for non-tensor Types: workbench's ScalarType (numpy scalars as C numbers) and
Generic (any PyObject), and a user Type carrying its own C (seed 000's DoubleType),
each used by a user Op with c_code, compiled by the 'c' linker."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import workbench as wb
from workbench.core.compile.mode import Mode
from workbench.core.graph.basic import Apply
from workbench.core.graph.op import Op
from workbench.core.graph.type import Type, generic
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.link.c.codegen import NoCCode, node_source
from workbench.core.link.c.compiler import has_compiler
from workbench.core.link.c.interface import CLinkerType, COp, c_type_of
from workbench.core.link.c.types import GenericC, ScalarTypeC
from workbench.core.scalar.basic import get_scalar_type

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")

C_MODE = Mode(linker="c")


def c_ops(f):
    """The Op classes of the nodes that ran compiled C."""
    return [type(node.op) for node in f.linker.report.c_nodes]


# -- ScalarType ---------------------------------------------------------------------


class ScaledSum(Op, COp):
    """a * k + b on two numbers of one ScalarType (k an Op parameter), in C."""

    __props__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k

    def make_node(self, a, b):
        return Apply(self, [a, b], [a.type()])

    def perform(self, node, inputs, output_storage):
        a, b = inputs
        output_storage[0][0] = node.outputs[0].type.filter(a * self.k + b)

    def c_code(self, node, name, inputs, outputs, sub):
        (a, b), (z,) = inputs, outputs
        return f"{z} = ({a} * {self.k}) + {b};"

    def c_code_cache_version(self):
        return (1,)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int64", "uint8"])
def test_scalar_type_values_travel_as_numpy_scalars_of_their_dtype(dtype):
    t = get_scalar_type(dtype)
    a, b = t("a"), t("b")
    f = wb.function([a, b], ScaledSum(3)(a, b), mode=C_MODE)
    assert c_ops(f) == [ScaledSum]
    out = f(np.dtype(dtype).type(5), np.dtype(dtype).type(2))
    assert isinstance(out, np.generic) and out.dtype == np.dtype(dtype) and out == 17
    # the previous call's value is not changed by the next one
    again = f(np.dtype(dtype).type(1), np.dtype(dtype).type(1))
    assert out == 17 and again == 4


def test_scalar_type_c_declares_a_plain_number_and_literals():
    tc = c_type_of(get_scalar_type("float32"))
    assert isinstance(tc, ScalarTypeC)
    assert "npy_float32 v;" in tc.c_declare("v", {"fail": ""})
    assert tc.c_is_simple()
    assert tc.c_literal(np.float32(1.5)) == "((npy_float32)1.5)"
    assert "INFINITY" in tc.c_literal(np.inf)


def test_scalar_type_c_refuses_a_wrong_value_naming_the_input():
    t = get_scalar_type("float64")
    a, b = t("a"), t("b")
    f = wb.function([a, b], ScaledSum(2)(a, b), mode=C_MODE, trust_input=True)
    assert f(np.float64(1.0), np.float64(0.5)) == 2.5
    with pytest.raises(TypeError, match=r"input 1 of ScaledSum.*float64 scalar.*numpy scalar of "
                                        r"type numpy.float32"):
        f(np.float64(1.0), np.float32(0.5))
    with pytest.raises(TypeError, match="input 0 of ScaledSum.*object of type str"):
        f("one", np.float64(0.5))


def test_complex_scalars_round_trip_through_c():
    t = get_scalar_type("complex128")
    a, b = t("a"), t("b")
    f = wb.function([a, b], ScaledSum(1)(a, b), mode=C_MODE)
    out = f(np.complex128(1 + 2j), np.complex128(3 - 1j))
    assert c_ops(f) == [ScaledSum] and out == 4 + 1j and out.dtype == np.complex128


def test_scalar_types_without_c_have_no_c_code():
    t = get_scalar_type("float16")
    a, b = t("a"), t("b")
    with pytest.raises(MethodNotDefined, match="float16"):
        c_type_of(t).c_declare("v", {"fail": ""})
    with pytest.raises(NoCCode, match="float16"):  # such nodes run `perform`
        node_source(ScaledSum(2)(a, b).owner)


# -- Generic ------------------------------------------------------------------------


class Pair(Op, COp):
    """(a, b) as a Python tuple, built with the C API from two Generic values."""

    __props__ = ()

    def make_node(self, a, b):
        return Apply(self, [a, b], [generic()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = tuple(inputs)

    def c_code(self, node, name, inputs, outputs, sub):
        (a, b), (z,) = inputs, outputs
        return f"""
Py_XDECREF({z});
{z} = PyTuple_Pack(2, {a}, {b});
if (!{z}) {sub["fail"]}
"""

    def c_code_cache_version(self):
        return (1,)


def test_generic_values_pass_through_c_as_objects_without_leaking():
    assert isinstance(c_type_of(generic), GenericC)
    a, b = generic("a"), generic("b")
    f = wb.function([a, b], Pair()(a, b), mode=C_MODE)
    assert c_ops(f) == [Pair]
    key, value = object(), ["payload"]
    assert f(key, value) == (key, value)
    before = sys.getrefcount(key), sys.getrefcount(value)
    for _ in range(1000):
        f(key, value)
    result = f(key, value)
    assert result[0] is key and result[1] is value
    del result
    f(0, 1)  # drop the last result held by the function's storage
    assert (sys.getrefcount(key), sys.getrefcount(value)) <= before


# -- a user Type with its own C: seed 000's DoubleType ------------------------------


class DoubleType(Type, CLinkerType):
    """Seed 000's DoubleType (values are Python floats), plus the C that lets compiled
    Ops use it: a `double` in C, boxed as a Python float."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict:
            if isinstance(x, float):
                return x
            raise TypeError("Expected a float!")
        if allow_downcast:
            return float(x)
        x_float = float(x)
        if x_float == x:
            return x_float
        raise TypeError(f"The double type cannot accurately represent value {x} (of type "
                        f"{type(x)}): you must explicitly allow downcasting if you want to "
                        "do this.")

    def values_eq_approx(self, x, y, tolerance=1e-4):
        return abs(x - y) / (abs(x) + abs(y)) < tolerance

    def __str__(self):
        return "double"

    # -- C (seed 002's contract)
    def c_declare(self, name, sub):
        return f"double {name};"

    def c_init(self, name, sub):
        return f"{name} = 0.0;"

    def c_extract(self, name, sub):
        # the label is a C string given at run time: printed with %s, never pasted
        return f"""
if (!PyFloat_Check(py_{name})) {{
  PyErr_Format(PyExc_TypeError, "%s: expected a float, got %s", {sub["label"]},
               Py_TYPE(py_{name})->tp_name);
  {sub["fail"]}
}}
{name} = PyFloat_AsDouble(py_{name});
"""

    def c_extract_out(self, name, sub):
        return ""

    def c_sync(self, name, sub):
        return f"""
Py_XDECREF(py_{name});
py_{name} = PyFloat_FromDouble({name});
if (!py_{name}) {{ Py_INCREF(Py_None); py_{name} = Py_None; {sub["fail"]} }}
"""

    def c_cleanup(self, name, sub):
        return ""

    def c_literal(self, data):
        return repr(float(data))

    def c_is_simple(self):
        return True

    def c_code_cache_version(self):
        return (1,)


double = DoubleType()


class BinaryDoubleOp(Op, COp):
    """A binary Op on doubles whose C is one expression (`expr` with %(x)s, %(y)s)."""

    __props__ = ("label", "fn", "expr")

    def __init__(self, label, fn, expr):
        self.label, self.fn, self.expr = label, fn, expr

    def __str__(self):
        return self.label

    def make_node(self, x, y):
        for position, value in enumerate((x, y)):
            if value.type != double:
                raise TypeError(f"{self.label} input {position} must be a double, got "
                                f"{value.type}")
        return Apply(self, [x, y], [double()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.fn(*inputs)

    def c_code(self, node, name, inputs, outputs, sub):
        (x, y), (z,) = inputs, outputs
        return f"{z} = {self.expr % dict(x=x, y=y)};"

    def c_code_cache_version(self):
        return (1,)


class SafeDiv(BinaryDoubleOp):
    """x / y that raises ZeroDivisionError from C, as Python's float division does."""

    def __init__(self):
        super().__init__("div", lambda x, y: x / y, "%(x)s / %(y)s")

    def c_code(self, node, name, inputs, outputs, sub):
        (x, y), (z,) = inputs, outputs
        return f"""
if ({y} == 0.0) {{
  PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero"); {sub["fail"]}
}}
{z} = {x} / {y};"""


mul = BinaryDoubleOp("mul", lambda x, y: x * y, "%(x)s * %(y)s")
add = BinaryDoubleOp("add", lambda x, y: x + y, "%(x)s + %(y)s")
div = SafeDiv()


def test_user_double_type_and_ops_compile_to_c_and_run():
    assert c_type_of(double) is double  # the Type answers for itself
    x, y = double("x"), double("y")
    z = add(mul(x, y), div(x, y))
    f = wb.function([x, y], z, mode=C_MODE)
    assert sorted(str(n.op) for n in f.linker.report.c_nodes) == ["add", "div", "mul"]
    assert f.linker.report.py_nodes == []
    out = f(3.0, 2.0)
    assert isinstance(out, float) and out == 3.0 * 2.0 + 3.0 / 2.0
    assert f(3, 2) == 7.5  # the Type's filter turns exact ints into floats
    rng = np.random.default_rng(0)
    g = wb.function([x, y], z, mode=Mode(linker="py"))
    for a, b in rng.normal(size=(20, 2)):
        assert f(float(a), float(b)) == g(float(a), float(b))


def test_user_double_c_errors_are_python_exceptions():
    x, y = double("x"), double("y")
    f = wb.function([x, y], div(x, y), mode=C_MODE)
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        f(1.0, 0.0)
    assert f(1.0, 4.0) == 0.25  # the function still works after a failure
    trusted = wb.function([x, y], div(x, y), mode=C_MODE, trust_input=True)
    with pytest.raises(TypeError, match="input 0 of div: expected a float, got int"):
        trusted(1, 2.0)


def test_user_double_constants_are_inlined_values():
    x = double("x")
    f = wb.function([x], mul(x, double.make_constant(2.5)), mode=C_MODE)
    assert c_ops(f) == [BinaryDoubleOp] and f(4.0) == 10.0
    assert double.c_literal(2.5) == "2.5"
