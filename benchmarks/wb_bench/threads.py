"""Threads: what each library is told, and what it really used, read back.

- `thread_ticks` / `threads_run`: which threads of this process got CPU time (Linux's
  /proc/self/task, in clock ticks of 10 ms: the only per-thread clock this sandbox has);
- `pin_cpu`: the CPU a per-core run pins the whole process to;
- `check_coretype` / `apply_coretype` / `coretype_banner`: `--coretype` (OpenBLAS's
  kernels), and the line naming the kernels a run really used (threadpoolctl) and what
  chose them;
- `threads_note`: what every library was told (environment, XLA_FLAGS);
- `readback_note`: read back after the run: every pool threadpoolctl finds (BLAS and
  OpenMP), workbench's own cap (`blas_threads.max_threads`), the CPUs the process may
  use (which XLA sizes its pool from) and the process's threads by name (XLA's pool is
  `tf_XLAEigen`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, MutableMapping
from pathlib import Path

#: XLA_FLAGS for one thread. `--xla_cpu_multi_thread_eigen=false` is a real XLA flag (XLA
#: aborts on an unknown `--` flag), but JAX 0.10's CPU runtime still spreads a call over
#: its pool; only pinning the process limits that pool (XLA sizes it from the CPUs the
#: process may run on). There is no XLA_FLAGS flag for the intra-op thread count.
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"
#: the name of the threads of XLA's intra-op pool (Linux's /proc/self/task/*/comm)
XLA_POOL = "tf_XLAEigen"
#: the environment variables giving every library its thread count
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS", "WORKBENCH_NUM_THREADS")
#: where run.py records the CPUs it started on, before pinning itself (children return
#: to them: compile time is measured on the machine's cores)
CPUS_VARIABLE = "WB_BENCH_CPUS"


def thread_ticks() -> dict[str, int]:
    """CPU clock ticks (user + system) of each thread of this process (Linux; else {})."""
    ticks: dict[str, int] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ticks[tid] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return ticks


def threads_ran(before: dict[str, int], after: dict[str, int]) -> set[str]:
    """The threads whose CPU time grew between two `thread_ticks` readings."""
    return {tid for tid, t in after.items() if t > before.get(tid, 0)}


def threads_run(before: dict[str, int], after: dict[str, int]) -> int:
    return len(threads_ran(before, after))


def thread_names() -> Counter[str]:
    """This process's threads counted by name (/proc/self/task/*/comm)."""
    names: Counter[str] = Counter()
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return names
    for tid in tids:
        try:
            names[Path(f"/proc/self/task/{tid}/comm").read_text().strip()] += 1
        except OSError:
            continue
    return names


def pin_cpu(choice: str, threads: int, cpus: set[int]) -> int | None:
    """The CPU to pin the process to: `choice` a CPU number, 'none', or 'auto' (the
    highest of `cpus` when every library is on one thread, so that the table is per-core
    whatever threads a library starts; else none). ValueError for a CPU not in `cpus`."""
    if choice == "none":
        return None
    if choice == "auto":
        return max(cpus) if threads == 1 and cpus else None
    try:
        cpu = int(choice)
    except ValueError:
        raise ValueError(f"--pin takes a CPU number, 'auto' or 'none', got {choice!r}") from None
    if cpu not in cpus:
        raise ValueError(f"--pin: CPU {cpu} is not among this process's CPUs {sorted(cpus)}")
    return cpu


def limit_threads(threads: int) -> None:
    """Give every library the same number of threads (before NumPy or JAX is imported;
    subprocesses inherit it)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    if threads == 1:
        flags = [f for f in os.environ.get("XLA_FLAGS", "").split()
                 if not f.lstrip("-").startswith(("xla_cpu_multi_thread_eigen",
                                                  "intra_op_parallelism_threads"))]
        os.environ["XLA_FLAGS"] = " ".join([*flags, XLA_ONE_THREAD])


#: OpenBLAS's kernel choice and the cache size it blocks for. This machine's environment
#: sets both (OPENBLAS_CORETYPE=Haswell, OPENBLAS_L2_SIZE=512: older OpenBLAS builds crash
#: or compute wrong results on some CPUs); `--coretype auto` unsets them together, in the
#: benchmark's own process and children only
CORETYPE_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def check_coretype(choice: str) -> str:
    """`choice` if `--coretype` can take it: 'auto' or a kernel name of letters and digits
    (OpenBLAS matches names without case; one it does not know, it ignores silently and
    picks this CPU's kernels, which the run's headline then names). ValueError else."""
    if choice == "auto" or (choice[:1].isalpha() and choice.replace("_", "").isalnum()
                            and choice.isascii()):
        return choice
    raise ValueError(f"--coretype takes 'auto' or an OpenBLAS kernel name (letters and "
                     f"digits: Haswell, SkylakeX, Zen, ...), got {choice!r}")


def apply_coretype(choice: str | None, environ: MutableMapping[str, str]) -> None:
    """`--coretype` into `environ` (before NumPy loads OpenBLAS): 'auto' unsets
    OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE together (OpenBLAS picks this CPU's kernels
    and reads its caches), a kernel name sets OPENBLAS_CORETYPE, None keeps both."""
    if choice == "auto":
        for name in CORETYPE_VARIABLES:
            environ.pop(name, None)
    elif choice:
        environ["OPENBLAS_CORETYPE"] = choice


def blas_kernels(environ: Mapping[str, str]) -> str | None:
    """The kernels NumPy's OpenBLAS runs under `environ`, as threadpoolctl reads them
    (asked in a subprocess: the choice is made when the library loads), or None."""
    code = ("import numpy, threadpoolctl; print(next((i.get('architecture') for i in "
            "threadpoolctl.threadpool_info() if i.get('internal_api') == 'openblas'), ''))")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=dict(environ), timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def own_blas_kernels() -> str | None:
    """The kernels OpenBLAS picks by itself on this CPU (OPENBLAS_CORETYPE and
    OPENBLAS_L2_SIZE unset), or None."""
    return blas_kernels({k: v for k, v in os.environ.items() if k not in CORETYPE_VARIABLES})


def coretype_banner(environ: Mapping[str, str] | None = None) -> str:
    """A line naming the OpenBLAS kernels that NumPy's, PyTensor's and workbench's matrix
    products run under `environ` (default this process's environment), read with
    threadpoolctl, and what chose them: OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE) set,
    or OpenBLAS itself. Short enough for two lines of a narrow terminal: the rest
    (JAX's kernels, who respects the setting) is CORETYPE_NOTE."""
    env = os.environ if environ is None else environ
    kernels = blas_kernels(env) or "(unread: no threadpoolctl or OpenBLAS)"
    forced, l2 = env.get("OPENBLAS_CORETYPE"), env.get("OPENBLAS_L2_SIZE")
    l2_text = f", OPENBLAS_L2_SIZE={l2}" if l2 else ""
    if not forced:
        unset = (f"OPENBLAS_CORETYPE unset{l2_text}" if l2
                 else "OPENBLAS_CORETYPE and _L2_SIZE unset")
        return (f"OpenBLAS runs its {kernels} kernels for NumPy, PyTensor and workbench: its "
                f"own choice for this CPU ({unset})")
    own = own_blas_kernels()
    mine = f" (this CPU's own: {own})" if own and own.lower() != kernels.lower() else ""
    return (f"OPENBLAS_CORETYPE={forced}{l2_text} is set: NumPy, PyTensor and workbench run "
            f"OpenBLAS's {kernels} kernels{mine}")


#: the note beside the OpenBLAS headline
CORETYPE_NOTE = ("OpenBLAS kernels: read with threadpoolctl under the run's environment; "
                 "workbench respects its user's OPENBLAS_CORETYPE, as NumPy and PyTensor do "
                 "(--coretype auto runs this CPU's own kernels); JAX's matrix products use "
                 "XLA's own kernels whatever it says")


def threads_note(threads: int) -> str:
    """What each library was told about threads, and the BLAS's own count as threadpoolctl
    reads it (NumPy's OpenBLAS, which workbench's compiled code calls too)."""
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{i.get('internal_api')} {i.get('num_threads')} ({i.get('architecture')} "
                f"kernels)" for i in threadpool_info() if i.get("user_api") == "blas"]
        seen = f"BLAS threads seen by threadpoolctl: {', '.join(blas) or 'none'}"
    except ImportError:
        seen = "threadpoolctl not installed: BLAS threads not checked"
    if threads:
        xla = (f", XLA_FLAGS {XLA_ONE_THREAD} (JAX's CPU runtime still spreads a call over "
               f"its pool, which only pinning limits: see threads run)" if threads == 1 else "")
        return (f"threads: every library limited to {threads} (--threads): OPENBLAS/OMP/MKL"
                f"_NUM_THREADS and WORKBENCH_NUM_THREADS (workbench's BLAS calls and row "
                f"kernels){xla}; {seen}")
    return (f"threads: each library's default (--threads 0): workbench's row kernels and "
            f"BLAS calls use up to the BLAS's count, every core unless set (BLAS calls by "
            f"size and load), NumPy and PyTensor the BLAS's count, XLA its own pool; {seen}")


def readback_note() -> str:
    """Thread counts read back at the end of a run, once every library is loaded."""
    parts = []
    try:
        from threadpoolctl import threadpool_info

        info = threadpool_info()
        pools = [f"{i.get('internal_api')} {i.get('user_api')} "
                 f"({Path(str(i.get('filepath'))).name}"
                 f"{', ' + str(i['architecture']) + ' kernels' if i.get('architecture') else ''})"
                 f" {i.get('num_threads')}" for i in info]
        parts.append(f"threadpoolctl's pools: {', '.join(pools) or 'none'}")
        if not any(i.get("user_api") == "openmp" for i in info):
            parts.append("no OpenMP runtime loaded (OMP_NUM_THREADS had nothing to limit)")
    except ImportError:
        parts.append("threadpoolctl not installed")
    if "workbench" in sys.modules:
        from workbench.core.link.c import blas_threads

        cap = blas_threads.max_threads()
        parts.append(f"workbench's cap on its BLAS calls and row kernels: "
                     f"{cap if cap else 'none (the BLAS own count)'}")
    if hasattr(os, "sched_getaffinity"):
        parts.append(f"CPUs this process may use: {sorted(os.sched_getaffinity(0))}")
    names = thread_names()
    if "jax" in sys.modules:  # XLA sizes its intra-op pool from the CPUs it may use
        parts.append(f"XLA's intra-op pool: {names.get(XLA_POOL, 0)} thread(s) ({XLA_POOL})")
    if names:
        parts.append("its threads by name: " + ", ".join(f"{n} {c}" for n, c in
                                                           names.most_common()))
    return "threads read back after the run: " + "; ".join(parts)
