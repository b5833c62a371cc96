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


def test_an_op_from_graph_expands_and_collapses(projector):
    view = projector.open("graph_view_op_from_graph.ipynb", ".wb-graph-view")
    holder = view.locator(".wb-graph-canvas .wb-svg-holder")
    nodes = holder.locator("g.node")
    expect(nodes.first).to_be_visible()
    closed = nodes.count()
    box = nodes.filter(has_text="dense_layer")
    expect(box).to_have_count(1)
    projector.screenshot("op-from-graph-collapsed-1280x800.png")

    box.click()
    button = view.locator(".wb-expand")
    projector.toggle(button, "expand dense_layer", "collapse dense_layer")
    expect(holder.locator("polyline.feeds").first).to_be_attached()
    assert nodes.count() > closed
    for text in ("Elemwise{tanh}", "Elemwise{add}", "DimShuffle{x,0}"):
        expect(nodes.filter(has_text=text).first).to_be_visible()
    projector.screenshot("op-from-graph-expanded-1280x800.png")
    projector.toggle(button, "collapse dense_layer", "expand dense_layer")
    expect(holder.locator("polyline.feeds")).to_have_count(0)
    assert nodes.count() == closed
    projector.assert_clean()
