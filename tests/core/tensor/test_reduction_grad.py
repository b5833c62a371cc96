"""Gradients of the reductions (sum, prod, max/min, all/any, argmax/argmin), of their
compositions (mean, var, std) and of the cumulative Ops (cumsum, cumprod).

Each gradient is checked against finite differences with `verify_grad` in float64,
over several axes (negative, tuples, None) and with keepdims; the integer rules of
seed 003 (argmax, integer sums) and the zero / tie cases are spelled out.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.grad import grad
from workbench.core.gradcheck import verify_grad

AXES = [None, 0, 1, -1, (0, 2), (-1, 0)]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)


def _eval(outputs, inputs, *values):
    return function(inputs, outputs, on_unused_input="ignore")(*values)


# -- sum / prod / max / min ---------------------------------------------------------


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_grad(rng, axis, keepdims):
    x = rng.normal(size=(2, 3, 4))
    verify_grad(lambda a: wt.sum(a, axis=axis, keepdims=keepdims), [x], rng=rng)


@pytest.mark.parametrize("axis", AXES)
def test_prod_grad(rng, axis):
    x = rng.uniform(0.5, 1.5, size=(2, 3, 4)) * rng.choice([-1, 1], size=(2, 3, 4))
    verify_grad(lambda a: wt.prod(a, axis=axis), [x], rng=rng)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_prod_grad_with_zeros(rng, axis):
    """No zero, one zero and two zeros in the reduced slices: prod is linear in each
    element, so finite differences are exact even across the zeros."""
    x = rng.uniform(0.5, 1.5, size=(3, 4))
    x[0, 1] = 0.0  # row 0: one zero
    x[1, 0] = x[1, 3] = 0.0  # row 1: two zeros
    verify_grad(lambda a: wt.prod(a, axis=axis), [x], rng=rng)


def test_prod_grad_values_with_zeros():
    x = wt.dvector("x")
    g = grad(wt.prod(x), x)
    # one zero: the zero's position gets the product of the others, the others 0
    np.testing.assert_array_equal(_eval(g, [x], np.array([2.0, 0.0, 3.0])), [0.0, 6.0, 0.0])
    # two zeros: every product of "the others" contains a zero
    np.testing.assert_array_equal(_eval(g, [x], np.array([0.0, 0.0, 3.0])), [0.0, 0.0, 0.0])
    np.testing.assert_allclose(_eval(g, [x], np.array([2.0, 4.0, 3.0])), [12.0, 6.0, 8.0])


@pytest.mark.parametrize("fn", [wt.max, wt.min])
@pytest.mark.parametrize("axis", AXES)
def test_max_min_grad(rng, fn, axis):
    x = rng.permutation(24).reshape(2, 3, 4) / 7.0  # distinct values: no ties
    verify_grad(lambda a: fn(a, axis=axis, keepdims=axis == 1), [x], rng=rng)


def test_max_grad_ties_all_receive_the_gradient():
    """Tie rule (as PyTensor): every position equal to the maximum receives the whole
    output gradient, so the gradient of a tied max sums to the number of ties."""
    x = wt.dvector("x")
    g = grad(wt.max(x), x)
    np.testing.assert_array_equal(_eval(g, [x], np.array([1.0, 3.0, 3.0, 2.0])),
                                  [0.0, 1.0, 1.0, 0.0])
    m = wt.dmatrix("m")
    g = grad(wt.sum(wt.min(m, axis=0) * np.array([1.0, 10.0])), m)
    np.testing.assert_array_equal(_eval(g, [m], np.array([[1.0, 5.0], [1.0, 4.0]])),
                                  [[1.0, 0.0], [1.0, 10.0]])


def test_max_and_argmax_grad(rng):
    x = rng.permutation(12).reshape(3, 4) / 5.0
    verify_grad(lambda a: wt.max_and_argmax(a, axis=1)[0], [x], rng=rng)


def test_reduction_grad_keeps_the_input_type():
    x = wt.tensor("float32", shape=(2, None, 4))
    for build in (wt.sum, wt.prod, wt.max, wt.min):
        g = grad(build(x, axis=(0, 2)).sum(), x)
        assert g.type == x.type, (build, g.type)
    # an accumulation in float64 still gives a float32 gradient
    g = grad(wt.sum(x, dtype="float64"), x)
    assert g.type.dtype == "float32"


def test_sum_of_ints_to_float_flows_back():
    """sum(int x, dtype=float64) is a float function of x: seed 003 says the gradient is
    the one a float x would get, in a float dtype."""
    xi = wt.lvector("xi")
    g = grad(wt.sum(xi, dtype="float64") * 2.0, xi)
    assert g.type.dtype == "float64"
    np.testing.assert_array_equal(_eval(g, [xi], np.array([1, 2, 3])), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("axis", [None, 0, (0, 1)])
def test_sum_second_order(rng, axis):
    x = rng.normal(size=(3, 4))

    def first(a):
        return grad(wt.sum(wt.sum(a, axis=axis) ** 2), a)

    verify_grad(first, [x], rng=rng)


@pytest.mark.parametrize("build", [
    lambda a: wt.prod(a, axis=1), lambda a: wt.max(a, axis=0), lambda a: wt.cumprod(a, axis=1),
    lambda a: wt.cumsum(a),
])
def test_second_order_away_from_zeros(rng, build):
    """Second order through prod / max / cumprod / cumsum gradients. (At an input exactly
    0, the second derivative of prod and cumprod is not exact: see `_prod_grad`.)"""
    x = rng.uniform(0.5, 1.5, size=(3, 4))
    verify_grad(lambda a: grad(wt.sum(wt.sin(build(a))), a), [x], rng=rng)


def test_sum_r_op_is_the_sum_of_the_point(rng):
    x, v = wt.dmatrix("x"), wt.dmatrix("v")
    out = wt.sum(x, axis=1)
    (r,) = out.owner.op.R_op([x], [v])
    vv = rng.normal(size=(2, 3))
    np.testing.assert_allclose(_eval(r, [x, v], vv, vv), vv.sum(axis=1))


REDUCERS = {
    "sum": wt.sum, "prod": wt.prod, "max": wt.max, "min": wt.min, "mean": wt.mean,
    "logsumexp": wt.logsumexp,
}


@settings(max_examples=12, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3), data=st.data(),
       name=st.sampled_from(sorted(REDUCERS)), keepdims=st.booleans())
def test_reduction_grad_random_axes(shape, data, name, keepdims):
    """Any shape, any subset of axes (given as negative or positive ints), with keepdims."""
    ndim = len(shape)
    axes = data.draw(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                              max_size=ndim))
    seed = data.draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = rng.permutation(np.prod(shape)).reshape(shape) / 4.0 + 0.5  # distinct, non-zero
    verify_grad(lambda a: REDUCERS[name](a, axis=tuple(axes), keepdims=keepdims), [x],
                rng=rng)


# -- integer and boolean outputs (seed 003) --------------------------------------------


@pytest.mark.parametrize("build", [wt.argmax, wt.argmin])
def test_argmax_grad_is_zero(rng, build):
    """Seed 003: argmax of x along an axis has a zero gradient with respect to x (its
    output is integer: a step function). The axis is a property, not an input."""
    x = wt.dmatrix("x")
    out = build(x, axis=1)
    g = grad(None, x, known_grads={out: wt.ones_like(out, dtype="float64")})
    assert g.type.dtype == "float64"
    np.testing.assert_array_equal(_eval(g, [x], rng.normal(size=(2, 3))), np.zeros((2, 3)))
    node = out.owner
    (direct,) = node.op.L_op(node.inputs, node.outputs, [wt.dvector()])
    assert direct.type.dtype == "float64" and direct.type.ndim == 2


@pytest.mark.parametrize("build", [wt.all, wt.any])
def test_all_any_grad_is_float_zeros(rng, build):
    x = wt.dmatrix("x")
    out = build(x, axis=0)
    node = out.owner
    (g,) = node.op.L_op(node.inputs, node.outputs, [wt.dvector()])
    assert g.type.dtype == "float64"
    np.testing.assert_array_equal(_eval(g, [x], rng.normal(size=(2, 3))), np.zeros((2, 3)))


def test_integer_sum_gives_float_zeros():
    xi = wt.imatrix("xi")
    out = wt.sum(xi, axis=0)  # int64 output
    node = out.owner
    (g,) = node.op.L_op(node.inputs, node.outputs, [wt.dvector()])
    assert g.type.dtype.is_float
    np.testing.assert_array_equal(_eval(g, [xi], np.ones((2, 3), "int32")), np.zeros((2, 3)))


# -- compositions -------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
@pytest.mark.parametrize("build", [
    lambda a, ax: wt.mean(a, axis=ax),
    lambda a, ax: wt.var(a, axis=ax),
    lambda a, ax: wt.std(a, axis=ax, ddof=1, keepdims=True),
])
def test_mean_var_std_grad(rng, axis, build):
    x = rng.normal(size=(3, 4))
    verify_grad(lambda a: build(a, axis), [x], rng=rng)


# -- cumulative Ops -----------------------------------------------------------------


@pytest.mark.parametrize("fn", [wt.cumsum, wt.cumprod])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumulative_grad(rng, fn, axis):
    x = rng.uniform(0.5, 1.5, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))
    verify_grad(lambda a: fn(a, axis=axis), [x], rng=rng)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cumprod_grad_with_zeros(rng, axis):
    """Zeros along the axis (one, two, at the start and at the end): the gradient is
    exact, not the nan of ``cumsum(reverse(gz * out)) / x``."""
    x = rng.uniform(0.5, 1.5, size=(4, 5))
    x[0, 0] = 0.0
    x[1, 2] = x[1, 4] = 0.0
    x[3, 4] = 0.0
    x[2, 1] = 0.0
    verify_grad(lambda a: wt.cumprod(a, axis=axis), [x], rng=rng)


def test_cumprod_grad_values_with_a_zero():
    x = wt.dvector("x")
    g = grad(wt.sum(wt.cumprod(x)), x)
    # out = [2, 0, 0]: d/dx0 = 1 + x1 + x1 x2 = 1; d/dx1 = x0 + x0 x2 = 8; d/dx2 = x0 x1 = 0
    np.testing.assert_array_equal(_eval(g, [x], np.array([2.0, 0.0, 3.0])), [1.0, 8.0, 0.0])


def test_cumulative_grad_of_a_scalar_and_of_ints(rng):
    verify_grad(lambda a: wt.cumprod(a), [np.array(1.7)], rng=rng)
    xi = wt.lmatrix("xi")
    out = wt.cumsum(xi, axis=1)
    node = out.owner
    (g,) = node.op.L_op(node.inputs, node.outputs, [wt.lmatrix()])
    assert g.type.dtype.is_float and g.type.ndim == 2


def test_complex_prod_and_cumprod_follow_the_elemwise_convention(rng):
    """Complex inputs (with a zero): the gradients equal those of the products spelled
    with Elemwise mul (contributions ``gz * conj(derivative)``)."""
    z = wt.zmatrix("z")
    zv = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    zv[0, 1] = 0

    def abs2(v):
        return wt.sum(wt.real(v * wt.conj(v)))

    spelled = wt.stack([z[:, 0], z[:, 0] * z[:, 1], z[:, 0] * z[:, 1] * z[:, 2]], axis=1)
    for op_form, mul_form in ((wt.prod(z, axis=1), spelled[:, 2]),
                              (wt.cumprod(z, axis=1), spelled)):
        got = _eval([grad(abs2(op_form), z), grad(abs2(mul_form), z)], [z], zv)
        np.testing.assert_allclose(got[0], got[1])


def test_cumsum_r_op(rng):
    x, v = wt.dmatrix("x"), wt.dmatrix("v")
    out = wt.cumsum(x, axis=0)
    (r,) = out.owner.op.R_op([x], [v])
    vv = rng.normal(size=(3, 2))
    np.testing.assert_allclose(_eval(r, [x, v], vv, vv), np.cumsum(vv, axis=0))


def test_max_with_initial_grad(rng):
    """Where `initial` is the maximum the gradient is zero; elsewhere it is max's."""
    x = rng.permutation(12).reshape(3, 4) / 7.0 - 1.0  # distinct, no value equal to 0.3
    x[0] = -np.abs(x[0]) - 0.5  # row 0 wholly below the initial value
    x[1:, 1] = [1.2, 1.7]  # rows 1 and 2 above it
    verify_grad(lambda a: wt.max(a, axis=1, initial=0.3), [x], rng=rng)
    a = wt.dmatrix("a")
    g = _eval(grad(wt.sum(wt.max(a, axis=1, initial=0.3)), a), [a], x)
    np.testing.assert_array_equal(g[0], np.zeros(4))
    np.testing.assert_array_equal(g[1:].sum(axis=1), [1.0, 1.0])
