"""DEBUG mode: every rewrite step is checked by evaluating the graph before and after it.

The graph's inputs get random values of their types (unknown dimensions become
2 or 3); after each step the rewritten graph is evaluated on the same values
and compared with the previous step's values through `values_eq_approx`. The
first step that changes a value raises `RewriteCheckError` naming the rewrite,
its source and both values.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from workbench.core.graph.fg import FunctionGraph

__all__ = ["RewriteCheckError", "StepChecker", "random_value"]


class RewriteCheckError(AssertionError):
    """A rewrite step changed the values the graph computes."""


def random_value(var_type: Any, rng: np.random.Generator, unknown: tuple[int, ...] = (2, 3)
                 ) -> Any:
    """A random value of a TensorType: values in (0.1, 1) for floats, 1..4 for ints."""
    from workbench.core.tensor.type import TensorType

    if not isinstance(var_type, TensorType):
        raise TypeError(f"DEBUG mode cannot make random values of type {var_type}")
    shape = tuple(s if s is not None else unknown[axis % len(unknown)]
                  for axis, s in enumerate(var_type.shape))
    dtype = np.dtype(var_type.dtype)
    if dtype.kind == "b":
        value = rng.random(shape) > 0.5
    elif dtype.kind in "iu":
        value = rng.integers(1, 5, size=shape)
    elif dtype.kind == "c":
        value = rng.uniform(0.1, 1.0, shape) + 1j * rng.uniform(0.1, 1.0, shape)
    else:
        value = rng.uniform(0.1, 1.0, shape)
    return var_type.filter(np.asarray(value).astype(dtype), strict=False)


def _evaluate(fgraph: FunctionGraph, values: list[Any]) -> list[Any]:
    """The outputs of `fgraph` on copies of `values`, computed node by node in the graph's
    own order (which honours the DestroyHandler's orderings for inplace Ops)."""
    from workbench.core.graph.basic import Constant

    storage: dict[Any, Any] = {}
    for var, value in zip(fgraph.inputs, values):
        storage[var] = np.copy(value) if isinstance(value, np.ndarray) else value
    for node in fgraph.toposort():
        args = [v.data if isinstance(v, Constant) else storage[v] for v in node.inputs]
        cells: list[list[Any]] = [[None] for _ in node.outputs]
        node.op.perform(node, args, cells)
        for var, cell in zip(node.outputs, cells):
            storage[var] = cell[0]
    result = []
    for out in fgraph.outputs:
        value = out.data if isinstance(out, Constant) else storage[out]
        result.append(np.copy(value) if isinstance(value, np.ndarray) else value)
    return result


class StepChecker:
    """A RewriteTrace step hook comparing the graph's values before and after each step."""

    def __init__(self, fgraph: FunctionGraph, seed: int = 0) -> None:
        self.inputs: list[Any] | None = None
        self.reference: list[Any] | None = None
        self.disabled_reason: str | None = None
        rng = np.random.default_rng(seed)
        for unknown in ((2, 3), (3, 3)):
            try:
                values = [random_value(v.type, rng, unknown) for v in fgraph.inputs]
                self.reference = _evaluate(fgraph, values)
                self.inputs = values
                break
            except Exception as exc:  # no valid random inputs: this graph is not checked
                self.disabled_reason = f"{type(exc).__name__}: {exc}"
        if self.inputs is not None:
            self.disabled_reason = None
        else:
            warnings.warn(f"DEBUG mode cannot check the rewrites of this graph: no random "
                          f"inputs could evaluate it ({self.disabled_reason})", UserWarning,
                          stacklevel=4)
        self.checked = 0

    def __call__(self, trace: Any, step: Any, fgraph: FunctionGraph) -> None:
        if self.inputs is None or self.reference is None or not step.changed:
            return
        try:
            values = _evaluate(fgraph, self.inputs)
        except Exception as exc:
            raise RewriteCheckError(
                f"after step {step.index} ({step.rewrite}, defined at {step.source}) the graph "
                f"can no longer be evaluated: {type(exc).__name__}: {exc}") from exc
        for k, (out, before, after) in enumerate(zip(fgraph.outputs, self.reference, values)):
            if not out.type.values_eq_approx(before, after):
                raise RewriteCheckError(
                    f"rewrite {step.rewrite!r} (step {step.index}, pass {step.pass_}, defined "
                    f"at {step.source}) changed output {k} ({out}):\n  before: {before!r}\n"
                    f"  after:  {after!r}")
        self.reference = values
        self.checked += 1
