"""(3) logsumexp and softmax over the rows of a 1000x1000 float64 matrix."""

from __future__ import annotations

from typing import Any

import numpy as np

from wb_bench.common import (
    SUBJECT,
    Case,
    Context,
    Row,
    check_close,
    jax_module,
    pytensor_modes,
    pytensor_module,
)


def numpy_logsumexp(m: np.ndarray) -> np.ndarray:
    top = m.max(axis=1, keepdims=True)
    return np.log(np.exp(m - top).sum(axis=1)) + top[:, 0]


def numpy_softmax(m: np.ndarray) -> np.ndarray:
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _graphs(lib: Any, m: Any) -> dict[str, Any]:
    return {"logsumexp": lib.logsumexp(m, axis=1), "softmax": lib.softmax(m, axis=1)}


def run(ctx: Context) -> list[Row]:
    import workbench.tensor as wt

    import workbench as wb

    pt = pytensor_module(ctx)
    jax = jax_module(ctx)
    rng = np.random.default_rng(2)
    data = rng.standard_normal((1000, 1000)) * 3.0
    expected = {"logsumexp": numpy_logsumexp(data), "softmax": numpy_softmax(data)}
    numpy_fns = {"logsumexp": numpy_logsumexp, "softmax": numpy_softmax}
    m = wt.dmatrix("m")
    graphs = _graphs(wt, m)
    pt_graphs: dict[str, Any] = {}
    if pt is not None:
        import pytensor.tensor as ptt
        from pytensor.tensor.special import softmax as pt_softmax

        pm = ptt.dmatrix("m")
        pt_graphs = {"logsumexp": ptt.logsumexp(pm, axis=1), "softmax": pt_softmax(pm, axis=1)}
    rows: list[Row] = []
    for name, graph in graphs.items():
        case = Case(f"{name} rows 1000x1000 f64")
        try:
            fn = wb.function([m], graph, linker="c")
            check_close(expected[name], fn(data), case.name)
            note = ""
            py_nodes = fn.linker.report.py_nodes
            if py_nodes:
                note = "Python nodes: " + ", ".join(sorted({type(n.op).__name__
                                                            for n, _ in py_nodes}))
            case.add(SUBJECT, lambda fn=fn: fn(data), note=note)
        except Exception as exc:  # noqa: BLE001
            case.fail(SUBJECT, exc)
        case.add("numpy", lambda f=numpy_fns[name]: f(data), note="max-shifted, stable")
        if pt is not None:
            for label, mode in pytensor_modes(ctx):
                try:
                    pfn = pt.function([pm], pt_graphs[name], mode=mode)
                    check_close(expected[name], pfn(data), f"{case.name} ({label})")
                    case.add(label, lambda pfn=pfn: pfn(data))
                except Exception as exc:  # noqa: BLE001
                    case.fail(label, exc)
        if jax is not None:
            import jax.nn
            import jax.scipy.special

            jfn = jax.jit({"logsumexp": lambda a: jax.scipy.special.logsumexp(a, axis=1),
                           "softmax": lambda a: jax.nn.softmax(a, axis=1)}[name])
            jdata = jax.device_put(data)
            check_close(expected[name], np.asarray(jfn(jdata)), f"{case.name} (jax)")
            case.add("jax jit", lambda jfn=jfn, jdata=jdata: jfn(jdata).block_until_ready())
        rows += case.measure(ctx)
    return rows
