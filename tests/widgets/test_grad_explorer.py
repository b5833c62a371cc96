"""GradExplorer driven from Python: step the recorded backward pass, watch a variable used
three times collect three contributions, and compare with finite differences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.inspector import node_key
from workbench.widgets import GradExplorer
from workbench.widgets.graph_canvas import GraphCanvas, short_value

SELECTED, RECEIVED, PRODUCED = "#ff9800", "#d32f2f", "#2e7d32"
X0, W0 = np.array([1.0, 2.0]), np.array([0.5, -0.3])


def outlined(canvas: GraphCanvas, colour: str) -> set[str]:
    """Keys of the nodes the drawing outlines in `colour`."""
    looks = canvas.graph["highlights"]
    return {key for key, kind in canvas.highlight.items() if looks[kind]["stroke"] == colour}


def classroom_graph():
    """sum(tanh(x * w) + x * x): x is used three times (twice by x * x)."""
    x, w = wt.dvector("x"), wt.dvector("w")
    cost = (wt.tanh(x * w) + x * x).sum()
    cost.name = "cost"
    return x, w, cost


@pytest.fixture
def explorer() -> GradExplorer:
    x, w, cost = classroom_graph()
    return GradExplorer(cost, [x, w], point={x: X0, w: W0})


def test_starts_at_the_forward_pass_with_values(explorer):
    x, w = explorer.wrt
    assert explorer.position == 0 and explorer.entry is None
    assert explorer.status.value == "done"
    assert "wb-grad-explorer" in explorer._dom_classes
    for widget, css in [(explorer.next_button, "wb-next"), (explorer.slider, "wb-step-slider"),
                        (explorer.svg, "wb-grad-svg"), (explorer.step_panel, "wb-grad-step"),
                        (explorer.so_far, "wb-grad-sofar"), (explorer.check_button, "wb-verify")]:
        assert css in widget._dom_classes
    # the timeline: every recorded step and every sum, nothing else
    trace = explorer.trace
    assert len(explorer.entries) == len(trace.steps) + len(trace.accumulations)
    assert explorer.slider.min == 0 and explorer.slider.max == len(explorer.entries)
    expected = np.sum(np.tanh(X0 * W0) + X0 * X0)
    np.testing.assert_allclose(explorer.value(explorer.cost), expected)
    assert f"{expected:.4f}" in explorer.forward_table.value
    assert 'data-kind="forward"' in explorer.step_panel.value
    assert outlined(explorer.canvas, SELECTED) == {node_key(explorer.cost)}
    assert explorer.check is None and explorer.check_output.value == ""


def test_each_step_outlines_its_node_and_what_it_received_and_produced(explorer):
    seen = []
    for position, (kind, item) in enumerate(explorer.entries, start=1):
        explorer.next_button.click()
        assert explorer.position == position and explorer.entry == (kind, item)
        assert f'data-position="{position}"' in explorer.step_panel.value
        if kind != "step":
            continue
        node = item.node
        assert outlined(explorer.canvas, SELECTED) == {node_key(node)}
        assert outlined(explorer.canvas, RECEIVED) == {node_key(o) for o in node.outputs}
        assert outlined(explorer.canvas, PRODUCED) == {
            node_key(i) for i, g in zip(node.inputs, item.input_grads) if g is not None}
        seen.append(node)
    # reverse mode: the nodes in reverse topological order, the cost's node first
    assert seen[0] is explorer.cost.owner and len(set(seen)) == len(seen)
    assert explorer.next_button.disabled and explorer.status.value == "done"


def test_a_variable_used_twice_receives_two_contributions(explorer):
    x = explorer.wrt[0]
    square = next(p for p, (kind, item) in enumerate(explorer.entries, 1)
                  if kind == "step" and list(item.node.inputs) == [x, x])
    explorer.slider.value = square
    produced = explorer.step_panel.value
    assert "contribution 1 of 3 to x" in produced and "contribution 2 of 3 to x" in produced
    assert "used 2 times by this node" in produced
    # x * x gives x the term 1 * x twice, so x's running sum is 2 x so far
    terms = explorer.contributions(x, upto=square)
    assert [p for p, _ in terms] == [square, square]
    for _, term in terms:
        np.testing.assert_allclose(explorer.value(term), X0)
    assert "2 of 3 terms" in explorer.so_far.value
    assert np.array2string(2 * X0, precision=4) in explorer.so_far.value


def test_the_sum_adds_the_three_contributions_to_the_right_gradient(explorer):
    x, w = explorer.wrt
    explorer.last_button.click()
    kind, acc = explorer.entry
    assert kind == "sum" and acc.variable is x and len(acc.terms) == 3
    assert "x is used 3 times" in explorer.step_panel.value
    assert outlined(explorer.canvas, SELECTED) == {node_key(x)}
    expected_x = W0 * (1 - np.tanh(X0 * W0) ** 2) + 2 * X0
    total = sum(explorer.value(t) for _, t in explorer.contributions(x))
    np.testing.assert_allclose(total, expected_x)
    np.testing.assert_allclose(explorer.value(acc.total), expected_x)
    assert "3 of 3 terms, summed" in explorer.so_far.value


def test_the_end_compares_with_finite_differences(explorer):
    explorer.last()
    check = explorer.check
    assert check is not None and check.passed, check.message
    x_expected = W0 * (1 - np.tanh(X0 * W0) ** 2) + 2 * X0
    w_expected = X0 * (1 - np.tanh(X0 * W0) ** 2)
    np.testing.assert_allclose(check.symbolic[0], x_expected)
    np.testing.assert_allclose(check.symbolic[1], w_expected)
    np.testing.assert_allclose(check.numeric[0], x_expected, rtol=1e-6)
    assert max(check.max_abs_error) < 1e-5
    assert 'data-ok="true"' in explorer.check_output.value
    assert "verify_grad passed" in explorer.check_output.value
    explorer.prev_button.click()
    assert explorer.check_output.value == ""
    explorer.check_button.click()  # the button shows it anywhere
    assert 'data-ok="true"' in explorer.check_output.value


class WrongSquare(Op):
    """x ** 2 with the gradient 3 x (deliberately wrong: it is 2 x)."""

    __props__ = ()

    def make_node(self, x: Any) -> Apply:  # type: ignore[override]
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list[list[Any]]) -> None:
        out[0][0] = inputs[0] ** 2

    def grad(self, inputs: Sequence[Variable], g: Sequence[Variable]) -> list[Variable]:
        return [3.0 * inputs[0] * g[0]]


def test_a_wrong_gradient_fails_the_check():
    x = wt.dvector("x")
    explorer = GradExplorer(WrongSquare()(x).sum(), x, point={"x": [1.0, 2.0]})
    explorer.last()
    assert explorer.check is not None and not explorer.check.passed
    np.testing.assert_allclose(explorer.check.symbolic[0], [3.0, 6.0])
    np.testing.assert_allclose(explorer.check.numeric[0], [2.0, 4.0], rtol=1e-5)
    assert 'data-ok="false"' in explorer.check_output.value
    assert "does not match finite differences" in explorer.check.message


def test_random_point_is_seeded_and_shapes_fit():
    x, w, cost = classroom_graph()
    a = GradExplorer(cost, w, seed=3)
    b = GradExplorer(cost, w, seed=3)
    assert a.point[x].shape == a.point[w].shape == (3,)
    np.testing.assert_array_equal(a.point[x], b.point[x])
    a.last()
    assert a.check.passed and len(a.check.symbolic) == 1
    m, v = wt.dmatrix("m"), wt.dvector("v")
    mv = GradExplorer(wt.dot(m, v).sum(), [m, v])
    assert mv.point[m].shape[1] == mv.point[v].shape[0]


def test_intermediate_variables_and_names_in_the_point():
    x, w, cost = classroom_graph()
    hidden = x * w
    hidden.name = "h"
    cost2 = wt.tanh(hidden).sum()
    explorer = GradExplorer(cost2, hidden, point={"x": X0, "w": W0})
    explorer.last()
    np.testing.assert_allclose(explorer.check.symbolic[0], 1 - np.tanh(X0 * W0) ** 2)
    assert explorer.check.passed


def test_bad_input_names_what_was_given():
    x, w, cost = classroom_graph()
    with pytest.raises(TypeError, match="scalar"):
        GradExplorer(x * w, x)
    with pytest.raises(TypeError, match="cost must be a scalar Variable, got float"):
        GradExplorer(1.0, x)
    with pytest.raises(TypeError, match=r"wrt\[1\] must be a Variable, got str"):
        GradExplorer(cost, [x, "w"])
    with pytest.raises(ValueError, match="no value for input"):
        GradExplorer(cost, x, point={x: X0})
    with pytest.raises(KeyError, match="'v', which is not an input"):
        GradExplorer(cost, x, point={"x": X0, "v": W0})


def test_float32_inputs_are_checked_with_a_float32_step():
    x, w = wt.dmatrix("x"), wt.fmatrix("w")
    explorer = GradExplorer(wt.log(1 + wt.tanh(x @ w)).sum(), [x, w])
    assert explorer.point[w].dtype == np.float32
    explorer.last()
    assert explorer.check is not None and explorer.check.passed, explorer.check_output.value
    assert max(explorer.check.max_abs_error) < 1e-3


def test_nodes_show_values_and_the_gradients_so_far_and_never_move(explorer):
    x, w = explorer.wrt

    def lines(var: Variable) -> list[str]:
        box = next(n for n in explorer.canvas.graph["nodes"] if n["key"] == node_key(var))
        return [line["text"] for line in box["lines"]]

    def places() -> dict[str, tuple[float, ...]]:
        return {n["key"]: (n["x"], n["y"], n["w"], n["h"]) for n in explorer.canvas.graph["nodes"]}

    start = places()
    assert lines(x) == ["x", "data " + short_value(X0)]  # no gradient reached x yet
    assert lines(explorer.cost)[-1] == "grad 1"  # the seed d cost / d cost
    explorer.last()
    expected_x = W0 * (1 - np.tanh(X0 * W0) ** 2) + 2 * X0
    assert lines(x) == ["x", "data " + short_value(X0), "grad " + short_value(expected_x)]
    assert places() == start  # relabelled in place: the eye sees only the numbers change
    explorer.values_toggle.value = False
    assert all(len(n["lines"]) == 1 for n in explorer.canvas.graph["nodes"])


def test_titles_name_the_cost_and_count_one_sum_in_the_singular():
    x = wt.dscalar("x")
    y = x * wt.sin(x)
    y.name = "cost"
    explorer = GradExplorer(y, [x], point={x: 0.7})
    assert "d cost / d x</b>" in explorer.title.value
    assert "1 sum<" in explorer.title.value and "1 sums" not in explorer.title.value
    unnamed = GradExplorer(x * wt.sin(x), [x], point={x: 0.7})
    assert "d x * sin(x) / d x" in unnamed.title.value


def test_a_three_step_rnn_shows_bptt_one_iteration_at_a_time():
    import workbench as wb

    x = wt.dmatrix("x")
    w = wt.dmatrix("w")
    h0 = wt.dvector("h")
    hs, _ = wb.scan(lambda xt, h: wt.tanh(wt.dot(h, w) + xt), sequences=x, outputs_info=h0,
                    n_steps=3, name="rnn")
    cost = hs[-1].sum()
    point = {x: np.full((3, 2), 0.1), w: np.array([[0.5, -0.2], [0.3, 0.8]]),
             h0: np.array([0.2, -0.4])}
    explorer = GradExplorer(cost, w, point=point)
    names = {v.name for v in explorer.values if isinstance(v, wb.Variable) and v.name}
    assert {"rnn[0]", "rnn[1]", "rnn[2]"} <= names
    (sum_of_w,) = [a for a in explorer.trace.accumulations if a.variable is w]
    assert len(sum_of_w.terms) == 3  # one contribution per time step
    explorer.last()
    check = explorer.compare()
    assert check.passed
    looped = GradExplorer(cost, w, point=point, unroll_loops=0)
    assert not looped.trace.accumulations  # the loop's own L_op: one step, no sum
    np.testing.assert_allclose(looped.grad_values[looped.grads[0]],
                               explorer.grad_values[explorer.grads[0]])


def test_an_op_from_graph_in_the_drawing_expands_and_collapses_again():
    import workbench as wb

    x, w, b = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("b")
    dense = wb.OpFromGraph([x, w, b], [wt.tanh(x @ w + b)], name="dense_layer")
    X, W, B = wt.dmatrix("X"), wt.dmatrix("W"), wt.dvector("B")
    h = dense(X, W, B)
    explorer = GradExplorer((h ** 2).sum(), W, point={X: np.ones((2, 3)), W: np.ones((3, 2)),
                                                       B: np.zeros(2)})

    def drawn() -> set[str]:
        return {key for node in explorer.canvas.graph["nodes"] for key in node["members"]}

    closed = drawn()
    assert explorer.expand_button.layout.display == ""
    assert explorer.expand_button.description == "expand dense_layer"
    explorer.expand_button.click()
    assert explorer.expand_button.description == "collapse dense_layer"
    inner = {key for key, d in explorer.nx_graph.nodes(data=True) if d.get("inner_of")}
    assert inner and drawn() == closed | inner
    # the drawing fits again around the opened box (as GraphView's does)
    box = next(k for k, d in explorer.nx_graph.nodes(data=True) if d["obj"] is h.owner)
    assert explorer.canvas.focus == box and explorer.canvas.zoom == 1.0
    explorer.canvas.zoom = 2.0
    explorer.last()  # stepping on draws the opened body too
    assert inner <= drawn()
    explorer.collapse(h.owner)
    assert drawn() == closed
    assert explorer.canvas.focus is None and explorer.canvas.zoom == 1.0
    assert explorer.expand_button.description == "expand dense_layer"
