"""The GradExplorer operated through clicks: in Voila, step the recorded backward
pass (the outlined node follows), see x * x give x two contributions, the sum of
x's three contributions, and the check against finite differences at the end; in
JupyterLab with its default settings (callbacks on a kernel subshell thread),
step with Next and Previous.

Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None

STEPPER_NOTEBOOKS = Path(__file__).parent / "stepper_notebooks"
SELECTED = "#ff9800"  # the inspector's outline of the node of the current entry


@pytest.fixture
def explorer_notebook(notebook_root: Path) -> str:
    """Serve grad_explorer.ipynb next to the other test notebooks; its name."""
    shutil.copy(STEPPER_NOTEBOOKS / "grad_explorer.ipynb", notebook_root)
    return "grad_explorer.ipynb"


def selected_node(page) -> str:
    """The id of the one node group outlined as the current entry's node."""
    groups = page.locator(
        f".wb-grad-svg g.node:has(rect[stroke='{SELECTED}'][stroke-width='3'])")
    expect(groups).to_have_count(1)
    return groups.get_attribute("id")


def step_to(page, position: int) -> None:
    page.locator(".wb-grad-explorer .wb-next").click()
    expect(page.locator(".wb-grad-step-body")).to_have_attribute("data-position", str(position))
    expect(page.locator(".wb-grad-explorer .wb-status")).to_have_text("done")


def test_grad_explorer_steps_and_checks_in_voila(voila_app, explorer_notebook, screenshot_dir):
    page = voila_app(explorer_notebook)
    explorer = page.locator(".wb-grad-explorer")
    expect(explorer).to_be_visible(timeout=90_000)  # Voila runs the notebook on page load
    expect(page.locator(".wb-grad-explorer .wb-status")).to_have_text("done")
    body = page.locator(".wb-grad-step-body")
    expect(body).to_have_attribute("data-kind", "forward")
    expect(page.locator(".wb-forward-values")).to_contain_text("cost")
    outlined = [selected_node(page)]  # the cost, where the pass starts

    # each Next runs one node's grad: the outlined node moves down the graph
    for position in (1, 2, 3):
        step_to(page, position)
        expect(body).to_have_attribute("data-kind", "step")
        node = selected_node(page)
        assert node == body.get_attribute("data-node")
        assert node not in outlined
        outlined.append(node)
    # position 3 is the grad of x * x: x is used twice there, two contributions
    produced = page.locator(".wb-produced")
    expect(produced).to_contain_text("contribution 1 of 3 to x")
    expect(produced).to_contain_text("contribution 2 of 3 to x")
    expect(page.locator(".wb-grad-sofar")).to_contain_text("2 of 3 terms")
    page.set_viewport_size({"width": 1280, "height": 2000})  # the whole widget in one shot
    explorer.screenshot(path=str(screenshot_dir / "voila-grad-explorer-step.png"))

    # the last entry: x's three contributions summed; then the finite-difference check
    page.locator(".wb-grad-explorer .wb-last").click()
    expect(body).to_have_attribute("data-kind", "sum")
    expect(body).to_contain_text("x is used 3 times")
    expect(page.locator(".wb-grad-sofar")).to_contain_text("3 of 3 terms, summed")
    check = page.locator(".wb-grad-check .wb-check-body")
    expect(check).to_have_attribute("data-ok", "true")
    expect(check).to_contain_text("verify_grad passed")
    expect(page.locator(".wb-grad-explorer .wb-status")).to_have_text("done")
    explorer.screenshot(path=str(screenshot_dir / "voila-grad-explorer-end.png"))
    assert page.get_by_text("Error displaying widget").count() == 0
    assert not page.js_errors, page.js_errors


def test_grad_explorer_next_and_previous_in_jupyterlab(lab_notebook, explorer_notebook,
                                                       screenshot_dir):
    page = lab_notebook(explorer_notebook)
    body = page.locator(".wb-grad-step-body")
    expect(body).to_have_attribute("data-position", "0")
    start = selected_node(page)
    step_to(page, 1)
    step_to(page, 2)
    second = selected_node(page)
    assert second != start
    expect(page.locator(".wb-received")).to_contain_text("output 0")
    page.locator(".wb-grad-explorer .wb-prev").click()
    expect(body).to_have_attribute("data-position", "1")
    expect(page.locator(".wb-grad-explorer .wb-status")).to_have_text("done")
    assert selected_node(page) not in (second,)
    page.locator(".jp-OutputArea-output:has(.wb-grad-explorer)").screenshot(
        path=str(screenshot_dir / "lab-grad-explorer.png"))
    assert not page.js_errors, page.js_errors
