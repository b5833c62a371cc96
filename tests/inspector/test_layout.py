"""The layered layout: no edge through a box, no boxes overlapping, captions that fit,
on the layout data and on the SVG the CLI writes, for every example, the tutorials'
graphs and random graphs up to 200+ nodes."""

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.examples import EXAMPLES, get_example
from workbench.inspector import layout, layout_union, node_key, to_networkx, to_svg
from workbench.inspector.layout import NodeBox, wrap_text
from workbench.testing.drawings import layout_problems, segment_crosses_box, svg_layout
from workbench.testing.random_graphs import RngChooser, generate


def _trace_graphs(outputs, every_step: bool = True):
    """The graphs of a FAST_RUN rewrite trace of `outputs` (snapshots): every step's,
    or only the first and the last."""
    _, trace = wb.rewrite_graph(outputs, mode="FAST_RUN", trace=True)
    steps = range(len(trace) + 1) if every_step else (0, len(trace))
    return [to_networkx(trace.graph_at(k)) for k in steps]


def example_graphs(name):
    """An example's graph and its rewritten graph (every step for the logistic
    regression, which the stepper and the tutorials show), or its gradient graph."""
    if name == "logistic_regression-grad":
        source = get_example("logistic_regression")
        inputs = {v.name: v for v in source.inputs}
        grads = wb.grad(source.outputs[0], [inputs["w"], inputs["b"]])
        return [to_networkx([source.outputs[0], *grads])]
    source = get_example(name)
    return _trace_graphs(source.outputs, every_step=name == "logistic_regression")


def tutorial_graphs(name):
    """The graphs tutorials 01-04 draw or step through."""
    x = wt.dvector("x")
    s = wt.dscalar("x")
    if name == "01":
        m = wt.tensor("float32", shape=(None, 3), name="m")
        v = wt.tensor("float32", shape=(3,), name="v")
        return [to_networkx(wt.exp(x) * 2 + x), to_networkx(wt.specify_shape(m, (5, 3)) @ v * 2)]
    if name == "02":
        y = s * wt.sin(s)
        g, _ = wb.grad(y, s, trace=True)
        return [to_networkx(y), to_networkx([y, g]), to_networkx(wb.function([s], g))]
    if name == "03":
        return (_trace_graphs(wt.log(1 + x))
                + _trace_graphs((wt.exp(x) * 2 + wt.sin(x)) ** 2))
    xm, w, b = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("b")
    return [to_networkx(wb.function([xm, w, b], wt.tanh(xm @ w + b).mean(axis=0)))]


def check_readable(graph):
    lay = layout(graph)
    assert set(lay.boxes) == set(graph.nodes)
    assert {(e.source, e.target) for e in lay.edges} == set(graph.edges)
    assert layout_problems(lay) == []
    assert layout_problems(svg_layout(to_svg(graph, positions=lay))) == []


@pytest.mark.parametrize("name", [*EXAMPLES, "logistic_regression-grad"])
def test_example_drawings_are_readable(name):
    for graph in example_graphs(name):
        check_readable(graph)


@pytest.mark.parametrize("name", ["01", "02", "03", "04"])
def test_tutorial_drawings_are_readable(name):
    for graph in tutorial_graphs(name):
        check_readable(graph)


@pytest.mark.parametrize("seed", range(3))
def test_random_graphs_are_readable(seed):
    rg = generate(RngChooser(seed), max_steps=40)
    _, outputs = rg.symbolic()
    graph = to_networkx(outputs)
    lay = layout(graph)
    assert layout_problems(lay) == []
    assert layout_problems(svg_layout(to_svg(graph))) == []


def test_a_200_node_graph_is_laid_out():
    sizes = []
    for seed in range(20):
        rg = generate(RngChooser(seed), max_steps=80)
        graph = to_networkx(rg.symbolic()[1])
        sizes.append(len(graph))
        if len(graph) >= 200:
            break
    assert len(graph) >= 200, sizes
    lay = layout(graph)
    assert len(lay.boxes) == len(graph) and layout_problems(lay) == []


def test_the_edge_that_skips_a_layer_goes_around_the_box_in_between():
    """x * sin(x): the x -> mul edge skips sin's layer; it must not run through sin."""
    x = wt.dscalar("x")
    y = x * wt.sin(x)
    g = to_networkx(y)
    lay = layout(g)
    mul, sin = node_key(y.owner), y.owner.inputs[1].owner
    route = next(e for e in lay.edges if e.source == node_key(x) and e.target == mul)
    assert len(route.points) > 2  # bent through a dummy point
    sin_box = lay.boxes[node_key(sin)]
    assert not any(segment_crosses_box(p, q, sin_box)
                   for p, q in zip(route.points, route.points[1:]))


def test_inputs_are_on_top_and_every_edge_points_down():
    x, w = wt.dmatrix("x"), wt.dmatrix("W")
    cost = (wt.tanh(x @ w) ** 2).sum()
    g = to_networkx(cost)
    lay = layout(g)
    for source, target in g.edges:
        assert lay.boxes[source].bottom < lay.boxes[target].top
    for edge in lay.edges:
        ys = [y for _, y in edge.points]
        assert ys == sorted(ys)


def test_a_chain_is_drawn_straight():
    x = wt.dvector("x")
    y = x
    for _ in range(6):
        y = wt.exp(y)
    lay = layout(y)
    assert len({round(b.x, 3) for b in lay.boxes.values()}) == 1


def test_boxes_are_sized_to_their_captions():
    x = wt.dvector("a_rather_long_input_name")
    lay = layout(wt.exp(x))
    short = min(lay.boxes.values(), key=lambda b: b.width)
    long = max(lay.boxes.values(), key=lambda b: b.width)
    assert long.lines == ("a_rather_long_input_name",)
    assert long.width > short.width


def test_long_captions_wrap_and_keep_at_most_four_lines():
    text = "Elemwise{Composite{((i0 * i1) + exp(i2))}}"
    lines = wrap_text(text, width=20)
    assert len(lines) > 1 and max(map(len, lines)) <= 20
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")  # nothing lost
    assert all(line[-1] in "{},( " or len(line) == 20 or line is lines[-1] for line in lines)
    lines = wrap_text("x" * 200, width=20)
    assert len(lines) == 4 and lines[-1].endswith("…") and max(map(len, lines)) <= 20


def test_a_union_layout_keeps_shared_nodes_in_place():
    x = wt.dvector("x")
    before = to_networkx(wt.exp(x) * 2.0)
    after = to_networkx(wt.exp(x) * 2.0 + wt.sin(x))
    union = layout_union([before, after])
    kept = set(before.nodes) & set(after.nodes)
    left, right = union.restrict(before.nodes), union.restrict(after.nodes)
    assert kept and all(left.boxes[k] == right.boxes[k] for k in kept)
    assert layout_problems(right) == [] and layout_problems(left) == []


def test_layout_data_is_json_ready():
    import json

    x = wt.dvector("x")
    data = json.loads(json.dumps(layout(wt.exp(x) + x).to_dict()))
    assert {n["key"] for n in data["nodes"]} and all(len(e["points"]) >= 2 for e in data["edges"])


def test_the_checker_sees_an_edge_through_a_box():
    box = NodeBox("b", 50.0, 50.0, 20.0, 10.0, ("b",), 0)
    assert segment_crosses_box((50.0, 0.0), (50.0, 100.0), box)
    assert not segment_crosses_box((0.0, 45.0), (100.0, 45.0), box)  # along the border
    assert not segment_crosses_box((0.0, 0.0), (30.0, 100.0), box)
    assert np.isclose(box.left, 40.0)


def test_graphs_past_the_sugiyama_budget_get_lanes_that_cross_no_box(monkeypatch):
    """The 2,000-node long chain takes the lane layout (linear time); forced onto lanes,
    every example still draws no edge through a box."""
    import importlib

    layout_module = importlib.import_module("workbench.inspector.layout")  # the module, not
    # the function `workbench.inspector.layout` that the package exports under its name
    chain = to_networkx(get_example("long_chain").outputs)
    lay = layout(chain)
    assert lay.extra.get("routing") == "lanes"
    assert layout_problems(lay) == []
    monkeypatch.setattr(layout_module, "SUGIYAMA_BUDGET", 0)
    for name in EXAMPLES:
        lay = layout(to_networkx(get_example(name).outputs))
        assert lay.extra.get("routing") == "lanes"
        assert layout_problems(lay) == [], name
