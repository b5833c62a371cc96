"""Elemwise fusion: chains and DAGs of Elemwise nodes become one Elemwise over a Composite.

``exp(x) * sin(y) + x**2 / (1 + y*y)`` is five array passes as separate
Elemwise nodes; fused it is one ``Elemwise{Composite{...}}`` (one pass, one
loop for the C linker). Regions are grown in ONE topological sweep:

* a node joins the region of an Elemwise input when their outputs have the
  same static shape (same rank), and merging keeps the graph acyclic;
* the region must stay convex (no path leaves it and re-enters it, else the
  fused node would feed itself). That is checked in O(1) with a sufficient
  condition: every value the region reads from outside (`_Region.ext_max`, the
  largest `last_elemwise` of those values, including values from regions it
  refused to merge with) depends on no Elemwise node at or after the region's
  first node in topological order, so no outside node can sit between two
  members;
* a member whose value is also used outside the region (by another Op or as a
  graph output) becomes an extra output of the Composite: nothing is computed
  twice;
* size-1 constants (a ``DimShuffle`` of a scalar constant, as Elemwise builds
  for ``x * 2.0``) that are small literals (INLINED_LITERALS: 0, ±1, ±2, ±0.5)
  become constants of the Composite; any other constant stays an input of the fused
  node, passed as data: ``x * 1.5`` and ``x * 2.5`` are one compiled kind, not two
  (a graph of 5,000 distinct constants compiled 5,000 kinds);
* a region reads at most MAX_FUSED_INPUTS values: the C kernel of a node grows with
  its inputs, and the compiler's time faster than linearly with the kernel.

A fused node gives all its outputs the broadcast shape of all its inputs, so a
value used outside the region must certainly have the final value's shape: a
length unknown statically may still broadcast at run time (1 against n), and
the ShapeFeature must prove the symbolic lengths equal (`trim_for_shapes`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from workbench.core.graph import utils as graph_utils
from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.fg import OUTPUT, FunctionGraph
from workbench.core.rewrite.db import register_fusion
from workbench.core.rewrite.engine import GraphRewriter, RewriteFailureWarning, recording_step
from workbench.core.scalar.basic import ScalarConstant, get_scalar_type
from workbench.core.scalar.composite import Composite
from workbench.core.tensor.elemwise import DimShuffle, Elemwise
from workbench.core.tensor.shape_feature import get_shape_feature
from workbench.core.tensor.type import TensorType

__all__ = ["FusionRewriter", "fuse_elemwise", "FusedComposite"]

#: Formulas of fused Composites show each sub-expression up to this length
#: (deeper parts print as "..."), so printing stays linear in the program size.
MAX_SHOWN = 60
#: Nodes one fused loop may absorb. Longer chains become several fused nodes: the C
#: compiler's time grows faster than linearly with the size of one kernel, and equal
#: chunks of a long regular chain share one compiled module.
MAX_FUSED_NODES = 256
#: Values one fused loop may read. A sum of 2,000 scalars fused into a few nodes of
#: hundreds of inputs took minutes of C compilation; chunks of this width share one
#: compiled kind.
MAX_FUSED_INPUTS = 32
#: Constants written into a fused Composite's code (they let the scalar rewrites and
#: the C compiler simplify: x*1, x*2 -> x+x, x**0.5 ...); other constants are data.
INLINED_LITERALS = frozenset({0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5})


class FusedComposite(Composite):
    """A Composite made by fusion: its printed formula elides long sub-expressions."""

    max_shown = MAX_SHOWN


def _fusable(node: Apply) -> bool:
    op = node.op
    return (isinstance(op, Elemwise) and not op.inplace_pattern
            and all(isinstance(o.type, TensorType) for o in node.outputs))


def _key(node: Apply) -> tuple[Any, ...]:
    return node.outputs[0].type.shape


def scalar_constant_of(var: Variable, cache: dict[Any, ScalarConstant] | None = None
                       ) -> ScalarConstant | None:
    """`var` as a scalar constant when it is a one-element constant broadcast along every
    dimension (a size-1 Constant, or a DimShuffle of one) holding one of the
    INLINED_LITERALS, else None."""
    if any(s != 1 for s in var.type.shape):
        return None
    source = var
    while source.owner is not None and isinstance(source.owner.op, DimShuffle):
        source = source.owner.inputs[0]
    if not isinstance(source, Constant):
        return None
    data = np.asarray(source.data)
    if data.size != 1 or data.dtype.kind == "c" or \
            float(data.reshape(())) not in INLINED_LITERALS:
        return None
    dtype = var.type.dtype
    value = data.reshape(()).astype(dtype.numpy)
    key = (str(dtype), value.tobytes())
    if cache is not None and key in cache:
        return cache[key]
    const = ScalarConstant(get_scalar_type(dtype), value[()])
    if cache is not None:
        cache[key] = const
    return const


class _Region:
    __slots__ = ("members", "start", "ext_max", "key", "reads")

    def __init__(self, node: Apply, start: int, ext_max: int, key: Any) -> None:
        self.members = [node]
        self.start = start
        self.ext_max = ext_max
        self.key = key
        #: the values it reads from outside (an over-estimate after merges: at most
        #: MAX_FUSED_INPUTS, so sets stay small)
        self.reads: set[Variable] = set(node.inputs)


def _reads_if_merged(regions: list[_Region], node: Apply,
                     region_of: dict[Apply, _Region]) -> set[Variable] | None:
    """The outside values `regions` plus `node` would read, or None beyond
    MAX_FUSED_INPUTS."""
    reads: set[Variable] = set()
    for region in regions:
        reads |= region.reads
    reads.update(v for v in node.inputs
                 if v.owner is None or region_of.get(v.owner) not in regions)
    return reads if len(reads) <= MAX_FUSED_INPUTS else None


def find_regions(order: list[Apply], fusable: Any = _fusable) -> list[list[Apply]]:
    """The fusion regions (lists of nodes in topological order, at least two each) of
    nodes given in topological order: one sweep, O(N log N) with the merge-by-size."""
    last_elemwise: dict[Variable, int] = {}
    region_of: dict[Apply, _Region] = {}
    for k, node in enumerate(order):
        ok = fusable(node)
        last = max((last_elemwise.get(v, -1) for v in node.inputs), default=-1)
        for out in node.outputs:
            last_elemwise[out] = k if ok else last
        if not ok:
            continue
        key = _key(node)
        candidates: list[_Region] = []
        base_ext = -1
        from_region: dict[int, list[int]] = {}  # id(region) -> last_elemwise of its values
        for v in node.inputs:
            owner = v.owner
            region = region_of.get(owner) if owner is not None else None
            if region is not None and region.key == key and \
                    len(region.members) < MAX_FUSED_NODES:
                if region not in candidates:
                    candidates.append(region)
                from_region.setdefault(id(region), []).append(last_elemwise[v])
            else:
                base_ext = max(base_ext, last_elemwise.get(v, -1))
        chosen: list[_Region] = []
        reads: set[Variable] | None = None
        if candidates:
            start = min(r.start for r in candidates)
            ext = max([base_ext] + [r.ext_max for r in candidates])
            if ext < start and sum(len(r.members) for r in candidates) < MAX_FUSED_NODES:
                reads = _reads_if_merged(candidates, node, region_of)
                chosen = candidates if reads is not None else []
            if not chosen:
                for region in sorted(candidates, key=lambda r: -len(r.members)):
                    others = [x for r in candidates if r is not region
                              for x in from_region[id(r)]]
                    ext = max([base_ext, region.ext_max, *others])
                    if ext < region.start:
                        reads = _reads_if_merged([region], node, region_of)
                        if reads is not None:
                            chosen = [region]
                            break
        if not chosen:
            # the values from the refused regions are outside inputs of the new region too
            ext = max([base_ext, *(x for xs in from_region.values() for x in xs)])
            region_of[node] = _Region(node, k, ext, key)
            continue
        chosen.sort(key=lambda r: -len(r.members))
        target = chosen[0]
        for region in chosen[1:]:
            target.members.extend(region.members)
            for member in region.members:
                region_of[member] = target
            target.start = min(target.start, region.start)
            target.ext_max = max(target.ext_max, region.ext_max)
        target.members.append(node)
        assert reads is not None
        target.reads = reads
        target.ext_max = max(target.ext_max, base_ext,
                             *(x for r in candidates if r not in chosen
                               for x in from_region[id(r)]))
        region_of[node] = target
    regions = {id(r): r for r in region_of.values() if len(r.members) > 1}
    position = {node: k for k, node in enumerate(order)}
    return [sorted(r.members, key=position.__getitem__) for r in regions.values()]


def fuse_region(fgraph: FunctionGraph, members: list[Apply]
                ) -> tuple[Apply, list[tuple[Variable, Variable]]] | None:
    """Build the fused node for `members` (topological order); return it with the
    (old, new) replacements of the values used outside the region, or None."""
    saved = graph_utils.capture_source_locations
    graph_utils.capture_source_locations = False  # inner scalar Variables need no source
    try:
        return _fuse_region(fgraph, members)
    finally:
        graph_utils.capture_source_locations = saved


def _fuse_region(fgraph: FunctionGraph, members: list[Apply]
                 ) -> tuple[Apply, list[tuple[Variable, Variable]]] | None:
    constants: dict[Any, ScalarConstant] = {}
    scalar_of: dict[Variable, Variable] = {}
    ext_inputs: list[Variable] = []
    scalar_inputs: list[Variable] = []
    variable_inputs = 0
    for node in members:
        args = []
        for v in node.inputs:
            s = scalar_of.get(v)
            if s is None:
                s = scalar_constant_of(v, constants)
                if s is None:
                    s = get_scalar_type(v.type.dtype)()
                    ext_inputs.append(v)
                    scalar_inputs.append(s)
                    variable_inputs += not _is_constant(v)
                scalar_of[v] = s
            args.append(s)
        # The output dtypes are those of the tensor node: no need to re-run the dtype rules.
        inner = Apply(node.op.scalar_op, args,
                      [get_scalar_type(out.type.dtype)() for out in node.outputs])
        for out, s_out in zip(node.outputs, inner.outputs):
            scalar_of[out] = s_out
    if not variable_inputs:
        return None  # a constant expression: constant folding's business
    exported = _exported(fgraph, members)
    if not exported:
        return None
    composite = FusedComposite(scalar_inputs, [scalar_of[o] for o in exported])
    fused = Elemwise(composite).make_node(*ext_inputs)
    return fused, list(zip(exported, fused.outputs))


def _is_constant(var: Variable) -> bool:
    """A Constant, or a DimShuffle of one."""
    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    return isinstance(var, Constant)


def _exported(fgraph: FunctionGraph, members: list[Apply]) -> list[Variable]:
    member_set = set(members)
    return [out for node in members for out in node.outputs
            if any(c == OUTPUT or c not in member_set for c, _ in fgraph.clients[out])]


def trim_for_shapes(fgraph: FunctionGraph, members: list[Apply]) -> list[Apply] | None:
    """`members` without the values whose run-time shape may differ from the region's.

    A fused Elemwise gives every output the broadcast shape of all its inputs. A
    value used outside the region keeps its own shape only if it certainly equals
    the final value's shape (static, or proven by the ShapeFeature: a length unknown
    statically may broadcast at run time). Unproven values are left out of the
    region together with their in-region ancestors (an ancestor-closed set, so no
    cycle appears). None if fewer than two members remain.
    """
    while len(members) > 1:
        exported = _exported(fgraph, members)
        last = members[-1].outputs[0]
        if len(exported) <= 1 or all(s is not None for s in last.type.shape):
            return members
        feature = get_shape_feature(fgraph)
        bad = [o for o in exported if o.owner is not members[-1]
               and not feature.same_shape(o, last)]
        if not bad:
            return members
        member_set = set(members)
        drop: set[Apply] = set()
        stack = [o.owner for o in bad]
        while stack:
            node = stack.pop()
            if node in drop:
                continue
            drop.add(node)
            stack.extend(v.owner for v in node.inputs if v.owner in member_set)
        members = [n for n in members if n not in drop]
    return None


def fuse_elemwise(fgraph: FunctionGraph, rewriter: Any = None) -> int:
    """Fuse every region of `fgraph`; the number of fused nodes created."""
    regions = find_regions(fgraph.toposort())
    count = 0
    for members in regions:
        if any(node not in fgraph.apply_nodes for node in members):
            continue
        try:
            trimmed = trim_for_shapes(fgraph, members)
            built = fuse_region(fgraph, trimmed) if trimmed is not None else None
        except Exception as exc:  # an Op the Composite cannot hold: leave the region alone
            if fgraph.rewrite_strict:
                raise
            warnings.warn(f"elemwise fusion skipped a region ending at {members[-1]}: {exc}",
                          RewriteFailureWarning, stacklevel=2)
            continue
        if built is None:
            continue
        members = trimmed  # type: ignore[assignment]
        fused, pairs = built
        with recording_step(fgraph, rewriter, members[-1]):
            for old, new in pairs:
                if old.name is not None and new.name is None:
                    new.name = old.name
                fgraph.replace(old, new, reason=rewriter)
        count += 1
    return count


class FusionRewriter(GraphRewriter):
    """The fusion pass: `fuse_elemwise` as a GraphRewriter (see the module docstring)."""

    name = "elemwise_fusion"

    def apply(self, fgraph: FunctionGraph) -> None:
        fuse_elemwise(fgraph, self)


elemwise_fusion = FusionRewriter()


register_fusion(elemwise_fusion)
