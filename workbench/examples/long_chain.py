"""A long elementwise chain `y = y * 1.0001 + 0.5`: fusion turns it into one loop."""

from __future__ import annotations

import workbench.tensor as wt
from workbench.examples import GraphSource


def build_source(length: int = 200) -> GraphSource:
    x = wt.dvector("x")
    y = x
    for _ in range(length):
        y = y * 1.0001 + 0.5
    y.name = "y"
    return GraphSource(inputs=[x], outputs=[y], name="long_chain",
                       input_shapes={"x": (100_000,)})
