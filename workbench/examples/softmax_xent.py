"""Softmax cross-entropy written the naive way; the stabilize rewrites make it safe."""

from __future__ import annotations

import workbench.tensor as wt
from workbench.examples import GraphSource


def build_source() -> GraphSource:
    logits = wt.dmatrix("logits")
    targets = wt.dmatrix("targets")
    cost = -(targets * wt.log(wt.softmax(logits, axis=-1))).sum(axis=-1).mean()
    cost.name = "cost"
    return GraphSource(inputs=[logits, targets], outputs=[cost], name="softmax_xent",
                       input_shapes={"logits": (64, 10), "targets": (64, 10)})
