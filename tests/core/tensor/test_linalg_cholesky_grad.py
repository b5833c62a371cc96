"""`CholeskyGrad`, the one-node gradient of `cholesky`: it is what `grad` builds for
real dtypes, and its C (blocked gemm and trsm over blocks of 64, reading gL, and a
Cholesky factor, in place when C-contiguous) equals Murray's formula as a graph for
every layout and size around the block edges."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.linalg.decompositions import CholeskyGrad, murray_graph

needs_c = pytest.mark.skipif(not has_compiler(), reason="no C compiler")


def _factor(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.standard_normal((n, n))
    return np.linalg.cholesky(a @ a.T + n * np.eye(n))


def test_grad_of_cholesky_is_one_cholesky_grad_node():
    a = wt.dmatrix("a")
    g = wb.grad(wt.sum(wt.linalg.cholesky(a) ** 2), a)
    fn = wb.function([a], g)
    names = [type(node.op).__name__ for node in fn.maker.fgraph.toposort()]
    assert names.count("CholeskyGrad") == 1
    assert "SolveTriangular" not in names and "TriangularMatmul" not in names


def test_grad_of_log_det_through_cholesky_is_half_the_inverse():
    """d/dA sum(log(diag(L))) = A^-1 / 2 on the lower triangle read (A^-1 off it)."""
    rng = np.random.default_rng(3)
    low = _factor(rng, 6)
    a_value = low @ low.T
    a = wt.dmatrix("a")
    logdet = wt.sum(wt.log(wt.linalg.diagonal(wt.linalg.cholesky(a))))
    got = wb.function([a], wb.grad(logdet, a))(a_value)
    inv = np.linalg.inv(a_value)
    expected = np.tril(inv) - 0.5 * np.diag(np.diag(inv))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


@needs_c
@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 130])
@pytest.mark.parametrize("layout", ["c_contiguous", "fortran", "transposed_g", "strided_g",
                                    "upper_junk_in_a_diagonal_block", "upper_junk_far"])
def test_c_equals_murrays_formula(n, layout):
    rng = np.random.default_rng(n)
    low, g = _factor(rng, n), rng.standard_normal((n, 2 * n))
    g_value = g[:, :n]
    if layout == "fortran":
        low, g_value = np.asfortranarray(low), np.asfortranarray(g_value)
    elif layout == "transposed_g":
        g_value = g[:, :n].T
    elif layout == "strided_g":
        g_value = g[:, ::2]
    elif layout == "upper_junk_in_a_diagonal_block":
        low = low + np.triu(rng.standard_normal((n, n)), 1)
    elif layout == "upper_junk_far":
        low = low + np.triu(rng.standard_normal((n, n)), 100)
    l_var, g_var = wt.dmatrix("l"), wt.dmatrix("g")
    c_fn = wb.function([l_var, g_var], CholeskyGrad()(l_var, g_var), linker="c")
    assert [t.impl for t in c_fn.thunks] == ["c"]
    expected = wb.function([l_var, g_var], murray_graph(l_var, g_var), linker="py")(
        np.tril(low), g_value)
    np.testing.assert_allclose(c_fn(low, g_value), expected, rtol=1e-12,
                               atol=1e-12 * np.abs(expected).max())


@needs_c
def test_c_float32_batch_broadcasts_g():
    rng = np.random.default_rng(5)
    low = np.stack([_factor(rng, 70) for _ in range(3)]).astype("float32")
    g_value = rng.standard_normal((1, 70, 70)).astype("float32")
    l_var, g_var = wt.ftensor3("l"), wt.ftensor3("g")
    got = wb.function([l_var, g_var], CholeskyGrad()(l_var, g_var), linker="c")(low, g_value)
    expected = wb.function([l_var, g_var], murray_graph(l_var, g_var), linker="py")(
        low, g_value)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5 * np.abs(expected).max())
