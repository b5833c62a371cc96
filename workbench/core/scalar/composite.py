"""Composite: a small program of scalar Ops packaged as one scalar Op.

The fusion rewrite will replace chains of `Elemwise` nodes (``exp(x) * y``) by a
single ``Elemwise{Composite{(exp(i0) * i1)}}``: one pass over the data instead
of one per operation. Here the Composite is built from an explicit scalar graph
and evaluated in Python/numpy, node by node, through each inner Op's
`ScalarOp.compute` (so a Composite gives bit-for-bit the results of its parts).

The inner graph is cloned and flattened into a *program*: a list of steps
``(op, argument references)`` where a reference names a Composite input
(``("i", k)``), a constant (``("c", dtype, bytes)``) or an output of an earlier
step (``("n", step, output)``). That program is also the Composite's identity:
two Composites with the same program are equal and hash alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from workbench.core.dtypes import Dtype, as_dtype
from workbench.core.graph.basic import Constant, Variable, clone, graph_inputs, io_toposort
from workbench.core.graph.type import NullType
from workbench.core.scalar.basic import (
    ScalarConstant,
    ScalarOp,
    ScalarType,
    get_scalar_type,
    zero_gradient,
)

Ref = tuple[Any, ...]


class _Plan(NamedTuple):
    """Dtypes of every step's outputs, and of the Composite's outputs, for given inputs."""

    step_dtypes: tuple[tuple[Dtype, ...], ...]
    output_dtypes: tuple[Dtype, ...]


class Composite(ScalarOp):
    """A scalar Op computing `outputs` from `inputs` through a graph of ScalarOps.

    `inputs` are ownerless scalar Variables; `outputs` are scalar Variables
    computed from them (and from constants) by ScalarOps. The graph is copied,
    so later changes to the user's Variables do not affect the Composite. It
    prints as its formula with inputs named ``i0, i1, ...``, e.g.
    ``Composite{(exp(i0) * i1)}``; several outputs are separated by commas.

    The output dtypes follow the inner Ops' dtype rules applied to the actual
    input dtypes, so the Composite may be applied to other dtypes than those it
    was built with.
    """

    __props__ = ("signature",)
    input_cast = None
    #: Longer sub-expressions print as "..." (None: never); formulas of long fused
    #: chains would otherwise grow quadratically.
    max_shown: int | None = None

    def __init__(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
                 name: str | None = None) -> None:
        inputs, outputs = list(inputs), list(outputs)
        self._check_graph(inputs, outputs)
        self.inputs, self.outputs = clone(inputs, outputs)
        self.nin = len(self.inputs)
        self.nout = len(self.outputs)
        self._constants: dict[Ref, np.ndarray] = {}
        self._steps, self._output_refs = self._compile()
        self._input_dtypes = tuple(v.type.dtype for v in self.inputs)
        self.signature = (self._input_dtypes, self._steps, self._output_refs)
        self._plans: dict[tuple[Dtype, ...], _Plan] = {}
        self.formula = ", ".join(self._formulas())
        super().__init__(self._rule, name or f"Composite{{{self.formula}}}")

    def __str__(self) -> str:
        return self.name

    # -- building ---------------------------------------------------------------
    @staticmethod
    def _check_graph(inputs: list[Variable], outputs: list[Variable]) -> None:
        if not outputs:
            raise ValueError("Composite needs at least one output")
        for k, var in enumerate(inputs):
            if not isinstance(var, Variable) or not isinstance(var.type, ScalarType):
                raise TypeError(f"Composite input {k} must be a scalar Variable, got {var!r}")
            if var.owner is not None or isinstance(var, Constant):
                raise ValueError(
                    f"Composite input {k} ({var}) must be a free scalar Variable, "
                    "not a constant or a computed value"
                )
        if len(set(inputs)) != len(inputs):
            raise ValueError("Composite inputs must be distinct Variables")
        for k, var in enumerate(outputs):
            if not isinstance(var, Variable) or not isinstance(var.type, ScalarType):
                raise TypeError(f"Composite output {k} must be a scalar Variable, got {var!r}")
        known = set(inputs)
        for var in graph_inputs(outputs, inputs):
            if var not in known and not isinstance(var, Constant):
                raise ValueError(
                    f"Composite outputs depend on {var} ({var.type}), which is neither "
                    "one of its inputs nor a constant"
                )
        for node in io_toposort(inputs, outputs):
            if not isinstance(node.op, ScalarOp):
                raise TypeError(
                    f"Composite can only contain scalar Ops, got {node.op} "
                    f"({type(node.op).__name__})"
                )

    def _constant_ref(self, const: Constant) -> Ref:
        data = np.asarray(const.data)
        ref = ("c", str(const.type.dtype), data.tobytes())
        self._constants[ref] = data
        return ref

    def _compile(self) -> tuple[tuple[tuple[ScalarOp, tuple[Ref, ...]], ...], tuple[Ref, ...]]:
        refs: dict[Variable, Ref] = {var: ("i", k) for k, var in enumerate(self.inputs)}

        def ref_of(var: Variable) -> Ref:
            if var not in refs:  # only constants are left unnamed
                refs[var] = self._constant_ref(var)  # type: ignore[arg-type]
            return refs[var]

        steps = []
        for n, node in enumerate(io_toposort(self.inputs, self.outputs)):
            steps.append((node.op, tuple(ref_of(v) for v in node.inputs)))
            for j, out in enumerate(node.outputs):
                refs[out] = ("n", n, j)
        return tuple(steps), tuple(ref_of(v) for v in self.outputs)

    def _formulas(self) -> list[str]:
        texts: dict[Ref, str] = {}

        def text_of(ref: Ref) -> str:
            if ref[0] == "i":
                return f"i{ref[1]}"
            if ref[0] == "c":
                return repr(self._constants[ref].item())
            return texts[ref]

        limit = self.max_shown
        for n, (op, args) in enumerate(self._steps):
            shown = [text_of(a) for a in args]
            if limit is not None:
                shown = [t if len(t) <= limit else "..." for t in shown]
            if op.symbol is not None and len(shown) == 2:
                expr = f"({shown[0]} {op.symbol} {shown[1]})"
            elif op.symbol is not None and len(shown) == 1:
                expr = f"({op.symbol}{shown[0]})"
            else:
                expr = f"{op.name}({', '.join(shown)})"
            for j in range(op.nout):
                texts[("n", n, j)] = expr if op.nout == 1 else f"{expr}[{j}]"
        return [text_of(r) for r in self._output_refs]

    # -- types ------------------------------------------------------------------
    def _plan(self, input_dtypes: tuple[Dtype, ...]) -> _Plan:
        plan = self._plans.get(input_dtypes)
        if plan is not None:
            return plan
        if len(input_dtypes) != self.nin:
            raise TypeError(f"{self.name} takes {self.nin} inputs, got {len(input_dtypes)}")
        known: dict[Ref, Dtype] = {("i", k): d for k, d in enumerate(input_dtypes)}

        def dtype_of(ref: Ref) -> Dtype:
            return known[ref] if ref[0] != "c" else as_dtype(ref[1])

        step_dtypes = []
        for n, (op, args) in enumerate(self._steps):
            outs = op.output_dtypes([dtype_of(a) for a in args])
            step_dtypes.append(outs)
            for j, d in enumerate(outs):
                known[("n", n, j)] = d
        plan = _Plan(tuple(step_dtypes), tuple(dtype_of(r) for r in self._output_refs))
        self._plans[input_dtypes] = plan
        return plan

    def _rule(self, *input_dtypes: Dtype) -> tuple[Dtype, ...]:
        return self._plan(tuple(as_dtype(d) for d in input_dtypes)).output_dtypes

    # -- running ----------------------------------------------------------------
    def compute(self, inputs: Sequence[np.ndarray], output_dtypes: Sequence[Any]
                ) -> list[np.ndarray]:
        arrays = [np.asarray(x) for x in inputs]
        plan = self._plan(tuple(as_dtype(a.dtype) for a in arrays))
        values: dict[Ref, np.ndarray] = {}

        def value_of(ref: Ref) -> np.ndarray:
            if ref[0] == "i":
                return arrays[ref[1]]
            if ref[0] == "c":
                return self._constants[ref]
            return values[ref]

        for n, ((op, args), dtypes) in enumerate(zip(self._steps, plan.step_dtypes)):
            results = op.compute([value_of(a) for a in args], dtypes)
            for j, result in enumerate(results):
                values[("n", n, j)] = result
        final = []
        for ref, dtype in zip(self._output_refs, output_dtypes):
            result = value_of(ref)
            target = as_dtype(dtype).numpy
            final.append(result if result.dtype == target else result.astype(target))
        return final

    def impl(self, *inputs: Any) -> Any:
        dtypes = self._rule(*(np.asarray(x).dtype for x in inputs))
        results = self.compute(inputs, dtypes)
        return tuple(results) if self.nout > 1 else results[0]

    # -- differentiation ----------------------------------------------------------
    def rebuild(self, inputs: Sequence[Variable]) -> list[Variable]:
        """The inner graph rebuilt on `inputs` (scalar Variables): its outputs."""
        if len(inputs) != self.nin:
            raise TypeError(f"{self.name} takes {self.nin} inputs, got {len(inputs)}")
        values: dict[Ref, Variable] = {("i", k): v for k, v in enumerate(inputs)}

        def value_of(ref: Ref) -> Variable:
            if ref[0] == "c":
                data = self._constants[ref]
                return ScalarConstant(get_scalar_type(data.dtype), data[()])
            return values[ref]

        for n, (op, args) in enumerate(self._steps):
            node = op.make_node(*[value_of(a) for a in args])
            for j, out in enumerate(node.outputs):
                values[("n", n, j)] = out
        return [value_of(r) for r in self._output_refs]

    def grad_terms(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
                   output_grads: Sequence[Variable]) -> list[Variable]:
        """Reverse mode through the inner graph, packaged as one gradient Composite.

        The gradients of all inputs are the outputs of a single new Composite
        of (inputs..., output gradients...), so the gradient of a fused
        Elemwise is again one fused Elemwise. Undefined (NullType) inner
        gradients are returned as they are.
        """
        fresh_in = [get_scalar_type(v.type.dtype)() for v in inputs]
        fresh_g = [get_scalar_type(g.type.dtype)() for g in output_grads]
        grads = scalar_gradients(fresh_in, self.rebuild(fresh_in), fresh_g)
        defined = [k for k, g in enumerate(grads) if not isinstance(g.type, NullType)]
        result: list[Variable] = list(grads)
        if defined:
            grad_op = Composite(fresh_in + fresh_g, [grads[k] for k in defined])
            values = grad_op(*inputs, *output_grads, return_list=True)
            for k, value in zip(defined, values):
                result[k] = value
        return result


def scalar_gradients(inputs: Sequence[Variable], outputs: Sequence[Variable],
                     output_grads: Sequence[Variable | None]) -> list[Variable]:
    """Gradients of a scalar graph by reverse mode: d(sum_j g_j * out_j) / d input_i.

    `output_grads[j]` is the gradient of the cost wrt `outputs[j]` (None: zero).
    Each node's `L_op` gives its input gradients, which are summed over the
    uses of a variable. Inputs the outputs do not depend on get zero; a
    NullType term makes the input's gradient that NullType.
    """
    grads: dict[Variable, Variable] = {}
    for out, g in zip(outputs, output_grads):
        if g is not None:
            grads[out] = _accumulate(grads.get(out), g)
    for node in reversed(io_toposort(list(inputs), list(outputs))):
        if not any(o in grads for o in node.outputs):
            continue
        ograds = [grads[o] if o in grads else zero_gradient(o) for o in node.outputs]
        for var, term in zip(node.inputs, node.op.L_op(node.inputs, node.outputs, ograds)):
            if not isinstance(var, Constant):
                grads[var] = _accumulate(grads.get(var), term)
    return [grads[x] if x in grads else zero_gradient(x) for x in inputs]


def _accumulate(total: Variable | None, term: Variable) -> Variable:
    if total is None or isinstance(term.type, NullType):
        return term
    if isinstance(total.type, NullType):
        return total
    return total + term
