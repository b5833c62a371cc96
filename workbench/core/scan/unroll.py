"""Writing a short loop out step by step (for teaching: BPTT one iteration at a time).

`unroll(outputs, max_steps)` returns the graph of `outputs` in which every loop of
at most `max_steps` steps (a constant count, no until()) is replaced by copies of
its body, one per step: step t reads row t of each sequence, the values of the
earlier steps (or the initial rows) at its taps, and the non-sequences. The values
are the loop's; but the backward pass of the unrolled graph visits every step, so
the gradient of a weight shows as one contribution per iteration, added up (what
the GradExplorer shows for a 3-step RNN). Step values are named after the loop
(``rnn[0]``, ``rnn[1]``, ``rnn[2]``), or its initial value for an unnamed loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core import tensor as wt
from workbench.core.graph.basic import Apply, Constant, Variable, clone_replace, io_toposort
from workbench.core.scan.op import Scan
from workbench.core.tensor.elemwise import DimShuffle
from workbench.core.tensor.indexing import SliceEntry
from workbench.core.tensor.subtensor import Subtensor

__all__ = ["unroll"]


def _unrollable(node: Apply, max_steps: int) -> bool:
    op = node.op
    n_steps = node.inputs[0]
    return (isinstance(op, Scan) and not op.info.as_while and not op.keep_last
            and not op.has_states()
            and isinstance(n_steps, Constant) and 1 <= int(n_steps.data) <= max_steps)


def _state_name(tap_input: Variable, j: int, op: Scan) -> str:
    """What step values of recurrent output j are called: the loop's name when it has one
    (one recurrent output: `rnn`; several: `rnn.out1`), else the initial value's."""
    if op.name != "scan":
        return op.name if op.info.n_recurrent == 1 else f"{op.name}.out{j}"
    name = tap_input.name or ""
    return name[:name.rindex("[")] if "[" in name else f"{op.name}.out{j}"


def _initial_rows(init: Variable, depth: int) -> list[Variable]:
    """The initial rows of a recurrent output: the initial value itself when the loop only
    put a leading axis on it (a single-tap state, as scan() builds it)."""
    owner = init.owner
    if depth == 1 and owner is not None and isinstance(owner.op, DimShuffle) and \
            tuple(owner.op.new_order) == ("x", *range(owner.op.input_ndim)):
        return [owner.inputs[0]]
    return [init[r] for r in range(depth)]


def _written_out(node: Apply) -> tuple[list[Variable], list[list[Variable]]]:
    """The node's outputs computed by copies of the body, one per step, and each output's
    rows (a recurrent output's initial rows first, then the steps)."""
    op: Scan = node.op
    info = op.info
    n = int(node.inputs[0].data)
    _, seqs, inits, non_seqs = op.outer_parts(node.inputs)
    groups = op.tap_inputs_of_outputs()
    history = [_initial_rows(init, depth) for init, depth in zip(inits, info.depths)]
    rows: list[list[Variable]] = [[] for _ in range(info.n_nit_sot)]
    body_outputs = op.inner_outputs[:info.n_recurrent + info.n_nit_sot]
    for t in range(n):
        given: dict[Variable, Variable] = {}
        for inner, seq in zip(op.inner_seqs(), seqs):
            given[inner] = seq[t]
        for j, (taps, tap_inputs) in enumerate(zip(info.recurrent_taps, groups)):
            for tap, inner in zip(taps, tap_inputs):
                given[inner] = history[j][info.depths[j] + t + tap]
        given.update(zip(op.inner_non_seqs(), non_seqs))
        step = [given.get(v, v) for v in clone_replace(list(body_outputs), given)]
        for j in range(info.n_recurrent):
            value = step[j]
            if value.owner is not None:
                value.name = f"{_state_name(groups[j][0], j, op)}[{t}]"
            history[j].append(value)
        for m in range(info.n_nit_sot):
            rows[m].append(step[info.n_recurrent + m])
    results = []
    for j, out in enumerate(node.outputs[:info.n_recurrent]):
        results.append(out.type.filter_variable(wt.stack(history[j])))
    for m, out in enumerate(node.outputs[info.n_recurrent:]):
        results.append(out.type.filter_variable(wt.stack(rows[m])))
    return results, history + rows


def _rows_read(outs: list[Variable], node: Apply, rows_of: list[list[Variable]]
               ) -> dict[Variable, Variable]:
    """Replacements reading a step's value directly where the graph takes one row of a
    loop output (``hs[-1]``, ``hs[2]``), so the unrolled graph reads as the steps."""
    found: dict[Variable, Variable] = {}
    steps_of = dict(zip(node.outputs, rows_of))
    for other in io_toposort([], outs):
        if not isinstance(other.op, Subtensor) or other.inputs[0] not in steps_of:
            continue
        rows = steps_of[other.inputs[0]]
        (entry,) = other.op.idx_list if len(other.op.idx_list) == 1 else (None,)
        if isinstance(entry, SliceEntry) and entry.step is None and entry.stop is None \
                and isinstance(entry.start, int):
            steps_of[other.outputs[0]] = rows[entry.start:]
        elif isinstance(entry, int) and -len(rows) <= entry < len(rows):
            found[other.outputs[0]] = rows[entry]
    return found


def unroll(outputs: Variable | Sequence[Variable], max_steps: int = 8
           ) -> Variable | list[Variable]:
    """`outputs` with every loop of at most `max_steps` constant steps written out (see
    the module). Returns a Variable for a Variable."""
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    while True:
        loops = [n for n in io_toposort([], outs) if _unrollable(n, max_steps)]
        if not loops:
            return outs[0] if single else outs
        node = loops[0]
        written, rows_of = _written_out(node)
        replace = dict(zip(node.outputs, written))
        replace.update(_rows_read(outs, node, rows_of))
        outs = list(clone_replace(outs, replace))
