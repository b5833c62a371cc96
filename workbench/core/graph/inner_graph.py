"""Ops that contain a graph: the protocol every layer uses to see inside them.

A loop (`Scan`) runs a graph once per step; an `OpFromGraph` packages a graph as
one Op. Both are *inner-graph Ops*: besides their props they hold a
`FunctionGraph` (the inner graph), and the rest of the engine knows that such an
Op can be opened:

- `dprint` prints the inner graph indented under the node (lines marked `>`);
- graph files (`workbench.io`) save the inner graph next to the props and rebuild
  the Op with `from_inner_graph`;
- the rewrite engine rewrites inner graphs with the same database and puts the
  new graph back with `clone_with_inner_graph`;
- the inspector and the widgets expand a node into its inner graph.

Two inner-graph Ops are equal when they are of the same class, have equal props
and structurally equal inner graphs (same Ops wired the same way, equal
constants, equal input Types): merging then unifies two identical loops.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from workbench.core.graph.basic import Apply, Constant, Variable, data_signature
from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.op import Op
from workbench.core.graph.utils import MethodNotDefined

__all__ = ["InnerGraphOp", "inner_graph_nodes", "inner_graph_signature"]


def inner_graph_signature(fgraph: FunctionGraph) -> tuple[Any, ...]:
    """A hashable description of `fgraph`'s structure, equal for equal computations.

    Each node is `(op, references of its inputs)`, where a reference names a
    graph input by position, a constant by type and value, or an output of an
    earlier node by (node position, output index). Names do not count.
    """
    refs: dict[Variable, Any] = {var: ("i", k) for k, var in enumerate(fgraph.inputs)}
    steps: list[Any] = []

    def ref(var: Variable) -> Any:
        known = refs.get(var)
        if known is not None:
            return known
        if isinstance(var, Constant):
            return ("c", var.type, data_signature(var.data))
        return ("free", var.type)  # an ownerless non-input (cannot be in a valid graph)

    for position, node in enumerate(fgraph.toposort()):
        steps.append((node.op, tuple(ref(v) for v in node.inputs)))
        for k, out in enumerate(node.outputs):
            refs[out] = ("n", position, k)
    return (tuple(v.type for v in fgraph.inputs), tuple(steps),
            tuple(ref(v) for v in fgraph.outputs))


class InnerGraphOp(Op):
    """An Op whose computation is a graph held in `self.fgraph`.

    Subclasses set `self.fgraph` (a FunctionGraph over ownerless inner inputs) in
    their constructor, declare their other attributes in `__props__`, and define:

    - `clone_with_inner_graph(fgraph)`: the same Op around another (rewritten)
      inner graph with the same inputs and output Types;
    - `from_inner_graph(inputs, outputs, **props)` (classmethod): the Op rebuilt
      from an inner graph and its props, used when loading a graph file.

    `inner_graph_title` names what the inner graph is (e.g. "loop body"); the
    printers and drawings show it. Equality and hashing cover the props and the
    inner graph's structure (see `inner_graph_signature`).
    """

    fgraph: FunctionGraph
    inner_graph_title: str = "inner graph"
    #: True: the outer rewriter also rewrites the inner graph (rewrite/inner.py) and
    #: sets `inner_graph_rewritten` on the new Op, which then links it as it is
    rewrite_inner_graph: bool = False
    inner_graph_rewritten: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Op.__init_subclass__ generates props-only equality for classes declaring
        # __props__; an inner-graph Op compares its graph too.
        if "__eq__" not in cls.__dict__ or cls.__eq__ is Op._props_eq:
            cls.__eq__ = InnerGraphOp.__eq__  # type: ignore[method-assign]
        if "__hash__" not in cls.__dict__ or cls.__hash__ is Op._props_hash:
            cls.__hash__ = InnerGraphOp.__hash__  # type: ignore[method-assign]

    # -- the inner graph ---------------------------------------------------------
    @property
    def inner_inputs(self) -> list[Variable]:
        return self.fgraph.inputs

    @property
    def inner_outputs(self) -> list[Variable]:
        return self.fgraph.outputs

    @property
    def inner_signature(self) -> tuple[Any, ...]:
        cached = self.__dict__.get("_inner_signature")
        if cached is None:
            cached = inner_graph_signature(self.fgraph)
            self.__dict__["_inner_signature"] = cached
        return cached

    def inner_graph_props(self) -> dict[str, Any]:
        """The props saved next to the inner graph in a graph file."""
        return self._props_dict()

    def clone_with_inner_graph(self, fgraph: FunctionGraph) -> InnerGraphOp:
        """This Op around `fgraph` (same inputs and output Types, e.g. rewritten)."""
        raise MethodNotDefined(f"{type(self).__name__}.clone_with_inner_graph")

    @classmethod
    def from_inner_graph(cls, inputs: Sequence[Variable], outputs: Sequence[Variable],
                         **props: Any) -> InnerGraphOp:
        """The Op rebuilt from its inner graph and props (the inverse of saving it)."""
        raise MethodNotDefined(f"{cls.__name__}.from_inner_graph")

    def mutable_inner_inputs(self) -> list[Variable]:
        """The inner inputs the inner graph may overwrite in place (its rewrite marks them
        mutable): none by default, since they are the caller's values. A loop gives the
        value of a state whose older rows nobody reads again (an accumulator)."""
        return []

    def outer_input_index(self, k: int) -> int | None:
        """The position of the node input that inner input `k` is made from (drawings
        link them); by default inner input k is node input k."""
        return k

    def after_inner_rewrite(self, node: Apply) -> list[Variable] | None:
        """Called by the rewrite engine on the node of this Op right after its inner graph
        was rewritten: replacement outputs for the node (e.g. a loop moving out work its
        rewritten body computes the same at every step), or None."""
        return None

    def make_linked_thunk(self, node: Apply, storage_map: Any, compute_map: Any,
                          no_recycling: Any, linker: Any) -> Any:
        """A Thunk running `node` with its inner graph linked like the outer graph is by
        `linker` (same backend, device, profiling), over the linker's cells (device
        tensors on the gpu linker); or None: the linker then runs the node as any Op."""
        return None

    def inner_profile(self, linker: str | None = None) -> Any:
        """The ProfileStats of the inner graph's profiled runs on `linker` (a linker name;
        None: the last profiled), or None: the profiler reports the time inside the node
        per inner node."""
        return None

    # -- identity ----------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return (type(self) is type(other)
                and self._props_dict() == other._props_dict()  # type: ignore[attr-defined]
                and self.inner_signature == other.inner_signature)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        props = tuple(self._props_dict().values())
        return hash((type(self), props, self.inner_signature))


def inner_graph_nodes(nodes: Iterator[Apply] | Sequence[Apply] | FunctionGraph
                      ) -> list[Apply]:
    """The nodes (of a FunctionGraph, or a list of nodes) whose Op holds an inner graph."""
    if isinstance(nodes, FunctionGraph):
        nodes = nodes.toposort()
    return [node for node in nodes if isinstance(node.op, InnerGraphOp)]
