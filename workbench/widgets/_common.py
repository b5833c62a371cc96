"""Helpers shared by the widgets: status labels, CSS classes, thread-safe updates.

In JupyterLab 4.4+ with ipykernel 7, widget callbacks run on a kernel *subshell
thread*, not the main thread. So the widgets never capture output with
`with output:` and never use pyplot inside callbacks: they draw with
`matplotlib.figure.Figure`, and they change what is shown by assigning a widget
trait (or an Output's `outputs`) in one step.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import ipywidgets as widgets

from workbench.core.graph.basic import Variable
from workbench.core.printing import pprint

W = TypeVar("W", bound=widgets.DOMWidget)

#: Text the status label shows once a slow callback has finished (browser tests wait on it).
DONE = "done"


def styled(widget: W, *classes: str) -> W:
    """Add CSS classes to `widget` (ipywidgets' `add_class`) and return it."""
    for name in classes:
        widget.add_class(name)
    return widget


def status_label(text: str = DONE) -> widgets.Label:
    """A Label with class `wb-status`: "working…" during a callback, "done" after it."""
    return styled(widgets.Label(value=text), "wb-status")


def run_with_status(status: widgets.Label, work: Callable[[], Any],
                    on_error: Callable[[BaseException], None] | None = None) -> Any:
    """Run `work()` showing "working…" then "done" (or "error: …") in `status`.

    An exception is shown in the label (and passed to `on_error`) rather than
    raised: in a notebook a callback's exception is otherwise only logged.
    """
    status.value = "working…"
    try:
        result = work()
    except Exception as exc:  # shown to the person using the widget
        status.value = f"error: {exc}"
        if on_error is not None:
            on_error(exc)
        return None
    status.value = DONE
    return result


def set_output_html(output: widgets.Output, text_html: str, plain: str = "") -> None:
    """Replace an Output's contents with HTML in one assignment (thread-safe)."""
    output.outputs = ({
        "output_type": "display_data",
        "data": {"text/html": text_html, "text/plain": plain or "(html)"},
        "metadata": {},
    },)


def figure_png(fig: Any, dpi: int = 100) -> bytes:
    """PNG bytes of a `matplotlib.figure.Figure` (no pyplot, no global state)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def set_output_png(output: widgets.Output, png: bytes, plain: str = "<figure>") -> None:
    """Replace an Output's contents with a PNG image in one assignment (thread-safe)."""
    output.outputs = ({
        "output_type": "display_data",
        "data": {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": plain},
        "metadata": {},
    },)


def html_table(header: Sequence[str], rows: Iterable[Sequence[Any]], css: str = "wb-table",
               caption: str | None = None) -> str:
    """An HTML table (escaped cells; numbers right-aligned)."""
    parts = [f'<table class="{css}" style="border-collapse:collapse;font-size:12px;'
             'margin:4px 0">']
    if caption:
        parts.append(f'<caption style="text-align:left;font-weight:bold">'
                     f"{html.escape(caption)}</caption>")
    cell = "padding:1px 8px;border-bottom:1px solid #ddd"
    parts.append("<tr>" + "".join(f'<th style="{cell};text-align:left">{html.escape(str(h))}</th>'
                                  for h in header) + "</tr>")
    for row in rows:
        cells = []
        for value in row:
            align = "right" if isinstance(value, int | float) else "left"
            text = f"{value:.3f}" if isinstance(value, float) else str(value)
            cells.append(f'<td style="{cell};text-align:{align}">{html.escape(text)}</td>')
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    return "".join(parts)


def pre(text: str, css: str = "", wrap: bool = False) -> str:
    """Preformatted, escaped text; `wrap`: long lines wrap instead of scrolling."""
    cls = f' class="{css}"' if css else ""
    space = "white-space:pre-wrap;overflow-wrap:anywhere" if wrap else "white-space:pre"
    return (f"<pre{cls} style=\"margin:2px 0;font-size:12px;line-height:1.3;"
            f"{space};overflow-x:auto\">{html.escape(text)}</pre>")


def graph_title(outputs: Iterable[Variable], fallback: str | None = None,
                limit: int = 48) -> str:
    """What a title calls a graph: its outputs' names (`cost`), else a short pprint
    of its output cut at `limit` characters, else `fallback`."""
    outputs = list(outputs)
    names = [o.name for o in outputs]
    if outputs and all(names):
        return ", ".join(names)
    if len(outputs) == 1:
        text = " ".join(pprint(outputs[0]).split())
        return text if len(text) <= limit else text[: limit - 1] + "…"
    return fallback or f"{len(outputs)} outputs"
