"""The casting pass: make a graph computable on the backend it will be linked for (seed 004).

Each backend declares its dtypes in `workbench.core.dtypes` (`register_backend_dtypes`).
The pass `backend_dtypes` (always in the rewrite database, run last, inside the trace)
checks every node of a graph that declares its `backend`: a node whose inputs or
outputs have a dtype the backend (or the node's Op on it) lacks raises
`UnsupportedDtypeError`, unless a casting mode is set ('upcast', 'downcast',
'crosscast', 'cast'); then the node is rebuilt on converted inputs and its outputs
are converted back, as ordinary cast nodes that show in `dprint` and as steps of the
rewrite trace. A node whose Op itself names the dtype (a cast to float16, or a fused
loop containing one) is rebuilt with the Op retyped too: it computes in the mode's
dtype, like the rest of the graph. Without a casting mode, a backend may run the
nodes of some dtypes it lacks through their Python implementation instead
(`dtypes.run_in_python`: float16 on the C linker). A graph with no `backend` (one
rewritten by `rewrite_graph`) is left alone.
"""

from __future__ import annotations

from typing import Any

from workbench.core import dtypes
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite.db import ALWAYS, rewrite_db
from workbench.core.rewrite.engine import GraphRewriter, recording_step

__all__ = ["BackendDtypes", "enforce_backend_dtypes", "retyped_op", "unsupported_in"]


def _dtype_of(var: Variable) -> dtypes.Dtype | None:
    dtype = getattr(var.type, "dtype", None)
    return dtypes.as_dtype(dtype) if dtype is not None else None


def unsupported_in(node: Apply, backend: str) -> list[dtypes.Dtype]:
    """The dtypes of `node`'s inputs and outputs that `backend` cannot compute with."""
    found: list[dtypes.Dtype] = []
    for var in (*node.inputs, *node.outputs):
        dtype = _dtype_of(var)
        if dtype is not None and dtype not in found and not dtypes.is_supported(
            backend, dtype, node.op
        ):
            found.append(dtype)
    return found


def enforce_backend_dtypes(fgraph: FunctionGraph, backend: str, mode: str | None = None,
                           rewriter: Any = None) -> list[Apply]:
    """Check (and with a casting mode, convert) every node of `fgraph` for `backend`.

    Returns the new nodes that replaced unsupported ones, each replacement one step of
    `rewriter` in the graph's trace. Conversion nodes added here are tagged
    `casting_boundary` and exempt from the check: they are where the data changes
    dtype, and every backend can run them (in Python if needed).
    """
    from workbench.core.tensor.basic import cast

    if backend not in dtypes.registered_backends():
        return []
    mode = mode if mode is not None else dtypes.casting_mode()
    rebuilt: list[Apply] = []
    for node in list(fgraph.toposort()):
        if getattr(node.tag, "casting_boundary", False) or node not in fgraph.apply_nodes:
            continue
        bad = unsupported_in(node, backend)
        if not bad or (mode is None and all(dtypes.runs_in_python(backend, d) for d in bad)):
            continue
        if mode is None:
            raise dtypes.UnsupportedDtypeError(bad[0], backend, node.op)
        target = {d: dtypes.resolve_unsupported(d, backend, node.op, mode) for d in bad}
        new_inputs = [_converted(var, target, cast) for var in node.inputs]
        try:
            new_node = node.op.make_node(*new_inputs)
        except (TypeError, ValueError):  # the Op fixes its input types (a loop body's)
            raise dtypes.UnsupportedDtypeError(bad[0], backend, node.op) from None
        if unsupported_in(new_node, backend):  # the Op itself names the dtype (a cast)
            retyped = retyped_op(node.op, target)
            if retyped is not None:
                new_node = retyped.make_node(*new_inputs)
        still_bad = unsupported_in(new_node, backend)
        if still_bad:
            raise dtypes.UnsupportedDtypeError(still_bad[0], backend, node.op)
        replacements = []
        for old, new in zip(node.outputs, new_node.outputs):
            if _dtype_of(new) != _dtype_of(old):
                new = cast(new, old.type.dtype)
                new.owner.tag.casting_boundary = True
            replacements.append((old, new))
        with recording_step(fgraph, rewriter or backend_dtypes, node):
            fgraph.replace_all(replacements, reason=rewriter or backend_dtypes)
        rebuilt.append(new_node)
    return rebuilt


def _converted(var: Variable, target: dict[Any, Any], cast: Any) -> Variable:
    dtype = _dtype_of(var)
    if dtype is None or dtype not in target:
        return var
    converted = cast(var, target[dtype])
    if converted.owner is not None:
        converted.owner.tag.casting_boundary = True
    return converted


def retyped_op(op: Any, target: dict[Any, Any]) -> Any | None:
    """An Op computing what `op` does with the dtypes named by its own parameters
    replaced as `target` says (dtype -> dtype): an Elemwise over a Cast, or over a
    Composite whose graph casts or holds constants of those dtypes. None for any other
    Op (its dtypes come from its inputs alone, or it cannot be retyped)."""
    from workbench.core.tensor.elemwise import Elemwise

    if not isinstance(op, Elemwise):
        return None
    scalar_op = _retyped_scalar_op(op.scalar_op, target)
    return None if scalar_op is None else Elemwise(scalar_op)


def _retyped_scalar_op(op: Any, target: dict[Any, Any]) -> Any | None:
    from workbench.core.scalar.basic import Cast
    from workbench.core.scalar.composite import Composite

    if isinstance(op, Cast):
        dtype = dtypes.as_dtype(op.o_type.dtype)
        return Cast(target[dtype]) if dtype in target else op
    if isinstance(op, Composite):
        return _retyped_composite(op, target)
    return op


def _retyped_composite(op: Any, target: dict[Any, Any]) -> Any | None:
    """`op`'s graph rebuilt on inputs, casts and constants of the `target` dtypes."""
    from workbench.core.graph.basic import Constant, io_toposort
    from workbench.core.scalar.basic import get_scalar_type, scalar_constant

    def mapped(dtype: Any) -> Any:
        return target.get(dtypes.as_dtype(dtype), dtype)

    inputs = [get_scalar_type(mapped(v.type.dtype))(v.name) for v in op.inputs]
    equiv: dict[Variable, Variable] = dict(zip(op.inputs, inputs))

    def new_var(var: Variable) -> Variable:
        if var not in equiv and isinstance(var, Constant):
            equiv[var] = (scalar_constant(var.data, mapped(var.type.dtype))
                          if mapped(var.type.dtype) != var.type.dtype else var)
        return equiv[var]

    for node in io_toposort(op.inputs, op.outputs):
        inner = _retyped_scalar_op(node.op, target)
        if inner is None:
            return None
        rebuilt = inner.make_node(*[new_var(v) for v in node.inputs])
        equiv.update(zip(node.outputs, rebuilt.outputs))
    return type(op)(inputs, [new_var(o) for o in op.outputs])


class BackendDtypes(GraphRewriter):
    """The casting pass: every node of a graph computable on `fgraph.backend` (see the
    module docstring). When that backend lacks a dtype and no casting mode is set, a
    graph with a `backend_fallback` is declared for that backend instead."""

    name = "backend_dtypes"

    def apply(self, fgraph: FunctionGraph) -> None:
        backend = fgraph.backend
        if backend is None:
            return
        try:
            enforce_backend_dtypes(fgraph, backend, rewriter=self)
        except dtypes.UnsupportedDtypeError:
            fallback = fgraph.backend_fallback
            if fallback is None or fallback == backend:
                raise
            fgraph.backend = fallback
            enforce_backend_dtypes(fgraph, fallback, rewriter=self)


backend_dtypes = BackendDtypes()
rewrite_db.register("backend_dtypes", backend_dtypes, ALWAYS, "casting", position=8)
