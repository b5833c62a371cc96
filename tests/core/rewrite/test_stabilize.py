"""The stabilize rules: each fires (the trace names it), and gives finite, accurate
values where the naive graph (FAST_RUN without that rule) overflows or underflows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import get_mode
from workbench.core.tensor.special import LogSoftmax, LogSumExp

scipy_special = pytest.importorskip("scipy.special")


def fires(output: Any, rule: str) -> Any:
    fgraph, trace = wb.rewrite_graph([output], mode="FAST_RUN", trace=True)
    assert not trace.failed_steps, trace.failed_steps.table()
    assert rule in trace.rewrites_used(), trace.table()
    return fgraph


def stable_and_naive(inputs: list[Any], output: Any, rule: str, values: list[Any]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(FAST_RUN result, result of FAST_RUN excluding `rule`)."""
    fires(output, rule)
    stable = wb.function(inputs, output, mode="FAST_RUN")(*values)
    naive = wb.function(inputs, output, mode=get_mode("FAST_RUN").excluding(rule))(*values)
    return stable, naive


def test_log1p() -> None:
    x = wt.dvector("x")
    value = np.array([1e-20, 1e-10, 0.5])
    for out in (wt.log(1 + x), wt.log(x + 1)):
        stable, naive = stable_and_naive([x], out, "local_log1p", [value])
        np.testing.assert_allclose(stable, np.log1p(value), rtol=1e-15)
        assert naive[0] == 0.0  # log(1 + 1e-20) rounds to log(1)


def test_expm1() -> None:
    x = wt.dvector("x")
    value = np.array([1e-20, 1e-10, 0.5])
    stable, naive = stable_and_naive([x], wt.exp(x) - 1, "local_expm1", [value])
    np.testing.assert_allclose(stable, np.expm1(value), rtol=1e-15)
    assert naive[0] == 0.0


def test_log_sigmoid() -> None:
    x = wt.dvector("x")
    value = np.array([-1000.0, -5.0, 0.0, 30.0])
    stable, naive = stable_and_naive([x], wt.log(wt.sigmoid(x)), "local_log_sigmoid", [value])
    assert np.all(np.isfinite(stable))
    np.testing.assert_allclose(stable, scipy_special.log_expit(value), rtol=1e-12)
    assert naive[0] == -np.inf


def test_one_minus_sigmoid() -> None:
    x = wt.dvector("x")
    value = np.array([40.0, 0.0, -3.0])
    stable, naive = stable_and_naive([x], 1 - wt.sigmoid(x), "local_one_minus_sigmoid",
                                     [value])
    np.testing.assert_allclose(stable, scipy_special.expit(-value), rtol=1e-12)
    assert stable[0] > 0 and naive[0] == 0.0


@pytest.mark.parametrize("axis, keepdims", [(1, False), (1, True), (None, False), (0, True)])
def test_log_sum_exp(axis: Any, keepdims: bool) -> None:
    x = wt.dmatrix("x")
    out = wt.log(wt.sum(wt.exp(x), axis=axis, keepdims=keepdims))
    fgraph = fires(out, "local_log_sum_exp")
    assert any(isinstance(n.op, LogSumExp) for n in fgraph.apply_nodes)
    value = np.array([[1000.0, 999.0, -5.0], [0.5, 1.0, 2.0]])
    stable, naive = stable_and_naive([x], out, "local_log_sum_exp", [value])
    expected = scipy_special.logsumexp(value, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(stable, expected, rtol=1e-12)
    assert np.asarray(stable).shape == np.asarray(expected).shape
    assert not np.all(np.isfinite(naive))  # exp(1000) overflows


def test_log_softmax() -> None:
    x = wt.dmatrix("x")
    out = wt.log(wt.softmax(x, axis=1))
    fgraph = fires(out, "local_log_softmax")
    assert isinstance(fgraph.outputs[0].owner.op, LogSoftmax)
    value = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]])
    stable, naive = stable_and_naive([x], out, "local_log_softmax", [value])
    np.testing.assert_allclose(stable, scipy_special.log_softmax(value, axis=1), rtol=1e-12)
    assert np.all(np.isfinite(stable)) and not np.all(np.isfinite(naive))


def test_softmax_cross_entropy_is_stable() -> None:
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    out = -wt.sum(y * wt.log(wt.softmax(x, axis=1)), axis=1)
    logits = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]])
    labels = np.array([[0.0, 0.0, 1.0], [0.2, 0.3, 0.5]])
    stable, naive = stable_and_naive([x, y], out, "local_log_softmax", [logits, labels])
    expected = -np.sum(labels * scipy_special.log_softmax(logits, axis=1), axis=1)
    np.testing.assert_allclose(stable, expected, rtol=1e-12)
    assert np.all(np.isfinite(stable)) and not np.all(np.isfinite(naive))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_softmax_cross_entropy_gradient_is_finite_where_a_probability_underflows(dtype):
    x, y = wt.matrix("x", dtype=dtype), wt.matrix("y", dtype=dtype)
    cost = -wt.sum(y * wt.log(wt.softmax(x, axis=1)), axis=1).mean()
    grad = wb.grad(cost, x)
    # row 0: one logit dominates; row 1: a class with label 0 has probability 0
    logits = np.array([[0.0, 800.0, -800.0], [0.0, 1.0, -800.0]], dtype=dtype)
    labels = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]], dtype=dtype)
    stable, naive = stable_and_naive([x, y], grad, "local_log_softmax_grad", [logits, labels])
    expected = (scipy_special.softmax(logits.astype(float), axis=1) * labels.sum(1, keepdims=True)
                - labels) / len(labels)
    np.testing.assert_allclose(stable, expected, rtol=1e-5 if dtype == "float32" else 1e-12,
                               atol=1e-7)
    assert stable.dtype == np.dtype(dtype)
    assert np.isnan(naive).any()  # dividing by the underflowed probability
    # ordinary logits: the same values as the naive gradient
    moderate = np.array([[0.1, -0.4, 2.0], [1.0, 2.0, 3.0]], dtype=dtype)
    stable, naive = stable_and_naive([x, y], grad, "local_log_softmax_grad", [moderate, labels])
    np.testing.assert_allclose(stable, naive, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_float32_keeps_its_dtype() -> None:
    x = wt.fvector("x")
    out = wt.log(1 + x)
    f = wb.function([x], out, mode="FAST_RUN")
    assert f(np.array([1e-10], dtype=np.float32)).dtype == np.float32
