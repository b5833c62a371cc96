"""DEBUG mode's checkers: rewrites and Op implementations checked numerically.

They live in the link layer: the DEBUG linker (link/c/debug.py) runs `NodeChecker`
on every node and compile's DEBUG mode runs `StepChecker` after every rewrite step.

Rewrites: every rewrite step is checked by evaluating the graph before and after it.

The graph's inputs get random values of their types (unknown dimensions become
2 or 3); after each step the rewritten graph is evaluated on the same values
and compared with the previous step's values through `values_eq_approx`. The
first step that changes a value raises `RewriteCheckError` naming the rewrite,
its source and both values. Values are compared with the tolerance of the least
precise dtype the output is computed in, not only the output's own: a float16
product cast to float64 may legally change by a float16 rounding when a rewrite
reorders it (`arithmetic_tolerance`).

Ops: `NodeChecker` runs one node through each of its implementations (`perform`,
C, ...) and checks them against each other and against the Op's declarations;
the DEBUG linker (workbench/core/link/c/debug.py) uses it on every node.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import ancestors
from workbench.core.graph.fg import FunctionGraph
from workbench.core.rewrite.db import CHANGES_DRAWS

__all__ = [
    "BadDestroyMapError", "BadImplementationError", "BadViewMapError", "DebugModeError",
    "Implementation", "InvalidOutputError", "NodeChecker", "RewriteCheckError",
    "StaleOutputError", "StepChecker", "first_difference", "layout_copy", "node_label",
    "op_says_outputs_agree",
    "arithmetic_tolerance", "random_value", "short_value",
]  # fmt: skip


class DebugModeError(AssertionError):
    """A check of DEBUG mode failed; `node` is the offending Apply node."""

    def __init__(self, message: str, node: Any = None) -> None:
        super().__init__(message)
        self.node = node


class RewriteCheckError(DebugModeError):
    """A rewrite step changed the values the graph computes."""


def random_value(var_type: Any, rng: np.random.Generator, unknown: tuple[int, ...] = (2, 3)
                 ) -> Any:
    """A random value of a TensorType: values in (0.1, 1) for floats, 1..4 for ints."""
    from workbench.core.tensor.type import TensorType

    own = getattr(var_type, "random_value", None)  # a Type may say how (a generator state)
    if own is not None:
        return own(rng)
    if not isinstance(var_type, TensorType):
        raise TypeError(f"DEBUG mode cannot make random values of type {var_type}")
    shape = tuple(s if s is not None else unknown[axis % len(unknown)]
                  for axis, s in enumerate(var_type.shape))
    dtype = np.dtype(var_type.dtype)
    if dtype.kind == "b":
        value = rng.random(shape) > 0.5
    elif dtype.kind in "iu":
        value = rng.integers(1, 5, size=shape)
    elif dtype.kind == "c":
        value = rng.uniform(0.1, 1.0, shape) + 1j * rng.uniform(0.1, 1.0, shape)
    else:
        value = rng.uniform(0.1, 1.0, shape)
    return var_type.filter(np.asarray(value).astype(dtype), strict=False)


def arithmetic_tolerance(variables: Any) -> tuple[float, float] | None:
    """(rtol, atol) of the least precise float or complex dtype among `variables`
    (the arithmetic that produced a value), or None if there is none.

    A rewrite may legally change where a float16 computation rounds (``(x*a)*b``
    to ``x*(a*b)``); the output, perhaps cast to float64, then differs by a
    float16 rounding, which the output's own tolerance would reject.
    """
    from workbench.core.scalar.basic import TOLERANCES

    loosest: tuple[float, float] | None = None
    for var in variables:
        dtype = getattr(var.type, "dtype", None)
        if dtype is not None:
            loosest = _looser(loosest, TOLERANCES.get(str(dtype)))
    return loosest


def _values_agree(var: Any, a: Any, b: Any, tolerance: tuple[float, float] | None) -> bool:
    """`var.type.values_eq_approx(a, b)`, loosened to `tolerance` where that is looser
    than the tolerance of var's own dtype."""
    from workbench.core.scalar.basic import TOLERANCES

    own = TOLERANCES.get(str(getattr(var.type, "dtype", None)))
    if tolerance is None or own is None or tolerance[0] <= own[0]:
        return bool(var.type.values_eq_approx(a, b))
    return bool(var.type.values_eq_approx(a, b, rtol=tolerance[0], atol=tolerance[1]))


def op_says_outputs_agree(node: Any, expected: Sequence[Any], got: Sequence[Any]) -> bool:
    """True when `node`'s Op judges two runs' outputs the same result
    (`Op.outputs_agree`); False sends the caller to compare output by output."""
    try:
        return bool(node.op.outputs_agree(node, expected, got))
    except Exception:
        return False


def _looser(a: tuple[float, float] | None, b: tuple[float, float] | None
            ) -> tuple[float, float] | None:
    if a is None or b is None:
        return a if b is None else b
    return a if a[0] >= b[0] else b


def _evaluate(fgraph: FunctionGraph, values: list[Any]) -> list[Any]:
    """The outputs of `fgraph` on copies of `values`, computed node by node in the graph's
    own order (which honours the DestroyHandler's orderings for inplace Ops)."""
    import copy

    from workbench.core.graph.basic import Constant

    storage: dict[Any, Any] = {}
    for var, value in zip(fgraph.inputs, values):
        if isinstance(value, np.ndarray):
            value = np.copy(value)
        elif isinstance(value, np.random.Generator):  # a draw may advance it in place
            value = copy.deepcopy(value)
        storage[var] = value
    for node in fgraph.toposort():
        args = [v.data if isinstance(v, Constant) else storage[v] for v in node.inputs]
        cells: list[list[Any]] = [[None] for _ in node.outputs]
        node.op.perform(node, args, cells)
        for var, cell in zip(node.outputs, cells):
            storage[var] = cell[0]
    result = []
    for out in fgraph.outputs:
        value = out.data if isinstance(out, Constant) else storage[out]
        result.append(np.copy(value) if isinstance(value, np.ndarray) else value)
    return result


def _described(value: Any) -> str:
    return f"shape {np.shape(value)} {getattr(value, 'dtype', type(value).__name__)}"


class StepChecker:
    """A RewriteTrace step hook comparing the graph's values before and after each step."""

    def __init__(self, fgraph: FunctionGraph, seed: int = 0) -> None:
        self.inputs: list[Any] | None = None
        self.reference: list[Any] | None = None
        self.tolerances: list[tuple[float, float] | None] = []
        self.disabled_reason: str | None = None
        rng = np.random.default_rng(seed)
        for unknown in ((2, 3), (3, 3)):
            try:
                self.use_inputs(fgraph, [random_value(v.type, rng, unknown)
                                         for v in fgraph.inputs])
                break
            except Exception as exc:  # no valid random inputs: this graph is not checked
                self.disabled_reason = f"{type(exc).__name__}: {exc}"
        if self.inputs is not None:
            self.disabled_reason = None
        else:
            warnings.warn(f"DEBUG mode cannot check the rewrites of this graph: no random "
                          f"inputs could evaluate it ({self.disabled_reason})", UserWarning,
                          stacklevel=4)
        self.checked = 0

    def use_inputs(self, fgraph: FunctionGraph, values: list[Any]) -> None:
        """Check on `values`: evaluate `fgraph` on them as the reference (raises what the
        evaluation raises) and take each output's tolerance from its arithmetic."""
        self.reference = _evaluate(fgraph, values)
        self.inputs = values
        self.tolerances = [arithmetic_tolerance(ancestors([out])) for out in fgraph.outputs]
        self.disabled_reason = None

    def __call__(self, trace: Any, step: Any, fgraph: FunctionGraph) -> None:
        if self.inputs is None or self.reference is None or not step.changed:
            return
        try:
            values = _evaluate(fgraph, self.inputs)
        except Exception as exc:
            raise RewriteCheckError(
                f"after step {step.index} ({step.rewrite}, defined at {step.source}) the graph "
                f"can no longer be evaluated: {type(exc).__name__}: {exc}") from exc
        if CHANGES_DRAWS in step.tags:  # other numbers by design: the same shapes and dtypes
            for k, (out, before, after) in enumerate(zip(fgraph.outputs, self.reference,
                                                         values)):
                if np.shape(before) != np.shape(after) or \
                        getattr(before, "dtype", None) != getattr(after, "dtype", None):
                    raise RewriteCheckError(
                        f"rewrite {step.rewrite!r} (step {step.index}) changed the shape or "
                        f"dtype of output {k} ({out}): {_described(before)} -> "
                        f"{_described(after)}")
            self.reference = values
            return
        for k, (out, before, after) in enumerate(zip(fgraph.outputs, self.reference, values)):
            # the arithmetic before the step counts too (a step may remove it)
            tolerance = _looser(self.tolerances[k], arithmetic_tolerance(ancestors([out])))
            self.tolerances[k] = tolerance
            if not _values_agree(out, before, after, tolerance):
                raise RewriteCheckError(
                    f"rewrite {step.rewrite!r} (step {step.index}, pass {step.pass_}, defined "
                    f"at {step.source}) changed output {k} ({out}):\n  before: {before!r}\n"
                    f"  after:  {after!r}")
        self.reference = values
        self.checked += 1


# --------------------------------------------------------------------------- node checks
#
# The DEBUG linker (workbench/core/link/c/debug.py) runs every node through each of its
# implementations (`perform`, and its C code when it has some) on private copies of the
# inputs, and checks what a buggy Op gets wrong without anybody noticing in a normal run:
# different values between implementations, inputs changed without a destroy_map entry,
# outputs aliasing inputs without a view_map entry, values of the wrong Type, and results
# that depend on what the output storage held before the call. The checks below know
# nothing about C: an implementation is a name and a runner.


class BadImplementationError(DebugModeError):
    """Two implementations of a node (e.g. `perform` and C) computed different values."""


class BadDestroyMapError(DebugModeError):
    """An implementation modified an input its Op does not declare in `destroy_map`."""


class BadViewMapError(DebugModeError):
    """An output shares memory with an input not declared in `view_map`/`destroy_map`."""


class StaleOutputError(DebugModeError):
    """An implementation's result depends on the storage its output held before the call."""


class InvalidOutputError(DebugModeError):
    """An implementation returned a value that is not a valid value of the output Type."""


#: Runs one implementation: `runner(inputs, output_cells)` fills the one-element lists.
Runner = Any


class Implementation:
    """One way of computing a node (`name` such as "perform" or "c", and its runner)."""

    __slots__ = ("name", "run")

    def __init__(self, name: str, run: Runner) -> None:
        self.name = name
        self.run = run

    def __repr__(self) -> str:
        return f"Implementation({self.name!r})"


def short_value(value: Any, limit: int = 600) -> str:
    """A readable, bounded text of a runtime value for error messages."""
    if isinstance(value, np.ndarray):
        body = np.array2string(value, threshold=40, edgeitems=3, max_line_width=100)
        text = f"array(shape={value.shape}, dtype={value.dtype}) {body}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def first_difference(a: Any, b: Any) -> str:
    """Where two arrays first differ (index and both elements), or '' if not arrays."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
        return ""
    if a.size == 0:
        return ""
    with np.errstate(invalid="ignore"):
        same = a == b
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            same = same | (np.isnan(a) & np.isnan(b))
    bad = np.argwhere(~np.asarray(same))
    if bad.size == 0:
        return ""
    index = tuple(int(i) for i in bad[0])
    return (f" ({len(bad)} of {a.size} elements differ; first at index {index}: "
            f"{_item(a[index])!r} vs {_item(b[index])!r})")


def _item(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def node_label(node: Any) -> str:
    """`node` with its Op class and the user's line that created it."""
    source = node.outputs[0].tag.source if node.outputs else None
    where = f", created at {source}" if source is not None else ""
    op = node.op
    return f"{node} (Op {op}, class {type(op).__module__}.{type(op).__qualname__}{where})"


def _garbage_like(ref: np.ndarray, layout: str) -> np.ndarray:
    """Storage filled with garbage: same dtype, shape (or one longer per dimension for
    'wrong_shape'), C or Fortran order. Floats hold NaN, integers an odd large value."""
    shape = ref.shape
    if layout == "wrong_shape":
        shape = tuple(n + 1 for n in shape)
    out = np.empty(shape, dtype=ref.dtype, order="F" if layout == "fortran" else "C")
    if out.dtype.kind in "fc":
        out.fill(np.nan)
    elif out.dtype.kind == "b":
        out.fill(True)
    elif out.dtype.kind in "iu":
        out.fill(np.iinfo(out.dtype).max // 3 + 7)  # an arbitrary mid-range value
    return out


def _layouts(ref: Any) -> list[str]:
    if not isinstance(ref, np.ndarray) or ref.dtype.kind not in "biufc":
        return []
    layouts = ["c_order"]
    if ref.ndim > 1:
        layouts.append("fortran")
    if ref.ndim > 0:
        layouts.append("wrong_shape")
    return layouts


def layout_copy(value: Any) -> Any:
    """A copy of `value` sharing no memory with it; an ndarray keeps its exact strides
    (negative, Fortran, gaps, zero) and writeable flag, so an implementation sees the
    same layout as in the real run."""
    from workbench.core.link.vm import copy_value

    if not isinstance(value, np.ndarray):
        return copy_value(value)
    if value.size == 0 or value.ndim == 0 or value.dtype.hasobject:
        out = value.copy(order="K")
    else:
        item = value.itemsize
        if any(s % item for s in value.strides) or not value.flags.aligned:
            out = value.copy(order="K")
        else:
            low = sum((n - 1) * s for n, s in zip(value.shape, value.strides) if s < 0)
            high = sum((n - 1) * s for n, s in zip(value.shape, value.strides) if s > 0)
            buffer = np.empty((high - low) // item + 1, dtype=value.dtype)
            out = np.ndarray(value.shape, value.dtype, buffer=buffer, offset=-low,
                             strides=value.strides)
            np.copyto(out, value)
    if not value.flags.writeable:
        out.flags.writeable = False
    return out


class NodeChecker:
    """The DEBUG-mode checks of one node over its implementations.

    `check(inputs)` runs each implementation on private copies of `inputs` with
    empty output storage, then again with garbage-filled pre-allocated storage,
    and returns the reference outputs (the first implementation's). It raises a
    DebugModeError subclass naming the node, the implementation and both values
    at the first problem. An implementation raising an exception is a problem only
    if another one does not raise (then the reference's exception propagates).
    `prealloc=False` skips the re-runs on pre-allocated storage.
    """

    def __init__(self, node: Any, implementations: list[Implementation],
                 prealloc: bool = True) -> None:
        if not implementations:
            raise ValueError(f"NodeChecker of {node}: no implementation to run")
        self.node = node
        self.implementations = implementations
        self.prealloc = prealloc
        self.runs = 0

    # -- one run ----------------------------------------------------------------------
    def _run(self, impl: Implementation, inputs: list[Any], cells: list[list[Any]]
             ) -> tuple[list[Any], list[Any]]:
        """(arguments after the run, outputs) of one run on copies of `inputs`."""
        args = [layout_copy(v) for v in inputs]
        impl.run(args, cells)
        self.runs += 1
        outs = [cell[0] for cell in cells]
        return args, outs

    def _fail(self, cls: type, what: str) -> DebugModeError:
        return cls(f"DEBUG mode: node {node_label(self.node)}: {what}", self.node)

    def _check_run(self, impl: Implementation, inputs: list[Any], args: list[Any],
                   outs: list[Any]) -> None:
        node = self.node
        destroyed = {i for ins in node.op.destroy_map.values() for i in ins}
        for i, (var, before, after) in enumerate(zip(node.inputs, inputs, args)):
            if i in destroyed:
                continue
            try:
                same = var.type.values_eq(before, after)
            except Exception:
                same = True
            if not same:
                raise self._fail(BadDestroyMapError, (
                    f"{impl.name} modified input {i} ({var.type}) although the Op's "
                    f"destroy_map {dict(node.op.destroy_map)} does not declare it"
                    f"{first_difference(before, after)}\n  before: {short_value(before)}\n"
                    f"  after:  {short_value(after)}"))
        for j, (var, value) in enumerate(zip(node.outputs, outs)):
            if value is None:
                raise self._fail(InvalidOutputError, f"{impl.name} left output {j} empty")
            if not var.type.is_valid_value(value, strict=True):
                raise self._fail(InvalidOutputError, (
                    f"{impl.name} returned an invalid value for output {j} ({var.type}): "
                    f"{var.type.value_validity_msg(value)}\n  value: {short_value(value)}"))
            allowed = set(node.op.view_map.get(j, ())) | set(node.op.destroy_map.get(j, ()))
            for i, (in_var, arg) in enumerate(zip(node.inputs, args)):
                if i in allowed:
                    continue
                if _shares_memory(var.type, value, arg):
                    raise self._fail(BadViewMapError, (
                        f"{impl.name}'s output {j} shares memory with input {i} ({in_var}) "
                        f"but the Op declares view_map {dict(node.op.view_map)} and "
                        f"destroy_map {dict(node.op.destroy_map)}"))

    def _compare(self, cls: type, ref_name: str, ref: list[Any], name: str, got: list[Any],
                 context: str = "") -> None:
        if op_says_outputs_agree(self.node, ref, got):
            return
        for j, (var, a, b) in enumerate(zip(self.node.outputs, ref, got)):
            try:
                ok = var.type.values_eq_approx(a, b)
            except Exception:
                ok = False
            if not ok:
                raise self._fail(cls, (
                    f"output {j} ({var.type}) of {name}{context} differs from {ref_name}"
                    f"{first_difference(a, b)}\n  {ref_name}: {short_value(a)}\n"
                    f"  {name}: {short_value(b)}"))

    # -- all runs ---------------------------------------------------------------------
    def check(self, inputs: list[Any]) -> list[Any]:
        node = self.node
        n_out = len(node.outputs)
        ref: list[Any] | None = None
        ref_name = ""
        ref_error: BaseException | None = None
        for impl in self.implementations:
            cells: list[list[Any]] = [[None] for _ in range(n_out)]
            try:
                args, outs = self._run(impl, inputs, cells)
            except Exception as exc:
                if ref is not None:
                    raise self._fail(BadImplementationError, (
                        f"{impl.name} raised {type(exc).__name__}: {exc}\n  where {ref_name} "
                        f"computed: " + "; ".join(short_value(v) for v in ref))) from exc
                if ref_error is None:
                    ref_error, ref_name = exc, impl.name
                continue
            if ref_error is not None:
                raise self._fail(BadImplementationError, (
                    f"{ref_name} raised {type(ref_error).__name__}: {ref_error}\n  where "
                    f"{impl.name} computed: " + "; ".join(short_value(v) for v in outs))
                ) from ref_error
            self._check_run(impl, inputs, args, outs)
            if ref is None:
                ref, ref_name = outs, impl.name
            else:
                self._compare(BadImplementationError, ref_name, ref, impl.name, outs)
        if ref_error is not None:
            raise ref_error
        assert ref is not None
        if self.prealloc:
            self._check_prealloc(inputs, ref, ref_name)
        return ref

    def _check_prealloc(self, inputs: list[Any], ref: list[Any], ref_name: str) -> None:
        layouts = [_layouts(value) for value in ref]
        for layout in ("c_order", "fortran", "wrong_shape"):
            if not any(layout in ls for ls in layouts):
                continue
            for impl in self.implementations:
                # The storage must be referenced by its cell only: the C runtime reuses
                # a previous output only when nobody else can see it change.
                cells = [[_garbage_like(value, layout) if layout in ls else None]
                         for value, ls in zip(ref, layouts)]
                try:
                    args, outs = self._run(impl, inputs, cells)
                except Exception as exc:
                    raise self._fail(StaleOutputError, (
                        f"{impl.name} raised {type(exc).__name__} when its output storage "
                        f"held a pre-allocated {layout} array: {exc}")) from exc
                self._check_run(impl, inputs, args, outs)
                self._compare(StaleOutputError, ref_name, ref, impl.name, outs,
                              f" with pre-allocated {layout} output storage full of garbage "
                              "(the result depends on what the storage held)")


def _shares_memory(var_type: Any, a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.size == 0 or b.size == 0:
            return False
        return bool(np.may_share_memory(a, b))
    try:
        return bool(var_type.may_share_memory(a, b))
    except Exception:
        return False
