"""The 'c' linker: every node with C code runs as a compiled function, the others
through their Python `perform`, all inside one C loop (runtime.c's Program).

Compiled code is per node *kind*: the generated source depends only on the node's
signature (Op and props, input and output Types), and the module cache keys on it,
so a new graph made of known kinds compiles nothing. The kinds a graph is missing
compile together, a few translation units in parallel (bundle.py).

Graphs with lazy nodes (if-else) and profiled functions run the same compiled
nodes from the Python VMs instead (`NodeThunk`s), which evaluate lazily and time
each node.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.core.graph.op import Thunk
from workbench.core.link.c import bundle, codegen
from workbench.core.link.c.blas_threads import take_last_threads
from workbench.core.link.c.cache import ModuleCache, default_cache
from workbench.core.link.c.compiler import build_wanted_preludes, probe_all
from workbench.core.link.c.runtime import runtime
from workbench.core.link.vm import VM, Cell, LoopVM, StackVM, VMLinker

__all__ = ["CLinker", "CProgramVM", "CompileReport", "fallback_note"]


class CompileReport:
    """What linking compiled: how many node kinds were compiled (in how many modules:
    see bundle.py), found on disk or in memory, and the seconds spent; nodes that run
    in Python and why. `bundle_fallbacks`: bundles that did not compile as one unit
    (their kinds' C clashing), whose kinds compiled a module each instead: correct,
    but a slower cold compile, shown where the report is."""

    def __init__(self) -> None:
        self.c_nodes: list[Apply] = []
        self.py_nodes: list[tuple[Apply, str]] = []
        self.compiled = 0
        self.modules_built = 0
        self.bundle_fallbacks = 0
        self.disk_hits = 0
        self.memory_hits = 0
        self.compile_seconds = 0.0
        self.link_seconds = 0.0
        self.sources: dict[Apply, codegen.NodeSource] = {}

    def as_dict(self) -> dict[str, Any]:
        return {"c_nodes": len(self.c_nodes), "py_nodes": len(self.py_nodes),
                "compiled": self.compiled, "modules_built": self.modules_built,
                "bundle_fallbacks": self.bundle_fallbacks,
                "disk_hits": self.disk_hits,
                "memory_hits": self.memory_hits, "compile_seconds": self.compile_seconds,
                "link_seconds": self.link_seconds}

    def __repr__(self) -> str:
        d = self.as_dict()
        return ("CompileReport(" + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else
                                             f"{k}={v}" for k, v in d.items()) + ")")


def fallback_note(report: dict[str, Any]) -> str:
    """The words for a report's (`CompileReport.as_dict()`) bundle fallbacks, to append
    after its module count; "" when there were none (the usual case says nothing)."""
    n = report.get("bundle_fallbacks", 0)
    return (f" ({n} bundle(s) did not compile as one unit: their kinds compiled a module "
            f"each)") if n else ""


def _quietly(fn: Callable[[], Any]) -> None:
    """Run `fn`, dropping its exception (the caller calls it again and gets it)."""
    try:
        fn()
    except Exception:
        pass


_toolchain_lock = threading.Lock()
_toolchain_threads: list[threading.Thread] = []


def prepare_toolchain() -> list[threading.Thread]:
    """Start, once per process, what every C-linked function needs before its own
    nodes: the compiler's probes (all at once) and the runtime module (each done once
    per machine, then found on disk). Called when a CLinker is made, so that on a cold
    cache they run while the graph is still being rewritten; `make_thunk` waits for them.
    The precompiled prelude is not among them: it only pays from the second compile on,
    so it is built after the first graph's kinds (`_build_preludes_after`), which parse
    the header text meanwhile instead of sharing the cores with its build."""
    with _toolchain_lock:
        if not _toolchain_threads:
            for work in (runtime, probe_all):
                thread = threading.Thread(target=_quietly, args=(work,), daemon=True,
                                          name=f"workbench-{work.__name__}")
                thread.start()
                _toolchain_threads.append(thread)
        return list(_toolchain_threads)


_prelude_builder: list[threading.Thread] = []


def _build_preludes_after() -> None:
    """Build, in a background thread, the precompiled preludes the compiles so far
    wanted (compiler.build_wanted_preludes). Not a daemon: a short script that compiled
    on a cold cache finishes the build (~0.2 s) before it exits, so that its successors
    find it."""
    with _toolchain_lock:
        if _prelude_builder and _prelude_builder[0].is_alive():
            return  # (what is wanted meanwhile is built by the next graph's call)
        thread = threading.Thread(target=_quietly, args=(build_wanted_preludes,),
                                  name="workbench-prelude")
        thread.start()
        _prelude_builder[:] = [thread]


class CLinker(VMLinker):
    """Links a FunctionGraph to compiled C nodes (Python `perform` where there is no C).

    `allow_gc` (default False): free intermediates after their last use. Keeping
    them lets each node reuse its previous output buffer (no allocation per call).
    `cache`: the ModuleCache (default: `WORKBENCH_CACHE_DIR` or the user cache).
    """

    name = "c"

    def __init__(self, allow_gc: bool = False, lazy: bool | None = None, profile: bool = False,
                 cache: ModuleCache | None = None) -> None:
        super().__init__(allow_gc=allow_gc, lazy=lazy, profile=profile, impl="py")
        prepare_toolchain()
        self.cache = cache
        self.report = CompileReport()
        self.program: Any = None

    def clone(self) -> CLinker:
        return CLinker(self.allow_gc, self.lazy, self.profile, self.cache)

    def __repr__(self) -> str:
        return f"CLinker(allow_gc={self.allow_gc}, lazy={self.lazy})"

    def node_sources(self, order: Sequence[Apply]) -> dict[Apply, codegen.NodeSource | str]:
        """Per node: its generated module, or why it has none (it runs `perform`)."""
        result: dict[Apply, codegen.NodeSource | str] = {}
        for node in order:
            try:
                result[node] = codegen.node_source(node)
            except codegen.NoCCode as exc:
                result[node] = str(exc)
        return result

    def compile_nodes(self, order: Sequence[Apply], report: CompileReport) -> dict[Apply, Any]:
        """The node function capsule of every node of `order` that has C (compiling the
        missing kinds); records in `report` which nodes run C and which `perform`, why."""
        sources = self.node_sources(order)
        c_nodes = [n for n in order if isinstance(sources[n], codegen.NodeSource)]
        # the kinds inside inner graphs (a loop's body, linked by this linker later)
        # compile in the same bundles: one parallel build, then memory hits
        inner = [(n, src) for n, src in self.node_sources(_inner_nodes(order)).items()
                 if isinstance(src, codegen.NodeSource)]
        start = time.perf_counter()
        functions, stats = bundle.node_functions(
            [(n, sources[n]) for n in c_nodes] + inner,  # type: ignore[misc]
            self.cache or default_cache())
        functions = functions[:len(c_nodes)]
        report.compile_seconds += time.perf_counter() - start
        report.compiled += stats.compiled
        report.disk_hits += stats.disk_hits
        report.memory_hits += stats.memory_hits
        report.modules_built += stats.modules_built
        report.bundle_fallbacks += stats.bundle_fallbacks
        capsules = dict(zip(c_nodes, functions))
        for node in order:
            if node in capsules:
                report.c_nodes.append(node)
                report.sources[node] = sources[node]  # type: ignore[assignment]
            else:
                report.py_nodes.append((node, str(sources[node])))
        return capsules

    @property
    def generated_code(self) -> str:
        """The C source of every compiled node of the linked graph, for display."""
        parts = []
        for node, src in self.report.sources.items():
            title = " ".join(str(node).split()).replace("*/", "* /")  # (a comment's text)
            parts.append(f"/* ==== {title} ==== */\n{src.source}")
        return "\n".join(parts)

    def make_thunk(
        self,
        input_storage: Sequence[Cell] | None = None,
        output_storage: Sequence[Cell] | None = None,
        storage_map: dict[Variable, Cell] | None = None,
    ) -> tuple[Callable[[], None], list[Cell], list[Cell], list[Thunk], list[Apply]]:
        start = time.perf_counter()
        toolchain = prepare_toolchain()  # (started when this linker was made)
        report = self.report = CompileReport()
        fg, order, smap, cmap = self._graph_and_storage(input_storage, output_storage,
                                                        storage_map)
        capsules = self.compile_nodes(order, report)
        if report.compiled:
            _build_preludes_after()
        for thread in toolchain:
            thread.join()
        rt = runtime()  # raises here if its build failed
        thunks: list[Thunk] = []
        for node in order:
            if node in capsules:
                ins = tuple(smap[v] for v in node.inputs)
                outs = tuple(smap[v] for v in node.outputs)
                fn = rt.NodeThunk(capsules[node], ins, outs, codegen.node_labels(node))
                thunks.append(Thunk(fn, node, list(ins), list(outs), impl="c"))
            else:
                thunks.append(self._thunk_for(node, smap, cmap))
        lazy = self.lazy if self.lazy is not None else any(t.lazy for t in thunks)
        probe = take_last_threads if self.profile else None
        if lazy:
            vm: VM = StackVM(fg, order, thunks, smap, cmap, self.no_recycling,
                             allow_gc=self.allow_gc, profile=self.profile, thread_probe=probe)
        elif self.profile:
            vm = LoopVM(fg, order, thunks, smap, cmap, self.no_recycling,
                        allow_gc=self.allow_gc, profile=self.profile, thread_probe=probe)
        else:
            vm = CProgramVM(fg, order, thunks, smap, cmap, self.no_recycling,
                            allow_gc=self.allow_gc, capsules=capsules,
                            overwrite=getattr(self, "overwrite_outputs", ()))
            self.program = vm.program
        self.vm = vm
        report.link_seconds = time.perf_counter() - start
        return (vm.run, [smap[v] for v in fg.inputs], [smap[v] for v in fg.outputs],
                thunks, order)


def _inner_nodes(order: Sequence[Apply]) -> list[Apply]:
    """The nodes of the inner graphs of `order`'s nodes (nested ones too)."""
    found: list[Apply] = []
    pending = [node.op for node in order if isinstance(node.op, InnerGraphOp)]
    while pending:
        inner = pending.pop().fgraph.toposort()
        found += inner
        pending += [node.op for node in inner if isinstance(node.op, InnerGraphOp)]
    return found


def _aliases_an_input(node: Apply, k: int) -> bool:
    """Whether output k of `node` is declared a view of an input or written into one."""
    op = node.op
    return k in (getattr(op, "view_map", None) or {}) or k in (
        getattr(op, "destroy_map", None) or {})


class CProgramVM(VM):
    """A VM whose loop over nodes is runtime.c's `Program` (no Python frame per node)."""

    def __init__(self, *args: Any, capsules: dict[Apply, Any],
                 overwrite: Sequence[Variable] = (), **kwargs: Any) -> None:
        self._capsules = capsules
        self._overwrite = overwrite
        super().__init__(*args, **kwargs)

    def _make_runner(self) -> Callable[[], None]:
        order, smap = self.order, self.storage_map
        index_of = {node: i for i, node in enumerate(order)}
        last_use: dict[Variable, int] = {}
        for i, node in enumerate(order):
            for var in node.inputs:
                last_use[var] = i
        to_free: list[list[Cell]] = [[] for _ in order]
        if self.allow_gc:
            for var in self.intermediates:
                to_free[last_use.get(var, index_of[var.owner])].append(smap[var])
        steps = []
        for i, (node, thunk) in enumerate(zip(order, self.thunks)):
            capsule = self._capsules.get(node)
            steps.append((thunk.fn if capsule is None else capsule,
                          tuple(smap[v] for v in node.inputs),
                          tuple(smap[v] for v in node.outputs), tuple(to_free[i]),
                          () if capsule is None else codegen.node_labels(node)))
        # lent outputs (Out(borrow=True)) computed by a node: their previous value may be
        # overwritten while the caller holds it, unless it is passed back in (the guard)
        overwrite = tuple(smap[v] for v in dict.fromkeys(self._overwrite)
                          if v.owner is not None and v not in self.fgraph.inputs)
        guard = tuple(smap[v] for v in self.fgraph.inputs) if overwrite else ()
        # An output a compiled node makes need not be emptied before a run: the runtime
        # reuses a value only while its cell is its one holder (take_output), i.e. once
        # the caller has dropped the previous result, and allocates otherwise. Python
        # thunks write where they like, so their outputs are still emptied.
        made_in_c = {id(smap[out]) for node in order if node in self._capsules
                     for out in node.outputs}
        clear = tuple(cell for cell in self._clear if id(cell) not in made_in_c)
        # A value that another node's output views or was written into has two holders
        # after a run, so its own node could not reuse it at the next one: the outputs
        # that alias an input (view_map, destroy_map) need no buffer of their own, and
        # their cells are emptied before each run (not lent ones: the caller holds those)
        keep = {id(cell) for cell in (*clear, *overwrite)}
        clear += tuple({id(smap[out]): smap[out] for node in order
                        for k, out in enumerate(node.outputs) if _aliases_an_input(node, k)
                        and id(smap[out]) not in keep}.values())
        self.program = runtime().Program(tuple(steps), clear, self._on_error, overwrite,
                                         guard)
        return self.program.run
