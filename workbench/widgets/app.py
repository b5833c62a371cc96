"""Workbench(): one app chaining the widgets around a graph typed as an expression.

An expression box and a variable table (name, dtype, shape) build the graph with
the CLI's safe parser (`workbench.cli.sources.parse_expression`: the expression
is walked as an `ast` against a whitelist, never `eval`-ed). Then four tabs look
at it: graph (GraphView), gradient (GradExplorer), rewrites (RewriteStepper) and
compile/profile (ProfilePanel). A tab is built the first time it is shown, so an
expensive view costs nothing until asked for, and its module is imported then.
Errors (a malformed expression, a bad variable, a view that cannot be built) are
shown in the app, never raised into the notebook.

    app = Workbench("tanh(x @ w).sum()", variables=["x=float64[?,3]", "w=float64[3,2]"])
    app                      # in a notebook; or app.build(), app.show_tab("rewrites")
"""

from __future__ import annotations

import html
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Variable
from workbench.examples import GraphSource
from workbench.widgets._common import DONE, status_label, styled

#: Tab titles, in order.
TABS = ("graph", "gradient", "rewrites", "compile/profile")
#: What a size written "?" in the variable table becomes when the app makes values.
POINT_SIZE = 3      # the point the graph and gradient tabs evaluate at (small: readable)
PROFILE_SIZE = 100  # the shapes the profile tab starts with (editable there)

_NAME = re.compile(r"^[A-Za-z_]\w*$")


def _dtype_options() -> list[str]:
    return [str(d) for d in dtypes.all_dtypes]


class VariableRow(widgets.HBox):
    """One row of the variable table: name, dtype and shape (e.g. `?,3`; empty: scalar)."""

    def __init__(self, name: str = "", dtype: str = "float64", shape: str = "",
                 on_remove: Callable[[VariableRow], None] | None = None) -> None:
        options = _dtype_options()
        if dtype not in options:
            raise ValueError(f"variable {name!r}: unknown dtype {dtype!r}; "
                             f"expected one of {', '.join(options)}")
        self.name_text = styled(widgets.Text(value=name, placeholder="name",
                                             layout=widgets.Layout(width="120px")),
                                "wb-var-name")
        self.dtype_select = styled(widgets.Dropdown(options=options, value=dtype,
                                                    layout=widgets.Layout(width="120px")),
                                   "wb-var-dtype")
        self.shape_text = styled(widgets.Text(value=shape, placeholder="scalar; or ?,3",
                                              layout=widgets.Layout(width="140px")),
                                 "wb-var-shape")
        self.remove_button = styled(widgets.Button(description="✕", tooltip="remove",
                                                   layout=widgets.Layout(width="32px")),
                                    "wb-var-remove")
        if on_remove is not None:
            self.remove_button.on_click(lambda _: on_remove(self))
        super().__init__([self.name_text, self.dtype_select, self.shape_text,
                          self.remove_button])
        self.add_class("wb-var-row")

    @property
    def name(self) -> str:
        return self.name_text.value.strip()

    def spec(self) -> str:
        """The row as the CLI's `--var` spec: `x=float64[?,3]` (a scalar: `x=float64`)."""
        name = self.name
        if not _NAME.match(name):
            raise ValueError(f"variable name {name!r} is not a Python identifier")
        shape = self.shape_text.value.strip().strip("()[]").strip()
        return f"{name}={self.dtype_select.value}" + (f"[{shape}]" if shape else "")


def _random_value(var: Variable, unknown: int, rng: np.random.Generator) -> np.ndarray:
    from workbench.testing.catalog import random_array

    static = getattr(var.type, "shape", ())
    shape = tuple(unknown if s is None else int(s) for s in static)
    return random_array(rng, shape, str(var.type.dtype), low=0.05, high=1.0)


class Workbench(widgets.VBox):
    """Expression box + variable table -> graph, gradient, rewrites and profile tabs.

    `expression`: the starting expression (tensor functions, operators, indexing).
    `variables`: declarations as the CLI takes them (`"x=float64[?,3]"`) or a mapping
    name -> `"float64[?,3]"`; names used but not declared become float64 scalars and
    are added to the table. `mode`: the mode the rewrites tab replays.
    `point_size` / `profile_size`: what a `?` size becomes in the values the graph and
    gradient tabs evaluate at, and in the profile tab's shapes.
    With an expression, the graph is built at once.
    """

    def __init__(self, expression: str = "", variables: Sequence[str] | Mapping[str, str] = (),
                 mode: str = "FAST_RUN", point_size: int = POINT_SIZE,
                 profile_size: int = PROFILE_SIZE) -> None:
        if not isinstance(expression, str):
            raise TypeError(f"Workbench: expression must be a str, got "
                            f"{type(expression).__name__}")
        self.mode = mode
        self.point_size, self.profile_size = int(point_size), int(profile_size)
        self.source: GraphSource | None = None
        self.point: dict[Variable, Any] = {}
        self.views: dict[str, Any] = {}  # tab name -> the widget built for the current graph
        self.error: str | None = None
        #: the inputs the gradient tab differentiates with respect to (None: every float one)
        self.wrt_names: list[str] | None = None
        self.wrt_boxes: dict[str, widgets.Checkbox] = {}

        self.expression_text = styled(widgets.Text(
            value=expression, placeholder="e.g. tanh(x @ w).sum()", description="expression",
            layout=widgets.Layout(width="560px")), "wb-expression")
        self.build_button = styled(widgets.Button(description="Build", button_style="primary",
                                                  icon="play"), "wb-build")
        self.add_button = styled(widgets.Button(description="add variable", icon="plus"),
                                 "wb-var-add")
        self.rows_box = styled(widgets.VBox([]), "wb-var-table")
        self.status = styled(status_label("ready"), "wb-app-status")
        self.message = styled(widgets.HTML(), "wb-app-message")
        self.tab_boxes = {name: styled(widgets.VBox([]), f"wb-tab-{_css(name)}")
                          for name in TABS}
        self.tabs = styled(widgets.Tab(children=list(self.tab_boxes.values()),
                                       titles=TABS), "wb-app-tabs")

        for spec in self._specs_of(variables):
            self._add_row_from_spec(spec)
        self.build_button.on_click(lambda _: self.build())
        self.add_button.on_click(lambda _: self.add_variable())
        self.tabs.observe(self._on_tab, names="selected_index")

        header = widgets.HTML("<span style='display:inline-block;width:124px'><b>name</b></span>"
                              "<span style='display:inline-block;width:124px'><b>dtype</b></span>"
                              "<b>shape</b>")
        super().__init__([
            widgets.HTML("<b>Workbench</b>: type an expression, declare its variables, Build."),
            widgets.HBox([self.expression_text, self.build_button, self.status]),
            header, self.rows_box, self.add_button, self.message, self.tabs])
        self.add_class("wb-app")
        self._clear_tabs("<i>build a graph to see it here</i>")
        if expression.strip():
            self.build()

    # -- variable table -----------------------------------------------------------------
    @staticmethod
    def _specs_of(variables: Sequence[str] | Mapping[str, str]) -> list[str]:
        if isinstance(variables, str):
            raise TypeError("Workbench: variables must be a list of specs like "
                            "['x=float64[?,3]'] or a mapping name -> 'float64[?,3]', not a str")
        if isinstance(variables, Mapping):
            return [f"{name}={decl}" for name, decl in variables.items()]
        return list(variables)

    def _add_row_from_spec(self, spec: str) -> VariableRow:
        from workbench.cli.sources import parse_var_spec

        var = parse_var_spec(spec)  # UsageError (a ValueError) naming the spec
        shape = ",".join("?" if s is None else str(s) for s in var.type.shape)
        return self.add_variable(var.name, str(var.type.dtype), shape)

    @property
    def rows(self) -> list[VariableRow]:
        return list(self.rows_box.children)

    def add_variable(self, name: str = "", dtype: str = "float64", shape: str = ""
                     ) -> VariableRow:
        """Append a row to the variable table (the "add variable" button: an empty row)."""
        row = VariableRow(name, dtype, shape, on_remove=self.remove_variable)
        self.rows_box.children = (*self.rows_box.children, row)
        return row

    def remove_variable(self, row_or_name: VariableRow | str) -> None:
        """Remove a row of the variable table (by row or by name)."""
        rows = self.rows
        if isinstance(row_or_name, str):
            matches = [r for r in rows if r.name == row_or_name]
            if not matches:
                raise KeyError(f"no variable named {row_or_name!r} in the table "
                               f"(names: {', '.join(r.name for r in rows) or 'none'})")
            row_or_name = matches[0]
        self.rows_box.children = tuple(r for r in rows if r is not row_or_name)

    def variable_specs(self) -> list[str]:
        """The table as CLI `--var` specs (rows without a name are ignored)."""
        return [row.spec() for row in self.rows if row.name]

    # -- building -----------------------------------------------------------------------
    def build(self) -> GraphSource | None:
        """Parse the expression with the table's variables and reset the tabs (the Build
        button). Returns the GraphSource, or None after showing the error."""
        from workbench.cli.sources import parse_expression

        self.status.value = "working…"
        text = self.expression_text.value
        try:
            if not text.strip():
                raise ValueError("the expression is empty: type one, e.g. exp(x) * y")
            specs = self.variable_specs()
            names = [s.split("=", 1)[0] for s in specs]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ValueError(f"variable(s) {', '.join(twice)} declared more than once")
            source = parse_expression(text, specs)
        except Exception as exc:  # any failure to build is the expression's: show it
            return self._fail(exc)
        declared = set(names)
        for var in source.inputs:  # undeclared names became float64 scalars: show them
            if var.name not in declared:
                self.add_variable(var.name, str(var.type.dtype), "")
        self.source = source
        self._reset_wrt()
        self.source.input_shapes = {
            v.name: tuple(self.profile_size if s is None else int(s) for s in v.type.shape)
            for v in source.inputs}
        rng = np.random.default_rng(0)
        self.point = {v: _random_value(v, self.point_size, rng) for v in source.inputs}
        self.error = None
        (output,) = source.outputs
        inputs = ", ".join(f"{v.name}: {v.type}" for v in source.inputs) or "none"
        self.message.value = (f'<div class="wb-app-summary">output <code>'
                              f"{html.escape(str(output.type))}</code>; inputs "
                              f"{html.escape(inputs)}</div>")
        self._clear_tabs("<i>building…</i>")
        self._build_tab(self.selected_tab)
        self.status.value = DONE
        return source

    def _fail(self, exc: BaseException) -> None:
        self.source, self.point, self.error = None, {}, str(exc)
        self.message.value = (f'<pre class="wb-app-error" style="color:#b00020;white-space:'
                              f'pre-wrap">{html.escape(str(exc))}</pre>')
        self._clear_tabs("<i>no graph: fix the expression above</i>")
        self.status.value = "error"
        return None

    def _clear_tabs(self, text: str) -> None:
        self.views = {}
        for box in self.tab_boxes.values():
            box.children = (widgets.HTML(text),)

    # -- tabs ---------------------------------------------------------------------------
    @property
    def selected_tab(self) -> str:
        index = self.tabs.selected_index
        return TABS[index] if index is not None else TABS[0]

    def show_tab(self, name: str) -> Any:
        """Select tab `name` (as a click on its title does) and return its widget."""
        if name not in TABS:
            raise KeyError(f"no tab {name!r}; tabs: {', '.join(TABS)}")
        self.tabs.selected_index = TABS.index(name)  # builds it through _on_tab
        return self.tab(name)

    def tab(self, name: str) -> Any:
        """The widget of tab `name` for the current graph, built now if needed (None
        when there is no graph or it could not be built: the tab shows why)."""
        if name not in TABS:
            raise KeyError(f"no tab {name!r}; tabs: {', '.join(TABS)}")
        if name not in self.views:
            self._build_tab(name)
        return self.views.get(name)

    def _on_tab(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self._build_tab(TABS[change["new"]])

    def _build_tab(self, name: str) -> None:
        if self.source is None or name in self.views:
            return
        box = self.tab_boxes[name]
        self.status.value = f"building {name}…"
        above = (self._wrt_chooser(),) if name == "gradient" and self.wrt_boxes else ()
        try:
            view = _BUILDERS[name](self)
        except Exception as exc:  # shown in the tab: the other tabs keep working
            box.children = (*above, widgets.HTML(
                f'<pre class="wb-tab-error" style="color:#b00020;white-space:pre-wrap">'
                f"{html.escape(f'{name}: {type(exc).__name__}: {exc}')}</pre>"))
            self.views[name] = None
        else:
            self.views[name] = view
            box.children = (*above, view)
        self.status.value = DONE

    # -- what the gradient is taken with respect to -------------------------------------
    def _float_inputs(self) -> list[Variable]:
        return [v for v in self.source.inputs if dtypes.is_float_dtype(v.type.dtype)]

    def _reset_wrt(self) -> None:
        """A new graph: keep the chosen inputs it still has (else all), new checkboxes."""
        names = [v.name for v in self._float_inputs()]
        kept = [n for n in (self.wrt_names or []) if n in names]
        self.wrt_names = kept or None
        self.wrt_boxes = {}
        for name in names:
            box = styled(widgets.Checkbox(value=self.wrt_names is None or name in kept,
                                          description=name, indent=False,
                                          layout=widgets.Layout(width="auto")),
                         "wb-wrt", f"wb-wrt-{_css(name)}")
            box.observe(self._on_wrt_box, names="value")
            self.wrt_boxes[name] = box

    def _wrt_chooser(self) -> widgets.HBox:
        return styled(widgets.HBox([widgets.HTML("<b>differentiate with respect to:</b>&nbsp;"),
                                    *self.wrt_boxes.values()]), "wb-wrt-chooser")

    def _on_wrt_box(self, change: dict[str, Any]) -> None:
        self.set_wrt([name for name, box in self.wrt_boxes.items() if box.value])

    def set_wrt(self, names: Sequence[str]) -> None:
        """Differentiate with respect to these inputs only (the gradient tab's checkboxes);
        the gradient tab is rebuilt."""
        if self.source is None:
            raise ValueError("no graph yet: build an expression first")
        known = list(self.wrt_boxes)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"cannot differentiate with respect to {', '.join(unknown)}: "
                             f"the float inputs are {', '.join(known) or 'none'}")
        self.wrt_names = list(names)
        for name, box in self.wrt_boxes.items():
            box.unobserve(self._on_wrt_box, names="value")
            box.value = name in self.wrt_names
            box.observe(self._on_wrt_box, names="value")
        self.views.pop("gradient", None)
        if self.selected_tab == "gradient":
            self._build_tab("gradient")

    # -- what each tab shows ------------------------------------------------------------
    @property
    def output(self) -> Variable:
        """The expression's graph (a Variable); ValueError before a successful build."""
        if self.source is None:
            raise ValueError("no graph yet: build an expression first"
                             + (f" (last error: {self.error})" if self.error else ""))
        return self.source.outputs[0]

    def cost(self) -> Variable:
        """What the gradient tab differentiates: the output, summed if not a scalar."""
        out = self.output
        return out if out.type.ndim == 0 else out.sum()

    def wrt(self) -> list[Variable]:
        """The inputs the gradient tab differentiates with respect to: the float ones
        ticked in its chooser (all of them until the user chooses)."""
        floats = self._float_inputs()
        if self.wrt_names is None:
            return floats
        return [v for v in floats if v.name in self.wrt_names]

    def _graph_tab(self) -> Any:
        from workbench.widgets.graph_view import GraphView

        return GraphView(self.source, point=self.point)

    def _gradient_tab(self) -> Any:
        wrt = self.wrt()
        if not self._float_inputs():
            raise ValueError("the expression has no float input to differentiate with "
                             "respect to (integer and bool inputs have no gradient)")
        if not wrt:
            raise ValueError("tick at least one input to differentiate with respect to")
        explorer = _lazy("workbench.widgets.grad_explorer", "GradExplorer")
        cost = self.cost()
        view = explorer(cost, wrt, point={v: self.point[v] for v in self.source.inputs})
        if cost is not self.output:
            note = widgets.HTML("<i>the output is not a scalar: differentiating its sum</i>")
            return styled(widgets.VBox([note, view]), "wb-grad-tab")
        return view

    def _rewrites_tab(self) -> Any:
        stepper = _lazy("workbench.widgets.rewrite_stepper", "RewriteStepper")
        return stepper(self.output, mode=self.mode)

    def _profile_tab(self) -> Any:
        from workbench.widgets.profile_panel import ProfilePanel

        return ProfilePanel(self.source, calls=5)


def _lazy(module: str, name: str) -> Any:
    """Import a widget class when its tab is first built (clear error when absent)."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"{name} is not available ({module}: {exc})") from None


def _css(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower())


_BUILDERS: dict[str, Callable[[Workbench], Any]] = {
    "graph": Workbench._graph_tab,
    "gradient": Workbench._gradient_tab,
    "rewrites": Workbench._rewrites_tab,
    "compile/profile": Workbench._profile_tab,
}
