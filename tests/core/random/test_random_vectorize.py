"""vectorize_graph through random draws: one draw with the batch in its shape."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb


def test_a_batched_parameter_with_a_size_draws_per_item_and_advances():
    mu = wt.dscalar("mu")
    srng = wb.random.RandomStream(seed=3)
    y = srng.normal(mu, 1.0, size=(4,))
    mus = wt.dvector("mus")
    batched = wb.vectorize_graph(y, {mu: mus})
    assert batched.type.shape == (None, 4)
    f = wb.function([mus], batched)
    first = f(np.array([0.0, 100.0, 1000.0]))
    assert first.shape == (3, 4)
    np.testing.assert_allclose(first.mean(axis=1), [0.0, 100.0, 1000.0], atol=3.0)
    assert not np.allclose(first[0], first[1] - 100.0)  # independent noise per item
    assert not np.array_equal(f(np.zeros(3)), f(np.zeros(3)))  # the state advances
    # it is the draw NumPy makes for the batched shape from that generator
    g = np.random.default_rng(np.random.SeedSequence(3, spawn_key=(0,)))
    srng.seed(3)
    np.testing.assert_array_equal(f(np.array([0.0, 1.0])),
                                  g.normal(np.array([[0.0], [1.0]]), 1.0, size=(2, 4)))


def test_vector_parameters_and_vector_draws_keep_their_core_dimensions():
    srng = wb.random.RandomStream(seed=4)
    a = wt.dvector("a")
    draws = wb.vectorize_graph(srng.dirichlet(a), {a: wt.dmatrix("A")})
    (alphas,) = [v for v in wb.graph_inputs([draws]) if v.name == "A"]
    values = wb.function([alphas], draws)(np.array([[1.0, 1.0, 1.0], [50.0, 1.0, 1.0]]))
    assert values.shape == (2, 3)
    np.testing.assert_allclose(values.sum(axis=1), 1.0)
    m, s = wt.dvector("m"), wt.dscalar("s")
    x = srng.normal(m, s)
    batched = wb.vectorize_graph(x, {s: wt.dvector("ss")})  # s batched, m not
    assert batched.type.ndim == 2


def test_the_size_cannot_be_batched():
    from workbench.core.tensor.vectorize import vectorize_node

    x = wb.random.normal(size=(2,), rng=np.random.default_rng(0))
    rng, _, loc, scale = x.owner.inputs
    with pytest.raises(TypeError, match="generator state or its size"):
        vectorize_node(x.owner, [rng, wt.lmatrix("sizes"), loc, scale])


@pytest.mark.parametrize("build", [
    lambda x: wb.random.permutation(x, rng=np.random.default_rng(0)),
    lambda x: wb.random.choice(x, size=(4,), rng=np.random.default_rng(0)),
    lambda x: wb.random.choice(3, size=(4,), p=x / x.sum(), rng=np.random.default_rng(0)),
], ids=["permutation", "choice", "choice_p"])
def test_choice_and_permutation_refuse_a_batched_population(build):
    x = wt.dvector("x")
    draw = build(x)
    with pytest.raises(TypeError, match=f"{draw.owner.op.method}.*cannot batch "
                                                  "its parameters"):
        wb.vectorize_graph(draw, {x: wt.dmatrix("xs")})
    # batching something else in the graph leaves the draw as it is
    y = wt.dscalar("y")
    out = wb.vectorize_graph(draw.sum() * y, {y: wt.dvector("ys")})
    assert out.type.ndim == 1
