"""ProfilePanel: compile a graph with one or more linkers, run it, and show where time goes.

Choose the linker(s), the input shapes (random data of each input's dtype) and
the number of calls; Run compiles, runs with a progress bar (one tick per call),
then shows the profile tables (summary, by Op class, by Op, by node, memory), a
bar chart of time per Op class, and with two linkers the two side by side plus
`compare`'s table. Everything shown comes from `ProfileStats`.

    panel = ProfilePanel(get_example("mlp"))
    panel.run()               # what the Run button does
    panel.stats["py"].summary()
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np

from workbench.core.compile.mode import available_linkers, default_linker
from workbench.core.compile.profiling import ProfileStats, compare, measure
from workbench.core.graph.basic import Variable
from workbench.core.link.shared import SharedVariable
from workbench.inspector.graph import graph_parts
from workbench.widgets._common import (
    figure_png,
    html_table,
    pre,
    run_with_status,
    status_label,
    styled,
)


class _Source:
    """What ProfilePanel compiles: explicit inputs, outputs, updates, mode, shapes."""

    def __init__(self, obj: Any) -> None:
        self.mode: Any = None
        self.updates: list[tuple[Any, Any]] = []
        self.input_shapes: dict[str, tuple[int, ...]] = {}
        maker = getattr(obj, "maker", None)
        if maker is not None:  # a compiled Function
            self.inputs = [s.variable for s in maker.inputs if not s.implicit]
            self.outputs = [o.variable for o in maker.outputs]
            self.updates = list(maker.updates)
            self.mode = maker.mode
            self.name = obj.name or "function"
        elif hasattr(obj, "input_shapes") and hasattr(obj, "outputs"):  # a GraphSource
            self.inputs, self.outputs = list(obj.inputs), list(obj.outputs)
            self.updates = list(obj.updates or [])
            self.input_shapes = {k: tuple(v) for k, v in obj.input_shapes.items()}
            self.name = obj.name
        else:
            outputs = [obj] if isinstance(obj, Variable) else (
                list(obj) if isinstance(obj, list | tuple) else [])
            if not outputs or not all(isinstance(v, Variable) for v in outputs):
                raise TypeError(
                    "ProfilePanel takes a compiled Function, a GraphSource (e.g. "
                    f"workbench.examples.get_example('mlp')) or Variable(s); got {obj!r}")
            _, inputs, _ = graph_parts(outputs)
            self.inputs = [v for v in inputs if not isinstance(v, SharedVariable)]
            self.outputs = outputs
            self.name = ", ".join(str(v) for v in outputs)
        for i, var in enumerate(self.inputs):
            if var.name is None:
                var.name = f"input{i}"  # a Text box needs a label

    def default_shape(self, var: Variable) -> str:
        shape = self.input_shapes.get(var.name)
        if shape is None:
            static = getattr(var.type, "shape", None)
            if static is None or any(s is None for s in static):
                return ""
            shape = tuple(static)
        return ",".join(str(s) for s in shape)

    def compile(self, linker: str, profile: bool = True) -> Any:
        import workbench as wb

        return wb.function(self.inputs, self.outputs, updates=self.updates or None,
                           mode=self.mode, linker=linker, on_unused_input="ignore",
                           profile=profile)


def parse_shape(text: str, var: Variable) -> tuple[int, ...]:
    """`"1000,100"` -> (1000, 100), checked against `var`'s number of dimensions and
    static shape; ValueError naming the input otherwise."""
    text = text.strip().strip("()[]")
    try:
        shape = tuple(int(part) for part in text.split(",") if part.strip()) if text else ()
    except ValueError:
        raise ValueError(f"input {var.name!r}: shape {text!r} is not a list of integers "
                         "like 1000,100") from None
    static = getattr(var.type, "shape", None)
    if static is not None:
        if len(shape) != len(static):
            raise ValueError(f"input {var.name!r} has {len(static)} dimensions "
                             f"({var.type}); got shape {shape}")
        for got, want in zip(shape, static):
            if want is not None and got != want:
                raise ValueError(f"input {var.name!r} has static shape {static}; got {shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"input {var.name!r}: negative size in {shape}")
    return shape


def profile_with_progress(fn: Any, values: Sequence[Any], calls: int,
                          on_call: Callable[[int], None] | None = None) -> ProfileStats:
    """Profile `fn` (compiled with profile=True) over `calls` calls after one warm-up,
    calling `on_call(i)` after call i (the panel's progress bar)."""
    if fn.profile is None:
        raise ValueError("profile_with_progress needs a Function compiled with profile=True")
    return measure(fn, *values, calls=calls, warmup=1, on_call=on_call)


class ProfilePanel(widgets.VBox):
    """Linker choice, input shapes, number of calls, Run with progress, tables and chart.

    `function_or_graph`: a compiled Function, a GraphSource or Variable(s).
    `linkers`: preselected linker names (default: the fastest available).
    `input_shapes`: name -> shape overriding the prefilled shapes.
    """

    def __init__(self, function_or_graph: Any, linkers: Sequence[str] | None = None,
                 calls: int = 10, input_shapes: Mapping[str, Sequence[int]] | None = None
                 ) -> None:
        self.source = _Source(function_or_graph)
        for name, shape in (input_shapes or {}).items():
            self.source.input_shapes[name] = tuple(shape)
        self.stats: dict[str, ProfileStats] = {}
        self._compiled: dict[str, Any] = {}
        known = available_linkers()
        chosen = list(linkers) if linkers else [default_linker()]
        unknown = [name for name in chosen if name not in known]
        if unknown:
            raise ValueError(f"linker(s) {unknown} unavailable here; available: {known}")

        self.linker_select = styled(widgets.SelectMultiple(
            options=known, value=tuple(chosen), description="linkers", rows=min(3, len(known)),
            layout=widgets.Layout(width="220px")), "wb-linkers")
        self.shape_texts: dict[str, widgets.Text] = {}
        for var in self.source.inputs:
            text = styled(widgets.Text(
                value=self.source.default_shape(var), description=var.name,
                placeholder="e.g. 1000,100",
                tooltip=f"{var.type}: comma-separated sizes"), "wb-shape")
            self.shape_texts[var.name] = text
        self.calls_text = styled(widgets.IntText(value=calls, description="calls",
                                                 layout=widgets.Layout(width="160px")),
                                 "wb-calls")
        self.run_button = styled(widgets.Button(description="Run", button_style="primary",
                                                icon="play"), "wb-run")
        self.progress = styled(widgets.IntProgress(value=0, min=0, max=1, description="progress"),
                               "wb-progress")
        self.status = status_label("ready")
        self.tables = styled(widgets.HTML(), "wb-profile-tables")
        self.chart = styled(widgets.Image(format="png", layout=widgets.Layout(
            max_width="720px", display="none")), "wb-profile-chart")
        self.run_button.on_click(lambda _: self.run())
        shapes = widgets.VBox(list(self.shape_texts.values()),
                              layout=widgets.Layout(margin="0 12px"))
        controls = widgets.HBox([self.linker_select, shapes,
                                 widgets.VBox([self.calls_text, self.run_button])])
        title = widgets.HTML(f"<b>Profile {html.escape(self.source.name)}</b>")
        super().__init__([title, controls, widgets.HBox([self.progress, self.status]),
                          self.tables, self.chart])
        self.add_class("wb-profile-panel")

    # -- running ------------------------------------------------------------------------
    def run(self) -> dict[str, ProfileStats] | None:
        """Compile with the selected linker(s), profile, show the results (the Run button)."""
        self.run_button.disabled = True
        try:
            return run_with_status(self.status, self._run, on_error=self._show_error)
        finally:
            self.run_button.disabled = False

    def input_values(self) -> list[Any]:
        """Random inputs of the shapes in the text boxes (seeded: the same each run)."""
        from workbench.testing.catalog import random_array

        rng = np.random.default_rng(0)
        values = []
        for var in self.source.inputs:
            shape = parse_shape(self.shape_texts[var.name].value, var)
            values.append(random_array(rng, shape, str(var.type.dtype), low=0.05, high=1.0))
        return values

    def _run(self) -> dict[str, ProfileStats]:
        linkers = list(self.linker_select.value)
        if not linkers:
            raise ValueError("select at least one linker")
        calls = int(self.calls_text.value)
        if calls < 1:
            raise ValueError(f"the number of calls must be >= 1, got {calls}")
        values = self.input_values()
        self.progress.max = calls * len(linkers)
        self.progress.value = 0
        stats: dict[str, ProfileStats] = {}
        for k, linker in enumerate(linkers):
            self.status.value = f"compiling ({linker})…"
            if linker not in self._compiled:
                self._compiled[linker] = self.source.compile(linker)
            self.status.value = f"running ({linker})…"
            offset = k * calls

            def tick(i: int, offset: int = offset) -> None:
                self.progress.value = offset + i

            stats[linker] = profile_with_progress(self._compiled[linker], values, calls, tick)
        self.stats = stats
        self.tables.value = self._tables_html(stats)
        self.chart.value = figure_png(self._chart(stats))
        self.chart.layout.display = None
        return stats

    def _show_error(self, exc: BaseException) -> None:
        self.tables.value = f'<pre class="wb-error">{html.escape(str(exc))}</pre>'

    # -- showing ------------------------------------------------------------------------
    def _tables_html(self, stats: Mapping[str, ProfileStats]) -> str:
        columns = []
        for linker, st in stats.items():
            s = st.summary()
            parts = [f"<h4 style='margin:4px 0'>linker {html.escape(linker)}</h4>",
                     html_table(["", ""], [
                         ("calls", s["calls"]),
                         ("per call (us)", s["per_call"] * 1e6),
                         ("in thunks (ms)", s["thunk_time"] * 1e3),
                         ("overhead (ms)", s["overhead"] * 1e3),
                         ("nodes", s["nodes"]),
                     ], caption="Summary"),
                     html_table(["Op class", "time (ms)", "%", "calls", "nodes"],
                                [(r.name, r.time * 1e3, f"{r.fraction * 100:.1f}", r.calls,
                                  r.nodes) for r in st.by_op_class()],
                                css="wb-table wb-by-op-class", caption="By Op class"),
                     html_table(["Op", "time (ms)", "%", "calls", "nodes"],
                                [(r.name, r.time * 1e3, f"{r.fraction * 100:.1f}", r.calls,
                                  r.nodes) for r in st.by_op()[:15]],
                                css="wb-table wb-by-op", caption="By Op"),
                     html_table(["node", "backend", "per call (us)", "calls"],
                                [(r.node[:60], r.backend, r.per_call * 1e6, r.calls)
                                 for r in sorted(st.by_node(), key=lambda r: -r.time)[:15]],
                                css="wb-table wb-by-node", caption="By Apply node (top 15)")]
            for node, inner in st.inner().items():  # a loop: the time per body node
                parts.append(html_table(
                    ["body node", "backend", "per step (us)", "steps", "time (ms)"],
                    [(r.node[:60], r.backend, r.per_call * 1e6, r.calls, r.time * 1e3)
                     for r in sorted(inner.by_node(), key=lambda r: -r.time)[:15]],
                    css="wb-table wb-inside-loop", caption=f"Inside {node.op}"))
            memory = st.memory()
            parts.append(html_table(["", "bytes"], [
                ("peak, freeing intermediates", memory.peak_with_gc),
                ("peak, keeping everything", memory.peak_without_gc)], caption="Memory"))
            columns.append(f'<div class="wb-profile-column" data-linker="{html.escape(linker)}" '
                           f'style="margin-right:24px">{"".join(parts)}</div>')
        body = f'<div style="display:flex;flex-wrap:wrap">{"".join(columns)}</div>'
        if len(stats) >= 2:
            first, second = list(stats.values())[:2]
            body += "<h4 style='margin:4px 0'>side by side</h4>" + pre(
                compare(first, second), "wb-compare")
        return body

    def _chart(self, stats: Mapping[str, ProfileStats]) -> Any:
        """Horizontal bars: ms per call of each Op class, one bar per linker."""
        from matplotlib.figure import Figure

        per_linker = {name: {r.name: r.time * 1e3 / max(st.calls, 1) for r in st.by_op_class()}
                      for name, st in stats.items()}
        classes = sorted({c for rows in per_linker.values() for c in rows},
                         key=lambda c: max(rows.get(c, 0.0) for rows in per_linker.values()))
        fig = Figure(figsize=(6.5, max(2.0, 0.35 * len(classes) * len(stats) + 1.0)))
        ax = fig.add_subplot()
        height = 0.8 / max(len(stats), 1)
        positions = np.arange(len(classes))
        for k, (name, rows) in enumerate(per_linker.items()):
            ax.barh(positions + k * height, [rows.get(c, 0.0) for c in classes], height=height,
                    label=name)
        ax.set_yticks(positions + height * (len(stats) - 1) / 2, classes)
        ax.set_xlabel("ms per call")
        ax.set_title("time per Op class")
        ax.legend(title="linker", fontsize=8)
        fig.tight_layout()
        return fig
