"""The on-disk cache of compiled modules: hits, atomic builds, locks, corruption."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from workbench.core.link.c import (
    CompileError,
    CorruptCacheEntryWarning,
    ModuleCache,
    has_compiler,
)
from workbench.testing.c_modules import constant_module

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")


def test_memory_then_disk_hits(tmp_path):
    source = constant_module("wbc_hits", 7)
    first = ModuleCache(tmp_path)
    mod = first.get_or_build(("node", 1), source, "wbc_hits", version=(1,))
    assert mod.value() == 7
    assert first.get_or_build(("node", 1), source, "wbc_hits", version=(1,)) is mod
    assert (first.stats.builds, first.stats.memory_hits, first.stats.disk_hits) == (1, 1, 0)

    second = ModuleCache(tmp_path)  # e.g. a new process: nothing in memory
    assert second.get_or_build(("node", 1), source, "wbc_hits", version=(1,)).value() == 7
    assert (second.stats.builds, second.stats.disk_hits) == (0, 1)

    [entry] = second.entries()
    manifest = json.loads((entry / "manifest.json").read_text())
    so = entry / manifest["so_name"]
    assert manifest["so_size"] == so.stat().st_size and len(manifest["so_sha256"]) == 64
    assert manifest["version"] == [1] and manifest["key_parts"] == repr(("node", 1))
    assert (entry / "wbc_hits.c").read_text() == source
    info = second.info()
    assert info["entries"] == 1 and info["total_bytes"] > so.stat().st_size


def test_key_covers_source_version_flags_and_key_parts(tmp_path):
    cache = ModuleCache(tmp_path)
    src = constant_module("wbc_key", 1)
    base = cache.key("k", src, "wbc_key", version=(1,))
    assert cache.key("k", src, "wbc_key", version=(1,)) == base
    assert cache.key("k", src, "wbc_key", version=(2,)) != base
    assert cache.key("k", src, "wbc_key", version=(1,), extra_flags=("-DX=1",)) != base
    assert cache.key("k", src, "wbc_key", version=(1,), flags=("-O0", "-fPIC")) != base
    assert cache.key("k", src, "wbc_key", version=(1,), libraries=("m",)) != base
    assert cache.key("other", src, "wbc_key", version=(1,)) != base
    assert cache.key("k", constant_module("wbc_key", 2), "wbc_key", version=(1,)) != base
    assert cache.stats.builds == 0  # computing keys compiles nothing


def test_same_module_name_different_code_do_not_clash(tmp_path):
    cache = ModuleCache(tmp_path)
    one = cache.get_or_build("a", constant_module("wbc_same", 1), "wbc_same", version=(1,))
    two = cache.get_or_build("b", constant_module("wbc_same", 2), "wbc_same", version=(1,))
    assert (one.value(), two.value()) == (1, 2)
    assert one.__name__ != two.__name__
    assert len(cache.entries()) == 2


def test_truncated_entry_is_detected_and_rebuilt(tmp_path):
    source = constant_module("wbc_trunc", 3)
    # Build without loading: truncating a binary this process has mapped would crash it.
    so = ModuleCache(tmp_path).ensure_built("t", source, "wbc_trunc", version=(1,))
    data = so.read_bytes()
    so.write_bytes(data[: len(data) // 2])

    cache = ModuleCache(tmp_path)
    with pytest.warns(CorruptCacheEntryWarning, match="corrupt"):
        mod = cache.get_or_build("t", source, "wbc_trunc", version=(1,))
    assert mod.value() == 3
    assert (cache.stats.corrupt_rebuilds, cache.stats.builds) == (1, 1)
    assert so.stat().st_size == len(data)
    assert len(cache.entries()) == 1


def test_unversioned_code_is_never_persisted(tmp_path):
    cache = ModuleCache(tmp_path)
    source = constant_module("wbc_unversioned", 5)
    mod = cache.get_or_build("u", source, "wbc_unversioned", version=())
    assert mod.value() == 5
    assert cache.get_or_build("u", source, "wbc_unversioned", version=()) is mod
    assert cache.stats.unversioned_builds == 1 and cache.stats.builds == 0
    assert cache.entries() == [] and cache.info()["entries"] == 0
    assert not any(p.suffix in (".so", ".c") for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError, match="non-empty version"):
        cache.ensure_built("u", source, "wbc_unversioned", version=())


def test_compile_error_leaves_no_entry_and_clear_empties_the_cache(tmp_path):
    cache = ModuleCache(tmp_path)
    with pytest.raises(CompileError) as info:
        cache.get_or_build("bad", "int broken( {", "wbc_bad", version=(1,))
    assert cache.entries() == [] and list((tmp_path / "tmp").iterdir()) == []
    kept = info.value.source_path  # the failed source stays for debugging
    assert kept.read_text() == "int broken( {" and kept.parent.parent.name == "failed"
    assert str(kept) in str(info.value)

    cache.ensure_built("ok", constant_module("wbc_clear", 1), "wbc_clear", version=(1,))
    assert cache.info()["entries"] == 1
    assert cache.clear() == 1
    assert cache.entries() == [] and not (tmp_path / "locks").exists()
    assert not (tmp_path / "failed").exists()


def test_two_processes_compiling_the_same_key_share_one_entry(tmp_path):
    # Both processes import, report ready, then wait for "go" so that they ask for the same
    # key at the same moment: one compiles under the key's lock, the other waits and loads.
    script = textwrap.dedent(f"""
        import json, pathlib, sys, time
        from workbench.core.link.c import ModuleCache
        root, me = pathlib.Path(sys.argv[1]), sys.argv[2]
        cache = ModuleCache(root / "cache")
        (root / ("ready-" + me)).touch()
        deadline = time.time() + 60
        while not (root / "go").exists() and time.time() < deadline:
            time.sleep(0.005)
        mod = cache.get_or_build("race", {constant_module("wbc_race", 11)!r}, "wbc_race",
                                 version=(1,))
        assert mod.value() == 11
        print(json.dumps(cache.stats.as_dict()))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    deadline = time.time() + 60
    while not all((tmp_path / f"ready-{i}").exists() for i in range(2)):
        assert time.time() < deadline and all(p.poll() is None for p in procs), \
            [p.communicate() for p in procs if p.poll() is not None]
        time.sleep(0.005)
    (tmp_path / "go").touch()
    results = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, results):
        assert p.returncode == 0, err
    stats = [json.loads(out.strip().splitlines()[-1]) for out, _ in results]
    assert sum(s["builds"] for s in stats) == 1
    assert sum(s["disk_hits"] for s in stats) == 1
    cache = ModuleCache(tmp_path / "cache")
    assert len(cache.entries()) == 1
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []


def test_key_parts_must_have_a_stable_repr(tmp_path):
    with pytest.raises(ValueError, match="memory address"):
        ModuleCache(tmp_path).key(object(), "", "wbc_addr", version=(1,))
