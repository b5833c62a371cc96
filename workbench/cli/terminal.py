"""What the `workbench` command draws on a terminal: colour, progress bars, and the
width its text is fitted to.

Colour and bars appear only on a terminal: piped or redirected output stays plain text,
and `NO_COLOR` (https://no-color.org) turns colour off. Progress bars go to stderr so
that stdout stays the command's result.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TextIO

import typer

#: the width text is fitted to when the terminal's is not known (output piped or
#: redirected, no COLUMNS): what a 1280-pixel-wide terminal shows in DejaVu Sans Mono
#: (measured in Chromium: 148 columns at 14 px, 139 at 15, 131 at 16, 116 at 18 and
#: 104 at 20 px, a projector's size), with a margin
DEFAULT_COLUMNS = 100


def columns() -> int:
    """The columns the command's output may use: COLUMNS when set, else the width of
    the terminal stdout is on, else DEFAULT_COLUMNS."""
    return shutil.get_terminal_size((DEFAULT_COLUMNS, 24)).columns


def fit(text: str, width: int | None = None, hanging: int | None = None) -> str:
    """`text` with each line longer than `width` (default: `columns()`) wrapped at
    spaces under its own indent and tree bars (`printing.fit_lines`)."""
    from workbench.core.printing import fit_lines

    return fit_lines(text, columns() if width is None else width, hanging)


def use_color(stream: TextIO | None = None) -> bool:
    """Whether to colour what goes to `stream` (stdout by default)."""
    stream = sys.stdout if stream is None else stream
    return "NO_COLOR" not in os.environ and stream.isatty()


def style(text: str, err: bool = False, **styles: Any) -> str:
    """`text` with typer.style's `styles` (fg=, bold=) when its stream is coloured."""
    return typer.style(text, **styles) if use_color(sys.stderr if err else sys.stdout) else text


Update = Callable[..., None]


@contextmanager
def progress(label: str, total: int | None = None) -> Iterator[Update]:
    """A progress bar on stderr for slow work, moved by `update(done, total=None)`;
    it vanishes when the work ends and is not drawn when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield lambda done, total=None: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True, no_color="NO_COLOR" in os.environ)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)

        def update(done: int, total: int | None = None) -> None:
            bar.update(task, completed=done, **({"total": total} if total else {}))

        yield update


@contextmanager
def c_compile_progress() -> Iterator[None]:
    """A bar of node kinds while the C linker compiles the kinds a graph is missing:
    it appears when the compilers start and moves as each kind is compiled (with GCC;
    with another compiler, as each bundle of kinds finishes); nothing when every kind is
    cached."""
    if not sys.stderr.isatty():
        yield
        return
    try:
        from workbench.core.link.c import bundle
    except ImportError:  # a build without the C linker
        yield
        return
    with ExitStack() as stack:
        bars: list[Update] = []

        def listener(done: int, total: int) -> None:
            if not bars:
                bars.append(stack.enter_context(progress("compiling C node kinds", total)))
            bars[0](done, total)

        bundle.progress_listeners.append(listener)
        try:
            yield
        finally:
            bundle.progress_listeners.remove(listener)


def c_optimised() -> None:
    """Wait for the `-O3` builds still running in the background (a cold graph runs
    from a quick `-O1` build first, link/c/tiers.py), under a spinner on a terminal: what
    runs next (a profile) is the code that stays."""
    try:
        from workbench.core.link.c import tiers
    except ImportError:  # a build without the C linker
        return
    if tiers.pending_upgrades():
        with progress("optimising C node kinds (-O3)"):
            tiers.wait_for_upgrades()
