"""MergeRewriter: each value computed once, by merging equal constants and identical nodes.

Equal Constants (same `signature()`) become one; Apply nodes with the same op
and the same inputs become one. Nodes that destroy an input, and nodes whose
outputs some inplace Op overwrites, are never merged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from workbench.core.graph.basic import Apply, Constant, Variable, io_toposort
from workbench.core.graph.destroyhandler import memory_walk
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite.engine import GraphRewriter, recording_step, source_of

__all__ = ["MergeRewriter"]


class MergeRewriter(GraphRewriter):
    """Merges equal Constants (same `signature()`) and identical Apply nodes (same op,
    same inputs), so each value is computed once. Nodes that destroy an input are
    never merged."""

    def __init__(self, name: str = "merge") -> None:
        self.name = name
        self.tags = ()
        self.source = source_of(type(self))

    def apply(self, fgraph: FunctionGraph) -> None:
        # The data dependencies only (no feature orderings): merging needs no more.
        order = io_toposort(fgraph.inputs, fgraph.outputs)
        canon = _Canonical()
        # Constants in the order their first users run (not set order): clients lists
        # then grow and shrink in the same order, which keeps list removals cheap.
        constants = dict.fromkeys(v for node in order for v in node.inputs
                                  if isinstance(v, Constant))
        constants.update(dict.fromkeys(v for v in fgraph.outputs if isinstance(v, Constant)))
        first_of: dict[Any, Constant] = {}
        duplicates = []
        for var in constants:
            try:
                sig = var.signature()
                key = (canon(sig[0]), sig[1:]) if isinstance(sig, tuple) and sig else sig
                hash(key)
            except TypeError:
                continue
            first = first_of.setdefault(key, var)
            if first is not var:
                duplicates.append((var, first))
        if duplicates:  # one step for all the constants
            with recording_step(fgraph, _MergeConstants(self), None):
                for var, first in duplicates:
                    fgraph.replace(var, first, reason=self)
        seen: dict[Any, Apply] = {}
        overwritten: set[Variable] | None = None
        apply_nodes = fgraph.apply_nodes
        for node in order:
            if node not in apply_nodes or getattr(node.op, "destroy_map", None):
                continue
            try:
                key = (canon(node.op), tuple(node.inputs))
            except TypeError:
                continue
            first = seen.setdefault(key, node)
            if first is node or first not in apply_nodes:
                seen[key] = node
                continue
            if any(a.type != b.type for a, b in zip(first.outputs, node.outputs)):
                continue
            if overwritten is None:
                overwritten = _overwritten_variables(order)
            if overwritten and any(v in overwritten for v in (*first.outputs, *node.outputs)):
                continue  # the readers of one copy would see the other overwritten
            with recording_step(fgraph, self, node):
                for old, new in zip(node.outputs, first.outputs):
                    fgraph.replace(old, new, reason=self)


class _MergeConstants:
    """Names the step in which a MergeRewriter unified equal constants."""

    def __init__(self, merge: MergeRewriter) -> None:
        self.name = f"{merge.name}:constants"
        self.tags = merge.tags
        self.source = merge.source


class _Canonical:
    """Maps equal (hashable) objects to one representative's id, hashing each instance
    once: Ops and Types hash their props, which is slow to repeat per node."""

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[Any, int]] = {}
        self.table: dict[Any, Any] = {}

    def __call__(self, obj: Any) -> int:
        hit = self.by_id.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        rep = self.table.setdefault(obj, obj)  # TypeError if unhashable
        self.by_id[id(obj)] = (obj, id(rep))
        return id(rep)


def _overwritten_variables(nodes: Iterable[Apply]) -> set[Variable]:
    """The Variables some node overwrites in place (destroy_map), directly or through a
    view of them (view_map), computed once per merge from the destroyers upwards."""
    result: set[Variable] = set()
    for node in nodes:
        for ins in (getattr(node.op, "destroy_map", None) or {}).values():
            for i in ins:
                if node.inputs[i] not in result:
                    result.update(memory_walk(node.inputs[i])[0])
    return result
