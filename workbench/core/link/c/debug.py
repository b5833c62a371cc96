"""The DEBUG linker: every node runs through `perform` and through its C code, checked.

`DebugLinker` (the linker of `mode="DEBUG"`) links a graph like the C linker, but
each node's thunk first runs `NodeChecker` (core/link/debugmode.py) over the
node's implementations, on private copies of the inputs and private storage cells:
- `perform` (the Op's `debug_perform`) and the compiled C function, whose outputs
  must agree through the output Type's `values_eq_approx`;
- no implementation may change an input its Op does not list in `destroy_map`
  (inputs are compared with a copy taken before), and outputs may share memory
  with inputs only as `view_map`/`destroy_map` declare (`np.may_share_memory`);
- each implementation runs again with pre-allocated output storage full of garbage
  (C order, Fortran order, wrong shape), to catch code that reads stale buffers.
Then the node runs for real on the graph's cells (C where it has C), and that
result must agree with the checked one. The first problem raises a
`DebugModeError` subclass naming the node, the implementation and both values.

Nodes without C are checked through `perform` alone; lazy nodes (if-else) run
unchecked, as their thunks decide themselves what to evaluate. Without a C
compiler the linker checks `perform` only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Thunk
from workbench.core.link.c.cache import ModuleCache
from workbench.core.link.c.codegen import node_labels
from workbench.core.link.c.linker import CLinker, CompileReport
from workbench.core.link.debugmode import (
    DebugModeError,
    Implementation,
    NodeChecker,
    StaleOutputError,
    node_label,
    op_says_outputs_agree,
    short_value,
)
from workbench.core.link.vm import VM, Cell, LoopVM, StackVM

__all__ = ["DebugLinker", "DebugModeError", "c_runner"]


def c_runner(capsule: Any, node: Apply) -> Callable[[list[Any], list[Cell]], None]:
    """A runner (see `Implementation`) calling the compiled function of `node` over
    private cells: `run(inputs, output_cells)`. A value in an output cell is handed to
    the C code as previous storage (it reuses it only if nothing else references it)."""
    from workbench.core.link.c.runtime import runtime

    in_cells = tuple([None] for _ in node.inputs)
    out_cells = tuple([None] for _ in node.outputs)
    thunk = runtime().NodeThunk(capsule, in_cells, out_cells, node_labels(node))

    def run(inputs: list[Any], cells: list[Cell]) -> None:
        for cell, value in zip(in_cells, inputs):
            cell[0] = value
        for mine, cell in zip(out_cells, cells):
            # move, not copy, the reference: the cell must be the storage's only holder
            mine[0] = cell[0]
            cell[0] = None
        try:
            thunk()
        finally:
            for mine, cell in zip(out_cells, cells):
                cell[0] = mine[0]
                mine[0] = None
            for cell in in_cells:
                cell[0] = None

    return run


def perform_runner(node: Apply) -> Callable[[list[Any], list[Cell]], None]:
    """A runner calling the Op's `debug_perform` (by default `perform`)."""

    def run(inputs: list[Any], cells: list[Cell]) -> None:
        node.op.debug_perform(node, inputs, cells)

    return run


class DebugLinker(CLinker):
    """Links a FunctionGraph so that every node is checked at every call (DEBUG mode).

    `use_c`: run the C implementations too (default: when a C compiler works).
    `prealloc`: also re-run each node with garbage pre-allocated output storage.
    `checks` counts the node checks made so far (for tests and reports).
    """

    name = "debug"

    def __init__(self, use_c: bool | None = None, prealloc: bool = True, lazy: bool | None = None,
                 cache: ModuleCache | None = None) -> None:
        super().__init__(allow_gc=False, lazy=lazy, profile=False, cache=cache)
        self.use_c = use_c
        self.prealloc = prealloc
        self.checks = 0
        self.checkers: dict[Apply, NodeChecker] = {}

    def clone(self) -> DebugLinker:
        return DebugLinker(self.use_c, self.prealloc, self.lazy, self.cache)

    def __repr__(self) -> str:
        return f"DebugLinker(use_c={self.use_c}, prealloc={self.prealloc})"

    def _c_enabled(self) -> bool:
        if self.use_c is None:
            from workbench.core.link.c.compiler import has_compiler

            self.use_c = has_compiler()
        return self.use_c

    def make_thunk(
        self,
        input_storage: Sequence[Cell] | None = None,
        output_storage: Sequence[Cell] | None = None,
        storage_map: dict[Variable, Cell] | None = None,
    ) -> tuple[Callable[[], None], list[Cell], list[Cell], list[Thunk], list[Apply]]:
        start = time.perf_counter()
        report = self.report = CompileReport()
        fg, order, smap, cmap = self._graph_and_storage(input_storage, output_storage,
                                                        storage_map)
        capsules: dict[Apply, Any] = {}
        if self._c_enabled():
            import workbench.core.link.c.ops  # noqa: F401  (registers the library's C)

            capsules = self.compile_nodes(order, report)
        else:
            report.py_nodes = [(node, "DEBUG mode without a C compiler") for node in order]
        thunks = [self._checked_thunk(node, smap, cmap, capsules.get(node)) for node in order]
        lazy = self.lazy if self.lazy is not None else any(t.lazy for t in thunks)
        vm_class: type[VM] = StackVM if lazy else LoopVM
        vm = vm_class(fg, order, thunks, smap, cmap, self.no_recycling, allow_gc=False,
                      profile=self.profile)
        self.vm = vm
        report.link_seconds = time.perf_counter() - start
        return (vm.run, [smap[v] for v in fg.inputs], [smap[v] for v in fg.outputs],
                thunks, order)

    def _checked_thunk(self, node: Apply, smap: dict[Variable, Cell],
                       cmap: dict[Variable, Cell], capsule: Any) -> Thunk:
        """The node's thunk wrapped in the checks (lazy nodes: unchanged)."""
        py_thunk = self._thunk_for(node, smap, cmap)
        if py_thunk.lazy:
            return py_thunk
        in_cells = [smap[v] for v in node.inputs]
        out_cells = [smap[v] for v in node.outputs]
        computed = [cmap[v] for v in node.outputs]
        impls = [Implementation("perform", perform_runner(node))]
        real: Callable[[], Any] = py_thunk.fn
        if capsule is not None:
            from workbench.core.link.c.runtime import runtime

            impls.append(Implementation("c", c_runner(capsule, node)))
            real = runtime().NodeThunk(capsule, tuple(in_cells), tuple(out_cells),
                                       node_labels(node))
        checker = NodeChecker(node, impls, prealloc=self.prealloc)
        self.checkers[node] = checker
        impl_name = impls[-1].name
        linker = self

        def thunk() -> None:
            inputs = [cell[0] for cell in in_cells]
            reference = checker.check(inputs)
            real()
            for cell in computed:
                cell[0] = 1
            if op_says_outputs_agree(node, reference, [cell[0] for cell in out_cells]):
                linker.checks += 1
                return
            for j, (var, cell, want) in enumerate(zip(node.outputs, out_cells, reference)):
                if not var.type.values_eq_approx(want, cell[0]):
                    raise StaleOutputError(
                        f"DEBUG mode: node {node_label(node)}: output {j} of the real run "
                        f"({impl_name}, on the graph's own storage) differs from the checked "
                        f"one\n  checked: {short_value(want)}\n  real:    "
                        f"{short_value(cell[0])}", node)
            linker.checks += 1

        return Thunk(thunk, node, in_cells, out_cells, lazy=False, impl=f"debug+{impl_name}")
