"""RandomStream: state as shared variables with default updates, independence, moments,
and the rewrites leaving draws alone."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.random.op import RandomVariable


def _random_nodes(f):
    return [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, RandomVariable)]


def test_calling_twice_gives_new_draws_and_the_seed_reproduces_them():
    srng = wb.random.RandomStream(seed=7)
    f = wb.function([], srng.normal(0.0, 1.0, size=(4,)))
    first, second = f(), f()
    assert not np.array_equal(first, second)
    srng.seed(7)
    np.testing.assert_array_equal(f(), first)
    np.testing.assert_array_equal(f(), second)
    # the k-th draw of a stream uses the generator spawned with key (k,) of the seed
    g = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(0,)))
    np.testing.assert_array_equal(first, g.normal(0.0, 1.0, size=4))


def test_same_seed_same_draws_in_a_new_stream():
    a = wb.function([], wb.random.RandomStream(3).uniform(size=5))()
    b = wb.function([], wb.random.RandomStream(3).uniform(size=5))()
    np.testing.assert_array_equal(a, b)


def test_draws_of_one_stream_are_independent_and_never_merged():
    srng = wb.random.RandomStream(seed=1)
    x, y = srng.normal(size=(3,)), srng.normal(size=(3,))
    f = wb.function([], [x, y])
    assert len(_random_nodes(f)) == 2  # the merge pass keeps both draws
    a, b = f()
    assert not np.array_equal(a, b)


def test_one_state_deliberately_shared_is_merged_and_draws_the_same():
    rng = wb.shared(np.random.default_rng(0))
    x = wb.random.normal(size=(3,), rng=rng)
    y = wb.random.normal(size=(3,), rng=rng)  # same state, same parameters: same values
    f = wb.function([], [x, y])
    assert len(_random_nodes(f)) == 1
    a, b = f()
    np.testing.assert_array_equal(a, b)


def test_two_functions_keep_their_own_state():
    srng = wb.random.RandomStream(seed=5)
    f = wb.function([], srng.normal(size=(3,)))
    g = wb.function([], srng.normal(size=(3,)))
    f_alone = [f(), f()]
    srng.seed(5)
    interleaved = [f(), g(), f(), g()]
    np.testing.assert_array_equal(interleaved[0], f_alone[0])
    np.testing.assert_array_equal(interleaved[2], f_alone[1])  # g did not move f's state


def test_updates_advance_the_state_and_no_default_updates_keeps_it():
    srng = wb.random.RandomStream(seed=2)
    x = srng.integers(0, 1000, size=(6,))
    ((rng, _),) = srng.state_updates
    before = rng.get_value()
    frozen = wb.function([], x, no_default_updates=True)
    np.testing.assert_array_equal(frozen(), frozen())
    assert rng.type.values_eq(rng.get_value(), before)
    f = wb.function([], x)
    f()
    assert not rng.type.values_eq(rng.get_value(), before)


def test_constant_folding_never_folds_a_draw():
    x = wb.random.normal(0.0, 1.0, size=(3,), rng=np.random.default_rng(0))  # constant state
    f = wb.function([], x * 2.0)
    assert len(_random_nodes(f)) == 1


def test_dprint_shows_where_the_state_flows():
    srng = wb.random.RandomStream(seed=0)
    f = wb.function([], srng.normal(size=(2,)) + 1.0, linker="py")
    text = wb.dprint(f, file="str")
    assert "normal_rv{float64, inplace}.0" in text and "-> update of rng0" in text


def test_c_linker_report_says_draws_run_in_python():
    from workbench.core.link.c.compiler import has_compiler

    if not has_compiler():
        pytest.skip("needs a C compiler")
    srng = wb.random.RandomStream(seed=0)
    f = wb.function([], wt.exp(srng.normal(size=(2,))), linker="c")
    reasons = [why for _, why in f.linker.report.py_nodes]
    assert any("NumPy's Generator" in why for why in reasons)


def test_draws_without_rng_use_the_default_stream():
    x = wb.random.uniform(size=(3,))
    f = wb.function([], x)
    assert not np.array_equal(f(), f())


N = 100_000


@pytest.mark.parametrize("name, build, mean, var", [
    ("normal", lambda s: s.normal(2.0, 3.0, size=N), 2.0, 9.0),
    ("uniform", lambda s: s.uniform(-1.0, 3.0, size=N), 1.0, 16 / 12),
    ("bernoulli", lambda s: s.bernoulli(0.3, size=N), 0.3, 0.21),
    ("binomial", lambda s: s.binomial(10, 0.4, size=N), 4.0, 2.4),
    ("categorical", lambda s: s.categorical(np.array([0.2, 0.5, 0.3]), size=N), 1.1, 0.49),
    ("integers", lambda s: s.integers(0, 10, size=N), 4.5, 99 / 12),
    ("poisson", lambda s: s.poisson(3.0, size=N), 3.0, 3.0),
    ("gamma", lambda s: s.gamma(2.0, 3.0, size=N), 6.0, 18.0),
    ("beta", lambda s: s.beta(2.0, 5.0, size=N), 2 / 7, 10 / (49 * 8)),
    ("exponential", lambda s: s.exponential(2.0, size=N), 2.0, 4.0),
    ("choice", lambda s: s.choice(4, size=N), 1.5, 1.25),
    ("dirichlet[0]", lambda s: s.dirichlet(np.array([1.0, 3.0]), size=N)[:, 0], 0.25,
     3 / (16 * 5)),
    ("mvn[1]", lambda s: s.multivariate_normal(np.array([0.0, 1.0]), np.diag([1.0, 4.0]),
                                               size=N)[:, 1], 1.0, 4.0),
])
def test_moments_on_1e5_draws(name, build, mean, var):
    draws = wb.function([], build(wb.random.RandomStream(seed=11)), linker="py")()
    sem = np.sqrt(var / N)
    assert abs(draws.mean() - mean) < 5 * sem, name
    assert abs(draws.var() - var) < 0.05 * var, name


def test_permutation_is_a_permutation():
    p = wb.function([], wb.random.RandomStream(0).permutation(50))()
    np.testing.assert_array_equal(np.sort(p), np.arange(50))


def test_debug_mode_checks_a_graph_with_draws():
    import warnings

    srng = wb.random.RandomStream(seed=0)
    x = wt.dvector("x")
    y = (x * srng.normal(size=(3,))).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "cannot check the rewrites" warning
        f = wb.function([x], [y, wb.grad(y, x)], mode="DEBUG")
    first, second = f(np.ones(3)), f(np.ones(3))
    assert first[0] != second[0]


@pytest.mark.parametrize("size, pattern", [((2, 3), (0, "x", 1)), (None, ("x", 0, "x")),
                                           ((2, 3), ("x", 0, 1, "x"))])
def test_size_is_lifted_through_a_dimshuffle_that_inserts_ones(size, pattern):
    from workbench.core.tensor.elemwise import DimShuffle

    mu = wt.dvector("mu")
    rng = wb.shared(np.random.default_rng(5))
    draw = wb.random.normal(mu, 1.0, size=size, rng=rng)
    f = wb.function([mu], draw.dimshuffle(*pattern), updates={rng: wb.random.next_rng(draw)})
    (node,) = _random_nodes(f)
    assert not any(isinstance(c.op, DimShuffle) for c, _ in f.maker.fgraph.clients[
        node.outputs[1]] if not isinstance(c, str))
    g = np.random.default_rng(5)
    for _ in range(2):  # the same values as NumPy's, and the state advanced once per call
        want = g.normal(np.arange(3.0), 1.0, size=size)
        got = f(np.arange(3.0))
        np.testing.assert_array_equal(got.reshape(want.shape), want)


_NOT_SCALAR_CORE = {  # draws whose core shape or parameters are not scalars
    "permutation of n": (lambda rng, x: wb.random.permutation(x, rng=rng), ("x", 0),
                         wt.lscalar("n"), 6, lambda g, v: g.permutation(v)),
    "permutation of rows": (lambda rng, x: wb.random.permutation(x, rng=rng), ("x", 0, 1),
                            wt.dmatrix("x"), np.arange(8.0).reshape(4, 2),
                            lambda g, v: g.permutation(v)),
    "categorical": (lambda rng, p: wb.random.categorical(p, rng=rng), (0, "x"),
                    wt.dmatrix("p"), np.array([[0.1, 0.9], [0.5, 0.5], [0.8, 0.2]]), None),
    "choice": (lambda rng, n: wb.random.choice(n, size=3, rng=rng), ("x", 0),
               wt.lscalar("n"), 10, lambda g, v: g.choice(v, size=3)),
}


@pytest.mark.parametrize("linker", ["py", "c"])
@pytest.mark.parametrize("case", sorted(_NOT_SCALAR_CORE))
def test_the_dimshuffle_lift_declines_draws_whose_core_is_not_scalar(case, linker):
    import warnings

    from workbench.core.compile.mode import get_mode
    from workbench.core.rewrite import RewriteFailureWarning

    build, pattern, x, value, numpy_draw = _NOT_SCALAR_CORE[case]
    draw = build(np.random.default_rng(3), x)
    mode = get_mode("FAST_RUN").clone(linker=linker)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RewriteFailureWarning)
        f = wb.function([x], draw.dimshuffle(*pattern), mode=mode)
    plain = wb.function([x], draw, mode=mode.excluding("local_dimshuffle_rv_lift"))
    want = plain(value)
    inserted = [i for i, d in enumerate(pattern) if d == "x"]
    np.testing.assert_array_equal(f(value), np.expand_dims(want, inserted))
    if numpy_draw is not None:  # and that is NumPy's draw
        np.testing.assert_array_equal(want, numpy_draw(np.random.default_rng(3), value))
