"""A loop in the RewriteStepper at a 1280x800 projector, in Voila: "expand loop" draws
its body on both sides of the step (dashed outlines), "collapse loop" closes it.

Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None

PROJECTOR = {"width": 1280, "height": 800}


def test_a_loop_expands_and_collapses_in_the_rewrite_stepper(page, voila_app, screenshot_dir):
    page.set_viewport_size(PROJECTOR)
    voila_app("rewrite_stepper_loop.ipynb")
    stepper = page.locator(".wb-rewrite-stepper")
    expect(stepper).to_be_visible(timeout=90_000)
    expect(stepper.locator(".wb-status")).to_have_text("done")
    before = stepper.locator(".wb-before-svg g.node")
    expect(before.first).to_be_visible()
    closed = before.count()
    button = stepper.locator(".wb-expand")
    expect(button).to_have_text("expand loop")
    button.click()
    expect(button).to_have_text("collapse loop")
    for side in (".wb-before-svg", ".wb-after-svg"):
        expect(stepper.locator(f"{side} [data-inner-of]").first).to_be_attached()
    assert before.count() > closed
    expect(before.filter(has_text="tanh").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "rewrite-stepper-loop-expanded-1280x800.png"))
    button.click()
    expect(button).to_have_text("expand loop")
    expect(stepper.locator(".wb-before-svg [data-inner-of]")).to_have_count(0)
    assert before.count() == closed
    assert page.get_by_text("Error displaying widget").count() == 0
    assert not page.js_errors, page.js_errors
