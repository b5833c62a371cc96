"""Derivatives of a loop: backpropagation through time (a loop run backwards) and the
forward-mode loop (tangents carried next to the values).

Reverse mode (`scan_vjp`). Let y_j[t] be recurrent output j at step t and a_j[t]
its total adjoint. Step s reads y_j[s + k] for each tap k < 0, so a_j[t] is the
cost's own gradient of y_j[t] plus, for every tap k, what step t - k sends back
through that tap. The backward loop visits s = n-1, ..., 0 and carries, per
recurrent output, L_j *pending* adjoints: q_{j,m} holds what later steps already
sent to y_j[s + 1 - m]. At step s:

    a_j      = g_j[s] + q_{j,1}                   (complete: every later step was visited)
    c        = vjp of the body at step s with the adjoints a_j (and the nit-sot grads)
    q'_{j,m} = q_{j,m+1} + c(tap -m of j)        (q_{j,L_j+1} = 0)
    G_ns'    = G_ns + c(non-sequences)            (accumulated over the steps)

and outputs c(sequences) as one row per step. After step 0, q_{j,m} is the
adjoint of the initial row L_j - m. Every part is an ordinary Scan, so the
backward loop can itself be differentiated (hessian-vector products).
`truncate_gradient = T > 0` runs only the last T steps backwards: earlier
sequence rows and the initial values then get no gradient through the loop, as in
PyTensor (its backward loop updates only the last T rows of the sit-sot adjoint
buffer; the initial row keeps its direct gradient, not the adjoint at the cut).

A loop carrying a random generator (a *state*) is differentiated as PyTensor does:
the state is not differentiable (its adjoint is disconnected) and the backward loop
carries no generator. It reads, instead of drawing, the draws the forward loop
recorded (`Scan.recording_draws`), so the gradient is that of the noise the forward
pass used: a dropout mask, the eps of ``mu + sigma * eps``.

Forward mode (`scan_jvp`): one loop computing the values and, next to each
recurrent output, its tangent as a recurrent output with the same taps (the
body's tangents from `Rop`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core import tensor as wt
from workbench.core.graph.basic import Constant, Variable, clone_replace
from workbench.core.scan.op import Scan, ScanInfo

__all__ = ["scan_jvp", "scan_vjp"]


def _differentiable(var: Variable) -> bool:
    dtype = getattr(var.type, "dtype", None)
    return dtype is not None and (dtype.is_float or dtype.is_complex)


def _fresh_body(op: Scan) -> tuple[list[Variable], list[Variable]]:
    """A copy of the loop body with new inputs: (inputs, outputs)."""
    inputs = [v.type(v.name) for v in op.inner_inputs]
    outputs = op.inner_outputs
    replaced = list(clone_replace(outputs, dict(zip(op.inner_inputs, inputs))))
    for k, out in enumerate(outputs):  # an input returned as is
        if out in op.inner_inputs:
            replaced[k] = inputs[op.inner_inputs.index(out)]
    return inputs, replaced


def _steps_run(op: Scan, n_steps: Variable, outputs: list[Variable]) -> Variable:
    """How many steps the forward loop ran (for a while-loop: read from an output)."""
    if not op.info.as_while:
        return n_steps
    for j in range(op.info.n_recurrent):
        if not op.is_state(j):
            return outputs[j].shape[0] - op.info.depths[j]
    return outputs[op.info.n_recurrent].shape[0]


def _no_gradient(value: Variable) -> Variable:
    """The gradient of an input the loop is not differentiable in: zeros for a tensor,
    disconnected for a generator state."""
    from workbench.core.grad import disconnected_type, float_zeros_like

    return float_zeros_like(value) if isinstance(value.type, wt.TensorType) \
        else disconnected_type()


def _row_zeros(value: Variable) -> Variable:
    """One leading row of zeros shaped like `value`: the initial row of an accumulator."""

    return wt.expand_dims(wt.zeros_like(value), 0)


def full_rows_grads(op: Scan, full: list[Variable], grads: list[Variable]) -> list[Variable]:
    """The gradients of a loop keeping all rows, from those of `op`, which keeps only the
    last row of some outputs: each such gradient goes to the last row."""
    from workbench.core.grad import is_disconnected

    result = []
    for k, (out, g) in enumerate(zip(full, grads)):
        if op.keeps_last(k) and not is_disconnected(g):
            g = wt.set_subtensor(wt.zeros_like(out)[-1:], g)
        result.append(g)
    return result


def scan_vjp(op: Scan, inputs: list[Variable], outputs: list[Variable],
             output_grads: list[Variable]) -> list[Variable]:
    from workbench.core.grad import disconnected_type, float_zeros_like, grad, is_disconnected

    info = op.info
    n_rec, n_nit = info.n_recurrent, info.n_nit_sot
    n_steps, seqs, inits, non_seqs = op.outer_parts(inputs)
    grads = [None if is_disconnected(g) else g for g in output_grads]
    n = _steps_run(op, n_steps, outputs)
    if op.truncate_gradient > 0:
        n_back = wt.minimum(n, op.truncate_gradient)
    else:
        n_back = n
    start = n - n_back

    body_in, body_out = _fresh_body(op)
    x_in = body_in[:info.n_seqs]
    tap_in = body_in[info.n_seqs:info.n_seqs + info.n_taps]
    ns_in = body_in[info.n_seqs + info.n_taps:]

    def backwards(rows: Variable) -> Variable:
        return rows[::-1]

    # sequences of the backward loop (all walked from the last step to the first)
    b_seq_outer: list[Variable] = []
    b_seq_inner: list[Variable] = []
    for seq, inner in zip(seqs, x_in):
        b_seq_outer.append(backwards(seq[start:n]))
        b_seq_inner.append(inner)
    k = 0
    for j, taps in enumerate(info.recurrent_taps):
        depth = info.depths[j]
        if op.is_state(j):  # (the backward loop carries no generator)
            k += len(taps)
            continue
        for tap in taps:
            b_seq_outer.append(backwards(outputs[j][depth + tap + start:depth + tap + n]))
            b_seq_inner.append(tap_in[k])
            k += 1
    cost_grad_rows: dict[int, Variable] = {}
    # a recurrent output's gradient is usually that of its visible rows out[L:] written
    # into zeros: the backward loop then reads those rows (no n-row zeros to fill)
    visible = {j: v for j in range(n_rec)
               if grads[j] is not None and (v := _visible_rows_grad(grads[j], info.depths[j]))
               is not None}
    for j in range(n_rec + n_nit):
        g = grads[j]
        if g is None or not _differentiable(outputs[j]):
            continue
        offset = info.depths[j] if j < n_rec else 0
        rows = visible[j][start:n] if j in visible else g[offset + start:offset + n]
        b_seq_outer.append(backwards(rows))
        row = g.type.clone(shape=g.type.shape[1:])(f"d {op.name} out{j}[t]")
        b_seq_inner.append(row)
        cost_grad_rows[j] = row

    # recurrent states of the backward loop: pending adjoints, then accumulated grads
    pending: dict[int, list[Variable]] = {}
    b_init_outer: list[Variable] = []
    b_state_inner: list[Variable] = []
    for j in range(n_rec):
        if not _differentiable(outputs[j]):
            continue
        row_type = op.tap_inputs_of_outputs()[j][0].type
        pending[j] = [row_type(f"pending d{j}[t{1 - m:+d}]")
                      for m in range(1, info.depths[j] + 1)]
        for q in pending[j]:
            b_init_outer.append(_row_zeros(inits[j][0]))
            b_state_inner.append(q)
    ns_diff = [i for i, v in enumerate(non_seqs) if _differentiable(v)]
    accumulators = []
    for i in ns_diff:
        acc = ns_in[i].type(f"sum d {non_seqs[i].name or f'nonseq{i}'}")
        accumulators.append(acc)
        b_init_outer.append(_row_zeros(non_seqs[i]))
        b_state_inner.append(acc)

    # the body's vector-Jacobian product at one step
    adjoints: dict[int, Variable] = {}
    seeds: dict[Variable, Variable] = {}
    for j in range(n_rec + n_nit):
        parts = []
        if j in cost_grad_rows:
            parts.append(cost_grad_rows[j])
        if j in pending:
            parts.append(pending[j][0])
        if not parts:
            continue
        total = parts[0] if len(parts) == 1 else parts[0] + parts[1]
        adjoints[j] = total
        out = body_out[j]
        if isinstance(out, Constant):
            continue
        seeds[out] = seeds[out] + total if out in seeds else total
    wrt_positions = [i for i, v in enumerate(body_in) if _differentiable(v)]
    wrt = [body_in[i] for i in wrt_positions]
    if seeds and wrt:
        step_grads = grad(None, wrt, known_grads=seeds, disconnected_inputs="ignore",
                          return_disconnected="zero")
    else:
        step_grads = [float_zeros_like(v) for v in wrt]
    # The body's own results at step s are in the forward loop's outputs: the backward
    # body reads them (tanh's gradient reads tanh's output) instead of recomputing them,
    # and what only served to compute them (x_t W + h U in an RNN) drops out. So are
    # the recorded draws, whatever their dtype: the backward body never draws.
    stored: dict[Variable, Variable] = {}
    first_recorded = n_rec + n_nit - info.n_recorded
    for j in range(n_rec + n_nit):
        out = body_out[j]
        if out.owner is None or out in stored or (j < first_recorded and (
                not _differentiable(out) or not _differentiable(outputs[j]))):
            continue
        offset = info.depths[j] if j < n_rec else 0
        b_seq_outer.append(backwards(outputs[j][offset + start:offset + n]))
        stored[out] = out.type(f"{op.name} out{j}[t] (forward)")
        b_seq_inner.append(stored[out])
    if stored:
        step_grads = list(clone_replace(step_grads, stored))
    _check_no_draws_left(op, body_in, step_grads)
    grad_of = dict(zip(wrt_positions, step_grads))

    def contribution(position: int, like: Variable) -> Variable:
        g = grad_of.get(position)
        if g is None:
            return wt.zeros_like(like)
        return wt.cast(g, like.type.dtype) if g.type.dtype != like.type.dtype else g

    b_out_states: list[Variable] = []
    k = 0
    for j, taps in enumerate(info.recurrent_taps):
        if j in pending:
            depth = info.depths[j]
            for m in range(1, depth + 1):
                q = pending[j][m - 1]
                new = pending[j][m] if m < depth else None
                if -m in taps:
                    c = contribution(info.n_seqs + k + taps.index(-m), q)
                    new = c if new is None else new + c
                b_out_states.append(new if new is not None else wt.zeros_like(q))
        k += len(taps)
    first_ns = info.n_seqs + info.n_taps
    for acc, i in zip(accumulators, ns_diff):
        b_out_states.append(acc + contribution(first_ns + i, acc))
    seq_diff = [i for i, v in enumerate(seqs) if _differentiable(v)]
    b_nit = [contribution(i, x_in[i]) for i in seq_diff]

    b_info = ScanInfo(len(b_seq_inner), ((-1,),) * len(b_state_inner), len(b_nit),
                      len(ns_in), False)
    b_op = Scan(b_seq_inner + b_state_inner + ns_in, b_out_states + b_nit, b_info,
                name=f"grad of {op.name}")
    b_outs = b_op(n_back, *b_seq_outer, *b_init_outer, *non_seqs, return_list=True)

    # assemble the outer gradients
    result: list[Any] = [disconnected_type()]
    seq_grad_rows = dict(zip(seq_diff, b_outs[len(b_state_inner):]))
    for i, seq in enumerate(seqs):
        if i not in seq_grad_rows:
            result.append(_no_gradient(seq))
            continue
        result.append(wt.set_subtensor(wt.zeros_like(seq)[start:n], backwards(seq_grad_rows[i])))
    state_index = 0
    for j, init in enumerate(inits):
        if j not in pending:
            result.append(_no_gradient(init))
            continue
        depth = info.depths[j]
        finals = [b_outs[state_index + m][-1] for m in range(depth)]
        state_index += depth
        through_loop = wt.stack([finals[depth - 1 - r] for r in range(depth)])  # row r <- q_{L-r}
        if op.truncate_gradient > 0:
            through_loop = wt.switch(wt.eq(start, 0), through_loop, wt.zeros_like(through_loop))
        direct = None if j in visible else grads[j]  # (zero on the initial rows)
        total = through_loop if direct is None else through_loop + direct[:depth]
        result.append(wt.cast(total, init.type.dtype) if total.type.dtype != init.type.dtype
                      else total)
    acc_of = dict(zip(ns_diff, b_outs[state_index:state_index + len(ns_diff)]))
    for i, value in enumerate(non_seqs):
        result.append(acc_of[i][-1] if i in acc_of else _no_gradient(value))
    return result


def _visible_rows_grad(g: Variable, depth: int) -> Variable | None:
    """`y` when `g` is ``inc_subtensor(zeros[depth:], y)`` (the gradient of a loop's
    visible rows, Subtensor{L:}'s L_op) with `y` broadcasting nowhere, else None."""
    from workbench.core.tensor.creation import Alloc
    from workbench.core.tensor.indexing import SliceEntry
    from workbench.core.tensor.subtensor import IncSubtensor

    node = g.owner
    if node is None or not isinstance(node.op, IncSubtensor) or \
            node.op.idx_list != (SliceEntry(depth, None, None),):
        return None
    base, y = node.inputs[0], node.inputs[1]
    fill = base.owner.inputs[0] if base.owner and isinstance(base.owner.op, Alloc) else None
    if not isinstance(fill, Constant) or np.any(fill.data != 0) or \
            y.type.ndim != g.type.ndim or y.type.dtype != g.type.dtype:
        return None
    if any((a == 1) != (b == 1) for a, b in zip(y.type.shape[1:], g.type.shape[1:])) or \
            (y.type.shape[0] == 1 and g.type.shape[0] != depth + 1):
        return None
    return y


def _check_no_draws_left(op: Scan, body_in: list[Variable], step_grads: list[Variable]
                         ) -> None:
    """Refuse clearly a backward body that would still read a generator state (a draw the
    forward loop did not record): it would draw other noise than the forward pass."""
    from workbench.core.graph.basic import graph_inputs

    states, k = set(), op.info.n_seqs
    for j, taps in enumerate(op.info.recurrent_taps):
        if op.is_state(j):
            states.update(body_in[k:k + len(taps)])
        k += len(taps)
    if states & set(graph_inputs([g for g in step_grads if g is not None])):
        raise NotImplementedError(
            f"loop {op.name!r}: its gradient would draw again from the generator it "
            "carries, which the backward loop does not have; record the draws first "
            "(Scan.recording_draws())")


def scan_jvp(op: Scan, inputs: list[Variable], eval_points: list[Variable | None]
             ) -> list[Variable | None]:
    from workbench.core.derivatives import Rop

    n_records = op.info.n_recorded
    if n_records:  # (the tangent loop draws what the loop draws: no record needed)
        op = op.without_records(range(n_records))
    info = op.info
    n_rec, n_nit = info.n_recurrent, info.n_nit_sot
    n_steps, seqs, inits, non_seqs = op.outer_parts(inputs)
    _, seq_points, init_points, ns_points = op.outer_parts(eval_points)
    body_in, body_out = _fresh_body(op)
    x_in = body_in[:info.n_seqs]
    tap_in = body_in[info.n_seqs:info.n_seqs + info.n_taps]
    ns_in = body_in[info.n_seqs + info.n_taps:]
    tangent_of = {v: v.type(f"d {v.name}" if v.name else None)
                  for v in body_in if _differentiable(v)}

    def point(value: Variable, given: Variable | None) -> Variable:
        if given is None:
            return wt.zeros_like(value)
        return wt.cast(given, value.type.dtype) if given.type.dtype != value.type.dtype else given

    rec_diff = [j for j in range(n_rec) if _differentiable(op.tap_inputs_of_outputs()[j][0])]
    wrt = list(tangent_of)
    moving = [body_out[j] for j in rec_diff] + body_out[n_rec:n_rec + n_nit]
    tangents = Rop(moving, wrt, [tangent_of[v] for v in wrt]) if wrt else \
        [wt.zeros_like(v) for v in moving]
    tangents = [wt.cast(t, o.type.dtype) if t.type.dtype != o.type.dtype else t
                for t, o in zip(tangents, moving)]
    seq_diff = [i for i in range(info.n_seqs) if x_in[i] in tangent_of]
    ns_diff = [i for i in range(len(ns_in)) if ns_in[i] in tangent_of]
    groups = []
    k = 0
    for taps in info.recurrent_taps:
        groups.append(tap_in[k:k + len(taps)])
        k += len(taps)

    inner_in = list(x_in) + [tangent_of[x_in[i]] for i in seq_diff]
    inner_in += list(tap_in) + [tangent_of[v] for j in rec_diff for v in groups[j]]
    inner_in += list(ns_in) + [tangent_of[ns_in[i]] for i in ns_diff]
    inner_out = body_out[:n_rec] + tangents[:len(rec_diff)]
    inner_out += body_out[n_rec:n_rec + n_nit] + tangents[len(rec_diff):]
    if info.as_while:
        inner_out.append(body_out[-1])
    taps = info.recurrent_taps + tuple(info.recurrent_taps[j] for j in rec_diff)
    j_info = ScanInfo(len(x_in) + len(seq_diff), taps, 2 * n_nit,
                      len(ns_in) + len(ns_diff), info.as_while)
    j_op = Scan(inner_in, inner_out, j_info, name=f"tangent of {op.name}")
    outer = [n_steps, *seqs, *[point(seqs[i], seq_points[i]) for i in seq_diff]]
    outer += [*inits, *[point(inits[j], init_points[j]) for j in rec_diff]]
    outer += [*non_seqs, *[point(non_seqs[i], ns_points[i]) for i in ns_diff]]
    outs = j_op(*outer, return_list=True)
    result: list[Variable | None] = [None] * (n_rec + n_nit)
    for position, j in enumerate(rec_diff):
        result[j] = outs[n_rec + position]
    first_nit = n_rec + len(rec_diff)
    for m in range(n_nit):
        result[n_rec + m] = outs[first_nit + n_nit + m]
    return result + [None] * n_records
