"""Softmax, LogSoftmax and LogSumExp as fused C row kernels, against their `perform`.

Every axis of a 3-d input (and None), every combination of axes for logsumexp (with
and without kept dims), every layout (transposed, negative strides, gaps,
broadcast, zero-size), rows holding NaN, +inf or only -inf (where perform's non-finite rules
must come out of the same IEEE arithmetic), float32, and integer inputs computed in
the default float dtype. float16 has no C: the C linker runs it in Python unless a casting
mode converts it.
"""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.dtypes import casting_mode_as
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.special import (
    LogSoftmax,
    LogSumExp,
    Softmax,
    log_softmax,
    logsumexp,
    softmax,
)
from workbench.testing.accuracy import ulp_error
from workbench.testing.layouts import LAYOUTS_3D

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

RNG = np.random.default_rng(5)

LAYOUTS = LAYOUTS_3D


def compiled_and_reference(inputs, outputs):
    """The graph with the C linker (every node of the softmax family in C) and the Python one."""
    f = wb.function(inputs, outputs, linker="c")
    report = f.linker.report
    assert not report.py_nodes, report.py_nodes
    in_c = [n.op for n in report.c_nodes if isinstance(n.op, (Softmax, LogSoftmax, LogSumExp))]
    assert len(in_c) == len(outputs), report.c_nodes
    return f, wb.function(inputs, outputs, linker="py")


def assert_same(f_c, f_py, outputs, *values):
    got, want = f_c(*values), f_py(*values)
    for out, g, w in zip(outputs, got, want):
        assert g.dtype == w.dtype, (out, g.dtype, w.dtype)
        assert g.shape == w.shape, (out, g.shape, w.shape)
        assert out.type.values_eq_approx(g, w), (out, g, w)


def with_non_finite_rows(value):
    """`value` (3-d, last dim >= 4) with rows holding NaN, +inf, only -inf, and huge values."""
    value = value.copy()
    value[0, 0, 1] = np.nan
    value[0, 1, 2] = np.inf
    value[1, 2, :] = -np.inf
    value[1, 0, :] = 1000.0 + np.arange(value.shape[2])  # overflows without the shift
    value[2, 3, 0] = -np.inf
    return value


@pytest.fixture(scope="module")
def axis_graph():
    x = wt.dtensor3("x")
    outs = [fn(x, axis) for fn in (softmax, log_softmax) for axis in (0, 1, 2, None)]
    return outs, *compiled_and_reference([x], outs)


@pytest.fixture(scope="module")
def lse_graph():
    x = wt.dtensor3("x")
    outs = [logsumexp(x, axis) for axis in ((0,), (1,), (2,), (0, 1), (0, 2), (1, 2), None)]
    outs.append(logsumexp(x, (0, 2), keepdims=True))
    return outs, *compiled_and_reference([x], outs)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_softmax_and_log_softmax_along_every_axis(axis_graph, layout):
    outs, f_c, f_py = axis_graph
    value = RNG.normal(size=(3, 4, 5)) * 3
    assert_same(f_c, f_py, outs, LAYOUTS[layout](value))
    assert_same(f_c, f_py, outs, LAYOUTS[layout](with_non_finite_rows(value)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_logsumexp_over_every_combination_of_axes(lse_graph, layout):
    outs, f_c, f_py = lse_graph
    value = RNG.normal(size=(3, 4, 5)) * 3
    assert_same(f_c, f_py, outs, LAYOUTS[layout](value))
    assert_same(f_c, f_py, outs, LAYOUTS[layout](with_non_finite_rows(value)))


def test_non_finite_rows_follow_perform_exactly(axis_graph, lse_graph):
    value = with_non_finite_rows(RNG.normal(size=(3, 4, 5)))
    sm, lsm = axis_graph[1](value)[2], axis_graph[1](value)[6]  # along axis 2
    lse = lse_graph[1](value)[2]
    assert np.isnan(sm[0, 0]).all() and np.isnan(sm[0, 1]).all() and np.isnan(sm[1, 2]).all()
    np.testing.assert_allclose(sm[1, 0].sum(), 1.0)  # huge values: shifted, no overflow
    assert np.isnan(lse[0, 0]) and lse[0, 1] == np.inf and lse[1, 2] == -np.inf
    assert np.isclose(lse[1, 0], np.log(np.exp(np.arange(5.0) - 4).sum()) + 1004)
    assert np.isnan(lsm[0, 1, 2]) and (lsm[0, 1, [0, 1, 3, 4]] == -np.inf).all()
    assert sm[2, 3, 0] == 0.0 and lsm[2, 3, 0] == -np.inf


def test_long_rows_and_many_short_rows():
    x = wt.dmatrix("x")
    outs = [softmax(x, 1), log_softmax(x, 0), logsumexp(x, 1)]
    f_c, f_py = compiled_and_reference([x], outs)
    assert_same(f_c, f_py, outs, RNG.normal(size=(3, 5000)) * 10)  # several sum blocks
    assert_same(f_c, f_py, outs, RNG.normal(size=(2000, 2)))
    assert_same(f_c, f_py, outs, np.zeros((0, 4)))
    assert_same(f_c, f_py, outs, np.zeros((4, 0)))
    np.testing.assert_array_equal(f_c(np.zeros((4, 0)))[2], np.full(4, -np.inf))


def test_float32_and_integer_inputs():
    y, k = wt.fmatrix("y"), wt.lmatrix("k")
    outs = [softmax(y, 1), log_softmax(y, 0), logsumexp(y, 1), softmax(k, 1), logsumexp(k, 0)]
    assert [str(o.type.dtype) for o in outs[:3]] == ["float32"] * 3
    f_c, f_py = compiled_and_reference([y, k], outs)
    yv = (RNG.normal(size=(7, 3000)) * 5).astype(np.float32)
    kv = RNG.integers(-20, 20, size=(6, 9))
    assert_same(f_c, f_py, outs, yv, kv)
    assert_same(f_c, f_py, outs, yv[::-1, ::2], kv.T.copy().T[:, ::-1])


def test_reused_output_storage_and_a_new_shape():
    x = wt.dmatrix("x")
    f = wb.function([x], softmax(x, 0), linker="c")
    a = RNG.normal(size=(4, 6))
    kept = f(a)
    first = kept.copy()
    f(RNG.normal(size=(4, 6)))
    np.testing.assert_array_equal(kept, first)
    np.testing.assert_allclose(f(np.zeros((3, 2))), np.full((3, 2), 1 / 3))


def test_float16_runs_in_python_or_is_upcast_to_float32_in_c():
    h = wt.matrix("h", dtype="float16")
    out = softmax(h, 1)
    in_python = wb.function([h], out, linker="c")  # no casting mode: perform, in float16
    assert any(isinstance(n.op, Softmax) for n, _ in in_python.linker.report.py_nodes)
    value = RNG.normal(size=(3, 4)).astype(np.float16)
    np.testing.assert_array_equal(in_python(value), wb.function([h], out, linker="py")(value))
    with casting_mode_as("upcast"):
        f = wb.function([h], out, linker="c")
    assert any(isinstance(n.op, Softmax) for n in f.linker.report.c_nodes)
    np.testing.assert_allclose(f(value), wb.function([h], out, linker="py")(value), rtol=5e-3)


#: The float64 exp of the row kernels, per code path, in ulps of the exact value. AVX-512:
#: `AVX512_EXP` rounds 2**(j/16) (up to 1 ulp of the result) and its result (0.5 ulp); the
#: polynomial's truncation adds < 0.01 ulp. Without AVX-512: libmvec's exp, documented at
#: most 4 ulp. Measured on 3 million inputs in [-746, -40] against long double (AMD Zen 4,
#: glibc 2.36): 1.02 and 3.00 ulp; NumPy's own exp 0.69.
EXP_BOUND_ULPS = {"avx512": 1.5, "no_avx512": 4.0}


def test_exp_of_the_row_kernels_keeps_the_bound_of_its_code_path(isa):
    """Where 1 + exp(x) rounds to 1 (x < -40), softmax of the row [0, x_1, ...] is exp(x_i)
    itself: the float64 kernels' exp is measured directly against exp in long double (64-bit
    mantissa), down to subnormal results and underflow to 0; closer to 0, through the whole
    softmax, whose sum, reciprocal and product add a rounding each."""
    bound = EXP_BOUND_ULPS[isa]
    x = wt.dmatrix("x")
    f = wb.function([x], softmax(x, 1), linker="c")
    tiny = RNG.uniform(-746.0, -40.0, size=(3000, 13))  # 13: full vectors and a tail
    tiny[0] = [-746.0, -745.2, -745.1, -744.4, -709.1, -708.4, -708.3, -700.0, -600.5,
               -300.25, -100.0, -45.0, -40.0]
    got = f(np.concatenate([np.zeros((len(tiny), 1)), tiny], axis=1))
    assert (got[:, 0] == 1.0).all()
    exact = np.exp(tiny.astype(np.longdouble))
    assert ulp_error(got[:, 1:], exact).max() <= bound
    assert (got[:, 1:][exact < np.finfo(np.float64).smallest_subnormal / 4] == 0).all()
    near = RNG.uniform(-40.0, 0.0, size=(5000, 1))
    got = f(np.concatenate([np.zeros_like(near), near], axis=1))
    e = np.exp(near[:, 0].astype(np.longdouble))
    rtol = (2 * bound + 2) * np.finfo(np.float64).eps
    np.testing.assert_allclose(got[:, 1], e / (1 + e), rtol=rtol, atol=0)
    np.testing.assert_allclose(got[:, 0], 1 / (1 + e), rtol=rtol, atol=0)
