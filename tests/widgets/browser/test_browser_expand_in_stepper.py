"""A loop in the RewriteStepper at a 1280x800 projector, in Voila: "expand loop" draws
its body on both sides of the step (dashed outlines), both centred on the loop and its
body (tutorial 07's RNN, readable), "collapse loop" closes it.

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


#: The texts of an SVG drawing in an HTML holder: content, rendered height and whether
#: they lie inside the holder's box.
JS_SVG_TEXTS = """(holder) => {
  const view = holder.getBoundingClientRect();
  return [...holder.querySelectorAll('svg text')].map((text) => {
    const box = text.getBoundingClientRect();
    return {text: text.textContent, height: box.height,
            inside: box.width > 0 && box.left >= view.left && box.right <= view.right &&
                    box.top >= view.top && box.bottom <= view.bottom};
  });
}"""


def test_both_sides_centre_on_tutorial_07s_rnn_when_it_is_opened(projector):
    stepper = projector.open("rewrite_stepper_rnn.ipynb", ".wb-rewrite-stepper")
    sides = [stepper.locator(side) for side in (".wb-before-svg", ".wb-after-svg")]
    expect(sides[0].locator("g.node").first).to_be_visible()
    closed = [side.locator("svg").get_attribute("viewBox") for side in sides]
    button = stepper.locator(".wb-expand")
    projector.toggle(button, "expand loop", "collapse loop")
    for side in sides:
        expect(side.locator("[data-inner-of]").first).to_be_attached()
        shown = [t for t in side.evaluate(JS_SVG_TEXTS) if t["inside"]]
        # the body is wider and taller than a side at 11 px text: its top left is shown
        for caption in ("x[t]", "U"):
            assert any(t["text"] == caption for t in shown), (caption, shown)
        assert all(t["height"] >= 11 for t in shown), shown  # readable on a projector
    projector.screenshot("rewrite-stepper-tutorial07-rnn-expanded-1280x800.png")
    # the rest of the body is a scroll away, not cut off: scrolled to it, each side
    # shows the body's tanh, readable
    for side in sides:
        side.evaluate("""(h) => [...h.querySelectorAll('svg text')]
            .find((t) => t.textContent.includes('tanh'))
            .scrollIntoView({block: 'center', inline: 'center'})""")
        shown = [t for t in side.evaluate(JS_SVG_TEXTS) if t["inside"]]
        assert any("tanh" in t["text"] and t["height"] >= 11 for t in shown), shown
    projector.screenshot("rewrite-stepper-tutorial07-rnn-scrolled-1280x800.png")
    for side in sides:
        side.evaluate("(h) => { h.scrollTop = 0; h.scrollLeft = 0; }")
    projector.toggle(button, "collapse loop", "expand loop")
    expect(stepper.locator(".wb-before-svg [data-inner-of]")).to_have_count(0)
    assert [side.locator("svg").get_attribute("viewBox") for side in sides] == closed
    projector.assert_clean()
