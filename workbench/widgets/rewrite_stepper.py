"""RewriteStepper: walk through the RewriteTrace of a graph one rewrite step at a time.

The widget *is* an ipywidgets container (a `VBox`, like GraphView): display it
directly. It rewrites the graph with `rewrite_graph(..., mode, trace=True)` and
only reads what the trace recorded:

- the list of steps (rewrite name, tags, pass, nodes -/+) in a `Select`, with
  first / previous / next / last buttons and a slider (a `StepNavigator`);
- for the current step, the graph before (removed nodes outlined red) and after
  (introduced nodes outlined green), drawn by the inspector's `diff`;
- the `pprint` before and after of each input the step rewired (the journal
  entries of the step, read in the trace's `graph_at(k - 1)` and `graph_at(k)`);
- the number of Apply nodes over the steps as a small matplotlib plot;
- filters (one pass, one rewrite name), a checkbox per rewrite name to exclude
  it and re-run, and a button checking the current step numerically with the
  DEBUG mode's `StepChecker` (the graph before vs after on random inputs).

    stepper = RewriteStepper(wt.log(1 + x) * 2)
    stepper.next()                       # or stepper.next_button.click()
    stepper.current.rewrite              # 'local_log1p'
    stepper.exclude(["local_log1p"])     # tick the box and re-run
    stepper.check_step()                 # before vs after on random inputs

Every interactive part has a `wb-…` CSS class, and `wb-status` reads "done"
after each callback (browser tests wait on it).
"""

from __future__ import annotations

import html
import re
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import ipywidgets as widgets
import networkx as nx
import numpy as np

from workbench.core.graph.basic import Variable
from workbench.core.graph.fg import OUTPUT, FunctionGraph
from workbench.core.printing import pprint
from workbench.core.rewrite import RewriteStep, RewriteTrace, rewrite_graph
from workbench.inspector import GraphDiff, diff, to_networkx, to_svg
from workbench.widgets._common import (
    figure_png,
    graph_title,
    html_table,
    pre,
    run_with_status,
    status_label,
    styled,
)
from workbench.widgets.inner_graphs import ExpandsInnerGraphs, holds_inner_graph

__all__ = ["RewriteStepper", "StepNavigator", "svg_for_widget"]

ALL = "(all)"
_SVG_SIZE = re.compile(r'<svg([^>]*?) width="[^"]*" height="[^"]*"')
_VIEW_BOX = re.compile(r'viewBox="(-?[0-9.]+) (-?[0-9.]+) ([0-9.]+) ([0-9.]+)"')
_FOCUS = re.compile(r'data-focus="(-?[0-9.]+) (-?[0-9.]+) ([0-9.]+) ([0-9.]+)"')
_REGION = re.compile(r'<rect class="changed-region" x="(-?[0-9.]+)" y="(-?[0-9.]+)" '
                     r'width="([0-9.]+)" height="([0-9.]+)"')


#: the most of a drawing a stepper side (half of a 1280 px screen, 540 px tall) shows
#: with its 12 px text at least 11 px tall
READABLE_VIEW = (660.0, 580.0)
#: the scale of a drawing too big for READABLE_VIEW, shown from its focus's top left in
#: a scrolling holder: its 12 px text drawn 11 px tall, as small as stays readable
SCROLLED_SCALE = 11 / 12


def svg_for_widget(svg: str, css: str = "wb-svg-holder", max_scale: float = 1.25,
                   context: tuple[float, float] = (600.0, 500.0),
                   max_view: tuple[float, float] | None = None) -> str:
    """An inspector SVG document fitted into an HTML widget's box (no XML header).

    Without a focus region the whole graph is fitted. With one (the `data-focus`
    or the `changed-region` frame `to_svg` draws), the view is centred on it and
    shows at least `context` pixels of the drawing around it, so the change is in
    sight, readable and framed at once; with `max_view`, at most that much (a
    region larger than it is shown from its top left, as `GraphCanvas` fits an
    opened loop, at SCROLLED_SCALE with the rest a scroll away in the holder).
    A small view is enlarged at most `max_scale` times.
    """
    svg = svg.split("?>", 1)[1] if svg.startswith("<?xml") else svg
    box = _VIEW_BOX.search(svg)
    region = _FOCUS.search(svg) or _REGION.search(svg)
    natural = False  # a region too big for max_view: drawn at scale 1, the holder scrolls
    if box and region:
        x, y, w, h = (float(v) for v in region.groups())
        bx, by, bw, bh = (float(v) for v in box.groups())
        most = max_view or (float("inf"), float("inf"))
        (x0, view_w), (y0, view_h) = (_window(x, w, context[0], most[0]),
                                      _window(y, h, context[1], most[1]))
        if view_w < w + 40.0 or view_h < h + 40.0:
            # from the region's top left to the drawing's far edges, at SCROLLED_SCALE:
            # the rest of the body is a scroll away instead of cut off
            natural = True
            view_w, view_h = bx + bw - x0, by + bh - y0
        svg = _VIEW_BOX.sub(f'viewBox="{x0:.1f} {y0:.1f} {view_w:.1f} {view_h:.1f}"', svg,
                            count=1)
        box = _VIEW_BOX.search(svg)
    if natural and box:
        size = (f'width="{float(box.group(3)) * SCROLLED_SCALE:.0f}" '
                f'height="{float(box.group(4)) * SCROLLED_SCALE:.0f}"')
        svg = _SVG_SIZE.sub(f'<svg\\1 {size} preserveAspectRatio="xMinYMin meet"', svg,
                            count=1)
        return f'<div class="{css}" style="text-align:left">{svg}</div>'
    limit = (f'max-width:{float(box.group(3)) * max_scale:.0f}px;'
             f'max-height:{float(box.group(4)) * max_scale:.0f}px' if box else "")
    align = "xMidYMid" if region else "xMinYMin"
    svg = _SVG_SIZE.sub(f'<svg\\1 width="100%" height="100%" style="{limit}" '
                        f'preserveAspectRatio="{align} meet"', svg, count=1)
    return f'<div class="{css}" style="height:100%;text-align:center">{svg}</div>'


def _window(start: float, size: float, least: float, most: float) -> tuple[float, float]:
    """(start, length) of a view along one axis: centred on [start, start + size] with a
    margin of 20 and at least `least` long; at most `most`, from the region's start."""
    length = max(size + 40.0, least)
    if length > most:
        return start - 20.0, most
    return start + size / 2 - length / 2, length


class StepNavigator(widgets.HBox):
    """First / previous / next / last buttons, a slider and a "k of n" label.

    `on_move(position)` is called whenever the position changes (a button, the
    slider, or `go`). Buttons move the slider; the slider alone calls back, so
    each move renders once.
    """

    def __init__(self, on_move: Callable[[int], None], minimum: int = 1,
                 maximum: int = 1, noun: str = "step") -> None:
        def button(icon: str, tip: str, css: str) -> widgets.Button:
            return styled(widgets.Button(description="", icon=icon, tooltip=tip,
                                         layout=widgets.Layout(width="44px")), css)

        self.first_button = button("fast-backward", "first", "wb-first")
        self.prev_button = button("step-backward", "previous", "wb-prev")
        self.next_button = button("step-forward", "next", "wb-next")
        self.last_button = button("fast-forward", "last", "wb-last")
        self.slider = styled(widgets.IntSlider(
            value=minimum, min=minimum, max=max(minimum, maximum), description=noun,
            continuous_update=False, layout=widgets.Layout(width="360px")), "wb-step-slider")
        self.label = styled(widgets.HTML(), "wb-step-label")
        self._on_move = on_move
        self.first_button.on_click(lambda _: self.go(self.slider.min))
        self.prev_button.on_click(lambda _: self.go(self.slider.value - 1))
        self.next_button.on_click(lambda _: self.go(self.slider.value + 1))
        self.last_button.on_click(lambda _: self.go(self.slider.max))
        self.slider.observe(self._moved, names="value")
        super().__init__([self.first_button, self.prev_button, self.next_button,
                          self.last_button, self.slider, self.label])
        self.add_class("wb-step-nav")
        self._update_buttons()

    @property
    def value(self) -> int:
        return int(self.slider.value)

    def go(self, position: int) -> None:
        """Move to `position`, clamped to the slider's range."""
        self.slider.value = min(max(int(position), self.slider.min), self.slider.max)

    def set_range(self, minimum: int, maximum: int, value: int | None = None) -> None:
        """New bounds; moves to `value` (default: `minimum`) and always calls back once."""
        target = minimum if value is None else value
        self.slider.unobserve(self._moved, names="value")
        try:
            # widen first so that min <= max holds at each assignment
            self.slider.min = min(self.slider.min, minimum)
            self.slider.max = max(minimum, maximum)
            self.slider.min = minimum
            self.slider.value = min(max(target, minimum), max(minimum, maximum))
        finally:
            self.slider.observe(self._moved, names="value")
        self.slider.disabled = maximum <= minimum
        self._update_buttons()
        self._on_move(self.value)

    def _moved(self, change: dict[str, Any]) -> None:
        self._update_buttons()
        self._on_move(int(change["new"]))

    def _update_buttons(self) -> None:
        at_start = self.slider.value <= self.slider.min
        at_end = self.slider.value >= self.slider.max
        self.first_button.disabled = self.prev_button.disabled = at_start
        self.next_button.disabled = self.last_button.disabled = at_end


# -- what the stepper rewrites ------------------------------------------------------------


def _source_graph(obj: Any) -> tuple[list[Variable], list[Variable] | None, str]:
    """(outputs, inputs or None, title) of what the stepper accepts (None: the inputs the
    outputs depend on, shared variables included)."""
    maker = getattr(obj, "maker", None)
    if maker is not None:  # a compiled Function: its symbolic graph, rewritten again
        outputs = [o.variable for o in maker.outputs]
        updates = [expr for _, expr in getattr(maker, "updates", None) or []]
        return outputs + updates, None, graph_title(outputs, obj.name or "function")
    if hasattr(obj, "input_shapes") and isinstance(getattr(obj, "outputs", None), list):
        outputs = list(obj.outputs)
        updates = [expr for _, expr in getattr(obj, "updates", None) or []]
        return outputs + updates, None, graph_title(outputs, str(obj.name))
    if isinstance(obj, FunctionGraph):
        return list(obj.outputs), list(obj.inputs), graph_title(obj.outputs, "graph")
    if isinstance(obj, Variable):
        return [obj], None, graph_title([obj])
    if isinstance(obj, list | tuple) and obj and all(isinstance(v, Variable) for v in obj):
        return list(obj), None, graph_title(obj, f"{len(obj)} outputs")
    raise TypeError("RewriteStepper takes a Variable, a list of Variables, a FunctionGraph, a "
                    "compiled Function or a GraphSource (workbench.examples.get_example); got "
                    f"{type(obj).__name__} {obj!r}")


def _short(text: str, limit: int = 400) -> str:
    lines = text.splitlines() or [""]
    return "\n".join(line if len(line) <= limit else line[: limit - 1] + "…" for line in lines)


class RewriteStepper(ExpandsInnerGraphs, widgets.VBox):
    """The steps of a rewrite, browsable: list, navigation, diff drawing, pprint, plot.

    `graph_or_function`: Variable(s), a FunctionGraph (not modified), a compiled
    Function or a GraphSource; it is rewritten as `mode` would ("FAST_RUN",
    "FAST_COMPILE", a Mode, ...). `height`: pixel height of each drawing.
    """

    def __init__(self, graph_or_function: Any, mode: Any = "FAST_RUN", *,
                 height: int = 540) -> None:
        self.outputs, self.inputs, name = _source_graph(graph_or_function)
        #: input name -> shape for the numeric check (a GraphSource gives them)
        self.input_shapes: dict[str, tuple[int, ...]] = {
            k: tuple(v) for k, v in (getattr(graph_or_function, "input_shapes", None)
                                     or {}).items()}
        self.mode = mode
        self.excluded: list[str] = []
        self.trace: RewriteTrace = RewriteTrace()
        self.fgraph: FunctionGraph | None = None
        self.steps: list[RewriteStep] = []  # the steps the filters let through
        self.position = 0  # 1-based position in `steps` (0: no step shown)
        self.diff: GraphDiff | None = None
        self.check_result: str | None = None
        self._known_names: list[str] = []
        self._plots: dict[tuple[Any, ...], bytes] = {}
        self.nx_graph = nx.DiGraph()  # the "before" drawing: where `expand` finds nodes
        self._init_inner_graphs()  # expanded, expand(), collapse(), expand_button

        self.title = styled(widgets.HTML(), "wb-stepper-title")
        self.status = status_label("working…")
        self.pass_filter = styled(widgets.Dropdown(description="pass", options=[ALL],
                                                   layout=widgets.Layout(width="240px")),
                                  "wb-pass-filter")
        self.rewrite_filter = styled(widgets.Dropdown(description="rewrite", options=[ALL],
                                                      layout=widgets.Layout(width="320px")),
                                     "wb-rewrite-filter")
        self.step_list = styled(widgets.Select(options=[], rows=8, layout=widgets.Layout(
            width="96%")), "wb-step-list")
        self.nav = StepNavigator(self._show, noun="step")
        self.first_button, self.prev_button = self.nav.first_button, self.nav.prev_button
        self.next_button, self.last_button = self.nav.next_button, self.nav.last_button
        self.slider = self.nav.slider
        self.step_info = styled(widgets.HTML(), "wb-step-info")
        def drawing(css: str) -> widgets.HTML:
            return styled(widgets.HTML(layout=widgets.Layout(
                height=f"{height}px", overflow="auto", border="1px solid #ccc", width="50%")),
                css)

        self.before_svg, self.after_svg = drawing("wb-before-svg"), drawing("wb-after-svg")
        self.region = styled(widgets.HTML(), "wb-region")
        self.count_plot = styled(widgets.Image(format="png", layout=widgets.Layout(
            max_width="520px")), "wb-node-count-plot")
        self.exclude_boxes: dict[str, widgets.Checkbox] = {}
        self.exclude_area = styled(widgets.HBox(layout=widgets.Layout(flex_flow="row wrap")),
                                   "wb-exclude-area")
        self.rerun_button = styled(widgets.Button(description="re-run without the ticked",
                                                  icon="refresh",
                                                  layout=widgets.Layout(width="230px")),
                                   "wb-rerun")
        self.check_button = styled(widgets.Button(description="check this step numerically",
                                                  icon="check",
                                                  layout=widgets.Layout(width="250px")),
                                   "wb-check-step")
        self.check_output = styled(widgets.HTML(), "wb-check-result")

        self.pass_filter.observe(self._on_filter, names="value")
        self.rewrite_filter.observe(self._on_filter, names="value")
        self.step_list.observe(self._on_list, names="value")
        self.rerun_button.on_click(lambda _: self.rerun())
        self.check_button.on_click(lambda _: self.check_step())

        self.headline = styled(widgets.HTML(), "wb-step-headline")
        legend = widgets.HTML(
            "<small>left: before the step, what it <b style='background:#ef9a9a;"
            "padding:0 3px'>removed</b>; right: after, what it <b style='background:#81c784;"
            "padding:0 3px'>introduced</b>; the dashed frame is the changed region, hover "
            "a node for its full text</small>")
        # what a class looks at first (the two drawings) sits right under the buttons,
        # so it is on screen at 1280x800 without scrolling; details follow
        super().__init__([
            self.title,
            widgets.HBox([self.nav, self.expand_button, self.status]),
            self.headline, legend,
            widgets.HBox([self.before_svg, self.after_svg]),
            self.region, self.step_info,
            widgets.HBox([self.pass_filter, self.rewrite_filter]),
            self.step_list,
            widgets.HBox([self.count_plot,
                          widgets.VBox([widgets.HTML("<b>exclude rewrites, then re-run</b>"),
                                        self.exclude_area, self.rerun_button,
                                        self.check_button, self.check_output])]),
        ])
        self.add_class("wb-rewrite-stepper")
        self._name = name
        self._run()  # errors propagate: a stepper that cannot rewrite is not built
        self.status.value = "done"

    # -- public API ---------------------------------------------------------------------
    @property
    def current(self) -> RewriteStep | None:
        """The step shown (None when the filters leave no step)."""
        return self.steps[self.position - 1] if self.steps and self.position else None

    def go(self, position: int) -> None:
        """Show the `position`-th step of the filtered list (1-based, clamped)."""
        self.nav.go(position)

    def go_to_step(self, index: int) -> None:
        """Show trace step `index` (its `RewriteStep.index`); it must pass the filters."""
        for pos, step in enumerate(self.steps, start=1):
            if step.index == index:
                self.nav.go(pos)
                return
        raise KeyError(f"step {index} is not among the steps shown "
                       f"({', '.join(str(s.index) for s in self.steps) or 'none'})")

    def first(self) -> None:
        """Show the first step that passes the filters (the First button)."""
        self.nav.go(1)

    def previous(self) -> None:
        """Show the step before (the Previous button)."""
        self.nav.go(self.position - 1)

    def next(self) -> None:
        """Show the step after (the Next button)."""
        self.nav.go(self.position + 1)

    def last(self) -> None:
        """Show the last step that passes the filters (the Last button)."""
        self.nav.go(len(self.steps))

    def set_filter(self, pass_: str | None = None, rewrite: str | None = None) -> None:
        """Show only the steps of one pass and/or one rewrite name (None: all)."""
        for value, dropdown in ((pass_, self.pass_filter), (rewrite, self.rewrite_filter)):
            wanted = ALL if value is None else value
            if wanted not in dropdown.options:
                raise ValueError(f"{dropdown.description} {value!r} has no steps here; "
                                 f"choose from {[o for o in dropdown.options if o != ALL]}")
        current = self.current
        for value, dropdown in ((pass_, self.pass_filter), (rewrite, self.rewrite_filter)):
            dropdown.unobserve(self._on_filter, names="value")
            dropdown.value = ALL if value is None else value
            dropdown.observe(self._on_filter, names="value")
        run_with_status(self.status, lambda: self._apply_filters(
            current.index if current is not None else None), on_error=self._show_error)

    def exclude(self, names: str | Iterable[str], rerun: bool = True) -> None:
        """Tick the exclude boxes of these rewrite names (and re-run the rewrite)."""
        names = [names] if isinstance(names, str) else list(names)
        unknown = [n for n in names if n not in self.exclude_boxes]
        if unknown:
            raise ValueError(f"no rewrite named {unknown} ran on this graph; "
                             f"known: {sorted(self.exclude_boxes)}")
        for name in names:
            self.exclude_boxes[name].value = True
        if rerun:
            self.rerun()

    def rerun(self) -> RewriteTrace | None:
        """Rewrite again without the rewrites whose exclude box is ticked."""
        self.excluded = [name for name, box in self.exclude_boxes.items() if box.value]
        self.rerun_button.disabled = True
        try:
            run_with_status(self.status, self._run, on_error=self._show_error)
        finally:
            self.rerun_button.disabled = False
        return self.trace

    def region_texts(self) -> list[tuple[str, str]]:
        """(before, after) `pprint` of each input the current step rewired."""
        step = self.current
        if step is None:
            return []
        slots: dict[tuple[Any, int], None] = {}
        for node, i, _, _ in self.trace.journal[step.journal_start:step.journal_end]:
            key = OUTPUT if node == OUTPUT else self.trace.node_id(node)
            slots.setdefault((key, i), None)

        def texts(k: int) -> list[str]:
            view = self.trace.view_at(k)  # read at once: the live view is cheapest
            out = []
            for key, i in slots:
                var = view.outputs[i] if key == OUTPUT else self.trace.node(key).inputs[i]
                out.append(_short(pprint(var)))
            return out

        before, after = texts(step.index - 1), texts(step.index)
        pairs = list(dict.fromkeys(zip(before, after)))  # one row per distinct change
        return pairs

    def check_step(self) -> bool | None:
        """Evaluate the graph before and after the current step on the same random inputs
        (the DEBUG mode's StepChecker); show and return whether they agree."""
        result: list[bool] = []

        def work() -> None:
            result.append(self._check())

        run_with_status(self.status, work, on_error=self._show_check_error)
        return result[0] if result else None

    # -- running the rewrite ------------------------------------------------------------
    def _run(self) -> None:
        fgraph, trace = rewrite_graph(self.outputs, mode=self.mode, exclude=self.excluded,
                                      trace=True, inputs=self.inputs)
        self.fgraph, self.trace = fgraph, trace
        self._plots.clear()
        for step in trace.steps:
            if step.rewrite not in self._known_names:
                self._known_names.append(step.rewrite)
        self._sync_exclude_boxes()
        passes = list(dict.fromkeys(s.pass_ for s in trace.steps if s.pass_))
        names = list(dict.fromkeys(s.rewrite for s in trace.steps))
        with self.hold_sync():
            for dropdown, options in ((self.pass_filter, passes),
                                      (self.rewrite_filter, names)):
                dropdown.unobserve(self._on_filter, names="value")
                keep = dropdown.value if dropdown.value in options else ALL
                dropdown.options = [ALL, *options]
                dropdown.value = keep
                dropdown.observe(self._on_filter, names="value")
        first = trace.steps[0].nodes_before if trace.steps else len(fgraph.apply_nodes)
        excluded = (f"; excluded: {', '.join(self.excluded)}" if self.excluded else "")
        self.title.value = (
            f"<b class='wb-graph-name'>Rewriting {html.escape(self._name)}</b> with mode "
            f"<code>{html.escape(str(self.mode))}</code>: <span class='wb-step-count' "
            f"data-steps='{len(trace.steps)}'>{len(trace.steps)} steps</span>, "
            f"{first} → {len(fgraph.apply_nodes)} Apply nodes{html.escape(excluded)}")
        # a rewrite only reached through a registered pass keeps running when excluded
        stuck = [n for n in self.excluded if any(s.rewrite == n for s in trace.steps)]
        if stuck:
            self.title.value += (
                f"<div class='wb-warning' style='color:#b45309'>could not exclude "
                f"{html.escape(', '.join(stuck))}: not a name in the rewrite database "
                "(exclude the pass or tag that runs it, e.g. with Mode.excluding)</div>")
        self.check_output.value = ""
        self._apply_filters()

    def _sync_exclude_boxes(self) -> None:
        for name in self._known_names:
            if name not in self.exclude_boxes:
                box = styled(widgets.Checkbox(value=name in self.excluded, description=name,
                                              indent=False,
                                              layout=widgets.Layout(width="auto")),
                             "wb-exclude", f"wb-exclude-{_css_name(name)}")
                self.exclude_boxes[name] = box
        self.exclude_area.children = tuple(self.exclude_boxes[n] for n in self._known_names)

    def _apply_filters(self, keep_index: int | None = None) -> None:
        pass_ = None if self.pass_filter.value == ALL else self.pass_filter.value
        name = None if self.rewrite_filter.value == ALL else self.rewrite_filter.value
        self.steps = list(self.trace.filter(pass_=pass_, rewrite=name))
        options = [(_step_text(s), s.index) for s in self.steps]
        self.step_list.unobserve(self._on_list, names="value")
        self.step_list.options = options
        self.step_list.observe(self._on_list, names="value")
        position = 1
        if keep_index is not None:
            position = next((p for p, s in enumerate(self.steps, 1) if s.index == keep_index), 1)
        self.nav.set_range(1, max(1, len(self.steps)), position)

    # -- callbacks ----------------------------------------------------------------------
    def _on_filter(self, change: dict[str, Any]) -> None:
        current = self.current
        run_with_status(self.status, lambda: self._apply_filters(
            current.index if current is not None else None), on_error=self._show_error)

    def _on_list(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self.go_to_step(int(change["new"]))

    def _show(self, position: int) -> None:
        if self.status.value == "working…":  # inside another callback: it reports errors
            self._render(position)
            return
        run_with_status(self.status, lambda: self._render(position), on_error=self._show_error)

    def _expanded_changed(self) -> None:
        self._show(self.position)

    def _show_error(self, exc: BaseException) -> None:
        self.step_info.value = f'<pre class="wb-error">{html.escape(str(exc))}</pre>'

    def _show_check_error(self, exc: BaseException) -> None:
        self.check_result = f"error: {exc}"
        self.check_output.value = (f'<div class="wb-check-body" data-ok="error">'
                                   f'<pre class="wb-error">{html.escape(str(exc))}</pre></div>')

    # -- rendering ----------------------------------------------------------------------
    def _render(self, position: int) -> None:
        self.check_output.value = ""
        self.check_result = None
        if not self.steps:
            self.position = 0
            self.diff = None
            self.nav.label.value = ("<span class='wb-step-current' data-step='0'>"
                                    "no step matches the filters</span>")
            self.step_info.value = "<i>no rewrite step to show (see the filters)</i>"
            graph = self.trace.view_at(len(self.trace)) if self.trace.steps else self.fgraph
            self.nx_graph = to_networkx(graph, expand=self.expanded)
            self.before_svg.value = svg_for_widget(to_svg(self.nx_graph))
            self.after_svg.value = ""
            self.headline.value = ""
            self.region.value = ""
            self.count_plot.value = self._count_png(None)
            self.check_button.disabled = True
            self._point_expand_button_at_drawing()
            return
        self.check_button.disabled = False
        self.position = position
        step = self.steps[position - 1]
        # copied out of the live view before it moves on
        before = to_networkx(self.trace.view_at(step.index - 1), expand=self.expanded)
        # a step that rewrote an opened loop made a new node: open the one at its [id] too
        letters = {d["label"] for _, d in before.nodes(data=True)
                   if holds_inner_graph(d["obj"]) and d["obj"] in self.expanded}
        after = to_networkx(self.trace.view_at(step.index), expand=self.expanded | letters)
        self.nx_graph = before
        self._point_expand_button_at_drawing()
        self.diff = d = diff(before, after)
        self.nav.label.value = (f"<span class='wb-step-current' data-step='{step.index}' "
                                f"data-rewrite='{html.escape(step.rewrite)}'>step {step.index}"
                                f" ({position} of {len(self.steps)} shown)</span>")
        self.step_list.unobserve(self._on_list, names="value")
        try:
            self.step_list.value = step.index
        finally:
            self.step_list.observe(self._on_list, names="value")
        self.step_info.value = self._info_html(step, d)
        self.headline.value = (
            f"<div style='font-size:14px'><b>step {step.index}: "
            f"{html.escape(step.rewrite)}</b> [{html.escape(step.pass_ or '-')}] · "
            f"{_change_text(step)}</div>")
        # both sides centred on the step's change, or each on the loop opened last and its
        # body, at readable text (a body too big for the view is shown from its top left)
        for side, graph, holder in (("before", before, self.before_svg),
                                    ("after", after, self.after_svg)):
            focus = self._focus_keys(graph)
            holder.value = svg_for_widget(
                d.to_svg(side, legend=False, merge=True, focus=focus), f"wb-svg-holder wb-{side}",
                max_view=None if focus is None else READABLE_VIEW)
        rows = self.region_texts()
        parts = ["<b>the rewired inputs, before → after (pprint)</b>"]
        if not rows:
            parts.append("<div><i>the step rewired no input</i></div>")
        for old, new in rows:
            if old == new:
                parts.append("<div><i>the same formula: the step changed how it is computed "
                             "(e.g. an inplace Op), not what</i></div>")
            parts.append(f'<div class="wb-region-row" style="display:flex;gap:12px">'
                         f'<div style="flex:1;min-width:0">before'
                         f'{pre(old, "wb-region-before", wrap=True)}</div>'
                         f'<div style="flex:1;min-width:0">after'
                         f'{pre(new, "wb-region-after", wrap=True)}</div></div>')
        self.region.value = "".join(parts)
        self.count_plot.value = self._count_png(step)

    def _info_html(self, step: RewriteStep, d: GraphDiff) -> str:
        tags = ", ".join(step.tags) or "-"
        rows = [("rewrite", step.rewrite), ("tags", tags), ("pass", step.pass_ or "-"),
                ("applied to", str(step.node) if step.node is not None else "-"),
                ("Apply nodes", _change_text(step)),
                ("defined at", step.source or "-")]
        if step.failed:
            rows.append(("FAILED", (step.error or "").strip().splitlines()[-1:][0]
                         if step.error else "failed"))
        removed = ",".join(sorted(d.removed))
        introduced = ",".join(sorted(d.introduced))
        # the boxes of the drawings that show them (an Apply shares its output's box)
        boxes = {side: ",".join(sorted(d.changed_boxes(side))) for side in ("before", "after")}
        return (f'<div class="wb-step-body" data-step="{step.index}" '
                f'data-removed="{removed}" data-introduced="{introduced}" '
                f'data-removed-boxes="{boxes["before"]}" '
                f'data-introduced-boxes="{boxes["after"]}">'
                f"<b>step {step.index}: {html.escape(step.rewrite)}</b>"
                + html_table(["", ""], rows, css="wb-table wb-step-table")
                + _inner_steps_html(step) + "</div>")

    def _count_png(self, step: RewriteStep | None) -> bytes:
        """The node-count plot as PNG, drawn once per (trace, filter, step)."""
        key = (tuple(s.index for s in self.steps),
               step.index if step is not None else None)
        png = self._plots.get(key)
        if png is None:
            if len(self._plots) > 64:
                self._plots.clear()
            png = self._plots[key] = figure_png(self._count_figure(step))
        return png

    def _count_figure(self, step: RewriteStep | None) -> Any:
        """Apply nodes after each step of the whole trace; the current step marked."""
        from matplotlib.figure import Figure

        steps = self.trace.steps
        xs = [0] + [s.index for s in steps]
        first = steps[0].nodes_before if steps else (
            len(self.fgraph.apply_nodes) if self.fgraph is not None else 0)
        ys = [first] + [s.nodes_after for s in steps]
        fig = Figure(figsize=(4.6, 2.2))
        ax = fig.add_subplot()
        ax.step(xs, ys, where="post", color="#1f4e9c")
        ax.plot(xs, ys, "o", color="#1f4e9c", markersize=3)
        if step is not None:
            ax.axvline(step.index, color="#ff9800", lw=1.5)
            ax.plot([step.index], [step.nodes_after], "o", color="#d32f2f", markersize=7)
        shown = {s.index for s in self.steps}
        if len(shown) < len(steps):
            ax.plot([s.index for s in steps if s.index in shown],
                    [s.nodes_after for s in steps if s.index in shown], "s", mfc="none",
                    color="#2e7d32", markersize=6, label="shown by the filter")
            ax.legend(fontsize=7, loc="best")
        ax.set_xlabel("step")
        ax.set_ylabel("Apply nodes")
        ax.set_title("graph size over the rewrite", fontsize=9)
        if xs:
            ax.set_xlim(-0.5, max(xs) + 0.5)
        fig.tight_layout()
        return fig

    # -- numeric check ------------------------------------------------------------------
    def _check(self) -> bool:
        from workbench.core.link.debugmode import RewriteCheckError, StepChecker

        step = self.current
        if step is None:
            raise ValueError("no step to check (the filters leave none)")
        view = self.trace.view_at(step.index - 1)
        with warnings.catch_warnings():  # its warning is replaced by the error below
            warnings.simplefilter("ignore")
            checker = StepChecker(view)  # random inputs; evaluates the graph before the step
        self._better_check_inputs(checker, view)
        if checker.inputs is None or checker.reference is None:
            raise ValueError(f"no random inputs could evaluate this graph "
                             f"({checker.disabled_reason})")
        before = list(checker.reference)
        after_view = self.trace.view_at(step.index)  # the same live view, moved on
        ok, message = True, ""
        try:
            checker(self.trace, step, after_view)
        except RewriteCheckError as exc:
            ok, message = False, str(exc)
        rows = []
        after = checker.reference if ok else [None] * len(before)
        for k, (b, a) in enumerate(zip(before, after)):
            if a is None:
                rows.append((f"output {k}", _brief(b), "-", "-"))
                continue
            err = _max_abs_diff(b, a)
            rows.append((f"output {k}", _brief(b), _brief(a),
                         "-" if err is None else f"{err:.3g}"))
        shapes = ", ".join(f"{v} {np.shape(x)}" for v, x in zip(view.inputs, checker.inputs))
        verdict = ("same values before and after" if ok else "the step CHANGED the values")
        self.check_result = "ok" if ok else f"mismatch: {message}"
        self.check_output.value = (
            f'<div class="wb-check-body" data-ok="{str(ok).lower()}" data-step="{step.index}">'
            f"<b>step {step.index} ({html.escape(step.rewrite)}): {verdict}</b> "
            f"<small>on random inputs {html.escape(shapes)}</small>"
            + html_table(["", "before", "after", "max |diff|"], rows, css="wb-table wb-check")
            + (pre(message, "wb-error") if message else "") + "</div>")
        return ok


    def _better_check_inputs(self, checker: Any, view: FunctionGraph) -> None:
        """Shared variables keep their values and inputs of a GraphSource get its shapes
        (the checker's own random sizes may not fit, e.g. a (3, 3) weight matrix)."""
        from workbench.core.link.debugmode import random_value

        shared = [v for v in view.inputs if hasattr(v, "get_value")]
        if not shared and not any(v.name in self.input_shapes for v in view.inputs):
            return
        rng = np.random.default_rng(0)
        values = []
        for var in view.inputs:
            if hasattr(var, "get_value"):
                values.append(var.get_value())
            else:
                shape = self.input_shapes.get(var.name, (2, 3))
                values.append(random_value(var.type, rng, tuple(shape) or (1,)))
        try:
            checker.use_inputs(view, values)
        except Exception as exc:  # keep the checker's own inputs (if they worked)
            if checker.inputs is None:
                checker.disabled_reason = f"{type(exc).__name__}: {exc}"


def _inner_steps_html(step: RewriteStep) -> str:
    """For a step that rewrote an inner graph (a loop's body): that graph's own steps."""
    inner = getattr(step, "inner_trace", None)
    if inner is None:
        return ""
    rows = [(s.index, s.rewrite, s.pass_ or "-", _change_text(s)) for s in inner.steps]
    return html_table(["step", "rewrite", "pass", "Apply nodes"], rows,
                      css="wb-table wb-inner-steps",
                      caption=f"inside {step.node.op if step.node is not None else 'it'}: "
                              f"{len(rows)} step(s)")


def _css_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", name)


def _change_text(step: RewriteStep) -> str:
    """The one count of what a step did: Apply nodes before -> after, removed, introduced."""
    return (f"Apply nodes {step.nodes_before} → {step.nodes_after}: removed "
            f"{len(step.removed)}, introduced {len(step.introduced)}")


def _step_text(step: RewriteStep) -> str:
    failed = " FAILED" if step.failed else ""
    return (f"{step.index:>3}  {step.rewrite}{failed}  [{step.pass_ or '-'}]  "
            f"-{len(step.removed)}/+{len(step.introduced)}  "
            f"({step.nodes_before}→{step.nodes_after})")


def _brief(value: Any) -> str:
    array = np.asarray(value)
    return np.array2string(array, threshold=8, edgeitems=2, precision=4).replace("\n", " ")


def _max_abs_diff(a: Any, b: Any) -> float | None:
    try:
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape or x.dtype.kind not in "biufc":
            return None
        return float(np.max(np.abs(x.astype(complex) - y.astype(complex)))) if x.size else 0.0
    except (TypeError, ValueError):
        return None
