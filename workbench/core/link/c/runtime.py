"""Load workbench's C runtime (runtime.c: NodeThunk, Program and FastCall), compiled once per
machine through the module cache like any other generated module."""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType

#: Bump when runtime.c changes.
RUNTIME_VERSION = (8,)


@functools.lru_cache(maxsize=1)
def runtime() -> ModuleType:
    """The compiled runtime module (built on first use, then loaded from the cache)."""
    from workbench.core.link.c.cache import default_cache

    source = (Path(__file__).with_name("runtime.c")).read_text(encoding="utf-8")
    return default_cache().get_or_build(("workbench_runtime",), source, "workbench_runtime",
                                        version=RUNTIME_VERSION)
