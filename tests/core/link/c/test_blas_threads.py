"""The C linker chooses the BLAS thread count of each call (blas_threads.py): by size,
capped by config.blas_threads / WORKBENCH_NUM_THREADS or the BLAS's own setting, one
thread while the machine is busy; the profiler shows the count per node."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.link.c import blas_lib, blas_threads
from workbench.core.link.c.compiler import has_compiler

pytestmark = pytest.mark.skipif(not (has_compiler() and blas_lib.blas_available()),
                                reason="needs a C compiler and a BLAS")


def _threads_api() -> bool:
    lib = blas_lib.find_blas()
    return lib is not None and lib.threads_api


needs_threads_api = pytest.mark.skipif(not _threads_api(),
                                       reason="this BLAS exports no thread controls")


@pytest.fixture
def policy():
    """Restore the policy after the test (it is process-wide)."""
    saved = blas_threads.policy()
    yield blas_threads
    blas_threads.set_max_threads(int(saved["max"]) or None)
    blas_threads.set_policy(work_per_thread=saved["work"], adaptive=bool(saved["adaptive"]),
                            solo_ratio=saved["solo_ratio"], spare=saved["spare"],
                            recalibrate=saved["recalibrate"],
                            evidence=int(saved["evidence"]),
                            backoff=(saved["backoff_min"], saved["backoff_max"]),
                            pool=bool(saved["pool"]),
                            panels_per_thread=int(saved["panels"]))


def _cores() -> int:
    """The cores this process may use: no call gets more threads than that."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2


#: what a call capped at 2 threads gets here (1 on a one-core machine or affinity)
TWO = min(2, _cores())


def _product(dtype: str = "float64"):
    x, w = wt.matrix("x", dtype=dtype), wt.matrix("w", dtype=dtype)
    return wb.function([x, w], wt.dot(x, w), linker="c")


def _values(n: int, dtype: str = "float64") -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((n, n)).astype(dtype),
            rng.standard_normal((n, n)).astype(dtype))


def test_config_blas_threads_is_the_policys_cap_and_refuses_nonsense(policy):
    wb.config.blas_threads = 3
    assert blas_threads.max_threads() == 3 and wb.config.blas_threads == 3
    with wb.config.change(blas_threads=None):
        assert blas_threads.max_threads() is None
    assert wb.config.blas_threads == 3
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="whole number >= 1 or None"):
            wb.config.blas_threads = bad
    assert "blas_threads=3" in repr(wb.config)


def test_set_policy_refuses_nonsense_naming_the_knob(policy):
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="evidence must be a whole number of calls >= 1"):
            blas_threads.set_policy(evidence=bad)
    with pytest.raises(ValueError, match="spare must be >= 0"):
        blas_threads.set_policy(spare=-1.0)
    blas_threads.set_policy(evidence=4)
    assert blas_threads.policy()["evidence"] == 4


def test_workbench_num_threads_sets_the_cap_in_a_fresh_process():
    code = ("import workbench as wb; print(wb.config.blas_threads)")
    env = dict(os.environ, WORKBENCH_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "1"
    env["WORKBENCH_NUM_THREADS"] = "two"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "WORKBENCH_NUM_THREADS must be a whole number" in run.stderr


@needs_threads_api
def test_a_small_product_runs_on_one_thread_and_a_large_one_on_the_cap(policy):
    f = _product()
    a, b = _values(64)
    policy.set_policy(adaptive=False)
    wb.config.blas_threads = 2
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-12)
    assert blas_threads.last_threads() == 1  # 64**3 multiply-adds: far below 2**23
    policy.set_policy(work_per_thread=1000)  # now 64**3 is work for 262 threads
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-12)
    assert blas_threads.last_threads() == TWO
    wb.config.blas_threads = 1
    f(a, b)
    assert blas_threads.last_threads() == 1


@needs_threads_api
def test_without_a_cap_the_blass_own_setting_counts_and_is_restored(policy):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    f = _product()
    a, b = _values(64)
    wb.config.blas_threads = None
    policy.set_policy(work_per_thread=1000, adaptive=False)

    def blas_setting() -> int:
        info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        return info[0]["num_threads"]

    before = blas_setting()
    f(a, b)
    assert blas_threads.last_threads() == before  # NumPy's BLAS: the one generated code calls
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        f(a, b)
        assert blas_threads.last_threads() == 1
        assert blas_setting() == 1
    wb.config.blas_threads = 2
    f(a, b)
    assert blas_setting() == before  # the call's own count was set back afterwards


@needs_threads_api
def test_slow_threaded_calls_give_one_thread_until_the_back_off_ends(policy):
    if TWO < 2:
        pytest.skip("one core: every call runs on one thread")
    f = _product()
    a, b = _values(64)
    wb.config.blas_threads = 2
    # a ratio no call meets: every threaded call is "slower than one thread"
    # recalibrate 0: the next call measures the site's one-thread time, even when an
    # earlier test of this process already ran this kind (its site keeps its estimate);
    # pool off: the back-off is for calls on OpenBLAS's threads (a pooled GEMM needs none)
    policy.set_policy(work_per_thread=1000, adaptive=True, solo_ratio=0.0, spare=0.0,
                      recalibrate=0.0, backoff=(60.0, 60.0), pool=False)
    events = blas_threads.busy_events()
    f(a, b)
    assert blas_threads.last_threads() == 1 and blas_threads.busy_events() == events
    policy.set_policy(recalibrate=1e9)  # from now on the estimate stands
    forgiven = blas_threads.forgiven_events()
    f(a, b)  # slow, but alone so far: noise
    assert blas_threads.last_threads() == 2 and blas_threads.busy_events() == events
    assert blas_threads.forgiven_events() == forgiven + 1
    f(a, b)  # a second slow call: the machine is busy
    assert blas_threads.last_threads() == 2 and blas_threads.busy_events() == events + 1
    for _ in range(3):
        np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-12)
        assert blas_threads.last_threads() == 1
    assert blas_threads.busy_events() == events + 1
    policy.set_policy(solo_ratio=1e300)  # never busy; also ends the back-off
    f(a, b)
    f(a, b)
    assert blas_threads.last_threads() == 2 and blas_threads.busy_events() == events + 1


@needs_threads_api
def test_no_call_gets_more_threads_than_the_cores_it_may_run_on(policy):
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    f = _product()
    a, b = _values(64)
    wb.config.blas_threads = 4
    policy.set_policy(work_per_thread=1, adaptive=False)
    cores = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(cores)})
        np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-12)
        assert blas_threads.last_threads() == 1
    finally:
        os.sched_setaffinity(0, cores)
    f(a, b)
    assert blas_threads.last_threads() == min(4, len(cores))


@needs_threads_api
def test_the_profile_shows_the_blas_threads_of_each_product_node(policy):
    wb.config.blas_threads = 1
    x, w = wt.dmatrix("x"), wt.dmatrix("w")
    f = wb.function([x, w], wt.tanh(wt.dot(x, w)), linker="c", profile=True)
    a, b = _values(32)
    f(a, b)
    rows = {row.op_class: row for row in f.profile.by_node()}
    product = next(row for name, row in rows.items() if name in ("Dot", "Gemm"))
    assert product.threads == "1"
    assert rows["Elemwise"].threads == ""
    text = str(f.profile)
    assert "threads" in text and "BLAS threads per call" in text


def test_declarations_name_the_thread_controls_or_stub_them():
    lib = blas_lib.BlasLibrary(source="test", path="/opt/libopenblas.so", prefix="scipy_",
                               suffix="64_", int64=True, threads_api=True)
    decls = lib.declarations()
    assert "#define wb_blas_set_threads scipy_openblas_set_num_threads64_" in decls
    assert "#define WB_BLAS_HAS_THREADS 1" in decls
    plain = blas_lib.BlasLibrary(source="test", path="/opt/libcblas.so").declarations()
    assert "#define WB_BLAS_HAS_THREADS 0" in plain
    assert "static int wb_blas_get_threads(void) { return 0; }" in plain


@needs_threads_api
def test_blas_own_threads_drops_the_policy_for_a_block_and_keeps_its_back_off(policy):
    if TWO < 2:
        pytest.skip("one core: every call runs on one thread")
    f = _product()
    a, b = _values(64)
    wb.config.blas_threads = 2
    policy.set_policy(work_per_thread=1000, solo_ratio=0.0, spare=0.0, recalibrate=1e9,
                      backoff=(60.0, 60.0), pool=False)
    f(a, b)  # measures one thread
    f(a, b)  # threaded, "slower than one thread": forgiven
    f(a, b)  # again: a back-off of 60 s
    busy_until = blas_threads.policy()["busy_until"]
    with blas_threads.blas_own_threads():
        np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-12)
        assert blas_threads.last_threads() == 2
    assert blas_threads.policy()["busy_until"] == busy_until
    f(a, b)
    assert blas_threads.last_threads() == 1  # still backing off
    with blas_threads.gemm_pool(True):  # a pooled GEMM never waits for a late helper
        np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-12)
        assert blas_threads.last_threads() == 2


def _gp_nll_and_gradient(profile: bool):
    """A Gaussian-process negative log likelihood and its gradient (Cholesky, CholeskyGrad,
    triangular solves, products): the graph of benchmarks' GP case."""
    x, y, p = wt.dvector("x"), wt.dvector("y"), wt.dvector("p")
    k = wt.exp(p[1]) * wt.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / wt.exp(2 * p[0]))
    factor = wt.linalg.cholesky(k + wt.exp(p[2]) * wt.eye(x.shape[0]))
    nll = 0.5 * (y * wt.linalg.cho_solve((factor, True), y)).sum() + wt.log(
        wt.diagonal(factor)).sum()
    return wb.function([x, y, p], [nll, wb.grad(nll, p)], linker="c", profile=profile)


@needs_threads_api
def test_a_cap_of_one_puts_every_lapack_and_blas_call_of_a_gp_gradient_on_one_thread(policy):
    # work_per_thread 1: without the cap every call of these 40x40 matrices would ask for
    # every core; the cap (WORKBENCH_NUM_THREADS=1 / --threads 1) must hold for each one
    wb.config.blas_threads = 1
    policy.set_policy(work_per_thread=1, adaptive=False)
    f = _gp_nll_and_gradient(profile=True)
    rng = np.random.default_rng(1)
    xs = np.sort(rng.uniform(-3, 3, 40))
    f(xs, np.sin(xs), np.array([0.3, 0.1, np.log(0.05)]))
    counted = {row.op_class: row.threads for row in f.profile.by_node() if row.threads}
    assert {"Cholesky", "CholeskyGrad"} <= set(counted), counted
    assert set(counted.values()) == {"1"}, counted
    # uncapped, no call gets more threads than the cores this process may run on
    wb.config.blas_threads = None
    f(xs, np.sin(xs), np.array([0.3, 0.1, np.log(0.05)]))
    most = max(int(row.threads.split("-")[-1]) for row in f.profile.by_node() if row.threads)
    assert 1 <= most <= _cores()
