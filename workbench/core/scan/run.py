"""Running a loop: the body compiled once by a linker, then called once per step.

`LoopRunner(op, impl)` compiles the Scan's inner graph with the linker `impl`
("py", "c", ...) into a Function and keeps its storage cells. Each step puts the
sequence rows and the tap rows (views, no copies) into the body's input cells,
runs the body (for "c": runtime.c's Program, no Python frame per inner node),
and copies the new values into the output buffers. Non-sequences are set once
per loop. Shapes are checked at every step: a body returning a value of another
shape than the loop's state raises a ScanError naming the loop, step and output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.scan.op import Scan, ScanError, check_step_value

__all__ = ["LoopRunner", "compile_body"]


def compile_body(op: Scan, impl: str) -> Any:
    """The Scan's inner graph compiled by linker `impl` (its inputs trusted)."""
    from workbench.core.compile.function import function
    from workbench.core.compile.mode import Mode, RewriteQuery

    mode = Mode(linker=impl, rewriter=RewriteQuery(("fast_run",)))
    return function(list(op.inner_inputs), list(op.inner_outputs), mode=mode,
                    on_unused_input="ignore", trust_input=True, name=f"{op.name} body")


class LoopRunner:
    """Runs a Scan's loop on values with its body compiled once by linker `impl`."""

    def __init__(self, op: Scan, impl: str) -> None:
        self.op = op
        self.impl = impl
        self.body = compile_body(op, impl)
        self.in_cells = list(self.body._arg_cells)
        self.out_cells = list(self.body._out_cells)
        self.run_body = self.body._run
        self.steps_run = 0  # of the last call: the while-loop's actual count

    def _what(self, k: int) -> str:
        info = self.op.info
        if k < info.n_recurrent:
            return f"recurrent output {k}"
        return f"output {k} (not fed back)"

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        op, info = self.op, self.op.info
        n_raw, seqs, inits, non_seqs = op.outer_parts(inputs)
        n = int(n_raw)
        if n < 0:
            raise ScanError(f"loop {op.name!r}: n_steps is {n}; it must be 0 or more")
        for k, seq in enumerate(seqs):
            if seq.shape[0] < n:
                raise ScanError(f"loop {op.name!r}: sequence {k} has {seq.shape[0]} rows, "
                                f"fewer than the {n} steps")
        buffers = []
        for j, (init, depth) in enumerate(zip(inits, info.depths)):
            if init.shape[0] != depth:
                raise ScanError(f"loop {op.name!r}: recurrent output {j} needs {depth} "
                                f"initial row(s), got an initial value of shape {init.shape}")
            buf = np.empty((depth + n, *init.shape[1:]), dtype=init.dtype)
            buf[:depth] = init
            buffers.append(buf)
        cells = self.in_cells
        n_seqs = info.n_seqs
        first_ns = n_seqs + info.n_taps
        for cell, value in zip(cells[first_ns:], non_seqs):
            cell[0] = value
        seq_pairs = list(zip(cells[:n_seqs], seqs))
        tap_pairs = []
        k = n_seqs
        for j, taps in enumerate(info.recurrent_taps):
            for tap in taps:
                tap_pairs.append((cells[k], buffers[j], info.depths[j] + tap))
                k += 1
        outs = self.out_cells
        rec_pairs = [(outs[j], buffers[j], info.depths[j], buffers[j].shape[1:])
                     for j in range(info.n_recurrent)]
        nit_cells = outs[info.n_recurrent:info.n_recurrent + info.n_nit_sot]
        nits: list[Any] = [None] * info.n_nit_sot
        cond_cell = outs[-1] if info.as_while else None
        run_body = self.run_body
        steps = n
        for t in range(n):
            for cell, seq in seq_pairs:
                cell[0] = seq[t, ...]
            for cell, buf, offset in tap_pairs:
                cell[0] = buf[offset + t, ...]
            try:
                run_body()
            except Exception as exc:
                exc.add_note(f"(in loop {op.name!r} at step {t})")
                raise
            for j, (cell, buf, depth, shape) in enumerate(rec_pairs):
                value = cell[0]
                if np.shape(value) != shape:
                    check_step_value(op, self._what(j), t, value, shape)
                buf[depth + t] = value
            for k, cell in enumerate(nit_cells):
                value = np.asarray(cell[0])
                if t == 0:
                    nits[k] = np.empty((n, *value.shape), dtype=value.dtype)
                elif value.shape != nits[k].shape[1:]:
                    check_step_value(op, self._what(info.n_recurrent + k), t, value,
                                     nits[k].shape[1:])
                nits[k][t] = value
            if cond_cell is not None and bool(np.asarray(cond_cell[0])):
                steps = t + 1
                break
        self.steps_run = steps
        for k, out in enumerate(op.inner_nit_sot_outputs()):
            if nits[k] is None:  # no step ran: rows of the static shape (0 where unknown)
                row = tuple(d if d is not None else 0 for d in out.type.shape)
                nits[k] = np.empty((0, *row), dtype=out.type.numpy_dtype)
        if steps < n:
            buffers = [buf[:depth + steps] for buf, depth in zip(buffers, info.depths)]
            nits = [v[:steps] for v in nits]
        return buffers + nits
