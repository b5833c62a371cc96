"""Drawing a graph: to standalone SVG text, or to a matplotlib Axes.

Both draw the one layered layout (`workbench.inspector.layout`): boxes sized to
their captions, edges routed around boxes. The legend follows seed 001's
diagram: Apply nodes are boxes, Variables are rounded boxes, constants, graph
inputs and outputs have their own colours. Highlighted nodes (what a rewrite
step removed or introduced) are filled in their highlight colour, so they stand
out at a glance. No Graphviz is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import networkx as nx

from workbench.inspector.graph import APPLY, CONSTANT, INPUT, OUTPUT, VARIABLE, merged_graph
from workbench.inspector.layout import FONT_SIZE, GraphLayout, as_digraph, layout

#: Fill colours by node kind (seed 001: Apply blue, Variables red-ish, ...).
KIND_STYLE: dict[str, dict[str, str]] = {
    APPLY: {"fill": "#cfe2ff", "stroke": "#1f4e9c", "legend": "Apply (an Op applied)"},
    VARIABLE: {"fill": "#ffe0dc", "stroke": "#a33a2c", "legend": "Variable"},
    CONSTANT: {"fill": "#dcf5dc", "stroke": "#2e7d32", "legend": "Constant"},
    INPUT: {"fill": "#fff3c4", "stroke": "#9c7a00", "legend": "graph input"},
    OUTPUT: {"fill": "#eadcff", "stroke": "#5b2c9c", "legend": "graph output"},
}
#: Highlight kind -> (outline colour, fill colour or None to keep the kind's fill).
HIGHLIGHT: dict[str, tuple[str, str | None]] = {
    "removed": ("#d32f2f", "#ef9a9a"),
    "introduced": ("#2e7d32", "#81c784"),
    "selected": ("#ff9800", None),
}
_LEGEND_H = 24.0
__all__ = ["HIGHLIGHT", "KIND_STYLE", "draw", "inner_graph_frames", "node_title", "to_svg"]


def _caption(data: Mapping[str, Any], limit: int = 28) -> str:
    """A one-line caption (DOT labels, tables): the text cut at `limit`, `[X]` for Applies."""
    text = str(data.get("text", ""))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    label = data.get("label")
    return f"{text} [{label}]" if label and data["kind"] == APPLY else text


def node_title(data: Mapping[str, Any]) -> str:
    """The hover text of a node: its full text (a fused Composite's whole formula),
    type and `[id X]`."""
    parts = [str(data.get("text", ""))]
    if data.get("type"):
        parts.append(str(data["type"]))
    if data.get("label"):
        parts.append(f"[id {data['label']}]")
    return " ".join(p for p in parts if p)


def _highlights(highlight: Mapping[str, Iterable[str]] | None) -> dict[str, str]:
    """node key -> highlight kind (checked against HIGHLIGHT)."""
    kinds: dict[str, str] = {}
    for kind, keys in (highlight or {}).items():
        if kind not in HIGHLIGHT:
            raise ValueError(f"unknown highlight kind {kind!r}; use one of {sorted(HIGHLIGHT)}")
        for key in keys:
            kinds[key] = kind
    return kinds


def _style(data: Mapping[str, Any], kind: str | None) -> tuple[str, str, float]:
    """(fill, stroke, stroke width) of a node given its highlight kind."""
    style = KIND_STYLE[data["kind"]]
    if kind is None:
        return style["fill"], style["stroke"], 1.0
    stroke, fill = HIGHLIGHT[kind]
    return fill or style["fill"], stroke, 3.0


def _legend_svg(kinds: Iterable[str]) -> tuple[list[str], float]:
    parts, x = [], 10.0
    entries = [(s["legend"], s["fill"], s["stroke"]) for s in KIND_STYLE.values()]
    entries += [(kind, HIGHLIGHT[kind][1] or "white", HIGHLIGHT[kind][0]) for kind in kinds]
    for text, fill, stroke in entries:
        parts.append(
            f'<g class="legend"><rect x="{x:.0f}" y="6" width="12" height="12" '
            f'fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{x + 16:.0f}" y="16" font-size="11">{escape(text)}</text></g>'
        )
        x += 26.0 + 6.7 * len(text)
    return parts, x


def merge_keys(g: nx.DiGraph, keys: Iterable[str]) -> set[str]:
    """The boxes of a merged graph that show any of `keys`."""
    wanted = set(keys)
    return {head for head, data in g.nodes(data=True) if wanted & set(data["members"])}


def to_svg(graph: Any, highlight: Mapping[str, Iterable[str]] | None = None,
           legend: bool = True, positions: GraphLayout | None = None,
           frame: Iterable[str] | None = None, focus: Iterable[str] | None = None,
           merge: bool = False) -> str:
    """A standalone SVG document of `graph`: one `<g class="node ...">` per node.

    `positions` is a layout to draw from (e.g. one over the union of a rewrite
    step's before and after, so shared nodes stay put); by default the graph's own.
    `frame` names nodes to draw a dashed frame around (the changed region);
    `focus` nodes (of `positions`, drawn here or not) whose bounds a viewer should
    show, written as the `data-focus` attribute. `merge`: an Apply and its single
    output in one box (`merged_graph`), half the layers. Each node group has `id` =
    its DiGraph key, `data-label` = its `[id X]` letter and a `<title>` with its
    full text, so a browser can find, select and explain it.
    """
    g = as_digraph(graph)
    if merge:
        g = merged_graph(g)
        highlight = {kind: merge_keys(g, keys) for kind, keys in (highlight or {}).items()}
        frame = merge_keys(g, frame or ())
    full = positions or layout(g)
    lay = full.restrict(g.nodes)
    marks = _highlights(highlight)
    legend_parts, legend_w = _legend_svg(sorted(set(marks.values()))) if legend else ([], 0.0)
    dy = _LEGEND_H if legend else 0.0
    width, height = max(lay.width, legend_w), lay.height + dy
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans Mono, monospace" '
        f'font-size="{FONT_SIZE:g}"{_focus_attribute(full, focus, dy)}>',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>',
        *legend_parts,
    ]
    region = lay.bounds(frame or ())
    if region is not None:
        x0, y0, x1, y1 = region
        parts.append(f'<rect class="changed-region" x="{x0 - 8:.1f}" y="{y0 - 8 + dy:.1f}" '
                     f'width="{x1 - x0 + 16:.1f}" height="{y1 - y0 + 16:.1f}" rx="6" '
                     'fill="#fff8e1" stroke="#f9a825" stroke-width="2" stroke-dasharray="6 4"/>')
    parts += _inner_graph_frames(g, lay, dy)
    parts.append('<g class="edges">')
    for edge in lay.edges:
        d = " ".join(f"{'M' if i == 0 else 'L'} {x:.1f} {y + dy:.1f}"
                     for i, (x, y) in enumerate(edge.points))
        feeds = g.has_edge(edge.source, edge.target) and \
            g.edges[edge.source, edge.target].get("feeds")
        dash = ' stroke-dasharray="5 3"' if feeds else ""
        parts.append(f'<path class="edge{" feeds" if feeds else ""}" '
                     f'data-source="{edge.source}" '
                     f'data-target="{edge.target}" d="{d}" fill="none" stroke="#555" '
                     f'stroke-width="1.2"{dash} marker-end="url(#arrow)"/>')
    parts.append("</g>")
    for key, box in lay.boxes.items():
        data = g.nodes[key]
        fill, stroke, stroke_width = _style(data, marks.get(key))
        mark = f' data-highlight="{marks[key]}"' if key in marks else ""
        if data.get("inner_of") is not None:  # inside an expanded inner graph (a loop body)
            mark += ' data-inner-of="{}" stroke-dasharray="4 2"'.format(data["inner_of"])
        rx = 0 if data["kind"] == APPLY or data.get("merged_apply") else 8
        parts.append(
            f'<g class="node {data["kind"]}" id="{key}" '
            f'data-label={quoteattr(str(data["label"]))}{mark}>'
            f"<title>{escape(node_title(data))}</title>"
            f'<rect x="{box.left:.1f}" y="{box.top + dy:.1f}" width="{box.width:.1f}" '
            f'height="{box.height:.1f}" rx="{rx}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{stroke_width:g}"/>'
        )
        first = box.y + dy - (len(box.lines) - 1) * lay.line_height / 2
        for i, line in enumerate(box.lines):
            parts.append(f'<text x="{box.x:.1f}" y="{first + i * lay.line_height:.1f}" '
                         f'text-anchor="middle" dominant-baseline="central">'
                         f"{escape(line)}</text>")
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def inner_graph_frames(g: nx.DiGraph, lay: GraphLayout) -> list[dict[str, Any]]:
    """Where to frame each expanded inner graph (a loop's body) of `g` in `lay`: dicts of
    `of` (the loop node's key), `left`, `top`, `width`, `height` and `title`. A body
    whose region holds other nodes too gets no frame (its nodes' dashed outlines mark
    it)."""
    members: dict[str, list[str]] = {}
    for key, data in g.nodes(data=True):
        if data.get("inner_of") is not None and key in lay.boxes:
            members.setdefault(data["inner_of"], []).append(key)
    frames = []
    for outer, keys in members.items():
        region = lay.bounds(keys)
        if region is None:
            continue
        x0, y0, x1, y1 = region
        inside = set(keys)
        if any(key not in inside and box.left < x1 + 10 and box.left + box.width > x0 - 10
               and box.top < y1 + 10 and box.top + box.height > y0 - 22
               for key, box in lay.boxes.items()):
            continue
        outer_data = g.nodes[outer] if outer in g else {}
        title = getattr(getattr(outer_data.get("obj"), "op", None), "inner_graph_title",
                        "inner graph")
        frames.append({"of": outer, "left": x0 - 10, "top": y0 - 22, "width": x1 - x0 + 20,
                       "height": y1 - y0 + 32,
                       "title": f"{title} of [id {outer_data.get('label', '?')}]"})
    return frames


def _inner_graph_frames(g: nx.DiGraph, lay: GraphLayout, dy: float) -> list[str]:
    """The frames of `inner_graph_frames` as SVG, drawn behind the graph."""
    return [f'<g class="inner-graph" data-of="{f["of"]}">'
            f'<rect x="{f["left"]:.1f}" y="{f["top"] + dy:.1f}" width="{f["width"]:.1f}" '
            f'height="{f["height"]:.1f}" rx="8" fill="#f3f6fa" stroke="#7a8ca3" '
            'stroke-width="1.5" stroke-dasharray="8 4"/>'
            f'<text x="{f["left"] + 6:.1f}" y="{f["top"] + 11 + dy:.1f}" fill="#4a5a70" '
            f'dominant-baseline="central">{escape(f["title"])}</text></g>'
            for f in inner_graph_frames(g, lay)]


def _focus_attribute(lay: GraphLayout, focus: Iterable[str] | None, dy: float) -> str:
    region = lay.bounds(focus or ())
    if region is None:
        return ""
    x0, y0, x1, y1 = region
    return f' data-focus="{x0 - 8:.1f} {y0 - 8 + dy:.1f} {x1 - x0 + 16:.1f} {y1 - y0 + 16:.1f}"'


def draw(graph: Any, ax: Any = None, highlight: Mapping[str, Iterable[str]] | None = None,
         legend: bool = True, positions: GraphLayout | None = None) -> Any:
    """Draw `graph` on a matplotlib Axes (a new Figure's, sized to the layout, if none).

    The same layout and captions as `to_svg`, at 100 pixels per inch; `highlight`
    maps "removed" / "introduced" / "selected" to node keys. Uses
    `matplotlib.figure.Figure` (not pyplot) so it works in widget callbacks that
    run on a kernel thread.
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch, Patch

    g = as_digraph(graph)
    lay = (positions or layout(g)).restrict(g.nodes)
    marks = _highlights(highlight)
    if ax is None:
        extra = 2.2 if legend else 0.0
        fig = Figure(figsize=(lay.width / 100 + extra, lay.height / 100), dpi=100)
        ax = fig.add_axes((0, 0, lay.width / (lay.width + 100 * extra), 1))
    points = FONT_SIZE * 72 / 100  # pixels at 100 dpi -> points
    for edge in lay.edges:
        xs, ys = zip(*edge.points)
        ax.plot(xs[:-1], ys[:-1], color="#555555", lw=0.9, solid_capstyle="butt")
        ax.annotate("", xy=edge.points[-1], xytext=edge.points[-2],
                    arrowprops={"arrowstyle": "-|>", "color": "#555555", "lw": 0.9,
                                "shrinkA": 0, "shrinkB": 0})
    for key, box in lay.boxes.items():
        data = g.nodes[key]
        fill, stroke, stroke_width = _style(data, marks.get(key))
        ax.add_patch(FancyBboxPatch(
            (box.left, box.top), box.width, box.height,
            boxstyle="square,pad=0" if data["kind"] == APPLY else "round,pad=0,rounding_size=8",
            facecolor=fill, edgecolor=stroke, linewidth=stroke_width,
        ))
        ax.text(box.x, box.y, "\n".join(box.lines), ha="center", va="center",
                fontsize=points, family="monospace", linespacing=1.2)
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.height, 0)
    ax.set_aspect("equal")
    ax.set_axis_off()
    if legend:
        handles = [Patch(facecolor=s["fill"], edgecolor=s["stroke"], label=s["legend"])
                   for s in KIND_STYLE.values()]
        handles += [Patch(facecolor=HIGHLIGHT[k][1] or "white", edgecolor=HIGHLIGHT[k][0],
                          linewidth=2.5, label=k) for k in sorted(set(marks.values()))]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  fontsize=points, frameon=False)
    return ax

