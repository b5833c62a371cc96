"""(5) Compile time, graph to first result, of the fused chain (1) and the MLP step (4):
cold cache (a fresh WORKBENCH_CACHE_DIR, in a new process), warm cache (a new process on
the same directory: every module a disk hit) and warm in this process (memory hits).
(6) The chain `y = y * 1.0001 + 0.5` repeated 5000 times, built, compiled and run in a
subprocess with a timeout.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from wb_bench.common import (
    SUBJECT,
    Context,
    Row,
    child_env,
    failed_row,
    jax_module,
    pytensor_module,
    python,
)

CHILD = Path(__file__).with_name("child.py")


def run_child(args: list[str], cache_dir: str | None, timeout: float) -> dict[str, Any]:
    """Run child.py with `args`; its JSON result. RuntimeError on a crash or a timeout."""
    try:
        done = subprocess.run([python(), str(CHILD), *args], capture_output=True, text=True,
                              env=child_env(cache_dir), timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {timeout:.0f} s") from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"exit code {done.returncode}: {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _report_note(result: dict[str, Any]) -> str:
    report = result.get("report") or {}
    if not report:
        return ""
    return (f"compiled {report.get('compiled', 0)} kinds in {report.get('modules_built', 0)} "
            f"modules, disk hits {report.get('disk_hits', 0)}, "
            f"memory hits {report.get('memory_hits', 0)}; C compile "
            f"{report.get('compile_seconds', 0.0):.2f} s")


def _in_process(what: str) -> tuple[float, str]:
    """Graph to first result in this process, after the modules were loaded before."""
    from wb_bench import fused, mlp

    start = time.perf_counter()
    if what == "fused":
        import numpy as np

        fn = fused.workbench_chain()
        data = np.linspace(-1, 1, 10**6)
        fn(data, data)
    else:
        from workbench.examples.mlp import make_batch

        fn = mlp.workbench_step(what.split("-", 1)[1])
        fn(*make_batch(dtype=what.split("-", 1)[1]))
    return time.perf_counter() - start, _report_note({"report": fn.linker.report.as_dict()})


def _jax_compile(jax: Any, what: str) -> float:
    """A fresh jit of the same computation, traced and compiled, to its first result."""
    import numpy as np

    from wb_bench import mlp

    start = time.perf_counter()
    if what == "fused":
        import jax.numpy as jnp

        data = np.linspace(-1, 1, 10**6)
        fn = jax.jit(lambda a, b: jnp.exp(a) * jnp.sin(b) + a**2 / (1 + b * b)
                     - jnp.tanh(a * b))
        fn(data, data).block_until_ready()
    else:
        from workbench.examples.mlp import initial_params, make_batch

        dtype = what.split("-", 1)[1]
        cost, _ = mlp.jax_step(jax)(tuple(initial_params(dtype=dtype)), *make_batch(dtype=dtype))
        cost.block_until_ready()
    return time.perf_counter() - start


def _pytensor_compile(pt: Any, what: str) -> float:
    import numpy as np

    from wb_bench import mlp

    start = time.perf_counter()
    if what == "fused":
        import pytensor.tensor as ptt

        x, y = ptt.dvector("x"), ptt.dvector("y")
        fn = pt.function([x, y], ptt.exp(x) * ptt.sin(y) + x**2 / (1 + y * y) - ptt.tanh(x * y))
        data = np.linspace(-1, 1, 10**6)
        fn(data, data)
    else:
        from pytensor.compile.mode import get_default_mode

        from workbench.examples.mlp import make_batch

        dtype = what.split("-", 1)[1]
        mlp.pytensor_step(pt, dtype, get_default_mode())(*make_batch(dtype=dtype))
    return time.perf_counter() - start


def run(ctx: Context) -> list[Row]:
    targets = {"fused": "compile fused chain", "mlp-float64": "compile MLP step f64",
               "mlp-float32": "compile MLP step f32"}
    cold = set(targets) if not ctx.quick else {"fused"}
    if ctx.quick:
        del targets["mlp-float32"]
        ctx.note("quick run: cold and new-process compile of the fused chain only")
    jax = jax_module(ctx)
    pt = pytensor_module(ctx) if not ctx.quick else None
    rows: list[Row] = []
    for what, label in targets.items():
        if what in cold:
            with tempfile.TemporaryDirectory(prefix="wb-bench-cache-") as cache_dir:
                for kind in ("cold cache", "warm cache, new process"):
                    case = f"{label} ({kind})"
                    try:
                        result = run_child(["compile", what], cache_dir, timeout=300)
                        rows.append(Row(case, SUBJECT, result["total_seconds"],
                                        _report_note(result)))
                    except Exception as exc:  # noqa: BLE001
                        rows.append(failed_row(case, SUBJECT, exc))
                    if kind == "cold cache" and jax is not None:
                        try:
                            rows.append(Row(case, "jax jit", _jax_compile(jax, what),
                                            "a fresh jit: trace + XLA compile"))
                        except Exception as exc:  # noqa: BLE001
                            rows.append(failed_row(case, "jax jit", exc))
                    if kind == "cold cache" and pt is not None:
                        try:
                            rows.append(Row(case, "pytensor default",
                                            _pytensor_compile(pt, what),
                                            "its caches as found, not cleared"))
                        except Exception as exc:  # noqa: BLE001
                            rows.append(failed_row(case, "pytensor default", exc))
        case = f"{label} (warm, same process)"
        try:
            _in_process(what)  # load the modules (this process's cache directory)
            seconds, note = _in_process(what)
            rows.append(Row(case, SUBJECT, seconds, note))
        except Exception as exc:  # noqa: BLE001
            rows.append(failed_row(case, SUBJECT, exc))
    if ctx.quick:
        ctx.note("quick run: the long chain has 200 links instead of 5000")
    rows.append(long_chain_row(ctx, 200 if ctx.quick else 5000))
    return rows


def long_chain_row(ctx: Context, length: int = 5000, timeout: float = 120.0) -> Row:
    """(6): build, compile (cold cache) and run the chain in a subprocess with a timeout."""
    case = f"chain y=y*1.0001+0.5 x{length}: build+compile+run"
    with tempfile.TemporaryDirectory(prefix="wb-bench-cache-") as cache_dir:
        try:
            result = run_child(["chain", str(length)], cache_dir, timeout=timeout)
        except Exception as exc:  # noqa: BLE001
            return failed_row(case, SUBJECT, exc)
    total = result["total_seconds"]  # from building the graph to the first result
    compile_seconds = result["compile_seconds"] - result["build_seconds"]
    note = (f"build {result['build_seconds']:.2f} s, compile {compile_seconds:.2f} s, "
            f"run {result['run_seconds'] * 1e3:.1f} ms; "
            f"{result['nodes_after_rewriting']} node(s) after rewriting; cold cache")
    return Row(case, SUBJECT, total, note)
