"""GraphView driven from Python: select nodes, zoom, evaluate at a point."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.examples import get_example
from workbench.widgets import GraphView


def small_graph():
    x = wt.dvector("x")
    y = wt.exp(x) * 2 + x
    y.name = "y"
    return x, y


def test_builds_with_classes_and_done_status():
    _, y = small_graph()
    view = GraphView(y)
    assert view.status.value == "done"
    assert "wb-graph-svg" in view.canvas._dom_classes
    assert "wb-node-select" in view.node_select._dom_classes
    assert "wb-details" in view.details._dom_classes
    # the drawing shows every node, and every node can be picked, plus "no selection"
    assert set(view.canvas.node_keys()) == set(view.nx_graph)
    assert len(view.node_select.options) == view.nx_graph.number_of_nodes() + 1
    assert view.canvas.selected is None


def test_selecting_in_the_dropdown_highlights_and_shows_details():
    _, y = small_graph()
    view = GraphView(y)
    exp_key = next(k for _, k in view.node_select.options if k and "exp" in
                   str(view.nx_graph.nodes[k].get("op")))
    view.node_select.value = exp_key  # what a person does in the browser
    assert view.selected == exp_key
    assert view.status.value == "done"
    assert view.canvas.selected == exp_key  # the drawing outlines it
    details = view.details.value
    assert "apply" in details and "Elemwise{exp}" in details and "(Elemwise)" in details
    assert "wb-dprint" in details and "x [id" in details  # the subtree, with its input
    assert "value at the point" not in details  # no point given
    view.select(None)
    assert view.selected is None and view.canvas.selected is None


def test_select_by_letter_name_or_object():
    x, y = small_graph()
    view = GraphView(y)
    view.select("x")
    assert view.nx_graph.nodes[view.selected]["obj"] is x
    assert "float64" in view.details.value and "(None,)" in view.details.value
    view.select(y.owner)
    assert view.nx_graph.nodes[view.selected]["obj"] is y.owner
    letter = view.nx_graph.nodes[view.selected]["label"]
    view.select(None)
    view.select(letter)
    assert view.nx_graph.nodes[view.selected]["obj"] is y.owner
    with pytest.raises(KeyError, match="no node labelled"):
        view.select("nothing-like-this")
    with pytest.raises(KeyError, match="not part of this graph"):
        view.select(wt.dvector("other"))


def test_values_at_a_point():
    x, y = small_graph()
    point = np.array([0.0, 1.0, 2.0])
    view = GraphView(y, point={"x": point})
    expected = np.exp(point) * 2 + point
    view.select("y")
    np.testing.assert_allclose(view.value_of(view.selected), expected)
    assert "value at the point" in view.details.value
    view.select(y.owner)
    np.testing.assert_allclose(view.value_of(view.selected)[0], expected)
    exp_node = y.owner.inputs[0].owner.inputs[0].owner
    view.select(exp_node.outputs[0])
    np.testing.assert_allclose(view.value_of(view.selected), np.exp(point))
    view_by_var = GraphView(y, point={x: point})  # Variables as keys work too
    view_by_var.select("y")
    np.testing.assert_allclose(view_by_var.value_of(view_by_var.selected), expected)


def test_bad_points_name_the_culprit():
    x, y = small_graph()
    with pytest.raises(ValueError, match="no value for input"):
        GraphView(y, point={})
    with pytest.raises(KeyError, match="'z', which is not an input"):
        GraphView(y, point={"x": np.ones(2), "z": 1.0})


def test_zoom_buttons():
    _, y = small_graph()
    view = GraphView(y)
    assert view.zoom == 1.0 == view.canvas.zoom  # 1.0 is "fit"
    view.zoom_in_button.click()
    assert view.zoom == 1.5 == view.canvas.zoom
    view.zoom_in_button.click()
    assert view.zoom == 2.0
    view.canvas.zoom = 2.7  # the browser's wheel; the buttons step on from there
    view.zoom_in_button.click()
    assert view.zoom == 3.0
    view.zoom_fit_button.click()
    assert view.zoom == 1.0
    view.zoom_out_button.click()
    assert view.zoom == 0.75 and view.status.value == "done"
    with pytest.raises(ValueError, match="positive"):
        view.set_zoom(0)


def test_accepts_examples_functions_and_keeps_selection_when_zooming():
    view = GraphView(get_example("mlp"))  # a GraphSource: a training step, ~100 nodes
    assert view.nx_graph.number_of_nodes() > 50
    key = view.node_select.options[5][1]
    view.node_select.value = key
    view.zoom_in_button.click()
    assert view.canvas.selected == key
    x, y = small_graph()
    fn = wb.function([x], y)
    assert GraphView(fn).nx_graph.number_of_nodes() > 0


def test_a_few_hundred_nodes_stay_usable():
    x = wt.dvector("x")
    y = x
    for i in range(80):
        y = wt.tanh(y) * 1.01 + i
    view = GraphView(y, point={x: np.zeros(2)})
    assert view.nx_graph.number_of_nodes() > 300
    view.select(y)
    assert view.status.value == "done" and "value at the point" in view.details.value


def test_browser_test_notebooks_are_stored_without_outputs():
    import json
    from pathlib import Path

    folder = Path(__file__).parent / "browser" / "notebooks"
    notebooks = sorted(folder.glob("*.ipynb"))
    assert {p.name for p in notebooks} >= {"graph_view.ipynb", "profile_panel.ipynb"}
    for path in notebooks:
        cells = json.loads(path.read_text())["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)


def test_a_loop_node_expands_into_its_body_and_collapses_again():
    x = wt.dvector("x")
    w = wt.dscalar("w")
    hs, _ = wb.scan(lambda xt, h: wt.tanh(h * w + xt), sequences=x,
                    outputs_info=np.float64(0), name="rnn")
    view = GraphView(hs)
    n_closed = view.nx_graph.number_of_nodes()
    scan_key = next(k for k, d in view.nx_graph.nodes(data=True) if d.get("op_class") == "Scan")
    view.select(scan_key)
    assert view.expand_button.layout.display == ""
    assert view.expand_button.description == "expand loop"
    view.expand_button.click()
    assert view.nx_graph.number_of_nodes() > n_closed
    assert view.expand_button.description == "collapse loop"
    assert view.canvas.graph["frames"] or any(n["inner"] for n in view.canvas.graph["nodes"])
    assert any(e["feeds"] for e in view.canvas.graph["edges"])
    # the drawing fits again around the opened loop: its body's boxes say whose they are
    assert view.canvas.focus == scan_key and view.canvas.zoom == 1.0
    assert {n["inner_of"] for n in view.canvas.graph["nodes"] if n["inner"]} == {scan_key}
    view.canvas.zoom = 2.0
    view.collapse(scan_key)
    assert view.canvas.focus is None and view.canvas.zoom == 1.0
    assert view.nx_graph.number_of_nodes() == n_closed
    view.select(next(k for k, d in view.nx_graph.nodes(data=True) if d["obj"] is x))
    assert view.expand_button.layout.display == "none"


def test_an_op_from_graph_expands_into_its_inner_graph():
    x, w, b = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("b")
    dense = wb.OpFromGraph([x, w, b], [wt.tanh(x @ w + b)], name="dense_layer")
    X, W, B = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B")
    h = dense(X, W, B)
    view = GraphView((h ** 2).sum())
    closed = len(view.nx_graph)
    view.select(h.owner)
    assert view.expand_button.description == "expand dense_layer"
    view.expand_button.click()
    assert view.expand_button.description == "collapse dense_layer"
    assert "expanded: dense_layer" in view.title.value
    inner = [d["op"] for _, d in view.nx_graph.nodes(data=True)
             if d.get("inner_of") and d["kind"] == "apply"]
    assert sorted(inner) == ["DimShuffle{x,0}", "Dot", "Elemwise{add}", "Elemwise{tanh}"]
    view.expand_button.click()
    assert len(view.nx_graph) == closed
