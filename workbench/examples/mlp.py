"""A 784-256-10 MLP training step: tanh hidden layer, softmax cross-entropy, SGD updates
on shared weights (batch 128 by default).

`initial_params` and `make_batch` give the weights and a batch of data; `numpy_step` is
the same training step with hand-written backpropagation in NumPy (the reference the
benchmarks and tests compare with).
"""

from __future__ import annotations

import numpy as np

import workbench as wb
import workbench.tensor as wt
from workbench.examples import GraphSource


def initial_params(n_in: int = 784, n_hidden: int = 256, n_out: int = 10,
                   dtype: str = "float64", seed: int = 0) -> list[np.ndarray]:
    """[W1, b1, W2, b2]: small random weights and zero biases."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n_in, n_hidden)) * 0.01).astype(dtype),
            np.zeros(n_hidden, dtype=dtype),
            (rng.standard_normal((n_hidden, n_out)) * 0.01).astype(dtype),
            np.zeros(n_out, dtype=dtype)]


def make_batch(batch: int = 128, n_in: int = 784, n_out: int = 10, dtype: str = "float64",
               seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A batch of inputs (standard normal) and one-hot labels."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n_in)).astype(dtype)
    labels = np.eye(n_out, dtype=dtype)[rng.integers(0, n_out, batch)]
    return x, labels


def build_source(n_in: int = 784, n_hidden: int = 256, n_out: int = 10, batch: int = 128,
                 learning_rate: float = 0.1, dtype: str = "float64", seed: int = 0
                 ) -> GraphSource:
    x = wt.tensor(dtype, shape=(None, n_in), name="x")
    labels = wt.tensor(dtype, shape=(None, n_out), name="labels")  # one-hot rows
    values = initial_params(n_in, n_hidden, n_out, dtype, seed)
    w1, b1, w2, b2 = (wb.shared(v, name=n) for v, n in zip(values, ("W1", "b1", "W2", "b2")))
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


def numpy_step(params: list[np.ndarray], x: np.ndarray, labels: np.ndarray,
               learning_rate: float = 0.1) -> np.ndarray:
    """One SGD step of the same MLP in NumPy, updating `params` in place; returns the cost
    before the update. Labels must be one-hot rows (so dcost/dlogits = p - labels)."""
    w1, b1, w2, b2 = params
    hidden = np.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    probabilities = exp / total
    log_p = shifted - np.log(total)
    cost = -(labels * log_p).sum(axis=1).mean()
    d_logits = (probabilities - labels) / x.shape[0]
    d_hidden = (d_logits @ w2.T) * (1 - hidden * hidden)
    w2 -= learning_rate * (hidden.T @ d_logits)
    b2 -= learning_rate * d_logits.sum(axis=0)
    w1 -= learning_rate * (x.T @ d_hidden)
    b1 -= learning_rate * d_hidden.sum(axis=0)
    return np.asarray(cost, dtype=x.dtype)
