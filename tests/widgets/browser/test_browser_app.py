"""The Workbench() app operated like a person in headless Chromium.

Voila: type a broken expression and see the error; add two variables in the table,
type `log(1 + tanh(x @ w)).sum()`, Build; pick a node in the graph tab; open the
rewrites tab and click Next (to the log1p step); open the gradient tab and step; open
compile/profile and Run.
JupyterLab (callbacks on a kernel subshell thread): switch to compile/profile, Run.

Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None

EMPTY_APP = """\
from workbench.widgets import Workbench

app = Workbench()
app
"""

BUILT_APP = """\
from workbench.widgets import Workbench

app = Workbench("tanh(x @ w).sum()", variables=["x=float64[?,3]", "w=float64[3,2]"],
                profile_size=50)
app
"""


def write_notebook(root: Path, name: str, code: str) -> str:
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    book = new_notebook(cells=[new_markdown_cell("# Workbench"), new_code_cell(code)])
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                   "language": "python"}
    nbformat.write(book, root / name)
    return name


@pytest.fixture
def app_notebooks(notebook_root: Path) -> dict[str, str]:
    """The app notebooks, written next to the other test notebooks; their names."""
    return {"empty": write_notebook(notebook_root, "app_empty.ipynb", EMPTY_APP),
            "built": write_notebook(notebook_root, "app_built.ipynb", BUILT_APP)}


def assert_png_not_blank(path: Path, min_ink: float = 0.01) -> None:
    from PIL import Image

    image = Image.open(path).convert("L")
    ink = sum(image.histogram()[:200]) / (image.width * image.height)
    assert ink > min_ink, f"{path} looks blank (ink {ink:.4f})"


def open_tab(page, title: str):
    """Click the tab title `title` of the app; its content box once built."""
    page.locator(".wb-app-tabs .lm-TabBar-tab", has_text=title).click()
    return page.locator(f".wb-tab-{title.replace('/', '-')}")


def fill_row(row, name: str, dtype: str, shape: str) -> None:
    row.locator(".wb-var-name input").fill(name)
    row.locator(".wb-var-dtype select").select_option(dtype)
    row.locator(".wb-var-shape input").fill(shape)


def test_app_build_error_then_graph_rewrites_gradient_profile_in_voila(
        voila_app, app_notebooks, screenshot_dir):
    page = voila_app(app_notebooks["empty"])
    expression = page.locator(".wb-expression input")
    expect(expression).to_be_visible(timeout=90_000)  # Voila runs the notebook on load
    status = page.locator(".wb-app-status")
    expect(status).to_have_text("ready")

    # a broken expression: the error is shown in the app, nothing is raised
    expression.fill("tanh(x @ w")
    page.locator(".wb-build").click()
    expect(status).to_have_text("error")
    expect(page.locator(".wb-app-error")).to_contain_text("malformed expression")
    expect(page.locator(".wb-tab-graph")).to_contain_text("no graph")

    # declare x and w in the table, fix the expression, Build
    page.locator(".wb-var-add").click()
    page.locator(".wb-var-add").click()
    rows = page.locator(".wb-var-row")
    expect(rows).to_have_count(2)
    fill_row(rows.nth(0), "x", "float64", "?,3")
    fill_row(rows.nth(1), "w", "float32", "3,2")
    expression.fill("log(1 + tanh(x @ w)).sum()")
    page.locator(".wb-build").click()
    expect(status).to_have_text("done")
    expect(page.locator(".wb-app-error")).to_have_count(0)
    summary = page.locator(".wb-app-summary")
    expect(summary).to_contain_text("x: TensorType(float64, (?, 3))")
    expect(summary).to_contain_text("w: TensorType(float32, (3, 2))")

    # graph tab (built at once): pick the Dot node
    graph = page.locator(".wb-tab-graph .wb-graph-view")
    expect(graph.locator(".wb-graph-svg svg g.node").first).to_be_visible()
    select = graph.locator(".wb-node-select select")
    dot = select.locator("option", has_text=": Dot")
    expect(dot).to_have_count(1)  # e.g. "C: Dot"
    select.select_option(label=dot.text_content())
    details = graph.locator(".wb-details-body")
    expect(details).to_contain_text("Dot")
    expect(details).to_contain_text("value at the point")
    page.locator(".wb-app").screenshot(path=str(screenshot_dir / "voila-app-graph.png"))

    # rewrites tab: built when first opened; Next moves to step 2
    rewrites = open_tab(page, "rewrites")
    stepper = rewrites.locator(".wb-rewrite-stepper")
    expect(stepper).to_be_visible(timeout=60_000)
    expect(status).to_have_text("done")
    current = stepper.locator(".wb-step-current")
    expect(current).to_have_attribute("data-step", "1")
    stepper.locator(".wb-next").click()
    expect(current).to_have_attribute("data-step", "2")
    expect(current).to_have_attribute("data-rewrite", "local_log1p")
    expect(stepper.locator(".wb-status")).to_have_text("done")
    page.locator(".wb-app").screenshot(path=str(screenshot_dir / "voila-app-rewrites.png"))

    # gradient tab: the recorded backward pass, one step at a time
    gradient = open_tab(page, "gradient")
    explorer = gradient.locator(".wb-grad-explorer")
    expect(explorer).to_be_visible(timeout=60_000)
    expect(explorer.locator(".wb-grad-title")).to_contain_text("/ d x, d w")  # both floats
    step_panel = explorer.locator(".wb-grad-step")
    before = step_panel.inner_text()
    explorer.locator(".wb-next").click()
    expect(explorer.locator(".wb-status")).to_have_text("done")
    expect(step_panel).not_to_have_text(before)
    page.locator(".wb-app").screenshot(path=str(screenshot_dir / "voila-app-gradient.png"))

    # compile/profile tab: Run
    profile = open_tab(page, "compile/profile")
    run = profile.locator(".wb-run")
    expect(run).to_be_visible(timeout=60_000)
    expect(profile.locator(".wb-shape input").first).to_have_value("100,3")  # "?" -> 100
    run.click()
    expect(profile.locator(".wb-status")).to_have_text("done", timeout=60_000)
    tables = profile.locator(".wb-profile-tables")
    expect(tables).to_contain_text("By Op class")
    expect(tables).to_contain_text("tanh")
    chart = profile.locator("img.wb-profile-chart")
    expect(chart).to_be_visible()
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 100",
                           arg=chart.element_handle())
    page.screenshot(path=str(screenshot_dir / "voila-app.png"), full_page=True)
    shot = screenshot_dir / "voila-app-profile-chart.png"
    chart.screenshot(path=str(shot))
    assert_png_not_blank(shot)
    assert page.get_by_text("Error displaying widget").count() == 0
    assert not page.js_errors, page.js_errors


def test_app_profile_tab_in_jupyterlab(lab_notebook, app_notebooks, screenshot_dir):
    page = lab_notebook(app_notebooks["built"])
    expect(page.locator(".wb-app-status")).to_have_text("done")
    expect(page.locator(".wb-tab-graph .wb-graph-svg svg g.node").first).to_be_visible()
    profile = open_tab(page, "compile/profile")
    run = profile.locator(".wb-run")
    expect(run).to_be_visible(timeout=60_000)
    expect(profile.locator(".wb-shape input").first).to_have_value("50,3")
    run.click()
    expect(profile.locator(".wb-status")).to_have_text("done", timeout=60_000)
    expect(profile.locator(".wb-profile-tables")).to_contain_text("Dot")
    chart = profile.locator("img.wb-profile-chart")
    expect(chart).to_be_visible()
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 100",
                           arg=chart.element_handle())
    page.locator(".jp-OutputArea-output:has(.wb-app)").screenshot(
        path=str(screenshot_dir / "lab-app-profile.png"))
    shot = screenshot_dir / "lab-app-profile-chart.png"
    chart.screenshot(path=str(shot))  # drawn off pyplot on the subshell thread: not blank
    assert_png_not_blank(shot)
    assert not page.js_errors, page.js_errors
