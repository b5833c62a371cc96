"""`workbench rewrite --step` says what each step removed and introduced, with the same
counts as the table of the same trace, walking forward and back."""

import re

import pytest
from typer.testing import CliRunner

from workbench.cli import app

runner = CliRunner()


def table_counts(args):
    """{step: (rewrite, '-R/+I')} from `workbench rewrite ARGS`'s table."""
    result = runner.invoke(app, ["rewrite", *args])
    assert result.exit_code == 0, result.stderr
    rows = re.findall(r"^(\d+)\s+(\S+)\s.*?\s(-\d+/\+\d+)\s", result.stdout, re.MULTILINE)
    return {int(k): (name, counts) for k, name, counts in rows}


def stepped_counts(args, keys):
    """[(step, rewrite, '-R/+I')] printed by `workbench rewrite ARGS --step` for `keys`."""
    result = runner.invoke(app, ["rewrite", *args, "--step"], input="".join(keys))
    assert result.exit_code == 0, result.stderr
    return [(int(k), name, f"-{r}/+{i}") for k, name, r, i in
            re.findall(r"step (\d+): (\S+) \[.*?\] -(\d+) \+(\d+) nodes", result.stdout)]


@pytest.mark.parametrize("args", [["log(1 + exp(x))", "--var", "x=float64[?]"],
                                  ["--example", "unstable"]])
def test_each_step_shows_the_counts_of_the_table(args):
    table = table_counts(args)
    assert len(table) >= 2 and any(c != "-0/+0" for _, c in table.values())
    forward = stepped_counts(args, ["\n"] * len(table) + ["q\n"])
    assert forward == [(k, *table[k]) for k in sorted(table)]
    back = stepped_counts(args, ["\n"] * len(table) + ["b\n", "b\n", "q\n"])
    last = len(table)
    assert back[last:] == [(k, *table[k]) for k in (last - 1, last - 2) if k >= 1]
