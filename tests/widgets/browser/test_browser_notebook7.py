"""The GraphView scenario in the classic Notebook 7 (the `notebook` package), in
headless Chromium: pick a node, check the details panel and the outline, zoom in.

Notebook 7 is built from JupyterLab's components but is its own application (its
own server app, page, shell and widget manager wiring), so "works in JupyterLab" does
not imply "works in Notebook 7". The server and page handling reuse conftest.py's
`JupyterServer` and JavaScript snippets; only the command line and the notebook URL
differ. Screenshots: artifacts/screenshots/ (or $WB_ARTIFACTS).
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import sys
import uuid
from pathlib import Path

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # conftest's autouse fixture skips (or, under CI, fails) these tests
    expect = None


#: Page errors Notebook 7.6 raises by itself: this one comes from its keyboard-shortcuts
#: settings plugin (`t.plugins[i].schema` of a plugin not loaded yet, in notebook_core.js)
#: and shows up on a notebook holding only `print(1)`, so it says nothing about the widgets.
NOTEBOOK7_OWN_ERRORS = {"Cannot read properties of undefined (reading 'schema')"}


def _conftest(config: pytest.Config):
    """This directory's conftest module (for JupyterServer and the JS snippets)."""
    here = Path(__file__).with_name("conftest.py").resolve()
    for plugin in config.pluginmanager.get_plugins():
        path = getattr(plugin, "__file__", None)
        if path and Path(path).resolve() == here:
            return plugin
    raise RuntimeError(f"{here} is not loaded as a conftest")


@pytest.fixture(scope="module")
def notebook7_server(request: pytest.FixtureRequest, notebook_root: Path):
    """`jupyter notebook` (Notebook 7) on 127.0.0.1:<free port>, default settings
    except the news toast; the app object exposed for the kernel-ready check."""
    conftest = _conftest(request.config)
    if importlib.util.find_spec("notebook") is None:
        reason = 'the notebook package is not installed (pip install -e ".[widgets-test]")'
        if conftest._in_ci():
            pytest.fail(f"Notebook 7 tests cannot run in CI: {reason}", pytrace=False)
        pytest.skip(reason)

    class Notebook7Server(conftest.JupyterServer):
        def _command(self) -> list[str]:
            settings = self.tmp / "user-settings"
            settings.mkdir(parents=True, exist_ok=True)
            return [sys.executable, "-m", "jupyter", "notebook", f"--port={self.port}",
                    "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
                    "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
                    f"--ServerApp.root_dir={self.root}",
                    f"--JupyterNotebookApp.user_settings_dir={settings}",
                    f"--JupyterNotebookApp.workspaces_dir={self.tmp / 'workspaces'}",
                    "--JupyterNotebookApp.expose_app_in_browser=True"]

    server = Notebook7Server(notebook_root, "lab")  # "lab": ready on /api/status
    server.launch()
    try:
        yield server.wait_ready()
    finally:
        server.stop()


@pytest.fixture
def notebook7(page, notebook7_server, notebook_root: Path, request: pytest.FixtureRequest):
    """open_and_run(name): open a private copy in Notebook 7, wait for an idle
    connected kernel, run all cells, fail on any error output."""
    conftest = _conftest(request.config)
    copies: list[Path] = []

    def open_and_run(name: str):
        source = notebook_root / name
        copy = source.with_name(f"{source.stem}-nb7-{uuid.uuid4().hex[:8]}.ipynb")
        shutil.copy(source, copy)
        copies.append(copy)
        page.goto(f"{notebook7_server.base_url}/notebooks/{copy.name}"
                  f"?token={notebook7_server.token}", timeout=90_000)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=90_000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_function(conftest.JS_KERNEL_IDLE, timeout=90_000, polling=200)
        page.evaluate(conftest.JS_RUN_ALL)
        page.wait_for_function("() => window.__wbRunAll !== undefined", timeout=120_000,
                               polling=200)
        result = page.evaluate("() => window.__wbRunAll")
        stderr = page.locator(".jp-OutputArea-output"
                              "[data-mime-type='application/vnd.jupyter.stderr']")
        tracebacks = [t for t in stderr.all_inner_texts() if "Traceback" in t or "Error" in t]
        assert result == "ok" and not tracebacks, f"run-all: {result}; errors: {tracebacks[:3]}"
        assert page.get_by_text("Error displaying widget").count() == 0
        return page

    yield open_and_run
    if conftest._failed(request):
        print(f"---- notebook 7 log ----\n{notebook7_server.log_tail()}")
    with contextlib.suppress(Exception):
        for session in notebook7_server.api("GET", "/api/sessions") or []:
            notebook7_server.api("DELETE", f"/api/sessions/{session['id']}")
    for copy in copies:
        copy.unlink(missing_ok=True)


def test_graph_view_select_a_node_in_notebook7(notebook7, screenshot_dir):
    page = notebook7("graph_view.ipynb")
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"  # not Lab
    select = page.locator(".wb-node-select select")
    expect(select).to_be_visible()
    status = page.locator(".wb-graph-view .wb-status")
    expect(status).to_have_text("done")
    outlined = page.locator(".wb-graph-svg rect[stroke-width='3']")
    expect(outlined).to_have_count(0)

    tanh = select.locator("option", has_text="tanh")
    expect(tanh).to_have_count(1)  # e.g. "D: Elemwise{tanh}"
    label = tanh.text_content()
    select.select_option(label=label)
    letter = label.split(":")[0]
    body = page.locator(f".wb-details .wb-details-body[data-label='{letter}']")
    expect(body).to_be_visible()
    expect(status).to_have_text("done")
    expect(body).to_contain_text("Elemwise{tanh}")
    expect(body).to_contain_text("subtree (dprint)")
    expect(body).to_contain_text("value at the point")
    key = body.get_attribute("data-key")
    expect(outlined).to_have_count(1)
    expect(page.locator(f".wb-graph-svg g.node[id='{key}'] rect")).to_have_attribute(
        "stroke-width", "3")

    page.locator(".wb-zoom-in").click()
    expect(page.locator(".wb-graph-svg .wb-svg-holder")).to_have_attribute("data-zoom", "1.5")
    expect(status).to_have_text("done")

    page.screenshot(path=str(screenshot_dir / "notebook7-graph-view.png"))
    page.locator(".jp-OutputArea-output:has(.wb-graph-view)").screenshot(
        path=str(screenshot_dir / "notebook7-graph-view-widget.png"))
    ours = [e for e in page.js_errors if e not in NOTEBOOK7_OWN_ERRORS]
    assert not ours, page.js_errors
