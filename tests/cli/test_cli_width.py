"""The `workbench` command fits its text to the terminal's width (COLUMNS, else the
terminal stdout is on, else 100 columns): every line of every command's output at most
that wide, for a narrow terminal (80 columns) and what a 1280-pixel-wide terminal shows
at a projector's 18 px (116 columns, measured in tests/cli/test_cli_on_screen.py)."""

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.cli.terminal import DEFAULT_COLUMNS, columns, fit
from workbench.core.link.c.compiler import has_compiler

runner = CliRunner()

COMMANDS = {
    "help": ["--help"],
    "examples": ["examples"],
    "functions": ["functions"],
    "show": ["show", "--example", "mlp"],
    "pprint": ["show", "--example", "logistic_regression", "--format", "pprint"],
    "grad": ["grad", "--example", "logistic_regression", "--wrt", "w", "--simplify"],
    "rewrite": ["rewrite", "--example", "mlp"],
    "rewrite at": ["rewrite", "--example", "mlp", "--at", "5"],
    "compile": ["compile", "--example", "mlp", "--linker", "py"],
    "profile": ["profile", "--example", "mlp", "--linker", "py", "--calls", "2"],
    "cache info": ["cache", "info"],
    "bench help": ["bench", "--help"],
    "demo": ["demo"],
}


def widest(text):
    return max((len(line) for line in text.splitlines()), default=0)


@pytest.mark.parametrize("width", [80, 116])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_line_fits_the_terminal_width(command, width):
    result = runner.invoke(app, COMMANDS[command], env={"COLUMNS": str(width),
                                                         "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    assert widest(result.stdout) <= width


def test_the_width_is_columns_else_the_terminals_else_a_default(monkeypatch):
    import os

    monkeypatch.setenv("COLUMNS", "93")
    assert columns() == 93
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr(os, "get_terminal_size", lambda fd=1: os.terminal_size((132, 40)))
    assert columns() == 132

    def piped(fd=1):
        raise OSError("not a terminal")

    monkeypatch.setattr(os, "get_terminal_size", piped)
    assert columns() == DEFAULT_COLUMNS


def test_fit_wraps_at_spaces_under_the_lines_own_indent_and_tree_bars():
    tree = " | | |Elemwise{Composite{tanh(i0), (1.0 - (tanh(i0) * tanh(i0)))}} [id N]"
    lines = fit(tree, 40).splitlines()
    assert lines == [" | | |Elemwise{Composite{tanh(i0), (1.0",
                     " | | |  - (tanh(i0) * tanh(i0)))}} [id",
                     " | | |  N]"]
    assert fit("short\n  stays as it is", 40) == "short\n  stays as it is"
    listing = fit("mlp" + " " * 20 + "a 784-256-10 MLP training step (tanh, softmax)", 50,
                  hanging=23)
    assert listing.splitlines()[1] == " " * 23 + "step (tanh, softmax)"


def test_a_very_deep_tree_line_continues_near_the_left_edge():
    deep = " |" * 30 + "Gemm{inplace=False}(DimShuffle{x,0}.0, TensorConstant{1.0}, x, W1)"
    lines = fit(deep, 80).splitlines()
    assert max(len(line) for line in lines) <= 80 and lines[1].startswith("    ")


@pytest.mark.skipif(not has_compiler(), reason="the suite measures the C linker")
@pytest.mark.parametrize("width", [80, 116])
def test_bench_fits_its_table_to_the_terminal(width):
    # the suite runs in a subprocess whose stdout is a pipe: `bench` tells it the width
    result = runner.invoke(app, ["bench", "--quick", "--only", "overhead", "--no-pytensor",
                                 "--no-jax"], env={"COLUMNS": str(width), "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    assert widest(result.stdout) <= width
    table = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    # the implementation header shortens to "impl." when the measured figures leave too
    # little room (their widths vary from run to run)
    header = [c.strip() for c in table[0].strip("|").split("|")][:2]
    assert header in (["case", "implementation"], ["case", "impl."])
    threads = " ".join(line.split("|")[5] for line in table[2:]).split()
    # a count, or a call too short for the per-thread clocks: never a bare "-" on Linux
    assert threads and all(t.isdigit() or t in ("too", "short") for t in threads)
