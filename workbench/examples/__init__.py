"""Bundled example graphs, used by the README's quick start, the CLI and the tutorials.

Each example module has a `build() -> GraphSource`; `get_example(name)` returns a
fresh graph, `EXAMPLES` lists the names with one-line descriptions.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from workbench.core.graph.basic import Variable


@dataclass
class GraphSource:
    """A graph to work on: inputs, outputs, updates (training steps) and input shapes
    to generate data for (name -> shape) when profiling."""

    inputs: list[Variable]
    outputs: list[Variable]
    name: str
    updates: list[tuple[Any, Any]] = field(default_factory=list)
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    description: str = ""


#: name -> (module, one-line description)
EXAMPLES: dict[str, tuple[str, str]] = {
    "logistic_regression": ("logistic_regression",
                            "logistic regression: cross-entropy cost of sigmoid(X @ w + b)"),
    "mlp": ("mlp", "a 784-256-10 MLP training step (tanh, softmax cross-entropy, SGD updates)"),
    "softmax_xent": ("softmax_xent", "softmax cross-entropy written naively (rewritten stably)"),
    "unstable": ("unstable", "log(1 + exp(x)) - a numerically unstable expression"),
    "long_chain": ("long_chain", "a long elementwise chain y = y * 1.0001 + 0.5 (fusion)"),
    "quickstart": ("quickstart", "exp(x) * y + x ** 2 / (1 + y * y) - tanh(x * y)"),
}


def get_example(name: str) -> GraphSource:
    """A freshly built example graph; KeyError naming the known examples otherwise."""
    if name not in EXAMPLES:
        raise KeyError(f"unknown example {name!r}; known examples: {', '.join(EXAMPLES)}")
    module = importlib.import_module(f"workbench.examples.{EXAMPLES[name][0]}")
    source = module.build_source()
    source.description = EXAMPLES[name][1]
    return source
