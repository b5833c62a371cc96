"""The `workbench` command: each command on each input form, exit codes and messages."""

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap

import pytest
import workbench.tensor as wt
from typer.testing import CliRunner

from workbench.cli import app
from workbench.io import save

runner = CliRunner()


def run(*args, env=None):
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def graph_file(tmp_path):
    x = wt.dmatrix("x")
    path = tmp_path / "graph.json"
    save(wt.tanh(x).sum(), path)
    return str(path)


@pytest.fixture
def python_file(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""
        import workbench.tensor as wt
        x = wt.dvector("x")
        cost = (wt.exp(x) * x).sum()
    """))
    return f"{path}:cost"


def test_version_and_examples():
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("workbench ")
    code, out, _ = run("examples")
    assert code == 0 and "mlp" in out and "long_chain" in out


@pytest.mark.parametrize("form", ["expression", "python", "json", "example"])
def test_show_accepts_every_graph_form(form, graph_file, python_file):
    args = {
        "expression": ["exp(x) * y", "--var", "x=float64[?,3]"],
        "python": ["--python", python_file],
        "json": [graph_file],
        "example": ["--example", "logistic_regression"],
    }[form]
    code, out, err = run("show", *args)
    assert code == 0, err
    assert "[id A]" in out


@pytest.mark.parametrize("fmt, check", [
    ("pprint", lambda out: out.strip() == "exp(x) * y"),
    ("svg", lambda out: out.startswith("<?xml") and "<svg" in out),
    ("dot", lambda out: out.startswith("digraph")),
    ("json", lambda out: "nodes" in json.loads(out)),
    ("graph", lambda out: json.loads(out)["format"] == "workbench-graph"),
])
def test_show_formats(fmt, check):
    code, out, err = run("show", "exp(x) * y", "--var", "x=float64[?,3]", "--format", fmt)
    assert code == 0, err
    assert check(out)


def test_show_png_to_a_file(tmp_path):
    target = tmp_path / "g.png"
    code, _, err = run("show", "tanh(x) + 1", "-f", "png", "-o", str(target))
    assert code == 0, err
    assert target.read_bytes()[:4] == b"\x89PNG"


BAD_INPUT = [  # (arguments, what the one line on stderr says)
    (["show", "exp(x"], "malformed expression"),
    (["show", "blah(x)"], "unknown function 'blah'; `workbench functions` lists them"),
    (["show", "tnah(x)"], "unknown function 'tnah' (did you mean tanh?)"),
    (["show", "__import__('os')"], "unknown function '__import__'"),
    (["show", "x.__class__"], "attribute .__class__ is not allowed"),
    (["show", "x", "--var", "x=float64[a]"], "bad --var"),
    (["show", "x", "--var", "x=notatype[3]"], "bad --var"),
    (["show", "x", "--var", "x=flaot64[3]"], "unknown dtype 'flaot64' (did you mean float64?)"),
    (["show", "missing.json"], "not found"),
    (["show", "--example", "nope"], "unknown example"),
    (["show", "--example", "mpl"], "unknown example 'mpl' (did you mean mlp?)"),
    (["show", "x", "--format", "gif"], "unknown format"),
    (["show", "x @ w"], "w, x were not declared, so they were taken as float64 scalars: "
                        "declare them, e.g. --var w=float64[?,?] --var x=float64[?,?]"),
    (["show", "x @ w", "--var", "x=float64[2,4]", "--var", "w=float64[3,?]"],
     "matmul: x has shape (2, 4) and w has shape (3, ?): inner dimensions 4 and 3 differ"),
    (["show", "-x"], "an expression that starts with '-' goes after --"),
    (["show", "x", "--bogus"], "No such option: --bogus"),
    (["compile", "x", "--linker", "cuda"], "unknown linker 'cuda'"),
    (["profile", "exp(x)", "--var", "x=float64[?]", "--input", "x=float64[?]"],
     "bad --input 'x=float64[?]': dimension '?' is not a length"),
    (["profile", "exp(x)", "--var", "x=float64[2]", "--input", "x=float64[3]"],
     "--input x: expected an array of shape (2,)"),
    (["profile", "exp(x)", "--var", "x=float64[2]", "--input", "y=float64[2]"],
     "unknown input 'y'"),
    (["profile", "exp(x)", "--var", "x=float64[2]", "--linker", "cuda"], "unknown linker"),
    (["grad", "tanh(x)", "--var", "x=float64[?]", "--wrt", "x"],
     "pass --sum to differentiate its sum, or wrap it in sum()"),
    (["grad", "sum(x)", "--var", "x=float64[?]", "--wrt", "nope"], "no input named 'nope'"),
    (["demo", "--rows", "-1"], "--rows -1: the demo needs at least 1"),
    (["demo", "--cols", "0"], "--cols 0: the demo needs at least 1"),
    (["demo", "--rows", "abc"], "Invalid value for '--rows'"),
    (["rewrite", "log(1 + exp(x))", "--exclude", "local_lgo1p"],
     "unknown rewrite or tag 'local_lgo1p' (did you mean local_log1p?)"),
    (["rewrite", "x + 1", "--at", "99"], "--at 99"),
]


@pytest.mark.parametrize("args, message", BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_exits_2_with_one_line(args, message):
    code, out, err = run(*args)
    assert code == 2, err
    assert err.startswith("error: ") and message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + out
    assert err.count(message) == 1


def test_demo_refuses_bad_sizes_before_printing_anything():
    code, out, _ = run("demo", "--rows", "-1")
    assert code == 2 and out == ""


def test_an_expression_starting_with_a_minus_goes_after_double_dash():
    code, out, err = run("show", "--", "-x")
    assert code == 0, err
    assert "Elemwise{neg}" in out


def test_grad_of_a_non_scalar_with_sum():
    code, out, err = run("grad", "tanh(x)", "--var", "x=float64[?]", "--wrt", "x", "--sum")
    assert code == 0, err
    assert out.startswith("d(cost)/dx =")


def test_functions_lists_what_expressions_may_call():
    code, out, err = run("functions")
    assert code == 0, err
    names = [line.split()[0] for line in out.splitlines()]
    assert {"tanh", "exp", "sum", "matmul", "softmax"} <= set(names)
    assert names == sorted(names)


def test_help_says_undeclared_names_are_scalars():
    code, out, _ = run("show", "--help")
    assert code == 0
    assert "float64 scalars" in " ".join(out.split())


def test_a_python_file_runs_only_when_asked_for_with_python(tmp_path):
    canary = tmp_path / "ran"
    model = tmp_path / "model.py"
    model.write_text(f"open({str(canary)!r}, 'w').close()\n"
                     "import workbench.tensor as wt\ncost = wt.dvector('x').sum()\n")
    code, _, err = run("show", f"{model}:cost")
    assert code == 2 and f"ask for it with --python {model}:cost" in err
    assert not canary.exists()
    code, out, err = run("show", "--python", f"{model}:cost")
    assert code == 0, err
    assert canary.exists() and "Sum" in out
    code, out, _ = run("show", "--help")
    assert "RUNS FILE.py as Python code" in " ".join(out.split())


BOMBS = [  # expressions whose constants or nesting would hang, eat memory or crash Python
    ("2**2**2**99", "would have more than 64 bits"),
    ("sum([[0.0]*10**5]*10**5)", "would have more than 100000 items"),
    ("x.reshape((1,)*10**8)", "would have more than 100000 items"),
    ("-" * 1000 + "x", "nested 1002 levels deep; the limit is 200"),
    ("x" + "[0]" * 3000, "nested too deeply"),
    ("2.0**10000", "too large for a float64"),
]


@pytest.mark.parametrize("expression, message", BOMBS, ids=[e[:24] for e, _ in BOMBS])
def test_expressions_are_bounded_and_refused_quickly(expression, message):
    """In a child process with a timeout: a regression fails instead of hanging the suite."""
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "show", "--", expression],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, NO_COLOR="1"))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_expressions_within_the_bounds_still_build():
    code, out, err = run("show", "+".join(["x"] * 150), "--var", "x=float64[?]", "-f", "pprint")
    assert code == 0, err
    code, out, err = run("show", "x.reshape((1,) * 3) * sum([1.0] * 1000) + 2**62",
                         "--var", "x=float64[1]")
    assert code == 0, err


def test_broken_graph_file_exits_2(tmp_path, graph_file):
    broken = tmp_path / "broken.json"
    text = open(graph_file).read()
    broken.write_text(text[: len(text) // 2])
    code, _, err = run("show", str(broken))
    assert code == 2 and "broken graph file" in err


def test_compile_reports_linker_and_graph():
    code, out, err = run("compile", "exp(x) * 2", "--var", "x=float64[?]", "--linker", "py")
    assert code == 0, err
    assert "'py' linker" in out


def test_profile_with_generated_inputs_trace_and_json(tmp_path):
    trace = tmp_path / "trace.json"
    code, out, err = run("profile", "tanh(x @ w)", "--var", "x=float64[?,?]",
                         "--var", "w=float64[?,?]", "--input", "x=float64[40,30]",
                         "--input", "w=float64[30,20]", "--calls", "3",
                         "--trace", str(trace))
    assert code == 0, err
    assert "By Op class" in out and "Dot" in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert events and all(e["ph"] == "X" for e in events)
    code, out, err = run("profile", "exp(x)", "--var", "x=float64[?]", "--input",
                         "x=float64[100]", "--json")
    assert code == 0, err
    assert json.loads(out)["summary"]["calls"] == 10


def test_profile_needs_shapes_for_unknown_dims():
    code, _, err = run("profile", "exp(x)", "--var", "x=float64[?]")
    assert code == 2 and "give --input x=" in err


def test_real_subprocess_exit_codes():
    env = dict(os.environ, NO_COLOR="1")
    ok = subprocess.run([sys.executable, "-m", "workbench.cli", "show", "x + 1"],
                        capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0 and "[id A]" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "workbench.cli", "show", "exp(x"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error: malformed expression")
    assert "Traceback" not in bad.stderr


def test_grad_before_and_after_rewriting():
    code, out, err = run("grad", "sum(tanh(x) * x)", "--var", "x=float64[?]", "--wrt", "x",
                         "--simplify")
    assert code == 0, err
    assert out.startswith("d(cost)/dx =") and "simplified (FAST_RUN rewrites):" in out
    code, _, err = run("grad", "sum(x)", "--var", "x=float64[?]", "--wrt", "nope")
    assert code == 2 and "no input named 'nope'" in err


def test_grad_simplify_of_a_mean_reads_as_a_textbook_formula():
    code, out, err = run("grad", "mean(x ** 2)", "--var", "x=float64[?]", "--wrt", "x",
                         "--simplify")
    assert code == 0, err
    simplified = out.split("simplified (FAST_RUN rewrites):")[1]
    assert simplified.splitlines()[1].strip() == "2.0 * x / x.shape[0]"
    assert "Cast{" not in out.splitlines()[1]  # the formula before rewriting, too


def test_grad_of_an_example_with_the_backward_steps():
    code, out, err = run("grad", "--example", "logistic_regression", "--wrt", "w", "--steps")
    assert code == 0, err
    assert "d(cost)/dw" in out


def test_rewrite_table_at_and_json():
    code, out, err = run("rewrite", "log(1 + exp(x))", "--var", "x=float64[?]")
    assert code == 0, err
    assert "local_log1p" in out and "stabilize" in out
    code, out, _ = run("rewrite", "log(1 + exp(x))", "--var", "x=float64[?]", "--at", "0")
    assert code == 0 and "Elemwise{log}" in out
    code, out, _ = run("rewrite", "log(1 + exp(x))", "--var", "x=float64[?]", "--json")
    steps = json.loads(out)
    assert any(s["rewrite"] == "local_log1p" for s in steps)
    code, _, err = run("rewrite", "x + 1", "--at", "99")
    assert code == 2 and "--at 99" in err


def test_rewrite_step_walks_forward_and_back_in_a_terminal(tmp_path):
    """Drive `workbench rewrite --step` through a real pseudo-terminal."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI in a terminal
        os.environ["NO_COLOR"] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "workbench.cli", "rewrite",
                                  "log(1 + exp(x))", "--var", "x=float64[?]", "--step"])

    def read_until(marker, timeout=60.0):
        buffer = b""
        deadline = time.monotonic() + timeout
        while marker.encode() not in buffer and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    buffer += os.read(fd, 4096)
                except OSError:
                    break
        return buffer.decode(errors="replace")

    try:
        start = read_until("[step 0/")
        assert "steps. Enter = next" in start
        os.write(fd, b"\n")
        forward = read_until("[step 1/")
        assert "step 1:" in forward and "removed" in forward
        os.write(fd, b"\n")
        read_until("[step 2/")
        os.write(fd, b"b\n")
        back = read_until("[step 1/")
        assert "step 1:" in back
        os.write(fd, b"q\n")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0


def test_mlp_example_compiles_and_profiles():
    code, out, err = run("compile", "--example", "mlp")
    assert code == 0, err
    code, out, err = run("profile", "--example", "mlp", "--calls", "2")
    assert code == 0, err
    assert "Dot" in out or "Gemm" in out


def in_a_terminal(*args, env=None, timeout=120.0):
    """Everything `workbench ARGS` writes to a real pseudo-terminal, and its exit code."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI in a terminal
        os.environ.update(env or {})
        os.execv(sys.executable, [sys.executable, "-m", "workbench.cli", *args])
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                output += chunk
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


PROFILE = ["profile", "tanh(x @ w)", "--var", "x=float64[50,8]", "--var", "w=float64[8,5]",
           "--linker", "py", "--calls", "40"]


def test_profiling_shows_a_bar_that_moves_per_call_in_a_terminal_only():
    code, text = in_a_terminal(*PROFILE, env={"NO_COLOR": "1"})
    assert code == 0, text
    counts = [int(c) for c in re.findall(r"profiling.*? (\d+)/40", text)]
    assert counts and counts[-1] == 40 and len(set(counts)) >= 2
    assert not re.search(r"\x1b\[[0-9;]*3[0-7]m", text)  # NO_COLOR: no colour codes
    code, _, err = run(*PROFILE)  # not a terminal: no bar
    assert code == 0 and "profiling" not in err


C_COMPILE = ["compile", "sinh(x) * cosh(x) - arctan(x) / 3", "--var", "x=float64[?]",
             "--linker", "c"]


def test_a_cold_c_compile_in_a_terminal_shows_a_bar_and_is_tiered_like_any_function(
        tmp_path):
    # the bar moves while the quick -O1 build compiles; the -O3 build follows in the
    # background and is finished before the command exits, so it is in the cache
    env = {"NO_COLOR": "1", "WORKBENCH_CACHE_DIR": str(tmp_path), "WORKBENCH_C_TIERED": "1"}
    code, text = in_a_terminal(*C_COMPILE, env=env)
    assert code == 0, text
    assert "compiling C node kinds" in text and "compiled 'sinh(x)" in text
    assert list(tmp_path.rglob("wbbundle*.so"))  # the -O3 build, in the cache
    again = subprocess.run([sys.executable, "-m", "workbench.cli", *C_COMPILE, "--json"],
                           env={**os.environ, **env}, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)["c"]
    assert report["compiled"] == 0 and report["disk_hits"] > 0


def test_profile_times_the_optimised_build(tmp_path, monkeypatch):
    # on a cold cache the kinds run from a quick -O1 build first: the profile waits
    # for their -O3 build, so it times the code that stays
    from workbench.core.link.c import cache as cache_module
    from workbench.core.link.c import tiers

    tiers.wait_for_upgrades()
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(tiers.TIERED_ENV, "1")
    monkeypatch.setattr(cache_module, "_default", None)
    started = []
    monkeypatch.setattr(tiers, "in_background",
                        lambda work, start=tiers.in_background: (started.append(work),
                                                                 start(work)))
    code, out, err = run("profile", "sinh(x) * cosh(x) + arctan(x) / 7", "--var",
                         "x=float64[200]", "--linker", "c", "--calls", "3")
    assert code == 0, err
    assert len(started) == 1 and tiers.pending_upgrades() == 0
    assert list(tmp_path.rglob("wbbundle*.so"))


def test_errors_are_red_on_a_colour_terminal_only():
    code, text = in_a_terminal("show", "tnah(x)", env={"TERM": "xterm"})
    assert code == 2 and "\x1b[" in text.split("error:")[0][-12:] + text.split("error:")[1][:6]
    code, text = in_a_terminal("show", "tnah(x)", env={"NO_COLOR": "1"})
    assert code == 2 and text.startswith("error: unknown function")


def test_help_shows_no_bool_metavar_and_keeps_sentences_whole():
    code, out, _ = run("--help", env={"COLUMNS": "200"})
    assert code == 0 and "<bool>" not in out
    assert "report the timings, the C compilation and cache hits, and the compiled graph" in out
    code, out, _ = run("grad", "--help", env={"COLUMNS": "200"})
    assert "<bool>" not in out and "--var" in out and "NAME=DTYPE[SHAPE]" in out


def test_the_profile_example_fits_one_line_and_runs():
    code, out, _ = run("profile", "--help", env={"COLUMNS": "80"})
    example = next(line.strip() for line in out.splitlines()
                   if line.strip().startswith("workbench profile "))
    code, out, err = run(*shlex.split(example)[1:], "--linker", "py", "--calls", "2")
    assert code == 0, err
    assert out.startswith("Profile of 'tanh(x @ w)'")  # named after the expression


def test_grad_json():
    code, out, err = run("grad", "sum(tanh(x) * x)", "--var", "x=float64[?]", "--wrt", "x",
                         "--simplify", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["cost"] == "sum(tanh(x) * x)"
    (row,) = document["gradients"]
    assert row["wrt"] == "x" and "tanh(x)" in row["formula"] and row["nodes"] > 1
    assert row["simplified"]["nodes"] <= row["nodes"]


def test_profile_json_has_the_compile_time_and_the_graph_name():
    code, out, err = run("profile", "exp(x)", "--var", "x=float64[100]", "--linker", "py",
                         "--json")
    assert code == 0, err
    summary = json.loads(out)["summary"]
    assert summary["name"] == "exp(x)"
    assert set(summary["compile_time"]) >= {"rewriting", "linking (total)"}
    assert all(seconds >= 0 for seconds in summary["compile_time"].values())


COMMANDS = ["examples", "functions", "demo", "show", "grad", "rewrite", "compile", "profile",
            "bench", "cache", "cache info", "cache clear"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_names_values_by_what_they_hold_not_by_python_type(command):
    code, out, err = run(*command.split(), "--help", env={"COLUMNS": "200"})
    assert code == 0, err
    assert re.findall(r"<(?:str|bool|int|float|path|list\[\w+\])>", out) == [], out


def test_the_graph_argument_says_what_it_accepts():
    code, out, _ = run("show", "--help", env={"COLUMNS": "200"})
    row = next(line for line in out.splitlines() if "GRAPH" in line and "The graph" in line)
    assert "EXPR|FILE.json" in row and "an expression" in row


def test_grad_simplify_gives_the_textbook_formula_in_one_fused_loop():
    code, out, err = run("grad", "sum(tanh(x) * x)", "--var", "x=float64[?]", "--wrt", "x",
                         "--simplify")
    assert code == 0, err
    simplified = out.split("simplified (FAST_RUN rewrites):")[1]
    assert simplified.splitlines()[1].strip() == "tanh(x) + x * (1.0 - tanh(x) * tanh(x))"
    assert "compiled as 1 node(s)" in simplified
    for noise in ("Alloc", "SumToShape", "* 1.0", "[1.]"):
        assert noise not in simplified
