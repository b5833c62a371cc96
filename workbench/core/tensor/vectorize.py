"""vectorize_graph and vectorize: a graph written for one example, batched over leading
dimensions (like `jax.vmap`, or `numpy.vectorize` with a signature).

`vectorize_graph(outputs, replace={x: batched_x})` rebuilds the graph of
`outputs` with each `x` replaced by a `batched_x` that has extra leading (batch)
dimensions; every node depending on them is rebuilt batched:

- an Elemwise, DimShuffle or reduction gets the batch dimensions in front of
  its own (no loop); a matrix-matrix Dot becomes a MatMul over the stack;
- an Op with a `gufunc_signature` (the linear algebra of `wt.linalg`, a
  Blockwise) already batches: it is applied to the batched inputs, aligned;
- any other Op is wrapped in a `Blockwise` over the batch, with every
  dimension of the node a core dimension.

Inputs with fewer batch dimensions than others are broadcast against them.
`register_vectorizer(OpClass)(fn)` teaches it another Op: `fn(op, node,
new_inputs, batch_ndims)` returns the new outputs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.core.graph.basic import Apply, Variable, ancestors, graph_inputs, io_toposort
from workbench.core.tensor.blockwise import Blockwise, core_signature_of, parse_gufunc_signature
from workbench.core.tensor.elemwise import DimShuffle, Elemwise
from workbench.core.tensor.linalg.products import Dot, MatMul
from workbench.core.tensor.reduction import CAReduce
from workbench.core.tensor.shape import Shape, Shape_i
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["as_blockwise", "register_vectorizer", "vectorize", "vectorize_graph",
           "vectorize_node"]

Vectorizer = Callable[[Any, Apply, list[Variable], list[int]], list[Variable]]
_vectorizers: dict[type, Vectorizer] = {}


def register_vectorizer(*op_classes: type) -> Callable[[Vectorizer], Vectorizer]:
    """Decorator: `fn(op, node, new_inputs, batch_ndims)` batches nodes of these classes."""
    def decorate(fn: Vectorizer) -> Vectorizer:
        for cls in op_classes:
            _vectorizers[cls] = fn
        return fn

    return decorate


def _align(var: Variable, batch: int, nb: int, old_batch: int, ob: int) -> Variable:
    """`var` (with `batch` new batch dims in front of `old_batch` dims the Op batches over
    itself) padded with broadcastable dims to `nb` new and `ob` old batch dims."""
    if batch == nb and old_batch == ob:
        return var
    order = (("x",) * (nb - batch) + tuple(range(batch)) + ("x",) * (ob - old_batch)
             + tuple(range(batch, var.type.ndim)))
    return DimShuffle(var.type.ndim, order)(var)


def vectorize_node(node: Apply, new_inputs: Sequence[Variable]) -> list[Variable]:
    """The outputs of `node` computed from `new_inputs`, which may have leading batch
    dimensions the node's inputs lack."""
    batch_ndims = []
    for k, (old, new) in enumerate(zip(node.inputs, new_inputs)):
        extra = new.type.ndim - old.type.ndim if isinstance(new.type, TensorType) else 0
        if extra < 0:
            raise ValueError(f"vectorize: input {k} of {node.op} ({old}, {old.type}) was "
                             f"replaced by {new} of type {new.type}, with fewer dimensions")
        batch_ndims.append(extra)
    for base in type(node.op).__mro__:
        fn = _vectorizers.get(base)
        if fn is not None:
            return fn(node.op, node, list(new_inputs), batch_ndims)
    signature = getattr(node.op, "gufunc_signature", None)
    if isinstance(signature, str) and signature:
        return _natively_batched(node.op, node, list(new_inputs), batch_ndims)
    return as_blockwise(node.op, node, list(new_inputs), batch_ndims)


def _natively_batched(op: Any, node: Apply, new_inputs: list[Variable],
                      batch_ndims: list[int]) -> list[Variable]:
    core_in, _ = parse_gufunc_signature(op.gufunc_signature)
    old_batch = [v.type.ndim - len(c) for v, c in zip(node.inputs, core_in)]
    nb, ob = max(batch_ndims), max(old_batch)
    aligned = [_align(v, b, nb, o, ob) for v, b, o in zip(new_inputs, batch_ndims, old_batch)]
    return op(*aligned, return_list=True)


def as_blockwise(op: Any, node: Apply, new_inputs: list[Variable], batch_ndims: list[int]
                 ) -> list[Variable]:
    """`node`'s Op applied to every batch item: a Blockwise with every dimension of the node
    a core dimension (the fallback for Ops without a vectorizer)."""
    for var in (*node.inputs, *node.outputs):
        if not isinstance(var.type, TensorType):
            raise TypeError(f"vectorize: cannot batch {op}: its {var} is of type {var.type}, "
                            "not a tensor")
    return Blockwise(op, core_signature_of(node))(*new_inputs, return_list=True)


@register_vectorizer(Elemwise)
def _vectorize_elemwise(op: Any, node: Apply, new_inputs: list[Variable],
                        batch_ndims: list[int]) -> list[Variable]:
    nb = max(batch_ndims)
    ndim = node.outputs[0].type.ndim
    aligned = [_pad_elemwise(v, b, nb, old.type.ndim, ndim)
               for v, b, old in zip(new_inputs, batch_ndims, node.inputs)]
    return op(*aligned, return_list=True)


def _pad_elemwise(var: Variable, batch: int, nb: int, core: int, ndim: int) -> Variable:
    order = (("x",) * (nb - batch) + tuple(range(batch)) + ("x",) * (ndim - core)
             + tuple(range(batch, batch + core)))
    if order == tuple(range(var.type.ndim)):
        return var
    return DimShuffle(var.type.ndim, order)(var)


@register_vectorizer(DimShuffle)
def _vectorize_dimshuffle(op: Any, node: Apply, new_inputs: list[Variable],
                          batch_ndims: list[int]) -> list[Variable]:
    (nb,) = batch_ndims
    order = tuple(range(nb)) + tuple(o if o == "x" else o + nb for o in op.new_order)
    return [DimShuffle(op.input_ndim + nb, order)(new_inputs[0])]


@register_vectorizer(CAReduce)
def _vectorize_careduce(op: Any, node: Apply, new_inputs: list[Variable],
                        batch_ndims: list[int]) -> list[Variable]:
    (nb,) = batch_ndims
    ndim = node.inputs[0].type.ndim
    axes = range(ndim) if op.axis is None else op.axis
    batched = copy.copy(op)
    batched.axis = tuple(a + nb for a in axes)
    return [batched(new_inputs[0])]


@register_vectorizer(Shape, Shape_i)
def _vectorize_shape(op: Any, node: Apply, new_inputs: list[Variable],
                     batch_ndims: list[int]) -> list[Variable]:
    """Every item of a batch has the same core shape: the batched input's shape past its
    batch dimensions, with no Blockwise (so lengths stay known for an empty batch)."""
    (nb,) = batch_ndims
    if isinstance(op, Shape_i):
        return [Shape_i(op.i + nb)(new_inputs[0])]
    return [Shape()(new_inputs[0])[nb:]]


@register_vectorizer(Dot)
def _vectorize_dot(op: Any, node: Apply, new_inputs: list[Variable],
                   batch_ndims: list[int]) -> list[Variable]:
    """A matrix-matrix Dot batches as one MatMul (BLAS over the stack); products with a
    vector as a Blockwise (a batched vector would read as a matrix)."""
    if any(v.type.ndim != 2 for v in node.inputs):
        return as_blockwise(op, node, new_inputs, batch_ndims)
    nb = max(batch_ndims)
    aligned = [_align(v, b, nb, 0, 0) for v, b in zip(new_inputs, batch_ndims)]
    return [MatMul()(*aligned)]


def vectorize_graph(outputs: Variable | Sequence[Variable],
                    replace: Mapping[Variable, Any]) -> Any:
    """`outputs` rebuilt with each key of `replace` replaced by its value, which may have
    extra leading (batch) dimensions (see the module docstring). Returns a Variable for a
    Variable, else a list."""
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    mapping: dict[Variable, Variable] = {}
    for old, new in replace.items():
        new = as_tensor_variable(new) if not isinstance(new, Variable) else new
        if isinstance(old.type, TensorType) and (
                not isinstance(new.type, TensorType) or new.type.dtype != old.type.dtype
                or new.type.ndim < old.type.ndim):
            raise TypeError(f"vectorize_graph: {old} ({old.type}) must be replaced by a tensor "
                            f"of dtype {old.type.dtype} with at least {old.type.ndim} "
                            f"dimensions, got {new} ({new.type})")
        mapping[old] = new
    for node in io_toposort(graph_inputs(outs), outs):
        new_inputs = [mapping.get(v, v) for v in node.inputs]
        if all(a is b for a, b in zip(new_inputs, node.inputs)):
            continue
        mapping.update(zip(node.outputs, vectorize_node(node, new_inputs)))
    replaced = [(old, mapping[old]) for old in replace]
    result = [_keep_batch(o, mapping[o], replaced) if o in mapping and o not in replace
              else mapping.get(o, o) for o in outs]
    return result[0] if single else result


def _keep_batch(old: Variable, new: Variable, replaced: list[tuple[Variable, Variable]]
                ) -> Variable:
    """`new` with the batch dimensions of the batched inputs `old` depends on, broadcast in
    where its value is the same for every item (a shape, read once from the batched input):
    as a loop of calls stacks it."""
    from workbench.core.tensor.reshape import broadcast_to

    if not isinstance(old.type, TensorType):
        return new
    upstream = set(ancestors([old]))
    extra = [(n.type.ndim - o.type.ndim, n) for o, n in replaced if o in upstream]
    nb, source = max(extra, key=lambda p: p[0], default=(0, None))
    if source is None or new.type.ndim - old.type.ndim >= nb:
        return new
    shape = ([Shape_i(i)(source) for i in range(nb)]
             + [Shape_i(i)(new) for i in range(new.type.ndim - old.type.ndim, new.type.ndim)])
    return broadcast_to(new, shape)


def vectorize(fn: Callable[..., Any], signature: str | None = None) -> Callable[..., Any]:
    """`fn`, written for single examples, as a function of batched inputs.

    `signature` ("(m,n),(n)->(m)") names the core dimensions of each input: the
    dimensions in front of them are batch dimensions. Without one, every dimension
    of every input is a batch dimension (fn receives scalars).
    """
    core_ins = parse_gufunc_signature(signature)[0] if signature else None

    def batched(*inputs: Any) -> Any:
        tensors = [as_tensor_variable(x) for x in inputs]
        cores = core_ins if core_ins is not None else [()] * len(tensors)
        if len(cores) != len(tensors):
            raise TypeError(f"vectorize: the signature {signature!r} names {len(cores)} "
                            f"inputs, got {len(tensors)}")
        core_vars = []
        for k, (x, core) in enumerate(zip(tensors, cores)):
            if x.type.ndim < len(core):
                raise ValueError(f"vectorize: input {k} ({x.type}) has fewer dimensions than "
                                 f"its core dimensions ({','.join(core)})")
            core_vars.append(TensorType(x.type.dtype, x.type.shape[x.type.ndim - len(core):])(
                x.name))
        core_outputs = fn(*core_vars)
        result = vectorize_graph(core_outputs, dict(zip(core_vars, tensors)))
        return tuple(result) if isinstance(core_outputs, tuple) else result

    return batched
