"""The cost of a call as a count of the Python lines it executes: deterministic, so a
test can check how work grows (linear, not quadratic; a step of a trace, not a replay)
on any machine, loaded or idle, where a timing would not be."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["lines_executed"]


def lines_executed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """(fn(*args, **kwargs), the number of Python source lines it executed, in every
    function it called). Code in C counts nothing: compare calls doing the same kind of
    work at two sizes, not different kinds of work."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn(*args, **kwargs)
    finally:
        sys.settrace(previous)
    return result, count
