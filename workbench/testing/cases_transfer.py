"""Catalogue cases of the transfer family: `workbench.core.tensor.transfer`.

`ToDevice` and `ToHost` are the identity on values; the cases check that a
graph crossing to the device and back computes what NumPy does on every
linker, that the gradient moves back the other way, and that graph files
carry both Ops.
"""

from __future__ import annotations

from workbench.core.tensor.transfer import to_device_op, to_host_op
from workbench.testing.catalog import Arg, Case

CASES: list[Case] = [
    Case(name="to_device_and_back", build=lambda x: to_host_op(to_device_op(x) * 2.0),
         reference=lambda x: x * 2.0, args=(Arg((3, 4)),)),
    Case(name="to_host_of_a_sum", build=lambda x, y: to_host_op(to_device_op(x) + y),
         reference=lambda x, y: x + y, args=(Arg((2, 3)), Arg((3,)))),
]
