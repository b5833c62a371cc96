"""Seeded random graphs with NumPy references: the generator of the differential tests
(every linker against the Python VM and NumPy) and of the fusion property test.

A `RandomGraph` is a small program: typed inputs with sample values, and `Step`s that
each apply an `Operation` of a menu to earlier values (any earlier value, so values are
shared and the graph is a DAG, not a tree). It builds a fresh workbench graph
(`symbolic`) and computes the same program with NumPy (`reference`), so finite
differences of the reference check gradients.

Two menus:

* `SMOOTH`: float64 values through elementwise math, reductions, the softmax
  family, dot, indexing, joins and the patterns the stabilize rewrites look for. A step
  is only taken where its arguments' sample values lie safely inside its domain and
  away from its kinks (log of values > 0.05, max of a row whose top two differ, ...),
  so every graph is finite and differentiable at its sample point: values and
  gradients both have a reference.
* `DTYPE`: elementwise graphs over every bool, integer and float dtype, with the
  corners where C and NumPy part ways (NaN, infinities, -0.0, integer extremes,
  division by zero, casts out of range). No NumPy reference: the Python VM is the
  reference and the linkers must agree with it, errors included.

Choices come from a `Chooser`: `RngChooser` (a seeded NumPy Generator) for the
differential tests, `DrawChooser` (Hypothesis's data) for property tests, whose
failures then shrink to small graphs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

__all__ = [
    "DTYPE", "SMOOTH", "Chooser", "DrawChooser", "Menu", "Operation", "RandomGraph",
    "RngChooser", "Step", "arrays_agree", "generate", "numeric_gradient",
]  # fmt: skip


class Chooser(Protocol):
    """The source of a generator's decisions."""

    def integer(self, low: int, high: int) -> int:
        """An integer in [low, high] (both included)."""
        ...


class RngChooser:
    """Decisions from a NumPy Generator seeded with `seed`."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def integer(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high, endpoint=True))


class DrawChooser:
    """Decisions drawn from Hypothesis's `data` (``@given(st.data())``): they shrink."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data = data
        self._integers = st.integers

    def integer(self, low: int, high: int) -> int:
        return int(self.data.draw(self._integers(low, high)))


def _pick(chooser: Chooser, items: Sequence[Any]) -> Any:
    return items[chooser.integer(0, len(items) - 1)]


def _chance(chooser: Chooser, percent: int) -> bool:
    return chooser.integer(0, 99) < percent


# -- operations -----------------------------------------------------------------------

Values = list[np.ndarray]
Shapes = list[tuple[int, ...]]


@dataclass(frozen=True)
class Operation:
    """One kind of step: how to build it, what NumPy says it computes, where it applies.

    `build(args, param)` makes the workbench Variable; `reference(args, param)` the
    NumPy value (None in a menu without references). `accepts(args, param)` says
    whether sample values lie where the step is finite and smooth (None: anywhere);
    `param(chooser, shapes)` draws a parameter (an axis, a constant) or returns
    `NotImplemented` when arguments of these shapes admit none. `shape(shapes, param)`
    gives the result's shape where there is no reference value to read it from; None
    means elementwise (the broadcast shape), which is also checked before the step is
    taken.
    """

    name: str
    arity: int
    build: Callable[[list[Any], Any], Any]
    reference: Callable[[Values, Any], Any] | None = None
    accepts: Callable[[Values, Any], bool] | None = None
    param: Callable[[Chooser, Shapes], Any] | None = None
    shape: Callable[[Shapes, Any], tuple[int, ...]] | None = None
    elementwise: bool = True


def _wt() -> Any:
    import workbench.core.tensor as wt  # late: the core's own modules import workbench.testing

    return wt


def _all(cond: Any) -> bool:
    return bool(np.all(cond))


def _unary(name: str, ref: Callable[[np.ndarray], Any],
           accepts: Callable[[np.ndarray], bool] | None = None) -> Operation:
    return Operation(name, 1, lambda a, p: getattr(_wt(), name)(a[0]), lambda a, p: ref(a[0]),
                     None if accepts is None else (lambda a, p: accepts(a[0])))


def _binary(name: str, ref: Callable[[np.ndarray, np.ndarray], Any],
            accepts: Callable[[np.ndarray, np.ndarray], bool] | None = None) -> Operation:
    return Operation(name, 2, lambda a, p: getattr(_wt(), name)(a[0], a[1]),
                     lambda a, p: ref(a[0], a[1]),
                     None if accepts is None else (lambda a, p: accepts(a[0], a[1])))


def _bounded(limit: float) -> Callable[[np.ndarray], bool]:
    return lambda v: _all(np.abs(v) < limit)


def _away(a: np.ndarray, b: np.ndarray) -> bool:
    """Far enough apart that finite differences do not cross the kink of max/min."""
    return _all(np.abs(a - b) > 1e-3)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(0.5 * v))  # no overflow warning for large -v


def _softmax(v: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _logsumexp(v: np.ndarray, axis: int | None, keepdims: bool) -> np.ndarray:
    m = v.max(axis=axis, keepdims=True)
    out = np.log(np.exp(v - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _axis_param(chooser: Chooser, shapes: Shapes) -> Any:
    """(axis or None, keepdims) for a reduction of the first argument."""
    ndim = len(shapes[0])
    if ndim == 0:
        return NotImplemented
    axis = chooser.integer(-1, ndim - 1)
    return (None if axis == -1 else axis, _chance(chooser, 30))


def _long_axis_param(chooser: Chooser, shapes: Shapes) -> Any:
    """An axis of the first argument of length > 1 (a softmax over one value is 1)."""
    axes = [k for k, n in enumerate(shapes[0]) if n > 1]
    return _pick(chooser, axes) if axes else NotImplemented


def _unique_extremum(v: np.ndarray, axis: int | None) -> bool:
    """The largest and the smallest value along `axis` are each well ahead of the
    next, so the gradient of max/min is defined and finite differences agree."""
    rows = v.reshape(1, -1) if axis is None else np.moveaxis(v, axis, -1)
    if rows.shape[-1] < 2:
        return True
    ordered = np.sort(rows, axis=-1)
    return _all(ordered[..., -1] - ordered[..., -2] > 1e-3) and \
        _all(ordered[..., 1] - ordered[..., 0] > 1e-3)


def _reduction(name: str, ref: Callable[..., Any],
               accepts: Callable[[np.ndarray, Any], bool] | None = None) -> Operation:
    return Operation(
        name, 1, lambda a, p: getattr(_wt(), name)(a[0], axis=p[0], keepdims=p[1]),
        lambda a, p: ref(a[0], axis=p[0], keepdims=p[1]),
        None if accepts is None else (lambda a, p: accepts(a[0], p)), _axis_param,
        elementwise=False)


def _dot_accepts(a: Values, p: Any) -> bool:
    x, y = a
    if not (1 <= x.ndim <= 2 and 1 <= y.ndim <= 2) or x.shape[-1] != y.shape[0]:
        return False
    return _all(np.abs(np.dot(x, y)) < 1e6)


def _index_param(chooser: Chooser, shapes: Shapes) -> Any:
    shape = shapes[0]
    if not shape or shape[0] < 2:
        return NotImplemented
    return _pick(chooser, ["tail", "reverse", "first", "take"])


def _index(v: Any, how: str) -> Any:
    if how == "tail":
        return v[1:]
    if how == "reverse":
        return v[::-1]
    if how == "first":
        return v[0]
    return v[[1, 0, 1]]  # an advanced index with a repeat: its gradient accumulates


def _join_param(chooser: Chooser, shapes: Shapes) -> Any:
    a, b = shapes
    if len(a) != len(b) or not a:
        return NotImplemented
    axes = [k for k in range(len(a)) if all(a[j] == b[j] for j in range(len(a)) if j != k)]
    return _pick(chooser, axes) if axes else NotImplemented


def _constant_param(chooser: Chooser, shapes: Shapes) -> Any:
    return _pick(chooser, [0.5, 2.0, -1.5, 3.0, 1.0, -1.0, 0.0])


def _inc_param(chooser: Chooser, shapes: Shapes) -> Any:
    a, b = shapes
    if not a or a[0] < 2 or _broadcast_shape([a[1:], b]) != a[1:]:
        return NotImplemented
    return _pick(chooser, ["set", "inc"])


def _inc_reference(a: Values, how: str) -> np.ndarray:
    out = a[0].copy()
    if how == "set":
        out[1] = a[1]
    else:
        out[1] += a[1]
    return out


def _inc_build(a: list[Any], how: str) -> Any:
    wt = _wt()
    return wt.set_subtensor(a[0][1], a[1]) if how == "set" else wt.inc_subtensor(a[0][1], a[1])


def _structural(name: str, arity: int, build: Callable[[list[Any], Any], Any],
                reference: Callable[[Values, Any], Any],
                accepts: Callable[[Values, Any], bool] | None = None,
                param: Callable[[Chooser, Shapes], Any] | None = None) -> Operation:
    return Operation(name, arity, build, reference, accepts, param, elementwise=False)


SMOOTH_MENU: tuple[Operation, ...] = (
    _unary("neg", np.negative),
    _unary("exp", np.exp, _bounded(20)),
    _unary("log", np.log, lambda v: _all(v > 0.05)),
    _unary("log1p", np.log1p, lambda v: _all(v > -0.9)),
    _unary("expm1", np.expm1, _bounded(20)),
    _unary("sqrt", np.sqrt, lambda v: _all(v > 0.05)),
    _unary("sqr", np.square, _bounded(1e3)),
    _unary("tanh", np.tanh),
    _unary("sigmoid", _sigmoid),
    _unary("softplus", lambda v: np.logaddexp(0, v)),
    _unary("sin", np.sin, _bounded(1e3)),
    _unary("abs", np.abs, lambda v: _all(np.abs(v) > 1e-3)),
    _unary("reciprocal", np.reciprocal, lambda v: _all(np.abs(v) > 0.1)),
    _unary("erf", np.vectorize(math.erf, otypes=[float])),
    _unary("arctan", np.arctan),
    _binary("add", np.add),
    _binary("sub", np.subtract),
    _binary("mul", np.multiply),
    _binary("true_div", np.divide, lambda a, b: _all(np.abs(b) > 0.1)),
    _binary("maximum", np.maximum, _away),
    _binary("minimum", np.minimum, _away),
    _binary("pow", np.power, lambda a, b: _all(a > 0.1) and _all(np.abs(b) < 3)),
    Operation("switch", 3, lambda a, p: _wt().switch(a[0] > 0, a[1], a[2]),
              lambda a, p: np.where(a[0] > 0, a[1], a[2]),
              lambda a, p: _all(np.abs(a[0]) > 1e-3)),
    # the patterns the canonicalize and stabilize rewrites look for
    Operation("log1p_exp", 1, lambda a, p: _wt().log(1 + _wt().exp(a[0])),
              lambda a, p: np.logaddexp(0, a[0]), lambda a, p: _all(a[0] < 30)),
    Operation("log_sigmoid", 1, lambda a, p: _wt().log(_wt().sigmoid(a[0])),
              lambda a, p: -np.logaddexp(0, -a[0])),
    Operation("one_minus_sigmoid", 1, lambda a, p: 1 - _wt().sigmoid(a[0]),
              lambda a, p: _sigmoid(-a[0])),
    Operation("logistic", 1, lambda a, p: 1 / (1 + _wt().exp(-a[0])),
              lambda a, p: _sigmoid(a[0]), lambda a, p: _all(a[0] > -30)),
    Operation("log_add_exp", 2, lambda a, p: _wt().log(_wt().exp(a[0]) + _wt().exp(a[1])),
              lambda a, p: np.logaddexp(a[0], a[1]),
              lambda a, p: _all(np.abs(a[0]) < 30) and _all(np.abs(a[1]) < 30)),
    Operation("log1m_sigmoid", 1, lambda a, p: _wt().log1p(-_wt().sigmoid(a[0])),
              lambda a, p: -np.logaddexp(0, a[0])),
    Operation("sqrt_sqr", 1, lambda a, p: _wt().sqrt(_wt().sqr(a[0])), lambda a, p: np.abs(a[0]),
              lambda a, p: _all(np.abs(a[0]) > 1e-3)),
    Operation("log1p_expm1", 1, lambda a, p: _wt().log1p(_wt().expm1(a[0])),
              lambda a, p: a[0], lambda a, p: _all(np.abs(a[0]) < 30)),
    Operation("scale", 1, lambda a, p: a[0] * p, lambda a, p: a[0] * p, None, _constant_param),
    Operation("shift", 1, lambda a, p: a[0] + p, lambda a, p: a[0] + p, None, _constant_param),
    Operation("power_int", 1, lambda a, p: a[0] ** p, lambda a, p: a[0] ** float(p),
              lambda a, p: _all(np.abs(a[0]) < 100) and (p > 0 or _all(np.abs(a[0]) > 0.1)),
              lambda c, s: _pick(c, [2, 3, -1])),
    # reductions and the softmax family
    _reduction("sum", np.sum),
    _reduction("mean", np.mean),
    _reduction("prod", np.prod, lambda v, p: _all(np.abs(v) < 4)),
    _reduction("max", np.max, lambda v, p: _unique_extremum(v, p[0])),
    _reduction("min", np.min, lambda v, p: _unique_extremum(v, p[0])),
    _reduction("std", np.std, lambda v, p: _all(np.std(v, axis=p[0]) > 1e-2)),
    _structural("logsumexp", 1, lambda a, p: _wt().logsumexp(a[0], axis=p[0], keepdims=p[1]),
                lambda a, p: _logsumexp(a[0], p[0], p[1]), None, _axis_param),
    _structural("softmax", 1, lambda a, p: _wt().softmax(a[0], axis=p),
                lambda a, p: _softmax(a[0], p), None, _long_axis_param),
    _structural("log_softmax", 1, lambda a, p: _wt().log_softmax(a[0], axis=p),
                lambda a, p: a[0] - _logsumexp(a[0], p, True), None, _long_axis_param),
    _structural("log_of_softmax", 1, lambda a, p: _wt().log(_wt().softmax(a[0], axis=p)),
                lambda a, p: a[0] - _logsumexp(a[0], p, True), None, _long_axis_param),
    # structure: linear algebra, indexing, joins
    _structural("dot", 2, lambda a, p: _wt().dot(a[0], a[1]), lambda a, p: np.dot(a[0], a[1]),
                _dot_accepts),
    _structural("transpose", 1, lambda a, p: a[0].T, lambda a, p: a[0].T,
                lambda a, p: a[0].ndim == 2),
    _structural("index", 1, lambda a, p: _index(a[0], p), lambda a, p: _index(a[0], p), None,
                _index_param),
    _structural("concatenate", 2, lambda a, p: _wt().concatenate([a[0], a[1]], axis=p),
                lambda a, p: np.concatenate([a[0], a[1]], axis=p), None, _join_param),
    _structural("inc_subtensor", 2, _inc_build, _inc_reference, None, _inc_param),
)

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64")
_DTYPE_BINARY = ("add", "sub", "mul", "true_div", "int_div", "mod", "maximum", "minimum", "eq",
                 "lt", "ge", "and_", "or_", "xor", "pow", "arctan2")
_DTYPE_UNARY = ("neg", "abs", "exp", "log", "sqrt", "sin", "tanh", "floor", "ceil", "sign",
                "invert", "sqr", "reciprocal", "sigmoid", "isnan", "expm1", "log1p",
                "round_half_to_even", "erf", "cosh", "arcsinh")


def _named(name: str, arity: int) -> Operation:
    return Operation(name, arity, lambda a, p: getattr(_wt(), name)(*a))


def _final_reduction(name: str, build: Callable[[Any], Any],
                     shape: Callable[[tuple[int, ...]], tuple[int, ...]],
                     min_ndim: int = 1) -> Operation:
    return Operation(name, 1, lambda a, p: build(a[0]),
                     param=lambda c, s: None if len(s[0]) >= min_ndim else NotImplemented,
                     shape=lambda s, p: shape(s[0]), elementwise=False)


DTYPE_MENU: tuple[Operation, ...] = (
    *(_named(n, 2) for n in _DTYPE_BINARY),
    *(_named(n, 1) for n in _DTYPE_UNARY),
    Operation("switch", 3, lambda a, p: _wt().switch(a[0] > 0, a[1], a[2])),
    Operation("cast", 1, lambda a, p: _wt().cast(a[0], p), param=lambda c, s: _pick(c, DTYPES)),
    Operation("scale", 1, lambda a, p: a[0] * p, param=lambda c, s: c.integer(-3, 3)),
    Operation("shift", 1, lambda a, p: a[0] + p,
              param=lambda c, s: _pick(c, [0.5, 2.0, -1.5])),
)

#: the last step of some DTYPE_MENU graphs (their shapes do not broadcast with the rest)
DTYPE_REDUCTIONS: tuple[Operation, ...] = (
    _final_reduction("sum0", lambda v: v.sum(axis=0), lambda s: s[1:]),
    _final_reduction("max_last", lambda v: v.max(axis=-1), lambda s: s[:-1]),
    _final_reduction("prod_all", lambda v: v.prod(axis=None), lambda s: ()),
    _final_reduction("argmax0", lambda v: _wt().argmax(v, axis=0), lambda s: s[1:]),
    _final_reduction("min0", lambda v: v.min(axis=0), lambda s: s[1:]),
    _final_reduction("mean1", lambda v: v.mean(axis=1), lambda s: s[:1] + s[2:], 2),
)


@dataclass(frozen=True)
class Menu:
    """The operations a generator draws from, the input shapes and dtypes, and whether
    the steps have NumPy references (then sample values steer the drawing)."""

    name: str
    operations: tuple[Operation, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    finals: tuple[Operation, ...] = ()

    @property
    def has_reference(self) -> bool:
        return all(op.reference is not None for op in self.operations)

    def operation(self, name: str) -> Operation:
        for op in (*self.operations, *self.finals):
            if op.name == name:
                return op
        raise KeyError(f"menu {self.name!r} has no operation {name!r}")


#: float64 graphs with NumPy references for values and gradients
SMOOTH = Menu("smooth", SMOOTH_MENU, ((3, 4), (1, 4), (3, 1), (4,), (3,), ()), ("float64",))
#: every dtype; a matrix, a row, a column and a 0-d value: every broadcasting combination
DTYPE = Menu("dtype", DTYPE_MENU, ((3, 4), (1, 4), (3, 1), ()), DTYPES, DTYPE_REDUCTIONS)

# -- graphs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """`op` (an operation's name) applied to values `args` (inputs first) with `param`."""

    op: str
    args: tuple[int, ...]
    param: Any = None


@dataclass(frozen=True)
class RandomGraph:
    """A random program: its inputs (dtype, shape, sample value), steps and outputs
    (value indices: inputs first, then one per step), and how to build or evaluate it."""

    label: str
    menu: Menu = field(repr=False)
    input_dtypes: tuple[str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    values: tuple[np.ndarray, ...] = field(repr=False)
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]

    def symbolic(self) -> tuple[list[Any], list[Any]]:
        """Fresh symbolic inputs (lengths of 1 static, as broadcasting needs) and the
        outputs built from them."""
        wt = _wt()
        inputs = [wt.TensorType(d, tuple(1 if n == 1 else None for n in s))(f"v{k}")
                  for k, (d, s) in enumerate(zip(self.input_dtypes, self.input_shapes))]
        pool: list[Any] = list(inputs)
        for step in self.steps:
            op = self.menu.operation(step.op)
            pool.append(op.build([pool[i] for i in step.args], step.param))
        return inputs, [pool[i] for i in self.outputs]

    def reference(self, values: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """The outputs computed by NumPy in float64 (on `values`, default the samples)."""
        pool = [np.asarray(v, dtype=np.float64) for v in (values or self.values)]
        with np.errstate(all="ignore"):
            for step in self.steps:
                op = self.menu.operation(step.op)
                assert op.reference is not None, f"{op.name} has no NumPy reference"
                pool.append(np.asarray(op.reference([pool[i] for i in step.args], step.param),
                                       dtype=np.float64))
        return [pool[i] for i in self.outputs]

    def weights(self) -> list[np.ndarray]:
        """The fixed weights of the outputs in `cost`: not all ones, so a gradient that
        loses its broadcasting or its order shows."""
        rng = np.random.default_rng(len(self.steps))
        return [rng.uniform(0.5, 1.5, size=np.shape(v)) for v in self.reference()]

    def cost(self, outputs: Sequence[Any]) -> Any:
        """The scalar the differential tests differentiate: sum_k sum(w_k * out_k)."""
        wt = _wt()
        terms = [wt.sum(o * wt.constant(w)) for o, w in zip(outputs, self.weights())]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    def reference_cost(self, values: Sequence[np.ndarray]) -> float:
        return float(sum(np.sum(o * w) for o, w in zip(self.reference(values), self.weights())))

    def __str__(self) -> str:
        n = len(self.input_dtypes)
        lines = [f"{self.label} ({self.menu.name}): "
                 + ", ".join(f"v{k}: {d}{list(s)}" for k, (d, s) in
                             enumerate(zip(self.input_dtypes, self.input_shapes)))]
        for k, step in enumerate(self.steps):
            param = "" if step.param is None else f" [{step.param}]"
            lines.append(f"  v{n + k} = {step.op}({', '.join(f'v{i}' for i in step.args)})"
                         f"{param}")
        lines.append(f"  outputs {', '.join(f'v{i}' for i in self.outputs)}")
        return "\n".join(lines)


_SPECIAL = (0.0, -0.0, math.inf, -math.inf, math.nan)


def _sample(chooser: Chooser, menu: Menu, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(chooser.integer(0, 2**31))
    if menu.has_reference:
        return rng.uniform(-2, 2, size=shape)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("float"):  # the corners where C and NumPy may part ways
        value = rng.normal(size=shape) * rng.choice([0.5, 3.0, 50.0])
        if value.size and rng.random() < 0.3:
            value.reshape(-1)[rng.integers(value.size)] = rng.choice(_SPECIAL)
        return value.astype(dtype)
    info = np.iinfo(dtype)
    low, high = ((info.min, info.max) if rng.random() < 0.2
                 else (max(info.min, -100), min(info.max, 100)))
    return rng.integers(low, high, size=shape, endpoint=True, dtype=dtype)


def _broadcast_shape(shapes: Shapes) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


class _Pool:
    """The values a graph has so far: shape, symbolic variable, sample value (or None)."""

    def __init__(self) -> None:
        self.shapes: Shapes = []
        self.variables: list[Any] = []
        self.values: list[np.ndarray | None] = []

    def add(self, shape: tuple[int, ...], variable: Any, value: np.ndarray | None) -> None:
        self.shapes.append(shape)
        self.variables.append(variable)
        self.values.append(value)


def generate(chooser: Chooser, menu: Menu = SMOOTH, max_steps: int = 8,
             label: str = "graph") -> RandomGraph:
    """A random graph of 1 to `max_steps` steps of `menu`, drawn by `chooser`; its
    outputs are the values no step uses.

    Every step is checked where it is drawn: it must build (the dtypes may refuse,
    e.g. invert of a float), elementwise arguments must broadcast, and in a menu with
    references the arguments' sample values must be accepted by the operation (finite
    and smooth there) and the result finite and below 1e6. A refused draw is drawn
    again, a few times, before the graph stops growing.
    """
    wt = _wt()
    n_inputs = chooser.integer(1, 3)
    dtypes = tuple(_pick(chooser, menu.dtypes) for _ in range(n_inputs))
    shapes = tuple(_pick(chooser, menu.shapes) for _ in range(n_inputs))
    values = tuple(_sample(chooser, menu, d, s) for d, s in zip(dtypes, shapes))
    pool = _Pool()
    for k, (d, s, v) in enumerate(zip(dtypes, shapes, values)):
        pool.add(s, wt.TensorType(d, tuple(1 if n == 1 else None for n in s))(f"v{k}"),
                 v if menu.has_reference else None)
    steps: list[Step] = []
    target = chooser.integer(1, max_steps)
    for _ in range(4 * max_steps):
        if len(steps) >= target:
            break
        op = _pick(chooser, menu.operations)
        step = _draw_step(chooser, menu, op, pool)
        if step is not None:
            steps.append(step)
    for op in menu.operations:  # every draw refused: the first operation that applies
        if steps:
            break
        step = _draw_step(chooser, menu, op, pool, (0,) * op.arity)
        if step is not None:
            steps.append(step)
    last = len(pool.shapes) - 1
    if menu.finals and pool.shapes[last] and _chance(chooser, 30):
        final = _draw_step(chooser, menu, _pick(chooser, menu.finals), pool, (last,))
        if final is not None:
            steps.append(final)
    # every value no step uses is an output, so no step is dead code
    used = {i for step in steps for i in step.args}
    outputs = [i for i in range(n_inputs, len(pool.shapes)) if i not in used]
    return RandomGraph(label, menu, dtypes, shapes, values, tuple(steps), tuple(outputs))


def _draw_step(chooser: Chooser, menu: Menu, op: Operation, pool: _Pool,
               args: tuple[int, ...] | None = None) -> Step | None:
    """Draw arguments and a parameter for `op`; add the step to `pool` and return it, or
    None when the draw is refused."""
    last = len(pool.shapes) - 1
    if args is None:  # favour recent values (deeper graphs) but reuse any (shared values)
        args = tuple(chooser.integer(max(0, last - 3), last) if _chance(chooser, 60)
                     else chooser.integer(0, last) for _ in range(op.arity))
    shapes = [pool.shapes[i] for i in args]
    param = None
    if op.param is not None:
        param = op.param(chooser, shapes)
        if param is NotImplemented:
            return None
    shape = _broadcast_shape(shapes) if op.elementwise else None
    if op.elementwise and shape is None:
        return None
    value = None
    if menu.has_reference:
        arg_values = [pool.values[i] for i in args]
        if op.accepts is not None and not op.accepts(arg_values, param):
            return None
        assert op.reference is not None
        try:
            with np.errstate(all="raise"):
                value = np.asarray(op.reference(arg_values, param), dtype=np.float64)
        except (ValueError, FloatingPointError, IndexError):
            return None
        if not np.all(np.isfinite(value)) or np.any(np.abs(value) > 1e6):
            return None
        shape = value.shape
    elif op.shape is not None:
        shape = op.shape(shapes, param)
    try:  # the dtypes may refuse (invert of a float, uint8 * -1)
        variable = op.build([pool.variables[i] for i in args], param)
    except (TypeError, ValueError, OverflowError):
        return None
    assert shape is not None
    pool.add(shape, variable, value)
    return Step(op.name, args, param)


# -- comparing ------------------------------------------------------------------------


def numeric_gradient(graph: RandomGraph, wrt: Sequence[int]) -> list[np.ndarray]:
    """Central finite differences of `graph.reference_cost` at the sample values, with
    respect to the inputs `wrt` (indices)."""
    base = [np.array(v, dtype=np.float64) for v in graph.values]
    grads = []
    for k in wrt:
        g = np.zeros_like(base[k])
        for idx in np.ndindex(base[k].shape):
            h = 1e-6 * max(1.0, abs(float(base[k][idx])))
            plus = [v.copy() for v in base]
            minus = [v.copy() for v in base]
            plus[k][idx] += h
            minus[k][idx] -= h
            g[idx] = (graph.reference_cost(plus) - graph.reference_cost(minus)) / (2 * h)
        grads.append(g)
    return grads


def arrays_agree(got: Any, want: Any, rtol: float, atol: float = 0.0) -> bool:
    """Same shape, NaN where `want` has NaN, equal infinities, close elsewhere."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind not in "fc":
        return bool(np.array_equal(got, want))
    with np.errstate(all="ignore"):
        both_nan = np.isnan(got) & np.isnan(want)
        close = (got == want) | np.isclose(got, want, rtol=rtol, atol=atol)
    return bool(np.all(both_nan | close))
