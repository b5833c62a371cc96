"""The Typer application behind the `workbench` command."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="workbench",
    help="A symbolic graph engine you can see into.",
    no_args_is_help=True,
    add_completion=True,
)


def _version_callback(value: bool) -> None:
    if value:
        from workbench import __version__

        typer.echo(f"workbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Build, print, compile and run symbolic graphs."""


@app.command()
def demo(
    rows: int = typer.Option(3, help="Rows of the generated matrix x."),
    cols: int = typer.Option(4, help="Columns of x (and length of y)."),
    seed: int = typer.Option(0, help="Random seed for the generated data."),
) -> None:
    """Run the bundled quick-start example: dprint, compile, run on generated data.

    Example: workbench demo --rows 2 --cols 5
    """
    from workbench.examples import quickstart

    quickstart.main(rows=rows, cols=cols, seed=seed)
