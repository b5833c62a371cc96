"""Timing, optional references (PyTensor, JAX) and the result table of the suite."""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from wb_bench.table import format_seconds, format_table  # noqa: F401 - the suite's table
from wb_bench.threads import CPUS_VARIABLE, thread_ticks, threads_ran, threads_run

#: the repository root (benchmarks/..), put on sys.path by run.py
ROOT = Path(__file__).resolve().parents[2]

#: the implementation every ratio is measured against
SUBJECT = "workbench c"


@dataclass
class Row:
    """One measurement: `case` (what), `impl` (who), median `seconds`, a free note.

    `ratio` is filled by `fill_ratios`: this row's time over the workbench row's time
    of the same case (above 1: workbench is that many times faster)."""

    case: str
    impl: str
    seconds: float | None
    note: str = ""
    ratio: float | None = None
    #: median process CPU seconds per call (every thread of this process): the work done,
    #: which neither the machine's other load nor a library's extra threads hide
    cpu_seconds: float | None = None
    #: the threads of this process that got CPU time while this implementation ran
    #: (Linux; back-to-back: the most in one repeat; interleaved: those seen in an
    #: untimed interleaved round; 0 when its calls were too short for the kernel's 10 ms
    #: CPU-time ticks to tell; None when not known: no per-thread clocks)
    threads_run: int | None = None
    #: `cpu_seconds` over the workbench row's (filled by `fill_ratios`)
    cpu_ratio: float | None = None


@dataclass
class Context:
    """Options of one run of the suite."""

    quick: bool = False
    repeats: int = 7
    min_seconds: float = 0.05  # each repeat runs the callable at least this long
    pytensor: bool = True
    jax: bool = True
    notes: list[str] = field(default_factory=list)
    #: how implementations take turns, each pattern giving its own rows: "blocks"
    #: (back-to-back: each repeat `number` calls of one implementation, then the next)
    #: and/or "calls" (interleaved: one call of each in turn); both alternate repeat by
    #: repeat, so a load spike hits both alike
    patterns: tuple[str, ...] = ("blocks",)
    #: fresh processes per new-process compile figure (its median)
    compile_samples: int = 3
    #: lines printed above the table: what a reader must know before the figures
    headlines: list[str] = field(default_factory=list)
    #: per-node profiles of workbench's functions (`profiles.add_profile`)
    profiles: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def make(cls, quick: bool, repeats: int | None = None, pytensor: bool = True,
             jax: bool = True, patterns: tuple[str, ...] = ("blocks",)) -> Context:
        if quick:
            return cls(True, repeats or 3, 0.02, pytensor, jax, patterns=patterns,
                       compile_samples=2)
        return cls(False, repeats or 7, 0.1, pytensor, jax, patterns=patterns)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def headline(self, text: str) -> None:
        if text not in self.headlines:
            self.headlines.append(text)


def _calibrate(fn: Callable[[], Any], ctx: Context) -> int:
    """How many calls of `fn` last at least `ctx.min_seconds`."""
    clock = time.perf_counter
    number, held = 1, [None]
    while True:
        start = clock()
        for _ in range(number):
            held[0] = fn()  # kept until the next call returns, as when measured
        elapsed = clock() - start
        if elapsed >= ctx.min_seconds or number >= 1 << 20:
            return number
        number = min(1 << 20, max(2 * number, int(number * ctx.min_seconds / max(elapsed, 1e-9))))


@dataclass
class _Samples:
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)


@dataclass
class _Entry:
    impl: str
    fn: Callable[[], Any] | None
    note: str = ""
    number: int | None = None
    error: BaseException | None = None
    #: per pattern ("blocks", "calls")
    samples: dict[str, _Samples] = field(default_factory=dict)
    #: the last result, held until the next call returns (as `y = f(x)` in a loop)
    kept: Any = None


#: how a pattern is named in the case of its rows when a run measures both
PATTERN_LABELS = {"blocks": "back-to-back", "calls": "interleaved"}
#: the untimed interleaved round that reads each implementation's threads: calls of each
#: until they have used PROBE_CPU_SECONDS of the process's CPU (ten 10 ms ticks), or
#: PROBE_CALLS calls, or PROBE_WALL_SECONDS of wall time
PROBE_CPU_SECONDS, PROBE_CALLS, PROBE_WALL_SECONDS = 0.1, 2000, 2.0


def finish_background_builds() -> None:
    """Wait for workbench's background `-O3` builds (c/tiers.py) started so far. A graph
    compiled on a cold cache first runs its quick `-O1` build while a thread of this
    process compiles and loads the `-O3` one: measured meanwhile, the rows would time
    the `-O1` code, share the pinned CPU with the compiler and count that thread in
    "threads run" (the GP case's workbench row read 2 threads on one pinned CPU)."""
    tiers = sys.modules.get("workbench.core.link.c.tiers")
    if tiers is not None:
        tiers.wait_for_upgrades()


class Case:
    """The implementations of one benchmark case, timed together.

    `add(impl, fn)` registers a callable; `measure(ctx)` waits for workbench's background
    builds (`finish_background_builds`), warms each one up, then runs
    the repeats round-robin, so a load spike on a shared machine hits every
    implementation alike, in each of `ctx.patterns`: "blocks" (back-to-back: each repeat
    calls one implementation `number` times, by default enough calls to last
    `ctx.min_seconds`, then the next) and "calls" (interleaved: one call of each in
    turn, each timed alone), the two alternating repeat by repeat, the garbage collector
    paused. Measuring both gives two cases, "<name> [back-to-back]" and "<name>
    [interleaved]". A callable that fails gives a row with no time and the error as its
    note. Every implementation's result is kept until its next call returns, as `y = f(x)`
    in a loop keeps it (`_Entry.kept`): workbench's C runtime writes into a previous
    result that the caller dropped instead of allocating, so with results dropped it
    alone would skip the allocation every other system (NumPy, JAX, PyTensor, a
    hand-written loop's np.empty) makes per call."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: list[_Entry] = []

    def add(self, impl: str, fn: Callable[[], Any], note: str = "",
            number: int | None = None) -> None:
        self.entries.append(_Entry(impl, fn, note, number))

    def fail(self, impl: str, exc: BaseException) -> None:
        self.entries.append(_Entry(impl, None, error=exc))

    def case_name(self, pattern: str, ctx: Context) -> str:
        if len(ctx.patterns) == 1:
            return self.name
        return f"{self.name} [{PATTERN_LABELS[pattern]}]"

    def measure(self, ctx: Context) -> list[Row]:
        finish_background_builds()
        live = []
        for entry in self.entries:
            entry.samples = {pattern: _Samples() for pattern in ctx.patterns}
            if entry.fn is None:
                continue
            try:
                entry.kept = entry.fn()
                if entry.number is None:
                    entry.number = _calibrate(entry.fn, ctx)
                live.append(entry)
            except Exception as exc:  # noqa: BLE001 - a failing reference must not stop us
                entry.error = exc
        costs = _clock_cost() if "calls" in ctx.patterns else (0.0, 0.0)
        for _ in range(ctx.repeats):
            for pattern in ctx.patterns:
                if pattern == "calls":
                    self._interleaved_repeat(live, costs)
                else:
                    self._block_repeat(live)
        if "calls" in ctx.patterns:
            self._interleaved_threads(live)
        for entry in self.entries:
            entry.kept = None
        rows = []
        for pattern in ctx.patterns:
            name = self.case_name(pattern, ctx)
            for entry in self.entries:
                got = entry.samples[pattern]
                if entry.error is not None or not got.times:
                    rows.append(failed_row(name, entry.impl, entry.error or
                                           RuntimeError("not measured")))
                else:
                    rows.append(Row(name, entry.impl, statistics.median(got.times),
                                    entry.note, cpu_seconds=statistics.median(got.cpu_times),
                                    threads_run=max(got.threads) if got.threads else None))
        return rows

    def _block_repeat(self, live: list[_Entry]) -> None:
        """One repeat back to back: `number` calls of one implementation, then the next's."""
        clock = time.perf_counter
        was_enabled = gc.isenabled()
        for entry in list(live):
            fn, number, got = entry.fn, entry.number or 1, entry.samples["blocks"]
            gc.collect()
            gc.disable()
            try:
                ticks = thread_ticks()
                kept = entry.kept
                cpu, start = time.process_time(), clock()
                for _ in range(number):
                    kept = fn()  # type: ignore[misc]
                got.times.append((clock() - start) / number)
                got.cpu_times.append((time.process_time() - cpu) / number)
                entry.kept = kept
                if ticks:
                    got.threads.append(threads_run(ticks, thread_ticks()))
            except Exception as exc:  # noqa: BLE001
                entry.error = exc
                live.remove(entry)
            finally:
                if was_enabled:
                    gc.enable()

    def _interleaved_repeat(self, live: list[_Entry], costs: tuple[float, float]) -> None:
        """One repeat interleaved: the implementations take turns call by call (each timed
        alone) until each has made its `number` calls. The clocks' own cost around one
        call (`costs`, measured on a call that does nothing) is taken off."""
        clock = time.perf_counter
        was_enabled = gc.isenabled()
        wall = {id(e): 0.0 for e in live}
        cpu = {id(e): 0.0 for e in live}
        gc.collect()
        gc.disable()
        try:
            for k in range(max((e.number or 1) for e in live) if live else 0):
                for entry in list(live):
                    if k >= (entry.number or 1):
                        continue
                    try:
                        c0, t0 = time.process_time(), clock()
                        result = entry.fn()  # type: ignore[misc]
                        wall[id(entry)] += clock() - t0
                        cpu[id(entry)] += time.process_time() - c0
                        entry.kept = result
                    except Exception as exc:  # noqa: BLE001
                        entry.error = exc
                        live.remove(entry)
        finally:
            if was_enabled:
                gc.enable()
        for entry in live:
            got, number = entry.samples["calls"], entry.number or 1
            got.times.append(max(0.0, wall[id(entry)] / number - costs[0]))
            got.cpu_times.append(max(0.0, cpu[id(entry)] / number - costs[1]))

    def _interleaved_threads(self, live: list[_Entry]) -> None:
        """An untimed interleaved round reading each implementation's threads: the
        threads whose CPU time grew during its calls (read around each call, outside
        any timed window); calls of each until PROBE_CPU_SECONDS of CPU, PROBE_CALLS
        calls or PROBE_WALL_SECONDS."""
        clock, cpu_clock = time.perf_counter, time.process_time
        spent = {id(e): 0.0 for e in live}
        wall = {id(e): 0.0 for e in live}
        calls = {id(e): 0 for e in live}
        seen: dict[int, set[str]] = {id(e): set() for e in live}

        def done(entry: _Entry) -> bool:
            key = id(entry)
            return (spent[key] >= PROBE_CPU_SECONDS or calls[key] >= PROBE_CALLS
                    or wall[key] >= PROBE_WALL_SECONDS)

        if not thread_ticks():
            return
        while live and not all(done(e) for e in live):
            for entry in list(live):
                if done(entry):
                    continue
                before = thread_ticks()
                cpu, start = cpu_clock(), clock()
                try:
                    entry.kept = entry.fn()  # type: ignore[misc]
                except Exception as exc:  # noqa: BLE001
                    entry.error = exc
                    live.remove(entry)
                    continue
                wall[id(entry)] += clock() - start
                spent[id(entry)] += cpu_clock() - cpu
                calls[id(entry)] += 1
                seen[id(entry)] |= threads_ran(before, thread_ticks())
        for entry in live:
            entry.samples["calls"].threads.append(len(seen[id(entry)]))


def _clock_cost(samples: int = 2001) -> tuple[float, float]:
    """Median wall and CPU seconds that timing one call as `_measure_call_by_call` does
    adds by itself (its clock reads around a call of a function doing nothing)."""
    clock, cpu_clock = time.perf_counter, time.process_time

    def nothing() -> None:
        return None

    walls, cpus = [], []
    for _ in range(samples):
        c0, t0 = cpu_clock(), clock()
        nothing()
        walls.append(clock() - t0)
        cpus.append(cpu_clock() - c0)
    return statistics.median(walls), statistics.median(cpus)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:120] if text else ""


def failed_row(case: str, impl: str, exc: BaseException) -> Row:
    return Row(case, impl, None, f"failed: {type(exc).__name__}: {_first_line(exc)}")


def check_close(expected: Any, actual: Any, what: str, rtol: float = 1e-6,
                atol: float = 1e-9) -> None:
    """Raise AssertionError naming `what` when two results differ (benchmarks must agree)."""
    import numpy as np

    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape or not np.allclose(expected, actual, rtol=rtol, atol=atol,
                                                         equal_nan=True):
        err = np.max(np.abs(expected - actual)) if expected.shape == actual.shape else "shape"
        raise AssertionError(f"{what}: result differs from the NumPy reference (max abs "
                             f"error {err})")


def add_checked(case: Case, impl: str, fn: Callable[[], Any], expected: Any, note: str = "",
                **tol: float) -> None:
    """Add `fn` to `case` once its result agrees with `expected` (NumPy's); a failure,
    of the call or of the check, gives a failed row instead of stopping the family."""
    try:
        check_close(expected, fn(), f"{case.name} ({impl})", **tol)
    except Exception as exc:  # noqa: BLE001 - a failing reference must not stop us
        case.fail(impl, exc)
        return
    case.add(impl, fn, note)


def check_step(expected: tuple[Any, list[Any]], cost: Any, params: list[Any], what: str,
               **tol: float) -> None:
    """Check one training step against NumPy's: the cost it returned and every parameter
    it updated (`expected`: NumPy's cost and parameters after the same step)."""
    expected_cost, expected_params = expected
    check_close(expected_cost, cost, f"{what}: cost", **tol)
    if len(params) != len(expected_params):
        raise AssertionError(f"{what}: {len(params)} parameters, NumPy has "
                             f"{len(expected_params)}")
    for k, (want, got) in enumerate(zip(expected_params, params)):
        check_close(want, got, f"{what}: parameter {k} after the step", **tol)


# -- optional references ---------------------------------------------------------------


def pytensor_module(ctx: Context) -> Any | None:
    """`pytensor` when installed and wanted, else None (with a note)."""
    if not ctx.pytensor:
        ctx.note("PyTensor: skipped (--no-pytensor)")
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pytensor
    except Exception as exc:  # noqa: BLE001 - not installed or broken install
        ctx.note(f"PyTensor: not installed ({type(exc).__name__}), its rows are skipped "
                 "(`pip install pytensor` to compare)")
        return None
    blas = ("its C code links a BLAS" if pytensor_has_blas() else "no BLAS linked to its C "
            "code (config.blas__ldflags is empty): its matrix products go through NumPy")
    ctx.note(f"PyTensor {pytensor.__version__}: 'default' is its default mode "
             f"({pytensor_default_linker()}), 'C (CVM)' its C/CVM mode; {blas}")
    return pytensor


def pytensor_has_blas() -> bool:
    """Whether PyTensor's C code links a BLAS (`config.blas__ldflags`); without one its
    C mode computes matrix products through NumPy from Python."""
    import pytensor

    return bool(str(pytensor.config.blas__ldflags).strip())


def pytensor_default_linker() -> str:
    from pytensor.compile.mode import get_default_mode

    linker = get_default_mode().linker
    return type(linker).__name__.replace("Linker", "").lower() or str(linker)


def pytensor_modes(ctx: Context) -> list[tuple[str, Any]]:
    """(label, mode) pairs to measure: the default mode, and its C mode when the default
    is something else (PyTensor's fastest is one of them). Quick runs use the default only."""
    from pytensor.compile.mode import get_default_mode, get_mode

    modes: list[tuple[str, Any]] = [("pytensor default", get_default_mode())]
    if not ctx.quick and pytensor_default_linker() not in ("cvm", "c", "vm"):
        label = "pytensor C (CVM)" if pytensor_has_blas() else "pytensor C (CVM, no BLAS)"
        modes.append((label, get_mode("CVM")))
    return modes


def jax_module(ctx: Context) -> Any | None:
    """`jax` (with float64 enabled) when installed and wanted, else None (with a note)."""
    if not ctx.jax:
        ctx.note("JAX: skipped (--no-jax)")
        return None
    try:
        import jax
    except Exception as exc:  # noqa: BLE001
        ctx.note(f"JAX: not installed ({type(exc).__name__}), its rows are skipped "
                 "(`pip install jax jaxlib` to compare)")
        return None
    jax.config.update("jax_enable_x64", True)
    ctx.note(f"JAX {jax.__version__}: jit on {jax.devices()[0].platform}")
    return jax


# -- the table --------------------------------------------------------------------------


def fill_ratios(rows: list[Row]) -> None:
    """Set each row's ratio and cpu ratio: its wall (CPU) time over the wall (CPU) time
    of the SUBJECT row of its case."""
    subject: dict[str, Row] = {}
    for r in rows:  # the first workbench row of a case (variants like "..., Out(...)" follow)
        if r.impl.startswith(SUBJECT) and r.seconds and r.case not in subject:
            subject[r.case] = r
    for row in rows:
        base = subject.get(row.case)
        if base is None:
            continue
        if row.seconds:
            row.ratio = row.seconds / base.seconds  # type: ignore[operator]
        if row.cpu_seconds and base.cpu_seconds:
            row.cpu_ratio = row.cpu_seconds / base.cpu_seconds


def to_json(rows: list[Row], notes: list[str], ctx: Context) -> str:
    return json.dumps({"quick": ctx.quick, "repeats": ctx.repeats,
                       "patterns": list(ctx.patterns), "headlines": ctx.headlines,
                       "rows": [asdict(r) for r in rows], "notes": notes,
                       "profiles": ctx.profiles}, indent=1)


def child_env(cache_dir: str | None = None) -> dict[str, str]:
    """The environment of a benchmark subprocess: the repository importable, and a
    given WORKBENCH_CACHE_DIR."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    if env.pop("PYTHONDONTWRITEBYTECODE", None) and "PYTHONPYCACHEPREFIX" not in env:
        # an installed package has its bytecode: without it every module a compile
        # imports lazily is compiled from source in the timed window (~0.1 s). Kept
        # outside the tree, one directory per user.
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir())
                                         / f"wb-bench-pycache-{getattr(os, 'getuid', int)()}")
    if cache_dir is not None:
        env["WORKBENCH_CACHE_DIR"] = cache_dir
    if CPUS_VARIABLE not in env and hasattr(os, "sched_getaffinity"):
        env[CPUS_VARIABLE] = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    return env


def python() -> str:
    return sys.executable
