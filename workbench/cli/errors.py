"""The CLI's errors: bad input (UsageError, exit 2), its "did you mean" hint, and the
boundary that turns exceptions into exit codes and one line on stderr (no workbench
imports here: the command line starts fast)."""

from __future__ import annotations

import difflib
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import typer

from workbench.cli.terminal import style

#: set by the root command: `--debug` shows tracebacks
state = {"debug": False}


class UsageError(ValueError):
    """Bad input from the command line (exit code 2, one line on stderr)."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' (did you mean X?)' naming the closest of `known` to `name`, or '' if none is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def unknown(what: str, name: str, known: Iterable[str], where: str = "") -> UsageError:
    """The error for a name that is not one of `known`: the closest match, then where
    to find them all (`where`) or, for short lists, the list itself."""
    known = list(known)
    hint = did_you_mean(name, known)
    listing = where or f"known: {', '.join(known)}"
    return UsageError(f"unknown {what} {name!r}{hint}; {listing}")


def fail(message: str, code: int) -> None:
    """Print `message` as one `error:` line on stderr and exit with `code`."""
    typer.echo(f"{style('error:', err=True, fg='red', bold=True)} {message}", err=True)
    raise typer.Exit(code)


@contextmanager
def exit_codes() -> Iterator[None]:
    """Turn exceptions into exit codes: 2 for bad input, 1 for failures."""
    try:
        yield
    except typer.Exit:
        raise
    except Exception as exc:  # noqa: BLE001 - the CLI boundary
        if state["debug"]:
            traceback.print_exc()
        from workbench.core.compile.backends import LinkerUnavailableError

        if isinstance(exc, (UsageError, FileNotFoundError, IsADirectoryError,
                            LinkerUnavailableError)):  # bad input: exit 2
            fail(str(exc), 2)
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        fail(f"{type(exc).__name__}: {first_line}", 1)
