"""Every algebraic rewrite keeps NumPy's values outside its identity's domain.

Each row is an expression, the rule expected to rewrite it (or not: a rule that
would be wrong there must leave it alone), and inputs at the edges: NaN, the
infinities, signed zeros, negative numbers under log, constants whose product
overflows. FAST_RUN must give what NumPy gives for the expression as written
(the graph without rewrites evaluates it node by node with NumPy), NaN for NaN
and the same infinities; signs of zero results are not compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.testing.random_graphs import arrays_agree

NO_REWRITES = wb.Mode(linker="py", rewriter=None)
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 2.5, -3.0, 1e-300, 1e300])
#: without the magnitudes where a rewrite may be more exact than the expression as
#: written (x*y/y where x*y overflows; log1p(1e-300), where log(1 + 1e-300) is 0)
SPECIALS = EDGES[:8]


class Case(NamedTuple):
    rule: str
    build: Callable[..., Any]
    values: tuple[np.ndarray, ...]
    fires: bool = True
    dtype: str = "float64"


def pair(xs: Any, ys: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every combination of `xs` and `ys`, as two vectors."""
    a, b = np.meshgrid(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
    return a.ravel(), b.ravel()


CASES = [
    # canonicalize: exp/log
    Case("local_exp_log", lambda x: wt.exp(wt.log(x)), (EDGES,)),
    Case("local_exp_log", lambda x: wt.exp(wt.log(x)), (np.array([-1, 2, 0]),), dtype="int64"),
    Case("local_log_exp", lambda x: wt.log(wt.exp(x)), (SPECIALS,)),
    # x*y/y: symbolic divisors switch to NaN outside the domain, constants must be safe
    Case("local_mul_div_same", lambda x, y: x * y / y, pair(SPECIALS, SPECIALS)),
    Case("local_mul_div_same_left", lambda x, y: y * x / y, pair(SPECIALS, SPECIALS)),
    Case("local_mul_div_same", lambda x: x * 3.0 / 3.0, (EDGES,)),
    Case("local_mul_div_same", lambda x: x * 0.0 / 0.0, (EDGES,)),  # the switch folds to NaN
    Case("local_mul_div_same", lambda x: x * np.inf / np.inf, (EDGES,)),
    Case("local_mul_div_same", lambda x, y: x * y / y,
         (np.array([100, -7], dtype=np.int8), np.array([2, 3], dtype=np.int8)), fires=False,
         dtype="int8"),
    # neutral and absorbing elements
    Case("local_add_zero", lambda x: x + 0, (EDGES,)),
    Case("local_sub_zero", lambda x: x - 0, (EDGES,)),
    Case("local_mul_one", lambda x: x * 1, (EDGES,)),
    Case("local_div_one", lambda x: x / 1, (EDGES,)),
    Case("local_neg_neg", lambda x: wt.neg(wt.neg(x)), (EDGES,)),
    Case("local_mul_zero", lambda x: x * 0, (EDGES,), fires=False),
    Case("local_sub_self", lambda x: x - x, (EDGES,), fires=False),
    Case("local_mul_zero", lambda x: x * 0, (np.array([-128, 0, 127], dtype=np.int8),),
         dtype="int8"),
    Case("local_sub_self", lambda x: x - x, (np.array([-2**63, 0], dtype=np.int64),),
         dtype="int64"),
    # constants collected, unless their combination overflows or underflows
    Case("local_add_constants", lambda x: (x + 1.0) + 2.0, (EDGES,)),
    Case("local_mul_constants", lambda x: (x * 2.0) * 3.0, (EDGES,)),
    Case("local_add_constants", lambda x: (x + 1e308) + 1e308, (np.array([-1e308, 0.0]),),
         fires=False),
    Case("local_mul_constants", lambda x: (x * 1e200) * 1e200, (EDGES,), fires=False),
    Case("local_mul_constants", lambda x: (x * 1e-200) * 1e-200, (EDGES,), fires=False),
    # constant exponents
    *(Case("local_pow_constant", lambda x, e=e: x ** e, (EDGES,)) for e in (0, 1, 2, 0.5, -1)),
    *(Case("local_pow_specialize", lambda x, e=e: x ** e, (EDGES[:9],))  # 1e300**-3 is 0
      for e in (3, 4, -2, -3, -4)),
    # stabilize
    Case("local_log1p", lambda x: wt.log(1 + x), (SPECIALS,)),
    Case("local_expm1", lambda x: wt.exp(x) - 1, (SPECIALS,)),
    Case("local_log_sigmoid", lambda x: wt.log(wt.sigmoid(x)), (EDGES,)),
    Case("local_one_minus_sigmoid", lambda x: 1 - wt.sigmoid(x), (EDGES,)),
]
ROW_EDGES = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0], [1.0, 2.0],
                      [np.inf, np.inf], [-np.inf, 3.0]])
#: softmax of a row holding +inf is NaN throughout; log_softmax keeps the -inf of its
#: finite entries (their limit, as scipy's log_softmax): those rows are left out
FINITE_MAX_ROWS = ROW_EDGES[[0, 2, 3, 5]]
MATRIX_CASES = [
    Case("local_log_sum_exp", lambda m: wt.log(wt.sum(wt.exp(m), axis=1)), (ROW_EDGES,)),
    Case("local_log_sum_exp", lambda m: wt.log(wt.sum(wt.exp(m), axis=1, keepdims=True)),
         (ROW_EDGES,)),
    Case("local_log_softmax", lambda m: wt.log(wt.softmax(m, axis=1)), (FINITE_MAX_ROWS,)),
]


def run(case: Case) -> None:
    inputs = [wt.TensorType(case.dtype, (None,) * np.ndim(v))(f"v{k}")
              for k, v in enumerate(case.values)]
    out = case.build(*inputs)
    _, trace = wb.rewrite_graph([out], mode="FAST_RUN", trace=True)
    assert (case.rule in trace.rewrites_used()) == case.fires, trace.table()
    with np.errstate(all="ignore"):
        got = wb.function(inputs, out, mode="FAST_RUN")(*case.values)
        want = wb.function(inputs, out, mode=NO_REWRITES)(*case.values)
    assert got.dtype == want.dtype
    assert arrays_agree(got, want, rtol=1e-12), (
        f"{case.rule} on {case.values}: FAST_RUN {got}, NumPy {want}")


@pytest.mark.parametrize("case", CASES + MATRIX_CASES,
                         ids=lambda c: f"{c.rule}-{c.dtype}")
def test_rewrite_keeps_numpy_values_outside_its_domain(case: Case) -> None:
    run(case)


def test_exp_of_log_is_nan_where_log_is_undefined() -> None:
    """The issue's example: [-1, 2, 0] gives NumPy's [nan, 2, 0] (exp(log(0)) = exp(-inf))."""
    x = wt.dvector("x")
    got = wb.function([x], wt.exp(wt.log(x)), mode="FAST_RUN")(np.array([-1.0, 2.0, 0.0]))
    np.testing.assert_array_equal(got, [np.nan, 2.0, 0.0])
