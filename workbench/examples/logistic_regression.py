"""Logistic regression: the mean cross-entropy of sigmoid(X @ w + b) against labels y."""

from __future__ import annotations

import workbench.tensor as wt
from workbench.examples import GraphSource


def build_source(n_features: int = 20) -> GraphSource:
    x = wt.dmatrix("X")
    y = wt.dvector("y")
    w = wt.dvector("w")
    b = wt.dscalar("b")
    p = wt.sigmoid(x @ w + b)
    p.name = "p"
    cost = -(y * wt.log(p) + (1 - y) * wt.log(1 - p)).mean()
    cost.name = "cost"
    return GraphSource(
        inputs=[x, y, w, b], outputs=[cost], name="logistic_regression",
        input_shapes={"X": (256, n_features), "y": (256,), "w": (n_features,), "b": ()},
    )
