"""The compiled-module cache heals what disks and people do to it: each damage below is
seen as a miss (with a warning where something is removed) and rebuilt, never a crash,
a permanent failure or a function of another kind. Damage that could crash the
process is exercised in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import filelock
import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.core.link.c import CorruptCacheEntryWarning, ModuleCache, has_compiler
from workbench.core.link.c import compiler as cc
from workbench.testing.c_modules import constant_module

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")

ROOT = Path(__file__).resolve().parents[4]


def run_python(code: str, cache_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh process whose cache directory is `cache_dir`."""
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def built_entry(root: Path, name: str = "wbc_heal", value: int = 4) -> Path:
    """The entry directory of a freshly built (not loaded) module."""
    so = ModuleCache(root).ensure_built("heal", constant_module(name, value), name,
                                        version=(1,))
    return so.parent


def rebuilt_value(root: Path, name: str = "wbc_heal", value: int = 4) -> int:
    cache = ModuleCache(root)
    return cache.get_or_build("heal", constant_module(name, value), name,
                              version=(1,)).value()


def edit_manifest(entry: Path, change: Callable[[dict], object]) -> None:
    manifest = json.loads((entry / "manifest.json").read_text())
    changed = change(manifest)
    (entry / "manifest.json").write_text(json.dumps(manifest if changed is None else changed))


@pytest.mark.parametrize("change", [
    lambda m: m.update(so_size=str(m["so_size"])),
    lambda m: m.update(so_sha256=[m["so_sha256"]]),
    lambda m: m.update(so_name=5),
    lambda m: [m],
    lambda m: m.update(so_size=True),
], ids=["size as text", "hash as list", "so_name a number", "a list", "size a bool"])
def test_a_manifest_with_values_of_the_wrong_types_is_rebuilt(tmp_path, change):
    entry = built_entry(tmp_path)
    edit_manifest(entry, change)
    with pytest.warns(CorruptCacheEntryWarning, match="corrupt"):
        assert rebuilt_value(tmp_path) == 4
    assert rebuilt_value(tmp_path) == 4  # healed: a plain disk hit now


def test_verification_checks_the_binary_that_is_loaded(tmp_path):
    # The manifest names a pristine copy while the binary that would be loaded is
    # truncated: checking the copy and loading the other would crash (SIGBUS).
    entry = built_entry(tmp_path)
    so = next(entry.glob("wbc_heal*.so"))
    (entry / "copy.so").write_bytes(so.read_bytes())
    edit_manifest(entry, lambda m: m.update(so_name="copy.so"))
    so.write_bytes(so.read_bytes()[:2000])
    done = run_python("""
        import sys, warnings
        from workbench.core.link.c import ModuleCache
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            module = ModuleCache(sys.argv[1]).get_or_build(
                "heal", sys.argv[2], "wbc_heal", version=(1,))
        print(module.value(), [str(w.message)[:200] for w in seen])
    """, tmp_path, str(tmp_path), constant_module("wbc_heal", 4))
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.startswith("4 ") and "names the binary 'copy.so'" in done.stdout


def test_an_entry_replaced_by_a_file_is_rebuilt(tmp_path):
    entry = built_entry(tmp_path)
    for item in entry.iterdir():
        item.unlink()
    entry.rmdir()
    entry.write_text("not a directory")
    with pytest.warns(CorruptCacheEntryWarning, match="not a directory"):
        assert rebuilt_value(tmp_path) == 4
    assert entry.is_dir()


@pytest.mark.parametrize("place", ["locks", "tmp"])
def test_a_file_where_the_cache_keeps_a_directory_is_replaced(tmp_path, place):
    (tmp_path / place).write_text("in the way")
    with pytest.warns(CorruptCacheEntryWarning, match="not a directory"):
        assert rebuilt_value(tmp_path) == 4
    assert (tmp_path / place).is_dir()


def test_build_directories_of_killed_builders_are_cleaned(tmp_path):
    cache = ModuleCache(tmp_path)
    key = cache.key("heal", constant_module("wbc_heal", 4), "wbc_heal", version=(1,))
    other, busy = "a" * 32, "b" * 32
    tmp = tmp_path / "tmp"
    for name in (f"{key}-killed", f"{other}-killed", f"{busy}-building", "trash-old-x",
                 "trash-new-x"):
        (tmp / name).mkdir(parents=True)
        (tmp / name / "wbc_heal.c").write_text("/* half a build */")
    long_ago = time.time() - 3600
    os.utime(tmp / "trash-old-x", (long_ago, long_ago))
    (tmp_path / "locks").mkdir()
    with filelock.FileLock(str(tmp_path / "locks" / f"{busy}.lock")):  # a builder at work
        assert rebuilt_value(tmp_path) == 4
    assert sorted(p.name for p in tmp.iterdir()) == [f"{busy}-building", "trash-new-x"]


def test_a_damaged_precompiled_header_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cc, "_sound_preludes", set())
    flags = [*cc.compiler_info().default_flags, *cc.GENERATED_CODE_FLAGS]
    directory = cc.prelude_dir(flags)
    gch = directory / "wb_prelude.h.gch"
    if not gch.exists():
        pytest.skip("this compiler does not precompile headers (no .gch to damage)")
    gch.write_bytes(gch.read_bytes()[:4096])
    cc._sound_preludes.clear()  # as in a new process
    source = cc.PRELUDE_INCLUDE + "\n" + constant_module("wbc_pch", 9).replace(
        "#include <Python.h>", "")
    so = cc.compile_module(source, "wbc_pch", out_dir=tmp_path / "out", flags=flags)
    assert cc.load_module(so, "wbc_pch", "workbench_c.heal_pch.wbc_pch").value() == 9
    assert not cc._prelude_sound(directory)  # the compile parsed the text, built nothing
    cc.build_wanted_preludes()  # (the C linker does this after a graph's compile)
    assert gch.stat().st_size > 4096 and cc._prelude_sound(directory)


def test_a_compile_does_not_wait_for_a_precompiled_header_being_built(tmp_path, monkeypatch):
    """While another builder holds the prelude's lock (the C linker builds the .gch in a
    thread as a graph is rewritten), a module parses the header text instead of waiting."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cc, "_sound_preludes", set())
    flags = [*cc.compiler_info().default_flags, *cc.GENERATED_CODE_FLAGS]
    directory = cc.prelude_dir(flags)
    (directory / "wb_prelude.h").write_text("/* not yet written */")  # as mid-build
    cc._sound_preludes.clear()
    source = cc.PRELUDE_INCLUDE + "\n" + constant_module("wbc_text", 5).replace(
        "#include <Python.h>", "")
    with filelock.FileLock(str(directory.parent / f"{directory.name}.lock")):
        text = cc.prelude_dir(flags, wait=False)
        assert text != directory and not list(text.glob("*.gch"))
        assert (text / "wb_prelude.h").read_text() == cc.PRELUDE
        so = cc.compile_module(source, "wbc_text", out_dir=tmp_path / "out", flags=flags)
    assert cc.load_module(so, "wbc_text", "workbench_c.heal_text.wbc_text").value() == 5
    assert cc.prelude_dir(flags) == directory and cc._prelude_sound(directory)  # then built


def test_a_changed_prelude_header_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cc, "_sound_preludes", set())
    flags = [*cc.compiler_info().default_flags, *cc.GENERATED_CODE_FLAGS]
    header = cc.prelude_dir(flags) / "wb_prelude.h"
    header.write_text(cc.PRELUDE[: len(cc.PRELUDE) // 2])
    cc._sound_preludes.clear()
    assert (cc.prelude_dir(flags) / "wb_prelude.h").read_text() == cc.PRELUDE


def test_probe_answers_of_the_wrong_types_are_asked_again(tmp_path):
    first = run_python("from workbench.core.link.c import compiler as cc; "
                       "cc.compiler_info(); cc.cpu_features()", tmp_path)
    assert first.returncode == 0, first.stderr
    probes = tmp_path / "probes.json"
    answers = json.loads(probes.read_text())
    probes.write_text(json.dumps({key: [1, 2] for key in answers}))
    again = run_python("""
        from workbench.core.link.c import compiler as cc
        info = cc.compiler_info()
        assert isinstance(info.version, str) and isinstance(info.march_native, bool)
        print(cc.cpu_features())
    """, tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(probes.read_text()) == answers  # healed


def test_swapped_aliases_never_call_another_kinds_function(tmp_path):
    script = """
        import numpy as np
        import workbench as wb, workbench.tensor as wt
        x = wt.dvector("x")
        f = wb.function([x], [x.sum(), x.max()], linker="c")
        print([float(v) for v in f(np.array([1.0, 2.0, 3.0]))])
    """
    assert run_python(script, tmp_path).stdout.strip() == "[6.0, 3.0]"
    aliases = {}
    for path in tmp_path.glob("c/*/aliases/*.json"):
        aliases[path] = path.read_text()
    kinds = [p for p in aliases if json.loads(aliases[p])["module"] == "wbbundle"]
    assert len(kinds) >= 2
    for path, other in zip(kinds, kinds[1:] + kinds[:1]):  # each alias gets another's
        path.write_text(aliases[other])
    done = run_python(script, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[6.0, 3.0]"


def test_cache_info_on_a_missing_directory_creates_nothing(tmp_path):
    missing = tmp_path / "nowhere"
    done = run_python("from workbench.cli import app; app()", missing, "cache", "info", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["entries"] == 0
    assert not missing.exists()


def test_cache_clear_removes_preludes_and_probes_and_counts_them(tmp_path, monkeypatch):
    built = run_python("""
        import numpy as np
        import workbench as wb, workbench.tensor as wt
        x = wt.dvector("x")
        wb.function([x], wt.exp(x) * 2, linker="c")(np.ones(3))
    """, tmp_path)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "probes.json").is_file() and (tmp_path / "prelude").is_dir()
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["cache", "clear"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("removed ") and "compiled module(s)" in lines[0]
    assert int(lines[0].split()[1]) >= 2  # the runtime and a bundle at least
    assert any("prelude" in line and "precompiled prelude(s)" in line for line in lines)
    assert any("probes.json" in line for line in lines)
    assert not (tmp_path / "probes.json").exists() and not (tmp_path / "prelude").exists()
    assert ModuleCache(tmp_path / "c").entries() == []


def test_answers_probed_at_once_by_several_threads_are_all_kept(tmp_path, monkeypatch):
    # A cold cache probes the compiler's version, shared-library support and
    # -march=native in three threads at once; each adds its answer to probes.json.
    # Written without taking turns, one thread's file replaced another's answer.
    import threading

    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    command = ("no-such-compiler",)
    start = threading.Barrier(8)

    def ask(k: int) -> None:
        start.wait()
        cc._probed(command, ("question", k), lambda: f"answer {k}", str)

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kept = json.loads((tmp_path / "probes.json").read_text())
    assert sorted(kept.values()) == sorted(f"answer {k}" for k in range(8))
