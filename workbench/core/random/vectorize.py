"""vectorize_graph through a random draw: the draw made once with the batch in its shape.

A draw whose parameters gained batch dimensions becomes one draw of the batched
shape (parameters aligned like NumPy's gufuncs: the new batch dimensions in front
of the dimensions the distribution already broadcast over; an explicit `size`
gets the batch lengths in front). Each batch item thus gets independent draws,
not the same noise repeated. The generator state and `size` cannot be batched, nor
the parameters of choice and permutation (`batched_params` False: a parameter is a
whole population, so the batched draw would shuffle or choose across items).
"""

from __future__ import annotations

from workbench.core.graph.basic import Apply, Variable
from workbench.core.random.op import RandomVariable
from workbench.core.tensor.elemwise import DimShuffle, broadcast_length
from workbench.core.tensor.join import as_int_vector, vector_entries
from workbench.core.tensor.shape import shape_tuple
from workbench.core.tensor.vectorize import register_vectorizer

__all__ = ["vectorize_random_variable"]


@register_vectorizer(RandomVariable)
def vectorize_random_variable(op: RandomVariable, node: Apply, new_inputs: list[Variable],
                              batch_ndims: list[int]) -> list[Variable]:
    rng, size, *params = new_inputs
    if batch_ndims[0] or batch_ndims[1]:
        raise TypeError(f"vectorize: {op} cannot batch over its generator state or its size")
    if not op.batched_params and any(batch_ndims[2:]):
        raise TypeError(
            f"vectorize: {op.method} ({op}) cannot batch its parameters: its draw is one "
            f"{op.method} of a whole population, and one draw of the batched population "
            f"would not be one {op.method} per batch item; loop over the batch instead")
    old_params = node.inputs[2:]
    n_size = node.inputs[1].type.shape[0]
    old_batch = [p.type.ndim - nd for p, nd in zip(old_params, op.ndims_params)]
    ob = n_size if n_size else max(old_batch, default=0)
    nb = max(batch_ndims[2:], default=0)
    aligned = []
    for var, b, o in zip(params, batch_ndims[2:], old_batch):
        order = (("x",) * (nb - b) + tuple(range(b)) + ("x",) * (ob - o)
                 + tuple(range(b, var.type.ndim)))
        aligned.append(var if order == tuple(range(var.type.ndim)) else
                       DimShuffle(var.type.ndim, order)(var))
    if n_size:
        lengths = []
        for d in range(nb):
            candidates = [shape_tuple(p)[d] for p in aligned if p.type.shape[d] != 1]
            lengths.append(broadcast_length(candidates) if candidates else 1)
        size = as_int_vector([*lengths, *vector_entries(node.inputs[1])])
    return op.make_node(rng, size, *aligned).outputs
