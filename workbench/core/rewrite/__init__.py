"""Rewrites: the engine, the tagged database, the standard passes and the trace of every step.

    fgraph, trace = workbench.rewrite_graph(outputs, mode="FAST_RUN", trace=True)
    print(trace)                    # a table of every step
    dprint(trace.graph_at(0))       # the input graph; graph_at(len(trace)) is the result

Importing this package registers every standard rewrite (rules/).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from typing import Any

from workbench.core.graph.basic import Variable
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite import rules as rules  # noqa: E402  (registers the rewrites)
from workbench.core.rewrite.db import (
    PassDatabase,
    RewriteDatabase,
    RewriteQuery,
    apply_rewriter,
    mode_rewriter,
    register_canonicalize,
    register_fusion,
    register_inplace,
    register_shape,
    register_specialize,
    register_stabilize,
    rewrite_db,
)
from workbench.core.rewrite.engine import (
    EquilibriumGraphRewriter,
    GraphRewriter,
    NodeRewriter,
    PatternNodeRewriter,
    RewriteCycleWarning,
    RewriteFailureWarning,
    SequentialGraphRewriter,
    WalkingGraphRewriter,
    apply_node_rewriter,
    node_rewriter,
    recording_step,
)
from workbench.core.rewrite.folding import constant_folding
from workbench.core.rewrite.merge import MergeRewriter
from workbench.core.rewrite.runner import run_rewriter
from workbench.core.rewrite.trace import RewriteStep, RewriteTrace

__all__ = [
    "EquilibriumGraphRewriter", "GraphRewriter", "MergeRewriter", "NodeRewriter",
    "PassDatabase", "PatternNodeRewriter", "RewriteCycleWarning", "RewriteDatabase",
    "RewriteQuery",
    "RewriteFailureWarning", "RewriteStep", "RewriteTrace", "SequentialGraphRewriter",
    "WalkingGraphRewriter", "apply_node_rewriter", "constant_folding", "node_rewriter",
    "recording_step", "register_canonicalize", "register_fusion", "register_inplace",
    "register_shape", "register_specialize", "register_stabilize", "rewrite_db",
    "rewrite_graph", "run_rewriter",
]  # fmt: skip


def rewrite_graph(
    outputs: Variable | Sequence[Variable] | FunctionGraph,
    mode: Any = "FAST_RUN",
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    trace: bool = False,
    inputs: Sequence[Variable] | None = None,
) -> FunctionGraph | tuple[FunctionGraph, RewriteTrace]:
    """Rewrite the graph of `outputs` as mode `mode` would (plus `include`, minus `exclude`).

    `outputs` may also be a FunctionGraph (rewritten in place). Returns the
    rewritten FunctionGraph, or `(fgraph, trace)` with `trace=True`.
    """
    if isinstance(outputs, FunctionGraph):
        fgraph = outputs
    else:
        outs = [outputs] if isinstance(outputs, Variable) else list(outputs)
        for position, out in enumerate(outs):
            if not isinstance(out, Variable):
                raise TypeError(f"rewrite_graph: output {position} is not a Variable: {out!r}")
        was_enabled = gc.isenabled()
        gc.disable()  # building a big graph allocates many cyclic objects
        try:
            fgraph = FunctionGraph(inputs, outs)
        finally:
            if was_enabled:
                gc.enable()
    rewriter = mode_rewriter(mode)
    if include or exclude:
        with_tags = getattr(rewriter, "with_tags", None)
        if with_tags is None:
            raise ValueError(f"mode {mode} has no rewrite query to include/exclude from")
        rewriter = with_tags(include=include, exclude=exclude)
    recorder = apply_rewriter(rewriter, fgraph, what=f"mode {mode}")
    return (fgraph, recorder) if trace else fgraph
