"""How many threads each BLAS call of the C linker uses.

OpenBLAS keeps one process-wide thread count, and a call shared among threads waits
for every one of them: on a machine whose cores are busy with other processes, a
worker the scheduler has not run yet stalls the call (the caller spins meanwhile),
and a product that takes 0.4 ms on one thread took 3.7 ms on two on this project's
loaded 2-core machine. So the C linker chooses the count of every call itself (the
generated code of ops/blas.py, `POLICY_C` below):

1. at most `max_threads()`: `config.blas_threads` or `WORKBENCH_NUM_THREADS`, else the
   BLAS's own setting (`OPENBLAS_NUM_THREADS`, a `threadpoolctl` limit);
2. one thread per `WORK_PER_THREAD` multiply-adds: small products run on the calling
   thread alone, where waking a helper costs more than it saves;
3. adaptive (on by default): after a call on n > 1 threads whose process CPU time was
   under `BUSY_EFFICIENCY` x n x its wall time (the threads did not all run: the
   machine is busy), calls use one thread for a back-off period, doubled from
   `BACKOFF_MIN` up to `BACKOFF_MAX` s each time a multi-threaded call finds the machine
   busy again. While backing off, the one-thread calls that would have had more threads
   are watched too: one whose thread CPU time is under `SOLO_EFFICIENCY` x its wall
   time was preempted (the cores are still taken), and the back-off starts over, so a
   machine that stays busy is not probed with a multi-threaded call (which costs the
   most exactly then: 70 ms instead of 1 ms for the MLP step here).

The count is set just before the call and restored after it, so NumPy's own BLAS calls
keep theirs. Threads of one process calling compiled functions at the same moment share
that one setting (as with `threadpoolctl`). `last_threads()` is the count of the most
recent call (what the profiler shows per node).

The policy is a small block of doubles (`POLICY`) that generated modules find at load
through `POLICY_ADDRESS` and read at every call, so changing it needs no recompilation.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["BACKOFF_MAX", "BACKOFF_MIN", "BUSY_EFFICIENCY", "POLICY_ADDRESS", "POLICY_C",
           "SOLO_EFFICIENCY", "THREADS_ENV", "WORK_PER_THREAD", "busy_events", "last_threads",
           "max_threads", "policy", "set_max_threads", "set_policy", "take_last_threads"]

#: The environment variable capping the threads of compiled code (BLAS calls and the
#: row kernels of ops/special.py); unset or 0: the BLAS's own setting.
THREADS_ENV = "WORKBENCH_NUM_THREADS"
#: Multiply-adds a call needs per thread it is given (2**23: about 0.1 ms of float64
#: work per core).
WORK_PER_THREAD = float(1 << 23)
#: Below this share of n x wall time of process CPU time, a call on n threads did not
#: get its n cores.
BUSY_EFFICIENCY = 0.65
#: Below this share of its wall time of thread CPU time, a one-thread call was preempted.
SOLO_EFFICIENCY = 0.9
#: Seconds of one-thread calls after a busy call: the first, and the most.
BACKOFF_MIN, BACKOFF_MAX = 0.1, 3.2

# The slots of the block (C reads them by these indices: see POLICY_C).
_SLOTS = ("max", "work", "adaptive", "last", "busy_until", "backoff", "efficiency",
          "backoff_min", "backoff_max", "busy_events", "solo_efficiency")
_INDEX = {name: k for k, name in enumerate(_SLOTS)}

#: The policy block every compiled module of this process reads.
POLICY = (ctypes.c_double * len(_SLOTS))()
#: Its address, which generated modules read at load (`wb_blas_policy_init`).
POLICY_ADDRESS = ctypes.addressof(POLICY)


def _env_threads() -> int | None:
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{THREADS_ENV} must be a whole number of threads (0: the BLAS's "
                         f"own setting), got {text!r}") from None
    if value < 0:
        raise ValueError(f"{THREADS_ENV} must be >= 0, got {value}")
    return value or None


def _check_threads(value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"the BLAS thread count must be a whole number >= 1 or None (the "
                         f"BLAS's own setting), got {value!r}")
    return value


def max_threads() -> int | None:
    """The most threads a BLAS call of compiled code may use; None: the BLAS's own
    setting (OPENBLAS_NUM_THREADS, threadpoolctl)."""
    value = int(POLICY[_INDEX["max"]])
    return value or None


def set_max_threads(value: int | None) -> None:
    """Cap the threads of compiled code's BLAS calls (None: the BLAS's own setting)."""
    POLICY[_INDEX["max"]] = float(_check_threads(value) or 0)


def set_policy(*, work_per_thread: float | None = None, adaptive: bool | None = None,
               efficiency: float | None = None, backoff: tuple[float, float] | None = None,
               solo_efficiency: float | None = None) -> None:
    """Change the policy's other knobs (see the module docstring); None keeps one. Also
    ends a back-off in progress."""
    if work_per_thread is not None:
        if work_per_thread < 1:
            raise ValueError(f"work_per_thread must be >= 1, got {work_per_thread!r}")
        POLICY[_INDEX["work"]] = float(work_per_thread)
    if adaptive is not None:
        POLICY[_INDEX["adaptive"]] = 1.0 if adaptive else 0.0
    if efficiency is not None:
        if not efficiency >= 0:
            raise ValueError(f"efficiency must be >= 0 (0: never busy), got {efficiency!r}")
        POLICY[_INDEX["efficiency"]] = float(efficiency)
    if solo_efficiency is not None:
        if not solo_efficiency >= 0:
            raise ValueError(f"solo_efficiency must be >= 0, got {solo_efficiency!r}")
        POLICY[_INDEX["solo_efficiency"]] = float(solo_efficiency)
    if backoff is not None:
        low, high = backoff
        if not 0 <= low <= high:
            raise ValueError(f"backoff must be (min, max) with 0 <= min <= max, got {backoff!r}")
        POLICY[_INDEX["backoff_min"]], POLICY[_INDEX["backoff_max"]] = low, high
    POLICY[_INDEX["busy_until"]] = 0.0
    POLICY[_INDEX["backoff"]] = 0.0


def policy() -> dict[str, float]:
    """The policy block as a dict (for display and tests)."""
    return {name: POLICY[k] for k, name in enumerate(_SLOTS)}


def last_threads() -> int:
    """Threads of the most recent BLAS call of compiled code (0: none yet, or a BLAS whose
    threads workbench cannot see)."""
    return int(POLICY[_INDEX["last"]])


def take_last_threads() -> int:
    """`last_threads()`, then forget it (the profiler reads it around each node)."""
    k = _INDEX["last"]
    value = int(POLICY[k])
    POLICY[k] = 0.0
    return value


def busy_events() -> int:
    """How many multi-threaded calls found the machine busy (each started a back-off)."""
    return int(POLICY[_INDEX["busy_events"]])


set_max_threads(_env_threads())
set_policy(work_per_thread=WORK_PER_THREAD, adaptive=True, efficiency=BUSY_EFFICIENCY,
           backoff=(BACKOFF_MIN, BACKOFF_MAX), solo_efficiency=SOLO_EFFICIENCY)

_DEFINES = "\n".join(f"#define WB_BP_{name.upper()} {k}" for k, name in enumerate(_SLOTS))

#: The C of the policy (in every module that calls BLAS): `wb_blas_policy_init()` at
#: module load, `wb_blas_begin` / `wb_blas_end` around each call.
POLICY_C = _DEFINES + r"""
#include <time.h>
static volatile double *wb_blas_policy = NULL;

/* Finds the policy block of this process (blas_threads.POLICY_ADDRESS). */
static int wb_blas_policy_init(void) {
  if (wb_blas_policy) return 0;
  PyObject *m = PyImport_ImportModule("%(module)s");
  if (!m) return -1;
  PyObject *address = PyObject_GetAttrString(m, "POLICY_ADDRESS");
  Py_DECREF(m);
  if (!address) return -1;
  void *p = PyLong_AsVoidPtr(address);
  Py_DECREF(address);
  if (!p) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "no BLAS thread policy");
    return -1;
  }
  wb_blas_policy = (volatile double *)p;
  return 0;
}

static double wb_blas_clock(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One call: its threads, the BLAS's count to restore, and what it measures (mode 1: a
   multi-threaded call, process CPU time; mode 2: a one-thread call of a back-off, the
   calling thread's CPU time) from `wall` and `cpu`. */
typedef struct { int threads, previous, mode; double wall, cpu; } wb_blas_call;

/* Sets the BLAS thread count for a call of `work` multiply-adds (blas_threads.py). */
static void wb_blas_begin(wb_blas_call *c, double work) {
  volatile double *p = wb_blas_policy;
  c->previous = c->threads = wb_blas_get_threads();
  c->mode = 0;
  if (c->previous <= 0) { p[WB_BP_LAST] = 0; return; }  /* a BLAS without the API */
  int n = p[WB_BP_MAX] >= 1 ? (int)p[WB_BP_MAX] : c->previous;
  const double per = p[WB_BP_WORK] >= 1 ? p[WB_BP_WORK] : 1;
  if (work < per * n) n = (int)(work / per);
  if (n < 1) n = 1;
  if (n > 1 && p[WB_BP_ADAPTIVE] != 0) {
    c->wall = wb_blas_clock(CLOCK_MONOTONIC);
    if (c->wall < p[WB_BP_BUSY_UNTIL]) {
      n = 1;
      c->mode = 2;
      c->cpu = wb_blas_clock(CLOCK_THREAD_CPUTIME_ID);
    } else {
      c->mode = 1;
      c->cpu = wb_blas_clock(CLOCK_PROCESS_CPUTIME_ID);
    }
  }
  c->threads = n;
  p[WB_BP_LAST] = n;
  if (n != c->previous) wb_blas_set_threads(n);
}

/* After the call: a busy machine starts (or doubles) a back-off; restores the count. */
static void wb_blas_end(wb_blas_call *c) {
  volatile double *p = wb_blas_policy;
  if (c->mode == 2) {  /* backing off: preempted even alone means the cores are still taken */
    const double cpu = wb_blas_clock(CLOCK_THREAD_CPUTIME_ID) - c->cpu;
    const double now = wb_blas_clock(CLOCK_MONOTONIC);
    if (cpu < p[WB_BP_SOLO_EFFICIENCY] * (now - c->wall))
      p[WB_BP_BUSY_UNTIL] = now + p[WB_BP_BACKOFF];
  } else if (c->mode == 1) {
    const double now = wb_blas_clock(CLOCK_MONOTONIC);
    const double cpu = wb_blas_clock(CLOCK_PROCESS_CPUTIME_ID) - c->cpu;
    if (cpu < p[WB_BP_EFFICIENCY] * c->threads * (now - c->wall)) {
      double backoff = 2 * p[WB_BP_BACKOFF];
      if (backoff < p[WB_BP_BACKOFF_MIN]) backoff = p[WB_BP_BACKOFF_MIN];
      if (backoff > p[WB_BP_BACKOFF_MAX]) backoff = p[WB_BP_BACKOFF_MAX];
      p[WB_BP_BACKOFF] = backoff;
      p[WB_BP_BUSY_UNTIL] = now + backoff;
      p[WB_BP_BUSY_EVENTS] += 1;
    } else {
      p[WB_BP_BACKOFF] = 0;
    }
  }
  if (c->threads != c->previous) wb_blas_set_threads(c->previous);
}
""".replace("%(module)s", __name__)
