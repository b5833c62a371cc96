"""(4b) The gradient step of a 10-layer tanh MLP (width 256, batch 128): SGD on shared
weights, cost = mean over the batch of half the squared norm of the last layer's output.

The issue 22 workload "10-layer tanh MLP gradient step" in float64 and float32, part of
the `mlp` family in full runs. References: NumPy with hand-written backpropagation
(`numpy_step`), PyTensor and JAX jit (`value_and_grad`, donated buffers). Every system's
first step is checked against NumPy's: the cost and all 20 updated parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wb_bench.common import (
    SUBJECT,
    Case,
    Context,
    Row,
    check_step,
    pytensor_modes,
)
from wb_bench.profiles import add_profile

DEPTH, WIDTH, BATCH = 10, 256, 128
LEARNING_RATE = 0.01


def initial_params(dtype: str) -> list[np.ndarray]:
    """[W0, b0, W1, b1, ...]: weights scaled by 1/sqrt(width), zero biases."""
    rng = np.random.default_rng(3)
    params = []
    for _ in range(DEPTH):
        params += [(rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(dtype),
                   np.zeros(WIDTH, dtype=dtype)]
    return params


def batch(dtype: str) -> np.ndarray:
    return np.random.default_rng(4).standard_normal((BATCH, WIDTH)).astype(dtype)


def numpy_step(params: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """One SGD step with hand-written backpropagation, updating `params`; the cost before."""
    hs = [x]
    for k in range(DEPTH):
        hs.append(np.tanh(hs[-1] @ params[2 * k] + params[2 * k + 1]))
    out = hs[-1]
    cost = 0.5 * (out * out).sum() / x.shape[0]
    grad_h = out / x.shape[0]
    for k in reversed(range(DEPTH)):
        grad_pre = grad_h * (1 - hs[k + 1] * hs[k + 1])
        grad_w, grad_b = hs[k].T @ grad_pre, grad_pre.sum(axis=0)
        grad_h = grad_pre @ params[2 * k].T
        params[2 * k] -= LEARNING_RATE * grad_w
        params[2 * k + 1] -= LEARNING_RATE * grad_b
    return np.asarray(cost, dtype=x.dtype)


def _graph(lib: Any, grad: Any, x: Any, params: list[Any]) -> tuple[Any, list[Any]]:
    h = x
    for k in range(DEPTH):
        h = lib.tanh(h @ params[2 * k] + params[2 * k + 1])
    cost = 0.5 * (h * h).sum() / x.shape[0]
    grads = grad(cost, params)
    # the rate in the weights' dtype: a Python float would make PyTensor's float32
    # updates float64 (refused: an update must keep its shared variable's type)
    rate = np.asarray(LEARNING_RATE, dtype=x.dtype)
    return cost, [(p, p - rate * g) for p, g in zip(params, grads)]


def workbench_step(dtype: str) -> tuple[Any, list[Any]]:
    """The compiled step and its shared parameters."""
    import workbench.tensor as wt

    import workbench as wb

    x = wt.matrix("x", dtype=dtype)
    params = [wb.shared(v) for v in initial_params(dtype)]
    cost, updates = _graph(wt, wb.grad, x, params)
    return wb.function([x], cost, updates=updates, linker="c"), params


def pytensor_step(pt: Any, dtype: str, mode: Any) -> tuple[Any, list[Any]]:
    """The compiled step and its shared parameters."""
    import pytensor.tensor as ptt

    x = ptt.matrix("x", dtype=dtype)
    params = [pt.shared(v) for v in initial_params(dtype)]
    cost, updates = _graph(ptt, pt.grad, x, params)
    return pt.function([x], cost, updates=updates, mode=mode), params


def jax_step(jax: Any) -> Any:
    import jax.numpy as jnp

    def cost_fn(params: Any, x: Any) -> Any:
        h = x
        for k in range(DEPTH):
            h = jnp.tanh(h @ params[2 * k] + params[2 * k + 1])
        return 0.5 * (h * h).sum() / x.shape[0]

    def step(params: Any, x: Any) -> Any:
        cost, grads = jax.value_and_grad(cost_fn)(params, x)
        return cost, tuple(p - LEARNING_RATE * g for p, g in zip(params, grads))

    return jax.jit(step, donate_argnums=(0,))


def run(ctx: Context, pt: Any, jax: Any, dtypes: tuple[str, ...]) -> list[Row]:
    from wb_bench.mlp import add_jax, numpy_expected

    rows: list[Row] = []
    for dtype in dtypes:
        case = Case(f"{DEPTH}-layer tanh MLP grad step w{WIDTH} b{BATCH} {dtype}")
        x = batch(dtype)
        tol = {"rtol": 1e-4, "atol": 1e-6} if dtype == "float32" else {}
        expected = numpy_expected(initial_params(dtype), numpy_step, x)
        try:
            fn, shared = workbench_step(dtype)
            check_step(expected, fn(x), [p.get_value() for p in shared], case.name, **tol)
            case.add(SUBJECT, lambda fn=fn, x=x: fn(x))
            add_profile(ctx, case.name, fn, x)
        except Exception as exc:  # noqa: BLE001
            case.fail(SUBJECT, exc)
        params = initial_params(dtype)
        case.add("numpy backprop", lambda p=params, x=x: numpy_step(p, x),
                 note="hand-written gradients")
        if pt is not None:
            for label, mode in pytensor_modes(ctx):
                try:
                    pfn, pshared = pytensor_step(pt, dtype, mode)
                    check_step(expected, pfn(x), [p.get_value() for p in pshared],
                               f"{case.name} ({label})", **tol)
                    case.add(label, lambda pfn=pfn, x=x: pfn(x))
                except Exception as exc:  # noqa: BLE001
                    case.fail(label, exc)
        if jax is not None:
            add_jax(case, jax, jax_step(jax), initial_params(dtype), (x,), expected, tol)
        rows += case.measure(ctx)
    return rows
