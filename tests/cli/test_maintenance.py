"""`workbench bench` (workbench/cli/maintenance.py): the options reach benchmarks/run.py's
command line and its parser as given, the help lists the suite's own families, a bad value
is one line and exit code 2, and one quick real run of the suite."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.cli.maintenance import bench_command
from workbench.core.link.c.compiler import has_compiler

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from wb_bench.families import FAMILIES  # noqa: E402

runner = CliRunner()
needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"),
                                    reason="--pin CPU needs os.sched_setaffinity (Linux)")


def run(*args, env=None):
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def suite_parser():
    """benchmarks/run.py's own argument parser (importing run.py loads nothing it measures)."""
    spec = importlib.util.spec_from_file_location("bench_run", BENCHMARKS / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_args


@needs_affinity
def test_every_option_reaches_the_suites_command_line_and_its_parser():
    cpu = max(os.sched_getaffinity(0))
    args = bench_command(quick=True, as_json=True, only="linalg, indexing", no_pytensor=True,
                         no_jax=True, threads=1, pin=str(cpu), coretype="SkylakeX")
    assert args[:2] == [sys.executable, str(BENCHMARKS / "run.py")]
    tail = " ".join(args[2:])
    assert f"--threads 1 --pin {cpu} --coretype SkylakeX --width " in tail
    parsed = suite_parser()(args[2:])  # run.py reads them back as the CLI meant them
    assert (parsed.quick, parsed.json, parsed.no_pytensor, parsed.no_jax) == (True,) * 4
    assert parsed.only == ["linalg", "indexing"] and parsed.threads == 1
    assert parsed.pin == cpu and parsed.coretype == "SkylakeX"


def test_options_left_out_leave_the_suite_its_defaults():
    args = bench_command(coretype="auto", pin="none")
    assert args[2:-2] == ["--pin", "none", "--coretype", "auto"]  # then --width COLUMNS
    parsed = suite_parser()(args[2:])
    assert parsed.pin is None and parsed.coretype == "auto" and parsed.threads == 1
    assert bench_command()[2:-2] == []  # run.py's defaults: --pin auto, the environment's BLAS


def test_the_command_runs_the_suite_with_the_options_given(monkeypatch):
    ran = []

    def suite(args, **kwargs):  # stands in for the subprocess: minutes of benchmarks
        ran.append(args)
        return subprocess.CompletedProcess(args, 0, stdout="| the table |\n")

    monkeypatch.setattr(subprocess, "run", suite)
    code, out, err = run("bench", "--only", "overhead", "--pin", "none", "--coretype", "auto",
                         "--threads", "0", env={"COLUMNS": "90"})
    assert code == 0, err
    assert out == "| the table |\n"
    assert ran[0][2:] == ["--only", "overhead", "--threads", "0", "--pin", "none",
                          "--coretype", "auto", "--width", "90"]


def test_the_help_lists_every_family_of_the_suite():
    assert {"linalg", "indexing"} <= set(FAMILIES)
    code, out, err = run("bench", "--help", env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert code == 0, err
    text = " ".join(out.replace("│", " ").split())
    assert f"Comma-separated families: {', '.join(FAMILIES)} (default: all)." in text
    assert "'auto' unsets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE" in text
    assert "--pin CPU|auto|none" in text and "--coretype NAME|auto" in text


@pytest.mark.parametrize("option, value, expected", [
    ("--pin", "x", "--pin takes a CPU number, 'auto' or 'none', got 'x'"),
    ("--pin", "100000", "--pin: CPU 100000 is not among this process's CPUs"),
    ("--coretype", "Sky lake", "--coretype takes 'auto' or an OpenBLAS kernel name"),
    ("--coretype", "", "--coretype takes 'auto' or an OpenBLAS kernel name"),
    ("--only", "fused,nonsense", "--only: unknown benchmark families nonsense; known: fused,"),
    ("--threads", "-1", "Invalid value for '--threads'"),
])
def test_a_bad_value_is_one_line_naming_the_option_and_exit_code_2(option, value, expected):
    if option == "--pin" and value.isdigit() and not hasattr(os, "sched_getaffinity"):
        pytest.skip("--pin CPU needs os.sched_setaffinity (Linux)")
    code, out, err = run("bench", option, value)
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert expected in err
    if option == "--coretype":  # what it got, as it got it
        assert err.rstrip().endswith(f"got {value!r}")


@pytest.mark.skipif(not has_compiler(), reason="the suite measures the C linker")
def test_bench_runs_the_suite_and_prints_json_rows():
    code, out, err = run("bench", "--quick", "--only", "overhead", "--no-pytensor", "--no-jax",
                         "--json", "--pin", "none")
    assert code == 0, err
    document = json.loads(out)
    assert document["quick"] is True
    rows = document["rows"]
    cases = {row["case"] for row in rows}
    # Every case is measured in both call patterns (issue 22): back-to-back and interleaved.
    assert cases == {f"call overhead {case} [{pattern}]"
                     for case in ("scalar", "scalar trust_input", "vector[10]",
                                  "vector[10] trust_input")
                     for pattern in ("back-to-back", "interleaved")}
    subject = [row for row in rows if row["impl"] == "workbench c"]
    assert len(subject) == 8 and all(row["seconds"] > 0 and row["ratio"] == 1.0
                                     for row in subject)
    assert any("PyTensor: skipped" in note for note in document["notes"])
    assert any("--pin none" in line for line in document["headlines"])
