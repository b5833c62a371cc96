"""An on-disk cache of compiled extension modules, safe across processes and machines.

Layout under the root (default `$WORKBENCH_CACHE_DIR/c`, else `config.cache_dir/c`)::

    <fingerprint>/<key>/        one entry: <module><EXT_SUFFIX>, <module>.c, manifest.json
    <fingerprint>/aliases/<name>.json
                                a name for a symbol inside an entry (bundle.py: which
                                bundle holds a node kind's function)
    locks/<key>.lock            one file lock per key (not one global lock)
    tmp/                        builds in progress, renamed into place when finished
    failed/<key>/               the last failed build of a key (source kept for debugging)

The fingerprint hashes the compiler (path, version, default flags) and the CPU
features, plus Python's and NumPy's versions, so a cache shared between machines
never loads a binary built for another one. The key hashes everything else that
shapes the binary: the source, the flags, libraries, the caller's `key_parts` and
the `c_code_cache_version` tuple. Entries are immutable once renamed into place;
the manifest records the binary's size and sha256, checked on every load from disk
against the very file that is loaded, so a truncated or corrupted entry is detected,
removed and rebuilt (with a warning). Whatever a disk or a person may leave behind
heals the same way: an unreadable manifest or one with values of the wrong types, a
file where a directory belongs (an entry, `locks`, `tmp`), the build directories of
killed builders in `tmp` (removed once their key's lock is free).
Code with an empty version tuple is "unversioned": compiled in a temporary directory,
loaded, and never persisted.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import filelock
import numpy as np

from workbench.core.link import settings as link_settings
from workbench.core.link.c import compiler as cc

__all__ = ["CacheStats", "CorruptCacheEntryWarning", "ModuleCache", "default_cache"]

MANIFEST = "manifest.json"
_FORMAT = 1
#: Seconds to wait for another process building the same key before giving up.
LOCK_TIMEOUT = 600.0
#: A `tmp/trash-*` directory older than this was left by a killed process.
STALE_TRASH_SECONDS = 600.0
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
#: What a cache key looks like (an entry directory's name).
KEY = re.compile(r"[0-9a-f]{32}")


class CorruptCacheEntryWarning(UserWarning):
    """A cache entry failed verification (size or hash of its binary) and was rebuilt."""


@dataclass
class CacheStats:
    """Counters for the profiler: where modules came from and time spent compiling."""

    memory_hits: int = 0
    disk_hits: int = 0
    builds: int = 0
    unversioned_builds: int = 0
    corrupt_rebuilds: int = 0
    compile_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _default_root() -> Path:
    env = os.environ.get("WORKBENCH_CACHE_DIR")
    if env:
        return Path(env) / "c"
    return Path(link_settings.cache_dir) / "c"


class ModuleCache:
    """Compiled modules by key: in memory, then on disk under `root`, else compiled.

    `get_or_build(key_parts, source, module_name, version=...)` is the one entry point
    the C linker needs; `info()` and `clear()` serve a `workbench cache` command and
    `stats` the profiler. Thread-safe within a process; process-safe through a file
    lock per key.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else _default_root()
        self.stats = CacheStats()
        self._modules: dict[str, ModuleType] = {}
        self._mutex = threading.RLock()
        self._prepared: dict[tuple[Any, ...], tuple[str, dict[str, Any], dict[str, Any]]] = {}
        #: objects loaded from this cache's modules, by the caller's name (bundle.py keeps
        #: node functions here so that a kind seen before is a dict lookup)
        self.loaded_symbols: dict[str, Any] = {}
        #: where modules are built when `root` is not writable (see _private_cache)
        self._private: ModuleCache | None = None

    def __repr__(self) -> str:
        return f"ModuleCache(root={str(self.root)!r}, loaded={len(self._modules)})"

    # ----------------------------------------------------------------- keys
    def fingerprint(self, info: cc.CompilerInfo | None = None) -> str:
        """The subfolder for this compiler, CPU, Python and NumPy."""
        info = info or cc.compiler_info()
        parts = (info.fingerprint, platform.python_implementation(), platform.python_version(),
                 cc.extension_suffix(), np.__version__)
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]

    def key_description(self, key_parts: Any, source: str, module_name: str,
                        version: Sequence[int], flags: Sequence[str],
                        libraries: Sequence[str] = (), lib_dirs: Sequence[str] = (),
                        include_dirs: Sequence[str] = ()) -> dict[str, Any]:
        """Everything the key hashes, as a JSON-able dict (also stored in the manifest)."""
        info = cc.compiler_info()
        return {
            "format": _FORMAT,
            "module_name": module_name,
            "key_parts": repr(key_parts),
            "version": list(version),
            "source_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
            "compiler": {"path": info.path, "command": list(info.command),
                         "version": info.version},
            "cpu_features": cc.cpu_features(info),
            "flags": list(flags),
            "libraries": list(libraries),
            "lib_dirs": list(lib_dirs),
            "include_dirs": list(include_dirs),
            "python": platform.python_version(),
            "ext_suffix": cc.extension_suffix(),
            "numpy": np.__version__,
        }

    def key(self, key_parts: Any, source: str, module_name: str, *,
            version: Sequence[int] = (), flags: Sequence[str] | None = None,
            extra_flags: Sequence[str] = (), libraries: Sequence[str] = (),
            lib_dirs: Sequence[str] = (), include_dirs: Sequence[str] = ()) -> str:
        """The cache key (hex) of a module; see the module docstring for what it covers.

        `key_parts` is any value with a deterministic repr that identifies the module
        for the caller (e.g. an Apply signature)."""
        return self._prepare(key_parts, source, module_name, version, flags, extra_flags,
                             libraries, lib_dirs, include_dirs)[0]

    def _prepare(self, key_parts: Any, source: str, module_name: str, version: Sequence[int],
                 flags: Sequence[str] | None, extra_flags: Sequence[str],
                 libraries: Sequence[str], lib_dirs: Sequence[str],
                 include_dirs: Sequence[str]) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(key, description, build arguments) of a module, memoised per process (a
        memory hit then costs a dict lookup instead of hashing the description)."""
        memo_key = (repr(key_parts), source, module_name, tuple(version),
                    None if flags is None else tuple(flags), tuple(extra_flags),
                    tuple(libraries), tuple(lib_dirs), tuple(include_dirs),
                    os.environ.get("CC"), os.environ.get(cc.AVX512_ENV))
        found = self._prepared.get(memo_key)
        if found is None:
            found = self._prepared[memo_key] = self._prepare_uncached(
                key_parts, source, module_name, version, flags, extra_flags, libraries,
                lib_dirs, include_dirs)
        return found

    def _prepare_uncached(self, key_parts: Any, source: str, module_name: str,
                          version: Sequence[int], flags: Sequence[str] | None,
                          extra_flags: Sequence[str], libraries: Sequence[str],
                          lib_dirs: Sequence[str], include_dirs: Sequence[str],
                          ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        if version and _ADDRESS.search(repr(key_parts)):
            raise ValueError(
                f"key_parts {key_parts!r} has a repr with a memory address, so its key would "
                "differ in every process and never hit the disk cache. Fix: build key_parts "
                "from values with a stable repr (props, dtypes, shapes, strings).")
        all_flags = self._flags(flags, extra_flags)
        desc = self.key_description(key_parts, source, module_name, tuple(version), all_flags,
                                    libraries, lib_dirs, include_dirs)
        key = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:32]
        build = dict(flags=all_flags, libraries=list(libraries), lib_dirs=list(lib_dirs),
                     include_dirs=list(include_dirs))
        return key, desc, build

    @staticmethod
    def _flags(flags: Sequence[str] | None, extra_flags: Sequence[str]) -> list[str]:
        base = cc.compiler_info().default_flags if flags is None else flags
        return [*base, *extra_flags]

    def entry_dir(self, key: str) -> Path:
        """Where the entry of `key` lives (it may not exist)."""
        return self.root / self.fingerprint() / key

    # ------------------------------------------------------------ main path
    def get_or_build(self, key_parts: Any, source: str, module_name: str, *,
                     version: Sequence[int] = (), flags: Sequence[str] | None = None,
                     extra_flags: Sequence[str] = (), libraries: Sequence[str] = (),
                     lib_dirs: Sequence[str] = (), include_dirs: Sequence[str] = (),
                     reject_warnings: Sequence[str] = ()) -> ModuleType:
        """The imported module for `source` (defining PyInit_<module_name>).

        Looks in memory, then on disk, else compiles (under a per-key file lock, into a
        temporary directory renamed into place). `version` is the combined
        `c_code_cache_version` of what generated the source: an empty tuple means
        unversioned, compiled to a temporary place and never persisted.
        `reject_warnings`: compiler messages that fail the build (see compile_module).
        """
        key, desc, build = self._prepare(key_parts, source, module_name, version, flags,
                                         extra_flags, libraries, lib_dirs, include_dirs)
        if reject_warnings:
            build = dict(build, reject_warnings=tuple(reject_warnings))
        with self._mutex:
            module = self._modules.get(key)
            if module is not None:
                self.stats.memory_hits += 1
                return module
            if not version:
                module = self._build_unversioned(key, source, module_name, build)
            else:
                path = self._ensure_entry(key, desc, source, module_name, build)
                module = cc.load_module(path, module_name, self._unique_name(key, module_name))
            self._modules[key] = module
            return module

    def ensure_built(self, key_parts: Any, source: str, module_name: str, *,
                     version: Sequence[int], flags: Sequence[str] | None = None,
                     extra_flags: Sequence[str] = (), libraries: Sequence[str] = (),
                     lib_dirs: Sequence[str] = (), include_dirs: Sequence[str] = (),
                     reject_warnings: Sequence[str] = ()) -> Path:
        """Make sure a versioned module is on disk (building it if needed), without
        loading it; returns the path of its binary. For warming a cache ahead of time."""
        if not version:
            raise ValueError("ensure_built needs a non-empty version: unversioned code is "
                             "never persisted")
        key, desc, build = self._prepare(key_parts, source, module_name, version, flags,
                                         extra_flags, libraries, lib_dirs, include_dirs)
        if reject_warnings:
            build = dict(build, reject_warnings=tuple(reject_warnings))
        # No process-wide mutex here: the per-key file lock serialises builders of one
        # key, and different keys may compile in parallel threads.
        return self._ensure_entry(key, desc, source, module_name, build)

    def load_entry(self, key: str, module_name: str) -> ModuleType | None:
        """The module of an existing entry (memory, else disk), or None when there is no
        sound entry for `key` (a corrupt one is removed, with a warning)."""
        with self._mutex:
            module = self._modules.get(key)
            if module is not None:
                self.stats.memory_hits += 1
                return module
            if not KEY.fullmatch(key):
                return None
            entry = self.entry_dir(key)
            if not entry.is_dir():
                return None
            problem = self._verify(entry, module_name)
            if problem is not None:
                warnings.warn(f"compiled-module cache entry {entry} is corrupt ({problem}); "
                              "removing it", CorruptCacheEntryWarning, stacklevel=3)
                self._remove(entry)
                self.stats.corrupt_rebuilds += 1
                return None
            module = cc.load_module(entry / f"{module_name}{cc.extension_suffix()}",
                                    module_name, self._unique_name(key, module_name))
            self.stats.disk_hits += 1
            self._modules[key] = module
            return module

    # -------------------------------------------------------------- aliases
    def _alias_path(self, name: str) -> Path:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ValueError(f"alias name must be letters, digits, '_', '.' or '-', got {name!r}")
        return self.root / self.fingerprint() / "aliases" / f"{name}.json"

    def read_alias(self, name: str) -> dict[str, Any] | None:
        """What `write_alias(name, ...)` stored on disk, or None (missing or unreadable)."""
        try:
            value = json.loads(self._alias_path(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def write_alias(self, name: str, value: dict[str, Any]) -> None:
        """Store a small JSON record under `name` (atomically: readers see the old record
        or the new one). A read-only cache silently keeps no alias."""
        path = self._alias_path(name)
        if self._private_cache() is not None:
            return
        try:
            self._directory(path.parent)
            _write_atomically(path, json.dumps(value))
        except OSError:
            pass

    @staticmethod
    def _unique_name(key: str, module_name: str) -> str:
        return f"workbench_c.k{key}.{module_name}"

    def _compile(self, source: str, module_name: str, out_dir: Path,
                 build: dict[str, Any]) -> Path:
        start = time.perf_counter()
        try:
            return cc.compile_module(source, module_name, out_dir=out_dir,
                                     flags=build["flags"], libraries=build["libraries"],
                                     lib_dirs=build["lib_dirs"],
                                     include_dirs=build["include_dirs"],
                                     reject_warnings=build.get("reject_warnings", ()))
        finally:
            self.stats.compile_seconds += time.perf_counter() - start

    def _build_unversioned(self, key: str, source: str, module_name: str,
                           build: dict[str, Any]) -> ModuleType:
        tmp = Path(tempfile.mkdtemp(prefix=f"workbench-c-unversioned-{module_name}-"))
        so = self._compile(source, module_name, tmp, build)
        self.stats.unversioned_builds += 1
        module = cc.load_module(so, module_name, self._unique_name(key, module_name))
        # Once loaded the binary stays mapped; the files are no longer needed.
        shutil.rmtree(tmp, ignore_errors=True)
        return module

    def _verify(self, entry: Path, module_name: str) -> str | None:
        """None when the entry is sound, else what is wrong with it. The binary checked
        is the one that is loaded: `<module_name><EXT_SUFFIX>`, which the manifest must
        name."""
        try:
            manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return f"unreadable manifest ({exc})"
        if not isinstance(manifest, dict):
            return "the manifest is not a JSON object"
        so_name = f"{module_name}{cc.extension_suffix()}"
        if manifest.get("so_name") != so_name:
            return f"the manifest names the binary {manifest.get('so_name')!r}, not {so_name!r}"
        size, digest = manifest.get("so_size"), manifest.get("so_sha256")
        if type(size) is not int or not isinstance(digest, str):
            return "the manifest's so_size or so_sha256 has the wrong type"
        try:
            actual = (entry / so_name).stat().st_size
            if actual != size:
                return f"binary is {actual} bytes, manifest says {size}"
            if cc.file_sha256(entry / so_name) != digest:
                return "binary's sha256 differs from the manifest"
        except OSError as exc:
            return f"unreadable binary ({exc.strerror or exc})"
        return None

    def _ensure_entry(self, key: str, desc: dict[str, Any], source: str, module_name: str,
                      build: dict[str, Any]) -> Path:
        entry = self.entry_dir(key)
        so_path = entry / f"{module_name}{cc.extension_suffix()}"
        if entry.is_dir() and self._verify(entry, module_name) is None:
            self.stats.disk_hits += 1
            return so_path
        private = self._private_cache()
        if private is not None:  # a read-only cache: build where this process may
            path = private._ensure_entry(key, desc, source, module_name, build)
            self.stats.builds += private.stats.builds
            private.stats.builds = 0
            return path
        lock = self._lock(key, LOCK_TIMEOUT)
        try:
            lock.acquire()
        except filelock.Timeout as exc:
            raise TimeoutError(
                f"waited {LOCK_TIMEOUT:.0f} s for another process compiling cache key {key} "
                f"(lock {lock.lock_file}). If no such process runs, delete the lock file.") \
                from exc
        try:
            if entry.exists() or entry.is_symlink():
                problem = (self._verify(entry, module_name) if entry.is_dir()
                           else "not a directory")
                if problem is None:  # another process built it while we waited
                    self.stats.disk_hits += 1
                    return so_path
                warnings.warn(f"compiled-module cache entry {entry} is corrupt ({problem}); "
                              "removing and rebuilding it", CorruptCacheEntryWarning,
                              stacklevel=4)
                self._remove(entry)
                self.stats.corrupt_rebuilds += 1
            self._build_entry(entry, desc, source, module_name, build)
            self.stats.builds += 1
            return so_path
        finally:
            lock.release()

    def _private_cache(self) -> ModuleCache | None:
        """None when this cache's directory is writable, else the cache in this
        process's private directory (cc.private_cache_dir) that builds in its place."""
        if self._private is None:
            if cc.can_write(self.root):
                return None
            self._private = ModuleCache(cc.private_cache_dir(self.root) / "c")
        return self._private

    def _lock(self, key: str, timeout: float) -> filelock.FileLock:
        """The file lock of `key` (not acquired)."""
        locks = self._directory(self.root / "locks")
        return filelock.FileLock(str(locks / f"{key}.lock"), timeout=timeout)

    def _directory(self, path: Path) -> Path:
        """`path` as a directory under the root, made if missing; a file in the way of
        it (or of a parent under the root) is removed, with a warning."""
        try:
            path.mkdir(parents=True, exist_ok=True)
            return path
        except (FileExistsError, NotADirectoryError):
            pass
        for place in reversed((path, *path.parents)):
            if place != self.root and self.root not in place.parents:
                continue
            if (place.exists() or place.is_symlink()) and not place.is_dir():
                warnings.warn(f"compiled-module cache: {place} is not a directory; "
                              "replacing it", CorruptCacheEntryWarning, stacklevel=3)
                place.unlink()
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _clean_tmp(self, key: str) -> None:
        """Remove the build directories that killed builders left in `tmp` (we hold the
        lock of `key`; another key's directory goes once its lock is free), and old trash."""
        tmp_root = self.root / "tmp"
        if not tmp_root.is_dir():
            return
        for place in tmp_root.iterdir():
            owner = place.name.split("-", 1)[0]
            if place.name.startswith("trash-"):
                try:
                    stale = time.time() - place.lstat().st_mtime > STALE_TRASH_SECONDS
                except OSError:
                    continue
                if stale:
                    _delete(place)
            elif owner == key:
                _delete(place)
            elif KEY.fullmatch(owner):
                lock = self._lock(owner, 0)
                try:
                    lock.acquire()
                except (filelock.Timeout, OSError):
                    continue  # a builder is at work
                try:
                    _delete(place)
                finally:
                    lock.release()

    def _build_entry(self, entry: Path, desc: dict[str, Any], source: str, module_name: str,
                     build: dict[str, Any]) -> None:
        self._clean_tmp(entry.name)
        tmp_root = self._directory(self.root / "tmp")
        tmp = Path(tempfile.mkdtemp(prefix=f"{entry.name}-", dir=tmp_root))
        try:
            try:
                so = self._compile(source, module_name, tmp, build)
            except cc.CompileError as exc:
                raise self._keep_failed(exc, tmp, entry.name) from None
            manifest = dict(desc, key=entry.name, so_name=so.name, so_size=so.stat().st_size,
                            so_sha256=cc.file_sha256(so), created=time.time())
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True),
                                        encoding="utf-8")
            self._directory(entry.parent)
            try:
                os.rename(tmp, entry)  # atomic: readers see no entry or a complete one
            except OSError:
                # Someone not honouring the lock (e.g. an older root shared by NFS without
                # locking) got there first: keep theirs if it is sound.
                if not entry.is_dir() or self._verify(entry, module_name) is not None:
                    raise
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _keep_failed(self, exc: cc.CompileError, tmp: Path, key: str) -> cc.CompileError:
        """Move a failed build to `<root>/failed/<key>` (its source stays there for
        debugging) and return the error with paths pointing there."""
        failed = self.root / "failed" / key
        try:
            self._directory(failed.parent)
        except OSError:
            return exc
        self._remove(failed)
        try:
            os.rename(tmp, failed)
        except OSError:
            return exc
        source_path = failed / exc.source_path.name if exc.source_path else None
        return cc.CompileError(str(exc).replace(str(tmp), str(failed)), stderr=exc.stderr,
                               source_path=source_path,
                               command=[c.replace(str(tmp), str(failed)) for c in exc.command])

    def _remove(self, entry: Path) -> None:
        """Move an entry out of the way atomically, then delete it. Files a process has
        mapped stay valid (they are unlinked, never truncated)."""
        trash = self.root / "tmp" / f"trash-{entry.name}-{uuid.uuid4().hex[:8]}"
        try:
            self._directory(trash.parent)
            os.rename(entry, trash)
        except OSError:
            return
        _delete(trash)

    # ------------------------------------------------------------ management
    def entries(self) -> list[Path]:
        """The entry directories on disk (all fingerprints)."""
        if not self.root.is_dir():
            return []
        out = []
        for fp in sorted(self.root.iterdir()):
            if fp.name in ("locks", "tmp", "failed") or not fp.is_dir():
                continue
            out += [e for e in sorted(fp.iterdir()) if (e / MANIFEST).is_file()]
        return out

    def info(self) -> dict[str, Any]:
        """Entries and bytes on disk, the current fingerprint, and the counters."""
        entries = self.entries()
        total = sum(f.stat().st_size for e in entries for f in e.iterdir() if f.is_file())
        try:
            with cc.probes_not_kept():  # (looking creates nothing)
                fingerprint: str | None = self.fingerprint()
        except cc.CompilerUnavailableError:
            fingerprint = None
        return {"root": str(self.root), "entries": len(entries), "total_bytes": total,
                "fingerprint": fingerprint, "loaded": len(self._modules),
                "stats": self.stats.as_dict()}

    def clear(self) -> int:
        """Delete every entry, lock file, failed and temporary build under the root; return how many
        entries were removed. Modules already loaded keep working."""
        entries = self.entries()
        with self._mutex:
            for e in entries:
                self._remove(e)
            for name in ("locks", "tmp", "failed"):
                shutil.rmtree(self.root / name, ignore_errors=True)
            if self.root.is_dir():
                for fp in self.root.iterdir():
                    shutil.rmtree(fp / "aliases", ignore_errors=True)
                    if fp.is_dir() and not any(fp.iterdir()):
                        fp.rmdir()
            self._modules.clear()
            self._prepared.clear()
            self.loaded_symbols.clear()
        return len(entries)


def _delete(path: Path) -> str | None:
    """Remove a file or a directory tree, as far as it can be removed; None, or why
    something stayed."""
    problems: list[str] = []
    if path.is_dir() and not path.is_symlink():
        def note(_function: Any, place: str, exc: Any) -> None:
            exc = exc[1] if isinstance(exc, tuple) else exc  # (onerror gives exc_info)
            problems.append(f"{place}: {getattr(exc, 'strerror', None) or exc}")

        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=note)
        else:
            shutil.rmtree(path, onerror=note)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror}")
    return problems[0] if problems else None


def clear_all(cache: ModuleCache) -> list[str]:
    """Clear `cache` and the compiler's files kept beside the cache directory (the
    precompiled preludes in prelude/, the answers of probes.json): one line per thing
    removed. Raises OSError saying what could not be removed (a read-only cache: before
    removing anything)."""
    probes = cc.probe_file()
    prelude = probes.parent / "prelude"
    for place in (cache.root, prelude, probes.parent):
        if not cc.can_write(place, create=False):
            raise OSError(f"{place} is read-only (nothing was removed)")
    lines = [f"removed {cache.clear()} compiled module(s) from {cache.root}"]
    if prelude.is_dir():
        count = sum(1 for p in prelude.iterdir() if p.is_dir())
        problem = _delete(prelude)
        if problem:
            raise OSError(f"could not remove {prelude}: {problem}")
        lines.append(f"removed {prelude} ({count} precompiled prelude(s))")
    if probes.exists() or probes.is_symlink():
        problem = _delete(probes)
        if problem:
            raise OSError(f"could not remove {probes}: {problem}")
        lines.append(f"removed {probes} (remembered compiler probes)")
    cc.probe_lock_file().unlink(missing_ok=True)
    return lines


def _write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file renamed over it (readers see the
    old text or the new one); the temporary file never stays behind."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_default: ModuleCache | None = None
_default_lock = threading.Lock()


def default_cache() -> ModuleCache:
    """The process-wide cache at the default root (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            from workbench.core.link.c.cache_stats import record_at_exit

            _default = ModuleCache()
            record_at_exit(_default)  # `workbench cache info` shows the sums
        return _default
