"""Fixtures for driving the widgets in a real browser: Voila and JupyterLab served
on 127.0.0.1, headless Debian Chromium through Python Playwright.

The failures these fixtures avoid, and how, are in README.md beside this file.
Nothing is downloaded: Playwright drives the system Chromium through `executable_path`
(never `playwright install`); every Jupyter config, data, runtime, settings and
workspace dir lives in a temp dir.

One server of each kind and one Chromium per session; a fresh browser context
per test. Screenshots go to `artifacts/screenshots/` (or $WB_ARTIFACTS).
Without Chromium or the `widgets-test` extra the tests skip, unless the CI
environment variable is set: then they fail, so a missing install step cannot
hide behind a green run.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
NOTEBOOKS = Path(__file__).parent / "notebooks"
ARTIFACTS = Path(os.environ.get("WB_ARTIFACTS", REPO / "artifacts" / "screenshots"))
CHROMIUM = os.environ.get("WB_CHROMIUM", "/usr/bin/chromium")
VIEWPORT = {"width": 1280, "height": 900}
# Playwright adds --headless and a fresh --user-data-dir itself.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
NEEDED_MODULES = ("playwright", "jupyterlab", "voila", "nbformat", "ipykernel")


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    absent = [m for m in NEEDED_MODULES if importlib.util.find_spec(m) is None]
    if absent:
        return (f"the widget-test packages {absent} are not installed "
                '(pip install -e ".[test,widgets-test]")')
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        return (f"Chromium not found at {CHROMIUM} "
                "(apt-get install -y --no-install-recommends chromium, or set WB_CHROMIUM)")
    return None


@pytest.fixture(scope="session", autouse=True)
def browser_requirements() -> None:
    reason = _missing()
    if reason is not None:
        if _in_ci():
            pytest.fail(f"browser tests cannot run in CI: {reason}", pytrace=False)
        pytest.skip(f"browser tests skipped: {reason}")


# -- servers --------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """preexec_fn: own session, and SIGTERM when pytest dies (even by SIGKILL)."""
    os.setsid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


#: JupyterLab user settings: no news toast over the widgets, every cell rendered.
#: commsOverSubshells keeps its default on purpose: callbacks then run on a kernel
#: subshell thread, as for users, and the widgets must be thread-safe there.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                    "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}


class JupyterServer:
    """`jupyter lab` (kind="lab") or `voila` (kind="voila") on 127.0.0.1:<free port>."""

    def __init__(self, root: Path, kind: str, startup_timeout: float = 60.0) -> None:
        self.root, self.kind, self.startup_timeout = Path(root), kind, startup_timeout
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.tmp = Path(tempfile.mkdtemp(prefix=f"wb-{kind}-"))
        self.log_path = self.tmp / "server.log"
        self.proc: subprocess.Popen | None = None

    def _command(self) -> list[str]:
        if self.kind == "voila":
            return [sys.executable, "-m", "voila", str(self.root), f"--port={self.port}",
                    "--no-browser", "--Voila.ip=127.0.0.1", "--Voila.port_retries=0",
                    f"--Voila.token={self.token}", "--VoilaConfiguration.show_tracebacks=True"]
        settings = self.tmp / "user-settings"
        for name, value in LAB_SETTINGS.items():
            path = settings / f"{name}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        return [sys.executable, "-m", "jupyter", "lab", f"--port={self.port}", "--no-browser",
                "--allow-root",  # CI runs as root; without it the server exits at once
                "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
                f"--LabApp.user_settings_dir={settings}",
                f"--LabApp.workspaces_dir={self.tmp / 'workspaces'}",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.expose_app_in_browser=True"]

    def launch(self) -> JupyterServer:
        """Start the process without waiting (servers start side by side)."""
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.tmp / "config"),
                   JUPYTER_DATA_DIR=str(self.tmp / "data"),
                   JUPYTER_RUNTIME_DIR=str(self.tmp / "runtime"), JUPYTER_PLATFORM_DIRS="1",
                   PYDEVD_DISABLE_FILE_VALIDATION="1")
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self._command(), stdout=self._log, stderr=subprocess.STDOUT,
                                     env=env, cwd=self.root, preexec_fn=_die_with_parent)
        return self

    def wait_ready(self) -> JupyterServer:
        """Poll until the server answers (fail with its log if it exits or times out)."""
        ready = "/api/status" if self.kind == "lab" else "/voila/tree"
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.proc.returncode}:\n"
                                   f"{self.log_tail()}")
            with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError,
                                     OSError):
                request = urllib.request.Request(
                    self.base_url + ready, headers={"Authorization": f"token {self.token}"})
                with urllib.request.urlopen(request, timeout=2) as response:
                    if response.status == 200:
                        return self
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{self.kind} not up in {self.startup_timeout} s:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.2)

    def terminate(self) -> None:
        """Ask the server to stop (it shuts its kernels down); stop() waits for it."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.terminate()
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        if getattr(self, "_log", None):
            self._log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text()[-n:]
        except OSError:
            return ""

    def api(self, method: str, path: str) -> object:
        request = urllib.request.Request(self.base_url + path, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            return json.loads(body) if body else None

    def lab_url(self, notebook: str) -> str:
        return f"{self.base_url}/lab/tree/{notebook}?reset&token={self.token}"

    def voila_url(self, notebook: str) -> str:
        return f"{self.base_url}/voila/render/{notebook}?token={self.token}"


@pytest.fixture(scope="session")
def notebook_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temp dir served by the servers, holding copies of the stored notebooks."""
    root = tmp_path_factory.mktemp("notebooks")
    for path in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy(path, root / path.name)
    return root


@pytest.fixture(scope="session")
def servers(notebook_root: Path, request: pytest.FixtureRequest):
    """Launch, side by side, every server the selected tests need (startup is the
    slow part); each server fixture then waits for its own to be ready."""
    wanted = {"voila": "voila_app", "lab": "lab_notebook"}
    needed = {kind for kind, fixture in wanted.items()
              if any(fixture in getattr(item, "fixturenames", ()) for item in
                     request.session.items)}
    launched = {kind: JupyterServer(notebook_root, kind).launch() for kind in sorted(needed)}
    yield launched
    for server in launched.values():  # stop side by side too
        server.terminate()
    for server in launched.values():
        server.stop()


def _server(servers: dict[str, JupyterServer], kind: str, notebook_root: Path
            ) -> JupyterServer:
    if kind not in servers:  # a test reached the server some other way
        servers[kind] = JupyterServer(notebook_root, kind).launch()
    return servers[kind].wait_ready()


@pytest.fixture(scope="session")
def voila_server(servers: dict[str, JupyterServer], notebook_root: Path) -> JupyterServer:
    return _server(servers, "voila", notebook_root)


@pytest.fixture(scope="session")
def lab_server(servers: dict[str, JupyterServer], notebook_root: Path) -> JupyterServer:
    return _server(servers, "lab", notebook_root)


# -- browser --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                          args=CHROMIUM_ARGS, timeout=60_000)
    yield chromium
    chromium.close()
    playwright.stop()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def _failed(request: pytest.FixtureRequest) -> bool:
    report = getattr(request.node, "rep_call", None)
    return report is not None and report.failed


@pytest.fixture
def page(browser, request: pytest.FixtureRequest):
    """A page in a fresh browser context; JS errors collected in `page.js_errors`;
    a screenshot of the page when the test fails."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.js_errors = errors
    yield pg
    if _failed(request):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):  # never hide the real failure
            pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-FAILED.png"),
                          full_page=True, timeout=10_000)
        if errors:
            print("page errors:", *errors[:10], sep="\n  ")
    context.close()


@pytest.fixture
def screenshot_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def voila_app(page, voila_server: JupyterServer, request: pytest.FixtureRequest):
    """open(name): load /voila/render/<name> (Voila runs it in a new kernel)."""

    def open_app(name: str):
        page.goto(voila_server.voila_url(name), timeout=90_000)
        return page

    yield open_app
    if _failed(request):
        print(f"---- voila log ----\n{voila_server.log_tail()}")


JS_KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const sc = w && w.sessionContext;
  const k = sc && sc.session && sc.session.kernel;
  return !!(k && sc.isReady && k.status === 'idle' && k.connectionStatus === 'connected');
}"""

# Start run-all without awaiting its promise inside evaluate (which has no timeout);
# wait for the stored result with wait_for_function instead.
JS_RUN_ALL = """() => {
  window.__wbRunAll = undefined;
  window.jupyterapp.commands.execute('notebook:run-all-cells')
    .then(ok => { window.__wbRunAll = ok === false ? 'failed' : 'ok'; },
          err => { window.__wbRunAll = 'error: ' + err; });
  return true;
}"""


@pytest.fixture
def lab_notebook(page, lab_server: JupyterServer, notebook_root: Path,
                 request: pytest.FixtureRequest):
    """open_and_run(name): open a private copy of the notebook in JupyterLab, wait
    for an idle connected kernel, run all cells, fail on any error output."""
    copies: list[Path] = []

    def open_and_run(name: str):
        source = notebook_root / name
        copy = source.with_name(f"{source.stem}-{uuid.uuid4().hex[:8]}.ipynb")
        shutil.copy(source, copy)
        copies.append(copy)
        page.goto(lab_server.lab_url(copy.name), timeout=90_000)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=90_000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        # run-all before the kernel is ready ran nothing (the recipe's flake)
        page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=200)
        page.evaluate(JS_RUN_ALL)
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
    if _failed(request):
        print(f"---- lab log ----\n{lab_server.log_tail()}")
    with contextlib.suppress(Exception):
        for session in lab_server.api("GET", "/api/sessions") or []:
            lab_server.api("DELETE", f"/api/sessions/{session['id']}")
    for copy in copies:
        copy.unlink(missing_ok=True)


# -- a widget on a projector ----------------------------------------------------------

#: the screen size a class looks at
PROJECTOR = {"width": 1280, "height": 800}


class Projector:
    """A notebook's widget in Voila at a 1280x800 projector: the setup the drawing tests
    share. `open` loads the notebook and waits until the widget says "done"; `toggle`
    clicks a button from one caption to the next (expand / collapse); `screenshot` saves
    the page under the screenshot directory; `assert_clean` fails on a widget that did
    not display or a JavaScript error."""

    def __init__(self, page, voila_app, screenshot_dir: Path) -> None:
        self.page, self._voila_app, self.screenshot_dir = page, voila_app, screenshot_dir

    def open(self, notebook: str, widget_class: str):
        """The locator of the `widget_class` element (".wb-graph-view") of `notebook`."""
        from playwright.sync_api import expect

        self.page.set_viewport_size(PROJECTOR)
        self._voila_app(notebook)
        widget = self.page.locator(widget_class)
        expect(widget).to_be_visible(timeout=90_000)  # Voila runs the notebook on load
        expect(widget.locator(".wb-status")).to_have_text("done")
        return widget

    def toggle(self, button, now: str, then: str) -> None:
        """Click `button`, which says `now`, and wait until it says `then`."""
        from playwright.sync_api import expect

        expect(button).to_have_text(now)
        button.click()
        expect(button).to_have_text(then)

    def screenshot(self, name: str) -> Path:
        path = self.screenshot_dir / name
        self.page.screenshot(path=str(path))
        return path

    def assert_clean(self) -> None:
        assert self.page.get_by_text("Error displaying widget").count() == 0
        assert not self.page.js_errors, self.page.js_errors


@pytest.fixture
def projector(page, voila_app, screenshot_dir: Path) -> Projector:
    return Projector(page, voila_app, screenshot_dir)
