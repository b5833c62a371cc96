"""The quick start: build a small graph, print it, compile it, run it on generated data.

Run with `workbench demo` (or `python -m workbench.examples.quickstart`).
"""

from __future__ import annotations

import numpy as np

import workbench as wb
import workbench.tensor as wt


def build() -> tuple[list[wb.Variable], wb.Variable]:
    """`exp(x) * y + x ** 2 / (1 + y * y) - tanh(x * y)` over a matrix x and a vector y."""
    x = wt.dmatrix("x")
    y = wt.dvector("y")
    z = wt.exp(x) * y + x**2 / (1 + y * y) - wt.tanh(x * y)
    z.name = "z"
    return [x, y], z


def main(rows: int = 3, cols: int = 4, seed: int = 0) -> np.ndarray:
    inputs, z = build()
    print("The graph (dprint):")
    wb.dprint(z, print_type=True)
    print("\nAs a formula (pprint):")
    print("  z =", wb.pprint(z))

    fn = wb.function(inputs, z, name="quickstart")
    rng = np.random.default_rng(seed)
    x_value = rng.standard_normal((rows, cols))
    y_value = rng.standard_normal(cols)
    result = fn(x_value, y_value)

    expected = (np.exp(x_value) * y_value + x_value**2 / (1 + y_value * y_value)
                - np.tanh(x_value * y_value))
    print(f"\nCompiled with the {fn.maker.linker_name!r} linker; inputs x{x_value.shape}, "
          f"y{y_value.shape}; result:")
    print(np.array2string(result, precision=4))
    print(f"\nmatches NumPy: {np.allclose(result, expected)}")
    return result


if __name__ == "__main__":
    main()
