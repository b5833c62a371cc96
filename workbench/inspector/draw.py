"""Drawing a graph: to a matplotlib Axes, or to standalone SVG text.

The legend follows seed 001's diagram: Apply nodes are boxes, Variables are
rounded boxes, constants, graph inputs and outputs have their own colours.
Nodes to highlight (e.g. what a rewrite step removed and introduced) get a
thick coloured outline. No Graphviz is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from xml.sax.saxutils import escape

import networkx as nx

from workbench.inspector.graph import APPLY, CONSTANT, INPUT, OUTPUT, VARIABLE, to_networkx
from workbench.inspector.layout import layered_layout

#: Fill colours by node kind (seed 001: Apply blue, Variables red-ish, ...).
KIND_STYLE: dict[str, dict[str, str]] = {
    APPLY: {"fill": "#cfe2ff", "stroke": "#1f4e9c", "legend": "Apply (an Op applied)"},
    VARIABLE: {"fill": "#ffe0dc", "stroke": "#a33a2c", "legend": "Variable"},
    CONSTANT: {"fill": "#dcf5dc", "stroke": "#2e7d32", "legend": "Constant"},
    INPUT: {"fill": "#fff3c4", "stroke": "#9c7a00", "legend": "graph input"},
    OUTPUT: {"fill": "#eadcff", "stroke": "#5b2c9c", "legend": "graph output"},
}
HIGHLIGHT = {"removed": "#d32f2f", "introduced": "#2e7d32", "selected": "#ff9800"}


def _as_digraph(graph: Any) -> nx.DiGraph:
    return graph if isinstance(graph, nx.DiGraph) else to_networkx(graph)


def _caption(data: Mapping[str, Any], limit: int = 28) -> str:
    text = str(data.get("text", ""))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    label = data.get("label")
    return f"{text} [{label}]" if label and data["kind"] == APPLY else text


def draw(graph: Any, ax: Any = None, highlight: Mapping[str, Iterable[str]] | None = None,
         legend: bool = True, font_size: float = 8.0) -> Any:
    """Draw `graph` on a matplotlib Axes (a new Figure's if none); return the Axes.

    `highlight` maps a highlight kind ("removed", "introduced", "selected") to
    node keys. Uses `matplotlib.figure.Figure` (not pyplot) so it also works in
    widget callbacks running on a kernel thread.
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch, Patch

    g = _as_digraph(graph)
    positions = layered_layout(g, layer_gap=1.0, node_gap=2.2)
    if ax is None:
        layers = {y for _, y in positions.values()}
        width = max((x for x, _ in positions.values()), default=0.0) + 2.2
        fig = Figure(figsize=(max(4.0, width * 1.1), max(3.0, len(layers) * 0.7)))
        ax = fig.add_subplot()
    outline = _outline_colours(highlight)
    for source, target in g.edges:
        (x0, y0), (x1, y1) = positions[source], positions[target]
        ax.annotate("", xy=(x1, y1 + 0.18), xytext=(x0, y0 - 0.18),
                    arrowprops={"arrowstyle": "->", "color": "#666666", "lw": 0.8})
    for key, data in g.nodes(data=True):
        x, y = positions[key]
        style = KIND_STYLE[data["kind"]]
        edge = outline.get(key, style["stroke"])
        box = FancyBboxPatch(
            (x - 0.95, y - 0.18), 1.9, 0.36,
            boxstyle="square,pad=0.02" if data["kind"] == APPLY else "round,pad=0.02",
            facecolor=style["fill"], edgecolor=edge, linewidth=2.5 if key in outline else 1.0,
        )
        ax.add_patch(box)
        ax.text(x, y, _caption(data), ha="center", va="center", fontsize=font_size)
    xs = [x for x, _ in positions.values()] or [0.0]
    ys = [y for _, y in positions.values()] or [0.0]
    ax.set_xlim(min(xs) - 1.2, max(xs) + 1.2)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    ax.set_axis_off()
    if legend:
        handles = [Patch(facecolor=s["fill"], edgecolor=s["stroke"], label=s["legend"])
                   for s in KIND_STYLE.values()]
        handles += [Patch(facecolor="white", edgecolor=c, linewidth=2.5, label=kind)
                    for kind, c in HIGHLIGHT.items() if highlight and kind in highlight]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  fontsize=font_size, frameon=False)
    return ax


def _outline_colours(highlight: Mapping[str, Iterable[str]] | None) -> dict[str, str]:
    colours: dict[str, str] = {}
    for kind, keys in (highlight or {}).items():
        if kind not in HIGHLIGHT:
            raise ValueError(f"unknown highlight kind {kind!r}; use one of {sorted(HIGHLIGHT)}")
        for key in keys:
            colours[key] = HIGHLIGHT[kind]
    return colours


def to_svg(graph: Any, highlight: Mapping[str, Iterable[str]] | None = None,
           legend: bool = True) -> str:
    """A standalone SVG document of `graph`: one `<g class="node ...">` per node.

    Each node group has `id` = its DiGraph key and `data-label` = its `[id X]`
    letter, so a browser (and the GraphView widget) can find and select it.
    """
    g = _as_digraph(graph)
    box_w, box_h, gap_x, gap_y = 150.0, 26.0, 170.0, 60.0
    positions = layered_layout(g, layer_gap=gap_y, node_gap=gap_x)
    outline = _outline_colours(highlight)
    xs = [x for x, _ in positions.values()] or [0.0]
    ys = [-y for _, y in positions.values()] or [0.0]
    legend_h = 24.0 if legend else 0.0
    width = max(xs) + box_w + 20.0
    height = max(ys) + box_h + 20.0 + legend_h

    def centre(key: str) -> tuple[float, float]:
        x, y = positions[key]
        return x + box_w / 2 + 10.0, -y + box_h / 2 + 10.0 + legend_h

    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="11">',
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
        "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto-start-reverse\">"
        "<path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#666\"/></marker></defs>",
    ]
    if legend:
        x = 10.0
        for style in KIND_STYLE.values():
            parts.append(
                f'<g class="legend"><rect x="{x:.0f}" y="6" width="12" height="12" '
                f'fill="{style["fill"]}" stroke="{style["stroke"]}"/>'
                f'<text x="{x + 16:.0f}" y="16">{escape(style["legend"])}</text></g>'
            )
            x += 24.0 + 7.0 * len(style["legend"])
    parts.append('<g class="edges">')
    for source, target in g.edges:
        (x0, y0), (x1, y1) = centre(source), centre(target)
        parts.append(
            f'<line class="edge" x1="{x0:.1f}" y1="{y0 + box_h / 2:.1f}" x2="{x1:.1f}" '
            f'y2="{y1 - box_h / 2:.1f}" stroke="#666" marker-end="url(#arrow)"/>'
        )
    parts.append("</g>")
    for key, data in g.nodes(data=True):
        cx, cy = centre(key)
        style = KIND_STYLE[data["kind"]]
        stroke = outline.get(key, style["stroke"])
        stroke_width = 3 if key in outline else 1
        rx = 0 if data["kind"] == APPLY else 10
        title = escape(f"{data.get('text', '')} {data.get('type', '')}".strip())
        parts.append(
            f'<g class="node {data["kind"]}" id="{key}" data-label="{escape(data["label"])}">'
            f"<title>{title}</title>"
            f'<rect x="{cx - box_w / 2:.1f}" y="{cy - box_h / 2:.1f}" width="{box_w:.0f}" '
            f'height="{box_h:.0f}" rx="{rx}" fill="{style["fill"]}" stroke="{stroke}" '
            f'stroke-width="{stroke_width}"/>'
            f'<text x="{cx:.1f}" y="{cy + 4:.1f}" text-anchor="middle">'
            f"{escape(_caption(data, limit=20))}</text></g>"
        )
    parts.append("</svg>")
    return "\n".join(parts)
