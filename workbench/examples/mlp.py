"""A 784-256-10 MLP training step: tanh hidden layer, softmax cross-entropy, SGD updates
on shared weights (batch 128 by default)."""

from __future__ import annotations

import numpy as np

import workbench as wb
import workbench.tensor as wt
from workbench.examples import GraphSource


def build_source(n_in: int = 784, n_hidden: int = 256, n_out: int = 10, batch: int = 128,
                 learning_rate: float = 0.1, dtype: str = "float64", seed: int = 0
                 ) -> GraphSource:
    rng = np.random.default_rng(seed)
    x = wt.tensor(dtype, shape=(None, n_in), name="x")
    labels = wt.tensor(dtype, shape=(None, n_out), name="labels")  # one-hot rows
    w1 = wb.shared((rng.standard_normal((n_in, n_hidden)) * 0.01).astype(dtype), name="W1")
    b1 = wb.shared(np.zeros(n_hidden, dtype=dtype), name="b1")
    w2 = wb.shared((rng.standard_normal((n_hidden, n_out)) * 0.01).astype(dtype), name="W2")
    b2 = wb.shared(np.zeros(n_out, dtype=dtype), name="b2")
    hidden = wt.tanh(x @ w1 + b1)
    hidden.name = "hidden"
    probabilities = wt.softmax(hidden @ w2 + b2, axis=-1)
    probabilities.name = "probabilities"
    cost = -(labels * wt.log(probabilities)).sum(axis=1).mean()
    cost.name = "cost"
    params = [w1, b1, w2, b2]
    grads = wb.grad(cost, params)
    updates = [(p, p - learning_rate * g) for p, g in zip(params, grads)]
    return GraphSource(
        inputs=[x, labels], outputs=[cost], name="mlp", updates=updates,
        input_shapes={"x": (batch, n_in), "labels": (batch, n_out)},
    )
