"""Which functions of a translation unit the C compiler has finished, while it runs.

A bundle (bundle.py) compiles many node kinds in one compiler run, so counting runs
moves a progress bar in a few jumps (two for the 35 kinds of the MLP step on two
cores). GCC can write a dump of its last RTL pass ("final", which emits the assembly)
as it goes: `-fdump-rtl-final-slim` writes a ";; Function <name> (...)" header each time
a function passes it, i.e. each time a function is compiled. Reading that file while
the compiler runs tells which kinds are done, one by one. It costs about 3% of the
compile (measured: 0.92 s -> 0.95 s CPU for a bundle of 18 kinds) and is asked for only
while someone listens (`reporting_functions`), by a compiler that accepts the flag (the
caller checks); the dump is deleted afterwards and never enters the cache. The flag does
not change the code generated, so it is not part of any cache key.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from workbench.core.link.c import spawn

__all__ = ["DUMP_FLAGS", "function_callback", "reporting_functions", "run_reporting"]

#: What makes GCC dump each function as it finishes (`-dumpdir` is added per run).
DUMP_FLAGS: tuple[str, ...] = ("-fdump-rtl-final-slim",)
#: How often the dump is read while the compiler runs (seconds).
POLL_SECONDS = 0.05

_HEADER = re.compile(rb"^;; Function (\S+) ", re.MULTILINE)
_local = threading.local()


@contextmanager
def reporting_functions(callback: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, compiles started by this thread call `callback(name)` from
    this thread for each C function the compiler finishes (when it can tell)."""
    previous = getattr(_local, "callback", None)
    _local.callback = callback
    try:
        yield
    finally:
        _local.callback = previous


def function_callback() -> Callable[[str], None] | None:
    """The callback `reporting_functions` set for this thread, if any."""
    return getattr(_local, "callback", None)


class _DumpReader:
    """Reads the function headers appended to the dump files of a directory."""

    def __init__(self, directory: Path, callback: Callable[[str], None]) -> None:
        self.directory, self.callback = directory, callback
        self.offsets: dict[Path, int] = {}
        self.rest: dict[Path, bytes] = {}

    def scan(self) -> None:
        try:
            paths = sorted(self.directory.glob("*.final"))
        except OSError:
            return
        for path in paths:
            try:
                with open(path, "rb") as fh:
                    fh.seek(self.offsets.get(path, 0))
                    data = fh.read()
            except OSError:
                continue
            if not data:
                continue
            self.offsets[path] = self.offsets.get(path, 0) + len(data)
            text = self.rest.get(path, b"") + data
            complete, _, rest = text.rpartition(b"\n")  # a header cut in two waits
            self.rest[path] = rest
            for match in _HEADER.finditer(complete + b"\n"):
                self.callback(match.group(1).decode(errors="replace"))


def run_reporting(cmd: Sequence[str], cwd: str, dump_dir: Path,
                  callback: Callable[[str], None], timeout: float = 600
                  ) -> subprocess.CompletedProcess[str]:
    """Run the compiler command `cmd` (GCC) like `subprocess.run(capture_output=True,
    text=True)`, with the dump flags added, calling `callback(name)` for each function it
    finishes. Raises subprocess.TimeoutExpired after `timeout` seconds."""
    dump_dir.mkdir(parents=True, exist_ok=True)
    full = [*cmd, *DUMP_FLAGS, "-dumpdir", f"{dump_dir}{os.sep}"]
    reader = _DumpReader(dump_dir, callback)
    proc = spawn.popen(full, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    proc.kill()
                    proc.communicate()
                    raise subprocess.TimeoutExpired(full, timeout) from None
                reader.scan()
        reader.scan()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        shutil.rmtree(dump_dir, ignore_errors=True)
    return subprocess.CompletedProcess(full, proc.returncode, out, err)
