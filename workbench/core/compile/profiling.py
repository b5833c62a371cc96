"""Where the time (and memory) of a compiled function goes.

`function(..., profile=True)` gives the Function a `ProfileStats`; or
`workbench.profile(fn, *args, calls=N)` profiles an existing Function. The
stats hold, per Apply node, the time spent in its thunk, its calls, the backend
that ran it, the size of its outputs (`Type.get_shape_info` / `get_size`,
seed 000) and its flops (`Op.flops`, seed 003). From these come the tables by
Op class, by Op and by node, the memory peak with and without freeing
intermediates, GFLOP/s, a JSON form, a Chrome trace (Perfetto) of per-node
events, and a side-by-side comparison of two profiles (e.g. two linkers).
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.graph.utils import MethodNotDefined

BACKEND_NAMES = {"py": "Python", "c": "C", "gpu": "GPU"}


@dataclass
class NodeRow:
    """One Apply node's share of the run."""

    position: int  # in the execution order
    node: str  # how dprint names the node's Op (with its inputs' names)
    op: str
    op_class: str
    backend: str
    time: float  # seconds over all calls
    calls: int
    output_bytes: int | None
    flops: float | None
    #: threads its calls used, BLAS calls or row kernels ("2", or "1-2" when calls
    #: differed); "" when not known (neither, or a linker that does not choose them)
    threads: str = ""

    @property
    def per_call(self) -> float:
        return self.time / self.calls if self.calls else 0.0


@dataclass
class GroupRow:
    """Time summed over the nodes of one Op (or Op class)."""

    name: str
    time: float
    calls: int
    nodes: int
    fraction: float = 0.0
    cumulative: float = 0.0
    flops: float | None = None


@dataclass
class MemoryReport:
    peak_with_gc: int  # bytes alive at once when intermediates are freed after last use
    peak_without_gc: int  # bytes if every intermediate stays alive
    largest: list[tuple[str, int]] = field(default_factory=list)


class ProfileStats:
    """Timings of one compiled Function (filled as it is called)."""

    def __init__(self, fn: Any, name: str | None = None) -> None:
        self.function = fn
        self.name = name or fn.name or "function"
        self.linker = getattr(fn.maker, "linker_name", "py")
        self.calls = 0
        self.run_time = 0.0  # time inside the VM (thunks plus the VM loop)
        self.call_time = 0.0  # whole calls, when measured from outside (workbench.profile)
        #: each whole call's seconds, when measured from outside: the spread shows the noise
        self.call_times: list[float] = []
        self.compile_time: dict[str, float] = dict(getattr(fn.maker, "compile_times", {}) or {})
        #: the C linker's CompileReport as a dict (modules compiled, cache hits, seconds)
        self.linker_report: dict[str, Any] | None = _linker_report(fn)

    # -- recording ----------------------------------------------------------------
    def timed(self, run: Callable[[], None]) -> Callable[[], None]:
        """Wrap the VM's run to count calls and the time inside the VM."""
        clock = time.perf_counter

        def timed_run() -> None:
            start = clock()
            try:
                run()
            finally:
                self.run_time += clock() - start
                self.calls += 1

        return timed_run

    @property
    def vm(self) -> Any:
        return self.function.vm

    @property
    def order(self) -> list[Apply]:
        return list(self.function.order)

    @property
    def thunk_time(self) -> float:
        return sum(self.vm.node_time.values())

    @property
    def per_node(self) -> dict[Apply, dict[str, Any]]:
        """{node: {"time", "calls", "memory"}} (what the inspector attaches to nodes)."""
        rows = self.by_node()
        return {node: {"time": row.time, "calls": row.calls, "memory": row.output_bytes}
                for node, row in zip(self.order, rows)}

    def inner(self) -> dict[Apply, ProfileStats]:
        """Per node holding an inner graph (a loop): the profile of its inner graph, one
        call per step, so the time inside the loop shows per inner node."""
        result = {}
        for node in self.order:
            get = getattr(node.op, "inner_profile", None)
            stats = get(self.linker) if get is not None else None
            if stats is not None:
                result[node] = stats
        return result

    def clear(self) -> None:
        """Forget the calls counted so far (and those of the inner graphs)."""
        self.calls, self.run_time = 0, 0.0
        vm = self.vm
        for node in vm.node_time:
            vm.node_time[node] = 0.0
            vm.node_calls[node] = 0
        vm.events.clear()
        for stats in self.inner().values():
            stats.clear()

    # -- tables ---------------------------------------------------------------------
    def by_node(self) -> list[NodeRow]:
        """One row per Apply node, in execution order."""
        vm = self.vm
        backends = {t.node: getattr(t, "impl", "py") for t in self.function.thunks}
        threads = getattr(vm, "node_threads", {})
        rows = []
        for position, node in enumerate(self.order):
            info = vm.output_info.get(node)
            aliased = getattr(vm, "output_aliased", {}).get(node)
            rows.append(NodeRow(
                position=position,
                node=str(node),
                op=str(node.op),
                op_class=type(node.op).__name__,
                backend=BACKEND_NAMES.get(backends.get(node, "py"), str(backends.get(node))),
                time=vm.node_time.get(node, 0.0),
                calls=vm.node_calls.get(node, 0),
                output_bytes=_output_bytes(node, info, aliased),
                flops=_node_flops(node, info),
                threads=_threads_text(threads.get(node)),
            ))
        return rows

    def _grouped(self, key: Callable[[NodeRow], str]) -> list[GroupRow]:
        groups: dict[str, GroupRow] = {}
        for row in self.by_node():
            group = groups.setdefault(key(row), GroupRow(key(row), 0.0, 0, 0))
            group.time += row.time
            group.calls += row.calls
            group.nodes += 1
            if row.flops is not None:
                group.flops = (group.flops or 0.0) + row.flops * max(row.calls, 1)
        ordered = sorted(groups.values(), key=lambda g: g.time, reverse=True)
        total = sum(g.time for g in ordered) or 1.0
        running = 0.0
        for group in ordered:
            group.fraction = group.time / total
            running += group.fraction
            group.cumulative = running
        return ordered

    def by_op_class(self) -> list[GroupRow]:
        return self._grouped(lambda row: row.op_class)

    def by_op(self) -> list[GroupRow]:
        return self._grouped(lambda row: row.op)

    def memory(self, top: int = 5) -> MemoryReport:
        """Peak bytes of node outputs alive at once, with and without freeing them (an
        output that is a view of an input, or written into one, allocates nothing)."""
        order = self.order
        sizes = {node: row.output_bytes or 0 for node, row in zip(order, self.by_node())}
        last_use: dict[Any, int] = {}
        for i, node in enumerate(order):
            for var in node.inputs:
                last_use[var] = i
        outputs = set(self.function.maker.fgraph.outputs)
        alive = 0
        peak = 0
        frees: dict[int, int] = {}
        for i, node in enumerate(order):
            alive += sizes[node]
            peak = max(peak, alive)
            for k, out in enumerate(node.outputs):
                if out in outputs:
                    continue
                share = _output_share(node, k, self.vm.output_info.get(node),
                                      getattr(self.vm, "output_aliased", {}).get(node))
                at = last_use.get(out, i)
                frees[at] = frees.get(at, 0) + share
            alive -= frees.pop(i, 0)
        largest = sorted(((str(n), s) for n, s in sizes.items()), key=lambda p: -p[1])
        return MemoryReport(peak, sum(sizes.values()), largest[:top])

    # -- summaries ------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        calls = max(self.calls, 1)
        flops = sum((r.flops or 0.0) * r.calls for r in self.by_node())
        thunk = self.thunk_time
        call_time = self.call_time or self.run_time
        return {
            "name": self.name,
            "linker": self.linker,
            "calls": self.calls,
            "total_time": call_time,
            "per_call": call_time / calls,
            "thunk_time": thunk,
            "overhead": max(call_time - thunk, 0.0),
            "nodes": len(self.order),
            "flops": flops,
            "gflops_per_s": (flops / thunk / 1e9) if thunk > 0 and flops else None,
            "compile_time": dict(self.compile_time),
            "linker_report": self.linker_report,
        }

    def to_dict(self) -> dict[str, Any]:
        memory = self.memory()
        return {
            "summary": self.summary(),
            "by_op_class": [asdict(r) for r in self.by_op_class()],
            "by_op": [asdict(r) for r in self.by_op()],
            "by_node": [dict(asdict(r), per_call=r.per_call) for r in self.by_node()],
            "memory": asdict(memory),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def chrome_trace(self) -> dict[str, Any]:
        """Per-node events in the Chrome trace format (open in Perfetto / chrome://tracing)."""
        events = self.vm.events
        origin = events[0][1] if events else 0.0
        position = {node: i for i, node in enumerate(self.order)}
        trace_events = [
            {
                "name": str(node.op), "cat": type(node.op).__name__, "ph": "X",
                "ts": (start - origin) * 1e6, "dur": (end - start) * 1e6,
                "pid": 1, "tid": 1, "args": {"node": str(node), "position": position.get(node)},
            }
            for node, start, end in events
        ]
        return {"traceEvents": trace_events, "displayTimeUnit": "ms",
                "otherData": {"function": self.name, "linker": self.linker}}

    def write_chrome_trace(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(self.chrome_trace(), stream)

    def __str__(self) -> str:
        return format_profile(self)


# -- computing sizes and flops --------------------------------------------------------


def _threads_text(span: tuple[int, int] | None) -> str:
    if span is None:
        return ""
    low, high = span
    return str(low) if low == high else f"{low}-{high}"


def _output_share(node: Apply, k: int, info: Sequence[Any] | None,
                  aliased: Sequence[bool] | None = None) -> int:
    """Bytes output k of `node` allocated: 0 for a view of an input or one in place."""
    if not info or info[k] is None or (aliased and aliased[k]):
        return 0
    try:
        return int(node.outputs[k].type.get_size(info[k]))
    except (MethodNotDefined, TypeError, ValueError):
        return 0


def _output_bytes(node: Apply, info: Sequence[Any] | None,
                  aliased: Sequence[bool] | None = None) -> int | None:
    if not info:
        return None
    return sum(_output_share(node, k, info, aliased) for k in range(len(node.outputs)))


def _node_flops(node: Apply, info: Sequence[Any] | None) -> float | None:
    """`Op.flops` from the shapes seen at run time (inputs' shapes come from their owners)."""
    if not info:
        return None
    try:
        out_shapes = [tuple(s) if s is not None else () for s in info]
        in_shapes = [_known_shape(var) for var in node.inputs]
        if any(s is None for s in in_shapes):
            return None
        return float(node.op.flops(in_shapes, out_shapes))
    except (MethodNotDefined, TypeError, ValueError, AttributeError):
        return None


def _known_shape(var: Any) -> tuple[int, ...] | None:
    static = getattr(var.type, "shape", None)
    if static is not None and all(s is not None for s in static):
        return tuple(static)
    data = getattr(var, "data", None)  # constants
    if data is not None and hasattr(data, "shape"):
        return tuple(data.shape)
    return None


# -- text -----------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:10.3f}"


def _named(prefix: str, name: str, width: int | None) -> list[str]:
    """A table row: its figures (`prefix`), then `name`, which wraps at spaces under
    itself when the row is wider than `width` (None: never), or goes under the figures
    when they leave it too little room."""
    if width is None or len(prefix) + len(name) <= width:
        return [prefix + name]
    if len(prefix) > width - 24:  # too little room beside the figures: under them
        return [prefix.rstrip(), *textwrap.wrap(name, width, initial_indent=" " * 6,
                                                subsequent_indent=" " * 6,
                                                break_on_hyphens=False)]
    return textwrap.wrap(name, width, initial_indent=prefix,
                         subsequent_indent=" " * len(prefix), break_on_hyphens=False)


def _prose(text: str, width: int | None) -> list[str]:
    """A line of text, wrapped to `width` under its own indent (None: as it is)."""
    if width is None or len(text) <= width:
        return [text]
    indent = " " * (len(text) - len(text.lstrip()) + 2)
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False)


def format_profile(stats: ProfileStats, top: int = 15, width: int | None = None) -> str:
    """The profile as text tables: summary, by Op class, by Op, by node, memory. With
    `width` (a terminal's columns), names and long lines wrap to fit it."""
    summary = stats.summary()
    lines = [
        f"Profile of {summary['name']!r} ({summary['linker']} linker)",
        f"  calls: {summary['calls']}   total: {summary['total_time'] * 1e3:.3f} ms   "
        f"per call: {summary['per_call'] * 1e6:.1f} us",
        f"  in thunks: {summary['thunk_time'] * 1e3:.3f} ms   "
        f"overhead: {summary['overhead'] * 1e3:.3f} ms   nodes: {summary['nodes']}",
    ]
    if summary["gflops_per_s"]:
        lines.append(f"  flops: {summary['flops']:.3g}   GFLOP/s: {summary['gflops_per_s']:.2f}")
    for title, rows in (("By Op class", stats.by_op_class()), ("By Op", stats.by_op())):
        lines += ["", f"{title}:", "     time(ms)      %    cum%    calls  nodes  name"]
        for row in rows[:top]:
            lines += _named(f"  {_ms(row.time)} {row.fraction * 100:6.1f} "
                            f"{row.cumulative * 100:7.1f} {row.calls:8d} {row.nodes:6d}  ",
                            row.name, width)
    node_rows = sorted(stats.by_node(), key=lambda r: r.time, reverse=True)
    total = sum(r.time for r in node_rows) or 1.0
    lines += ["", "By Apply node:",
              "     time(ms)      %  per call(us)  calls  backend  threads  node"]
    for row in node_rows[:top]:
        lines += _named(f"  {_ms(row.time)} {row.time / total * 100:6.1f} "
                        f"{row.per_call * 1e6:13.2f} {row.calls:6d}  {row.backend:7s}  "
                        f"{row.threads or '-':>7s}  ", row.node, width)
    if any(row.threads for row in node_rows):
        lines += _prose("  (threads: BLAS threads per call, chosen by size and machine load, "
                        "and a row kernel's (softmax, logsumexp); of work shared on "
                        "workbench's helpers, those that computed a panel or rows)", width)
    lines += _inner_lines(stats, top, width)
    memory = stats.memory()
    lines += ["", "Memory:",
              f"  peak with freeing of intermediates: {memory.peak_with_gc} bytes",
              f"  peak without freeing:               {memory.peak_without_gc} bytes",
              "  (allocated outputs only: views of inputs and in-place results count 0)"]
    for name, size in memory.largest:
        lines += _named(f"  {size:12d} bytes  ", name, width)
    report = stats.linker_report
    if stats.compile_time or report:
        lines += ["", "Compile time:"]
        for phase, seconds in stats.compile_time.items():
            lines.append(f"  {_ms(seconds)} ms  {phase}")
        if report:
            from workbench.core.link.c.linker import fallback_note

            lines += _named(f"  {_ms(report.get('compile_seconds', 0.0))} ms  ",
                            f"C compilation (node kinds: {report.get('compiled', 0)} compiled "
                            f"in {report.get('modules_built', 0)} module(s)"
                            f"{fallback_note(report)}, "
                            f"{report.get('disk_hits', 0)} disk cache hits, "
                            f"{report.get('memory_hits', 0)} memory hits)", width)
            lines += _named(f"  {_ms(report.get('link_seconds', 0.0))} ms  ",
                            f"linking ({report.get('c_nodes', 0)} nodes in C, "
                            f"{report.get('py_nodes', 0)} in Python)", width)
    return "\n".join(lines)


def _inner_lines(stats: ProfileStats, top: int, width: int | None = None) -> list[str]:
    """The time inside each loop, per node of its body (the body runs once per step)."""
    lines: list[str] = []
    for node, inner in stats.inner().items():
        rows = sorted(inner.by_node(), key=lambda r: r.time, reverse=True)
        total = sum(r.time for r in rows) or 1.0
        lines += ["", *_prose(f"Inside {node.op} ({inner.calls} steps, "
                              f"{inner.run_time * 1e3:.3f} ms in its body):", width),
                  "     time(ms)      %  per step(us)  steps  backend  node"]
        for row in rows[:top]:
            lines += _named(f"  {_ms(row.time)} {row.time / total * 100:6.1f} "
                            f"{row.per_call * 1e6:13.2f} {row.calls:6d}  {row.backend:7s}  ",
                            row.node, width)
    return lines


def _linker_report(fn: Any) -> dict[str, Any] | None:
    """The C linker's compile report of `fn` as a dict, None for other linkers."""
    report = getattr(getattr(fn, "linker", None), "report", None)
    as_dict = getattr(report, "as_dict", None)
    return dict(as_dict()) if callable(as_dict) else None


def compare(first: ProfileStats, second: ProfileStats) -> str:
    """Two profiles of the same graph side by side (e.g. `py` against `c`), by Op class."""
    a, b = {r.name: r for r in first.by_op_class()}, {r.name: r for r in second.by_op_class()}
    sa, sb = first.summary(), second.summary()
    names = (f"{sa['linker']} (ms)", f"{sb['linker']} (ms)")
    header = f"{'Op class':24s} {names[0]:>12s} {names[1]:>12s} {'ratio':>8s}"
    lines = [f"{first.name}: {sa['linker']} vs {sb['linker']}", header]
    for name in sorted(set(a) | set(b), key=lambda n: -(a[n].time if n in a else 0.0)):
        ta = a[name].time if name in a else 0.0
        tb = b[name].time if name in b else 0.0
        ratio = f"{ta / tb:8.2f}" if tb > 0 else "       -"
        lines.append(f"{name:24s} {ta * 1e3:12.3f} {tb * 1e3:12.3f} {ratio}")
    lines.append(f"{'per call (us)':24s} {sa['per_call'] * 1e6:12.1f} {sb['per_call'] * 1e6:12.1f}")
    return "\n".join(lines)


def profile(fn: Any, *args: Any, calls: int = 10, warmup: int = 1,
            on_call: Callable[[int], None] | None = None, **kwargs: Any) -> ProfileStats:
    """Profile compiled Function `fn` on `args` over `calls` calls (after `warmup` calls).

    Builds a profiled twin of `fn` (same graph, same linker) so `fn` itself keeps
    its speed; times each whole call from outside as well as every node inside.
    The calls are real: updates to shared variables happen. `on_call(i)` runs
    after measured call i (e.g. to move a progress bar).
    """
    if calls < 1:
        raise ValueError(f"profile needs calls >= 1, got {calls}")
    maker = fn.maker
    was = maker.profile
    maker.profile = True
    try:
        twin = maker.create(trust_input=getattr(fn, "trust_input", False))
    finally:
        maker.profile = was
    stats = measure(twin, *args, calls=calls, warmup=warmup, on_call=on_call, **kwargs)
    # the compile section describes how `fn` was compiled, not how its twin was relinked
    stats.linker_report = _linker_report(fn) or stats.linker_report
    return stats


def measure(fn: Any, *args: Any, calls: int = 10, warmup: int = 1,
            on_call: Callable[[int], None] | None = None, **kwargs: Any) -> ProfileStats:
    """Time `calls` calls of `fn`, a Function compiled with profile=True, after `warmup`.

    The counters are cleared after the warm-up, so only the measured calls count.
    """
    stats: ProfileStats | None = fn.profile
    if stats is None:
        raise ValueError("measure needs a Function compiled with profile=True")
    if calls < 1:
        raise ValueError(f"the number of calls must be >= 1, got {calls}")
    for _ in range(warmup):
        fn(*args, **kwargs)
    stats.clear()
    clock = time.perf_counter
    times = []
    for i in range(calls):
        start = clock()
        fn(*args, **kwargs)
        times.append(clock() - start)
        if on_call is not None:
            on_call(i + 1)
    stats.call_time = sum(times)
    stats.call_times = times
    return stats
