"""Property test: the whole FAST_RUN pipeline preserves values on random elementwise graphs.

A small grammar over three inputs (two vectors and a scalar, so broadcasting
is involved) with +, -, *, /, exp, log of a positive, sqr, powers, sigmoid and
the constants the rules look for (0, 1, 2, 0.5, -1) builds 200 graphs. Each is
compiled in DEBUG mode (FAST_RUN's rewrites, every step evaluated on random
inputs and compared with the step before: the first step that changes values
raises, naming its rewrite) and with no rewrites at all, and the final results
must agree wherever the un-rewritten graph is finite (the documented FAST_RUN
liberties, ``x*0 -> 0`` and ``x-x -> 0``, only differ on NaN and inf).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import workbench.tensor as wt
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.core.compile.mode import get_mode

NO_REWRITES = wb.Mode(linker="py", rewriter=None)
DEBUG_REWRITES = get_mode("DEBUG").clone(linker="py")

CONSTANTS = (0.0, 1.0, 2.0, 0.5, -1.0)
UNARY = ("exp", "log_pos", "sqr", "neg", "sigmoid", "pow2", "pow3", "recip")
BINARY = ("add", "sub", "mul", "div")

leaves = st.one_of(st.sampled_from(["x", "y", "s"]), st.sampled_from(CONSTANTS))


def _extend(children: Any) -> Any:
    return st.one_of(
        st.tuples(st.sampled_from(UNARY), children),
        st.tuples(st.sampled_from(BINARY), children, children),
    )


expressions = st.recursive(leaves, _extend, max_leaves=8)


def build(expr: Any, env: dict[str, Any]) -> Any:
    """The graph of `expr` (a leaf name, a constant, or (op, child...))."""
    if isinstance(expr, str):
        return env[expr]
    if isinstance(expr, float):
        return wt.constant(expr)
    op, *children = expr
    args = [build(c, env) for c in children]
    if op == "exp":
        return wt.exp(wt.tanh(args[0]))  # bounded: no overflow from nesting
    if op == "log_pos":
        return wt.log(1 + wt.sqr(args[0]))  # a positive argument (log1p after stabilize)
    if op == "sqr":
        return wt.sqr(args[0])
    if op == "neg":
        return -args[0]
    if op == "sigmoid":
        return 1 - wt.sigmoid(args[0])
    if op == "pow2":
        return args[0] ** 2
    if op == "pow3":
        return args[0] ** 3
    if op == "recip":
        return args[0] ** -1
    a, b = args
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]


VALUES = {"x": np.array([0.7, -1.3, 2.0]), "y": np.array([1.1, 0.4, -0.6]), "s": 0.9}


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(expressions)
def test_fast_run_preserves_values_step_by_step_on_random_graphs(expr: Any) -> None:
    env = {"x": wt.dvector("x"), "y": wt.dvector("y"), "s": wt.dscalar("s")}
    out = build(expr, env)
    if not isinstance(out, wb.Variable) or out.owner is None:
        return
    inputs = [env["x"], env["y"], env["s"]]
    args = [VALUES["x"], VALUES["y"], VALUES["s"]]
    with np.errstate(all="ignore"):
        expected = wb.function(inputs, out, mode=NO_REWRITES, on_unused_input="ignore")(*args)
        assume(np.all(np.isfinite(expected)) and np.all(np.abs(expected) < 1e12))
        # DEBUG's step-by-step rewrite checks, linked in Python: this test is about the
        # rewrites (tests/core/link/c checks the debug linker's C-vs-perform comparison)
        fast = wb.function(inputs, out, mode=DEBUG_REWRITES, on_unused_input="ignore")
        got = fast(*args)
    trace = fast.maker.rewrite_trace
    assert not trace.failed_steps, trace.failed_steps.table()
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    assert np.shape(got) == np.shape(expected), (expr, np.shape(got), np.shape(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9, err_msg=str(expr))
