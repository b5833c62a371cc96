"""Running a loop: the body compiled once by a linker, then called once per step.

`LoopRunner(op, impl)` compiles the Scan's inner graph with the linker `impl`
("py", "c", "debug", "gpu:DEVICE"; "+profile": profiled per node) into a Function
and keeps its storage cells. Each step puts the
sequence rows and the tap rows (views, no copies) into the body's input cells,
runs the body (for "c": runtime.c's Program, no Python frame per inner node),
and copies the new values into the output buffers. Non-sequences are set once
per loop. Shapes are checked at every step: a body returning a value of another
shape than the loop's state raises a ScanError naming the loop, step and output.

On the gpu linker ("gpu:DEVICE") the body is lowered to torch and the steps are
launched from Python, but every value stays on the device: the buffers are
torch tensors allocated there once (a nit-sot's after step 0 gives its row
shape), the sequence and tap rows are views of them, the body's outputs are
copied into them, and nothing is copied to or from the host inside the loop (no
`.item()`, `.cpu()` or `bool()` of a tensor per step). The host reads the device
once per call before the loop: `n_steps`. A while-loop writes each step's
condition into a device vector and reads it back after 1, 2, 4, ... steps (at most `UNTIL_CHECK_MAX`
apart, so O(log n + n / UNTIL_CHECK_MAX) reads): the steps run past the stop are
discarded (their rows dropped; a ring of `UNTIL_CHECK_MAX` rows keeps a kept-last
output's row; a generator state goes back to its value at the stop; an error in
such a step is ignored). Lengths read from a tensor's shape and used as lengths
stay host ints (gpu/host_shapes.py); a draw's size is read on the host once per
step only when it is computed on the device (lower_random.py); Ops without a torch
kernel run on the host (`host_nodes`), with their transfers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.scan.op import Scan, ScanError, check_step_value

__all__ = ["LoopRunner", "compile_body"]

#: Bump when loop.c changes.
LOOP_C_VERSION = (4,)

#: the most steps a while-loop on the device runs before reading its condition back
UNTIL_CHECK_MAX = 64


def compile_body(op: Scan, impl: Any, profile: bool = False) -> Any:
    """The Scan's inner graph compiled by linker `impl` (a name or a Linker; its inputs
    trusted), profiled per node with `profile`. The taps of `Scan.mutable_inner_inputs`
    are compiled mutable, unless a node overwrites one to make anything but that tap's
    own new value (the loop copies the outputs into their rows after the step: another
    output in a tap's row would be overwritten by it); those are compiled again copying."""
    mutable = set(op.mutable_inner_inputs())
    while True:
        body = _compiled_body(op, impl, profile, mutable)
        unsafe = _overwritten_for_another_output(op, body.maker.fgraph, mutable)
        if not unsafe:
            return body
        mutable -= unsafe


def _compiled_body(op: Scan, impl: Any, profile: bool, mutable: set[Any]) -> Any:
    from workbench.core.compile.function import function
    from workbench.core.compile.mode import Mode, RewriteQuery
    from workbench.core.compile.specs import In

    # a body the outer rewrite already rewrote is linked as it is
    rewriter = None if op.inner_graph_rewritten else RewriteQuery(("fast_run",))
    mode = Mode(linker=impl, rewriter=rewriter)
    inputs = [In(v, mutable=v in mutable) for v in op.inner_inputs]
    return function(inputs, list(op.inner_outputs), mode=mode,
                    on_unused_input="ignore", trust_input=True, name=f"{op.name} body",
                    profile=profile or None)


def _overwritten_for_another_output(op: Scan, fgraph: Any, mutable: set[Any]) -> set[Any]:
    """The mutable taps that a node of the compiled body `fgraph` overwrites with a value
    other than the tap's own recurrent output (or with one the body also returns as
    another output)."""
    from workbench.core.graph.destroyhandler import view_roots

    own = {group[0]: j for j, group in enumerate(op.tap_inputs_of_outputs())
           if not op.is_state(j)}  # (a state has no rows: its draws chain freely)
    position = {v: k for k, v in enumerate(fgraph.inputs)}
    outputs = list(fgraph.outputs)
    unsafe = set()
    for node in fgraph.apply_nodes:
        for out, ins in node.op.destroy_map.items():
            value = node.outputs[out]
            for i in ins:
                for root in view_roots(node.inputs[i], through_destroyers=True):
                    tap = op.inner_inputs[position[root]] if root in position else None
                    if tap in mutable and tap in own and (outputs.count(value) != 1
                                           or outputs[own[tap]] is not value):
                        unsafe.add(tap)
    return unsafe


@functools.lru_cache(maxsize=1)
def c_loop_module() -> Any:
    """loop.c compiled once per machine through the C module cache."""
    from workbench.core.link.c.cache import default_cache

    source = Path(__file__).with_name("loop.c").read_text(encoding="utf-8")
    return default_cache().get_or_build(("workbench_scan_loop",), source,
                                        "workbench_scan_loop", version=LOOP_C_VERSION)


class _HostRows:
    """Buffers as NumPy arrays (the py and c linkers)."""

    @staticmethod
    def empty(shape: tuple[int, ...], like: Any) -> Any:
        return np.empty(shape, dtype=like.dtype)

    @staticmethod
    def shape(value: Any) -> tuple[int, ...]:
        return np.shape(value)

    @staticmethod
    def array(value: Any) -> Any:
        return np.asarray(value)

    @staticmethod
    def copy(value: Any) -> Any:
        return value.copy()

    @staticmethod
    def from_host(value: np.ndarray) -> Any:
        return value

    @staticmethod
    def may_alias(value: Any, buf: Any) -> bool:
        """Whether `value` may be a view into the buffer `buf` (a fresh array is not)."""
        return getattr(value, "base", None) is not None and np.may_share_memory(value, buf)


class _DeviceRows:
    """Buffers as torch tensors on the body's device (the gpu linker): the loop's values
    never leave the device."""

    def __init__(self, device: Any) -> None:
        self.device = device

    def empty(self, shape: tuple[int, ...], like: Any) -> Any:
        import torch

        return torch.empty(shape, dtype=like.dtype, device=self.device)

    @staticmethod
    def shape(value: Any) -> tuple[int, ...]:
        return tuple(value.shape)

    def array(self, value: Any) -> Any:
        from workbench.core.link.gpu.device import to_device

        return to_device(value, self.device)

    @staticmethod
    def copy(value: Any) -> Any:
        return value.clone()

    def from_host(self, value: np.ndarray) -> Any:
        from workbench.core.link.gpu.device import to_device

        return to_device(value, self.device)

    @staticmethod
    def may_alias(value: Any, buf: Any) -> bool:
        """Whether the tensor `value` may be a view into the buffer `buf`."""
        return getattr(value, "_base", None) is not None and \
            value.untyped_storage().data_ptr() == buf.untyped_storage().data_ptr()

    def flags(self, n: int) -> Any:
        """n false booleans on the device: a while-loop's conditions, one per step."""
        import torch

        return torch.zeros(n, dtype=torch.bool, device=self.device)


class LoopRunner:
    """Runs a Scan's loop on values with its body compiled once by linker `impl` (a
    linker name, or "gpu:DEVICE": the body lowered to torch on that device)."""

    def __init__(self, op: Scan, impl: str) -> None:
        self.op = op
        profile = impl.endswith("+profile")
        impl = impl.removesuffix("+profile")
        self.impl = impl
        self.rows: Any = _HostRows
        linker: Any = impl
        if impl.startswith("gpu:"):
            from workbench.core.link.gpu.linker import GpuLinker

            linker = GpuLinker(device=impl[4:], device_outputs=True)
            self.rows = _DeviceRows(linker.device)
            self.impl = "gpu"
        self.body = compile_body(op, linker, profile)
        #: the inner inputs the body overwrites (a carried generator its draws advance in
        #: place): the loop gives it a copy of the outer value, once per call
        self.destroyed = _destroyed_inputs(self.body.maker.fgraph)
        self.in_cells = list(self.body._arg_cells)
        self.out_cells = list(self.body._out_cells)
        self.run_body = self.body._run
        self.steps_run = 0  # of the last call: the while-loop's actual count
        self.n_steps = 0
        self.ring = 1  # rows of a kept-last nit-sot's buffer (see run)
        #: runtime C for the steps (loop.c) when the body runs as one C Program
        self.c_loop = c_loop_module() if getattr(self.body.linker, "program", None) else None

    def _what(self, k: int) -> str:
        info = self.op.info
        if k < info.n_recurrent:
            return f"recurrent output {k}"
        return f"output {k} (not fed back)"

    def _python_steps(self, start: int, stop: int, seq_pairs: list[Any], tap_pairs: list[Any],
                      out_rows: list[Any], nit_cells: list[Any], nits: list[Any],
                      cond_cell: Any, labels: list[str], states: list[Any],
                      flags: Any = None, history: list[Any] | None = None) -> int:
        """Run steps start..stop-1 from Python; returns the number of steps done. With
        `nit_cells`, step `start` allocates the nit-sot buffers `nits`. `labels` name
        the `out_rows` in errors; `states` are (tap cell, output cell, [value]). With
        `flags` (a device vector), a while-loop's condition is written into
        `flags[t]` instead of read (the steps go on), and `history` gets the states'
        values after each step."""
        op, run_body, rows = self.op, self.run_body, self.rows
        for t in range(start, stop):
            for cell, seq, offset in seq_pairs:
                cell[0] = seq[offset + t, ...]
            for cell, buf, offset in tap_pairs:
                cell[0] = buf[(offset + t) % len(buf), ...]
            for cell, _, holder in states:
                cell[0] = holder[0]
            try:
                run_body()
            except Exception as exc:
                exc.add_note(f"(in loop {op.name!r} at step {t})")
                raise
            for _, cell, holder in states:
                holder[0] = cell[0]
            values = _unaliased([cell[0] for cell, _, _ in out_rows]
                                + [rows.array(cell[0]) for cell in nit_cells],
                                out_rows, rows)
            for j, (_, buf, offset) in enumerate(out_rows):
                value = values[j]
                if rows.shape(value) != tuple(buf.shape[1:]):
                    check_step_value(op, labels[j], t, value, buf.shape[1:])
                buf[(offset + t) % len(buf)] = value
            for k, value in enumerate(values[len(out_rows):]):
                n_rows = self.ring if self.op.keeps_last(self.op.info.n_recurrent + k) \
                    else self.n_steps
                nits[k] = rows.empty((n_rows, *value.shape), value)
                nits[k][0] = value
            if cond_cell is None:
                continue
            if flags is None:
                if bool(cond_cell[0]):
                    return t + 1
            else:
                flags[t] = cond_cell[0]
                if history is not None:  # (copies: the next step may advance it in place)
                    history.append([_copy_state(holder[0]) if self.destroyed else holder[0]
                                    for _, _, holder in states])
        return stop

    def _until_on_device(self, start: int, stop: int, step_args: tuple[Any, ...],
                         states: list[Any], flags: Any) -> int:
        """Steps start..stop-1 of a while-loop on the device, reading the conditions
        back after 1, 2, 4, ... steps (see the module docstring); returns the steps done."""
        t, chunk = start, 1
        while t < stop:
            end = min(t + chunk, stop)
            history: list[Any] | None = [] if states else None
            try:
                self._python_steps(t, end, *step_args, states, flags=flags, history=history)
            except Exception:
                first = _first_true(flags, t, end)
                if first is None:  # (no earlier step stopped the loop: a real error)
                    raise
            else:
                first = _first_true(flags, t, end)
            if first is not None:
                if history is not None:
                    for (_, _, holder), value in zip(states, history[first - t]):
                        holder[0] = value
                return first + 1
            t, chunk = end, min(chunk * 2, UNTIL_CHECK_MAX)
        return stop

    def _c_steps(self, n: int, seq_pairs: list[Any], tap_pairs: list[Any],
                 out_rows: list[Any], cond_cell: Any, labels: list[str]) -> int:
        """Steps 1..n-1 in runtime C (loop.c): no Python frame per step."""
        status, step, output = self.c_loop.run_loop(
            self.run_body, self.op.name, 1, n, tuple(seq_pairs + tap_pairs), tuple(out_rows),
            cond_cell)
        if status:
            cell, buf, _ = out_rows[output]
            check_step_value(self.op, labels[output], step, cell[0], buf.shape[1:])
        return step

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        op, info = self.op, self.op.info
        n_raw, seqs, inits, non_seqs = op.outer_parts(inputs)
        n = self.n_steps = int(n_raw)
        if n < 0:
            raise ScanError(f"loop {op.name!r}: n_steps is {n}; it must be 0 or more")
        for k, seq in enumerate(seqs):
            if seq.shape[0] < n:
                raise ScanError(f"loop {op.name!r}: sequence {k} has {seq.shape[0]} rows, "
                                f"fewer than the {n} steps")
        # a while-loop on the device runs steps past its stop before it knows: a kept-last
        # output keeps a ring of rows long enough for them
        on_device = info.as_while and isinstance(self.rows, _DeviceRows)
        self.ring = min(UNTIL_CHECK_MAX, max(n, 1)) if on_device else 1
        buffers: list[Any] = []
        holders: dict[int, list[Any]] = {}
        first_tap = info.n_seqs + np.cumsum((0, *map(len, info.recurrent_taps)))
        for j, (init, depth) in enumerate(zip(inits, info.depths)):
            if op.is_state(j):  # (a generator): its value, step to step
                # advanced in place by the body: a copy, the outer one is the caller's
                holders[j] = [_copy_state(init) if first_tap[j] in self.destroyed else init]
                buffers.append(None)
                continue
            if init.shape[0] != depth:
                raise ScanError(f"loop {op.name!r}: recurrent output {j} needs {depth} "
                                f"initial row(s), got an initial value of shape {init.shape}")
            # a loop keeping only the last row stores the taps' rows in a ring (row r of
            # the loop is row r % len(buf)): step t writes its row over the one its
            # deepest tap read, after the body ran (an accumulator updated in place by
            # the body is then already there); a while-loop on the device keeps the rows
            # of the steps it may undo
            ring = depth + self.ring if self.ring > 1 else depth
            rows = ring if op.keeps_last(j) else depth + n
            buf = self.rows.empty((rows, *init.shape[1:]), init)
            buf[:depth] = init
            buffers.append(buf)
        cells = self.in_cells
        n_seqs = info.n_seqs
        first_ns = n_seqs + info.n_taps
        for cell, value in zip(cells[first_ns:], non_seqs):
            cell[0] = value
        seq_pairs = [(cell, seq, 0) for cell, seq in zip(cells[:n_seqs], seqs)]
        tap_pairs, states = [], []
        outs = self.out_cells
        k = n_seqs
        for j, taps in enumerate(info.recurrent_taps):
            for tap in taps:
                if j in holders:
                    states.append((cells[k], outs[j], holders[j]))
                else:
                    tap_pairs.append((cells[k], buffers[j], info.depths[j] + tap))
                k += 1
        kept = [j for j in range(info.n_recurrent) if j not in holders]
        out_rows = [(outs[j], buffers[j], info.depths[j]) for j in kept]
        labels = [self._what(j) for j in kept]
        labels += [self._what(info.n_recurrent + m) for m in range(info.n_nit_sot)]
        nit_cells = outs[info.n_recurrent:info.n_recurrent + info.n_nit_sot]
        nits: list[Any] = [None] * info.n_nit_sot
        cond_cell = outs[-1] if info.as_while else None
        flags = self.rows.flags(n) if on_device else None
        steps = self._python_steps(0, min(n, 1), seq_pairs, tap_pairs, out_rows, nit_cells,
                                   nits, cond_cell, labels, states, flags=flags)
        if flags is not None:
            stopped = n > 0 and _first_true(flags, 0, 1) is not None
        else:
            stopped = cond_cell is not None and steps == 1 and bool(cond_cell[0])
        if n > 1 and not stopped:  # step 0 made the nit-sot buffers: the rest in one go
            out_rows += [(cell, nits[k], 0) for k, cell in enumerate(nit_cells)]
            if self.c_loop is not None and not states:
                steps = self._c_steps(n, seq_pairs, tap_pairs, out_rows, cond_cell, labels)
            elif on_device:
                steps = self._until_on_device(1, n, (seq_pairs, tap_pairs, out_rows, [], [],
                                                     cond_cell, labels), states, flags)
            else:
                steps = self._python_steps(1, n, seq_pairs, tap_pairs, out_rows, [], [],
                                           cond_cell, labels, states)
        self.steps_run = steps
        for k, out in enumerate(op.inner_nit_sot_outputs()):
            if nits[k] is None:  # no step ran: rows of the static shape (0 where unknown)
                row = tuple(d if d is not None else 0 for d in out.type.shape)
                nits[k] = self.rows.from_host(np.empty((0, *row), dtype=out.type.numpy_dtype))
        for j, depth in enumerate(info.depths):
            buf = buffers[j]
            if j in holders:
                buffers[j] = holders[j][0]
            elif op.keeps_last(j):
                last = (depth - 1 + steps) % len(buf)
                buffers[j] = self.rows.copy(buf[last:last + 1])
            elif steps < n:
                buffers[j] = buf[:depth + steps]
        for k in range(info.n_nit_sot):
            if op.keeps_last(info.n_recurrent + k) and len(nits[k]) > 1 and steps:
                last = (steps - 1) % len(nits[k])  # (a ring: see self.ring)
                nits[k] = self.rows.copy(nits[k][last:last + 1])
            elif steps < len(nits[k]):
                nits[k] = nits[k][:steps]
        return buffers + nits


def _unaliased(values: list[Any], out_rows: list[Any], rows: Any) -> list[Any]:
    """A step's output `values` (those of `out_rows`, then the new nit-sots'), with a
    copy of each one that is a view into another output's buffer: the rows are written
    one after another, and a ring row written first would change it (`lambda a, b:
    (a + b, a)` keeping the last rows: b's value is a's previous row). No copy unless
    such a view is returned."""
    for k, value in enumerate(values):
        if any(j != k and rows.may_alias(value, buf) for j, (_, buf, _) in enumerate(out_rows)):
            values[k] = rows.copy(value)
    return values


def _destroyed_inputs(fgraph: Any) -> frozenset[int]:
    """The positions of the inputs of `fgraph` that one of its nodes overwrites."""
    position = {var: k for k, var in enumerate(fgraph.inputs)}
    return frozenset(position[node.inputs[i]] for node in fgraph.apply_nodes
                     for ins in node.op.destroy_map.values() for i in ins
                     if node.inputs[i] in position)


def _copy_state(value: Any) -> Any:
    """A copy of a loop's state (a random generator) that the body may advance."""
    from workbench.core.random.type import copy_generator

    return copy_generator(value) if isinstance(value, np.random.Generator) else value


def _first_true(flags: Any, start: int, stop: int) -> int | None:
    """The first t in start..stop-1 with flags[t] true, or None: one read from the device."""
    import torch

    window = flags[start:stop]
    first = int(torch.where(window.any(), window.to(torch.uint8).argmax(), -1))
    return None if first < 0 else start + first
