"""How the layered layout (`workbench.inspector.layout`) scales with graph size.

Random graphs of the differential tests (`workbench.testing.random_graphs`, seeded)
are drawn until each target size (DiGraph nodes: Variables and Applies) is passed;
`layout` and `to_svg` are timed on each, median of repeats, wall-clock and CPU time.
The growth ratio time(largest) / time(smallest) against the size ratio says whether
the layout stays near-linear. What a class needs is "seconds at most" at 200 nodes.

    python benchmarks/bench_layout.py            # about 50, 100, 200, 400 nodes
    python benchmarks/bench_layout.py --quick    # about 50 and 200 nodes, one repeat
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def graph_of_size(target: int):
    from workbench.inspector import to_networkx
    from workbench.testing.random_graphs import RngChooser, generate

    best = None
    for seed in range(400):
        rg = generate(RngChooser(seed), max_steps=max(8, target // 2))
        g = to_networkx(rg.symbolic()[1])
        if best is None or abs(len(g) - target) < abs(len(best) - target):
            best = g
        if abs(len(g) - target) <= target // 10:
            return g
    return best


def timed(fn, repeats: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        cpu, start = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*")
    args = parser.parse_args()
    from workbench.inspector import layout, to_svg

    sizes = args.sizes or ([50, 200] if args.quick else [50, 100, 200, 400])
    repeats = 1 if args.quick else 5
    rows = []
    print("| nodes | edges | layout wall s | layout CPU s | to_svg wall s |")
    print("|---:|---:|---:|---:|---:|")
    for size in sizes:
        g = graph_of_size(size)
        wall, cpu = timed(lambda g=g: layout(g), repeats)
        svg_wall, _ = timed(lambda g=g: to_svg(g), repeats)
        rows.append((len(g), cpu))
        print(f"| {len(g)} | {g.number_of_edges()} | {wall:.3f} | {cpu:.3f} | {svg_wall:.3f} |")
    (n0, t0), (n1, t1) = rows[0], rows[-1]
    print(f"\nnodes x{n1 / n0:.1f} -> layout CPU time x{t1 / max(t0, 1e-9):.1f}")


if __name__ == "__main__":
    main()
