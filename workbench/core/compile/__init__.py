"""Compiling graphs into callables: `function`, shared variables and modes."""

from workbench.core.compile.function import (
    Function,
    FunctionMaker,
    In,
    MissingInputError,
    Out,
    UnusedInputError,
    UnusedInputWarning,
    function,
)
from workbench.core.compile.mode import (
    LinkerUnavailableError,
    Mode,
    get_linker,
    get_mode,
    register_linker,
    register_mode,
)
from workbench.core.link.shared import SharedVariable, shared, shared_constructor

__all__ = [
    "Function", "FunctionMaker", "In", "LinkerUnavailableError", "MissingInputError", "Mode",
    "Out", "SharedVariable", "UnusedInputError", "UnusedInputWarning", "function",
    "get_linker", "get_mode", "register_linker", "register_mode", "shared",
    "shared_constructor",
]  # fmt: skip
