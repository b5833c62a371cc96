"""How FAST_RUN rewriting scales with graph size, against PyTensor when it is installed.

The graph is a chain of N alternating elementwise nodes on a vector:
`y = tanh(y) * 0.999` then `y = y * 1.0001 + 0.5`. Only the rewriting is timed
(building the FunctionGraph included, linking excluded), median of repeats, after one
untimed run of each system on the smallest graph (modules imported, rewrites
registered and their caches filled). Both wall-clock and CPU time (`time.process_time`)
are reported: on a shared, loaded machine the CPU time is the faithful measure of the
work done.

    python benchmarks/bench_rewrite_scaling.py           # N = 500, 1000, 5000
    python benchmarks/bench_rewrite_scaling.py --quick   # N = 100, 200, 1000, one repeat

PyTensor is never a dependency of workbench: it is only timed if importable
(`pip install pytensor`); its graph is rewritten as `pytensor.function` rewrites it: a
FunctionGraph with the Supervisor feature its functions get, through the rewriter of its
default mode (`get_default_mode().optimizer`, FAST_RUN with its inplace and
specialisation phases), not `rewrite_graph(include=("fast_run",))`, which leaves some out.
A PyTensor run that fails gives a failed row (its error) and the others go on.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any


def workbench_timer(n: int) -> Callable[[], tuple[float, float]]:
    import workbench.tensor as wt

    import workbench as wb

    def run() -> float:
        x = wt.dvector("x")
        y = x
        for i in range(n):
            y = wt.tanh(y) * 0.999 if i % 2 == 0 else y * 1.0001 + 0.5
        cpu, start = time.process_time(), time.perf_counter()
        wb.rewrite_graph([y], mode="FAST_RUN")
        return time.perf_counter() - start, time.process_time() - cpu

    return run


def pytensor_function_graph(x: Any, y: Any) -> Any:
    """The FunctionGraph `pytensor.function([x], y)` would rewrite (with its Supervisor)."""
    from pytensor.graph.fg import FunctionGraph

    try:
        from pytensor.compile import add_supervisor_to_fgraph
        from pytensor.compile.io import In
    except ImportError:  # older PyTensor: the same through std_fgraph
        from pytensor.compile.function.types import std_fgraph
        from pytensor.compile.io import In, SymbolicOutput

        return std_fgraph([In(x)], [SymbolicOutput(y)])[0]
    fgraph = FunctionGraph([x], [y], clone=True)
    add_supervisor_to_fgraph(fgraph=fgraph, input_specs=[In(x)])
    return fgraph


def pytensor_rewrite(x: Any, y: Any) -> Any:
    """`y` rewritten as `pytensor.function([x], y)` rewrites it: its FunctionGraph (with
    its Supervisor) through the default mode's rewriter; the rewritten FunctionGraph."""
    from pytensor.compile.mode import get_default_mode

    fgraph = pytensor_function_graph(x, y)
    get_default_mode().optimizer.rewrite(fgraph)
    return fgraph


def pytensor_timer(n: int) -> Callable[[], tuple[float, float]] | None:
    try:
        import pytensor.tensor as pt
    except Exception:  # not installed, or broken install
        return None

    def run() -> float:
        x = pt.dvector("x")
        y = x
        for i in range(n):
            y = pt.tanh(y) * 0.999 if i % 2 == 0 else y * 1.0001 + 0.5
        cpu, start = time.process_time(), time.perf_counter()
        pytensor_rewrite(x, y)
        return time.perf_counter() - start, time.process_time() - cpu

    return run


def pytensor_version() -> str:
    import pytensor

    return str(pytensor.__version__)


def median_time(timer: Callable[[], tuple[float, float]], repeats: int
                ) -> tuple[float, float]:
    """Median wall-clock and median CPU seconds over `repeats` runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        gc.collect()
        wall, cpu = timer()
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def _failure(timer: Callable[[], tuple[float, float]] | None) -> str | None:
    """Run `timer` once, untimed: None when it works, else its error in one line."""
    try:
        if timer is not None:
            timer()
    except Exception as exc:  # noqa: BLE001 - a failing reference must not stop us
        return f"{type(exc).__name__}: {str(exc).strip()[:120]}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--no-pytensor", action="store_true", help="time workbench only")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    args = parser.parse_args()
    sizes = args.sizes or ([100, 200, 1000] if args.quick else [500, 1000, 5000])
    repeats = args.repeats or (1 if args.quick else 3)

    have_pytensor = not args.no_pytensor and pytensor_timer(1) is not None
    workbench_timer(sizes[0])()  # untimed warm-up
    pt_error: str | None = None
    if have_pytensor:
        pt_error = _failure(pytensor_timer(sizes[0]))  # untimed warm-up

    print(f"rewriting time, median of {repeats} (PyTensor: one beyond N=1000): workbench's "
          f"FAST_RUN rewriter (rewrite_graph(mode='FAST_RUN'), the rewriter its function "
          f"runs)" + (f"; PyTensor {pytensor_version()}: its default mode's rewriter "
                      f"(get_default_mode().optimizer, as pytensor.function runs it, on a "
                      f"FunctionGraph with its Supervisor)" if have_pytensor else ""))
    rows = []
    for n in sizes:
        wb_wall, wb_cpu = median_time(workbench_timer(n), repeats)
        pt_wall = pt_cpu = None
        if have_pytensor and pt_error is None:
            # PyTensor is slow on big chains: one repeat beyond 1000 nodes
            pt_timer = pytensor_timer(n)
            assert pt_timer is not None
            try:
                pt_wall, pt_cpu = median_time(pt_timer, repeats if n <= 1000 else 1)
            except Exception as exc:  # noqa: BLE001 - a failing reference must not stop us
                pt_error = f"{type(exc).__name__}: {str(exc).strip()[:120]}"
        rows.append((n, wb_wall, wb_cpu, pt_wall, pt_cpu))
        print(f"N={n}: workbench {wb_wall:.3f} s wall, {wb_cpu:.3f} s cpu"
              + (f"; pytensor {pt_wall:.3f} s wall, {pt_cpu:.3f} s cpu" if pt_wall else ""),
              flush=True)

    print()
    print(f"{'N':>6}  {'workbench wall':>14}  {'cpu':>7}  {'pytensor wall':>13}  {'cpu':>7}  "
          f"{'speedup wall':>12}  {'cpu':>6}")
    for n, wb_wall, wb_cpu, pt_wall, pt_cpu in rows:
        if pt_wall is not None and pt_cpu is not None:
            pt_text = f"{pt_wall:13.3f}  {pt_cpu:7.3f}  {pt_wall / wb_wall:11.1f}x  " \
                      f"{pt_cpu / wb_cpu:5.1f}x"
        else:
            pt_text = f"{'failed' if pt_error else '-':>13}  {'-':>7}  {'-':>12}  {'-':>6}"
        print(f"{n:6d}  {wb_wall:14.3f}  {wb_cpu:7.3f}  {pt_text}")
    if pt_error:
        print(f"\npytensor: failed: {pt_error}")
    first, last = rows[0], rows[-1]
    print(f"\nworkbench time(N={last[0]}) / time(N={first[0]}): wall {last[1] / first[1]:.1f}, "
          f"cpu {last[2] / first[2]:.1f} (N grows {last[0] / first[0]:.0f}x)")
    if first[3] and last[3]:
        print(f"pytensor  time(N={last[0]}) / time(N={first[0]}): wall {last[3] / first[3]:.1f}, "
              f"cpu {last[4] / first[4]:.1f}")


if __name__ == "__main__":
    main()
