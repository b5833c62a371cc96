"""The rewrite engine: node rewriters, pattern rewriters and the graph rewriters that drive them.

A `NodeRewriter` looks at one Apply node and proposes replacements for its
outputs; a `GraphRewriter` changes a whole FunctionGraph (usually by applying
node rewriters). Every change goes through `FunctionGraph.replace` (types are
checked by `filter_variable`) with the NodeRewriter as `reason`, inside a step
opened on the RewriteTrace (trace.py) when one is attached, so each application
of a rewrite to a node can be replayed and inspected.

The equilibrium rewriter is a worklist: a node is re-visited only when its
inputs or clients changed, and rewriters are found through a dict keyed by Op
class (and scalar-op class for Elemwise), so rewriting grows about linearly.
"""

from __future__ import annotations

import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.graph.basic import Apply, Constant, Variable, io_toposort
from workbench.core.graph.features import Feature
from workbench.core.graph.fg import OUTPUT, FunctionGraph

__all__ = [
    "EquilibriumGraphRewriter", "GraphRewriter", "NodeRewriter",
    "PatternNodeRewriter", "RewriteFailureWarning", "RewriteCycleWarning",
    "SequentialGraphRewriter", "WalkingGraphRewriter", "apply_node_rewriter",
    "node_rewriter", "recording_step",
]  # fmt: skip


class RewriteFailureWarning(UserWarning):
    """A rewrite raised; the graph was left unchanged by it and compilation continued."""


class RewriteCycleWarning(UserWarning):
    """Rewrites undid each other (or an equilibrium hit its iteration bound)."""


def source_of(obj: Any) -> str | None:
    """`file:line` where a function (or the class of an object) is defined."""
    code = getattr(obj, "__code__", None)
    if code is not None:
        return f"{code.co_filename}:{code.co_firstlineno}"
    import inspect

    try:
        target = obj if inspect.isclass(obj) else type(obj)
        path = inspect.getsourcefile(target)
        if path is not None and target.__qualname__ == target.__name__:
            # a module-level class: its statement's line, found by a scan of the
            # module's lines (inspect.getsourcelines parses the whole module: ~10 ms
            # per rewrite class, paid by the first compile of every process)
            import linecache
            import re

            pattern = re.compile(rf"\s*class\s+{re.escape(target.__name__)}\b")
            for number, line in enumerate(linecache.getlines(path), 1):
                if pattern.match(line):
                    return f"{path}:{number}"
        _, line = inspect.getsourcelines(target)
        return f"{inspect.getsourcefile(target)}:{line}"
    except (OSError, TypeError):
        return None


# -- node rewriters ----------------------------------------------------------------


class NodeRewriter:
    """Proposes replacements for the outputs of one node.

    Subclasses define `transform(fgraph, node)` returning None/False (no change),
    a list of replacements for `node.outputs` (None entries keep an output), or a
    dict old Variable -> new Variable; and `tracks()`, the Op classes or Op
    instances whose nodes are worth looking at (None: every node).
    """

    name: str = ""
    tags: tuple[str, ...] = ()
    source: str | None = None
    inplace: bool = False

    def tracks(self) -> list[type | Any] | None:
        return None

    def transform(self, fgraph: FunctionGraph, node: Apply) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.transform")

    def add_tags(self, *tags: str) -> None:
        self.tags = tuple(dict.fromkeys((*self.tags, *tags)))

    def __str__(self) -> str:
        return self.name or type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


class FromFunctionNodeRewriter(NodeRewriter):
    """A NodeRewriter made from a function `fn(fgraph, node)` by `@node_rewriter`."""

    def __init__(self, fn: Callable[[FunctionGraph, Apply], Any], tracks: Sequence[Any] | None,
                 inplace: bool = False, name: str | None = None) -> None:
        self.fn = fn
        self._tracks = None if tracks is None else list(tracks)
        self.inplace = inplace
        self.name = name or fn.__name__
        self.tags = ()
        self.source = source_of(fn)
        self.__doc__ = fn.__doc__

    def tracks(self) -> list[Any] | None:
        return self._tracks

    def transform(self, fgraph: FunctionGraph, node: Apply) -> Any:
        return self.fn(fgraph, node)

    def __call__(self, fgraph: FunctionGraph, node: Apply) -> Any:
        return self.fn(fgraph, node)


def carry_over(old: Variable, new: Variable) -> None:
    """What a replacement inherits from the variable it replaces: its name (the
    output called `cost` is still `cost` after a rewrite) and its source line."""
    if new.name is None and old.name is not None:
        new.name = old.name
    old_source = getattr(old.tag, "source", None)
    if old_source is not None:
        new.tag.source = old_source


def node_rewriter(tracks: Sequence[Any] | None, inplace: bool = False, name: str | None = None
                  ) -> Callable[[Callable[..., Any]], FromFunctionNodeRewriter]:
    """Decorator: `@node_rewriter([Elemwise]) def local_x(fgraph, node): ...`."""
    if tracks is not None and not isinstance(tracks, (list, tuple)):
        raise TypeError(f"node_rewriter(tracks) needs a list of Op classes or Op instances "
                        f"(or None for every node), got {tracks!r}")

    def decorate(fn: Callable[..., Any]) -> FromFunctionNodeRewriter:
        if not callable(fn):
            raise TypeError(f"@node_rewriter decorates a function (fgraph, node), got {fn!r}")
        return FromFunctionNodeRewriter(fn, tracks, inplace=inplace, name=name)

    return decorate


# -- pattern rewriter --------------------------------------------------------------


class PatternNodeRewriter(NodeRewriter):
    """Rewrites `in_pattern` into `out_pattern`.

    A pattern is a string (a pattern variable, bound consistently), a dict
    `{"pattern": "x", "constraint": fn(var) -> bool}`, a Constant or a plain number
    (matched by value), or a tuple `(op, sub_pattern, ...)` where `op` is an Op
    instance (matched by equality) or an Op class. The output pattern uses the
    same forms; its ops are called on the bound Variables. By default a matched
    inner node must have a single client, so nothing is computed twice.
    """

    def __init__(self, in_pattern: Any, out_pattern: Any, name: str | None = None,
                 allow_multiple_clients: bool = False, tracks: Sequence[Any] | None = None
                 ) -> None:
        if not isinstance(in_pattern, tuple) or not in_pattern:
            raise TypeError("PatternNodeRewriter in_pattern must be a tuple (op, pattern...), "
                            f"got {in_pattern!r}")
        self.in_pattern = in_pattern
        self.out_pattern = out_pattern
        self.allow_multiple_clients = allow_multiple_clients
        self.name = name or f"pattern_{in_pattern[0]}"
        self.tags = ()
        self.source = user_frame_source()
        self._tracks = list(tracks) if tracks is not None else [in_pattern[0]]

    def tracks(self) -> list[Any]:
        return self._tracks

    def transform(self, fgraph: FunctionGraph, node: Apply) -> Any:
        if len(node.outputs) != 1:
            return None
        binding: dict[str, Variable] = {}
        if not self._match(fgraph, self.in_pattern, node.outputs[0], binding, top=True):
            return None
        new = self._build(self.out_pattern, binding, node.outputs[0])
        if new is None:
            return None
        return [new]

    def _match(self, fgraph: FunctionGraph, pattern: Any, var: Variable,
               binding: dict[str, Variable], top: bool = False) -> bool:
        if isinstance(pattern, str):
            bound = binding.get(pattern)
            if bound is None:
                binding[pattern] = var
                return True
            return bound is var or (isinstance(bound, Constant) and bound.equals(var))
        if isinstance(pattern, dict):
            constraint = pattern.get("constraint")
            if constraint is not None and not constraint(var):
                return False
            return self._match(fgraph, pattern["pattern"], var, binding)
        if isinstance(pattern, tuple):
            node = var.owner
            if node is None:
                return False
            op = pattern[0]
            if isinstance(op, type):
                if not isinstance(node.op, op):
                    return False
            elif node.op != op:
                return False
            if len(node.inputs) != len(pattern) - 1:
                return False
            if (not top and not self.allow_multiple_clients
                    and len(fgraph.clients.get(var, ())) > 1):
                return False
            return all(self._match(fgraph, sub, inp, binding)
                       for sub, inp in zip(pattern[1:], node.inputs))
        const = _constant_behind(var)
        if isinstance(pattern, Constant):
            return pattern.equals(var) or (
                const is not None and _same_value(pattern.data, const.data))
        # a plain Python/NumPy value
        return const is not None and _same_value(pattern, const.data)

    def _build(self, pattern: Any, binding: dict[str, Variable], old: Variable) -> Any:
        if isinstance(pattern, str):
            return binding[pattern]
        if isinstance(pattern, dict):
            return self._build(pattern["pattern"], binding, old)
        if isinstance(pattern, tuple):
            args = [self._build(sub, binding, old) for sub in pattern[1:]]
            return pattern[0](*args)
        if isinstance(pattern, Variable):
            return pattern
        from workbench.core.tensor.basic import as_tensor_variable

        return as_tensor_variable(pattern)


def _constant_behind(var: Variable) -> Constant | None:
    """`var` if a Constant, or the Constant that DimShuffles only broadcast into `var`."""
    while var.owner is not None:
        op = var.owner.op
        # a DimShuffle (read by what it declares: a new order, nothing dropped)
        if getattr(op, "new_order", None) is None or getattr(op, "drop", None):
            return None
        var = var.owner.inputs[0]
    return var if isinstance(var, Constant) else None


def _same_value(a: Any, b: Any) -> bool:
    import numpy as np

    try:
        a, b = np.asarray(a), np.asarray(b)
        return bool(np.all(a == b)) and (a.size > 0 or a.shape == b.shape)
    except Exception:
        return False


def user_frame_source(skip: int = 2) -> str | None:
    """`file:line` of the code that called the caller (where a rewrite object is created)."""
    import sys

    frame = sys._getframe(skip)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else None


# -- applying one node rewriter ------------------------------------------------------


class recording_step:
    """Context manager grouping the changes made inside it into one trace step.

    Graph rewriters that call `fgraph.replace` themselves (merge, fusion, inplace)
    wrap each logical change: `with recording_step(fgraph, self, node): ...`.
    """

    def __init__(self, fgraph: FunctionGraph, rewriter: Any, node: Apply | None = None) -> None:
        self.trace = fgraph.rewrite_trace
        self.rewriter = rewriter
        self.node = node

    def __enter__(self) -> None:
        if self.trace is not None:
            self.trace.begin_step(self.rewriter, self.node)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if self.trace is not None:
            if exc is not None:
                self.trace.fail_step(exc)
            else:
                self.trace.end_step()
        return False


def _failure(fgraph: FunctionGraph, rewriter: Any, node: Apply | None, exc: BaseException,
             trace: Any) -> None:
    """Record a rewrite that raised; warn once per rewrite and graph; re-raise if strict."""
    if trace is not None:
        trace.fail_step(exc)
    if fgraph.rewrite_strict:
        raise exc
    warned = fgraph.__dict__.setdefault("_rewrite_warned", set())
    name = str(rewriter)
    if name in warned:
        return
    warned.add(name)
    where = f" on {node}" if node is not None else ""
    source = getattr(rewriter, "source", None)
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    warnings.warn(
        f"rewrite {name!r}{f' (defined at {source})' if source else ''} raised{where} and was "
        f"skipped: {text}. The graph is still correct; further failures of this rewrite are "
        "recorded in the RewriteTrace (failed steps) without warning.",
        RewriteFailureWarning, stacklevel=3,
    )


def _normalize(node: Apply, result: Any, rewriter: Any) -> list[tuple[Variable, Variable]]:
    if isinstance(result, dict):
        pairs = list(result.items())
    elif isinstance(result, (list, tuple)):
        if len(result) != len(node.outputs):
            raise ValueError(
                f"rewrite {rewriter} returned {len(result)} replacements for {node.op}, which "
                f"has {len(node.outputs)} outputs; return one per output (None keeps it)")
        pairs = [(o, n) for o, n in zip(node.outputs, result) if n is not None]
    elif isinstance(result, Variable):
        if len(node.outputs) != 1:
            raise ValueError(f"rewrite {rewriter} returned one Variable for {node.op} with "
                             f"{len(node.outputs)} outputs; return a list")
        pairs = [(node.outputs[0], result)]
    else:
        raise TypeError(f"rewrite {rewriter} returned {result!r}; expected None, False, a list "
                        "of Variables or a dict {old: new}")
    checked = []
    for old, new in pairs:
        if not isinstance(new, Variable):
            raise TypeError(f"rewrite {rewriter} proposed {new!r} (not a Variable) for {old}")
        if old is new:
            continue
        if old.type != new.type:
            try:
                new = old.type.filter_variable(new)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"rewrite {rewriter} proposed a replacement of type {new.type} for {old} "
                    f"of type {old.type}: {exc}") from exc
        checked.append((old, new))
    return checked


def apply_node_rewriter(fgraph: FunctionGraph, rewriter: NodeRewriter, node: Apply) -> bool:
    """Apply `rewriter` to `node`; True if the graph changed.

    A rewrite that raises (or proposes an ill-typed replacement) is recorded as a
    failed step and warned about once; the graph is left as it was.
    """
    trace = fgraph.rewrite_trace
    start = time.perf_counter()
    # The step is opened only once the rewrite proposes something (most attempts do
    # not); a rewrite changing the graph inside `transform` gets an implicit step.
    try:
        result = rewriter.transform(fgraph, node)
        if result is None or result is False:
            return False
        if trace is not None:
            trace.begin_step(rewriter, node, start)
        pairs = _normalize(node, result, rewriter)
    except Exception as exc:
        if trace is not None and trace.open_rewriter() is not rewriter:
            trace.begin_step(rewriter, node, start)
        _failure(fgraph, rewriter, node, exc, trace)
        return False
    if not pairs:
        if trace is not None:
            trace.cancel_step()
        return False
    try:
        for old, new in pairs:
            if old not in fgraph.variables:
                continue
            if new not in fgraph.variables:
                carry_over(old, new)
            fgraph.replace(old, new, reason=rewriter)
    except Exception as exc:
        _failure(fgraph, rewriter, node, exc, trace)
        return True
    if trace is not None:
        trace.end_step()
    return True


# -- graph rewriters -----------------------------------------------------------------


class GraphRewriter:
    """Changes a whole FunctionGraph in place: `apply(fgraph)`.

    `rewrite(fgraph)` is the entry point: it also tells an attached RewriteTrace
    which pass is running.
    """

    name: str = ""
    tags: tuple[str, ...] = ()
    source: str | None = None

    def apply(self, fgraph: FunctionGraph) -> None:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def rewrite(self, fgraph: FunctionGraph) -> None:
        trace = fgraph.rewrite_trace
        if trace is None or trace.current_pass is not None:
            self.apply(fgraph)
            return
        trace.current_pass = self.name or type(self).__name__
        try:
            self.apply(fgraph)
        finally:
            trace.current_pass = None

    def __call__(self, fgraph: FunctionGraph) -> None:
        self.rewrite(fgraph)

    def add_tags(self, *tags: str) -> None:
        self.tags = tuple(dict.fromkeys((*self.tags, *tags)))

    def __str__(self) -> str:
        return self.name or type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


class _Dispatch:
    """Finds the node rewriters interested in a node, through a cache keyed by Op class.

    For Elemwise nodes the key also holds the scalar op's class, so a rewriter
    tracking `wt.mul.op` is only tried on multiplications.
    """

    def __init__(self, rewriters: Sequence[NodeRewriter]) -> None:
        for rw in rewriters:
            if not isinstance(rw, NodeRewriter):
                raise TypeError(f"expected NodeRewriters, got {rw!r}")
        self.rewriters = list(rewriters)
        self.tracked = [(rw, rw.tracks()) for rw in self.rewriters]
        self.cache: dict[Any, list[tuple[NodeRewriter, tuple[Any, ...] | None]]] = {}
        self.by_op: dict[int, tuple[Any, list[NodeRewriter]]] = {}

    def key(self, op: Any) -> Any:
        scalar = getattr(op, "scalar_op", None)
        return type(op) if scalar is None else (type(op), type(scalar))

    def candidates(self, node: Apply) -> list[tuple[NodeRewriter, tuple[Any, ...] | None]]:
        op = node.op
        key = self.key(op)
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = self._build(op)
        return found

    def _build(self, op: Any) -> list[tuple[NodeRewriter, tuple[Any, ...] | None]]:
        result = []
        op_type = type(op)
        scalar = getattr(op, "scalar_op", None)
        for rw, tracks in self.tracked:
            if tracks is None:
                result.append((rw, None))
                continue
            instances: list[Any] = []
            by_class = False
            for item in tracks:
                if isinstance(item, type):
                    if issubclass(op_type, item):
                        by_class = True
                        break
                elif type(item) is op_type and (
                        scalar is None or type(getattr(item, "scalar_op", None)) is type(scalar)):
                    instances.append(item)
            if by_class:
                result.append((rw, None))
            elif instances:
                result.append((rw, tuple(instances)))
        return result

    def applicable(self, node: Apply) -> list[NodeRewriter]:
        """The rewriters to try on `node`, in order (cached per Op instance)."""
        op = node.op
        cached = self.by_op.get(id(op))
        if cached is not None and cached[0] is op:
            return cached[1]
        found = [rw for rw, instances in self.candidates(node)
                 if instances is None or any(op is inst or op == inst for inst in instances)]
        self.by_op[id(op)] = (op, found)  # holding `op` keeps its id from being reused
        return found


class WalkingGraphRewriter(GraphRewriter):
    """One pass over the nodes (inputs to outputs, or outputs to inputs) applying each
    matching node rewriter; nodes created during the pass are not revisited."""

    def __init__(self, node_rewriters: Sequence[NodeRewriter] | NodeRewriter,
                 order: str = "in_to_out", name: str | None = None) -> None:
        if isinstance(node_rewriters, NodeRewriter):
            node_rewriters = [node_rewriters]
        if order not in ("in_to_out", "out_to_in"):
            raise ValueError(f"order must be 'in_to_out' or 'out_to_in', got {order!r}")
        self.dispatch = _Dispatch(node_rewriters)
        self.order = order
        self.name = name or f"walk_{order}"
        self.tags = ()

    @property
    def node_rewriters(self) -> list[NodeRewriter]:
        return self.dispatch.rewriters

    def apply(self, fgraph: FunctionGraph) -> None:
        nodes = io_toposort(fgraph.inputs, fgraph.outputs)
        if self.order == "out_to_in":
            nodes.reverse()
        for node in nodes:
            if node not in fgraph.apply_nodes:
                continue
            for rw in self.dispatch.applicable(node):
                if apply_node_rewriter(fgraph, rw, node):
                    break


def _structure_key(var: Variable) -> Any:
    """What `var` computes, structurally: (op, inputs) of its owner, or the Variable itself."""
    node = var.owner
    if node is None:
        return var
    try:
        key = (node.op, tuple(node.inputs), var.index)
        hash(key)
    except TypeError:
        return var
    return key


class _Watcher(Feature):
    """Queues the nodes an equilibrium must look at again after each change, and notices
    when a rewrite puts back, at some input slot, something that slot already held
    (rewrites undoing each other)."""

    def __init__(self, queue: Callable[[Apply], None], rewriters: set[Any]) -> None:
        self.queue = queue
        self.rewriters = rewriters
        self.changes = 0
        self.slots: dict[tuple[Any, int], list[tuple[Variable, str]]] = {}
        self.cycles: list[tuple[Any, str]] = []  # (rewriter that undid, rewrite undone)

    def clone(self) -> None:
        return None

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: Any) -> None:
        self.changes += 1
        self.queue(node)
        for var in node.inputs:
            if var.owner is not None:
                self.queue(var.owner)

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old_var: Variable,
                        new_var: Variable, reason: Any) -> None:
        self.changes += 1
        if reason in self.rewriters:
            # Keys (which hash Ops by their props) are only computed for slots that
            # change more than once; most change once.
            history = self.slots.get((node, i))
            if history is None:
                self.slots[(node, i)] = [(old_var, str(reason))]
            else:
                new_key = _structure_key(new_var)
                for held, by in history:
                    if held is new_var or _structure_key(held) == new_key:
                        self.cycles.append((reason, by))
                        break
                history.append((old_var, str(reason)))
        if old_var.owner is not None:
            self.queue(old_var.owner)
        if new_var.owner is not None:
            self.queue(new_var.owner)
        if node == OUTPUT:
            return
        self.queue(node)
        clients = fgraph.clients
        for out in node.outputs:
            for client, _ in clients.get(out, ()):
                if client != OUTPUT:
                    self.queue(client)


class EquilibriumGraphRewriter(GraphRewriter):
    """Applies node rewriters until none applies any more (a fixed point).

    Works from a worklist: every node once in topological order, then only nodes
    whose inputs or clients changed and newly created nodes. `max_use_ratio`
    bounds the number of applications to that multiple of the initial node count
    (plus 100). When a rewrite puts back, at some node input, a computation that
    input held before (same op, same inputs), rewrites are undoing each other:
    they are reported once with a RewriteCycleWarning and the rewrite that put it
    back is disabled for the rest of the run. Graph rewriters given among the
    rewriters run before each round.
    """

    def __init__(self, node_rewriters: Sequence[NodeRewriter | GraphRewriter],
                 max_use_ratio: float = 20.0, name: str | None = None) -> None:
        self.global_rewriters = [r for r in node_rewriters if isinstance(r, GraphRewriter)]
        self.dispatch = _Dispatch([r for r in node_rewriters if not isinstance(r, GraphRewriter)])
        self.max_use_ratio = max_use_ratio
        self.name = name or "equilibrium"
        self.tags = ()
        #: after `apply`: rewrite name -> number of applications
        self.last_counts: dict[str, int] = {}

    @property
    def node_rewriters(self) -> list[NodeRewriter]:
        return self.dispatch.rewriters

    def apply(self, fgraph: FunctionGraph) -> None:
        queued: set[Apply] = set()
        work: deque[Apply] = deque()

        def queue(node: Apply) -> None:
            if node not in queued:
                queued.add(node)
                work.append(node)

        watcher = _Watcher(queue, set(self.dispatch.rewriters))
        budget = int(self.max_use_ratio * max(len(fgraph.apply_nodes), 1)) + 100
        uses = 0
        counts: dict[str, int] = {}
        disabled: set[NodeRewriter] = set()
        undone: list[tuple[str, str]] = []
        fgraph.attach_feature(watcher)
        try:
            for round_ in range(100):
                before = watcher.changes
                for grw in self.global_rewriters:
                    grw.rewrite(fgraph)
                if round_ == 0 or watcher.changes != before:
                    for node in io_toposort(fgraph.inputs, fgraph.outputs):
                        queue(node)
                if not work:
                    break
                apply_nodes = fgraph.apply_nodes
                while work and uses < budget:
                    node = work.popleft()
                    queued.discard(node)
                    if node not in apply_nodes:
                        continue
                    for rw in self.dispatch.applicable(node):
                        if rw in disabled:
                            continue
                        if not apply_node_rewriter(fgraph, rw, node):
                            continue
                        uses += 1
                        counts[rw.name] = counts.get(rw.name, 0) + 1
                        if watcher.cycles:
                            for culprit, previous in watcher.cycles:
                                disabled.add(culprit)
                                undone.append((str(culprit), previous))
                            watcher.cycles.clear()
                        if node in apply_nodes:
                            queue(node)
                        break
                if uses >= budget or not self.global_rewriters:
                    break
        finally:
            fgraph.remove_feature(watcher)
        self.last_counts = counts
        if undone:
            pairs = sorted({f"{a} undoes {b}" if a != b else f"{a} undoes itself"
                            for a, b in undone})
            warnings.warn(
                f"equilibrium {self.name!r}: rewrites undo each other ({'; '.join(pairs)}): "
                f"a computation came back where it had been rewritten away. Disabled "
                f"{', '.join(sorted({a for a, _ in undone}))} for the rest of this pass; "
                "exclude one of them or make their conditions exclusive.",
                RewriteCycleWarning, stacklevel=3)
        if uses >= budget:
            top = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
            warnings.warn(
                f"equilibrium {self.name!r} stopped after {uses} rewrites (max_use_ratio="
                f"{self.max_use_ratio}); the most used: "
                f"{', '.join(f'{n} ({c})' for n, c in top)}", RewriteCycleWarning, stacklevel=3)


class SequentialGraphRewriter(GraphRewriter):
    """Runs graph rewriters one after the other.

    When no pass is running yet (this is the pipeline), each child is a pass for
    the trace and is named after itself.
    """

    def __init__(self, *rewriters: GraphRewriter, name: str | None = None) -> None:
        if len(rewriters) == 1 and isinstance(rewriters[0], (list, tuple)):
            rewriters = tuple(rewriters[0])
        for rw in rewriters:
            if not isinstance(rw, GraphRewriter):
                raise TypeError(f"SequentialGraphRewriter takes GraphRewriters, got {rw!r}; wrap "
                                "node rewriters in a WalkingGraphRewriter or an equilibrium")
        self.rewriters = list(rewriters)
        self.name = name or "sequence"
        self.tags = ()
        #: after `apply`: pass name -> seconds
        self.last_times: dict[str, float] = {}

    def rewrite(self, fgraph: FunctionGraph) -> None:
        self.apply(fgraph)

    def apply(self, fgraph: FunctionGraph) -> None:
        self.last_times = {}
        for rw in self.rewriters:
            start = time.perf_counter()
            rw.rewrite(fgraph)
            self.last_times[str(rw)] = time.perf_counter() - start

    def __iter__(self) -> Any:
        return iter(self.rewriters)
