"""The benchmark suite (`benchmarks/run.py --quick`) runs in a subprocess and prints a table
that parses: every case has workbench's row and a NumPy reference, times and ratios are
numbers. No timing is asserted (the machine may be loaded)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.link.c.compiler import has_compiler

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "run.py"
TIME = re.compile(r"^(\d+(\.\d+)?) (us|ms|s)$")

pytestmark = pytest.mark.skipif(not has_compiler(), reason="the suite measures the C linker")


def parse_table(text: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table of a run as wide as its table (--width 1000:
    no cell wraps). A blank case cell repeats the previous case; an implementation's
    "[n]" is its note, numbered under the table (the per-node profile tables follow)."""
    all_lines = text.splitlines()
    start = next(k for k, line in enumerate(all_lines) if line.startswith("|"))
    lines = []
    for line in all_lines[start:]:
        if not line.startswith("|"):
            break
        lines.append(line)
    footnotes = dict(re.findall(r"^\[(\d+)\] (.*)$", text, re.M))
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["case", "implementation", "median", "cpu per call", "threads run", "ratio",
                      "cpu ratio"]
    assert set(lines[1]) <= {"|", "-"}
    rows, case = [], None
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == len(header), line
        case = cells[0] or case
        row = dict(zip(header, [case, *cells[1:]]))
        impl, mark = re.match(r"^(.*?)(?: \[(\d+)\])?$", row["implementation"]).groups()
        row["implementation"], row["note"] = impl, footnotes[mark] if mark else ""
        rows.append(row)
    return rows


def seconds(cell: str) -> float | None:
    if cell == "-":
        return None
    match = TIME.match(cell)
    assert match, f"not a time: {cell!r}"
    return float(match.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[match.group(3)]


@pytest.fixture(scope="module")
def quick_run():
    env = dict(os.environ, NO_COLOR="1")
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--no-pytensor",
                           "--width", "1000"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_quick_suite_prints_a_table_of_ratios(quick_run):
    rows = parse_table(quick_run.stdout)
    cases: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        cases.setdefault(row["case"], []).append(row)
    names = " ".join(cases)
    for family in ("fused chain", "call overhead scalar", "call overhead vector[10] trust_input",
                   "logsumexp rows", "softmax rows", "log-softmax rows", "MLP step",
                   "compile fused chain", "compile MLP step", "chain y=y*1.0001+0.5",
                   "solve 200x200", "GP nll + gradient", "take rows", "take_along_axis",
                   "concatenate", "fancy inc"):
        assert family in names, family
    for case, members in cases.items():
        mine = [r for r in members if r["implementation"] == "workbench c"]
        assert len(mine) == 1, case
        assert seconds(mine[0]["median"]) is not None, mine[0]  # measured, not failed
        if not case.startswith(("compile", "chain")):  # timed in this process: CPU too
            assert seconds(mine[0]["cpu per call"]) is not None, mine[0]
            threads = mine[0]["threads run"]
            assert threads in ("-", "too short") or int(threads) >= 1
        assert mine[0]["ratio"] == "1.00"
        for row in members:
            value = seconds(row["median"])
            if value is None:
                assert row["ratio"] == "-" and row["note"].startswith("failed:"), row
            else:
                assert value > 0 and float(row["ratio"]) > 0, row
    for case, members in cases.items():
        if not case.startswith(("compile", "chain")):
            impls = {r["implementation"] for r in members}
            assert impls & {"numpy", "numpy eager", "numpy backprop", "numpy+scipy"}, case
    fused = cases[next(c for c in cases if c.startswith("fused chain"))]
    assert any(r["implementation"].startswith("C loop") and r["median"] != "-" for r in fused)
    # one run, both call patterns, for every case timed in this process
    for pattern in ("[back-to-back]", "[interleaved]"):
        assert any(c.startswith("softmax rows") and c.endswith(pattern) for c in cases)
        assert any(c.startswith("MLP step") and c.endswith(pattern) for c in cases)


def test_quick_suite_is_per_core_and_profiles_workbench_per_node(quick_run):
    out = quick_run.stdout
    if hasattr(os, "sched_setaffinity"):  # --threads 1 (the default) pins by default
        assert out.startswith("**Per core: the whole process runs on CPU ")
    assert "threads read back after the run: threadpoolctl's pools" in out
    assert "### workbench c per node: MLP step 784-256-10 b128 float64" in out
    assert "### workbench c per node: log-softmax rows 1000x1000 f64" in out
    assert re.search(r"^\| node +\| backend +\| per call +\| share +\| BLAS threads \|$", out,
                     re.M)


def test_quick_suite_notes_what_was_skipped(quick_run):
    notes = quick_run.stdout.split("ratio = reference time / workbench time")[1]
    assert "PyTensor: skipped (--no-pytensor)" in notes
    assert "quick run" in notes
    assert "[fused:" in quick_run.stderr  # progress per family on stderr


def test_bad_arguments_exit_2():
    done = subprocess.run([sys.executable, str(SCRIPT), "--only", "nonsense"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert "unknown families" in done.stderr


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs Linux")
def test_pinned_run_says_so_and_uses_the_cpu_kernels_when_asked():
    cpu = min(os.sched_getaffinity(0))
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--no-pytensor", "--no-jax",
                           "--only", "rows", "--pin", str(cpu), "--coretype", "auto",
                           "--width", "1000"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env=dict(os.environ, OPENBLAS_CORETYPE="Haswell"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"the whole process runs on CPU {cpu} (--pin)" in done.stdout
    assert "OPENBLAS_CORETYPE=" not in done.stdout  # 'auto' unset it before NumPy loaded
    impls = {row["implementation"] for row in parse_table(done.stdout)}
    assert {"workbench c", "C rows -O3 native+mvec", "C one pass -O3 native+mvec"} <= impls


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs Linux")
def test_pinning_to_a_cpu_not_ours_exits_2():
    done = subprocess.run([sys.executable, str(SCRIPT), "--pin", "100000"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert "--pin: CPU 100000 is not among this process's CPUs" in done.stderr
