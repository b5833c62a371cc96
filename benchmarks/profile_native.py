"""A benchmark's workbench step in a loop, on one thread pinned to one CPU, for a native
sampling profiler (`perf`, `py-spy --native`) to attach to.

The project's own profiler (`workbench.profile`, per node) says which node costs what;
it cannot say what inside a node the time goes to (OpenBLAS's compute kernel or its
packing routines, the generated loop, malloc and page faults, CPython's dispatch). This
script runs one step of the suite's families (`wb_bench.mlp`, `wb_bench.deep`) for
`--seconds`, every library on one thread (OPENBLAS/OMP/`WORKBENCH_NUM_THREADS`=1) and the
process pinned to one CPU (`os.sched_setaffinity`, before NumPy loads), after
workbench's background -O3 builds finished (the loop times the final code). It prints
its pid and the command lines that attach perf or py-spy to it, then steps per second,
wall and CPU time per step. `--perf` records itself with perf and prints the samples
summed by what they are (`CATEGORIES`); `--wb-profile` prints the per-node profile
of the same step beside it.

    python benchmarks/profile_native.py --case mlp --dtype float32 --seconds 30
    python benchmarks/profile_native.py --case mlp --dtype float64 --perf --wb-profile
    python benchmarks/profile_native.py --case mlp --perf --coretype auto  # OpenBLAS's own kernels
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for path in (str(ROOT), str(ROOT / "benchmarks")):  # workbench, and wb_bench
    if path not in sys.path:
        sys.path.insert(0, path)

from wb_bench.threads import apply_coretype, check_coretype, limit_threads  # noqa: E402

#: what a sample is, first match wins: (category, test on the DSO's file name and the
#: symbol). Packing before kernel: OpenBLAS's packing routines are named *_incopy,
#: *_itcopy, *_oncopy, *_otcopy (A and B copied into the kernel's panel layout)
CATEGORIES: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    ("OpenBLAS packing (gemm *copy)",
     lambda dso, sym: "openblas" in dso and re.search(r"_(i|o)(n|t)copy", sym) is not None),
    ("OpenBLAS compute kernel",
     lambda dso, sym: "openblas" in dso and "kernel" in sym),
    ("OpenBLAS other (beta scaling, driver, level 1/2)", lambda dso, sym: "openblas" in dso),
    ("allocation (malloc/free in libc, page faults in the kernel)",
     lambda dso, sym: (dso.startswith("libc") and re.search(r"malloc|free|calloc|realloc|"
                                                           r"mmap|munmap|brk|tcache", sym)
                       is not None)
     or (dso.startswith("[kernel") and re.search(r"page|fault|clear_page|folio|lru|zap_|"
                                                 r"mem_cgroup|mmap|munmap|brk", sym)
         is not None)),
    ("memset/memcpy (libc)",
     lambda dso, sym: dso.startswith("libc") and re.search(r"mem(set|cpy|move)", sym)
     is not None),
    ("workbench generated code and runtime (wbbundle, workbench_runtime)",
     lambda dso, sym: dso.startswith(("wbbundle", "workbench_runtime")) or "wbcache" in dso
     or sym.startswith("wb_")),
    ("libm/libmvec (exp, tanh, log called by generated code)",
     lambda dso, sym: dso.startswith(("libm.", "libm-", "libmvec"))),
    ("JAX/XLA runtime and Eigen/oneDNN kernels (jaxlib)",
     lambda dso, sym: "jax" in dso or "xla" in dso),
    ("JIT code without symbols (XLA's generated loops)",
     lambda dso, sym: dso.startswith(("[unknown]", "[JIT]", "perf-", "memfd:", "//anon"))),
    ("NumPy", lambda dso, sym: "_multiarray" in dso or "numpy" in dso),
    ("Python interpreter and call overhead",
     lambda dso, sym: dso.startswith(("python", "libpython"))),
    ("kernel (other)", lambda dso, sym: dso.startswith("[kernel")),
)
OTHER = "other"
#: symbols listed one by one under the breakdown
TOP_SYMBOLS = 15

#: a line of `perf report --stdio --no-children --sort dso,symbol -g none`: XLA's code
#: is in the DSO "[JIT] tid N", C++ symbols have spaces, and perf may add IPC columns
#: ("-      -") after the symbol
_REPORT_LINE = re.compile(r"^\s*([\d.]+)%\s+(\[JIT\] tid \d+|\S+)\s+\[([.kj])\]\s+(.*?)"
                          r"(?:\s+-\s+-)?\s*$")


def category(dso: str, symbol: str) -> str:
    """The CATEGORIES name of a sample in `symbol` of `dso` (a file name, or
    [kernel.kallsyms]), or OTHER."""
    dso = dso.rsplit("/", 1)[-1]
    for name, test in CATEGORIES:
        if test(dso, symbol):
            return name
    return OTHER


def parse_report(text: str) -> list[tuple[float, str, str]]:
    """(percent, dso, symbol) of each line of a flat perf report."""
    rows = []
    for line in text.splitlines():
        match = _REPORT_LINE.match(line)
        if match:
            percent, dso, _, symbol = match.groups()
            rows.append((float(percent), dso, symbol))
    return rows


def breakdown(rows: Iterable[tuple[float, str, str]], top: int = 4
              ) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """Per category, costliest first: its percent of the samples and its `top` symbols."""
    total: dict[str, float] = defaultdict(float)
    symbols: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for percent, dso, symbol in rows:
        name = category(dso, symbol)
        total[name] += percent
        symbols[name].append((symbol, percent))
    return [(name, total[name], sorted(symbols[name], key=lambda s: -s[1])[:top])
            for name in sorted(total, key=lambda n: -total[n])]


def short_symbol(symbol: str, width: int = 60) -> str:
    """A C++ symbol without its template arguments (Eigen's run to a thousand
    characters), cut to `width`."""
    symbol = re.sub(r"<.*>", "<...>", symbol)
    return symbol if len(symbol) <= width else symbol[: width - 3] + "..."


def format_breakdown(parts: list[tuple[str, float, list[tuple[str, float]]]],
                     per_step: float) -> str:
    """A Markdown table: category, share of the samples, time per step, top symbols."""
    lines = ["| where | share | per step | top symbols |", "|---|---|---|---|"]
    for name, percent, tops in parts:
        names = ", ".join(f"{short_symbol(s)} {p:.1f}%" for s, p in tops)
        lines.append(f"| {name} | {percent:.1f}% | {1e3 * per_step * percent / 100:.3f} ms "
                     f"| {names} |")
    return "\n".join(lines)


def build_step(case: str, dtype: str, system: str = "workbench"
               ) -> tuple[Callable[[], Any], Any, tuple[Any, ...]]:
    """One step of the suite's `case` on `system` as a call without arguments, with
    workbench's compiled Function and its arguments (None and () for JAX)."""
    if case == "mlp":
        from wb_bench import mlp as module

        from workbench.examples.mlp import initial_params, make_batch

        params, step_args = initial_params(dtype=dtype), make_batch(dtype=dtype)
    else:
        from wb_bench import deep as module

        params, step_args = module.initial_params(dtype), (module.batch(dtype),)
    if system == "workbench":
        fn, _ = module.workbench_step(dtype)
        return lambda: fn(*step_args), fn, step_args
    import jax

    jax.config.update("jax_enable_x64", True)  # as the suite (wb_bench.common.jax_module)
    step = module.jax_step(jax)  # jit, donated buffers: the new weights are fed back
    state = [tuple(jax.device_put(p) for p in params)]
    jargs = tuple(jax.device_put(a) for a in step_args)

    def jax_call() -> None:
        cost, state[0] = step(state[0], *jargs)
        cost.block_until_ready()

    if state[0][0].dtype != dtype:
        raise RuntimeError(f"JAX computes in {state[0][0].dtype}, not {dtype}")
    return jax_call, None, ()


def attach_commands(pid: int, seconds: float) -> list[str]:
    """The command lines that profile process `pid` natively for `seconds`."""
    span = max(1, int(seconds) - 2)
    return [
        f"perf record -F 999 -g -p {pid} -o perf.data -- sleep {span}",
        "perf report -i perf.data --stdio --no-children --sort dso,symbol -g none",
        f"py-spy record --native -p {pid} -d {span} -r 250 -o profile.svg",
        f"py-spy dump --native -p {pid}",
    ]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="mlp", choices=("mlp", "deep"),
                        help="mlp: 784-256-10 training step, batch 128; deep: 10-layer tanh "
                             "MLP gradient step (the suite's family 4)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--system", default="workbench", choices=("workbench", "jax"),
                        help="whose step: workbench's C linker, or JAX jit (the suite's "
                             "reference; one thread: XLA's one-thread flag and the pin)")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the loop runs")
    parser.add_argument("--cpu", default="auto",
                        help="CPU to pin to (default: the highest this process may use)")
    parser.add_argument("--coretype", default=None,
                        help="OPENBLAS_CORETYPE for this run: a kernel name, or 'auto' "
                             "(unset it and OPENBLAS_L2_SIZE: OpenBLAS's own choice)")
    parser.add_argument("--perf", action="store_true",
                        help="record this process with perf during the loop and print where "
                             "the samples fall")
    parser.add_argument("--wb-profile", action="store_true",
                        help="print workbench's per-node profile of the step too")
    args = parser.parse_args(argv)
    if args.seconds <= 0:
        parser.error(f"--seconds must be > 0, got {args.seconds}")
    cpus = sorted(os.sched_getaffinity(0))
    try:
        args.cpu = cpus[-1] if args.cpu == "auto" else int(args.cpu)
    except ValueError:
        parser.error(f"--cpu takes a CPU number or 'auto', got {args.cpu!r}")
    if args.cpu not in cpus:
        parser.error(f"--cpu: CPU {args.cpu} is not among this process's CPUs {cpus}")
    if args.coretype is not None:
        try:
            check_coretype(args.coretype)
        except ValueError as exc:
            parser.error(str(exc))
    if args.wb_profile and args.system != "workbench":
        parser.error("--wb-profile profiles workbench's step: leave out --system jax")
    if args.perf and shutil.which("perf") is None:
        parser.error("--perf: no perf on PATH (apt-get install linux-perf)")
    return args


def start_perf(pid: int, out: str) -> subprocess.Popen[bytes]:
    """perf recording `pid` with call graphs into `out` until sent SIGINT."""
    proc = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(pid), "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)  # perf attaches before the loop starts
    if proc.poll() is not None:
        error = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        raise RuntimeError(f"perf record failed (exit {proc.returncode}): {error}")
    return proc


def perf_report(data: str) -> str:
    """The flat report (self time by DSO and symbol) of perf data file `data`."""
    done = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                           "--sort", "dso,symbol", "-g", "none"],
                          capture_output=True, text=True, check=True)
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.sched_setaffinity(0, {args.cpu})  # before any library starts a thread
    apply_coretype(args.coretype, os.environ)
    limit_threads(1)
    from wb_bench.common import finish_background_builds
    from wb_bench.threads import coretype_banner

    call, fn, step_args = build_step(args.case, args.dtype, args.system)
    call()
    finish_background_builds()  # time the final -O3 code
    for _ in range(3):
        call()
    pid = os.getpid()
    print(f"{args.system} {args.case} step, {args.dtype}, pid {pid}, pinned to CPU {args.cpu}, "
          f"one thread")
    print(coretype_banner())
    print(f"looping for {args.seconds:g} s; to profile it from another shell:")
    for line in attach_commands(pid, args.seconds):
        print(f"    {line}")
    sys.stdout.flush()
    perf = None
    folder = tempfile.TemporaryDirectory(prefix="profile_native-")
    data = os.path.join(folder.name, "perf.data")
    if args.perf:
        perf = start_perf(pid, data)
    steps, wall0, cpu0 = 0, time.perf_counter(), time.process_time()
    end = wall0 + args.seconds
    while time.perf_counter() < end:
        call()
        steps += 1
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    print(f"{steps} steps: {1e3 * wall / steps:.3f} ms wall, {1e3 * cpu / steps:.3f} ms CPU "
          f"per step (CPU/wall {cpu / wall:.2f}: below 1 the CPU was shared)")
    with folder:
        if perf is not None:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
            print("\nperf samples by where they fall (self time; per step = share x CPU per "
                  "step):")
            rows = parse_report(perf_report(data))
            print(format_breakdown(breakdown(rows), cpu / steps))
            print("\ncostliest symbols:")
            for percent, dso, symbol in rows[:TOP_SYMBOLS]:
                print(f"    {percent:5.1f}%  {short_symbol(symbol)}  ({dso.rsplit('/', 1)[-1]})")
    if args.wb_profile:
        import workbench as wb
        from workbench.core.compile.profiling import format_profile

        print("\nworkbench.profile (per node):")
        print(format_profile(wb.profile(fn, *step_args, calls=200), top=15, width=120))
    return 0


if __name__ == "__main__":
    sys.exit(main())
