"""Rewrites of loops (registered in the rewrite database, so every trace names them).

- `scan_push_out_invariants` (canonicalize): what the body computes from the
  non-sequences (and constants) alone is the same at every step; it is computed once
  before the loop and enters as a new non-sequence. Non-sequences the body no longer
  reads are dropped.
- `scan_keep_last_row` (specialize): an output used only through its last row
  (``ys[-1]``, a shared variable's update) is stored as that row alone: the loop keeps
  a ring of the rows its taps read instead of n_steps rows.

The body itself is rewritten with the outer rewriter after the passes (rewrite/inner.py).
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply, Constant, Variable, ancestors, clone_replace
from workbench.core.graph.fg import OUTPUT
from workbench.core.rewrite.db import register_canonicalize, register_specialize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.scan.op import Scan
from workbench.core.tensor.indexing import SliceEntry
from workbench.core.tensor.subtensor import Subtensor

__all__ = ["scan_keep_last_row", "scan_push_out_invariants"]


def _rebuilt(node: Apply, inputs: list[Variable], outputs: list[Variable], n_non_seqs: int,
             outer_non_seqs: list[Variable]) -> list[Variable]:
    """The node's loop with another body (same layout up to the non-sequences)."""
    op: Scan = node.op
    info = op.info._replace(n_non_seqs=n_non_seqs)
    new_op = Scan(inputs, outputs, info, op.name, op.truncate_gradient, op.keep_last)
    n_steps, seqs, inits, _ = op.outer_parts(node.inputs)
    return new_op(n_steps, *seqs, *inits, *outer_non_seqs, return_list=True)


@register_canonicalize
@node_rewriter([Scan])
def scan_push_out_invariants(fgraph: Any, node: Apply) -> Any:
    """Compute once, before the loop, what the body computes from non-sequences alone."""
    op: Scan = node.op
    inner = op.fgraph
    _, _, _, outer_ns = op.outer_parts(node.inputs)
    inner_ns = op.inner_non_seqs()
    invariant: set[Variable] = set(inner_ns)
    computed: list[Variable] = []
    for inner_node in inner.toposort():
        ins = inner_node.inputs
        if all(v in invariant or isinstance(v, Constant) for v in ins) and \
                any(v in invariant for v in ins) and not isinstance(inner_node.op, Scan):
            invariant.update(inner_node.outputs)
            computed.extend(inner_node.outputs)
    frontier = [v for v in computed
                if any(c == OUTPUT or not set(c.outputs) <= invariant
                       for c, _ in inner.clients.get(v, ()))]
    used = set()
    for inner_node in inner.apply_nodes:
        used.update(inner_node.inputs)
    used.update(inner.outputs)
    if not frontier and all(v in used for v in inner_ns):
        return None
    outer_values = list(clone_replace(frontier, dict(zip(inner_ns, outer_ns)))) \
        if frontier else []
    placeholders = [v.type(v.name or _short_formula(value, k))
                    for k, (v, value) in enumerate(zip(frontier, outer_values))]
    outputs = list(clone_replace(list(inner.outputs), dict(zip(frontier, placeholders))))
    still_used = set(ancestors(outputs))
    keep = [i for i, v in enumerate(inner_ns) if v in still_used]
    if not frontier and len(keep) == len(inner_ns):
        return None
    first_ns = op.info.n_seqs + op.info.n_taps
    inputs = list(op.inner_inputs[:first_ns]) + [inner_ns[i] for i in keep] + placeholders
    new_outs = _rebuilt(node, inputs, outputs, len(keep) + len(placeholders),
                        [outer_ns[i] for i in keep] + outer_values)
    return new_outs


def _short_formula(value: Variable, k: int) -> str:
    """The pushed-out value's formula as its name in the body (short ones only)."""
    from workbench.core.printing import pprint

    try:
        text = pprint(value)
    except Exception:
        text = ""
    return text if 0 < len(text) <= 40 else f"invariant{k}"


def _is_last_row(node: Any) -> bool:
    return (node != OUTPUT and isinstance(node.op, Subtensor) and node.op.idx_list == (-1,))


def _is_slice_from(node: Any, start: int) -> bool:
    return (node != OUTPUT and isinstance(node.op, Subtensor)
            and node.op.idx_list == (SliceEntry(start, None, None),))


def _last_row_uses(fgraph: Any, node: Apply, k: int) -> list[Variable] | None:
    """The variables reading only the last row of output k (`out[-1]`, or `out[L:][-1]`
    for a recurrent output's user-visible rows), or None if anything else reads it."""
    op: Scan = node.op
    uses: list[Variable] = []
    for client, _ in fgraph.clients[node.outputs[k]]:
        if _is_last_row(client):
            uses.append(client.outputs[0])
        elif k < op.info.n_recurrent and _is_slice_from(client, op.info.depths[k]):
            for reader, _ in fgraph.clients[client.outputs[0]]:
                if not _is_last_row(reader):
                    return None
                uses.append(reader.outputs[0])
        else:
            return None
    return uses or None


@register_specialize
@node_rewriter([Scan])
def scan_keep_last_row(fgraph: Any, node: Apply) -> Any:
    """Store only the last row of outputs nobody reads otherwise (no n_steps rows)."""
    op: Scan = node.op
    n_out = len(node.outputs)
    marked = list(op.keep_last) if op.keep_last else [False] * n_out
    found: dict[int, list[Variable]] = {}
    for k in range(n_out):
        if not marked[k]:
            uses = _last_row_uses(fgraph, node, k)
            if uses is not None:
                found[k] = uses
    if not found:
        return None
    for k in found:
        marked[k] = True
    new_outs = op.with_keep_last(marked)(*node.inputs, return_list=True)
    replacements: dict[Variable, Variable] = {}
    for k, uses in found.items():
        last = new_outs[k][0]
        for use in uses:
            replacements[use] = last
    for k in range(n_out):
        if k not in found:
            replacements[node.outputs[k]] = new_outs[k]
    return {old: new for old, new in replacements.items() if old in fgraph.variables}

