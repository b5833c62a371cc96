"""Gradients of the elementwise layer: every scalar Op through `Elemwise.L_op`, checked
with `verify_grad`, plus broadcasting, integer rules, dtypes, second order, R_op,
DimShuffle and the shape Ops."""

import numpy as np
import pytest

import workbench.core.scalar as ps
import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.grad import grad
from workbench.core.gradcheck import verify_grad
from workbench.core.graph.basic import Constant, io_toposort
from workbench.core.graph.type import DisconnectedType
from workbench.core.tensor import Elemwise
from workbench.core.tensor.elemwise import SumToShape

RNG = np.random.default_rng(20261122)


def uniform(low, high, shape=(3, 4)):
    return RNG.uniform(low, high, size=shape)


def away_from_zero(shape=(3, 4)):
    return RNG.choice([-1.0, 1.0], size=shape) * RNG.uniform(0.5, 2.0, size=shape)


def off_integers(shape=(3, 4)):
    """Values whose fractional part is 0.2..0.4: far from floor/ceil/round jumps."""
    return RNG.integers(-3, 3, size=shape) + RNG.uniform(0.2, 0.4, size=shape)


# name -> (function of float64 tensors, sampler of a valid point)
SMOOTH_UNARY = {
    "neg": (wt.neg, lambda: uniform(-2, 2)),
    "abs": (wt.abs, away_from_zero),
    "sqr": (wt.sqr, lambda: uniform(-2, 2)),
    "reciprocal": (wt.reciprocal, away_from_zero),
    "identity": (wt.identity, lambda: uniform(-2, 2)),
    "real": (wt.real, lambda: uniform(-2, 2)),
    "conj": (wt.conj, lambda: uniform(-2, 2)),
    # piecewise constant: the gradient is 0 (checked away from the jumps)
    "floor": (wt.floor, off_integers),
    "ceil": (wt.ceil, off_integers),
    "round_half_to_even": (wt.round_half_to_even, off_integers),
    "sign": (wt.sign, away_from_zero),
    "imag": (wt.imag, lambda: uniform(-2, 2)),
    "angle": (wt.angle, away_from_zero),
}
# every declared unary Op: on its declared domain
SMOOTH_UNARY.update({op.name: (getattr(wt, op.name),
                               (lambda lo, hi: lambda: uniform(lo, hi))(*op.domain[0]))
                     for op in ps.DECLARED_OPS if op.nin == 1 and op.derivative is not None})

SMOOTH_BINARY = {
    "add": (wt.add, lambda: (uniform(-2, 2), uniform(-2, 2))),
    "sub": (wt.sub, lambda: (uniform(-2, 2), uniform(-2, 2))),
    "mul": (wt.mul, lambda: (uniform(-2, 2), uniform(-2, 2))),
    "true_div": (wt.true_div, lambda: (uniform(-2, 2), away_from_zero())),
    "pow": (wt.pow, lambda: (uniform(0.5, 2), uniform(-2, 2))),
    "maximum": (wt.maximum, lambda: (uniform(-2, 2), uniform(-2, 2))),
    "minimum": (wt.minimum, lambda: (uniform(-2, 2), uniform(-2, 2))),
    # x / y in (2.1, 2.8): floor(x / y) = 2, so d/dy = -2
    "mod": (wt.mod, lambda: (uniform(2.2, 2.8), uniform(1.0, 1.04))),
    "int_div": (wt.floor_div, lambda: (uniform(2.2, 2.8), uniform(1.0, 1.04))),
}
SMOOTH_BINARY.update({op.name: (getattr(wt, op.name),
                                (lambda d: lambda: tuple(uniform(lo, hi) for lo, hi in d))(
                                    op.domain))
                      for op in ps.DECLARED_OPS
                      if op.nin == 2 and not op.fixed_inputs and op.derivative is not None})
#: declared Ops whose inputs but the last are fixed (polygamma's order, hyp2f1's a, b,
#: c): the gradient in the last input, the others constants from their domains
def _in_last_input(op):
    fixed = [lo for lo, _ in op.domain[:-1]]
    return (lambda x: getattr(wt, op.name)(*fixed, x), lambda: uniform(*op.domain[-1]))


SMOOTH_UNARY.update({op.name: _in_last_input(op) for op in ps.DECLARED_OPS
                     if op.nin >= 2 and op.fixed_inputs == tuple(range(op.nin - 1))})

MASK = np.array([[True, False, True, False]] * 3)
TERNARY = {
    "switch": (lambda a, b: wt.switch(MASK, a, b), lambda: (uniform(-2, 2), uniform(-2, 2))),
    # x stays clear of the bounds [-0.5, 0.5] so finite differences do not cross them
    "clip": (lambda x, lo, hi: wt.clip(x, lo, hi),
             lambda: (RNG.choice([-1.5, -0.1, 0.2, 1.5], size=(3, 4)),
                      uniform(-0.6, -0.4), uniform(0.4, 0.6))),
}

#: Ops with bool/integer outputs: the gradient of anything through them is zero.
DISCRETE_FLOAT_INPUT = {"eq", "neq", "lt", "gt", "le", "ge", "isnan", "isinf", "isfinite"}
DISCRETE_INT_INPUT = {"and_", "or_", "xor", "invert"}


def test_every_scalar_op_has_a_gradient_test():
    undifferentiated = {op.name for op in ps.DECLARED_OPS if op.derivative is None}
    covered = (set(SMOOTH_UNARY) | set(SMOOTH_BINARY) | set(TERNARY) | DISCRETE_FLOAT_INPUT
               | DISCRETE_INT_INPUT | undifferentiated)
    assert covered == set(ps.ALL_OPS)


@pytest.mark.parametrize("name", sorted(SMOOTH_UNARY))
def test_unary_gradients_match_finite_differences(name):
    fn, sample = SMOOTH_UNARY[name]
    verify_grad(fn, [sample()], rng=RNG)


@pytest.mark.parametrize("name", sorted(SMOOTH_BINARY))
def test_binary_gradients_match_finite_differences(name):
    fn, sample = SMOOTH_BINARY[name]
    verify_grad(fn, list(sample()), rng=RNG)


@pytest.mark.parametrize("name", sorted(TERNARY))
def test_switch_and_clip_gradients_match_finite_differences(name):
    fn, sample = TERNARY[name]
    verify_grad(fn, list(sample()), rng=RNG)


@pytest.mark.parametrize("name", sorted(DISCRETE_FLOAT_INPUT))
def test_bool_outputs_give_float_zero_gradients(name):
    op = Elemwise(ps.ALL_OPS[name])
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    out = op(x, y) if op.scalar_op.nin == 2 else op(x)
    wrt = [x, y] if op.scalar_op.nin == 2 else [x]
    grads = grad(wt.sum(wt.cast(out, "float64")), wrt)
    values = function(wrt, grads, on_unused_input="ignore")(*[uniform(-1, 1) for _ in wrt])
    for g, value in zip(grads, values):
        assert g.type.dtype == "float64"
        np.testing.assert_array_equal(value, np.zeros((3, 4)))


@pytest.mark.parametrize("name", sorted(DISCRETE_INT_INPUT))
def test_integer_inputs_of_bitwise_ops_get_float_zero_gradients(name):
    op = Elemwise(ps.ALL_OPS[name])
    i, j = wt.tensor("int32", shape=(None,)), wt.tensor("int32", shape=(None,))
    out = op(i, j) if op.scalar_op.nin == 2 else op(i)
    wrt = [i, j] if op.scalar_op.nin == 2 else [i]
    grads = grad(wt.sum(wt.cast(out, "float64")), wrt)
    values = function(wrt, grads, on_unused_input="ignore")(
        *[np.arange(3, dtype="int32") for _ in wrt])
    for g, value in zip(grads, values):
        assert g.type.dtype == "float64"
        np.testing.assert_array_equal(value, np.zeros(3))


# -- broadcasting -------------------------------------------------------------------------


def _column_and_row(fn):
    return lambda a, b: fn(wt.specify_shape(a, (3, 1)), wt.specify_shape(b, (1, 4)))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "true_div", "pow", "maximum", "arctan2"])
def test_broadcast_column_and_row(name):
    fn, _ = SMOOTH_BINARY[name]
    a = uniform(0.5, 2, (3, 1))
    b = uniform(0.5, 2, (1, 4))
    verify_grad(_column_and_row(fn), [a, b], rng=RNG)


@pytest.mark.parametrize("name", ["add", "mul", "pow", "minimum"])
def test_broadcast_matrix_and_0d(name):
    fn, _ = SMOOTH_BINARY[name]
    verify_grad(fn, [uniform(0.5, 2, (2, 3)), np.asarray(1.3)], rng=RNG)


def test_broadcast_gradient_has_the_input_type():
    x = wt.tensor("float64", shape=(3, 1))
    y = wt.tensor("float64", shape=(1, 4))
    s = wt.dscalar("s")
    gx, gy, gs = grad(wt.sum(x * y * s), [x, y, s])
    assert gx.type == x.type and gy.type == y.type and gs.type == s.type
    f = function([x, y, s], [gx, gy, gs])
    a, b = uniform(-1, 1, (3, 1)), uniform(-1, 1, (1, 4))
    va, vb, vs = f(a, b, 2.0)
    np.testing.assert_allclose(va, 2 * b.sum() * np.ones((3, 1)))
    np.testing.assert_allclose(vb, 2 * a.sum() * np.ones((1, 4)))
    np.testing.assert_allclose(vs, np.sum(a * b))


def test_broadcast_switch_and_clip_bounds():
    verify_grad(lambda c, a: wt.switch(MASK, wt.specify_shape(c, (3, 1)), a),
                [uniform(-1, 1, (3, 1)), uniform(-1, 1)], rng=RNG)
    verify_grad(lambda x, lo, hi: wt.clip(x, lo, hi),
                [RNG.choice([-1.5, 0.1, 1.5], size=(3, 4)), np.asarray(-0.5), np.asarray(0.5)],
                rng=RNG)


# -- documented conventions ----------------------------------------------------------------


def _grads(cost, wrt, *values):
    return function(wrt, grad(cost, wrt), on_unused_input="ignore")(*values)


def test_maximum_and_minimum_ties_go_to_the_first_input():
    x, y = wt.dvector("x"), wt.dvector("y")
    v = np.array([1.0, 2.0, 3.0])
    w = np.array([1.0, 5.0, 0.0])
    gx, gy = _grads(wt.sum(wt.maximum(x, y)), [x, y], v, w)
    np.testing.assert_array_equal(gx, [1, 0, 1])
    np.testing.assert_array_equal(gy, [0, 1, 0])
    gx, gy = _grads(wt.sum(wt.minimum(x, y)), [x, y], v, w)
    np.testing.assert_array_equal(gx, [1, 1, 0])
    np.testing.assert_array_equal(gy, [0, 0, 1])


def test_clip_gradient_goes_to_x_inside_and_to_the_bound_outside():
    x, lo, hi = wt.dvector("x"), wt.dscalar("lo"), wt.dscalar("hi")
    v = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    gx, glo, ghi = _grads(wt.sum(wt.clip(x, lo, hi)), [x, lo, hi], v, -1.0, 1.0)
    np.testing.assert_array_equal(gx, [0, 1, 1, 1, 0])  # touching a bound counts as inside
    assert (glo, ghi) == (1.0, 1.0)
    gx, glo, ghi = _grads(wt.sum(wt.clip(x, lo, hi)), [x, lo, hi], v, 1.0, -1.0)
    np.testing.assert_array_equal(gx, np.zeros(5))  # lo > hi: the output is hi everywhere
    assert (glo, ghi) == (0.0, 5.0)


def test_switch_masks_the_branches_and_the_condition_gets_zero():
    c, a, b = wt.dvector("c"), wt.dvector("a"), wt.dvector("b")
    cond = np.array([1.0, 0.0, 2.0])
    gc, ga, gb = _grads(wt.sum(wt.switch(c, a * 3.0, b)), [c, a, b], cond, cond, cond)
    np.testing.assert_array_equal(gc, [0, 0, 0])
    np.testing.assert_array_equal(ga, [3, 0, 3])
    np.testing.assert_array_equal(gb, [0, 1, 0])


def test_pow_gradient_at_zero_base():
    x, y = wt.dvector("x"), wt.dvector("y")
    gx, gy = _grads(wt.sum(wt.pow(x, y)), [x, y], np.array([0.0, 0.0]), np.array([2.0, 1.0]))
    np.testing.assert_array_equal(gx, [0.0, 1.0])
    np.testing.assert_array_equal(gy, [0.0, 0.0])  # not nan (0 * log 0)


def test_mod_gradients():
    x, y = wt.dvector("x"), wt.dvector("y")
    gx, gy = _grads(wt.sum(wt.mod(x, y)), [x, y], np.array([7.5, -7.5]), np.array([2.0, 2.0]))
    np.testing.assert_array_equal(gx, [1, 1])
    np.testing.assert_array_equal(gy, [-3, 4])  # -floor(x / y)


# -- seed 003's integer rules --------------------------------------------------------------


def test_int_of_x_then_float_of_y():
    """C = 0.5 * float(int(x)): dC/dx = 0 (int(x) is integer-valued), dC/dy = 0.5."""
    x = wt.dscalar("x")
    y = wt.cast(x, "int64")
    cost = 0.5 * wt.cast(y, "float64")
    gx, gy = grad(cost, [x, y])
    assert gx.type.dtype == "float64" and gy.type.dtype == "float64"
    vx, vy = function([x], [gx, gy], on_unused_input="ignore")(3.7)
    assert (vx, vy) == (0.0, 0.5)


def test_float_of_an_integer_input():
    y = wt.tensor("int32", shape=(None,))
    g = grad(wt.sum(wt.cast(y, "float64") * 0.5), y)
    assert g.type.dtype == "float64"
    np.testing.assert_array_equal(function([y], g)(np.arange(3, dtype="int32")), [0.5] * 3)


def test_integer_input_of_a_float_function_is_differentiated_as_real():
    """exp of an int8 vector: the gradient exists (exp is defined between integers)."""
    k = wt.tensor("int8", shape=(None,))
    g = grad(wt.sum(wt.exp(k)), k)
    assert g.type.dtype == "float64"
    np.testing.assert_allclose(function([k], g)(np.array([0, 1], dtype="int8")), [1, np.e])


def test_integer_arithmetic_gives_zero_gradients():
    i, j = wt.tensor("int64", shape=(None,)), wt.tensor("int64", shape=(None,))
    cost = wt.cast(wt.sum(i * j + i // j), "float64")
    gi, gj = grad(cost, [i, j])
    values = function([i, j], [gi, gj])(np.array([1, 2]), np.array([3, 4]))
    for g, v in zip([gi, gj], values):
        assert g.type.dtype == "float64"
        np.testing.assert_array_equal(v, [0, 0])


# -- dtypes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "log", "sqrt", "abs"])
def test_float32_gradients_stay_float32(name):
    fn, sample = SMOOTH_UNARY[name]
    x = wt.fvector("x")
    g = grad(wt.sum(fn(x)), x)
    assert g.type.dtype == "float32"
    nodes = io_toposort([x], [g])
    assert all(out.type.dtype != "float64" for n in nodes for out in n.outputs
               if hasattr(out.type, "dtype"))
    verify_grad(fn, [sample()[0].astype("float32")], rng=RNG)


def test_float32_input_mixed_with_float64():
    x, y = wt.fvector("x"), wt.dvector("y")
    gx, gy = grad(wt.sum(x * y), [x, y])
    assert gx.type.dtype == "float32" and gy.type.dtype == "float64"


# -- second order ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
def test_second_order_unary(name):
    fn, sample = SMOOTH_UNARY[name]
    verify_grad(lambda x: grad(wt.sum(fn(x)), x), [sample()], rng=RNG)


@pytest.mark.parametrize("name", ["mul", "pow"])
def test_second_order_binary(name):
    fn, sample = SMOOTH_BINARY[name]
    verify_grad(lambda x, y: grad(wt.sum(fn(x, y)), x), list(sample()), rng=RNG)
    verify_grad(lambda x, y: grad(wt.sum(fn(x, y)), y), list(sample()), rng=RNG)


def test_gradient_is_elementwise():
    """The gradient of an Elemwise is built from Elemwise nodes (fusion can fuse it)."""
    x, gz = wt.dvector("x"), wt.dvector("gz")
    for fn in (wt.tanh, wt.sigmoid, lambda v: wt.pow(v, x)):
        out = fn(x)
        grads = out.owner.op.L_op(out.owner.inputs, [out], [gz])
        nodes = io_toposort([x, out, gz], grads)
        assert nodes and all(isinstance(n.op, Elemwise) or isinstance(n.inputs[0], Constant)
                             for n in nodes)  # constants are padded by DimShuffle{x}


# -- complex numbers ------------------------------------------------------------------------------


def _complex(re, im):
    return wt.cast(re, "complex128") + wt.cast(im, "complex128") * 1j


@pytest.mark.parametrize("name", ["exp", "log", "sin", "sqrt", "tanh", "abs", "angle", "real",
                                  "imag", "conj", "sqr", "reciprocal"])
def test_complex_gradients(name):
    """A real cost of z = re + i*im: checks the dC/dRe + i dC/dIm convention end to end."""
    fn = SMOOTH_UNARY[name][0]

    def cost(re, im):
        out = fn(_complex(re, im))
        if out.type.dtype.is_complex:
            return wt.real(out) + wt.imag(out) * 0.7
        return out

    verify_grad(cost, [uniform(0.5, 1.5), uniform(0.5, 1.5)], rng=RNG)


def test_complex_mul_and_div():
    def cost(a, b, c, d):
        z = _complex(a, b) * _complex(c, d) / _complex(d, a)
        return wt.real(z) - wt.imag(z) * 0.3

    verify_grad(cost, [uniform(0.5, 1.5) for _ in range(4)], rng=RNG)


# -- R_op ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "log", "abs", "floor"])
def test_elemwise_r_op_unary(name):
    fn, sample = SMOOTH_UNARY[name]
    x, v = wt.dmatrix("x"), wt.dmatrix("v")
    out = fn(x)
    (r,) = out.owner.op.R_op(out.owner.inputs, [v])
    a, b = sample(), uniform(-1, 1)
    f = function([x], out)
    eps = 1e-6
    expected = (f(a + eps * b) - f(a - eps * b)) / (2 * eps)
    np.testing.assert_allclose(function([x, v], r, on_unused_input="ignore")(a, b), expected,
                               rtol=1e-5, atol=1e-7)


def test_elemwise_r_op_broadcast_and_partial_eval_points():
    x = wt.tensor("float64", shape=(3, 1))
    y = wt.tensor("float64", shape=(1, 4))
    vx = wt.tensor("float64", shape=(3, 1))
    out = wt.pow(x, y)
    (r,) = out.owner.op.R_op(out.owner.inputs, [vx, None])
    assert r.type.shape == (3, 4)
    a, b, dv = uniform(0.5, 2, (3, 1)), uniform(-1, 1, (1, 4)), uniform(-1, 1, (3, 1))
    np.testing.assert_allclose(function([x, y, vx], r)(a, b, dv), b * a ** (b - 1) * dv)
    assert out.owner.op.R_op(out.owner.inputs, [None, None]) == [None]


def test_elemwise_r_op_of_composite():
    i0, i1 = ps.get_scalar_type("float64")(), ps.get_scalar_type("float64")()
    op = Elemwise(ps.Composite([i0, i1], [ps.exp(i0) * i1]))
    x, y, vx, vy = (wt.dvector(n) for n in "x y vx vy".split())
    out = op(x, y)
    (r,) = op.R_op(out.owner.inputs, [vx, vy])
    a, b, da, db = (uniform(-1, 1, (3,)) for _ in range(4))
    expected = np.exp(a) * b * da + np.exp(a) * db
    np.testing.assert_allclose(function([x, y, vx, vy], r)(a, b, da, db), expected)


# -- DimShuffle, shapes, casts -----------------------------------------------------------------


def test_dimshuffle_gradient():
    verify_grad(lambda x: wt.dimshuffle(wt.specify_shape(x, (3, 1, 4)), (2, "x", 0)),
                [uniform(-1, 1, (3, 1, 4))], rng=RNG)
    verify_grad(lambda x: wt.dimshuffle(x, (1, 0)), [uniform(-1, 1, (3, 4))], rng=RNG)


def test_dimshuffle_r_op():
    x, v = wt.dmatrix("x"), wt.dmatrix("v")
    out = wt.dimshuffle(x, (1, "x", 0))
    (r,) = out.owner.op.R_op([x], [v])
    b = uniform(-1, 1)
    np.testing.assert_array_equal(function([v], r)(b), b.T[:, None, :])


def test_dimshuffle_of_integers_gives_float_zeros():
    i = wt.tensor("int32", shape=(None, None))
    (g,) = wt.dimshuffle(i, (1, 0)).owner.op.grad([i], [wt.dmatrix()])
    assert g.type.dtype == "float64"


def test_shape_ops_are_disconnected():
    x = wt.dmatrix("x")
    for out in (wt.shape(x), wt.shape_i(x, 0)):
        (g,) = out.owner.op.grad([x], [wt.zeros_like(out, dtype="float64")])
        assert isinstance(g.type, DisconnectedType)
        assert out.owner.op.connection_pattern(out.owner) == [[False]]
    cost = wt.sum(x) * wt.cast(wt.shape_i(x, 0), "float64")
    g = grad(cost, x)
    np.testing.assert_array_equal(function([x], g)(np.ones((2, 3))), np.full((2, 3), 2.0))


def test_specify_shape_passes_the_gradient_through():
    x = wt.dmatrix("x")
    out = wt.specify_shape(x, (2, 3))
    g, *rest = out.owner.op.grad(out.owner.inputs, [wt.dmatrix("gz")])
    assert all(isinstance(r.type, DisconnectedType) for r in rest)
    verify_grad(lambda a: wt.specify_shape(a, (2, 3)) * 2.0, [uniform(-1, 1, (2, 3))], rng=RNG)
    (r,) = out.owner.op.R_op(out.owner.inputs, [wt.dmatrix("v")] + [None] * 2)
    assert r.type.shape == (2, 3)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_cast_between_floats_gives_the_gradient_in_the_input_dtype(dtype):
    x = wt.dvector("x")
    y = wt.cast(x, dtype)
    cost = wt.sum(wt.real(y) * 3.0) if dtype == "complex128" else wt.sum(y * 3.0)
    g = grad(cost, x)
    assert g.type.dtype == "float64"
    np.testing.assert_allclose(function([x], g)(np.ones(2)), [3.0, 3.0])


# -- broadcasting decided at run time -----------------------------------------------------


def test_runtime_broadcasting_is_summed_at_run_time():
    """Static shapes (?, ?): whether x broadcasts is only known when values arrive."""
    verify_grad(wt.mul, [uniform(-1, 1, (3, 1)), uniform(-1, 1, (1, 4))], rng=RNG)
    verify_grad(wt.pow, [uniform(0.5, 2, (1, 4)), uniform(-1, 1, (3, 4))], rng=RNG)
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    gx, gy = grad(wt.sum(x * y), [x, y])
    f = function([x, y], [gx, gy])
    a, b = uniform(-1, 1, (3, 4)), uniform(-1, 1, (3, 4))
    va, vb = f(a, b)  # no broadcasting: the plain products
    np.testing.assert_allclose(va, b)
    np.testing.assert_allclose(vb, a)


def test_sum_to_shape_op():
    g = wt.dmatrix("g")
    n = wt.lscalar("n") if hasattr(wt, "lscalar") else wt.tensor("int64", shape=())
    out = SumToShape()(g, n, 1)
    assert out.type.shape == (None, 1)
    f = function([g, n], out)
    v = uniform(-1, 1, (3, 4))
    np.testing.assert_allclose(f(v, 3), v.sum(axis=1, keepdims=True))
    with pytest.raises(ValueError, match="cannot be summed"):
        f(v, 2)
    (gg, *rest) = out.owner.op.grad(out.owner.inputs, [wt.dmatrix("gz")])
    assert all(isinstance(r.type, DisconnectedType) for r in rest)
    verify_grad(lambda a: SumToShape()(a, 1, 4), [uniform(-1, 1, (3, 4))], rng=RNG)


def test_a_scalar_op_without_gradient_gives_a_null_gradient():
    from workbench.core.grad import NullTypeGradError

    class Opaque(ps.UnaryScalarOp):
        default_preference = staticmethod(ps.upgrade_to_float)

        def impl(self, x):
            return x * 2

    x = wt.dvector("x")
    out = Elemwise(Opaque(name="opaque"))(x)
    (g,) = out.owner.op.L_op([x], [out], [wt.dvector("gz")])
    assert "not implemented" in g.type.why_null
    with pytest.raises(NullTypeGradError, match="opaque"):
        grad(wt.sum(out), x)
