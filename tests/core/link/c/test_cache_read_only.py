"""A cache directory this process cannot write (a shared lab machine, a container):
what it holds is used, new modules are built in a private temporary directory with
one warning, nothing is written into it, and `cache clear` refuses with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import workbench.tensor as wt
from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app
from workbench.core.link.c import ModuleCache, has_compiler, tiers
from workbench.core.link.c import cache as cache_module
from workbench.core.link.c import compiler as cc
from workbench.core.link.c.compiler import ReadOnlyCacheWarning
from workbench.testing.c_modules import constant_module

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")


def tree(root: Path) -> list[tuple[str, int]]:
    """Every path under `root` with its size: what a test compares before and after."""
    return sorted((str(p.relative_to(root)), p.lstat().st_size) for p in root.rglob("*"))


@pytest.fixture
def read_only_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The cache directory (WORKBENCH_CACHE_DIR), made read-only with chmod. Root is not
    stopped by permission bits: there, the one write check (cc.can_write) answers for
    this directory as it would for any other user, so the same paths are exercised."""
    cache_dir = tmp_path / "shared-cache"
    ModuleCache(cache_dir / "c").ensure_built("old", constant_module("wbc_ro_old", 1),
                                              "wbc_ro_old", version=(1,))
    for place in [cache_dir, *[p for p in cache_dir.rglob("*") if p.is_dir()]]:
        place.chmod(0o555)
    if cc.can_write(cache_dir):  # root
        real = cc.can_write

        def can_write(directory: Path, create: bool = True) -> bool:
            inside = directory == cache_dir or cache_dir in directory.parents
            return False if inside else real(directory, create)

        monkeypatch.setattr(cc, "can_write", can_write)
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(cc, "_private_dir", None)  # as in a new process
    monkeypatch.setattr(cache_module, "_default", None)
    yield cache_dir
    for place in [cache_dir, *[p for p in cache_dir.rglob("*") if p.is_dir()]]:
        place.chmod(0o755)


def test_new_graphs_compile_into_a_private_directory_with_one_warning(read_only_dir):
    before = tree(read_only_dir)
    x = wt.dvector("x")
    with pytest.warns(ReadOnlyCacheWarning, match="is not writable") as seen:
        f = wb.function([x], wt.tanh(x) * 3 - x, linker="c")
        g = wb.function([x], (wt.sqrt(x) + 7).max())  # the default linker too
    assert len([w for w in seen if w.category is ReadOnlyCacheWarning]) == 1
    assert str(read_only_dir) in str(seen[0].message)
    value = np.array([0.5, 2.0])
    np.testing.assert_allclose(f(value), np.tanh(value) * 3 - value)
    np.testing.assert_allclose(g(value), (np.sqrt(value) + 7).max())
    assert f.linker.report.py_nodes == []
    tiers.wait_for_upgrades()  # the -O3 builds that follow the quick ones (tiers.py)
    assert tree(read_only_dir) == before  # nothing written into the read-only cache
    private = cc._private_dir
    assert private is not None and any(private.rglob("*.so"))


def test_what_a_read_only_cache_holds_is_used_without_a_warning(read_only_dir):
    cache = ModuleCache(read_only_dir / "c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = cache.get_or_build("old", constant_module("wbc_ro_old", 1), "wbc_ro_old",
                                    version=(1,))
    assert module.value() == 1
    assert (cache.stats.disk_hits, cache.stats.builds) == (1, 0)


def test_cache_clear_on_a_read_only_cache_says_so_and_exits_2(read_only_dir):
    before = tree(read_only_dir)
    result = CliRunner().invoke(app, ["cache", "clear"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: cannot clear the cache: ")
    assert "read-only" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert tree(read_only_dir) == before


def test_the_write_check_creates_nothing_when_asked_not_to(tmp_path):
    missing = tmp_path / "missing"
    assert cc.can_write(missing, create=False) and not missing.exists()
    assert cc.can_write(missing) and missing.is_dir() and list(missing.iterdir()) == []
    if os.geteuid() != 0:
        missing.chmod(0o555)
        try:
            assert not cc.can_write(missing)
        finally:
            missing.chmod(0o755)


def test_a_fresh_process_on_a_read_only_cache_compiles_and_runs(tmp_path):
    # The real thing, no stand-in for the write check: chmod for a user, and for root
    # (whom chmod does not stop) a read-only bind mount in a private mount namespace.
    cache_dir = tmp_path / "read-only"
    cache_dir.mkdir()
    script = ("import numpy as np, workbench as wb, workbench.tensor as wt\n"
              "x = wt.dvector('x')\n"
              "print(wb.function([x], wt.tanh(x) * 2.75 - x, linker='c')(np.ones(2)).tolist())\n")
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[4]),
                                           os.environ.get("PYTHONPATH", "")]))
    if os.geteuid() != 0:
        cache_dir.chmod(0o555)
        command = [sys.executable, "-c", script]
    else:
        mount = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" -c "$3"'
        command = ["unshare", "-m", "sh", "-c", mount, "sh", str(cache_dir), sys.executable,
                   script]
        try:
            allowed = subprocess.run(["unshare", "-m", "true"], capture_output=True,
                                     timeout=30).returncode == 0
        except OSError:
            allowed = False
        if not allowed:
            pytest.skip("running as root without the right to make a private read-only "
                        "mount (chmod does not stop root); the fixture-based tests above "
                        "cover the same paths")
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600,
                              cwd=tmp_path)
    finally:
        cache_dir.chmod(0o755)
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_allclose(json.loads(done.stdout), [np.tanh(1.0) * 2.75 - 1.0] * 2)
    assert done.stderr.count("is not writable") == 1
    assert list(cache_dir.iterdir()) == []
