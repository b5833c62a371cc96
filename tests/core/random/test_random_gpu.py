"""Random draws on the gpu linker: a torch.Generator seeded from the graph's state."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")

import workbench as wb  # noqa: E402
from workbench.core.link.gpu import host_nodes  # noqa: E402


def _gpu_function(outputs):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*no CUDA device.*")
        return wb.function([], outputs, linker="gpu")


def test_torch_draws_are_reproducible_from_the_seed_and_advance():
    srng = wb.random.RandomStream(seed=4)
    outs = [srng.normal(1.0, np.array([1.0, 2.0]), size=(3, 2)), srng.uniform(-1, 1, size=4),
            srng.exponential(2.0, size=3), srng.bernoulli(0.5, size=5),
            srng.integers(0, 7, size=4)]
    f = _gpu_function(outs)
    assert host_nodes(f) == []  # all five run as torch kernels
    first, second = f(), f()
    assert not np.array_equal(first[0], second[0])
    srng.seed(4)
    for a, b in zip(f(), first):
        np.testing.assert_array_equal(a, b)
    assert first[0].shape == (3, 2) and first[4].dtype == np.int64
    assert set(np.unique(first[3])) <= {0, 1}


def test_integers_with_array_bounds_draw_on_torch_within_their_bounds():
    rng = wb.shared(np.random.default_rng(9))
    low, high = np.array([0, 10, -3]), np.array([5, 12, -2])
    x = wb.random.integers(low, high, size=(4000, 3), rng=rng)
    f = _gpu_function(x)
    assert host_nodes(f) == []  # a torch kernel, not NumPy on the host
    draws = f()
    assert draws.shape == (4000, 3) and draws.dtype == np.int64
    for column, lo, hi in zip(draws.T, low, high):  # every value of [low, high), no other
        assert set(np.unique(column)) == set(range(lo, hi))
    assert abs(draws[:, 0].mean() - 2.0) < 5 * np.sqrt(2.0 / 4000)
    rng.set_value(np.random.default_rng(9))
    np.testing.assert_array_equal(f(), draws)  # reproducible from the seed


def test_integers_with_bounds_given_at_run_time_refuse_low_not_below_high():
    low, high = wb.tensor.lvector("low"), wb.tensor.lvector("high")
    x = wb.random.RandomStream(2).integers(low, high)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*no CUDA device.*")
        f = wb.function([low, high], x, linker="gpu")
    assert host_nodes(f) == []
    got = f(np.array([1, 7]), np.array([3, 8]))
    assert 1 <= got[0] < 3 and got[1] == 7
    with pytest.raises(ValueError, match="low >= high"):
        f(np.array([1, 8]), np.array([3, 8]))


N = 100_000
ALPHA = np.array([[1.0, 3.0], [4.0, 4.0]])
COV = np.array([[[1.0, 0.6], [0.6, 2.0]], [[4.0, 0.0], [0.0, 0.25]]])
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])  # positive semi-definite: rank 1


@pytest.mark.parametrize("name, build, mean, var", [
    ("gamma", lambda s: s.gamma(np.array([0.5, 2.0]), 3.0, size=(N, 2)),
     [1.5, 6.0], [4.5, 18.0]),
    ("beta", lambda s: s.beta(np.array([2.0, 0.5]), 5.0, size=(N, 2)),
     [2 / 7, 0.5 / 5.5], [10 / (49 * 8), 2.5 / (5.5**2 * 6.5)]),
    ("binomial", lambda s: s.binomial(np.array([10, 3]), np.array([0.4, 0.9]), size=(N, 2)),
     [4.0, 2.7], [2.4, 0.27]),
    ("choice", lambda s: s.choice(4, size=(N,)), 1.5, 1.25),
    ("choice p", lambda s: s.choice(np.array([1.0, 5.0, 9.0]), size=(N,),
                                    p=np.array([0.5, 0.25, 0.25])), 4.0, 11.0),
    ("dirichlet", lambda s: s.dirichlet(ALPHA, size=(N, 2)),
     ALPHA / ALPHA.sum(-1, keepdims=True),
     ALPHA * (ALPHA.sum(-1, keepdims=True) - ALPHA)
     / (ALPHA.sum(-1, keepdims=True) ** 2 * (ALPHA.sum(-1, keepdims=True) + 1))),
    ("mvn", lambda s: s.multivariate_normal(np.array([0.0, 1.0]), COV, size=(N, 2)),
     [[0.0, 1.0], [0.0, 1.0]], np.diagonal(COV, axis1=1, axis2=2)),
    ("mvn semi-definite", lambda s: s.multivariate_normal(np.zeros(2), SINGULAR, size=N),
     [0.0, 0.0], [1.0, 4.0]),
])
def test_moments_of_the_shaped_distributions_on_torch(name, build, mean, var):
    f = _gpu_function(build(wb.random.RandomStream(seed=12)))
    assert host_nodes(f) == [], name
    draws = f()
    mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    assert draws.shape[1:] == np.broadcast_shapes(mean.shape, var.shape)
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=5 * np.sqrt(var.max() / N),
                               err_msg=name)
    np.testing.assert_allclose(draws.var(axis=0), var, rtol=0.05, err_msg=name)


def test_the_correlation_of_a_torch_multivariate_normal():
    f = _gpu_function(wb.random.RandomStream(3).multivariate_normal(np.zeros(2), COV[0], N))
    np.testing.assert_allclose(np.cov(f().T), COV[0], atol=0.05)
    singular = _gpu_function(wb.random.RandomStream(3).multivariate_normal(
        np.zeros(2), SINGULAR, size=10))()
    np.testing.assert_allclose(singular[:, 1], 2.0 * singular[:, 0], atol=1e-6)


def test_shaped_torch_draws_have_the_py_linkers_shapes_and_dtypes():
    def outs(seed):
        s = wb.random.RandomStream(seed)
        return [s.gamma(np.ones((3, 1)), np.ones(4)), s.beta(2.0, np.ones(5)),
                s.binomial(np.array([4, 5]), 0.5, size=(3, 2)), s.dirichlet(ALPHA),
                s.multivariate_normal(np.zeros((3, 2)), COV[0]),
                s.choice(np.array([1.5, 2.5, 3.5, 4.5]), size=(2, 2), replace=False),
                s.choice(7), s.choice(3, size=(3,), replace=False),
                s.choice(np.arange(6.0).reshape(3, 2), size=4)]  # rows of a matrix
    on_torch, on_numpy = _gpu_function(outs(1))(), wb.function([], outs(1))()
    for t, n in zip(on_torch, on_numpy):
        assert t.shape == n.shape and t.dtype == n.dtype
    assert sorted(on_torch[-2]) == [0, 1, 2]
    assert on_torch[-1].shape == (4, 2) and set(on_torch[-1][:, 0]) <= {0.0, 2.0, 4.0}
    assert len(set(on_torch[5].ravel())) == 4


def test_torch_choice_refuses_what_numpy_refuses():
    s = wb.random.RandomStream(0)
    too_many = _gpu_function(s.choice(3, size=(4,), replace=False))
    with pytest.raises(ValueError, match="without replacement"):
        too_many()
    bad_p = _gpu_function(s.choice(3, size=(2,), p=np.array([0.5, 0.2, 0.2])))
    with pytest.raises(ValueError, match="sum to 1"):
        bad_p()


def test_shaped_torch_draws_are_reproducible_and_advance_in_place():
    srng = wb.random.RandomStream(seed=8)
    f = _gpu_function([srng.gamma(2.0, size=3), srng.dirichlet(np.ones(3), size=2)])
    held = [rng.get_value(borrow=True) for rng, _ in srng.state_updates]
    first, second = f(), f()
    assert [rng.get_value(borrow=True) for rng, _ in srng.state_updates] == held
    assert not np.array_equal(first[0], second[0])
    srng.seed(8)
    for a, b in zip(f(), first):
        np.testing.assert_array_equal(a, b)


def test_normal_moments_and_gradient_on_torch():
    loc = wb.tensor.dscalar("loc")
    x = wb.random.RandomStream(1).normal(loc, 2.0, size=(100_000,))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*no CUDA device.*")
        f = wb.function([loc], [x, wb.grad(x.sum(), loc)], linker="gpu")
    draws, g = f(3.0)
    assert abs(draws.mean() - 3.0) < 5 * 2.0 / np.sqrt(1e5)
    assert abs(draws.std() - 2.0) < 0.05
    assert g == pytest.approx(1e5)


def test_discrete_draws_on_torch():
    srng = wb.random.RandomStream(seed=6)
    p = np.array([[0.1, 0.9, 0.0], [0.0, 0.0, 1.0]])
    outs = [srng.poisson(np.array([1.0, 50.0]), size=(1000, 2)), srng.categorical(p),
            srng.categorical(np.array([0.2, 0.8]), size=(1000,)), srng.permutation(10),
            srng.permutation(np.arange(12.0).reshape(4, 3))]
    f = _gpu_function(outs)
    assert host_nodes(f) == []
    counts, picked, many, perm, rows = f()
    assert counts.dtype == np.int64 and abs(counts[:, 1].mean() - 50.0) < 2.0
    assert picked[1] == 2 and picked[0] in (0, 1)
    assert abs(many.mean() - 0.8) < 0.05
    np.testing.assert_array_equal(np.sort(perm), np.arange(10))
    np.testing.assert_array_equal(np.sort(rows[:, 0]), [0.0, 3.0, 6.0, 9.0])
    assert rows.shape == (4, 3) and np.all(rows[:, 1] == rows[:, 0] + 1)


_BAD_PARAMETERS = {
    "normal scale": lambda r: wb.random.normal(0.0, np.array([1.0, -1.0]), rng=r),
    "exponential scale": lambda r: wb.random.exponential(-2.0, size=3, rng=r),
    "gamma shape": lambda r: wb.random.gamma(-1.0, 1.0, size=3, rng=r),
    "gamma scale": lambda r: wb.random.gamma(1.0, -1.0, size=3, rng=r),
    "beta a": lambda r: wb.random.beta(0.0, 1.0, size=3, rng=r),
    "beta b": lambda r: wb.random.beta(1.0, -1.0, size=3, rng=r),
    "bernoulli p": lambda r: wb.random.bernoulli(1.5, size=3, rng=r),
    "binomial p": lambda r: wb.random.binomial(-1, np.nan, size=3, rng=r),
    "binomial n": lambda r: wb.random.binomial(np.array([3, -1]), 0.5, rng=r),
    "poisson lam": lambda r: wb.random.poisson(np.array([1.0, np.nan]), rng=r),
    "poisson negative": lambda r: wb.random.poisson(-1.0, size=2, rng=r),
    "poisson too large": lambda r: wb.random.poisson(1e19, rng=r),
}


@pytest.mark.parametrize("case", sorted(_BAD_PARAMETERS))
def test_torch_draws_refuse_the_parameters_numpy_refuses_with_its_message(case):
    build = _BAD_PARAMETERS[case]
    with pytest.raises(ValueError) as on_numpy:
        wb.function([], build(np.random.default_rng(0)), linker="py")()
    f = _gpu_function(build(np.random.default_rng(0)))
    for _ in range(2):  # checked at every call while the parameter is bad
        with pytest.raises(ValueError) as on_torch:
            f()
        assert str(on_torch.value) == str(on_numpy.value)


def test_torch_parameter_checks_follow_a_changing_parameter():
    scale = wb.tensor.dvector("scale")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*no CUDA device.*")
        f = wb.function([scale], wb.random.normal(0.0, scale, rng=np.random.default_rng(0)),
                        linker="gpu")
    assert np.asarray(f(np.ones(2))).shape == (2,)
    with pytest.raises(ValueError, match="scale < 0"):
        f(np.array([1.0, -0.5]))
    assert np.asarray(f(np.array([0.0, 2.0]))).shape == (2,)  # zero and NaN are allowed
    assert np.isnan(np.asarray(f(np.array([np.nan, 1.0])))[0])


def test_a_float_binomial_n_is_truncated_on_torch_as_numpy_takes_it():
    draws = _gpu_function(wb.random.RandomStream(2).binomial(5.9, 0.9, size=2000))()
    assert draws.max() == 5 and draws.dtype == np.int64
