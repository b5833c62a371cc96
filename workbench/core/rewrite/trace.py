"""RewriteTrace: a record of every step of a rewrite, replayable back and forth.

A step is one successful (or failed) application of one rewrite to one node.
The trace is a Feature: it learns about changes from the FunctionGraph's
callbacks and groups them into steps opened by the engine (`begin_step` /
`end_step`); changes made outside an open step form implicit steps named
after the `reason` given to `fgraph.replace`.

Every input change is in the graph's one journal (`fgraph.journal`, which History's
checkpoints mark too) as (node, i, old_var, new_var); a step is the span of it
between two marks.
`view_at(k)` moves one dedicated copy of the graph (the live view) to step k by
undoing or replaying journal entries, never by re-running rewrites, so stepping is
cheap. `graph_at(k)` copies the view at step k into a graph of its own, which stays
at step k however the trace moves afterwards; its nodes keep the trace's ids, and
the inspector matches them with the same nodes at other steps (`diff`).
"""

from __future__ import annotations

import time
import traceback
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.core.graph.basic import Apply, Constant, Variable, clone_get_equiv
from workbench.core.graph.features import AlreadyThere, Feature
from workbench.core.graph.fg import OUTPUT, FunctionGraph

__all__ = ["RewriteStep", "RewriteTrace", "StepList"]


@dataclass
class RewriteStep:
    """One application of one rewrite to one node (see RewriteTrace)."""

    index: int
    rewrite: str
    tags: tuple[str, ...]
    source: str | None
    pass_: str | None
    node: Apply | None
    node_id: int | None
    removed: list[Apply] = field(default_factory=list)
    introduced: list[Apply] = field(default_factory=list)
    removed_ids: list[int] = field(default_factory=list)
    introduced_ids: list[int] = field(default_factory=list)
    nodes_before: int = 0
    nodes_after: int = 0
    ops_before: int = 0
    ops_after: int = 0
    time: float = 0.0
    failed: bool = False
    error: str | None = None
    journal_start: int = 0
    journal_end: int = 0
    rewriter: Any = None
    #: for a step rewriting an inner graph (a loop's body): that graph's own trace
    inner_trace: Any = None

    @property
    def changed(self) -> bool:
        """True if the step changed the graph."""
        return self.journal_end > self.journal_start or bool(self.introduced or self.removed)

    def __str__(self) -> str:
        status = " FAILED" if self.failed else ""
        return (f"step {self.index}: {self.rewrite} [{self.pass_}] -{len(self.removed)} "
                f"+{len(self.introduced)} nodes{status}")


class StepList(list):
    """A list of RewriteSteps that prints as a table."""

    def table(self, width: int | None = None) -> str:
        return _table(self, width)

    def __str__(self) -> str:
        return _table(self)


def _table(steps: list[RewriteStep], width: int | None = None) -> str:
    header = ("step", "rewrite", "tags", "pass", "nodes -/+", "nodes", "time ms")
    rows = [header]
    for s in steps:
        rewrite = s.rewrite + (" FAILED" if s.failed else "")
        tags = ",".join(t for t in s.tags if t not in ("fast_run", "fast_compile"))
        rows.append((str(s.index), rewrite, tags[:30], str(s.pass_ or ""),
                     f"-{len(s.removed)}/+{len(s.introduced)}",
                     f"{s.nodes_before}->{s.nodes_after}", f"{s.time * 1e3:.3f}"))
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        rows = [row[:2] + row[3:] for row in rows]  # without the tags
        widths = widths[:2] + widths[3:]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


_class_sources: dict[type, str | None] = {}


def _class_source(rewriter: Any) -> str | None:
    """Where the class of a rewriter without a `source` is defined (cached per class)."""
    if rewriter is None or isinstance(rewriter, str):
        return None
    cls = type(rewriter)
    if cls not in _class_sources:
        from workbench.core.rewrite.engine import source_of

        _class_sources[cls] = source_of(cls)
    return _class_sources[cls]


class _Open:
    __slots__ = ("rewriter", "node", "start", "journal_start", "nodes_before", "ops_before",
                 "removed", "introduced", "implicit_reason", "depth")

    def __init__(self) -> None:
        self.removed: list[Apply] = []
        self.introduced: list[Apply] = []
        self.implicit_reason: Any = None
        self.depth = 1


class RewriteTrace(Feature):
    """Records the steps of a rewrite of a FunctionGraph (attach it before rewriting).

    `trace.steps` (also iteration and `len`), `trace.graph_at(k)` (k=0: the input
    graph; a graph of its own), `trace.view_at(k)` (one live view, for stepping),
    `trace.filter(pass_=, rewrite=, changed_only=)`, `print(trace)`.
    After attaching, `fgraph.rewrite_trace` is this trace; `close()` ends recording.
    """

    def __init__(self) -> None:
        self.steps: list[RewriteStep] = []
        #: the graph's journal (`fgraph.journal`, shared with History); this trace's steps
        #: are spans of it from `_journal_start` on
        self.journal: list[tuple[Any, int, Variable, Variable]] = []
        self._journal_start = 0
        self.current_pass: str | None = None
        self.fgraph: FunctionGraph | None = None
        #: callables (trace, step, fgraph) run after each successful step (DEBUG checks)
        self.step_hooks: list[Callable[[RewriteTrace, RewriteStep, FunctionGraph], None]] = []
        self._ids: dict[Apply, int] = {}
        self._op_counts: dict[Any, int] = {}
        self._open: _Open | None = None
        self._inputs: list[Variable] = []
        self._frozen: dict[Apply, tuple[Variable, ...]] | None = None
        self._final_outputs: list[Variable] | None = None
        self._view: FunctionGraph | None = None
        self._copy: dict[Any, Any] = {}
        self._by_id: dict[int, Apply] = {}
        #: node of a graph_at copy -> the live view's node it copies (for its id)
        self._copied_from: weakref.WeakKeyDictionary[Apply, Apply] = \
            weakref.WeakKeyDictionary()
        self._position = 0
        self.total_time = 0.0

    def clone(self) -> None:
        return None

    # -- recording ---------------------------------------------------------------
    def on_attach(self, fgraph: FunctionGraph) -> None:
        if fgraph.rewrite_trace is not None:
            raise AlreadyThere("a RewriteTrace is already attached to this graph")
        if self.fgraph is not None:
            raise ValueError("a RewriteTrace records one graph; make a new one")
        self.fgraph = fgraph
        fgraph.rewrite_trace = self
        self.journal = fgraph.start_journal()
        self._journal_start = len(self.journal)
        self._inputs = list(fgraph.inputs)
        for node in fgraph.toposort():
            self._ids[node] = len(self._ids)
            self._count(node.op, 1)

    def on_detach(self, fgraph: FunctionGraph) -> None:
        if fgraph.rewrite_trace is self:
            fgraph.rewrite_trace = None
            fgraph.stop_journal()

    def _count(self, op: Any, delta: int) -> None:
        # Ops are counted by kind (class, and scalar-op class for Elemwise): hashing
        # Ops by their props is too slow to do on every import.
        scalar = getattr(op, "scalar_op", None)
        key = type(op) if scalar is None else (type(op), type(scalar))
        n = self._op_counts.get(key, 0) + delta
        if n:
            self._op_counts[key] = n
        else:
            self._op_counts.pop(key, None)

    def _ensure_step(self, reason: Any, journaled: int = 0) -> _Open:
        """The open step, or a new implicit one for `reason`, which starts `journaled`
        entries back (the change being reported is already in the journal)."""
        current = self._open
        if current is not None and (current.implicit_reason is None
                                    or current.implicit_reason is reason):
            return current
        if current is not None:
            self._finish(current, journaled=journaled)
        opened = self._new_open(reason, None)
        opened.journal_start -= journaled
        opened.implicit_reason = reason if reason is not None else "change"
        self._open = opened
        return opened

    def _new_open(self, rewriter: Any, node: Apply | None) -> _Open:
        assert self.fgraph is not None
        opened = _Open()
        opened.rewriter = rewriter
        opened.node = node
        opened.start = time.perf_counter()
        opened.journal_start = len(self.journal)
        opened.nodes_before = len(self.fgraph.apply_nodes)
        opened.ops_before = len(self._op_counts)
        return opened

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: Any) -> None:
        if node not in self._ids:
            self._ids[node] = len(self._ids)
        self._count(node.op, 1)
        if self._frozen is None:
            self._ensure_step(reason).introduced.append(node)

    def on_prune(self, fgraph: FunctionGraph, node: Apply, reason: Any) -> None:
        self._count(node.op, -1)
        if self._frozen is None:
            self._ensure_step(reason).removed.append(node)

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old_var: Variable,
                        new_var: Variable, reason: Any) -> None:
        if self._frozen is not None:
            return
        # the graph journaled the change before telling its features (not while reverting)
        self._ensure_step(reason, journaled=1 if fgraph.journal is not None else 0)
        # a replacement built inside a rewrite has no user source: give it the old one
        if getattr(new_var.tag, "source", None) is None:
            source = getattr(old_var.tag, "source", None)
            if source is not None:
                new_var.tag.source = source

    # -- steps (called by the engine) ---------------------------------------------
    def begin_step(self, rewriter: Any, node: Apply | None = None,
                   start: float | None = None) -> None:
        """Open the step of `rewriter` applied to `node` (`start`: when it began)."""
        current = self._open
        if current is not None:
            if current.implicit_reason is None:
                current.depth += 1
                return
            self._finish(current)
        self._open = self._new_open(rewriter, node)
        if start is not None:
            self._open.start = start

    def open_rewriter(self) -> Any:
        """The rewriter of the step being recorded (None if none is open)."""
        return self._open.rewriter if self._open is not None else None

    def _pop(self) -> _Open | None:
        current = self._open
        if current is None:
            return None
        if current.implicit_reason is None and current.depth > 1:
            current.depth -= 1
            return None
        self._open = None
        return current

    def cancel_step(self) -> None:
        """The rewrite declined; forget the step unless it changed the graph anyway."""
        current = self._pop()
        if current is None:
            return
        if len(self.journal) > current.journal_start or current.introduced or current.removed:
            self._finish(current)

    def end_step(self) -> None:
        current = self._pop()
        if current is not None:
            step = self._finish(current)
            if self.step_hooks and self.fgraph is not None:
                for hook in self.step_hooks:
                    hook(self, step, self.fgraph)

    def fail_step(self, exc: BaseException) -> None:
        current = self._pop()
        if current is None:
            return
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self._finish(current, error=text)

    def _finish(self, current: _Open, error: str | None = None, journaled: int = 0
                ) -> RewriteStep:
        assert self.fgraph is not None
        if self._open is current:
            self._open = None
        rewriter = current.rewriter
        name = getattr(rewriter, "name", None) or str(rewriter)
        elapsed = time.perf_counter() - current.start
        self.total_time += elapsed
        ids = self._ids
        step = RewriteStep(
            index=len(self.steps) + 1, rewrite=name, tags=tuple(getattr(rewriter, "tags", ())),
            source=getattr(rewriter, "source", None) or _class_source(rewriter),
            pass_=self.current_pass,
            node=current.node, node_id=ids.get(current.node) if current.node else None,
            removed=current.removed, introduced=current.introduced,
            removed_ids=[ids[n] for n in current.removed],
            introduced_ids=[ids[n] for n in current.introduced],
            nodes_before=current.nodes_before, nodes_after=len(self.fgraph.apply_nodes),
            ops_before=current.ops_before, ops_after=len(self._op_counts), time=elapsed,
            failed=error is not None, error=error, journal_start=current.journal_start,
            journal_end=len(self.journal) - journaled, rewriter=rewriter,
        )
        self.steps.append(step)
        return step

    def close(self) -> None:
        """Stop recording: detach from the graph and freeze its final state."""
        if self._frozen is not None:
            return
        if self._open is not None:
            self._finish(self._open)
            self._open = None
        fgraph = self.fgraph
        if fgraph is None:
            raise ValueError("this RewriteTrace was never attached to a graph")
        self._frozen = {node: tuple(node.inputs) for node in self._ids}
        self._final_outputs = list(fgraph.outputs)
        self._position = len(self.steps)
        fgraph.remove_feature(self)

    # -- reading -----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[RewriteStep]:
        return iter(self.steps)

    def __getitem__(self, k: int) -> RewriteStep:
        """Step k (1-based, like graph_at)."""
        if not 1 <= k <= len(self.steps):
            raise IndexError(f"the trace has steps 1..{len(self.steps)}, not {k}")
        return self.steps[k - 1]

    @property
    def failed_steps(self) -> StepList:
        return StepList(s for s in self.steps if s.failed)

    def filter(self, pass_: str | None = None, rewrite: str | None = None,
               changed_only: bool = False, failed: bool | None = None) -> StepList:
        """The steps of a pass, of a rewrite (by name), that changed the graph, or failed."""
        return StepList(
            s for s in self.steps
            if (pass_ is None or s.pass_ == pass_)
            and (rewrite is None or s.rewrite == rewrite)
            and (not changed_only or s.changed)
            and (failed is None or s.failed == failed)
        )

    def rewrites_used(self) -> dict[str, int]:
        """Rewrite name -> number of successful steps."""
        counts: dict[str, int] = {}
        for s in self.steps:
            if not s.failed and s.changed:
                counts[s.rewrite] = counts.get(s.rewrite, 0) + 1
        return counts

    def table(self, width: int | None = None) -> str:
        """The steps as a table; with `width` (a terminal's columns) the tags column is
        left out when the table would be wider (each pass is named by its main tag)."""
        return _table(self.steps, width)

    def __str__(self) -> str:
        return _table(self.steps)

    def __repr__(self) -> str:
        return f"<RewriteTrace {len(self.steps)} steps>"

    def node_id(self, node: Apply) -> int:
        """The stable id of a node: an original node, its copy in the live view, or in a
        graph returned by `graph_at`."""
        found = self._ids.get(node)
        if found is None:
            found = self._ids[self._copied_from[node]]
        return found

    def node(self, node_id: int, graph: FunctionGraph | None = None) -> Apply:
        """The node with this id in `graph` (one that `graph_at` returned), else in the
        live view (`view_at`). KeyError when it has none."""
        self._build_view()
        if graph is not None:
            for node in graph.apply_nodes:
                if self._ids.get(self._copied_from.get(node, node)) == node_id:
                    return node
            raise KeyError(f"no node with id {node_id} in this graph of the trace")
        found = self._by_id.get(node_id)
        if found is None:
            raise KeyError(f"no node with id {node_id} in this trace")
        return found

    # -- replay ------------------------------------------------------------------
    def _build_view(self) -> FunctionGraph:
        if self._view is not None:
            return self._view
        if self._frozen is None:
            self.close()
        assert self._frozen is not None and self._final_outputs is not None
        copy = self._copy

        def var_copy(var: Variable) -> Variable:
            new = copy.get(var)
            if new is None:
                if var.owner is not None and var.owner in self._frozen:
                    node_copy(var.owner)
                    return copy[var]
                new = copy[var] = var.clone()
            return new

        def node_copy(node: Apply) -> Apply:
            new = copy.get(node)
            if new is not None:
                return new
            new = Apply.__new__(Apply)
            new.op = node.op
            new.tag = node.tag
            new.outputs = []
            copy[node] = new
            for index, out in enumerate(node.outputs):
                out_copy = out.clone()
                out_copy.owner, out_copy.index = new, index
                new.outputs.append(out_copy)
                copy[out] = out_copy
            new.inputs = []
            return new

        for node in self._frozen:
            node_copy(node)
        for node, inputs in self._frozen.items():
            copy[node].inputs = [var_copy(v) for v in inputs]
        for node in self._frozen:
            self._ids[copy[node]] = self._ids[node]
            self._by_id[self._ids[node]] = copy[node]
        inputs = [var_copy(v) for v in self._inputs]
        outputs = [var_copy(v) for v in self._final_outputs]
        self._view = FunctionGraph(inputs, outputs, clone=False)
        self._position = len(self.steps)
        return self._view

    def _mark(self, k: int) -> int:
        return self._journal_start if k == 0 else self.steps[k - 1].journal_end

    def graph_at(self, k: int) -> FunctionGraph:
        """The graph after step k (0: the input graph, len(trace): the result), as a graph
        of its own: it stays at step k whatever the trace does next.

        The live view moves to step k (undoing or replaying the recorded input changes
        only), then is copied (one pass over its nodes). The copy's nodes have the
        trace's ids (`node_id`, `node(id, graph)`), and `workbench.inspector` keys them
        as the view's, so `diff(graph_at(k - 1), graph_at(k))` is what step k changed.
        """
        view = self.view_at(k)
        equiv = clone_get_equiv(view.inputs, view.outputs, copy_inputs=True,
                                copy_orphans=False)
        graph = FunctionGraph([equiv[v] for v in view.inputs],
                              [equiv[v] for v in view.outputs], clone=False)
        # id of each copied object -> the view's object it copies (see inspector.graph)
        graph.copied_from = {id(new): old  # type: ignore[attr-defined]
                             for old, new in equiv.items()}
        for old, new in equiv.items():
            if isinstance(old, Apply):
                self._copied_from[new] = old
        return graph

    def view_at(self, k: int) -> FunctionGraph:
        """The trace's one live view of the graph, moved to step k: the cheapest way to
        step (only the recorded input changes between its step and k are undone or
        replayed), but shared: the next `view_at` or `graph_at` moves it. Read it
        (dprint, to_networkx, node) before moving on; `graph_at(k)` gives a graph to keep.
        """
        if not isinstance(k, int) or not 0 <= k <= len(self.steps):
            raise IndexError(f"graph_at(k) and view_at(k) need 0 <= k <= {len(self.steps)}, "
                             f"got {k!r}")
        view = self._build_view()
        copy = self._copy
        here, there = self._mark(self._position), self._mark(k)
        journal = self.journal
        if there < here:
            for j in range(here - 1, there - 1, -1):
                node, i, old, new = journal[j]
                target = OUTPUT if node == OUTPUT else copy[node]
                view.change_node_input(target, i, self._var(old), reason="trace", check=False)
        else:
            for j in range(here, there):
                node, i, old, new = journal[j]
                target = OUTPUT if node == OUTPUT else copy[node]
                view.change_node_input(target, i, self._var(new), reason="trace", check=False)
        self._position = k
        return view

    def _var(self, var: Variable) -> Variable:
        new = self._copy.get(var)
        if new is None:
            new = self._copy[var] = var.clone() if isinstance(var, Constant) else var.clone()
        return new
