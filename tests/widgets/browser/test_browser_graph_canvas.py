"""GraphView's drawing handled like a teacher at a 1280x800 projector would, in
Voila: the logistic-regression cost fits with every label at least 11 px tall,
dragging pans, the wheel zooms around the pointer, hovering shows a node's type
and clicking a node selects it in the kernel. The GradExplorer's drawing shows
values and gradients in the nodes and keeps the current step's node in view.

Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

import shutil
from pathlib import Path

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None

PROJECTOR = {"width": 1280, "height": 800}  # (the JupyterLab test's; Voila's: projector)
STEPPER_NOTEBOOKS = Path(__file__).parent / "stepper_notebooks"

#: Rendered size of every text of the drawing: bounding-box height and font size
#: times the screen scale, with whether it lies inside the drawing's view.
JS_TEXT_SIZES = """(holder) => {
  const view = holder.getBoundingClientRect();
  return [...holder.querySelectorAll('svg text')].map((text) => {
    const box = text.getBoundingClientRect();
    const scale = text.getScreenCTM().a;
    return {text: text.textContent, height: box.height,
            font: parseFloat(text.getAttribute('font-size')) * scale,
            inside: box.left >= view.left && box.right <= view.right &&
                    box.top >= view.top && box.bottom <= view.bottom};
  });
}"""

JS_BLANK_POINT = """(holder) => {
  const box = holder.getBoundingClientRect();
  for (let y = box.top + 20; y < box.bottom - 20; y += 10)
    for (let x = box.left + 10; x < box.right - 10; x += 10) {
      const hit = document.elementFromPoint(x, y);
      if (hit && holder.contains(hit) && !hit.closest('g.node') && hit.tagName !== 'polyline')
        return [x, y];
    }
  return null;
}"""


def centre(box: dict) -> tuple[float, float]:
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_graph_view_of_logistic_regression_on_a_projector(page, projector, screenshot_dir):
    view = projector.open("graph_view_logistic.ipynb", ".wb-graph-view")
    holder = view.locator(".wb-graph-canvas .wb-svg-holder")
    nodes = holder.locator("g.node")
    expect(nodes.first).to_be_visible()
    expect(holder).to_have_attribute("data-zoom", "1")
    page.wait_for_function("(h) => parseFloat(h.dataset.scale || '0') > 0",
                           arg=holder.element_handle())
    page.screenshot(path=str(screenshot_dir / "graph-view-logistic-1280x800.png"))

    # every label at least 11 px at the default size; what does not fit the view at
    # that size scrolls (a scroll bar says so) rather than shrinks
    sizes = holder.evaluate(JS_TEXT_SIZES)
    assert len(sizes) >= nodes.count() > 20
    small = [s for s in sizes if s["height"] < 11 or s["font"] < 11 - 1e-3]
    assert not small, f"labels under 11 px: {small[:5]}"
    in_view = [s["text"] for s in sizes if s["inside"]]
    assert len(in_view) >= 0.75 * len(sizes)
    assert {"X", "w", "b", "y"} <= set(in_view)  # the inputs, on top
    if len(in_view) < len(sizes):
        expect(holder.locator(".wb-vbar")).to_be_visible()

    # dragging the background pans the drawing by the distance dragged: up to the cost
    cost = nodes.filter(has_text="cost")
    before, view_box = cost.bounding_box(), holder.bounding_box()
    lift = max(90.0, before["y"] + before["height"] + 10 - view_box["y"] - view_box["height"])
    x, y = holder.evaluate(JS_BLANK_POINT)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y - lift, steps=6)
    page.mouse.up()
    after = cost.bounding_box()
    assert abs(after["x"] - before["x"] - 60) < 1.5 and abs(after["y"] - before["y"] + lift) < 1.5
    assert after["y"] + after["height"] <= view_box["y"] + view_box["height"]

    # the wheel zooms in around the pointer: the node under it stays under it
    sigmoid = nodes.filter(has_text="sigmoid")
    box = sigmoid.bounding_box()
    px, py = centre(box)
    page.mouse.move(px, py)
    page.mouse.wheel(0, -200)
    expect(holder).not_to_have_attribute("data-zoom", "1")
    zoomed = sigmoid.bounding_box()
    assert zoomed["width"] > 1.3 * box["width"]
    zx, zy = centre(zoomed)
    assert abs(zx - px) < 2 and abs(zy - py) < 2, ((px, py), (zx, zy))
    page.screenshot(path=str(screenshot_dir / "graph-view-logistic-zoomed.png"))

    # hovering shows the node's type, shape and where it comes from
    tooltip = view.locator(".wb-tooltip")
    page.mouse.move(px + 3, py + 2)
    expect(tooltip).to_be_visible()
    expect(tooltip).to_contain_text("Elemwise{sigmoid}")
    expect(tooltip).to_contain_text("TensorType(float64")
    expect(tooltip).to_contain_text("static shape")

    # clicking a node selects it, in the drawing and in the kernel
    key = sigmoid.get_attribute("id")
    sigmoid.click()
    echo = page.locator(".wb-kernel-echo")
    expect(echo).to_have_text(f"kernel: selected {key}")
    expect(view.locator(f".wb-details-body[data-key='{key}']")).to_contain_text("sigmoid")
    expect(sigmoid.locator("rect")).to_have_attribute("stroke-width", "3")
    expect(tooltip).to_be_hidden()  # the click put the hover box away
    expect(holder.locator("rect[stroke-width='3']")).to_have_count(1)
    page.screenshot(path=str(screenshot_dir / "graph-view-logistic-selected.png"))

    # "fit" brings the first view back, the selection still outlined
    view.locator(".wb-zoom-fit").click()
    expect(holder).to_have_attribute("data-zoom", "1")
    assert [s["text"] for s in holder.evaluate(JS_TEXT_SIZES) if s["inside"]] == in_view
    # so does a double-click on the background after zooming with the wheel
    x, y = holder.evaluate(JS_BLANK_POINT)
    page.mouse.move(x, y)
    page.mouse.wheel(0, -300)
    expect(holder).not_to_have_attribute("data-zoom", "1")
    x, y = holder.evaluate(JS_BLANK_POINT)
    page.mouse.dblclick(x, y)
    expect(holder).to_have_attribute("data-zoom", "1")
    expect(echo).to_have_text(f"kernel: selected {key}")  # a background click selects nothing
    assert page.get_by_text("Error displaying widget").count() == 0
    assert not page.js_errors, page.js_errors


def test_grad_explorer_shows_gradients_in_the_nodes_and_follows_the_step(
        page, projector, notebook_root, screenshot_dir):
    shutil.copy(STEPPER_NOTEBOOKS / "grad_explorer.ipynb", notebook_root)
    explorer = projector.open("grad_explorer.ipynb", ".wb-grad-explorer")
    holder = explorer.locator(".wb-graph-canvas .wb-svg-holder")
    x_node = holder.locator("g.node", has=page.locator("text.wb-label", has_text="x"))
    expect(x_node.first).to_be_visible()
    expect(x_node.locator("text.wb-value").first).to_have_text("data [1 2]")
    expect(x_node.locator("text.wb-grad")).to_have_count(0)  # nothing reached x yet

    explorer.locator(".wb-last").click()
    body = explorer.locator(".wb-grad-step-body")
    expect(body).to_have_attribute("data-kind", "sum")
    x_key = body.get_attribute("data-node")
    # the sum of x's three contributions: w (1 - tanh(x w)^2) + 2 x at x = [1, 2], w = [.5, -.3]
    expect(holder.locator(f"g.node[id='{x_key}'] text.wb-grad")).to_have_text("grad [2.39 3.79]")
    current = holder.locator("g.node:has(rect[stroke='#ff9800'][stroke-width='3'])")
    expect(current).to_have_count(1)
    box, view = current.bounding_box(), holder.bounding_box()
    assert view["y"] <= box["y"] and box["y"] + box["height"] <= view["y"] + view["height"]
    sizes = holder.evaluate(JS_TEXT_SIZES)
    assert all(s["height"] >= 11 and s["font"] >= 11 - 1e-3 for s in sizes), sizes
    explorer.screenshot(path=str(screenshot_dir / "grad-explorer-gradients-in-nodes.png"))
    assert not page.js_errors, page.js_errors


def test_clicking_a_node_selects_it_in_jupyterlab(page, lab_notebook, screenshot_dir):
    """JupyterLab runs widget callbacks on a kernel subshell thread: the click must
    still reach GraphView.selected, the dropdown and the details."""
    page.set_viewport_size(PROJECTOR)
    lab_notebook("graph_view_logistic.ipynb")
    view = page.locator(".wb-graph-view")
    holder = view.locator(".wb-graph-canvas .wb-svg-holder")
    expect(holder.locator("g.node").first).to_be_visible(timeout=60_000)
    view.scroll_into_view_if_needed()
    node = holder.locator("g.node").filter(has_text="Dot")
    key = node.get_attribute("id")
    node.click()
    expect(page.locator(".wb-kernel-echo")).to_have_text(f"kernel: selected {key}")
    expect(view.locator(".wb-node-select select")).to_have_value("J: Dot")  # [id J] in dprint
    expect(view.locator(f".wb-details-body[data-key='{key}']")).to_contain_text("Dot")
    page.screenshot(path=str(screenshot_dir / "lab-graph-view-logistic-1280x800.png"))
    assert not page.js_errors, page.js_errors


def test_a_loop_expands_into_its_body_and_collapses_on_a_projector(projector):
    view = projector.open("graph_view_loop.ipynb", ".wb-graph-view")
    holder = view.locator(".wb-graph-canvas .wb-svg-holder")
    nodes = holder.locator("g.node")
    expect(nodes.first).to_be_visible()
    closed = nodes.count()
    nodes.filter(has_text="Scan{rnn, for}").click()
    button = view.locator(".wb-expand")
    projector.toggle(button, "expand loop", "collapse loop")
    expect(holder.locator("polyline.feeds").first).to_be_attached()
    assert nodes.count() > closed
    for text in ("x[t]", "rnn.out0[t-1]", "Elemwise{tanh}"):
        expect(nodes.filter(has_text=text).first).to_be_visible()
    wait_until_in_view(holder, [""])  # a small loop: all of it fits
    projector.screenshot("graph-view-loop-expanded-1280x800.png")
    projector.toggle(button, "collapse loop", "expand loop")
    expect(holder.locator("polyline.feeds")).to_have_count(0)
    assert nodes.count() == closed
    projector.assert_clean()


def test_tutorial_07s_rnn_expanded_has_the_loop_and_its_body_in_view(projector):
    # the whole opened graph is taller than the view at 11 px text: "fit" then puts the
    # loop and its body in the middle of the view, the rest scrolls
    view = projector.open("graph_view_rnn.ipynb", ".wb-graph-view")
    holder = view.locator(".wb-graph-canvas .wb-svg-holder")
    expect(holder.locator("g.node").first).to_be_visible()
    wait_until_in_view(holder, [""])  # closed, the graph fits
    holder.locator("g.node").filter(has_text="Scan{rnn, for}").click()
    button = view.locator(".wb-expand")
    projector.toggle(button, "expand loop", "collapse loop")
    body = ["Scan{rnn, for}", "x[t]", "h0[t-1]", "Dot", "Elemwise{add}", "Elemwise{tanh}"]
    wait_until_in_view(holder, body)
    expect(holder).to_have_attribute("data-zoom", "1")
    labels = holder.evaluate(JS_TEXT_SIZES)
    assert any(not s["inside"] for s in labels)  # (the rest of the graph scrolls)
    expect(holder.locator(".wb-vbar")).to_be_visible()
    assert all(s["height"] >= 11 and s["font"] >= 11 - 1e-3 for s in labels), labels
    projector.screenshot("graph-view-tutorial07-rnn-expanded-1280x800.png")
    projector.toggle(button, "collapse loop", "expand loop")
    wait_until_in_view(holder, [""])  # closed again, it fits again
    projector.assert_clean()


def test_the_grad_explorer_fits_around_tutorial_07s_rnn_when_it_is_opened(projector):
    # as GraphView: the opened graph is too big for the view at 11 px text, and so is
    # the loop's body (values in the nodes, 55% of the width): "fit" puts the body's
    # top left in the view, readable, the rest scrolls
    explorer = projector.open("grad_explorer_rnn.ipynb", ".wb-grad-explorer")
    holder = explorer.locator(".wb-graph-canvas .wb-svg-holder")
    expect(holder.locator("g.node").first).to_be_visible()
    button = explorer.locator(".wb-expand")
    projector.toggle(button, "expand loop", "collapse loop")
    wait_until_in_view(holder, ["x[t]"])
    expect(holder).to_have_attribute("data-zoom", "1")
    labels = holder.evaluate(JS_TEXT_SIZES)
    shown = {s["text"] for s in labels if s["inside"]}
    assert {"x[t]", "W", "U"} <= shown, shown  # the body
    assert all(s["height"] >= 11 and s["font"] >= 11 - 1e-3 for s in labels), labels
    projector.screenshot("grad-explorer-tutorial07-rnn-expanded-1280x800.png")
    projector.toggle(button, "collapse loop", "expand loop")
    expect(holder.locator("[data-inner-of]")).to_have_count(0)
    projector.assert_clean()


#: Whether labels start with each of the prefixes and all those lie inside the view.
JS_IN_VIEW = """([holder, prefixes]) => {
  const view = holder.getBoundingClientRect();
  const labels = [...holder.querySelectorAll('svg text.wb-label')];
  const matching = labels.filter((t) => prefixes.some((p) => t.textContent.startsWith(p)));
  return prefixes.every((p) => labels.some((t) => t.textContent.startsWith(p))) &&
    matching.every((text) => {
      const box = text.getBoundingClientRect();
      return box.left >= view.left && box.right <= view.right &&
             box.top >= view.top && box.bottom <= view.bottom;
    });
}"""


def wait_until_in_view(holder, prefixes: list[str]) -> None:
    """Wait until the labels starting with one of `prefixes` ("": all) are in the view."""
    holder.page.wait_for_function(JS_IN_VIEW, arg=[holder.element_handle(), prefixes],
                                  timeout=10_000)
