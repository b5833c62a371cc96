"""Draws advance their generator in place when the call updates it and nothing else reads
the old state afterwards (the inplace pass and the DestroyHandler); every other state is
copied, never mutated."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.core.random.op import RandomVariable

LINKERS = ["py", "c"]


def _draw_ops(f):
    return [n.op for n in f.maker.fgraph.apply_nodes if isinstance(n.op, RandomVariable)]


def _state(generator):
    return generator.bit_generator.state


@pytest.mark.parametrize("linker", LINKERS)
def test_an_updated_stream_is_advanced_in_place_with_numpys_draws(linker):
    srng = wb.random.RandomStream(seed=11)
    f = wb.function([], srng.normal(size=(3,)), linker=linker)
    assert [op.inplace for op in _draw_ops(f)] == [True]
    ((rng, _),) = srng.state_updates
    held = rng.get_value(borrow=True)
    draws = [f(), f(), f()]
    assert rng.get_value(borrow=True) is held  # the same Generator, advanced
    g = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(0,)))
    for got in draws:
        np.testing.assert_array_equal(got, g.normal(size=3))
    assert _state(held) == _state(g)


@pytest.mark.parametrize("linker", LINKERS)
def test_two_functions_sharing_one_stream_draw_numpys_sequence(linker):
    srng = wb.random.RandomStream(seed=4)
    x = srng.uniform(size=(2,))
    f = wb.function([], x, linker=linker)
    g = wb.function([], x * 10.0, linker=linker)  # the same draw: the same shared state
    got = [f(), g(), f(), g()]
    ref = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(0,)))
    expected = [ref.uniform(size=2), 10.0 * ref.uniform(size=2), ref.uniform(size=2),
                10.0 * ref.uniform(size=2)]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-15)


def test_a_state_the_call_does_not_update_is_never_mutated():
    srng = wb.random.RandomStream(seed=2)
    x = srng.integers(0, 1000, size=(6,))
    ((rng, _),) = srng.state_updates
    before = _state(rng.get_value(borrow=True))
    frozen = wb.function([], x, no_default_updates=True)
    assert [op.inplace for op in _draw_ops(frozen)] == [False]
    np.testing.assert_array_equal(frozen(), frozen())
    assert _state(rng.get_value(borrow=True)) == before


def test_a_generator_passed_in_or_held_as_a_constant_is_never_mutated():
    mine = np.random.default_rng(5)
    before = _state(mine)
    r = wb.random.random_generator_type("r")
    draw = wb.random.normal(size=(2,), rng=r)
    f = wb.function([r], [draw, wb.random.next_rng(draw)])
    assert [op.inplace for op in _draw_ops(f)] == [False]
    value, advanced = f(mine)
    assert _state(mine) == before and advanced is not mine
    np.testing.assert_array_equal(value, np.random.default_rng(5).normal(size=2))
    constant = wb.function([], wb.random.normal(size=(2,), rng=mine))
    np.testing.assert_array_equal(constant(), constant())
    assert _state(mine) == before


@pytest.mark.parametrize("linker", LINKERS)
def test_another_reader_of_the_old_state_reads_it_before_the_draw_advances_it(linker):
    rng = wb.shared(np.random.default_rng(0))
    x = wb.random.normal(size=(2,), rng=rng)
    y = wb.random.uniform(size=(2,), rng=rng)  # reads the same (old) state
    nx = wb.random.next_rng(x)
    f = wb.function([], [x, y, nx], updates={rng: nx}, linker=linker)
    assert sorted(op.inplace for op in _draw_ops(f)) == [False, True]
    a, b, returned = f()
    np.testing.assert_array_equal(a, np.random.default_rng(0).normal(size=2))
    np.testing.assert_array_equal(b, np.random.default_rng(0).uniform(size=2))
    # the returned state is a copy: the next call does not move it
    assert returned is not rng.get_value(borrow=True)
    kept = _state(returned)
    f()
    assert _state(returned) == kept


def test_debug_mode_checks_the_inplace_draw():
    srng = wb.random.RandomStream(seed=9)
    f = wb.function([], srng.normal(size=(3,)) + 1.0, mode="DEBUG")
    g = np.random.default_rng(np.random.SeedSequence(9, spawn_key=(0,)))
    np.testing.assert_allclose(f(), g.normal(size=3) + 1.0)
    np.testing.assert_allclose(f(), g.normal(size=3) + 1.0)


def test_a_generator_given_to_set_value_is_copied_so_the_callers_object_stays():
    srng = wb.random.RandomStream(seed=1)
    f = wb.function([], srng.normal(size=(2,)))
    ((rng, _),) = srng.state_updates
    mine = np.random.default_rng(42)
    rng.set_value(mine)
    before = _state(mine)
    np.testing.assert_array_equal(f(), np.random.default_rng(42).normal(size=2))
    assert _state(mine) == before
