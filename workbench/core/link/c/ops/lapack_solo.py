"""The second copy of OpenBLAS that one-thread LAPACK calls go to, and only those.

The C linker links NumPy's own OpenBLAS (blas_lib.py), so the process keeps one
OpenBLAS and one thread pool. NumPy 2.4's wheel bundles OpenBLAS 0.3.31, whose
triangular-solve kernels (``dtrsm_kernel_*``: a scalar solve where 0.3.30 and 0.3.34
vectorize it) and ``dlaswp`` are slower: its one-thread ``dgetrf`` of a 500x500
matrix took 2.11 ms against 1.98 ms for the ``scipy-openblas64`` package's 0.3.34
(Haswell kernels; 1.79 against 1.66 ms with OpenBLAS's own choice, SkylakeX), 0.13
ms of a 2 ms solve, found with perf.

Linking the package copy for everything gave two thread pools, whose helpers spin
against each other after threaded calls (NumPy and compiled gemm 37% slower on 2
cores). So only a LAPACK call the thread policy (blas_threads.py) runs on ONE thread
goes to the package copy, and the copy never has a thread of its own:

- the generated module opens it with ``dlopen(RTLD_LOCAL)`` (its symbols have the
  same names as NumPy's copy: they never reach the global namespace) and, if this
  process has not loaded it yet, with ``OPENBLAS_NUM_THREADS=1`` in the environment
  for its constructor alone, so OpenBLAS starts no helper thread for it;
- a call uses it when the policy gave the call one thread and the copy's own count is
  still 1 (threadpoolctl raising every pool it finds makes the call go to NumPy's);
- a threaded call (the policy's count above 1) goes to NumPy's copy and its one pool.

`WORKBENCH_LAPACK_SOLO=none` turns the copy off (every call to the BLAS of
blas_lib.py); unset or `auto`: used when the package is installed, its integers have
the width of the main library's, it is not the main library itself, and its OpenBLAS
is a later release than the main library's (a NumPy that bundles a newer one keeps
every call on it).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import importlib.metadata
import importlib.util
import os
import re

from workbench.core.link.c.blas_lib import BlasLibrary, find_blas, pkg_config_flags
from workbench.core.link.c.cstring import c_string_literal

__all__ = ["SOLO_ENV", "is_newer", "openblas_version", "solo_c", "solo_library", "solo_loaded",
           "solo_threads"]

#: Environment variable: "none" keeps every LAPACK call on blas_lib.py's library.
SOLO_ENV = "WORKBENCH_LAPACK_SOLO"


@functools.lru_cache(maxsize=8)
def _package() -> BlasLibrary | None:
    """The scipy-openblas64 package's library, found WITHOUT importing the package:
    its import loads the library with RTLD_GLOBAL (its names, the same as NumPy's
    copy's, would then win in every module loaded after) and with a thread pool."""
    spec = importlib.util.find_spec("scipy_openblas64")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib_dir = os.path.join(list(spec.submodule_search_locations)[0], "lib")
    files = sorted(glob.glob(os.path.join(lib_dir, "libscipy_openblas*.so*")))
    pcs = glob.glob(os.path.join(lib_dir, "pkgconfig", "*.pc"))
    if not files or not pcs:
        return None
    with open(pcs[0], encoding="utf-8", errors="replace") as fh:
        prefix, suffix, int64 = pkg_config_flags(fh.read())
    try:
        version = importlib.metadata.version("scipy-openblas64")
    except importlib.metadata.PackageNotFoundError:
        version = ""
    # threads_api: the copy's get/set_num_threads, looked up by the generated code
    return BlasLibrary(source="scipy-openblas64", path=files[0], prefix=prefix,
                       suffix=suffix, int64=int64, version=version, threads_api=True)


def solo_library() -> BlasLibrary | None:
    """The library of one-thread LAPACK calls, or None (see the module docstring)."""
    choice = os.environ.get(SOLO_ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", "none"):
        raise ValueError(f"{SOLO_ENV} must be 'auto' or 'none'; got {choice!r}")
    if choice == "none":
        return None
    try:
        main = find_blas()
    except Exception:  # noqa: BLE001 - an unknown WORKBENCH_BLAS: BLAS Ops report it
        return None
    lib = _package()
    if main is None or lib is None or lib.int64 != main.int64:
        return None
    if os.path.realpath(lib.path) == os.path.realpath(main.path):
        return None
    if not is_newer(openblas_version(lib.version), openblas_version(main.version)):
        return None  # a NumPy with a newer OpenBLAS than the package's keeps its own
    return lib


def openblas_version(text: str) -> tuple[int, ...]:
    """The first three numbers of an OpenBLAS version or configuration string
    ("OpenBLAS 0.3.31.188.0 USE64BITINT ..." or "0.3.34.481.3": (0, 3, 31)), or ()."""
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(g) for g in found.groups()) if found else ()


def is_newer(copy: tuple[int, ...], main: tuple[int, ...]) -> bool:
    """Whether the copy's OpenBLAS is a later release than the main library's (an
    unknown main version counts as older: NumPy's bundled copy always tells it)."""
    return bool(copy) and (not main or copy > main)


def solo_c(lib: BlasLibrary | None, protos: dict[str, tuple[str, str]]) -> str:
    """C for the calls' choice of library: for each routine of `protos` (name -> its C
    parameter list and the main library's symbol, declared by the caller), a macro
    ``wb_la_<name>`` to the copy's pointer when the calling thread's `wb_la_solo_on`
    is set, else to that symbol; `wb_la_solo_init()` (module load) and
    `wb_la_solo_begin(threads)` / `wb_la_solo_end()` around a node's calls."""
    if lib is None:
        return ("static void wb_la_solo_init(void) {}\n"
                "static void wb_la_solo_begin(int threads) { (void)threads; }\n"
                "static void wb_la_solo_end(void) {}\n")
    get = f"{lib.prefix}openblas_get_num_threads{lib.suffix}"
    lines = [f"/* one-thread LAPACK calls: {lib.source} {lib.version} (lapack_solo.py) */",
             "#include <dlfcn.h>",
             "static __thread int wb_la_solo_on;",
             "static int wb_la_solo_ready;",
             "static int (*wb_la_solo_threads)(void);"]
    resolve = []
    for name, (params, symbol) in protos.items():
        lines.append(f"static void (*wb_la_solo_{name})({params});")
        lines.append(f"#undef wb_la_{name}")
        lines.append(f"#define wb_la_{name} (wb_la_solo_on ? wb_la_solo_{name} : "
                     f"{symbol})")
        resolve.append(f"  *(void**)&wb_la_solo_{name} = dlsym(h, "
                       f"{c_string_literal(lib.prefix + name + '_' + lib.suffix)}); "
                       f"if (!wb_la_solo_{name}) return;")
    path = c_string_literal(lib.path)
    lines += [
        "/* Opens the copy (no thread pool of its own: OPENBLAS_NUM_THREADS=1 for its",
        "   constructor when this process has not loaded it) and finds every routine;",
        "   any failure leaves every call on the main library. */",
        "static void wb_la_solo_init(void) {",
        f"  void *h = dlopen({path}, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);",
        "  if (!h) {",
        "    const char *was = getenv(\"OPENBLAS_NUM_THREADS\");",
        "    char *saved = was ? strdup(was) : NULL;",
        "    setenv(\"OPENBLAS_NUM_THREADS\", \"1\", 1);",
        f"    h = dlopen({path}, RTLD_NOW | RTLD_LOCAL);",
        "    if (saved) { setenv(\"OPENBLAS_NUM_THREADS\", saved, 1); free(saved); }",
        "    else unsetenv(\"OPENBLAS_NUM_THREADS\");",
        "  }",
        "  if (!h) return;",
        f"  *(void**)&wb_la_solo_threads = dlsym(h, {c_string_literal(get)});",
        "  if (!wb_la_solo_threads) return;",
        *resolve,
        "  wb_la_solo_ready = 1;",
        "}",
        "/* A node's calls on `threads` threads (the policy's count) use the copy when that",
        "   is one and the copy's own count is one. */",
        "static void wb_la_solo_begin(int threads) {",
        "  wb_la_solo_on = wb_la_solo_ready && threads == 1 && wb_la_solo_threads() == 1;",
        "}",
        "static void wb_la_solo_end(void) { wb_la_solo_on = 0; }",
    ]
    return "\n".join(lines) + "\n"


def solo_loaded() -> bool:
    """Whether this process has the copy loaded (for tests and notes)."""
    lib = solo_library()
    if lib is None:
        return False
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            return any(os.path.realpath(lib.path) in line for line in fh)
    except OSError:
        return False


def solo_threads() -> int | None:
    """The copy's own thread count, if this process has it loaded (else None)."""
    lib = solo_library()
    if lib is None or not solo_loaded():
        return None
    handle = ctypes.CDLL(lib.path, mode=getattr(os, "RTLD_NOLOAD", 4) | ctypes.RTLD_LOCAL)
    return int(getattr(handle, f"{lib.prefix}openblas_get_num_threads{lib.suffix}")())
