"""Shape Ops: `Shape` (``x.shape``), `Shape_i` (one length), `SpecifyShape` and
`CheckAndRaise` (a promise about values, checked at run time).

`SpecifyShape` is how static shape information enters a graph: it passes its
input through unchanged (a view) and promises, checked at run time, that the
input has the given lengths, so its output Type carries them. It is what
`TensorType.filter_variable` inserts to narrow ``TensorType(float64, (2, ?))``
to ``TensorType(float64, (2, 1))`` (seed 000).

The module also holds the axis helpers of the shape families
(`normalize_axis`, `normalize_axis_tuple`: numpy's rules and messages).
Reshaping lives in `reshape.py`; ``reshape``, ``flatten``, ``ravel`` and
``squeeze`` can still be imported from here (they are forwarded lazily).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import int64
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.op import Op
from workbench.core.graph.type import disconnected_type, generic
from workbench.core.tensor.type import TensorType, format_shape
from workbench.core.tensor.variable import as_tensor_variable, constant

#: The placeholder input of SpecifyShape for a dimension whose length is not specified.
NoneConst = Constant(generic, None, name="NoneConst")

__all__ = ["CheckAndRaise", "NoneConst", "Shape", "Shape_i", "SpecifyShape", "check_and_raise",
           "shape", "shape_i", "shape_tuple", "specify_shape"]


def _is_none(var: Any) -> bool:
    return var is None or (isinstance(var, Constant) and var.data is None)


# -- axes -----------------------------------------------------------------------------
# Helpers shared by the shape-manipulating families (reshape, join, ...); not exported.


def is_int(value: Any) -> bool:
    """A Python or numpy integer (booleans excluded), as accepted for axes and lengths."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def normalize_axis(axis: Any, ndim: int, argname: str | None = None) -> int:
    """`axis` in ``range(ndim)`` (negative axes count from the end), numpy's way.

    Out of range raises numpy's AxisError (a ValueError and an IndexError):
    "axis 2 is out of bounds for array of dimension 2".
    """
    if not is_int(axis):
        raise TypeError(
            f"{argname or 'axis'} must be an integer, got {type(axis).__name__} {axis!r}"
        )
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(int(axis), ndim, argname)
    return int(axis) % ndim if ndim else 0


def normalize_axis_tuple(axis: Any, ndim: int, argname: str | None = None,
                         repeated: str = "repeated axis") -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of axes in ``range(ndim)``, without repeats."""
    try:
        axes = (axis,) if is_int(axis) else tuple(axis)
    except TypeError:  # (a float said "'float' object is not iterable")
        raise TypeError(f"{argname or 'axis'} must be an integer or a sequence of integers, "
                        f"got {type(axis).__name__} {axis!r}") from None
    result = tuple(normalize_axis(a, ndim, argname) for a in axes)
    if len(set(result)) != len(result):
        raise ValueError(repeated)
    return result


def format_numpy_shape(shape: Iterable[Any]) -> str:
    """A shape as numpy writes it in error messages: ``(2,3)``, ``(4,)``; unknown is ``?``."""
    items = ["?" if s is None else str(s) for s in shape]
    return "(" + ",".join(items) + ("," if len(items) == 1 else "") + ")"


# `x.reshape`, `x.flatten` and `x.squeeze` look these up here; they live in `reshape.py`,
# which imports this module, so they are forwarded lazily (PEP 562).
_FORWARDED = ("reshape", "flatten", "ravel", "squeeze")


def __getattr__(name: str) -> Any:
    if name in _FORWARDED:
        import importlib

        return getattr(importlib.import_module("workbench.core.tensor.reshape"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Shape(Op):
    """The shape of a tensor as an int64 vector (what ``x.shape`` returns)."""

    __props__ = ()

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        return Apply(self, [x], [TensorType(int64, (x.type.ndim,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = np.array(np.shape(inputs[0]), dtype=np.int64)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [(node.inputs[0].type.ndim,)]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[False]]  # only the shape of x matters, not its values

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        return [disconnected_type()]


class Shape_i(Op):
    """The length of dimension `i` of a tensor, as an int64 0-d tensor."""

    __props__ = ("i",)

    def __init__(self, i: int) -> None:
        if not isinstance(i, (int, np.integer)) or i < 0:
            raise TypeError(f"Shape_i needs a non-negative int, got {i!r}")
        self.i = int(i)

    def __str__(self) -> str:
        return f"Shape_i{{{self.i}}}"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if self.i >= x.type.ndim:
            raise ValueError(f"{self}: {x} ({x.type}) has no dimension {self.i}")
        return Apply(self, [x], [TensorType(int64, ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = np.array(inputs[0].shape[self.i], dtype=np.int64)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [()]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[False]]

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        return [disconnected_type()]


def shape(x: Any) -> Variable:
    """The symbolic shape of `x` (an int64 vector)."""
    return Shape()(x)


def shape_i(x: Any, i: int) -> Variable:
    """The symbolic length of dimension `i` of `x` (an int64 0-d tensor)."""
    return Shape_i(i)(x)


def shape_tuple(x: Any) -> tuple[Any, ...]:
    """One entry per dimension: the static length if known, else a symbolic `shape_i`."""
    x = as_tensor_variable(x)
    return tuple(s if s is not None else shape_i(x, i) for i, s in enumerate(x.type.shape))


class SpecifyShape(Op):
    """Its input, unchanged, with the promise that it has the given shape.

    Inputs: the tensor, then one entry per dimension: an integer 0-d tensor
    (constant or symbolic) or `NoneConst` for "not specified". Constant
    lengths refine the output's static shape. At run time a mismatch raises
    AssertionError naming the expected and actual shapes.
    """

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, x: Any, *shape: Any) -> Apply:
        x = as_tensor_variable(x)
        if len(shape) != x.type.ndim:
            raise ValueError(
                f"SpecifyShape: {x} ({x.type}) has rank {x.type.ndim}, but {len(shape)} "
                f"lengths were given"
            )
        lengths: list[Variable] = []
        static: list[int | None] = []
        for i, s in enumerate(shape):
            if _is_none(s):
                lengths.append(NoneConst)
                static.append(x.type.shape[i])
                continue
            if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
                if s < 0:
                    raise ValueError(f"SpecifyShape: length {s} of dimension {i} is negative")
                s = constant(int(s))
            s = as_tensor_variable(s)
            if s.type.ndim != 0 or not (s.type.dtype.is_int):
                raise TypeError(
                    f"SpecifyShape: the length of dimension {i} must be an integer scalar, "
                    f"got {s} of type {s.type}"
                )
            lengths.append(s)
            static.append(int(s.data) if isinstance(s, Constant) else x.type.shape[i])
        for i, (known, wanted) in enumerate(zip(x.type.shape, static)):
            if known is not None and wanted is not None and known != wanted:
                raise ValueError(
                    f"SpecifyShape: {x} has static shape {format_shape(x.type.shape)}, which "
                    f"contradicts length {wanted} for dimension {i}"
                )
        out = TensorType(x.type.dtype, tuple(static))()
        return Apply(self, [x, *lengths], [out])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, *lengths = inputs
        expected = tuple(None if n is None else int(n) for n in lengths)
        if np.ndim(x) != len(expected) or any(
            e is not None and e != a for e, a in zip(expected, np.shape(x))
        ):
            raise AssertionError(
                f"SpecifyShape: expected shape {format_shape(expected)}, got shape {np.shape(x)}"
            )
        output_storage[0][0] = x

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        x_shape = input_shapes[0]
        result = []
        for i, length in enumerate(node.inputs[1:]):
            if _is_none(length):
                result.append(x_shape[i])
            elif isinstance(length, Constant):
                result.append(int(length.data))
            else:
                result.append(length)
        return [tuple(result)]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True]] + [[False] for _ in node.inputs[1:]]

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        """The output gradient passes through; the lengths are disconnected."""
        x, *lengths = inputs
        (gz,) = output_grads
        return [gz] + [disconnected_type() for _ in lengths]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        v = eval_points[0]
        return [None if v is None else SpecifyShape()(v, *inputs[1:])]


def specify_shape(x: Any, shape: int | None | Iterable[Any]) -> Variable:
    """`x` with a promised shape: ints (or integer scalar Variables) and None (unknown).

    Returns `x` itself when nothing is specified (all None).
    """
    x = as_tensor_variable(x)
    if shape is None or isinstance(shape, (int, np.integer)):
        entries: tuple[Any, ...] = (shape,)
    elif isinstance(shape, Variable):
        raise TypeError(
            "specify_shape needs one entry per dimension (ints, None or integer scalar "
            f"Variables), got the Variable {shape}"
        )
    else:
        entries = tuple(shape)
    if len(entries) != x.type.ndim:
        raise ValueError(
            f"specify_shape: {x} ({x.type}) has rank {x.type.ndim}, but the shape "
            f"{entries} has {len(entries)} entries"
        )
    if all(_is_none(e) for e in entries):
        return x
    return SpecifyShape()(x, *entries)


# -- run-time checks ---------------------------------------------------------------------

#: The exceptions `CheckAndRaise` may raise, by name (a graph file stores the name).
CHECK_ERRORS: dict[str, type[Exception]] = {
    "ValueError": ValueError, "IndexError": IndexError, "TypeError": TypeError,
    "AssertionError": AssertionError, "LinAlgError": np.linalg.LinAlgError,
}


class CheckAndRaise(Op):
    """Its first input, unchanged (a view), once every condition holds: the other inputs
    are 0-d boolean tensors, and a false one raises ``error(message)`` when run.

    How a function composed of other Ops refuses bad data NumPy refuses (histogram's
    non-finite range, interp's empty knots), with NumPy's exception type and a
    message naming the input. Conditions known false when the graph is built are
    refused then.
    """

    __props__ = ("error", "message")
    view_map = {0: [0]}

    def __init__(self, error: str, message: str) -> None:
        if error not in CHECK_ERRORS:
            raise ValueError(f"CheckAndRaise: error must be one of {sorted(CHECK_ERRORS)}, "
                             f"got {error!r}")
        if not isinstance(message, str):
            raise TypeError(f"CheckAndRaise: message must be a str, got {message!r}")
        self.error = error
        self.message = message

    def __str__(self) -> str:
        return f"CheckAndRaise{{{self.error}}}"

    def make_node(self, x: Any, *conditions: Any) -> Apply:
        x = as_tensor_variable(x)
        checked = []
        for k, c in enumerate(conditions):
            c = as_tensor_variable(c)
            if c.type.ndim != 0 or not c.type.dtype.is_bool:
                raise TypeError(f"CheckAndRaise: condition {k} must be a 0-d boolean tensor, "
                                f"got {c.type}")
            if isinstance(c, Constant) and not bool(c.data):
                raise CHECK_ERRORS[self.error](self.message)
            checked.append(c)
        return Apply(self, [x, *checked], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x, *conditions = inputs
        if not all(bool(c) for c in conditions):
            raise CHECK_ERRORS[self.error](self.message)
        output_storage[0][0] = x

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True]] + [[False] for _ in node.inputs[1:]]

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        """The output gradient passes through; the conditions are disconnected."""
        return [output_grads[0]] + [disconnected_type() for _ in inputs[1:]]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        return [eval_points[0]]


def check_and_raise(x: Any, conditions: Iterable[Any], error: str, message: str) -> Variable:
    """`x`, checked when run: every condition (a 0-d boolean tensor or a bool) must hold,
    else ``error(message)`` is raised (at once for a condition known false here)."""
    pending = []
    for c in conditions:
        if isinstance(c, (bool, np.bool_)):
            if not c:
                raise CHECK_ERRORS[error](message)
            continue
        pending.append(c)
    x = as_tensor_variable(x)
    return CheckAndRaise(error, message)(x, *pending) if pending else x
