"""The settings the linkers read: where compiled code is cached, and which GPU device runs.

They live here, in the link layer that reads them, and are read from the environment at
import time (`WORKBENCH_CACHE_DIR`, `WORKBENCH_DEVICE`). `workbench.config` mirrors them
(`config.cache_dir`, `config.device`) so that every knob is in one place to look.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "default_cache_dir", "device"]


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/workbench, else ~/.cache/workbench."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "workbench"


#: The directory of the on-disk caches (the C linker's modules and compiler probes).
cache_dir: Any = Path(os.environ.get("WORKBENCH_CACHE_DIR") or default_cache_dir())
#: The GPU linker's device: "auto" (CUDA when available, else the CPU), "cpu", "cuda[:n]".
device: Any = os.environ.get("WORKBENCH_DEVICE", "auto")
