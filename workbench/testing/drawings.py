"""Geometric checks of a drawing: what a reader needs from a picture of a graph.

`layout_problems(layout)` lists what is wrong with a `GraphLayout` (or with the
layout read back from an SVG by `svg_layout`): an edge segment through a box
other than its own ends, two boxes overlapping, a caption wider or taller than
its box. The inspector's tests run it over every example, every tutorial graph
and random graphs; the widgets' tests over what the browser receives.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from workbench.inspector.layout import CHAR_WIDTH, FONT_SIZE, EdgeRoute, GraphLayout, NodeBox

__all__ = ["layout_problems", "segment_crosses_box", "svg_layout"]

_SVG = "{http://www.w3.org/2000/svg}"


def segment_crosses_box(p: tuple[float, float], q: tuple[float, float], box: NodeBox,
                        inset: float = 0.5) -> bool:
    """Whether segment p-q enters the inside of `box` (shrunk by `inset` on each side,
    so a segment that only touches the border does not count). Liang-Barsky clipping."""
    left, right = box.left + inset, box.right - inset
    top, bottom = box.top + inset, box.bottom - inset
    (x0, y0), (x1, y1) = p, q
    dx, dy = x1 - x0, y1 - y0
    lo, hi = 0.0, 1.0
    for step, room in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
        if step == 0:
            if room < 0:
                return False
            continue
        t = room / step
        if step < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
        if lo > hi:
            return False
    return True


def layout_problems(lay: GraphLayout, char_width: float | None = None) -> list[str]:
    """Everything wrong with `lay` as a picture (empty when it is readable)."""
    problems: list[str] = []
    boxes = sorted(lay.boxes.values(), key=lambda b: b.left)
    for i, a in enumerate(boxes):  # sweep in x: only boxes that start before `a` ends
        for b in boxes[i + 1:]:
            if b.left >= a.right:
                break
            if b.top < a.bottom and a.top < b.bottom:
                problems.append(f"boxes {a.key} and {b.key} overlap")
    width_of_char = char_width or lay.char_width
    for box in boxes:
        text_w = max((len(line) for line in box.lines), default=0) * width_of_char
        if text_w > box.width + 0.01:
            problems.append(f"caption of {box.key} ({text_w:.0f} px) is wider than its box "
                            f"({box.width:.0f} px)")
        if len(box.lines) * lay.line_height > box.height + 0.01:
            problems.append(f"caption of {box.key} ({len(box.lines)} lines) is taller than "
                            f"its box ({box.height:.0f} px)")
    bucket = 64.0  # boxes by the horizontal strips they touch: segments meet few of them
    strips: dict[int, list[NodeBox]] = {}
    for box in boxes:
        for k in range(int(box.top // bucket), int(box.bottom // bucket) + 1):
            strips.setdefault(k, []).append(box)
    for edge in lay.edges:
        for p, q in zip(edge.points, edge.points[1:]):
            x_lo, x_hi = min(p[0], q[0]), max(p[0], q[0])
            y_lo, y_hi = min(p[1], q[1]), max(p[1], q[1])
            near = {id(b): b for k in range(int(y_lo // bucket), int(y_hi // bucket) + 1)
                    for b in strips.get(k, ())}
            for box in near.values():
                if box.key in (edge.source, edge.target):
                    continue
                if box.right < x_lo or box.left > x_hi or box.bottom < y_lo or box.top > y_hi:
                    continue
                if segment_crosses_box(p, q, box):
                    problems.append(f"edge {edge.source} -> {edge.target} crosses box {box.key}"
                                    f" (segment {p} - {q})")
    return problems


def _number(text: str | None) -> float:
    return float(text or 0.0)


def svg_layout(svg: str) -> GraphLayout:
    """The boxes, captions and edge paths of an SVG written by `to_svg`, read back
    from the SVG text itself (`<g class="node">` rects and texts, `<path class="edge">`)."""
    root = ET.fromstring(svg)
    font_size = _number(root.get("font-size"))
    boxes: dict[str, NodeBox] = {}
    line_ys: list[float] = []
    for group in root.iter(f"{_SVG}g"):
        if "node" not in (group.get("class") or "").split():
            continue
        rect = group.find(f"{_SVG}rect")
        x, y = _number(rect.get("x")), _number(rect.get("y"))
        w, h = _number(rect.get("width")), _number(rect.get("height"))
        texts = group.findall(f"{_SVG}text")
        lines = tuple("".join(t.itertext()) for t in texts)
        ys = [_number(t.get("y")) for t in texts]
        line_ys.extend(b - a for a, b in zip(ys, ys[1:]))
        key = group.get("id")
        boxes[key] = NodeBox(key, x + w / 2, y + h / 2, w, h, lines, 0)
    edges = []
    for path in root.iter(f"{_SVG}path"):
        if "edge" not in (path.get("class") or "").split():
            continue
        numbers = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path.get("d", ""))]
        points = tuple(zip(numbers[0::2], numbers[1::2]))
        edges.append(EdgeRoute(path.get("data-source"), path.get("data-target"), points))
    line_height = max(line_ys, default=font_size * 1.25)
    view = [float(v) for v in (root.get("viewBox") or "0 0 0 0").split()]
    return GraphLayout(boxes, edges, width=view[2], height=view[3], font_size=font_size,
                       line_height=line_height, char_width=CHAR_WIDTH / FONT_SIZE * font_size)
