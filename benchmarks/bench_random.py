"""Per-draw overhead of a random draw: the generator advanced in place against a copy per draw.

A compiled function drawing one value (``normal(0, 1)``, size ()) and 1000 values from a
RandomStream, on the py and C linkers, called with no inputs:

- `inplace`: the default (the draw advances the shared generator, which the call updates,
  in place: random/op.py, the inplace pass);
- `copy`: the same function with the inplace pass excluded (each draw copies the
  generator first, as every draw did before);
- `numpy`: ``Generator.normal`` called directly (the floor);
- `pytensor`: the same graph compiled by PyTensor's default mode (when installed).

The `loop` rows time a `scan` of `STEPS` steps drawing one ``normal(0, 1)`` per step from
the generator it carries: `inplace` advances that generator in place at every step (the
loop copies the outer one once per call), `copy` copies it at every step; `numpy` is a
Python loop of the same draws.

Implementations take turns call by call in one process (a load spike hits all alike);
each row gives the median wall and process-CPU microseconds per call over the repeats,
and the per-draw overhead `copy - inplace`. The C rows are of the final -O3 code:
workbench's background builds are waited for before timing
(wb_bench.common.finish_background_builds).

    python benchmarks/bench_random.py [--calls 2000] [--repeats 7] [--no-pytensor]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

for _path in (Path(__file__).resolve().parent.parent, Path(__file__).resolve().parent):
    sys.path.insert(0, str(_path))  # workbench, and wb_bench

import numpy as np  # noqa: E402
from wb_bench.common import finish_background_builds  # noqa: E402


def _workbench(size: tuple[int, ...], linker: str, inplace: bool) -> Callable[[], object]:
    import workbench as wb

    srng = wb.random.RandomStream(seed=0)
    mode = wb.Mode(linker=linker, rewriter=wb.core.compile.mode.RewriteQuery(("fast_run",)))
    if not inplace:
        mode = mode.excluding("inplace")
    f = wb.function([], srng.normal(0.0, 1.0, size=size), mode=mode)
    drawing = [n.op.inplace for n in f.maker.fgraph.apply_nodes if hasattr(n.op, "method")]
    assert drawing == [inplace], drawing
    return f


STEPS = 100


def _workbench_loop(linker: str, inplace: bool) -> Callable[[], object]:
    """A loop of STEPS steps, one draw per step from the generator it carries."""
    import workbench.tensor as wt

    import workbench as wb
    from workbench.core.random.op import RandomVariable
    from workbench.core.scan import Scan

    rng = wb.shared(np.random.default_rng(0), name="rng")
    x = wt.dvector("x")

    def step(xt):
        d = wb.random.normal(0.0, 1.0, size=(), rng=rng)
        return xt + d, {rng: d.owner.outputs[0]}

    ys, updates = wb.scan(step, sequences=x, name="draws")
    mode = wb.Mode(linker=linker, rewriter=wb.core.compile.mode.RewriteQuery(("fast_run",)))
    if not inplace:
        mode = mode.excluding("inplace")
    f = wb.function([x], ys, updates=updates, mode=mode)
    (loop,) = [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, Scan)]
    drawing = [n.op.inplace for n in loop.op.fgraph.apply_nodes
               if isinstance(n.op, RandomVariable)]
    assert drawing == [inplace], drawing
    zeros = np.zeros(STEPS)
    return lambda: f(zeros)


def _pytensor(size: tuple[int, ...]) -> Callable[[], object] | None:
    try:
        import pytensor
        from pytensor.tensor.random.utils import RandomStream
    except ImportError:
        return None
    import warnings

    with warnings.catch_warnings():  # its RandomStream is deprecated, still its default way
        warnings.simplefilter("ignore", FutureWarning)
        srng = RandomStream(seed=0)
    return pytensor.function([], srng.normal(0.0, 1.0, size=size))


def measure(fns: dict[str, Callable[[], object]], calls: int, repeats: int
            ) -> dict[str, tuple[float, float]]:
    """name -> (median wall µs, median CPU µs) per call, the functions taking turns."""
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    finish_background_builds()  # time workbench's final -O3 code
    for fn in fns.values():  # warm up
        for _ in range(50):
            fn()
    for _ in range(repeats):
        spent = {k: [0.0, 0.0] for k in fns}
        for _ in range(calls):
            for name, fn in fns.items():
                w0, c0 = time.perf_counter(), time.process_time()
                fn()
                spent[name][0] += time.perf_counter() - w0
                spent[name][1] += time.process_time() - c0
        for name, (w, c) in spent.items():
            wall[name].append(w / calls * 1e6)
            cpu[name].append(c / calls * 1e6)
    return {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in fns}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-pytensor", action="store_true")
    args = parser.parse_args(argv)
    print("c rows: workbench's final -O3 code (its background builds waited for)\n")
    print("| draw | linker | implementation | wall µs/call | CPU µs/call |")
    print("|---|---|---|---|---|")
    for size in ((), (1000,)):
        g = np.random.default_rng(0)
        for linker in ("py", "c"):
            fns: dict[str, Callable[[], object]] = {
                "inplace": _workbench(size, linker, True),
                "copy": _workbench(size, linker, False),
                "numpy": lambda g=g, size=size: g.normal(0.0, 1.0, size=size or None)}
            pt = None if args.no_pytensor or linker == "c" else _pytensor(size)
            if pt is not None:
                fns["pytensor"] = pt
            result = measure(fns, args.calls, args.repeats)
            for name, (w, c) in result.items():
                print(f"| normal{size} | {linker} | {name} | {w:.2f} | {c:.2f} |")
            saved_w = result["copy"][0] - result["inplace"][0]
            saved_c = result["copy"][1] - result["inplace"][1]
            print(f"| normal{size} | {linker} | copy - inplace | {saved_w:.2f} | "
                  f"{saved_c:.2f} |")
    g = np.random.default_rng(0)
    for linker in ("py", "c"):
        fns = {"inplace": _workbench_loop(linker, True), "copy": _workbench_loop(linker, False),
               "numpy": lambda g=g: [g.normal(0.0, 1.0) for _ in range(STEPS)]}
        result = measure(fns, max(args.calls // 20, 10), args.repeats)
        for name, (w, c) in result.items():
            print(f"| loop of {STEPS} normal() | {linker} | {name} | {w:.2f} | {c:.2f} |")
        saved_w = result["copy"][0] - result["inplace"][0]
        saved_c = result["copy"][1] - result["inplace"][1]
        print(f"| loop of {STEPS} normal() | {linker} | copy - inplace (per step) | "
              f"{saved_w / STEPS:.2f} | {saved_c / STEPS:.2f} |")


if __name__ == "__main__":
    main()
