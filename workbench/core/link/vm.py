"""The Python linker: storage cells, thunks and two virtual machines that run them.

A linker turns a `FunctionGraph` into a zero-argument callable. Every Variable
gets a *storage cell* (a one-element list holding its current value) and a
*compute cell* (0: not computed, 1: computed, 2: computed and since freed).
Each Apply node becomes a `Thunk` (from `Op.make_thunk`) reading its input cells
and writing its output cells. A VM then runs the thunks:

- `LoopVM` when no node is lazy: a plain loop over the thunks in topological
  order, freeing each intermediate value right after its last client ran;
- `StackVM` when some node is lazy (e.g. IfElse): outputs are evaluated on demand
  with an explicit stack, so only what is needed runs (only the taken branch of
  an if-else) and graphs of any depth work without Python recursion.

An exception raised inside a thunk keeps its type; a note naming the node, its
input types and the actual input values, and the user's line that created the
node is added to it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant, Variable, describe_value
from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.core.graph.op import Thunk
from workbench.core.graph.type import Type
from workbench.core.graph.utils import MethodNotDefined

Cell = list  # a one-element list holding a value (storage) or a 0/1/2 flag (compute)

__all__ = [
    "Container", "Linker", "LoopVM", "PyLinker", "StackVM", "VM", "VMLinker",
    "annotate_thunk_error", "copy_value", "describe_value", "may_share_memory",
]  # fmt: skip


# -- values ------------------------------------------------------------------------


def copy_value(value: Any) -> Any:
    """A copy of `value` that shares no memory with it (arrays copied, objects deep-copied)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if value is None or isinstance(value, (np.generic, int, float, complex, str, bool, bytes)):
        return value  # immutable
    return copy.deepcopy(value)


def may_share_memory(type_: Type, a: Any, b: Any) -> bool:
    """Whether values `a` and `b` might share memory (arrays by address, others by Type)."""
    if a is b:
        return a is not None
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    try:
        return bool(type_.may_share_memory(a, b))
    except Exception:
        return False


#: Timeline events kept per profiled function (older calls are still timed, not traced).
MAX_PROFILE_EVENTS = 200_000

class Container:
    """A storage cell with a Type and a name: how Functions expose inputs and outputs
    and how shared variables hold their value.

    `storage` is the one-element list the VM reads; setting `value` filters the
    new value through the type.
    """

    __slots__ = ("type", "storage", "name", "strict", "allow_downcast", "readonly")

    def __init__(
        self,
        type: Type,
        storage: Cell | None = None,
        name: str | None = None,
        strict: bool = False,
        allow_downcast: bool | None = None,
        readonly: bool = False,
    ) -> None:
        self.type = type
        self.storage = storage if storage is not None else [None]
        self.name = name
        self.strict = strict
        self.allow_downcast = allow_downcast
        self.readonly = readonly

    @property
    def value(self) -> Any:
        return self.storage[0]

    @value.setter
    def value(self, new: Any) -> None:
        if self.readonly:
            raise ValueError(f"container {self.name or self.type} is read-only")
        if new is None:
            self.storage[0] = None
            return
        self.storage[0] = self.type.filter(new, self.strict, self.allow_downcast)

    data = value

    def __repr__(self) -> str:
        return f"<{self.name or 'container'}: {describe_value(self.storage[0])}>"


# -- errors ----------------------------------------------------------------------


def _add_note(exc: BaseException, note: str) -> None:
    add = getattr(exc, "add_note", None)
    if add is not None:  # Python >= 3.11
        add(note)
    elif exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}\n{note}", *exc.args[1:])


def annotate_thunk_error(exc: BaseException, node: Apply, thunk: Thunk | None = None) -> None:
    """Add to `exc` a note naming `node`, its inputs (types and actual values) and the
    user's source line that created it; also set `exc.workbench_node`."""
    lines = [f"Apply node that caused the error: {node}"]
    lines.append(f"Op: {node.op} ({type(node.op).__module__}.{type(node.op).__qualname__})")
    lines.append("Input types: [" + ", ".join(str(v.type) for v in node.inputs) + "]")
    if thunk is not None and len(thunk.inputs) == len(node.inputs):
        values = [describe_value(cell[0]) for cell in thunk.inputs]
        lines.append("Input values: [" + ", ".join(values) + "]")
    source = node.outputs[0].tag.source if node.outputs else None
    if source is not None:
        lines.append(f"The node was created at {source}")
    else:
        lines.append("The node's source location was not recorded.")
    _add_note(exc, "\n".join(lines))
    try:
        exc.workbench_node = node  # type: ignore[attr-defined]
    except AttributeError:
        pass


# -- linkers ---------------------------------------------------------------------


class Linker:
    """Turns a FunctionGraph into a callable over storage cells.

    `accept(fgraph, no_recycling)` binds the graph (returning a fresh linker if this
    one is already bound to another graph); `make_thunk()` returns
    `(run, input_storage, output_storage, thunks, order)` where `run()` computes the
    outputs from the values in the input cells into the output cells.
    `no_recycling` lists Variables whose cells are emptied before each run, so Ops
    allocate fresh values for them instead of reusing the previous ones.
    `overwrite_outputs` (set after `accept`) lists outputs the caller lent back
    (`Out(borrow=True)`): a linker may write the next run's value into the previous one
    while the caller still holds it (the C linker's Program does; others ignore it).
    """

    #: When True, the linker records wall time per node (in `node_time`).
    profile: bool = False

    def __init__(self) -> None:
        self.fgraph: FunctionGraph | None = None
        self.no_recycling: list[Variable] = []
        self.overwrite_outputs: list[Variable] = []

    def clone(self) -> Linker:
        """An unbound linker with the same options."""
        return type(self)()

    def accept(self, fgraph: FunctionGraph, no_recycling: Sequence[Variable] | None = None
               ) -> Linker:
        if self.fgraph is not None and self.fgraph is not fgraph:
            return self.clone().accept(fgraph, no_recycling)
        self.fgraph = fgraph
        self.no_recycling = list(no_recycling or [])
        return self

    def make_thunk(
        self,
        input_storage: Sequence[Cell] | None = None,
        output_storage: Sequence[Cell] | None = None,
        storage_map: dict[Variable, Cell] | None = None,
    ) -> tuple[Callable[[], None], list[Cell], list[Cell], list[Thunk], list[Apply]]:
        raise MethodNotDefined(f"{type(self).__name__}.make_thunk")


class VMLinker(Linker):
    """The 'py' linker: thunks from `Op.make_thunk(..., impl="py")` run by a Python VM.

    `allow_gc` frees intermediate values as soon as nothing needs them;
    `lazy` chooses the VM: None picks the StackVM only if some node is lazy,
    True always uses it, False always uses the LoopVM (lazy nodes then have all
    their inputs computed, i.e. both branches of an if-else run).
    """

    def __init__(self, allow_gc: bool = True, lazy: bool | None = None, profile: bool = False,
                 impl: str = "py") -> None:
        super().__init__()
        self.allow_gc = allow_gc
        self.lazy = lazy
        self.profile = profile
        self.impl = impl
        self.vm: VM | None = None

    def clone(self) -> VMLinker:
        return VMLinker(self.allow_gc, self.lazy, self.profile, self.impl)

    def __repr__(self) -> str:
        return f"VMLinker(allow_gc={self.allow_gc}, lazy={self.lazy}, impl={self.impl!r})"

    def make_storage(
        self,
        input_storage: Sequence[Cell] | None,
        output_storage: Sequence[Cell] | None,
        storage_map: dict[Variable, Cell] | None,
        order: list[Apply],
    ) -> tuple[dict[Variable, Cell], dict[Variable, Cell]]:
        """Storage and compute cells for every Variable of the graph."""
        fg = self.fgraph
        assert fg is not None
        smap: dict[Variable, Cell] = dict(storage_map or {})
        if input_storage is not None:
            if len(input_storage) != len(fg.inputs):
                raise ValueError(
                    f"input_storage has {len(input_storage)} cells for {len(fg.inputs)} inputs"
                )
            for var, cell in zip(fg.inputs, input_storage):
                smap[var] = cell
        if output_storage is not None:
            if len(output_storage) != len(fg.outputs):
                raise ValueError(
                    f"output_storage has {len(output_storage)} cells "
                    f"for {len(fg.outputs)} outputs"
                )
            for var, cell in zip(fg.outputs, output_storage):
                if var.owner is not None:
                    smap.setdefault(var, cell)
        variables: list[Variable] = list(fg.inputs)
        for node in order:
            variables.extend(node.inputs)
            variables.extend(node.outputs)
        variables.extend(fg.outputs)
        cmap: dict[Variable, Cell] = {}
        for var in variables:
            if var not in smap:
                smap[var] = [var.data] if isinstance(var, Constant) else [None]
            if var not in cmap:
                cmap[var] = [1 if var.owner is None else 0]
        return smap, cmap

    def _graph_and_storage(
        self, input_storage: Sequence[Cell] | None, output_storage: Sequence[Cell] | None,
        storage_map: dict[Variable, Cell] | None,
    ) -> tuple[FunctionGraph, list[Apply], dict[Variable, Cell], dict[Variable, Cell]]:
        """What every make_thunk starts from: the accepted graph, its node order, and the
        storage and compute maps of its variables."""
        fg = self.fgraph
        if fg is None:
            raise ValueError(f"{type(self).__name__}.make_thunk: call accept(fgraph) first")
        order = fg.toposort()
        smap, cmap = self.make_storage(input_storage, output_storage, storage_map, order)
        return fg, order, smap, cmap

    def make_thunk(
        self,
        input_storage: Sequence[Cell] | None = None,
        output_storage: Sequence[Cell] | None = None,
        storage_map: dict[Variable, Cell] | None = None,
    ) -> tuple[Callable[[], None], list[Cell], list[Cell], list[Thunk], list[Apply]]:
        fg, order, smap, cmap = self._graph_and_storage(input_storage, output_storage,
                                                        storage_map)
        thunks = [self._thunk_for(node, smap, cmap) for node in order]
        lazy = self.lazy if self.lazy is not None else any(t.lazy for t in thunks)
        vm_class = StackVM if lazy else LoopVM
        vm = vm_class(fg, order, thunks, smap, cmap, self.no_recycling,
                      allow_gc=self.allow_gc, profile=self.profile)
        self.vm = vm
        return (vm.run, [smap[v] for v in fg.inputs], [smap[v] for v in fg.outputs],
                thunks, order)

    def _thunk_for(self, node: Apply, smap: dict[Variable, Cell], cmap: dict[Variable, Cell]
                   ) -> Thunk:
        if isinstance(node.op, InnerGraphOp):  # (a loop) its inner graph linked like this one
            linked = node.op.make_linked_thunk(node, smap, cmap, self.no_recycling, self)
            if linked is not None:
                return linked
        thunk = node.op.make_thunk(node, smap, cmap, self.no_recycling, impl=self.impl)
        if not isinstance(thunk, Thunk):  # a bare callable: wrap it
            if not callable(thunk):
                raise TypeError(f"{node.op}.make_thunk returned {thunk!r}, not a thunk")
            thunk = Thunk(thunk, node, [smap[v] for v in node.inputs],
                          [smap[v] for v in node.outputs],
                          lazy=bool(getattr(node.op, "lazy", False)), impl=self.impl)
        return thunk


PyLinker = VMLinker


# -- virtual machines ------------------------------------------------------------


class VM:
    """Runs the thunks of a linked graph; `run()` is the zero-argument entry point.

    Keeps `storage_map`, `compute_map`, `thunks` and `order` for inspection, and,
    when profiling, `node_time` (seconds) and `node_calls` per Apply node.
    """

    def __init__(
        self,
        fgraph: FunctionGraph,
        order: list[Apply],
        thunks: list[Thunk],
        storage_map: dict[Variable, Cell],
        compute_map: dict[Variable, Cell],
        no_recycling: Sequence[Variable] = (),
        allow_gc: bool = True,
        profile: bool = False,
        thread_probe: Callable[[], int] | None = None,
    ) -> None:
        self.fgraph = fgraph
        self.order = order
        self.thunks = thunks
        self.storage_map = storage_map
        self.compute_map = compute_map
        self.allow_gc = allow_gc
        self.node_time: dict[Apply, float] = {}
        self.node_calls: dict[Apply, int] = {}
        #: when profiling with a `thread_probe` (the C linker's: threads of the last BLAS
        #: call or row kernel, then forgotten), the fewest and most threads each node's
        #: calls used
        self.node_threads: dict[Apply, tuple[int, int]] = {}
        self._thread_probe = thread_probe
        self.events: list[tuple[Apply, float, float]] = []
        self.output_info: dict[Apply, list[Any]] = {}
        #: when profiling: per node, whether each output's last value was a view of an
        #: input or written into one (view_map/destroy_map): memory it did not allocate
        self.output_aliased: dict[Apply, list[bool]] = {}
        roots = set(fgraph.inputs)
        # Cells emptied at the start of each run: outputs that must be fresh each call.
        self._clear = tuple(
            storage_map[v] for v in dict.fromkeys(no_recycling)
            if v in storage_map and v.owner is not None and v not in roots
        )
        # Compute cells of everything computed by a node, reset to 0 at each run.
        self._reset = tuple(compute_map[out] for node in order for out in node.outputs)
        protected = roots | set(fgraph.outputs)
        #: Intermediate Variables: values that may be freed once nothing needs them.
        self.intermediates = [
            out for node in order for out in node.outputs if out not in protected
        ]
        self._fns = [self._wrap(t) if profile else t.fn for t in thunks]
        self.run: Callable[[], None] = self._make_runner()

    def _wrap(self, thunk: Thunk) -> Callable[[], Any]:
        """A timing wrapper around a thunk (profiling only).

        Records the node's total time and calls, one (node, start, end) event per
        call for timelines (the Chrome trace), and the shape information of its
        outputs (`Type.get_shape_info`) for the memory profile.
        """
        fn, node = thunk.fn, thunk.node
        node_time, node_calls, events = self.node_time, self.node_calls, self.events
        node_time[node] = 0.0
        node_calls[node] = 0
        clock = time.perf_counter
        out_cells = [(out.type, self.storage_map[out]) for out in node.outputs]
        output_info = self.output_info
        output_aliased = self.output_aliased
        # only outputs an Op declares as views or in place may share an input's memory
        may_alias = set(getattr(node.op, "view_map", None) or {}) | set(
            getattr(node.op, "destroy_map", None) or {})
        in_cells = [self.storage_map[v] for v in node.inputs] if may_alias else []
        probe, node_threads = self._thread_probe, self.node_threads

        def timed() -> Any:
            if probe is not None:
                probe()  # forget the count of an earlier node's call
            start = clock()
            try:
                return fn()
            finally:
                end = clock()
                node_time[node] += end - start
                node_calls[node] += 1
                used = probe() if probe is not None else 0
                if used:
                    low, high = node_threads.get(node, (used, used))
                    node_threads[node] = (min(low, used), max(high, used))
                if len(events) < MAX_PROFILE_EVENTS:
                    events.append((node, start, end))
                try:
                    output_info[node] = [None if cell[0] is None else t.get_shape_info(cell[0])
                                         for t, cell in out_cells]
                except Exception:  # a Type without shape info: no memory figure
                    output_info[node] = [None for _ in out_cells]
                if may_alias:
                    output_aliased[node] = [
                        k in may_alias and _shares_an_input(cell[0], in_cells)
                        for k, (_, cell) in enumerate(out_cells)]

        return timed

    def _make_runner(self) -> Callable[[], None]:
        raise MethodNotDefined(f"{type(self).__name__}._make_runner")

    def _on_error(self, exc: BaseException, index: int) -> None:
        """Annotate `exc` with node `index` and drop the intermediates computed so far."""
        if 0 <= index < len(self.thunks):
            thunk = self.thunks[index]
            annotate_thunk_error(exc, thunk.node, thunk)
        storage_map, compute_map = self.storage_map, self.compute_map
        for var in self.intermediates:
            storage_map[var][0] = None
            if compute_map[var][0] == 1:
                compute_map[var][0] = 2

    def free(self) -> None:
        """Drop every intermediate value (and the outputs of the last run)."""
        roots = set(self.fgraph.inputs)
        for node in self.order:
            for out in node.outputs:
                if out not in roots:
                    self.storage_map[out][0] = None
                    self.compute_map[out][0] = 0


def _shares_an_input(value: Any, in_cells: list[Cell]) -> bool:
    """Whether the array `value` may share memory with an input's value (a view of it, or
    written into it); a new buffer does not."""
    if not isinstance(value, np.ndarray):
        return False
    return any(isinstance(cell[0], np.ndarray) and np.may_share_memory(value, cell[0])
               for cell in in_cells)


class LoopVM(VM):
    """Runs every thunk in topological order; frees intermediates after their last use."""

    def _make_runner(self) -> Callable[[], None]:
        order = self.order
        index_of = {node: i for i, node in enumerate(order)}
        last_use: dict[Variable, int] = {}
        for i, node in enumerate(order):
            for var in node.inputs:
                last_use[var] = i
        to_free: list[list[tuple[Cell, Cell]]] = [[] for _ in order]
        if self.allow_gc:
            for var in self.intermediates:
                # Freed after its last client, or right after its owner if it has none.
                at = last_use.get(var, index_of[var.owner])
                to_free[at].append((self.storage_map[var], self.compute_map[var]))
        fns = []
        for fn, thunk in zip(self._fns, self.thunks):
            fns.append(_strict_lazy(fn, thunk.node) if thunk.lazy else fn)
        steps = tuple(zip(fns, (tuple(f) for f in to_free)))
        # Only lazy thunks read compute cells: without them, skip resetting the cells
        # (after a run they read 1 for computed values and 2 for freed ones).
        reset = self._reset if any(t.lazy for t in self.thunks) else ()
        clear = self._clear
        on_error = self._on_error

        def run() -> None:
            for cell in reset:
                cell[0] = 0
            for cell in clear:
                cell[0] = None
            fn = None
            try:
                for fn, frees in steps:
                    fn()
                    for storage, computed in frees:
                        storage[0] = None
                        computed[0] = 2
            except Exception as exc:
                on_error(exc, next((i for i, s in enumerate(steps) if s[0] is fn), -1))
                raise

        return run


def _strict_lazy(fn: Callable[[], Any], node: Apply) -> Callable[[], None]:
    """Run a lazy thunk whose inputs are all computed: it must finish in one call."""

    def strict() -> None:
        needed = fn()
        if needed:
            raise RuntimeError(
                f"lazy node {node} still needs inputs {list(needed)} although all its "
                "inputs were computed"
            )

    return strict


class StackVM(VM):
    """Evaluates the outputs on demand with an explicit stack of node indices.

    A node runs once all the inputs it needs are computed. A lazy node's thunk is
    called, returns the indices of the inputs it still needs (which are pushed and
    computed), and is called again until it returns [].
    """

    def _make_runner(self) -> Callable[[], None]:
        order, fg = self.order, self.fgraph
        smap, cmap = self.storage_map, self.compute_map
        index_of = {node: i for i, node in enumerate(order)}
        fns = self._fns
        lazy = [t.lazy for t in self.thunks]
        # done[i]: compute cell of node i's first output (all are marked together).
        done = [cmap[node.outputs[0]] if node.outputs else [1] for node in order]
        outs_computed = [tuple(cmap[o] for o in node.outputs) for node in order]
        # deps[i][k]: (compute cell, owner index) of input k, or None for graph roots.
        deps: list[tuple[tuple[Cell, int] | None, ...]] = []
        for node in order:
            deps.append(tuple(
                (cmap[v], index_of[v.owner]) if v.owner is not None else None
                for v in node.inputs
            ))
        owned_deps = [tuple(d for d in ds if d is not None) for ds in deps]
        # Nodes whose outputs the graph's outputs need, first output on top.
        targets = [index_of[v.owner] for v in reversed(fg.outputs) if v.owner is not None]
        # frees[i]: intermediates read by node i, with the done cells of all their
        # clients: freed when every client has run.
        clients: dict[Variable, list[Cell]] = {}
        for i, node in enumerate(order):
            for v in node.inputs:
                clients.setdefault(v, []).append(done[i])
        intermediates = set(self.intermediates)
        frees: list[tuple[tuple[Cell, Cell, tuple[Cell, ...]], ...]] = []
        for node in order:
            frees.append(tuple(
                (smap[v], cmap[v], tuple(clients[v]))
                for v in dict.fromkeys(node.inputs) if v in intermediates
            ) if self.allow_gc else ())
        sweep = tuple((smap[v], cmap[v]) for v in self.intermediates) if self.allow_gc else ()
        reset, clear = self._reset, self._clear
        on_error = self._on_error
        thunks = self.thunks

        def run() -> None:
            for cell in reset:
                cell[0] = 0
            for cell in clear:
                cell[0] = None
            stack = list(targets)
            i = -1
            try:
                while stack:
                    i = stack[-1]
                    if done[i][0]:
                        stack.pop()
                        continue
                    if lazy[i]:
                        needed = fns[i]()
                        if needed:
                            pushed = False
                            node_deps = deps[i]
                            for k in needed:
                                dep = node_deps[k]
                                if dep is not None and not dep[0][0]:
                                    stack.append(dep[1])
                                    pushed = True
                            if not pushed:
                                raise RuntimeError(
                                    f"lazy node {thunks[i].node} asked for inputs "
                                    f"{list(needed)}, which are already computed"
                                )
                            continue
                    else:
                        pending = False
                        for computed, owner in owned_deps[i]:
                            if not computed[0]:
                                stack.append(owner)
                                pending = True
                        if pending:
                            continue
                        fns[i]()
                    for computed in outs_computed[i]:
                        computed[0] = 1
                    stack.pop()
                    for storage, computed, client_done in frees[i]:
                        if computed[0] == 1 and all(c[0] for c in client_done):
                            storage[0] = None
                            computed[0] = 2
                for storage, computed in sweep:
                    if computed[0] == 1:
                        storage[0] = None
                        computed[0] = 2
            except Exception as exc:
                on_error(exc, i)
                raise

        return run
