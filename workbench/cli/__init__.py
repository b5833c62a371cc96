"""The `workbench` command line (Typer). Grows into show / grad / rewrite / compile / profile."""

from __future__ import annotations

import typer

from workbench.cli.app import app


def main() -> None:
    """Entry point of the `workbench` console script."""
    app()


__all__ = ["app", "main", "typer"]
