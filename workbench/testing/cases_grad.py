"""Catalogue cases of the gradient-control Ops: `ZeroGrad`, `DisconnectedGrad`, `GradClip`.

Each is the identity in the forward pass (the NumPy reference is a copy);
only the gradient differs, on purpose, so `Case.grad` gives that reason and
their gradients are checked by `tests/core/test_grad.py` instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.grad import consider_constant, disconnected_grad, grad_clip, zero_grad
from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]


def _copy(x: Any) -> Any:
    return np.array(x, copy=True)


CASES = [
    Case("zero_grad", zero_grad, _copy, (Arg((3, 4)),),
         grad="the gradient is zero by design (tested in test_grad.py)"),
    Case("zero_grad_0d", zero_grad, _copy, (Arg(()),),
         grad="the gradient is zero by design (tested in test_grad.py)"),
    Case("consider_constant", consider_constant, _copy, (Arg((2, 3, 2)),),
         grad="the gradient is zero by design (tested in test_grad.py)"),
    Case("disconnected_grad", disconnected_grad, _copy, (Arg((4,)),),
         grad="the cost counts as not depending on the input (tested in test_grad.py)"),
    Case("disconnected_grad_static", disconnected_grad, _copy, (Arg((2, 1), static=True),),
         grad="the cost counts as not depending on the input (tested in test_grad.py)"),
    Case("grad_clip", lambda x: grad_clip(x, -0.5, 0.5), _copy, (Arg((3, 2)),),
         grad="the gradient is clipped by design (tested in test_grad.py)"),
    Case("grad_clip_int", lambda x: grad_clip(x, -1, 1), _copy, (Arg((5,), dtype="int32"),),
         grad="integer input"),
]
