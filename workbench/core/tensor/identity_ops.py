"""`TensorIdentity`: the base of Ops that pass a tensor through unchanged.

Gradient-control Ops (`zero_grad`, `grad_clip`, ...) and the transfer Ops
(`ToDevice`, `ToHost`) are all the identity in the forward pass and differ only
in what they mean to `grad` or to a linker. The shared forward half lives here
once: one input, an output of the same Type that is a view of it, the same shape.
(The module is not called `identity`: that name is the elementwise `wt.identity`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.graph.op import Op
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["TensorIdentity"]


class TensorIdentity(Op):
    """The identity on one tensor; subclasses give it a meaning (gradient, placement)."""

    __props__: tuple[str, ...] = ()
    view_map = {0: [0]}  # noqa: RUF012 (the Op contract's class attribute)
    abstract = True

    def make_node(self, x: Any) -> Apply:  # type: ignore[override]
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = inputs[0]

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]
