"""Reverse-mode automatic differentiation: `grad` and the helpers Ops use in their gradients.

`grad(cost, wrt)` walks the Apply nodes between `wrt` and `cost` in reverse
topological order and calls each Op's `L_op(inputs, outputs, output_grads)`
(seed 003, "Gradient"). The pass works on Variables of any Type: tensors and
scalars are handled here (the seed is a 1 of the cost's dtype, contributions to
a variable used several times are summed with the tensor or scalar `add`); any
other Type is asked through its optional hooks `grad_one`, `add_gradients` and
`grad_zero` (`workbench.core.graph.type.Type`), and a missing hook is a
TypeError naming the variable, its Type and the hook to define. Three kinds of
"no ordinary gradient" travel through the pass:

- a `DisconnectedType` variable: the cost does not depend on this value
  (`connection_pattern` says which inputs reach which outputs);
- a `NullType` variable (`grad_undefined`, `grad_not_implemented`): the
  gradient exists nowhere or was not written; it is an error only if it reaches
  a requested `wrt`;
- a zero gradient (`float_zeros_like`): e.g. through an integer-valued output.

Gradients never carry integer dtypes: an Op returning an integer gradient is an
error naming the Op and the input. With ``trace=True`` the pass is also recorded
(`BackwardTrace`) so the gradient explorer and the CLI can replay it.

The markers Ops return (`grad_undefined`, `grad_not_implemented`,
`disconnected_type`, `grad_dtype`, `NullTypeGradError`) live in the graph layer
(`workbench.core.graph.type`), the gradient-control Ops (`zero_grad`,
`disconnected_grad`, `grad_clip`) in the tensor layer
(`workbench.core.tensor.grad_control`); both are re-exported here.
Lop, Rop, Jacobians and Hessians live in `workbench.core.derivatives`; the
finite-difference checker in `workbench.core.gradcheck`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core import dtypes
from workbench.core.graph.basic import Apply, Variable, io_toposort
from workbench.core.graph.type import (
    NullTypeGradError,
    Type,
    disconnected_type,
    grad_dtype,
    grad_not_implemented,
    grad_undefined,
    is_disconnected,
    is_null,
)
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.tensor.grad_control import (
    DisconnectedGrad,
    GradClip,
    ZeroGrad,
    consider_constant,
    disconnected_grad,
    grad_clip,
    zero_grad,
)

__all__ = [
    "Accumulation", "BackwardStep", "BackwardTrace", "DisconnectedGrad",
    "DisconnectedInputError", "GradClip", "NullTypeGradError", "ZeroGrad", "consider_constant",
    "disconnected_grad", "disconnected_type", "float_zeros_like", "grad", "grad_clip",
    "grad_dtype", "grad_not_implemented", "grad_undefined", "is_disconnected", "is_null",
    "zero_grad", "zeros_for_disconnected",
]  # fmt: skip


# -- errors --------------------------------------------------------------------------


class DisconnectedInputError(ValueError):
    """The cost does not depend on a variable `grad` was asked to differentiate against."""


# -- helpers for Op.grad / Op.L_op (the markers live in graph.type) ----------------------


def float_zeros_like(x: Variable) -> Variable:
    """Zeros shaped like `x` in `grad_dtype(x)`: the gradient through an integer output.

    Other Types than tensors and scalars give their `grad_zero(x)`.
    """
    from workbench.core.scalar.basic import ScalarType, scalar_constant
    from workbench.core.tensor.join import float_zeros_like as tensor_float_zeros_like
    from workbench.core.tensor.type import TensorType

    hook = _type_hook(x.type, "grad_zero")
    if hook is not None:
        return _hook_result(hook(x), x, "grad_zero")
    if isinstance(x.type, TensorType):
        return tensor_float_zeros_like(x)
    if isinstance(x.type, ScalarType):
        return scalar_constant(0, dtype=grad_dtype(x))
    raise _missing_hook("float_zeros_like: no zero gradient for", x, "grad_zero", "var",
                        "return a constant zero of the Type")


def zeros_for_disconnected(outputs: Sequence[Variable], output_grads: Sequence[Variable]
                           ) -> list[Variable]:
    """`output_grads` with each DisconnectedType entry replaced by zeros like its output.

    For multi-output Ops whose gradient formula wants every output gradient
    (e.g. Split: ``join(zeros_for_disconnected(outputs, grads))``).
    """
    return [float_zeros_like(o) if is_disconnected(g) else g
            for o, g in zip(outputs, output_grads)]


def _as_float_constant(value: float, like: Variable) -> Variable:
    """A 0-d float constant in `grad_dtype(like)`."""
    import numpy as np

    from workbench.core.tensor.variable import constant

    return constant(np.asarray(value, dtype=grad_dtype(like).numpy))


# -- dispatch on the Type: the seed one, sums of contributions, casts ----------------------


def _type_hook(t: Any, name: str) -> Any:
    """`t.<name>` if the class of `t` defines that optional gradient hook, else None."""
    method = getattr(type(t), name, None)
    if method is None or method is getattr(Type, name):
        return None
    return getattr(t, name)


def _missing_hook(what: str, var: Variable, hook: str, args: str, how: str) -> TypeError:
    name = type(var.type).__name__
    return TypeError(
        f"{what} {var} of type {var.type}: workbench.grad handles tensors and scalars "
        f"itself, other Types need the optional hook {name}.{hook}({args}); define it on "
        f"{name} ({how}; see workbench.core.graph.type.Type.{hook})")


def _hook_result(result: Any, var: Variable, hook: str) -> Variable:
    if not isinstance(result, Variable):
        raise TypeError(f"{type(var.type).__name__}.{hook} returned {type(result).__name__} "
                        f"{result!r} for {var}; it must return a Variable")
    return result


def _grad_one(cost: Variable) -> Variable:
    """The seed d(cost)/d(cost): a 1 of the cost's Type (gradient dtype for numbers)."""
    from workbench.core.scalar.basic import ScalarType, scalar_constant
    from workbench.core.tensor.type import TensorType

    hook = _type_hook(cost.type, "grad_one")
    if hook is not None:
        return _hook_result(hook(cost), cost, "grad_one")
    if isinstance(cost.type, TensorType):
        return _as_float_constant(1.0, cost)
    if isinstance(cost.type, ScalarType):
        return scalar_constant(1, dtype=grad_dtype(cost))
    raise _missing_hook("grad: no initial gradient (a one) for the cost", cost, "grad_one",
                        "var", "return a constant one of the Type, or pass known_grads="
                        "{cost: g}")


def _add_gradients(var: Variable, terms: list[Variable]) -> Variable:
    """The sum of the gradient contributions `terms` (two or more) to `var`."""
    from workbench.core.scalar.basic import ScalarType
    from workbench.core.tensor.type import TensorType

    hook = _type_hook(var.type, "add_gradients")
    if hook is not None:
        return _hook_result(hook(list(terms)), var, "add_gradients")
    if isinstance(var.type, TensorType):
        from workbench.core.tensor.math import add

        return add(*terms)
    if isinstance(var.type, ScalarType):
        from workbench.core.scalar.math import add as scalar_add

        total = terms[0]
        for term in terms[1:]:
            total = scalar_add(total, term)
        return total
    raise _missing_hook(f"grad: cannot sum the {len(terms)} gradient contributions to", var,
                        "add_gradients", "terms",
                        "return the sum of the list of gradients, built with an Op")


def _cast(g: Variable, dtype: dtypes.Dtype) -> Variable:
    """`g` converted to `dtype` with the cast of its own kind (scalar or tensor)."""
    from workbench.core.scalar.basic import ScalarType

    if isinstance(g.type, ScalarType):
        from workbench.core.scalar.basic import cast as scalar_cast

        return scalar_cast(g, dtype)
    from workbench.core.tensor.basic import cast

    return cast(g, dtype)


# -- the recorded backward pass ------------------------------------------------------------


@dataclass
class BackwardStep:
    """One Apply node visited by the backward pass.

    `output_grads[j]` is the gradient the node received for output j (a
    DisconnectedType variable when the cost does not depend on it);
    `input_grads[i]` the term its Op returned for input i (None when the pass
    did not need it).
    """

    node: Apply
    output_grads: list[Variable]
    input_grads: list[Variable | None]


@dataclass
class Accumulation:
    """The contributions summed into the gradient of a variable used several times."""

    variable: Variable
    terms: list[Variable]
    total: Variable
    after_step: int  # the number of BackwardSteps recorded before this sum was made


@dataclass
class BackwardTrace:
    """The backward pass as it happened: steps in reverse topological order, and the sums.

    Iterating, indexing and `len` go over the steps (``trace[-1]`` is the last
    node visited). `seeds` maps each seeded variable (the cost, known_grads) to
    its gradient; `grads` are the returned gradients, one per `wrt`.
    """

    seeds: dict[Variable, Variable]
    wrt: list[Variable]
    steps: list[BackwardStep] = field(default_factory=list)
    accumulations: list[Accumulation] = field(default_factory=list)
    grads: list[Any] = field(default_factory=list)

    def __iter__(self) -> Any:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: int) -> BackwardStep:
        return self.steps[index]

    def step_for(self, node: Apply) -> BackwardStep:
        """The step that visited `node`."""
        for step in self.steps:
            if step.node is node:
                return step
        raise KeyError(f"the backward pass did not visit {node}")

    def variables(self) -> list[Variable]:
        """Every gradient variable the record holds (seeds, steps, sums), once, in order;
        DisconnectedType and NullType markers are left out (they have no value)."""
        seen: dict[Variable, None] = {}
        candidates: list[Any] = list(self.seeds.values())
        for step in self.steps:
            candidates += step.output_grads + step.input_grads
        for acc in self.accumulations:
            candidates += acc.terms + [acc.total]
        candidates += self.grads
        for var in candidates:
            if isinstance(var, Variable) and not is_disconnected(var) and not is_null(var):
                seen.setdefault(var, None)
        return list(seen)

    def evaluate(self, values: Mapping[Variable, Any]) -> dict[Variable, Any]:
        """The value of every gradient of the record (`variables()`), given the graph's inputs.

        One function is compiled for all of them: this is how a viewer shows the
        numbers of the backward pass without recomputing any gradient itself.
        """
        from workbench.core.compile.function import function

        targets = self.variables()
        inputs = list(values)
        results = function(inputs, targets, on_unused_input="ignore")(
            *[values[v] for v in inputs])
        return dict(zip(targets, results))

    def rows(self) -> list[tuple[str, str, str, str]]:
        """The table `str` prints, as data: (step, node or sum, grads in, grads out).

        A step row gives the node's Op, the output gradients it received and the
        input gradients it returned; a "+" row a sum of contributions and its total.
        """
        def text(var: Any) -> str:
            if var is None:
                return "-"
            if is_disconnected(var):
                return "disconnected"
            if is_null(var):
                return "null"
            return _short_text(var)

        def sum_row(acc: Accumulation) -> tuple[str, str, str, str]:
            return ("+", f"sum for {acc.variable}", ", ".join(map(text, acc.terms)),
                    text(acc.total))

        sums_after: dict[int, list[Accumulation]] = {}
        for acc in self.accumulations:
            sums_after.setdefault(acc.after_step, []).append(acc)
        lines = [sum_row(acc) for acc in sums_after.get(0, [])]
        for k, step in enumerate(self.steps):
            lines.append((str(k), str(step.node.op), ", ".join(map(text, step.output_grads)),
                          ", ".join(map(text, step.input_grads))))
            lines += [sum_row(acc) for acc in sums_after.get(k + 1, [])]
        return lines

    def __str__(self) -> str:
        rows = [("#", "node", "output grads", "input grads"), *self.rows()]
        widths = [min(max(len(r[c]) for r in rows), 60) for c in range(4)]
        out = []
        for n, row in enumerate(rows):
            out.append("  ".join(cell[:60].ljust(w) for cell, w in zip(row, widths)).rstrip())
            if n == 0:
                out.append("  ".join("-" * w for w in widths))
        return "\n".join(out)


def _short_text(var: Variable) -> str:
    """A one-line formula for `var` (pprint when it works, else the variable's name)."""
    try:
        from workbench.core.printing import pprint

        text = pprint(var)
    except Exception:  # printing is best effort; the trace must still print
        text = str(var)
    return text if len(text) <= 60 else text[:57] + "..."


# -- the reverse pass ----------------------------------------------------------------------

_DISCONNECTED_CHOICES = ("raise", "warn", "ignore")
_RETURN_DISCONNECTED_CHOICES = ("zero", "none", "disconnected")
_NULL_CHOICES = ("raise", "return")


def _pattern(node: Apply) -> list[list[bool]]:
    pattern = node.op.connection_pattern(node)
    if (len(pattern) != len(node.inputs)
            or any(len(row) != len(node.outputs) for row in pattern)):
        raise TypeError(
            f"{node.op}.connection_pattern returned {pattern!r}: it needs one row per input "
            f"({len(node.inputs)}) of one bool per output ({len(node.outputs)})"
        )
    return [[bool(b) for b in row] for row in pattern]


def _check_output_grad(node: Apply, j: int, g: Variable) -> Variable:
    """Cast a float output's gradient to the output's dtype (float32 stays float32)."""
    if is_disconnected(g) or is_null(g):
        return g
    out_dtype = getattr(node.outputs[j].type, "dtype", None)
    g_dtype = getattr(g.type, "dtype", None)
    if out_dtype is not None and g_dtype is not None and out_dtype != g_dtype:
        d = dtypes.as_dtype(out_dtype)
        if d.is_float or d.is_complex:
            return _cast(g, d)
    return g


def _check_input_grad(node: Apply, i: int, g: Any) -> Variable:
    """Validate the term `node.op` returned for input i; cast/narrow it to fit the input."""
    op = node.op
    where = f"{op}.grad (Op {type(op).__name__}) for input {i} ({node.inputs[i]})"
    if g is None:
        raise TypeError(f"{where} returned None; return disconnected_type(), "
                        "grad_undefined(...) or grad_not_implemented(...) instead")
    if not isinstance(g, Variable):
        raise TypeError(f"{where} returned {type(g).__name__} {g!r}, not a Variable")
    if is_disconnected(g) or is_null(g):
        return g
    inp = node.inputs[i]
    in_ndim = getattr(inp.type, "ndim", None)
    g_ndim = getattr(g.type, "ndim", None)
    if in_ndim is not None and g_ndim != in_ndim:
        raise TypeError(f"{where} returned a gradient of type {g.type} (ndim {g_ndim}); the "
                        f"input has type {inp.type} (ndim {in_ndim})")
    g_dtype = getattr(g.type, "dtype", None)
    if g_dtype is not None:
        d = dtypes.as_dtype(g_dtype)
        if not (d.is_float or d.is_complex):
            raise TypeError(f"{where} returned a gradient of dtype {d}: gradients never carry "
                            "integer or bool dtypes (use float_zeros_like for a zero gradient)")
        in_dtype = getattr(inp.type, "dtype", None)
        want = grad_dtype(inp)
        if in_dtype is not None and d != want and not (d.is_complex and not want.is_complex):
            g = _cast(g, want)
    in_shape = getattr(inp.type, "shape", None)
    g_shape = getattr(g.type, "shape", None)
    if in_shape is not None and g_shape is not None:
        if any(a is not None and b is not None and a != b for a, b in zip(in_shape, g_shape)):
            raise TypeError(f"{where} returned a gradient of static shape {g_shape}; the input "
                            f"has static shape {in_shape}")
        if any(a is not None and b is None for a, b in zip(in_shape, g_shape)):
            from workbench.core.tensor.shape import specify_shape

            g = specify_shape(g, in_shape)
    return g


class _BackwardPass:
    """The state of one reverse pass: seeds, the nodes to visit, the gradient terms."""

    def __init__(self, seeds: Mapping[Variable, Variable], wrt: Sequence[Variable],
                 blocked: set[Variable], record: bool) -> None:
        self.seeds = dict(seeds)
        self.wrt = list(wrt)
        self.totals: dict[Variable, Variable] = {}
        # a seed is one more contribution: known_grads add to what flows from the cost
        self.terms: dict[Variable, list[Variable]] = {
            var: [g] for var, g in seeds.items() if not is_disconnected(g)}
        self.null_origin: dict[Variable, str] = {}
        self.trace: BackwardTrace | None = (
            BackwardTrace(seeds=dict(seeds), wrt=list(wrt)) if record else None)
        order = io_toposort(blocked, list(seeds))
        # forward sweep: which variables depend on a wrt (through connected input/output pairs)
        self.connected: set[Variable] = set(wrt)
        self.nodes: list[tuple[Apply, list[list[bool]]]] = []
        for node in order:
            ins = [v in self.connected for v in node.inputs]
            if not any(ins):
                continue
            pattern = _pattern(node)
            self.nodes.append((node, pattern))
            for j, out in enumerate(node.outputs):
                if any(c and row[j] for c, row in zip(ins, pattern)):
                    self.connected.add(out)

    def total(self, var: Variable) -> Variable:
        """The full gradient of `var` (valid once every client of `var` was visited)."""
        if var in self.totals:
            return self.totals[var]
        terms = self.terms.get(var, [])
        nulls = [t for t in terms if is_null(t)]
        if nulls:
            result = nulls[0]
        elif not terms:
            result = disconnected_type()
        elif len(terms) == 1:
            result = terms[0]
        else:
            result = _add_gradients(var, terms)
            if self.trace is not None:
                self.trace.accumulations.append(
                    Accumulation(var, list(terms), result, len(self.trace.steps)))
        self.totals[var] = result
        return result

    def run(self) -> None:
        for node, pattern in reversed(self.nodes):
            self.visit(node, pattern)

    def visit(self, node: Apply, pattern: list[list[bool]]) -> None:
        out_grads = [_check_output_grad(node, j, self.total(o))
                     for j, o in enumerate(node.outputs)]
        out_connected = [not is_disconnected(g) for g in out_grads]
        needed = [v in self.connected and any(r and c for r, c in zip(row, out_connected))
                  for v, row in zip(node.inputs, pattern)]
        if not any(needed):
            return
        nulls = [g for g in out_grads if is_null(g)]
        if nulls:
            # an undefined output gradient makes every input feeding that output undefined
            in_grads: list[Any] = []
            for row in pattern:
                hit = [g for g, r in zip(out_grads, row) if r and is_null(g)]
                in_grads.append(hit[0] if hit else disconnected_type())
        else:
            try:
                in_grads = node.op.L_op(list(node.inputs), list(node.outputs), out_grads)
            except MethodNotDefined as exc:
                why = f"{exc} is not defined (the Op needs a grad or L_op method)"
                in_grads = [grad_not_implemented(node.op, i, v, why)
                            for i, v in enumerate(node.inputs)]
            if not isinstance(in_grads, (list, tuple)) or len(in_grads) != len(node.inputs):
                raise TypeError(
                    f"{node.op}.grad (Op {type(node.op).__name__}) must return a list of "
                    f"{len(node.inputs)} gradients (one per input), got {in_grads!r}")
        recorded: list[Variable | None] = []
        for i, (inp, g) in enumerate(zip(node.inputs, in_grads)):
            if not needed[i]:
                recorded.append(None)
                continue
            g = _check_input_grad(node, i, g)
            recorded.append(g)
            if is_disconnected(g):
                continue
            if is_null(g) and g not in self.null_origin:
                self.null_origin[g] = f"{node.op} (Op {type(node.op).__name__}), input {i}"
            self.terms.setdefault(inp, []).append(g)
        if self.trace is not None:
            self.trace.steps.append(BackwardStep(node, out_grads, recorded))


def _as_seed(var: Any, g: Any, what: str) -> Variable:
    """The gradient `g` given for `var` in known_grads, as a Variable fitting `var`.

    Numbers become constants of `var`'s kind: tensors, scalars in `grad_dtype(var)`,
    and for other Types a constant of `var.type` (through its `filter`).
    """
    from workbench.core.scalar.basic import ScalarType, scalar_constant
    from workbench.core.tensor.type import TensorType
    from workbench.core.tensor.variable import as_tensor_variable

    if not isinstance(var, Variable):
        raise TypeError(f"{what}: the keys of known_grads must be Variables, got {var!r}")
    if is_disconnected(g) or is_null(g):
        return g
    if not isinstance(g, Variable):
        if isinstance(var.type, ScalarType):
            g = scalar_constant(g, dtype=grad_dtype(var))
        elif isinstance(var.type, TensorType):
            g = as_tensor_variable(g)
        else:
            try:
                g = var.type.make_constant(var.type.filter(g))
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{what}: the gradient {g!r} given for {var} in known_grads "
                                f"is not a value of its type {var.type}: {exc}") from exc
    v_ndim = getattr(var.type, "ndim", None)
    g_ndim = getattr(g.type, "ndim", None)
    if v_ndim is not None and g_ndim is not None and v_ndim != g_ndim:
        if g_ndim == 0:
            from workbench.core.tensor.reshape import broadcast_to
            from workbench.core.tensor.shape import shape

            return broadcast_to(g, shape(var))
        raise TypeError(f"{what}: the gradient given for {var} (type {var.type}) has type "
                        f"{g.type}; it needs ndim {v_ndim}")
    g_dtype = getattr(g.type, "dtype", None)
    if g_dtype is not None and dtypes.as_dtype(g_dtype) != grad_dtype(var) and not (
            dtypes.as_dtype(g_dtype).is_complex and not grad_dtype(var).is_complex):
        g = _cast(g, grad_dtype(var))  # never an integer seed; float32 stays float32
    return g


def grad(
    cost: Variable | None,
    wrt: Variable | Sequence[Variable],
    consider_constant: Sequence[Variable] | None = None,
    disconnected_inputs: str = "raise",
    known_grads: Mapping[Variable, Any] | None = None,
    return_disconnected: str = "zero",
    null_gradients: str = "raise",
    trace: bool = False,
) -> Any:
    """The symbolic gradient of the scalar `cost` with respect to `wrt` (a Variable or a list).

    `cost` is a 0-d tensor, a ScalarType variable, or a variable of any Type that
    defines the `grad_one` hook; variables of other Types used several times need
    their Type's `add_gradients` hook (see `workbench.core.graph.type.Type`).
    `consider_constant` variables block the gradient (treated as constants).
    `known_grads` maps variables to gradients that seed the pass (each is added
    to whatever reaches that variable from the cost or other seeds); `cost` may
    then be None. A `wrt` the cost does not depend on
    raises `DisconnectedInputError` (`disconnected_inputs="warn"` or "ignore"
    instead), and is then returned as zeros, None or a DisconnectedType variable
    (`return_disconnected` "zero", "none", "disconnected"). An undefined gradient
    reaching a `wrt` raises `NullTypeGradError` (`null_gradients="return"` returns
    the NullType variable). With `trace=True` returns ``(grads, BackwardTrace)``.
    """
    if disconnected_inputs not in _DISCONNECTED_CHOICES:
        raise ValueError(f"disconnected_inputs must be one of {_DISCONNECTED_CHOICES}, "
                         f"got {disconnected_inputs!r}")
    if return_disconnected not in _RETURN_DISCONNECTED_CHOICES:
        raise ValueError(f"return_disconnected must be one of {_RETURN_DISCONNECTED_CHOICES}, "
                         f"got {return_disconnected!r}")
    if null_gradients not in _NULL_CHOICES:
        raise ValueError(f"null_gradients must be one of {_NULL_CHOICES}, "
                         f"got {null_gradients!r}")
    single = isinstance(wrt, Variable)
    wrt_list = [wrt] if single else list(wrt)  # type: ignore[arg-type]
    for k, v in enumerate(wrt_list):
        if not isinstance(v, Variable):
            raise TypeError(f"grad: wrt[{k}] is {type(v).__name__} {v!r}, not a Variable; "
                            "differentiate with respect to symbolic variables")

    seeds: dict[Variable, Variable] = {}
    for var, g in (known_grads or {}).items():
        seeds[var] = _as_seed(var, g, "grad")
    if cost is None:
        if not seeds:
            raise ValueError("grad needs a cost, or known_grads when cost is None")
    else:
        if not isinstance(cost, Variable):
            raise TypeError(f"grad: the cost must be a Variable, got {type(cost).__name__}")
        if cost not in seeds:
            ndim = getattr(cost.type, "ndim", None)
            if ndim is not None and ndim != 0:
                raise TypeError(
                    f"grad: the cost must be a scalar (0-d) variable, but {cost} has type "
                    f"{cost.type}; reduce it first (e.g. cost.sum()) or pass known_grads")
            seeds[cost] = _grad_one(cost)

    blocked = set(consider_constant or ())
    for v in blocked:
        if not isinstance(v, Variable):
            raise TypeError(f"grad: consider_constant holds {v!r}, not a Variable")
    bp = _BackwardPass(seeds, wrt_list, blocked, trace)
    bp.run()

    results: list[Any] = []
    for k, v in enumerate(wrt_list):
        g = bp.total(v)
        if is_null(g):
            if null_gradients == "raise":
                origin = bp.null_origin.get(g)
                raise NullTypeGradError(
                    f"grad: the gradient with respect to {v} (wrt[{k}]) is undefined"
                    + (f", first at {origin}" if origin else "") + f": {g.type.why_null}")
            results.append(g)
            continue
        if is_disconnected(g):
            message = (f"grad: the cost does not depend on {v} (wrt[{k}], type {v.type}); "
                       "pass disconnected_inputs='ignore' or 'warn' if that is expected")
            if disconnected_inputs == "raise":
                raise DisconnectedInputError(message)
            if disconnected_inputs == "warn":
                warnings.warn(message, stacklevel=2)
            if return_disconnected == "zero":
                g = float_zeros_like(v)
            elif return_disconnected == "none":
                g = None
        results.append(g)

    out: Any = results[0] if single else results
    if trace:
        assert bp.trace is not None
        bp.trace.grads = results
        return out, bp.trace
    return out
