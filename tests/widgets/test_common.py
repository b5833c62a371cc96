"""The widgets' shared helpers: status labels, one-assignment Output updates, tables."""

from __future__ import annotations

import base64

import ipywidgets as widgets
from matplotlib.figure import Figure

from workbench.widgets._common import (
    DONE,
    figure_png,
    html_table,
    run_with_status,
    set_output_html,
    set_output_png,
    status_label,
    styled,
)


def test_status_label_reports_done_or_the_error():
    status = status_label("ready")
    assert "wb-status" in status._dom_classes and status.value == "ready"
    assert run_with_status(status, lambda: 42) == 42 and status.value == DONE
    seen = []

    def fail():
        raise ValueError("shape (3,) does not fit")

    assert run_with_status(status, fail, on_error=seen.append) is None
    assert status.value == "error: shape (3,) does not fit" and isinstance(seen[0], ValueError)


def test_outputs_are_replaced_in_one_assignment():
    out = styled(widgets.Output(), "wb-plot", "wb-extra")
    assert {"wb-plot", "wb-extra"} <= set(out._dom_classes)
    set_output_html(out, "<b>hi</b>")
    assert len(out.outputs) == 1 and out.outputs[0]["data"]["text/html"] == "<b>hi</b>"
    fig = Figure(figsize=(2, 1))
    fig.add_subplot().plot([0, 1], [1, 0])
    png = figure_png(fig)
    set_output_png(out, png)
    assert len(out.outputs) == 1  # replaced, not appended
    assert base64.b64decode(out.outputs[0]["data"]["image/png"]) == png


def test_html_table_escapes_cells():
    table = html_table(["op", "ms"], [("<Dot>", 1.5), ("Elemwise", 2)], caption="By Op")
    assert "&lt;Dot&gt;" in table and "1.500" in table and "By Op" in table
