"""A loop in the RewriteStepper at a 1280x800 projector, in Voila: "expand loop" draws
its body on both sides of the step (dashed outlines), "collapse loop" closes it.

Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None


def test_a_loop_expands_and_collapses_in_the_rewrite_stepper(projector):
    stepper = projector.open("rewrite_stepper_loop.ipynb", ".wb-rewrite-stepper")
    before = stepper.locator(".wb-before-svg g.node")
    expect(before.first).to_be_visible()
    closed = before.count()
    button = stepper.locator(".wb-expand")
    projector.toggle(button, "expand loop", "collapse loop")
    for side in (".wb-before-svg", ".wb-after-svg"):
        expect(stepper.locator(f"{side} [data-inner-of]").first).to_be_attached()
    assert before.count() > closed
    expect(before.filter(has_text="tanh").first).to_be_visible()
    projector.screenshot("rewrite-stepper-loop-expanded-1280x800.png")
    projector.toggle(button, "collapse loop", "expand loop")
    expect(stepper.locator(".wb-before-svg [data-inner-of]")).to_have_count(0)
    assert before.count() == closed
    projector.assert_clean()
