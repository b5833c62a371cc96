"""Workbench(): the expression box and variable table build a graph with the CLI's parser;
the tabs are built when first shown; errors are shown in the app, never raised."""

from __future__ import annotations

import html
import sys
import types

import ipywidgets as widgets
import numpy as np
import pytest

from workbench.cli.sources import UsageError, parse_expression
from workbench.core.compile.mode import default_linker
from workbench.widgets import GraphView, ProfilePanel, Workbench
from workbench.widgets.app import TABS, VariableRow


def error_text(app: Workbench) -> str:
    assert "wb-app-error" in app.message.value, app.message.value
    return html.unescape(app.message.value)


def test_builds_the_graph_with_the_cli_parser_and_shows_the_graph_tab():
    app = Workbench("tanh(x @ w).sum()", variables=["x=float64[?,3]", "w=float64[3,2]"])
    assert app.error is None and app.status.value == "done"
    cli = parse_expression("tanh(x @ w).sum()", ["x=float64[?,3]", "w=float64[3,2]"])
    assert str(app.output.type) == str(cli.outputs[0].type)
    assert [str(v.type) for v in app.source.inputs] == [str(v.type) for v in cli.inputs]
    assert "TensorType(float64, (?, 3))" in app.message.value
    # only the selected tab (graph) is built; the others wait until shown
    assert list(app.views) == ["graph"]
    view = app.views["graph"]
    assert isinstance(view, GraphView) and app.tab_boxes["graph"].children == (view,)
    drawn = " ".join(view.canvas.captions())
    assert "Dot" in drawn and "Elemwise{tanh}" in drawn
    # the "?" size became POINT_SIZE rows in the point the graph is evaluated at
    x = next(v for v in app.source.inputs if v.name == "x")
    assert app.point[x].shape == (3, 3)
    view.select("x")
    assert "value at the point" in view.details.value


def test_variable_table_rows_are_cli_specs_and_undeclared_names_are_added():
    app = Workbench(variables={"x": "float32[?,4]"})
    assert [r.spec() for r in app.rows] == ["x=float32[?,4]"]
    assert app.source is None  # no expression: nothing built yet
    app.add_variable("n", "int64", "")
    app.expression_text.value = "(x * n).mean() + c"
    source = app.build()
    assert source is not None
    # c was not declared: a float64 scalar, as on the command line, now shown in the table
    assert [r.spec() for r in app.rows] == ["x=float32[?,4]", "n=int64", "c=float64"]
    assert [v.name for v in app.wrt()] == ["x", "c"]  # n is an integer: no gradient
    app.remove_variable("n")
    assert [r.name for r in app.rows] == ["x", "c"]
    with pytest.raises(KeyError, match="no variable named 'zz'"):
        app.remove_variable("zz")
    app.remove_variable(app.rows[0])  # what the row's ✕ button does
    assert [r.name for r in app.rows] == ["c"]


@pytest.mark.parametrize("expression, variables, expected", [
    ("exp(x", [], "malformed expression"),
    ("frobnicate(x)", [], "unknown function 'frobnicate'"),
    ("__import__('os').system('true')", [], "cannot call"),
    ("__import__('os')", [], "unknown function '__import__'"),
    ("x.__class__", [], "attribute .__class__ is not allowed"),
    ("x @ w", ["x=float64[?,3]", "w=float64[4,2]"], "x @ w"),
    ("   ", [], "the expression is empty"),
])
def test_bad_expressions_are_shown_in_the_app_not_raised(expression, variables, expected):
    app = Workbench(variables=variables)
    app.expression_text.value = expression
    app.build_button.click()
    assert app.source is None and app.status.value == "error"
    assert expected in app.error
    assert expected in error_text(app)
    for name in TABS:  # every tab says there is no graph
        assert "no graph" in app.tab_boxes[name].children[0].value
    with pytest.raises(ValueError, match="no graph yet.*last error"):
        app.output  # noqa: B018


def test_duplicate_and_bad_names_in_the_table_are_errors_in_the_app():
    app = Workbench()
    app.add_variable("x", "float64", "3")
    app.add_variable("x", "float32", "")
    app.expression_text.value = "x + 1"
    assert app.build() is None and "declared more than once" in error_text(app)
    app.rows[1].name_text.value = "2x"
    assert app.build() is None and "'2x' is not a Python identifier" in error_text(app)
    app.remove_variable(app.rows[1])
    app.rows[0].shape_text.value = "a,3"
    assert app.build() is None and "dimension 'a' is not an int or ?" in error_text(app)
    app.rows[0].shape_text.value = "(3)"  # brackets are forgiven
    assert app.build() is not None and "wb-app-error" not in app.message.value


def test_a_fixed_expression_rebuilds_the_tabs():
    app = Workbench("exp(x", variables=["x=float64[2]"])
    assert app.source is None
    app.expression_text.value = "exp(x).sum()"
    app.build_button.click()
    assert app.source is not None and isinstance(app.views["graph"], GraphView)
    first = app.views["graph"]
    app.expression_text.value = "sin(x).sum()"
    app.build_button.click()
    assert app.views["graph"] is not first
    assert "Elemwise{sin} [B]" in app.views["graph"].canvas.captions()


def test_profile_tab_is_built_when_shown_and_runs():
    app = Workbench("tanh(x @ w)", variables=["x=float64[?,3]", "w=float64[3,2]"],
                    profile_size=20)
    assert "compile/profile" not in app.views
    panel = app.show_tab("compile/profile")
    assert app.tabs.selected_index == TABS.index("compile/profile")
    assert isinstance(panel, ProfilePanel)
    assert app.tab_boxes["compile/profile"].children == (panel,)
    # "?" sizes start at profile_size; static sizes are kept
    assert {k: t.value for k, t in panel.shape_texts.items()} == {"x": "20,3", "w": "3,2"}
    stats = panel.run()
    assert panel.status.value == "done" and stats[default_linker()].calls == 5
    assert "Dot" in panel.tables.value


def test_selecting_a_tab_in_the_widget_builds_it():
    app = Workbench("x * 2", variables=["x=float64[3]"])
    app.tabs.selected_index = TABS.index("compile/profile")  # the browser's click
    assert isinstance(app.views["compile/profile"], ProfilePanel)
    assert app.status.value == "done"


@pytest.fixture
def fake_tab_modules(monkeypatch):
    """Stand-ins for the gradient and rewrites widgets recording how the app calls them."""
    calls: dict[str, tuple] = {}

    class FakeGradExplorer(widgets.HBox):  # a widget, so it can sit in a tab
        def __init__(self, cost, wrt, point=None):
            calls["grad"] = (cost, wrt, point)
            super().__init__([])

    class FakeRewriteStepper(widgets.HBox):
        def __init__(self, graph, mode="FAST_RUN"):
            calls["rewrites"] = (graph, mode)
            super().__init__([])

    for module, name, cls in [("workbench.widgets.grad_explorer", "GradExplorer",
                               FakeGradExplorer),
                              ("workbench.widgets.rewrite_stepper", "RewriteStepper",
                               FakeRewriteStepper)]:
        fake = types.ModuleType(module)
        setattr(fake, name, cls)
        monkeypatch.setitem(sys.modules, module, fake)
    return calls


def test_gradient_and_rewrite_tabs_get_the_cost_wrt_point_and_mode(fake_tab_modules):
    app = Workbench("exp(x) * n + y", variables=["x=float64[?]", "n=int32", "y=float64"],
                    mode="FAST_COMPILE")
    assert "gradient" not in app.views
    app.show_tab("gradient")
    cost, wrt, point = fake_tab_modules["grad"]
    # the output is a vector: its sum is differentiated, w.r.t. the float inputs only
    assert cost.type.ndim == 0 and cost.owner.inputs[0] is app.output
    assert [v.name for v in wrt] == ["x", "y"]
    assert {v.name: np.shape(val) for v, val in point.items()} == {"x": (3,), "n": (),
                                                                     "y": ()}
    chooser, tab = app.tab_boxes["gradient"].children
    assert "not a scalar" in tab.children[0].value
    assert [box.description for box in chooser.children[1:]] == ["x", "y"]
    app.show_tab("rewrites")
    graph, mode = fake_tab_modules["rewrites"]
    assert graph is app.output and mode == "FAST_COMPILE"


def test_a_tab_that_cannot_be_built_shows_why_and_the_others_still_work(monkeypatch):
    monkeypatch.setitem(sys.modules, "workbench.widgets.rewrite_stepper", None)  # import fails
    app = Workbench("n * 2", variables=["n=int64[3]"])
    assert app.tab("rewrites") is None
    text = app.tab_boxes["rewrites"].children[0].value
    assert "wb-tab-error" in text and "RewriteStepper is not available" in text
    assert app.tab("gradient") is None  # no float input: nothing to differentiate
    assert "no float input" in app.tab_boxes["gradient"].children[0].value
    assert isinstance(app.tab("graph"), GraphView)
    assert app.status.value == "done"


def test_bad_arguments_name_what_was_expected():
    with pytest.raises(TypeError, match="expression must be a str, got int"):
        Workbench(3)
    with pytest.raises(TypeError, match="list of specs"):
        Workbench("x", variables="x=float64")
    with pytest.raises(UsageError, match="bad --var 'x'"):
        Workbench("x", variables=["x"])
    with pytest.raises(ValueError, match="unknown dtype 'float99'"):
        VariableRow("x", "float99")
    app = Workbench()
    with pytest.raises(KeyError, match="no tab 'plots'"):
        app.show_tab("plots")
    assert app.tab("graph") is None  # no graph yet: nothing to build


def test_interactive_parts_have_css_classes():
    app = Workbench("x + 1")
    for widget, css in [(app.expression_text, "wb-expression"), (app.build_button, "wb-build"),
                        (app.add_button, "wb-var-add"), (app.tabs, "wb-app-tabs"),
                        (app.status, "wb-app-status"), (app.rows[0].name_text, "wb-var-name"),
                        (app.rows[0].shape_text, "wb-var-shape")]:
        assert css in widget._dom_classes
    assert "wb-app" in app._dom_classes
    assert app.tabs.titles == TABS


def test_gradient_and_rewrite_tabs_with_the_real_widgets():
    from workbench.widgets import GradExplorer, RewriteStepper

    app = Workbench("log(1 + x * w).sum()", variables=["x=float64[3]", "w=float64[3]"])
    stepper = app.show_tab("rewrites")
    assert isinstance(stepper, RewriteStepper)
    assert "local_log1p" in stepper.trace.rewrites_used()
    explorer = app.show_tab("gradient")
    assert isinstance(explorer, GradExplorer)
    assert [v.name for v in explorer.wrt] == ["x", "w"]
    app.wrt_boxes["x"].value = False  # untick x: the gradient is taken w.r.t. w alone
    explorer = app.tab("gradient")
    assert [v.name for v in explorer.wrt] == ["w"] and app.wrt_names == ["w"]
    app.wrt_boxes["w"].value = False
    assert app.tab("gradient") is None
    assert "tick at least one input" in app.tab_boxes["gradient"].children[1].value
    with pytest.raises(ValueError, match="cannot differentiate with respect to q: the float "
                                         "inputs are x, w"):
        app.set_wrt(["q"])
    app.set_wrt(["x", "w"])
    explorer = app.tab("gradient")
    # the explorer evaluates at the app's point, so its numbers match the graph tab's
    x, w = app.source.inputs
    np.testing.assert_allclose(explorer.point[x], app.point[x])
    explorer.last()
    check = explorer.compare()
    assert check is not None and check.passed
    np.testing.assert_allclose(check.symbolic[0], app.point[w] / (1 + app.point[x] * app.point[w]))
