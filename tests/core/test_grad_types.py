"""`workbench.grad` on Variables that are not tensors.

Scalars (`ScalarType`) are handled by `grad` itself: the seed is a scalar 1 of
the cost's dtype and contributions are summed with the scalar `add`. A user Type
(seed 000's DoubleType) takes part through the optional Type hooks `grad_one`
(the seed), `add_gradients` (a variable used several times) and `grad_zero` (a
disconnected `wrt` returned as zeros); without them `grad` says which to define.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.core.grad import float_zeros_like
from workbench.core.graph import Apply, Op, Type
from workbench.core.graph.basic import Constant
from workbench.core.scalar.basic import ScalarConstant, get_scalar_type

# -- seed 000's DoubleType, with and without the gradient hooks ------------------------------


class PlainDouble(Type):
    """Values are Python floats (seed 000); no gradient hooks."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict and not isinstance(x, float):
            raise TypeError(f"expected a float, got {type(x).__name__} {x!r}")
        return float(x)

    def __str__(self):
        return "plain_double"


class DoubleType(PlainDouble):
    """PlainDouble plus the hooks `grad` asks a user Type for."""

    summed: list[int] = []  # how many terms each add_gradients call received

    def grad_one(self, var):
        return self.make_constant(1.0)

    def grad_zero(self, var):
        return self.make_constant(0.0)

    def add_gradients(self, terms):
        DoubleType.summed.append(len(terms))
        total = terms[0]
        for term in terms[1:]:
            total = add(total, term)
        return total

    def __str__(self):
        return "double"


double = DoubleType()
plain = PlainDouble()


class Mul(Op):
    """x * y on doubles of one Type; the gradient is built with the Op itself."""

    __props__ = ()

    def make_node(self, x, y):
        if x.type != y.type or not isinstance(x.type, PlainDouble):
            raise TypeError(f"Mul takes two doubles of one Type, got {x.type} and {y.type}")
        return Apply(self, [x, y], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * inputs[1]

    def grad(self, inputs, output_grads):
        x, y = inputs
        (gz,) = output_grads
        return [mul(gz, y), mul(gz, x)]


class Add(Op):
    """x + y on doubles; used by DoubleType.add_gradients."""

    __props__ = ()

    def make_node(self, x, y):
        if x.type != y.type or not isinstance(x.type, PlainDouble):
            raise TypeError(f"Add takes two doubles of one Type, got {x.type} and {y.type}")
        return Apply(self, [x, y], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] + inputs[1]

    def grad(self, inputs, output_grads):
        return [output_grads[0], output_grads[0]]


mul, add = Mul(), Add()


# -- a user Type with the hooks ------------------------------------------------------------


def test_a_double_used_twice_gets_the_sum_of_its_gradients():
    x, y = double("x"), double("y")
    z = mul(mul(x, y), x)  # x * y * x: dz/dx = 2xy, dz/dy = x**2
    gx, gy = wb.grad(z, [x, y])
    assert gx.type == double and gx.owner.op == add  # the two contributions, summed
    f = wb.function([x, y], [gx, gy], linker="py")
    assert f(3.0, 2.0) == [12.0, 9.0]
    assert f(-1.5, 4.0) == [-12.0, 2.25]


def test_three_uses_give_add_gradients_all_three_terms():
    x = double("x")
    DoubleType.summed.clear()
    gx = wb.grad(mul(mul(x, x), x), x)  # x**3
    assert DoubleType.summed == [3]
    assert wb.function([x], gx, linker="py")(2.0) == 12.0


def test_the_seed_of_a_double_cost_is_its_grad_one_and_the_trace_records_the_sum():
    x = double("x")
    z = mul(x, x)
    gx, trace = wb.grad(z, x, trace=True)
    seed = trace.seeds[z]
    assert isinstance(seed, Constant) and seed.type == double and seed.data == 1.0
    (acc,) = trace.accumulations
    assert acc.variable is x and len(acc.terms) == 2 and acc.total is gx
    values = trace.evaluate({x: 5.0})
    assert values[gx] == 10.0
    # known_grads with a number: filtered into a constant of the variable's Type
    g = wb.grad(None, x, known_grads={z: 0.5})
    assert wb.function([x], g, linker="py")(5.0) == 5.0
    with pytest.raises(TypeError, match=r"known_grads is not a value of its type double"):
        wb.grad(None, [x], known_grads={z: "one"})


def test_a_disconnected_double_is_returned_as_its_grad_zero():
    x, y = double("x"), double("y")
    gx, gy = wb.grad(mul(x, x), [x, y], disconnected_inputs="ignore")
    assert isinstance(gy, Constant) and gy.type == double and gy.data == 0.0
    assert float_zeros_like(y).data == 0.0


# -- a user Type without the hooks: clear errors -------------------------------------------


def test_a_cost_of_a_type_without_grad_one_names_the_hook():
    x = plain("x")
    with pytest.raises(TypeError, match=r"no initial gradient .* for the cost Mul\.0 of type "
                                        r"plain_double: .*PlainDouble\.grad_one\(var\)"):
        wb.grad(mul(x, plain("y")), x)


def test_a_variable_used_twice_without_add_gradients_names_it_and_the_hook():
    x, one = plain("x"), plain("one")
    z = mul(x, x)
    with pytest.raises(TypeError, match=r"cannot sum the 2 gradient contributions to x of "
                                        r"type plain_double: .*PlainDouble\.add_gradients"):
        wb.grad(None, x, known_grads={z: one})
    # used once, seeded by hand: no hook is needed
    y = plain("y")
    gx = wb.grad(None, x, known_grads={mul(x, y): one})
    assert wb.function([y, one], gx, linker="py")(2.0, 1.0) == 2.0


def test_zeros_for_a_type_without_grad_zero_name_the_hook():
    x, y, one = plain("x"), plain("y"), plain("one")
    with pytest.raises(TypeError, match=r"no zero gradient for y .*PlainDouble\.grad_zero"):
        wb.grad(None, [x, y], known_grads={mul(x, plain("w")): one},
                disconnected_inputs="ignore")
    # asking for no zeros needs no hook
    gy = wb.grad(None, y, known_grads={mul(x, plain("w")): one},
                 disconnected_inputs="ignore", return_disconnected="none")
    assert gy is None


def test_a_hook_must_return_a_variable():
    class Careless(PlainDouble):
        def grad_one(self, var):
            return 1.0

    careless = Careless()
    x = careless("x")
    with pytest.raises(TypeError, match=r"Careless\.grad_one returned float 1\.0 for Mul\.0; it "
                                        r"must return a Variable"):
        wb.grad(mul(x, careless("y")), x)


# -- ScalarType costs ----------------------------------------------------------------------

f64 = get_scalar_type("float64")
f32 = get_scalar_type("float32")
i32 = get_scalar_type("int32")


@functools.cache
def _derivative_of_x2_plus_3x():
    # built and compiled once for all hypothesis examples
    x = f64("x")
    cost = x * x + 3 * x  # x is used twice: the scalar add sums the contributions
    g = wb.grad(cost, x)
    return g, wb.function([x], g, linker="py")


@settings(max_examples=10, deadline=None)
@given(st.floats(-1e3, 1e3, allow_nan=False))
def test_grad_of_a_scalar_cost_is_the_analytic_derivative(value):
    g, derivative = _derivative_of_x2_plus_3x()
    assert g.type == f64 and g.owner.op.name == "add"
    assert np.isclose(derivative(value), 2 * value + 3, rtol=1e-12, atol=1e-12)


def test_the_seed_of_a_scalar_cost_is_a_scalar_one_of_its_gradient_dtype():
    x = f32("x")
    g, trace = wb.grad(x * x * x, x, trace=True)
    (seed,) = trace.seeds.values()
    assert isinstance(seed, ScalarConstant) and seed.type == f32 and seed.data == 1
    assert g.type == f32  # float32 stays float32
    assert wb.function([x], g, linker="py")(np.float32(2.0)) == np.float32(12.0)
    # an integer cost: the seed (and so every gradient) is in the default float dtype
    i, y = i32("i"), f64("y")
    gi = wb.grad(i * i, i)
    assert gi.type == f64
    gy, gi = wb.grad(y * i + i * i, [y, i])
    # i * i is integer-valued, so no gradient flows back through it (seed 003): di = y
    assert wb.function([y, i], [gy, gi], linker="py")(1.5, 3) == [3.0, 1.5]


def test_known_grads_on_scalars_and_the_default_linker():
    x = f64("x")
    cost = x * x + 3 * x
    g = wb.grad(None, x, known_grads={cost: 2})  # a number becomes a float64 scalar
    assert g.type == f64
    assert wb.function([x], g)(2.0) == 14.0  # default (C) linker
    # a seed is added to what flows from the cost: d/dx at sq = x*x gets (1 + s)
    sq, s = x * x, f64("s")
    g2 = wb.grad(sq + 3 * x, x, known_grads={sq: s})
    assert wb.function([x, s], g2, linker="py")(2.0, 0.5) == (1 + 0.5) * 2 * 2.0 + 3
    # a float64 seed for a float32 scalar is cast with the scalar cast: float32 stays float32
    x32 = f32("x32")
    g3 = wb.grad(None, x32, known_grads={x32 * x32: s})
    assert g3.type == f32
    assert wb.function([x32, s], g3, linker="py")(np.float32(3.0), 0.5) == np.float32(3.0)
