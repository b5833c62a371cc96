"""Compilation modes: which rewrites to apply and which linker to run the graph with.

A `Mode` pairs a linker name ("py", "c", "gpu", or None for the fastest one
available) with a rewriter (None, or a callable applied to the FunctionGraph
before linking). Modes are registered by name; `get_mode` accepts a name or a
Mode. The standard names: FAST_RUN (every rewrite pass, the fastest linker available:
"c" with a C compiler), FAST_COMPILE (merge and canonicalize only, Python linker)
and DEBUG (FAST_RUN's rewrites, each step checked numerically; every node run through
perform and C and checked by the "debug" linker, link/c/debug.py). Their rewriter is a
`RewriteQuery` of the rewrite database (`workbench.core.rewrite.db`, re-exported here);
`Mode.rewrite` returns the RewriteTrace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.core import dtypes
from workbench.core.link.debugmode import StepChecker
from workbench.core.link.vm import Linker, VMLinker
from workbench.core.rewrite.db import RewriteQuery, apply_rewriter, register_mode_rewriter
from workbench.core.rewrite.rules.transfer import set_device_computes

__all__ = [
    "LinkerUnavailableError", "Mode", "RewriteQuery", "available_linkers", "default_linker",
    "get_default_mode", "get_linker",
    "get_mode", "register_linker", "register_mode", "registered_modes",
]  # fmt: skip


class LinkerUnavailableError(NotImplementedError):
    """The requested linker is known but not built (yet) or cannot run here."""


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
_default_mode_name = "FAST_RUN"


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
    return _modes[_default_mode_name]


def get_mode(name_or_mode: str | Mode | None = None) -> Mode:
    """The Mode of that name (None: the default, FAST_RUN), or the Mode itself."""
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


# -- linkers ---------------------------------------------------------------------

def _c_linker() -> Linker:
    from workbench.core.link.c.compiler import CompilerUnavailableError, has_compiler

    if not has_compiler():
        from workbench.core.link.c.compiler import compiler_info

        try:
            compiler_info()
        except CompilerUnavailableError as exc:
            raise LinkerUnavailableError(f"linker 'c' is unavailable: {exc}") from None
    import workbench.core.link.c.ops  # noqa: F401  (registers the C of the library)
    from workbench.core.link.c.linker import CLinker

    return CLinker()


def _c_available() -> bool:
    from workbench.core.link.c.compiler import has_compiler

    available = has_compiler()
    if not available and not _warned_no_compiler:
        _warn_no_compiler()
    return available


_warned_no_compiler = False


def _warn_no_compiler() -> None:
    global _warned_no_compiler
    import warnings

    _warned_no_compiler = True
    warnings.warn("no working C compiler: the default linker falls back to 'py' (set CC to a "
                  "C compiler to use the faster 'c' linker)", RuntimeWarning, stacklevel=4)


def _debug_linker() -> Linker:
    # DEBUG mode's linker: every node checked, through perform and (with a compiler) C
    from workbench.core.link.c.debug import DebugLinker

    return DebugLinker()


#: name -> factory returning a fresh Linker, or None when the linker is not built yet.
_linkers: dict[str, Callable[[], Linker] | None] = {"py": VMLinker, "c": _c_linker,
                                                     "gpu": None, "debug": _debug_linker}
#: Linkers whose factory exists but that need a check at first use (a C compiler).
_availability_checks: dict[str, Callable[[], bool]] = {"c": _c_available}
_availability: dict[str, bool] = {}


def _is_available(name: str) -> bool:
    if _linkers.get(name) is None:
        return False
    check = _availability_checks.get(name)
    if check is None:
        return True
    if name not in _availability:
        _availability[name] = check()
    return _availability[name]
#: Linkers that check rather than run fast (not offered by available_linkers).
_checking_linkers = {"debug"}
#: Order in which linker=None picks the fastest available linker (the GPU linker is
#: only used when asked for: transfers make it slower for small graphs).
_linker_preference = ["c", "py"]
_unavailable_reason = {
    "gpu": "the GPU linker is not built yet; use linker='py'",
}


def register_linker(name: str, factory: Callable[[], Linker] | None,
                    reason: str | None = None) -> None:
    """Register (or, with factory None, mark unavailable) the linker `name`."""
    _linkers[name] = factory
    _availability.pop(name, None)
    if factory is None:
        _unavailable_reason[name] = reason or f"the {name!r} linker is not available"
    else:
        _unavailable_reason.pop(name, None)


def registered_linkers() -> list[str]:
    """Names of every registered linker, whether it can be used here or not."""
    return list(_linkers)


def available_linkers() -> list[str]:
    """Names of the linkers that can be used now, the one linker=None picks first."""
    ordered = [n for n in _linker_preference if n in _linkers]
    ordered += [n for n in _linkers if n not in ordered and n not in _checking_linkers]
    return [n for n in ordered if _is_available(n)]


def default_linker() -> str:
    """The linker used when none is named: the first available in order of preference."""
    for name in _linker_preference:
        if _is_available(name):
            return name
    return available_linkers()[0]


def get_linker(linker: str | Linker | None = None) -> Linker:
    """A fresh Linker for a name ("py", "c", "gpu"; None: the fastest available)."""
    if isinstance(linker, Linker):
        return linker.clone() if linker.fgraph is not None else linker
    if linker is None:
        return get_linker(default_linker())
    if not isinstance(linker, str):
        raise TypeError(f"linker must be a linker name or a Linker, got {linker!r}")
    if linker not in _linkers:
        raise ValueError(f"unknown linker {linker!r}; known linkers: {', '.join(_linkers)}")
    factory = _linkers[linker]
    if factory is None:
        raise LinkerUnavailableError(
            f"linker {linker!r} is unavailable: {_unavailable_reason[linker]} "
            f"(available: {', '.join(available_linkers())})"
        )
    return factory()


# -- the GPU linker: registered here, torch imported only when it is first used ---------


def _gpu_linker(**options: Any) -> Linker:
    if not _gpu_available():
        raise LinkerUnavailableError(f"linker 'gpu' is unavailable: {_unavailable_reason['gpu']}")
    from workbench.core.link.gpu import GpuLinker

    return GpuLinker(**options)


def _gpu_available() -> bool:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        _unavailable_reason["gpu"] = "PyTorch is not installed (pip install 'workbench[gpu]')"
        return False
    return True


def _gpu_transfer(var: Any, target: str) -> Any:
    """x.transfer("gpu") / ("cpu"): the transfer Ops of the tensor layer (no torch needed)."""
    if target not in ("gpu", "cuda", "device", "cpu", "host"):
        return None
    from workbench.core.tensor.transfer import transfer

    return transfer(var, target)


def _gpu_computes(op: Any) -> bool:
    """Whether the GPU linker lowers `op` to torch (asked by the transfer rewrites; the
    lowerings are registered by importing the GPU package, which imports torch)."""
    if not _gpu_available():
        return False
    import workbench.core.link.gpu  # noqa: F401  (registers the lowerings)
    from workbench.core.link.gpu.registry import lowering_for

    return lowering_for(op) is not None


register_linker("gpu", _gpu_linker)
set_device_computes(_gpu_computes)
_availability_checks["gpu"] = _gpu_available
register_mode("GPU", Mode(linker="gpu", rewriter=RewriteQuery(("fast_run",)), name="GPU"))
from workbench.core.graph.basic import register_transfer  # noqa: E402

register_transfer(_gpu_transfer)


# -- the backends' dtypes: declared when first asked for (listing them needs no import) --


def _declare_c_dtypes() -> None:
    import workbench.core.link.c.types  # noqa: F401  (declares backend "c")


def _declare_gpu_dtypes() -> None:
    from workbench.core.link.gpu.device import resolve_device
    from workbench.core.link.gpu.dtype_support import register_torch_dtypes

    register_torch_dtypes(resolve_device(None))  # the device a GpuLinker() runs on


dtypes.declare_backend_later("c", _declare_c_dtypes)
dtypes.declare_backend_later("gpu", _declare_gpu_dtypes, available=_gpu_available)
