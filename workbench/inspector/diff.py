"""What changed between two graphs: the nodes removed, introduced and kept.

Graph objects keep their identity across the steps of a rewrite (a step swaps
some inputs and leaves the rest of the graph alone), so comparing node keys is
exact: a node of `before` missing from `after` was removed by the step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from workbench.inspector.draw import draw, merge_keys, to_svg
from workbench.inspector.graph import APPLY, merged_graph
from workbench.inspector.layout import GraphLayout, as_digraph, layout_union


@dataclass
class GraphDiff:
    """Node keys removed, introduced and kept, with both graphs for drawing."""

    before: nx.DiGraph
    after: nx.DiGraph
    removed: set[str] = field(default_factory=set)
    introduced: set[str] = field(default_factory=set)
    kept: set[str] = field(default_factory=set)
    _layout: GraphLayout | None = field(default=None, repr=False)
    _merged: tuple[nx.DiGraph, nx.DiGraph, GraphLayout] | None = field(default=None,
                                                                       repr=False)

    @property
    def layout(self) -> GraphLayout:
        """One layout over both graphs: a node they share sits at the same place in
        the before and the after drawing (computed once, on first use)."""
        if self._layout is None:
            self._layout = layout_union([self.before, self.after])
        return self._layout

    def merged(self) -> tuple[nx.DiGraph, nx.DiGraph, GraphLayout]:
        """(before, after) with each Apply and its single output in one box
        (`merged_graph`), and one layout over both."""
        if self._merged is None:
            before, after = merged_graph(self.before), merged_graph(self.after)
            self._merged = before, after, layout_union([before, after])
        return self._merged

    def changed_keys(self, side: str = "after") -> set[str]:
        """The nodes a side's drawing frames: removed (before) or introduced (after)."""
        return self.removed if side == "before" else self.introduced

    def changed_boxes(self, side: str = "after") -> set[str]:
        """The boxes of the merged drawing (`to_svg(merge=True)`) that show a changed node."""
        before, after, _ = self.merged()
        return merge_keys(before if side == "before" else after, self.changed_keys(side))

    def removed_applies(self) -> list[Any]:
        """The Apply objects that left the graph."""
        return [self.before.nodes[k]["obj"] for k in sorted(self.removed)
                if self.before.nodes[k]["kind"] == APPLY]

    def introduced_applies(self) -> list[Any]:
        """The Apply objects that entered the graph."""
        return [self.after.nodes[k]["obj"] for k in sorted(self.introduced)
                if self.after.nodes[k]["kind"] == APPLY]

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.introduced)

    def summary(self) -> str:
        def ops(graph: nx.DiGraph, keys: set[str]) -> str:
            names = sorted(graph.nodes[k]["text"] for k in keys
                           if graph.nodes[k]["kind"] == APPLY)
            return ", ".join(names) or "-"

        def applies(graph: nx.DiGraph, keys: set[str]) -> int:
            return sum(graph.nodes[k]["kind"] == APPLY for k in keys)

        return (f"removed {applies(self.before, self.removed)} Apply nodes "
                f"({ops(self.before, self.removed)}); introduced "
                f"{applies(self.after, self.introduced)} ({ops(self.after, self.introduced)})")

    def __str__(self) -> str:
        return self.summary()

    def draw(self, ax: Any = None, side: str = "after") -> Any:
        """Draw the `after` graph (introduced nodes filled) or the `before` one
        (removed nodes filled), both from the one shared layout."""
        if side == "before":
            return draw(self.before, ax=ax, highlight={"removed": self.removed},
                        positions=self.layout)
        return draw(self.after, ax=ax, highlight={"introduced": self.introduced},
                    positions=self.layout)

    def to_svg(self, side: str = "after", legend: bool = True, merge: bool = False,
               focus: Iterable[str] | None = None) -> str:
        """SVG of one side from the shared layout, its changed nodes filled and framed.

        Both sides carry the same `data-focus` (the bounds of everything the step
        removed or introduced, or of the `focus` keys when given: an opened loop and
        its body), so viewers can show the same window on both.
        `merge`: an Apply and its single output drawn as one box.
        """
        graph = self.before if side == "before" else self.after
        kind = "removed" if side == "before" else "introduced"
        changed = self.changed_keys(side)
        wanted = (self.removed, self.introduced) if focus is None else (set(focus),) * 2
        if merge:
            before, after, positions = self.merged()
            focus = merge_keys(before, wanted[0]) | merge_keys(after, wanted[1])
        else:
            positions, focus = self.layout, wanted[0] | wanted[1]
        return to_svg(graph, highlight={kind: changed}, legend=legend, positions=positions,
                      frame=changed, focus=focus, merge=merge)


def diff(before: Any, after: Any) -> GraphDiff:
    """Compare two graphs (anything `to_networkx` accepts, or DiGraphs)."""
    g_before, g_after = as_digraph(before), as_digraph(after)
    keys_before, keys_after = set(g_before.nodes), set(g_after.nodes)
    return GraphDiff(
        before=g_before,
        after=g_after,
        removed=keys_before - keys_after,
        introduced=keys_after - keys_before,
        kept=keys_before & keys_after,
    )
