"""Small helpers shared by the graph core: where user code created a node, and
the error raised when an optional method of a contract is not implemented."""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


class MethodNotDefined(NotImplementedError):
    """An optional method of the Type or Op contract is not implemented."""


class SourceLocation(NamedTuple):
    """The place in the user's code where a Variable was created."""

    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"


# Frames of these contract methods belong to Ops and Types (possibly the user's own
# Op class), not to the line of user code that built the graph.
_CONTRACT_FRAMES = frozenset(
    {"make_node", "make_variable", "__call__", "filter_variable", "convert_variable",
     "make_constant", "clone_with_new_inputs"}
)

# Capturing the user's line costs a short walk up the stack per Variable; it can be
# switched off (config.trace_user_code) for very large generated graphs.
capture_source_locations = True


def user_source_location(skip: int = 1) -> SourceLocation | None:
    """The first stack frame outside the workbench package (the user's own line)."""
    if not capture_source_locations:
        return None
    try:
        frame = sys._getframe(skip + 1)
    except ValueError:
        return None
    while frame is not None:
        filename = frame.f_code.co_filename
        if (
            not filename.startswith(_PACKAGE_DIR)
            and not filename.startswith("<frozen")
            and frame.f_code.co_name not in _CONTRACT_FRAMES
        ):
            return SourceLocation(filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None
