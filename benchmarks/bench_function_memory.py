"""Memory kept by compiled Functions that were discarded: resident-set growth over
rounds of compile, call, discard.

Each linker runs in its own fresh process: a few warm-up rounds (caches, imports,
the allocator's first arenas), then `--rounds` rounds of building a small graph,
compiling it, calling it on a vector of `--length` float64 and dropping the Function,
with a `gc.collect()` at the end, workbench's background -O3 builds waited for before each
reading (wb_bench.common.finish_background_builds: the final module is in both). The
figure is VmRSS after minus VmRSS before, in MB.
A Function that is never freed keeps its buffers: with a long `--length` the growth
shows it at once (issue 14: +53.8 MB over 500 rounds on c before the C call objects
took part in garbage collection; target < 5 MB).

    python benchmarks/bench_function_memory.py                 # py, c; 500 rounds
    python benchmarks/bench_function_memory.py --linkers c --rounds 2000 --length 100000
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rss_mb() -> float:
    """This process's resident set, in MB (Linux /proc; else the peak from `resource`)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(linker: str, rounds: int, length: int) -> None:
    """Print the RSS growth over `rounds` compile-call-discard rounds on `linker`."""
    import numpy as np
    import workbench.tensor as wt
    from wb_bench.common import finish_background_builds  # (benchmarks/ is sys.path[0])

    import workbench as wb

    value = np.ones(length)

    def one_round() -> None:
        x = wt.dvector("x")
        f = wb.function([x], [wt.exp(x) * 2 + x, (x * x).sum()], linker=linker)
        f(value)

    for _ in range(20):
        one_round()
    finish_background_builds()  # the -O3 module loaded before `before`, not counted as growth
    gc.collect()
    before = rss_mb()
    for _ in range(rounds):
        one_round()
    finish_background_builds()
    gc.collect()
    print(f"{rss_mb() - before:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--linkers", nargs="*", default=["py", "c"])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--length", type=int, default=1000,
                        help="length of the float64 input vector")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    growth = {}
    for linker in args.linkers:
        done = subprocess.run([sys.executable, __file__, "--child", linker,
                               str(args.rounds), str(args.length)],
                              capture_output=True, text=True, env=env, check=True)
        growth[linker] = float(done.stdout.split()[-1])
        print(f"{linker:>4}: RSS grows {growth[linker]:7.2f} MB over {args.rounds} "
              f"compile-call-discard rounds (input of {args.length} float64)", flush=True)
    if "c" in growth:
        verdict = "ok" if growth["c"] < 5 else "OVER the 5 MB target"
        print(f"c: {growth['c']:.2f} MB, target < 5 MB: {verdict}")


if __name__ == "__main__":
    main()
