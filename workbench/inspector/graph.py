"""Graphs as networkx DiGraphs, and the questions people ask of them.

`to_networkx` turns outputs, a FunctionGraph or a compiled Function into a
bipartite DiGraph (seed 001): one node per Variable and per Apply, edges from
each input Variable to its Apply and from the Apply to each output. Nodes carry
the labels `dprint` prints (`[id A]`), so a node reads the same in the tree, the
drawing and the table. Node keys are stable for the lifetime of the graph
objects, so two graphs that share nodes (the steps of a rewrite) can be diffed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import networkx as nx

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.core.printing import IdLabels, dprint, outputs_of

APPLY, VARIABLE, CONSTANT, INPUT, OUTPUT = "apply", "variable", "constant", "input", "output"


def node_key(obj: Apply | Variable) -> str:
    """The DiGraph key of a graph object: stable while the object lives."""
    prefix = "a" if isinstance(obj, Apply) else "v"
    return f"{prefix}{id(obj):x}"


def _keys_for(fgraph: FunctionGraph | None) -> Any:
    """node_key, except in a graph copied by `RewriteTrace.graph_at`: there an object is
    keyed as the trace's live object it copies, so graphs of two steps share the keys of
    what the step between them kept (and `diff` finds what it changed)."""
    copied_from = getattr(fgraph, "copied_from", None)
    if not copied_from:
        return node_key
    return lambda obj: node_key(copied_from.get(id(obj), obj))


def graph_parts(graph: Any) -> tuple[list[Variable], list[Variable], FunctionGraph | None]:
    """(outputs, inputs, fgraph) of anything `dprint` accepts, or a rewrite step."""
    fgraph_of = getattr(graph, "fgraph", None)
    if isinstance(fgraph_of, FunctionGraph) and not hasattr(graph, "maker"):
        graph = fgraph_of  # e.g. a rewrite step exposing its graph
    outputs, fgraph = outputs_of(graph)
    if fgraph is not None:
        return outputs, list(fgraph.inputs), fgraph
    inputs = []
    seen: set[int] = set()
    stack = list(outputs)
    while stack:
        var = stack.pop()
        if id(var) in seen:
            continue
        seen.add(id(var))
        if var.owner is None:
            if not isinstance(var, Constant):
                inputs.append(var)
        else:
            stack.extend(var.owner.inputs)
    return outputs, inputs, None


def _props_text(op: Any) -> dict[str, str]:
    props = getattr(op, "__props__", None) or ()
    return {name: str(getattr(op, name, None)) for name in props}


def to_networkx(graph: Any, profile: Any = None, expand: Any = ()) -> nx.DiGraph:
    """A DiGraph of `graph` (Variable(s), FunctionGraph, Function or rewrite step).

    Node attributes: `kind` (apply / variable / constant / input / output),
    `label` (`A` of `[id A]`), `text` (what a drawing shows), `op`, `op_class`,
    `props`, `type`, `dtype`, `shape`, `name`, `obj` (the graph object itself),
    and `time` / `calls` / `memory` when a `profile` (per-node timings keyed by
    Apply) is given. Edges carry `index`, the input or output position, and
    `indices`, every position (a Variable used twice by one node has one edge).

    `expand`: nodes whose Op holds an inner graph (a loop), as Apply nodes or their
    `[id X]` letters, or True for all of them: their inner graph is added too (nested
    ones are expanded with them). Its nodes carry `inner_of`, the key of the node
    they are inside (None elsewhere); edges marked `feeds` go from each outer input
    to the inner input it becomes, and from each inner output to the node.
    """
    outputs, inputs, fgraph = graph_parts(graph)
    key_of = _keys_for(fgraph)
    labels = IdLabels()
    dprint(outputs, file="str", ids=labels)  # assigns the same ids dprint shows
    g = nx.DiGraph()
    inner_nodes = _add_graph(g, outputs, inputs, key_of, labels, _node_times(profile), None)
    expanded: set[Apply] = set()
    while True:
        todo = [n for n in inner_nodes if n not in expanded and _wanted(n, expand, labels)]
        if not todo:
            return g
        for node in todo:
            expanded.add(node)
            inner_nodes += _add_inner_graph(g, node, key_of, labels)


def _wanted(node: Apply, expand: Any, labels: IdLabels) -> bool:
    if expand is True:
        return True
    return node in expand or labels(node.outputs[0]) in expand


def _add_inner_graph(g: nx.DiGraph, node: Apply, key_of: Any, labels: IdLabels) -> list[Apply]:
    """Add the inner graph of `node` to `g`, linked to the node (see to_networkx)."""
    op = node.op
    outer_key = key_of(node)
    inner_in, inner_out = list(op.inner_inputs), list(op.inner_outputs)
    found = _add_graph(g, inner_out, inner_in, key_of, labels, {}, outer_key)
    for k, var in enumerate(inner_in):
        key = key_of(var)
        if key not in g:  # an inner input the body does not read
            continue
        position = op.outer_input_index(k)
        if position is not None:
            g.add_edge(key_of(node.inputs[position]), key, index=-1, indices=[], feeds=True)
    for var in inner_out:
        g.add_edge(key_of(var), outer_key, index=-1, indices=[], feeds=True)
    return found


def _add_graph(g: nx.DiGraph, outputs: list[Variable], inputs: list[Variable], key_of: Any,
               labels: IdLabels, node_times: dict[Apply, dict[str, Any]],
               inner_of: str | None) -> list[Apply]:
    """Add the nodes and edges from `inputs` to `outputs`; returns the Apply nodes that
    hold an inner graph."""
    output_set = {id(v) for v in outputs}
    input_set = {id(v) for v in inputs}
    seen: set[int] = set()
    stack = list(outputs)
    holders: list[Apply] = []

    def add_variable(var: Variable) -> str:
        key = key_of(var)
        if key in g:
            return key
        if id(var) in output_set:
            kind = OUTPUT
        elif isinstance(var, Constant):
            kind = CONSTANT
        elif id(var) in input_set or var.owner is None:
            kind = INPUT
        else:
            kind = VARIABLE
        vtype = var.type
        shape = getattr(vtype, "shape", None)
        g.add_node(
            key, kind=kind, label=_variable_label(var, labels),
            text=_variable_text(var), name=var.name, type=str(vtype),
            dtype=str(getattr(vtype, "dtype", "")),
            shape=None if shape is None else tuple(shape), obj=var, inner_of=inner_of,
        )
        return key

    while stack:
        var = stack.pop()
        if id(var) in seen:
            continue
        seen.add(id(var))
        add_variable(var)
        node = var.owner
        if node is None:
            continue
        apply_key = key_of(node)
        if apply_key not in g:
            op = node.op
            attrs = dict(
                kind=APPLY, label=labels(node.outputs[0]), text=str(op), op=str(op),
                op_class=type(op).__name__, props=_props_text(op), obj=node,
                name=None, type="", dtype="", shape=None, inner_of=inner_of,
            )
            if node in node_times:
                attrs.update(node_times[node])
            g.add_node(apply_key, **attrs)
            if isinstance(op, InnerGraphOp):
                holders.append(node)
            for i, inp in enumerate(node.inputs):
                in_key = add_variable(inp)
                if g.has_edge(in_key, apply_key):  # the same Variable used twice (x * x)
                    g.edges[in_key, apply_key]["indices"].append(i)
                else:
                    g.add_edge(in_key, apply_key, index=i, indices=[i])
                stack.append(inp)
            for i, out in enumerate(node.outputs):
                g.add_edge(apply_key, add_variable(out), index=i, indices=[i])
    return holders


def _variable_label(var: Variable, labels: IdLabels) -> str:
    """A graph input's own id; an Apply output shares its node's id (`B`, or `B.1`)."""
    label = labels(var)
    if var.owner is not None and len(var.owner.outputs) > 1:
        label += f".{var.index}"
    return label


def _variable_text(var: Variable) -> str:
    if var.name is not None:
        return var.name
    if isinstance(var, Constant):
        from workbench.core.graph.basic import short_data_repr

        return short_data_repr(var.data, limit=16)
    dtype, shape = getattr(var.type, "dtype", None), getattr(var.type, "shape", None)
    if dtype is not None and shape is not None:  # compact: "float64 (?, 3)"
        from workbench.core.tensor.type import format_shape

        return f"{dtype} {format_shape(shape)}"
    return str(var.type)


def _node_times(profile: Any) -> dict[Apply, dict[str, Any]]:
    """Per-node `time`/`calls`/`memory` from a profile (a mapping keyed by Apply)."""
    if profile is None:
        return {}
    per_node = getattr(profile, "per_node", profile)
    result: dict[Apply, dict[str, Any]] = {}
    for node, stats in dict(per_node).items():
        if isinstance(stats, dict):
            result[node] = {k: stats[k] for k in ("time", "calls", "memory") if k in stats}
        else:
            result[node] = {"time": float(stats)}
    return result


# -- queries --------------------------------------------------------------------------


def find(g: nx.DiGraph, label_or_name: str) -> str:
    """The key of the node labelled `label_or_name` (an `[id X]` letter or a name).

    An Apply and its output share a letter; the Apply is returned.
    """
    matches = [key for key, data in g.nodes(data=True)
               if data.get("label") == label_or_name or data.get("name") == label_or_name]
    if matches:
        return min(matches, key=lambda k: g.nodes[k]["kind"] != APPLY)
    raise KeyError(f"no node labelled or named {label_or_name!r} in this graph")


def merged_nodes(g: nx.DiGraph) -> dict[str, list[str]]:
    """Drawn box -> the graph nodes it shows (keyed by the first of them).

    An Apply with a single output is drawn as one box with that output (its
    name, value and gradient inside), as micrograd draws an operation with its
    result: half the layers, so a graph fits a projector without shrinking
    text. Inputs, constants and the outputs of multi-output Applies keep their
    own boxes.
    """
    groups: dict[str, list[str]] = {}
    merged: set[str] = set()
    for key, data in g.nodes(data=True):
        if data["kind"] == APPLY:
            outputs = list(g.successors(key))
            if len(outputs) == 1:
                groups[key] = [key, outputs[0]]
                merged.add(outputs[0])
                continue
        groups.setdefault(key, [key])
    return {head: members for head, members in groups.items() if head not in merged}


def merged_graph(g: nx.DiGraph) -> nx.DiGraph:
    """`g` with each `merged_nodes` group as one node (the head's data, `members`
    listing the group, `kind` the output's when it is a graph output)."""
    groups = merged_nodes(g)
    head_of = {member: head for head, members in groups.items() for member in members}
    merged = nx.DiGraph()
    for head, members in groups.items():
        data = dict(g.nodes[head])
        last = g.nodes[members[-1]]
        if len(members) > 1:
            data["output_name"] = last.get("name")
            if last["kind"] == OUTPUT:
                data["kind"] = OUTPUT
                data["merged_apply"] = True
        merged.add_node(head, **data, members=list(members))
    merged.add_edges_from((head_of[s], head_of[t]) for s, t in g.edges
                          if head_of[s] != head_of[t])
    return merged


def apply_nodes(g: nx.DiGraph) -> list[str]:
    return [k for k, d in g.nodes(data=True) if d["kind"] == APPLY]


def ancestors(g: nx.DiGraph, key: str) -> set[str]:
    """Every node `key` depends on."""
    return nx.ancestors(g, key)


def descendants(g: nx.DiGraph, key: str) -> set[str]:
    """Every node that depends on `key`."""
    return nx.descendants(g, key)


def subgraph_between(g: nx.DiGraph, inputs: Iterable[str], outputs: Iterable[str]
                     ) -> nx.DiGraph:
    """The part of `g` on some path from one of `inputs` to one of `outputs`."""
    inputs, outputs = list(inputs), list(outputs)
    below: set[str] = set(inputs)
    for key in inputs:
        below |= nx.descendants(g, key)
    above: set[str] = set(outputs)
    for key in outputs:
        above |= nx.ancestors(g, key)
    return g.subgraph(below & above).copy()


def count_by_op(g: nx.DiGraph) -> Counter[str]:
    """How many Apply nodes of each Op class the graph has."""
    return Counter(d["op_class"] for _, d in g.nodes(data=True) if d["kind"] == APPLY)


def depth(g: nx.DiGraph) -> int:
    """The number of Apply nodes on the longest path from an input to an output."""
    longest: dict[str, int] = {}
    for key in nx.topological_sort(g):
        here = 1 if g.nodes[key]["kind"] == APPLY else 0
        longest[key] = here + max((longest[p] for p in g.predecessors(key)), default=0)
    return max(longest.values(), default=0)


def critical_path(g: nx.DiGraph, weight: str = "time") -> tuple[list[str], float]:
    """The chain of Apply nodes with the largest total `weight` (e.g. measured time).

    Returns (keys of the Apply nodes along the path, total weight).
    """
    best: dict[str, tuple[float, str | None]] = {}
    for key in nx.topological_sort(g):
        data = g.nodes[key]
        own = float(data.get(weight) or 0.0) if data["kind"] == APPLY else 0.0
        previous = max(((best[p][0], p) for p in g.predecessors(key)), default=(0.0, None))
        best[key] = (previous[0] + own, previous[1])
    if not best:
        return [], 0.0
    end = max(best, key=lambda k: best[k][0])
    total = best[end][0]
    path: list[str] = []
    key: str | None = end
    while key is not None:
        if g.nodes[key]["kind"] == APPLY:
            path.append(key)
        key = best[key][1]
    return path[::-1], total
