"""(8) Indexing and joining on the C linker: take, take_along_axis, concatenate and an
advanced increment with repeated indices (``np.add.at``).

Cases (quick runs use the smaller sizes in brackets):

- take rows: ``take(x, idx, axis=0)`` of a (20000, 64) [(2000, 64)] float64 matrix with
  10000 [1000] random indices, negative ones included (AdvancedSubtensor);
- take_along_axis: ``take_along_axis(x, idx, axis=1)`` of a (1000, 1000) [(200, 200)]
  matrix with a (1000, 100) index (AdvancedSubtensor with two broadcast index arrays);
- concatenate: three (1000, 1000) [(200, 200)] matrices along axis 1 (Join);
- fancy inc: ``inc_subtensor(x[idx], y)`` of a (1000, 16) matrix with 100000 [10000]
  repeated row indices (AdvancedIncSubtensor; NumPy: a copy then ``np.add.at``).

References: NumPy, PyTensor (its default mode: AdvancedSubtensor1 / Join /
AdvancedIncSubtensor1 have C there), JAX jit (``x[idx]``, ``jnp.take_along_axis``,
``jnp.concatenate``, ``x.at[idx].add(y)``). Every result is checked against NumPy first.
"""

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


def _add_at(x: np.ndarray, idx: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = x.copy()
    np.add.at(out, idx, y)
    return out


def workloads(quick: bool, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Per case: name, input values, and the graph/callable per library (each builder
    takes the library's module and its inputs)."""
    n_rows, n_take = (2000, 1000) if quick else (20000, 10000)
    side = 200 if quick else 1000
    n_inc = 10000 if quick else 100000
    take_idx = rng.integers(-n_rows, n_rows, size=n_take)
    along_idx = rng.integers(0, side, size=(side, side // 10))
    inc_idx = rng.integers(0, 1000, size=n_inc)
    return [
        {"name": f"take rows ({n_rows},64)[{n_take}]",
         "values": [rng.standard_normal((n_rows, 64)), take_idx],
         "numpy": lambda x, i: np.take(x, i, axis=0),
         "workbench": lambda wt, x, i: wt.take(x, i, axis=0),
         "pytensor": lambda pt, x, i: pt.take(x, i, axis=0),
         "jax": lambda jnp, x, i: x[i]},
        {"name": f"take_along_axis ({side},{side})[{side},{side // 10}]",
         "values": [rng.standard_normal((side, side)), along_idx],
         "numpy": lambda x, i: np.take_along_axis(x, i, axis=1),
         "workbench": lambda wt, x, i: wt.take_along_axis(x, i, axis=1),
         "pytensor": lambda pt, x, i: pt.take_along_axis(x, i, axis=1),
         "jax": lambda jnp, x, i: jnp.take_along_axis(x, i, axis=1)},
        {"name": f"concatenate 3x({side},{side}) axis 1",
         "values": [rng.standard_normal((side, side)) for _ in range(3)],
         "numpy": lambda a, b, c: np.concatenate([a, b, c], axis=1),
         "workbench": lambda wt, a, b, c: wt.concatenate([a, b, c], axis=1),
         "pytensor": lambda pt, a, b, c: pt.concatenate([a, b, c], axis=1),
         "jax": lambda jnp, a, b, c: jnp.concatenate([a, b, c], axis=1)},
        {"name": f"fancy inc (1000,16)[{n_inc} repeated]",
         "values": [rng.standard_normal((1000, 16)), inc_idx,
                    rng.standard_normal((n_inc, 16))],
         "numpy": _add_at,
         "workbench": lambda wt, x, i, y: wt.inc_subtensor(x[i], y),
         "pytensor": lambda pt, x, i, y: pt.inc_subtensor(x[i], y),
         "jax": lambda jnp, x, i, y: x.at[i].add(y)},
    ]


def run(ctx: Context) -> list[Row]:
    import workbench.tensor as wt

    import workbench as wb

    pt = pytensor_module(ctx)
    jax = jax_module(ctx)
    rng = np.random.default_rng(8)
    rows: list[Row] = []
    for work in workloads(ctx.quick, rng):
        values = work["values"]
        expected = work["numpy"](*values)
        case = Case(work["name"])
        try:
            xs = [wt.tensor(name=f"a{k}", dtype=str(v.dtype), shape=(None,) * v.ndim)
                  for k, v in enumerate(values)]
            fn = wb.function(xs, work["workbench"](wt, *xs), linker="c", trust_input=True)
            check_close(expected, fn(*values), case.name)
            py_nodes = fn.linker.report.py_nodes
            kinds = sorted({type(n.op).__name__ for n, _ in py_nodes})
            note = "Python nodes: " + ", ".join(kinds) if kinds else ""
            case.add(SUBJECT, lambda fn=fn, v=values: fn(*v), note=note)
        except Exception as exc:  # noqa: BLE001
            case.fail(SUBJECT, exc)
        case.add("numpy", lambda f=work["numpy"], v=values: f(*v))
        if pt is not None:
            import pytensor.tensor as ptt

            pxs = [ptt.tensor(dtype=str(v.dtype), shape=(None,) * v.ndim) for v in values]
            for label, mode in pytensor_modes(ctx):
                try:
                    pfn = pt.function(pxs, work["pytensor"](ptt, *pxs), mode=mode)
                    pfn.trust_input = True
                    check_close(expected, pfn(*values), f"{case.name} ({label})")
                    case.add(label, lambda pfn=pfn, v=values: pfn(*v))
                except Exception as exc:  # noqa: BLE001
                    case.fail(label, exc)
        if jax is not None:
            import jax.numpy as jnp

            try:
                jfn = jax.jit(lambda *a, b=work["jax"]: b(jnp, *a))
                jvalues = [jax.device_put(v) for v in values]
                check_close(expected, np.asarray(jfn(*jvalues)), f"{case.name} (jax)")
                case.add("jax jit",
                         lambda jfn=jfn, jv=jvalues: jfn(*jv).block_until_ready())
            except Exception as exc:  # noqa: BLE001
                case.fail("jax jit", exc)
        rows += case.measure(ctx)
    return rows
