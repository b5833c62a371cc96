"""The maintenance commands: `workbench bench` (the benchmark suite) and `workbench cache`
(where the compiled-module cache is, what it holds, its statistics; clearing it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

import typer

from workbench.cli.errors import UsageError, exit_codes
from workbench.cli.terminal import columns

cache_app = typer.Typer(help="Inspect or clear the compiled-module cache.", no_args_is_help=True)


#: the benchmark suite: it ships with the source checkout, not with the installed package
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def suite_module(name: str) -> Optional[ModuleType]:  # noqa: UP045
    """benchmarks/wb_bench/<name>.py loaded by its path, or None outside a source checkout:
    for the suite's modules of plain Python (`families`, `threads`), which the command
    reads without importing the suite or anything it measures."""
    path = BENCHMARKS / "wb_bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_wb_bench_{name}", path)
    if not path.is_file() or spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: the families of benchmarks/run.py, from its one list (none outside a source checkout)
BENCH_FAMILIES: tuple[str, ...] = getattr(suite_module("families"), "FAMILIES", ())


def bench(
    quick: bool = typer.Option(False, "--quick",
                               help="Smaller sizes, fewer repeats (a few minutes)."),
    as_json: bool = typer.Option(False, "--json", help="The rows as JSON."),
    only: Optional[str] = typer.Option(  # noqa: UP045
        None, "--only", help=f"Comma-separated families: {', '.join(BENCH_FAMILIES)} "
                             f"(default: all)." if BENCH_FAMILIES else
                             "Comma-separated families of benchmarks/run.py."),
    no_pytensor: bool = typer.Option(False, "--no-pytensor", help="Do not time PyTensor."),
    no_jax: bool = typer.Option(False, "--no-jax", help="Do not time JAX."),
    threads: Optional[int] = typer.Option(  # noqa: UP045
        None, "--threads", min=0, help="Threads for BLAS, OpenMP and XLA alike (default 1: "
                                       "per-core figures; 0: each library's own)."),
    pin: Optional[str] = typer.Option(  # noqa: UP045
        None, "--pin", help="Run the whole suite on this CPU (a number), or 'none'. "
                            "Default 'auto': the highest CPU when on one thread (a "
                            "per-core table), else none."),
    coretype: Optional[str] = typer.Option(  # noqa: UP045
        None, "--coretype", help="OpenBLAS's kernels, for this run only: a NAME (Haswell, "
                                 "SkylakeX, Zen, ...) sets OPENBLAS_CORETYPE; 'auto' unsets "
                                 "OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (OpenBLAS picks "
                                 "this CPU's). Default: the environment's."),
) -> None:
    """Run the benchmark suite of `benchmarks/` (benchmarks/run.py): a table of ratios
    against NumPy and, when installed, PyTensor and JAX, fitted to the terminal's width
    (COLUMNS when set).

    Example:

        workbench bench --quick --only mlp --coretype auto
    """
    with exit_codes():
        args = bench_command(quick=quick, as_json=as_json, only=only,
                             no_pytensor=no_pytensor, no_jax=no_jax, threads=threads,
                             pin=pin, coretype=coretype)
        # stdout is the table (captured, then echoed); progress goes straight to stderr
        done = subprocess.run(args, check=False, stdout=subprocess.PIPE, text=True)
        if done.stdout:
            typer.echo(done.stdout, nl=False)
        if done.returncode != 0:
            raise RuntimeError(f"the benchmark suite failed (exit code {done.returncode})")


def bench_command(*, quick: bool = False, as_json: bool = False,
                  only: Optional[str] = None, no_pytensor: bool = False,  # noqa: UP045
                  no_jax: bool = False, threads: Optional[int] = None,  # noqa: UP045
                  pin: Optional[str] = None, coretype: Optional[str] = None,  # noqa: UP045
                  ) -> list[str]:
    """The command line running benchmarks/run.py with `workbench bench`'s options (those
    left at None: the suite's defaults), each checked first: UsageError naming the option,
    what it takes and what it got."""
    script = BENCHMARKS / "run.py"
    options = suite_module("threads")
    if not script.is_file() or options is None:
        raise UsageError("no benchmark suite found: it ships with the source checkout "
                         "(benchmarks/run.py), not with the installed package")
    families = [f.strip() for f in (only or "").split(",") if f.strip()]
    unknown = [f for f in families if f not in BENCH_FAMILIES]
    if unknown:
        raise UsageError(f"--only: unknown benchmark families {', '.join(unknown)}; "
                         f"known: {', '.join(BENCH_FAMILIES)}")
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    try:
        if pin is not None:  # the suite's own checks, before minutes of running
            options.pin_cpu(pin, 1 if threads is None else threads, cpus)
        if coretype is not None:
            options.check_coretype(coretype)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    args = [sys.executable, str(script)]
    args += ["--quick"] * quick + ["--json"] * as_json + ["--no-pytensor"] * no_pytensor
    args += ["--no-jax"] * no_jax + (["--only", ",".join(families)] if families else [])
    args += ["--threads", str(threads)] if threads is not None else []
    args += ["--pin", pin] if pin is not None else []
    args += ["--coretype", coretype] if coretype is not None else []
    # the suite's stdout is a pipe: it is told the width of this command's terminal
    return [*args, "--width", str(columns())]


@cache_app.command("info")
def cache_info(
    as_json: bool = typer.Option(False, "--json", help="The same as JSON."),
) -> None:
    """Where the compiled-module cache is, what it holds, and its statistics summed over
    every process that used it.

    Example:

        workbench cache info --json
    """
    from workbench.core.link.c.cache_stats import lifetime_stats

    with exit_codes():
        cache = _module_cache()
        info = dict(cache.info(), lifetime=lifetime_stats(cache.root))
        if as_json:
            typer.echo(json.dumps(info, indent=1, default=str))
            return
        typer.echo(cache_table(info))


def cache_table(info: dict[str, Any]) -> str:
    """`cache info` as a two-column table (labels in bold on a colour terminal)."""
    import time

    from workbench.cli.terminal import style

    life = info.get("lifetime") or {}
    rows = [("location", info["root"]),
            ("entries", f"{info['entries']} modules, {_size(info['total_bytes'])}"),
            ("compiler", f"fingerprint {info['fingerprint']}" if info.get("fingerprint")
             else "none found (the C linker is unavailable)")]
    if life:
        since = time.strftime("%Y-%m-%d %H:%M", time.localtime(life.get("since", 0)))
        rows += [("used by", f"{_processes(life.get('processes', 0))} since {since}"),
                 ("disk hits", str(life.get("disk_hits", 0))),
                 ("memory hits", str(life.get("memory_hits", 0))),
                 ("modules built", str(life.get("builds", 0) + life.get("unversioned_builds", 0))),
                 ("corrupt, rebuilt", str(life.get("corrupt_rebuilds", 0))),
                 ("compiling time", f"{life.get('compile_seconds', 0.0):.1f} s")]
    else:
        rows.append(("statistics", "none yet (they are kept from the first compile on)"))
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{style(label.ljust(width), bold=True)}  {value}" for label, value in rows)


def _size(count: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count} bytes"


@cache_app.command("clear")
def cache_clear() -> None:
    """Delete every compiled module from the cache, with the precompiled headers and the
    remembered compiler probes kept beside it."""
    with exit_codes():
        cache = _module_cache()
        from workbench.core.link.c.cache import clear_all

        try:
            lines = clear_all(cache)
        except OSError as exc:
            raise UsageError(f"cannot clear the cache: {exc}") from None
        typer.echo("\n".join(lines))


def _module_cache() -> Any:
    try:
        from workbench.core.link.c.cache import ModuleCache
    except ImportError:
        raise UsageError("the C linker's cache is not available in this build") from None
    return ModuleCache()


def _processes(count: int) -> str:
    return f"{count} process" if count == 1 else f"{count} processes"
