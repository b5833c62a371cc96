"""`scan`: build a loop from a Python step function, with PyTensor's semantics.

    result, updates = scan(fn, sequences=..., outputs_info=..., non_sequences=...)

`fn` is called once, on symbolic placeholders, in this order: one row of each
sequence per tap (``dict(input=x, taps=[-2, 0])`` gives x[t-2] and x[t]), the
previous values of each recurrent output per tap (an `outputs_info` entry that
is a value has tap -1; ``dict(initial=x0, taps=[-2, -1])`` gives two; `None` marks
an output that is not fed back), then the non-sequences. It returns its outputs,
optionally a dict of shared-variable updates and an `until(condition)` (a
while-loop: it stops after the first step whose condition is true). Variables
the step uses without receiving them (closures, shared variables) become
non-sequences automatically.

Each recurrent output is returned without its initial rows (n_steps rows), as in
PyTensor; a shared variable updated inside the step gets its last value as update.
A step drawing random numbers carries its generator from step to step (a state);
the loop records its draws so that its gradient reuses them (see gradient.py).
`map`, `reduce`, `foldl` and `foldr` are the usual special cases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from workbench.core import tensor as wt
from workbench.core.graph.basic import Constant, Variable, clone_replace, graph_inputs
from workbench.core.scan.op import Scan, ScanInfo

__all__ = ["Until", "foldl", "foldr", "map", "reduce", "scan", "until"]


class Until:
    """The stop condition of a while-loop: the loop ends after the step where it is true."""

    def __init__(self, condition: Any) -> None:

        condition = wt.as_tensor_variable(condition)
        if condition.type.ndim != 0:
            raise TypeError(f"until: the condition must be a scalar, got {condition} of type "
                            f"{condition.type}; reduce it first (e.g. .all() or .any())")
        self.condition = condition


def until(condition: Any) -> Until:
    """Stop the loop after the first step whose `condition` is true (a while-loop)."""
    return Until(condition)


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _tap_name(base: str | None, tap: int) -> str | None:
    """`base[t]`, `base[t-1]`, ...: the body's name for a row of `base`. In a nested loop
    `base` may already be such a row's name: its suffix is replaced, not repeated."""
    if base is None:
        return None
    base = _TAP_SUFFIX.sub("", base)
    return f"{base}[t]" if tap == 0 else f"{base}[t{tap:+d}]"


_TAP_SUFFIX = re.compile(r"\[t(?:[+-]\d+)?\]$")


def _split_result(result: Any, name: str) -> tuple[list[Any], dict[Any, Any], Until | None]:
    """(outputs, updates, until) from whatever the step function returned."""
    if isinstance(result, Until):
        return [], {}, result
    if isinstance(result, Mapping):
        return [], dict(result), None
    if not isinstance(result, (list, tuple)):
        return [result], {}, None
    items = list(result)
    stop = [r for r in items if isinstance(r, Until)]
    updates = [r for r in items if isinstance(r, Mapping)]
    rest = [r for r in items if not isinstance(r, (Until, Mapping))]
    if len(stop) > 1 or len(updates) > 1:
        raise ValueError(f"scan {name!r}: the step function returned several until() or "
                         "update dicts; return at most one of each")
    if len(rest) == 1 and isinstance(rest[0], (list, tuple)):
        rest = list(rest[0])
    return rest, dict(updates[0]) if updates else {}, stop[0] if stop else None


def _default_updates(exprs: list[Any], given: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """(shared variable, its default_update) for each one `exprs` read that has one and no
    update in `given`, repeated over the added expressions."""
    from workbench.core.link.shared import SharedVariable

    found: list[tuple[Any, Any]] = []
    seen = set(given)
    frontier = [e for e in exprs if isinstance(e, Variable)]
    while frontier:
        added = []
        for root in graph_inputs(frontier):
            update = getattr(root, "default_update", None)
            if update is not None and isinstance(root, SharedVariable) and root not in seen:
                seen.add(root)
                found.append((root, update))
                added.append(update)
        frontier = added
    return found


class _Sequences:
    """The sequences as the loop reads them: one outer slice and one placeholder per tap."""

    def __init__(self, sequences: Any, go_backwards: bool, name: str) -> None:

        self.outer: list[Variable] = []
        self.inner: list[Variable] = []
        for k, spec in enumerate(_listed(sequences)):
            if isinstance(spec, Mapping):
                if "input" not in spec:
                    raise ValueError(f"scan {name!r}: sequences[{k}] is a dict without 'input'")
                var, taps = wt.as_tensor_variable(spec["input"]), list(spec.get("taps", [0]))
            else:
                var, taps = wt.as_tensor_variable(spec), [0]
            if var.type.ndim < 1:
                raise TypeError(f"scan {name!r}: sequences[{k}] ({var}) has type {var.type}; "
                                "a sequence needs a leading dimension to loop over")
            if not taps:
                continue
            taps = [int(t) for t in taps]
            low, high = min(min(taps), 0), max(max(taps), 0)
            for tap in taps:
                start, stop = tap - low, tap - high
                piece = var[start:stop] if stop != 0 else var[start:] if start else var
                if go_backwards:
                    piece = piece[::-1]
                self.outer.append(piece)
                row = var.type.clone(shape=var.type.shape[1:])
                self.inner.append(row(_tap_name(var.name, tap)))


class _Recurrent:
    """One recurrent output: its initial rows (outer), taps and placeholders."""

    def __init__(self, initial: Variable, taps: list[int], index: int, name: str) -> None:

        if not taps or any(t >= 0 for t in taps):
            raise ValueError(f"scan {name!r}: outputs_info[{index}] has taps {taps}; the taps "
                             "of a recurrent output are negative (-1: the previous step)")
        self.taps = tuple(sorted(set(int(t) for t in taps)))
        self.depth = -self.taps[0]
        if not isinstance(initial.type, wt.TensorType):  # a state (a random generator)
            if self.taps != (-1,):
                raise ValueError(f"scan {name!r}: {initial} (type {initial.type}) is not a "
                                 "tensor: it can only be carried from one step to the next")
            self.outer, state = initial, initial.type
        elif list(self.taps) == [-1] and len(taps) == 1:
            self.outer = wt.expand_dims(initial, 0)
            state = initial.type
        else:
            if initial.type.ndim < 1:
                raise TypeError(f"scan {name!r}: outputs_info[{index}] has taps {taps}, so its "
                                f"initial value needs a leading dimension of at least "
                                f"{self.depth} rows; got {initial.type}")
            self.outer = initial[:self.depth]
            state = initial.type.clone(shape=initial.type.shape[1:])
        self.state_type = state
        base = initial.name if initial.name is not None else f"{name}.out{index}"
        self.inner = [state(_tap_name(base, t)) for t in self.taps]
        self.initial = initial


def _check_recurrent_output(out: Variable, rec: _Recurrent, k: int, name: str) -> Variable:
    want = rec.state_type
    if out.type.dtype != want.dtype or out.type.ndim != want.ndim:
        raise TypeError(
            f"scan {name!r}: output {k} of the step function has type {out.type}, but its "
            f"initial value (outputs_info[{k}]) has type {rec.initial.type}; the step must "
            f"return a value of the state's dtype and rank (cast the initial value, e.g. "
            f"wt.cast(x0, '{out.type.dtype}'), or the output)")
    for a, b in zip(out.type.shape, want.shape):
        if a is not None and b is not None and a != b:
            raise TypeError(f"scan {name!r}: output {k} of the step function has static shape "
                            f"{out.type.shape}, but its state has shape {want.shape}")
    return out


def scan(
    fn: Callable[..., Any],
    sequences: Any = None,
    outputs_info: Any = None,
    non_sequences: Any = None,
    n_steps: Any = None,
    truncate_gradient: int = -1,
    go_backwards: bool = False,
    name: str | None = None,
    return_updates: bool = True,
) -> Any:
    """A loop calling `fn` once per step; returns ``(outputs, updates)`` (see the module).

    `n_steps` (int or integer scalar) defaults to the shortest sequence;
    `truncate_gradient` (-1: all) limits backpropagation to the last steps (earlier
    sequence rows and, when it cuts, the initial values get no gradient through the
    loop, as in PyTensor: an initial value keeps only its direct gradient);
    `go_backwards` walks the sequences from the end. With `return_updates=False`
    only the outputs are returned (and the step may not update shared variables).
    Outputs: one Variable for one output, else a list, in `outputs_info` order.
    """
    from workbench.core.link.shared import SharedVariable

    name = name or "scan"
    seqs = _Sequences(sequences, go_backwards, name)
    if n_steps is None:
        if not seqs.outer:
            raise ValueError(f"scan {name!r}: give n_steps or at least one sequence (the "
                             "number of steps is the length of the shortest sequence)")
        lengths = [s.type.shape[0] for s in seqs.outer]
        if all(length is not None for length in lengths):
            n = wt.as_tensor_variable(min(lengths), dtype="int64")  # (static: a constant)
        else:
            n = seqs.outer[0].shape[0]
            for other in seqs.outer[1:]:
                n = wt.minimum(n, other.shape[0])
    else:
        n = wt.as_tensor_variable(n_steps)
        if isinstance(n, Constant) and n.type.ndim == 0 and n.type.dtype.is_int:
            n = wt.as_tensor_variable(int(n.data), dtype="int64")
        if n.type.ndim != 0 or not n.type.dtype.is_int:
            raise TypeError(f"scan {name!r}: n_steps must be an integer scalar, got {n.type}")
        if isinstance(n, Constant) and int(n.data) < 0:
            raise ValueError(f"scan {name!r}: n_steps is {int(n.data)}; it must be 0 or more "
                             "(use go_backwards=True to walk the sequences backwards)")
    if n.type.dtype != "int64":
        n = wt.cast(n, "int64")
    if n_steps is not None or len(seqs.outer) > 1:
        seqs.outer = [s[:n] for s in seqs.outer]

    infos = _listed(outputs_info) if outputs_info is not None else None
    recurrent: dict[int, _Recurrent] = {}
    for k, info in enumerate(infos or []):
        if isinstance(info, Mapping):
            initial = info.get("initial")
            if initial is None:
                continue
            taps = list(info.get("taps", [-1]))
        elif info is None:
            continue
        else:
            initial, taps = info, [-1]
        recurrent[k] = _Recurrent(wt.as_tensor_variable(initial), taps, k, name)

    non_seq_args = [v if isinstance(v, SharedVariable) else wt.as_tensor_variable(v)
                    for v in _listed(non_sequences)]
    placeholders = {v: v.type(v.name) for v in non_seq_args
                    if isinstance(v, Variable) and not isinstance(v, (Constant, SharedVariable))}
    args = list(seqs.inner)
    for k in sorted(recurrent):
        args.extend(recurrent[k].inner)
    args.extend(placeholders.get(v, v) for v in non_seq_args)

    outputs, updates, stop = _split_result(fn(*args), name)
    outputs = [wt.as_tensor_variable(o) for o in outputs]
    if infos is not None and len(outputs) != len(infos):
        raise ValueError(f"scan {name!r}: the step function returned {len(outputs)} "
                         f"output(s), but outputs_info has {len(infos)} entries; give one "
                         "entry per output (None for an output that is not fed back)")
    if updates and not return_updates:
        raise ValueError(f"scan {name!r}: the step function updates shared variables; "
                         "call scan with return_updates=True and pass the updates to "
                         "function(updates=...)")

    # a shared variable the step reads with a default update (a RandomStream's generator)
    # moves on at every step, as in a compiled function
    updates = dict(updates)
    for target, expr in _default_updates(outputs + list(updates.values())
                                         + ([stop.condition] if stop else []), updates):
        updates[target] = expr
    states: list[tuple[Any, Variable]] = []  # (shared variable, its new value) per update
    for target, expr in updates.items():
        if not isinstance(target, SharedVariable):
            raise TypeError(f"scan {name!r}: the step function returned an update for "
                            f"{target}, which is not a shared variable")
        rec = _Recurrent(target, [-1], len(outputs), name)
        if isinstance(target.type, wt.TensorType):
            expr = wt.as_tensor_variable(expr)
        expr = target.type.filter_variable(expr)
        states.append((rec, expr))

    rec_outputs = [_check_recurrent_output(outputs[k], recurrent[k], k, name)
                   for k in sorted(recurrent)]
    nit_indices = [k for k in range(len(outputs)) if k not in recurrent]
    inner_outs = rec_outputs + [expr for _, expr in states]
    inner_outs += [outputs[k] for k in nit_indices]
    if stop is not None:
        inner_outs.append(stop.condition)

    # Variables the step used without receiving them become non-sequences; a shared
    # variable the step updates reads its state instead.
    replace: dict[Variable, Variable] = {v: p for v, p in placeholders.items()}
    for rec, _ in states:
        replace[rec.initial] = rec.inner[0]
    known = set(seqs.inner) | set(placeholders.values()) | {r.inner[0] for r, _ in states}
    for k in recurrent:
        known.update(recurrent[k].inner)
    free_outer: list[Variable] = list(placeholders)
    free_inner: list[Variable] = list(placeholders.values())
    for root in graph_inputs(inner_outs):
        if root in known or root in replace or isinstance(root, Constant):
            continue
        replace[root] = root.type(root.name)
        free_outer.append(root)
        free_inner.append(replace[root])
    inner_outs = list(clone_replace(inner_outs, replace)) if replace else inner_outs
    for k, out in enumerate(inner_outs):  # (a placeholder returned as is stays itself)
        inner_outs[k] = replace.get(out, out)

    ordered = [recurrent[k] for k in sorted(recurrent)] + [rec for rec, _ in states]
    info = ScanInfo(len(seqs.inner), tuple(r.taps for r in ordered), len(nit_indices),
                    len(free_inner), stop is not None)
    inner_inputs = list(seqs.inner) + [p for r in ordered for p in r.inner] + free_inner
    op = Scan(inner_inputs, inner_outs, info, name=name, truncate_gradient=truncate_gradient)
    # a loop drawing random values also returns its draws (after the other outputs), for
    # its gradient; compiling drops those no gradient reads (scan_drop_unused_records)
    op = op.recording_draws()
    node_outputs = op(n, *seqs.outer, *[r.outer for r in ordered], *free_outer,
                      return_list=True)

    results: list[Variable | None] = [None] * len(outputs)
    for position, k in enumerate(sorted(recurrent)):
        results[k] = node_outputs[position][recurrent[k].depth:]
    for position, k in enumerate(nit_indices):
        results[k] = node_outputs[info.n_recurrent + position]
    new_values = {}
    for position, (rec, _) in enumerate(states):
        final = node_outputs[len(recurrent) + position]
        new_values[rec.initial] = final[-1] if isinstance(final.type, wt.TensorType) else final
    out: Any = results[0] if len(results) == 1 else results
    return (out, new_values) if return_updates else out


def map(fn: Callable[..., Any], sequences: Any, non_sequences: Any = None,  # noqa: A001
        truncate_gradient: int = -1, go_backwards: bool = False, name: str | None = None,
        return_updates: bool = True) -> Any:
    """`fn` applied to each row of the sequences: `scan` with no recurrent output."""
    return scan(fn, sequences=sequences, outputs_info=None, non_sequences=non_sequences,
                truncate_gradient=truncate_gradient, go_backwards=go_backwards, name=name,
                return_updates=return_updates)


def reduce(fn: Callable[..., Any], sequences: Any, outputs_info: Any,  # noqa: A001
           non_sequences: Any = None, go_backwards: bool = False, name: str | None = None,
           return_updates: bool = True) -> Any:
    """Fold the sequences into `outputs_info` with `fn`: `scan` returning only the values
    after the last step (the loop then keeps only those rows)."""
    outputs, updates = scan(fn, sequences=sequences, outputs_info=outputs_info,
                            non_sequences=non_sequences, go_backwards=go_backwards, name=name)
    last = [o[-1] for o in outputs] if isinstance(outputs, list) else outputs[-1]
    return (last, updates) if return_updates else last


def foldl(fn: Callable[..., Any], sequences: Any, outputs_info: Any, non_sequences: Any = None,
          name: str | None = None, return_updates: bool = True) -> Any:
    """`reduce` from the first row to the last."""
    return reduce(fn, sequences, outputs_info, non_sequences, False, name, return_updates)


def foldr(fn: Callable[..., Any], sequences: Any, outputs_info: Any, non_sequences: Any = None,
          name: str | None = None, return_updates: bool = True) -> Any:
    """`reduce` from the last row to the first."""
    return reduce(fn, sequences, outputs_info, non_sequences, True, name, return_updates)
