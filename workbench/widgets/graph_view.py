"""GraphView: an interactive drawing of a graph, with a node picker and details.

The drawing is a `GraphCanvas` (an anywidget): drag to pan, wheel to zoom, click
a node to select it; labels stay at least 11 px at the default size (a big
graph scrolls rather than shrinks). A `Dropdown` of the nodes selects too.
A loop node (any Op holding an inner graph) gets an "expand loop" button: its body
is drawn inside the graph, framed, and "collapse loop" closes it (`expand(node)`,
`collapse(node)`; see `inner_graphs.ExpandsInnerGraphs`, shared by the widgets).
The view fits again after each: when the opened graph is too big for the view at
11 px, the loop and its body are put in the middle of it (the canvas's `focus`).
Selecting outlines the node and fills the details panel: kind, op and props,
type, dtype, static shape, name, the `dprint` of its subtree (with the same
`[id X]` letters as the drawing), and its value when a `point` was given. With
a point, every variable node also shows its value inside the box (togglable).

    view = GraphView(y, point={x: np.ones(3)})
    view.select("B")          # by [id] letter, name or node key
    view                      # in a notebook
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import networkx as nx
import numpy as np

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.link.shared import SharedVariable
from workbench.core.printing import IdLabels, dprint
from workbench.inspector import find, to_networkx
from workbench.inspector.graph import APPLY, graph_parts
from workbench.widgets._common import pre, run_with_status, status_label, styled
from workbench.widgets.graph_canvas import GraphCanvas, graph_data
from workbench.widgets.inner_graphs import ExpandsInnerGraphs, drawn_key

ZOOM_STEPS = (0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _graph_of(graph: Any) -> Any:
    """Accept a GraphSource (an example or a parsed expression; its update
    expressions are drawn too) as well as what the inspector accepts (Variable(s),
    FunctionGraph, Function)."""
    outputs = getattr(graph, "outputs", None)
    if hasattr(graph, "input_shapes") and isinstance(outputs, list):
        return outputs + [expr for _, expr in getattr(graph, "updates", None) or []]
    return graph


class GraphView(ExpandsInnerGraphs, widgets.VBox):
    """An interactive drawing of a graph, a node selector, a details panel, zoom buttons.

    `graph`: Variable(s), a FunctionGraph, a compiled Function or a GraphSource.
    `point`: values of the graph inputs (Variables or their names -> arrays);
    the graph is then evaluated once and every node shows its value.
    `height`: pixel height of the drawing area.
    """

    def __init__(self, graph: Any, point: Mapping[Any, Any] | None = None,
                 height: int = 560) -> None:
        self.graph = _graph_of(graph)
        self._init_inner_graphs()  # expanded, expand(), collapse(), expand_button
        self.nx_graph: nx.DiGraph = to_networkx(self.graph)
        outputs, inputs, _ = graph_parts(self.graph)
        self._inputs = inputs
        self._labels = IdLabels()
        dprint(outputs, file="str", ids=self._labels)  # same letters as the drawing
        self.values: dict[Variable, Any] = self._evaluate(point) if point is not None else {}
        self.selected: str | None = None

        self.node_select = styled(widgets.Dropdown(
            options=self._options(), value="", description="node",
            layout=widgets.Layout(width="420px")), "wb-node-select")
        self.zoom_out_button = styled(widgets.Button(
            description="−", tooltip="zoom out", layout=widgets.Layout(width="36px")),
            "wb-zoom-out")
        self.zoom_fit_button = styled(widgets.Button(
            description="fit", tooltip="zoom to fit", layout=widgets.Layout(width="44px")),
            "wb-zoom-fit")
        self.zoom_in_button = styled(widgets.Button(
            description="+", tooltip="zoom in", layout=widgets.Layout(width="36px")),
            "wb-zoom-in")
        self.values_toggle = styled(widgets.Checkbox(
            value=True, description="values in nodes", indent=False,
            layout=widgets.Layout(width="150px", display="" if self.values else "none")),
            "wb-values-toggle")
        self.status = status_label("working…")
        self.canvas = styled(GraphCanvas(self._graph_data(), height=height,
                                         layout=widgets.Layout(flex="1 1 560px")), "wb-graph-svg")
        self.svg = self.canvas  # the drawing (its name before it became interactive)
        self.details = styled(widgets.HTML(layout=widgets.Layout(
            flex="0 1 380px", min_width="280px", max_height=f"{height}px", overflow="auto",
            padding="0 0 0 10px")),
            "wb-details")
        self.title = styled(widgets.HTML(self._title_html()), "wb-graph-title")

        self.node_select.observe(self._on_select, names="value")
        self.canvas.observe(self._on_canvas_select, names="selected")
        self.values_toggle.observe(lambda _: self._redraw(), names="value")
        self.zoom_in_button.on_click(lambda _: self.set_zoom(self._next_zoom(+1)))
        self.zoom_out_button.on_click(lambda _: self.set_zoom(self._next_zoom(-1)))
        self.zoom_fit_button.on_click(lambda _: self.canvas.fit())
        toolbar = widgets.HBox([self.node_select, self.zoom_out_button, self.zoom_fit_button,
                                self.zoom_in_button, self.expand_button, self.values_toggle,
                                self.status])
        # side by side when there is room; in a narrow notebook the details go below
        # and the drawing keeps the whole width
        drawing_and_details = widgets.HBox([self.canvas, self.details],
                                           layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__([self.title, toolbar, drawing_and_details])
        self.add_class("wb-graph-view")
        self.details.value = "<i>click a node (or pick one above) to see its details</i>"
        self.status.value = "done"

    # -- public API ---------------------------------------------------------------------
    def select(self, node: str | Variable | Apply | None) -> None:
        """Select a node by key, `[id X]` letter, name, or the graph object itself."""
        if node is None or (isinstance(node, str) and not node):
            self.node_select.value = ""
            return
        if isinstance(node, Variable | Apply):
            key = drawn_key(self.nx_graph, node)
            if key is None:
                raise KeyError(f"{node} is not part of this graph")
        elif node in self.nx_graph:
            key = node
        else:
            key = find(self.nx_graph, node)
        self.node_select.value = key

    def _expanded_changed(self) -> None:
        selected = self.selected
        self.nx_graph = to_networkx(self.graph, expand=self.expanded)
        self.node_select.options = self._options()
        if selected in self.nx_graph:
            self.node_select.value = selected
        self.title.value = self._title_html()
        run_with_status(self.status,
                        lambda: self._draw_fitted(self.canvas, self._graph_data()))

    def _title_html(self) -> str:
        n_apply = sum(1 for _, d in self.nx_graph.nodes(data=True) if d["kind"] == APPLY)
        opened = self._expanded_text()
        return (f"<b>{n_apply} Apply nodes, {self.nx_graph.number_of_nodes() - n_apply} "
                f"variables{opened}</b>"
                + (" — evaluated at the given point" if self.values else ""))

    def _update_expand_button(self) -> None:
        self._point_expand_button(self.nx_graph.nodes[self.selected]["obj"]
                                  if self.selected else None)

    @property
    def zoom(self) -> float:
        """The drawing's zoom: 1.0 is "fit", 2.0 twice that (the wheel changes it too)."""
        return self.canvas.zoom

    def set_zoom(self, zoom: float) -> None:
        """Zoom the drawing around the selected node (or the middle of the view)."""
        if not zoom > 0:
            raise ValueError(f"zoom must be positive, got {zoom}")
        self.canvas.zoom = float(zoom)

    def value_of(self, key: str) -> Any:
        """The value of node `key` at the point (an Apply: its outputs' values)."""
        data = self.nx_graph.nodes[key]
        obj = data["obj"]
        if isinstance(obj, Apply):
            return [self._value(out) for out in obj.outputs]
        return self._value(obj)

    # -- evaluation ---------------------------------------------------------------------
    def _evaluate(self, point: Mapping[Any, Any]) -> dict[Variable, Any]:
        """Compute every Variable once: one Function whose outputs are all of them."""
        import workbench as wb

        by_name = {v.name: v for v in self._inputs if v.name is not None}
        given: dict[Variable, Any] = {}
        for key, value in point.items():
            if isinstance(key, str):
                if key not in by_name:
                    raise KeyError(f"point names {key!r}, which is not an input of this graph "
                                   f"(inputs: {', '.join(sorted(by_name)) or 'none named'})")
                key = by_name[key]
            given[key] = value
        explicit = [v for v in self._inputs if not isinstance(v, SharedVariable)]
        missing = [str(v) for v in explicit if v not in given]
        if missing:
            raise ValueError(f"point gives no value for input(s) {', '.join(missing)}; "
                             "pass point={input: value, ...} for every graph input")
        inner = [d["obj"] for _, d in self.nx_graph.nodes(data=True)
                 if isinstance(d["obj"], Variable) and d["obj"].owner is not None]
        values: dict[Variable, Any] = {v: given[v] for v in explicit}
        for var in self._inputs:
            if isinstance(var, SharedVariable):
                values[var] = var.get_value()
        if inner:
            fn = wb.function(explicit, inner, mode="FAST_COMPILE", on_unused_input="ignore")
            results = fn(*[given[v] for v in explicit])
            values.update(zip(inner, results))
        return values

    def _value(self, var: Variable) -> Any:
        if isinstance(var, Constant):
            return var.data
        return self.values.get(var)

    # -- rendering ----------------------------------------------------------------------
    def _options(self) -> list[tuple[str, str]]:
        options = [("(no node selected)", "")]
        for key in nx.topological_sort(self.nx_graph):
            data = self.nx_graph.nodes[key]
            if data["kind"] == APPLY:
                text = f"{data['label']}: {data['op']}"
            else:
                text = f"{data['label']}: {data['text']} ({data['kind']})"
            options.append((text if len(text) <= 70 else text[:69] + "…", key))
        return options

    def _next_zoom(self, direction: int) -> float:
        if direction > 0:
            return next((z for z in ZOOM_STEPS if z > self.zoom + 1e-9), self.zoom)
        return next((z for z in reversed(ZOOM_STEPS) if z < self.zoom - 1e-9), self.zoom)

    def _graph_data(self) -> dict[str, Any]:
        show = getattr(self, "values_toggle", None) is None or self.values_toggle.value
        return graph_data(self.nx_graph, values=self.values, show_values=show)

    def _redraw(self) -> None:
        run_with_status(self.status, lambda: setattr(self.canvas, "graph", self._graph_data()))

    def _on_canvas_select(self, change: dict[str, Any]) -> None:
        """A node clicked in the browser: select it like the dropdown does."""
        self.node_select.value = change["new"] or ""

    def _on_select(self, change: dict[str, Any]) -> None:
        key = change["new"] or None
        self.selected = key

        def work() -> None:
            self._update_expand_button()
            self.canvas.selected = key
            self.details.value = self._details_html(key) if key else (
                "<i>select a node to see its details</i>")

        run_with_status(self.status, work, on_error=lambda exc: setattr(
            self.details, "value", f'<span class="wb-error">{html.escape(str(exc))}</span>'))

    def _details_html(self, key: str) -> str:
        data = self.nx_graph.nodes[key]
        obj = data["obj"]
        rows: list[tuple[str, str]] = [("kind", data["kind"]), ("id", data["label"])]
        if data["kind"] == APPLY:
            rows.append(("op", f"{data['op']} ({data['op_class']})"))
            for name, value in data["props"].items():
                rows.append((f"  {name}", value))
            for i, out in enumerate(obj.outputs):
                shape = getattr(out.type, "shape", None)
                rows.append((f"output {i}", f"{out.type}"
                             + (f", dtype {out.type.dtype}" if hasattr(out.type, "dtype") else "")
                             + (f", static shape {shape}" if shape is not None else "")
                             + (f", name {out.name!r}" if out.name else "")))
            tree = dprint(obj.outputs, file="str", ids=self._labels, print_type=True)
        else:
            rows += [("type", data["type"]), ("dtype", data["dtype"] or "-"),
                     ("static shape", str(data["shape"])), ("name", repr(data["name"]))]
            tree = dprint(obj, file="str", ids=self._labels, print_type=True)
        cells = "".join(
            f'<tr><th style="text-align:left;padding-right:12px">{html.escape(k)}</th>'
            f"<td><code>{html.escape(v)}</code></td></tr>" for k, v in rows)
        parts = [f'<div class="wb-details-body" data-key="{key}" data-label="{data["label"]}">',
                 f"<b>[id {html.escape(data['label'])}] {html.escape(str(data['text']))}</b>",
                 f'<table style="font-size:12px">{cells}</table>',
                 "<div><b>subtree (dprint)</b></div>", pre(tree, "wb-dprint")]
        if self.values:
            parts += ["<div><b>value at the point</b></div>",
                      pre(_format_value(self.value_of(key)), "wb-value")]
        parts.append("</div>")
        return "".join(parts)


def _format_value(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_format_value(v) for v in value)
    if value is None:
        return "(not computed)"
    array = np.asarray(value)
    text = np.array2string(array, threshold=60, edgeitems=3, precision=5)
    return f"{array.dtype} {array.shape}\n{text}"
