"""Starting the C compiler (and its probes) as a child process, safely from any thread.

The -O3 builds of tiered compilation (tiers.py) and the parallel bundle builds start
the compiler from threads other than the main one. CPython's subprocess starts a child
with vfork() on Linux (3.10+, `subprocess._USE_VFORK`; posix_spawn is not used with
the default `close_fds=True`); the child shares the parent's memory until it calls
exec, and only the calling thread waits meanwhile. Without `env=`, the child calls
`execv`, which reads the C library's global `environ` array: a `setenv`/`unsetenv` in
another thread (any `os.environ[...] = ...`; pytest sets PYTEST_CURRENT_TEST at every
test phase) may move that array and free the old one in the meantime, and exec then
fails with EFAULT ("[Errno 14] Bad address: '/usr/bin/gcc'") or passes a garbled
environment. Measured: 966 of 2000 spawns of /bin/true from a thread failed so while
the main thread changed os.environ, none with the environment passed explicitly.

So every child gets `env=`, a copy of os.environ taken under the GIL: the child's
`execve` then reads an array built by, and kept alive by, the thread that waits for it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import Any

__all__ = ["child_environment", "popen", "run"]


def child_environment() -> dict[str, str]:
    """A copy of os.environ, for a child process to receive as its environment.

    os.environ is copied key by key in Python code; a thread that changes it meanwhile
    makes the copy fail ("dictionary changed size during iteration", or a KeyError for
    a key removed after it was listed): copy again."""
    while True:
        try:
            return dict(os.environ)
        except (RuntimeError, KeyError):
            continue


def run(cmd: Sequence[str], cwd: str | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run `cmd` with its output captured as text (`subprocess.run`), its environment
    passed explicitly (child_environment)."""
    return subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False, env=child_environment())


def popen(cmd: Sequence[str], cwd: str | None = None, **kwargs: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen(cmd, ...)` with the environment passed explicitly
    (child_environment)."""
    return subprocess.Popen(list(cmd), cwd=cwd, env=child_environment(), **kwargs)
