"""A layered layout: inputs on top, each node one layer below its deepest input.

Layers come from the topological generations of the DiGraph; within a layer,
nodes are ordered by the mean position of their neighbours (a few up and down
sweeps of the barycentre heuristic), which keeps edges short and crossings few
for graphs of a few hundred nodes. Pure Python over networkx: no Graphviz.
"""

from __future__ import annotations

import networkx as nx

Position = tuple[float, float]


def layers(g: nx.DiGraph) -> list[list[str]]:
    """Nodes grouped by longest distance from a source (inputs in layer 0)."""
    level: dict[str, int] = {}
    for key in nx.topological_sort(g):
        level[key] = max((level[p] + 1 for p in g.predecessors(key)), default=0)
    grouped: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for key in g.nodes:  # insertion order: stable across calls
        grouped[level[key]].append(key)
    return grouped


def _order_by_barycentre(grouped: list[list[str]], g: nx.DiGraph, sweeps: int = 4) -> None:
    position = {key: float(i) for layer in grouped for i, key in enumerate(layer)}

    def sweep(layer_indices: range, neighbours: str) -> None:
        for index in layer_indices:
            layer = grouped[index]
            keyed = []
            for i, key in enumerate(layer):
                others = list(g.predecessors(key) if neighbours == "up" else g.successors(key))
                centre = (sum(position[o] for o in others) / len(others)) if others else float(i)
                keyed.append((centre, i, key))
            keyed.sort()
            grouped[index] = [key for _, _, key in keyed]
            for i, key in enumerate(grouped[index]):
                position[key] = float(i)

    for _ in range(sweeps):
        sweep(range(1, len(grouped)), "up")
        sweep(range(len(grouped) - 2, -1, -1), "down")


def layered_layout(g: nx.DiGraph, layer_gap: float = 1.0, node_gap: float = 1.0,
                   sweeps: int = 4) -> dict[str, Position]:
    """Positions (x, y) for every node; y decreases downwards from 0 (inputs on top)."""
    grouped = layers(g)
    if sum(len(layer) for layer in grouped) > 1:
        _order_by_barycentre(grouped, g, sweeps)
    widest = max((len(layer) for layer in grouped), default=1)
    positions: dict[str, Position] = {}
    for depth, layer in enumerate(grouped):
        offset = (widest - len(layer)) / 2.0  # centre each layer
        for i, key in enumerate(layer):
            positions[key] = ((offset + i) * node_gap, -depth * layer_gap)
    return positions
