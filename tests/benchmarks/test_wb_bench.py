"""The benchmark harness's pieces (`benchmarks/wb_bench`), fast and without timing
asserts: how cold compiles are sampled, which caches PyTensor is pointed at, both call
patterns in one run, the threads read back, the table, the checks of a training step,
the per-node profiles and the hand-written row references."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.core.link.c.compiler import has_compiler

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from wb_bench import compile_time, threads  # noqa: E402
from wb_bench.common import (  # noqa: E402
    SUBJECT,
    Case,
    Context,
    Row,
    check_step,
    fill_ratios,
    format_table,
)


def test_pytensor_flags_move_every_cache_under_one_fresh_base_directory():
    # the Numba linker's cache lives under base_compiledir, so compiledir= alone left it warm
    flags = compile_time.pytensor_flags("floatX=float32,compiledir=/old, base_compiledir=/b",
                                        "/tmp/fresh")
    assert flags == "floatX=float32,base_compiledir=/tmp/fresh"
    assert compile_time.pytensor_flags("", "/tmp/x") == "base_compiledir=/tmp/x"


def test_new_process_rows_are_medians_of_fresh_caches_after_an_untimed_warm_up():
    calls = []
    walls = iter([9.0, 3.0, 0.5, 1.0, 0.2, 2.0, 5.0, 0.4, 7.0, 4.0, 0.3, 0.1, 3.0])

    def child(args, cache_dir, timeout, pytensor_dir):
        calls.append((tuple(args), cache_dir, pytensor_dir))
        return {"total_seconds": next(walls), "cpu_seconds": 1.0,
                "compiler_cpu_seconds": 0.5}

    rows = compile_time.new_process_rows("fused", "compile fused chain",
                                         [SUBJECT, "pytensor default"], 3, child)
    assert calls[0][0] == ("compile", "fused")  # the untimed warm-up, its own cache
    warm_up_cache = calls[0][1]
    rounds = [calls[1 + 4 * k: 5 + 4 * k] for k in range(3)]
    caches = {r[0][1] for r in rounds}
    assert len(caches) == 3 and warm_up_cache not in caches  # fresh per round
    for r in rounds:
        assert [c[0] for c in r] == [("compile", "fused"), ("compile", "fused", "pytensor")] * 2
        assert len({c[1] for c in r}) == 1  # cold then warm on the same cache
        assert r[1][2] is not None and r[1][2] == r[3][2] and r[0][2] is None
    by = {(row.case, row.impl): row for row in rows}
    # wall times in call order after the warm-up: round k = (wb cold, pt cold, wb warm,
    # pt warm); medians over the three rounds
    assert by["compile fused chain (cold cache)", SUBJECT].seconds == 3.0  # 3, 2, 4
    assert by["compile fused chain (cold cache)", "pytensor default"].seconds == 0.5
    assert by["compile fused chain (warm cache, new process)", SUBJECT].seconds == 0.4
    assert by["compile fused chain (warm cache, new process)", "pytensor default"].seconds \
        == 3.0  # 0.2, 7, 3
    assert all(row.cpu_seconds == 1.5 for row in rows)  # the process and its compilers
    assert "median of 3 fresh processes" in by["compile fused chain (cold cache)",
                                               SUBJECT].note
    # each row says how its system was made cold or warm (the lookup once never matched)
    assert by["compile fused chain (cold cache)", "pytensor default"].note.startswith(
        "new process, empty base_compiledir")
    assert by["compile fused chain (cold cache)", SUBJECT].note.startswith(
        "new process, empty WORKBENCH_CACHE_DIR")
    assert by["compile fused chain (warm cache, new process)", "pytensor default"
              ].note.startswith("new process, its base_compiledir kept")


def test_a_warm_process_that_compiled_is_named_in_its_rows_note():
    # the kinds each workbench child compiled, per round, when they differ
    compiled = iter([24, 0, 24, 2, 24, 0])  # (cold, warm) per round; one warm compiled 2

    def child(args, cache_dir, timeout, pytensor_dir):
        if cache_dir is None or "warmup" in cache_dir:
            return {"total_seconds": 1.0}
        return {"total_seconds": 1.0, "report": {"compiled": next(compiled)}}

    rows = compile_time.new_process_rows("fused", "compile", [SUBJECT], 3, child)
    notes = {row.case: row.note for row in rows}
    assert "kinds compiled per round 0, 2, 0" in notes["compile (warm cache, new process)"]
    assert "per round" not in notes["compile (cold cache)"]  # 24 each time


def test_a_failing_child_gives_a_failed_row_not_an_abort():
    def child(args, cache_dir, timeout, pytensor_dir):
        if "jax" in args:
            raise RuntimeError("exit code 1: boom")
        return {"total_seconds": 1.0}

    rows = compile_time.new_process_rows("fused", "c", [SUBJECT, "jax jit"], 2, child)
    failed = [r for r in rows if r.impl == "jax jit"]
    assert len(failed) == 2 and all(r.seconds is None and "boom" in r.note for r in failed)
    assert all(r.seconds == 1.0 for r in rows if r.impl == SUBJECT)


@pytest.mark.parametrize("flags", ["", "floatX=float64"])
def test_run_child_gives_pytensor_a_fresh_base_compiledir(monkeypatch, tmp_path, flags):
    seen = {}

    class Done:
        returncode, stdout, stderr = 0, '{"total_seconds": 1.0}\n', ""

    def fake_run(command, env, **kwargs):
        seen.update(env)
        return Done()

    monkeypatch.setenv("PYTENSOR_FLAGS", flags)
    monkeypatch.setattr(compile_time.subprocess, "run", fake_run)
    assert compile_time.run_child(["compile", "fused", "pytensor"], str(tmp_path), 10,
                                  pytensor_dir="/tmp/pt")["total_seconds"] == 1.0
    assert seen["PYTENSOR_FLAGS"].endswith("base_compiledir=/tmp/pt")
    assert seen["WORKBENCH_CACHE_DIR"] == str(tmp_path)


# -- the harness: both call patterns, threads, ratios, the table -------------------------


def test_one_run_measures_both_call_patterns_with_threads_and_cpu_ratios():
    ctx = Context(repeats=2, min_seconds=0.002, patterns=("blocks", "calls"))
    case = Case("sum")
    data = np.arange(10_000.0)
    case.add(SUBJECT, data.sum)
    case.add("numpy", lambda: np.add.reduce(data))

    def broken():
        raise ValueError("no")

    case.add("broken", broken)
    rows = case.measure(ctx)
    fill_ratios(rows)
    assert [r.case for r in rows] == ["sum [back-to-back]"] * 3 + ["sum [interleaved]"] * 3
    for row in rows:
        if row.impl == "broken":
            assert row.seconds is None and row.note == "failed: ValueError: no"
        else:
            assert row.seconds > 0 and row.cpu_seconds is not None
    mine = [r for r in rows if r.impl == SUBJECT]
    assert all(r.ratio == 1.0 for r in mine)
    assert all(r.cpu_ratio == 1.0 for r in mine if r.cpu_seconds)
    # the interleaved rows' threads come from an untimed round (None on a kernel without
    # /proc, 0 when calls are too short for its 10 ms ticks): never more than exist
    for row in rows:
        assert row.threads_run is None or 0 <= row.threads_run <= len(threads.thread_ticks())


def test_measuring_waits_for_workbenchs_background_builds_first():
    # a graph compiled on a cold cache runs its -O1 build while a thread builds -O3
    # (c/tiers.py): measured meanwhile, its row timed -O1 code, shared the pinned CPU
    # with the compiler and counted that thread ("threads run: 2" on one CPU)
    import time

    from workbench.core.link.c import tiers

    events = []

    def build():
        time.sleep(0.2)
        events.append("built")

    tiers.in_background(build)
    case = Case("after the build")
    case.add(SUBJECT, lambda: events.append("called"))
    case.measure(Context(repeats=1, min_seconds=0.001, patterns=("calls",)))
    assert events[0] == "built" and "called" in events
    assert tiers.pending_upgrades() == 0


@pytest.mark.parametrize("script", ["bench_contention", "bench_random"])
def test_standalone_timing_loops_wait_for_the_background_builds_too(script):
    # the scripts that time calls with their own loops use the suite's helper as well
    import importlib
    import time

    from workbench.core.link.c import tiers

    events = []

    def build():
        time.sleep(0.2)
        events.append("built")

    def call():
        events.append("called")

    bench = importlib.import_module(script)
    tiers.in_background(build)
    if script == "bench_contention":
        bench.run_phase({SUBJECT: call}, seconds=0.001, block=1)
    else:
        bench.measure({SUBJECT: call}, calls=1, repeats=1)
    assert events[0] == "built" and "called" in events
    assert tiers.pending_upgrades() == 0


def test_a_per_node_profile_waits_for_the_background_builds_too(monkeypatch):
    # profiled beside the -O3 build, the MLP step read 9.5 ms per call against 1.9 ms
    # measured: the profile timed the -O1 code with the compiler on the pinned CPU
    import time

    import workbench.tensor as wt
    from wb_bench.profiles import add_profile

    import workbench as wb
    from workbench.core.link.c import tiers

    events = []

    def build():
        time.sleep(0.2)
        events.append("built")

    profile = wb.profile

    def recorded(*args, **kwargs):
        events.append("profiled")
        return profile(*args, **kwargs)

    monkeypatch.setattr(wb, "profile", recorded)
    x = wt.dvector("x")
    fn = wb.function([x], wt.exp(x).sum(), linker="py")
    ctx = Context(quick=True)
    tiers.in_background(build)
    add_profile(ctx, "exp sum", fn, np.ones(5))
    assert events == ["built", "profiled"] and tiers.pending_upgrades() == 0
    assert ctx.profiles[0]["calls"] == 5


@pytest.mark.parametrize("pattern", ["blocks", "calls"])
def test_each_result_is_kept_until_the_next_call_returns(pattern):
    # as `y = f(x)` in a loop: workbench's runtime writes into a result the caller
    # dropped, so a harness dropping results spared it the allocation the others make
    import weakref

    class Result:
        pass

    previous, alive = [None], []

    def call():
        if previous[0] is not None:
            alive.append(previous[0]() is not None)
        result = Result()
        previous[0] = weakref.ref(result)
        return result

    case = Case("kept")
    case.add(SUBJECT, call, number=5)
    case.measure(Context(repeats=2, min_seconds=0.001, patterns=(pattern,)))
    assert len(alive) >= 10 and all(alive)
    assert previous[0]() is None  # released once measured


def test_a_single_pattern_keeps_the_case_name():
    ctx = Context(repeats=1, min_seconds=0.001, patterns=("calls",))
    case = Case("noop")
    case.add(SUBJECT, lambda: None)
    assert [r.case for r in case.measure(ctx)] == ["noop"]


def test_table_puts_headlines_above_and_a_cpu_ratio_beside_the_wall_ratio():
    rows = [Row("c", SUBJECT, 2e-3, cpu_seconds=1e-3), Row("c", "jax jit", 3e-3,
                                                            cpu_seconds=4e-3)]
    fill_ratios(rows)
    text = format_table(rows, ["a note"], ["OPENBLAS_CORETYPE=Haswell is set"])
    assert text.startswith("**OPENBLAS_CORETYPE=Haswell is set**")
    jax_line = next(line for line in text.splitlines() if "jax jit" in line)
    cells = [c.strip() for c in jax_line.strip("|").split("|")]
    assert cells[1:7] == ["jax jit", "3.00 ms", "4.00 ms", "-", "1.50", "4.00"]
    assert "- a note" in text


def overhead_rows():
    """The rows of the overhead family as a quick run gives them: long case names, a
    note per reference, a failure, and calls too short for the per-thread clocks."""
    rows = []
    for case in ("call overhead vector[10] trust_input [back-to-back]",
                 "call overhead vector[10] trust_input [interleaved]"):
        rows += [Row(case, SUBJECT, 7e-8, cpu_seconds=7e-8, threads_run=0),
                 Row(case, "pytensor C (CVM, no BLAS)", 2.1e-6, cpu_seconds=2.2e-6,
                     threads_run=1),
                 Row(case, "numpy eager", 12.2e-6, "the expression on an ndarray",
                     cpu_seconds=2.2e-6, threads_run=1),
                 Row(case, "jax jit", None, "failed: RuntimeError: " + "x" * 120)]
    fill_ratios(rows)
    return rows


HEADLINES = ["Per core: the whole process runs on CPU 1 (--pin), every library on 1 thread(s)",
             "OPENBLAS_CORETYPE=Haswell, OPENBLAS_L2_SIZE=512 is set: NumPy, PyTensor and "
             "workbench run OpenBLAS's Haswell kernels (this CPU's own: SkylakeX)",
             "NOT per-core (--pin none): JAX's CPU runtime runs its calls on several threads "
             "though told one (see threads run); compare the cpu columns"]


@pytest.mark.parametrize("width", [80, 116, 148])
def test_the_table_fits_the_terminal_width_and_headlines_take_two_lines(width):
    # 1280 px of DejaVu Sans Mono show 148 columns at 14 px and 116 at 18 px; 80 is the
    # narrow terminal
    rows = overhead_rows()
    text = format_table(rows, ["a note " * 40], HEADLINES, width=width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    header = "implementation" if width > 80 else "impl."  # 80: the short header fits
    assert next(line for line in lines if line.startswith("| case")).split("|")[2].strip() == header
    for headline in HEADLINES:  # bold, wrapped at spaces, at most two lines
        first = next(k for k, line in enumerate(lines) if line.startswith("**" + headline[:9]))
        block = lines[first:lines.index("", first)]
        assert len(block) <= 2 and block[-1].endswith("**")
        assert " ".join(block) == f"**{headline}**"
    # a case name wraps at spaces and hyphens in its column, down the rows of its case
    table = [line for line in lines if line.startswith("| ")]
    cases = "".join(line.split("|")[1].replace(" ", "") for line in table[1:])
    assert cases == "".join(dict.fromkeys(r.case.replace(" ", "") for r in rows))
    # notes become numbered footnotes; calls too short for the clocks say so
    assert "[1] the expression on an ndarray" in text
    assert "[2] failed: RuntimeError: xxx" in text
    implementations = " ".join(line.split("|")[2].strip() for line in table)
    assert "jax jit [2]" in " ".join(implementations.split())
    threads_cells = [line.split("|")[5].strip() for line in table]
    assert " ".join(threads_cells).split().count("short") == 2
    assert "'too short': its calls ran" in " ".join(lines)


def test_table_columns_keep_their_cells_on_one_line_when_the_width_allows():
    text = format_table(overhead_rows(), [], [], width=200)
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + 8  # the header and one line per row
    assert "call overhead vector[10] trust_input [back-to-back]" in table[1]
    assert "| too short   |" in table[1] and "| numpy eager [1] " in table[3]


def test_pin_auto_pins_one_thread_runs_and_refuses_a_foreign_cpu():
    assert threads.pin_cpu("auto", 1, {0, 1}) == 1
    assert threads.pin_cpu("auto", 0, {0, 1}) is None  # each library's own threads
    assert threads.pin_cpu("none", 1, {0, 1}) is None
    assert threads.pin_cpu("0", 1, {0, 1}) == 0
    with pytest.raises(ValueError, match="CPU 7 is not among this process's CPUs"):
        threads.pin_cpu("7", 1, {0, 1})
    with pytest.raises(ValueError, match="a CPU number, 'auto' or 'none', got 'x'"):
        threads.pin_cpu("x", 1, {0, 1})


def test_one_thread_xla_flags_are_real_flags_only(monkeypatch):
    # XLA ignores a token without '--' and aborts on an unknown '--' flag
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/d intra_op_parallelism_threads=1")
    for name in threads.THREAD_VARIABLES:
        monkeypatch.setenv(name, "")
    threads.limit_threads(1)
    assert os.environ["XLA_FLAGS"].split() == ["--xla_dump_to=/tmp/d",
                                               "--xla_cpu_multi_thread_eigen=false"]
    assert all(os.environ[name] == "1" for name in threads.THREAD_VARIABLES)


def test_readback_names_every_pool_workbench_cap_and_cpus():
    note = threads.readback_note()
    assert note.startswith("threads read back after the run: ")
    assert "threadpoolctl" in note and "CPUs this process may use" in note
    # OpenMP checked too: its pool, or that none is loaded
    assert "openmp" in note or "no OpenMP runtime loaded" in note


def test_a_training_step_is_checked_on_every_updated_parameter():
    from wb_bench.mlp import numpy_expected

    from workbench.examples.mlp import initial_params, make_batch, numpy_step

    x, labels = make_batch(batch=8)
    expected = numpy_expected(initial_params(), numpy_step, x, labels, 0.1)
    check_step(expected, expected[0], expected[1], "mlp")  # itself: passes
    stale = list(expected[1])
    stale[2] = initial_params()[2]  # W2 not updated, the cost still right
    with pytest.raises(AssertionError, match="mlp: parameter 2 after the step"):
        check_step(expected, expected[0], stale, "mlp")


def test_per_node_profile_table_of_a_workbench_function():
    import workbench.tensor as wt
    from wb_bench.profiles import add_profile, format_profiles

    import workbench as wb

    ctx = Context(quick=True)
    x = wt.dvector("x")
    fn = wb.function([x], wt.exp(x).sum(), linker="py")
    add_profile(ctx, "exp sum", fn, np.ones(5))
    (prof,) = ctx.profiles
    assert prof["calls"] == 5 and prof["nodes"]
    text = format_profiles(ctx.profiles)
    assert text.startswith("### workbench c per node: exp sum")
    header = next(line for line in text.splitlines() if line.startswith("| node"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "node", "backend", "per call", "share", "BLAS threads"]
    assert "by Op class: " in " ".join(text.split())  # wrapped to the width
    assert "| Python  |" in text
    assert max(len(line) for line in format_profiles(ctx.profiles, 60).splitlines()) <= 60


@pytest.mark.skipif(not has_compiler(), reason="the hand-written references are C")
@pytest.mark.parametrize("name", ["logsumexp", "softmax", "log_softmax"])
def test_hand_written_row_references_agree_with_numpy(name):
    from wb_bench import rows

    data = np.random.default_rng(0).standard_normal((7, 300)) * 30.0
    numpy_fn, passes = rows.KERNELS[name]
    got = rows.reference_call(rows.reference_module(), name, data)
    np.testing.assert_allclose(got, numpy_fn(data), rtol=1e-12, atol=1e-12)
    assert passes.startswith("max pass")


def test_a_reference_that_disagrees_or_raises_becomes_a_failed_row():
    from wb_bench.common import add_checked

    case = Case("twice")
    data = np.arange(3.0)
    add_checked(case, SUBJECT, lambda: data * 2, data * 2)
    add_checked(case, "wrong", lambda: data * 3, data * 2)
    add_checked(case, "raises", lambda: 1 / 0, data * 2)
    rows = {r.impl: r for r in case.measure(Context(repeats=1, min_seconds=0.001))}
    assert rows[SUBJECT].seconds is not None
    assert rows["wrong"].seconds is None
    assert "twice (wrong): result differs from the NumPy reference" in rows["wrong"].note
    assert rows["raises"].note.startswith("failed: ZeroDivisionError")


def test_rewrite_scaling_reports_a_failing_pytensor_and_goes_on(monkeypatch, capsys):
    import bench_rewrite_scaling as scaling

    def broken(n):
        def run():
            raise RuntimeError("rewriter exploded")
        return run

    monkeypatch.setattr(scaling, "pytensor_timer", broken)
    monkeypatch.setattr(sys, "argv", ["bench_rewrite_scaling.py", "--sizes", "4", "8",
                                      "--repeats", "1"])
    scaling.main()
    out = capsys.readouterr().out
    assert "pytensor: failed: RuntimeError: rewriter exploded" in out
    assert "workbench time(N=8) / time(N=4)" in out


def test_rewrite_scaling_rewrites_pytensors_graph_as_pytensor_function_does():
    # issue 22: PyTensor's side is its default mode's rewriter on the FunctionGraph its
    # functions get, not rewrite_graph(include=("fast_run",)); compared with the graph
    # FunctionMaker (what pytensor.function builds before linking) rewrites
    pytest.importorskip("pytensor")
    import warnings

    import bench_rewrite_scaling as scaling
    import pytensor.tensor as pt
    from pytensor.compile import FunctionMaker
    from pytensor.compile.io import In
    from pytensor.compile.mode import get_default_mode

    x = pt.dvector("x")
    y = x
    for i in range(6):
        y = pt.tanh(y) * 0.999 if i % 2 == 0 else y * 1.0001 + 0.5
    y = pt.sort(y) + 1.0  # an intermediate the inplace phase may overwrite

    def nodes(fgraph):
        return [(str(n.op), getattr(n.op, "destroy_map", {})) for n in fgraph.toposort()]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTensor's warning that it links no BLAS
        ours = nodes(scaling.pytensor_rewrite(x, y))
        functions = nodes(FunctionMaker([In(x)], [y], mode=get_default_mode()).fgraph)
    assert ours == functions
    assert len(ours) == 3  # the chain fused into one Composite, the sort, the add
    assert any(destroy for _, destroy in ours)  # the inplace phase ran


def test_pytensors_c_mode_says_whether_it_links_a_blas(monkeypatch):
    # issue 22: "pytensor C" without a BLAS (matrix products through NumPy from Python)
    # must say so in its label and in the run's notes; quick runs time the default only
    pytest.importorskip("pytensor")
    import warnings

    from wb_bench import common

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTensor's warning that it links no BLAS
        separate_c = common.pytensor_default_linker() not in ("cvm", "c", "vm")
        for has_blas, label, note in (
                (False, "pytensor C (CVM, no BLAS)", "no BLAS linked to its C code"),
                (True, "pytensor C (CVM)", "its C code links a BLAS")):
            monkeypatch.setattr(common, "pytensor_has_blas", lambda has_blas=has_blas: has_blas)
            ctx = Context(repeats=1)
            assert common.pytensor_module(ctx) is not None
            assert any(note in line for line in ctx.notes)
            labels = [name for name, _ in common.pytensor_modes(ctx)]
            expected = ["pytensor default", label] if separate_c else ["pytensor default"]
            assert labels == expected
            quick = [name for name, _ in common.pytensor_modes(Context(quick=True, repeats=1))]
            assert quick == ["pytensor default"]


def test_the_headline_names_the_openblas_kernels_a_run_used(monkeypatch):
    # read with threadpoolctl under the run's environment, forced or not
    seen = []

    def kernels(environ):
        seen.append(dict(environ))
        return "Haswell" if environ.get("OPENBLAS_CORETYPE") else "SkylakeX"

    monkeypatch.setattr(threads, "blas_kernels", kernels)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "512")
    own = threads.coretype_banner({})
    assert own == ("OpenBLAS runs its SkylakeX kernels for NumPy, PyTensor and workbench: "
                   "its own choice for this CPU (OPENBLAS_CORETYPE and _L2_SIZE unset)")
    forced = threads.coretype_banner({"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512"})
    assert forced.startswith("OPENBLAS_CORETYPE=Haswell, OPENBLAS_L2_SIZE=512 is set: NumPy, "
                             "PyTensor and workbench run OpenBLAS's Haswell kernels")
    assert "(this CPU's own: SkylakeX)" in forced
    assert max(len(own), len(forced)) <= 150  # a headline: two lines of a narrow terminal
    # "left to itself": both variables unset, as --coretype auto does
    assert not any(name in seen[-1] for name in threads.CORETYPE_VARIABLES)


def test_coretype_auto_unsets_the_kernel_and_cache_size_together():
    env = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512", "PATH": "/bin"}
    threads.apply_coretype(None, env)
    assert env["OPENBLAS_CORETYPE"] == "Haswell" and env["OPENBLAS_L2_SIZE"] == "512"
    threads.apply_coretype("SkylakeX", env)
    assert env["OPENBLAS_CORETYPE"] == "SkylakeX" and env["OPENBLAS_L2_SIZE"] == "512"
    threads.apply_coretype("auto", env)
    assert env == {"PATH": "/bin"}


def test_coretype_takes_auto_or_a_kernel_name_and_refuses_anything_else():
    for name in ("auto", "Haswell", "SkylakeX", "zen", "NEOVERSEN1", "ARMV8SVE"):
        assert threads.check_coretype(name) == name
    for bad in ("", "Sky lake", "Haswell=1", "8", "-x", "Zén"):
        with pytest.raises(ValueError, match=r"--coretype takes 'auto' or an OpenBLAS "
                                             r"kernel name .*, got "):
            threads.check_coretype(bad)


def test_contention_slowdown_is_against_the_quieter_idle_phase():
    # pooling both idle phases hid a slowdown when one of them was not idle (the BLAS's
    # own threads: 3.5x against the pool, 20x against the first idle phase)
    import bench_contention

    phases = {"idle": {"x": [1.0] * 8}, "busy": {"x": [20.0] * 2},
              "idle again": {"x": [30.0] * 2}}
    assert bench_contention.slowdown(phases, "x") == 20.0
    assert bench_contention.idle_spread(phases, "x") == 30.0


def test_bench_blas_policy_runs_its_three_implementations(capsys):
    # it unpacks bench_contention.workbench_steps: a change of that tuple broke it once
    import bench_blas_policy

    assert bench_blas_policy.main(["--seconds", "0.2", "--block", "2"]) == 0
    table = capsys.readouterr().out
    for name in ("| all | policy |", "| all | threads |", "| all | 1 thread |"):
        assert name in table


def test_contention_times_each_implementation_alone_in_a_process_of_its_own(capsys):
    # the default: a fresh process per implementation, so that no implementation's
    # spinning workers take cores from the next one; the child reports its phases as JSON
    import bench_contention

    argv = ["--seconds", "0.05", "--block", "1", "--no-jax", "--no-baseline"]
    assert bench_contention.implementation_names(bench_contention.parse_args(argv)) == [
        "workbench c"]
    assert bench_contention.main(argv) == 0
    out = capsys.readouterr().out
    assert "each implementation alone in a fresh process" in out
    for phase in ("idle", "busy", "idle again"):
        assert f"| workbench c | {phase} |" in out
    assert "slowdown busy/idle (mean): workbench c " in out
