"""Loops: workbench's Scan (C linker) against PyTensor's scan and jax.lax.scan under jit.

Two workloads, each timed side by side in one process (the suite's `Case`: the
implementations take turns repeat by repeat, so a load spike hits all alike):

- rnn:    h_t = tanh(x_t W + h_{t-1} U + b), 1000 steps, batch 32, hidden 64, float64;
          the cost sum(h**2) and its gradient w.r.t. W, U, b (forward + BPTT);
- scalar: y_t = 0.999 * y_{t-1} + 1, 10,000 steps, the last value only: the time per
          step is the loop's own overhead (the body is two flops).

Threads are stated and controlled: each workload runs twice, each time in a fresh
process, (1) "one core": every library told to use one thread (OPENBLAS/OMP/MKL_NUM_THREADS,
WORKBENCH_NUM_THREADS, threadpoolctl, XLA_FLAGS) *and* the process pinned to one core
with os.sched_setaffinity, since XLA's CPU runtime may not obey its flag: the per-core
figure; (2) "default threads": each library's own default. Every row gives the wall
time and the process CPU time per call and the threads of the process that got CPU
time while that implementation ran (what it really used).

Every implementation's result is first checked against the others. Prints one table
(ratio: that row's time over workbench's, above 1: workbench faster), the µs per step
of the scalar loop, and the compile time of the RNN training step (cold: a fresh
WORKBENCH_CACHE_DIR, in a new process).

    python benchmarks/bench_scan.py [--repeats 5] [--steps 1000] [--no-pytensor] [--no-jax]
                                    [--only one-core|default] [--coretype NAME|auto]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _path in (str(HERE.parent), str(HERE)):  # the repository (workbench) and wb_bench
    if _path not in sys.path:
        sys.path.insert(0, _path)

import numpy as np  # noqa: E402

STEPS, BATCH, HIDDEN, SCALAR_STEPS = 1000, 32, 64, 10_000


def rnn_values(steps: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.normal(size=(steps, BATCH, HIDDEN)), np.zeros((BATCH, HIDDEN)),
            rng.normal(size=(HIDDEN, HIDDEN)) * 0.1, rng.normal(size=(HIDDEN, HIDDEN)) * 0.1,
            rng.normal(size=HIDDEN) * 0.1]


def workbench_rnn() -> Callable[..., Any]:
    import workbench.tensor as wt

    import workbench as wb

    x, h0 = wt.dtensor3("x"), wt.dmatrix("h0")
    w, u, b = wt.dmatrix("w"), wt.dmatrix("u"), wt.dvector("b")
    hs, _ = wb.scan(lambda xt, h, w_, u_, b_: wt.tanh(wt.dot(xt, w_) + wt.dot(h, u_) + b_),
                    sequences=x, outputs_info=h0, non_sequences=[w, u, b], name="rnn")
    cost = (hs**2).sum()
    return wb.function([x, h0, w, u, b], [cost, *wb.grad(cost, [w, u, b])], trust_input=True)


def pytensor_rnn() -> Callable[..., Any]:
    import pytensor
    import pytensor.tensor as pt

    x, h0 = pt.dtensor3("x"), pt.dmatrix("h0")
    w, u, b = pt.dmatrix("w"), pt.dmatrix("u"), pt.dvector("b")
    hs, _ = pytensor.scan(lambda xt, h, w_, u_, b_: pt.tanh(pt.dot(xt, w_) + pt.dot(h, u_) + b_),
                          sequences=x, outputs_info=h0, non_sequences=[w, u, b])
    cost = (hs**2).sum()
    f = pytensor.function([x, h0, w, u, b], [cost, *pytensor.grad(cost, [w, u, b])])
    f.trust_input = True
    return f


def jax_rnn() -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def cost(w, u, b, x, h0):
        def step(h, xt):
            h = jnp.tanh(xt @ w + h @ u + b)
            return h, h

        _, hs = jax.lax.scan(step, h0, x)
        return (hs**2).sum()

    grad = jax.jit(jax.value_and_grad(cost, argnums=(0, 1, 2)))

    def run(x, h0, w, u, b):
        value, grads = grad(w, u, b, x, h0)
        value.block_until_ready()
        return [value, *grads]

    return run


def workbench_scalar() -> Callable[..., Any]:
    import workbench.tensor as wt

    import workbench as wb

    a = wt.dscalar("a")
    ys, _ = wb.scan(lambda y: y * 0.999 + 1.0, outputs_info=a, n_steps=SCALAR_STEPS)
    return wb.function([a], ys[-1], trust_input=True)


def pytensor_scalar() -> Callable[..., Any]:
    import pytensor
    import pytensor.tensor as pt

    a = pt.dscalar("a")
    ys, _ = pytensor.scan(lambda y: y * 0.999 + 1.0, outputs_info=a, n_steps=SCALAR_STEPS)
    f = pytensor.function([a], ys[-1])
    f.trust_input = True
    return f


def jax_scalar() -> Callable[..., Any]:
    import jax

    jax.config.update("jax_enable_x64", True)

    @jax.jit
    def last(a):
        return jax.lax.scan(lambda y, _: (y * 0.999 + 1.0, None), a, None,
                            length=SCALAR_STEPS)[0]

    return lambda a: last(a).block_until_ready()


CONFIGS = {"one-core": "one core (1 thread each, pinned)", "default": "default threads"}


def pin_to_one_core() -> int:
    """Limit every library to one thread and pin this process to one core (before NumPy,
    BLAS or XLA start a thread); returns the core."""
    from wb_bench.threads import limit_threads

    limit_threads(1)
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


def child(config: str, steps: int, repeats: int, pytensor: bool, jax: bool) -> None:
    """Measure both workloads under `config` and print the rows as JSON."""
    notes = []
    if config == "one-core":
        core = pin_to_one_core()
        notes.append(f"one core: the process pinned to core {core} (os.sched_setaffinity)")
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from wb_bench.common import Case, Context, to_json
    from wb_bench.threads import threads_note

    ctx = Context.make(False, repeats, pytensor, jax)
    ctx.min_seconds = 0.2
    for note in notes:
        ctx.note(note)
    ctx.note(threads_note(1 if config == "one-core" else 0))
    ctx.note("workbench: the final -O3 code (Case.measure waits for its background builds)")
    makers = {"workbench c": (workbench_rnn, workbench_scalar)}
    if pytensor:
        makers["pytensor default"] = (pytensor_rnn, pytensor_scalar)
    if jax:
        makers["jax.lax.scan jit"] = (jax_rnn, jax_scalar)
    values = rnn_values(steps)
    label = CONFIGS[config]
    rnn, scalar = Case(f"rnn {steps} steps, {label}"), Case(f"scalar 10k steps, {label}")
    results: dict[str, Any] = {}
    for name, (make_rnn, make_scalar) in makers.items():
        try:
            f_rnn, f_scalar = make_rnn(), make_scalar()
        except ImportError as exc:
            ctx.note(f"{name}: skipped ({exc})")
            continue
        results[name] = (f_rnn(*values), float(f_scalar(np.array(1.0))))
        rnn.add(name, lambda f=f_rnn: f(*values))
        scalar.add(name, lambda f=f_scalar: f(np.array(1.0)))
    if config == "one-core":  # (now that every library has loaded its thread pools)
        from threadpoolctl import threadpool_info, threadpool_limits

        threadpool_limits(1)
    pools = [f"{i['internal_api']} ({Path(i['filepath']).name}) {i['num_threads']}"
             for i in threadpool_info()] if config == "one-core" else []
    if pools:
        ctx.note(f"threadpoolctl's pools after loading every library: {', '.join(pools)}")
    reference = results["workbench c"]
    for name, (got, last) in results.items():
        for a, b in zip(got, reference[0]):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-7, err_msg=name)
        np.testing.assert_allclose(last, reference[1], rtol=1e-9, err_msg=name)
    rows = rnn.measure(ctx) + scalar.measure(ctx)
    print(to_json(rows, ctx.notes, ctx))


def cold_compile_seconds(samples: int = 3) -> tuple[float, float, list[float]]:
    """Graph to first result of the RNN training step, each sample a new process with an
    empty C cache (a fresh WORKBENCH_CACHE_DIR), after one untimed process (Python's
    bytecode written, the toolchain's files read): the median wall seconds, the median
    CPU seconds of the process and of the compilers it ran (on a loaded machine the
    fairer figure), and every sample's wall seconds. The import of workbench is not
    counted (as for the suite's compile rows)."""
    walls, cpus = [], []
    for k in range(samples + 1):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, WORKBENCH_CACHE_DIR=cache)
            done = subprocess.run([sys.executable, __file__, "--cold-child"], env=env,
                                  capture_output=True, text=True, check=True)
        if k == 0:
            continue  # the untimed warm-up
        wall, cpu = done.stdout.split()[-2:]
        walls.append(float(wall))
        cpus.append(float(cpu))
    return statistics.median(walls), statistics.median(cpus), walls


def cold_child() -> None:
    import resource

    import workbench.tensor  # noqa: F401  (imports are not compile time)

    import workbench as wb
    import workbench.core.link.c.linker  # noqa: F401
    import workbench.core.link.c.ops  # noqa: F401

    wb.function  # noqa: B018  (the lazily loaded public API)
    values = rnn_values(4)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start, cpu = time.perf_counter(), time.process_time()
    workbench_rnn()(*values)
    wall = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    compilers = (children.ru_utime + children.ru_stime) - (before.ru_utime + before.ru_stime)
    print(wall, time.process_time() - cpu + compilers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--no-pytensor", action="store_true")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--only", choices=tuple(CONFIGS), default=None,
                        help="measure one thread configuration only")
    parser.add_argument("--coretype", default=None, metavar="NAME",
                        help="OPENBLAS_CORETYPE for the children (as run.py's): a kernel "
                             "name or 'auto' (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset: "
                             "OpenBLAS picks this CPU's kernels); "
                             "default: the environment's")
    parser.add_argument("--cold-repeats", type=int, default=3,
                        help="fresh processes for the cold compile's median (default 3)")
    parser.add_argument("--child", choices=tuple(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--cold-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_repeats < 1:
        parser.error(f"--cold-repeats must be >= 1, got {args.cold_repeats}")
    if args.cold_child:
        cold_child()
        return
    if args.child:
        child(args.child, args.steps, args.repeats, not args.no_pytensor, not args.no_jax)
        return
    from wb_bench.common import Row, fill_ratios, format_table
    from wb_bench.threads import apply_coretype, coretype_banner

    env = dict(os.environ)
    apply_coretype(args.coretype, env)
    rows: list[Row] = []
    notes: list[str] = [f"OPENBLAS_CORETYPE: {env.get('OPENBLAS_CORETYPE', 'unset (this CPU)')}"]
    for config in [args.only] if args.only else CONFIGS:
        command = [sys.executable, __file__, "--child", config, "--steps", str(args.steps),
                   "--repeats", str(args.repeats)]
        command += ["--no-pytensor"] * args.no_pytensor + ["--no-jax"] * args.no_jax
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        result = json.loads(done.stdout[done.stdout.index("{"):])
        rows += [Row(**r) for r in result["rows"]]
        notes += [n for n in result["notes"] if n not in notes]
    fill_ratios(rows)
    print(f"rnn: {args.steps} steps, batch {BATCH}, hidden {HIDDEN}, float64, forward + BPTT")
    print(format_table(rows, notes, [coretype_banner(env)]))
    print("\nscalar loop, µs per step (the loop's overhead; goal under 0.2):")
    for row in rows:
        if row.case.startswith("scalar") and row.seconds:
            print(f"  {row.impl} [{row.case.split(', ', 1)[1]}]: "
                  f"{row.seconds / SCALAR_STEPS * 1e6:.3f}")
    wall, cpu, walls = cold_compile_seconds(args.cold_repeats)
    print(f"cold compile of the RNN training step (empty C cache, import not counted; goal "
          f"under 2 s): median of {len(walls)} fresh processes {wall:.2f} s wall "
          f"({', '.join(f'{w:.2f}' for w in walls)}), {cpu:.2f} s CPU (the process and its "
          f"compilers)")


if __name__ == "__main__":
    main()
