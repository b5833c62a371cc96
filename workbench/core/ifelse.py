"""A lazy if-else: ``ifelse(cond, then_branch, else_branch)`` computes only the taken branch.

`IfElse` has inputs ``(condition, then_1..then_n, else_1..else_n)`` and n
outputs. On the Python VM its thunk is *lazy*: called first, it asks for the
condition (returns ``[0]``); called again, it asks for the inputs of the taken
branch that are not computed yet; called last, it copies (or, with `as_view`,
passes through) the taken branch's values to its outputs and returns ``[]``.
The untaken branch is never computed. With a non-lazy VM (or `perform`) both
branches are computed first and one is picked.

Gradient: each branch value gets the output gradient when its branch is taken
and zeros otherwise (lazy ifelses again); the condition gets a zero gradient.
The backward graphs *below* the branch values are ordinary graphs, so they run
for both branches (on zeros for the untaken one).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import can_cast
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import ComputeMap, Op, StorageMap, Thunk
from workbench.core.scalar.basic import is_python_scalar
from workbench.core.tensor.type import TensorType

__all__ = ["IfElse", "ifelse"]


def _copy(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    return copy.deepcopy(value)


def _truth(value: Any) -> bool:
    """The condition's value as a bool (nonzero is true, as in Python and NumPy)."""
    return bool(np.asarray(value))


def _merged_type(k: int, then_type: Any, else_type: Any) -> Any:
    """The Type of output `k`: the common super type of both branches' Types."""
    if isinstance(then_type, TensorType) and isinstance(else_type, TensorType):
        if then_type.dtype == else_type.dtype and then_type.ndim == else_type.ndim:
            shape = tuple(a if a == b else None for a, b in zip(then_type.shape, else_type.shape))
            return TensorType(then_type.dtype, shape)
    elif then_type == else_type:
        return then_type
    raise TypeError(
        f"IfElse: output {k} has type {then_type} in the then branch but {else_type} in the "
        "else branch; both branches must have the same dtype and number of dimensions"
    )


class IfElse(Op):
    """Select `n_outs` values from the then or else branch according to a scalar condition.

    Inputs: a 0-d condition (bool or numeric, nonzero is true), the n then values,
    the n else values. Output k has the common super type of then_k and else_k.
    Outputs are copies unless `as_view` (then they alias the taken branch's
    inputs, declared in `view_map`). The Op is `lazy`: see the module docstring.
    """

    __props__ = ("n_outs", "as_view")
    lazy = True

    def __init__(self, n_outs: int, as_view: bool = False) -> None:
        if not isinstance(n_outs, (int, np.integer)) or isinstance(n_outs, bool) or n_outs < 1:
            raise TypeError(f"IfElse needs a positive number of outputs, got {n_outs!r}")
        self.n_outs = int(n_outs)
        self.as_view = bool(as_view)
        n = self.n_outs
        # An output may alias either branch's input; both are declared.
        self.view_map = {k: [1 + k, 1 + n + k] for k in range(n)} if self.as_view else {}

    def __str__(self) -> str:
        return f"IfElse{{n_outs={self.n_outs}{', as_view' if self.as_view else ''}}}"

    def pprint_text(self, args: Sequence[str]) -> str:
        """How pprint writes the node: ``ifelse(c, a, b)``; with several outputs the
        branches are tuples, ``ifelse(c, (a1, a2), (b1, b2))`` (pprint adds ``[i]``)."""
        n = self.n_outs
        cond, then, other = args[0], args[1:1 + n], args[1 + n:]
        if n == 1:
            return f"ifelse({cond}, {then[0]}, {other[0]})"
        return f"ifelse({cond}, ({', '.join(then)}), ({', '.join(other)}))"

    def make_node(self, condition: Any, *branches: Any) -> Apply:
        from workbench.core.tensor.variable import as_tensor_variable

        n = self.n_outs
        if len(branches) != 2 * n:
            raise TypeError(
                f"{self} takes a condition and {2 * n} branch values ({n} then, {n} else), "
                f"got {len(branches)} branch values"
            )
        cond = as_tensor_variable(condition)
        if cond.type.ndim != 0:
            raise TypeError(
                f"ifelse: the condition must be a scalar (a 0-d tensor), got {cond} of type "
                f"{cond.type}; reduce it first (e.g. cond.any() or cond.all())"
            )
        if not (cond.type.dtype.is_numeric or cond.type.dtype.is_bool):
            raise TypeError(f"ifelse: the condition must be boolean or numeric, got {cond.type}")
        values = [v if isinstance(v, Variable) else as_tensor_variable(v) for v in branches]
        outputs = [_merged_type(k, values[k].type, values[n + k].type)() for k in range(n)]
        return Apply(self, [cond, *values], outputs)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        n = self.n_outs
        first = 1 if _truth(inputs[0]) else 1 + n
        for k in range(n):
            value = inputs[first + k]
            output_storage[k][0] = value if self.as_view else _copy(value)

    def make_thunk(
        self,
        node: Apply,
        storage_map: StorageMap,
        compute_map: ComputeMap,
        no_recycling: Sequence[Variable],
        impl: str | None = None,
    ) -> Thunk:
        """A lazy thunk: returns the input indices it needs until it can pick a branch."""
        n, as_view = self.n_outs, self.as_view
        in_cells = [storage_map[v] for v in node.inputs]
        in_done = [compute_map[v] for v in node.inputs]
        out_cells = [storage_map[v] for v in node.outputs]
        out_done = [compute_map[v] for v in node.outputs]

        def thunk() -> list[int]:
            if not in_done[0][0]:
                return [0]
            first = 1 if _truth(in_cells[0][0]) else 1 + n
            needed = [first + k for k in range(n) if not in_done[first + k][0]]
            if needed:
                return needed
            for k in range(n):
                value = in_cells[first + k][0]
                out_cells[k][0] = value if as_view else _copy(value)
                out_done[k][0] = 1
            return []

        return Thunk(thunk, node, in_cells, out_cells, lazy=True, impl="py")

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        n = self.n_outs
        shapes: list[tuple[Any, ...]] = []
        pending: list[tuple[int, int, Any, Any]] = []  # (output, dim, then length, else length)
        for k in range(n):
            static = getattr(node.outputs[k].type, "shape", ())
            then_shape, else_shape = input_shapes[1 + k], input_shapes[1 + n + k]
            shape: list[Any] = []
            for d, (a, b) in enumerate(zip(then_shape, else_shape)):
                if static[d] is not None:
                    shape.append(static[d])
                elif a is b or (isinstance(a, int) and isinstance(b, int) and a == b):
                    shape.append(a)
                else:
                    shape.append(None)
                    pending.append((k, d, a, b))
            shapes.append(tuple(shape))
        if not pending:
            return shapes
        # Lengths differing between the branches: a lazy if-else of the lengths themselves.
        from workbench.core.tensor.variable import as_tensor_variable

        lengths = [as_tensor_variable(a, dtype="int64") for _, _, a, _ in pending]
        lengths += [as_tensor_variable(b, dtype="int64") for _, _, _, b in pending]
        chosen = IfElse(len(pending))(node.inputs[0], *lengths, return_list=True)
        result = [list(s) for s in shapes]
        for (k, d, _, _), length in zip(pending, chosen):
            result[k][d] = length
        return [tuple(s) for s in result]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        n = self.n_outs
        pattern = [[True] * n]  # the condition decides which values come out
        branch = [[j == k for j in range(n)] for k in range(n)]  # value k -> output k
        return pattern + branch + [list(row) for row in branch]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """then_k gets ``ifelse(cond, g_k, zeros)``, else_k ``ifelse(cond, zeros, g_k)``.

        Both are lazy: the zeros (of the untaken value's shape, from its node's
        `infer_shape` when it has one, so the untaken value itself is not computed)
        are built only when that branch is not taken. The condition is connected (its
        value decides the outputs, `connection_pattern`) but moves them only by jumps:
        its gradient is zero (float zeros), as in Theano/PyTensor, so a cost through an
        ifelse stays differentiable. An output the cost does not use (DisconnectedType)
        leaves both of its branch values disconnected.
        """
        from workbench.core.graph.type import disconnected_type, is_disconnected
        from workbench.core.tensor.join import float_zeros_like

        n = self.n_outs
        cond = inputs[0]
        thens, elses = inputs[1:1 + n], inputs[1 + n:]
        g_then: list[Variable] = []
        g_else: list[Variable] = []
        for k, g in enumerate(output_grads):
            if is_disconnected(g):
                g_then.append(disconnected_type())
                g_else.append(disconnected_type())
                continue
            g_then.append(_branch_grad(cond, g, thens[k], True))
            g_else.append(_branch_grad(cond, g, elses[k], False))
        return [float_zeros_like(cond), *g_then, *g_else]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The same choice between the branches' eval points (zeros for a missing one)."""
        from workbench.core.tensor.join import float_zeros_like

        n = self.n_outs
        results: list[Variable | None] = []
        for k in range(n):
            e_then, e_else = eval_points[1 + k], eval_points[1 + n + k]
            if e_then is None and e_else is None:
                results.append(None)
                continue
            e_then = float_zeros_like(inputs[1 + k]) if e_then is None else e_then
            e_else = float_zeros_like(inputs[1 + n + k]) if e_else is None else e_else
            results.append(ifelse(inputs[0], e_then, e_else))
        return results


def _lazy_zeros(value: Variable, dtype: Any) -> Variable:
    """Zeros of the shape of `value`, computed if possible without computing `value`.

    Static lengths are used as they are; the others come from the `infer_shape` of
    the node computing `value` (in terms of that node's inputs), else from `value`.
    """
    from workbench.core.tensor.creation import zeros
    from workbench.core.tensor.shape import shape_tuple

    static = value.type.shape
    if None not in static:
        return zeros(static, dtype=dtype)
    lengths: tuple[Any, ...] | None = None
    owner = value.owner
    if owner is not None:
        try:
            shapes = owner.op.infer_shape(None, owner, [shape_tuple(v) for v in owner.inputs])
            lengths = tuple(shapes[owner.outputs.index(value)])
        except Exception:  # no infer_shape, or one that needs a FunctionGraph
            lengths = None
    if lengths is None or len(lengths) != len(static):
        lengths = shape_tuple(value)
    return zeros([s if s is not None else n for s, n in zip(static, lengths)], dtype=dtype)


def _branch_grad(cond: Variable, g: Variable, value: Variable, then: bool) -> Variable:
    """The gradient of one branch value: `g` when its branch is taken, else zeros."""
    from workbench.core.tensor.join import float_zeros_like, grad_for

    if not (value.type.dtype.is_float or value.type.dtype.is_complex):
        return float_zeros_like(value)
    g = grad_for(g, value)
    zero = _lazy_zeros(value, g.type.dtype)
    return ifelse(cond, g, zero) if then else ifelse(cond, zero, g)


def ifelse(condition: Any, then_branch: Any, else_branch: Any, name: str | None = None) -> Any:
    """`then_branch` if `condition` is true else `else_branch`, computing only that branch.

    The branches are a Variable each, or lists of the same length (the result is
    then a list). Matching values must have the same dtype and rank; their static
    shapes are merged. A non-Variable value (number, array) takes the dtype of the
    other branch's Variable when that is safe. The condition is a 0-d tensor.
    """
    single = not isinstance(then_branch, (list, tuple))
    if single != (not isinstance(else_branch, (list, tuple))):
        raise TypeError("ifelse: give both branches as Variables or both as lists")
    thens = [then_branch] if single else list(then_branch)
    elses = [else_branch] if single else list(else_branch)
    if len(thens) != len(elses):
        raise ValueError(
            f"ifelse: then_branch has {len(thens)} values but else_branch has {len(elses)}"
        )
    if not thens:
        raise ValueError("ifelse: the branches are empty")
    thens, elses = zip(*(_match(t, e) for t, e in zip(thens, elses)))
    outputs = IfElse(len(thens))(condition, *thens, *elses, name=name, return_list=True)
    return outputs[0] if single else outputs


def _match(then_value: Any, else_value: Any) -> tuple[Any, Any]:
    """Convert a non-Variable branch value to the dtype of the other branch (if safe)."""
    from workbench.core.tensor.variable import as_tensor_variable

    def convert(value: Any, other: Any) -> Any:
        if isinstance(value, Variable) or not isinstance(other, Variable):
            return value
        dtype = getattr(other.type, "dtype", None)
        if dtype is None:
            return value
        source = value if is_python_scalar(value) else np.asarray(value).dtype
        if can_cast(source, dtype):
            return as_tensor_variable(value, dtype=dtype)
        return value

    return convert(then_value, else_value), convert(else_value, then_value)
