"""Rewrites of random draws.

`local_dimshuffle_rv_lift`: a DimShuffle that only inserts length-1 dimensions
into a scalar distribution's draw is folded into the draw's `size` (and its
parameters' shapes): ``normal(mu, s, size=(3, 4)).dimshuffle(0, "x", 1)`` becomes
``normal(mu', s', size=(3, 1, 4))``. Exact: NumPy fills a draw in C order, which
inserted length-1 dimensions do not change, so the values are the same. The
draw's next generator state is replaced too, so the state is advanced once.
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.random.op import RandomVariable
from workbench.core.rewrite.db import register_canonicalize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.tensor.elemwise import DimShuffle
from workbench.core.tensor.join import as_int_vector, vector_entries

__all__ = ["local_dimshuffle_rv_lift"]


@register_canonicalize
@node_rewriter([DimShuffle])
def local_dimshuffle_rv_lift(fgraph: Any, node: Apply) -> Any:
    """``DimShuffle{inserting 1s}(draw) -> draw of the new shape`` (see the module)."""
    draw = node.inputs[0]
    rv = draw.owner
    if rv is None or not isinstance(rv.op, RandomVariable) or rv.op.ndim_supp != 0 \
            or draw is not rv.outputs[1] or len(fgraph.clients[draw]) != 1:
        return None
    order = node.op.new_order
    if [d for d in order if d != "x"] != list(range(draw.type.ndim)):
        return None  # transposes or drops a dimension: not the same sequence of draws
    rng, size, *params = rv.inputs
    new_params = []
    for p, nd in zip(params, rv.op.ndims_params):
        batch = p.type.ndim - nd
        padded = DimShuffle(p.type.ndim, ("x",) * (draw.type.ndim - batch)
                            + tuple(range(p.type.ndim)))(p) if batch < draw.type.ndim else p
        new_params.append(DimShuffle(padded.type.ndim, order)(padded))
    new_size = size
    if size.type.shape[0]:
        entries = vector_entries(size)
        new_size = as_int_vector([1 if d == "x" else entries[d] for d in order])
    next_rng, new_draw = rv.op.make_node(rng, new_size, *new_params).outputs
    return {node.outputs[0]: new_draw, rv.outputs[0]: next_rng}
