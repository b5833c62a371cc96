"""Compile a C source string into a CPython extension module, and load it.

The C compiler is the one named by the `CC` environment variable, else the one
Python was built with (sysconfig's CC), else `cc`, `gcc` or `clang` on PATH. Flags
are chosen once per compiler for this machine (`-O3 -fPIC`, `-march=native` when
the compiler accepts it) and keep IEEE semantics: no `-ffast-math`, no
`-fno-math-errno` tricks, so NaN and infinities behave as in NumPy.
`WORKBENCH_C_AVX512=off` adds `-mno-avx512f`: generated code then takes the code paths
of a CPU without AVX-512 (libmvec's AVX2 exp instead of the AVX-512 one, ...), so a
machine that has AVX-512 can run and test both. The flag is one of the default flags,
hence part of every cache key: modules of both kinds coexist in one cache.

This module knows nothing about Ops or caching: `compile_module(source, name)`
builds `name<EXT_SUFFIX>` in a directory and returns its path, `load_module`
imports it. The cache (cache.py) decides where and when.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import filelock

from workbench.core.link import settings as link_settings
from workbench.core.link.c import compile_progress, spawn

__all__ = [
    "AVX512_ENV", "CompileError", "CompilerInfo", "CompilerUnavailableError",
    "ReadOnlyCacheWarning", "avx512_choice", "build_wanted_preludes",
    "compile_module", "compiler_info", "cpu_features", "extension_suffix", "has_compiler",
    "load_module", "openmp_flags", "probe_all", "python_include_dirs", "reports_functions",
    "targets_avx512",
]  # fmt: skip

#: The environment variable that keeps AVX-512 out of generated code: "off" compiles every
#: module with `-mno-avx512f` (the code paths of a CPU without it); "auto" (the default)
#: uses whatever `-march=native` allows on this CPU.
AVX512_ENV = "WORKBENCH_C_AVX512"
_AVX512_CHOICES = ("auto", "off")

#: How many lines of compiler output a CompileError shows (the full text is kept on it).
STDERR_LINES = 40

# Warnings that generated code triggers by design (unused labels of `fail` paths, ...).
_QUIET_WARNINGS = ("-Wno-unused-label", "-Wno-unused-variable", "-Wno-unused-function")

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CompilerUnavailableError(RuntimeError):
    """No working C compiler was found (or `CC` names one that does not exist)."""


class CompileError(RuntimeError):
    """The C compiler rejected a source. `stderr` holds its full output, `source_path`
    the kept source file, `command` the command line that failed."""

    def __init__(self, message: str, *, stderr: str = "", source_path: Path | None = None,
                 command: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.source_path = source_path
        self.command = list(command)


@dataclass(frozen=True)
class CompilerInfo:
    """A C compiler and what it accepts on this machine.

    `command` is the compiler invocation (`CC` may be e.g. "ccache gcc"), `path` the
    resolved executable, `version` the first line of `--version`. `default_flags`
    are the flags used when a caller gives none (see also `openmp_flags()`).
    """

    command: tuple[str, ...]
    path: str
    version: str
    default_flags: tuple[str, ...]
    march_native: bool = False

    @property
    def fingerprint(self) -> str:
        """A short hash of the compiler identity and the CPU it targets (see cache.py)."""
        parts = (self.path, self.version, self.default_flags, cpu_features(self))
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _resolve(word: str) -> str | None:
    if os.sep in word or (os.altsep and os.altsep in word):
        return word if os.path.isfile(word) and os.access(word, os.X_OK) else None
    return shutil.which(word)


def _find_command() -> tuple[str, ...]:
    env_cc = os.environ.get("CC", "").strip()
    if env_cc:
        words = shlex.split(env_cc)
        exe = _resolve(words[0])
        if exe is None:
            raise CompilerUnavailableError(
                f"the CC environment variable names {env_cc!r}, but {words[0]!r} is not an "
                "executable file or a command on PATH. Fix: point CC at a C compiler "
                "(e.g. CC=gcc), or unset it to use the default; or use linker='py'.")
        return (exe, *words[1:])
    candidates = []
    sys_cc = sysconfig.get_config_var("CC")
    if sys_cc:
        candidates.append(shlex.split(sys_cc))
    candidates += [["cc"], ["gcc"], ["clang"]]
    for words in candidates:
        exe = _resolve(words[0])
        if exe is not None:
            # sysconfig's CC may carry flags like -pthread: keep only the program.
            return (exe,)
    raise CompilerUnavailableError(
        "no C compiler found: CC is unset and none of sysconfig's CC, cc, gcc or clang is "
        "on PATH. Fix: install one (e.g. `apt-get install gcc`) or set CC; or use "
        "linker='py'.")


# -- probe results kept on disk ----------------------------------------------------
# Probing the compiler takes a few subprocesses (version, -march=native, OpenMP, libmvec,
# what "native" means): ~0.5 s that every new process would pay before its first
# function. Their answers are kept in <cache dir>/probes.json, keyed by the compiler's
# command, the executable's size and modification time, and the question asked.


def probe_file() -> Path:
    """Where the answers of compiler probes are kept: <cache dir>/probes.json."""
    env = os.environ.get("WORKBENCH_CACHE_DIR")
    if env:
        return Path(env) / "probes.json"
    return Path(link_settings.cache_dir) / "probes.json"


def probe_lock_file() -> Path:
    """The file lock writers of probes.json take (beside it, hidden)."""
    return probe_file().with_name(".probes.json.lock")


# -- a cache directory this process cannot write -------------------------------------
# Shared lab machines and containers mount caches read-only. What is there is still
# used; what must be built goes to one private temporary directory per process
# (removed at exit), announced by one warning.


class ReadOnlyCacheWarning(UserWarning):
    """The cache directory is not writable: new modules are built in a private
    temporary directory for this process."""


def can_write(directory: Path, create: bool = True) -> bool:
    """Whether this process can create files in `directory` (made first when `create`;
    a missing directory counts as writable when not). Tried for real, not guessed from
    permission bits: read-only mounts and ACLs answer too."""
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        elif not directory.is_dir():
            return True
        fd, tmp = tempfile.mkstemp(prefix=".workbench-write-check-", dir=directory)
        os.close(fd)
        os.unlink(tmp)
        return True
    except OSError:
        return False


_private_dir: Path | None = None


def private_cache_dir(unwritable: Path) -> Path:
    """This process's private cache directory, used because `unwritable` is not
    writable (one ReadOnlyCacheWarning per process, naming both)."""
    global _private_dir
    if _private_dir is None:
        import atexit

        _private_dir = Path(tempfile.mkdtemp(prefix="workbench-private-cache-"))
        atexit.register(shutil.rmtree, _private_dir, True)
        warnings.warn(f"workbench: the compiled-module cache {unwritable} is not writable; "
                      f"this process compiles into {_private_dir} instead (removed at exit, "
                      "so its modules are compiled again next time)", ReadOnlyCacheWarning,
                      stacklevel=3)
    return _private_dir


def _probe_key(command: Sequence[str], *question: Any) -> str:
    try:
        st = os.stat(command[0])
        identity: tuple[Any, ...] = (st.st_size, st.st_mtime_ns)
    except OSError:
        identity = ()
    text = repr((tuple(command), identity, sys.platform, platform.machine(), question))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _probe_load() -> dict[str, Any]:
    try:
        data = json.loads(probe_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


#: False while probe answers must not be written (e.g. `workbench cache info` on a
#: cache directory that does not exist must not create it).
_keep_probes: contextvars.ContextVar[bool] = contextvars.ContextVar("keep_probes",
                                                                   default=True)


@contextlib.contextmanager
def probes_not_kept() -> Iterator[None]:
    """Within this block, compiler probes write nothing to disk."""
    token = _keep_probes.set(False)
    try:
        yield
    finally:
        _keep_probes.reset(token)


#: One lock per probe question: threads asking the same question at once (the C linker's
#: toolchain threads start together on a cold cache) run the compiler once.
_probe_locks: dict[str, threading.Lock] = {}
_probe_locks_guard = threading.Lock()


def _probed(command: Sequence[str], question: tuple[Any, ...], compute: Any,
            expected: type) -> Any:
    """The remembered answer to `question` about this compiler, else `compute()` (kept).
    A remembered answer that is not an `expected` (a damaged probes.json) is asked again."""
    key = _probe_key(command, *question)
    with _probe_locks_guard:
        lock = _probe_locks.setdefault(key, threading.Lock())
    with lock:
        return _probed_locked(key, compute, expected)


def _probed_locked(key: str, compute: Any, expected: type) -> Any:
    known = _probe_load()
    if isinstance(known.get(key), expected):
        return known[key]
    answer = compute()
    if not answer or not _keep_probes.get():
        return answer  # (a negative answer may change once a toolchain is installed)
    _probe_keep(key, answer)
    return answer


#: Threads keeping answers to different questions at once (the concurrent probes of a
#: cold cache) take turns: each reads probes.json, adds its answer and replaces the
#: file, so two at once would lose one answer.
_probe_write_lock = threading.Lock()


def _probe_keep(key: str, answer: Any) -> None:
    """Add `key: answer` to probes.json, under a thread lock and a file lock (other
    processes write it too); a read-only cache keeps nothing (probed again next time)."""
    path = probe_file()
    if not can_write(path.parent):
        return
    try:
        with _probe_write_lock, filelock.FileLock(str(probe_lock_file()), timeout=30):
            known = _probe_load()  # another thread or process may have written meanwhile
            known[key] = answer
            fd, tmp = tempfile.mkstemp(prefix="probes-", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(known, fh)
                os.replace(tmp, path)
            finally:
                Path(tmp).unlink(missing_ok=True)
    except (OSError, filelock.Timeout):  # read-only, or probes.json is not a file
        pass


def _link_flags() -> tuple[str, ...]:
    if sys.platform == "darwin":
        return ("-bundle", "-undefined", "dynamic_lookup")
    return ("-shared",)


_PROBE = "int workbench_probe(void) { return 0; }\n"


def _accepts(command: tuple[str, ...], flags: Sequence[str], code: str) -> bool:
    """Whether the compiler builds a tiny shared object with `flags` silently (the answer
    is remembered on disk)."""
    return _probed(command, ("accepts", tuple(flags), code),
                   lambda: _try_build(command, flags, code), bool)


def _try_build(command: tuple[str, ...], flags: Sequence[str], code: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="workbench-probe-") as tmp:
        src = Path(tmp, "probe.c")
        src.write_text(code)
        out = Path(tmp, "probe.so")
        res = spawn.run([*command, "-fPIC", *_link_flags(), *flags, str(src), "-o", str(out)],
                   timeout=60)
        text = res.stderr.lower()
        return (res.returncode == 0 and out.exists()
                and "unrecognized" not in text and "unknown" not in text
                and "unsupported" not in text)


def _version_of(command: tuple[str, ...]) -> str:
    """The first line of `<compiler> --version`; CompilerUnavailableError if it fails."""
    try:
        res = spawn.run([*command, "--version"], timeout=60)
    except OSError as exc:  # pragma: no cover - exotic: file vanished or not runnable
        raise CompilerUnavailableError(f"the C compiler {command[0]!r} cannot run: {exc}. "
                                       "Fix: set CC to a working compiler.") from exc
    if res.returncode != 0:
        raise CompilerUnavailableError(
            f"{' '.join(command)} --version failed (exit {res.returncode}): "
            f"{res.stderr.strip()[:500]}. Fix: set CC to a working C compiler.")
    text = (res.stdout or res.stderr).strip()
    return text.splitlines()[0] if text else "unknown"


def avx512_choice() -> str:
    """The value of WORKBENCH_C_AVX512 ("auto" when unset or empty); ValueError naming the
    variable for any other value than "auto" or "off"."""
    choice = os.environ.get(AVX512_ENV, "").strip().lower() or "auto"
    if choice not in _AVX512_CHOICES:
        raise ValueError(f"{AVX512_ENV} must be one of {', '.join(_AVX512_CHOICES)}; got "
                         f"{os.environ[AVX512_ENV]!r}")
    return choice


def _concurrently(*calls: Any) -> list[Any]:
    """The results of `calls` (functions of no argument) run in threads at once: the
    probes of a cold cache are compiler runs of ~0.1 s each that need not wait for
    each other. The first exception (in the order of `calls`) is raised."""
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(k: int) -> None:
        try:
            results[k] = calls[k]()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller below
            errors[k] = exc

    # each thread in a copy of the caller's context (probes_not_kept() holds there too)
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(run, k),
                                daemon=True, name=f"workbench-probe-{k}")
               for k in range(1, len(calls))]
    for thread in threads:
        thread.start()
    run(0)
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results


@functools.lru_cache(maxsize=8)
def _info_for(cc_env: str | None, avx512: str = "auto") -> CompilerInfo:
    command = _find_command()
    version, shared, march = _concurrently(
        lambda: _probed(command, ("version",), lambda: _version_of(command), str),
        lambda: _accepts(command, (), _PROBE),
        lambda: _accepts(command, ("-march=native",), _PROBE))
    if not shared:
        raise CompilerUnavailableError(
            f"the C compiler {' '.join(command)} ({version}) cannot build a shared library. "
            "Fix: install a complete toolchain (compiler and linker) or set CC.")
    flags = ["-O3", "-fPIC", *_link_flags(), "-fvisibility=hidden", "-fno-strict-aliasing"]
    if march:
        flags.append("-march=native")
    if avx512 == "off" and _accepts(command, ("-mno-avx512f",), _PROBE):
        flags.append("-mno-avx512f")  # after -march=native, which it overrides
    flags += _QUIET_WARNINGS
    return CompilerInfo(command=command, path=command[0], version=version,
                        default_flags=tuple(flags), march_native=march)


def compiler_info() -> CompilerInfo:
    """The C compiler for this process (per value of `CC` and of WORKBENCH_C_AVX512),
    probed once and cached.

    Raises CompilerUnavailableError when there is none.
    """
    return _info_for(os.environ.get("CC"), avx512_choice())


@functools.lru_cache(maxsize=8)
def _targets_avx512_for(info: CompilerInfo) -> bool:
    code = "#ifndef __AVX512F__\n#error no AVX-512F\n#endif\n" + _PROBE
    return _accepts(info.command, [f for f in info.default_flags if f not in _link_flags()],
                    code)


def targets_avx512(info: CompilerInfo | None = None) -> bool:
    """Whether generated code is compiled for AVX-512 (the compiler defines __AVX512F__
    under its default flags): true on a CPU that has it, unless WORKBENCH_C_AVX512=off."""
    return _targets_avx512_for(info or compiler_info())


@functools.lru_cache(maxsize=8)
def _openmp_for(info: CompilerInfo) -> tuple[str, ...]:
    code = ("#include <omp.h>\nint workbench_probe(void) {\n int s = 0;\n"
            "#pragma omp parallel for reduction(+:s)\n for (int i = 0; i < 4; i++) s += i;\n"
            " return s + omp_get_max_threads();\n}\n")
    return ("-fopenmp",) if _accepts(info.command, ("-fopenmp",), code) else ()


def openmp_flags(info: CompilerInfo | None = None) -> tuple[str, ...]:
    """("-fopenmp",) when the compiler builds and links OpenMP code, else () (probed once;
    not part of the default flags: code that wants threads adds them)."""
    return _openmp_for(info or compiler_info())


def has_compiler() -> bool:
    """True when a working C compiler is available."""
    try:
        compiler_info()
    except CompilerUnavailableError:
        return False
    return True


@functools.lru_cache(maxsize=8)
def _cpu_features_for(info: CompilerInfo) -> str:
    parts = [f"machine={sys.platform}-{platform.machine()}"]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key = line.split(":", 1)[0].strip().lower()
                if key in ("flags", "features"):
                    parts.append(" ".join(sorted(line.split(":", 1)[1].split())))
                    break
    except OSError:
        pass
    if info.march_native:
        # What "native" means for this compiler on this CPU (gcc; clang lacks -Q).
        parts.append(_probed(info.command, ("native", hashlib.sha256(
            "\n".join(parts).encode()).hexdigest()), lambda: _native_target(info), str))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _native_target(info: CompilerInfo) -> str:
    try:
        res = spawn.run([*info.command, "-march=native", "-Q", "--help=target"], timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return res.stdout if res.returncode == 0 else ""


def cpu_features(info: CompilerInfo | None = None) -> str:
    """A hash of the CPU features the compiled code may use: /proc/cpuinfo's flags line,
    the machine name, and (with -march=native) what the compiler resolves "native" to."""
    return _cpu_features_for(info or compiler_info())


def python_include_dirs() -> list[str]:
    """Python's and NumPy's C header directories."""
    import numpy

    paths = sysconfig.get_paths()
    dirs = [paths["include"], paths.get("platinclude", paths["include"]), numpy.get_include()]
    return list(dict.fromkeys(dirs))


def extension_suffix() -> str:
    """The file suffix of extension modules here, e.g. '.cpython-311-x86_64-linux-gnu.so'."""
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _error_excerpt(stderr: str, source: str, src_name: str) -> str:
    """The first STDERR_LINES lines of compiler output, then the source lines it blames."""
    lines = stderr.strip().splitlines()
    head = lines[:STDERR_LINES]
    if len(lines) > STDERR_LINES:
        head.append(f"... ({len(lines) - STDERR_LINES} more lines)")
    src_lines = source.splitlines()
    blamed: list[int] = []
    for m in re.finditer(re.escape(src_name) + r":(\d+):(?:\d+:)?\s*(?:fatal )?error", stderr):
        n = int(m.group(1))
        if n not in blamed:
            blamed.append(n)
    wanted = sorted({i for n in blamed[:8]
                     for i in range(max(1, n - 2), min(len(src_lines), n + 2) + 1)})
    shown: list[str] = []
    for prev, i in zip([None, *wanted], wanted):
        if prev is not None and i != prev + 1:
            shown.append("  ...")
        shown.append(f"{'>>' if i in blamed else '  '}{i:5d} | {src_lines[i - 1]}")
    text = "\n".join(head)
    if shown:
        text += "\n\nsource lines:\n" + "\n".join(shown)
    return text


def compile_module(source: str, module_name: str, *, out_dir: str | os.PathLike[str] | None = None,
                   flags: Sequence[str] | None = None, extra_flags: Sequence[str] = (),
                   include_dirs: Sequence[str] = (), lib_dirs: Sequence[str] = (),
                   libraries: Sequence[str] = (), reject_warnings: Sequence[str] = ()) -> Path:
    """Compile `source`, the C text of an extension module whose init function is
    `PyInit_<module_name>`, into `<out_dir>/<module_name><EXT_SUFFIX>` and return that path.

    `flags` replaces the compiler's default flags (compiler_info().default_flags);
    `extra_flags` are appended to them. Python's and NumPy's include directories are
    always searched. With no `out_dir`, a fresh temporary directory is used. The source
    is kept next to the binary as `<module_name>.c` (named in errors, for debugging).
    A compiler message matching one of the regular expressions `reject_warnings` fails
    the build like an error.
    Raises CompileError with the compiler's messages, CompilerUnavailableError without
    a compiler.
    """
    if not _IDENTIFIER.match(module_name):
        raise ValueError(f"module_name must be a C identifier (it names PyInit_<name>), got "
                         f"{module_name!r}")
    info = compiler_info()
    all_flags = [*(info.default_flags if flags is None else flags), *extra_flags]
    if PRELUDE_INCLUDE in source:
        include_dirs = [*include_dirs, str(prelude_dir(all_flags, wait=False, build=False))]
    directory = Path(out_dir) if out_dir is not None else Path(
        tempfile.mkdtemp(prefix=f"workbench-c-{module_name}-"))
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / f"{module_name}.c"
    src.write_text(source, encoding="utf-8")
    target = directory / f"{module_name}{extension_suffix()}"
    cmd = [*info.command, *all_flags]
    cmd += [f"-I{d}" for d in (*include_dirs, *python_include_dirs())]
    cmd += [str(src), "-o", str(target)]
    cmd += [f"-L{d}" for d in lib_dirs] + [f"-l{lib}" for lib in libraries]
    callback = compile_progress.function_callback()
    try:
        if callback is not None and reports_functions(info):
            res = compile_progress.run_reporting(cmd, str(directory),
                                                 directory / "wb-function-dumps", callback)
        else:
            res = spawn.run(cmd, cwd=str(directory))
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"compiling module {module_name!r} timed out; source kept at {src}",
                           source_path=src, command=cmd) from exc
    rejected = [w for w in reject_warnings if re.search(w, res.stderr)]
    if res.returncode != 0 or not target.exists() or rejected:
        excerpt = _error_excerpt(res.stderr or res.stdout, source, src.name)
        raise CompileError(
            f"the C compiler rejected module {module_name!r} (exit {res.returncode}"
            f"{', warnings taken as errors: ' + repr(rejected) if rejected else ''}).\n"
            f"{excerpt}\n\nsource kept at {src}\ncommand: {shlex.join(cmd)}",
            stderr=res.stderr, source_path=src, command=cmd)
    return target


def reports_functions(info: CompilerInfo | None = None) -> bool:
    """Whether the compiler can tell, while it runs, which functions it has finished
    (GCC's dumps: see compile_progress.py); probed once."""
    info = info or compiler_info()
    return _accepts(info.command, compile_progress.DUMP_FLAGS, _PROBE)


def load_module(path: str | os.PathLike[str], module_name: str,
                unique_name: str | None = None) -> ModuleType:
    """Import the extension module at `path`, whose init function is PyInit_<module_name>.

    It is imported under `unique_name` (dotted, ending in `.<module_name>`; default
    `workbench_c.<module_name>`), so that distinct binaries defining the same module
    name never clash in sys.modules: CPython finds the init function from the last
    component of the dotted name.
    """
    full = unique_name or f"workbench_c.{module_name}"
    if full.rsplit(".", 1)[-1] != module_name:
        raise ValueError(f"unique_name {full!r} must end with '.{module_name}'")
    loader = importlib.machinery.ExtensionFileLoader(full, os.fspath(path))
    spec = importlib.util.spec_from_file_location(full, os.fspath(path), loader=loader)
    if spec is None:  # pragma: no cover - only for unknown suffixes
        raise ImportError(f"cannot make an import spec for {path}")
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except ImportError as exc:
        raise ImportError(f"cannot import the compiled module {path}: {exc}. Does its source "
                          f"define PyInit_{module_name}?", name=full, path=os.fspath(path)) \
            from exc
    return module


@functools.lru_cache(maxsize=8)
def _vector_math_for(info: CompilerInfo) -> tuple[str, ...]:
    code = ("#include <math.h>\n#pragma omp declare simd notinbranch\nextern double exp(double);\n"
            "void workbench_probe(long n, double *x) {\n#pragma omp simd\n"
            " for (long i = 0; i < n; i++) x[i] = exp(x[i]);\n}\n")
    flags = ("-fopenmp-simd", "-fno-math-errno", "-lmvec", "-lm")
    return ("mvec",) if _accepts(info.command, flags, code) else ()


def vector_math_libraries(info: CompilerInfo | None = None) -> tuple[str, ...]:
    """("mvec",) when glibc's vector math library links here (probed once), else ()."""
    return _vector_math_for(info or compiler_info())


def probe_all() -> None:
    """Ask every question about the compiler now, in threads at once (each answer is
    kept on disk: on a cold cache these are compiler runs that the first compile would
    otherwise make one after another). Raises CompilerUnavailableError without one."""
    info = compiler_info()
    _concurrently(*[functools.partial(probe, info) for probe in
                    (targets_avx512, cpu_features, vector_math_libraries, openmp_flags)])


# -- the precompiled prelude -------------------------------------------------------
# Every generated module starts with Python's and NumPy's headers, whose parsing is a
# third of a small module's compile time. They live in one header, wb_prelude.h,
# precompiled once per set of flags (gcc's .gch) next to it; a module including it
# gets the precompiled state. If the .gch is missing or unusable (other flags, another
# compiler), the compiler silently parses the header text instead: same result. So a
# compile never waits for another thread or process building the .gch: it includes the
# header's text from a directory without one (`text/`), which costs it ~0.04 s of CPU
# but not the 0.2-0.3 s of the build (on a cold cache the C linker starts building the
# .gch while the graph is rewritten; the first bundles then parse the text). A
# damaged one (truncated by a full disk, a killed copy) would fail every compile: its
# size and sha256 are kept next to it (wb_prelude.h.gch.sha256) and checked once per
# process; a header or .gch that fails the check is rebuilt.

PRELUDE_INCLUDE = '#include "wb_prelude.h"'
#: Flags every generated module gets on top of the compiler's defaults: vector math
#: through glibc's libmvec (`declare simd`, see scalar_c.py), no errno from math
#: functions (lets sqrt & co. compile to instructions; results are unchanged), and no
#: contraction of a*b+c into FMA so results match NumPy's operation-by-operation rounding.
GENERATED_CODE_FLAGS: tuple[str, ...] = ("-fopenmp-simd", "-fno-math-errno",
                                         "-ffp-contract=off", "-std=gnu11")
PRELUDE = """/* workbench: what every generated module includes first */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <string.h>
"""


def prelude_dir(flags: Sequence[str], wait: bool = True, build: bool = True) -> Path:
    """A directory holding wb_prelude.h and, when the compiler can, its precompiled form
    for `flags` (built once, under a file lock, shared by processes). With `wait=False`,
    while another thread or process is building it, a directory holding the header text
    alone (see `_text_prelude`); with `build=False`, that directory whenever the
    precompiled form is not there yet (its build is left to `prelude_dir` called with
    `build=True`, e.g. after the first graph's compile: see linker.py)."""
    import filelock

    info = compiler_info()
    # One precompiled header serves every module: it is built with the compiler's
    # defaults and the flags of generated code, plus only those of a module's extra
    # flags that change what the headers mean (-pthread and -fopenmp define macros);
    # gcc accepts it under other extras (-fwrapv, another -O), and a module whose
    # flags it refuses parses the header text instead.
    base = [*info.default_flags, *GENERATED_CODE_FLAGS]
    compile_flags = [f for f in base if f not in _link_flags()]
    compile_flags += [f for f in ("-pthread", "-fopenmp") if f in flags]
    key = hashlib.sha256(repr((info.fingerprint, compile_flags, PRELUDE,
                               python_include_dirs())).encode()).hexdigest()[:16]
    root = probe_file().parent / "prelude"
    directory = root / key
    if directory in _sound_preludes or _prelude_sound(directory):
        _sound_preludes.add(directory)
        return directory
    for place in (root, directory):  # (a file in the way is removed)
        if place.exists() and not place.is_dir():
            place.unlink(missing_ok=True)
    if not can_write(directory):
        root = private_cache_dir(root.parent) / "prelude"
        directory = root / key
        if _prelude_sound(directory):
            return directory
    if not build:
        with _preludes_wanted_lock:
            _preludes_wanted[tuple(flags)] = None
        return _text_prelude(root)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        with filelock.FileLock(str(root / f"{key}.lock"), timeout=0 if not wait else 600):
            if not _prelude_sound(directory):
                _build_prelude(directory, [*info.command, *compile_flags])
    except filelock.Timeout:  # being built elsewhere: parse the text meanwhile
        return _text_prelude(root)
    _sound_preludes.add(directory)
    return directory


#: The flags of compiles that found no precompiled prelude and were not to build it
#: (`build=False`): `build_wanted_preludes` builds theirs.
_preludes_wanted: dict[tuple[str, ...], None] = {}
_preludes_wanted_lock = threading.Lock()


def build_wanted_preludes() -> None:
    """Build the precompiled preludes that compiles of this process wanted and did not
    find (see `prelude_dir`'s `build`)."""
    with _preludes_wanted_lock:
        wanted = list(_preludes_wanted)
        _preludes_wanted.clear()
    for flags in wanted:
        prelude_dir(flags, wait=True)


def _text_prelude(root: Path) -> Path:
    """A directory holding wb_prelude.h alone (no precompiled form): a module including it
    parses the header text."""
    directory = root / "text"
    header = directory / "wb_prelude.h"
    try:
        if header.read_text(encoding="utf-8") == PRELUDE:
            return directory
    except OSError:
        pass
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f"wb_prelude.h.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.write_text(PRELUDE, encoding="utf-8")
    os.replace(tmp, header)  # atomic: readers see the old text or the new
    return directory


#: Prelude directories checked by this process.
_sound_preludes: set[Path] = set()


def _prelude_sound(directory: Path) -> bool:
    """Whether `directory` holds the prelude's text and either a precompiled header of
    the size and sha256 recorded next to it, or the `no-pch` marker."""
    try:
        if (directory / "wb_prelude.h").read_text(encoding="utf-8") != PRELUDE:
            return False
        if (directory / "no-pch").is_file():
            return True
        gch = directory / "wb_prelude.h.gch"
        size, digest = (directory / "wb_prelude.h.gch.sha256").read_text().split()
        return gch.stat().st_size == int(size) and file_sha256(gch) == digest
    except (OSError, ValueError):
        return False


def _build_prelude(directory: Path, command: list[str]) -> None:
    """Write the prelude's header and precompile it (else mark it `no-pch`); the caller
    holds the prelude's lock."""
    header, gch = directory / "wb_prelude.h", directory / "wb_prelude.h.gch"
    for stale in (gch, directory / "no-pch", directory / "wb_prelude.h.gch.sha256"):
        stale.unlink(missing_ok=True)
    header.write_text(PRELUDE, encoding="utf-8")
    tmp = directory / f"wb_prelude.h.gch.{os.getpid()}.tmp"
    cmd = [*command, *[f"-I{d}" for d in python_include_dirs()],
           "-x", "c-header", str(header), "-o", str(tmp)]
    try:
        res = spawn.run(cmd, timeout=600)
        ok = res.returncode == 0 and tmp.exists()
    except (OSError, subprocess.SubprocessError):
        ok = False
    if ok:
        (directory / "wb_prelude.h.gch.sha256").write_text(
            f"{tmp.stat().st_size} {file_sha256(tmp)}\n")
        os.replace(tmp, gch)  # atomic: readers see no .gch or a complete one
    else:
        tmp.unlink(missing_ok=True)
        (directory / "no-pch").write_text("the compiler could not precompile the "
                                          "prelude; modules parse it as text\n")


def file_sha256(path: Path) -> str:
    """The sha256 (hex) of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
