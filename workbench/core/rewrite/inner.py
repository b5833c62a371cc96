"""Rewriting the graphs inside inner-graph Ops (a loop's body) with the outer rewriter.

After a rewriter has run on a graph, `rewrite_inner_graphs` rewrites the inner
graph of every node whose Op asks for it (`InnerGraphOp.rewrite_inner_graph`)
with the same rewriter, so a loop body gets the same canonicalization, fusion
and in-place passes as the graph around it (nested loops recursively). Each such
node is replaced by the Op around its rewritten graph, recorded as one step of
the outer trace, `rewrite_inner_graph`, on that node; the step's `inner_trace`
holds the body's own steps. The inner graph's inputs are protected from in-place
Ops (they are rows of the loop's sequences and buffers), except those the Op says
are its own to overwrite (`InnerGraphOp.mutable_inner_inputs`: a loop's accumulator,
updated in place by Gemm{inplace} instead of copied at every step).
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.inner_graph import InnerGraphOp, inner_graph_nodes
from workbench.core.rewrite.engine import recording_step
from workbench.core.rewrite.trace import RewriteTrace

__all__ = ["InnerGraphRewrite", "rewrite_inner_graphs"]


class InnerGraphRewrite:
    """The rewrite named in the outer trace for one inner graph rewritten."""

    name = "rewrite_inner_graph"
    tags = ("inner_graph",)
    source = None

    def __str__(self) -> str:
        return self.name


_INNER_REWRITE = InnerGraphRewrite()


def rewrite_inner_graphs(fgraph: FunctionGraph, rewriter: Any,
                         trace: RewriteTrace | None, strict: bool = False) -> None:
    """Rewrite, with the GraphRewriter `rewriter`, the inner graph of each node of
    `fgraph` whose Op asks for it, and put the rewritten Op in place (one step of
    `trace` per node)."""
    from workbench.core.rewrite.rules.inplace import protect_inputs  # (rules import db)
    from workbench.core.rewrite.runner import run_rewriter  # (which calls this module)

    for node in inner_graph_nodes(fgraph):
        op = node.op
        if not getattr(op, "rewrite_inner_graph", False) or \
                getattr(op, "inner_graph_rewritten", False):
            continue
        inner = FunctionGraph(op.inner_inputs, op.inner_outputs)
        position = {v: k for k, v in enumerate(op.inner_inputs)}  # (inner has copies)
        mutable = tuple(inner.inputs[position[v]] for v in op.mutable_inner_inputs())
        inner.mutable_inputs = mutable
        protect_inputs(inner, mutable)
        inner_trace = run_rewriter(rewriter, inner, trace=trace is not None, strict=strict)
        new_op: InnerGraphOp = op.clone_with_inner_graph(inner)
        new_op.inner_graph_rewritten = True  # type: ignore[attr-defined]
        new_op.inner_rewrite_trace = inner_trace  # type: ignore[attr-defined]
        new_node = new_op.make_node(*node.inputs)
        replacement = new_op.after_inner_rewrite(new_node) or list(new_node.outputs)
        if trace is None:
            fgraph.replace_all(list(zip(node.outputs, replacement)), reason=_INNER_REWRITE)
            continue
        outer_pass, trace.current_pass = trace.current_pass, "inner graphs"
        try:
            with recording_step(fgraph, _INNER_REWRITE, node):
                fgraph.replace_all(list(zip(node.outputs, replacement)),
                                   reason=_INNER_REWRITE)
        finally:
            trace.current_pass = outer_pass
        trace.steps[-1].inner_trace = inner_trace
