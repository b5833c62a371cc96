"""Which BLAS the C linker calls for dot / gemm / gemv, and how modules link to it.

The library is OpenBLAS as built for NumPy and SciPy (the "scipy-openblas"
build), found in this order:

1. the copy NumPy's own wheel bundles (`numpy.libs/libscipy_openblas64_*.so`), its
   symbol names probed with ctypes: NumPy has already loaded it, so the process
   keeps ONE OpenBLAS and one thread pool (two pools spin against each other on a
   small machine, and thread limits set for NumPy apply to compiled graphs too);
2. the `scipy-openblas64` package (a dependency of workbench: the same build,
   published with headers, a shared library and a pkg-config description naming its
   symbol prefix/suffix and integer width), for NumPy builds without a bundled copy
   (conda, distributions, source builds);
3. the `scipy-openblas32` package (same, 32-bit integers);
4. a system OpenBLAS/CBLAS found by `ctypes.util.find_library`.

The environment variable `WORKBENCH_BLAS` picks one of them by name
(`numpy`, `scipy-openblas64`, `scipy-openblas32`, `system`) or turns BLAS off
(`none`); unset or `auto` means the order above. Without a BLAS, Dot/Gemm/Gemv run
their Python `perform` (NumPy's BLAS), never a hand-written loop.

Symbols differ per build (`scipy_cblas_dgemm64_` in scipy-openblas64, `cblas_dgemm`
in a system OpenBLAS), so generated code never includes a vendor header: it declares
the few CBLAS functions it calls itself, under macros (`wb_cblas_dgemm` ...) that
`BlasLibrary.declarations()` maps to the real names. Modules link the shared
library file by name (`-L<dir> -l:<file>`) with an rpath to its directory, so they
load without LD_LIBRARY_PATH.

OpenBLAS also exports its thread-count controls (`openblas_get_num_threads` /
`openblas_set_num_threads`, under the same prefix and suffix); when the library has
them, generated code chooses the thread count of each call (blas_threads.py) and
`declarations()` maps `wb_blas_get_threads` / `wb_blas_set_threads` to them.

LAPACK calls that the thread policy runs on one thread go to a second copy, the
`scipy-openblas64` package's, opened without a thread pool (ops/lapack_solo.py: its
triangular-solve kernels are faster than those of NumPy 2.4's bundled OpenBLAS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import importlib
import os
import re
from dataclasses import dataclass, field

from workbench.core.link.c.cstring import include_guarded

__all__ = ["BLAS_ENV", "BLAS_FUNCTIONS", "BlasLibrary", "BlasNotFoundError", "find_blas",
           "blas_available", "pkg_config_flags"]

#: Environment variable choosing the BLAS (see the module docstring).
BLAS_ENV = "WORKBENCH_BLAS"

#: The CBLAS functions the generated code calls.
BLAS_FUNCTIONS: tuple[str, ...] = ("cblas_sgemm", "cblas_dgemm", "cblas_sgemv", "cblas_dgemv",
                                   "cblas_sdot", "cblas_ddot")

_CHOICES = ("auto", "numpy", "scipy-openblas64", "scipy-openblas32", "system", "none")


class BlasNotFoundError(RuntimeError):
    """The BLAS named by WORKBENCH_BLAS is not available here."""


@dataclass(frozen=True)
class BlasLibrary:
    """One BLAS shared library and how to call and link it.

    `prefix`/`suffix` wrap every CBLAS name (`scipy_` + `cblas_dgemm` + `64_`);
    `int64` says whether its integers are 64-bit (ILP64). `path` is the shared
    library file; `link_args` link it by path with an rpath to its directory.
    """

    source: str
    path: str
    prefix: str = ""
    suffix: str = ""
    int64: bool = False
    version: str = ""
    include_dirs: tuple[str, ...] = field(default_factory=tuple)
    #: whether it exports OpenBLAS's get/set_num_threads (under prefix and suffix)
    threads_api: bool = False

    @property
    def lib_dir(self) -> str:
        """The directory holding the shared library."""
        return os.path.dirname(self.path)

    @property
    def library(self) -> str:
        """The library to link, as `-l` takes it: ":<file name>" (the exact file, whatever
        its name; GNU ld and lld syntax)."""
        return ":" + os.path.basename(self.path)

    @property
    def link_args(self) -> list[str]:
        """Linker flags: an rpath to the library's directory, so modules load without
        LD_LIBRARY_PATH."""
        return [f"-Wl,-rpath,{self.lib_dir}"]

    @property
    def int_type(self) -> str:
        """The C type of BLAS integers in this build."""
        return "long long" if self.int64 else "int"

    def symbol(self, name: str) -> str:
        """The exported name of CBLAS function `name` (e.g. "cblas_dgemm")."""
        return f"{self.prefix}{name}{self.suffix}"

    def declarations(self) -> str:
        """C prototypes of BLAS_FUNCTIONS under the names `wb_<name>` (macros to the real
        symbols), the integer type `wb_blasint` and the CBLAS enum values; under an
        include guard named by the hash of the text, so a bundle holding kinds of
        ops/blas.py and of the LAPACK ops declares them once (two different libraries
        still clash, and their kinds compile apart)."""
        sym = {name: self.symbol(name) for name in BLAS_FUNCTIONS}
        lines = [
            f"/* BLAS: {self.source} {self.version} ({self.path}) */",
            f"typedef {self.int_type} wb_blasint;",
            "#define WB_BLASINT_MAX " + ("0x7fffffffffffffffLL" if self.int64 else "0x7fffffff"),
            "enum { WB_ROW_MAJOR = 101, WB_NO_TRANS = 111, WB_TRANS = 112 };",
        ]
        if self.threads_api:
            lines += [
                "#define WB_BLAS_HAS_THREADS 1",
                f"#define wb_blas_get_threads {self.symbol('openblas_get_num_threads')}",
                f"#define wb_blas_set_threads {self.symbol('openblas_set_num_threads')}",
                "extern int wb_blas_get_threads(void);",
                "extern void wb_blas_set_threads(int n);",
            ]
        else:  # a BLAS whose threads workbench cannot see or set: 0 means "not known"
            lines += [
                "#define WB_BLAS_HAS_THREADS 0",
                "static int wb_blas_get_threads(void) { return 0; }",
                "static void wb_blas_set_threads(int n) { (void)n; }",
            ]
        for t, ctype in (("s", "float"), ("d", "double")):
            lines += [
                f"#define wb_cblas_{t}gemm {sym[f'cblas_{t}gemm']}",
                f"#define wb_cblas_{t}gemv {sym[f'cblas_{t}gemv']}",
                f"#define wb_cblas_{t}dot {sym[f'cblas_{t}dot']}",
                f"extern void wb_cblas_{t}gemm(int order, int ta, int tb, wb_blasint m, "
                f"wb_blasint n, wb_blasint k, {ctype} alpha, const {ctype} *a, wb_blasint lda, "
                f"const {ctype} *b, wb_blasint ldb, {ctype} beta, {ctype} *c, wb_blasint ldc);",
                f"extern void wb_cblas_{t}gemv(int order, int ta, wb_blasint m, wb_blasint n, "
                f"{ctype} alpha, const {ctype} *a, wb_blasint lda, const {ctype} *x, "
                f"wb_blasint incx, {ctype} beta, {ctype} *y, wb_blasint incy);",
                f"extern {ctype} wb_cblas_{t}dot(wb_blasint n, const {ctype} *x, "
                f"wb_blasint incx, const {ctype} *y, wb_blasint incy);",
            ]
        return include_guarded("\n".join(lines), "WB_BLAS_DECLARATIONS_") + "\n"


def pkg_config_flags(text: str) -> tuple[str, str, bool]:
    """(prefix, suffix, int64) from a scipy-openblas pkg-config text's Cflags line."""
    cflags = next((line for line in text.splitlines() if line.startswith("Cflags:")), "")
    prefix = re.search(r"-DBLAS_SYMBOL_PREFIX=(\S+)", cflags)
    suffix = re.search(r"-DBLAS_SYMBOL_SUFFIX=(\S+)", cflags)
    return (prefix.group(1) if prefix else "", suffix.group(1) if suffix else "",
            "-DHAVE_BLAS_ILP64" in cflags)


def _from_package(module_name: str) -> BlasLibrary | None:
    """A scipy-openblas32/64 package, described by its own helpers."""
    try:
        pkg = importlib.import_module(module_name)
    except ImportError:
        return None
    try:
        lib_dir = pkg.get_lib_dir()
        path = os.path.join(lib_dir, pkg.get_library(fullname=True))
        prefix, suffix, int64 = pkg_config_flags(pkg.get_pkg_config())
    except Exception:  # noqa: BLE001 - a broken install: try the next candidate
        return None
    if not os.path.isfile(path):
        return None
    try:
        threads_api = _has_threads_api(ctypes.CDLL(path), prefix, suffix)
    except OSError:
        threads_api = False
    return BlasLibrary(source=module_name.replace("_", "-"), path=path, prefix=prefix,
                       suffix=suffix, int64=int64, version=getattr(pkg, "__version__", ""),
                       include_dirs=(pkg.get_include_dir(),), threads_api=threads_api)


def _has_threads_api(lib: ctypes.CDLL, prefix: str, suffix: str) -> bool:
    """Whether `lib` exports OpenBLAS's get/set_num_threads under `prefix`/`suffix`."""
    return all(hasattr(lib, f"{prefix}openblas_{what}_num_threads{suffix}")
               for what in ("get", "set"))


def _probe(path: str) -> tuple[str, str, bool, str, bool] | None:
    """(prefix, suffix, int64, config, threads_api) of the CBLAS exported by the library
    at `path`, or None if it exports no complete CBLAS."""
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    for prefix, suffix in (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")):
        if all(hasattr(lib, f"{prefix}{name}{suffix}") for name in BLAS_FUNCTIONS):
            config = ""
            for getter in (f"{prefix}openblas_get_config{suffix}", "openblas_get_config"):
                fn = getattr(lib, getter, None)
                if fn is not None:
                    fn.restype = ctypes.c_char_p
                    config = (fn() or b"").decode(errors="replace")
                    break
            int64 = "USE64BITINT" in config or suffix == "64_"
            return prefix, suffix, int64, config, _has_threads_api(lib, prefix, suffix)
    return None


def _from_numpy() -> BlasLibrary | None:
    """The OpenBLAS bundled in NumPy's wheel (numpy.libs next to the numpy package)."""
    import numpy

    site = os.path.dirname(os.path.dirname(numpy.__file__))
    for path in sorted(glob.glob(os.path.join(site, "numpy.libs", "lib*openblas*.so*"))):
        found = _probe(path)
        if found is not None:
            prefix, suffix, int64, config, threads_api = found
            return BlasLibrary(source="numpy-bundled", path=path, prefix=prefix, suffix=suffix,
                               int64=int64, version=config, threads_api=threads_api)
    return None


def _from_system() -> BlasLibrary | None:
    """A system OpenBLAS or CBLAS (`ctypes.util.find_library`)."""
    for name in ("openblas", "cblas", "blas"):
        found_name = ctypes.util.find_library(name)
        if not found_name:
            continue
        try:
            path = ctypes.CDLL(found_name)._name
        except OSError:
            continue
        resolved = _resolve_loaded(path)
        found = _probe(resolved)
        if found is not None:
            prefix, suffix, int64, config, threads_api = found
            return BlasLibrary(source=f"system-{name}", path=resolved, prefix=prefix,
                               suffix=suffix, int64=int64, version=config,
                               threads_api=threads_api)
    return None


def _resolve_loaded(name: str) -> str:
    """The file of a library loaded by soname (from /proc/self/maps), else `name`."""
    if os.path.isabs(name):
        return name
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.split()[-1] if line.strip() else ""
                if path.startswith("/") and os.path.basename(path).startswith(name):
                    return path
    except OSError:
        pass
    return name


_FINDERS = {  # in the order `auto` tries them
    "numpy": _from_numpy,
    "scipy-openblas64": lambda: _from_package("scipy_openblas64"),
    "scipy-openblas32": lambda: _from_package("scipy_openblas32"),
    "system": _from_system,
}


@functools.lru_cache(maxsize=8)
def _find(choice: str) -> BlasLibrary | None:
    if choice == "none":
        return None
    if choice == "auto":
        for finder in _FINDERS.values():
            lib = finder()
            if lib is not None:
                return lib
        return None
    lib = _FINDERS[choice]()
    if lib is None:
        how = {"numpy": "a NumPy wheel that bundles OpenBLAS",
               "system": "a system OpenBLAS (e.g. `apt-get install libopenblas-dev`)"}
        raise BlasNotFoundError(
            f"{BLAS_ENV}={choice!r} but that BLAS is not available here. Fix: install "
            f"{how.get(choice, f'it (`pip install {choice}`)')}, or unset {BLAS_ENV}.")
    return lib


def find_blas() -> BlasLibrary | None:
    """The BLAS generated code links to (found once per WORKBENCH_BLAS value), or None
    when there is none or WORKBENCH_BLAS=none. Raises ValueError for an unknown
    WORKBENCH_BLAS value and BlasNotFoundError when the named one is missing."""
    choice = os.environ.get(BLAS_ENV, "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ValueError(f"{BLAS_ENV} must be one of {', '.join(_CHOICES)}; got {choice!r}")
    return _find(choice)


def blas_available() -> bool:
    """Whether generated code can call a BLAS (find_blas() finds one)."""
    try:
        return find_blas() is not None
    except (ValueError, BlasNotFoundError):
        return False
