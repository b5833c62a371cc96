"""`log(1 + exp(x))`: overflows for large x as written; rewriting makes it a softplus-
like stable form (log1p), which is what the rewrite stepper shows step by step."""

from __future__ import annotations

import workbench.tensor as wt
from workbench.examples import GraphSource


def build_source() -> GraphSource:
    x = wt.dvector("x")
    y = wt.log(1 + wt.exp(x))
    y.name = "y"
    return GraphSource(inputs=[x], outputs=[y], name="unstable", input_shapes={"x": (1000,)})
