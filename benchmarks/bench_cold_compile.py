"""Cold compile of the MLP training step, graph to first result, in fresh processes.

Issue 22 asks for under 1 s (median, fresh process, empty cache) and a warm cache under
0.05 s. Each repeat starts a new process (`wb_bench/child.py`), timed from after its
imports to the first result, in three cache states:

- `empty cache`: a brand-new cache directory, so the per-machine first use is included
  (compiler probes, the precompiled prelude, the runtime module) as well as the graph's
  own 26 node kinds;
- `toolchain ready`: a cache that has compiled another graph before (probes, prelude and
  runtime on disk), none of the MLP's kinds: what a new graph costs on a used machine;
- `warm cache`: every kind on disk.

Besides the wall time it prints the phases the Function records (rewriting, linking), the
C compiler's CPU seconds (user + system of the child's subprocesses: on a loaded machine
the faithful measure of the work) and the machine's load, since on a shared machine the
wall time mostly measures the other processes.

    python benchmarks/bench_cold_compile.py                 # float32, 5 repeats
    python benchmarks/bench_cold_compile.py --dtype float64 --repeats 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (str(HERE.parent), str(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)

from wb_bench.compile_time import run_child  # noqa: E402


def load() -> str:
    try:
        fields = Path("/proc/loadavg").read_text().split()
        return f"load {fields[0]} {fields[1]} {fields[2]}, {fields[3]} tasks running"
    except OSError:
        return f"load {os.getloadavg()[0]:.2f}"


def one(what: str, state: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="wb-cold-") as cache_dir:
        if state != "empty cache":
            run_child(["compile", "fused"], cache_dir, timeout=600)  # the toolchain
        if state == "warm cache":
            run_child(["compile", what], cache_dir, timeout=600)
        return run_child(["compile", what], cache_dir, timeout=600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    what = f"mlp-{args.dtype}"
    print(f"MLP step 784-256-10 {args.dtype}: graph to first result in a fresh process, "
          f"median of {args.repeats}; {os.cpu_count()} cores; {load()} at the start")
    print()
    print("| cache | wall s | rewriting s | linking s | C compile s (in linking) | "
          "compiler CPU s | kinds compiled / modules |")
    print("|---|---|---|---|---|---|---|")
    for state in ("empty cache", "toolchain ready", "warm cache"):
        results = [one(what, state) for _ in range(args.repeats)]

        def med(get, results: list[dict] = results) -> float:
            return statistics.median(get(r) for r in results)

        report = results[-1].get("report", {})
        print(f"| {state} | {med(lambda r: r['total_seconds']):.3f} | "
              f"{med(lambda r: r['phases'].get('rewriting', 0.0)):.3f} | "
              f"{med(lambda r: r['phases'].get('linking (total)', 0.0)):.3f} | "
              f"{med(lambda r: r['report']['compile_seconds']):.3f} | "
              f"{med(lambda r: r['compiler_cpu_seconds']):.2f} | "
              f"{report.get('compiled', 0)} / {report.get('modules_built', 0)} |", flush=True)
    print()
    print(f"{load()} at the end (wall times on a loaded machine measure its other work too)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
