"""ShapeFeature: the symbolic shape of every tensor of a FunctionGraph (a tensor-layer feature).

Each tensor's shape is a tuple with one entry per dimension: a Python int when
the length is known statically, else an int64 0-d tensor Variable computed from
the shapes of the graph inputs (``Shape_i{0}(x)``) through every Op's
`infer_shape`. So the length of ``exp(x) @ W`` along 0 is ``Shape_i{0}(x)``:
it no longer needs ``exp(x) @ W`` to be computed (the shape rewrites use this).

Shapes are computed on demand and memoised; a replacement (`on_change_input`)
hands the old variable's shape to the new one, since rewrites preserve values,
and entries that refer to variables that left the graph are recomputed. An Op
without `infer_shape` (or whose `infer_shape` fails) gets ``Shape_i{d}(out)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.core.graph.basic import Constant, Variable
from workbench.core.graph.features import AlreadyThere, Feature
from workbench.core.tensor.basic import cast
from workbench.core.tensor.shape import Shape_i
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

if TYPE_CHECKING:
    from workbench.core.graph.basic import Apply
    from workbench.core.graph.fg import FunctionGraph

__all__ = ["ShapeFeature", "get_shape_feature", "same_length"]

Entry = Any  # int | Variable (int64 0-d tensor)


def _is_tensor(var: Any) -> bool:
    return isinstance(var, Variable) and isinstance(var.type, TensorType)


def same_length(a: Entry, b: Entry, depth: int = 8) -> bool:
    """Whether two shape entries certainly denote the same length: equal ints, the same
    Variable, or the same Op applied to entries that are the same (structurally)."""
    if a is b:
        return True
    if isinstance(a, (int, np.integer)) or isinstance(b, (int, np.integer)):
        return (isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer))
                and int(a) == int(b))
    if isinstance(a, Constant) and isinstance(b, Constant):
        return bool(np.array_equal(a.data, b.data)) and a.type == b.type
    if depth == 0 or a.owner is None or b.owner is None:
        return False
    if a.owner.op != b.owner.op or a.index != b.index:
        return False
    return all(same_length(x, y, depth - 1) for x, y in zip(a.owner.inputs, b.owner.inputs))


def _is_constant_one(var: Any) -> bool:
    return isinstance(var, Constant) and np.size(var.data) == 1 and np.asarray(var.data) == 1


def _simplify(entry: Entry) -> Entry:
    """``switch(eq(a, 1), b, a)`` (the broadcast of two lengths) is `a` when b is a."""
    owner = getattr(entry, "owner", None)
    if owner is None or getattr(owner.op, "scalar_op", None) is None:
        return entry
    if owner.op.scalar_op.name != "switch" or len(owner.inputs) != 3:
        return entry
    cond, then, other = owner.inputs
    test = cond.owner
    if (test is None or getattr(test.op, "scalar_op", None) is None
            or test.op.scalar_op.name != "eq"):
        return entry
    if same_length(test.inputs[0], other) and _is_constant_one(test.inputs[1]) and \
            same_length(_simplify(then), _simplify(other)):
        return _simplify(other)
    return entry


class ShapeFeature(Feature):
    """Knows the symbolic shape of every tensor variable of its graph.

    `fgraph.shape_feature` is this object once attached; `get_shape(var)` is
    the shape tuple of `var` (None for a non-tensor), `get_length(var, d)` one
    entry.
    """

    def __init__(self) -> None:
        self.fgraph: FunctionGraph | None = None
        self.shape_of: dict[Variable, tuple[Entry, ...]] = {}

    def clone(self) -> ShapeFeature:
        return ShapeFeature()

    # -- callbacks ----------------------------------------------------------------
    def on_attach(self, fgraph: FunctionGraph) -> None:
        if getattr(fgraph, "shape_feature", None) is not None:
            raise AlreadyThere("a ShapeFeature is already attached")
        self.fgraph = fgraph
        fgraph.shape_feature = self  # type: ignore[attr-defined]

    def on_detach(self, fgraph: FunctionGraph) -> None:
        del fgraph.shape_feature  # type: ignore[attr-defined]
        self.fgraph = None
        self.shape_of.clear()

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: Any) -> None:
        # Shapes of new nodes are computed on demand, but a replacement node whose
        # output has a better-known type than the recorded shape gets its static lengths.
        for out in node.outputs:
            known = self.shape_of.get(out)
            if known is not None and _is_tensor(out):
                self.shape_of[out] = self._with_static(out, known)

    def on_prune(self, fgraph: FunctionGraph, node: Apply, reason: Any) -> None:
        for out in node.outputs:
            self.shape_of.pop(out, None)

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old_var: Variable,
                        new_var: Variable, reason: Any) -> None:
        # A replacement has the value, hence the shape, of what it replaces.
        old = self.shape_of.get(old_var)
        if old is None or not _is_tensor(new_var) or reason == "revert":
            return
        new = self.shape_of.get(new_var)
        if new is None or sum(isinstance(e, Variable) for e in new) > sum(
                isinstance(e, Variable) for e in old):
            if self._entries_in_graph(old):
                self.shape_of[new_var] = self._with_static(new_var, old)

    # -- computing shapes -----------------------------------------------------------
    @staticmethod
    def _with_static(var: Variable, shape: tuple[Entry, ...]) -> tuple[Entry, ...]:
        static = var.type.shape
        return tuple(s if s is not None else e for s, e in zip(static, shape))

    def _default_shape(self, var: Variable) -> tuple[Entry, ...]:
        if isinstance(var, Constant):
            return tuple(int(n) for n in np.shape(var.data))
        return tuple(s if s is not None else Shape_i(d)(var)
                     for d, s in enumerate(var.type.shape))

    def _normalize(self, entry: Any, var: Variable, d: int) -> Entry:
        static = var.type.shape[d]
        if static is not None:
            return static
        if isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
            return int(entry)
        try:
            entry = as_tensor_variable(entry)
        except (TypeError, ValueError):
            return Shape_i(d)(var)
        if entry.type.ndim != 0 or not entry.type.dtype.is_int:
            return Shape_i(d)(var)
        if isinstance(entry, Constant):
            return int(entry.data)
        if str(entry.type.dtype) != "int64":
            entry = cast(entry, "int64")
        return _simplify(entry)

    def _infer(self, node: Apply) -> None:
        """Record the shapes of `node`'s tensor outputs (its inputs' shapes are known)."""
        input_shapes = [self.shape_of.get(v) if _is_tensor(v) else None for v in node.inputs]
        outputs = [o for o in node.outputs]
        try:
            inferred = node.op.infer_shape(self.fgraph, node, input_shapes)
            if len(inferred) != len(outputs):
                raise ValueError("wrong number of shapes")
            shapes = []
            for out, shape in zip(outputs, inferred):
                if not _is_tensor(out):
                    shapes.append(None)
                    continue
                shape = tuple(shape)
                if len(shape) != out.type.ndim:
                    raise ValueError("wrong rank")
                shapes.append(tuple(self._normalize(e, out, d) for d, e in enumerate(shape)))
        except Exception:
            shapes = [self._default_shape(o) if _is_tensor(o) else None for o in outputs]
        for out, shape in zip(outputs, shapes):
            if shape is not None:
                self.shape_of[out] = shape

    def _entries_in_graph(self, shape: tuple[Entry, ...]) -> bool:
        """Whether every variable the symbolic entries need is in the graph (or constant)."""
        fgraph = self.fgraph
        if fgraph is None:
            return True
        stack = [e for e in shape if isinstance(e, Variable)]
        seen: set[Variable] = set()
        while stack:
            var = stack.pop()
            if var in seen or var in fgraph.variables or isinstance(var, Constant):
                continue
            seen.add(var)
            if var.owner is None:
                return False
            stack.extend(var.owner.inputs)
        return True

    def _known(self, var: Variable) -> bool:
        shape = self.shape_of.get(var)
        if shape is None:
            return False
        if self._entries_in_graph(shape):
            return True
        del self.shape_of[var]
        return False

    def get_shape(self, var: Variable) -> tuple[Entry, ...] | None:
        """The shape tuple of `var`: ints (static lengths) and int64 0-d Variables."""
        if not _is_tensor(var):
            return None
        if self._known(var):
            return self.shape_of[var]
        # Iterative post-order over the ancestors whose shapes are unknown: graphs can be
        # far deeper than Python's recursion limit.
        stack: list[Variable] = [var]
        while stack:
            top = stack[-1]
            if self._known(top):
                stack.pop()
                continue
            node = top.owner
            if node is None:
                self.shape_of[top] = self._default_shape(top)
                stack.pop()
                continue
            missing = [v for v in node.inputs if _is_tensor(v) and not self._known(v)]
            if missing:
                stack.extend(missing)
                continue
            self._infer(node)
            stack.pop()
        return self.shape_of[var]

    def same_shape(self, a: Variable, b: Variable) -> bool:
        """Whether tensors `a` and `b` certainly have the same shape at run time (not just
        compatible static shapes: a length unknown statically may broadcast at run time)."""
        if a.type.ndim != b.type.ndim:
            return False
        sa, sb = self.get_shape(a), self.get_shape(b)
        return sa is not None and sb is not None and all(
            same_length(x, y) for x, y in zip(sa, sb))

    def get_length(self, var: Variable, d: int) -> Entry:
        """Entry `d` of `get_shape(var)`."""
        shape = self.get_shape(var)
        if shape is None:
            raise TypeError(f"{var} ({var.type}) is not a tensor; it has no shape")
        return shape[d]


def get_shape_feature(fgraph: FunctionGraph) -> ShapeFeature:
    """The ShapeFeature of `fgraph`, attached on first use."""
    feature = getattr(fgraph, "shape_feature", None)
    if feature is None:
        feature = ShapeFeature()
        fgraph.attach_feature(feature)
    return feature
