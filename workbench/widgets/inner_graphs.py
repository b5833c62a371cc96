"""Opening a drawn loop (any node holding an inner graph) in place: one mixin for all widgets.

A widget that draws a graph mixes in `ExpandsInnerGraphs`: it gets `expanded` (the
inner-graph nodes drawn opened), `expand(node)` / `collapse(node)` and the
`expand_button` ("expand loop" / "collapse loop", "expand dense_layer" for an
OpFromGraph named so). The widget keeps `nx_graph` (what it draws) and implements
`_expanded_changed()`: draw again with `to_networkx(..., expand=self.expanded)`,
bringing `inner_graph_in_focus` (the node just opened) into view: a `GraphCanvas` through
`_draw_fitted` (fit again, the canvas's `focus` on the opened node), an SVG through
`_focus_keys` (the opened node and its body as the drawing's `data-focus`).

    stepper.expand("C")       # key, [id] letter or the Apply itself
    stepper.collapse("C")
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import networkx as nx

from workbench.core.graph.basic import Apply
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.inspector import find, to_networkx
from workbench.widgets._common import styled
from workbench.widgets.graph_canvas import GraphCanvas


def holds_inner_graph(obj: Any) -> bool:
    """Whether `obj` is an Apply node whose Op holds an inner graph (a loop, an OpFromGraph)."""
    return isinstance(obj, Apply) and isinstance(obj.op, InnerGraphOp)


def drawn_key(g: nx.DiGraph, obj: Any) -> str | None:
    """The key of the node of `g` drawing `obj` (a Variable or Apply); None when none does."""
    return next((k for k, d in g.nodes(data=True) if obj is not None and d["obj"] is obj),
                None)


class ExpandsInnerGraphs:
    """Mixin: expand / collapse the inner-graph nodes of the graph a widget draws."""

    nx_graph: nx.DiGraph
    expanded: set[Apply]
    expand_button: widgets.Button

    def _init_inner_graphs(self) -> None:
        #: the loop (inner-graph) nodes drawn opened: their inner graph is in the drawing
        self.expanded = set()
        #: the inner-graph node opened last (None once a node is closed): the drawing
        #: brings it and its body into view
        self.inner_graph_in_focus: Apply | None = None
        self._expand_target: Apply | None = None
        self.expand_button = styled(widgets.Button(
            description="expand loop", tooltip="draw the loop's body (inner graph) in place",
            layout=widgets.Layout(width="auto", min_width="120px", display="none")), "wb-expand")
        self.expand_button.on_click(lambda _: self._toggle_expand_target())

    def _expanded_changed(self) -> None:
        """Draw again with `self.expanded` opened (the widget says how)."""
        raise NotImplementedError

    # -- public API ---------------------------------------------------------------------
    def expand(self, node: str | Apply) -> None:
        """Draw the inner graph (a loop's body) of `node` (key, letter or Apply) inside
        the drawing; `collapse` closes it again."""
        self._set_expanded(self._inner_graph_node(node), True)

    def collapse(self, node: str | Apply) -> None:
        self._set_expanded(self._inner_graph_node(node), False)

    # -- helpers --------------------------------------------------------------------------
    def _inner_graph_node(self, node: str | Apply) -> Apply:
        if isinstance(node, str):
            key = node if node in self.nx_graph else find(self.nx_graph, node)
            node = self.nx_graph.nodes[key]["obj"]
        if not holds_inner_graph(node):
            raise ValueError(f"{node} is not a node holding an inner graph (a loop, an "
                             "OpFromGraph): there is nothing to expand")
        return node

    def _set_expanded(self, node: Apply, opened: bool) -> None:
        if opened:
            self.expanded.add(node)
        else:  # closing a loop closes the loops drawn inside it
            inside = {d["obj"] for _, d in to_networkx(node.outputs, expand=True)
                      .nodes(data=True) if isinstance(d["obj"], Apply)}
            self.expanded -= inside | {node}
        self.inner_graph_in_focus = node if opened else None
        self._expanded_changed()
        self._point_expand_button(node)

    def _focus_key(self, g: nx.DiGraph | None = None) -> str | None:
        """The key in `g` (the drawing, `nx_graph` by default) of the inner-graph node
        opened last (in another drawing than `nx_graph`, the one at its `[id]` letter);
        None when none is in focus or it is not drawn."""
        g = self.nx_graph if g is None else g
        key = drawn_key(g, self.inner_graph_in_focus)
        if key is None and g is not self.nx_graph:  # a step rewrote it: the node at its [id]
            mine = drawn_key(self.nx_graph, self.inner_graph_in_focus)
            label = self.nx_graph.nodes[mine]["label"] if mine is not None else None
            key = next((k for k, d in g.nodes(data=True)
                        if label is not None and d["label"] == label
                        and holds_inner_graph(d["obj"])), None)
        return key

    def _focus_keys(self, g: nx.DiGraph | None = None) -> set[str] | None:
        """The keys of the inner-graph node opened last and of its body's nodes in `g`:
        what a view of the drawing centres on (an SVG's `data-focus`); None when no node
        is in focus (the view then fits as it would without a loop)."""
        g = self.nx_graph if g is None else g
        key = self._focus_key(g)
        if key is None:
            return None
        return {key} | {k for k, d in g.nodes(data=True) if d.get("inner_of") == key}

    def _draw_fitted(self, canvas: GraphCanvas, graph: dict[str, Any]) -> None:
        """Draw `graph` (of `nx_graph`) on `canvas` and fit again around the inner graph
        opened last: when the whole graph is too big for the view at 11 px text, the
        canvas puts that node and its body in the middle of it (`GraphCanvas.focus`)."""
        with canvas.hold_sync():
            canvas.graph = graph
            canvas.focus = self._focus_key()
        canvas.fit()  # also when the focus did not change (a collapse after a collapse)

    def _expanded_text(self) -> str:
        """', expanded: dense_layer' for a title ('' when nothing is opened)."""
        names = sorted({str(node.op) for node in self.expanded})
        return f", expanded: {', '.join(names)}" if names else ""

    def _toggle_expand_target(self) -> None:
        node = self._expand_target
        if node is not None:
            self._set_expanded(node, node not in self.expanded)

    def _point_expand_button(self, obj: Any) -> None:
        """Aim the button at `obj`; hide it unless `obj` holds an inner graph."""
        holds = holds_inner_graph(obj)
        self._expand_target = obj if holds else None
        self.expand_button.layout.display = "" if holds else "none"
        if holds:
            title = obj.op.inner_graph_title.split()[0]  # "loop", or an OpFromGraph's name
            self.expand_button.description = (f"collapse {title}" if obj in self.expanded
                                              else f"expand {title}")

    def _point_expand_button_at_drawing(self) -> None:
        """For widgets without a node selection: aim at the node the button toggled last
        while it is still drawn, else at the first outermost inner-graph node."""
        drawn = [d for _, d in self.nx_graph.nodes(data=True) if holds_inner_graph(d["obj"])]
        target = self._expand_target
        if not any(d["obj"] is target for d in drawn):
            target = next((d["obj"] for d in drawn if d.get("inner_of") is None), None)
        self._point_expand_button(target)
