"""Compilation modes: which rewrites to apply and which linker to run the graph with.

A `Mode` pairs a linker name ("py", "c", "gpu", or None: `config.linker`, whose
default "auto" is the fastest one available) with a rewriter (None, or a callable
applied to the FunctionGraph before linking). Modes are registered by name;
`get_mode` accepts a name or a Mode (None: `config.mode`). Linker names are those of
the backend records (`backends.py`), which the linker functions below read.

The standard names: FAST_RUN (every rewrite pass, the fastest linker available:
"c" with a C compiler), FAST_COMPILE (merge and canonicalize only, Python linker)
and DEBUG (FAST_RUN's rewrites, each step checked numerically; every node run through
perform and C and checked by the "debug" linker, link/c/debug.py). Their rewriter is a
`RewriteQuery` of the rewrite database (`workbench.core.rewrite.db`, re-exported here);
`Mode.rewrite` returns the RewriteTrace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from workbench.core.compile.backends import (
    Backend,
    LinkerUnavailableError,
    available_backends,
    default_backend,
    get_backend,
    register_backend,
    registered_backends,
)
from workbench.core.link.debugmode import StepChecker
from workbench.core.link.vm import Linker
from workbench.core.rewrite.db import RewriteQuery, apply_rewriter, register_mode_rewriter

__all__ = [
    "LinkerUnavailableError", "Mode", "RewriteQuery", "available_linkers", "default_linker",
    "get_default_mode", "get_linker",
    "configured_linker", "get_mode", "register_linker", "register_mode", "registered_linkers",
    "registered_modes",
]  # fmt: skip


#: A rewriter transforms a FunctionGraph in place (or is an object with `.rewrite(fgraph)`).
Rewriter = Any


class Mode:
    """How to compile a graph: `linker` ("py", "c", "gpu", None or a Linker) and `rewriter`.

    `rewriter` is None (no rewrites), a callable `rewriter(fgraph)`, or an object
    with a `rewrite(fgraph)` method; it changes the graph in place.
    """

    def __init__(self, linker: str | Linker | None = "py", rewriter: Rewriter = None,
                 name: str | None = None) -> None:
        if linker is not None and not isinstance(linker, (str, Linker)):
            raise TypeError(f"Mode linker must be a linker name or a Linker, got {linker!r}")
        self.linker = linker
        self.rewriter = rewriter
        self.name = name

    def clone(self, **changes: Any) -> Mode:
        """A copy with some of `linker`, `rewriter`, `name` changed."""
        values = {"linker": self.linker, "rewriter": self.rewriter, "name": self.name}
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"Mode.clone got unknown arguments {sorted(unknown)}")
        values.update(changes)
        return Mode(**values)

    def rewrite(self, fgraph: Any) -> Any:
        """Apply this mode's rewriter (if any) to `fgraph` in place, then the passes every
        compilation needs (tagged `always`: protect_inputs, the casting pass), all under
        one RewriteTrace, which is returned."""
        return apply_rewriter(self.rewriter, fgraph, what=f"mode {self}")

    def including(self, *tags: str) -> Mode:
        """This mode with the rewrites of these tags (or names) added."""
        return self.clone(rewriter=_query_of(self).with_tags(include=tags), name=None)

    def excluding(self, *tags: str) -> Mode:
        """This mode without the rewrites of these tags (or names)."""
        return self.clone(rewriter=_query_of(self).with_tags(exclude=tags), name=None)

    def __repr__(self) -> str:
        if self.name is not None:
            return f"Mode({self.name!r})"
        return f"Mode(linker={self.linker!r}, rewriter={self.rewriter!r})"


def _query_of(mode: Mode) -> RewriteQuery:
    if not isinstance(mode.rewriter, RewriteQuery):
        raise TypeError(f"mode {mode} has no RewriteQuery rewriter to include/exclude from")
    return mode.rewriter


_modes: dict[str, Mode] = {}


def register_mode(name: str, mode: Mode) -> None:
    """Make `mode` available to `get_mode(name)` (replacing any mode of that name), and its
    rewriter to `rewrite_graph(..., mode=name)`."""
    if not isinstance(mode, Mode):
        raise TypeError(f"register_mode: expected a Mode, got {mode!r}")
    _modes[name] = mode
    register_mode_rewriter(name, mode.rewriter)


def registered_modes() -> list[str]:
    return list(_modes)


def get_default_mode() -> Mode:
    """The mode `config.mode` (or WORKBENCH_MODE) names: FAST_RUN unless set."""
    from workbench.config import config

    try:
        return get_mode(config.mode)
    except ValueError as exc:
        raise ValueError(f"config.mode (or WORKBENCH_MODE): {exc}") from None


def get_mode(name_or_mode: str | Mode | None = None) -> Mode:
    """The Mode of that name (None: the default, `config.mode`), or the Mode itself."""
    if name_or_mode is None:
        return get_default_mode()
    if isinstance(name_or_mode, Mode):
        return name_or_mode
    if isinstance(name_or_mode, str):
        mode = _modes.get(name_or_mode) or _modes.get(name_or_mode.upper())
        if mode is None:
            raise ValueError(
                f"unknown mode {name_or_mode!r}; known modes: {', '.join(sorted(_modes))}"
            )
        return mode
    raise TypeError(f"mode must be a mode name or a Mode, got {name_or_mode!r}")


# FAST_RUN links with the fastest linker available: "c" when a C compiler works, else
# "py" (with one warning).
register_mode("FAST_RUN", Mode(linker=None, rewriter=RewriteQuery(("fast_run",)),
                               name="FAST_RUN"))
register_mode("FAST_COMPILE", Mode(linker="py", rewriter=RewriteQuery(("fast_compile",)),
                                   name="FAST_COMPILE"))
register_mode("DEBUG", Mode(linker="debug", rewriter=RewriteQuery(("fast_run",), debug=True,
                                                                  step_checker=StepChecker),
                            name="DEBUG"))


# -- linkers: read from the backend records (backends.py) -------------------------


def register_linker(name: str, factory: Callable[..., Linker] | None,
                    reason: str | None = None) -> None:
    """Register (or, with factory None, mark unavailable for `reason`) the linker `name`:
    a backend record with only a linker (see `register_backend` for the whole record)."""
    try:
        record = get_backend(name)
    except ValueError:
        record = Backend(name, factory)
    if factory is None:
        why = reason or f"the {name!r} linker is not available"
        record = dataclasses.replace(record, linker=None, unavailable=lambda: why)
    elif record.linker is None:  # it was marked unavailable: it is available again
        record = dataclasses.replace(record, linker=factory, unavailable=lambda: None)
    else:
        record = dataclasses.replace(record, linker=factory)
    register_backend(record)


def registered_linkers() -> list[str]:
    """Names of every registered linker, whether it can be used here or not."""
    return registered_backends()


def available_linkers() -> list[str]:
    """Names of the linkers that can be used now, the one linker=None picks first."""
    return available_backends()


def default_linker() -> str:
    """The linker used when none is named: `config.linker` unless "auto", else the first
    available in order of preference."""
    return configured_linker() or default_backend()


def configured_linker() -> str | None:
    """The linker `config.linker` (or WORKBENCH_LINKER) names; None for "auto"."""
    from workbench.config import config

    return None if config.linker == "auto" else config.linker


def get_linker(linker: str | Linker | None = None) -> Linker:
    """A fresh Linker for a name ("py", "c", "gpu"; None: the default linker)."""
    if isinstance(linker, Linker):
        return linker.clone() if linker.fgraph is not None else linker
    if linker is None:
        return get_linker(default_linker())
    if not isinstance(linker, str):
        raise TypeError(f"linker must be a linker name or a Linker, got {linker!r}")
    return get_backend(linker).make_linker()


register_mode("GPU", Mode(linker="gpu", rewriter=RewriteQuery(("fast_run",)), name="GPU"))
