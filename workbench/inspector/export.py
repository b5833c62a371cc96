"""Exporting a graph: DOT text (for Graphviz users) and networkx node-link JSON."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from workbench.inspector.draw import KIND_STYLE
from workbench.inspector.graph import APPLY
from workbench.inspector.layout import as_digraph, layout

_JSON_SAFE = (str, int, float, bool, type(None))


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: Any, name: str = "workbench") -> str:
    """The graph as Graphviz DOT text (boxes for Apply nodes, rounded for Variables).

    Each node carries the caption, size and position of workbench's own layout
    (`pos` in points, `!` pinned): `dot` lays it out afresh, `neato -n2` keeps
    the boxes where `to_svg` draws them.
    """
    g = as_digraph(graph)
    lay = layout(g)
    lines = [f"digraph {_dot_quote(name)} {{", "  rankdir=TB;",
             "  node [fontname=monospace, fixedsize=true];"]
    for key, data in g.nodes(data=True):
        style = KIND_STYLE[data["kind"]]
        shape = "box, style=filled" if data["kind"] == APPLY else "box, style=\"rounded,filled\""
        box = lay.boxes[key]
        label = "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in box.lines)
        lines.append(
            f'  {_dot_quote(key)} [label="{label}", shape={shape}, '
            f"fillcolor={_dot_quote(style['fill'])}, color={_dot_quote(style['stroke'])}, "
            f'pos="{box.x * 0.75:.1f},{(lay.height - box.y) * 0.75:.1f}!", '
            f"width={box.width / 96:.3f}, height={box.height / 96:.3f}];"
        )
    for source, target, data in g.edges(data=True):
        lines.append(f"  {_dot_quote(source)} -> {_dot_quote(target)} "
                     f"[label={_dot_quote(str(data.get('index', '')))}];")
    lines.append("}")
    return "\n".join(lines)


def _json_value(value: Any) -> Any:
    if isinstance(value, _JSON_SAFE):
        return value
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


def to_node_link(graph: Any) -> dict[str, Any]:
    """networkx node-link data with JSON-safe attributes (the graph objects dropped)."""
    g = as_digraph(graph)
    clean = nx.DiGraph()
    for key, data in g.nodes(data=True):
        clean.add_node(key, **{k: _json_value(v) for k, v in data.items() if k != "obj"})
    for source, target, data in g.edges(data=True):
        clean.add_edge(source, target, **{k: _json_value(v) for k, v in data.items()})
    return nx.node_link_data(clean, edges="links")


def to_json(graph: Any, indent: int | None = 2) -> str:
    """The node-link data as JSON text (loads back with `networkx.node_link_graph`)."""
    return json.dumps(to_node_link(graph), indent=indent)
