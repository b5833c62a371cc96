"""Tiered compilation: a graph's new node kinds run first from a quick `-O1` build,
and the `-O3` build, compiled in the background, takes over when it is ready.

Most of a cold compile is the C compiler optimising the bundles (bundle.py): 0.8 s of
CPU per bundle of the MLP training step at `-O3`, 0.5 s at `-O1`. So the missing kinds
of a versioned bundle compile first at `-O1` into a private directory (nothing of it
goes to the cache), and the graph runs from that. Each kind's capsule there points at a
trampoline that calls the `-O1` function until a pointer slot (a capsule of its own,
TIER_CAPSULE) holds another function; a background thread then builds the bundle as
before (`-O3`, into the cache, with the kinds' aliases) and writes each kind's `-O3`
function into its slot. Functions already linked to the `-O1` build switch at their next
call; graphs linked later get the `-O3` build directly. Results do not change: the loops
that matter are `omp simd` loops (vectorised at every level, with the same vector math)
and explicit row kernels, checked bit for bit at `-O1` and `-O3` (tests/core/link/c/
test_tiers.py). The background thread is not a daemon: a short script that compiled on
a cold cache finishes the `-O3` build before it exits, so its successors find it.

`WORKBENCH_C_TIERED=0` compiles at `-O3` straight away.
`wait_for_upgrades()` waits for the background builds (tests, benchmarks).
"""

from __future__ import annotations

import ctypes
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workbench.core.link.c import compiler as cc
from workbench.core.link.c.codegen import NODE_CAPSULE

__all__ = ["QUICK_LEVEL", "TIERED_ENV", "TIER_CAPSULE", "compile_quick", "flag_environment",
           "in_background", "pending_upgrades", "quick_flags", "tiered", "trampolines",
           "upgrade", "wait_for_upgrades"]

#: The environment variable that turns tiered compilation off ("0").
TIERED_ENV = "WORKBENCH_C_TIERED"
#: The optimisation level of the quick build.
QUICK_LEVEL = "-O1"
#: The name of the capsules holding a trampoline's pointer slot.
TIER_CAPSULE = "workbench.tier/1"

_threads: list[threading.Thread] = []
_lock = threading.Lock()


def tiered() -> bool:
    """Whether missing kinds compile in two tiers (WORKBENCH_C_TIERED, default on)."""
    text = os.environ.get(TIERED_ENV, "").strip()
    if text not in ("", "0", "1"):
        raise ValueError(f"{TIERED_ENV} must be 0 (compile at -O3 at once) or 1 (a quick "
                         f"build first), got {text!r}")
    return text != "0"


def flag_environment() -> tuple[str | None, ...]:
    """The environment variables that choose the compiler and its flags (CC,
    WORKBENCH_C_AVX512): the background -O3 build is skipped when they changed after the
    quick build, whose code path it would otherwise not be."""
    return os.environ.get("CC"), os.environ.get(cc.AVX512_ENV)


def quick_flags() -> list[str]:
    """The compiler's default flags with QUICK_LEVEL for its optimisation level."""
    return [QUICK_LEVEL if f.startswith("-O") else f for f in cc.compiler_info().default_flags]


def trampolines(tags: Sequence[str]) -> tuple[str, list[tuple[str, str, str]]]:
    """The C of the quick build's trampolines for kinds `tags` (appended to the bundle's
    functions), and its capsules (attribute, C pointer, capsule name): `fn_<tag>` the
    trampoline, `up_<tag>` its pointer slot."""
    lines, capsules = [], []
    for tag in tags:
        lines += [
            f"static wb_tier_fn wb_up_{tag} = 0;",
            f"static int wb_tier_{tag}(PyObject **ins, PyObject **outs, "
            "const char *const *labels) {",
            f"  wb_tier_fn up = __atomic_load_n(&wb_up_{tag}, __ATOMIC_ACQUIRE);",
            f"  return up ? up(ins, outs, labels) : wb_node_run_{tag}(ins, outs, labels);",
            "}",
        ]
        capsules += [(f"fn_{tag}", f"wb_tier_{tag}", NODE_CAPSULE),
                     (f"up_{tag}", f"&wb_up_{tag}", TIER_CAPSULE)]
    head = "typedef int (*wb_tier_fn)(PyObject **, PyObject **, const char *const *);"
    return "\n".join([head, *lines]), capsules


def compile_quick(source: str, module_name: str, key: str, build_args: dict[str, Any],
                  reject_warnings: Sequence[str] = ()) -> Any:
    """Compile and load the quick build of a bundle (`source` with its trampolines) in a
    private temporary directory; the module."""
    directory = Path(tempfile.mkdtemp(prefix="workbench-quick-"))
    args = {k: v for k, v in build_args.items() if k != "version"}
    path = cc.compile_module(source, module_name, out_dir=directory, flags=quick_flags(),
                             reject_warnings=reject_warnings, **args)
    module = cc.load_module(path, module_name, f"workbench_c.q{key}.{module_name}")
    _remove_later(directory)
    return module


def _remove_later(directory: Path) -> None:
    """Delete the quick build's files (the loaded library stays mapped) at exit."""
    import atexit
    import shutil

    atexit.register(shutil.rmtree, directory, True)


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def upgrade(quick_module: Any, tag: str, capsule: Any) -> None:
    """Make the quick build's trampoline of kind `tag` call the node function `capsule`
    (a NODE_CAPSULE of the optimised build) from its next call on."""
    slot = _get_pointer(getattr(quick_module, f"up_{tag}"), TIER_CAPSULE.encode())
    function = _get_pointer(capsule, NODE_CAPSULE.encode())
    if not slot or not function:
        raise RuntimeError(f"no pointer slot or node function for kind {tag}")
    ctypes.c_void_p.from_address(slot).value = function  # an aligned store: atomic


def in_background(work: Callable[[], None]) -> None:
    """Run `work` in a (non-daemon) thread that `wait_for_upgrades` can wait for."""
    thread = threading.Thread(target=work, name="workbench-optimise")
    with _lock:
        _threads[:] = [t for t in _threads if t.is_alive()] + [thread]
    thread.start()


def pending_upgrades() -> int:
    """How many background `-O3` builds are still running."""
    with _lock:
        return sum(thread.is_alive() for thread in _threads)


def wait_for_upgrades(timeout: float | None = None) -> None:
    """Wait until the background `-O3` builds started so far are done."""
    with _lock:
        pending = list(_threads)
    for thread in pending:
        thread.join(timeout)
