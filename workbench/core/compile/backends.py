"""Backends: one record per backend, which modes, `function` and the rest read.

A `Backend` says everything workbench needs to know about one way of running a
graph: its `name` (the `linker=` argument), the `linker` factory, why it cannot run
here (`unavailable`, None when it can), how to declare its dtypes (`declare_dtypes`,
called the first time they are asked for), the `transfer` function behind
`x.transfer(target)`, the `shared` constructor behind `shared(value, target=...)`,
which Ops its device computes (`computes`, asked by the transfer rewrites), the
`rewrite_tag` of the rewrites written for it (a function linked by it includes
them), and the `fast_call` hook that builds a whole-call path for a Function linked
by it. `register_backend(record)` is the one place a backend is added; the built-in
ones (py, c, gpu, and debug, DEBUG mode's checking linker) are declared at the
bottom of this module. Heavy imports (the C compiler probe, torch) happen only when
a record's functions are first called.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.core import dtypes
from workbench.core.graph.basic import register_transfer
from workbench.core.link.shared import shared_constructor
from workbench.core.link.vm import Linker, VMLinker
from workbench.core.rewrite.rules.transfer import set_device_computes
from workbench.core.tensor.transfer import DEVICE_TARGETS, HOST_TARGETS, transfer

__all__ = [
    "Backend", "LinkerUnavailableError", "available_backends", "default_backend",
    "get_backend", "recheck_availability", "register_backend", "registered_backends",
    "unregister_backend",
]  # fmt: skip


class LinkerUnavailableError(NotImplementedError):
    """The requested linker is known but not built (yet) or cannot run here."""


def _always_available() -> str | None:
    return None


@dataclass(frozen=True)
class Backend:
    """Everything about one backend (see the module docstring).

    `preference`: where `linker=None` ("the fastest available") looks, lowest first;
    None: only when asked for by name. `checking`: a linker that checks rather than
    runs fast (never picked by default, not listed by `available_linkers`).
    """

    name: str
    linker: Callable[..., Linker] | None
    unavailable: Callable[[], str | None] = _always_available
    declare_dtypes: Callable[[], None] | None = None
    transfer: Callable[[Any, str], Any] | None = None
    shared: Callable[..., Any] | None = None
    computes: Callable[[Any], bool] | None = None
    rewrite_tag: str | None = None
    fast_call: Callable[..., Any] | None = None
    preference: int | None = None
    checking: bool = False

    def why_unavailable(self) -> str | None:
        """Why this backend cannot run here (None: it can). Asked once, then kept (see
        `recheck_availability`)."""
        if self.name not in _unavailable:
            reason = self.unavailable()
            if reason is None and self.linker is None:
                reason = f"the {self.name!r} linker is not available"
            _unavailable[self.name] = reason
        return _unavailable[self.name]

    def make_linker(self, **options: Any) -> Linker:
        """A fresh Linker of this backend; LinkerUnavailableError (with the reason) when
        it cannot run here."""
        reason = self.why_unavailable()
        if reason is not None or self.linker is None:
            available = ", ".join(available_backends())
            raise LinkerUnavailableError(f"linker {self.name!r} is unavailable: {reason} "
                                         f"(available: {available})")
        return self.linker(**options)


_backends: dict[str, Backend] = {}
#: backend name -> why it cannot run here (None: it can), once asked
_unavailable: dict[str, str | None] = {}


def register_backend(record: Backend) -> Backend:
    """Add (or replace) a backend; its dtypes, transfer, shared constructor and device
    question are handed to the layers that ask them."""
    if not isinstance(record, Backend):
        raise TypeError(f"register_backend needs a Backend record, got {record!r}")
    _backends[record.name] = record
    _unavailable.pop(record.name, None)
    if record.declare_dtypes is not None:
        dtypes.declare_backend_later(
            record.name, record.declare_dtypes,
            available=lambda: record.why_unavailable() is None)
    if record.transfer is not None:
        register_transfer(record.transfer)
    if record.shared is not None:
        shared_constructor(record.shared)
    if record.computes is not None:
        set_device_computes(record.computes)
    return record


def unregister_backend(name: str) -> None:
    """Forget a backend (and its dtype declaration, if any)."""
    record = _backends.pop(name)
    _unavailable.pop(name, None)
    if record.shared is not None:
        shared_constructor(record.shared, remove=True)
    if record.declare_dtypes is not None:
        dtypes.unregister_backend_dtypes(name)


def recheck_availability(name: str | None = None) -> None:
    """Forget what was found about whether a backend (None: every one) can run here."""
    if name is None:
        _unavailable.clear()
    else:
        _unavailable.pop(name, None)


def get_backend(name: str) -> Backend:
    """The record of the backend `name`; ValueError naming the known ones if none."""
    try:
        return _backends[name]
    except KeyError:
        raise ValueError(f"unknown linker {name!r}; known linkers: "
                         f"{', '.join(_backends)}") from None


def registered_backends() -> list[str]:
    """Names of every registered backend, whether it can run here or not."""
    return list(_backends)


def available_backends() -> list[str]:
    """Names of the backends that can run here and that run (not check), the one
    `linker=None` picks first."""
    ranked = sorted((r for r in _backends.values() if not r.checking),
                    key=lambda r: (r.preference is None, r.preference or 0))
    return [r.name for r in ranked if r.why_unavailable() is None]


def default_backend() -> str:
    """The backend `linker=None` picks: the first available in order of preference (with
    one warning per preferred backend that cannot run here)."""
    available = available_backends()
    chosen = next((n for n in available if _backends[n].preference is not None), available[0])
    for record in _backends.values():
        if record.preference is not None and record.preference < \
                (_backends[chosen].preference or 0) and record.name not in _warned:
            _warned.add(record.name)
            warnings.warn(f"the default linker falls back to {chosen!r}: linker {record.name!r} "
                          f"is unavailable: {record.why_unavailable()}", RuntimeWarning,
                          stacklevel=4)
    return chosen


#: preferred backends whose absence `default_backend` has warned about
_warned: set[str] = set()


# -- the built-in backends ----------------------------------------------------------------


def _c_linker(**options: Any) -> Linker:
    import workbench.core.link.c.ops  # noqa: F401  (registers the C of the library)
    from workbench.core.link.c.linker import CLinker

    return CLinker(**options)


def _c_unavailable() -> str | None:
    from workbench.core.link.c.compiler import (
        CompilerUnavailableError,
        compiler_info,
        has_compiler,
    )

    if has_compiler():
        return None
    try:
        compiler_info()
    except CompilerUnavailableError as exc:
        return f"no working C compiler: {exc}"
    return "no working C compiler (set CC to a C compiler)"


def _declare_c_dtypes() -> None:
    import workbench.core.link.c.types  # noqa: F401  (declares backend "c")


def _c_fast_call(linker: Linker, *args: Any) -> Any:
    """The C runtime's whole-call path (runtime.c's FastCall) for a linked C program, or
    None when the linker kept no program."""
    program = getattr(linker, "program", None)
    if program is None:
        return None
    from workbench.core.link.c.runtime import runtime

    return runtime().FastCall(program, *args)


def _debug_linker(**options: Any) -> Linker:
    from workbench.core.link.c.debug import DebugLinker

    return DebugLinker(**options)


def _gpu_linker(**options: Any) -> Linker:
    from workbench.core.link.gpu import GpuLinker

    return GpuLinker(**options)


def _gpu_unavailable() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed (pip install 'workbench[gpu]')"
    return None


def _declare_gpu_dtypes() -> None:
    from workbench.core.link.gpu.device import resolve_device
    from workbench.core.link.gpu.dtype_support import register_torch_dtypes

    register_torch_dtypes(resolve_device(None))  # the device a GpuLinker() runs on


def _gpu_transfer(var: Any, target: str) -> Any:
    """x.transfer("gpu") / ("cpu"): the transfer Ops of the tensor layer (no torch needed)."""
    if target not in DEVICE_TARGETS + HOST_TARGETS:
        return None
    return transfer(var, target)


def _gpu_shared(value: Any, *args: Any, target: str | None = None, **kwargs: Any) -> Any:
    """shared(value, target="gpu"): a shared variable whose value stays on the device."""
    if target is None:
        return None
    from workbench.core.link.gpu.transfer import shared_with_target

    return shared_with_target(value, *args, target=target, **kwargs)


def _gpu_computes(op: Any) -> bool:
    """Whether the GPU linker lowers `op` to torch (importing the lowerings imports torch)."""
    if _backends["gpu"].why_unavailable() is not None:
        return False
    import workbench.core.link.gpu  # noqa: F401  (registers the lowerings)
    from workbench.core.link.gpu.registry import lowering_for

    return lowering_for(op) is not None


register_backend(Backend("py", VMLinker, preference=1))
register_backend(Backend("c", _c_linker, _c_unavailable, declare_dtypes=_declare_c_dtypes,
                         fast_call=_c_fast_call, preference=0))
# The GPU linker is only used when asked for: transfers make it slower for small graphs.
register_backend(Backend("gpu", _gpu_linker, _gpu_unavailable,
                         declare_dtypes=_declare_gpu_dtypes, transfer=_gpu_transfer,
                         shared=_gpu_shared, computes=_gpu_computes, rewrite_tag="transfer"))
# DEBUG mode's linker: every node checked, through perform and (with a compiler) C.
register_backend(Backend("debug", _debug_linker, checking=True))
