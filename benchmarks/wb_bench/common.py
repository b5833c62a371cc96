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
    #: the most threads of this process that got CPU time during one repeat of this
    #: implementation (Linux, "blocks" pattern; None when not known, or when repeats are
    #: too short for the kernel's 10 ms CPU-time ticks to tell)
    threads_run: int | None = None


@dataclass
class Context:
    """Options of one run of the suite."""

    quick: bool = False
    repeats: int = 7
    min_seconds: float = 0.05  # each repeat runs the callable at least this long
    pytensor: bool = True
    jax: bool = True
    notes: list[str] = field(default_factory=list)
    #: how implementations take turns: "blocks" (each repeat: `number` calls of one
    #: implementation, then the next) or "calls" (one call of each in turn)
    pattern: str = "blocks"
    #: fresh processes per new-process compile figure (its median)
    compile_samples: int = 3

    @classmethod
    def make(cls, quick: bool, repeats: int | None = None, pytensor: bool = True,
             jax: bool = True, pattern: str = "blocks") -> Context:
        if quick:
            return cls(True, repeats or 3, 0.02, pytensor, jax, pattern=pattern,
                       compile_samples=2)
        return cls(False, repeats or 7, 0.1, pytensor, jax, pattern=pattern)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _calibrate(fn: Callable[[], Any], ctx: Context) -> int:
    """How many calls of `fn` last at least `ctx.min_seconds`."""
    clock = time.perf_counter
    number = 1
    while True:
        start = clock()
        for _ in range(number):
            fn()
        elapsed = clock() - start
        if elapsed >= ctx.min_seconds or number >= 1 << 20:
            return number
        number = min(1 << 20, max(2 * number, int(number * ctx.min_seconds / max(elapsed, 1e-9))))


@dataclass
class _Entry:
    impl: str
    fn: Callable[[], Any] | None
    note: str = ""
    number: int | None = None
    error: BaseException | None = None
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)


def _thread_ticks() -> dict[str, int]:
    """CPU clock ticks (user + system) of each thread of this process (Linux; else {})."""
    ticks: dict[str, int] = {}
    try:
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                ticks[tid] = int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                continue
    except OSError:
        return {}
    return ticks


def _threads_run(before: dict[str, int], after: dict[str, int]) -> int:
    return sum(1 for tid, t in after.items() if t > before.get(tid, 0))


class Case:
    """The implementations of one benchmark case, timed together.

    `add(impl, fn)` registers a callable; `measure(ctx)` warms each one up, then runs
    the repeats round-robin (one repeat of each implementation in turn), so a load
    spike on a shared machine hits every implementation alike; each repeat calls the
    callable `number` times (by default enough calls to last `ctx.min_seconds`) with
    the garbage collector paused. A callable that fails gives a row with no time and
    the error as its note."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: list[_Entry] = []

    def add(self, impl: str, fn: Callable[[], Any], note: str = "",
            number: int | None = None) -> None:
        self.entries.append(_Entry(impl, fn, note, number))

    def fail(self, impl: str, exc: BaseException) -> None:
        self.entries.append(_Entry(impl, None, error=exc))

    def measure(self, ctx: Context) -> list[Row]:
        live = []
        for entry in self.entries:
            if entry.fn is None:
                continue
            try:
                entry.fn()
                if entry.number is None:
                    entry.number = _calibrate(entry.fn, ctx)
                live.append(entry)
            except Exception as exc:  # noqa: BLE001 - a failing reference must not stop us
                entry.error = exc
        if ctx.pattern == "calls":
            self._measure_call_by_call(ctx, live)
        else:
            self._measure_blocks(ctx, live)
        rows = []
        for entry in self.entries:
            if entry.error is not None or not entry.times:
                rows.append(failed_row(self.name, entry.impl, entry.error or
                                       RuntimeError("not measured")))
            else:
                rows.append(Row(self.name, entry.impl, statistics.median(entry.times),
                                entry.note, cpu_seconds=statistics.median(entry.cpu_times),
                                threads_run=max(entry.threads, default=0) or None))
        return rows

    def _measure_blocks(self, ctx: Context, live: list[_Entry]) -> None:
        """Each repeat: `number` calls of one implementation, then the next one's."""
        clock = time.perf_counter
        was_enabled = gc.isenabled()
        for _ in range(ctx.repeats):
            for entry in list(live):
                fn, number = entry.fn, entry.number or 1
                gc.collect()
                gc.disable()
                try:
                    ticks = _thread_ticks()
                    cpu, start = time.process_time(), clock()
                    for _ in range(number):
                        fn()  # type: ignore[misc]
                    entry.times.append((clock() - start) / number)
                    entry.cpu_times.append((time.process_time() - cpu) / number)
                    if ticks:
                        entry.threads.append(_threads_run(ticks, _thread_ticks()))
                except Exception as exc:  # noqa: BLE001
                    entry.error = exc
                    live.remove(entry)
                finally:
                    if was_enabled:
                        gc.enable()

    def _measure_call_by_call(self, ctx: Context, live: list[_Entry]) -> None:
        """Each repeat: the implementations take turns call by call (each timed alone),
        until each has made its `number` calls. The clocks' own cost around one call
        (measured on a call that does nothing) is taken off each call's times."""
        clock = time.perf_counter
        was_enabled = gc.isenabled()
        wall_cost, cpu_cost = _clock_cost()
        for _ in range(ctx.repeats):
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
                            entry.fn()  # type: ignore[misc]
                            wall[id(entry)] += clock() - t0
                            cpu[id(entry)] += time.process_time() - c0
                        except Exception as exc:  # noqa: BLE001
                            entry.error = exc
                            live.remove(entry)
            finally:
                if was_enabled:
                    gc.enable()
            for entry in live:
                entry.times.append(max(0.0, wall[id(entry)] / (entry.number or 1) - wall_cost))
                entry.cpu_times.append(max(0.0, cpu[id(entry)] / (entry.number or 1)
                                           - cpu_cost))


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


def own_blas_kernels() -> str | None:
    """The OpenBLAS kernels NumPy's OpenBLAS picks on this CPU with OPENBLAS_CORETYPE
    unset (asked in a subprocess: the choice is made when the library loads), or None."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    code = ("import numpy, threadpoolctl; print(next((i.get('architecture') for i in "
            "threadpoolctl.threadpool_info() if i.get('internal_api') == 'openblas'), ''))")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def threads_note(threads: int) -> str:
    """What each library was told about threads, and the BLAS's own count as threadpoolctl
    reads it (NumPy's OpenBLAS, which workbench's compiled code calls too)."""
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{i.get('internal_api')} {i.get('num_threads')} ({i.get('architecture')} "
                f"kernels)" for i in threadpool_info() if i.get("user_api") == "blas"]
        seen = f"BLAS threads seen by threadpoolctl: {', '.join(blas) or 'none'}"
        if os.environ.get("OPENBLAS_CORETYPE"):
            seen += f"; OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} forces those kernels"
            own = own_blas_kernels()
            if own and own not in seen:
                seen += (f" (left to itself OpenBLAS picks its {own} kernels on this CPU: "
                         f"--coretype auto)")
    except ImportError:
        seen = "threadpoolctl not installed: BLAS threads not checked"
    if threads:
        xla = (", XLA_FLAGS --xla_cpu_multi_thread_eigen=false (which JAX 0.10's CPU runtime "
               "does not obey: its calls still run on several threads, see the cpu column)"
               if threads == 1 else "")
        return (f"threads: every library limited to {threads} (--threads): OPENBLAS/OMP/MKL"
                f"_NUM_THREADS and WORKBENCH_NUM_THREADS (workbench's BLAS calls and row "
                f"kernels){xla}; {seen}")
    return (f"threads: each library's default (--threads 0): workbench's row kernels and "
            f"BLAS calls use up to every core (BLAS calls by size and load), NumPy and "
            f"PyTensor the BLAS's count, XLA its own pool; {seen}")


# -- the table --------------------------------------------------------------------------


def fill_ratios(rows: list[Row]) -> None:
    """Set each row's ratio: its time over the time of the SUBJECT row of its case."""
    subject: dict[str, float] = {}
    for r in rows:  # the first workbench row of a case (variants like "..., Out(...)" follow)
        if r.impl.startswith(SUBJECT) and r.seconds and r.case not in subject:
            subject[r.case] = r.seconds
    for row in rows:
        base = subject.get(row.case)
        if base and row.seconds:
            row.ratio = row.seconds / base


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} us"


HEADER = ("case", "implementation", "median", "cpu per call", "threads run", "ratio", "note")


def format_table(rows: list[Row], notes: list[str]) -> str:
    """A Markdown table (one row per measurement) and the notes under it.

    ratio = this row's time / workbench's time for the same case: above 1 means
    workbench is that many times faster."""
    cells = [HEADER]
    previous = None
    for row in rows:
        cells.append((row.case if row.case != previous else "", row.impl,
                      format_seconds(row.seconds), format_seconds(row.cpu_seconds),
                      "-" if row.threads_run is None else str(row.threads_run),
                      "-" if row.ratio is None else f"{row.ratio:.2f}", row.note))
        previous = row.case
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    lines = []
    for k, c in enumerate(cells):
        lines.append("| " + " | ".join(v.ljust(w) for v, w in zip(c, widths)) + " |")
        if k == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    text = "\n".join(lines)
    text += ("\n\nratio = reference time / workbench time for the same case "
             "(above 1: workbench is faster). median: wall-clock time per call; cpu per "
             "call: this process's CPU time per call, all its threads together (the work "
             "done: on a loaded machine, or for a library using more threads than asked, "
             "the fairer per-core figure; spin-waiting threads inflate it); threads run: "
             "the most threads of this process that got CPU time during one repeat of the "
             "implementation (its own, and any still spinning from the one before).")
    if notes:
        text += "\n" + "\n".join(f"- {n}" for n in notes)
    return text


def to_json(rows: list[Row], notes: list[str], ctx: Context) -> str:
    return json.dumps({"quick": ctx.quick, "repeats": ctx.repeats,
                       "rows": [asdict(r) for r in rows], "notes": notes}, indent=1)


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
    return env


def python() -> str:
    return sys.executable
