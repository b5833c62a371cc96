"""Runs in a fresh subprocess: build a graph, compile it, call it once, and print one
JSON line with the times (seconds) and, for workbench, the linker's compile report.

    python child.py compile fused|mlp-float32|mlp-float64 [workbench|jax|pytensor]
    python child.py chain LENGTH

Every system is timed alike: from after its own import to the first result, in a fresh
process. The parent sets the caches: WORKBENCH_CACHE_DIR (a fresh directory for a cold
cache), PYTENSOR_FLAGS=base_compiledir=... likewise for PyTensor (its C compiledir and its
Numba cache both live under it); JAX's persistent compilation cache is turned off here
(it is off unless a cache directory is configured), so each of its runs compiles from
scratch. WB_BENCH_CPUS (set by run.py
before it pins itself) gives the CPUs the child runs on: compile time is measured on
the machine's cores, not on the one core a per-core table pins the suite to.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path


def _fused() -> tuple[object, tuple[object, ...]]:
    import numpy as np
    import workbench.tensor as wt

    import workbench as wb

    x, y = wt.dvector("x"), wt.dvector("y")
    out = wt.exp(x) * wt.sin(y) + x**2 / (1 + y * y) - wt.tanh(x * y)
    data = np.linspace(-1, 1, 10**6)
    return wb.function([x, y], out, linker="c"), (data, data)


def _mlp(dtype: str) -> tuple[object, tuple[object, ...]]:
    import workbench as wb
    from workbench.examples import mlp

    source = mlp.build_source(dtype=dtype)
    fn = wb.function(source.inputs, source.outputs[0], updates=source.updates, linker="c")
    return fn, mlp.make_batch(dtype=dtype)


def _chain(length: int) -> tuple[object, tuple[object, ...], float]:
    import numpy as np

    import workbench as wb
    from workbench.examples import long_chain

    start = time.perf_counter()
    source = long_chain.build_source(length=length)
    built = time.perf_counter() - start
    fn = wb.function(source.inputs, source.outputs[0], linker="c")
    return fn, (np.zeros(10_000),), built


def _other_system(system: str, what: str) -> None:
    """Compile and run `what` with JAX or PyTensor, timed from after their import."""
    import_start = time.perf_counter()
    if system == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        # no persistent compilation cache, even one the user's environment names
        # (JAX_COMPILATION_CACHE_DIR): every JAX child compiles from scratch, as noted
        jax.config.update("jax_enable_compilation_cache", False)
    else:
        import pytensor  # noqa: F401
        from pytensor.compile.mode import get_default_mode

        # its default linker's modules, as workbench's child loads its C linker's: the
        # Numba linker imports numba and its dispatchers lazily (0.6 s), which is import
        # time, not compile time
        if "numba" in type(get_default_mode().linker).__module__:
            import pytensor.link.numba.dispatch  # noqa: F401
    imported = time.perf_counter() - import_start
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: wb_bench
    from wb_bench import compile_time, mlp  # noqa: F401  (loaded before the timed window)

    args = compile_time._args(what)  # the data (not timed)
    compile_fn = compile_time.jax_compile if system == "jax" else compile_time.pytensor_compile
    cpu_start = time.process_time()
    seconds = compile_fn(what, args)
    print(json.dumps({"import_seconds": imported, "total_seconds": seconds,
                      "cpu_seconds": time.process_time() - cpu_start,
                      "compiler_cpu_seconds": _children_cpu()}))


def _children_cpu() -> float:
    """CPU seconds of the processes this one ran and waited for (the C compilers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def _run_on_parent_cpus() -> None:
    cpus = os.environ.get("WB_BENCH_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def main(argv: list[str]) -> None:
    _run_on_parent_cpus()
    if argv[0] == "compile" and len(argv) > 2 and argv[2] != "workbench":
        _other_system(argv[2], argv[1])
        return
    import_start = time.perf_counter()
    # import time is not compile time: the package imports lazily, so load what the
    # graphs use here (as `import jax` / `import pytensor` do for the others)
    import workbench.tensor  # noqa: F401

    import workbench as wb
    import workbench.core.link.c.linker  # noqa: F401
    import workbench.core.link.c.ops  # noqa: F401  (the C of every Op family)
    import workbench.examples.mlp  # noqa: F401

    wb.function  # noqa: B018  (the public API: compile, grad, rewrites, loaded lazily)

    imported = time.perf_counter() - import_start
    kind, arg = argv[0], argv[1]
    start, cpu_start = time.perf_counter(), time.process_time()
    result: dict[str, object] = {"import_seconds": imported}
    if kind == "compile":
        fn, args = _fused() if arg == "fused" else _mlp(arg.split("-", 1)[1])
        compiled = time.perf_counter()
        fn(*args)
    elif kind == "chain":
        fn, args, built = _chain(int(arg))
        result["build_seconds"] = built
        compiled = time.perf_counter()
        value = fn(*args)
        result["first_value"] = float(value[0])
        result["nodes_after_rewriting"] = len(fn.maker.fgraph.apply_nodes)
    else:
        raise SystemExit(f"unknown kind {kind!r}: use compile or chain")
    end = time.perf_counter()
    result.update(compile_seconds=compiled - start, run_seconds=end - compiled,
                  total_seconds=end - start, cpu_seconds=time.process_time() - cpu_start)
    report = getattr(fn.linker, "report", None)  # type: ignore[attr-defined]
    if report is not None:
        result["report"] = report.as_dict()
    if hasattr(fn, "maker"):
        result["phases"] = dict(getattr(fn.maker, "compile_times", {}) or {})
    result["compiler_cpu_seconds"] = _children_cpu()  # (the C compiler)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
