"""Array utilities and sorting: workbench (C linker) against NumPy, PyTensor and JAX jit.

Workloads, each timed side by side in one process, the implementations taking turns
repeat by repeat (a load spike on a shared machine hits all alike):

- einsum chain: ``ij,jk,kl->il`` with shapes (400, 20), (20, 400), (400, 30): the order
  matters (left to right costs 20x more than the cheapest order);
- einsum five: ``ea,fb,abcd,gc,hd->efgh`` (numpy.einsum_path's example), 10 per index;
- einsum batch: ``bij,bjk->bik`` with (64, 64, 64) operands (a MatMul);
- sort: ``sort(x, axis=-1)`` and ``argsort`` of a (1000, 1000) float64 matrix;
- pad: ``pad(x, 16, "reflect")`` of a (1000, 1000) float64 matrix;
- topk: the 10 largest of each row of a (1000, 1000) matrix (NumPy: partition, then
  sort the 10; JAX: lax.top_k; PyTensor has no topk);
- unique: the distinct values, first indices, inverse and counts of 10^6 values
  drawn from 2001 (PyTensor's unique; JAX's needs a static size: left out);
- expm: the matrix exponential of a (200, 200) matrix of 1-norm about 10 (SciPy as
  the NumPy-side reference, PyTensor's slinalg.expm, jax.scipy.linalg.expm).

A library without the function (no builder) is left out of that row.

Every implementation's result is first checked against NumPy; workbench's background
-O3 builds are waited for before timing (wb_bench.common.finish_background_builds), so
its rows are of the final -O3 code. Prints a table with the
median time per call and each reference's time over workbench's (above 1: workbench
faster).

    python benchmarks/bench_arrays.py [--repeats 7] [--no-pytensor] [--no-jax]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _path in (Path(__file__).resolve().parent.parent, Path(__file__).resolve().parent):
    sys.path.insert(0, str(_path))  # workbench, and wb_bench

import numpy as np  # noqa: E402
from wb_bench.common import finish_background_builds  # noqa: E402

RNG = np.random.default_rng(0)


def _values(shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    return [RNG.normal(size=s) for s in shapes]


def workloads() -> list[tuple[str, list[np.ndarray], dict[str, Callable[..., Any]]]]:
    """(name, input values, builder per library): each builder takes symbolic inputs
    (or arrays, for NumPy and JAX) and returns the output."""
    def einsum(subscripts: str) -> dict[str, Callable[..., Any]]:
        return {"workbench": lambda wt, *xs: wt.einsum(subscripts, *xs),
                "numpy": lambda *xs: np.einsum(subscripts, *xs, optimize=True),
                "pytensor": lambda pt, *xs: pt.einsum(subscripts, *xs),
                "jax": lambda jnp, *xs: jnp.einsum(subscripts, *xs)}

    def sort(kind: str) -> dict[str, Callable[..., Any]]:
        return {"workbench": lambda wt, x: getattr(wt, kind)(x, axis=-1),
                "numpy": lambda x: getattr(np, kind)(x, axis=-1, kind="stable"),
                "pytensor": lambda pt, x: getattr(pt, kind)(x, axis=-1, kind="stable"),
                "jax": lambda jnp, x: getattr(jnp, kind)(x, axis=-1, stable=True)}

    pad = {"workbench": lambda wt, x: wt.pad(x, 16, "reflect"),
           "numpy": lambda x: np.pad(x, 16, "reflect"),
           "pytensor": lambda pt, x: pt.pad(x, 16, "reflect"),
           "jax": lambda jnp, x: jnp.pad(x, 16, "reflect")}
    topk = {"workbench": lambda wt, x: wt.topk(x, 10, axis=-1),
            "numpy": lambda x: np.sort(np.partition(x, -10, axis=-1)[:, -10:],
                                       axis=-1)[:, ::-1],
            "jax": lambda jnp, x: __import__("jax").lax.top_k(x, 10)[0]}

    def unique_all(lib: Any, x: Any) -> Any:
        return lib.unique(x, return_index=True, return_inverse=True, return_counts=True)

    unique = {"workbench": lambda wt, x: unique_all(wt, x),
              "numpy": lambda x: list(unique_all(np, x)),
              "pytensor": lambda pt, x: unique_all(pt, x)}
    expm = {"workbench": lambda wt, x: wt.linalg.expm(x),
            "numpy": lambda x: __import__("scipy.linalg").linalg.expm(x),
            "pytensor": lambda pt, x: __import__("pytensor.tensor.slinalg").tensor.slinalg
            .expm(x),
            "jax": lambda jnp, x: __import__("jax.scipy.linalg").scipy.linalg.expm(x)}
    matrix = RNG.normal(size=(200, 200))
    return [
        ("einsum chain", _values([(400, 20), (20, 400), (400, 30)]), einsum("ij,jk,kl->il")),
        ("einsum five", _values([(10, 10), (10, 10), (10, 10, 10, 10), (10, 10), (10, 10)]),
         einsum("ea,fb,abcd,gc,hd->efgh")),
        ("einsum batch", _values([(64, 64, 64), (64, 64, 64)]), einsum("bij,bjk->bik")),
        ("sort 1000x1000", _values([(1000, 1000)]), sort("sort")),
        ("argsort 1000x1000", _values([(1000, 1000)]), sort("argsort")),
        ("pad reflect 1000x1000", _values([(1000, 1000)]), pad),
        ("topk 10 of 1000x1000", _values([(1000, 1000)]), topk),
        ("unique 10^6 (all outputs)", [np.round(RNG.normal(size=10**6) * 200)], unique),
        ("expm 200x200", [matrix * (10 / np.abs(matrix).sum(axis=0).max())], expm),
    ]


def compile_workbench(build: Callable[..., Any], values: list[np.ndarray]) -> Callable[..., Any]:
    import workbench as wb
    import workbench.core.tensor as wt

    xs = [wt.tensor("float64", shape=v.shape) for v in values]  # static, as PyTensor's
    return wb.function(xs, build(wt, *xs), linker="c", trust_input=True)


def compile_pytensor(build: Callable[..., Any], values: list[np.ndarray]) -> Callable[..., Any]:
    import pytensor
    import pytensor.tensor as pt

    xs = [pt.tensor(dtype="float64", shape=v.shape) for v in values]
    f = pytensor.function(xs, build(pt, *xs))
    f.trust_input = True
    return f


def compile_jax(build: Callable[..., Any], values: list[np.ndarray]) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    f = jax.jit(lambda *xs: build(jnp, *xs))
    return lambda *xs: np.asarray(f(*xs).block_until_ready())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-pytensor", action="store_true")
    parser.add_argument("--no-jax", action="store_true")
    args = parser.parse_args()
    compilers = {"workbench": compile_workbench, "pytensor": compile_pytensor,
                 "jax": compile_jax}
    skipped = {"pytensor"} if args.no_pytensor else set()
    skipped |= {"jax"} if args.no_jax else set()
    print("| case | implementation | median | ratio |\n|---|---|---|---|")
    notes = []
    for name, values, builders in workloads():
        expected = builders["numpy"](*values)
        calls: dict[str, Callable[..., Any]] = {
            "numpy": lambda b=builders["numpy"], v=values: b(*v)}
        for lib, compile_ in compilers.items():
            if lib in skipped or lib not in builders:
                continue
            try:
                f = compile_(builders[lib], values)
            except ImportError as exc:
                notes.append(f"{lib} skipped: {exc}")
                skipped.add(lib)
                continue
            got = f(*values)
            for got_k, want_k in zip(*(v if isinstance(v, (list, tuple)) else [v]
                                       for v in (got, expected))):
                np.testing.assert_allclose(got_k, want_k, rtol=1e-9, atol=1e-9,
                                           err_msg=f"{name}: {lib}")
            calls[lib] = lambda f=f, v=values: f(*v)
        finish_background_builds()  # time workbench's final -O3 code
        times: dict[str, list[float]] = {lib: [] for lib in calls}
        for _ in range(args.repeats):
            for lib, call in calls.items():
                start = time.perf_counter()
                call()
                times[lib].append(time.perf_counter() - start)
        mine = statistics.median(times["workbench"])
        for lib, spent in times.items():
            median = statistics.median(spent)
            ratio = "1.00" if lib == "workbench" else f"{median / mine:.2f}"
            print(f"| {name} | {lib} | {median * 1e3:.3f} ms | {ratio} |")
    notes.append("workbench: the final -O3 code (its background builds waited for)")
    for note in notes:
        print(f"\n{note}")


if __name__ == "__main__":
    main()
