"""The CLI's bad-input error and its "did you mean" hint (no workbench imports: the
command line starts fast)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


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
