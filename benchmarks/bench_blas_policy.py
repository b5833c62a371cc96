"""The BLAS thread policy against fixed thread counts, on whatever load the machine has.

Issue 22: the adaptive policy (workbench/core/link/c/blas_threads.py) must keep the
MLP step's speed on an idle machine while it protects it on a busy one. This script
times the 784-256-10 MLP step (batch 128, as benchmarks/bench_contention.py) in one
process, three ways taking turns block by block:

- `policy`: the default (size rule and adaptation);
- `threads`: the size rule alone (`adaptive` off: each large product on every thread);
- `1 thread`: the cap at one thread.

It starts no load of its own. For each block it also measures the CPU that OTHER
processes used meanwhile (the allowed cores' busy time in /proc/stat less this
process's CPU time), so the blocks can be split by how idle the machine really was;
the table gives every block, then the blocks during which other processes used less
than `--quiet` cores. Wall and CPU (this process, all threads) milliseconds per step.

    python benchmarks/bench_blas_policy.py --seconds 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (str(ROOT), str(ROOT / "benchmarks")):
    if path not in sys.path:
        sys.path.insert(0, path)

from bench_contention import cores, load, workbench_steps  # noqa: E402


def idle_seconds() -> float:
    """Idle + iowait seconds of the cores this process may run on (/proc/stat)."""
    import os

    allowed = os.sched_getaffinity(0)
    hz = os.sysconf("SC_CLK_TCK")
    total = 0
    for line in Path("/proc/stat").read_text().splitlines():
        if not line.startswith("cpu"):
            break
        name, *fields = line.split()
        if name != "cpu" and int(name[3:]) in allowed:
            total += int(fields[3]) + int(fields[4])
    return total / hz


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--block", type=int, default=50, help="steps per turn")
    parser.add_argument("--quiet", type=float, default=0.25,
                        help="the most cores other processes may use in a 'quiet' block")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    from wb_bench.common import finish_background_builds

    from workbench.core.link.c import blas_threads

    with_policy, _, _, one_thread = workbench_steps(args.dtype)
    adaptive = blas_threads.SLOTS.index("adaptive")

    def threads() -> object:
        saved = blas_threads.POLICY[adaptive]  # the policy's state is left as it was
        blas_threads.POLICY[adaptive] = 0.0
        try:
            return with_policy()
        finally:
            blas_threads.POLICY[adaptive] = saved

    impls = {"policy": with_policy, "threads": threads, "1 thread": one_thread}
    finish_background_builds()
    n_cores = cores()
    # per implementation: (others' cores, wall per step, CPU per step, back-off at end)
    blocks: dict[str, list[tuple[float, list[float], float, bool]]] = {k: [] for k in impls}
    counts = (blas_threads.busy_events(), blas_threads.forgiven_events(),
              blas_threads.still_busy_events())
    print(f"MLP step 784-256-10 batch 128 {args.dtype}; {n_cores} cores; {load()}",
          flush=True)
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        for name, fn in impls.items():
            walls = []
            idle0, cpu0, t0 = idle_seconds(), time.process_time(), time.perf_counter()
            for _ in range(args.block):
                start = time.perf_counter()
                fn()
                walls.append(time.perf_counter() - start)
            dt = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            others = n_cores - (idle_seconds() - idle0 + cpu) / dt
            backing_off = blas_threads.policy()["busy_until"] > 0
            blocks[name].append((others, walls, cpu / args.block, backing_off))
    busy, forgiven, still = (now - then for now, then in zip(
        (blas_threads.busy_events(), blas_threads.forgiven_events(),
         blas_threads.still_busy_events()), counts))
    print(f"{load()}; policy: {busy} back-off(s), {forgiven} lone slow call(s) forgiven, "
          f"{still} check(s) without a spare core")
    print()
    print("| blocks | implementation | blocks | others' cores (mean) | steps | mean ms | "
          "median ms | p90 ms | CPU ms/step | policy blocks ending in a back-off |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, keep in (("all", lambda o: True),
                        (f"quiet (others < {args.quiet:g} cores)", lambda o: o < args.quiet)):
        for name in impls:
            chosen = [b for b in blocks[name] if keep(b[0])]
            if not chosen:
                print(f"| {label} | {name} | 0 | | | | | | | |")
                continue
            t = sorted(w for b in chosen for w in b[1])
            others = statistics.fmean(b[0] for b in chosen)
            cpu = statistics.fmean(b[2] for b in chosen)
            ending = (f"{sum(b[3] for b in chosen)}/{len(chosen)}" if name == "policy"
                      else "")
            print(f"| {label} | {name} | {len(chosen)} | {others:.2f} | {len(t)} | "
                  f"{statistics.fmean(t) * 1e3:.3f} | {statistics.median(t) * 1e3:.3f} | "
                  f"{t[int(0.9 * (len(t) - 1))] * 1e3:.3f} | {cpu * 1e3:.3f} | {ending} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
