"""The one layered (Sugiyama) layout every picture of a graph is drawn from.

`layout(graph)` returns a `GraphLayout`: plain data, a box per node (centre, size,
the caption lines it was sized for) and a polyline per edge, in pixels with y
growing downwards (SVG's convention). The CLI's SVG/PNG, the matplotlib drawing,
the widgets and the steppers all draw from it, so a node looks the same everywhere.

The layered layout itself is grandalf's `SugiyamaLayout` (pure Python, no
Graphviz): long edges get dummy vertices in every layer they cross, layers are
ordered by barycentre sweeps to cut crossings, and Brandes-Koepf coordinate
assignment keeps chains straight. Ranks are ours: each node one layer below its
deepest input, and graph inputs and constants just above their first use, so an
input used deep in the graph does not drag an edge across the whole drawing.

Edges are routed so that they never cross a box: inside a layer's band an edge
runs vertically (through its dummy vertex, which the layout keeps apart from
the boxes like any vertex), and it only runs diagonally in the empty gaps between
bands. `layout_union(graphs)` lays out several graphs that share nodes (the
before/after of a rewrite step, the steps of a backward pass) once, so a node
they share sits at the same place in every picture; `GraphLayout.restrict` cuts
one picture out of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

Point = tuple[float, float]

#: Text metrics of the drawings: a monospace font (DejaVu Sans Mono's advance is
#: 0.602 em) at FONT_SIZE px, lines LINE_HEIGHT px apart.
FONT_SIZE = 12.0
CHAR_WIDTH = 0.61 * FONT_SIZE
LINE_HEIGHT = 15.0
PAD_X, PAD_Y = 8.0, 5.0
#: Space between boxes in a layer, between layers, and around the drawing.
X_SPACE, Y_SPACE, MARGIN = 18.0, 34.0, 10.0
#: The width a long edge takes in the layers it passes through.
DUMMY_WIDTH = 8.0
#: Past this many vertices (nodes plus one per layer a long edge crosses) grandalf's
#: Sugiyama takes minutes (the 2,000-node long chain makes 160,000): such graphs get
#: the lane layout instead, which is linear and still never draws an edge through a box.
SUGIYAMA_BUDGET = 5000
#: The distance between the vertical lanes long edges take in the lane layout.
LANE_SPACE = 10.0
#: Caption lines wrap at this many characters; longer captions keep MAX_LINES.
WRAP_CHARS, MAX_LINES = 26, 4


@dataclass(frozen=True)
class NodeBox:
    """A node's box: centre (x, y), size, and the caption lines it was sized for."""

    key: str
    x: float
    y: float
    width: float
    height: float
    lines: tuple[str, ...]
    rank: int

    @property
    def left(self) -> float:
        return self.x - self.width / 2

    @property
    def right(self) -> float:
        return self.x + self.width / 2

    @property
    def top(self) -> float:
        return self.y - self.height / 2

    @property
    def bottom(self) -> float:
        return self.y + self.height / 2


@dataclass(frozen=True)
class EdgeRoute:
    """An edge's polyline, from the bottom of `source`'s box to the top of `target`'s."""

    source: str
    target: str
    points: tuple[Point, ...]


@dataclass
class GraphLayout:
    """Boxes and edge routes of a drawing, in pixels (y downwards), with its size."""

    boxes: dict[str, NodeBox]
    edges: list[EdgeRoute]
    width: float
    height: float
    font_size: float = FONT_SIZE
    line_height: float = LINE_HEIGHT
    char_width: float = CHAR_WIDTH
    extra: dict[str, Any] = field(default_factory=dict)

    def restrict(self, keys: Iterable[str]) -> GraphLayout:
        """The same layout with only `keys` (and edges between them): coordinates kept."""
        keep = set(keys)
        return GraphLayout(
            boxes={k: b for k, b in self.boxes.items() if k in keep},
            edges=[e for e in self.edges if e.source in keep and e.target in keep],
            width=self.width, height=self.height, font_size=self.font_size,
            line_height=self.line_height, char_width=self.char_width,
        )

    def bounds(self, keys: Iterable[str]) -> tuple[float, float, float, float] | None:
        """(left, top, right, bottom) around the boxes of `keys` present here."""
        boxes = [self.boxes[k] for k in keys if k in self.boxes]
        if not boxes:
            return None
        return (min(b.left for b in boxes), min(b.top for b in boxes),
                max(b.right for b in boxes), max(b.bottom for b in boxes))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (what a browser-side view receives)."""
        return {
            "width": self.width, "height": self.height, "font_size": self.font_size,
            "line_height": self.line_height, "char_width": self.char_width,
            "nodes": [{"key": b.key, "x": b.x, "y": b.y, "width": b.width,
                       "height": b.height, "lines": list(b.lines), "rank": b.rank}
                      for b in self.boxes.values()],
            "edges": [{"source": e.source, "target": e.target,
                       "points": [list(p) for p in e.points]} for e in self.edges],
        }


# -- captions ---------------------------------------------------------------------------

_BREAK_AFTER = "{},( "


def wrap_text(text: str, width: int = WRAP_CHARS, max_lines: int = MAX_LINES) -> list[str]:
    """`text` in lines of at most `width` characters, broken after `{},( ` where
    possible; past `max_lines` the last line ends with an ellipsis."""
    lines: list[str] = []
    rest = text
    while rest:
        if len(rest) <= width:
            lines.append(rest)
            break
        cut = max((i + 1 for i, ch in enumerate(rest[:width]) if ch in _BREAK_AFTER),
                  default=width)
        if cut < width // 2:
            cut = width
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1] + "…"
    return lines or [""]


def caption_lines(data: Mapping[str, Any]) -> list[str]:
    """What a node's box shows: its text wrapped, and an Apply's `[id X]` letter."""
    lines = wrap_text(str(data.get("text", "")))
    label = data.get("label")
    if label and (data.get("kind") == "apply" or data.get("merged_apply")):
        tag = f"[{label}]"
        if len(lines[-1]) + 1 + len(tag) <= WRAP_CHARS:
            lines[-1] = f"{lines[-1]} {tag}"
        else:
            lines.append(tag)
    if data.get("output_name"):  # an Apply drawn with its named output (merged_graph)
        lines.append(f"→ {data['output_name']}")
    return lines


def box_size(lines: Sequence[str]) -> tuple[float, float]:
    """(width, height) of a box holding `lines` with padding."""
    chars = max((len(line) for line in lines), default=0)
    return (max(chars, 2) * CHAR_WIDTH + 2 * PAD_X,
            max(len(lines), 1) * LINE_HEIGHT + 2 * PAD_Y)


# -- ranks ------------------------------------------------------------------------------


def layers(g: nx.DiGraph) -> list[list[str]]:
    """Nodes grouped by layer (top first): each node one layer below its deepest
    input; nodes without inputs one layer above their first use."""
    order = list(nx.topological_sort(g))
    rank: dict[str, int] = {}
    for key in order:
        rank[key] = max((rank[p] + 1 for p in g.predecessors(key)), default=0)
    for key in reversed(order):  # sources move down next to their first consumer
        if g.in_degree(key) == 0 and g.out_degree(key) > 0:
            rank[key] = min(rank[s] for s in g.successors(key)) - 1
    used = sorted(set(rank.values()))
    renumber = {r: i for i, r in enumerate(used)}
    grouped: list[list[str]] = [[] for _ in used]
    for key in g.nodes:  # insertion order: stable across calls
        grouped[renumber[rank[key]]].append(key)
    return grouped


# -- the layout -------------------------------------------------------------------------


class _View:
    """The view grandalf reads (w, h) and writes (xy) for each vertex."""

    def __init__(self, w: float, h: float) -> None:
        self.w, self.h = w, h
        self.xy: Point = (0.0, 0.0)


def layout(graph: Any, captions: Mapping[str, Sequence[str]] | None = None,
           caption: Callable[[Mapping[str, Any]], list[str]] = caption_lines,
           sizes: Mapping[str, tuple[float, float]] | None = None,
           layer_gap: float = Y_SPACE, node_gap: float = X_SPACE) -> GraphLayout:
    """Lay `graph` (a DiGraph, or anything `to_networkx` takes) out in layers.

    Each box is sized to its caption: `captions[key]` where given, else
    `caption(node_data)`; `sizes[key]` = (width, height) overrides that for a view
    that draws its boxes with its own fonts. `layer_gap` / `node_gap`: pixels
    between layers / between neighbours in a layer. Returns plain data both the
    SVG writer and the widgets draw.
    """
    from grandalf.graphs import Edge, Vertex

    g = as_digraph(graph)
    lines = {key: tuple(captions[key]) if captions and key in captions else tuple(caption(d))
             for key, d in g.nodes(data=True)}
    grouped = layers(g)
    rank_of = {key: r for r, layer in enumerate(grouped) for key in layer}
    sizes = {key: tuple(sizes[key]) if sizes and key in sizes else box_size(lines[key])
             for key in g.nodes}
    bands, top = [], MARGIN
    for layer in grouped:  # layer bands shared by all components
        height = max([LINE_HEIGHT] + [sizes[key][1] for key in layer])
        bands.append((top, top + height))
        top += height + layer_gap
    long_edge_cells = sum(rank_of[t] - rank_of[s] - 1 for s, t in g.edges)
    if g.number_of_nodes() + long_edge_cells > SUGIYAMA_BUDGET:
        return _lane_layout(g, grouped, rank_of, lines, sizes, bands, layer_gap, node_gap)
    vertices = {}
    for key in (key for layer in grouped for key in layer):
        v = Vertex(key)
        v.view = _View(*sizes[key])
        vertices[key] = v
    order = {key: i for i, key in enumerate(vertices)}
    components = []
    for keys in nx.weakly_connected_components(g):
        members = sorted(keys, key=order.__getitem__)
        edges = [Edge(vertices[s], vertices[t]) for s, t in g.subgraph(keys).edges]
        components.append(_component([vertices[k] for k in members], edges))

    boxes: dict[str, NodeBox] = {}
    routes: list[EdgeRoute] = []
    left = MARGIN
    # grandalf lays out each connected component alone: place them side by side
    for component in sorted(components, key=lambda c: (-len(c.sV), order[c.sV[0].data])):
        sug, ranks = _sugiyama(component, rank_of, node_gap)
        placed = [v for layer in sug.layers for v in layer]
        shift = left - min(v.view.xy[0] - v.view.w / 2 for v in placed)
        for v in placed:
            top, bottom = bands[ranks[sug.grx[v].rank]]
            v.view.xy = (v.view.xy[0] + shift, (top + bottom) / 2)
        for v in component.sV:
            x, y = v.view.xy
            boxes[v.data] = NodeBox(v.data, x, y, v.view.w, v.view.h, lines[v.data],
                                    rank_of[v.data])
        routes.extend(_routes(sug, component, ranks, bands))
        left = max(v.view.xy[0] + v.view.w / 2 for v in placed) + 2 * node_gap
    order = {key: i for i, key in enumerate(g.nodes)}
    boxes = dict(sorted(boxes.items(), key=lambda kv: order[kv[0]]))
    width = left - 2 * node_gap + MARGIN if boxes else 2 * MARGIN
    height = bands[-1][1] + MARGIN if bands else 2 * MARGIN
    return GraphLayout(boxes, routes, width=width, height=height)


def _component(vertices: list[Any], edges: list[Any]) -> Any:
    """A grandalf graph_core of one connected component, built in linear time
    (grandalf's own constructor re-checks connectivity by comparing vertex sets,
    which is quadratic: a minute for a 2000-node chain)."""
    from grandalf.graphs import graph_core
    from grandalf.utils.poset import Poset

    core = graph_core.__new__(graph_core)
    core.directed = True
    core.sV, core.sE = Poset(vertices), Poset([])
    core.degenerated_edges = set()
    for e in edges:
        core.sE.add(e)
        e.attach()
    for v in vertices:
        v.c = core
    return core


def _sugiyama(component: Any, rank_of: dict[str, int], node_gap: float
              ) -> tuple[Any, list[int]]:
    """grandalf's Sugiyama layout of one connected component, on our ranks.

    Returns the layout and the global rank of each of its layers.
    """
    import sys

    from grandalf.layouts import Layer, SugiyamaLayout

    sug = SugiyamaLayout(component)
    sug.xspace, sug.yspace = node_gap, Y_SPACE  # yspace unused: our bands place layers
    sug.dw, sug.dh = DUMMY_WIDTH, LINE_HEIGHT  # the size of a long edge's dummy vertices
    ranks = sorted({rank_of[v.data] for v in component.sV})
    local = {r: i for i, r in enumerate(ranks)}
    sug.layers = [Layer([]) for _ in ranks]
    for v in component.sV:
        sug.grx[v].rank = local[rank_of[v.data]]
        sug.layers[sug.grx[v].rank].append(v)
    sug.alt_e = []  # a DAG: no edge to invert
    for e in component.sE:
        sug.setdummies(e)
    for layer in sug.layers:
        layer.setup(sug)
    sug.initdone = True
    limit = sys.getrecursionlimit()  # block placement recurses along a layer
    sys.setrecursionlimit(max(limit, 20000))
    try:
        sug.draw(N=3.5)
    finally:
        sys.setrecursionlimit(limit)
    return sug, ranks


def _spread(centre: float, width: float, count: int) -> list[float]:
    """x of `count` edge ends along a box side of `width` around `centre`."""
    if count == 1:
        return [centre]
    span = min(width - 2 * PAD_X, 14.0 * (count - 1))
    return [centre - span / 2 + span * i / (count - 1) for i in range(count)]


def _without_repeats(points: list[Point]) -> tuple[Point, ...]:
    """`points` with consecutive repeats dropped (a zero-length segment draws nothing)."""
    kept = [points[0]]
    kept.extend(q for p, q in zip(points, points[1:]) if q != p)
    return tuple(kept)


def _routes(sug: Any, component: Any, ranks: list[int],
            bands: list[tuple[float, float]]) -> list[EdgeRoute]:
    """Polylines: vertical inside layer bands (at a box's port or a dummy vertex),
    diagonal only in the empty gaps between bands, so no box is ever crossed."""
    inner: dict[Any, list[Point]] = {}  # per edge: the dummy vertices' (x, band)
    for e in component.sE:
        ctrl = sug.ctrls.get(e, {})
        r0, r1 = sug.grx[e.v[0]].rank, sug.grx[e.v[1]].rank
        inner[e] = [(ctrl[r].view.xy[0], float(ranks[r])) for r in range(r0 + 1, r1)]

    def next_x(e: Any) -> float:
        return inner[e][0][0] if inner[e] else e.v[1].view.xy[0]

    def previous_x(e: Any) -> float:
        return inner[e][-1][0] if inner[e] else e.v[0].view.xy[0]

    out_port: dict[Any, float] = {}
    in_port: dict[Any, float] = {}
    for v in component.sV:
        for ports, edges, towards in ((out_port, v.e_out(), next_x),
                                      (in_port, v.e_in(), previous_x)):
            edges = sorted(edges, key=towards)
            for e, x in zip(edges, _spread(v.view.xy[0], v.view.w, len(edges))):
                ports[e] = x

    routes = []
    for e in component.sE:
        source, target = e.v
        (_, sy), (_, ty) = source.view.xy, target.view.xy
        r0 = ranks[sug.grx[source].rank]
        r1 = ranks[sug.grx[target].rank]
        points = [(out_port[e], sy + source.view.h / 2), (out_port[e], bands[r0][1])]
        for x, r in inner[e]:
            points += [(x, bands[int(r)][0]), (x, bands[int(r)][1])]
        points += [(in_port[e], bands[r1][0]), (in_port[e], ty - target.view.h / 2)]
        routes.append(EdgeRoute(source.data, target.data, _without_repeats(points)))
    return routes


def _lane_layout(g: nx.DiGraph, grouped: list[list[str]], rank_of: dict[str, int],
                 lines: dict[str, tuple[str, ...]], sizes: dict[str, tuple[float, float]],
                 bands: list[tuple[float, float]], layer_gap: float,
                 node_gap: float) -> GraphLayout:
    """The layout of a graph too big for Sugiyama: each layer's boxes left to right in
    graph order; an edge between neighbouring layers runs straight through the gap
    between them; a longer edge leaves its source into the gap below it, runs to a
    vertical lane left of every box (one lane per source, shared by its long edges, so
    an input used in every layer draws as one trunk) and enters its target from the
    gap above it. Every segment lies in a gap or a lane, so no box is ever crossed."""
    lane_of: dict[str, int] = {}
    for s, t in g.edges:
        if rank_of[t] - rank_of[s] > 1 and s not in lane_of:
            lane_of[s] = len(lane_of)
    first_x = MARGIN + len(lane_of) * LANE_SPACE + (node_gap if lane_of else 0.0)
    boxes: dict[str, NodeBox] = {}
    right = first_x
    for r, layer in enumerate(grouped):
        x = first_x
        top, bottom = bands[r]
        for key in layer:
            w, h = sizes[key]
            boxes[key] = NodeBox(key, x + w / 2, (top + bottom) / 2, w, h, lines[key], r)
            x += w + node_gap
        right = max(right, x - node_gap)

    def gap_y(after_rank: int, lane: int) -> float:
        """A y inside the gap below band `after_rank`, staggered per lane."""
        return bands[after_rank][1] + layer_gap * (0.25 + 0.5 * (lane % 7) / 7)

    out_port: dict[tuple[str, str], float] = {}
    in_port: dict[tuple[str, str], float] = {}
    for key, box in boxes.items():
        targets = sorted(g.successors(key), key=lambda t: boxes[t].x)
        for t, x in zip(targets, _spread(box.x, box.width, len(targets))):
            out_port[key, t] = x
        sources = sorted(g.predecessors(key), key=lambda s: boxes[s].x)
        for s, x in zip(sources, _spread(box.x, box.width, len(sources))):
            in_port[s, key] = x
    routes = []
    for s, t in g.edges:
        a, b = boxes[s], boxes[t]
        sx, tx = out_port[s, t], in_port[s, t]
        if s in lane_of and b.rank - a.rank > 1:
            lane_x = MARGIN + lane_of[s] * LANE_SPACE
            y0, y1 = gap_y(a.rank, lane_of[s]), gap_y(b.rank - 1, lane_of[s])
            points = [(sx, a.bottom), (sx, y0), (lane_x, y0), (lane_x, y1), (tx, y1),
                      (tx, b.top)]
        else:
            points = [(sx, a.bottom), (sx, bands[a.rank][1]), (tx, bands[b.rank][0]),
                      (tx, b.top)]
        routes.append(EdgeRoute(s, t, _without_repeats(points)))
    order = {key: i for i, key in enumerate(g.nodes)}
    boxes = dict(sorted(boxes.items(), key=lambda kv: order[kv[0]]))
    height = bands[-1][1] + MARGIN if bands else 2 * MARGIN
    return GraphLayout(boxes, routes, width=right + MARGIN, height=height,
                       extra={"routing": "lanes"})


def layout_union(graphs: Sequence[Any], **kwargs: Any) -> GraphLayout:
    """One layout over the union of `graphs` (which share node keys): cut each
    picture out of it with `restrict(graph.nodes)` and shared nodes stay put."""
    union = nx.DiGraph()
    for graph in graphs:
        digraph = as_digraph(graph)
        for key, data in digraph.nodes(data=True):
            if key not in union:
                union.add_node(key, **data)
        union.add_edges_from(digraph.edges(data=True))
    return layout(union, **kwargs)


def as_digraph(graph: Any) -> nx.DiGraph:
    if isinstance(graph, nx.DiGraph):
        return graph
    from workbench.inspector.graph import to_networkx

    return to_networkx(graph)
