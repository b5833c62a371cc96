"""Derivatives built on `grad`: `Lop`, `Rop`, `jacobian` and `hessian`.

- `Lop(f, wrt, v)`: the vector-Jacobian product vᵀ·∂f/∂wrt, i.e. `grad` seeded
  with `known_grads={f: v}`.
- `Rop(f, wrt, v)`: the Jacobian-vector product ∂f/∂wrt·v. Forward mode through
  each Op's `R_op`; a node whose Op has none gets its tangents from the
  double-L_op construction Rop(f, x, v) = ∂/∂u ⟨Lop(f, x, u), v⟩ (u a dummy of
  f's type), which works on every Op with a (twice usable) gradient.
- `jacobian(y, x)`: shape ``y.shape + x.shape`` (NumPy's convention), without
  static shapes: a `JacobianOp` evaluates one vector-Jacobian product per
  element of y, seeding `grad` with one-hot tensors (no scan needed); its
  gradient (`JacobianGradOp`) loops the same way over second derivatives. With
  ``vectorize=True`` and a statically known size of y the rows are built
  symbolically instead (one `grad` per row, then stacked), so the result can
  be differentiated to any order.
- `hessian(cost, x)` = jacobian(grad(cost, x), x).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.grad import (
    NullTypeGradError,
    float_zeros_like,
    grad,
    grad_dtype,
    grad_not_implemented,
    is_disconnected,
    is_null,
)
from workbench.core.graph.basic import Apply, Constant, Variable, clone_replace, graph_inputs
from workbench.core.graph.op import Op
from workbench.core.graph.utils import MethodNotDefined

__all__ = ["JacobianGradOp", "JacobianOp", "Lop", "Rop", "hessian", "jacobian"]

#: largest static output size `jacobian(..., vectorize=True)` unrolls symbolically
UNROLL_LIMIT = 1024


def _as_list(value: Any, what: str) -> tuple[list[Any], bool]:
    if isinstance(value, Variable):
        return [value], True
    if isinstance(value, (list, tuple)):
        return list(value), False
    raise TypeError(f"{what} must be a Variable or a list of Variables, got {value!r}")


def _in_given_container(results: list[Any], given: Any) -> Any:
    """`results` in the container `given` came in: one result for a Variable, a tuple
    for a tuple, a list for a list (as PyTensor's jacobian and hessian return them)."""
    if isinstance(given, Variable):
        return results[0]
    return tuple(results) if isinstance(given, tuple) else list(results)


def _tensor(value: Any) -> Variable:
    from workbench.core.tensor.variable import as_tensor_variable

    return value if isinstance(value, Variable) else as_tensor_variable(value)


def Lop(  # noqa: N802 (the traditional name)
    f: Variable | Sequence[Variable],
    wrt: Variable | Sequence[Variable],
    eval_points: Any,
    consider_constant: Sequence[Variable] | None = None,
    disconnected_inputs: str = "raise",
) -> Any:
    """vᵀ·∂f/∂wrt: the gradient of ``sum(f * v)`` wrt `wrt`, with v = `eval_points`.

    `f` and `eval_points` are a Variable each or matching lists; the result
    matches `wrt` (a Variable or a list).
    """
    fs, _ = _as_list(f, "Lop: f")
    vs, _ = _as_list(eval_points if not isinstance(eval_points, np.ndarray) else
                     _tensor(eval_points), "Lop: eval_points")
    if len(fs) != len(vs):
        raise ValueError(f"Lop: {len(fs)} outputs f but {len(vs)} eval_points; give one each")
    return grad(None, wrt, known_grads=dict(zip(fs, vs)), consider_constant=consider_constant,
                disconnected_inputs=disconnected_inputs)


def _rop_forward(fs: list[Variable], wrt: list[Variable], vs: list[Variable],
                 fallback: bool) -> list[Variable | None]:
    """Forward mode through each Op's `R_op`.

    An Op without one raises MethodNotDefined, or with `fallback` has its own
    outputs' tangents built by the double-L_op construction on that node alone.
    """
    from workbench.core.graph.basic import io_toposort

    tangent: dict[Variable, Variable] = dict(zip(wrt, vs))
    for node in io_toposort(wrt, fs):
        points = [tangent.get(v) for v in node.inputs]
        if all(p is None for p in points):
            continue
        try:
            results = node.op.R_op(list(node.inputs), points)
        except MethodNotDefined:
            if not fallback:
                raise
            results = _rop_of_node(node, points)
        if len(results) != len(node.outputs):
            raise TypeError(f"{node.op}.R_op returned {len(results)} results for "
                            f"{len(node.outputs)} outputs")
        for out, r in zip(node.outputs, results):
            if r is not None:
                tangent[out] = r
    return [tangent.get(f_) for f_ in fs]


def _rop_of_node(node: Apply, points: list[Variable | None]) -> list[Variable | None]:
    """The tangents of `node`'s outputs by the double-L_op construction on that node
    alone: its moving inputs (those with a tangent in `points`) are replaced by
    stand-ins, so no derivative flows through the graph above the node. (Taken wrt
    the inputs themselves, a moving input computed from another -- solve_triangular(c,
    c @ b) -- passed its dependence on the other twice: once through the graph, once
    through its own tangent.)"""
    stand_ins = [v.type() if p is not None else v for v, p in zip(node.inputs, points)]
    local = node.clone_with_new_inputs(stand_ins)
    moving = [(s, p) for s, p in zip(stand_ins, points) if p is not None]
    results = _rop_double_lop(list(local.outputs), [s for s, _ in moving],
                              [p for _, p in moving])
    back = {s: v for s, v, p in zip(stand_ins, node.inputs, points) if p is not None}
    back.update(zip(local.outputs, node.outputs))
    return [None if r is None else clone_replace(r, back) for r in results]


def _rop_double_lop(fs: list[Variable], wrt: list[Variable], vs: list[Variable]
                    ) -> list[Variable | None]:
    """Rop(f, x, v) = ∂/∂u ⟨Lop(f, x, u), v⟩, u a dummy variable of f's type."""
    us = [f_.type.clone(dtype=grad_dtype(f_))(f"rop_u{k}") for k, f_ in enumerate(fs)]
    lops = grad(None, wrt, known_grads=dict(zip(fs, us)), disconnected_inputs="ignore",
                return_disconnected="disconnected", null_gradients="return")
    seeds: dict[Variable, Variable] = {}
    for x, lop, v in zip(wrt, lops, vs):
        if is_null(lop) and grad_dtype(x) == getattr(x.type, "dtype", None):
            # undefined wrt a float input: so is the directional derivative
            raise NullTypeGradError(f"Rop: the derivative with respect to {x} is undefined: "
                                    f"{lop.type.why_null}")
        if not _is_marker(lop):  # (an integer input's tangent is zero: skip it)
            seeds[lop] = seeds[lop] + v if lop in seeds else v
    if not seeds:
        return [None] * len(fs)
    rows = grad(None, us, known_grads=seeds, disconnected_inputs="ignore",
                return_disconnected="disconnected")
    # the result is linear in u: its value never depends on u, but its graph may
    # read u's shape, so u is replaced by f (same shape) to leave no dummy input.
    from workbench.core.tensor.basic import cast

    replace = {u: cast(f_, u.type.dtype) for u, f_ in zip(us, fs)}
    out: list[Variable | None] = []
    for row in rows:
        out.append(None if _is_marker(row) else clone_replace(row, replace))
    return out


def _is_marker(var: Variable) -> bool:
    return is_disconnected(var) or is_null(var)


def Rop(  # noqa: N802 (the traditional name)
    f: Variable | Sequence[Variable],
    wrt: Variable | Sequence[Variable],
    eval_points: Any,
    use_op_rop_implementation: bool | None = None,
) -> Any:
    """∂f/∂wrt·v: the Jacobian-vector product of `f` with v = `eval_points` (matching `wrt`).

    `use_op_rop_implementation`: None (default) goes forward node by node with
    each Op's `R_op`, and for an Op without one uses the double-L_op
    construction on that node; True requires every `R_op` (MethodNotDefined
    names the Op lacking one); False uses the double-L_op construction on the
    whole graph. Outputs not depending on `wrt` get zeros. The result matches
    `f` (a Variable or a list).
    """
    fs, single = _as_list(f, "Rop: f")
    wrts, _ = _as_list(wrt, "Rop: wrt")
    vs, _ = _as_list(eval_points, "Rop: eval_points")
    if len(wrts) != len(vs):
        raise ValueError(f"Rop: {len(wrts)} wrt but {len(vs)} eval_points; give one each")
    vs = [_tensor(v) for v in vs]
    for k, (w, v) in enumerate(zip(wrts, vs)):
        if getattr(w.type, "ndim", None) != getattr(v.type, "ndim", None):
            raise TypeError(f"Rop: eval_points[{k}] has type {v.type}; wrt[{k}] has type "
                            f"{w.type} (they need the same rank)")
    if use_op_rop_implementation is False:
        results = _rop_double_lop(fs, wrts, vs)
    else:
        results = _rop_forward(fs, wrts, vs, fallback=use_op_rop_implementation is None)
    final = []
    for f_, r in zip(fs, results):
        if r is None:
            r = float_zeros_like(f_)
        else:
            d = grad_dtype(f_)
            if r.type.dtype != d:
                from workbench.core.tensor.basic import cast

                r = cast(r, d)
        final.append(r)
    return final[0] if single else final


# -- jacobian ---------------------------------------------------------------------------------


class _InnerGraphOp(Op):
    """An Op whose parameters are an inner graph: compared by identity, never folded."""

    __props__ = ()  # declared, but equality is identity (below): the parameters are a graph

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        return False  # one inner call per element: not worth doing while compiling


def _one_hot_seeds(shape: tuple[int, ...], dtype: Any) -> Any:
    """The one-hot arrays of `shape`, one per element in C order (the same array, changed
    in place between yields)."""
    seed = np.zeros(shape, dtype=dtype)
    flat = seed.reshape(-1)
    for i in range(flat.size):
        flat[i] = 1
        yield i, seed
        flat[i] = 0


class JacobianOp(_InnerGraphOp):
    """The Jacobians of `expression` wrt each of `wrt`, one vector-Jacobian product per row.

    Holds an inner graph (`expression`, the `wrt` and their one-hot-seeded
    gradients, over `inner_inputs`, which stand for the node's inputs); `perform`
    compiles it once and loops over the elements of the expression's value, so no
    static shape is needed. Its gradient is a `JacobianGradOp` (the same loop over
    second derivatives), so a Jacobian can be differentiated once more.
    """

    def __init__(self, expression: Variable, wrt: list[Variable], seed: Variable,
                 rows: list[Variable], inputs: list[Variable]) -> None:
        self.expression = expression
        self.wrt = wrt
        self.seed = seed
        self.rows = rows
        self.inner_inputs = inputs
        self._compiled: tuple[Any, Any] | None = None

    def __str__(self) -> str:
        return f"JacobianOp{{{len(self.wrt)} wrt}}"

    def make_node(self, *inputs: Any) -> Apply:  # type: ignore[override]
        from workbench.core.tensor.type import TensorType

        if len(inputs) != len(self.inner_inputs):
            raise TypeError(f"{self} takes {len(self.inner_inputs)} inputs, got {len(inputs)}")
        outputs = [TensorType(grad_dtype(w), tuple(self.expression.type.shape)
                              + tuple(w.type.shape))() for w in self.wrt]
        return Apply(self, list(inputs), outputs)

    def _functions(self) -> tuple[Any, Any]:
        if self._compiled is None:
            from workbench.core.compile.function import function

            values = function(self.inner_inputs, [self.expression] + self.wrt,
                              on_unused_input="ignore")
            rows = function(self.inner_inputs + [self.seed], self.rows, on_unused_input="ignore")
            self._compiled = (values, rows)
        return self._compiled

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        f_values, f_rows = self._functions()
        y, *wrt_values = f_values(*inputs)
        y = np.asarray(y)
        jacobians = [np.zeros((y.size,) + np.shape(w), dtype=out.type.dtype.numpy)
                     for w, out in zip(wrt_values, node.outputs)]
        for i, seed in _one_hot_seeds(y.shape, self.seed.type.dtype.numpy):
            for jac, row in zip(jacobians, f_rows(*inputs, seed)):
                jac[i] = row
        for cell, jac, w in zip(output_storage, jacobians, wrt_values):
            cell[0] = jac.reshape(y.shape + np.shape(w))

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``d/du sum_k <J_k, G_k>`` = the sum over the elements i of the expression of
        ``d/du sum_k <row_k(e_i), G_k[i]>``: a `JacobianGradOp` loops over them."""
        from workbench.core.tensor.reduction import as_grad_of
        from workbench.core.tensor.reduction import sum as sum_

        cotangents = [row.type("jacobian_cotangent") for row in self.rows]
        total = sum_(self.rows[0] * cotangents[0])
        for row, cot in zip(self.rows[1:], cotangents[1:]):
            total = total + sum_(row * cot)
        inner = grad(total, self.inner_inputs, disconnected_inputs="ignore")
        given = [float_zeros_like(out) if is_disconnected(g) else g
                 for g, out in zip(output_grads, outputs)]
        op = JacobianGradOp(self, cotangents, inner)
        return [as_grad_of(g, v) for g, v in zip(op.make_node(*inputs, *given).outputs, inputs)]


class JacobianGradOp(_InnerGraphOp):
    """The gradient of a `JacobianOp` node: for each element i of the expression, the
    gradient of ``sum_k <row_k(e_i), G_k[i]>`` wrt the inputs, summed over i.

    Inputs: the JacobianOp's inputs, then the output gradients G_k (shape
    ``expression.shape + wrt_k.shape``). Its own gradient is not implemented (a third
    derivative through the loop); use ``jacobian(..., vectorize=True)`` on an expression
    of known static shape, whose rows are graph nodes, for more.
    """

    def __init__(self, jacobian: JacobianOp, cotangents: list[Variable],
                 grads: list[Variable]) -> None:
        self.jacobian = jacobian
        self.cotangents = cotangents
        self.grads = grads
        self._compiled: tuple[Any, Any] | None = None

    def __str__(self) -> str:
        return f"JacobianGradOp{{{len(self.grads)} inputs}}"

    def make_node(self, *inputs: Any) -> Apply:  # type: ignore[override]
        n = len(self.grads)
        if len(inputs) != n + len(self.cotangents):
            raise TypeError(f"{self} takes {n + len(self.cotangents)} inputs, got {len(inputs)}")
        return Apply(self, list(inputs), [g.type() for g in self.grads])

    def _functions(self) -> tuple[Any, Any]:
        if self._compiled is None:
            from workbench.core.compile.function import function

            jac = self.jacobian
            value = function(jac.inner_inputs, jac.expression, on_unused_input="ignore")
            grads = function(jac.inner_inputs + [jac.seed] + self.cotangents, self.grads,
                             on_unused_input="ignore")
            self._compiled = (value, grads)
        return self._compiled

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        f_value, f_grads = self._functions()
        n = len(self.grads)
        values, given = list(inputs[:n]), inputs[n:]
        y = np.asarray(f_value(*values))
        per_element = [np.asarray(g).reshape((y.size,) + np.shape(g)[y.ndim:]) for g in given]
        totals = [np.zeros(np.shape(v), dtype=out.type.dtype.numpy)
                  for v, out in zip(values, node.outputs)]
        for i, seed in _one_hot_seeds(y.shape, self.jacobian.seed.type.dtype.numpy):
            for total, part in zip(totals, f_grads(*values, seed, *[g[i] for g in per_element])):
                total += part
        for cell, total in zip(output_storage, totals):
            cell[0] = total

    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        return [grad_not_implemented(self, i, v, "a third derivative through the loop; use "
                                     "jacobian(..., vectorize=True) on an expression of known "
                                     "static shape") for i, v in enumerate(inputs)]


def _jacobian_op(expression: Variable, wrts: list[Variable], consider_constant: Any,
                 disconnected_inputs: str) -> list[Variable]:
    from workbench.core.link.shared import SharedVariable

    seed = expression.type.clone(dtype=grad_dtype(expression))("jacobian_seed")
    rows = grad(None, wrts, known_grads={expression: seed}, consider_constant=consider_constant,
                disconnected_inputs=disconnected_inputs)
    roots = [v for v in graph_inputs([expression] + wrts + rows)
             if not isinstance(v, Constant) and v is not seed]
    # Shared variables are inputs of the node like the others (their values passed in),
    # so gradients through the node reach them; the inner graph reads stand-ins.
    stand_ins = [(v, v.type(name=v.name)) for v in roots if isinstance(v, SharedVariable)]
    inner = [expression, *wrts, *rows]
    if stand_ins:
        inner = list(clone_replace(inner, stand_ins))
    inner_inputs = [dict(stand_ins).get(v, v) for v in roots]
    n = len(wrts)
    op = JacobianOp(inner[0], inner[1:1 + n], seed, inner[1 + n:], inner_inputs)
    return list(op.make_node(*roots).outputs)


def _jacobian_unrolled(expression: Variable, wrts: list[Variable], consider_constant: Any,
                       disconnected_inputs: str) -> list[Variable]:
    from workbench.core.tensor.join import stack
    from workbench.core.tensor.reshape import reshape
    from workbench.core.tensor.shape import shape
    from workbench.core.tensor.variable import constant

    static = expression.type.shape
    size = int(np.prod(static, dtype=np.int64))
    dtype = grad_dtype(expression).numpy
    per_wrt: list[list[Variable]] = [[] for _ in wrts]
    for i in range(size):
        onehot = np.zeros(size, dtype=dtype)
        onehot[i] = 1
        rows = grad(None, wrts, known_grads={expression: constant(onehot.reshape(static))},
                    consider_constant=consider_constant,
                    disconnected_inputs=disconnected_inputs)
        for k, row in enumerate(rows):
            per_wrt[k].append(row)
    out = []
    for w, rows in zip(wrts, per_wrt):
        if size == 0:
            out.append(float_zeros_like(w).dimshuffle(*(["x"] * len(static)),
                                                       *range(w.type.ndim)))
            continue
        stacked = stack(rows, axis=0)
        if len(static) == 1:
            out.append(stacked)
            continue
        from workbench.core.tensor.join import concatenate

        target = concatenate([constant(np.asarray(static, dtype=np.int64)), shape(w)])
        out.append(reshape(stacked, target, ndim=len(static) + w.type.ndim))
    return out


def _unrollable(expression: Variable) -> bool:
    """Whether the rows of the Jacobian of `expression` can be built as graph nodes: its
    static shape is known and has at most `UNROLL_LIMIT` elements."""
    static = expression.type.shape
    return all(s is not None for s in static) and math.prod(static) <= UNROLL_LIMIT


def jacobian(
    expression: Variable,
    wrt: Variable | Sequence[Variable],
    vectorize: bool = False,
    consider_constant: Sequence[Variable] | None = None,
    disconnected_inputs: str = "raise",
) -> Any:
    """∂expression/∂wrt with shape ``expression.shape + wrt.shape`` (one result per `wrt`).

    A 0-d expression gives `grad`. Otherwise, by default a `JacobianOp` computes
    one vector-Jacobian product per element at run time (any shapes; differentiable
    once more). With `vectorize=True` and an expression of known static shape of at
    most `UNROLL_LIMIT` elements the rows are built as graph nodes, differentiable
    to any order; other shapes fall back to the `JacobianOp`. `wrt` as a list or tuple
    gives a list or tuple.
    """
    wrts, single = _as_list(wrt, "jacobian: wrt")
    expression = _tensor(expression)
    if getattr(expression.type, "ndim", None) is None:
        raise TypeError(f"jacobian: the expression must be a tensor, got type {expression.type}")
    if expression.type.ndim == 0:
        result = grad(expression, wrts, consider_constant=consider_constant,
                      disconnected_inputs=disconnected_inputs)
    elif vectorize and _unrollable(expression):
        result = _jacobian_unrolled(expression, wrts, consider_constant, disconnected_inputs)
    else:
        result = _jacobian_op(expression, wrts, consider_constant, disconnected_inputs)
    return _in_given_container(result, wrt)


def hessian(
    cost: Variable,
    wrt: Variable | Sequence[Variable],
    consider_constant: Sequence[Variable] | None = None,
    disconnected_inputs: str = "raise",
    vectorize: bool = False,
) -> Any:
    """∂²cost/∂wrt², shape ``wrt.shape + wrt.shape``, for each `wrt` (= jacobian of grad)."""
    wrts, single = _as_list(wrt, "hessian: wrt")
    if getattr(cost.type, "ndim", None) != 0:
        raise TypeError(f"hessian: the cost must be a scalar (0-d), but {cost} has type "
                        f"{cost.type}")
    out = []
    for w in wrts:
        g = grad(cost, w, consider_constant=consider_constant,
                 disconnected_inputs=disconnected_inputs)
        out.append(jacobian(g, w, vectorize=vectorize, consider_constant=consider_constant,
                            disconnected_inputs="ignore"))
    return _in_given_container(out, wrt)
