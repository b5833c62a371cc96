"""(5) Compile time, graph to first result, of the fused chain (1) and the MLP step (4),
every system measured alike, from after its import (workbench with its C linker's
modules, PyTensor with its default Numba linker's modules and numba) to its first result:
- cold cache: a new process with empty caches (workbench: a fresh WORKBENCH_CACHE_DIR;
  PyTensor: a fresh `base_compiledir`, which holds both its C `compiledir` and the cache
  of its default Numba linker, `base_compiledir/numba`; JAX keeps no compilation cache
  between processes);
- warm cache, new process: a second new process on the same cache directories (JAX
  compiles again: it has nothing on disk);
- warm, same process: a second compile in this process after a first one (workbench:
  memory hits; JAX: a fresh jit, its tracing and backend already loaded; PyTensor: its
  in-memory caches).
Each new-process figure is the median over `Context.compile_samples` rounds, every round
with fresh cache directories (its cold process, then its warm one); one untimed
workbench child runs first on a throwaway cache, so that Python's bytecode is on disk
for the timed ones, as for an installed package. Every child runs on the CPUs the suite
was started with (`child_env`), even when the suite itself is pinned to one.
(6) The chain `y = y * 1.0001 + 0.5` repeated 5000 times, built, compiled and run in a
subprocess with a timeout.
"""

from __future__ import annotations

import json
import statistics
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
        env["PYTENSOR_FLAGS"] = pytensor_flags(env.get("PYTENSOR_FLAGS", ""), pytensor_dir)
    try:
        done = subprocess.run([python(), str(CHILD), *args], capture_output=True, text=True,
                              env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {timeout:.0f} s") from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"exit code {done.returncode}: {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def pytensor_flags(flags: str, base_dir: str) -> str:
    """PYTENSOR_FLAGS putting every on-disk cache of PyTensor under `base_dir`: its
    `base_compiledir` (the C `compiledir` and the Numba linker's cache, `numba/`, live
    under it); a `compiledir` or `base_compiledir` already in `flags` is dropped, since
    either would keep a cache from before."""
    kept = [f for f in flags.split(",") if f.strip() and f.split("=", 1)[0].strip()
            not in ("compiledir", "base_compiledir")]
    return ",".join([*kept, f"base_compiledir={base_dir}"])


def _report_note(result: dict[str, Any]) -> str:
    report = result.get("report") or {}
    if not report:
        return ""
    from workbench.core.link.c.linker import fallback_note

    return (f"compiled {report.get('compiled', 0)} kinds in {report.get('modules_built', 0)} "
            f"modules{fallback_note(report)}, disk hits {report.get('disk_hits', 0)}, "
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

        fn, _ = mlp.workbench_step(what.split("-", 1)[1])
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

        mlp.pytensor_step(pt, what.split("-", 1)[1], get_default_mode())[0](*args)
    return time.perf_counter() - start


def _args(what: str) -> tuple[Any, ...]:
    import numpy as np

    from workbench.examples.mlp import make_batch

    if what == "fused":
        data = np.linspace(-1, 1, 10**6)
        return data, data
    return make_batch(dtype=what.split("-", 1)[1])


NEW_PROCESS_NOTES = {
    (SUBJECT, "cold cache"): "new process, empty WORKBENCH_CACHE_DIR (probes, runtime, kinds)",
    (SUBJECT, "warm cache, new process"): "new process, its WORKBENCH_CACHE_DIR kept",
    ("jax jit", "cold cache"): "new process: trace + XLA compile (no persistent cache)",
    ("jax jit", "warm cache, new process"): "new process: compiles again (no persistent "
                                            "cache)",
    ("pytensor default", "cold cache"): "new process, empty base_compiledir (C and Numba "
                                        "caches)",
    ("pytensor default", "warm cache, new process"): "new process, its base_compiledir kept",
}  # keyed (system, cache state)

KINDS = ("cold cache", "warm cache, new process")


def _child_seconds(result: dict[str, Any]) -> tuple[float, float | None]:
    """Wall seconds of a child's graph to first result, and its CPU seconds (the process
    and the compilers it ran) when it reports them."""
    cpu = result.get("cpu_seconds")
    if cpu is not None:
        cpu += result.get("compiler_cpu_seconds", 0.0)
    return result["total_seconds"], cpu


def new_process_rows(what: str, label: str, systems: list[str], samples: int,
                     child: Any = None) -> list[Row]:
    """The cold and warm-cache new-process rows of `what`: `samples` rounds, each with
    fresh cache directories (a cold process of every system, then a warm one), then
    the median per (kind, system). `child(args, cache_dir, timeout, pytensor_dir)` runs
    one child (run_child; tests pass a fake)."""
    child = child or run_child
    with tempfile.TemporaryDirectory(prefix="wb-bench-warmup-") as warmup:
        try:  # untimed: Python's bytecode written, the toolchain's files read once
            child(["compile", what], warmup, 300, None)
        except Exception:  # noqa: BLE001, S110 - the timed runs will report the failure
            pass
    times: dict[tuple[str, str], list[tuple[float, float | None]]] = {}
    extra: dict[tuple[str, str], str] = {}
    kinds: dict[tuple[str, str], list[int]] = {}  # workbench: kinds compiled per round
    errors: dict[tuple[str, str], BaseException] = {}
    for _ in range(samples):
        with tempfile.TemporaryDirectory(prefix="wb-bench-cache-") as cache_dir, \
                tempfile.TemporaryDirectory(prefix="wb-bench-pytensor-") as pt_dir:
            for kind in KINDS:
                for name in systems:
                    key = (kind, name)
                    if key in errors:
                        continue
                    args = ["compile", what] + ([] if name == SUBJECT else [name.split()[0]])
                    try:
                        result = child(args, cache_dir, 300 if name == SUBJECT else 600,
                                       pt_dir if name == "pytensor default" else None)
                        times.setdefault(key, []).append(_child_seconds(result))
                        if name == SUBJECT:
                            extra[key] = _report_note(result)
                            kinds.setdefault(key, []).append(
                                (result.get("report") or {}).get("compiled", 0))
                    except Exception as exc:  # noqa: BLE001
                        errors[key] = exc
    rows = []
    for kind in KINDS:
        case = f"{label} ({kind})"
        for name in systems:
            key = (kind, name)
            if key in errors:
                rows.append(failed_row(case, name, errors[key]))
                continue
            walls = [w for w, _ in times[key]]
            cpus = [c for _, c in times[key] if c is not None]
            spread = (f"median of {len(walls)} fresh processes ({min(walls):.2f}-"
                      f"{max(walls):.2f} s)" if len(walls) > 1 else "one fresh process")
            compiled = kinds.get(key, [])
            rounds = (f"kinds compiled per round {', '.join(map(str, compiled))}"
                      if len(set(compiled)) > 1 else "")  # e.g. a 'warm' one that compiled
            note = "; ".join(filter(None, [NEW_PROCESS_NOTES.get((name, kind), ""), spread,
                                           extra.get(key, ""), rounds]))
            rows.append(Row(case, name, statistics.median(walls), note,
                            cpu_seconds=statistics.median(cpus) if cpus else None))
    return rows


def run(ctx: Context) -> list[Row]:
    targets = {"fused": "compile fused chain", "mlp-float64": "compile MLP step f64",
               "mlp-float32": "compile MLP step f32"}
    cold = set(targets) if not ctx.quick else {"fused"}
    if ctx.quick:
        del targets["mlp-float32"]
        ctx.note("quick run: cold and new-process compile of the fused chain only, "
                 "PyTensor's compile not timed (a truly cold one takes 16 s or more)")
    jax = jax_module(ctx)
    pt = pytensor_module(ctx) if not ctx.quick else None
    samples = ctx.compile_samples
    ctx.note(f"compile: new-process rows are medians over {samples} rounds of fresh "
             f"processes (each round: fresh caches, a cold process then a warm one, every "
             f"system), after one untimed workbench child; 'warm, same process' rows "
             f"the median of {samples} compiles after a first one; cpu per call: the "
             f"process's CPU and its compilers' (workbench, PyTensor)")
    rows: list[Row] = []
    others = [name for name, module in (("jax jit", jax), ("pytensor default", pt))
              if module is not None]
    for what, label in targets.items():
        if what in cold:
            rows += new_process_rows(what, label, [SUBJECT, *others], samples)
        case = f"{label} (warm, same process)"
        try:
            _in_process(what)  # load the modules (this process's cache directory)
            runs = [_in_process(what) for _ in range(samples)]
            rows.append(Row(case, SUBJECT, statistics.median(r[0] for r in runs), runs[-1][1]))
        except Exception as exc:  # noqa: BLE001
            rows.append(failed_row(case, SUBJECT, exc))
        for name in others:
            compile_fn = jax_compile if name == "jax jit" else pytensor_compile
            try:
                args = _args(what)
                compile_fn(what, args)  # the first compile of this process
                seconds = statistics.median(compile_fn(what, args) for _ in range(samples))
                rows.append(Row(case, name, seconds, "a second compile in this process"))
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
