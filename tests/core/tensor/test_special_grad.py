"""Gradients of the softmax family: `Softmax`, `LogSoftmax`, `LogSumExp` over several
axes (and keepdims), second order, `R_op`, and the gradient of a softmax
cross-entropy against its closed form ``softmax(x) - onehot``.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.grad import grad
from workbench.core.gradcheck import verify_grad


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(3)


def _eval(outputs, inputs, *values):
    return function(inputs, outputs, on_unused_input="ignore")(*values)


@pytest.mark.parametrize("fn", [wt.softmax, wt.log_softmax])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_softmax_grad(rng, fn, axis):
    verify_grad(lambda a: fn(a, axis=axis), [rng.normal(size=(2, 3, 4))], rng=rng)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_grad(rng, axis, keepdims):
    verify_grad(lambda a: wt.logsumexp(a, axis=axis, keepdims=keepdims),
                [rng.normal(size=(2, 3, 4))], rng=rng)


def test_logsumexp_grad_is_stable_for_large_inputs():
    """The gradient reads the (stable) output: exp(x - out) is the softmax, no overflow."""
    x = wt.dvector("x")
    g = grad(wt.logsumexp(x), x)
    np.testing.assert_allclose(_eval(g, [x], np.array([1000.0, 1000.0])), [0.5, 0.5])


@pytest.mark.parametrize("fn", [wt.softmax, wt.log_softmax,
                                lambda a, axis: wt.logsumexp(a, axis=axis)])
def test_softmax_family_second_order(rng, fn):
    def first(a):
        return grad(wt.sum(wt.sin(fn(a, axis=-1))), a)

    verify_grad(first, [rng.normal(size=(2, 3))], rng=rng)


def test_softmax_cross_entropy_grad_is_softmax_minus_onehot(rng):
    x = wt.dmatrix("x")
    onehot = np.eye(4)[[0, 3, 1]]
    cost = -wt.sum(wt.log_softmax(x, axis=1) * onehot)
    g = grad(cost, x)
    xv = rng.normal(size=(3, 4))
    e = np.exp(xv - xv.max(axis=1, keepdims=True))
    np.testing.assert_allclose(_eval(g, [x], xv), e / e.sum(axis=1, keepdims=True) - onehot)
    verify_grad(lambda a: -wt.sum(wt.log(wt.softmax(a, axis=1)) * onehot), [xv], rng=rng)


def test_softmax_grad_keeps_float32():
    x = wt.tensor("float32", shape=(None, 5))
    for build in (wt.softmax, wt.log_softmax):
        assert grad(wt.sum(build(x) ** 2), x).type == x.type
    assert grad(wt.logsumexp(x), x).type == x.type


@pytest.mark.parametrize(("build", "axis"), [
    (wt.softmax, -1), (wt.softmax, None), (wt.log_softmax, 0),
    (lambda a, axis: wt.logsumexp(a, axis=axis), 1),
    (lambda a, axis: wt.logsumexp(a, axis=axis, keepdims=True), None),
])
def test_softmax_family_r_op(rng, build, axis):
    """R_op is the directional derivative: (f(x + h v) - f(x - h v)) / 2h."""
    x, v = wt.dmatrix("x"), wt.dmatrix("v")
    out = build(x, axis)
    (r,) = out.owner.op.R_op([x], [v])
    assert out.owner.op.R_op([x], [None]) == [None]
    xv, vv = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    f = function([x], out)
    h = 1e-6
    numeric = (f(xv + h * vv) - f(xv - h * vv)) / (2 * h)
    np.testing.assert_allclose(_eval(r, [x, v], xv, vv), numeric, rtol=1e-6, atol=1e-8)


def test_rop_forward_mode_through_the_library(rng):
    """`Rop` with the Ops' own R_op (Dot, Softmax, Sum, cumsum), and through the
    double-L_op fallback for those without one (Max, cumprod), against finite
    differences."""
    from workbench.core.derivatives import Rop

    x, w, v = wt.dmatrix("x"), wt.dmatrix("w"), wt.dmatrix("v")
    xv, wv, vv = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    h = 1e-6
    forward = wt.sum(wt.softmax(wt.dot(x, w), axis=1) * wt.cumsum(x, axis=1)[:, :2], axis=0)
    fallback = wt.max(wt.cumprod(wt.dot(x, w), axis=0), axis=0)
    for y, own in ((forward, True), (fallback, None)):
        r = Rop(y, w, v, use_op_rop_implementation=own)
        f = function([x, w], y)
        numeric = (f(xv, wv + h * vv) - f(xv, wv - h * vv)) / (2 * h)
        np.testing.assert_allclose(_eval(r, [x, w, v], xv, wv, vv), numeric, rtol=1e-6,
                                   atol=1e-7)


def test_softmax_family_grad_float32(rng):
    x = rng.normal(size=(3, 4)).astype("float32")
    for fn in (wt.softmax, wt.log_softmax, wt.logsumexp):
        verify_grad(lambda a, fn=fn: fn(a, axis=1), [x], rng=rng)
