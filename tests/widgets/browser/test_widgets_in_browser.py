"""The widgets operated like a person would, in headless Chromium: GraphView in
Voila (pick a node in the dropdown, zoom in), ProfilePanel in JupyterLab with its
default settings (callbacks on a kernel subshell thread): click Run.

Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

import re
from pathlib import Path

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None


def assert_png_not_blank(path: Path, min_ink: float = 0.01) -> None:
    """Coarse check on an element screenshot: enough non-white pixels (no pixel diff)."""
    from PIL import Image

    image = Image.open(path).convert("L")
    ink = sum(image.histogram()[:200]) / (image.width * image.height)
    assert ink > min_ink, f"{path} looks blank (ink {ink:.4f})"


def test_graph_view_select_a_node_in_voila(voila_app, screenshot_dir):
    page = voila_app("graph_view.ipynb")
    select = page.locator(".wb-node-select select")
    expect(select).to_be_visible(timeout=90_000)  # Voila runs the notebook on page load
    status = page.locator(".wb-status")
    expect(status).to_have_text("done")
    expect(page.locator(".wb-graph-svg svg g.node").first).to_be_visible()
    expect(page.locator(".wb-graph-svg rect[stroke-width='3']")).to_have_count(0)

    labels = select.locator("option").all_inner_texts()
    target = next(text for text in labels if "tanh" in text)  # e.g. "D: Elemwise{tanh}"
    letter = target.split(":")[0]
    select.select_option(label=target)

    body = page.locator(f".wb-details .wb-details-body[data-label='{letter}']")
    expect(body).to_be_visible()
    expect(status).to_have_text("done")
    expect(body).to_contain_text("Elemwise{tanh}")
    expect(body).to_contain_text("subtree (dprint)")
    expect(body).to_contain_text("value at the point")
    key = body.get_attribute("data-key")
    # the selected node, and only it, is outlined in the redrawn SVG
    expect(page.locator(".wb-graph-svg rect[stroke-width='3']")).to_have_count(1)
    expect(page.locator(f".wb-graph-svg g.node[id='{key}'] rect")).to_have_attribute(
        "stroke-width", "3")

    page.locator(".wb-zoom-in").click()
    expect(page.locator(".wb-graph-svg .wb-svg-holder")).to_have_attribute("data-zoom", "1.5")
    expect(status).to_have_text("done")
    expect(page.locator(".wb-graph-svg rect[stroke-width='3']")).to_have_count(1)

    page.screenshot(path=str(screenshot_dir / "voila-graph-view.png"), full_page=True)
    shot = screenshot_dir / "voila-graph-view-widget.png"
    page.locator(".wb-graph-view").screenshot(path=str(shot))
    assert_png_not_blank(shot)
    assert page.get_by_text("Error displaying widget").count() == 0
    assert not page.js_errors, page.js_errors


def test_profile_panel_run_in_jupyterlab(lab_notebook, screenshot_dir):
    page = lab_notebook("profile_panel.ipynb")
    run = page.locator(".wb-run")
    expect(run).to_be_visible()
    status = page.locator(".wb-status")
    expect(status).to_have_text("ready")
    run.click()
    expect(status).to_have_text("done", timeout=60_000)
    # the progress bar went through every call (5 of 5)
    expect(page.locator(".wb-progress .progress-bar")).to_have_attribute(
        "style", re.compile(r"width: 100%"))
    tables = page.locator(".wb-profile-tables")
    expect(tables).to_contain_text("By Op class")
    expect(tables).to_contain_text("Dot")
    expect(tables).to_contain_text("tanh")
    chart = page.locator("img.wb-profile-chart")
    expect(chart).to_be_visible()
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 100",
                           arg=chart.element_handle())

    page.locator(".jp-OutputArea-output:has(.wb-profile-panel)").screenshot(
        path=str(screenshot_dir / "lab-profile-panel.png"))
    shot = screenshot_dir / "lab-profile-chart.png"
    chart.screenshot(path=str(shot))  # the figure alone: drawn off pyplot, not blank
    assert_png_not_blank(shot)
    assert not page.js_errors, page.js_errors
