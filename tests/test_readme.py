"""The README does what it says on a fresh clone: its first graph runs with the comments
true, its install lines match CI, and nothing it or the tests refer to lies outside the
repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.core.link.c.compiler import has_compiler

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def code_block(after_heading: str, language: str = "python") -> str:
    """The first ```language block of the README after the heading `after_heading`."""
    section = README.split(f"\n## {after_heading}\n", 1)[1]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_the_first_graph_runs_and_its_comments_say_which_linker_compiled_it(capsys):
    block = code_block("A first graph")
    namespace: dict = {}
    exec(compile(block, "README.md: A first graph", "exec"), namespace)
    capsys.readouterr()
    comment = next(line for line in block.splitlines()
                   if line.startswith("f = wb.function(")).split("#", 1)[1]
    assert "C linker" in comment and "Python VM" not in comment
    assert namespace["f"].linker.name == ("c" if has_compiler() else "py")


def test_the_first_and_last_graphs_of_the_trace_stay_at_their_steps(capsys):
    import workbench as wb

    namespace: dict = {}
    exec(compile(code_block("A first graph"), "README.md: A first graph", "exec"), namespace)
    capsys.readouterr()
    first, last, trace, fgraph = (namespace[k] for k in ("first", "last", "trace", "fgraph"))
    first_text = wb.dprint(first, file="str")
    assert first_text != wb.dprint(last, file="str") == wb.dprint(fgraph, file="str")
    assert len(first.apply_nodes) > len(last.apply_nodes)
    for k in range(len(trace) + 1):
        trace.view_at(k)
    assert wb.dprint(first, file="str") == first_text


def test_the_torch_the_readme_names_is_the_one_ci_installs():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    wanted = re.findall(r"pip install (torch==[\d.]+)", ci)
    assert wanted and wanted == re.findall(r"pip install (torch==[\d.]+)", README)


@pytest.mark.parametrize("folder", ["tests", "workbench", "tutorials", "benchmarks"])
def test_no_file_refers_to_a_path_outside_the_repository(folder):
    outside = re.compile(r"\.\./shared/|/work/(main|wt|shared)\b")
    for path in sorted((REPO / folder).rglob("*")):
        if path.suffix in (".py", ".md", ".ipynb", ".toml") and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not outside.search(text), f"{path.relative_to(REPO)} points outside the repo"


def test_random_draws_op_from_graph_and_vectorize_run_as_written():
    import numpy as np

    namespace: dict = {}
    block = code_block("Random draws, OpFromGraph, vectorize")
    exec(compile(block, "README.md: Random draws", "exec"), namespace)
    first, second = namespace["pi_hat"](), namespace["pi_hat"]()
    assert abs(first - np.pi) < 0.03 and first != second
    assert [str(n.op) for n in (namespace["h"].owner, namespace["h"].owner.inputs[0].owner)
            ] == ["dense_layer", "dense_layer"]
    assert namespace["many"].type.ndim == 2


def test_the_loops_example_runs(capsys):
    import workbench as wb

    namespace: dict = {}
    exec(compile(code_block("Loops: scan"), "README.md: Loops: scan", "exec"), namespace)
    assert " >loop body of [id B]:" in capsys.readouterr().out
    assert wb.function([], namespace["fib"])().tolist() == [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]


def test_the_linear_algebra_block_runs_and_compiles_inv_into_solve(capsys):
    import numpy as np

    namespace: dict = {}
    exec(compile(code_block("Linear algebra: wt.linalg"), "README.md: Linear algebra",
                 "exec"), namespace)
    assert capsys.readouterr().out.strip() == (
        "ifelse(all(isfinite(K)) & all(isfinite(y)), solve(K, y), inv(K) @ y)")
    rng = np.random.default_rng(0)
    m = rng.standard_normal((4, 4))
    k = m @ m.T + 4 * np.eye(4)
    value, gradient = namespace["f"](k, np.ones(4))
    assert np.isfinite(value) and gradient.shape == (4, 4)
