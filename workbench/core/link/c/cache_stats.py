"""The module cache's counters summed over every process that used it.

A `ModuleCache`'s `stats` live as long as its process; `workbench cache info` runs in
a new one, where they are all zero. So each process adds its counters to
`<root>/stats.json` when it exits (under a file lock: processes may exit together),
and `lifetime_stats(root)` reads the sums. A missing, unreadable or malformed file
reads as no history; a cache that cannot be written (read-only) keeps none.
"""

from __future__ import annotations

import atexit
import json
import os
import time
from pathlib import Path
from typing import Any

import filelock

STATS_FILE = "stats.json"
_COUNTERS = ("memory_hits", "disk_hits", "builds", "unversioned_builds", "corrupt_rebuilds",
             "compile_seconds")


def lifetime_stats(root: str | os.PathLike[str]) -> dict[str, Any]:
    """The summed counters of the processes that used the cache at `root`, with
    `since` (when the first was recorded) and `processes`; {} when there are none."""
    try:
        data = json.loads((Path(root) / STATS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    result: dict[str, Any] = {}
    for name in (*_COUNTERS, "since", "processes"):
        value = data.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            result[name] = value
    return result


def add_to_lifetime(root: str | os.PathLike[str], counters: dict[str, Any]) -> None:
    """Add one process's `counters` (CacheStats.as_dict()) to the sums at `root`."""
    if not any(counters.get(name) for name in _COUNTERS):
        return  # this process used no module: nothing to add (and no file to create)
    path = Path(root) / STATS_FILE
    try:
        with filelock.FileLock(str(path) + ".lock", timeout=5):
            total = lifetime_stats(root)
            for name in _COUNTERS:
                total[name] = total.get(name, 0) + counters.get(name, 0)
            total["processes"] = int(total.get("processes", 0)) + 1
            total.setdefault("since", time.time())
            temporary = path.with_name(f"{STATS_FILE}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(total, indent=1), encoding="utf-8")
            os.replace(temporary, path)
    except (OSError, filelock.Timeout):
        pass  # a read-only or busy cache keeps no history; compiling is unaffected


def record_at_exit(cache: Any) -> None:
    """Add `cache.stats` to the lifetime sums when this process exits."""
    atexit.register(lambda: add_to_lifetime(cache.root, cache.stats.as_dict()))
