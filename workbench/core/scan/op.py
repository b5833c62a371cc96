"""The `Scan` Op: a loop whose body is an inner graph, run once per step.

Outer inputs, in this order::

    n_steps                  int64 scalar: how many steps (the most, for a while-loop)
    sequences   (n_seqs)     step t reads row t of each (their length is at least n_steps)
    initials    (recurrent)  recurrent output j starts from L_j rows (L_j = its deepest tap)
    non_seqs    (n_non_seqs) the same value at every step

Outer outputs::

    recurrent   buffers of L_j + n rows: the L_j initial rows, then one row per step
                (a *state*, a random generator, is its value after the last step)
    nit_sots    n rows: one per step (outputs that are not fed back); the last
                `n_recorded` of them are the loop's random draws, recorded for the
                backward pass (see `recording_draws`)

The inner graph's inputs are the sequence rows, then for each recurrent output
its values at its taps (tap -2 is the value two steps back; row L_j + t + tap of
the buffer), then the non-sequences. Its outputs are each recurrent output's new
value, the nit-sot values, and, for a while-loop (`as_while`), a last boolean
output: keep going. The builder is `scan` (basic.py); gradients are gradient.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from workbench.core import tensor as wt
from workbench.core.graph.basic import Apply, Constant, Variable, ancestors
from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.core.graph.op import ComputeMap, StorageMap, Thunk

__all__ = ["Scan", "ScanInfo"]


class ScanInfo(NamedTuple):
    """The layout of a Scan's inputs and outputs (see the module docstring)."""

    n_seqs: int
    #: per recurrent output, its taps (negative, increasing), e.g. ((-1,), (-2, -1))
    recurrent_taps: tuple[tuple[int, ...], ...]
    n_nit_sot: int
    n_non_seqs: int
    as_while: bool = False
    #: how many of the last nit-sot outputs are random draws kept for the backward pass
    n_recorded: int = 0

    @property
    def n_recurrent(self) -> int:
        return len(self.recurrent_taps)

    @property
    def n_taps(self) -> int:
        return sum(len(taps) for taps in self.recurrent_taps)

    @property
    def depths(self) -> tuple[int, ...]:
        """L_j: how many initial rows recurrent output j needs (minus its deepest tap)."""
        return tuple(-min(taps) for taps in self.recurrent_taps)


class ScanError(ValueError):
    """A loop failed at run time (wrong shapes, too short a sequence): the message names
    the loop, the step and the output."""


def _state_type(t: wt.TensorType) -> wt.TensorType:
    """The Type of one row of a stacked value."""
    return wt.TensorType(t.dtype, t.shape[1:])


def _fits(outer: Any, inner: Any) -> bool:
    """Whether a value of Type `outer` can be used where the body expects Type `inner`."""
    if not isinstance(inner, wt.TensorType):
        return outer == inner
    return (isinstance(outer, wt.TensorType) and outer.dtype == inner.dtype
            and outer.ndim == inner.ndim
            and all(a is None or b is None or a == b for a, b in zip(outer.shape, inner.shape)))


class Scan(InnerGraphOp):
    """A loop over the inner graph `fgraph`; see the module docstring for the layout.

    `name` names the loop in errors, printing and profiles; `truncate_gradient`
    (-1: all steps) limits backpropagation through time to the last steps.
    """

    __props__ = ("info", "name", "truncate_gradient", "keep_last")
    inner_graph_title = "loop body"
    name: str = "scan"  # (a plain attribute here, not Op's derived `name`)
    rewrite_inner_graph = True

    def __init__(self, inputs: Sequence[Variable], outputs: Sequence[Variable], info: ScanInfo,
                 name: str = "scan", truncate_gradient: int = -1,
                 keep_last: Sequence[bool] = ()) -> None:
        if not isinstance(info, ScanInfo):
            info = ScanInfo(*info)
        self.info = info
        self.name = str(name)
        self.truncate_gradient = int(truncate_gradient)
        #: per outer output: True when only its last row is kept (a rewrite sets it when
        #: nothing else is used): the loop then stores what the taps need, not n rows
        self.keep_last = tuple(bool(k) for k in keep_last) if any(keep_last) else ()
        n_in = info.n_seqs + info.n_taps + info.n_non_seqs
        n_out = info.n_recurrent + info.n_nit_sot + int(info.as_while)
        if len(inputs) != n_in or len(outputs) != n_out:
            raise ValueError(f"{self}: the layout needs {n_in} inner inputs and {n_out} inner "
                             f"outputs, got {len(inputs)} and {len(outputs)}")
        self.fgraph = FunctionGraph(list(inputs), list(outputs))
        for k, (tap_var, out) in enumerate(zip(self.tap_inputs_of_outputs(),
                                               self.inner_outputs)):
            for var in tap_var:
                if not _fits(var.type, out.type):
                    raise TypeError(f"{self}: recurrent output {k} has type {out.type}, but "
                                    f"its value at the previous step has type {var.type}")
        if info.as_while:
            cond = self.inner_outputs[-1]
            if getattr(cond.type, "ndim", None) != 0:
                raise TypeError(f"{self}: the until() condition must be a scalar, got "
                                f"{cond.type}")
        self._runners: dict[str, Any] = {}

    def __str__(self) -> str:
        kind = "while" if self.info.as_while else "for"
        last = ", last rows" if self.keep_last else ""
        return f"Scan{{{self.name}, {kind}{last}}}"

    def is_state(self, k: int) -> bool:
        """Whether recurrent output k is a *state*: a value that is not a tensor (a random
        generator updated at each step), carried from step to step, whose outer output
        is its value after the last step (no rows, no gradient)."""
        return k < self.info.n_recurrent and not isinstance(
            self.inner_outputs[k].type, wt.TensorType)

    def has_states(self) -> bool:
        return any(self.is_state(k) for k in range(self.info.n_recurrent))

    def draws(self) -> list[Variable]:
        """The body's random draws that its tensor outputs read: the tensor outputs of the
        body nodes that read a carried generator state (a state's tap, or a generator
        computed from one), in the body's order."""
        info = self.info
        states = [taps[0] for k, taps in enumerate(self.tap_inputs_of_outputs())
                  if self.is_state(k)]
        if not states:
            return []
        generators, found = set(states), []
        for node in self.fgraph.toposort():
            if not any(v in generators for v in node.inputs):
                continue
            for out in node.outputs:
                if isinstance(out.type, wt.TensorType):
                    found.append(out)
                else:
                    generators.add(out)
        tensors = [out for k, out in enumerate(self.inner_outputs)
                   if not (k < info.n_recurrent and self.is_state(k))]
        read = set(ancestors(tensors))
        return [d for d in found if d in read]

    def recorded_draws(self) -> list[Variable]:
        """The body outputs the loop records its draws by (the last nit-sot outputs)."""
        stop = self.info.n_recurrent + self.info.n_nit_sot
        return self.inner_outputs[stop - self.info.n_recorded:stop]

    def recording_draws(self) -> Scan:
        """This loop also returning, as nit-sot outputs after the others, every draw of its
        body not recorded yet (itself when there is none).

        A loop carrying a generator draws new values at each step; its backward loop
        reads the draws the forward loop recorded instead of drawing (it carries no
        generator), so the gradient is that of the noise the forward pass used.
        `scan` records them when it builds a loop; the rewrite
        `scan_drop_unused_records` drops those no gradient reads."""
        info = self.info
        recorded = set(self.recorded_draws())
        new = [d for d in self.draws() if d not in recorded]
        if not new:
            return self
        stop = info.n_recurrent + info.n_nit_sot
        outputs = list(self.inner_outputs)
        outputs[stop:stop] = new
        keep_last = (*self.keep_last, *[False] * len(new)) if self.keep_last else ()
        return Scan(self.inner_inputs, outputs,
                    info._replace(n_nit_sot=info.n_nit_sot + len(new),
                                  n_recorded=info.n_recorded + len(new)),
                    self.name, self.truncate_gradient, keep_last)

    def without_records(self, dropped: Sequence[int]) -> Scan:
        """This loop without the recorded draws at positions `dropped` (0: the first
        recorded output)."""
        info = self.info
        first = info.n_recurrent + info.n_nit_sot - info.n_recorded
        gone = {first + i for i in dropped}
        outputs = [v for k, v in enumerate(self.inner_outputs) if k not in gone]
        keep_last = tuple(v for k, v in enumerate(self.keep_last) if k not in gone)
        new = Scan(self.inner_inputs, outputs,
                   info._replace(n_nit_sot=info.n_nit_sot - len(gone),
                                 n_recorded=info.n_recorded - len(gone)),
                   self.name, self.truncate_gradient, keep_last)
        new.inner_graph_rewritten = self.inner_graph_rewritten
        return new

    def mutable_inner_inputs(self) -> list[Variable]:
        """The taps the body may overwrite in place: those of a recurrent output kept as
        its last row whose one tap is -1 (an accumulator, BPTT's sum of a weight's
        gradient). Its ring holds one row, which only the current step reads: Gemm{inplace}
        then adds into it, and the new value is already in place (no copy per step).
        Not for a while-loop (the device runner re-reads the rows of steps it undoes).
        And the tap of a carried generator (a state): the body's new state replaces the
        old one at each step and nothing reads the old one after it, so the body's draws
        advance it in place instead of copying it at every step (the runner hands the
        body a copy of the outer generator, once per call)."""
        groups = self.tap_inputs_of_outputs()
        states = [group[0] for j, group in enumerate(groups)
                  if self.is_state(j) and len(group) == 1]
        if self.info.as_while:
            return states
        return states + [group[0] for j, group in enumerate(groups)
                         if self.keeps_last(j) and self.info.recurrent_taps[j] == (-1,)
                         and not self.is_state(j)]

    def keeps_last(self, k: int) -> bool:
        """Whether outer output k holds only its last row."""
        return bool(self.keep_last) and self.keep_last[k]

    # -- the inner graph's parts --------------------------------------------------
    def inner_seqs(self) -> list[Variable]:
        return self.inner_inputs[:self.info.n_seqs]

    def inner_taps(self) -> list[Variable]:
        start = self.info.n_seqs
        return self.inner_inputs[start:start + self.info.n_taps]

    def inner_non_seqs(self) -> list[Variable]:
        return self.inner_inputs[self.info.n_seqs + self.info.n_taps:]

    def tap_inputs_of_outputs(self) -> list[list[Variable]]:
        """Per recurrent output, the inner inputs holding its tap values."""
        taps, groups, k = self.inner_taps(), [], 0
        for group in self.info.recurrent_taps:
            groups.append(taps[k:k + len(group)])
            k += len(group)
        return groups

    def inner_recurrent_outputs(self) -> list[Variable]:
        return self.inner_outputs[:self.info.n_recurrent]

    def inner_nit_sot_outputs(self) -> list[Variable]:
        start = self.info.n_recurrent
        return self.inner_outputs[start:start + self.info.n_nit_sot]

    def outer_parts(self, inputs: Sequence[Any]) -> tuple[Any, list[Any], list[Any], list[Any]]:
        """(n_steps, sequences, initials, non_seqs) of a node's inputs (or input values)."""
        info = self.info
        seqs = list(inputs[1:1 + info.n_seqs])
        start = 1 + info.n_seqs
        inits = list(inputs[start:start + info.n_recurrent])
        return inputs[0], seqs, inits, list(inputs[start + info.n_recurrent:])

    # -- the protocol -------------------------------------------------------------
    def outer_input_index(self, k: int) -> int:
        """Node input feeding inner input k: a sequence, the initial value of the
        recurrent output whose tap it is, or a non-sequence."""
        info = self.info
        if k < info.n_seqs:
            return 1 + k
        if k < info.n_seqs + info.n_taps:
            tap = k - info.n_seqs
            for j, taps in enumerate(info.recurrent_taps):
                if tap < len(taps):
                    return 1 + info.n_seqs + j
                tap -= len(taps)
        return 1 + info.n_recurrent + (k - info.n_taps)

    def clone_with_inner_graph(self, fgraph: FunctionGraph) -> Scan:
        return Scan(fgraph.inputs, fgraph.outputs, self.info, self.name, self.truncate_gradient,
                    self.keep_last)

    def with_keep_last(self, keep_last: Sequence[bool]) -> Scan:
        """This loop keeping only the last row of the outputs marked in `keep_last`."""
        new = Scan(self.inner_inputs, self.inner_outputs, self.info, self.name,
                   self.truncate_gradient, keep_last)
        new.inner_graph_rewritten = self.inner_graph_rewritten
        return new

    @classmethod
    def from_inner_graph(cls, inputs: Sequence[Variable], outputs: Sequence[Variable],
                         **props: Any) -> Scan:
        return cls(inputs, outputs, **props)

    # -- building -----------------------------------------------------------------
    def make_node(self, n_steps: Any, *inputs: Any) -> Apply:

        info = self.info
        expected = info.n_seqs + info.n_recurrent + info.n_non_seqs
        if len(inputs) != expected:
            raise TypeError(f"{self} takes n_steps and {expected} inputs ({info.n_seqs} "
                            f"sequences, {info.n_recurrent} initial values, "
                            f"{info.n_non_seqs} non-sequences), got {len(inputs)}")
        n_steps = wt.as_tensor_variable(n_steps)
        if n_steps.type.ndim != 0 or not n_steps.type.dtype.is_int:
            raise TypeError(f"{self}: n_steps must be an integer scalar, got {n_steps.type}")
        if n_steps.type.dtype != "int64":
            n_steps = wt.cast(n_steps, "int64")
        inputs = [v if isinstance(v, Variable) else wt.as_tensor_variable(v) for v in inputs]
        _, seqs, inits, non_seqs = self.outer_parts([n_steps, *inputs])
        for k, (outer, inner) in enumerate(zip(seqs, self.inner_seqs())):
            if outer.type.ndim < 1 or not _fits(_state_type(outer.type), inner.type):
                raise TypeError(f"{self}: sequence {k} has type {outer.type}; its rows must "
                                f"fit the loop body's input {inner} of type {inner.type}")
        for k, (outer, taps) in enumerate(zip(inits, self.tap_inputs_of_outputs())):
            if self.is_state(k):
                if outer.type != taps[0].type:
                    raise TypeError(f"{self}: the initial value of state {k} has type "
                                    f"{outer.type}; the loop body expects {taps[0].type}")
                continue
            if getattr(outer.type, "ndim", 0) < 1 or \
                    not _fits(_state_type(outer.type), taps[0].type):
                raise TypeError(f"{self}: the initial value of recurrent output {k} has type "
                                f"{outer.type}; its rows must fit {taps[0].type}")
        for k, (outer, inner) in enumerate(zip(non_seqs, self.inner_non_seqs())):
            if not _fits(outer.type, inner.type):
                raise TypeError(f"{self}: non-sequence {k} has type {outer.type}; the loop "
                                f"body expects {inner.type}")
        steps = None
        if isinstance(n_steps, Constant) and not info.as_while:
            steps = int(n_steps.data)
        outputs = []
        for k, (depth, init, out) in enumerate(zip(info.depths, inits,
                                                  self.inner_recurrent_outputs())):
            if self.is_state(k):
                outputs.append(init.type())  # its value after the last step
                continue
            rows = 1 if self.keeps_last(k) else None if steps is None else depth + steps
            row_shape = tuple(a if a is not None else b
                              for a, b in zip(init.type.shape[1:], out.type.shape))
            outputs.append(wt.TensorType(init.type.dtype, (rows, *row_shape))())
        for k, out in enumerate(self.inner_nit_sot_outputs()):
            rows = steps
            if self.keeps_last(info.n_recurrent + k) and steps is not None:
                rows = min(steps, 1)
            outputs.append(wt.TensorType(out.type.dtype, (rows, *out.type.shape))())
        return Apply(self, [n_steps, *inputs], outputs)

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        return False  # a loop is not worth running while compiling

    # -- shapes and connections -----------------------------------------------------
    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:

        info = self.info
        n_steps = node.inputs[0]
        n_shape, seq_shapes, init_shapes, _ = self.outer_parts(input_shapes)
        shapes: list[tuple[Any, ...]] = []
        for k, depth in enumerate(info.depths):
            if self.is_state(k):
                shapes.append(None)  # (not a tensor)
                continue
            rows = (wt.as_tensor_variable(1) if self.keeps_last(k)
                    else node.outputs[k].shape[0] if info.as_while
                    else wt.as_tensor_variable(depth) + n_steps)
            shapes.append((rows, *init_shapes[k][1:]))
        for k, out in enumerate(self.inner_nit_sot_outputs()):
            outer = node.outputs[info.n_recurrent + k]
            rows = outer.shape[0] if info.as_while else n_steps
            if self.keeps_last(info.n_recurrent + k) and not info.as_while:
                rows = wt.minimum(n_steps, 1)
            row = [d if d is not None else outer.shape[1 + i]
                   for i, d in enumerate(out.type.shape)]
            shapes.append((rows, *row))
        return shapes

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        """[outer input][outer output]: through the body, and through the recurrence."""
        info = self.info
        inner_in = self.inner_inputs
        depends = []
        for out in self.inner_outputs[:info.n_recurrent + info.n_nit_sot]:
            roots = set(ancestors([out]))
            depends.append([v in roots for v in inner_in])
        n_out = info.n_recurrent + info.n_nit_sot
        # outer input index of each inner input
        outer_of_inner = list(range(1, 1 + info.n_seqs))
        tap_owner: list[int] = []
        for j, taps in enumerate(info.recurrent_taps):
            tap_owner.extend([j] * len(taps))
        outer_of_inner += [1 + info.n_seqs + j for j in tap_owner]
        first_ns = 1 + info.n_seqs + info.n_recurrent
        outer_of_inner += list(range(first_ns, first_ns + info.n_non_seqs))
        pattern = [[False] * n_out for _ in node.inputs]
        for j in range(info.n_recurrent):
            pattern[1 + info.n_seqs + j][j] = True  # the buffer holds the initial rows
        changed = True
        while changed:
            changed = False
            for o in range(n_out):
                for i, used in enumerate(depends[o]):
                    if not used:
                        continue
                    sources = [outer_of_inner[i]]
                    if info.n_seqs <= i < info.n_seqs + info.n_taps:
                        # a tap brings in whatever its recurrent output depends on
                        j = tap_owner[i - info.n_seqs]
                        sources += [r for r in range(len(node.inputs)) if pattern[r][j]]
                    for r in sources:
                        if not pattern[r][o]:
                            pattern[r][o] = changed = True
        return pattern

    # -- differentiation ------------------------------------------------------------
    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        from workbench.core.graph.type import disconnected_type
        from workbench.core.scan.gradient import full_rows_grads, scan_vjp

        op = self.with_keep_last(()).recording_draws() if self.keep_last else \
            self.recording_draws()
        grads = list(output_grads)
        if op is not self:
            # backpropagation needs every step's rows and every draw: a loop keeping them
            # (computing what this one does, from the same inputs: the same draws)
            full = op(*inputs, return_list=True)
            grads = full_rows_grads(self, full[:len(outputs)], grads) if self.keep_last \
                else grads
            grads += [disconnected_type() for _ in full[len(outputs):]]
            outputs = full
        return scan_vjp(op, list(inputs), list(outputs), grads)

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        from workbench.core.scan.gradient import scan_jvp

        if self.keep_last:
            tangents = self.with_keep_last(()).R_op(inputs, eval_points)
            return [t[-1:] if t is not None and self.keeps_last(k) else t
                    for k, t in enumerate(tangents)]
        return scan_jvp(self, list(inputs), list(eval_points))

    # -- running --------------------------------------------------------------------
    def runner(self, impl: str = "py") -> Any:
        """The compiled loop body for linker `impl` (compiled once, then reused)."""
        runner = self._runners.get(impl)
        if runner is None:
            from workbench.core.scan.run import LoopRunner

            runner = self._runners[impl] = LoopRunner(self, impl)
        return runner

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        results = self.runner("py").run(inputs)
        for cell, value in zip(output_storage, results):
            cell[0] = value

    def after_inner_rewrite(self, node: Apply) -> list[Variable] | None:
        from workbench.core.scan.rewriting import push_out_invariants

        return push_out_invariants(node)

    def make_linked_thunk(self, node: Apply, storage_map: StorageMap,
                          compute_map: ComputeMap, no_recycling: Sequence[Variable],
                          linker: Any) -> Thunk:
        """The loop with its body linked like the outer graph: "py", "c" (steps in C),
        "debug" (every body node checked), "gpu" (the body lowered to torch on the
        linker's device; the steps are launched from Python but every buffer, row and
        state stays on the device, with no transfer per step and a while-loop's
        condition read back only now and then: run.py); with the linker's profiling,
        the body is profiled per node (`inner_profile`)."""
        impl = getattr(linker, "name", None) or getattr(linker, "impl", "py")
        if impl == "gpu":
            impl = f"gpu:{linker.device}"
        if getattr(linker, "profile", False):
            impl += "+profile"
        return self.make_thunk(node, storage_map, compute_map, no_recycling, impl=impl)

    def inner_profile(self, linker: str | None = None) -> Any:
        profiled = [r for key, r in self._runners.items() if key.endswith("+profile")
                    and (linker is None or r.impl == linker)]
        return profiled[-1].body.profile if profiled else None

    def make_thunk(self, node: Apply, storage_map: StorageMap, compute_map: ComputeMap,
                   no_recycling: Sequence[Variable], impl: str | None = None) -> Thunk:
        """A thunk looping over the body compiled by the linker `impl` ("py", "c", ...)."""
        runner = self.runner(impl or "py")
        in_cells = [storage_map[v] for v in node.inputs]
        out_cells = [storage_map[v] for v in node.outputs]
        done = [compute_map[v] for v in node.outputs]
        run = runner.run

        def thunk() -> None:
            results = run([cell[0] for cell in in_cells])
            for cell, value in zip(out_cells, results):
                cell[0] = value
            for cell in done:
                cell[0] = True

        return Thunk(thunk, node, in_cells, out_cells, impl=runner.impl)


def check_step_value(op: Scan, what: str, step: int, value: Any, expected: tuple[int, ...]
                     ) -> None:
    """Raise ScanError naming the loop, step and output when a step's value has the wrong
    shape."""
    shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
    expected = tuple(expected)
    if shape != expected:
        raise ScanError(f"loop {op.name!r}: at step {step}, {what} has shape {shape}, but "
                        f"{'its earlier values have' if step else 'it must have'} shape "
                        f"{expected}")
