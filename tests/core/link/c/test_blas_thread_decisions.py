"""The BLAS thread policy's decisions (blas_threads.LOGIC_C), compiled alone and driven
with made-up measurements: which way a call runs, when the machine counts as busy, when
threads are tried again. No clock is read, so nothing here depends on the machine's load."""

from __future__ import annotations

import ctypes

import pytest

from workbench.core.link.c import blas_threads
from workbench.core.link.c.compiler import compile_module, has_compiler

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

RUN = {name: k for k, name in enumerate(blas_threads.MODES)}
WORK = 1e7  # multiply-adds of the call in every test


class Site(ctypes.Structure):
    """A call site's one-thread estimate (wb_blas_site)."""
    _fields_ = [("rate", ctypes.c_double), ("measured", ctypes.c_double)]


@pytest.fixture(scope="module")
def logic(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    source = '#define WB_BLAS_LOGIC __attribute__((visibility("default")))\n' + blas_threads.LOGIC_C
    path = compile_module(source, "wb_blas_logic", out_dir=tmp_path_factory.mktemp("logic"))
    lib = ctypes.CDLL(str(path))
    block, site = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(Site)
    lib.wb_blas_plan.argtypes = [block, site, ctypes.c_double]
    lib.wb_blas_answer.argtypes = [block, ctypes.c_int, ctypes.c_double, ctypes.c_double]
    lib.wb_blas_judge.argtypes = [block, site, ctypes.c_int, *[ctypes.c_double] * 4]
    return lib


class Policy:
    """A policy block with the defaults, and one call site, driven by hand."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.block = (ctypes.c_double * len(blas_threads.SLOTS))(*blas_threads.POLICY)
        for name in ("busy_until", "backoff", "busy_events", "still_busy"):
            self[name] = 0.0
        self.site = Site()

    def __getitem__(self, name: str) -> float:
        return self.block[blas_threads.SLOTS.index(name)]

    def __setitem__(self, name: str, value: float) -> None:
        self.block[blas_threads.SLOTS.index(name)] = value

    def plan(self, now: float) -> str:
        return blas_threads.MODES[self.lib.wb_blas_plan(self.block, ctypes.byref(self.site), now)]

    def answer(self, idle: float, now: float, threads: int = 2) -> str:
        return blas_threads.MODES[self.lib.wb_blas_answer(self.block, threads, idle, now)]

    def judge(self, mode: str, now: float, wall: float = 0.0, cpu: float = 0.0) -> bool:
        return bool(self.lib.wb_blas_judge(self.block, ctypes.byref(self.site), RUN[mode],
                                           WORK, wall, cpu, now))

    def calibrated(self, one_thread: float = 1e-3, now: float = 1.0) -> Policy:
        """After the site's first call: one thread took `one_thread` s of CPU time."""
        assert self.plan(now) == "calibrate"
        self.judge("calibrate", now, wall=one_thread, cpu=one_thread)
        return self


def test_a_sites_first_call_measures_one_thread_then_calls_are_threaded(logic):
    p = Policy(logic).calibrated(1e-3, now=1.0)
    assert p.site.rate == pytest.approx(1e-3 / WORK) and p.site.measured == 1.0
    assert p.plan(1.001) == "threaded"


def test_threads_that_beat_one_thread_keep_threads_whatever_the_cpu_time_says(logic):
    # the misfire of the first version: on an idle machine a 2-thread call's process CPU
    # time often equals its wall time (helpers not yet accounted); only the wall counts now
    p = Policy(logic).calibrated(1e-3)
    for k in range(100):
        now = 1.01 + k * 1e-3
        assert p.plan(now) == "threaded"
        assert not p.judge("threaded", now, wall=0.6e-3)
    assert p["busy_events"] == 0 and p["backoff"] == 0


def test_a_threaded_call_slower_than_one_thread_backs_off_doubling_up_to_the_most(logic):
    p = Policy(logic).calibrated(1e-3)
    low, high = p["backoff_min"], p["backoff_max"]
    assert p.judge("threaded", 2.0, wall=30e-3)  # a helper that did not run
    assert p["busy_events"] == 1 and p["backoff"] == low and p["busy_until"] == 2.0 + low
    assert p.plan(2.0 + low / 2) == "backoff"
    now, expected = 2.0, low
    for _ in range(12):  # each probe slow again: the back-off doubles, up to the most
        now = p["busy_until"]
        p.judge("backoff", now - 1e-3, wall=1e-3, cpu=1e-3)  # the back-off's calls measure
        assert p.plan(now) == "ask"
        assert p.answer(idle=1.0, now=now) == "threaded"
        assert p.judge("threaded", now, wall=30e-3)
        expected = min(2 * expected, high)
        assert p["backoff"] == expected
    assert p["backoff"] == high and p["busy_events"] == 13


def test_a_back_off_without_idle_cores_starts_over_without_trying_threads(logic):
    p = Policy(logic).calibrated(1e-3)
    p.judge("threaded", 2.0, wall=30e-3)
    now = p["busy_until"]
    assert p.plan(now) == "ask"
    assert p.answer(idle=0.1, now=now) == "backoff"  # other processes kept the cores
    assert p["still_busy"] == 1 and p["busy_events"] == 1
    assert p["backoff"] == 2 * p["backoff_min"] and p["busy_until"] == now + p["backoff"]
    assert p.plan(now + 1e-3) == "backoff"


def test_idle_cores_after_a_back_off_try_threads_and_a_fast_call_ends_it(logic):
    p = Policy(logic).calibrated(1e-3)
    p.judge("threaded", 2.0, wall=30e-3)
    now = p["busy_until"]
    assert p.answer(idle=0.9, now=now) == "threaded"
    assert not p.judge("threaded", now, wall=0.6e-3)
    assert p["backoff"] == 0 and p.plan(now + 1e-3) == "threaded"


def test_the_idle_cores_asked_grow_with_the_threads(logic):
    p = Policy(logic).calibrated(1e-3)
    p.judge("threaded", 2.0, wall=30e-3)
    spare = p["spare"]
    assert p.answer(idle=1.5 * spare, now=p["busy_until"], threads=2) == "threaded"
    p.judge("threaded", 3.0, wall=30e-3)
    assert p.answer(idle=1.5 * spare, now=p["busy_until"], threads=4) == "backoff"


def test_unknown_idle_time_tries_threads(logic):
    p = Policy(logic).calibrated(1e-3)
    p.judge("threaded", 2.0, wall=30e-3)
    assert p.answer(idle=-1.0, now=p["busy_until"]) == "threaded"


def test_one_thread_calls_keep_the_estimate_faster_at_once_slower_by_a_quarter(logic):
    p = Policy(logic).calibrated(2e-3, now=1.0)
    p.judge("threaded", 1.5, wall=30e-3)  # back off; its one-thread calls measure too
    assert p.plan(1.55) == "backoff"
    p.judge("backoff", 1.55, wall=5e-3, cpu=1e-3)  # preempted: the CPU time counts, not the wall
    assert p.site.rate == pytest.approx(1e-3 / WORK) and p.site.measured == 1.55
    p.judge("backoff", 1.56, wall=2e-3, cpu=2e-3)
    assert p.site.rate == pytest.approx(1.25e-3 / WORK)


def test_the_estimate_is_measured_again_after_recalibrate_seconds(logic):
    p = Policy(logic).calibrated(1e-3, now=1.0)
    assert p.plan(1.0 + p["recalibrate"] * 0.99) == "threaded"
    assert p.plan(1.0 + p["recalibrate"]) == "calibrate"


def test_the_ratio_knob_sets_what_counts_as_slow(logic):
    p = Policy(logic).calibrated(1e-3)
    p["solo_ratio"] = 0.5
    assert p.judge("threaded", 2.0, wall=0.6e-3)
    p["backoff"] = 0.0
    p["solo_ratio"] = 1.0
    assert not p.judge("threaded", 3.0, wall=0.6e-3)
