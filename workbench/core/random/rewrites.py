"""Rewrites of random draws.

`local_dimshuffle_rv_lift`: a DimShuffle that only inserts length-1 dimensions
into a scalar distribution's draw (one draw a scalar, every parameter core-scalar:
`ndim_supp`, `ndims_params` and `support_shape` say so) is folded into the draw's
`size` (and its parameters' shapes): ``normal(mu, s, size=(3, 4)).dimshuffle(0, "x",
1)`` becomes ``normal(mu', s', size=(3, 1, 4))``. Exact: NumPy fills a draw in C order, which
inserted length-1 dimensions do not change, so the values are the same. The
draw's next generator state is replaced too, so the state is advanced once.
In FAST_RUN and FAST_COMPILE (canonicalize).

`local_subtensor_rv_lift`: basic indexing of a draw (ints and slices on its batch
dimensions) becomes a smaller draw: ``normal(mu, s, size=(n, m))[i, 1:]`` becomes
``normal(mu'[i, 1:], s'[i, 1:], size=(m - 1,))``, drawing only what is kept. It is
exact *in distribution* only: the batch entries of a draw are independent given the
parameters, so the kept entries of the big draw and the small draw have the same joint
law, but NOT the same numbers for a seeded Generator (the small draw takes the first
values of the stream, the big one's entries at i come later), and the generator is
advanced less. So it is in no default mode: every built-in mode promises the draws of
NumPy's Generator for the same seed and calls. A user who wants it asks for it by name
or by its tag, ``mode.including("local_subtensor_rv_lift")`` (or ``"changes_draws"``);
each lift is then a step of the RewriteTrace under that name, and the new draw is
named ``<name>_lifted`` when the old one had a name. (PyTensor defines the same lift,
`local_subtensor_rv_lift`, and leaves it out of its default rewrites too: PyMC applies
it where only the distribution matters.) Declined where the lift would not be exact in
law or could hide an error: a draw whose batch entries are not independent
(`independent_batch`: choice without replacement, permutation), an index into the
support dimensions, a parameter whose length on an indexed axis may or may not
broadcast (unknown statically), and an integer index not proven in range (the big
draw would raise IndexError; nothing in the small draw would check it).
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.random.op import RandomVariable
from workbench.core.rewrite.db import CHANGES_DRAWS, canonicalize_db, register_canonicalize
from workbench.core.rewrite.engine import node_rewriter
from workbench.core.tensor.elemwise import DimShuffle, broadcast_length
from workbench.core.tensor.indexing import FULL_SLICE, SliceEntry, encode, fill, slice_length
from workbench.core.tensor.join import as_int_vector, vector_entries
from workbench.core.tensor.shape import shape_tuple
from workbench.core.tensor.subtensor import Subtensor

__all__ = ["local_dimshuffle_rv_lift", "local_subtensor_rv_lift"]


@register_canonicalize
@node_rewriter([DimShuffle])
def local_dimshuffle_rv_lift(fgraph: Any, node: Apply) -> Any:
    """``DimShuffle{inserting 1s}(draw) -> draw of the new shape`` (see the module)."""
    draw = node.inputs[0]
    rv = draw.owner
    if rv is None or not isinstance(rv.op, RandomVariable) or not _scalar_core(rv) \
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


def _scalar_core(rv: Apply) -> bool:
    """Whether one draw of `rv` is a scalar made from scalar parameters (the only draws
    whose values a DimShuffle inserting 1s may move into `size`): not categorical or
    choice (vector parameters), nor permutation (its shape is its support)."""
    params = rv.inputs[2:]
    return (rv.op.ndim_supp == 0 and not any(rv.op.ndims_params)
            and rv.op.support_shape(params) == ())


def _batch_lengths(rv: Apply, n_batch: int) -> list[Any]:
    """The draw's batch lengths (ints or int64 scalars), from `size` or the parameters."""
    rng, size, *params = rv.inputs
    if size.type.shape[0]:
        return list(vector_entries(size))
    lengths = []
    for axis in range(n_batch):
        candidates = []
        for p, nd in zip(params, rv.op.ndims_params):
            j = axis - (n_batch - (p.type.ndim - nd))
            if j >= 0 and p.type.shape[j] != 1:
                candidates.append(p.type.shape[j] if p.type.shape[j] is not None
                                  else shape_tuple(p)[j])
        lengths.append(broadcast_length(candidates) if candidates else 1)
    return lengths


def _index_in_range(index: Any, length: Any) -> bool:
    """Whether an int index is certainly within an axis of `length` (both known ints)."""
    if isinstance(index, Constant):
        index = index.data
    if isinstance(index, Variable) or not isinstance(length, int):
        return False
    return -length <= int(index) < length


def _lifted_params(rv: Apply, entries: list[Any], n_batch: int
                   ) -> tuple[list[Variable], list[bool]] | None:
    """Each parameter indexed like the draw's batch dimensions (a parameter that broadcasts
    along an axis keeps its length 1 there, or loses it under an int index), or None
    where that is not certainly right; and per entry, whether a parameter is indexed
    by it along an axis of the draw's length (which checks an int index's range)."""
    rng, size, *params = rv.inputs
    if not rv.op.batched_params:  # a whole population (choice): kept as it is
        return list(params), [False] * len(entries)
    draw_shape = rv.outputs[1].type.shape
    sized = bool(size.type.shape[0])
    checked = [False] * len(entries)  # an int index that some parameter's indexing checks
    lifted = []
    for p, nd in zip(params, rv.op.ndims_params):
        offset = n_batch - (p.type.ndim - nd)
        own: list[Any] = []
        for k, entry in enumerate(entries):
            if k < offset:
                continue  # the parameter has no such axis: it broadcasts
            length = p.type.shape[k - offset]
            if length == 1 and draw_shape[k] != 1:
                own.append(FULL_SLICE if isinstance(entry, SliceEntry) else 0)
                continue
            if length is None:  # may be 1 and broadcast: right only if it sets the length
                others = [q.type.shape[k - (n_batch - (q.type.ndim - nq))]
                          for q, nq in zip(params, rv.op.ndims_params)
                          if q is not p and k >= n_batch - (q.type.ndim - nq)]
                if sized or any(o != 1 for o in others):
                    return None
            own.append(entry)
            checked[k] = checked[k] or not isinstance(entry, SliceEntry)
        if own and any(e != FULL_SLICE for e in own):
            idx_list, inputs = encode(own)
            p = Subtensor(idx_list)(p, *inputs)
        lifted.append(p)
    return lifted, checked


@node_rewriter([Subtensor])
def local_subtensor_rv_lift(fgraph: Any, node: Apply) -> Any:
    """``draw[ints and slices] -> a draw of the kept shape`` (see the module: same law,
    other numbers; not in the default modes)."""
    draw = node.inputs[0]
    rv = draw.owner
    if rv is None or not isinstance(rv.op, RandomVariable) or draw is not rv.outputs[1] \
            or len(fgraph.clients[draw]) != 1 or not rv.op.independent_batch:
        return None
    entries = fill(node.op.idx_list, node.inputs[1:])
    n_batch = draw.type.ndim - len(rv.op.support_shape(rv.inputs[2:]))
    while len(entries) > n_batch:  # full slices over the support dimensions are no index
        if entries.pop() != FULL_SLICE:
            return None
    if not entries or all(e == FULL_SLICE for e in entries):
        return None
    lengths = _batch_lengths(rv, n_batch)
    lifted = _lifted_params(rv, entries, n_batch)
    if lifted is None:
        return None
    params, checked = lifted
    for k, entry in enumerate(entries):
        if not (isinstance(entry, SliceEntry) or checked[k]
                or _index_in_range(entry, lengths[k])):
            return None
    new_size = [slice_length(lengths[k], *entry) for k, entry in enumerate(entries)
                if isinstance(entry, SliceEntry)] + lengths[len(entries):]
    next_rng, new_draw = rv.op.make_node(rv.inputs[0], as_int_vector(new_size), *params).outputs
    out = node.outputs[0]
    if new_draw.type != out.type:
        try:
            new_draw = out.type.filter_variable(new_draw)
        except (TypeError, ValueError):
            return None
    if draw.name:
        new_draw.name = f"{draw.name}_lifted"
    return {out: new_draw, rv.outputs[0]: next_rng}


# not FAST_RUN: it changes which numbers are drawn (see the module docstring)
canonicalize_db.register("local_subtensor_rv_lift", local_subtensor_rv_lift, "random_lift",
                         CHANGES_DRAWS)
