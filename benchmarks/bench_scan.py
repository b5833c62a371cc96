"""Loops: workbench's Scan (C linker) against PyTensor's scan and jax.lax.scan under jit.

Two workloads, each timed side by side in one process, the implementations taking
turns repeat by repeat (a load spike on a shared machine hits all alike):

- rnn:    h_t = tanh(x_t W + h_{t-1} U + b), 1000 steps, batch 32, hidden 64, float64;
          the cost sum(h**2) and its gradient w.r.t. W, U, b (forward + BPTT);
- scalar: y_t = 0.999 * y_{t-1} + 1, 10,000 steps, the last value only: the time per
          step is the loop's own overhead (the body is two flops).

Every implementation's result is first checked against the others. Prints a table with
the median time per call and each time over workbench's (above 1: workbench faster),
plus the compile time of the RNN training step (cold: a fresh WORKBENCH_CACHE_DIR).

    python benchmarks/bench_scan.py [--repeats 5] [--steps 1000] [--no-pytensor] [--no-jax]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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


def timed(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median seconds per call of each fn, taking turns repeat by repeat."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm-up (JIT, caches)
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def cold_compile_seconds() -> float:
    """Graph to first result of the RNN training step in a new process with an empty C
    cache (a fresh WORKBENCH_CACHE_DIR)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, WORKBENCH_CACHE_DIR=cache)
        done = subprocess.run([sys.executable, __file__, "--cold-child"], env=env,
                              capture_output=True, text=True, check=True)
        return float(done.stdout.split()[-1])


def cold_child() -> None:
    start = time.perf_counter()
    workbench_rnn()(*rnn_values(4))
    print(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--no-pytensor", action="store_true")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--cold-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        cold_child()
        return
    makers = {"workbench (c)": (workbench_rnn, workbench_scalar)}
    if not args.no_pytensor:
        makers["pytensor"] = (pytensor_rnn, pytensor_scalar)
    if not args.no_jax:
        makers["jax.lax.scan (jit)"] = (jax_rnn, jax_scalar)
    values = rnn_values(args.steps)
    rnn_fns, scalar_fns = {}, {}
    for name, (make_rnn, make_scalar) in makers.items():
        try:
            rnn, scalar = make_rnn(), make_scalar()
        except ImportError as exc:
            print(f"(skipped {name}: {exc})")
            continue
        rnn_fns[name] = lambda rnn=rnn: rnn(*values)
        scalar_fns[name] = lambda scalar=scalar: scalar(np.array(1.0))
    results = {name: fn() for name, fn in rnn_fns.items()}
    reference = results["workbench (c)"]
    for name, got in results.items():
        for a, b in zip(got, reference):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-7, err_msg=name)
    for name, fn in scalar_fns.items():
        np.testing.assert_allclose(float(fn()), float(scalar_fns["workbench (c)"]()),
                                   rtol=1e-9, err_msg=name)
    rnn_times = timed(rnn_fns, args.repeats)
    scalar_times = timed(scalar_fns, args.repeats)
    print(f"rnn: {args.steps} steps, batch {BATCH}, hidden {HIDDEN}, float64, forward + BPTT")
    print("| implementation | rnn ms | rnn time / workbench | scalar µs per step | "
          "scalar / workbench |")
    print("|---|---|---|---|---|")
    wb_rnn, wb_scalar = rnn_times["workbench (c)"], scalar_times["workbench (c)"]
    for name in rnn_times:
        print(f"| {name} | {rnn_times[name] * 1e3:.1f} | {rnn_times[name] / wb_rnn:.2f} | "
              f"{scalar_times[name] / SCALAR_STEPS * 1e6:.3f} | "
              f"{scalar_times[name] / wb_scalar:.2f} |")
    print(f"cold compile of the RNN training step (empty C cache): "
          f"{cold_compile_seconds():.2f} s")


if __name__ == "__main__":
    main()
