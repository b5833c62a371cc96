"""The MLP training step on an idle machine and while every core is kept busy.

Issue 22: OpenBLAS shares a product among threads and waits for all of them, so on a
machine whose cores are busy with other processes a call can wait for a worker the
scheduler has not run yet. The C linker now chooses the thread count per call
(workbench/core/link/c/blas_threads.py). This script measures the 784-256-10 MLP step
(batch 128, `workbench/examples/mlp.py`) in three phases:

1. idle: nothing else started by this script (the machine's own load is printed);
2. busy: one bounded background process per core, each spinning in a loop that ends
   by itself after `--seconds` (and is killed when the phase ends);
3. idle again (a load spike in phase 1 shows up as a difference between 1 and 3).

Each implementation runs alone, in a fresh process of its own, the three phases one after
the other, and the next implementation after it (the default). With `--together` they
take turns, block by block, in one process instead: drift of the machine's load then
falls on all alike, but what one leaves running takes cores from the next (after the
`BLAS's threads` row, OpenBLAS's workers spin on for ~0.1 s; XLA's too), which measured
the policy's busy steps at 1.6-2.0 ms mean against 1.3-1.4 ms alone, and the BLAS's
threads at 13-33x against 3.7-3.9x alone. The implementations:

- `workbench c`: the C linker with its thread policy (the default);
- `workbench c, GEMMs pooled`: the same function with its large GEMMs cut into panels
  over workbench's own helper threads (`blas_threads.gemm_pool(True)`; off by default:
  see the `POOL` note in blas_threads.py);
- `workbench c, BLAS's threads`: the same function with the policy reduced to what it
  was before issue 22 (every call on the BLAS's own thread count, no back-off, no pool);
- `workbench c, 1 thread`: the same function capped at one thread (on an idle machine
  the policy's figure should be that of the BLAS's threads, not this one);
- `jax jit` (if `import jax` works): `value_and_grad`, donated buffers.

On a machine other people load, the `BLAS's threads` row's spinning workers slow down
whatever runs beside it (its steps took 46-99 ms at load 4-5 on the 2-core dev machine):
leave it out with `--no-blas-threads` to compare the others. `--coretype auto` runs
OpenBLAS's kernels for this CPU, as `benchmarks/run.py --coretype auto` does.

Each row gives the mean and median milliseconds per step and the slowdown busy/idle of
the mean (the mean, because what a busy machine adds is a long tail of slow calls),
against the quieter of the two idle phases (a warning names the implementations whose
idle phases differ by more than 1.5x: the machine was not idle then). The goal of issue
22 is a slowdown of at most 3x for workbench, printed beside JAX's.
Workbench's background -O3 builds are waited for first
(wb_bench.common.finish_background_builds): every phase times the final -O3 code.

    python benchmarks/bench_contention.py                  # float32, 4 s per phase
    python benchmarks/bench_contention.py --dtype float64 --seconds 8
    python benchmarks/bench_contention.py --together --no-blas-threads
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for path in (str(ROOT), str(ROOT / "benchmarks")):  # workbench, and wb_bench
    if path not in sys.path:
        sys.path.insert(0, path)

from wb_bench.threads import apply_coretype, check_coretype  # noqa: E402

#: the background load: a Python loop that ends by itself at a deadline
SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="time each phase runs the steps (the background load lasts "
                             "this long plus a margin)")
    parser.add_argument("--block", type=int, default=20, help="steps per turn")
    parser.add_argument("--no-jax", action="store_true", help="do not time JAX")
    parser.add_argument("--no-baseline", action="store_true",
                        help="do not time the step on the BLAS's own threads (its spinning "
                             "workers also slow down whatever runs next on a busy machine) "
                             "nor on one thread")
    parser.add_argument("--no-blas-threads", action="store_true",
                        help="do not time the step on the BLAS's own threads (keeps the "
                             "other baselines)")
    parser.add_argument("--together", action="store_true",
                        help="time the implementations taking turns in one process (their "
                             "spinning workers then take cores from each other) instead of "
                             "each alone in a fresh process")
    parser.add_argument("--coretype", default=None, metavar="NAME|auto",
                        help="OPENBLAS_CORETYPE for this run, as benchmarks/run.py takes it "
                             "('auto': this CPU's own kernels); default: the environment's")
    parser.add_argument("--child", default=None, choices=IMPLEMENTATIONS,
                        help=argparse.SUPPRESS)  # one implementation's phases, as JSON
    args = parser.parse_args(argv)
    if args.coretype is not None:
        try:
            check_coretype(args.coretype)
        except ValueError as exc:
            parser.error(str(exc))
    if args.seconds <= 0 or args.block < 1:
        parser.error("--seconds must be > 0 and --block >= 1")
    return args


def load() -> str:
    """The 1-minute load average and the count of running tasks (/proc/loadavg)."""
    try:
        fields = Path("/proc/loadavg").read_text().split()
        return f"load {fields[0]}, {fields[3]} tasks running"
    except OSError:
        return f"load {os.getloadavg()[0]:.2f}"


def workbench_steps(dtype: str) -> tuple[Callable[[], Any], Callable[[], Any],
                                         Callable[[], Any], Callable[[], Any]]:
    """(the step under the thread policy, the same with its large GEMMs pooled,
    the same step on the BLAS's own threads, the same step on one thread)."""
    from wb_bench import mlp as bench_mlp

    from workbench.core.link.c import blas_threads
    from workbench.examples.mlp import make_batch

    fn, _ = bench_mlp.workbench_step(dtype)  # the suite's step: same graph, learning rate
    x, labels = make_batch(dtype=dtype)
    fn(x, labels)

    def with_policy() -> Any:
        return fn(x, labels)

    def pooled_gemms() -> Any:
        with blas_threads.gemm_pool(True):
            return fn(x, labels)

    def blas_own_threads() -> Any:
        # the policy as it was before issue 22: any size may use every thread, no
        # adaptation (the policy's back-off state is left as it was)
        with blas_threads.blas_own_threads():
            return fn(x, labels)

    def one_thread() -> Any:
        cap = blas_threads.max_threads()
        blas_threads.set_max_threads(1)  # (leaves the policy's back-off as it was)
        try:
            return fn(x, labels)
        finally:
            blas_threads.set_max_threads(cap)

    return with_policy, pooled_gemms, blas_own_threads, one_thread


def jax_step(dtype: str) -> Callable[[], Any] | None:
    """JAX's step (`wb_bench.mlp.jax_step`: value_and_grad, donated buffers), or None."""
    try:
        import jax
    except ImportError:
        return None
    from wb_bench import mlp as bench_mlp

    from workbench.examples.mlp import initial_params, make_batch

    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    jitted = bench_mlp.jax_step(jax)
    state = [tuple(jax.device_put(p) for p in initial_params(dtype=dtype))]
    x, labels = (jax.device_put(v) for v in make_batch(dtype=dtype))

    def call() -> None:
        cost, state[0] = jitted(state[0], x, labels)
        cost.block_until_ready()

    call()
    return call


def run_phase(impls: dict[str, Callable[[], Any]], seconds: float, block: int
              ) -> dict[str, list[float]]:
    """Per implementation, the seconds of each step, the implementations taking turns
    `block` steps at a time for `seconds` in all, after workbench's background -O3
    builds: the final code is timed, not the quick -O1 build beside its compiler."""
    from wb_bench.common import finish_background_builds

    finish_background_builds()
    times: dict[str, list[float]] = {name: [] for name in impls}
    clock = time.perf_counter
    end = clock() + seconds
    while clock() < end:
        for name, fn in impls.items():
            for _ in range(block):
                start = clock()
                fn()
                times[name].append(clock() - start)
    return times


def cores() -> int:
    """The cores this process may run on (under `taskset`, fewer than the machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def start_load(seconds: float) -> list[subprocess.Popen[bytes]]:
    """One spinning process per core this process may use (they inherit its affinity),
    each ending by itself after `seconds`."""
    code = SPIN.format(seconds=seconds)
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(cores())]


def stop_load(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


#: The implementations in the order they are timed and printed.
IMPLEMENTATIONS = ("workbench c", "workbench c, GEMMs pooled", "workbench c, BLAS's threads",
                   "workbench c, 1 thread", "jax jit")


def implementation_names(args: argparse.Namespace) -> list[str]:
    """The implementations this run times (the command line leaves some out)."""
    left_out = set()
    if args.no_baseline:
        left_out |= {"workbench c, GEMMs pooled", "workbench c, BLAS's threads",
                     "workbench c, 1 thread"}
    if args.no_blas_threads:
        left_out.add("workbench c, BLAS's threads")
    if args.no_jax:
        left_out.add("jax jit")
    return [name for name in IMPLEMENTATIONS if name not in left_out]


def build(names: list[str], dtype: str) -> dict[str, Callable[[], Any]]:
    """The step of each implementation named (JAX's left out when it does not import)."""
    impls: dict[str, Callable[[], Any]] = {}
    if any(name.startswith("workbench") for name in names):
        steps = dict(zip(IMPLEMENTATIONS[:4], workbench_steps(dtype), strict=True))
        impls.update((name, steps[name]) for name in names if name in steps)
    if "jax jit" in names:
        jax_call = jax_step(dtype)
        if jax_call is not None:
            impls["jax jit"] = jax_call
    return impls


#: What a run measured: per phase, per implementation, the seconds of each step; per
#: phase, the machine's load; per phase, workbench's policy events (a line of text).
Measured = tuple[dict[str, dict[str, list[float]]], dict[str, str], dict[str, str]]


def measure_phases(impls: dict[str, Callable[[], Any]], seconds: float, block: int
                   ) -> Measured:
    """The three phases (idle, busy: one spinning process per core, idle again), the
    implementations taking turns `block` steps at a time in each."""
    from workbench.core.link.c import blas_threads

    phases: dict[str, dict[str, list[float]]] = {}
    loads: dict[str, str] = {}
    events: dict[str, str] = {}
    def counts() -> tuple[int, int, int]:
        return (blas_threads.busy_events(), blas_threads.forgiven_events(),
                blas_threads.still_busy_events())

    for phase in PHASES:
        before = counts()
        procs = start_load(seconds + 5) if phase == "busy" else []
        try:
            if procs:
                time.sleep(0.5)  # let the spinners start
            loads[phase] = load()
            phases[phase] = run_phase(impls, seconds, block)
        finally:
            stop_load(procs)
        busy, forgiven, still = (after - earlier
                                 for after, earlier in zip(counts(), before, strict=True))
        events[phase] = (f"{busy} back-off(s) begun (a second slow threaded call), "
                         f"{forgiven} lone slow call(s) forgiven, {still} check(s) at a "
                         f"back-off's end found no spare core")
    return phases, loads, events


def measure_alone(names: list[str], args: argparse.Namespace) -> Measured:
    """Each implementation in a fresh process of its own (`--child NAME`), one after the
    other: nothing another implementation leaves running (OpenBLAS's or XLA's spinning
    workers) takes a core from it. The loads are keyed by implementation."""
    phases: dict[str, dict[str, list[float]]] = {p: {} for p in PHASES}
    loads: dict[str, str] = {}
    events: dict[str, str] = {}
    for name in names:
        command = [sys.executable, str(Path(__file__).resolve()), "--child", name,
                   "--dtype", args.dtype, "--seconds", str(args.seconds),
                   "--block", str(args.block)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        result = next((line[len(RESULT):] for line in done.stdout.splitlines()
                       if line.startswith(RESULT)), None)
        if done.returncode != 0 or result is None:
            last = (done.stderr.strip().splitlines() or [""])[-1]
            print(f"[{name}: its process failed (exit {done.returncode}): {last}]",
                  file=sys.stderr)
            continue
        child = json.loads(result)
        if not child["phases"]:
            print(f"[{name}: not available in this environment]", file=sys.stderr)
            continue
        for phase in PHASES:
            phases[phase][name] = child["phases"][phase][name]
        loads[name] = ", ".join(f"{phase} {child['loads'][phase]}" for phase in PHASES)
        if name == "workbench c":
            events = child["events"]
    return phases, loads, events


#: The prefix of the line a `--child` process prints its measurements on (JSON).
RESULT = "RESULT "
#: The phases, in order.
PHASES = ("idle", "busy", "idle again")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    apply_coretype(args.coretype, os.environ)  # before NumPy loads OpenBLAS (children too)
    warnings.filterwarnings("ignore")
    if args.child:
        impls = build([args.child], args.dtype)
        measured = measure_phases(impls, args.seconds, args.block) if impls else ({}, {}, {})
        print(RESULT + json.dumps(dict(zip(("phases", "loads", "events"), measured,
                                           strict=True))))
        return 0
    from wb_bench.threads import coretype_banner

    names = implementation_names(args)
    how = ("the implementations taking turns in one process" if args.together else
           "each implementation alone in a fresh process, one after the other")
    print(f"MLP step 784-256-10 batch 128 {args.dtype}; {cores()} cores; "
          f"{args.seconds:g} s per phase, turns of {args.block} steps; {how}; workbench's "
          f"final -O3 code (background builds waited for)", flush=True)
    print(coretype_banner(), flush=True)
    if args.together:
        phases, loads, events = measure_phases(build(names, args.dtype), args.seconds,
                                               args.block)
    else:
        phases, loads, events = measure_alone(names, args)
    names = [name for name in names if name in phases["idle"]]  # those that ran
    for phase, line in events.items():
        print(f"[{phase}: workbench c: {line}]", file=sys.stderr, flush=True)
    print_table(phases, names)
    print("idle = the quieter of the two idle phases (mean per step). The machine's load "
          "(1-minute average, tasks running):")
    for key, text in loads.items():
        print(f"- {key}: {text}")
    return 0


def print_table(phases: dict[str, dict[str, list[float]]], names: list[str]) -> None:
    """The table of every implementation's phases, the summary line of slowdowns, and a
    warning when an implementation's two idle phases differ."""
    print()
    print("| implementation | phase | steps | mean ms | median ms | p90 ms | slowdown "
          "(mean busy / mean of the quieter idle phase) |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        for phase in PHASES:
            t = phases[phase][name]
            mean = statistics.fmean(t)
            p90 = sorted(t)[int(0.9 * (len(t) - 1))]
            slow = f"{slowdown(phases, name):.2f}x" if phase == "busy" else ""
            print(f"| {name} | {phase} | {len(t)} | {mean * 1e3:.3f} | "
                  f"{statistics.median(t) * 1e3:.3f} | {p90 * 1e3:.3f} | {slow} |")
    print()
    print("slowdown busy/idle (mean): " + ", ".join(
        f"{name} {slowdown(phases, name):.2f}x" for name in names)
        + " (issue 22: workbench c at most 3x, beside JAX's)")
    uneven = [f"{name} {idle_spread(phases, name):.1f}x" for name in names
              if idle_spread(phases, name) > IDLE_SPREAD]
    if uneven:
        print("warning: the two idle phases differ (" + ", ".join(uneven) + "): the machine "
              "was not idle in one of them; rerun on a quieter machine")


def slowdown(phases: dict[str, dict[str, list[float]]], name: str) -> float:
    """Mean step time while busy over that of the quieter idle phase. Pooling both idle
    phases hid a slowdown whenever one was not idle (other processes of a shared
    machine, spinning BLAS threads): the BLAS's own threads read 3.5x against the pool,
    20x against the first idle phase, their 'idle again' mean being 30 ms."""
    idle = min(statistics.fmean(phases[p][name]) for p in IDLE_PHASES)
    return statistics.fmean(phases["busy"][name]) / idle


#: the two phases with no load started by this script
IDLE_PHASES = ("idle", "idle again")
#: idle phases whose means differ more than this: the machine was not idle in one
IDLE_SPREAD = 1.5


def idle_spread(phases: dict[str, dict[str, list[float]]], name: str) -> float:
    """The slower idle phase's mean step time over the quieter one's."""
    means = [statistics.fmean(phases[p][name]) for p in IDLE_PHASES]
    return max(means) / min(means)


if __name__ == "__main__":
    sys.exit(main())
