"""GraphCanvas from Python: the data the browser receives (boxes, edges, labels,
values, gradients) and the selection kept in sync with GraphView."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import traitlets
import workbench.tensor as wt

import workbench
from workbench.core.tensor.join import split
from workbench.examples import get_example
from workbench.inspector import find, to_networkx
from workbench.inspector.layout import EdgeRoute, GraphLayout, NodeBox
from workbench.testing.drawings import layout_problems
from workbench.widgets import GraphView
from workbench.widgets.graph_canvas import (
    STATIC,
    GraphCanvas,
    drawn_nodes,
    graph_data,
    short_value,
)
from workbench.widgets.graph_view import _graph_of


def small_graph():
    x = wt.dvector("x")
    y = wt.exp(x) * 2 + x
    y.name = "y"
    return x, y


def received_layout(data: dict) -> GraphLayout:
    """The browser's data read back as a GraphLayout, for the inspector's geometric checks."""
    boxes = {n["key"]: NodeBox(n["key"], n["x"], n["y"], n["w"], n["h"],
                               tuple(line["text"] for line in n["lines"]), 0)
             for n in data["nodes"]}
    edges = [EdgeRoute(e["source"], e["target"], tuple(tuple(p) for p in e["points"]))
             for e in data["edges"]]
    return GraphLayout(boxes, edges, data["width"], data["height"],
                       font_size=data["font_size"], line_height=data["line_height"],
                       char_width=data["char_width"])


def box_of(data: dict, key: str) -> dict:
    return next(node for node in data["nodes"] if key in node["members"])


def texts(node: dict) -> list[str]:
    return [line["text"] for line in node["lines"]]


def test_every_graph_node_is_in_exactly_one_box():
    g = to_networkx(_graph_of(get_example("logistic_regression")))
    data = graph_data(g)
    members = [key for node in data["nodes"] for key in node["members"]]
    assert sorted(members) == sorted(g.nodes)
    # an Apply with one output shares its box with it (micrograd-style): half the layers
    for node in data["nodes"]:
        if len(node["members"]) == 2:
            apply_key, out_key = node["members"]
            assert g.nodes[apply_key]["kind"] == "apply"
            assert list(g.successors(apply_key)) == [out_key]
    assert len(data["nodes"]) == 24 < g.number_of_nodes() == 42
    p_box = box_of(data, find(g, "p"))
    assert texts(p_box) == ["Elemwise{sigmoid} [H]", "→ p"]
    assert box_of(data, find(g, "cost"))["kind"] == "output"


def test_an_apply_with_several_outputs_keeps_their_boxes():
    x = wt.dvector("x")
    left, right = split(x, 2)
    g = to_networkx([left, right])
    groups = drawn_nodes(g)
    split_key = next(k for k, d in g.nodes(data=True) if d.get("op_class") == "Split")
    assert groups[split_key] == [split_key]
    assert [find(g, "x")] in groups.values()
    assert sum(len(members) for members in groups.values()) == g.number_of_nodes()


@pytest.mark.parametrize("name", ["quickstart", "logistic_regression", "softmax_xent", "mlp",
                                  "unstable"])
def test_what_the_browser_receives_is_a_readable_drawing(name):
    """No edge through a box other than its ends, no overlapping boxes, every text line
    (values and gradients included) inside its box: the inspector's checks on the data."""
    g = to_networkx(_graph_of(get_example(name)))
    x = next(d["obj"] for _, d in g.nodes(data=True) if d["kind"] == "input")
    data = graph_data(g, values={x: np.linspace(0, 1, 7)}, grads={x: np.ones(7)})
    assert layout_problems(received_layout(data)) == []
    assert data["font_size"] >= data["min_font_px"]
    boxes = {node["key"]: node for node in data["nodes"]}
    for edge in data["edges"]:  # from the bottom of one box to the top of the next
        source, target = boxes[edge["source"]], boxes[edge["target"]]
        (x0, y0), (x1, y1) = edge["points"][0], edge["points"][-1]
        assert abs(x0 - source["x"]) <= source["w"] / 2
        assert y0 == pytest.approx(source["y"] + source["h"] / 2, abs=0.2)
        assert abs(x1 - target["x"]) <= target["w"] / 2
        assert y1 == pytest.approx(target["y"] - target["h"] / 2, abs=0.2)
        assert y1 > y0  # inputs on top, outputs below


def test_values_and_gradients_inside_the_boxes_togglable():
    x, y = small_graph()
    point = np.array([0.0, 1.0, 2.0])
    view = GraphView(y, point={x: point})
    data = view.canvas.graph
    y_box = box_of(data, find(view.nx_graph, "y"))  # the last add, with y inside
    assert texts(y_box)[1:] == ["→ y", "data " + short_value(np.exp(point) * 2 + point)]
    assert "value: float64 (3,)" in y_box["hover"]
    two = next(n for n in data["nodes"] if texts(n)[0] == "2.0")  # a constant: no data line
    assert len(two["lines"]) == 1 and "value: float64 ()" in two["hover"]
    view.values_toggle.value = False
    assert not any(line["role"] == "value" for n in view.canvas.graph["nodes"]
                   for line in n["lines"])
    g = view.nx_graph
    grads = {x: np.ones(3)}
    with_grads = graph_data(g, values=view.values, grads=grads)
    x_box = box_of(with_grads, find(g, "x"))
    assert texts(x_box) == ["x", "data [0 1 2]", "grad [1 1 1]"]
    assert "gradient: float64 (3,)" in x_box["hover"]


@pytest.mark.parametrize(("value", "text"), [
    (np.float64(0.73105857), "0.7311"),
    (np.array([0.5, -1.0, 2.0]), "[0.5 -1 2]"),
    (np.linspace(0, 1, 256), "[0 0.00392 …] (256,)"),
    (np.ones((2, 3)), "[1 1 …] (2, 3)"),
    (None, "?"),
])
def test_short_values(value, text):
    assert short_value(value) == text


def test_a_click_in_the_browser_selects_in_python():
    x, y = small_graph()
    view = GraphView(y, point={x: np.ones(3)})
    exp_key = find(view.nx_graph, "y")
    view.canvas.selected = exp_key  # what a click sends back from the browser
    assert view.selected == exp_key
    assert view.node_select.value == exp_key
    assert f'data-key="{exp_key}"' in view.details.value
    view.select("x")  # and Python's selection reaches the drawing
    assert view.canvas.selected == find(view.nx_graph, "x")
    view.select(None)
    assert view.canvas.selected is None
    with pytest.raises(traitlets.TraitError, match="selected must be the key of a drawn"):
        view.canvas.selected = "nothing-like-this"
    with pytest.raises(traitlets.TraitError, match="focus must be the key of a drawn"):
        view.canvas.focus = "nothing-like-this"


def test_fit_zoom_and_the_shipped_javascript():
    _, y = small_graph()
    canvas = GraphCanvas(graph_data(to_networkx(y)))
    sent = []
    canvas.send = sent.append
    canvas.zoom = 3.0
    canvas.fit()
    assert canvas.zoom == 1.0 and sent == [{"command": "fit"}]
    with pytest.raises(traitlets.TraitError, match="positive"):
        canvas.zoom = 0.0
    # the browser code comes from the package (no CDN): it is package data
    assert STATIC.parent == Path(workbench.__file__).parent / "widgets"
    assert "export default" in canvas._esm and "wb-graph-canvas" in canvas._css
    assert "http" not in canvas._esm.replace("http://www.w3.org/2000/svg", "")
    pyproject = (Path(workbench.__file__).parents[1] / "pyproject.toml").read_text()
    assert '"widgets/static/*.js"' in pyproject and '"widgets/static/*.css"' in pyproject
