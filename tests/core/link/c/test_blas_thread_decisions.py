"""The BLAS thread policy's decisions (blas_threads.LOGIC_C), compiled alone and driven
with made-up measurements: which way a call runs, when the machine counts as busy, when
threads are tried again. No clock is read, so nothing here depends on the machine's load."""

from __future__ import annotations

import ctypes
import itertools
import random

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
        for name in ("busy_until", "backoff", "busy_events", "still_busy", "forgiven"):
            self[name] = 0.0
        self["since_slow"], self["calm"] = float("inf"), 0.0
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

    def busy(self, now: float) -> None:
        """Two threaded calls in a row 30x slower than one thread (helpers that did not
        run): the second begins a back-off at `now`."""
        assert not self.judge("threaded", now - 1e-3, wall=30e-3)
        assert self.judge("threaded", now, wall=30e-3)


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


def test_a_lone_slow_threaded_call_is_noise_and_keeps_threads(logic):
    # an idle machine: 1 call in 500 slower than one thread (a page fault, a timer tick,
    # another process's short burst), never two within `evidence` calls
    p = Policy(logic).calibrated(1e-3)
    now = 1.01
    for k in range(5000):
        now += 0.3e-3
        assert p.plan(now) == "threaded"
        slow = k % 500 == 499
        assert not p.judge("threaded", now, wall=5e-3 if slow else 0.6e-3)
    assert p["busy_events"] == 0 and p["forgiven"] == 10 and p["busy_until"] == 0


def test_a_second_slow_call_within_the_evidence_window_backs_off(logic):
    p = Policy(logic).calibrated(1e-3)
    evidence = int(p["evidence"])
    assert not p.judge("threaded", 2.0, wall=30e-3)  # alone so far: forgiven
    for k in range(evidence - 1):  # fast calls, fewer than `evidence`
        assert not p.judge("threaded", 2.0 + (k + 1) * 1e-3, wall=0.6e-3)
    assert p.judge("threaded", 2.1, wall=30e-3)  # a second: the machine is busy
    assert p["busy_events"] == 1 and p["forgiven"] == 1
    assert p["backoff"] == p["backoff_min"] and p["busy_until"] == 2.1 + p["backoff_min"]
    assert p.plan(2.1 + p["backoff_min"] / 2) == "backoff"


def test_slow_calls_farther_apart_than_the_evidence_window_are_each_forgiven(logic):
    p = Policy(logic).calibrated(1e-3)
    evidence = int(p["evidence"])
    now = 2.0
    for _ in range(3):
        assert not p.judge("threaded", now, wall=30e-3)
        for _ in range(evidence):
            now += 1e-3
            assert not p.judge("threaded", now, wall=0.6e-3)
    assert p["busy_events"] == 0 and p["forgiven"] == 3


def test_sustained_slowness_backs_off_at_the_second_slow_call(logic):
    # a busy machine: one threaded call in ten waits for a helper the scheduler did not run
    p = Policy(logic).calibrated(1e-3)
    now, calls, slow_calls = 2.0, 0, 0
    while p.plan(now) == "threaded":
        calls += 1
        slow = calls % 10 == 0
        p.judge("threaded", now, wall=40e-3 if slow else 0.6e-3)
        slow_calls += slow
        now += 40e-3 if slow else 0.6e-3
    assert slow_calls == 2 and calls == 20 and p["busy_events"] == 1 and p["forgiven"] == 1
    assert p.plan(now) == "backoff"


def test_a_slow_first_call_after_a_back_off_is_forgiven_like_any_lone_one(logic):
    # helpers asleep since the back-off began wake up slowly: one slow call, not evidence
    p = Policy(logic).calibrated(1e-3)
    p.busy(2.0)
    now = p["busy_until"]
    assert p.answer(1.0, now=now) == "threaded"
    assert not p.judge("threaded", now, wall=1.2e-3)
    assert p["forgiven"] == 2 and p["busy_events"] == 1 and p.plan(now + 1e-3) == "threaded"


def test_back_offs_in_quick_succession_double_up_to_the_most(logic):
    p = Policy(logic).calibrated(1e-3)
    low, high = p["backoff_min"], p["backoff_max"]
    p.busy(2.0)
    assert p["backoff"] == low
    expected = low
    for _ in range(12):  # the spare-core check says yes, but threads are slow again
        now = p["busy_until"]
        if p.plan(now - 1e-3) == "calibrate":  # a long back-off: one call measures again
            p.judge("calibrate", now - 1e-3, wall=1e-3, cpu=1e-3)
        assert p.plan(now) == "ask"
        assert p.answer(1.0, now=now) == "threaded"
        p.busy(now + 2e-3)
        expected = min(2 * expected, high)
        assert p["backoff"] == expected
    assert p["backoff"] == high and p["busy_events"] == 13


def test_the_back_off_length_is_forgotten_after_evidence_calls_none_slow(logic):
    p = Policy(logic).calibrated(1e-3)
    p.busy(2.0)
    now = p["busy_until"]
    assert p.answer(1.0, now=now) == "threaded"
    p.busy(now + 2e-3)  # slow again soon after: doubled
    assert p["backoff"] == 2 * p["backoff_min"]
    now = p["busy_until"]
    assert p.answer(1.0, now=now) == "threaded"
    for k in range(int(p["evidence"]) - 1):
        assert not p.judge("threaded", now + k * 1e-3, wall=0.6e-3)
    assert not p.judge("threaded", now + 0.1, wall=30e-3)  # one slow call: calm again from 0
    for k in range(int(p["evidence"])):
        assert p["backoff"] == 2 * p["backoff_min"]
        assert not p.judge("threaded", now + 0.2 + k * 1e-3, wall=0.6e-3)
    assert p["backoff"] == 0
    p.busy(now + 1.0)  # a later busy spell starts from the least again
    assert p["backoff"] == p["backoff_min"]


def test_a_back_off_without_spare_cores_asks_again_after_the_least_without_trying(logic):
    p = Policy(logic).calibrated(1e-3)
    p.busy(2.0)
    now = p["busy_until"]
    assert p.plan(now) == "ask"
    assert p.answer(0.1, now=now) == "backoff"  # other processes kept the cores
    assert p["still_busy"] == 1 and p["busy_events"] == 1
    # nothing was tried: the length is kept, the next check comes after the least
    assert p["backoff"] == p["backoff_min"] and p["busy_until"] == now + p["backoff_min"]
    assert p.plan(now + 1e-3) == "backoff"
    assert p.plan(now + p["backoff_min"]) == "ask"


def test_threads_return_within_two_checks_of_the_machine_going_idle(logic):
    # a busy spell of 20 s, then idle: calls every ms; the spare cores each check sees are
    # the average over its interval (what /proc/stat gives), 0 while busy, 1 when idle
    p = Policy(logic).calibrated(1e-3)
    p.busy(2.0)
    idle_from, last_check, now = 22.0, 2.0, 2.0
    threaded_at = None
    while now < 30.0 and threaded_at is None:
        now = round(now + 1e-3, 6)
        mode = p.plan(now)
        if mode == "calibrate":
            p.judge("calibrate", now, wall=1e-3, cpu=1e-3)
        elif mode == "ask":
            spare = max(0.0, now - max(idle_from, last_check)) / (now - last_check)
            last_check = now
            if p.answer(spare, now=now) == "threaded":
                assert not p.judge("threaded", now, wall=0.6e-3)
                threaded_at = now
        elif mode == "backoff":
            p.judge("backoff", now, wall=1e-3, cpu=1e-3)
        else:
            pytest.fail(f"threads tried while the machine was busy, at {now}")
    assert threaded_at is not None and threaded_at <= idle_from + 2 * p["backoff_min"] + 1e-3
    assert p["busy_events"] == 1 and p["still_busy"] >= 190
    assert p.plan(threaded_at + 1e-3) == "threaded"


def test_idle_cores_after_a_back_off_try_threads_and_a_fast_call_keeps_them(logic):
    p = Policy(logic).calibrated(1e-3)
    p.busy(2.0)
    now = p["busy_until"]
    assert p.answer(0.9, now=now) == "threaded"
    assert not p.judge("threaded", now, wall=0.6e-3)
    assert p["busy_until"] == 0 and p.plan(now + 1e-3) == "threaded"


def test_the_spare_cores_asked_grow_with_the_threads(logic):
    p = Policy(logic).calibrated(1e-3)
    p.busy(2.0)
    spare = p["spare"]
    assert p.answer(1.5 * spare, now=p["busy_until"], threads=2) == "threaded"
    p.busy(3.0)
    assert p.answer(1.5 * spare, now=p["busy_until"], threads=4) == "backoff"


def test_unknown_spare_cores_try_threads(logic):
    p = Policy(logic).calibrated(1e-3)
    p.busy(2.0)
    assert p.answer(-1.0, now=p["busy_until"]) == "threaded"


def test_calibrating_calls_keep_the_estimate_faster_at_once_slower_by_a_quarter(logic):
    p = Policy(logic).calibrated(2e-3, now=1.0)
    now = 1.0 + p["recalibrate"]
    assert p.plan(now) == "calibrate"
    p.judge("calibrate", now, wall=5e-3, cpu=1e-3)  # preempted: the CPU time counts, not the wall
    assert p.site.rate == pytest.approx(1e-3 / WORK) and p.site.measured == now
    p.judge("calibrate", now + 0.01, wall=2e-3, cpu=2e-3)
    assert p.site.rate == pytest.approx(1.25e-3 / WORK)


def test_a_back_offs_calls_leave_the_estimate_alone(logic):
    # they read no clock (each read of the thread's CPU clock can cost the caller its core
    # under contention): the estimate stays the calibrating call's
    p = Policy(logic).calibrated(2e-3, now=1.0)
    p.busy(1.5)
    assert p.plan(1.55) == "backoff"
    assert not p.judge("backoff", 1.55, wall=5e-3, cpu=1e-3)
    assert p.site.rate == pytest.approx(2e-3 / WORK) and p.site.measured == 1.0


def test_the_estimate_is_measured_again_after_recalibrate_seconds(logic):
    p = Policy(logic).calibrated(1e-3, now=1.0)
    assert p.plan(1.0 + p["recalibrate"] * 0.99) == "threaded"
    assert p.plan(1.0 + p["recalibrate"]) == "calibrate"


def test_the_ratio_knob_sets_what_counts_as_slow(logic):
    p = Policy(logic).calibrated(1e-3)
    p["solo_ratio"] = 0.5
    assert not p.judge("threaded", 2.0, wall=0.6e-3) and p["forgiven"] == 1
    p["solo_ratio"] = 1.0
    assert not p.judge("threaded", 2.001, wall=0.6e-3) and p["forgiven"] == 1


def test_the_evidence_knob_sets_how_close_two_slow_calls_must_be(logic):
    p = Policy(logic).calibrated(1e-3)
    p["evidence"] = 1  # two slow calls in a row
    assert not p.judge("threaded", 2.0, wall=30e-3)
    assert not p.judge("threaded", 2.001, wall=0.6e-3)
    assert not p.judge("threaded", 2.002, wall=30e-3)  # one fast call between: forgiven
    assert p.judge("threaded", 2.003, wall=30e-3)


def _run_phases(p: Policy, phases: list[tuple[float, float, bool]], seed: int = 0
                ) -> list[tuple[int, int]]:
    """Back-to-back calls through `phases` of (seconds, chance a threaded call is slow,
    other processes busy): one thread takes 1 ms, two 0.6 ms, a slow call 30 ms; the spare
    cores a check sees are the idle share of its interval. Per phase: (calls, threaded)."""
    rng = random.Random(seed)
    start = 1.0
    ends = [start + end for end in itertools.accumulate(seconds for seconds, _, _ in phases)]
    busy_spans = [(end - seconds, end) for (seconds, _, busy), end in zip(phases, ends) if busy]

    def busy_share(t0: float, t1: float) -> float:
        return sum(max(0.0, min(t1, b) - max(t0, a)) for a, b in busy_spans) / (t1 - t0)

    now, last_check, k = start, start, 0
    p.calibrated(1e-3, now=now)
    counts = [[0, 0] for _ in phases]
    while k < len(phases):
        mode = p.plan(now)
        if mode == "ask":
            mode = p.answer(1.0 - busy_share(last_check, now), now=now)
            last_check = now
        if mode == "threaded":
            slow = rng.random() < phases[k][1]
            wall = 30e-3 if slow else 0.6e-3
            if p.judge("threaded", now + wall, wall=wall):
                last_check = now + wall  # the back-off's first note
        else:
            wall = 1e-3
            p.judge(mode, now + wall, wall=wall, cpu=wall)
        counts[k][0] += 1
        counts[k][1] += mode == "threaded"
        now += wall
        while k < len(phases) and now >= ends[k]:
            k += 1
    return [(calls, threaded) for calls, threaded in counts]


@pytest.mark.parametrize(("noise", "least"), [(1 / 2500, 0.99), (1 / 500, 0.95)])
def test_idle_busy_idle_again_keeps_threads_when_idle_and_backs_off_when_busy(logic, noise,
                                                                             least):
    # what bench_contention.py does, with made-up measurements: 10 s idle with noise (1
    # call in 2500 slow, as issue 22 measured, and five times that), 10 s busy (other
    # processes on every core, 1 threaded call in 5 slow), 10 s idle again
    p = Policy(logic)
    (idle, idle_threads), (busy, busy_threads), (again, again_threads) = _run_phases(
        p, [(10.0, noise, False), (10.0, 0.2, True), (10.0, noise, False)])
    assert idle_threads / idle > least and again_threads / again > least
    assert busy_threads <= 20  # the two slow calls that find the load, and little else
    assert p["still_busy"] >= 90  # the checks every 0.1 s kept threads off while busy
