"""The one pipeline runner: every rewrite of a graph (modes, `rewrite_graph`, the stepper,
DEBUG) runs through `run_rewriter`, under one RewriteTrace."""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence

from workbench.core.graph import utils as graph_utils
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite.engine import GraphRewriter
from workbench.core.rewrite.inner import rewrite_inner_graphs
from workbench.core.rewrite.trace import RewriteStep, RewriteTrace

__all__ = ["run_rewriter"]


def run_rewriter(rewriter: GraphRewriter, fgraph: FunctionGraph, trace: bool = True,
                 strict: bool = False,
                 step_hooks: Sequence[Callable[[RewriteTrace, RewriteStep, FunctionGraph],
                                               None]] = ()) -> RewriteTrace | None:
    """Apply `rewriter` to `fgraph` in place under a RewriteTrace, and return the trace.
    Then the same rewriter rewrites the inner graphs that ask for it (rewrite/inner.py).

    The trace is attached, and closed at the end, unless `fgraph` already has one (then
    the steps go there and it stays open); `trace=False` records none. With `strict`, a
    rewrite that raises stops rewriting (DEBUG); otherwise it is recorded as a failed
    step and warned about once. `step_hooks` run after each successful step (DEBUG's
    numerical check). Python's cyclic collector is paused meanwhile: big graphs
    allocate many cyclic objects, and each collection costs a walk of the heap.
    """
    recorder = fgraph.rewrite_trace
    own = recorder is None and trace
    if own:
        recorder = RewriteTrace()
        fgraph.attach_feature(recorder)
    hooks = list(step_hooks)
    if recorder is not None:
        recorder.step_hooks.extend(hooks)
    was_strict = fgraph.rewrite_strict
    fgraph.rewrite_strict = strict or was_strict
    # Nodes made by rewrites inherit the user's line from what they replace; walking
    # the stack for each new Variable would only find the line that compiled.
    capture = graph_utils.capture_source_locations
    graph_utils.capture_source_locations = False
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        rewriter.rewrite(fgraph)
        rewrite_inner_graphs(fgraph, rewriter, recorder, strict)  # (a loop's body)
    finally:
        if was_enabled:
            gc.enable()
        graph_utils.capture_source_locations = capture
        fgraph.rewrite_strict = was_strict
        if recorder is not None:
            for hook in hooks:
                recorder.step_hooks.remove(hook)
        if own and recorder is not None:
            recorder.close()
    return recorder
