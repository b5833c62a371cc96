"""local_subtensor_rv_lift: indexing a draw becomes a smaller draw, the same law but other
numbers, so only when asked for (never in the default modes)."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import get_mode
from workbench.core.random.op import RandomVariable
from workbench.core.tensor.subtensor import Subtensor

LIFT = "local_subtensor_rv_lift"


def _lifted_mode(linker="py"):
    return get_mode("FAST_RUN").clone(linker=linker).including(LIFT)


def _draws(f):
    return [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, RandomVariable)]


def _static(values):
    """A constant parameter whose static shape is known (so the lift can index it)."""
    return wt.as_tensor_variable(np.asarray(values, dtype="float64"))


@pytest.mark.parametrize("index", [
    (2,), (-1,), (slice(1, None),), (slice(None, None, -2),), (1, slice(0, 3)),
    (slice(None), 4), (slice(1, 4), slice(None, None, 3)),
])
def test_the_lifted_draw_has_the_indexed_shape_and_draws_only_that(index):
    rng = wb.shared(np.random.default_rng(0))
    x = wb.random.normal(_static(np.arange(5.0)[:, None]), 1.0, size=(5, 6), rng=rng)
    y = x[index]
    f = wb.function([], y, mode=_lifted_mode())
    (node,) = _draws(f)
    assert not any(isinstance(n.op, Subtensor) and n.inputs[0] is node.outputs[1]
                   for n in f.maker.fgraph.apply_nodes)
    expected_shape = np.empty((5, 6))[index].shape
    value = f()
    assert value.shape == expected_shape
    assert node.outputs[1].type.ndim == len(expected_shape)
    rows = np.broadcast_to(np.arange(5.0)[:, None], (5, 6))[index]
    assert np.all(np.abs(value - rows) < 6.0)  # each entry drawn around its own mean


def test_moments_of_the_lifted_draw_on_1e5_draws():
    mu = _static([[0.0], [10.0], [-5.0], [3.0]])
    sigma = _static([[1.0], [2.0], [0.5], [4.0]])
    srng = wb.random.RandomStream(seed=1)
    x, y = (srng.normal(mu, sigma, size=(4, 100_000)) for _ in range(2))
    f = wb.function([], [x[1], y[2:, :50_000]], mode=_lifted_mode())
    assert sorted(d.outputs[1].type.shape for d in _draws(f)) == [(2, 50_000), (100_000,)]
    row, block = f()
    assert row.shape == (100_000,) and block.shape == (2, 50_000)
    np.testing.assert_allclose(row.mean(), 10.0, atol=5 * 2.0 / np.sqrt(1e5))
    np.testing.assert_allclose(row.std(), 2.0, rtol=0.02)
    np.testing.assert_allclose(block.mean(axis=1), [-5.0, 3.0], atol=5 * 4.0 / np.sqrt(5e4))
    np.testing.assert_allclose(block.std(axis=1), [0.5, 4.0], rtol=0.02)


def test_a_vector_distribution_is_lifted_through_its_batch_dimensions():
    alpha = _static([1.0, 2.0, 7.0])
    rng = wb.shared(np.random.default_rng(2))
    x = wb.random.dirichlet(alpha, size=(3, 100_000), rng=rng)
    f = wb.function([], x[1, :, :], mode=_lifted_mode())  # full slice over the support
    ((_, draw),) = [n.outputs for n in _draws(f)]
    assert draw.type.shape == (100_000, 3)
    np.testing.assert_allclose(f().mean(axis=0), [0.1, 0.2, 0.7], atol=3e-3)


def test_the_lift_is_a_named_step_of_the_trace_tagged_changes_draws():
    x = wb.random.normal(0.0, 1.0, size=(5, 3), rng=np.random.default_rng(0))
    x.name = "noise"
    fgraph, trace = wb.rewrite_graph(x[1:3], include=("changes_draws",), trace=True)
    (step,) = trace.filter(rewrite=LIFT)
    assert "changes_draws" in step.tags
    (out,) = fgraph.outputs
    assert isinstance(out.owner.op, RandomVariable) and out.name == "noise_lifted"
    assert out.type.shape == (2, 3)


@pytest.mark.parametrize("linker", ["py", "c"])
def test_default_modes_keep_the_draws_of_numpy(linker):
    srng = wb.random.RandomStream(seed=3)
    x = srng.normal(0.0, 1.0, size=(4, 5))
    f = wb.function([], x[2, 1:], linker=linker)
    assert not f.maker.rewrite_trace.filter(rewrite=LIFT)
    g = np.random.default_rng(np.random.SeedSequence(3, spawn_key=(0,)))
    for _ in range(2):  # the same numbers as NumPy's big draw, indexed, call after call
        np.testing.assert_array_equal(f(), g.normal(0.0, 1.0, size=(4, 5))[2, 1:])


def test_the_lifted_draw_advances_the_state_once_per_call():
    srng = wb.random.RandomStream(seed=6)
    x = srng.normal(0.0, 1.0, size=(4, 5))
    f = wb.function([], x[1], mode=_lifted_mode())
    g = np.random.default_rng(np.random.SeedSequence(6, spawn_key=(0,)))
    # the other numbers the lift promises: a draw of the kept shape
    np.testing.assert_array_equal(f(), g.normal(0.0, 1.0, size=(5,)))
    np.testing.assert_array_equal(f(), g.normal(0.0, 1.0, size=(5,)))


def _lifted(expr):
    fgraph, trace = wb.rewrite_graph(expr, include=(LIFT,), trace=True)
    return bool(trace.filter(rewrite=LIFT))


def test_declined_where_it_would_not_be_exact():
    rng = np.random.default_rng(0)
    i = wt.lscalar("i")
    n = wt.lscalar("n")
    mu = wt.dvector("mu")  # length unknown: it may broadcast along the sized axis
    # an int index nothing would check (the big draw raises IndexError out of range)
    assert not _lifted(wb.random.normal(0.0, 1.0, size=(4, 3), rng=rng)[i])
    assert not _lifted(wb.random.normal(0.0, 1.0, size=(n, 3), rng=rng)[1])
    # a parameter that may or may not broadcast along the indexed axis
    assert not _lifted(wb.random.normal(mu, 1.0, size=(3,), rng=rng)[1:])
    # draws whose entries depend on each other
    assert not _lifted(wb.random.choice(10, size=(6,), replace=False, rng=rng)[:3])
    assert not _lifted(wb.random.permutation(8, rng=rng)[:3])
    # an index into one vector draw (its support dimension)
    assert not _lifted(wb.random.dirichlet(_static([1.0, 2.0]), size=(4,), rng=rng)[:, 0])
    # accepted: the same with a checked or constant index, or a known length
    assert _lifted(wb.random.normal(0.0, 1.0, size=(4, 3), rng=rng)[-4])
    assert _lifted(wb.random.normal(0.0, 1.0, size=(n, 3), rng=rng)[1:])
    assert _lifted(wb.random.normal(mu, 1.0, rng=rng)[i])  # mu[i] checks i
    assert _lifted(wb.random.choice(10, size=(6,), replace=True, rng=rng)[:3])


def test_a_choice_of_rows_is_lifted_with_its_whole_population():
    rows = np.arange(6.0).reshape(3, 2)
    draw = wb.random.choice(rows, size=60, rng=np.random.default_rng(0))
    f = wb.function([], draw[1:], mode=_lifted_mode())
    ((_, lifted),) = [n.outputs for n in _draws(f)]
    assert lifted.type.shape == (59, 2)
    assert set(f()[:, 0]) == {0.0, 2.0, 4.0}  # every row can still be chosen
    g = wb.function([], draw[:, 0], mode=_lifted_mode())  # an index into a row: declined
    assert [n.outputs[1].type.shape for n in _draws(g)] == [(60, 2)]


def test_debug_mode_checks_shapes_across_the_lift_and_values_elsewhere():
    srng = wb.random.RandomStream(seed=5)
    x = srng.normal(0.0, 1.0, size=(4, 5))
    f = wb.function([], wt.exp(x[1:3]), mode=get_mode("DEBUG").including(LIFT))
    assert f.maker.rewrite_trace.filter(rewrite=LIFT)
    g = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(0,)))
    np.testing.assert_allclose(f(), np.exp(g.normal(0.0, 1.0, size=(2, 5))))
