"""The inspector: networkx graphs, queries, layout, drawing, export and diff."""

import json
import re
import xml.etree.ElementTree as ET

import networkx as nx
import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.graph import FunctionGraph
from workbench.inspector import (
    ancestors,
    count_by_op,
    critical_path,
    depth,
    descendants,
    diff,
    draw,
    find,
    layout,
    subgraph_between,
    to_dot,
    to_json,
    to_networkx,
    to_svg,
)


def small_graph():
    x, w = wt.dmatrix("x"), wt.dmatrix("W")
    h = wt.tanh(x @ w)
    h.name = "h"
    cost = (h * h).sum()
    return x, w, h, cost


def test_to_networkx_is_bipartite_with_dprint_labels():
    x, w, h, cost = small_graph()
    g = to_networkx(cost)
    kinds = nx.get_node_attributes(g, "kind")
    applies = [k for k, kind in kinds.items() if kind == "apply"]
    # Dot, tanh, mul, Sum: 4 Apply nodes; x, W, dot-out, h, mul-out, cost: 6 Variables
    assert len(applies) == 4
    assert len(g) - len(applies) == 6
    # every edge joins a Variable and an Apply (seed 001's bipartite graph)
    for source, target in g.edges:
        assert (kinds[source] == "apply") != (kinds[target] == "apply")
    # one edge per distinct (input, node) pair and per output; h * h uses h twice
    assert g.number_of_edges() == sum(len(set(g.nodes[a]["obj"].inputs)) + 1 for a in applies)
    mul_key = next(a for a in applies if g.nodes[a]["op"] == "Elemwise{mul}")
    assert g.edges[find(g, "h"), mul_key]["indices"] == [0, 1]
    # labels are the ones dprint shows
    text = wb.dprint(cost, file="str")
    top = find(g, "A")
    assert g.nodes[top]["kind"] == "apply" and text.startswith(g.nodes[top]["text"] + " [id A]")
    assert g.nodes[find(g, "h")]["dtype"] == "float64"
    assert g.nodes[find(g, "x")]["kind"] == "input"
    out_key = [k for k, kind in kinds.items() if kind == "output"]
    assert len(out_key) == 1


def test_to_networkx_of_a_function_graph_and_a_compiled_function():
    x, w, h, cost = small_graph()
    fg = FunctionGraph([x, w], [cost])
    assert len(to_networkx(fg)) == len(to_networkx(cost))
    f = wb.function([x, w], cost)
    g = to_networkx(f)
    assert set(count_by_op(g)) <= {"Dot", "Elemwise", "Sum", "DimShuffle"}


def test_queries():
    x, w, h, cost = small_graph()
    g = to_networkx(cost)
    x_key, h_key, cost_key = find(g, "x"), find(g, "h"), find(g, "A")
    assert cost_key in descendants(g, x_key)
    assert x_key in ancestors(g, h_key)
    between = subgraph_between(g, [x_key], [h_key])
    assert {d["op_class"] for _, d in between.nodes(data=True) if d["kind"] == "apply"} == {
        "Dot", "Elemwise"}
    assert count_by_op(g)["Elemwise"] == 2
    assert depth(g) == 4


def test_critical_path_follows_measured_time():
    x = wt.dvector("x")
    slow = wt.exp(x)
    fast = wt.sin(x)
    y = slow + fast
    g = to_networkx(y, profile={slow.owner: 5.0, fast.owner: 1.0, y.owner: 1.0})
    path, total = critical_path(g)
    assert [g.nodes[k]["op"] for k in path] == ["Elemwise{exp}", "Elemwise{add}"]
    assert total == 6.0


def test_layout_puts_each_node_below_its_inputs():
    x, w, h, cost = small_graph()
    g = to_networkx(cost)
    boxes = layout(g).boxes
    for source, target in g.edges:
        assert boxes[source].y < boxes[target].y
    assert boxes[find(g, "x")].y == min(b.y for b in boxes.values())


def test_layout_of_a_few_hundred_nodes_is_quick_and_distinct():
    x = wt.dvector("x")
    y = x
    for i in range(150):
        y = wt.tanh(y) * 0.5 + x if i % 2 else y * 1.01
    g = to_networkx(y)
    boxes = layout(g).boxes
    assert len({(b.x, b.y) for b in boxes.values()}) == len(g)


def test_svg_is_valid_xml_with_one_element_per_node():
    x, w, h, cost = small_graph()
    g = to_networkx(cost)
    svg = to_svg(cost, highlight={"selected": [find(g, "h")]})
    root = ET.fromstring(svg)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    nodes = [e for e in root.iterfind(".//svg:g", ns) if "node" in e.get("class", "").split()]
    assert len(nodes) == len(g)
    assert {e.get("id") for e in nodes} == set(g.nodes)


def test_draw_on_matplotlib_axes():
    from matplotlib.figure import Figure

    x, w, h, cost = small_graph()
    ax = Figure().add_subplot()
    assert draw(cost, ax=ax) is ax
    assert len(ax.patches) == len(to_networkx(cost))
    with pytest.raises(ValueError, match="unknown highlight kind"):
        draw(cost, highlight={"purple": []})


def test_dot_and_json_exports():
    x, w, h, cost = small_graph()
    g = to_networkx(cost)
    dot = to_dot(cost)
    assert dot.startswith('digraph "workbench" {') and dot.count("->") == g.number_of_edges()
    # each node where the layout puts it (points, y up), with its wrapped caption
    lay = layout(g)
    key = find(g, "h")
    pos = re.search(rf'"{key}" \[label="([^"]*)".*pos="([-0-9.]+),([-0-9.]+)!"', dot)
    assert pos.group(1) == "\\n".join(lay.boxes[key].lines)
    assert float(pos.group(2)) == pytest.approx(lay.boxes[key].x * 0.75, abs=0.1)
    assert float(pos.group(3)) == pytest.approx((lay.height - lay.boxes[key].y) * 0.75, abs=0.1)
    data = json.loads(to_json(cost))
    back = nx.node_link_graph(data, edges="links")
    assert len(back) == len(g) and back.number_of_edges() == g.number_of_edges()


def test_diff_names_removed_and_introduced_nodes():
    x = wt.dvector("x")
    y = wt.exp(x) * 2.0
    fg = FunctionGraph([x], [y], clone=False)
    before = to_networkx(fg)
    exp_node = y.owner.inputs[0].owner
    fg.replace(exp_node.outputs[0], wt.sin(x))
    d = diff(before, to_networkx(fg))
    assert [n.op for n in d.removed_applies()] == [exp_node.op]
    assert [str(n.op) for n in d.introduced_applies()] == ["Elemwise{sin}"]
    assert d.changed and "Elemwise{exp}" in d.summary()
    assert "stroke-width=\"3\"" in d.to_svg()
    assert np.isfinite(wb.function([x], fg.outputs[0])(np.ones(2))).all()


@pytest.mark.parametrize("expression", ["log(1 + exp(x))", "x * y / y + exp(log(x))"])
def test_diff_of_consecutive_trace_steps_names_the_steps_nodes(expression):
    """What the rewrite stepper shows: diff(graph_at(k-1), graph_at(k)) == the step's record,
    and the same from the live view (view_at) turned into DiGraphs step by step."""
    from workbench.cli.sources import parse_expression

    source = parse_expression(expression, ["x=float64[?]", "y=float64[?]"])
    _, trace = wb.rewrite_graph(source.outputs, mode="FAST_RUN", trace=True)
    assert len(trace) >= 2
    for k, step in enumerate(trace.steps, start=1):
        kept_graphs = diff(trace.graph_at(k - 1), trace.graph_at(k))  # graphs of their own
        before = to_networkx(trace.view_at(k - 1))  # the live view, read before it moves on
        after = to_networkx(trace.view_at(k))
        for d in (kept_graphs, diff(before, after)):
            removed = {trace.node_id(n) for n in d.removed_applies()}
            introduced = {trace.node_id(n) for n in d.introduced_applies()}
            assert removed == set(step.removed_ids), step
            assert introduced == set(step.introduced_ids), step


def test_profile_times_and_memory_on_the_networkx_nodes():
    from workbench.core.compile.profiling import profile

    x = wt.dmatrix("x")
    f = wb.function([x], wt.exp(x).sum(), mode="FAST_COMPILE")
    stats = profile(f, np.ones((30, 20)), calls=3)
    g = to_networkx(f, profile=stats)
    timed = [d for _, d in g.nodes(data=True) if d["kind"] == "apply"]
    assert timed and all(d["calls"] == 3 and d["time"] >= 0 for d in timed)
    assert any(d.get("memory") == 30 * 20 * 8 for d in timed)
