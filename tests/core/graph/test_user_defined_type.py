"""A Type and an Op written by a user (seed 000's DoubleType) work end to end:
they build a graph, print, compile with `workbench.function` and run."""

import pytest

import workbench as wb
from workbench.core.graph import Apply, Op, Type, register_transfer


class DoubleType(Type):
    """Values are Python floats; precision loss needs allow_downcast (seed 000)."""

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
        raise TypeError(
            f"The double type cannot accurately represent value {x} (of type {type(x)}): "
            "you must explicitly allow downcasting if you want to do this."
        )

    def values_eq_approx(self, x, y, tolerance=1e-4):
        return abs(x - y) / (abs(x) + abs(y)) < tolerance

    def __str__(self):
        return "double"


# Seed 000's third option: only one instance is advertised.
double = DoubleType()


class Mul(Op):
    """x * y on doubles."""

    __props__ = ()

    def make_node(self, x, y):
        for position, value in enumerate((x, y)):
            if value.type != double:
                raise TypeError(f"Mul input {position} must be a double, got {value.type}")
        return Apply(self, [x, y], [double()])

    def perform(self, node, inputs, output_storage):
        x, y = inputs
        output_storage[0][0] = x * y

    def grad(self, inputs, output_grads):
        x, y = inputs
        (gz,) = output_grads
        return [mul(gz, y), mul(gz, x)]


mul = Mul()


def test_double_type_filter_follows_the_seed():
    assert double.filter(2) == 2.0
    assert isinstance(double.filter(2), float)
    with pytest.raises(TypeError, match="Expected a float"):
        double.filter(2, strict=True)
    with pytest.raises(TypeError, match="cannot accurately represent"):
        double.filter(2**60 + 1)
    assert double.is_valid_value(1.5)
    assert not double.is_valid_value(1)
    assert double.values_eq_approx(1.0, 1.00001)
    assert not double.values_eq_approx(1.0, 1.1)


def test_distinct_instances_are_distinct_types_unless_equality_is_defined():
    assert DoubleType() != DoubleType()  # default identity equality, as the seed says
    assert double == double


def test_user_type_and_op_build_print_compile_and_run():
    x, y = double("x"), double("y")
    z = mul(mul(x, y), x)
    assert wb.dprint(z, file="str").splitlines() == [
        "Mul [id A]",
        " |Mul [id B]",
        " | |x [id C]",
        " | |y [id D]",
        " |x [id C]",
    ]
    f = wb.function([x, y], z)
    assert f(3.0, 2.0) == 18.0
    assert f(3, 2) == 18.0  # ints are filtered into floats losslessly
    with pytest.raises((TypeError, ValueError), match="'x'"):
        f("three", 2.0)
    assert z.eval({x: 2.0, y: 5.0}) == 20.0


def test_user_op_refuses_wrong_types_at_build_time():
    import workbench.tensor as wt

    with pytest.raises(TypeError, match="Mul input 1 must be a double"):
        mul(double("x"), wt.dscalar("y"))


def test_transfer_uses_registered_functions():
    class MoveOp(Op):
        __props__ = ("target",)

        def __init__(self, target):
            self.target = target

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = inputs[0]

    def to_fake_device(var, target):
        if target == "fake-device" and var.type == double:
            return MoveOp(target)(var)
        return None

    register_transfer(to_fake_device)
    x = double("x")
    moved = x.transfer("fake-device")
    assert moved.owner.op == MoveOp("fake-device")
    assert wb.function([x], moved)(4.0) == 4.0
    with pytest.raises(ValueError, match="no registered transfer.*'elsewhere'"):
        x.transfer("elsewhere")
