"""Blockwise: a core Op applied over leading batch dimensions, as a NumPy gufunc.

`Blockwise(core_op, "(m,k),(k,n)->(m,n)")` takes inputs whose last dimensions
are the core dimensions named in the signature and whose leading dimensions
are batch dimensions, broadcast against each other like NumPy's. Each batch
item is one application of `core_op`. This is what `vectorize_graph` uses for
an Op that has no batched form of its own.

- Running: `perform` loops over the batch in Python, calling the core Op's
  `perform` on each item; the C linker runs one C loop over the batch calling
  the core Op's compiled node function on views of each item (link/c/ops/
  blockwise.py; `perform` when the core Op has no C); the gpu linker maps the
  core Op's torch kernel over the batch with `torch.vmap`.
- Gradients: the core Op's gradient graph, vectorized over the same batch;
  inputs that were broadcast along a batch dimension get their gradients summed.
- Rewrites (rewrite/rules/blockwise.py): a Blockwise whose batch dimensions are
  all 1 becomes its core Op; a Blockwise of an Elemwise becomes the Elemwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.tensor.elemwise import broadcast_static_shapes
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["Blockwise", "core_signature_of", "parse_gufunc_signature"]

Signature = tuple[list[tuple[str, ...]], list[tuple[str, ...]]]


def parse_gufunc_signature(signature: str) -> Signature:
    """``"(m,n),(n)->(m)"`` -> ``([("m", "n"), ("n",)], [("m",)])`` (ValueError if malformed)."""
    text = signature.replace(" ", "")
    if not re.fullmatch(r"(\([\w,]*\))(,\([\w,]*\))*->(\([\w,]*\))(,\([\w,]*\))*", text):
        raise ValueError(f"not a gufunc signature: {signature!r} (expected e.g. "
                         "'(m,n),(n)->(m)')")
    ins, outs = text.split("->")

    def groups(part: str) -> list[tuple[str, ...]]:
        return [tuple(d for d in g.split(",") if d) for g in re.findall(r"\(([^)]*)\)", part)]

    return groups(ins), groups(outs)


def core_signature_of(node: Apply) -> str:
    """The signature of `node` taken as one core application: its Op's own
    `gufunc_signature` if it has one, else every dimension of every input and
    output a core dimension of its own name: ``"(a,b),(c)->(d)"``."""
    own = getattr(node.op, "gufunc_signature", None)
    if isinstance(own, str) and own:
        return own

    names = (f"{chr(97 + n % 26)}{n // 26 or ''}" for n in range(10**6))

    def group(ndim: int) -> str:
        return "(" + ",".join(next(names) for _ in range(ndim)) + ")"

    ins = ",".join(group(v.type.ndim) for v in node.inputs)
    outs = ",".join(group(v.type.ndim) for v in node.outputs)
    return f"{ins}->{outs}"


class Blockwise(Op):
    """`core_op` applied to every item of the batch dimensions (see the module docstring)."""

    __props__ = ("core_op", "signature")

    def __init__(self, core_op: Op, signature: str | None = None) -> None:
        if signature is None:
            signature = getattr(core_op, "gufunc_signature", None)
            if not isinstance(signature, str) or not signature:
                raise TypeError(f"Blockwise({core_op}) needs a signature: the Op declares no "
                                "gufunc_signature")
        self.core_op = core_op
        self.signature = signature.replace(" ", "")
        self.core_inputs, self.core_outputs = parse_gufunc_signature(self.signature)
        self._core_nodes: dict[tuple[Any, ...], Apply] = {}

    def __str__(self) -> str:
        return f"Blockwise{{{self.core_op}, {self.signature}}}"

    # -- building ---------------------------------------------------------------------
    def core_node(self, core_types: Sequence[TensorType]) -> Apply:
        """A node of the core Op on fresh inputs of `core_types` (one per kind)."""
        key = tuple(core_types)
        node = self._core_nodes.get(key)
        if node is None:
            node = self.core_op.make_node(*(t() for t in core_types))
            self._core_nodes[key] = node
        return node

    def make_node(self, *inputs: Any) -> Apply:
        inputs = [as_tensor_variable(v) for v in inputs]
        if len(inputs) != len(self.core_inputs):
            raise TypeError(f"{self} takes {len(self.core_inputs)} inputs, got {len(inputs)}")
        batch_ndims = []
        for k, (var, core) in enumerate(zip(inputs, self.core_inputs)):
            if var.type.ndim < len(core):
                raise ValueError(f"{self}: input {k} ({var}, {var.type}) has fewer dimensions "
                                 f"than its core dimensions ({','.join(core)})")
            batch_ndims.append(var.type.ndim - len(core))
        nb = max(batch_ndims, default=0)
        batch = broadcast_static_shapes([(1,) * (nb - b) + tuple(v.type.shape[:b])
                                         for v, b in zip(inputs, batch_ndims)]) if nb else ()
        if batch is None:
            raise ValueError(f"{self}: the batch dimensions of the inputs "
                             f"{[v.type.shape for v in inputs]} do not broadcast")
        core = self.core_node([TensorType(v.type.dtype, v.type.shape[b:])
                               for v, b in zip(inputs, batch_ndims)])
        if len(core.outputs) != len(self.core_outputs):
            raise ValueError(f"{self}: the signature names {len(self.core_outputs)} outputs, "
                             f"{self.core_op} has {len(core.outputs)}")
        outputs = [TensorType(o.type.dtype, tuple(batch) + tuple(o.type.shape))()
                   for o in core.outputs]
        return Apply(self, inputs, outputs)

    def batch_ndim(self, node: Apply) -> int:
        return node.outputs[0].type.ndim - len(self.core_outputs[0])

    def _core_node_of(self, node: Apply) -> Apply:
        return self.core_node([TensorType(v.type.dtype, v.type.shape[v.type.ndim - len(c):])
                               for v, c in zip(node.inputs, self.core_inputs)])

    # -- running ----------------------------------------------------------------------
    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        core = self._core_node_of(node)
        arrays = [np.asarray(x) for x in inputs]
        batch = np.broadcast_shapes(*(a.shape[:a.ndim - len(c)]
                                      for a, c in zip(arrays, self.core_inputs)))
        arrays = [np.broadcast_to(a, batch + a.shape[a.ndim - len(c):])
                  for a, c in zip(arrays, self.core_inputs)]
        results: list[np.ndarray | None] = [None] * len(node.outputs)
        for idx in np.ndindex(*batch):
            cells: list[list[Any]] = [[None] for _ in core.outputs]
            self.core_op.perform(core, [a[idx] for a in arrays], cells)
            for k, (cell, out) in enumerate(zip(cells, node.outputs)):
                value = np.asarray(cell[0])
                if results[k] is None:
                    results[k] = np.empty(batch + value.shape, dtype=out.type.dtype.numpy)
                results[k][idx] = value
        if any(r is None for r in results):  # an empty batch: no item to run
            shapes = self.empty_batch_output_shapes(node, [a.shape for a in inputs], inputs)
            results = [np.empty(shape, dtype=out.type.dtype.numpy)
                       for shape, out in zip(shapes, node.outputs)]
        for k in range(len(node.outputs)):
            output_storage[k][0] = results[k]

    def empty_batch_core_shapes(self, node: Apply) -> list[tuple[Any, ...]]:
        """The core lengths of each output when the batch is empty and no item runs, as
        NumPy's gufuncs find them: per dimension a static length, or ``(k, axis)`` - the
        length of axis `axis` of input `k` - from the signature's names or the core Op's
        infer_shape on the inputs' core lengths; else that infer_shape's expression (a
        Variable of the lengths and the core inputs, see `empty_batch_output_shapes`), or
        None where the core Op cannot say."""
        return self._empty_batch_lengths(node)[0]

    def _empty_batch_lengths(self, node: Apply) -> tuple[list[tuple[Any, ...]],
                                                         dict[Variable, tuple[int, int]]]:
        """empty_batch_core_shapes, and the placeholder length of each `(k, axis)`."""
        from workbench.core.graph.basic import Constant

        batch_ndims = [v.type.ndim - len(c) for v, c in zip(node.inputs, self.core_inputs)]
        named: dict[str, tuple[int, int]] = {}
        for k, (names, b) in enumerate(zip(self.core_inputs, batch_ndims)):
            for i, name in enumerate(names):
                named.setdefault(name, (k, b + i))
        core = self._core_node_of(node)
        placeholders: dict[Variable, tuple[int, int]] = {}
        shapes: list[tuple[Any, ...]] = []
        for k, (var, names, b) in enumerate(zip(core.inputs, self.core_inputs, batch_ndims)):
            if var.type.ndim != len(names):  # expanded by the core Op: lengths unknown here
                shapes.append(tuple(1 if s == 1 else TensorType("int64", ())()
                                    for s in var.type.shape))
                continue
            shape = tuple(TensorType("int64", ())() for _ in names)
            placeholders.update((p, (k, b + i)) for i, p in enumerate(shape))
            shapes.append(shape)
        try:
            inferred = self.core_op.infer_shape(None, core, shapes)
        except Exception:  # noqa: BLE001 (an Op whose infer_shape needs more than lengths)
            inferred = [(None,) * o.type.ndim for o in core.outputs]
        result = []
        for out, names, lengths in zip(core.outputs, self.core_outputs, inferred):
            dims: list[int | tuple[int, int]] = []
            for static, name, length in zip(out.type.shape, names, lengths):
                if static is not None:
                    dims.append(static)
                elif name in named:
                    dims.append(named[name])
                elif isinstance(length, (int, np.integer)):
                    dims.append(int(length))
                elif isinstance(length, Constant):
                    dims.append(int(length.data))
                elif isinstance(length, Variable) and length in placeholders:
                    dims.append(placeholders[length])
                elif isinstance(length, Variable):
                    dims.append(length)
                else:
                    dims.append(None)
            result.append(tuple(dims))
        return result, placeholders

    def empty_batch_output_shapes(self, node: Apply, shapes: Sequence[tuple[int, ...]],
                                  values: Sequence[Any]) -> list[tuple[int, ...]]:
        """The full shapes of the outputs for an empty batch, from the inputs' `shapes` and,
        where a core length is computed from an input's values (a Reshape's shape), the
        `values` of inputs without batch dimensions (the same for every item). A length that
        depends on the values of a batched input (unique, nonzero) is unknowable without an
        item: a ValueError says so rather than a wrong shape. One place for every linker."""
        from workbench.core.graph.basic import Constant, graph_inputs

        core_shapes, placeholders = self._empty_batch_lengths(node)
        core = self._core_node_of(node)
        batch_ndims = [len(s) - len(c) for s, c in zip(shapes, self.core_inputs)]
        batch = tuple(np.broadcast_shapes(*(s[:b] for s, b in zip(shapes, batch_ndims))))
        known: dict[Variable, Any] = {p: np.int64(shapes[k][axis])
                                      for p, (k, axis) in placeholders.items()}
        for k, (var, b) in enumerate(zip(core.inputs, batch_ndims)):
            if b == 0 and var.type.ndim == len(self.core_inputs[k]):
                known[var] = np.asarray(values[k])
        result = []
        for j, core_shape in enumerate(core_shapes):
            dims = []
            for d, length in enumerate(core_shape):
                if isinstance(length, int):
                    dims.append(length)
                elif isinstance(length, tuple):
                    dims.append(int(shapes[length[0]][length[1]]))
                else:
                    needed = [] if length is None else [
                        v for v in graph_inputs([length])
                        if v not in known and not isinstance(v, Constant)]
                    if length is None or needed:
                        raise ValueError(
                            f"{self}: the batch is empty (shape {batch}) and dimension {d} of "
                            f"output {j}'s core depends on the values of a batched input "
                            f"({self.core_op} cannot tell it from the inputs' shapes): there "
                            "is no item to take it from")
                    dims.append(int(_evaluate(length, known)))
            result.append(batch + tuple(dims))
        return result

    # -- differentiation ----------------------------------------------------------------
    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        core = self._core_node_of(node)
        return self.core_op.connection_pattern(core)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        from workbench.core.graph.type import disconnected_type, is_disconnected, is_null
        from workbench.core.tensor.reshape import sum_to
        from workbench.core.tensor.vectorize import vectorize_graph

        # core inputs of the signature's ranks: the core node's own inputs may have been
        # expanded by its Op (an Elemwise pads a scalar to the vector's rank)
        core_ins = [TensorType(x.type.dtype, x.type.shape[x.type.ndim - len(c):])()
                    for x, c in zip(inputs, self.core_inputs)]
        core_node = self.core_op.make_node(*core_ins)
        core_gs = [None if is_disconnected(g) else o.type() for o, g in
                   zip(core_node.outputs, output_grads)]
        core_gs_or_marks = [g if g is not None else disconnected_type() for g in core_gs]
        core_grads = self.core_op.L_op(core_node.inputs, core_node.outputs, core_gs_or_marks)
        core_grads = [g if is_disconnected(g) or is_null(g) or g.type.ndim <= c.type.ndim
                      else sum_to(g, c)  # the gradient of the expansion: sum it back
                      for g, c in zip(core_grads, core_ins)]
        replace = dict(zip(core_ins, inputs))
        replace.update(zip(core_node.outputs, outputs))
        replace.update((c, g) for c, g in zip(core_gs, output_grads) if c is not None)
        result: list[Variable] = []
        for x, g in zip(inputs, core_grads):
            if is_disconnected(g) or is_null(g):
                result.append(g)
                continue
            batched = vectorize_graph(g, replace)
            result.append(sum_to(batched, x) if batched.type.ndim >= x.type.ndim else batched)
        return result

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        """Batch lengths broadcast from the inputs'; core lengths from the core Op's own
        infer_shape (MethodNotDefined when that reads its node's inputs, not the shapes)."""
        from workbench.core.graph.basic import ancestors
        from workbench.core.graph.utils import MethodNotDefined
        from workbench.core.tensor.elemwise import broadcast_length

        nb = self.batch_ndim(node)
        batch_ndims = [v.type.ndim - len(c) for v, c in zip(node.inputs, self.core_inputs)]
        batch: list[Any] = []
        for d in range(nb):
            static = node.outputs[0].type.shape[d]
            candidates = [shape[d - (nb - b)] for v, shape, b in
                          zip(node.inputs, input_shapes, batch_ndims)
                          if d >= nb - b and v.type.shape[d - (nb - b)] != 1]
            batch.append(static if static is not None else
                         broadcast_length(candidates) if candidates else 1)
        core = self._core_node_of(node)
        core_shapes = [tuple(shape[b:]) for shape, b in zip(input_shapes, batch_ndims)]
        core_out = self.core_op.infer_shape(fgraph, core, core_shapes)
        symbolic = [e for shape in core_out for e in shape if isinstance(e, Variable)]
        if set(ancestors(symbolic)) & set(core.inputs):
            raise MethodNotDefined(f"{self}.infer_shape: the core Op's reads its inputs")
        return [tuple(batch) + tuple(shape) for shape in core_out]

    @property
    def gufunc_signature(self) -> str:
        """A Blockwise batches natively over more leading dimensions (vectorize_graph)."""
        return self.signature


def _evaluate(output: Variable, given: dict[Variable, Any]) -> Any:
    """`output` computed in Python (each node's `perform`) from the values `given` of its
    graph's inputs (constants read as they are): a small shape expression, run rarely."""
    from workbench.core.graph.basic import Constant, io_toposort

    values = dict(given)
    for node in io_toposort([v for v in given], [output]):
        cells: list[list[Any]] = [[None] for _ in node.outputs]
        node.op.perform(node, [values[v] if v in values else v.data  # type: ignore[union-attr]
                               for v in node.inputs], cells)
        values.update(zip(node.outputs, (c[0] for c in cells)))
    return output.data if isinstance(output, Constant) else values[output]
