"""Compile time of wide graphs: how it grows with the number of terms, py and c.

Three graphs of N terms (issue 14: each took minutes on c, some were killed):

* `scalars`: the sum of N float64 scalar inputs;
* `stack`:   `stack([sin(x * c_i) + c_i for i in range(N)]).sum(0)`, N distinct constants
             (before constants were passed as data, each term was a C kind of its own);
* `vectors`: the sum of N float64 vector inputs.

Each (graph, N, linker) compiles in a fresh process with an empty cache directory, so
a c figure is a cold compile: it includes building the C runtime and the precompiled
prelude once, which the `baseline` row (a one-node graph, same conditions) shows
alone. Wall-clock and CPU seconds (the process and its compiler processes) from
graph to compiled Function (building the graph excluded), then the growth ratio
time(N_max) / time(N_min) against N_max / N_min (linear growth: the same ratio). On a
shared, loaded machine the CPU time is the faithful measure. PyTensor is timed on the
same graphs when it is installed (`pip install pytensor`; never a dependency of
workbench).

    python benchmarks/bench_compile_scaling.py                     # N = 500 1000 2000 5000
    python benchmarks/bench_compile_scaling.py --sizes 500 1000 --linkers py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = ("scalars", "stack", "vectors")


def build(library: str, case: str, n: int) -> tuple[list, object]:
    """(inputs, output) of graph `case` with `n` terms, in workbench or PyTensor."""
    if library == "pytensor":
        import pytensor.tensor as t
    else:
        import workbench.tensor as t
    if case == "baseline":
        x = t.dvector("x")
        return [x], x * 2.0
    if case == "scalars":
        xs = [t.dscalar(f"x{i}") for i in range(n)]
        return xs, sum(xs[1:], xs[0])
    if case == "stack":
        x = t.dvector("x")
        return [x], t.stack([t.sin(x * (1.0 + i / n)) + i / n for i in range(n)]).sum(0)
    if case == "vectors":
        vs = [t.dvector(f"v{i}") for i in range(n)]
        return vs, sum(vs[1:], vs[0])
    raise ValueError(case)


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the C compiler)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), \
        resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def child(library: str, case: str, n: int, linker: str) -> None:
    import time

    inputs, output = build(library, case, n)
    cpu, start = _cpu(), time.perf_counter()
    if library == "pytensor":
        import pytensor

        pytensor.function(inputs, output)
    else:
        import workbench as wb

        wb.function(inputs, output, linker=linker)
    print(json.dumps({"seconds": time.perf_counter() - start, "cpu": _cpu() - cpu}))


def measure(library: str, case: str, n: int, linker: str, timeout: float
            ) -> tuple[float, float] | str | None:
    """(wall, CPU) seconds of one cold compile in a fresh process, None past `timeout`,
    or for PyTensor the error it stopped with (e.g. its RecursionError on 5,000 inputs).
    CPU time counts the compiler's processes too: on a shared, loaded machine it is the
    faithful measure of the work."""
    with tempfile.TemporaryDirectory(prefix="wb-bench-scaling-") as cache:
        env = dict(os.environ, WORKBENCH_CACHE_DIR=cache,
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        try:
            done = subprocess.run([sys.executable, __file__, "--child", library, case,
                                   str(n), linker], env=env, capture_output=True, text=True,
                                  timeout=timeout, check=True)
        except subprocess.TimeoutExpired:
            return None
        except subprocess.CalledProcessError as exc:
            if library == "pytensor":  # a graph PyTensor cannot compile is a result here
                last = (exc.stderr.strip().splitlines() or ["?"])[-1]
                return f"fails: {last.split(':')[0]}"
            raise RuntimeError(f"{library} {case} N={n} {linker}: {exc.stderr[-1500:]}") \
                from None
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["seconds"]), float(result["cpu"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[500, 1000, 2000, 5000])
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--linkers", nargs="*", default=["py", "c"])
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--no-pytensor", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        library, case, n, linker = args.child
        child(library, case, int(n), linker)
        return
    libraries = [("workbench", linker) for linker in args.linkers]
    if not args.no_pytensor:
        try:
            import pytensor  # noqa: F401
            libraries.append(("pytensor", "default"))
        except ImportError:
            print("(pytensor is not installed: no PyTensor column)")
    for library, linker in libraries:
        base = measure(library, "baseline", 1, linker, args.timeout)
        assert base is not None
        print(f"{library} {linker}: baseline (one node, cold cache) {base[0]:.2f} s wall, "
              f"{base[1]:.2f} s cpu", flush=True)
    print(f"\n{'case':>8} {'N':>6} "
          + " ".join(f"{lib[:2] + ':' + lk + ' wall/cpu':>18}" for lib, lk in libraries))
    for case in args.cases:
        times: dict[tuple[str, str], list[Any]] = {lib: [] for lib in libraries}
        for n in args.sizes:
            row = []
            for lib in libraries:
                seconds = measure(lib[0], case, n, lib[1], args.timeout)
                times[lib].append(seconds)
                if seconds is None:
                    row.append(f"{'>timeout':>18}")
                elif isinstance(seconds, str):
                    row.append(f"{seconds:>18}")
                else:
                    row.append(f"{seconds[0]:9.2f}/{seconds[1]:8.2f}")
            print(f"{case:>8} {n:6d} " + " ".join(row), flush=True)
        for lib, values in times.items():
            first, last = values[0], values[-1]
            if isinstance(first, tuple) and isinstance(last, tuple) and len(values) > 1:
                print(f"{case:>8} {lib[0]} {lib[1]}: time(N={args.sizes[-1]}) / "
                      f"time(N={args.sizes[0]}) = {last[0] / first[0]:.1f} wall, "
                      f"{last[1] / first[1]:.1f} cpu (N grows "
                      f"{args.sizes[-1] / args.sizes[0]:.0f}x)")


if __name__ == "__main__":
    main()
