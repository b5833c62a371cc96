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


def test_distributions_without_a_kernel_run_numpy_on_the_host():
    rng = wb.shared(np.random.default_rng(9))
    x = wb.random.beta(2.0, 3.0, size=6, rng=rng)
    f = _gpu_function(x)
    assert len(host_nodes(f)) == 1
    np.testing.assert_array_equal(f(), np.random.default_rng(9).beta(2.0, 3.0, size=6))


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
