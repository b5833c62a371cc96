"""(4) One training step of a 784-256-10 MLP (tanh, softmax cross-entropy, SGD updates of
shared weights, batch 128) in float32 and float64; in full runs also the gradient step of
a 10-layer tanh MLP (deep.py).

References: NumPy with hand-written backpropagation (`workbench.examples.mlp.numpy_step`),
PyTensor (the same graph, weights in shared variables) and JAX jit (`jax.grad`, the new
weights returned and fed back, buffers donated). Every system's first step is checked
against NumPy's: the cost and every updated weight and bias.
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
    jax_module,
    pytensor_modes,
    pytensor_module,
)
from wb_bench.profiles import add_profile

LEARNING_RATE = 0.1


def workbench_step(dtype: str, linker: str = "c") -> tuple[Any, list[Any]]:
    """The compiled step and its shared parameters (W1, b1, W2, b2)."""
    import workbench as wb
    from workbench.examples import mlp

    source = mlp.build_source(dtype=dtype, learning_rate=LEARNING_RATE)
    fn = wb.function(source.inputs, source.outputs[0], updates=source.updates, linker=linker)
    return fn, [param for param, _ in source.updates]


def pytensor_step(pt: Any, dtype: str, mode: Any) -> tuple[Any, list[Any]]:
    """The compiled step and its shared parameters (W1, b1, W2, b2)."""
    import pytensor.tensor as ptt
    from pytensor.tensor.special import softmax

    from workbench.examples.mlp import initial_params

    x = ptt.tensor("x", dtype=dtype, shape=(None, 784))
    labels = ptt.tensor("labels", dtype=dtype, shape=(None, 10))
    params = [pt.shared(v, name=n) for v, n in zip(initial_params(dtype=dtype),
                                                   ("W1", "b1", "W2", "b2"))]
    w1, b1, w2, b2 = params
    hidden = ptt.tanh(x @ w1 + b1)
    probabilities = softmax(hidden @ w2 + b2, axis=-1)
    cost = -(labels * ptt.log(probabilities)).sum(axis=1).mean()
    grads = pt.grad(cost, params)
    lr = np.asarray(LEARNING_RATE, dtype=dtype)
    updates = [(p, p - lr * g) for p, g in zip(params, grads)]
    return pt.function([x, labels], cost, updates=updates, mode=mode), params


def jax_step(jax: Any) -> Any:
    import jax.numpy as jnp

    def cost_fn(params: Any, x: Any, labels: Any) -> Any:
        w1, b1, w2, b2 = params
        hidden = jnp.tanh(x @ w1 + b1)
        log_p = jax.nn.log_softmax(hidden @ w2 + b2, axis=-1)
        return -(labels * log_p).sum(axis=1).mean()

    def step(params: Any, x: Any, labels: Any) -> Any:
        cost, grads = jax.value_and_grad(cost_fn)(params, x, labels)
        return cost, tuple(p - LEARNING_RATE * g for p, g in zip(params, grads))

    return jax.jit(step, donate_argnums=(0,))


def numpy_expected(params: list[np.ndarray], step: Any, *args: Any
                   ) -> tuple[np.ndarray, list[np.ndarray]]:
    """NumPy's cost and parameters after one step from `params` (a copy is updated)."""
    params = [p.copy() for p in params]
    return step(params, *args), params


def add_jax(case: Case, jax: Any, step: Any, params: list[np.ndarray], args: tuple[Any, ...],
            expected: tuple[Any, list[Any]], tol: dict[str, float]) -> None:
    """JAX jit's step on `case`, its first step checked against `expected` (the new
    parameters fed back at every call, buffers donated); a failure gives a failed row."""
    try:
        state = [tuple(jax.device_put(p) for p in params)]
        jargs = tuple(jax.device_put(a) for a in args)
        cost, state[0] = step(state[0], *jargs)
        check_step(expected, np.asarray(cost), [np.asarray(p) for p in state[0]],
                   f"{case.name} (jax)", **tol)

        def jax_call(state: list[Any] = state) -> None:
            cost, state[0] = step(state[0], *jargs)
            cost.block_until_ready()

        case.add("jax jit", jax_call)
    except Exception as exc:  # noqa: BLE001
        case.fail("jax jit", exc)


def run(ctx: Context) -> list[Row]:
    from workbench.examples.mlp import initial_params, make_batch, numpy_step

    pt = pytensor_module(ctx)
    jax = jax_module(ctx)
    rows: list[Row] = []
    dtypes = ("float32", "float64")
    if ctx.quick:
        dtypes = ("float64",)
        ctx.note("quick run: MLP step in float64 only, without PyTensor (its compile is slow)")
        pt = None
    for dtype in dtypes:
        case = Case(f"MLP step 784-256-10 b128 {dtype}")
        x, labels = make_batch(dtype=dtype)
        tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {}
        expected = numpy_expected(initial_params(dtype=dtype), numpy_step, x, labels,
                                  LEARNING_RATE)
        try:
            fn, shared = workbench_step(dtype)
            check_step(expected, fn(x, labels), [p.get_value() for p in shared], case.name,
                       **tol)
            case.add(SUBJECT, lambda fn=fn, x=x, labels=labels: fn(x, labels),
                     note=_python_nodes(fn))
            add_profile(ctx, case.name, fn, x, labels)
        except Exception as exc:  # noqa: BLE001
            case.fail(SUBJECT, exc)
        params = initial_params(dtype=dtype)
        case.add("numpy backprop",
                 lambda p=params, x=x, labels=labels: numpy_step(p, x, labels, LEARNING_RATE),
                 note="hand-written gradients")
        if pt is not None:
            for label, mode in pytensor_modes(ctx):
                try:
                    pfn, pshared = pytensor_step(pt, dtype, mode)
                    check_step(expected, pfn(x, labels), [p.get_value() for p in pshared],
                               f"{case.name} ({label})", **tol)
                    case.add(label, lambda pfn=pfn, x=x, labels=labels: pfn(x, labels))
                except Exception as exc:  # noqa: BLE001
                    case.fail(label, exc)
        if jax is not None:
            add_jax(case, jax, jax_step(jax), initial_params(dtype=dtype), (x, labels),
                    expected, tol)
        rows += case.measure(ctx)
    if ctx.quick:
        ctx.note("quick run: no 10-layer MLP gradient step")
    else:
        from wb_bench import deep

        rows += deep.run(ctx, pt, jax, dtypes)
    return rows


def _python_nodes(fn: Any) -> str:
    """Which Op classes still run through `perform` (their C kernels are missing)."""
    report = getattr(fn.linker, "report", None)
    if report is None or not report.py_nodes:
        return ""
    names = sorted({type(node.op).__name__ for node, _ in report.py_nodes})
    return f"{len(report.py_nodes)} Python nodes: " + ", ".join(names)
