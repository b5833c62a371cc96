"""The `workbench` command as a person sees it: its output in a terminal 1280 pixels
wide, drawn by headless Chromium in DejaVu Sans Mono at 14 px (a desktop terminal) and
18 px (a projector), with as many columns as that width shows, measured in the page.
Nothing may run past the right edge; screenshots go to artifacts/screenshots/ (or
$WB_ARTIFACTS). Without Playwright or Chromium the tests skip (fail when CI is set)."""

import html
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.link.c.compiler import has_compiler

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("WB_ARTIFACTS", REPO / "artifacts" / "screenshots"))
CHROMIUM = os.environ.get("WB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking"]
SCREEN = {"width": 1280, "height": 800}
#: the terminal's padding on each side and its vertical scrollbar, in pixels
PADDING, SCROLLBAR = 8, 16
BENCH = ["bench", "--quick", "--only", "overhead", "--no-pytensor", "--no-jax"]

#: (screenshot name, font size in px, command)
SCREENS = [
    ("cli-bench-overhead-1280x800.png", 14, BENCH),
    ("cli-bench-overhead-18px-1280x800.png", 18, BENCH),
    ("cli-profile-mlp-18px-1280x800.png", 18,
     ["profile", "--example", "mlp", "--linker", "c", "--calls", "3"]),
    ("cli-compile-mlp-18px-1280x800.png", 18, ["compile", "--example", "mlp", "--linker", "c"]),
    ("cli-rewrite-mlp-18px-1280x800.png", 18, ["rewrite", "--example", "mlp"]),
    ("cli-grad-18px-1280x800.png", 18,
     ["grad", "--example", "logistic_regression", "--wrt", "w", "--simplify"]),
    ("cli-functions-18px-1280x800.png", 18, ["functions"]),
    ("cli-bench-help-18px-1280x800.png", 18, ["bench", "--help"]),
]

TERMINAL = """<!doctype html><html><body style="margin:0;background:#1d1f21;
overflow:hidden"><pre id="term" style="margin:0;padding:{padding}px;
width:{inner}px;font-family:'DejaVu Sans Mono',monospace;font-size:{size}px;
line-height:1.25;color:#d8d8d8;white-space:pre;overflow-x:auto">{text}</pre>
<span id="probe" style="font-family:'DejaVu Sans Mono',monospace;font-size:{size}px;
white-space:pre;position:absolute;visibility:hidden">{probe}</span></body></html>"""


@pytest.fixture(scope="module")
def browser():
    missing = importlib.util.find_spec("playwright") is None
    if missing or not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        reason = "Playwright or Chromium is not installed (see tests/widgets/browser/README.md)"
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def terminal_page(browser, size, text=""):
    """A page drawing `text` as a terminal 1280 px wide at `size` px; returns the page and
    the columns that terminal shows (its width over the width of one character)."""
    page = browser.new_page(viewport=SCREEN)
    inner = SCREEN["width"] - 2 * PADDING - SCROLLBAR
    page.set_content(TERMINAL.format(padding=PADDING, inner=inner, size=size,
                                     text=html.escape(text), probe="x" * 200))
    char = page.evaluate("document.getElementById('probe').getBoundingClientRect().width") / 200
    return page, int(inner // char)


@pytest.mark.parametrize("name, size, command", SCREENS, ids=[s[0] for s in SCREENS])
def test_cli_output_fits_a_1280_pixel_terminal(browser, name, size, command):
    if command[0] in ("bench", "profile", "compile") and not has_compiler():
        pytest.skip("the command runs the C linker")
    page, columns = terminal_page(browser, size)
    page.close()
    assert columns == {14: 148, 18: 115}[size]  # what 1280 px of DejaVu Sans Mono hold
    env = dict(os.environ, COLUMNS=str(columns), NO_COLOR="1")
    done = subprocess.run([sys.executable, "-m", "workbench.cli", *command],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert max(len(line) for line in done.stdout.splitlines()) <= columns
    text = f"$ workbench {' '.join(command)}\n{done.stdout}"
    page, _ = terminal_page(browser, size, text)
    try:
        overflow = page.evaluate("(() => { const t = document.getElementById('term');"
                                 " return t.scrollWidth - t.clientWidth; })()")
        assert overflow <= 0, f"{name}: the text runs {overflow} px past the right edge"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / name))
    finally:
        page.close()
