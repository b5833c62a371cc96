"""PyTensor's stabilisations, as a table: each expression at inputs where its naive
form overflows or underflows gives the finite value PyTensor gives, on every
linker, and the stabilize rewrite that made it so is named in the trace.

The expected values are the exact ones rounded (checked against the naive graph at
moderate inputs in the same rows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import get_mode


def logistic(x: Any) -> Any:
    return 1 / (1 + wt.exp(x))


class Case(NamedTuple):
    name: str
    rules: tuple[str, ...]
    build: Callable[..., Any]
    inputs: tuple[np.ndarray, ...]
    expected: np.ndarray
    atol: float = 0.0  # for differences of large numbers (log_softmax: x - logsumexp)


M = np.array([[-10.0, -10.0, 999.0], [999.0, 990.0, -10.0]])
#: log_softmax of M's rows: each minus max + log(sum(exp(row - max)))
LOG_SOFTMAX_M = M - (M.max(axis=1, keepdims=True)
                     + np.log(np.exp(M - M.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)))
CASES = [
    Case("log(softmax(m)[0])", ("local_log_softmax",),
         lambda m: wt.log(wt.softmax(m, axis=-1)[0]), (M,), np.array([-1009.0, -1009.0, 0.0]),
         1e-12 * 999),
    Case("log(softmax(m).T)", ("local_log_softmax",),
         lambda m: wt.log(wt.softmax(m, axis=-1).T), (M,), LOG_SOFTMAX_M.T, 1e-12 * 999),
    Case("log(exp(x) + exp(y))", ("local_log_add_exp",),
         lambda x, y: wt.log(wt.exp(x) + wt.exp(y)),
         (np.array([1e4, 1e4, -1e4, 0.5]), np.array([1e4, -1e4, -1e4, 1.5])),
         np.array([1e4 + np.log(2), 1e4, -1e4 + np.log(2), np.logaddexp(0.5, 1.5)])),
    Case("log(1 + exp(x))", ("local_log1p", "local_log1p_exp"),
         lambda x: wt.log(1 + wt.exp(x)), (np.array([800.0, -800.0, 0.5]),),
         np.array([800.0, 0.0, np.log1p(np.exp(0.5))])),
    Case("log1p(-sigmoid(x))", ("local_log1p_neg_sigmoid",),
         lambda x: wt.log1p(-wt.sigmoid(x)), (np.array([37.0, 800.0, 0.5]),),
         np.array([-37.0, -800.0, np.log1p(-1 / (1 + np.exp(-0.5)))])),
    Case("log1p(expm1(x))", ("local_log1p_expm1",),
         lambda x: wt.log1p(wt.expm1(x)), (np.array([1000.0, 1e-300, -5.0]),),
         np.array([1000.0, 1e-300, -5.0])),
    Case("sqrt(sqr(x))", ("local_sqrt_sqr",), lambda x: wt.sqrt(wt.sqr(x)),
         (np.array([1e200, -1e200, 1e-200, -3.0]),), np.array([1e200, 1e200, 1e-200, 3.0])),
    Case("sqrt(x**2)", ("local_sqrt_sqr",), lambda x: wt.sqrt(x ** 2),
         (np.array([-1e200, 2.0]),), np.array([1e200, 2.0])),
    Case("grad 1/(1+exp(x))", ("local_reciprocal_1_plus_exp", "local_exp_times_sigmoid"),
         lambda x: wb.grad(logistic(x).sum(), x), (np.array([1000.0, -1000.0, 0.5]),),
         np.array([-0.0, -0.0, -np.exp(0.5) / (1 + np.exp(0.5)) ** 2])),
    Case("grad 1/(1+exp(-x))", ("local_reciprocal_1_plus_exp", "local_exp_times_sigmoid"),
         lambda x: wb.grad(logistic(-x).sum(), x), (np.array([-1000.0, 1000.0, 0.5]),),
         np.array([0.0, 0.0, np.exp(-0.5) / (1 + np.exp(-0.5)) ** 2])),
]


def symbolic_inputs(values: tuple[np.ndarray, ...]) -> list[Any]:
    return [wt.TensorType("float64", (None,) * v.ndim)(f"v{k}") for k, v in enumerate(values)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_stabilize_rewrite_is_named_in_the_trace(case: Case) -> None:
    inputs = symbolic_inputs(case.inputs)
    _, trace = wb.rewrite_graph([case.build(*inputs)], mode="FAST_RUN", trace=True)
    assert not trace.failed_steps, trace.failed_steps.table()
    assert set(case.rules) <= set(trace.rewrites_used()), trace.table()
    assert {s.pass_ for s in trace if s.rewrite in case.rules} == {"stabilize"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_value_at_extreme_inputs_is_finite_and_exact(case: Case, linker: str) -> None:
    inputs = symbolic_inputs(case.inputs)
    with np.errstate(all="ignore"):
        got = wb.function(inputs, case.build(*inputs), linker=linker)(*case.inputs)
    np.testing.assert_allclose(got, case.expected, rtol=1e-12, atol=case.atol)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(case.expected))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_without_the_rewrites_the_extremes_are_wrong(case: Case) -> None:
    """The table is not vacuous: without stabilize some value is off (inf, NaN, 0),
    while those at moderate inputs are the same either way."""
    inputs = symbolic_inputs(case.inputs)
    naive_mode = get_mode("FAST_RUN").excluding("stabilize")
    with np.errstate(all="ignore"):
        naive = np.asarray(wb.function(inputs, case.build(*inputs), mode=naive_mode)(
            *case.inputs))
    close = np.isclose(naive, case.expected, rtol=1e-12, atol=case.atol)
    assert not close.all() or (np.signbit(naive) != np.signbit(case.expected)).any()
    assert close.any()
