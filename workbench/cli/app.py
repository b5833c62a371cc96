"""The Typer application behind the `workbench` command.

Every command takes a graph as an expression (`"exp(x) * y" --var x=float64[?,3]`),
a graph file (`graph.json`), `--example NAME` or `--python model.py:cost` (which runs
the file, so it is never guessed from the positional argument).
Exit codes: 0 success, 1 a failure while running, 2 bad usage or bad input (one
line on stderr; `--debug` shows the traceback).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperArgument, TyperGroup

from workbench.cli.errors import UsageError, exit_codes, state, unknown
from workbench.cli.maintenance import bench, cache_app
from workbench.cli.terminal import (
    c_compile_progress,
    c_optimised,
    columns,
    fit,
    progress,
    style,
)

#: click's exceptions, from the click typer uses (its own copy in recent versions)
click_errors = sys.modules[typer.BadParameter.__module__]


class OneLineErrors(TyperGroup):
    """The `workbench` group: a usage error (unknown option, bad value) is one line on
    stderr with exit code 2, like every other bad input, instead of click's box."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except click_errors.ClickException as exc:
            if isinstance(exc, click_errors.NoArgsIsHelpError):  # the help, as click shows it
                exc.show()
            else:
                typer.echo(f"{style('error:', err=True, fg='red', bold=True)} "
                       f"{_usage_message(exc)}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _plain_metavars(command, ctx)
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _plain_metavars(self, ctx)
        for name in self.list_commands(ctx):
            self.get_command(ctx, name)
        super().format_help(ctx, formatter)


#: what --help shows for the value of an option (instead of typer's `<str>`)
METAVARS = {"graph": "GRAPH", "var": "NAME=DTYPE[SHAPE]", "example": "NAME", "wrt": "NAME",
            "format": "FORMAT", "output": "FILE", "trace_path": "FILE", "mode": "MODE",
            "exclude": "NAME", "at": "K", "linker": "NAME", "compare_with": "A,B",
            "inputs": "NAME=DATA", "only": "FAMILIES",
            "pin": "CPU|auto|none", "coretype": "NAME|auto"}


#: what --help shows in the type column of a positional argument (instead of `<str>`)
ARGUMENT_KINDS = {"graph": "EXPR|FILE.json"}


def _plain_metavars(command: Any, ctx: Any) -> None:
    """--help shows flags without a `<bool>` (they take no value) and values by what
    they hold (`NAME=DTYPE[SHAPE]`, `FILE`, `N`) rather than by Python type; the same
    for the commands of a group (`cache info`)."""
    for param in command.get_params(ctx):
        if param.metavar is not None:
            continue
        if getattr(param, "is_flag", False):
            param.metavar = ""
        else:
            param.metavar = METAVARS.get(param.name or "", "N")
        if isinstance(param, TyperArgument):  # typer shows its Python type beside it
            kind = ARGUMENT_KINDS.get(param.name or "", "")
            param.display_type_rich = lambda ctx, kind=kind: kind
    for subcommand in getattr(command, "commands", {}).values():
        _plain_metavars(subcommand, ctx)


def _usage_message(exc: Exception) -> str:
    """click's message on one line, with where to look (or, for an expression that
    starts with '-', how to pass it)."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    takes_graph = any(p.name == "graph" for p in ctx.command.params)
    option = getattr(exc, "option_name", "") or ""
    if isinstance(exc, click_errors.NoSuchOption) and takes_graph and option[1:2] != "-":
        return (f"{message}; an expression that starts with '-' goes after -- (options "
                f"first): {ctx.command_path} [OPTIONS] -- \"{option}\"")
    return f"{message} (see {ctx.command_path} --help)"


app = typer.Typer(
    name="workbench",
    cls=OneLineErrors,
    help="A symbolic graph engine you can see into: show, differentiate, rewrite, "
         "compile and profile graphs.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

GRAPH_HELP = ("The graph: an expression (\"exp(x) * y\"; names not declared with --var are "
              "float64 scalars; `workbench functions` lists the functions) or a graph file "
              "FILE.json. Or omit it and use --example NAME or --python FILE.py:NAME.")
VAR_HELP = "Declare a variable of an expression, e.g. x=float64[?,3] (? = any length)."

GraphArg = typer.Argument(None, help=GRAPH_HELP, show_default=False)
VarOpt = typer.Option([], "--var", help=VAR_HELP)
ExampleOpt = typer.Option(None, "--example", "-e", help="A bundled example (see `examples`).")
PythonOpt = typer.Option(None, "--python", metavar="FILE.py:NAME",
                         help="RUNS FILE.py as Python code (trust it first) and takes the "
                              "graph NAME from it: a Variable, a list of them or a function "
                              "returning them.")


def _version_callback(value: bool) -> None:
    if value:
        from workbench import __version__

        typer.echo(f"workbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback,
                                 is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
) -> None:
    """Build, print, differentiate, rewrite, compile and profile symbolic graphs."""
    state["debug"] = debug


def _resolve(graph: str | None, example: str | None, var: list[str], python: str | None
             ) -> Any:
    """The GraphSource of the command line (sources.py, imported when a command runs)."""
    from workbench.cli.sources import resolve

    return resolve(graph, example, var, python)


def _write(text: str, output: Path | None, fitted: bool = False) -> None:
    """`text` to stdout or to the file `output`; `fitted`: on stdout, long lines wrap to
    the terminal's width (`fit`), never in a file."""
    if output is None:
        typer.echo(fit(text) if fitted else text)
    else:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        typer.echo(f"wrote {output}", err=True)


# -- examples ----------------------------------------------------------------------------


@app.command()
def examples() -> None:
    """List the bundled example graphs.

    Example:

        workbench show --example mlp
    """
    from workbench.examples import EXAMPLES

    for name, (_, description) in EXAMPLES.items():
        typer.echo(fit(f"{name:22s} {description}", hanging=23))


@app.command()
def functions() -> None:
    """List the tensor functions an expression may call.

    Example:

        workbench show "softplus(x) - log1p(exp(x))" --var x=float64[?]
    """
    from workbench.cli.sources import expression_functions

    for name, function in sorted(expression_functions().items()):
        paragraph = " ".join((function.__doc__ or "").strip().split("\n\n")[0].split())
        sentence = paragraph.split(". ")[0].rstrip(".")
        line = f"{name:22s} {sentence}".rstrip()
        if sys.stdout.isatty() or "COLUMNS" in os.environ:  # one row per function
            width = columns()
            line = line if len(line) <= width else line[:width - 1] + "…"
        typer.echo(line)


@app.command()
def demo(
    rows: int = typer.Option(3, help="Rows of the generated matrix x."),
    cols: int = typer.Option(4, help="Columns of x (and length of y)."),
    seed: int = typer.Option(0, help="Random seed for the generated data."),
) -> None:
    """Run the quick-start example: dprint, compile, run on generated data.

    Example:

        workbench demo --rows 2 --cols 5
    """
    with exit_codes():
        for flag, value in (("--rows", rows), ("--cols", cols)):
            if value < 1:
                raise UsageError(f"{flag} {value}: the demo needs at least 1")
        from workbench.examples import quickstart

        quickstart.main(rows=rows, cols=cols, seed=seed, width=columns())


# -- show ----------------------------------------------------------------------------------

FORMATS = ("dprint", "pprint", "svg", "png", "dot", "json", "graph")


@app.command()
def show(
    graph: Optional[str] = GraphArg,  # noqa: UP045 (typer needs Optional here)
    var: list[str] = VarOpt,
    example: Optional[str] = ExampleOpt,  # noqa: UP045
    python: Optional[str] = PythonOpt,  # noqa: UP045
    format: str = typer.Option("dprint", "--format", "-f",
                               help=f"One of {', '.join(FORMATS)} (graph = the graph file "
                                    "format)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",  # noqa: UP045
                                          help="Write to FILE instead of stdout."),
    types: bool = typer.Option(False, "--types", help="dprint: show each variable's type."),
) -> None:
    """Print or draw a graph.

    Example:

        workbench show "exp(x) * y" --var x=float64[?,3] --format pprint
    """
    with exit_codes():
        if format not in FORMATS:
            raise UsageError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
        source = _resolve(graph, example, var, python)
        outputs = source.outputs
        if format == "dprint":
            from workbench.core.printing import dprint

            _write(dprint(outputs, file="str", print_type=types), output, fitted=True)
        elif format == "pprint":
            from workbench.core.printing import pprint

            _write(pprint(outputs), output, fitted=True)
        elif format == "svg":
            from workbench.inspector import to_svg

            _write(to_svg(outputs), output)
        elif format == "dot":
            from workbench.inspector import to_dot

            _write(to_dot(outputs), output)
        elif format == "json":
            from workbench.inspector import to_json

            _write(to_json(outputs), output)
        elif format == "graph":
            from workbench.io import to_document

            _write(json.dumps(to_document(outputs, source.inputs), indent=1), output)
        else:  # png
            if output is None:
                raise UsageError("--format png needs --output FILE.png")
            from workbench.inspector import draw

            ax = draw(outputs)
            ax.figure.savefig(output, dpi=100, bbox_inches="tight")
            typer.echo(f"wrote {output}", err=True)


# -- grad ----------------------------------------------------------------------------------


@app.command()
def grad(
    graph: Optional[str] = GraphArg,  # noqa: UP045
    wrt: list[str] = typer.Option(..., "--wrt", help="Input(s) to differentiate with respect to."),
    var: list[str] = VarOpt,
    example: Optional[str] = ExampleOpt,  # noqa: UP045
    python: Optional[str] = PythonOpt,  # noqa: UP045
    simplify: bool = typer.Option(False, "--simplify",
                                  help="Also show the formula after FAST_RUN rewriting and "
                                       "the compiled graph (fused loops)."),
    sum_: bool = typer.Option(False, "--sum",
                              help="Differentiate the sum of a graph that is not a scalar."),
    steps: bool = typer.Option(False, "--steps", help="Show the recorded backward pass."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Each gradient's formula and node count as JSON."),
) -> None:
    """The gradient of a scalar graph (--sum for any other), before and with --simplify
    after rewriting.

    Example:

        workbench grad "sum(tanh(x) * x)" --var x=float64[?] --wrt x --simplify
    """
    import workbench as wb
    from workbench.core.printing import dprint, pprint

    with exit_codes():
        source = _resolve(graph, example, var, python)
        by_name = {v.name: v for v in source.inputs}
        by_name.update({getattr(t, "name", None): t for t, _ in source.updates})
        targets = []
        for name in wrt:
            if name not in by_name:
                raise UsageError(f"--wrt {name}: no input named {name!r} (inputs: "
                                 f"{', '.join(n for n in by_name if n)})")
            targets.append(by_name[name])
        cost = source.outputs[0]
        if cost.type.ndim != 0:
            if not sum_:
                raise UsageError(f"the graph is not a scalar (type {cost.type}): the gradient "
                                 "needs one; pass --sum to differentiate its sum, or wrap it "
                                 "in sum()")
            cost = cost.sum()
        if steps:
            grads, record = wb.grad(cost, targets, trace=True)
        else:
            grads, record = wb.grad(cost, targets), None
        simplified = [_simplified(g) if simplify else None for g in grads]
        if as_json:
            typer.echo(json.dumps(_grad_json(cost, wrt, grads, simplified, record), indent=1))
            return
        for name, g, fgraph in zip(wrt, grads, simplified):
            typer.echo(style(f"d({cost.name or 'cost'})/d{name} =", bold=True))
            typer.echo(fit("  " + pprint(g)))
            typer.echo(fit(dprint(g, file="str")))
            if fgraph is not None:
                formula, fused = fgraph
                typer.echo(style("simplified (FAST_RUN rewrites):", bold=True))
                typer.echo(fit("  " + pprint(formula.outputs[0])))
                typer.echo(style(f"compiled as {len(fused.apply_nodes)} node(s) (fused loops):",
                                 bold=True))
                typer.echo(fit(dprint(fused, file="str")))
        if record is not None:
            typer.echo(fit(str(record)))


def _simplified(g: Any) -> tuple[Any, Any]:
    """(the gradient rewritten to its formula, the graph FAST_RUN compiles): the same
    rewrites, the first without fusing loops or working in place, so it reads as the
    textbook formula."""
    import workbench as wb

    return (wb.rewrite_graph([g], mode="FAST_RUN", exclude=["fusion", "inplace"]),
            wb.rewrite_graph([g], mode="FAST_RUN"))


def _grad_json(cost: Any, wrt: list[str], grads: list[Any], simplified: list[Any],
               record: Any) -> dict[str, Any]:
    """What `grad --json` prints: per input the formula and node count, before and
    (with --simplify) after rewriting; with --steps the backward pass as text."""
    from workbench.core.graph.basic import ancestors
    from workbench.core.printing import pprint

    rows = []
    for name, g, fgraph in zip(wrt, grads, simplified):
        row: dict[str, Any] = {"wrt": name, "formula": pprint(g),
                               "nodes": len({v.owner for v in ancestors([g]) if v.owner})}
        if fgraph is not None:
            formula, fused = fgraph
            row["simplified"] = {"formula": pprint(formula.outputs[0]),
                                 "nodes": len(fused.apply_nodes)}
        rows.append(row)
    result: dict[str, Any] = {"cost": pprint(cost), "gradients": rows}
    if record is not None:
        result["steps"] = str(record).splitlines()
    return result


# -- rewrite -----------------------------------------------------------------------------


@app.command()
def rewrite(
    graph: Optional[str] = GraphArg,  # noqa: UP045
    var: list[str] = VarOpt,
    example: Optional[str] = ExampleOpt,  # noqa: UP045
    python: Optional[str] = PythonOpt,  # noqa: UP045
    mode: str = typer.Option("FAST_RUN", "--mode", help="FAST_RUN, FAST_COMPILE or DEBUG."),
    exclude: list[str] = typer.Option([], "--exclude", help="Rewrite name or tag to skip."),
    at: Optional[int] = typer.Option(None, "--at",  # noqa: UP045
                                     help="Print the graph after step K (0 = the input)."),
    step: bool = typer.Option(False, "--step", help="Walk through the steps interactively."),
    as_json: bool = typer.Option(False, "--json", help="The trace as JSON."),
) -> None:
    """Rewrite a graph and show every step of the trace.

    Example:

        workbench rewrite "log(1 + exp(x))" --var x=float64[?] --at 1
    """
    import workbench as wb
    from workbench.core.printing import dprint

    with exit_codes():
        _check_rewrite_names(exclude)
        source = _resolve(graph, example, var, python)
        try:
            _, trace = wb.rewrite_graph(source.outputs, mode=mode, exclude=exclude, trace=True)
        except (KeyError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        if as_json:
            typer.echo(json.dumps(_trace_json(trace), indent=1))
            return
        if at is not None:
            if not 0 <= at <= len(trace):
                raise UsageError(f"--at {at}: the trace has steps 0 to {len(trace)}")
            typer.echo(fit(dprint(trace.graph_at(at), file="str")))
            return
        if step:
            _step_through(trace)
            return
        typer.echo(fit(trace.table(columns())))


def _check_rewrite_names(names: list[str]) -> None:
    """Every --exclude name is a registered rewrite or tag (a typo would skip nothing)."""
    from workbench.core.rewrite import rewrite_db

    known = rewrite_db.names() + sorted(rewrite_db.all_tags())
    for name in names:
        if name not in known:
            raise unknown("rewrite or tag", name, known,
                          where=f"tags: {', '.join(sorted(rewrite_db.all_tags()))}; the "
                                "rewrite names are in the step table of `workbench rewrite`")


def _trace_json(trace: Any) -> list[dict[str, Any]]:
    rows = []
    for k, record in enumerate(trace.steps, start=1):
        rows.append({
            "step": k,
            "rewrite": getattr(record, "rewrite", None) or getattr(record, "name", None),
            "tags": list(getattr(record, "tags", ()) or ()),
            "pass": getattr(record, "pass_name", None) or getattr(record, "pass_", None),
            "removed": len(getattr(record, "removed", ()) or ()),
            "introduced": len(getattr(record, "introduced", ()) or ()),
            "time": getattr(record, "time", None),
            "failed": bool(getattr(record, "failed", False)),
        })
    return rows


def _step_through(trace: Any) -> None:
    """Enter = next step, b = back, q = quit; each step shows what changed."""
    from workbench.core.printing import dprint

    position = 0
    total = len(trace)
    typer.echo(f"{total} steps. Enter = next, b = back, q = quit.")
    typer.echo(fit(dprint(trace.graph_at(0), file="str")))
    while True:
        try:
            answer = input(f"[step {position}/{total}] > ").strip().lower()
        except EOFError:
            return
        if answer == "q":
            return
        if answer == "b":
            position = max(position - 1, 0)
        elif answer == "":
            if position == total:
                typer.echo("(at the last step)")
                continue
            position += 1
        else:
            typer.echo("Enter = next, b = back, q = quit")
            continue
        if position > 0:  # the step's record: the same counts as the table
            record = trace.steps[position - 1]
            removed = ", ".join(sorted(str(n.op) for n in record.removed)) or "-"
            introduced = ", ".join(sorted(str(n.op) for n in record.introduced)) or "-"
            typer.echo(fit(f"{record} (removed {removed}; introduced {introduced})"))
        else:
            typer.echo("step 0: the input graph")
        typer.echo(fit(dprint(trace.graph_at(position), file="str")))


# -- compile and profile -------------------------------------------------------------------


LINKER_HELP = "py, c, gpu or debug (default: the fastest available)."


def _compile(source: Any, linker: str | None, mode: str | None = None,
             optimised: bool = False) -> Any:
    """The function of `source`, compiled as `wb.function` does (on a cold cache the C
    linker's kinds run from a quick build first); `optimised`: their -O3 builds are
    waited for (a profile times the code that stays)."""
    import workbench as wb

    _check_linker(linker)
    with c_compile_progress():
        fn = wb.function(source.inputs, source.outputs, updates=source.updates or None,
                         linker=linker, mode=mode, on_unused_input="ignore",
                         name=source.name)
    if optimised:
        c_optimised()
    return fn


def _check_linker(linker: str | None) -> None:
    from workbench.core.compile.mode import registered_linkers

    if linker is not None and linker not in registered_linkers():
        raise unknown("linker", linker, registered_linkers())


@app.command(name="compile")
def compile_(
    graph: Optional[str] = GraphArg,  # noqa: UP045
    var: list[str] = VarOpt,
    example: Optional[str] = ExampleOpt,  # noqa: UP045
    python: Optional[str] = PythonOpt,  # noqa: UP045
    linker: Optional[str] = typer.Option(None, "--linker", help=LINKER_HELP),  # noqa: UP045
    show_code: bool = typer.Option(False, "--show-code",
                                   help="Print the generated C code (C linker)."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Timings, cache hits and node counts as JSON."),
) -> None:
    """Compile a graph; report the timings, the C compilation and cache hits, and the
    compiled graph (or with --show-code the generated C).

    Example:

        workbench compile --example mlp --linker c --show-code
    """
    from workbench.core.printing import dprint

    with exit_codes():
        source = _resolve(graph, example, var, python)
        start = time.perf_counter()
        fn = _compile(source, linker)
        elapsed = time.perf_counter() - start
        info = _compile_info(source, fn, elapsed)
        if as_json:
            if show_code:
                info["code"] = _generated_code(fn)
            typer.echo(json.dumps(info, indent=1))
            return
        trace_steps = info.get("rewrite_steps")
        typer.echo(fit(f"compiled {source.name!r} with the {info['linker']!r} linker in "
                       f"{elapsed * 1e3:.1f} ms: {info['nodes']} nodes"
                       + (f", {trace_steps} rewrite steps" if trace_steps is not None else "")))
        report = info.get("c")
        if report is not None:
            from workbench.core.link.c.linker import fallback_note

            typer.echo(fit(f"C: {report['c_nodes']} nodes compiled to C, {report['py_nodes']} "
                           f"run in Python; node kinds: {report['compiled']} compiled in "
                           f"{report.get('modules_built', 0)} module(s)"
                           f"{fallback_note(report)}, "
                           f"{report['disk_hits']} disk cache hits, {report['memory_hits']} "
                           f"memory hits; C compilation {report['compile_seconds'] * 1e3:.1f} ms,"
                           f" linking {report['link_seconds'] * 1e3:.1f} ms"))
            for node, reason in report["python_nodes"]:
                typer.echo(fit(f"  in Python: {node}: {reason}"))
        if show_code:
            code = _generated_code(fn)
            typer.echo(code if code else f"(the {info['linker']} linker generates no code)")
        else:
            typer.echo(fit(dprint(fn, file="str")))


def _compile_info(source: Any, fn: Any, elapsed: float) -> dict[str, Any]:
    """What `compile` reports: linker, node count, rewrite steps, timings, the C linker's
    compile report (C and Python nodes, modules compiled, cache hits, seconds)."""
    info: dict[str, Any] = {
        "graph": source.name, "linker": fn.maker.linker_name, "seconds": elapsed,
        "nodes": len(fn.maker.fgraph.apply_nodes),
        "rewrite_steps": len(fn.maker.rewrite_trace),
    }
    report = getattr(fn.linker, "report", None)
    if report is not None and hasattr(report, "as_dict"):
        info["c"] = dict(report.as_dict(), python_nodes=[
            [str(node), reason] for node, reason in getattr(report, "py_nodes", ())])
    return info


def _generated_code(fn: Any) -> str:
    """The C source of every compiled node of `fn` ("" when its linker generates none)."""
    code = getattr(fn.linker, "generated_code", None)
    if code:
        return str(code)
    sources = getattr(getattr(fn.linker, "report", None), "sources", None) or {}
    return "\n".join(f"/* ==== {node} ==== */\n{src.source}" for node, src in sources.items())


def _make_inputs(source: Any, specs: list[str]) -> list[Any]:
    import numpy as np

    from workbench.core import dtypes

    given: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    for spec in specs:
        from workbench.cli.sources import parse_input_spec

        name, dtype, shape, path = parse_input_spec(spec)
        if path is not None:
            given[name] = np.load(path, allow_pickle=False)
        else:
            given[name] = _random(rng, dtypes.as_dtype(dtype), shape)
    names = [var.name for var in source.inputs]
    for name in given:
        if name not in names:
            raise unknown("input", name, names)
    values = []
    for var in source.inputs:
        if var.name in given:
            values.append(given[var.name])
            continue
        shape = source.input_shapes.get(var.name)
        if shape is None:
            static = getattr(var.type, "shape", ())
            if any(s is None for s in static):
                raise UsageError(f"input {var.name!r} has unknown dimensions "
                                 f"{var.type}: give --input {var.name}=DTYPE[SHAPE]")
            shape = tuple(static)
        values.append(_random(rng, dtypes.as_dtype(var.type.dtype), shape))
    for var, value in zip(source.inputs, values):
        try:
            var.type.filter(value, allow_downcast=True)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--input {var.name}: {exc}") from None
    return values


def _random(rng: Any, dtype: Any, shape: tuple[int, ...]) -> Any:
    from workbench.testing.catalog import random_array

    return random_array(rng, tuple(shape), str(dtype), low=0.05, high=1.0)


@app.command()
def profile(
    graph: Optional[str] = GraphArg,  # noqa: UP045
    var: list[str] = VarOpt,
    example: Optional[str] = ExampleOpt,  # noqa: UP045
    python: Optional[str] = PythonOpt,  # noqa: UP045
    linker: Optional[str] = typer.Option(None, "--linker", help=LINKER_HELP),  # noqa: UP045
    inputs: list[str] = typer.Option([], "--input",
                                     help="NAME=DTYPE[SHAPE] (random data) or NAME=FILE.npy."),
    calls: int = typer.Option(10, "--calls", min=1, help="Number of profiled calls."),
    compare_with: Optional[str] = typer.Option(None, "--compare",  # noqa: UP045
                                               help="Two linkers side by side, e.g. py,c."),
    trace_path: Optional[Path] = typer.Option(None, "--trace",  # noqa: UP045
                                              help="Write a Chrome trace (Perfetto) JSON."),
    as_json: bool = typer.Option(False, "--json", help="The profile as JSON."),
) -> None:
    """Run a graph on generated (or given) inputs and print where the time went.

    Example:

        workbench profile "tanh(x @ w)" --var x=float64[500,80] --var w=float64[80,50]
    """
    from workbench.core.compile.profiling import compare, format_profile

    with exit_codes():
        source = _resolve(graph, example, var, python)
        values = _make_inputs(source, inputs)
        if compare_with:
            names = [n.strip() for n in compare_with.split(",") if n.strip()]
            if len(names) != 2:
                raise UsageError(f"--compare needs two linkers, e.g. py,c; got {compare_with!r}")
            stats = []
            for name in names:
                stats.append(_profiled(_compile(source, name, optimised=True), values, calls,
                                        f" on {name}"))
            typer.echo(compare(stats[0], stats[1]))
            return
        fn = _compile(source, linker, optimised=True)
        stats = _profiled(fn, values, calls)
        if trace_path is not None:
            stats.write_chrome_trace(str(trace_path))
            typer.echo(f"wrote {trace_path}", err=True)
        typer.echo(stats.to_json() if as_json else format_profile(stats, width=columns()))


def _profiled(fn: Any, values: list[Any], calls: int, on: str = "") -> Any:
    """The profile of `calls` calls of `fn`, with a bar that moves per call."""
    from workbench.core.compile.profiling import profile as run_profile

    with progress(f"profiling{on}", total=calls) as update:
        return run_profile(fn, *values, calls=calls, on_call=update)


# -- bench and cache: maintenance.py ---------------------------------------------------------

app.command()(bench)
app.add_typer(cache_app, name="cache")
