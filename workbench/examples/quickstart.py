"""The quick start: build a small graph, print it, compile it, run it on generated data.

Run with `workbench demo` (or `python -m workbench.examples.quickstart`).
"""

from __future__ import annotations

import numpy as np

import workbench as wb
import workbench.tensor as wt
from workbench.examples import GraphSource


def build() -> tuple[list[wb.Variable], wb.Variable]:
    """`exp(x) * y + x ** 2 / (1 + y * y) - tanh(x * y)` over a matrix x and a vector y."""
    x = wt.dmatrix("x")
    y = wt.dvector("y")
    z = wt.exp(x) * y + x**2 / (1 + y * y) - wt.tanh(x * y)
    z.name = "z"
    return [x, y], z


def build_source() -> GraphSource:
    inputs, z = build()
    return GraphSource(inputs=inputs, outputs=[z], name="quickstart",
                       input_shapes={"x": (3, 4), "y": (4,)})


def main(rows: int = 3, cols: int = 4, seed: int = 0, calls: int = 20) -> np.ndarray:
    """Show the graph, how rewriting changed it, the result, and where the time went."""
    inputs, z = build()
    print("The graph (dprint):")
    wb.dprint(z, print_type=True)
    print("\nAs a formula (pprint):")
    print("  z =", wb.pprint(z))

    fn = wb.function(inputs, z, name="quickstart")
    trace = fn.maker.rewrite_trace
    print(f"\nRewriting (FAST_RUN) took {len(trace)} steps:")
    print(trace.table())
    print(f"\nThe compiled graph ({len(fn.maker.fgraph.apply_nodes)} nodes):")
    wb.dprint(fn)

    rng = np.random.default_rng(seed)
    x_value = rng.standard_normal((rows, cols))
    y_value = rng.standard_normal(cols)
    result = fn(x_value, y_value)
    expected = (np.exp(x_value) * y_value + x_value**2 / (1 + y_value * y_value)
                - np.tanh(x_value * y_value))
    print(f"\nRan with the {fn.maker.linker_name!r} linker on x{x_value.shape}, "
          f"y{y_value.shape}; result:")
    print(np.array2string(result, precision=4))
    print(f"matches NumPy: {np.allclose(result, expected)}")

    stats = wb.profile(fn, x_value, y_value, calls=calls)
    summary = stats.summary()
    print(f"\nProfile over {calls} calls: {summary['per_call'] * 1e6:.1f} us per call, "
          f"{summary['thunk_time'] / max(summary['total_time'], 1e-12) * 100:.0f}% inside "
          "the nodes")
    for row in stats.by_op()[:5]:
        print(f"  {row.fraction * 100:5.1f}%  {row.calls:4d} calls  {row.name}")
    return result


if __name__ == "__main__":
    main()
