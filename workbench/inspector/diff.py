"""What changed between two graphs: the nodes removed, introduced and kept.

Graph objects keep their identity across the steps of a rewrite (a step swaps
some inputs and leaves the rest of the graph alone), so comparing node keys is
exact: a node of `before` missing from `after` was removed by the step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from workbench.inspector.draw import _as_digraph, draw, to_svg
from workbench.inspector.graph import APPLY


@dataclass
class GraphDiff:
    """Node keys removed, introduced and kept, with both graphs for drawing."""

    before: nx.DiGraph
    after: nx.DiGraph
    removed: set[str] = field(default_factory=set)
    introduced: set[str] = field(default_factory=set)
    kept: set[str] = field(default_factory=set)

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

        return (f"removed {len(self.removed)} nodes ({ops(self.before, self.removed)}); "
                f"introduced {len(self.introduced)} ({ops(self.after, self.introduced)}); "
                f"kept {len(self.kept)}")

    def __str__(self) -> str:
        return self.summary()

    def draw(self, ax: Any = None, side: str = "after") -> Any:
        """Draw the `after` graph (introduced nodes highlighted) or the `before` one."""
        if side == "before":
            return draw(self.before, ax=ax, highlight={"removed": self.removed})
        return draw(self.after, ax=ax, highlight={"introduced": self.introduced})

    def to_svg(self, side: str = "after") -> str:
        if side == "before":
            return to_svg(self.before, highlight={"removed": self.removed})
        return to_svg(self.after, highlight={"introduced": self.introduced})


def diff(before: Any, after: Any) -> GraphDiff:
    """Compare two graphs (anything `to_networkx` accepts, or DiGraphs)."""
    g_before, g_after = _as_digraph(before), _as_digraph(after)
    keys_before, keys_after = set(g_before.nodes), set(g_after.nodes)
    return GraphDiff(
        before=g_before,
        after=g_after,
        removed=keys_before - keys_after,
        introduced=keys_after - keys_before,
        kept=keys_before & keys_after,
    )
