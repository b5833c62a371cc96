"""(5) Compile time, graph to first result, of the fused chain (1) and the MLP step (4),
every system measured alike, from after its import to its first result:
- cold cache: a new process with empty caches (workbench: a fresh WORKBENCH_CACHE_DIR;
  PyTensor: a fresh `compiledir`; JAX keeps no compilation cache between processes);
- warm cache, new process: a second new process on the same cache directories (JAX
  compiles again: it has nothing on disk);
- warm, same process: a second compile in this process after a first one (workbench:
  memory hits; JAX: a fresh jit, its tracing and backend already loaded; PyTensor: its
  in-memory caches).
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


def run_child(args: list[str], cache_dir: str | None, timeout: float,
              pytensor_dir: str | None = None) -> dict[str, Any]:
    """Run child.py with `args` (PyTensor compiling into `pytensor_dir` when given); its
    JSON result. RuntimeError on a crash or a timeout."""
    env = child_env(cache_dir)
    if pytensor_dir is not None:
        flags = env.get("PYTENSOR_FLAGS", "")
        env["PYTENSOR_FLAGS"] = ",".join(filter(None, [flags, f"compiledir={pytensor_dir}"]))
    try:
        done = subprocess.run([python(), str(CHILD), *args], capture_output=True, text=True,
                              env=env, timeout=timeout, check=False)
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


def jax_compile(what: str, args: tuple[Any, ...]) -> float:
    """A fresh jit of `what` traced, compiled and run once on `args`: seconds."""
    import jax

    from wb_bench import mlp

    start = time.perf_counter()
    if what == "fused":
        import jax.numpy as jnp

        fn = jax.jit(lambda a, b: jnp.exp(a) * jnp.sin(b) + a**2 / (1 + b * b)
                     - jnp.tanh(a * b))
        fn(*args).block_until_ready()
    else:
        from workbench.examples.mlp import initial_params

        dtype = what.split("-", 1)[1]
        cost, _ = mlp.jax_step(jax)(tuple(initial_params(dtype=dtype)), *args)
        cost.block_until_ready()
    return time.perf_counter() - start


def pytensor_compile(what: str, args: tuple[Any, ...]) -> float:
    """PyTensor's default mode: the graph built, compiled and run once on `args`: seconds."""
    import pytensor as pt

    from wb_bench import mlp

    start = time.perf_counter()
    if what == "fused":
        import pytensor.tensor as ptt

        x, y = ptt.dvector("x"), ptt.dvector("y")
        fn = pt.function([x, y], ptt.exp(x) * ptt.sin(y) + x**2 / (1 + y * y) - ptt.tanh(x * y))
        fn(*args)
    else:
        from pytensor.compile.mode import get_default_mode

        mlp.pytensor_step(pt, what.split("-", 1)[1], get_default_mode())(*args)
    return time.perf_counter() - start


def _args(what: str) -> tuple[Any, ...]:
    import numpy as np

    from workbench.examples.mlp import make_batch

    if what == "fused":
        data = np.linspace(-1, 1, 10**6)
        return data, data
    return make_batch(dtype=what.split("-", 1)[1])


NEW_PROCESS_NOTES = {
    ("jax jit", "cold cache"): "new process: trace + XLA compile",
    ("jax jit", "warm cache, new process"): "new process: compiles again (no cache on disk)",
    ("pytensor default", "cold cache"): "new process, empty compiledir",
    ("pytensor default", "warm cache, new process"): "new process, its compiledir kept",
}


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
    others = [name for name, module in (("jax jit", jax), ("pytensor default", pt))
              if module is not None]
    for what, label in targets.items():
        if what in cold:
            with tempfile.TemporaryDirectory(prefix="wb-bench-cache-") as cache_dir, \
                    tempfile.TemporaryDirectory(prefix="wb-bench-pytensor-") as pt_dir:
                for kind in ("cold cache", "warm cache, new process"):
                    case = f"{label} ({kind})"
                    try:
                        result = run_child(["compile", what], cache_dir, timeout=300)
                        rows.append(Row(case, SUBJECT, result["total_seconds"],
                                        _report_note(result)))
                    except Exception as exc:  # noqa: BLE001
                        rows.append(failed_row(case, SUBJECT, exc))
                    for name in others:
                        system = name.split()[0]
                        try:
                            result = run_child(["compile", what, system], cache_dir,
                                               timeout=600, pytensor_dir=pt_dir)
                            rows.append(Row(case, name, result["total_seconds"],
                                            NEW_PROCESS_NOTES[name, kind]))
                        except Exception as exc:  # noqa: BLE001
                            rows.append(failed_row(case, name, exc))
        case = f"{label} (warm, same process)"
        try:
            _in_process(what)  # load the modules (this process's cache directory)
            seconds, note = _in_process(what)
            rows.append(Row(case, SUBJECT, seconds, note))
        except Exception as exc:  # noqa: BLE001
            rows.append(failed_row(case, SUBJECT, exc))
        for name in others:
            compile_fn = jax_compile if name == "jax jit" else pytensor_compile
            try:
                args = _args(what)
                compile_fn(what, args)  # the first compile of this process
                rows.append(Row(case, name, compile_fn(what, args),
                                "a second compile in this process"))
            except Exception as exc:  # noqa: BLE001
                rows.append(failed_row(case, name, exc))
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
