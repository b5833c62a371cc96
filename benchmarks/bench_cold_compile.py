"""Cold compile of the MLP training step, graph to first result, in fresh processes.

Issue 22 asks for under 1 s (median, fresh process, empty cache) and a warm cache under
0.05 s. Each repeat starts a new process (`wb_bench/child.py`), timed from after its
imports to the first result, in three cache states:

- `empty cache`: a brand-new cache directory, so the per-machine first use is included
  (compiler probes, the precompiled prelude, the runtime module) as well as the graph's
  own 27 node kinds;
- `toolchain ready`: a cache that has compiled another graph before (probes, prelude and
  runtime on disk), none of the MLP's kinds: what a new graph costs on a used machine;
- `warm cache`: every kind on disk.

Python's bytecode is cached as for an installed package (wb_bench.common.child_env), and
one untimed run writes it first.

Besides the wall time it prints the phases the Function records (rewriting, linking), the
C compiler's CPU seconds (user + system of the child's subprocesses: on a loaded machine
the faithful measure of the work) and the machine's load, since on a shared machine the
wall time mostly measures the other processes.

With `--kinds` it lists the graph's node kinds instead and compiles its bundles in
this process (the toolchain made ready first), printing each bundle's compiler CPU
seconds: the figure to watch when changing what C a kind generates.

    python benchmarks/bench_cold_compile.py                 # float32, 5 repeats
    python benchmarks/bench_cold_compile.py --dtype float64 --repeats 9
    python benchmarks/bench_cold_compile.py --kinds
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


def kinds_and_bundles(dtype: str) -> None:
    """The MLP step's node kinds, and the compiler CPU seconds of each of its bundles
    (compiled here into a temporary directory, the prelude built first)."""
    import resource
    from collections import Counter

    from wb_bench import mlp

    from workbench.core.link.c import bundle, tiers
    from workbench.core.link.c import compiler as cc
    from workbench.core.link.c.cache import default_cache
    from workbench.core.link.c.codegen import NoCCode, node_source

    fn, _ = mlp.workbench_step(dtype, linker="py")  # the graph the C linker would get
    cache, kinds, count = default_cache(), {}, Counter()
    for node in fn.maker.fgraph.toposort():
        try:
            src = node_source(node)
        except NoCCode:
            continue
        key = bundle.kind_key(cache, src)
        kinds.setdefault(key, bundle.Kind(node, src, key))
        count[key] += 1
    print(f"{sum(count.values())} C nodes, {len(kinds)} kinds:")
    for key, kind in sorted(kinds.items(), key=lambda kv: str(kv[1].node.op)):
        types = ", ".join(str(v.type) for v in kind.node.inputs)
        print(f"  {count[key]} x {str(kind.node.op)[:50]} ({types})")

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    plan = [bundle.bundle_source(b) for b in bundle.plan_bundles(list(kinds.values()), 2)]
    if plan:
        cc.prelude_dir([*cc.compiler_info().default_flags, *plan[0].extra_flags], wait=True)
    levels = {f"{tiers.QUICK_LEVEL} (the first result waits for it)": tiers.quick_flags(),
              "-O3 (in the background)": None}
    for level, flags in levels.items():
        total = 0.0
        for i, src in enumerate(plan):
            start = children_cpu()
            with tempfile.TemporaryDirectory(prefix="wb-bundle-") as out:
                cc.compile_module(src.source, src.module_name, out_dir=out, flags=flags,
                                  extra_flags=src.extra_flags, include_dirs=src.include_dirs,
                                  lib_dirs=src.lib_dirs, libraries=src.libraries)
            seconds = children_cpu() - start
            total += seconds
            print(f"{level}: bundle {i}: {len(src.kinds)} kinds, {len(src.source)} "
                  f"characters of C, compiler CPU {seconds:.2f} s")
        print(f"{level}: all bundles: compiler CPU {total:.2f} s ({load()})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--kinds", action="store_true",
                        help="list the node kinds and time the compiler on each bundle")
    args = parser.parse_args(argv)
    if args.kinds:
        kinds_and_bundles(args.dtype)
        return 0
    what = f"mlp-{args.dtype}"
    print(f"MLP step 784-256-10 {args.dtype}: graph to first result in a fresh process, "
          f"median of {args.repeats}; {os.cpu_count()} cores; {load()} at the start")
    print("empty cache: a new cache directory, nothing kept from earlier processes: the "
          "compiler probes, the runtime module (-O3) and the graph's kinds (-O1, then -O3 "
          "in the background) are all compiled in the timed window (the precompiled "
          "prelude after the first result); toolchain ready: probes, prelude and runtime on "
          "disk, the graph's kinds not; total CPU = this process + its compilers")
    print()
    with tempfile.TemporaryDirectory(prefix="wb-cold-") as cache_dir:
        run_child(["compile", what], cache_dir, timeout=600)  # bytecode written (untimed)
    print("| cache | import s (not in wall) | wall s | CPU s (this process) | rewriting s | "
          "linking s | C compile s (in linking) | compiler CPU s | total CPU s | "
          "kinds compiled / modules | load (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for state in ("empty cache", "toolchain ready", "warm cache"):
        results = [one(what, state) for _ in range(args.repeats)]

        def med(get, results: list[dict] = results) -> float:
            return statistics.median(get(r) for r in results)

        report = results[-1].get("report", {})
        print(f"| {state} | {med(lambda r: r['import_seconds']):.3f} | "
              f"{med(lambda r: r['total_seconds']):.3f} | "
              f"{med(lambda r: r['cpu_seconds']):.3f} | "
              f"{med(lambda r: r['phases'].get('rewriting', 0.0)):.3f} | "
              f"{med(lambda r: r['phases'].get('linking (total)', 0.0)):.3f} | "
              f"{med(lambda r: r['report']['compile_seconds']):.3f} | "
              f"{med(lambda r: r['compiler_cpu_seconds']):.2f} | "
              f"{med(lambda r: r['compiler_cpu_seconds'] + r['cpu_seconds']):.2f} | "
              f"{report.get('compiled', 0)} / {report.get('modules_built', 0)} | "
              f"{os.getloadavg()[0]:.1f} |", flush=True)
    print()
    print(f"{load()} at the end (wall times on a loaded machine measure its other work too)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
