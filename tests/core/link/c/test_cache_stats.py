"""The module cache's statistics outlive the process: each process adds its counters
to `<root>/stats.json` when it exits, and `workbench cache info` reads the sums."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workbench.core.link.c.cache_stats import STATS_FILE, add_to_lifetime, lifetime_stats
from workbench.core.link.c.compiler import has_compiler


def test_counters_of_several_processes_add_up(tmp_path):
    assert lifetime_stats(tmp_path) == {}
    add_to_lifetime(tmp_path, {"disk_hits": 2, "builds": 1, "compile_seconds": 0.5})
    add_to_lifetime(tmp_path, {"disk_hits": 3, "memory_hits": 4})
    add_to_lifetime(tmp_path, {"disk_hits": 0})  # used no module: not counted
    stats = lifetime_stats(tmp_path)
    assert (stats["disk_hits"], stats["memory_hits"], stats["builds"]) == (5, 4, 1)
    assert stats["compile_seconds"] == 0.5 and stats["processes"] == 2 and stats["since"] > 0


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"disk_hits": "many", "builds": -1}'])
def test_a_malformed_file_reads_as_no_history_and_is_replaced(tmp_path, text):
    (tmp_path / STATS_FILE).write_text(text)
    assert lifetime_stats(tmp_path) == {}
    add_to_lifetime(tmp_path, {"builds": 1})
    assert lifetime_stats(tmp_path)["builds"] == 1


def test_a_read_only_cache_keeps_no_history_without_failing(tmp_path):
    os.chmod(tmp_path, 0o500)
    try:
        add_to_lifetime(tmp_path, {"builds": 1})  # no exception
    finally:
        os.chmod(tmp_path, 0o700)
    assert not (tmp_path / STATS_FILE).exists() or os.geteuid() == 0


@pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")
def test_a_process_that_compiled_leaves_its_counters_behind(tmp_path):
    code = ("import workbench as wb, workbench.tensor as wt; x = wt.dvector('x'); "
            "wb.function([x], wt.exp(x) * 3 - x, linker='c')([1.0])")
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(tmp_path))
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)
    stats = lifetime_stats(tmp_path / "c")
    assert stats["processes"] == 2
    assert stats["builds"] >= 1 and stats["disk_hits"] >= 1  # the second found the first's
