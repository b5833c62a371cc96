"""Gradient-control Ops: the identity in the forward pass, a changed gradient backward.

`zero_grad(x)` / `consider_constant(x)` (zero gradient), `disconnected_grad(x)`
(the cost counts as not depending on x here) and `grad_clip(x, lower, upper)`.
They are tensor Ops (the GPU linker lowers them, graph files name them), so they
live in the tensor layer; `workbench.core.grad` re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.type import disconnected_type
from workbench.core.tensor.identity_ops import TensorIdentity
from workbench.core.tensor.join import float_zeros_like
from workbench.core.tensor.math import clip

__all__ = [
    "DisconnectedGrad", "GradClip", "IdentityGradOp", "ZeroGrad", "consider_constant",
    "disconnected_grad", "grad_clip", "zero_grad",
]  # fmt: skip


class IdentityGradOp(TensorIdentity):
    """Identity on tensors; subclasses only change the gradient."""

    abstract = True

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        return [eval_points[0]]


class ZeroGrad(IdentityGradOp):
    """Identity whose gradient is zero: the value is used but not trained through."""

    __props__ = ()

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        return [float_zeros_like(inputs[0])]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        return [None if eval_points[0] is None else float_zeros_like(inputs[0])]


class DisconnectedGrad(IdentityGradOp):
    """Identity through which the cost counts as not depending on the input at all."""

    __props__ = ()

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        return [disconnected_type()]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[False]]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        return [None]


class GradClip(IdentityGradOp):
    """Identity whose incoming gradient is clipped to [lower, upper] on the way back."""

    __props__ = ("lower", "upper")

    def __init__(self, lower: float, upper: float) -> None:
        lower, upper = float(lower), float(upper)
        if not lower <= upper:
            raise ValueError(f"grad_clip needs lower <= upper, got lower={lower}, upper={upper}")
        self.lower = lower
        self.upper = upper

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        return [clip(output_grads[0], self.lower, self.upper)]


def zero_grad(x: Any) -> Variable:
    """`x` itself in the forward pass; its gradient is zero (the path still counts as connected)."""
    return ZeroGrad()(x)


def consider_constant(x: Any) -> Variable:
    """`x` treated as a constant by `grad` (zero gradient); the per-call alternative is
    ``grad(..., consider_constant=[x])``, which also makes paths through `x` disconnected."""
    return ZeroGrad()(x)


def disconnected_grad(x: Any) -> Variable:
    """`x` itself in the forward pass; `grad` treats the cost as not depending on `x` here."""
    return DisconnectedGrad()(x)


def grad_clip(x: Any, lower: float, upper: float) -> Variable:
    """`x` itself in the forward pass; the gradient flowing back through it is clipped."""
    return GradClip(lower, upper)(x)
