"""Gradients of reparameterised draws; a clear error for the others."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb


def _fixed(seed=0):
    return np.random.default_rng(seed)  # a constant state: the same noise at every call


def test_normal_gradient_in_loc_and_scale():
    wb.verify_grad(lambda loc, scale: (wb.random.normal(loc, scale, size=(3, 2), rng=_fixed())
                                       ** 2).sum(),
                   [np.array([0.5, -1.0]), np.array([[1.5], [0.7], [2.0]])])


def test_uniform_gradient_in_low_and_high():
    wb.verify_grad(lambda lo, hi: wt.sin(wb.random.uniform(lo, hi, rng=_fixed(1))).sum(),
                   [np.array([-1.0, 0.0, 0.5]), np.array([2.0, 1.0, 3.0])])


def test_exponential_and_gamma_gradient_in_scale():
    wb.verify_grad(lambda s: (wb.random.exponential(s, size=(4, 3), rng=_fixed(2)) ** 2).sum(),
                   [np.array([0.5, 1.0, 2.0])])
    wb.verify_grad(lambda s: wt.log(wb.random.gamma(2.5, s, size=5, rng=_fixed(3))).sum()
                   + wb.random.gamma(2.5, s, size=5, rng=_fixed(3)).sum(), [np.array(1.7)])


def test_the_gradient_is_the_pathwise_derivative():
    loc, scale = wt.dscalar("loc"), wt.dscalar("scale")
    x = wb.random.normal(loc, scale, size=(4,), rng=_fixed())
    g_loc, g_scale = wb.grad(x.sum(), [loc, scale])
    eps = np.random.default_rng(0).normal(size=4)
    gl, gs = wb.function([loc, scale], [g_loc, g_scale])(1.0, 2.0)
    assert gl == pytest.approx(4.0)
    assert gs == pytest.approx(eps.sum())


@pytest.mark.parametrize("make", [
    lambda p: wb.random.beta(p, 2.0, size=3, rng=_fixed()),
    lambda p: wb.random.poisson(p, size=3, rng=_fixed()),
    lambda p: wb.random.bernoulli(p, size=3, rng=_fixed()),
])
def test_non_differentiable_draws_raise_a_clear_error(make):
    p = wt.dscalar("p")
    draw = make(p)
    with pytest.raises(wb.NullTypeGradError, match="not a differentiable function"):
        wb.grad(wt.cast(draw, "float64").sum(), p)


def test_the_state_is_not_differentiated_when_not_asked():
    srng = wb.random.RandomStream(0)
    w = wt.dvector("w")
    cost = (w * srng.normal(size=(3,))).sum()
    g = wb.function([w], wb.grad(cost, w))(np.ones(3))
    assert g.shape == (3,)


@pytest.mark.parametrize("alpha, theta, linker", [(0.5, 1.0, "py"), (2.0, 3.0, "c"),
                                                   (20.0, 0.5, "c")])
def test_gamma_shape_gradient_by_implicit_reparameterisation(alpha, theta, linker):
    from workbench.core.compile.mode import available_linkers

    if linker not in available_linkers():
        pytest.skip(f"no {linker} linker here")
    a = wt.dscalar("a")
    draws = wb.random.RandomStream(seed=1).gamma(a, theta, size=(100_000,))
    g1, g2 = wb.function([a], [wb.grad(draws.mean(), a), wb.grad((draws ** 2).mean(), a)],
                         linker=linker)(alpha)
    # d/dalpha E[x] = theta and d/dalpha E[x^2] = theta^2 (2 alpha + 1), on 1e5 draws
    assert g1 == pytest.approx(theta, rel=0.02)
    assert g2 == pytest.approx(theta ** 2 * (2 * alpha + 1), rel=0.03)


def test_rop_of_reparameterised_draws_is_the_directional_derivative():
    loc, v = wt.dvector("loc"), wt.dvector("v")
    scale, v_scale = wt.dscalar("scale"), wt.dscalar("v_scale")
    x = wb.random.normal(loc, scale, size=(2, 3), rng=_fixed())
    jv = wb.Rop(x, [loc, scale], [v, v_scale])
    got = wb.function([loc, scale, v, v_scale], jv)(np.zeros(3), 2.0, np.arange(3.0), 0.5)
    eps = np.random.default_rng(0).normal(size=(2, 3))
    np.testing.assert_allclose(got, np.arange(3.0) + 0.5 * eps)
    y = wb.random.uniform(loc, 5.0, rng=_fixed(1))
    u = np.random.default_rng(1).uniform(size=3)
    got = wb.function([loc, v], wb.Rop(y, loc, v))(np.zeros(3), np.ones(3))
    np.testing.assert_allclose(got, 1.0 - u)
