"""`workbench compile` and `workbench profile` on the C linker (timings, cache hits,
--show-code)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.core.link.c.compiler import has_compiler

ROOT = Path(__file__).resolve().parents[2]
needs_cc = pytest.mark.skipif(not has_compiler(), reason="the C linker needs a C compiler")
runner = CliRunner()
CHAIN = ["exp(x) * sin(y) - tanh(x * y)", "--var", "x=float64[?]", "--var", "y=float64[?]"]


def run(*args):
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@needs_cc
def test_compile_reports_c_nodes_and_cache_hits():
    code, out, err = run("compile", *CHAIN, "--linker", "c")
    assert code == 0, err
    assert "with the 'c' linker" in out
    lines = out.splitlines()
    first = next(k for k, line in enumerate(lines) if line.startswith("C: "))
    c_line = lines[first]  # and its continuation lines, wrapped to the terminal's width
    for line in lines[first + 1:]:
        if not line.startswith("  "):
            break
        c_line += " " + line.strip()
    assert "1 nodes compiled to C, 0 run in Python" in c_line
    assert "module(s)," in c_line and "disk cache hits" in c_line and "memory hits" in c_line
    assert "[id A]" in out  # the compiled graph follows


@needs_cc
def test_compile_show_code_prints_the_generated_c():
    code, out, err = run("compile", *CHAIN, "--linker", "c", "--show-code")
    assert code == 0, err
    assert "/* ==== Elemwise" in out
    assert "wb_node_run" in out and "exp(" in out and "tanh(" in out
    assert "[id A]" not in out  # the code replaces the graph listing


@needs_cc
def test_compile_json_has_the_compile_report_and_code():
    code, out, err = run("compile", "--example", "mlp", "--linker", "c", "--json",
                         "--show-code")
    assert code == 0, err
    info = json.loads(out)
    assert info["linker"] == "c" and info["graph"] == "mlp" and info["nodes"] > 10
    report = info["c"]
    assert report["c_nodes"] + report["py_nodes"] == info["nodes"]
    assert report["compiled"] + report["disk_hits"] + report["memory_hits"] >= 1
    assert report["compile_seconds"] >= 0 and report["link_seconds"] > 0
    assert len(report["python_nodes"]) == report["py_nodes"]
    assert all(isinstance(reason, str) and reason for _, reason in report["python_nodes"])
    assert info["code"].count("/* ==== ") == report["c_nodes"]


def test_compile_show_code_on_the_py_linker_says_there_is_none():
    code, out, err = run("compile", "x * 2 + 1", "--linker", "py", "--show-code")
    assert code == 0, err
    assert "(the py linker generates no code)" in out
    code, out, err = run("compile", "x * 2 + 1", "--linker", "py", "--json")
    assert code == 0, err
    assert "c" not in json.loads(out)


@needs_cc
def test_compile_show_code_in_a_real_subprocess():
    env = dict(os.environ, NO_COLOR="1")
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "compile", *CHAIN,
                           "--linker", "c", "--show-code"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "wb_node_run" in done.stdout


@needs_cc
def test_profile_on_the_c_linker_shows_blas_on_top_and_the_c_compilation():
    code, out, err = run("profile", "--example", "mlp", "--linker", "c", "--calls", "2")
    assert code == 0, err
    top_op_class = out.split("By Op class:")[1].splitlines()[2].split()[-1]
    assert top_op_class in ("Gemm", "Gemv", "Dot", "Dot22")
    nodes = out.split("By Apply node:")[1].split("Memory:")[0]
    assert "  C  " in nodes or " C " in nodes
    assert "C compilation (node kinds:" in out.split("Compile time:")[1]
