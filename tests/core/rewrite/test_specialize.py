"""The specialize rules: small integer powers become products, ``alpha*dot + beta*z``
becomes Gemm (matrices) or Gemv (matrix-vector); each fires and preserves values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.tensor.blas import Gemm, Gemv

NO_REWRITES = wb.Mode(linker="py", rewriter=None)
RNG = np.random.default_rng(1)


def check(inputs: list[Any], output: Any, rule: str, values: list[Any]) -> Any:
    fgraph, trace = wb.rewrite_graph([output], mode="FAST_RUN", trace=True)
    assert not trace.failed_steps, trace.failed_steps.table()
    assert rule in trace.rewrites_used(), trace.table()
    got = wb.function(inputs, output, mode="FAST_RUN", on_unused_input="ignore")(*values)
    expected = wb.function(inputs, output, mode=NO_REWRITES, on_unused_input="ignore")(*values)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    assert np.asarray(got).shape == np.asarray(expected).shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    return fgraph


def scalar_ops(fgraph: Any) -> set[str]:
    """Names of every scalar op in the graph, inside fused Composites too."""
    return {str(node.op) for node in fgraph.apply_nodes}


@pytest.mark.parametrize("n", [3, 4, -2, -3, -4])
def test_small_integer_powers_become_products(n: int) -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], x ** n, "local_pow_specialize", [RNG.uniform(0.5, 2, (2, 3))])
    assert not any("pow" in name for name in scalar_ops(fgraph))


def test_integer_power_of_integers() -> None:
    i = wt.ivector("i")
    fgraph = check([i], i ** 3, "local_pow_specialize", [np.array([1, -2, 5], dtype=np.int32)])
    assert fgraph.outputs[0].type.dtype == "int32"


def test_large_and_fractional_powers_stay_pow() -> None:
    x = wt.dmatrix("x")
    for out in (x ** 5, x ** 2.5):
        _, trace = wb.rewrite_graph([out], mode="FAST_RUN", trace=True)
        assert "local_pow_specialize" not in trace.rewrites_used()


def mats(*shapes: tuple[int, ...]) -> list[np.ndarray]:
    return [RNG.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("build", [
    lambda x, y, z, a, b: a * wt.dot(x, y) + b * z,
    lambda x, y, z, a, b: wt.dot(x, y) * a + z * b,
    lambda x, y, z, a, b: z + wt.dot(x, y),
    lambda x, y, z, a, b: wt.dot(x, y) + z,
    lambda x, y, z, a, b: 2.0 * wt.dot(x, y) + 0.5 * z,
])
def test_dot_plus_matrix_becomes_gemm(build: Any) -> None:
    x, y, z = wt.dmatrix("x"), wt.dmatrix("y"), wt.dmatrix("z")
    a, b = wt.dscalar("a"), wt.dscalar("b")
    out = build(x, y, z, a, b)
    fgraph = check([x, y, z, a, b], out, "local_dot_to_gemm",
                   [*mats((3, 4), (4, 2), (3, 2)), 1.5, -0.5])
    assert isinstance(fgraph.outputs[0].owner.op, Gemm)


def test_gemm_with_a_bias_row() -> None:
    x, w, bias = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("bias")
    out = wt.dot(x, w) + bias
    fgraph = check([x, w, bias], out, "local_dot_to_gemm", mats((3, 4), (4, 2), (2,)))
    assert isinstance(fgraph.outputs[0].owner.op, Gemm)


def test_gemv_for_matrix_vector_and_vector_matrix() -> None:
    a, v, y, s = wt.dmatrix("a"), wt.dvector("v"), wt.dvector("y"), wt.dscalar("s")
    fgraph = check([a, v, y, s], s * wt.dot(a, v) + y, "local_dot_to_gemv",
                   [*mats((3, 4), (4,), (3,)), 2.0])
    assert isinstance(fgraph.outputs[0].owner.op, Gemv)
    fgraph = check([a, v, y, s], wt.dot(v, a) + y * s, "local_dot_to_gemv",
                   [*mats((4, 3), (4,), (3,)), 2.0])
    assert isinstance(fgraph.outputs[0].owner.op, Gemv)


def test_a_sum_of_two_products_is_one_dot_and_one_gemm_accumulating_into_it() -> None:
    # a weight used twice: its gradient x.T @ g1 + y.T @ g2 accumulates in one gemm
    # (beta = 1), the transposed operands left as views for BLAS's transpose flags
    x, y, g1, g2 = (wt.dmatrix(n) for n in ("x", "y", "g1", "g2"))
    out = wt.dot(x.T, g1) + wt.dot(y.T, g2)
    fgraph = check([x, y, g1, g2], out, "local_dot_to_gemm",
                   mats((5, 3), (4, 3), (5, 2), (4, 2)))
    gemm = fgraph.outputs[0].owner
    assert isinstance(gemm.op, Gemm)
    assert [n.inputs[4].data for n in [gemm]] == [1.0]
    products = [type(n.op).__name__ for n in fgraph.apply_nodes
                if type(n.op).__name__ in ("Dot", "Gemm", "Gemv")]
    assert sorted(products) == ["Dot", "Gemm"]


def test_the_gradient_of_a_weight_used_twice_accumulates_in_a_gemm() -> None:
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    w = wb.shared(RNG.standard_normal((3, 2)), name="W")
    grad = wb.grad((wt.dot(x, w) ** 2).sum() + (wt.dot(y, w) ** 3).sum(), w)
    fgraph = check([x, y], grad, "local_dot_to_gemm", mats((5, 3), (4, 3)))
    assert isinstance(fgraph.outputs[0].owner.op, Gemm)


def test_no_gemm_when_the_product_is_used_elsewhere_or_dtypes_differ() -> None:
    x, y, z = wt.dmatrix("x"), wt.dmatrix("y"), wt.dmatrix("z")
    d = wt.dot(x, y)
    _, trace = wb.rewrite_graph([d + z, d * 2], mode="FAST_RUN", trace=True)
    assert "local_dot_to_gemm" not in trace.rewrites_used()
    xf, yf = wt.fmatrix("xf"), wt.fmatrix("yf")
    _, trace = wb.rewrite_graph([wt.dot(xf, yf) + z], mode="FAST_RUN", trace=True)
    assert "local_dot_to_gemm" not in trace.rewrites_used()
