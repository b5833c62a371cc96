"""The quick start: build a small graph, print it, compile it, run it on generated data,
profile it and differentiate it, explaining the notation of what it prints.

Run with `workbench demo` (or `python -m workbench.examples.quickstart`).
"""

from __future__ import annotations

import textwrap

import numpy as np

import workbench as wb
import workbench.tensor as wt
from workbench.core.printing import fit_lines
from workbench.core.scalar.composite import Composite
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


#: What the printed graphs' notation means, shown for the marks a printed graph contains.
NOTATION = [
    ("[id ", "[id A]: a node's label; a label seen again (x [id C]) is the same value used "
             "again"),
    ("Elemwise{", "Elemwise{op}: op applied element by element, broadcasting its inputs"),
    ("Composite{", "Composite{...}: several elementwise ops fused into one loop; i0, i1, ... "
                   "are its inputs in the order listed below it"),
    ("inplace{", "inplace{0:2}: output 0 is written into the memory of input 2 (no new "
                 "array: that input is not needed afterwards); inplace alone means 0:0"),
    ("DimShuffle{", "DimShuffle{x,0}: a view with the axes rearranged; 'x' adds a "
                    "broadcastable axis of length 1 (here a vector seen as a row)"),
    ("TensorConstant{", "TensorConstant{[[1.]]}: a constant, its value in braces (a 1x1 "
                        "matrix: the 1 of 1 + y * y, shaped to broadcast against rows)"),
]


def notation(*texts: str) -> list[str]:
    """The NOTATION lines for the marks that occur in `texts` (printed graphs)."""
    return [line for mark, line in NOTATION if any(mark in text for text in texts)]


def gradient_reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d sum(z) / dx by hand: exp(x) y + 2 x / (1 + y^2) - (1 - tanh(x y)^2) y."""
    return np.exp(x) * y + 2 * x / (1 + y * y) - (1 - np.tanh(x * y) ** 2) * y


def main(rows: int = 3, cols: int = 4, seed: int = 0, calls: int = 20,
         width: int | None = None) -> np.ndarray:
    """Show the graph, how rewriting changed it, the result, where the time went, and the
    gradient with respect to x; with `width` (a terminal's columns, as `workbench demo`
    passes) every line is fitted to it."""

    def say(text: str) -> None:
        print(text if width is None else fit_lines(text, width))

    def paragraph(text: str) -> None:
        print(textwrap.fill(text, min(88, width or 88)))

    inputs, z = build()
    print("The graph (dprint):")
    say(wb.dprint(z, print_type=True, file="str"))
    print("\nAs a formula (pprint):")
    say(f"  z = {wb.pprint(z)}")

    fn = wb.function(inputs, z, name="quickstart")
    trace = fn.maker.rewrite_trace
    print(f"\nRewriting (FAST_RUN) took {len(trace)} steps:")
    print(trace.table(width))
    print(f"\nThe compiled graph ({len(fn.maker.fgraph.apply_nodes)} nodes):")
    compiled = wb.dprint(fn, file="str")
    say(compiled)
    print("How to read it:")
    for line in notation(compiled):
        print(textwrap.fill(line, min(88, width or 88), initial_indent="  ",
                            subsequent_indent="    "))

    rng = np.random.default_rng(seed)
    x_value = rng.standard_normal((rows, cols))
    y_value = rng.standard_normal(cols)
    result = fn(x_value, y_value)
    expected = (np.exp(x_value) * y_value + x_value**2 / (1 + y_value * y_value)
                - np.tanh(x_value * y_value))
    say(f"\nRan with the {fn.maker.linker_name!r} linker on x{x_value.shape}, "
        f"y{y_value.shape}; result:")
    print(np.array2string(result, precision=4))
    print(f"matches NumPy: {np.allclose(result, expected)}")

    stats = wb.profile(fn, x_value, y_value, calls=calls)
    summary = stats.summary()
    inside = summary["thunk_time"] / max(summary["total_time"], 1e-12)
    print()
    paragraph(f"Profile over {calls} calls: {summary['per_call'] * 1e6:.1f} us per call, "
              f"{inside * 100:.0f}% of it inside the nodes (the rest: the linker's loop and "
              "the Python call).")
    say("Where the time inside the nodes goes (each Op's share of it; the five largest):")
    for row in stats.by_op()[:5]:
        say(f"  {row.fraction * 100:5.1f}%  {row.calls:4d} calls  {row.name}")

    x = inputs[0]
    gx = wb.grad(z.sum(), x)
    grad_fn = wb.function(inputs, gx, name="quickstart_grad")
    built = len(wb.FunctionGraph(inputs, [gx]).apply_nodes)
    loops = sorted({str(node.op.scalar_op) for node in grad_fn.maker.fgraph.apply_nodes
                    if isinstance(getattr(node.op, "scalar_op", None), Composite)})
    print()
    paragraph(f"The gradient of sum(z) with respect to x: wb.grad builds {built} nodes (the "
              "chain rule, node by node, from the output back); rewritten and compiled, "
              f"{len(grad_fn.maker.fgraph.apply_nodes)} nodes, whose fused loops compute:")
    for loop in loops:
        say(f"  {loop}")
    by_hand = gradient_reference(x_value, y_value)
    print("By hand: exp(x) * y + 2 * x / (1 + y * y) - (1 - tanh(x * y) ** 2) * y;\n"
          f"the compiled gradient matches it: {np.allclose(grad_fn(x_value, y_value), by_hand)}")
    return result


if __name__ == "__main__":
    main()
