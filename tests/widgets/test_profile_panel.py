"""ProfilePanel driven from Python: shapes, Run, progress, tables, chart, errors."""

from __future__ import annotations

import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import available_linkers
from workbench.examples import get_example
from workbench.widgets import ProfilePanel, parse_shape, profile_with_progress


def test_prefilled_shapes_from_an_example():
    panel = ProfilePanel(get_example("logistic_regression"), calls=3)
    assert {k: t.value for k, t in panel.shape_texts.items()} == {
        "X": "256,20", "y": "256", "w": "20", "b": ""}
    assert panel.linker_select.options == tuple(available_linkers())
    assert "wb-run" in panel.run_button._dom_classes
    assert panel.status.value == "ready"


def test_run_button_profiles_and_shows_tables_and_chart():
    panel = ProfilePanel(get_example("logistic_regression"), calls=3)
    panel.run_button.click()
    assert panel.status.value == "done"
    assert panel.progress.value == panel.progress.max == 3
    stats = panel.stats[panel.linker_select.value[0]]
    assert stats.calls == 3
    tables = panel.tables.value
    for row in stats.by_op_class():
        assert row.name in tables
    assert "By Op class" in tables and "Memory" in tables
    assert panel.chart.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert not panel.run_button.disabled


def test_static_shapes_prefill_and_function_input():
    x = wt.tensor(dtype="float64", shape=(4, 3), name="x")
    w = wt.dmatrix("w")
    fn = wb.function([x, w], wt.tanh(x @ w))
    panel = ProfilePanel(fn, calls=2)
    assert panel.shape_texts["x"].value == "4,3" and panel.shape_texts["w"].value == ""
    panel.shape_texts["w"].value = "3,5"
    panel.run()
    assert panel.status.value == "done"
    assert "Dot" in panel.tables.value or "Gem" in panel.tables.value


def test_bad_shapes_show_an_error_naming_the_input():
    panel = ProfilePanel(wt.exp(wt.dmatrix("m")), calls=2)
    panel.shape_texts["m"].value = "10"
    panel.run_button.click()
    assert panel.status.value.startswith("error:") and "'m' has 2 dimensions" in panel.status.value
    assert "wb-error" in panel.tables.value
    panel.shape_texts["m"].value = "10,x"
    panel.run()
    assert "not a list of integers" in panel.status.value
    panel.shape_texts["m"].value = "4,4"
    panel.calls_text.value = 0
    panel.run()
    assert "calls must be >= 1" in panel.status.value


def test_parse_shape_checks_static_shapes():
    v = wt.tensor(dtype="float32", shape=(3, None), name="v")
    assert parse_shape("3, 7", v) == (3, 7)
    assert parse_shape("(3,7)", v) == (3, 7)
    with pytest.raises(ValueError, match="static shape"):
        parse_shape("4,7", v)
    assert parse_shape("", wt.dscalar("s")) == ()


def test_two_linkers_side_by_side():
    linkers = available_linkers()
    if len(linkers) < 2:
        # Only one linker is built: the comparison path is still exercised by
        # profiling the same linker twice under two labels.
        panel = ProfilePanel(get_example("quickstart"), calls=2)
        panel.shape_texts["x"].value = panel.shape_texts["x"].value or "50"
        panel.shape_texts["y"].value = panel.shape_texts["y"].value or "50"
        panel.run()
        first = panel.stats[linkers[0]]
        html = panel._tables_html({"a": first, "b": first})
        assert "side by side" in html and "wb-compare" in html
        return
    panel = ProfilePanel(get_example("quickstart"), linkers=linkers[:2], calls=2)
    panel.run()
    assert set(panel.stats) == set(linkers[:2]) and "wb-compare" in panel.tables.value


def test_unknown_inputs_are_refused():
    with pytest.raises(ValueError, match="unavailable here"):
        ProfilePanel(wt.exp(wt.dvector("v")), linkers=["nonesuch"])
    with pytest.raises(TypeError, match="GraphSource"):
        ProfilePanel(42)


def test_profile_with_progress_counts_calls():
    x = wt.dvector("x")
    fn = wb.function([x], wt.exp(x), profile=True)
    seen = []
    stats = profile_with_progress(fn, [[1.0, 2.0]], 4, seen.append)
    assert seen == [1, 2, 3, 4] and stats.calls == 4 and stats.call_time > 0
    with pytest.raises(ValueError, match="profile=True"):
        profile_with_progress(wb.function([x], wt.exp(x)), [[1.0]], 2)


def test_run_from_another_thread_like_a_jupyterlab_subshell():
    """JupyterLab runs widget callbacks on a kernel subshell thread: the panel must
    still draw its chart (no pyplot) and fill its widgets."""
    import threading

    panel = ProfilePanel(get_example("quickstart"), calls=2)
    for text in panel.shape_texts.values():
        text.value = text.value or "20"
    worker = threading.Thread(target=panel.run_button.click)
    worker.start()
    worker.join(timeout=60)
    assert panel.status.value == "done"
    assert panel.chart.value[:4] == b"\x89PNG" and "By Op class" in panel.tables.value


def test_a_loop_shows_the_time_inside_it_per_body_node():
    x = wt.dmatrix("x")
    w = wt.dmatrix("w")
    hs, _ = wb.scan(lambda xt, h, w_: wt.tanh(wt.dot(h, w_) + xt), sequences=x,
                    outputs_info=wt.zeros(3), non_sequences=w, name="rnn")
    linkers = [name for name in ("py", "c") if name in available_linkers()]
    panel = ProfilePanel(hs, linkers=linkers, calls=2,
                         input_shapes={"x": (5, 3), "w": (3, 3)})
    panel.run_button.click()
    assert panel.status.value == "done"
    tables = panel.tables.value
    assert tables.count("Inside Scan{rnn, for}") == len(linkers)
    for linker in linkers:
        (inner,) = panel.stats[linker].inner().values()
        assert inner.calls == 10  # 5 steps x 2 calls
