"""The RewriteStepper operated through clicks in Voila (headless Chromium): Next
changes the shown step and the outlined nodes, the pass filter narrows the list,
the numeric check passes, excluding a rewrite and re-running drops its step.

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
REMOVED, INTRODUCED = "#d32f2f", "#2e7d32"  # the inspector's highlight colours


@pytest.fixture
def stepper_notebook(notebook_root: Path) -> str:
    """Serve rewrite_stepper.ipynb next to the other test notebooks; its name."""
    shutil.copy(STEPPER_NOTEBOOKS / "rewrite_stepper.ipynb", notebook_root)
    return "rewrite_stepper.ipynb"


def outlined(page, area: str, colour: str):
    """The node groups of a drawing outlined in `colour` (a highlighted node)."""
    return page.locator(f"{area} g.node:has(rect[stroke='{colour}'][stroke-width='3'])")


def test_rewrite_stepper_next_filter_check_exclude_in_voila(voila_app, stepper_notebook,
                                                            screenshot_dir):
    page = voila_app(stepper_notebook)
    stepper = page.locator(".wb-rewrite-stepper")
    expect(stepper).to_be_visible(timeout=90_000)  # Voila runs the notebook on page load
    status = page.locator(".wb-rewrite-stepper .wb-status")
    expect(status).to_have_text("done")
    current = page.locator(".wb-step-current")
    expect(current).to_have_attribute("data-step", "1")
    total = int(page.locator(".wb-step-count").get_attribute("data-steps"))
    assert total >= 4  # constant folding x2, log1p, fusion, inplace
    first_removed = page.locator(".wb-step-body").get_attribute("data-removed")
    expect(outlined(page, ".wb-before-svg", REMOVED).first).to_be_visible()

    # Next, Next: the stabilize step turning log(1 + x) into log1p(x)
    page.locator(".wb-next").click()
    expect(current).to_have_attribute("data-step", "2")
    page.locator(".wb-next").click()
    expect(current).to_have_attribute("data-step", "3")
    expect(current).to_have_attribute("data-rewrite", "local_log1p")
    expect(status).to_have_text("done")
    body = page.locator(".wb-step-body[data-step='3']")
    expect(body).to_contain_text("stabilize")
    assert body.get_attribute("data-removed") != first_removed
    introduced = body.get_attribute("data-introduced-boxes").split(",")
    # the boxes showing what the step introduced, and only they, are green in "after"
    green = outlined(page, ".wb-after-svg", INTRODUCED)
    expect(green).to_have_count(len(introduced))
    assert sorted(green.evaluate_all("els => els.map(e => e.id)")) == sorted(introduced)
    expect(page.locator(".wb-after-svg g.node", has_text="log1p").first).to_be_visible()
    expect(page.locator(".wb-region-before").first).to_contain_text("log(")
    expect(page.locator(".wb-region-after").first).to_contain_text("log1p(x)")
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 100",
                           arg=page.locator("img.wb-node-count-plot").element_handle())

    # the numeric check of this step: the graph before and after agree on random inputs
    page.locator(".wb-check-step").click()
    expect(page.locator(".wb-check-body")).to_have_attribute("data-ok", "true")
    expect(status).to_have_text("done")
    page.set_viewport_size({"width": 1280, "height": 2200})  # the whole widget in one shot
    stepper.screenshot(path=str(screenshot_dir / "voila-rewrite-stepper.png"))

    # filter: only the fusion pass
    page.locator(".wb-pass-filter select").select_option("fusion")
    expect(current).to_contain_text("1 of 1 shown")
    expect(current).to_have_attribute("data-rewrite", "elemwise_fusion")
    expect(page.locator(".wb-step-list select option")).to_have_count(1)
    page.locator(".wb-pass-filter select").select_option("(all)")
    expect(page.locator(".wb-step-list select option")).to_have_count(total)

    # exclude local_log1p and re-run: one step fewer, and no log1p anywhere
    page.locator(".wb-exclude-local_log1p input[type='checkbox']").check()
    page.locator(".wb-rerun").click()
    expect(page.locator(".wb-step-count")).to_have_attribute("data-steps", str(total - 1))
    expect(status).to_have_text("done")
    expect(page.locator(".wb-step-list select")).not_to_contain_text("local_log1p")
    page.locator(".wb-last").click()
    expect(current).to_have_attribute("data-step", str(total - 1))
    expect(page.locator(".wb-after-svg g.node", has_text="log1p")).to_have_count(0)
    expect(status).to_have_text("done")
    stepper.screenshot(path=str(screenshot_dir / "voila-rewrite-stepper-excluded.png"))
    assert page.get_by_text("Error displaying widget").count() == 0
    assert not page.js_errors, page.js_errors
