"""How many threads each BLAS call of the C linker uses, under the one cap of all
compiled code's threads (BLAS calls and the row kernels of ops/special.py).

OpenBLAS keeps one process-wide thread count, and a call shared among threads waits
for every one of them: on a machine whose cores are busy with other processes, a
worker the scheduler has not run yet stalls the call (the caller spins meanwhile),
and a product that takes 0.4 ms on one thread took 30-50 ms on two one call in ten on
this project's loaded 2-core machine. So the C linker chooses the count of every call
itself (the generated code of ops/blas.py and ops/lapack_base.py, `POLICY_C` below):

1. at most `max_threads()`: `config.blas_threads` or `WORKBENCH_NUM_THREADS`, else the
   BLAS's own setting (`OPENBLAS_NUM_THREADS`, else `OMP_NUM_THREADS`, as OpenBLAS read
   them when it loaded; a `threadpoolctl` limit); never more than the cores the process
   may run on (`os.sched_getaffinity`). The same cap, read at every call from the same
   block (`CAP_C`), rules the row kernels (softmax, log-softmax, logsumexp over rows of
   a large input, shared among thread_pool.py's helpers); they read the BLAS's own count
   through `blas_own_threads_address()` and count the cores when no BLAS says. Steps 2
   and 3 are the BLAS calls' own: a row kernel shares rows from a size fixed at compile
   time (`PARALLEL_MIN_ELEMENTS`) and, like a pooled GEMM, never waits for a helper that
   has not started. `OMP_NUM_THREADS` matters only through OpenBLAS (no compiled code
   is OpenMP's: its `omp simd` pragmas vectorise, they start no thread), so it is read
   once, when OpenBLAS loads, like `OPENBLAS_NUM_THREADS`, and a cap set in the process
   (`config.blas_threads`, threadpoolctl) overrides it for both;
2. one thread per `WORK_PER_THREAD` multiply-adds: small products run on the calling
   thread alone, where waking a helper costs more than it saves;
3. adaptive (on by default): every call site keeps an estimate of its one-thread time
   (seconds per multiply-add, from the calling thread's CPU time of one one-thread call:
   preemption does not inflate it; measured again by one such call every `RECALIBRATE`
   s, and only by those: see "the thread's CPU clock" below). A call on n > 1 threads
   whose wall time exceeds `SOLO_RATIO` x that estimate is slow (on an idle machine two
   threads take ~0.6 of it);
   - evidence, not one call: a lone slow call is noise (a page fault, a timer tick, a
     short burst of another process, helpers woken after a back-off) and is forgiven
     (`forgiven_events()`); a slow call that comes within `EVIDENCE` threaded calls of
     the previous slow one finds the machine busy (`busy_events()`): calls use one
     thread for a back-off period, `BACKOFF_MIN` s, doubled at each back-off up to
     `BACKOFF_MAX` s, back to the least after `EVIDENCE` threaded calls none slow;
   - when a back-off ends, the cores other processes left over its interval decide (idle
     time of the allowed cores in /proc/stat plus this process's own CPU time, minus the
     caller's core: OpenBLAS's helpers spin ~0.1 s after a threaded call, and their spin
     is not another process's load): less than `SPARE` x (n - 1) spare cores and no
     thread is tried, the check is made again `BACKOFF_MIN` s later, the length kept
     (`still_busy_events()`); otherwise the calls use n threads again, judged as above.
     So threads come back within about 2 x `BACKOFF_MIN` s of the end of the other
     processes' load when the checks were what kept them off, however long the load
     lasted, and within `BACKOFF_MAX` s at worst.

4. with `POOL` on (`gemm_pool(True)`; off by default, see `POOL`), a GEMM given n > 1
   threads runs on workbench's own: cut in
   about `PANELS_PER_THREAD` x n panels along the longer side of the result, each a
   one-thread BLAS call, shared through an atomic next-panel counter by the caller and
   n - 1 helpers of thread_pool.py. The caller never waits for a helper that has not
   started (it takes the panels left), so a descheduled helper costs nothing and a
   running one still helps: such a call skips step 3 (no back-off; step 3 still rules
   the calls on OpenBLAS's threads: GEMV, LAPACK, GEMMs with `pool` off). Splitting
   repacks the operand not split once per panel (+4% at 2 per thread, measured on the
   MLP's 128x784x256). The MLP step of issue 22 on the shared 2-core dev machine
   (bench_contention.py, a spinning process per core on top of other people's load 2-5,
   means): 1.9-5.0 ms with the pool vs 2.3-6.6 ms with step 3 on OpenBLAS's threads and
   3.5-6.1 ms on one thread, interleaved in one process (JAX jit 1.2-4.2 ms); with the
   other core free, 0.54-0.57 ms (OpenBLAS's threads 0.53).
   `last_worked_threads()` says how many threads computed a panel.

The thread's CPU clock: only the calibrating calls read it (the back-off's one-thread
calls read no clock at all). Reading CLOCK_THREAD_CPUTIME_ID cost the caller its share
of a contended core; the likely cause (read from the kernel's code, not traced): the read
brings the scheduler's account of the thread up to date (update_curr), so a thread past
its time slice is preempted at once, where another process's thread runs on to the next
tick. Measured under issue 22's contention (bench_contention.py's MLP step, a spinning
process per core, 2 cores, 6 s each): while the back-off read it twice per GEMM, the
calling thread got 335-356 of 600 ticks of CPU (1.49-1.67 ms per step); on one thread
without the reads, 391-409 ticks (1.28-1.36 ms); twelve reads per step from Python
(`time.thread_time()`) cost the same 7-13%.

Why not the process CPU time of the threaded call (the first version of this module):
Linux adds a running thread's CPU time to its process only at a scheduler tick, so the
helpers of a sub-millisecond call are often not counted yet when it returns and an idle
machine looked busy (CPU time = wall time of one thread, efficiency 0.5 of 2). Over a
back-off (0.1 s or more) the tick is small, which is why the spare-core check may use it.

The count is set just before the call and restored after it, so NumPy's own BLAS calls
keep theirs. Threads of one process calling compiled functions at the same moment share
that one setting (as with `threadpoolctl`). `last_threads()` is the count given to the
most recent call, BLAS or row kernel, and `last_worked_threads()` how many of them
computed a part (what the profiler shows per node).

The policy is a small block of doubles (`POLICY`) that generated modules find at load
through `POLICY_ADDRESS` and read at every call, so changing it needs no recompilation.
The decisions are plain C functions of the block and the measurements (`LOGIC_C`), which
the tests compile alone and drive with made-up measurements.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator

__all__ = ["BACKOFF_MAX", "BACKOFF_MIN", "CAP_C", "EVIDENCE", "LOGIC_C", "MODES",
           "PANELS_PER_THREAD", "POLICY_ADDRESS", "POLICY_C", "POOL", "RECALIBRATE", "SLOTS",
           "SOLO_RATIO", "SPARE", "THREADS_ENV", "WORK_PER_THREAD", "blas_own_threads",
           "blas_own_threads_address", "busy_events", "forgiven_events", "gemm_pool",
           "helpers_held", "last_threads", "last_worked_threads", "max_threads", "policy",
           "set_max_threads", "set_policy", "still_busy_events", "take_last_threads"]

#: The environment variable capping the threads of compiled code (BLAS calls and the
#: row kernels of ops/special.py); unset or 0: the BLAS's own setting.
THREADS_ENV = "WORKBENCH_NUM_THREADS"
#: Multiply-adds a call needs per thread it is given (2**23: about 0.1 ms of float64
#: work per core).
WORK_PER_THREAD = float(1 << 23)
#: A call on n threads slower than this many times the site's one-thread estimate is
#: slow (on an idle machine two threads take ~0.6 of it).
SOLO_RATIO = 1.0
#: A slow threaded call within this many threaded calls of the previous slow one backs
#: off; a lone one is forgiven as noise. In an idle run of issue 22 (workbench alone,
#: 4 s, ~16000 threaded calls) 6 calls were slow (page faults, ticks, bursts of other
#: processes): at that rate a second follows within 32 calls about 1 time in 80; under
#: contention one call in ten or more is slow, and a second follows within 32 calls 97
#: times in 100.
EVIDENCE = 32
#: Spare cores per extra thread, over a back-off, for threads to be tried again.
SPARE = 0.5
#: Seconds between the one-thread calls that refresh a site's estimate.
RECALIBRATE = 2.0
#: Whether a GEMM given several threads runs on workbench's own (thread_pool.py, one
#: one-thread BLAS call per panel) rather than OpenBLAS's. Off by default: measured idle
#: at the end of issue 22's session (2 cores, float32 MLP step), a step that follows a
#: NumPy `a @ a` (OpenBLAS's helpers spin on the other core after it) took 0.97 ms pooled
#: vs 0.52 ms on OpenBLAS's threads (the pool's helper waits for the core: one thread's
#: speed); alone 0.55 vs 0.51; with a spinning process per core 1.80 vs 2.20 ms (one
#: thread 1.86), the steps of several implementations taking turns in one process. Each
#: alone in a fresh process (bench_contention.py's default since), with a spinning process
#: per core, the pooled step's mean was 1.79 ms against the policy's 1.36 ms and one
#: thread's 1.33 ms: a helper the scheduler preempts in the middle of a panel holds the
#: caller, which waits for the panels started, until it runs again. The pool costs in the
#: common mixed case and gains nothing under contention.
POOL = False
#: Panels a pooled GEMM is cut into per thread it is given: more let the caller take over
#: a larger share when a helper is late; each repacks the operand it does not split
#: (measured one thread, 128x784x256 float32: 2 per thread +4%, 4 per thread +14%).
PANELS_PER_THREAD = 2
#: Seconds of one-thread calls after a busy call: the first, and the most (also the
#: interval of the spare-core checks while other processes keep the cores).
BACKOFF_MIN, BACKOFF_MAX = 0.1, 3.2

#: The slots of the block (C reads them by these indices: see LOGIC_C).
SLOTS = ("max", "work", "adaptive", "last", "busy_until", "backoff", "solo_ratio",
         "backoff_min", "backoff_max", "busy_events", "spare", "recalibrate", "idle_ticks",
         "idle_at", "still_busy", "evidence", "since_slow", "forgiven", "own_cpu",
         "calm", "pool", "panels", "hold", "worked")
_INDEX = {name: k for k, name in enumerate(SLOTS)}
#: How a call that may use several threads runs (LOGIC_C's `wb_blas_plan`): `calibrate`
#: and `backoff` on one thread, `threaded` on n; `ask`: a back-off has ended and the
#: caller measures the spare cores (`wb_blas_answer` then says backoff or threaded).
MODES = ("solo", "calibrate", "backoff", "threaded", "ask")

#: The policy block every compiled module of this process reads.
POLICY = (ctypes.c_double * len(SLOTS))()
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
    """The most threads a BLAS call or row kernel of compiled code may use; None: the
    BLAS's own setting (OPENBLAS_NUM_THREADS or OMP_NUM_THREADS when it loaded,
    threadpoolctl)."""
    value = int(POLICY[_INDEX["max"]])
    return value or None


def set_max_threads(value: int | None) -> None:
    """Cap the threads of compiled code, BLAS calls and row kernels alike (None: the BLAS's
    own setting); read at every call, no recompilation."""
    POLICY[_INDEX["max"]] = float(_check_threads(value) or 0)


def blas_own_threads_address() -> int:
    """The address of OpenBLAS's get_num_threads in the library generated code links
    (blas_lib.find_blas), which modules that do not link it (the row kernels) read the
    BLAS's own count through when the cap is unset; 0 when there is none (no BLAS, one
    without the function, or a WORKBENCH_BLAS that names none: the cores decide)."""
    from workbench.core.link.c import blas_lib

    try:
        lib = blas_lib.find_blas()
    except (ValueError, blas_lib.BlasNotFoundError):
        return 0
    if lib is None or not lib.threads_api:
        return 0
    getter = getattr(ctypes.CDLL(lib.path), lib.symbol("openblas_get_num_threads"))
    return ctypes.cast(getter, ctypes.c_void_p).value or 0


#: `since_slow` before any slow call: more threaded calls than any `evidence`.
_NO_SLOW_CALL = float("inf")


def _non_negative(name: str, value: float) -> float:
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return float(value)


def set_policy(*, work_per_thread: float | None = None, adaptive: bool | None = None,
               solo_ratio: float | None = None, spare: float | None = None,
               recalibrate: float | None = None, evidence: int | None = None,
               backoff: tuple[float, float] | None = None, pool: bool | None = None,
               panels_per_thread: int | None = None) -> None:
    """Change the policy's other knobs (see the module docstring); None keeps one. Also
    ends a back-off in progress and forgets earlier slow calls. `solo_ratio` 0: every
    threaded call is slow; `evidence` 1: two slow calls in a row back off; `spare` 0:
    threads are always tried again when a back-off ends."""
    if work_per_thread is not None:
        if not work_per_thread >= 1:
            raise ValueError(f"work_per_thread must be >= 1, got {work_per_thread!r}")
        POLICY[_INDEX["work"]] = float(work_per_thread)
    if adaptive is not None:
        POLICY[_INDEX["adaptive"]] = 1.0 if adaptive else 0.0
    if pool is not None:
        POLICY[_INDEX["pool"]] = 1.0 if pool else 0.0
    if panels_per_thread is not None:
        if (isinstance(panels_per_thread, bool) or not isinstance(panels_per_thread, int)
                or panels_per_thread < 1):
            raise ValueError(f"panels_per_thread must be a whole number >= 1, got "
                             f"{panels_per_thread!r}")
        POLICY[_INDEX["panels"]] = float(panels_per_thread)
    for name, value in (("solo_ratio", solo_ratio), ("spare", spare),
                        ("recalibrate", recalibrate)):
        if value is not None:
            POLICY[_INDEX[name]] = _non_negative(name, value)
    if backoff is not None:
        low, high = backoff
        if not 0 <= low <= high:
            raise ValueError(f"backoff must be (min, max) with 0 <= min <= max, got {backoff!r}")
        POLICY[_INDEX["backoff_min"]], POLICY[_INDEX["backoff_max"]] = low, high
    if evidence is not None:
        if isinstance(evidence, bool) or not isinstance(evidence, int) or evidence < 1:
            raise ValueError(f"evidence must be a whole number of calls >= 1, got {evidence!r}")
        POLICY[_INDEX["evidence"]] = float(evidence)
    for name in ("busy_until", "backoff", "idle_at"):
        POLICY[_INDEX[name]] = 0.0
    POLICY[_INDEX["since_slow"]] = _NO_SLOW_CALL
    POLICY[_INDEX["calm"]] = 0.0


@contextlib.contextmanager
def blas_own_threads() -> Iterator[None]:
    """Within the block, every call on the BLAS's own thread count and threads: no size
    rule, no adaptation, no pool (what the C linker did before it chose counts; for
    comparisons). Unlike `set_policy`, it leaves the adaptive state (a back-off in
    progress) as it was."""
    work, adaptive, pool = _INDEX["work"], _INDEX["adaptive"], _INDEX["pool"]
    saved = POLICY[work], POLICY[adaptive], POLICY[pool]
    POLICY[work], POLICY[adaptive], POLICY[pool] = 1.0, 0.0, 0.0
    try:
        yield
    finally:
        POLICY[work], POLICY[adaptive], POLICY[pool] = saved


@contextlib.contextmanager
def gemm_pool(on: bool) -> Iterator[None]:
    """Within the block, GEMMs given several threads run on workbench's pool (True) or on
    OpenBLAS's threads (False), the adaptive state kept (for comparisons)."""
    k = _INDEX["pool"]
    saved = POLICY[k]
    POLICY[k] = 1.0 if on else 0.0
    try:
        yield
    finally:
        POLICY[k] = saved


@contextlib.contextmanager
def helpers_held() -> Iterator[None]:
    """Within the block, the pool's helpers are woken for a GEMM's panels or a row
    kernel's rows but take none, as if the scheduler never ran them (tests: the caller
    must do every part)."""
    k = _INDEX["hold"]
    POLICY[k] = 1.0
    try:
        yield
    finally:
        POLICY[k] = 0.0


def policy() -> dict[str, float]:
    """The policy block as a dict (for display and tests)."""
    return {name: POLICY[k] for k, name in enumerate(SLOTS)}


def last_threads() -> int:
    """Threads given to the most recent BLAS call or row kernel of compiled code (0: none
    yet, or a BLAS whose threads workbench cannot see)."""
    return int(POLICY[_INDEX["last"]])


def last_worked_threads() -> int:
    """Of the threads given to the most recent BLAS call or row kernel, how many computed a
    part of it: a helper that the scheduler ran too late took no GEMM panel or rows (0:
    none yet)."""
    return int(POLICY[_INDEX["worked"]])


def take_last_threads() -> int:
    """`last_worked_threads()` (the threads that really computed the most recent call:
    `last_threads()` unless a helper came too late), then forget both (the profiler reads
    it around each node)."""
    value = int(POLICY[_INDEX["worked"]])
    POLICY[_INDEX["last"]] = POLICY[_INDEX["worked"]] = 0.0
    return value


def busy_events() -> int:
    """How many multi-threaded calls were slower than one thread with evidence (a slow call
    shortly before, or a back-off): each started a back-off."""
    return int(POLICY[_INDEX["busy_events"]])


def forgiven_events() -> int:
    """How many multi-threaded calls were slower than one thread alone (taken as noise)."""
    return int(POLICY[_INDEX["forgiven"]])


def still_busy_events() -> int:
    """How many checks at the end of a back-off found no spare core (another check follows
    `BACKOFF_MIN` s later, threads untried)."""
    return int(POLICY[_INDEX["still_busy"]])


set_max_threads(_env_threads())
set_policy(work_per_thread=WORK_PER_THREAD, adaptive=True, solo_ratio=SOLO_RATIO,
           spare=SPARE, recalibrate=RECALIBRATE, evidence=EVIDENCE,
           backoff=(BACKOFF_MIN, BACKOFF_MAX), pool=POOL,
           panels_per_thread=PANELS_PER_THREAD)

_DEFINES = "\n".join(f"#define WB_BP_{name.upper()} {k}" for k, name in enumerate(SLOTS))
_MODE_DEFINES = "\n".join(f"#define WB_RUN_{name.upper()} {k}" for k, name in enumerate(MODES))

#: The decisions, functions of the block and of measurements only (no clock, no BLAS):
#: `WB_BLAS_LOGIC` is `static` in generated modules; the tests export them to call
#: them through ctypes.
LOGIC_C = _DEFINES + "\n" + _MODE_DEFINES + r"""
#include <math.h>
#ifndef WB_BLAS_LOGIC
#define WB_BLAS_LOGIC static
#endif
/* A call site's one-thread estimate: seconds per unit of work, and when it was measured. */
typedef struct { double rate, measured; } wb_blas_site;

/* How a call that may use more than one thread runs at time `now` (a WB_RUN_ mode). A
   back-off is on while busy_until > 0: one thread until then, a question after. */
WB_BLAS_LOGIC int wb_blas_plan(volatile double *p, wb_blas_site *s, double now) {
  if (s->rate <= 0 || now >= s->measured + p[WB_BP_RECALIBRATE]) return WB_RUN_CALIBRATE;
  if (p[WB_BP_BUSY_UNTIL] > 0) return now < p[WB_BP_BUSY_UNTIL] ? WB_RUN_BACKOFF : WB_RUN_ASK;
  return WB_RUN_THREADED;
}

/* A back-off begins at `now`: the last one's length doubled (the first, or the first
   after `evidence` calls none slow: the least); its evidence is spent. */
static void wb_blas_back_off(volatile double *p, double now) {
  double backoff = 2 * p[WB_BP_BACKOFF];
  if (backoff < p[WB_BP_BACKOFF_MIN]) backoff = p[WB_BP_BACKOFF_MIN];
  if (backoff > p[WB_BP_BACKOFF_MAX]) backoff = p[WB_BP_BACKOFF_MAX];
  p[WB_BP_BACKOFF] = backoff;
  p[WB_BP_BUSY_UNTIL] = now + backoff;
  p[WB_BP_SINCE_SLOW] = INFINITY;  /* no slow call since: the next one is alone */
  p[WB_BP_BUSY_EVENTS] += 1;
}

/* After WB_RUN_ASK: other processes left `spare` cores beside the caller's on average
   since the last check (< 0: unknown). Enough for the `threads` asked: the back-off ends
   and they are tried (WB_RUN_THREADED); else one thread, and the question again after
   the least back-off (WB_RUN_BACKOFF; the length is kept: nothing was tried). */
WB_BLAS_LOGIC int wb_blas_answer(volatile double *p, int threads, double spare, double now) {
  if (spare < 0 || spare >= p[WB_BP_SPARE] * (threads - 1)) {
    p[WB_BP_BUSY_UNTIL] = 0;
    return WB_RUN_THREADED;
  }
  p[WB_BP_BUSY_UNTIL] = now + p[WB_BP_BACKOFF_MIN];
  p[WB_BP_STILL_BUSY] += 1;
  return WB_RUN_BACKOFF;
}

/* After a call run in `mode` on `work` units: `wall` seconds, `cpu` the calling thread's
   CPU seconds (a calibrating call; a back-off's calls are not judged). Returns 1 when
   the call found the machine busy (a back-off began: the caller notes the time the
   cores spent from then on). */
WB_BLAS_LOGIC int wb_blas_judge(volatile double *p, wb_blas_site *s, int mode, double work,
                                double wall, double cpu, double now) {
  if (mode == WB_RUN_THREADED) {
    if (wall > p[WB_BP_SOLO_RATIO] * s->rate * work) {
      p[WB_BP_CALM] = 0;
      if (p[WB_BP_SINCE_SLOW] < p[WB_BP_EVIDENCE]) {  /* a slow call shortly before */
        wb_blas_back_off(p, now);
        return 1;
      }
      p[WB_BP_SINCE_SLOW] = 0;  /* alone: noise, unless another follows */
      p[WB_BP_FORGIVEN] += 1;
      return 0;
    }
    p[WB_BP_SINCE_SLOW] += 1;
    p[WB_BP_CALM] += 1;
    if (p[WB_BP_CALM] >= p[WB_BP_EVIDENCE]) p[WB_BP_BACKOFF] = 0;  /* length forgotten */
  } else if (mode == WB_RUN_CALIBRATE && work > 0 && cpu > 0) {
    /* CPU time is only ever inflated (cold caches, page faults): a faster measurement is
       taken at once, a slower one a quarter of the way */
    const double rate = cpu / work;
    s->rate = s->rate <= 0 || rate < s->rate ? rate : s->rate + 0.25 * (rate - s->rate);
    s->measured = now;
  }
  return 0;
}
"""

#: The cap of the policy block for all compiled code (included by POLICY_C, and by the
#: row kernels of ops/special.py, which link no BLAS): the block found at module load
#: (`wb_blas_policy_init`), the cap read at every call (`wb_threads_cap`,
#: `wb_threads_allowed`) and the threads of a call noted for the profiler
#: (`wb_threads_note`). Under an include guard: a bundle may hold both users.
CAP_C = "\n#ifndef WB_THREAD_CAP_C\n#define WB_THREAD_CAP_C\n" + _DEFINES + r"""
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif
static volatile double *wb_blas_policy = NULL;
/* The BLAS's own thread count (OpenBLAS's get_num_threads of the library generated code
   links, blas_lib.py; NULL: none known), for code that does not link the BLAS. */
static int (*wb_blas_own_threads)(void) = NULL;

/* Finds the policy block of this process (blas_threads.POLICY_ADDRESS) and the BLAS's own
   thread count (blas_threads.blas_own_threads_address()). */
static int wb_blas_policy_init(void) {
  if (wb_blas_policy) return 0;
  PyObject *m = PyImport_ImportModule("%(module)s");
  if (!m) return -1;
  PyObject *address = PyObject_GetAttrString(m, "POLICY_ADDRESS");
  PyObject *own = address ? PyObject_CallMethod(m, "blas_own_threads_address", NULL) : NULL;
  Py_DECREF(m);
  if (!address || !own) { Py_XDECREF(address); return -1; }
  void *p = PyLong_AsVoidPtr(address), *getter = PyLong_AsVoidPtr(own);
  Py_DECREF(address);
  Py_DECREF(own);
  if (PyErr_Occurred()) return -1;
  if (!p) {
    PyErr_SetString(PyExc_RuntimeError, "no BLAS thread policy");
    return -1;
  }
  wb_blas_own_threads = (int (*)(void))getter;
  wb_blas_policy = (volatile double *)p;
  return 0;
}

/* The cores this process may run on (0: unknown). */
static int wb_blas_cpus(void) {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
#endif
  return 0;
}

/* The most threads a call may use before the cores are counted: the policy's `max`
   (config.blas_threads, set_max_threads, WORKBENCH_NUM_THREADS) when set, else `own`, the
   BLAS's own count (OPENBLAS_NUM_THREADS or OMP_NUM_THREADS when it loaded, threadpoolctl;
   <= 0: unknown). */
static inline int wb_threads_cap(const int own) {
  const double m = wb_blas_policy[WB_BP_MAX];
  return m >= 1 ? (int)m : own;
}

/* The threads code that runs no BLAS call (the row kernels) may use now: the cap with
   the BLAS's own count read through wb_blas_own_threads, never more than the cores (all
   of them when neither the policy nor a BLAS says; the online processors where the
   allowed ones are unknown). */
static int wb_threads_allowed(void) {
  int cpus = wb_blas_cpus();
  if (cpus <= 0) cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
  int n = wb_threads_cap(wb_blas_own_threads ? wb_blas_own_threads() : 0);
  if (n < 1) n = cpus;
  if (cpus > 0 && n > cpus) n = cpus;
  return n > 1 ? n : 1;
}

/* Notes the threads of a call that is no BLAS call (last_threads(), and the profiler's
   last_worked_threads()): `given`, of which `worked` computed a part. */
static inline void wb_threads_note(const int given, const int worked) {
  wb_blas_policy[WB_BP_LAST] = given;
  wb_blas_policy[WB_BP_WORKED] = worked;
}
#endif
""".replace("%(module)s", __name__)

#: The C of the policy (in every module that calls BLAS): `wb_blas_policy_init()` at
#: module load, `wb_blas_begin` / `wb_blas_end` around each call, each call site with its
#: own `static wb_blas_site`. Under an include guard: a bundle may hold several users
#: (ops/blas.py and ops/lapack_base.py kinds).
POLICY_C = CAP_C + "\n#ifndef WB_BLAS_POLICY_C\n#define WB_BLAS_POLICY_C\n" + LOGIC_C + r"""
#include <time.h>
#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>
#endif

static double wb_blas_clock(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The idle ticks (idle + iowait) of the cores this process may run on, from the cpuN
   lines at the top of /proc/stat; -1 when unknown. */
static double wb_blas_idle_ticks(void) {
#ifdef __linux__
  cpu_set_t set;
  const int have_set = sched_getaffinity(0, sizeof set, &set) == 0;
  char text[16384];
  const int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t len = 0, got;
  while (len < (ssize_t)sizeof text - 1 &&
         (got = read(fd, text + len, sizeof text - 1 - len)) > 0) len += got;
  close(fd);
  text[len > 0 ? len : 0] = 0;
  double ticks = 0;
  int found = 0;
  for (char *line = text, *next; line && (next = strchr(line, '\n')); line = next + 1) {
    *next = 0;
    if (strncmp(line, "cpu", 3) != 0) break;
    if (line[3] < '0' || line[3] > '9') continue;  /* the "cpu" line of all cores */
    char *end;
    const long cpu = strtol(line + 3, &end, 10);
    unsigned long long v[5];
    if (sscanf(end, "%llu %llu %llu %llu %llu", v, v + 1, v + 2, v + 3, v + 4) != 5) continue;
    if (have_set && (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set))) continue;
    ticks += (double)(v[3] + v[4]);
    found++;
  }
  return found ? ticks : -1;
#else
  return -1;
#endif
}

/* The cores other processes left beside the caller's, on average since the last note
   (>= 0; -1: unknown, or no note): idle cores plus this process's CPU time (its spinning
   BLAS helpers are not another process's load), minus the caller's core. Notes the
   time at `now`. */
static double wb_blas_spare_since(volatile double *p, double now) {
  const double ticks = wb_blas_idle_ticks(), own = wb_blas_clock(CLOCK_PROCESS_CPUTIME_ID);
  const double then = p[WB_BP_IDLE_AT], before = p[WB_BP_IDLE_TICKS];
  const double own_before = p[WB_BP_OWN_CPU];
  p[WB_BP_IDLE_TICKS] = ticks;
  p[WB_BP_OWN_CPU] = own;
  p[WB_BP_IDLE_AT] = ticks >= 0 ? now : 0;
  if (ticks < 0 || then <= 0 || now <= then) return -1;
#ifdef __linux__
  const double idle = (ticks - before) / ((double)sysconf(_SC_CLK_TCK) * (now - then));
  const double spare = idle + (own - own_before) / (now - then) - 1;
  return spare > 0 ? spare : 0;
#else
  return -1;
#endif
}

/* One call: its threads, the BLAS's count to restore and the count set for the call,
   its mode (WB_RUN_), its site and work, and its start (wall, and the calling thread's CPU
   time in one-thread modes); `pooled`: its threads are workbench's (thread_pool.py), each
   running one-thread BLAS calls; `worked`: how many of them ran a part of it. */
typedef struct {
  int threads, previous, blas, mode, pooled, worked;
  double start, cpu, work;
  wb_blas_site *site;
} wb_blas_call;

/* Chooses the threads of a call of `work` multiply-adds at `site`. `poolable`: the caller
   can share the call among its own threads (a GEMM split in panels); when the policy's
   `pool` is on and the call gets more than one thread, c->pooled is set and the BLAS
   runs on one thread (each panel one call), else the BLAS's count is the call's. */
static void wb_blas_begin_pooled(wb_blas_call *c, wb_blas_site *site, double work,
                                 int poolable) {
  volatile double *p = wb_blas_policy;
  c->previous = c->threads = c->blas = wb_blas_get_threads();
  c->mode = WB_RUN_SOLO;
  c->pooled = 0;
  c->worked = 0;
  c->site = site;
  c->work = work;
  if (c->previous <= 0) { p[WB_BP_LAST] = 0; return; }  /* a BLAS without the API */
  int n = wb_threads_cap(c->previous);
  const double per = p[WB_BP_WORK] >= 1 ? p[WB_BP_WORK] : 1;
  if (work < per * n) n = (int)(work / per);
  if (n > 1) {
    const int cpus = wb_blas_cpus();
    if (cpus > 0 && n > cpus) n = cpus;
  }
  if (n < 1) n = 1;
  /* a pooled call needs no back-off: it never waits for a helper that has not started */
  const int pooled = n > 1 && poolable && p[WB_BP_POOL] != 0;
  if (n > 1 && !pooled && p[WB_BP_ADAPTIVE] != 0) {
    const double now = wb_blas_clock(CLOCK_MONOTONIC);
    c->mode = wb_blas_plan(p, site, now);
    if (c->mode == WB_RUN_ASK) c->mode = wb_blas_answer(p, n, wb_blas_spare_since(p, now), now);
    if (c->mode != WB_RUN_THREADED) n = 1;
  }
  c->threads = n;
  c->pooled = pooled;
  c->blas = c->pooled ? 1 : n;
  p[WB_BP_LAST] = n;
  if (c->blas != c->previous) wb_blas_set_threads(c->blas);
  /* the calls judged after (wb_blas_end) note their start; only a calibrating call reads
     the thread's CPU clock (see "the thread's CPU clock" in blas_threads.py: each read can
     cost the caller its core under contention), and a back-off's call reads no clock */
  if (c->mode == WB_RUN_THREADED || c->mode == WB_RUN_CALIBRATE) {
    if (c->mode == WB_RUN_CALIBRATE) c->cpu = wb_blas_clock(CLOCK_THREAD_CPUTIME_ID);
    c->start = wb_blas_clock(CLOCK_MONOTONIC);
  }
}

/* Sets the BLAS thread count for a call of `work` multiply-adds at `site`. */
static void wb_blas_begin(wb_blas_call *c, wb_blas_site *site, double work) {
  wb_blas_begin_pooled(c, site, work, 0);
}

/* After the call: judges it (LOGIC_C), notes the threads that worked and restores the
   BLAS's count. */
static void wb_blas_end(wb_blas_call *c) {
  volatile double *p = wb_blas_policy;
  if (c->mode == WB_RUN_THREADED || c->mode == WB_RUN_CALIBRATE) {
    const double now = wb_blas_clock(CLOCK_MONOTONIC);
    const double cpu = c->mode == WB_RUN_CALIBRATE
        ? wb_blas_clock(CLOCK_THREAD_CPUTIME_ID) - c->cpu : 0;
    if (wb_blas_judge(p, c->site, c->mode, c->work, now - c->start, cpu, now))
      wb_blas_spare_since(p, now);
  }
  p[WB_BP_WORKED] = c->pooled ? c->worked : c->threads;
  if (c->blas != c->previous) wb_blas_set_threads(c->previous);
}
#endif
""".replace("%(module)s", __name__)
