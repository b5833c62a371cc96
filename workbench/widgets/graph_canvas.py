"""GraphCanvas: an interactive drawing of a graph in the browser (an anywidget).

Python computes everything a person reads: where each node's box goes (the
inspector's layered layout), what it says (its label, and its value or
gradient at a point, micrograd-style) and the hover text (type, shape,
value). The browser only draws that data as SVG and handles the hands-on
part: drag to pan, wheel to zoom around the pointer, click to select (the
selection comes back to Python as `canvas.selected`), hover for details.
"Fit" never shrinks text below 11 px: a graph too big for the view at that
size is shown from the top and scrolled by dragging, or, when `focus` names a
node whose inner graph is drawn opened (an expanded loop), with that node and
its body in the middle of the view.

The JavaScript ships inside the package (`static/graph_canvas.js`), loaded
by anywidget from the wheel: nothing is fetched from a CDN at run time.

    canvas = GraphCanvas(graph_data(to_networkx(y)))
    canvas.selected                     # the key of the clicked node, or None
    canvas.zoom = 2.0; canvas.fit()
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import anywidget
import networkx as nx
import numpy as np
import traitlets

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.tensor.type import format_shape
from workbench.inspector.draw import HIGHLIGHT, KIND_STYLE, inner_graph_frames
from workbench.inspector.graph import APPLY, OUTPUT
from workbench.inspector.graph import merged_nodes as drawn_nodes
from workbench.inspector.layout import GraphLayout, caption_lines, layout

STATIC = Path(__file__).parent / "static"

#: The smallest rendered font size "fit" allows; bigger graphs scroll instead.
MIN_FONT_PX = 11.0


def short_value(value: Any, limit: int = 28) -> str:
    """A value as a node shows it: `0.7311`, `[0.5 -1 2]`, `[0.62 0.73 …] (256,)`."""
    if value is None:
        return "?"
    array = np.asarray(value)
    if array.dtype.kind not in "biufc":
        text = str(value)
        return text if len(text) <= limit else text[: limit - 1] + "…"
    if array.ndim == 0:
        return f"{array.item():.4g}"
    flat = array.ravel()
    items = [f"{v:.3g}" for v in flat[:4]]
    text = "[" + " ".join(items) + "]"
    if flat.size <= 4 and len(text) <= limit and array.ndim == 1:
        return text
    head = f"[{items[0]}" + (f" {items[1]}" if flat.size > 1 else "") + " …]"
    return f"{head} {format_shape(array.shape)}"


def _hover_value(value: Any) -> str:
    array = np.asarray(value)
    text = np.array2string(array, threshold=12, edgeitems=3, precision=4)
    return f"{array.dtype} {array.shape}\n{text}"


def _node_lines(data: Mapping[str, Any], output: Variable | None, value: Any, grad: Any,
                show_values: bool) -> list[dict[str, str]]:
    """The text lines of a box: the inspector's caption, then the output's name, value
    and gradient (each line has a `role` the browser styles)."""
    lines = [{"text": text, "role": "label"} for text in caption_lines(data)]
    if output is not None and output.name is not None:
        lines.append({"text": f"→ {output.name}", "role": "name"})
    if show_values and value is not None:
        lines.append({"text": "data " + short_value(value), "role": "value"})
    if show_values and grad is not None:
        lines.append({"text": "grad " + short_value(grad), "role": "grad"})
    return lines


def _hover(data: Mapping[str, Any], value: Any, grad: Any) -> list[str]:
    obj = data["obj"]
    rows = [f"[id {data['label']}] {data['text']}  ({data['kind']})"]
    if isinstance(obj, Apply):
        rows.append(f"op: {data['op']} ({data['op_class']})")
        if len(obj.outputs) > 1:
            rows += [f"output {i}: {out.type}" for i, out in enumerate(obj.outputs)]
    else:
        rows.append(f"type: {data['type']}")
        if data["shape"] is not None:
            rows.append(f"static shape: {format_shape(data['shape'])}")
        if value is not None:
            rows.append("value: " + _hover_value(value))
        if grad is not None:
            rows.append("gradient: " + _hover_value(grad))
    return rows


def _contents(g: nx.DiGraph, groups: Mapping[str, list[str]],
              values: Mapping[Variable, Any], grads: Mapping[Variable, Any],
              show_values: bool) -> dict[str, dict[str, Any]]:
    """Per drawn box: its kind, letter, text lines and hover text (no geometry)."""
    contents: dict[str, dict[str, Any]] = {}
    for head, members in groups.items():
        data = g.nodes[head]
        shown = g.nodes[members[-1]]  # the variable whose value the box shows, if any
        var = shown["obj"] if isinstance(shown["obj"], Variable) else None
        value = grad = None
        if var is not None:
            value = var.data if isinstance(var, Constant) else values.get(var)
            grad = grads.get(var)
        in_box = None if isinstance(var, Constant) else value  # a constant's caption is its value
        lines = _node_lines(data, var if len(members) > 1 else None, in_box, grad, show_values)
        hover = _hover(data, None, None) if len(members) > 1 else []
        hover += _hover(shown, value, grad)
        contents[head] = {"key": head, "members": members,
                          "kind": OUTPUT if shown["kind"] == OUTPUT else data["kind"],
                          "letter": data["label"], "lines": lines, "hover": "\n".join(hover),
                          "rounded": data["kind"] != APPLY,
                          "inner": data.get("inner_of") is not None,
                          "inner_of": data.get("inner_of")}
    return contents


def graph_data(g: nx.DiGraph, values: Mapping[Variable, Any] | None = None,
               grads: Mapping[Variable, Any] | None = None, show_values: bool = True,
               merge: bool = True) -> dict[str, Any]:
    """What the browser draws: node boxes, edge polylines, styles (plain JSON data).

    One box per `drawn_nodes` group (per graph node when not `merge`); each lists
    its graph nodes in `members`. `values` / `grads`: per Variable, its value /
    gradient at a point; they are written inside the boxes when `show_values`,
    and always in the hover text. Boxes are sized to what they show.
    """
    groups = drawn_nodes(g) if merge else {key: [key] for key in g.nodes}
    contents = _contents(g, groups, values or {}, grads or {}, show_values)
    head_of = {member: head for head, members in groups.items() for member in members}
    drawn = nx.DiGraph()
    drawn.add_nodes_from((head, g.nodes[head]) for head in groups)
    drawn.add_edges_from((head_of[s], head_of[t]) for s, t in g.edges if head_of[s] != head_of[t])
    # the one call into the layout engine: boxes sized to these lines, routed edges
    lay = layout(drawn, captions={head: [line["text"] for line in box["lines"]]
                                  for head, box in contents.items()})
    feeds = {(head_of[s], head_of[t]) for s, t, d in g.edges(data=True) if d.get("feeds")}
    return _browser_data(lay, contents, feeds, inner_graph_frames(drawn, lay))


def _browser_data(lay: GraphLayout, contents: Mapping[str, dict[str, Any]],
                  feeds: Collection[tuple[str, str]] = (),
                  frames: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    nodes = []
    for key, box in lay.boxes.items():
        nodes.append({**contents[key], "x": round(box.x, 1), "y": round(box.y, 1),
                      "w": round(box.width, 1), "h": round(box.height, 1)})
    return {
        "width": round(lay.width, 1), "height": round(lay.height, 1),
        "nodes": nodes,
        "edges": [{"source": e.source, "target": e.target,
                   "points": [[round(x, 1), round(y, 1)] for x, y in e.points],
                   "feeds": (e.source, e.target) in feeds}
                  for e in lay.edges],
        "frames": [{k: round(v, 1) if isinstance(v, float) else v for k, v in f.items()}
                   for f in frames],
        "font_size": lay.font_size, "line_height": lay.line_height,
        "char_width": lay.char_width,
        "styles": {kind: {"fill": s["fill"], "stroke": s["stroke"]}
                   for kind, s in KIND_STYLE.items()},
        "highlights": {kind: {"stroke": stroke, "fill": fill}
                       for kind, (stroke, fill) in HIGHLIGHT.items()},
        "min_font_px": MIN_FONT_PX,
    }


def relabel(data: Mapping[str, Any], g: nx.DiGraph,
            values: Mapping[Variable, Any] | None = None,
            grads: Mapping[Variable, Any] | None = None, show_values: bool = True
            ) -> dict[str, Any]:
    """`data` with new text (values, gradients) in the same boxes at the same places.

    For pictures that change step by step (the backward pass): lay out once with
    the most text any step shows, then relabel per step, so no box ever moves.
    """
    groups = {node["key"]: node["members"] for node in data["nodes"]}
    contents = _contents(g, groups, values or {}, grads or {}, show_values)
    nodes = [{**node, "lines": contents[node["key"]]["lines"],
              "hover": contents[node["key"]]["hover"]} for node in data["nodes"]]
    return {**data, "nodes": nodes}


class GraphCanvas(anywidget.AnyWidget):
    """The drawing of `graph_data(...)` in the browser: pan, zoom, select, hover.

    `selected`: key of the selected node (clicked in the browser, or set here).
    `highlight`: node key -> highlight kind ("selected", "removed", "introduced")
    for outlines a host widget wants. `zoom`: a multiple of the fitted scale
    (1.0 is "fit"). `height`: pixel height of the view. `focus`: the key of an
    opened inner-graph node (a loop drawn with its body) that "fit" keeps in view
    when the whole graph does not fit at 11 px text; setting it fits again.
    """

    _esm = STATIC / "graph_canvas.js"
    _css = STATIC / "graph_canvas.css"

    graph = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    highlight = traitlets.Dict().tag(sync=True)
    zoom = traitlets.Float(1.0).tag(sync=True)
    height = traitlets.Int(560).tag(sync=True)
    focus = traitlets.Unicode(None, allow_none=True).tag(sync=True)

    def __init__(self, graph: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(graph=graph, **kwargs)

    def node_keys(self) -> list[str]:
        """Keys of the graph nodes drawn (an Apply and its output share a box)."""
        return [key for node in self.graph.get("nodes", []) for key in node["members"]]

    def captions(self) -> list[str]:
        """The first line of every box: what a person reads in the drawing."""
        return [node["lines"][0]["text"] for node in self.graph.get("nodes", [])]

    def fit(self) -> None:
        """Back to zoom 1.0: the whole graph, or its top at >= 11 px text, in view."""
        self.zoom = 1.0
        self.send({"command": "fit"})

    @traitlets.validate("selected", "focus")
    def _check_key(self, proposal: dict[str, Any]) -> str | None:
        key = proposal["value"]
        if key is not None and key not in self.node_keys():
            raise traitlets.TraitError(f"{proposal['trait'].name} must be the key of a drawn "
                                       f"node or None, got {key!r}")
        return key

    @traitlets.validate("zoom")
    def _check_zoom(self, proposal: dict[str, Any]) -> float:
        zoom = proposal["value"]
        if not zoom > 0:
            raise traitlets.TraitError(f"zoom must be positive, got {zoom}")
        return zoom
