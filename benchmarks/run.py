"""workbench's benchmark suite: one command, one table of ratios.

    python benchmarks/run.py            # everything (several minutes on a loaded machine)
    python benchmarks/run.py --quick    # smaller and fewer repeats (a few minutes)
    python benchmarks/run.py --json     # machine-readable rows
    python benchmarks/run.py --only fused,mlp

Families (in order): fused (1: fused elementwise chain, with a hand-written C loop as
the practical limit), overhead (2: per-call overhead), rows (3: logsumexp, softmax
and log-softmax over rows), mlp (4: MLP training step), compile (5: compile time cold and
warm, 6: the 5000-link chain), linalg (7: solve 500x500, GP likelihood + gradient at n=1000),
indexing (8: take, take_along_axis, concatenate, an increment with repeated indices).
Times are medians of repeats measured in this process
(compile times in fresh subprocesses); each ratio is a reference's time over
workbench's (C linker) time for the same case. NumPy is always a reference;
PyTensor (its default mode, and its C mode) and JAX jit are when installed. Every case is
measured back-to-back and interleaved (`--pattern`). Every library runs on one thread by
default (`--threads`), the process pinned to one CPU (`--pin`): a per-core table; the
notes say what each library used, read back after the run, and workbench's per-node
profiles follow the table.
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

from wb_bench.families import FAMILIES, MODULES  # noqa: E402
from wb_bench.threads import (  # noqa: E402
    CPUS_VARIABLE,
    apply_coretype,
    check_coretype,
    limit_threads,
    pin_cpu,
)


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
    parser.add_argument("--pattern", choices=("both", "blocks", "calls"), default="both",
                        help="how implementations take turns: 'both' (default: every case "
                             "twice, '[back-to-back]' and '[interleaved]', the two "
                             "alternating repeat by repeat), 'blocks' (back-to-back: a run "
                             "of calls of one implementation per repeat) or 'calls' "
                             "(interleaved: one call of each in turn)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for every library alike: BLAS, OpenMP, workbench's "
                             "row kernels and BLAS calls, XLA (default 1: per-core figures; "
                             "0: each library's own default)")
    parser.add_argument("--pin", default="auto", metavar="CPU|auto|none",
                        help="run the whole process (every library's threads, JAX's pool "
                             "included) on one CPU (os.sched_setaffinity): the per-core "
                             "comparison, whatever threads a library starts. 'auto' "
                             "(default): the highest CPU when --threads is 1, else none")
    parser.add_argument("--width", type=int, default=None, metavar="COLUMNS",
                        help="fit the table and its notes to this many columns (default: "
                             "COLUMNS, else the terminal's width, else 100)")
    parser.add_argument("--coretype", default=None, metavar="NAME|auto",
                        help="OPENBLAS_CORETYPE for this run, set before NumPy loads "
                             "OpenBLAS: a kernel name (Haswell, SkylakeX, Zen, ...) or 'auto' "
                             "(OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset together: OpenBLAS "
                             "picks the kernels of this CPU); default: the environment's. The "
                             "headline names the kernels the run used (threadpoolctl)")
    args = parser.parse_args(argv)
    if not hasattr(os, "sched_setaffinity"):
        if args.pin not in ("auto", "none"):
            parser.error("--pin needs os.sched_setaffinity (Linux)")
        args.pin = None
    else:
        try:
            args.pin = pin_cpu(args.pin, args.threads, os.sched_getaffinity(0))
        except ValueError as exc:
            parser.error(str(exc))
    if args.coretype is not None:
        try:
            check_coretype(args.coretype)
        except ValueError as exc:
            parser.error(str(exc))
    if args.only:
        wanted = [f.strip() for f in args.only.split(",") if f.strip()]
        unknown = [f for f in wanted if f not in FAMILIES]
        if unknown:
            parser.error(f"--only: unknown families {unknown}; known: {', '.join(FAMILIES)}")
        args.only = wanted
    if args.repeats is not None and args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.width is not None and args.width < 40:
        parser.error(f"--width must be >= 40, got {args.width}")
    if args.threads < 0:
        parser.error(f"--threads must be >= 0, got {args.threads}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if hasattr(os, "sched_getaffinity"):  # children (compiles) run on these again
        os.environ.setdefault(CPUS_VARIABLE, ",".join(map(str, sorted(os.sched_getaffinity(0)))))
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})  # before any library starts a thread
    apply_coretype(args.coretype, os.environ)
    if args.threads:
        limit_threads(args.threads)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*Supervisor.*")
    warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
    from wb_bench.common import Context, fill_ratios, format_table, to_json
    from wb_bench.profiles import format_profiles
    from wb_bench.threads import CORETYPE_NOTE, coretype_banner, readback_note, threads_note

    from workbench.core.link.c.compiler import has_compiler

    if not has_compiler():
        print("error: no C compiler found: the benchmarks measure the C linker", file=sys.stderr)
        return 1
    patterns = ("blocks", "calls") if args.pattern == "both" else (args.pattern,)
    ctx = Context.make(args.quick, args.repeats, not args.no_pytensor, not args.no_jax,
                       patterns=patterns)
    ctx.note({"both": "each case measured twice, its repeats alternating: [back-to-back] "
                      "(each repeat a run of calls of one implementation, then the next) "
                      "and [interleaved] (one call of each in turn, each timed alone, the "
                      "clocks' own cost taken off)",
              "calls": "implementations take turns call by call (--pattern calls)",
              "blocks": "implementations take turns in blocks: each repeat is a run of "
                        "calls of one implementation (--pattern blocks)"}[args.pattern])
    ctx.note(threads_note(args.threads))
    if args.pin is not None:
        ctx.headline(f"Per core: the whole process runs on CPU {args.pin} (--pin), every "
                     f"library on {args.threads} thread(s)")
        ctx.note("per core: every thread of every library shares the one CPU the process "
                 "is pinned to, so wall time is per-core time (new-process compile rows "
                 "excepted: their children run on the CPUs the suite started with; a 'warm, "
                 "same process' compile runs on the pinned CPU)")
    elif args.threads == 1:
        ctx.headline("NOT per-core (--pin none): JAX's CPU runtime runs its calls on several "
                     "threads though told one (see threads run); compare the cpu columns")
    ctx.headline(coretype_banner())  # the OpenBLAS kernels of this run, whatever chose them
    ctx.note(CORETYPE_NOTE)
    rows = []
    start = time.perf_counter()
    for family in args.only or FAMILIES:
        began = time.perf_counter()
        module = importlib.import_module(MODULES[family])
        rows += module.run(ctx)
        if not args.json:
            print(f"[{family}: {time.perf_counter() - began:.1f} s]", file=sys.stderr, flush=True)
    fill_ratios(rows)
    ctx.note(readback_note())
    ctx.note(f"{'quick run, ' if ctx.quick else ''}median of {ctx.repeats} repeats; suite took "
             f"{time.perf_counter() - start:.0f} s")
    if args.json:
        print(to_json(rows, ctx.notes, ctx))
    else:
        print(format_table(rows, ctx.notes, ctx.headlines, args.width))
        if ctx.profiles:
            print("\n" + format_profiles(ctx.profiles, args.width))
    return 0


if __name__ == "__main__":
    sys.exit(main())
