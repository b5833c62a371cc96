"""One-thread LAPACK calls on the scipy-openblas64 copy against NumPy's, in mixed work.

workbench/core/link/c/ops/lapack_solo.py sends a LAPACK call that the thread policy
runs on one thread to a second OpenBLAS (the scipy-openblas64 package: faster
triangular-solve kernels than NumPy 2.4's bundled 0.3.31) that has no thread pool of
its own. Linking a second OpenBLAS for everything once made NumPy's and compiled
products 37% slower (two pools spinning against each other), so this script times
the work that would show such harm, each pattern in ONE process with the two
implementations taking turns call by call (first every other round):

- `solve`: ``wt.linalg.solve`` of a 500x500 float64 system alone;
- `solve + numpy @`: each solve followed by NumPy's 500x500 product;
- `solve + gemm`: each solve followed by a compiled 500x500 product (NumPy's copy);
- `numpy @ alone`: NumPy's product between solves of the other implementation.

`copy` is the default (the copy for one-thread calls), `numpy's` the same graph
compiled with WORKBENCH_LAPACK_SOLO=none (every call on NumPy's OpenBLAS). Run it
with `--busy` to add one bounded spinning process per core (contention), and with
`--threads 1` for the one-thread figures (the benchmark suite's setting). Each row:
median and 99th percentile wall ms, median CPU ms (this process, all threads).

    python benchmarks/bench_lapack_solo.py --seconds 10 [--threads 1] [--busy]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per pattern")
    parser.add_argument("--threads", type=int, default=0, help="0: each library's own")
    parser.add_argument("--busy", action="store_true", help="one spinning process per core")
    parser.add_argument("--n", type=int, default=500)
    args = parser.parse_args(argv)
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "WORKBENCH_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    import numpy as np
    import workbench.tensor as wt

    import workbench as wb

    n = args.n
    rng = np.random.default_rng(5)
    a_value = rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)
    b_value = rng.standard_normal(n)
    m_value = rng.standard_normal((n, n))
    a, b = wt.dmatrix("a"), wt.dvector("b")
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    solves = {}
    for label, choice in (("copy", "auto"), ("numpy's", "none")):
        os.environ["WORKBENCH_LAPACK_SOLO"] = choice
        solves[label] = wb.function([a, b], wt.linalg.solve(a, b), linker="c")
    os.environ.pop("WORKBENCH_LAPACK_SOLO")
    gemm = wb.function([x, y], x @ y, linker="c")
    expected = np.linalg.solve(a_value, b_value)
    for fn in solves.values():
        assert np.allclose(fn(a_value, b_value), expected)

    patterns = {
        "solve": lambda f: f(a_value, b_value),
        "solve + numpy @": lambda f: (f(a_value, b_value), m_value @ m_value),
        "solve + gemm": lambda f: (f(a_value, b_value), gemm(m_value, m_value)),
    }
    spinners = []
    if args.busy:
        import subprocess

        code = (f"import time\nend = time.time() + {4 * args.seconds + 30}\n"
                "while time.time() < end: pass")
        spinners = [subprocess.Popen([sys.executable, "-c", code])
                    for _ in range(len(os.sched_getaffinity(0)))]
    try:
        print(f"n={n}, threads={args.threads or 'own'}, busy={args.busy}, "
              f"load {os.getloadavg()[0]:.2f}")
        print(f"{'pattern':22s} {'impl':8s} {'wall med':>9s} {'wall p99':>9s} {'cpu med':>8s}")
        for name, pattern in patterns.items():
            times: dict[str, list[tuple[float, float]]] = {k: [] for k in solves}
            alone: dict[str, list[float]] = {k: [] for k in solves}
            end = time.perf_counter() + args.seconds
            order = list(solves.items())
            while time.perf_counter() < end:
                order.reverse()  # each goes first every other round
                for label, fn in order:
                    w0, c0 = time.perf_counter(), time.process_time()
                    pattern(fn)
                    times[label].append((time.perf_counter() - w0, time.process_time() - c0))
                    if name == "solve":  # NumPy's product after this implementation's solve
                        w0 = time.perf_counter()
                        _ = m_value @ m_value
                        alone[label].append(time.perf_counter() - w0)
            for label, rows in times.items():
                wall = np.array([r[0] for r in rows]) * 1e3
                cpu = np.array([r[1] for r in rows]) * 1e3
                print(f"{name:22s} {label:8s} {np.median(wall):9.3f} "
                      f"{np.percentile(wall, 99):9.3f} {np.median(cpu):8.3f}")
            if name == "solve":
                for label, rows in alone.items():
                    wall = np.array(rows) * 1e3
                    print(f"{'numpy @ after solve':22s} {label:8s} {np.median(wall):9.3f} "
                          f"{np.percentile(wall, 99):9.3f} {'':>8s}")
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
