"""Compile time of wide graphs: how it grows with the number of terms, py and c.

Three graphs of N terms (issue 14: each took minutes on c, some were killed):

* `scalars`: the sum of N float64 scalar inputs;
* `stack`:   `stack([sin(x * c_i) + c_i for i in range(N)]).sum(0)`, N distinct constants
             (before constants were passed as data, each term was a C kind of its own);
* `vectors`: the sum of N float64 vector inputs.

Each (graph, N, linker) compiles in a fresh process with an empty cache directory, so
a c figure is a cold compile: it includes building the C runtime and the precompiled
prelude once, which the `baseline` row (a one-node graph, same conditions) shows
alone. Wall-clock seconds from graph to compiled Function (building the graph
excluded), then the growth ratio time(N_max) / time(N_min) against N_max / N_min
(linear growth: the same ratio). PyTensor is timed on the same graphs when it is
installed (`pip install pytensor`; never a dependency of workbench).

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


def child(library: str, case: str, n: int, linker: str) -> None:
    import time

    inputs, output = build(library, case, n)
    start = time.perf_counter()
    if library == "pytensor":
        import pytensor

        pytensor.function(inputs, output)
    else:
        import workbench as wb

        wb.function(inputs, output, linker=linker)
    print(json.dumps({"seconds": time.perf_counter() - start}))


def measure(library: str, case: str, n: int, linker: str, timeout: float) -> float | None:
    """Seconds of one cold compile in a fresh process, None past `timeout`."""
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
            raise RuntimeError(f"{library} {case} N={n} {linker}: {exc.stderr[-1500:]}") \
                from None
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


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
        print(f"{library} {linker}: baseline (one node, cold cache) {base:.2f} s", flush=True)
    print(f"\n{'case':>8} {'N':>6} " + " ".join(f"{lib[:2]}:{lk:>7}" for lib, lk in libraries))
    for case in args.cases:
        times: dict[tuple[str, str], list[float | None]] = {lib: [] for lib in libraries}
        for n in args.sizes:
            row = []
            for lib in libraries:
                seconds = measure(lib[0], case, n, lib[1], args.timeout)
                times[lib].append(seconds)
                row.append(f"{seconds:10.2f}" if seconds is not None else f"{'>timeout':>10}")
            print(f"{case:>8} {n:6d} " + " ".join(row), flush=True)
        for lib, values in times.items():
            first, last = values[0], values[-1]
            if first and last and len(values) > 1:
                print(f"{case:>8} {lib[0]} {lib[1]}: time(N={args.sizes[-1]}) / "
                      f"time(N={args.sizes[0]}) = {last / first:.1f} "
                      f"(N grows {args.sizes[-1] / args.sizes[0]:.0f}x)")


if __name__ == "__main__":
    main()
