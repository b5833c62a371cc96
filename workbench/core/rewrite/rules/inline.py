"""Inlining (canonicalize): an inner-graph Op that asks to be inlined (`op.inline`, as
`OpFromGraph(..., inline=True)` does) is replaced by its inner graph, which the outer
rewrites then see through. A rule of the database from the start, like every other,
whichever inner-graph Ops were imported."""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply, clone_replace
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.core.rewrite.db import register_canonicalize
from workbench.core.rewrite.engine import node_rewriter

__all__ = ["inline_op_from_graph"]


@register_canonicalize
@node_rewriter([InnerGraphOp])
def inline_op_from_graph(fgraph: Any, node: Apply) -> Any:
    """An inner-graph Op made with inline=True (an OpFromGraph) is replaced by its inner
    graph."""
    if not getattr(node.op, "inline", False):
        return None
    return clone_replace(list(node.op.inner_outputs),
                         dict(zip(node.op.inner_inputs, node.inputs)))
