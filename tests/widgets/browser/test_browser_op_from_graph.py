"""An OpFromGraph in GraphView at a 1280x800 projector, in Voila: one box named
"dense_layer"; selected and expanded, its inner graph is drawn beside it, fed by the
box's inputs ("expand dense_layer"); collapsed again, the one box is back.

Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None

PROJECTOR = {"width": 1280, "height": 800}


def test_an_op_from_graph_expands_and_collapses(page, voila_app, screenshot_dir):
    page.set_viewport_size(PROJECTOR)
    voila_app("graph_view_op_from_graph.ipynb")
    view = page.locator(".wb-graph-view")
    expect(view).to_be_visible(timeout=90_000)
    expect(view.locator(".wb-status")).to_have_text("done")
    holder = view.locator(".wb-graph-canvas .wb-svg-holder")
    nodes = holder.locator("g.node")
    expect(nodes.first).to_be_visible()
    closed = nodes.count()
    box = nodes.filter(has_text="dense_layer")
    expect(box).to_have_count(1)
    page.screenshot(path=str(screenshot_dir / "op-from-graph-collapsed-1280x800.png"))

    box.click()
    button = view.locator(".wb-expand")
    expect(button).to_have_text("expand dense_layer")
    button.click()
    expect(button).to_have_text("collapse dense_layer")
    expect(holder.locator("polyline.feeds").first).to_be_attached()
    assert nodes.count() > closed
    for text in ("Elemwise{tanh}", "Elemwise{add}", "DimShuffle{x,0}"):
        expect(nodes.filter(has_text=text).first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "op-from-graph-expanded-1280x800.png"))
    button.click()
    expect(button).to_have_text("expand dense_layer")
    expect(holder.locator("polyline.feeds")).to_have_count(0)
    assert nodes.count() == closed
    assert page.get_by_text("Error displaying widget").count() == 0
    assert not page.js_errors, page.js_errors
