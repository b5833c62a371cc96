"""workbench's benchmark suite: one command, one table of ratios.

    python benchmarks/run.py            # everything (several minutes on a loaded machine)
    python benchmarks/run.py --quick    # smaller and fewer repeats (about a minute)
    python benchmarks/run.py --json     # machine-readable rows
    python benchmarks/run.py --only fused,mlp

Families (in order): fused (1: fused elementwise chain, with a hand-written C loop as
the practical limit), overhead (2: per-call overhead), rows (3: logsumexp and softmax
over rows), mlp (4: MLP training step), compile (5: compile time cold and warm,
6: the 5000-link chain), linalg (7: solve 500x500, GP likelihood + gradient at n=1000),
indexing (8: take, take_along_axis, concatenate, an increment with repeated indices).
Times are medians of repeats measured in this process
(compile times in fresh subprocesses); each ratio is a reference's time over
workbench's (C linker) time for the same case. NumPy is always a reference;
PyTensor (its default mode, and its C mode) and JAX jit are when installed. Every library
runs on one thread by default (`--threads`); the notes say what each one used.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (str(HERE.parent), str(HERE)):  # the repository (workbench) and wb_bench
    if path not in sys.path:
        sys.path.insert(0, path)

FAMILIES = ("fused", "overhead", "rows", "mlp", "compile", "linalg", "indexing")
MODULES = {"fused": "wb_bench.fused", "overhead": "wb_bench.overhead", "rows": "wb_bench.rows",
           "mlp": "wb_bench.mlp", "compile": "wb_bench.compile_time",
           "linalg": "wb_bench.linalg", "indexing": "wb_bench.indexing"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes, fewer repeats, PyTensor's default mode only")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per measurement")
    parser.add_argument("--only", default=None,
                        help=f"comma-separated families among {', '.join(FAMILIES)}")
    parser.add_argument("--no-pytensor", action="store_true", help="do not time PyTensor")
    parser.add_argument("--no-jax", action="store_true", help="do not time JAX")
    parser.add_argument("--pattern", choices=("blocks", "calls"), default="blocks",
                        help="how implementations take turns: 'blocks' of calls per repeat "
                             "(default; also counts the threads each one ran) or one 'calls' "
                             "each in turn")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for every library alike: BLAS, OpenMP, workbench's "
                             "row kernels and BLAS calls, XLA (default 1: per-core figures; "
                             "0: each library's own default)")
    parser.add_argument("--pin", type=int, default=None, metavar="CPU",
                        help="run the whole process (every library's threads, JAX's pool "
                             "included) on this one CPU (os.sched_setaffinity): the "
                             "per-core comparison, whatever threads a library starts")
    parser.add_argument("--coretype", default=None, metavar="NAME",
                        help="OPENBLAS_CORETYPE for this run, set before NumPy loads "
                             "OpenBLAS: a kernel name (Haswell, SkylakeX, Zen, ...) or 'auto' "
                             "(unset: OpenBLAS picks the kernels of this CPU); default: the "
                             "environment's")
    args = parser.parse_args(argv)
    if args.pin is not None:
        if not hasattr(os, "sched_setaffinity"):
            parser.error("--pin needs os.sched_setaffinity (Linux)")
        if args.pin not in os.sched_getaffinity(0):
            parser.error(f"--pin: CPU {args.pin} is not among this process's CPUs "
                         f"{sorted(os.sched_getaffinity(0))}")
    if args.only:
        wanted = [f.strip() for f in args.only.split(",") if f.strip()]
        unknown = [f for f in wanted if f not in FAMILIES]
        if unknown:
            parser.error(f"--only: unknown families {unknown}; known: {', '.join(FAMILIES)}")
        args.only = wanted
    if args.repeats is not None and args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.threads < 0:
        parser.error(f"--threads must be >= 0, got {args.threads}")
    return args


def limit_threads(threads: int) -> None:
    """Give every library the same number of threads (before NumPy or JAX is imported;
    subprocesses inherit it)."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS", "WORKBENCH_NUM_THREADS"):
        os.environ[name] = str(threads)
    if threads == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1").strip()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})  # before any library starts a thread
    if args.coretype == "auto":
        os.environ.pop("OPENBLAS_CORETYPE", None)
    elif args.coretype:
        os.environ["OPENBLAS_CORETYPE"] = args.coretype
    if args.threads:
        limit_threads(args.threads)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*Supervisor.*")
    warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
    from wb_bench.common import Context, fill_ratios, format_table, threads_note, to_json

    from workbench.core.link.c.compiler import has_compiler

    if not has_compiler():
        print("error: no C compiler found: the benchmarks measure the C linker", file=sys.stderr)
        return 1
    ctx = Context.make(args.quick, args.repeats, not args.no_pytensor, not args.no_jax,
                       pattern=args.pattern)
    ctx.note("implementations take turns " + (
        "call by call (--pattern calls)" if args.pattern == "calls" else
        "in blocks: each repeat is a run of calls of one implementation (--pattern blocks)"))
    ctx.note(threads_note(args.threads))
    if args.pin is not None:
        ctx.note(f"pinned: the whole process runs on CPU {args.pin} (--pin): every thread "
                 "of every library shares that one core, so wall time is per-core time")
    rows = []
    start = time.perf_counter()
    for family in args.only or FAMILIES:
        began = time.perf_counter()
        module = importlib.import_module(MODULES[family])
        rows += module.run(ctx)
        if not args.json:
            print(f"[{family}: {time.perf_counter() - began:.1f} s]", file=sys.stderr, flush=True)
    fill_ratios(rows)
    ctx.note(f"{'quick run, ' if ctx.quick else ''}median of {ctx.repeats} repeats; suite took "
             f"{time.perf_counter() - start:.0f} s")
    print(to_json(rows, ctx.notes, ctx) if args.json else format_table(rows, ctx.notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
