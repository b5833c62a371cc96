"""The softmax family's row loops shared among helper threads for large inputs.

Each row is computed by one thread with the same kernel, so the parallel loop must give
bit-identical results to the serial one (checked with the size threshold forced to 0 and
the thread cap switched through ``config.blas_threads`` between calls). The rows obey the
one cap of compiled code (blas_threads.py's policy block, read at every call: no
recompilation), seen through the threads-worked counter the profiler reads; the threads
must really start (counted in /proc in a fresh process) and a forked child must still
compute (it has none of its parent's helpers).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.link.c import blas_threads
from workbench.core.link.c.compiler import has_compiler
from workbench.core.link.c.ops import special
from workbench.core.tensor.special import log_softmax, logsumexp, softmax

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

RNG = np.random.default_rng(11)
ROOT = Path(__file__).resolve().parents[4]


#: the cores this process may run on: no call gets more threads
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2
#: what a cap of 2 threads gives here (1 on a one-core machine or affinity)
TWO = min(2, CORES)


@pytest.fixture
def low_threshold(monkeypatch):
    """Rows are shared among threads from the first element (a new source, a new module)."""
    monkeypatch.setattr(special, "PARALLEL_MIN_ELEMENTS", 0)


@pytest.fixture
def cap():
    """Set `wb.config.blas_threads` freely: the process-wide cap is restored after."""
    saved = blas_threads.max_threads()
    yield
    blas_threads.set_max_threads(saved)


def with_awkward_rows(value):
    """`value` (2-d, at least 4 x 4) with rows holding NaN, +inf, only -inf and huge values."""
    value = value.copy()
    value[0, 1] = np.nan
    value[1, 2] = np.inf
    value[2, :] = -np.inf
    value[3, :] = 1000.0 + np.arange(value.shape[1])
    return value


def test_the_threshold_is_compiled_into_the_source(low_threshold):
    x = wt.dmatrix("x")
    f = wb.function([x], softmax(x, 1), linker="c")
    (src,) = f.linker.report.sources.values()
    assert "#define WB_PAR_MIN ((npy_intp)0)" in src.source


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parallel_rows_are_bit_identical_to_the_serial_loop(low_threshold, cap, dtype):
    x = wt.matrix("x", dtype=dtype)
    t = wt.tensor3("t", dtype=dtype)
    outs = [softmax(x, 1), log_softmax(x, 1), logsumexp(x, 1), softmax(x, 0),
            log_softmax(t, 0), logsumexp(t, (0, 2)), logsumexp(t, 2, keepdims=True)]
    f = wb.function([x, t], outs, linker="c")
    assert len(f.linker.report.c_nodes) == len(outs) and not f.linker.report.py_nodes
    xv = with_awkward_rows(RNG.normal(size=(203, 37)) * 4).astype(dtype)
    tv = (RNG.normal(size=(9, 31, 45)) * 4).astype(dtype)[:, ::-1, ::2]  # strided rows
    wb.config.blas_threads = 1
    serial = [o.copy() for o in f(xv, tv)]
    for threads in (2, 3, 7, None):
        wb.config.blas_threads = threads
        parallel = f(xv, tv)
        for s, p in zip(serial, parallel):
            assert s.dtype == p.dtype and s.shape == p.shape
            np.testing.assert_array_equal(s.view(f"u{s.itemsize}"), p.view(f"u{p.itemsize}"))
    reference = wb.function([x, t], outs, linker="py")(xv, tv)
    for out, s, r in zip(outs, serial, reference):
        assert out.type.values_eq_approx(s, r)


def test_more_threads_than_rows_and_a_single_row(low_threshold, cap):
    x = wt.dmatrix("x")
    f = wb.function([x], [softmax(x, 1), logsumexp(x, 1)], linker="c")
    wb.config.blas_threads = 1
    values = [RNG.normal(size=shape) for shape in ((2, 50), (1, 80), (3, 1), (0, 5), (5, 0))]
    serial = [[o.copy() for o in f(v)] for v in values]
    wb.config.blas_threads = 16
    for v, want in zip(values, serial):
        for got, w in zip(f(v), want):
            np.testing.assert_array_equal(got, w)


def _big_softmax():
    """A compiled softmax over rows, and a matrix above the size threshold (1000 x 200)."""
    x = wt.dmatrix("x")
    return wb.function([x], softmax(x, 1), linker="c"), RNG.normal(size=(1000, 200))


def _ran_on() -> tuple[int, int]:
    return blas_threads.last_threads(), blas_threads.last_worked_threads()


def test_the_cap_rules_the_rows_at_every_call_without_recompiling(cap):
    f, value = _big_softmax()
    wb.config.blas_threads = 1
    want = f(value).copy()
    assert _ran_on() == (1, 1)  # one thread given, the caller alone computed the rows
    wb.config.blas_threads = 2  # the same compiled function: the cap is read at the call
    np.testing.assert_array_equal(f(value), want)
    given, worked = _ran_on()
    assert given == TWO and 1 <= worked <= given  # a helper the scheduler ran late took none
    blas_threads.set_max_threads(1)  # the same cap, by its own name
    np.testing.assert_array_equal(f(value), want)
    assert _ran_on() == (1, 1)
    wb.config.blas_threads = 64  # never more than the cores this process may run on
    np.testing.assert_array_equal(f(value), want)
    assert _ran_on()[0] == min(64, CORES)
    f(value[:3])  # small inputs stay on the calling thread, whatever the cap
    assert _ran_on() == (1, 1)


def test_the_worked_count_is_the_threads_that_computed_rows(cap):
    f, value = _big_softmax()
    wb.config.blas_threads = 2
    with blas_threads.helpers_held():  # helpers woken, but they take no rows
        f(value)
    assert _ran_on() == (TWO, 1)  # given two, the caller alone did the work


def test_without_a_cap_the_blas_own_count_rules_the_rows_too(cap):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from workbench.core.link.c import blas_lib

    lib = blas_lib.find_blas()
    if lib is None or not lib.threads_api:
        pytest.skip("no BLAS whose thread count workbench can read: the cores decide")
    f, value = _big_softmax()
    wb.config.blas_threads = None
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        f(value)
        assert _ran_on() == (1, 1)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        f(value)
        assert _ran_on()[0] == TWO


def test_the_profile_shows_the_threads_of_a_row_kernel_node(cap):
    x = wt.dmatrix("x")
    f = wb.function([x], wt.exp(softmax(x, 1)), linker="c", profile=True)
    value = RNG.normal(size=(1000, 200))
    wb.config.blas_threads = 1
    f(value)
    rows = {row.op_class: row for row in f.profile.by_node()}
    assert rows["Softmax"].threads == "1" and rows["Elemwise"].threads == ""
    wb.config.blas_threads = 2
    with blas_threads.helpers_held():
        f(value)
    assert f.profile.by_node()[0].threads == "1"  # given two, only the caller worked
    assert "row kernel" in str(f.profile)


SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import workbench as wb
    import workbench.tensor as wt

    def tasks():
        return len(os.listdir("/proc/self/task"))

    x = wt.dmatrix("x")
    f = wb.function([x], [wt.softmax(x, 1), wt.logsumexp(x, 1)], linker="c")
    value = np.random.default_rng(0).normal(size=(1000, 200))
    before = tasks()
    sm, lse = f(value)
    sm, lse = sm.copy(), lse.copy()
    after = tasks()
    f(value)  # the helpers are kept for the next calls, not started again
    assert tasks() == after, (after, tasks())
    pid = os.fork()
    if pid == 0:  # the child has no helper threads; it must still compute, and the same
        got = f(value)
        os._exit(0 if np.array_equal(got[0], sm) and np.array_equal(got[1], lse) else 3)
    _, status = os.waitpid(pid, 0)
    wb.config.blas_threads = 2  # read at the next call: its helpers start then
    assert np.array_equal(f(value)[0], sm)
    grown = tasks() - after
    # the helpers belong to a compiled module: one pool per module holding row kernels
    from workbench.core.link.c import bundle
    from workbench.core.link.c.cache import default_cache
    from workbench.core.link.c.codegen import node_source
    modules = {bundle.module_file(default_cache(), node_source(n))
               for n in f.maker.fgraph.toposort()}
    print(len(modules), before, after, grown, os.waitstatus_to_exitcode(status))
""")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or not hasattr(os, "fork"),
                    reason="counts threads through Linux's /proc and forks")
@pytest.mark.parametrize("threads", [1, 3])
def test_helper_threads_start_as_configured_and_fork_safely(threads):
    env = dict(os.environ, **{blas_threads.THREADS_ENV: str(threads)},
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    modules, before, after, grown, child = map(int, res.stdout.split()[-5:])
    assert child == 0
    # two nodes (softmax and logsumexp): one helper per thread past the caller's, the
    # threads at most the cores, per module holding them (one when they compiled in one
    # bundle, which shares its row kernels)
    helpers = min(threads, CORES) - 1
    assert after - before == modules * helpers
    # the cap set to 2 in the running process: the next call started what it lacked
    assert grown == modules * max(0, TWO - 1 - helpers)
