"""The drawings a class looks at, in Voila at a 1280x800 projector size: the
RewriteStepper's fusion step of the logistic-regression cost shows both drawings
without scrolling, with the changed region in view; the GradExplorer of
x * sin(x) shows the x -> mul edge that skips sin's layer, not hidden by a box.

Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

import shutil
from pathlib import Path

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None

STEPPER_NOTEBOOKS = Path(__file__).parent / "stepper_notebooks"
PROJECTOR = {"width": 1280, "height": 800}


def serve(notebook_root: Path, name: str) -> str:
    shutil.copy(STEPPER_NOTEBOOKS / name, notebook_root)
    return name


def box(locator) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None, locator
    return found


def inside(inner: dict[str, float], outer: dict[str, float], slack: float = 1.0) -> bool:
    return (inner["x"] >= outer["x"] - slack and inner["y"] >= outer["y"] - slack
            and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack)


def test_the_fusion_step_is_on_screen_at_1280x800(voila_app, notebook_root, screenshot_dir):
    page = voila_app(serve(notebook_root, "fusion_stepper.ipynb"))
    page.set_viewport_size(PROJECTOR)
    stepper = page.locator(".wb-rewrite-stepper")
    expect(stepper).to_be_visible(timeout=90_000)
    expect(page.locator(".wb-rewrite-stepper .wb-status")).to_have_text("done")
    expect(page.locator(".wb-step-current")).to_have_attribute("data-rewrite",
                                                               "elemwise_fusion")
    expect(page.locator(".wb-graph-name")).to_have_text("Rewriting cost")
    page.evaluate("() => window.scrollTo(0, 0)")
    screen = {"x": 0, "y": 0, **PROJECTOR}
    for side in ("before", "after"):
        drawing = box(page.locator(f".wb-{side}-svg"))
        assert drawing["y"] + drawing["height"] <= PROJECTOR["height"], (side, drawing)
        assert drawing["width"] >= 500, (side, drawing)  # both side by side, each wide
        frame = page.locator(f".wb-{side}-svg rect.changed-region")
        expect(frame).to_have_count(1)
        region = box(frame)
        assert inside(region, drawing) and inside(region, screen), (side, region, drawing)
        # filled, not only outlined: every changed node is inside the frame
        marked = page.locator(f".wb-{side}-svg g.node[data-highlight]")
        assert marked.count() >= 1
        for k in range(marked.count()):
            assert inside(box(marked.nth(k).locator("rect")), region)
    # the fused node: its caption wraps inside its box, the whole formula is its tooltip
    fused = page.locator(".wb-after-svg g.node[data-highlight='introduced']",
                         has_text="Composite").first
    assert "Composite{" in fused.locator("title").text_content()
    for text in fused.locator("text").all():
        assert inside(box(text), box(fused.locator("rect")))
    page.screenshot(path=str(screenshot_dir / "voila-fusion-step-1280x800.png"))


JS_COVERED = """([source, target]) => {
  // points along the edge's polyline, in page coordinates, and what is drawn on top there
  const edge = document.querySelector(
    `.wb-grad-svg polyline.edge[data-source='${source}'][data-target='${target}']`);
  if (!edge) return {error: 'no edge ' + source + ' -> ' + target};
  const ends = [document.getElementById(source), document.getElementById(target)];
  const matrix = edge.getScreenCTM();
  const points = Array.from(edge.points);
  const length = edge.getTotalLength();
  const hits = [], samples = [];
  for (let k = 1; k < 40; k++) {
    const p = edge.getPointAtLength(length * k / 40);
    const x = matrix.a * p.x + matrix.c * p.y + matrix.e;
    const y = matrix.b * p.x + matrix.d * p.y + matrix.f;
    samples.push([x, y]);
    const top = document.elementFromPoint(x, y);
    const node = top && top.closest('g.node');
    if (node && !ends.includes(node)) hits.push([x, y, node.id, node.textContent]);
  }
  return {bends: points.length, hits, samples};
}"""


def test_the_x_to_mul_edge_of_x_sin_x_is_not_covered(voila_app, notebook_root,
                                                      screenshot_dir):
    page = voila_app(serve(notebook_root, "grad_x_sin_x.ipynb"))
    page.set_viewport_size(PROJECTOR)
    explorer = page.locator(".wb-grad-explorer")
    expect(explorer).to_be_visible(timeout=90_000)
    expect(page.locator(".wb-grad-explorer .wb-status")).to_have_text("done")
    keys = page.locator(".wb-test-keys")
    x, mul = keys.get_attribute("data-x"), keys.get_attribute("data-mul")
    expect(page.locator(f".wb-grad-svg polyline.edge[data-source='{x}']")).to_have_count(2)
    explorer.scroll_into_view_if_needed()
    result = page.evaluate(JS_COVERED, [x, mul])
    assert "error" not in result, result
    assert result["bends"] > 2  # routed around sin's box, not straight through it
    assert result["hits"] == [], result["hits"]
    canvas = box(page.locator(".wb-grad-svg"))
    assert all(canvas["x"] <= px <= canvas["x"] + canvas["width"]
               and canvas["y"] <= py <= canvas["y"] + canvas["height"]
               for px, py in result["samples"])  # in view, not scrolled away
    page.locator(".wb-grad-svg").screenshot(path=str(screenshot_dir /
                                                     "voila-grad-x-sin-x-edges.png"))


JS_TEXT_OUTSIDE = """() => {
  const out = [];
  for (const group of document.querySelectorAll('g.node')) {
    const r = group.querySelector('rect').getBoundingClientRect();
    for (const t of group.querySelectorAll('text')) {
      const b = t.getBoundingClientRect();
      if (b.left < r.left - 0.5 || b.right > r.right + 0.5 || b.top < r.top - 0.5
          || b.bottom > r.bottom + 0.5) out.push([group.id, t.textContent, b.width, r.width]);
    }
  }
  return out;
}"""


def test_cli_svg_captions_fit_their_boxes_as_chromium_renders_them(page, tmp_path,
                                                                   screenshot_dir):
    """The layout sizes boxes from a font's metrics; Chromium's rendering must agree."""
    from typer.testing import CliRunner

    from workbench.cli import app
    from workbench.examples import EXAMPLES

    for name in EXAMPLES:
        svg = tmp_path / f"{name}.svg"
        result = CliRunner().invoke(app, ["show", "--example", name, "--format", "svg",
                                          "--output", str(svg)])
        assert result.exit_code == 0, result.output
        page.goto(svg.as_uri())
        assert page.locator("g.node").count() > 0
        assert page.evaluate(JS_TEXT_OUTSIDE) == [], name
    page.set_viewport_size(PROJECTOR)
    page.goto((tmp_path / "logistic_regression.svg").as_uri())
    page.screenshot(path=str(screenshot_dir / "cli-svg-logistic-regression-1280x800.png"))
