"""The helper threads of generated code: one small pool that shares a loop's items.

Used by the row kernels (ops/special.py: rows of softmax and logsumexp) and the
matrix products (ops/blas.py: panels of a GEMM, each a one-thread BLAS call), each job
on as many threads as the caller gives it under the one cap of blas_threads.py.

Not an OpenMP team nor OpenBLAS's own threads, on purpose: both end a parallel call
with a wait for every thread of the team, and on a machine whose cores are busy with
other processes a helper the scheduler has not run yet stalls the call for a time
slice (measured on this project's 2-core machine: softmax 8 ms instead of 2 ms
serial; a GEMM of 0.4 ms on one thread took 30-50 ms on two one call in ten). Here the
calling thread takes chunks of items itself, from one counter shared with the helpers,
and waits only for chunks a helper has actually started: a helper that wakes up late
finds no work and sleeps again, and one that runs still helps. After a job a helper
polls for the next one for `SPIN_NS`, yielding its core at each look (a job that follows
soon skips the wake-up), then
sleeps on a condition variable (no long spinning: on a busy machine a spinning helper
takes a core from the process it waits for); helpers block every signal (signals stay
Python's).

One job at a time per pool: a second caller (another Python thread, the GIL released)
that finds the pool busy runs its loop alone, so calls from several threads are safe.
A forked child starts with an empty pool (its parent's helpers do not exist in it).
Helpers are detached and hold no Python object, so the interpreter exits without
waiting for them.

`POOL_C` is C under an include guard: every generated module (or bundle of them) that
uses it holds its own pool, started at its first parallel call.
"""

from __future__ import annotations

__all__ = ["POOL_C", "POOL_MAX"]

#: The most helper threads a pool starts.
POOL_MAX = 64
#: Nanoseconds a helper polls for the next job before it sleeps (waking a sleeping
#: thread takes tens of microseconds; a job that follows soon finds it awake).
#: It polls with sched_yield: when the core is wanted (on a busy machine the helper may
#: share the caller's core) the waiting thread runs first. 100 us: the MLP step of issue
#: 22 on two idle cores, 0.605 ms sleeping at once, 0.57 ms polling 50-200 us; with the
#: other core taken by another process (load 3.7-4.6), medians 0.94-0.95 ms polling with
#: sched_yield, 0.95-1.0 ms sleeping at once, 1.15-1.18 ms polling with `pause`.
SPIN_NS = 100_000

_POOL_BODY = r"""
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* fn(ctx, i0, i1) does the items [i0, i1) of a job. */
typedef void (*wb_pool_fn)(void *ctx, npy_intp i0, npy_intp i1);
static pthread_mutex_t wb_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wb_pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t wb_pool_idle = PTHREAD_COND_INITIALIZER;
static int wb_pool_threads = 0, wb_pool_in_use = 0, wb_pool_forked_hook = 0;
static wb_pool_fn wb_job_fn; static void *wb_job_ctx;
static npy_intp wb_job_items = 0, wb_job_next = 0, wb_job_chunk = 1;
static int wb_job_helpers = 0, wb_job_max_helpers = 0, wb_job_busy = 0, wb_job_workers = 0;
static int wb_job_hold = 0, wb_pool_sleeping = 0;
static unsigned long wb_job_gen = 0;  /* jobs posted: helpers poll it while they spin */

static long long wb_pool_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The next chunk of the current job (lock held); 0 when none is left. */
static int wb_job_claim(npy_intp *i0, npy_intp *i1) {
  if (wb_job_next >= wb_job_items) return 0;
  *i0 = wb_job_next;
  *i1 = wb_job_items - *i0 > wb_job_chunk ? *i0 + wb_job_chunk : wb_job_items;
  wb_job_next = *i1;
  return 1;
}

static void *wb_pool_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&wb_pool_mu);
  for (;;) {
    while (wb_job_next >= wb_job_items || wb_job_helpers >= wb_job_max_helpers
           || wb_job_hold) {
      const unsigned long seen = wb_job_gen;
      pthread_mutex_unlock(&wb_pool_mu);
      const long long end = wb_pool_now_ns() + WB_POOL_SPIN_NS;
      int posted = 0;
      for (int i = 0; !posted; i++) {
        posted = __atomic_load_n(&wb_job_gen, __ATOMIC_ACQUIRE) != seen;
        if (!posted && (i & 7) == 7 && wb_pool_now_ns() >= end) break;
        sched_yield();  /* a thread waiting for this core (the caller itself) runs first */
      }
      pthread_mutex_lock(&wb_pool_mu);
      if (posted || wb_job_gen != seen) continue;
      wb_pool_sleeping++;
      pthread_cond_wait(&wb_pool_wake, &wb_pool_mu);
      wb_pool_sleeping--;
    }
    wb_job_helpers++;
    npy_intp i0, i1;
    int worked = 0;
    while (wb_job_claim(&i0, &i1)) {
      const wb_pool_fn fn = wb_job_fn; void *ctx = wb_job_ctx;
      wb_job_busy++;
      if (!worked) { worked = 1; wb_job_workers++; }
      pthread_mutex_unlock(&wb_pool_mu);
      fn(ctx, i0, i1);
      pthread_mutex_lock(&wb_pool_mu);
      if (--wb_job_busy == 0) pthread_cond_signal(&wb_pool_idle);
    }
  }
  return NULL;
}

/* A forked child has none of the parent's helpers: start from an empty pool. */
static void wb_pool_after_fork(void) {
  pthread_mutex_init(&wb_pool_mu, NULL);
  pthread_cond_init(&wb_pool_wake, NULL);
  pthread_cond_init(&wb_pool_idle, NULL);
  wb_pool_threads = 0; wb_pool_in_use = 0;
  wb_job_items = wb_job_next = 0;
  wb_job_helpers = wb_job_max_helpers = wb_job_busy = wb_job_workers = wb_job_hold = 0;
  wb_pool_sleeping = 0;
}

/* fn(ctx, i0, i1) over the items [0, items) in chunks of `chunk`, shared with up to
   `helpers` helper threads (started at the first need, at most WB_POOL_MAX). `hold`
   (tests): the helpers are woken but take nothing, as if the scheduler never ran
   them. Returns how many threads ran a chunk: 1 when the caller did every chunk (the
   pool busy with another caller's job, no helper started or none in time). */
static int wb_pool_run(const wb_pool_fn fn, void *ctx, const npy_intp items, npy_intp chunk,
                       int helpers, const int hold) {
  if (chunk < 1) chunk = 1;
  if (helpers > WB_POOL_MAX) helpers = WB_POOL_MAX;
  if (helpers < 1 || items <= chunk) { fn(ctx, 0, items); return 1; }
  pthread_mutex_lock(&wb_pool_mu);
  if (wb_pool_in_use) { pthread_mutex_unlock(&wb_pool_mu); fn(ctx, 0, items); return 1; }
  if (!wb_pool_forked_hook) {
    pthread_atfork(NULL, NULL, wb_pool_after_fork);
    wb_pool_forked_hook = 1;
  }
  if (wb_pool_threads < helpers) {
    /* helpers block every signal (they inherit the mask): signals stay Python's business */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (wb_pool_threads < helpers) {
      pthread_t tid; pthread_attr_t attr;
      pthread_attr_init(&attr);
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      const int bad = pthread_create(&tid, &attr, wb_pool_main, NULL);
      pthread_attr_destroy(&attr);
      if (bad) break;  /* no more threads: fewer helpers */
      wb_pool_threads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  wb_pool_in_use = 1;
  wb_job_fn = fn; wb_job_ctx = ctx; wb_job_items = items; wb_job_next = 0;
  wb_job_chunk = chunk; wb_job_hold = hold;
  wb_job_helpers = 0; wb_job_max_helpers = helpers; wb_job_busy = 0; wb_job_workers = 0;
  __atomic_store_n(&wb_job_gen, wb_job_gen + 1, __ATOMIC_RELEASE);
  if (wb_pool_sleeping) pthread_cond_broadcast(&wb_pool_wake);
  npy_intp i0, i1;
  int mine = 0;
  while (wb_job_claim(&i0, &i1)) {
    mine = 1;
    pthread_mutex_unlock(&wb_pool_mu);
    fn(ctx, i0, i1);
    pthread_mutex_lock(&wb_pool_mu);
  }
  while (wb_job_busy > 0) pthread_cond_wait(&wb_pool_idle, &wb_pool_mu);
  const int workers = mine + wb_job_workers;
  wb_job_items = wb_job_next = 0; wb_job_max_helpers = 0; wb_job_hold = 0;
  wb_pool_in_use = 0;
  pthread_mutex_unlock(&wb_pool_mu);
  return workers > 0 ? workers : 1;
}
#endif
"""

POOL_C = (f"\n#ifndef WB_POOL_C\n#define WB_POOL_C\n#define WB_POOL_MAX {POOL_MAX}\n"
          f"#define WB_POOL_SPIN_NS {SPIN_NS}\n" + _POOL_BODY)
