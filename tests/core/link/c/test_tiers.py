"""Tiered compilation (tiers.py): on a cold cache a graph's new kinds run from a quick
-O1 build until the -O3 build, made in the background, takes over; values are the same
bit for bit, and the cache ends up holding the -O3 build."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.link.c import bundle, tiers
from workbench.core.link.c import cache as cache_module
from workbench.core.link.c import compiler as cc
from workbench.core.link.c.cache import default_cache
from workbench.core.link.c.compiler import has_compiler

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")


def _fresh_cache(monkeypatch: pytest.MonkeyPatch, root) -> None:
    """The process's cache replaced by an empty one at `root`."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(root))
    monkeypatch.setattr(cache_module, "_default", None)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch, tmp_path) -> list:
    """A fresh cache, and the background -O3 builds held back (run them by hand)."""
    _fresh_cache(monkeypatch, tmp_path)
    monkeypatch.delenv(tiers.TIERED_ENV, raising=False)
    works: list = []
    monkeypatch.setattr(tiers, "in_background", works.append)
    return works


def _graphs() -> tuple[list, list]:
    """Elementwise math (vector exp, tanh, erf), reductions and a row kernel, f32 and f64."""
    rng = np.random.default_rng(0)
    inputs, outputs, values = [], [], []
    for dtype in ("float32", "float64"):
        x, y = wt.matrix(f"x{dtype}", dtype=dtype), wt.matrix(f"y{dtype}", dtype=dtype)
        inputs += [x, y]
        values += [(rng.normal(size=(37, 203)) * 3).astype(dtype),
                   rng.normal(size=(37, 203)).astype(dtype)]
        outputs += [wt.exp(x) * wt.tanh(y) + x ** 2 / (1 + y * y), wt.erf(x) - wt.log1p(y * y),
                    (x * y).sum(axis=0), wt.exp(x).sum(axis=1), x.max(axis=1),
                    wt.log(wt.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1))]
    return [inputs, outputs], values


def test_a_cold_graph_runs_from_the_quick_build_then_the_optimised_one_same_bits(held):
    (inputs, outputs), values = _graphs()
    f = wb.function(inputs, outputs, linker="c")
    assert f.linker.report.compiled > 0 and len(held) == 1
    quick = [np.array(v) for v in f(*values)]
    sources = [src for src in f.linker.report.sources.values() if src.version]
    assert sources and all(bundle.module_file(default_cache(), s) is None for s in sources)
    held[0]()  # the -O3 build: into the cache, the trampolines pointed at it
    optimised = [np.array(v) for v in f(*values)]
    for a, b in zip(quick, optimised):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    assert all(bundle.module_file(default_cache(), s) is not None for s in sources)


def test_the_optimised_build_gives_what_a_direct_o3_build_gives(held, monkeypatch, tmp_path):
    (inputs, outputs), values = _graphs()
    f = wb.function(inputs, outputs, linker="c")
    quick = [np.array(v) for v in f(*values)]
    _fresh_cache(monkeypatch, tmp_path / "direct")
    monkeypatch.setenv(tiers.TIERED_ENV, "0")
    direct = wb.function(inputs, outputs, linker="c")
    assert len(held) == 1  # (nothing held back for the direct build)
    for a, b in zip(quick, direct(*values)):
        assert np.array_equal(a, b, equal_nan=True)


def test_a_warm_cache_needs_no_quick_build(held):
    (inputs, outputs), values = _graphs()
    wb.function(inputs, outputs, linker="c")
    held.pop()()
    default_cache().loaded_symbols.clear()  # as in a new process
    g = wb.function(inputs, outputs, linker="c")
    assert g.linker.report.compiled == 0 and not held


def test_the_switch_refuses_nonsense(monkeypatch):
    monkeypatch.setenv(tiers.TIERED_ENV, "yes")
    with pytest.raises(ValueError, match="WORKBENCH_C_TIERED must be 0"):
        tiers.tiered()
    monkeypatch.setenv(tiers.TIERED_ENV, "0")
    assert not tiers.tiered()


def test_background_builds_still_run_in_parallel_after_the_main_thread_ends():
    # A short script that compiled on a cold cache ends while its -O3 builds are still
    # to start; they must still run (and reach the cache), not be refused because the
    # interpreter is shutting down.
    code = textwrap.dedent("""
        import time
        from workbench.core.link.c import bundle, tiers
        def late():
            time.sleep(0.3)  # the main thread has finished by now
            print(bundle._map(lambda v: 2 * v, [1, 2, 3], workers=2))
        tiers.in_background(late)
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[2, 4, 6]", res.stderr


def test_no_optimised_build_when_the_code_path_changed_after_the_quick_build(
        held, monkeypatch):
    # the variable that picks the code path changes before the -O3 build runs: that
    # build is skipped (its cache entry would be another path's), the quick one stays
    x = wt.dvector("x")
    f = wb.function([x], wt.sinh(x) * 5.0 - 1.0, linker="c")
    assert len(held) == 1
    sources = [src for src in f.linker.report.sources.values() if src.version]
    original = cc.avx512_choice()
    monkeypatch.setenv(cc.AVX512_ENV, "off" if original == "auto" else "auto")
    built = set(default_cache().root.rglob("wbbundle*"))
    held.pop()()
    assert set(default_cache().root.rglob("wbbundle*")) == built  # nothing compiled
    monkeypatch.setenv(cc.AVX512_ENV, original)
    assert all(bundle.module_file(default_cache(), s) is None for s in sources)
    a = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(f(a), np.sinh(a) * 5.0 - 1.0)


def test_the_background_build_succeeds_while_the_main_thread_calls_and_sets_variables(
        monkeypatch, tmp_path):
    # the -O3 build starts the compiler from its thread while this one runs the quick
    # build and changes os.environ (as pytest does at every test phase): it used to fail
    # now and then with "[Errno 14] Bad address: '/usr/bin/gcc'" (spawn.py)
    tiers.wait_for_upgrades()
    _fresh_cache(monkeypatch, tmp_path)
    monkeypatch.setenv(tiers.TIERED_ENV, "1")
    x = wt.dvector("x")
    a = np.linspace(-1, 1, 9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = wb.function([x], wt.cosh(x) * wt.arctan(x) - 0.5, linker="c")
        sources = [src for src in f.linker.report.sources.values() if src.version]
        k = 0
        while tiers.pending_upgrades():
            np.testing.assert_allclose(f(a), np.cosh(a) * np.arctan(a) - 0.5)
            monkeypatch.setenv(f"WB_TEST_TIERS_{k % 8}", "v" * (k % 13))
            k += 1
        tiers.wait_for_upgrades()
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert sources and all(bundle.module_file(default_cache(), s) for s in sources)
    np.testing.assert_allclose(f(a), np.cosh(a) * np.arctan(a) - 0.5)
