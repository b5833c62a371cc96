"""The inspector: graphs as networkx DiGraphs, laid out, drawn, diffed and exported.

    from workbench.inspector import to_networkx, to_svg, diff
    g = to_networkx(y)              # a node per Variable and per Apply
    lay = layout(y)                 # boxes and edge routes (plain data) every picture draws
    svg = to_svg(y)                 # standalone SVG, no Graphviz needed
    d = diff(graph_before, graph_after)
"""

from workbench.inspector.diff import GraphDiff, diff
from workbench.inspector.draw import draw, to_svg
from workbench.inspector.export import to_dot, to_json, to_node_link
from workbench.inspector.graph import (
    ancestors,
    apply_nodes,
    count_by_op,
    critical_path,
    depth,
    descendants,
    find,
    node_key,
    subgraph_between,
    to_networkx,
)
from workbench.inspector.layout import (
    EdgeRoute,
    GraphLayout,
    NodeBox,
    layers,
    layout,
    layout_union,
)

__all__ = [
    "EdgeRoute", "GraphDiff", "GraphLayout", "NodeBox", "ancestors", "apply_nodes",
    "count_by_op", "critical_path", "depth", "descendants", "diff", "draw", "find", "layers",
    "layout", "layout_union", "node_key", "subgraph_between", "to_dot", "to_json",
    "to_networkx", "to_node_link", "to_svg",
]  # fmt: skip
