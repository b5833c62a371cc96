"""Rewrites of loops (registered in the rewrite database, so every trace names them).

- `scan_push_out_invariants` (canonicalize): what the body computes from the
  non-sequences (and constants) alone is the same at every step; it is computed once
  before the loop and enters as a new non-sequence. Non-sequences the body no longer
  reads are dropped.
- `scan_drop_unused_records` (canonicalize): the draws a loop records for its
  gradient (`Scan.recording_draws`) that no gradient reads are not stored.
- `scan_remove_unused` (canonicalize): outputs that are not fed back (nit-sots) and
  that nothing reads are no longer computed, and sequences the body then no longer
  reads are no longer sliced (BPTT's loop computes the gradient of every sequence,
  of which a training step uses none: the inputs').
- `scan_last_row_of_rows` (canonicalize): ``ys[-1]`` of a recurrent output's rows
  ``full[L:]`` reads ``full[-1]``: after zero steps that is the last initial row (as in
  PyTensor, in every mode), not an IndexError.
- `scan_keep_last_row` (specialize): an output used only through its last row
  (``ys[-1]``, a shared variable's update), or not at all, is stored as that row
  alone: the loop keeps a ring of the rows its taps read instead of n_steps rows.
- `scan_merge` (in the fusion pass): two loops of the same number of steps
  reading a same sequence, neither using the other, become one loop running both bodies
  (one pass over the sequence, one loop overhead).

The body itself is rewritten with the outer rewriter after the passes (rewrite/inner.py).
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import (
    Apply,
    Constant,
    Variable,
    ancestors,
    clone_replace,
)
from workbench.core.graph.fg import OUTPUT
from workbench.core.rewrite.db import register_canonicalize, register_fusion, register_specialize
from workbench.core.rewrite.engine import GraphRewriter, node_rewriter, recording_step
from workbench.core.scan.op import Scan
from workbench.core.tensor.indexing import SliceEntry
from workbench.core.tensor.subtensor import Subtensor

__all__ = ["ScanMerge", "push_out_invariants", "scan_drop_unused_records",
           "scan_keep_last_row", "scan_last_row_of_rows", "scan_merge", "scan_push_out_invariants",
           "scan_remove_unused"]


def _rebuilt(node: Apply, inputs: list[Variable], outputs: list[Variable], n_non_seqs: int,
             outer_non_seqs: list[Variable]) -> list[Variable]:
    """The node's loop with another body (same layout up to the non-sequences)."""
    op: Scan = node.op
    info = op.info._replace(n_non_seqs=n_non_seqs)
    new_op = Scan(inputs, outputs, info, op.name, op.truncate_gradient, op.keep_last)
    new_op.inner_graph_rewritten = op.inner_graph_rewritten
    n_steps, seqs, inits, _ = op.outer_parts(node.inputs)
    return new_op(n_steps, *seqs, *inits, *outer_non_seqs, return_list=True)


@register_canonicalize
@node_rewriter([Scan])
def scan_push_out_invariants(fgraph: Any, node: Apply) -> Any:
    """Compute once, before the loop, what the body computes from non-sequences alone."""
    return push_out_invariants(node)


@register_canonicalize
@node_rewriter([Scan])
def scan_drop_unused_records(fgraph: Any, node: Apply) -> Any:
    """Drop the recorded draws nothing reads (no gradient was taken through the loop)."""
    op: Scan = node.op
    n = op.info.n_recorded
    if not n:
        return None
    first = len(node.outputs) - n
    unused = [i for i in range(n) if not fgraph.clients.get(node.outputs[first + i])]
    if not unused:
        return None
    new_outs = op.without_records(unused)(*node.inputs, return_list=True)
    kept = [k for k in range(len(node.outputs)) if k - first not in unused]
    return {node.outputs[k]: new for k, new in zip(kept, new_outs)
            if node.outputs[k] in fgraph.variables}


def _destroyed(inner: Any, var: Variable) -> bool:
    """Whether an in-place node of the body overwrites `var` (it cannot become an input)."""
    for client, i in inner.clients.get(var, ()):
        if client != OUTPUT and any(i in ins for ins in client.op.destroy_map.values()):
            return True
    return False


def push_out_invariants(node: Apply) -> list[Variable] | None:
    """The node's outputs from a loop computing its invariant work before it (None when
    there is none to move and no non-sequence to drop). Also run after the body is
    rewritten (`Scan.after_inner_rewrite`): the rewrite can make new invariant work (a
    transposed weight for a Gemv)."""
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
                       for c, _ in inner.clients.get(v, ())) and not _destroyed(inner, v)]
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


@register_canonicalize
@node_rewriter([Scan])
def scan_remove_unused(fgraph: Any, node: Apply) -> Any:
    """Stop computing the nit-sot outputs nobody reads, then stop slicing the sequences
    the body no longer reads."""
    op: Scan = node.op
    info = op.info
    first_nit = info.n_recurrent
    # (the recorded draws, the last nit-sots, are scan_drop_unused_records' to drop)
    unread = {first_nit + m for m in range(info.n_nit_sot - info.n_recorded)
              if not fgraph.clients.get(node.outputs[first_nit + m])}
    kept_outputs = [out for k, out in enumerate(op.inner_outputs) if k not in unread]
    read = set(ancestors(kept_outputs))
    kept_seqs = [i for i, v in enumerate(op.inner_seqs()) if v in read]
    if not unread and len(kept_seqs) == info.n_seqs:
        return None
    n_steps, seqs, inits, non_seqs = op.outer_parts(node.inputs)
    inputs = [op.inner_seqs()[i] for i in kept_seqs] + op.inner_inputs[info.n_seqs:]
    keep_last = [k for n, k in enumerate(op.keep_last) if n not in unread]
    new_info = info._replace(n_seqs=len(kept_seqs), n_nit_sot=info.n_nit_sot - len(unread))
    new_op = Scan(inputs, kept_outputs, new_info, op.name, op.truncate_gradient, keep_last)
    new_op.inner_graph_rewritten = op.inner_graph_rewritten
    new_outs = new_op(n_steps, *[seqs[i] for i in kept_seqs], *inits, *non_seqs,
                      return_list=True)
    kept = [out for k, out in enumerate(node.outputs) if k not in unread]
    return dict(zip(kept, new_outs))


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
    for a recurrent output's user-visible rows; [] when nothing reads it: BPTT's adjoint
    of an initial state nobody asked for), or None if anything else reads it."""
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
    return uses


@register_canonicalize
@node_rewriter([Subtensor])
def scan_last_row_of_rows(fgraph: Any, node: Apply) -> Any:
    """`full[L:][-1]` of a loop's recurrent output (L initial rows) is `full[-1]`."""
    rows = node.inputs[0].owner
    if not _is_last_row(node) or rows is None or not isinstance(rows.op, Subtensor):
        return None
    loop = rows.inputs[0].owner
    if loop is None or not isinstance(loop.op, Scan):
        return None
    k = loop.outputs.index(rows.inputs[0])
    if k >= loop.op.info.n_recurrent or not _is_slice_from(rows, loop.op.info.depths[k]):
        return None
    return [rows.inputs[0][-1]]


@register_specialize
@node_rewriter([Scan])
def scan_keep_last_row(fgraph: Any, node: Apply) -> Any:
    """Store only the last row of outputs nobody reads otherwise (no n_steps rows)."""
    op: Scan = node.op
    n_out = len(node.outputs)
    marked = list(op.keep_last) if op.keep_last else [False] * n_out
    found: dict[int, list[Variable]] = {}
    for k in range(n_out):
        if not marked[k] and not op.is_state(k):  # (a generator has no rows)
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
        for use in uses:
            replacements[use] = new_outs[k][0]
    for k in range(n_out):
        if k not in found:
            replacements[node.outputs[k]] = new_outs[k]
    return {old: new for old, new in replacements.items() if old in fgraph.variables}


def _mergeable(node: Apply) -> bool:
    op = node.op
    return not op.info.as_while and not op.keep_last and not op.has_states()


def _uses(node: Apply, other: Apply) -> bool:
    """Whether `node` depends on an output of `other`."""
    return any(v.owner is other for v in ancestors(list(node.inputs)))


def _same_count(a: Apply, b: Apply) -> bool:
    n, m = a.inputs[0], b.inputs[0]
    if n is m:
        return True
    return isinstance(n, Constant) and isinstance(m, Constant) and int(n.data) == int(m.data)


def _merged(a: Apply, b: Apply) -> tuple[list[Variable], list[Variable], list[Variable]]:
    """One loop running the bodies of `a` and `b`: (its outputs standing for a's, for b's,
    unused)."""
    opa, opb = a.op, b.op
    ia, ib = opa.info, opb.info
    n_steps, seqs_a, inits_a, ns_a = opa.outer_parts(a.inputs)
    _, seqs_b, inits_b, ns_b = opb.outer_parts(b.inputs)
    given: dict[Variable, Variable] = {}
    extra_seqs, extra_inner = [], []
    for outer, inner in zip(seqs_b, opb.inner_seqs()):
        if outer in seqs_a:  # the same sequence: the same row in the merged body
            given[inner] = opa.inner_seqs()[seqs_a.index(outer)]
        else:
            given[inner] = inner.type(inner.name)
            extra_seqs.append(outer)
            extra_inner.append(given[inner])
    for inner in [*opb.inner_taps(), *opb.inner_non_seqs()]:
        given[inner] = inner.type(inner.name)
    outs_b = [given.get(v, v) for v in clone_replace(list(opb.inner_outputs), given)]
    inputs = [*opa.inner_seqs(), *extra_inner, *opa.inner_taps(),
              *[given[v] for v in opb.inner_taps()], *opa.inner_non_seqs(),
              *[given[v] for v in opb.inner_non_seqs()]]
    rec_a, nit_a = opa.inner_outputs[:ia.n_recurrent], opa.inner_nit_sot_outputs()
    rec_b, nit_b = outs_b[:ib.n_recurrent], outs_b[ib.n_recurrent:ib.n_recurrent + ib.n_nit_sot]
    info = ia._replace(n_seqs=ia.n_seqs + len(extra_inner),
                       recurrent_taps=ia.recurrent_taps + ib.recurrent_taps,
                       n_nit_sot=ia.n_nit_sot + ib.n_nit_sot,
                       n_non_seqs=ia.n_non_seqs + ib.n_non_seqs)
    op = Scan(inputs, [*rec_a, *rec_b, *nit_a, *nit_b], info, f"{opa.name}+{opb.name}",
              opa.truncate_gradient)
    outs = op(n_steps, *seqs_a, *extra_seqs, *inits_a, *inits_b, *ns_a, *ns_b,
              return_list=True)
    ra, rb = ia.n_recurrent, ib.n_recurrent
    for_a = outs[:ra] + outs[ra + rb:ra + rb + ia.n_nit_sot]
    for_b = outs[ra:ra + rb] + outs[ra + rb + ia.n_nit_sot:]
    return for_a, for_b, []


class ScanMerge(GraphRewriter):
    """Merge loops of the same length over a same sequence (see the module docstring)."""

    name = "scan_merge"
    tags = ("fast_run", "scan")

    def apply(self, fgraph: Any) -> None:
        merged = True
        while merged:
            merged = False
            loops = [n for n in fgraph.toposort() if isinstance(n.op, Scan) and _mergeable(n)]
            for i, a in enumerate(loops):
                for b in loops[i + 1:]:
                    if self._try(fgraph, a, b):
                        merged = True
                        break
                if merged:
                    break

    def _try(self, fgraph: Any, a: Apply, b: Apply) -> bool:
        if a.op.truncate_gradient != b.op.truncate_gradient or not _same_count(a, b):
            return False
        seqs_a = a.op.outer_parts(a.inputs)[1]
        if not any(s in seqs_a for s in b.op.outer_parts(b.inputs)[1]):
            return False
        if _uses(a, b) or _uses(b, a):
            return False
        with recording_step(fgraph, self, a):
            for_a, for_b, _ = _merged(a, b)
            fgraph.replace_all([*zip(a.outputs, for_a), *zip(b.outputs, for_b)], reason=self)
        return True


scan_merge = ScanMerge()
register_fusion(scan_merge, "scan")
