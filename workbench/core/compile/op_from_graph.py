"""OpFromGraph: a graph packaged as one Op, applied to new inputs like any other.

    x, w, b = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("b")
    dense = wb.OpFromGraph([x, w, b], [wt.tanh(x @ w + b)], name="dense_layer")
    h = dense(inputs, w1, b1)         # one node, printed and drawn as "dense_layer"

It is an inner-graph Op (graph/inner_graph.py): `dprint` prints the inner graph
under its first node, graph files save it, the inspector can open it.

- Running: the inner graph is compiled once per kind of linker, as a unit
  (rewritten, then linked by the same kind of linker as the outer graph: py, c,
  debug, or gpu on the same device, its values staying there), and called by the
  node's thunk (`make_linked_thunk`); `perform` uses the default linker.
- `inline=True`: the rewrite `inline_op_from_graph` (canonicalize,
  rewrite/rules/inline.py) replaces the node by its inner graph, which the outer
  rewrites then see through.
- Gradients: by default the gradient of the inner graph, itself packaged as an
  OpFromGraph named ``grad_<name>``; `lop_overrides(inputs, outputs,
  output_grads)` returns the gradients instead (a callable, or an OpFromGraph
  taking inputs + outputs + output gradients). `rop_overrides(inputs,
  eval_points)` likewise for `R_op` (default: the Rop of the inner graph). An
  OpFromGraph override gets zeros for a disconnected output gradient (or a missing
  eval point).
- Graph files: an override is saved as an OpFromGraph (io.py stores each once). A
  callable is traced into one when saved (`override_graph`): called once on fresh
  variables of the inner inputs' (outputs', output gradients') types, its results
  must be tensors computed from those variables and constants only; else saving
  raises a TypeError naming this Op and what the callable did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.graph.basic import (
    Apply,
    Constant,
    Variable,
    ancestors,
    clone_replace,
    graph_inputs,
)
from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.core.link.shared import SharedVariable
from workbench.core.rewrite.rules.inline import inline_op_from_graph
from workbench.core.tensor.vectorize import register_vectorizer

__all__ = ["OpFromGraph", "inline_op_from_graph", "vectorize_op_from_graph"]


def _as_list(value: Any, what: str) -> list[Variable]:
    values = [value] if isinstance(value, Variable) else list(value)
    for k, v in enumerate(values):
        if not isinstance(v, Variable):
            raise TypeError(f"OpFromGraph: {what} {k} must be a Variable, got "
                            f"{type(v).__name__} {v!r}")
    return values


class OpFromGraph(InnerGraphOp):
    """An Op computing `outputs` from `inputs` (see the module docstring).

    `inputs` must be the graph's roots (not constants, not shared variables); every
    other root of `outputs` must be a constant or a shared variable: shared
    variables become extra inputs of the node, after the explicit ones (a call with
    the explicit inputs only adds them), so gradients reach them. `name` is what
    printers and drawings show.
    """

    __props__ = ("label", "inline", "lop_overrides", "rop_overrides")
    inner_graph_title = "graph"  # each instance: its name (dprint "dense_layer of [id E]:")

    def __init__(self, inputs: Sequence[Variable], outputs: Variable | Sequence[Variable],
                 inline: bool = False, name: str | None = None,
                 lop_overrides: Callable[..., Any] | None = None,
                 rop_overrides: Callable[..., Any] | None = None) -> None:
        inputs = _as_list(inputs, "input")
        outputs = _as_list(outputs, "output")
        label = name or "OpFromGraph"
        given = set(inputs)
        for k, var in enumerate(inputs):
            if var.owner is not None or isinstance(var, (Constant, SharedVariable)):
                raise TypeError(
                    f"OpFromGraph {label!r}: input {k} ({var}) must be a free variable (a "
                    "graph root that is neither a constant nor a shared variable)")
        shared = []
        for root in graph_inputs(outputs):
            if root in given or isinstance(root, Constant):
                continue
            if isinstance(root, SharedVariable):
                shared.append(root)
                continue
            raise ValueError(f"OpFromGraph {label!r}: the outputs need {root} ({root.type}), "
                             "which is not among its inputs; add it to the inputs")
        if shared:  # inner inputs standing for them, after the explicit ones
            stand_ins = [var.type(var.name) for var in shared]
            outputs = list(clone_replace(outputs, dict(zip(shared, stand_ins))))
            inputs = [*inputs, *stand_ins]
        #: the shared variables the graph reads: passed after the explicit inputs by a call
        #: that gives only those (`dense(x)`), so the gradient reaches them too
        self.shared_inputs: list[SharedVariable] = shared
        self.fgraph = FunctionGraph(inputs, outputs)
        self.inline = bool(inline)
        self.label = label  # `name` (every Op's) gives it too
        self.inner_graph_title = label  # the frame's title, GraphView's "expand <name>"
        self.lop_overrides = lop_overrides
        self.rop_overrides = rop_overrides
        self._function: Any = None
        self._linked: dict[str, Any] = {}
        self._grad_ops: dict[Any, tuple[OpFromGraph | None, list[Variable]]] = {}
        self._traced: dict[str, OpFromGraph] = {}

    def __str__(self) -> str:
        return self.label

    # -- the inner-graph protocol -------------------------------------------------
    def clone_with_inner_graph(self, fgraph: FunctionGraph) -> OpFromGraph:
        op = OpFromGraph(fgraph.inputs, fgraph.outputs, self.inline, self.label,
                         self.lop_overrides, self.rop_overrides)
        op.shared_inputs = list(self.shared_inputs)
        return op

    @classmethod
    def from_inner_graph(cls, inputs: Sequence[Variable], outputs: Sequence[Variable],
                         **props: Any) -> OpFromGraph:
        return cls(inputs, outputs, **props)

    def inner_graph_props(self) -> dict[str, Any]:
        props: dict[str, Any] = {"name": self.label, "inline": self.inline}
        for kind in ("lop", "rop"):
            if getattr(self, f"{kind}_overrides") is not None:
                props[f"{kind}_overrides"] = self.override_graph(kind)
        return props

    def override_graph(self, kind: str) -> OpFromGraph | None:
        """The `kind` ("lop" or "rop") override as an OpFromGraph: itself when it is one,
        else the callable traced once into one (see the module docstring); None without
        an override. A TypeError names this Op and why when the callable cannot be."""
        if kind not in ("lop", "rop"):
            raise ValueError(f"override_graph: kind must be 'lop' or 'rop', got {kind!r}")
        override = getattr(self, f"{kind}_overrides")
        if override is None or isinstance(override, OpFromGraph):
            return override
        if kind not in self._traced:
            self._traced[kind] = self._trace_override(kind, override)
        return self._traced[kind]

    def _trace_override(self, kind: str, override: Callable[..., Any]) -> OpFromGraph:
        from workbench.core.graph.type import is_disconnected, is_null

        xs = [v.type(v.name) for v in self.inner_inputs]
        if kind == "lop":
            outs = [o.type(o.name) for o in self.inner_outputs]
            gs = [o.type(f"d_{o.name or k}") for k, o in enumerate(self.inner_outputs)]
            free, args, per = [*xs, *outs, *gs], (list(xs), outs, gs), "input"
        else:
            points = [x.type(f"eval_{x.name or k}") for k, x in enumerate(xs)]
            free, args, per = [*xs, *points], (list(xs), points), "output"
        expected = len(xs) if kind == "lop" else len(self.inner_outputs)
        what = (f"OpFromGraph {self.label!r}: its {kind}_overrides "
                f"{getattr(override, '__name__', type(override).__name__)!r} cannot be saved "
                "in a graph file")
        try:
            results = list(override(*args))
        except Exception as exc:
            raise TypeError(f"{what}: calling it on symbolic variables to trace its graph "
                            f"failed ({type(exc).__name__}: {exc}); give an OpFromGraph as "
                            "the override instead") from exc
        if len(results) != expected:
            raise TypeError(f"{what}: it returns {len(results)} results for {expected} "
                            f"{per}s")
        for k, r in enumerate(results):
            if not isinstance(r, Variable) or is_disconnected(r) or is_null(r):
                raise TypeError(f"{what}: for {per} {k} it returns {r!r}, not a tensor (a "
                                "file holds a graph of tensors; a disconnected or undefined "
                                "gradient is Python-side only)")
        given = set(free)
        for root in graph_inputs(results):
            if root not in given and not isinstance(root, Constant):
                kind_of = "the shared variable" if isinstance(root, SharedVariable) else \
                    "the variable"
                raise TypeError(f"{what}: its graph reads {kind_of} {root}, which is not "
                                "among the inputs, outputs and output gradients it was given")
        return OpFromGraph(free, results, name=f"{kind}_{self.label}")

    # -- building and running --------------------------------------------------------
    def make_node(self, *inputs: Any) -> Apply:
        from workbench.core.tensor.type import TensorType
        from workbench.core.tensor.variable import as_tensor_variable

        if self.shared_inputs and len(inputs) == len(self.inner_inputs) - len(self.shared_inputs):
            inputs = (*inputs, *self.shared_inputs)
        if len(inputs) != len(self.inner_inputs):
            raise TypeError(f"{self.name} takes {len(self.inner_inputs)} inputs, got "
                            f"{len(inputs)}")
        checked = []
        for k, (value, inner) in enumerate(zip(inputs, self.inner_inputs)):
            if not isinstance(value, Variable) and isinstance(inner.type, TensorType):
                value = as_tensor_variable(value)
            try:
                checked.append(inner.type.filter_variable(value))
            except (TypeError, ValueError) as exc:
                got = value.type if isinstance(value, Variable) else type(value).__name__
                raise TypeError(f"{self.name}: input {k} ({inner}) expects {inner.type}, got "
                                f"{value} of type {got}") from exc
        return Apply(self, checked, [out.type() for out in self.inner_outputs])

    def compiled(self) -> Any:
        """The inner graph compiled once (rewritten and linked as one function)."""
        if self._function is None:
            from workbench.core.compile.function import function

            self._function = function(list(self.inner_inputs), list(self.inner_outputs),
                                      on_unused_input="ignore", name=self.name)
        return self._function

    def linked(self, linker: Any) -> Any:
        """The inner graph compiled once per kind of outer linker, by that kind: "py",
        "c", "debug", or the gpu linker on its device (device tensors in and out)."""
        name = getattr(linker, "name", None) or "py"
        key = f"gpu:{linker.device}" if name == "gpu" else name
        profile = bool(getattr(linker, "profile", False))
        key += "+profile" if profile else ""
        fn = self._linked.get(key)
        if fn is None:
            from workbench.core.compile.function import function
            from workbench.core.compile.mode import Mode, RewriteQuery

            inner_linker: Any = name
            if name == "gpu":
                from workbench.core.link.gpu.linker import GpuLinker

                inner_linker = GpuLinker(device=linker.device, device_outputs=True)
            mode = Mode(linker=inner_linker, rewriter=RewriteQuery(("fast_run",)))
            fn = self._linked[key] = function(
                list(self.inner_inputs), list(self.inner_outputs), mode=mode,
                on_unused_input="ignore", trust_input=True, name=self.label,
                profile=profile or None)
        return fn

    def inner_profile(self, linker: str | None = None) -> Any:
        """The profile of the inner graph under a profiled outer function on `linker` (None:
        the last one), per inner node; None if it never ran profiled."""
        profiled = [fn for key, fn in self._linked.items() if key.endswith("+profile")
                    and (linker is None or key.split(":")[0].removesuffix("+profile") == linker)]
        return profiled[-1].profile if profiled else None

    def make_linked_thunk(self, node: Apply, storage_map: Any, compute_map: Any,
                          no_recycling: Any, linker: Any) -> Any:
        """The node run by its inner graph compiled as a unit like the outer graph (same
        linker kind and device; see `linked`)."""
        from workbench.core.graph.op import Thunk

        fn = self.linked(linker)
        in_cells = [storage_map[v] for v in node.inputs]
        out_cells = [storage_map[v] for v in node.outputs]
        done = [compute_map[v] for v in node.outputs]

        def thunk() -> None:
            results = fn(*[cell[0] for cell in in_cells])
            for cell, value in zip(out_cells, results):
                cell[0] = value
            for cell in done:
                cell[0] = True

        return Thunk(thunk, node, in_cells, out_cells, impl=getattr(linker, "name", "py"))

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        results = self.compiled()(*inputs)
        for cell, value in zip(output_storage, results):
            cell[0] = value

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        return True

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        from workbench.core.tensor.shape import shape_tuple

        outs = clone_replace(list(self.inner_outputs), dict(zip(self.inner_inputs, node.inputs)))
        return [tuple(shape_tuple(o)) for o in outs]

    # -- differentiation ----------------------------------------------------------------
    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        reached = [set(ancestors([out])) for out in self.inner_outputs]
        return [[var in r for r in reached] for var in self.inner_inputs]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        if self.lop_overrides is not None:
            if isinstance(self.lop_overrides, OpFromGraph):
                from workbench.core.graph.type import is_disconnected
                from workbench.core.tensor.creation import zeros_like

                grads = [zeros_like(out) if is_disconnected(g) else g
                         for out, g in zip(outputs, output_grads)]
                return self.lop_overrides(*inputs, *outputs, *grads, return_list=True)
            return list(self.lop_overrides(list(inputs), list(outputs), list(output_grads)))
        return self._default_grads(inputs, output_grads)

    def _default_grads(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
                       ) -> list[Variable]:
        """The gradient of the inner graph, packaged as OpFromGraph `grad_<name>` over the
        inputs and the connected output gradients (built once per kind of call)."""
        from workbench.core.grad import disconnected_type, is_disconnected

        seeded = tuple(k for k, g in enumerate(output_grads) if not is_disconnected(g))
        if not seeded:
            return [disconnected_type() for _ in inputs]
        key = (seeded, tuple(output_grads[k].type for k in seeded))
        if key not in self._grad_ops:
            self._grad_ops[key] = self._grad_op(seeded, [output_grads[k] for k in seeded])
        grad_op, grads = self._grad_ops[key]
        result = list(grads)  # the disconnected and undefined gradients, as they are
        if grad_op is not None:
            values = grad_op(*inputs, *(output_grads[k] for k in seeded), return_list=True)
            real = [k for k, g in enumerate(grads) if g is None]
            for k, value in zip(real, values):
                result[k] = value
        return result

    def _grad_op(self, seeded: Sequence[int], output_grads: Sequence[Variable]
                 ) -> tuple[OpFromGraph | None, list[Any]]:
        """(the gradient OpFromGraph or None, per input: None where it gives the gradient,
        else the disconnected or undefined (NullType) gradient)."""
        from workbench.core.grad import grad, is_disconnected, is_null

        xs = [v.type(v.name) for v in self.inner_inputs]
        outs = clone_replace(list(self.inner_outputs), dict(zip(self.inner_inputs, xs)))
        gs = [g.type(f"d_{outs[k].name or k}") for k, g in zip(seeded, output_grads)]
        grads = grad(None, xs, known_grads={outs[k]: g for k, g in zip(seeded, gs)},
                     disconnected_inputs="ignore", return_disconnected="disconnected",
                     null_gradients="return")
        real = [g for g in grads if not is_disconnected(g) and not is_null(g)]
        marks = [g if is_disconnected(g) or is_null(g) else None for g in grads]
        if not real:
            return None, marks
        return OpFromGraph(xs + gs, real, inline=self.inline, name=f"grad_{self.label}"), marks

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        if self.rop_overrides is not None:
            if isinstance(self.rop_overrides, OpFromGraph):
                from workbench.core.tensor.creation import zeros_like

                points = [zeros_like(x) if v is None else v for x, v in zip(inputs, eval_points)]
                return self.rop_overrides(*inputs, *points, return_list=True)
            return list(self.rop_overrides(list(inputs), list(eval_points)))
        from workbench.core.derivatives import Rop

        outs = clone_replace(list(self.inner_outputs), dict(zip(self.inner_inputs, inputs)))
        pairs = [(x, v) for x, v in zip(inputs, eval_points) if v is not None]
        if not pairs:
            return [None] * len(outs)
        return list(Rop(outs, [x for x, _ in pairs], [v for _, v in pairs]))


@register_vectorizer(OpFromGraph)
def vectorize_op_from_graph(op: OpFromGraph, node: Apply, new_inputs: list[Variable],
                            batch_ndims: list[int]) -> list[Variable]:
    """An OpFromGraph over a batch: its inner graph vectorized, packaged under the same
    name (no loop). With gradient overrides (written for one example) it becomes a
    Blockwise of the Op instead."""
    from workbench.core.tensor.type import TensorType
    from workbench.core.tensor.vectorize import as_blockwise, vectorize_graph

    if op.lop_overrides is not None or op.rop_overrides is not None:
        return as_blockwise(op, node, new_inputs, batch_ndims)
    inner_inputs = []
    for inner, new, b in zip(op.inner_inputs, new_inputs, batch_ndims):
        inner_inputs.append(inner if b == 0 else TensorType(
            inner.type.dtype, tuple(new.type.shape[:b]) + tuple(inner.type.shape))(inner.name))
    outputs = vectorize_graph(list(op.inner_outputs), dict(zip(op.inner_inputs, inner_inputs)))
    batched = OpFromGraph(inner_inputs, outputs, inline=op.inline, name=op.label)
    return batched(*new_inputs, return_list=True)
