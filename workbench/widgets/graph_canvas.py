"""GraphCanvas: an interactive drawing of a graph in the browser (an anywidget).

Python computes everything a person reads: where each node's box goes (the
inspector's layered layout), what it says (its label, and its value or
gradient at a point, micrograd-style) and the hover text (type, shape,
value). The browser only draws that data as SVG and handles the hands-on
part: drag to pan, wheel to zoom around the pointer, click to select (the
selection comes back to Python as `canvas.selected`), hover for details.
"Fit" never shrinks text below 11 px: a graph too big for the view at that
size is shown from the top and scrolled by dragging.

The JavaScript ships inside the package (`static/graph_canvas.js`), loaded
by anywidget from the wheel: nothing is fetched from a CDN at run time.

    canvas = GraphCanvas(graph_data(to_networkx(y)))
    canvas.selected                     # the key of the clicked node, or None
    canvas.zoom = 2.0; canvas.fit()
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anywidget
import networkx as nx
import numpy as np
import traitlets

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.tensor.type import format_shape
from workbench.inspector.draw import HIGHLIGHT, KIND_STYLE, _caption
from workbench.inspector.graph import APPLY, OUTPUT
from workbench.inspector.layout import layout

STATIC = Path(__file__).parent / "static"

#: Font sizes (px at zoom 1) of a node's first line and of its value lines.
LABEL_FONT, VALUE_FONT = 14.0, 13.0
#: The smallest rendered font size "fit" allows; smaller graphs scroll instead.
MIN_FONT_PX = 11.0
#: Width of one character of the monospace font, in ems (DejaVu Sans Mono: 0.602).
CHAR_EM = 0.62
PAD_X, PAD_Y, LINE_GAP, LINE_HEIGHT = 10.0, 5.0, 1.0, 1.2
MARGIN = 12.0
CAPTION_LIMIT = 36


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


def _text_width(text: str, font: float) -> float:
    return len(text) * font * CHAR_EM


def _node_lines(caption: str, output: Variable | None, value: Any, grad: Any,
                show_values: bool) -> list[dict[str, Any]]:
    lines = [{"text": caption, "role": "label", "size": LABEL_FONT}]
    if output is not None and output.name is not None:
        lines.append({"text": f"→ {output.name}", "role": "name", "size": VALUE_FONT})
    if show_values and value is not None:
        lines.append({"text": "data " + short_value(value), "role": "value", "size": VALUE_FONT})
    if show_values and grad is not None:
        lines.append({"text": "grad " + short_value(grad), "role": "grad", "size": VALUE_FONT})
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


def drawn_nodes(g: nx.DiGraph) -> dict[str, list[str]]:
    """Drawn box -> the graph nodes it shows (keyed by the first of them).

    An Apply with a single output is drawn as one box with that output (its
    name, value and gradient inside), as micrograd draws an operation with its
    result: half the layers, so a 60-node graph fits a projector without
    shrinking text. Inputs, constants and the outputs of multi-output Applies
    keep their own boxes.
    """
    groups: dict[str, list[str]] = {}
    merged: set[str] = set()
    for key, data in g.nodes(data=True):
        if data["kind"] == APPLY:
            outputs = list(g.successors(key))
            if len(outputs) == 1:
                groups[key] = [key, outputs[0]]
                merged.add(outputs[0])
                continue
        groups.setdefault(key, [key])
    return {head: members for head, members in groups.items() if head not in merged}


def _place(g: nx.DiGraph, sizes: Mapping[str, tuple[float, float]]
           ) -> tuple[dict[str, tuple[float, float]], dict[tuple[str, str], list[list[float]]]]:
    """Box centres and edge polylines for boxes of the given sizes.

    The one place that asks the inspector's layout engine where nodes go: its
    layered layout with our box sizes, edges routed around the boxes.
    """
    lay = layout(g, sizes=sizes)
    centres = {key: (box.x, box.y) for key, box in lay.boxes.items()}
    edges = {(e.source, e.target): [list(p) for p in e.points] for e in lay.edges}
    return centres, edges


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
        caption = _caption(data, limit=CAPTION_LIMIT)
        in_box = None if isinstance(var, Constant) else value  # a constant's caption is its value
        lines = _node_lines(caption, var if len(members) > 1 else None, in_box, grad,
                            show_values)
        hover = _hover(data, None, None) if len(members) > 1 else []
        hover += _hover(shown, value, grad)
        contents[head] = {"key": head, "members": members,
                          "kind": OUTPUT if shown["kind"] == OUTPUT else data["kind"],
                          "letter": data["label"], "lines": lines, "hover": "\n".join(hover),
                          "rounded": data["kind"] != APPLY}
    return contents


def _box_size(lines: list[dict[str, Any]]) -> tuple[float, float]:
    width = max(_text_width(line["text"], line["size"]) for line in lines) + 2 * PAD_X
    height = (sum(line["size"] * LINE_HEIGHT for line in lines)
              + LINE_GAP * (len(lines) - 1) + 2 * PAD_Y)
    return round(width, 1), round(height, 1)


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
    sizes = {head: _box_size(box["lines"]) for head, box in contents.items()}
    head_of = {member: head for head, members in groups.items() for member in members}
    drawn = nx.DiGraph()
    drawn.add_nodes_from((head, g.nodes[head]) for head in groups)
    drawn.add_edges_from((head_of[s], head_of[t]) for s, t in g.edges if head_of[s] != head_of[t])
    centres, polylines = _place(drawn, sizes)
    nodes = []
    for key, box in contents.items():
        (cx, cy), (w, h) = centres[key], sizes[key]
        nodes.append({**box, "x": round(cx, 1), "y": round(cy, 1), "w": w, "h": h})
    edges = [{"source": s, "target": t, "points": [[round(a, 1), round(b, 1)] for a, b in pts]}
             for (s, t), pts in polylines.items()]
    right = max((cx + sizes[k][0] / 2 for k, (cx, _) in centres.items()), default=0.0)
    bottom = max((cy + sizes[k][1] / 2 for k, (_, cy) in centres.items()), default=0.0)
    return {
        "width": round(right + MARGIN, 1), "height": round(bottom + MARGIN, 1),
        "nodes": nodes, "edges": edges,
        "styles": {kind: {"fill": s["fill"], "stroke": s["stroke"]}
                   for kind, s in KIND_STYLE.items()},
        "highlight_colours": {kind: stroke for kind, (stroke, _) in HIGHLIGHT.items()},
        "highlight_fills": {kind: fill for kind, (_, fill) in HIGHLIGHT.items() if fill},
        "min_font_px": MIN_FONT_PX,
        "line_height": LINE_HEIGHT, "line_gap": LINE_GAP,
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
    (1.0 is "fit"). `height`: pixel height of the view.
    """

    _esm = STATIC / "graph_canvas.js"
    _css = STATIC / "graph_canvas.css"

    graph = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    highlight = traitlets.Dict().tag(sync=True)
    zoom = traitlets.Float(1.0).tag(sync=True)
    height = traitlets.Int(560).tag(sync=True)

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

    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict[str, Any]) -> str | None:
        key = proposal["value"]
        if key is not None and key not in self.node_keys():
            raise traitlets.TraitError(f"selected must be the key of a drawn node or None, "
                                       f"got {key!r}")
        return key

    @traitlets.validate("zoom")
    def _check_zoom(self, proposal: dict[str, Any]) -> float:
        zoom = proposal["value"]
        if not zoom > 0:
            raise traitlets.TraitError(f"zoom must be positive, got {zoom}")
        return zoom
