"""Inplace rewrites: Ops overwrite an input instead of allocating, when nothing else needs it.

Runs last (after fusion). Each Elemwise tries to write output k into an input
of exactly the output's Type (same dtype and static shape) whose shape is
certainly the output's at run time (a length unknown statically may broadcast:
the ShapeFeature must prove the symbolic lengths equal): ``Elemwise(op)``
becomes ``Elemwise(op, inplace_pattern={0: i})``.
IncSubtensor / AdvancedIncSubtensor / Gemm / Gemv (any Op with an ``inplace``
prop) switch to ``inplace=True``, overwriting input 0; Gemm and Gemv check the shapes
at run time themselves (`inplace_falls_back`), so the weight of an SGD update
(``W - lr * dot(x.T, d)`` with W shared, of unknown static shape) is written in place
without a proof that its shape is the product's.

Safety is the DestroyHandler's (workbench.core.graph.destroyhandler): a graph
input, a constant, a graph output, a value another Op still has to read
afterwards, or a read-only view (BroadcastTo) is never overwritten. Each
candidate is prechecked with `DestroyHandler.check_destroy`, then replaced
through `replace_all_validate`, which reverts the change if validation fails.

`protect_inputs` is the other side of the same contract for Ops the *user* made
in place (``Elemwise(op, inplace_pattern=...)``, ``IncSubtensor(inplace=True)``,
from the API or a graph file): `function` calls it before rewriting, and the
`protect_inputs` pass (tagged `always`: among the last passes of every query) after,
on a graph that declares its `mutable_inputs`. Every destroyer that would overwrite a
caller's input not marked ``In(mutable=True)``, a shared value or a constant (or,
before rewriting, that the DestroyHandler finds unsafe otherwise) is replaced by its
copying version, so the call computes the same values and leaves the caller's arrays
alone.
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply, Constant, Variable, io_toposort
from workbench.core.graph.destroyhandler import DestroyHandler, view_roots
from workbench.core.graph.features import ReplaceValidate
from workbench.core.graph.fg import FunctionGraph, InconsistencyError
from workbench.core.rewrite.db import ALWAYS, register_inplace, rewrite_db
from workbench.core.rewrite.engine import GraphRewriter, carry_over, recording_step
from workbench.core.tensor.elemwise import Elemwise
from workbench.core.tensor.shape_feature import get_shape_feature

__all__ = [
    "InplaceRewriter", "ProtectInputs", "attach_destroy_handler", "inplace_rewriter",
    "protect_inputs",
]  # fmt: skip


def attach_destroy_handler(fgraph: FunctionGraph) -> DestroyHandler:
    """The DestroyHandler of `fgraph` (attached with ReplaceValidate if missing)."""
    if not hasattr(fgraph, "replace_all_validate"):
        fgraph.attach_feature(ReplaceValidate())
    handler = getattr(fgraph, "destroy_handler", None)
    if handler is None:
        handler = DestroyHandler(mutable=fgraph.mutable_inputs or ())
        fgraph.attach_feature(handler)
    return handler


def _can_destroy(handler: DestroyHandler, node: Apply, i: int, out: Variable) -> bool:
    """Whether `node` may write output `out` into its input `i`: same Type, certainly the
    same shape at run time (lengths unknown statically may broadcast), and safe. An Op
    that checks the shapes itself at run time (`inplace_falls_back`: a new result when
    they differ, Gemm) needs Types that agree only where both are static."""
    var = node.inputs[i]
    if isinstance(var, Constant) or (var.owner is None and var not in handler.mutable):
        return False
    if getattr(node.op, "inplace_falls_back", False):
        if not _may_be(var.type, out.type):
            return False
    elif var.type != out.type:
        return False
    elif any(s is None for s in getattr(out.type, "shape", ())):
        fgraph = handler.fgraph
        assert fgraph is not None
        if not get_shape_feature(fgraph).same_shape(var, out):
            return False
    try:
        handler.check_destroy(node, i)
    except InconsistencyError:
        return False
    return True


def _may_be(var_type: Any, out_type: Any) -> bool:
    """Whether a value of `var_type` may have `out_type`: the same dtype and rank, and
    `out_type`'s length wherever `var_type` has a static one (a static 1 against an
    unknown length may broadcast: refused)."""
    shape, out_shape = getattr(var_type, "shape", None), getattr(out_type, "shape", None)
    if shape is None or out_shape is None or len(shape) != len(out_shape):
        return var_type == out_type
    return var_type.dtype == out_type.dtype and all(
        a is None or a == b for a, b in zip(shape, out_shape))


def _elemwise_pattern(handler: DestroyHandler, node: Apply) -> dict[int, int]:
    """A greedy inplace_pattern for an Elemwise node: output k -> a free input of its Type.

    Inputs that are a mutable graph input (an updated shared value, ``b - lr * g``) come
    first: the update is then written into the shared value's own storage, and the other
    operand's buffer stays free to be reused by its node at the next call."""
    pattern: dict[int, int] = {}
    used_roots: set[Any] = set()
    mutable = set(handler.mutable)
    order = sorted(range(len(node.inputs)), key=lambda i: node.inputs[i] not in mutable)
    for k, out in enumerate(node.outputs):
        for i in order:
            var = node.inputs[i]
            if i in pattern.values() or var.type != out.type:
                continue
            roots = set(view_roots(var))
            if roots & used_roots or not _can_destroy(handler, node, i, out):
                continue
            pattern[k] = i
            used_roots |= roots
            break
    return pattern


def _inplace_node(handler: DestroyHandler, node: Apply) -> Apply | None:
    """The inplace version of `node`, or None if there is none or it would be unsafe."""
    op = node.op
    if isinstance(op, Elemwise):
        if op.inplace_pattern:
            return None
        pattern = _elemwise_pattern(handler, node)
        if not pattern:
            return None
        new_op: Any = Elemwise(op.scalar_op, inplace_pattern=pattern)
    elif "inplace" in getattr(op, "__props__", ()) and getattr(op, "inplace", True) is False:
        if not _can_destroy(handler, node, 0, node.outputs[0]):
            return None
        props = {name: getattr(op, name) for name in op.__props__}
        props["inplace"] = True
        new_op = type(op)(**props)
    else:
        return None
    try:
        new = new_op.make_node(*node.inputs)
    except (TypeError, ValueError):
        return None
    if any(o.type != n.type for o, n in zip(node.outputs, new.outputs)):
        return None
    return new


def _copying_node(node: Apply) -> Apply:
    """`node` made not to overwrite anything: its Op without the inplace flag, or (for an
    Op without one) the same Op applied to copies of the inputs it destroys."""
    op = node.op
    if isinstance(op, Elemwise):
        return Elemwise(op.scalar_op).make_node(*node.inputs)
    if "inplace" in getattr(op, "__props__", ()):
        props = {name: getattr(op, name) for name in op.__props__}
        props["inplace"] = False
        return type(op)(**props).make_node(*node.inputs)
    from workbench.core.tensor.math import identity

    destroyed = {i for ins in op.destroy_map.values() for i in ins}
    inputs = [identity(v) if i in destroyed else v for i, v in enumerate(node.inputs)]
    return op.make_node(*inputs)


def _overwrites_protected(node: Apply, protected: set[Variable]) -> bool:
    """Whether `node` destroys (directly or through views) a protected input or a constant."""
    for ins in node.op.destroy_map.values():
        for i in ins:
            for root in view_roots(node.inputs[i]):
                if isinstance(root, Constant) or root in protected:
                    return True
    return False


def protect_inputs(fgraph: FunctionGraph, mutable: Any = (), full_check: bool = True,
                   rewriter: Any = None) -> list[Apply]:
    """Make every destroyer of `fgraph` that would overwrite a graph input not in `mutable`
    (or a constant) copy instead; return the nodes replaced.

    With `full_check` every destroyer is also checked by the DestroyHandler (a value
    read after it is overwritten, destroyed twice, or a graph output) and replaced when
    unsafe; the handler stays attached so the linkers run readers before destroyers.
    Without it (after rewriting, when the inplace pass made its destroyers safe) only
    the inputs are protected, in time linear in the graph."""
    destroyers = [n for n in fgraph.apply_nodes if n.op.destroy_map]
    if not destroyers:
        return []
    mutable = set(mutable)
    protected = {v for v in fgraph.inputs if v not in mutable}
    handler = None
    if full_check:
        fgraph.mutable_inputs = tuple(mutable)
        handler = attach_destroy_handler(fgraph)
        handler.mutable = mutable
    replaced: list[Apply] = []
    # plain dependency order: an unsafe destroyer's orderings may not be satisfiable
    for node in io_toposort(fgraph.inputs, fgraph.outputs) if full_check else destroyers:
        if not node.op.destroy_map or node not in fgraph.apply_nodes:
            continue
        unsafe = _overwrites_protected(node, protected)
        if not unsafe and handler is not None:
            try:
                handler.check_destroyer(node)
            except InconsistencyError:
                unsafe = True
        if unsafe:
            new = _copying_node(node)
            with recording_step(fgraph, rewriter or protect_inputs_pass, node):
                fgraph.replace_all(list(zip(node.outputs, new.outputs)),
                                   reason=rewriter or protect_inputs_pass)
            replaced.append(node)
    return replaced


class InplaceRewriter(GraphRewriter):
    """The inplace pass (see the module docstring); keeps the DestroyHandler attached so the
    linker's toposort orders every reader of a destroyed value before its destroyer."""

    name = "inplace"

    def apply(self, fgraph: FunctionGraph) -> None:
        handler = attach_destroy_handler(fgraph)
        trace = fgraph.rewrite_trace
        for node in fgraph.toposort():
            if node not in fgraph.apply_nodes:
                continue
            new = _inplace_node(handler, node)
            if new is None:
                continue
            for old, replacement in zip(node.outputs, new.outputs):
                carry_over(old, replacement)
            if trace is not None:
                trace.begin_step(self, node)
            try:
                fgraph.replace_all_validate(  # type: ignore[attr-defined]
                    list(zip(node.outputs, new.outputs)), reason=self)
            except Exception:  # refused (and reverted): keep the copying version
                if trace is not None:
                    trace.cancel_step()
                continue
            if trace is not None:
                trace.end_step()


inplace_rewriter = InplaceRewriter()


register_inplace(inplace_rewriter)


class ProtectInputs(GraphRewriter):
    """After rewriting, no destroyer overwrites an input of a compiled function that is not
    marked mutable (`protect_inputs` on a graph that declares `mutable_inputs`)."""

    name = "protect_inputs"

    def apply(self, fgraph: FunctionGraph) -> None:
        if fgraph.mutable_inputs is not None:
            protect_inputs(fgraph, fgraph.mutable_inputs, full_check=False, rewriter=self)


protect_inputs_pass = ProtectInputs()
rewrite_db.register("protect_inputs", protect_inputs_pass, ALWAYS, position=7)
