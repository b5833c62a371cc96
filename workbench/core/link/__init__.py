"""Linkers: turn a FunctionGraph into a callable. `py` (the Python VM) lives in vm.py;
the C and GPU linkers will live in c/ and gpu/."""

from workbench.core.link.vm import (
    VM,
    Container,
    Linker,
    LoopVM,
    PyLinker,
    StackVM,
    VMLinker,
    annotate_thunk_error,
    copy_value,
    describe_value,
    may_share_memory,
)

__all__ = [
    "VM", "Container", "Linker", "LoopVM", "PyLinker", "StackVM", "VMLinker",
    "annotate_thunk_error", "copy_value", "describe_value", "may_share_memory",
]  # fmt: skip
