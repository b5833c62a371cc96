"""The benchmark harness's pieces (`benchmarks/wb_bench`), fast and without timing
asserts: how cold compiles are sampled, which caches PyTensor is pointed at."""

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from wb_bench import compile_time  # noqa: E402
from wb_bench.common import SUBJECT  # noqa: E402


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
