"""Random draws equal NumPy's Generator for the same seed and calls, on py and c."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.core.link.c.compiler import has_compiler

LINKERS = ["py", pytest.param("c", marks=pytest.mark.skipif(
    not has_compiler(), reason="needs a C compiler"))]

P3 = np.array([0.2, 0.5, 0.3])
COV = np.array([[1.0, 0.3], [0.3, 2.0]])

# name -> (workbench arguments, the NumPy call on a Generator g with the same meaning)
ROWS = np.arange(6.0).reshape(3, 2)
CASES = {
    "normal": (lambda r: wb.random.normal(1.0, np.array([1.0, 2.0, 3.0]), size=(4, 3), rng=r),
               lambda g: g.normal(1.0, np.array([1.0, 2.0, 3.0]), size=(4, 3))),
    "uniform": (lambda r: wb.random.uniform(-1.0, 2.0, size=5, rng=r),
                lambda g: g.uniform(-1.0, 2.0, size=5)),
    "bernoulli": (lambda r: wb.random.bernoulli(0.3, size=(2, 6), rng=r),
                  lambda g: g.binomial(1, 0.3, size=(2, 6))),
    "binomial": (lambda r: wb.random.binomial(np.array([5, 10]), 0.4, rng=r),
                 lambda g: g.binomial(np.array([5, 10]), 0.4)),
    "binomial_float_n": (lambda r: wb.random.binomial(5.0, 0.3, size=3, rng=r),
                         lambda g: g.binomial(5.0, 0.3, size=3)),
    "binomial_fractional_n": (lambda r: wb.random.binomial(7.5, 0.6, size=4, rng=r),
                              lambda g: g.binomial(7.5, 0.6, size=4)),
    "categorical": (lambda r: wb.random.categorical(P3, size=7, rng=r),
                    lambda g: (g.uniform(size=7)[:, None] >= np.cumsum(P3)).sum(-1)),
    "choice": (lambda r: wb.random.choice(10, size=4, replace=False, rng=r),
               lambda g: g.choice(10, size=4, replace=False)),
    "choice_p": (lambda r: wb.random.choice(np.array([3.0, 4.0, 5.0]), size=6, p=P3, rng=r),
                 lambda g: g.choice(np.array([3.0, 4.0, 5.0]), size=6, p=P3)),
    "choice_rows": (lambda r: wb.random.choice(ROWS, size=(2, 2), rng=r),
                    lambda g: g.choice(ROWS, size=(2, 2))),
    "choice_one_row": (lambda r: wb.random.choice(ROWS, replace=False, rng=r),
                       lambda g: g.choice(ROWS, replace=False)),
    "permutation": (lambda r: wb.random.permutation(8, rng=r), lambda g: g.permutation(8)),
    "permutation_rows": (lambda r: wb.random.permutation(np.arange(6.0).reshape(3, 2), rng=r),
                         lambda g: g.permutation(np.arange(6.0).reshape(3, 2))),
    "integers": (lambda r: wb.random.integers(3, 9, size=(2, 2), rng=r),
                 lambda g: g.integers(3, 9, size=(2, 2))),
    "integers_high_none": (lambda r: wb.random.integers(5, size=3, rng=r),
                           lambda g: g.integers(5, size=3)),
    "poisson": (lambda r: wb.random.poisson(np.array([1.0, 4.0]), size=(3, 2), rng=r),
                lambda g: g.poisson(np.array([1.0, 4.0]), size=(3, 2))),
    "gamma": (lambda r: wb.random.gamma(2.0, 3.0, size=4, rng=r),
              lambda g: g.gamma(2.0, 3.0, size=4)),
    "beta": (lambda r: wb.random.beta(2.0, 5.0, size=4, rng=r),
             lambda g: g.beta(2.0, 5.0, size=4)),
    "exponential": (lambda r: wb.random.exponential(2.0, size=4, rng=r),
                    lambda g: g.exponential(2.0, size=4)),
    "dirichlet": (lambda r: wb.random.dirichlet(np.array([1.0, 2.0, 3.0]), size=2, rng=r),
                  lambda g: g.dirichlet(np.array([1.0, 2.0, 3.0]), size=2)),
    "dirichlet_batched": (
        lambda r: wb.random.dirichlet(np.array([[1.0, 2.0], [5.0, 1.0]]), rng=r),
        lambda g: np.stack([g.dirichlet([1.0, 2.0]), g.dirichlet([5.0, 1.0])])),
    "multivariate_normal": (
        lambda r: wb.random.multivariate_normal(np.zeros(2), COV, size=3, rng=r),
        lambda g: g.multivariate_normal(np.zeros(2), COV, size=3)),
}


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_same_draws_as_numpy_for_the_same_seed(name, linker):
    build, reference = CASES[name]
    rng = wb.shared(np.random.default_rng(123))
    draw = build(rng)
    f = wb.function([], draw, updates={rng: wb.random.next_rng(draw)}, linker=linker)
    g = np.random.default_rng(123)
    for _ in range(2):  # the update advances the state: the second call is NumPy's second
        got, expected = f(), np.asarray(reference(g))
        assert got.shape == expected.shape
        assert draw.type.is_valid_value(got)
        np.testing.assert_array_equal(got, expected)
    rng.set_value(np.random.default_rng(123))  # re-seeding: the first draws again
    np.testing.assert_array_equal(f(), np.asarray(reference(np.random.default_rng(123))))


def test_static_shapes_are_inferred():
    r = np.random.default_rng(0)
    assert wb.random.normal(np.zeros((3, 1)), np.ones(4), rng=r).type.shape == (3, 4)
    assert wb.random.normal(0.0, 1.0, size=(2, 5), rng=r).type.shape == (2, 5)
    assert wb.random.dirichlet(np.ones((4, 3)), rng=r).type.shape == (4, 3)
    assert wb.random.multivariate_normal(np.zeros(2), COV, size=(5,), rng=r).type.shape == (5, 2)
    assert wb.random.categorical(np.full((6, 4), 0.25), rng=r).type.shape == (6,)
    assert wb.random.permutation(7, rng=r).type.shape == (7,)
    # a 2+-d population: size, then one row of it (NumPy's axis=0)
    assert wb.random.choice(ROWS, size=4, rng=r).type.shape == (4, 2)
    assert wb.random.choice(np.ones((3, 2, 5)), rng=r).type.shape == (2, 5)
    x = wb.tensor.dmatrix("x")
    assert wb.random.normal(x, 1.0, rng=r).type.shape == (None, None)
    n = wb.tensor.lscalar("n")
    assert wb.random.uniform(size=(n, 3), rng=r).type.shape == (None, 3)


def test_parameters_that_do_not_broadcast_are_refused():
    with pytest.raises(ValueError, match="do not broadcast"):
        wb.random.normal(np.zeros(3), np.ones(4), rng=np.random.default_rng(0))


def test_a_size_the_parameters_cannot_broadcast_to_is_refused_when_built():
    r = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"size \(2,\) does not fit parameter 0 .*"
                                         "shape mismatch"):
        wb.random.normal(np.zeros(3), size=(2,), rng=r)
    with pytest.raises(ValueError, match="shape mismatch"):  # NumPy: (3,) and (3, 1) give (3, 3)
        wb.random.normal(np.zeros(3), size=(3, 1), rng=r)
    with pytest.raises(ValueError, match="parameter 0"):
        wb.random.categorical(np.full((3, 4), 0.25), size=(2,), rng=r)
    with pytest.raises(ValueError, match="parameter 1"):
        wb.random.multivariate_normal(np.zeros(2), np.stack([COV] * 4), size=(3,), rng=r)
    # what NumPy accepts is accepted, lengths unknown until run time included
    assert wb.random.normal(np.zeros(3), size=(4, 3), rng=r).type.shape == (4, 3)
    assert wb.random.normal(np.zeros((3, 1)), size=(3, 5), rng=r).type.shape == (3, 5)
    assert wb.random.normal(wb.tensor.dvector("m"), size=(2,), rng=r).type.shape == (2,)


def test_binomial_refuses_a_float_array_n_as_numpy_does():
    with pytest.raises(TypeError, match="n must be integers"):
        wb.random.binomial(np.array([5.0, 6.0]), 0.3, rng=np.random.default_rng(0))


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="numpy.random.default_rng"):
        wb.random.normal(rng=wb.tensor.dscalar("x"))
    with pytest.raises(TypeError, match="Generator"):
        wb.random.normal(rng=42)


def test_symbolic_parameters_and_size():
    x = wb.tensor.dvector("x")
    n = wb.tensor.lscalar("n")
    y = wb.random.normal(x, 0.0, size=(n, 3), rng=np.random.default_rng(0))
    out = wb.function([x, n], y)(np.arange(3.0), 2)
    np.testing.assert_array_equal(out, np.tile(np.arange(3.0), (2, 1)))
