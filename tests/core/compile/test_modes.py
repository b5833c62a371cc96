"""Compilation modes FAST_RUN, FAST_COMPILE and DEBUG, and the trace a Function keeps."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import RewriteQuery, get_mode
from workbench.core.link.debugmode import RewriteCheckError, random_value
from workbench.core.rewrite import (
    EquilibriumGraphRewriter,
    RewriteTrace,
    node_rewriter,
    rewrite_db,
)


def test_standard_modes_query_the_database():
    fast_run, fast_compile, debug = (get_mode(m) for m in ("FAST_RUN", "FAST_COMPILE", "DEBUG"))
    assert isinstance(fast_run.rewriter, RewriteQuery)
    assert fast_run.rewriter.include == ("fast_run",)
    assert fast_compile.rewriter.include == ("fast_compile",) and fast_compile.linker == "py"
    assert debug.rewriter.debug and debug.linker == "debug"  # link/c/debug.py
    passes = [str(p) for p in fast_compile.rewriter.query()]
    assert passes == ["merge1", "canonicalize", "merge2", "protect_inputs", "backend_dtypes"]
    assert "stabilize" in [str(p) for p in fast_run.rewriter.query()]


def test_function_keeps_the_trace_of_its_compilation():
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    f = wb.function([x, y], x * y / y)
    trace = f.maker.rewrite_trace
    assert isinstance(trace, RewriteTrace)
    assert any("mul_div" in s.rewrite for s in trace.filter(changed_only=True))
    assert "true_div" in wb.dprint(trace.graph_at(0), file="str")
    a, b = np.ones((2, 2)) * 3, np.ones((2, 2)) * 2
    np.testing.assert_allclose(f(a, b), a)
    no_rewrites = wb.function([x, y], x * y / y, mode=wb.Mode("py", None))
    # no rewrites: the trace holds only the passes linking needs (none changed this graph)
    assert len(no_rewrites.maker.rewrite_trace) == 0


def test_fast_compile_does_not_fuse_and_fast_run_does():
    x = wt.dvector("x")
    out = wt.exp(x) * 2.0 + wt.sin(x)
    slow = wb.function([x], out, mode="FAST_COMPILE")
    fast = wb.function([x], out, mode="FAST_RUN")
    assert len(slow.maker.fgraph.apply_nodes) > len(fast.maker.fgraph.apply_nodes)
    v = np.linspace(0.1, 1, 4)
    np.testing.assert_allclose(slow(v), fast(v))
    assert "fusion" not in {s.pass_ for s in slow.maker.rewrite_trace}


def test_including_and_excluding():
    x = wt.dvector("x")
    out = wt.exp(x) * 2.0 + wt.sin(x)
    no_fusion = get_mode("FAST_RUN").excluding("fusion")
    f = wb.function([x], out, mode=no_fusion)
    assert "fusion" not in {s.pass_ for s in f.maker.rewrite_trace}
    assert "fusion" in no_fusion.rewriter.exclude
    more = get_mode("FAST_COMPILE").including("stabilize")
    assert "stabilize" in [str(p) for p in more.rewriter.query()]
    with pytest.raises(TypeError, match="RewriteQuery"):
        wb.Mode("py", None).excluding("fusion")


def test_debug_mode_accepts_correct_rewrites():
    x, y = wt.dmatrix("x"), wt.dvector("y")
    f = wb.function([x, y], wt.log(1.0 + wt.exp(x * y / y)) - x * 1.0, mode="DEBUG")
    a, b = np.full((2, 3), 0.5), np.full(3, 2.0)
    np.testing.assert_allclose(f(a, b), np.log1p(np.exp(a)) - a)


@pytest.mark.parametrize("out_dtype", ["float32", "float64"])
def test_debug_mode_accepts_a_float16_fold_that_rounds_differently(out_dtype):
    """(x*a)*b -> x*(a*b) in float16 may change the result by a float16 rounding (here
    33.09375 -> 33.0625 at DEBUG's random input): legal, though the output, cast to
    float32 or float64, has a stricter tolerance. DEBUG compares with float16's."""
    x = wt.TensorType("float16", (None,))("x")
    out = wt.cast((x * np.float16(5.168)) * np.float16(9.51), out_dtype)
    f = wb.function([x], out, mode="DEBUG")
    assert "local_mul_constants" in f.maker.rewrite_trace.rewrites_used()
    value = np.array([0.5], dtype=np.float16)
    np.testing.assert_allclose(f(value), value * np.float16(5.168 * 9.51), rtol=2e-3)


def test_debug_mode_float16_tolerance_still_catches_a_wrong_rewrite():
    rewrite_db.register("test_wrong_pass16", EquilibriumGraphRewriter(
        [local_wrong_exp_to_sqr], name="test_wrong_pass16"), "test_debug_wrong16",
        position=2.5)
    try:
        x = wt.TensorType("float16", (None,))("x")
        with pytest.raises(RewriteCheckError, match="local_wrong_exp_to_sqr"):
            wb.function([x], wt.cast(wt.exp(x), "float64"),
                        mode=get_mode("DEBUG").including("test_debug_wrong16"))
    finally:
        rewrite_db.remove("test_wrong_pass16")


@node_rewriter([wt.exp.op])
def local_wrong_exp_to_sqr(fgraph, node):
    """Deliberately wrong: exp(x) is not x**2."""
    return [wt.sqr(node.inputs[0])]


def test_debug_mode_names_the_first_rewrite_that_changes_values():
    rewrite_db.register("test_wrong_pass", EquilibriumGraphRewriter([local_wrong_exp_to_sqr],
                                                                    name="test_wrong_pass"),
                        "test_debug_wrong", position=2.5)
    try:
        x = wt.dmatrix("x")
        out = wt.exp(x) + 1.0
        # without DEBUG the wrong rewrite silently changes values
        f = wb.function([x], out, mode=get_mode("FAST_RUN").including("test_debug_wrong"))
        assert not np.allclose(f(np.ones((2, 2))), np.e + 1)
        with pytest.raises(RewriteCheckError) as info:
            wb.function([x], out, mode=get_mode("DEBUG").including("test_debug_wrong"))
        message = str(info.value)
        assert "local_wrong_exp_to_sqr" in message and "test_wrong_pass" in message
        assert "before:" in message and "after:" in message
        assert __file__ in message  # where the rewrite is defined
    finally:
        rewrite_db.remove("test_wrong_pass")


def test_debug_mode_stops_on_a_rewrite_that_raises():
    @node_rewriter([wt.exp.op])
    def local_raising(fgraph, node):
        raise RuntimeError("broken rewrite")

    rewrite_db.register("test_raise_pass", EquilibriumGraphRewriter([local_raising]),
                        "test_debug_raise", position=2.6)
    try:
        x = wt.dvector("x")
        with pytest.raises(RuntimeError, match="broken rewrite"):
            wb.function([x], wt.exp(x), mode=get_mode("DEBUG").including("test_debug_raise"))
        with pytest.warns(UserWarning, match="local_raising"):
            f = wb.function([x], wt.exp(x),
                            mode=get_mode("FAST_RUN").including("test_debug_raise"))
        np.testing.assert_allclose(f(np.zeros(2)), [1.0, 1.0])
        assert f.maker.rewrite_trace.filter(failed=True)
    finally:
        rewrite_db.remove("test_raise_pass")


def test_random_values_follow_the_types():
    rng = np.random.default_rng(0)
    value = random_value(wt.TensorType("float32", shape=(None, 4, None)), rng)
    assert value.dtype == np.float32 and value.shape == (2, 4, 2)
    ints = random_value(wt.TensorType("int64", shape=(None,)), rng, unknown=(3,))
    assert ints.shape == (3,) and ints.min() >= 1
    with pytest.raises(TypeError, match="random values"):
        random_value(object(), rng)


@pytest.mark.filterwarnings("ignore:DEBUG mode cannot check")  # index inputs: no random values
def test_debug_mode_checks_every_step_on_a_sample_of_the_catalogue():
    from workbench.testing.catalog import all_cases

    cases = all_cases()[::3]
    checked = 0
    for case in cases:
        inputs, out, values = case.graph("float64")
        # the rewrite checks are the point here: link in Python (the debug linker's own
        # catalogue test is tests/core/link/c/test_c_catalog.py)
        f = wb.function(inputs, out, mode=get_mode("DEBUG").clone(linker="py"),
                        on_unused_input="ignore")
        result = f(*values)
        expected = case.expected("float64")
        if isinstance(out, (list, tuple)):
            for got, want in zip(result, expected):
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
        else:
            np.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-8)
        checked += len(f.maker.rewrite_trace.filter(changed_only=True))
    assert len(cases) >= 200 and checked > 0
