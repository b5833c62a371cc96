"""GradExplorer: reverse-mode differentiation, one recorded step at a time (the classroom widget).

The widget *is* an ipywidgets container (a `VBox`, like GraphView): display it
directly. It calls `grad(cost, wrt, trace=True)` once and only reads the
recorded `BackwardTrace`; the numbers come from evaluating the recorded
gradient variables (`BackwardTrace.evaluate`) at a point.

The timeline starts at position 0 (the forward pass: every value at the point,
and the seed d cost / d cost = 1). Each later position is one entry of the
record, in the order the pass made it:

- a *step*: the `grad` of one Apply node ran. The drawing outlines the node
  (orange), the outputs whose gradients it received (red) and the inputs it
  produced a term for (green); tables give those gradients with their values.
- a *sum*: a variable used more than once (`x * x`, or `x` feeding two nodes)
  received several contributions; they are added up. The drawing outlines the
  variable and the nodes whose steps contributed.

A "gradients so far" table shows, for every variable, the contributions
received up to the current position and their running sum. At the last
position the gradients are compared with finite differences (`numeric_grad`,
and `verify_grad` gives the verdict).

    explorer = GradExplorer(cost, [x, w], point={x: [1.0, 2.0], w: [0.5, 0.1]})
    explorer.next()                     # or explorer.next_button.click()
    explorer.entry                      # ("step", BackwardStep) or ("sum", Accumulation)
    explorer.last(); explorer.check     # the finite-difference comparison
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import networkx as nx
import numpy as np

from workbench.core.grad import (
    Accumulation,
    BackwardStep,
    BackwardTrace,
    grad,
    is_disconnected,
    is_null,
)
from workbench.core.graph.basic import Apply, Constant, Variable, clone_replace
from workbench.core.link.shared import SharedVariable
from workbench.core.printing import pprint
from workbench.inspector import node_key, to_networkx
from workbench.inspector.graph import graph_parts
from workbench.widgets._common import (
    graph_title,
    html_table,
    pre,
    run_with_status,
    status_label,
    styled,
)
from workbench.widgets.graph_canvas import GraphCanvas, graph_data, relabel
from workbench.widgets.inner_graphs import ExpandsInnerGraphs, holds_inner_graph
from workbench.widgets.rewrite_stepper import StepNavigator

__all__ = ["GradCheck", "GradExplorer"]


@dataclass
class GradCheck:
    """The gradient compared with central finite differences, one row per `wrt`."""

    symbolic: list[np.ndarray]
    numeric: list[np.ndarray]
    max_abs_error: list[float]
    passed: bool
    message: str  # verify_grad's verdict (its GradientError text on a mismatch)


class GradExplorer(ExpandsInnerGraphs, widgets.VBox):
    """Forward values, then the recorded backward pass step by step, then a gradient check.

    `cost`: a scalar Variable. `wrt`: a Variable or a list of them. `point`:
    values of the graph inputs (Variables or their names -> arrays; Variables the
    cost does not use are ignored); None draws random ones (uniform in (0.1, 1),
    seeded by `seed`; free lengths 3). `height`: pixel height of the drawing.
    `unroll_loops`: loops of at most this many (constant) steps are written out step
    by step first, so backpropagation through time shows one step per iteration and
    a weight's gradient as the sum of one contribution per step (0: never).
    """

    def __init__(self, cost: Variable, wrt: Variable | Sequence[Variable],
                 point: Mapping[Any, Any] | None = None, *, seed: int = 0,
                 height: int = 420, unroll_loops: int = 8) -> None:
        if not isinstance(cost, Variable):
            raise TypeError(f"GradExplorer: cost must be a scalar Variable, got "
                            f"{type(cost).__name__} {cost!r}")
        if getattr(cost.type, "ndim", None) != 0:
            raise TypeError(f"GradExplorer: cost must be a scalar (0-d) Variable, but {cost} "
                            f"has type {cost.type}; reduce it first (e.g. .sum())")
        self.cost = cost
        self.wrt: list[Variable] = [wrt] if isinstance(wrt, Variable) else list(wrt)
        for k, var in enumerate(self.wrt):
            if not isinstance(var, Variable):
                raise TypeError(f"GradExplorer: wrt[{k}] must be a Variable, got "
                                f"{type(var).__name__} {var!r}")
        if unroll_loops > 0:
            self.cost = cost = _loops_written_out(cost, self.wrt, unroll_loops)
        grads, trace = grad(cost, self.wrt, trace=True)
        self.grads: list[Variable] = list(grads)
        self.trace: BackwardTrace = trace
        self.nx_graph: nx.DiGraph = to_networkx(cost)
        self._init_inner_graphs()  # expanded, expand(), collapse(), expand_button
        _, inputs, _ = graph_parts(cost)
        self.inputs = [v for v in inputs if not isinstance(v, SharedVariable)]
        self.point: dict[Variable, np.ndarray] = (
            self._random_point(seed) if point is None else self._given_point(point))
        self.values: dict[Variable, Any] = self._forward_values()
        self.grad_values: dict[Variable, Any] = self.trace.evaluate(dict(self.point))
        self.entries: list[tuple[str, Any]] = self._timeline()
        self._contributions = self._all_contributions()
        self.position = 0
        self.check: GradCheck | None = None
        self._check_html = ""

        self.status = status_label("working…")
        self.title = styled(widgets.HTML(
            f"<b>{html.escape(self.derivative_title())}</b>: "
            f"<span class='wb-entry-count' data-entries='{len(self.entries)}'>"
            f"{_count(len(self.trace.steps), 'backward step')}, "
            f"{_count(len(self.trace.accumulations), 'sum')}</span>"), "wb-grad-title")
        self.nav = StepNavigator(self._show, minimum=0, maximum=len(self.entries),
                                 noun="position")
        self.first_button, self.prev_button = self.nav.first_button, self.nav.prev_button
        self.next_button, self.last_button = self.nav.next_button, self.nav.last_button
        self.slider = self.nav.slider
        self.values_toggle = styled(widgets.Checkbox(
            value=True, description="values and gradients in nodes", indent=False,
            layout=widgets.Layout(width="240px")), "wb-values-toggle")
        self._drawings: dict[bool, dict[str, Any]] = {}  # laid out once per toggle state
        self.svg = styled(GraphCanvas(self._drawing(0), height=height,
                                      layout=widgets.Layout(width="55%")), "wb-grad-svg")
        self.canvas = self.svg  # the drawing: values and gradients so far inside the nodes
        self.values_toggle.observe(lambda _: self._show(self.position), names="value")
        self.canvas.observe(self._on_canvas_select, names="selected")
        self._point_expand_button_at_drawing()
        self.step_panel = styled(widgets.HTML(layout=widgets.Layout(width="45%")),
                                 "wb-grad-step")
        self.so_far = styled(widgets.HTML(), "wb-grad-sofar")
        self.forward_table = styled(widgets.HTML(), "wb-forward-values")
        self.check_output = styled(widgets.HTML(), "wb-grad-check")
        self.check_button = styled(widgets.Button(description="compare with finite differences",
                                                  icon="check",
                                                  layout=widgets.Layout(width="280px")),
                                   "wb-verify")
        self.check_button.on_click(lambda _: self.compare())
        legend = widgets.HTML(
            "<small>outlined: <b style='color:#ff9800'>the node (or variable) of this "
            "entry</b>, <b style='color:#d32f2f'>gradients it received</b>, "
            "<b style='color:#2e7d32'>gradients it produced / contributions</b></small>")
        super().__init__([
            self.title, widgets.HBox([self.nav, self.expand_button, self.status]),
            widgets.HBox([legend, self.values_toggle]),
            widgets.HBox([self.svg, self.step_panel]), self.so_far,
            widgets.HBox([self.check_button]), self.check_output,
            widgets.HTML("<b>forward pass: values at the point</b>"), self.forward_table,
        ])
        self.add_class("wb-grad-explorer")
        self.forward_table.value = self._forward_html()
        self._show(0)

    # -- public API ---------------------------------------------------------------------
    @property
    def entry(self) -> tuple[str, Any] | None:
        """The entry shown: ("step", BackwardStep), ("sum", Accumulation); None at 0."""
        return self.entries[self.position - 1] if self.position else None

    def go(self, position: int) -> None:
        """Show position `position` (0: the forward pass; clamped to the timeline)."""
        self.nav.go(position)

    def first(self) -> None:
        """Back to the forward pass (position 0; the First button)."""
        self.nav.go(0)

    def previous(self) -> None:
        """One entry back (the Previous button)."""
        self.nav.go(self.position - 1)

    def next(self) -> None:
        """One entry on (the Next button)."""
        self.nav.go(self.position + 1)

    def last(self) -> None:
        """The last entry, with the finite-difference check (the Last button)."""
        self.nav.go(len(self.entries))

    def value(self, var: Variable) -> Any:
        """The value at the point of a forward variable or of a recorded gradient."""
        if var in self.grad_values:
            return self.grad_values[var]
        if isinstance(var, Constant):
            return var.data
        if var in self.values:
            return self.values[var]
        raise KeyError(f"{var} is neither in the forward graph nor a recorded gradient")

    def contributions(self, var: Variable, upto: int | None = None
                      ) -> list[tuple[int, Variable]]:
        """(position, term) of each gradient contribution `var` received, in order, up to
        timeline position `upto` (default: all). Position 0 is a seed."""
        terms = self._contributions.get(var, [])
        return [(p, t) for p, t in terms if upto is None or p <= upto]

    def compare(self) -> GradCheck | None:
        """Compare the gradient with finite differences (shown below the timeline)."""
        result: list[GradCheck] = []
        run_with_status(self.status, lambda: result.append(self._run_check()),
                        on_error=self._show_check_error)
        return result[0] if result else None

    # -- the point and the values -------------------------------------------------------
    def _random_point(self, seed: int) -> dict[Variable, np.ndarray]:
        from workbench.core.link.debugmode import random_value

        last_error: Exception | None = None
        for unknown in ((3, 3), (2, 3), (3, 2)):
            rng = np.random.default_rng(seed)
            try:
                point = {v: random_value(v.type, rng, unknown) for v in self.inputs}
                self._forward_values(point)  # do these shapes fit together?
                return point
            except Exception as exc:  # try other free lengths
                last_error = exc
        raise ValueError(f"GradExplorer could not draw a random point for inputs "
                         f"{[str(v) for v in self.inputs]} ({last_error}); pass point=")

    def _given_point(self, point: Mapping[Any, Any]) -> dict[Variable, np.ndarray]:
        if not isinstance(point, Mapping):
            raise TypeError(f"GradExplorer: point must map inputs (or their names) to values, "
                            f"got {type(point).__name__}")
        by_name = {v.name: v for v in self.inputs if v.name is not None}
        given: dict[Variable, np.ndarray] = {}
        for key, value in point.items():
            if isinstance(key, str):
                if key not in by_name:
                    raise KeyError(f"point names {key!r}, which is not an input of the cost "
                                   f"(inputs: {', '.join(sorted(by_name)) or 'none named'})")
                key = by_name[key]
            if not isinstance(key, Variable):
                raise TypeError(f"point keys must be Variables or their names, got "
                                f"{type(key).__name__} {key!r}")
            if key not in self.inputs:
                continue  # e.g. an input of a larger expression the cost does not use
            dtype = getattr(key.type, "dtype", None)
            array = np.asarray(value, dtype=None if dtype is None else np.dtype(str(dtype)))
            given[key] = key.type.filter(array, strict=False)
        missing = [str(v) for v in self.inputs if v not in given]
        if missing:
            raise ValueError(f"point gives no value for input(s) {', '.join(missing)}; pass "
                             "point={input: value, ...} for every input of the cost")
        return given

    def _forward_values(self, point: Mapping[Variable, Any] | None = None
                        ) -> dict[Variable, Any]:
        """Every variable of the cost's graph at the point (one compiled function)."""
        import workbench as wb

        point = self.point if point is None else point
        inner = [d["obj"] for _, d in self.nx_graph.nodes(data=True)
                 if isinstance(d["obj"], Variable) and d["obj"].owner is not None]
        values: dict[Variable, Any] = dict(point)
        for var in graph_parts(self.cost)[1]:
            if isinstance(var, SharedVariable):
                values[var] = var.get_value()
        if inner:
            fn = wb.function(self.inputs, inner, mode="FAST_COMPILE",
                             on_unused_input="ignore")
            values.update(zip(inner, fn(*[point[v] for v in self.inputs])))
        return values

    # -- the timeline -------------------------------------------------------------------
    def _timeline(self) -> list[tuple[str, Any]]:
        """Steps and sums in the order the pass made them (as `BackwardTrace.rows`)."""
        sums_after: dict[int, list[Accumulation]] = {}
        for acc in self.trace.accumulations:
            sums_after.setdefault(acc.after_step, []).append(acc)
        entries: list[tuple[str, Any]] = [("sum", a) for a in sums_after.get(0, [])]
        for k, step in enumerate(self.trace.steps):
            entries.append(("step", step))
            entries += [("sum", a) for a in sums_after.get(k + 1, [])]
        return entries

    def _all_contributions(self) -> dict[Variable, list[tuple[int, Variable]]]:
        found: dict[Variable, list[tuple[int, Variable]]] = {}
        for var, g in self.trace.seeds.items():
            if not is_disconnected(g):
                found.setdefault(var, []).append((0, g))
        for position, (kind, item) in enumerate(self.entries, start=1):
            if kind != "step":
                continue
            for inp, g in zip(item.node.inputs, item.input_grads):
                if _has_value(g):
                    found.setdefault(inp, []).append((position, g))
        return found

    # -- rendering ----------------------------------------------------------------------
    def _expanded_changed(self) -> None:
        """Draw the cost's graph again with the opened loops' bodies (no values inside
        them: the forward pass is evaluated on the outer graph), fitted around the loop
        opened last."""
        self.nx_graph = to_networkx(self.cost, expand=self.expanded)
        self._drawings.clear()
        self._show(self.position)
        self._draw_fitted(self.canvas, self._drawing(self.position))

    def _on_canvas_select(self, change: dict[str, Any]) -> None:
        """A clicked loop (or OpFromGraph) becomes what the expand button opens."""
        key = change["new"]
        obj = self.nx_graph.nodes[key]["obj"] if key in self.nx_graph else None
        if holds_inner_graph(obj):
            self._point_expand_button(obj)

    def _show(self, position: int) -> None:
        run_with_status(self.status, lambda: self._render(position),
                        on_error=lambda exc: setattr(
                            self.step_panel, "value",
                            f'<pre class="wb-error">{html.escape(str(exc))}</pre>'))

    def _render(self, position: int) -> None:
        self.position = position
        entry = self.entry
        highlight: dict[str, list[str]] = {}
        if entry is None:
            body = self._start_html()
            highlight["selected"] = [node_key(self.cost)]
            kind, key = "forward", node_key(self.cost)
        elif entry[0] == "step":
            step: BackwardStep = entry[1]
            key, kind = node_key(step.node), "step"
            highlight["selected"] = [key]
            highlight["removed"] = [node_key(o) for o, g in zip(step.node.outputs,
                                                                 step.output_grads)
                                    if _has_value(g)]
            highlight["introduced"] = [node_key(i) for i, g in zip(step.node.inputs,
                                                                    step.input_grads)
                                       if _has_value(g) and node_key(i) in self.nx_graph]
            body = self._step_html(step)
        else:
            acc: Accumulation = entry[1]
            key, kind = node_key(acc.variable), "sum"
            highlight["selected"] = [key]
            highlight["introduced"] = list(dict.fromkeys(
                node_key(self.entries[p - 1][1].node)
                for p, _ in self.contributions(acc.variable) if p > 0))
            body = self._sum_html(acc)
        label = self.nx_graph.nodes[key]["label"] if key in self.nx_graph else ""
        self.nav.label.value = (
            f"<span class='wb-step-current' data-position='{position}' data-kind='{kind}' "
            f"data-node='{key}' data-label='{html.escape(label)}'>"
            f"{position} of {len(self.entries)}: {kind}</span>")
        self.step_panel.value = (
            f'<div class="wb-grad-step-body" data-position="{position}" data-kind="{kind}" '
            f'data-node="{key}" data-label="{html.escape(label)}" '
            f'data-received="{",".join(highlight.get("removed", []))}" '
            f'data-produced="{",".join(highlight.get("introduced", []))}">{body}</div>')
        self.svg.graph = self._drawing(position)
        self.svg.highlight = {k: kind for kind, keys in highlight.items() for k in keys}
        self.so_far.value = self._so_far_html(position)
        if position == len(self.entries):  # the end: the gradient vs finite differences
            if self.check is None:
                try:
                    self._run_check()
                except Exception as exc:  # shown, not raised: stepping must go on
                    self._show_check_error(exc)
            else:
                self.check_output.value = self._check_html
        else:
            self.check_output.value = ""

    def derivative_title(self) -> str:
        """`d cost / d x, d w`: the cost by its name (or a short formula)."""
        cost = graph_title([self.cost], limit=40)
        return f"d {cost} / " + ", ".join(f"d {graph_title([v], limit=24)}" for v in self.wrt)

    def _name(self, var: Variable) -> str:
        """`x`, or `[id C] tanh(x * w)` for an unnamed intermediate."""
        if var.name is not None:
            return var.name
        key = node_key(var)
        label = self.nx_graph.nodes[key]["label"] if key in self.nx_graph else "?"
        text = _formula(var, 50)
        return f"[id {label}] {text}" if var.owner is not None else text

    def _start_html(self) -> str:
        seed_rows = [(self._name(v), _formula(g, 40), _brief(self.value(g)))
                     for v, g in self.trace.seeds.items() if _has_value(g)]
        return ("<b>position 0: the forward pass</b><div>Every variable has its value at the "
                "point (table below). The backward pass starts from the seed "
                "d cost / d cost = 1 and visits the nodes in reverse order.</div>"
                + html_table(["seeded variable", "gradient", "value"], seed_rows,
                             css="wb-table wb-seeds"))

    def _step_html(self, step: BackwardStep) -> str:
        position = self.position
        node = step.node
        key = node_key(node)
        label = self.nx_graph.nodes[key]["label"] if key in self.nx_graph else "?"
        received = []
        for j, (out, g) in enumerate(zip(node.outputs, step.output_grads)):
            value = _brief(self.value(g)) if _has_value(g) else _marker(g)
            received.append((f"output {j}: {self._name(out)}", _brief(self.value(out)),
                             _formula(g, 44) if _has_value(g) else _marker(g), value))
        produced = []
        uses: dict[Variable, int] = {}
        for inp in node.inputs:
            uses[inp] = uses.get(inp, 0) + 1
        for i, (inp, g) in enumerate(zip(node.inputs, step.input_grads)):
            if g is None:
                produced.append((f"input {i}: {self._name(inp)}", "-", "not needed", ""))
                continue
            if not _has_value(g):
                produced.append((f"input {i}: {self._name(inp)}", "-", _marker(g), ""))
                continue
            terms = self.contributions(inp)
            # the k-th term this step gave `inp` is contribution `number` of all of them
            k = sum(1 for j in range(i) if node.inputs[j] is inp
                    and _has_value(step.input_grads[j]))
            mine = [n for n, (p, _) in enumerate(terms, 1) if p == position]
            note = (f"contribution {mine[k]} of {len(terms)} to {self._name(inp)}"
                    if k < len(mine) else "")
            if uses[inp] > 1:
                note += f" (used {uses[inp]} times by this node)"
            produced.append((f"input {i}: {self._name(inp)}", _brief(self.value(g)),
                             _formula(g, 44), note))
        return (f"<b>step: the grad of {html.escape(str(node.op))} [id {label}] ran</b>"
                + html_table(["output", "forward value", "gradient received", "its value"],
                             received, css="wb-table wb-received",
                             caption="received (d cost / d output)")
                + html_table(["input", "term value", "term", "where it goes"], produced,
                             css="wb-table wb-produced",
                             caption="produced (a term of d cost / d input)"))

    def _sum_html(self, acc: Accumulation) -> str:
        terms = self.contributions(acc.variable)
        rows = []
        for n, (p, t) in enumerate(terms, 1):
            origin = ("seed" if p == 0 else
                      f"position {p}: grad of {self.entries[p - 1][1].node.op}")
            rows.append((f"term {n}", origin, _brief(self.value(t))))
        rows.append(("total", "sum of the terms", _brief(self.value(acc.total))))
        return (f"<b>sum: {html.escape(self._name(acc.variable))} is used "
                f"{len(acc.terms)} times, so its gradient is the sum of {len(acc.terms)} "
                "contributions</b>"
                + html_table(["", "from", "value"], rows, css="wb-table wb-sum"))

    def _running_sums(self, position: int) -> dict[Variable, tuple[int, np.ndarray]]:
        """Per variable: how many gradient terms it received up to `position`, and their sum."""
        sums = {}
        for var, terms in self._contributions.items():
            got = [t for p, t in terms if p <= position]
            if got:
                sums[var] = (len(got), sum(np.asarray(self.value(t), dtype=np.float64)
                                           for t in got))
        return sums

    def _drawing(self, position: int) -> dict[str, Any]:
        """The graph with forward values and the gradients so far inside the nodes; laid
        out once with the final gradients, so no box moves from one step to the next."""
        show = self.values_toggle.value
        if show not in self._drawings:
            final = {v: total for v, (_, total) in self._running_sums(len(self.entries)).items()}
            self._drawings[show] = graph_data(self.nx_graph, values=self.values, grads=final,
                                              show_values=show, merge=False)
        grads = {v: total for v, (_, total) in self._running_sums(position).items()}
        return relabel(self._drawings[show], self.nx_graph, values=self.values, grads=grads,
                       show_values=show)

    def _so_far_html(self, position: int) -> str:
        rows = []
        sums = self._running_sums(position)
        for var, terms in self._contributions.items():
            if var not in sums:
                continue
            count, total = sums[var]
            summed = any(e[0] == "sum" and e[1].variable is var
                         for e in self.entries[:position])
            state = (f"{count} of {len(terms)} terms"
                     + (", summed" if summed else "")
                     + (" — complete" if count == len(terms) else ""))
            name = self._name(var) + (" (wrt)" if var in self.wrt else "")
            rows.append((name, state, _brief(total)))
        css = "wb-table wb-sofar"
        return ("<b>gradients so far</b> (contributions received up to this position)"
                + html_table(["variable", "terms", "running sum"], rows, css=css))

    def _forward_html(self) -> str:
        rows = []
        for key in nx.topological_sort(self.nx_graph):
            data = self.nx_graph.nodes[key]
            obj = data["obj"]
            if isinstance(obj, Apply):
                continue
            rows.append((data["label"], self._name(obj), data["kind"], _brief(self.value(obj))))
        return html_table(["id", "variable", "kind", "value"], rows, css="wb-table wb-forward")

    # -- the finite-difference check ----------------------------------------------------
    def _run_check(self) -> GradCheck:
        from workbench.core.gradcheck import (
            DEFAULT_STEPS,
            DTYPE_NARROWNESS,
            GradientError,
            numeric_grad,
            verify_grad,
        )
        from workbench.core.tensor.variable import constant

        kinds = [str(getattr(w.type, "dtype", "")) for w in self.wrt]
        for w, kind in zip(self.wrt, kinds):
            if kind not in DEFAULT_STEPS:
                raise TypeError(f"finite differences need float variables; {w} has type "
                                f"{w.type}")
        fixed = {v: constant(self.point[v]) for v in self.inputs if v not in self.wrt}
        points = [np.asarray(self.value(w)).astype(w.type.dtype.numpy) for w in self.wrt]
        # the step verify_grad would take: the narrowest float among the wrt and the cost
        narrowest = max((k for k in [*kinds, str(self.cost.type.dtype)] if k in DTYPE_NARROWNESS),
                        key=DTYPE_NARROWNESS.index)

        def fun(*xs: Variable) -> Variable:
            return clone_replace(self.cost, {**fixed, **dict(zip(self.wrt, xs))})

        import workbench as wb

        symbolic_inputs = [w.type() for w in self.wrt]
        f_cost = wb.function(symbolic_inputs, fun(*symbolic_inputs), mode="FAST_COMPILE")
        numeric = numeric_grad(lambda *xs: float(f_cost(*xs)), points, DEFAULT_STEPS[narrowest])
        symbolic = [np.asarray(self.value(g), dtype=np.float64) for g in self.grads]
        errors = [float(np.max(np.abs(s - n))) if s.size else 0.0
                  for s, n in zip(symbolic, numeric)]
        try:
            verify_grad(fun, points, rng=0)
            passed, message = True, "verify_grad passed: the gradient matches finite differences"
        except GradientError as exc:
            passed, message = False, str(exc)
        self.check = GradCheck(symbolic, numeric, errors, passed, message)
        rows = [(self._name(w), _brief(s), _brief(n), f"{e:.2e}")
                for w, s, n, e in zip(self.wrt, symbolic, numeric, errors)]
        self._check_html = self.check_output.value = (
            f'<div class="wb-check-body" data-ok="{str(passed).lower()}">'
            "<b>the gradient vs central finite differences</b>"
            + html_table(["wrt", "gradient (backward pass)", "finite differences",
                          "max |diff|"], rows, css="wb-table wb-fd")
            + pre(message, "wb-verify-grad") + "</div>")
        return self.check

    def _show_check_error(self, exc: BaseException) -> None:
        self.check_output.value = (f'<div class="wb-check-body" data-ok="error">'
                                   f'<pre class="wb-error">{html.escape(str(exc))}</pre></div>')


def _loops_written_out(cost: Variable, wrt: list[Variable], max_steps: int) -> Variable:
    """`cost` with its short loops written out step by step (core/scan/unroll.py), so the
    backward pass shows one step per iteration; unchanged if that would lose a `wrt`
    (one computed inside the written-out part)."""
    from workbench.core.graph.basic import ancestors
    from workbench.core.scan import unroll

    written = unroll(cost, max_steps)
    if written is cost:
        return cost
    reached = set(ancestors([written]))
    return written if all(v in reached for v in wrt) else cost


def _has_value(g: Any) -> bool:
    return isinstance(g, Variable) and not is_disconnected(g) and not is_null(g)


def _marker(g: Any) -> str:
    if g is None:
        return "-"
    if is_disconnected(g):
        return "disconnected"
    if is_null(g):
        return f"undefined ({getattr(g.type, 'why_null', '')})"
    return ""


def _formula(var: Variable, limit: int) -> str:
    try:
        text = pprint(var).splitlines()[0]
    except Exception:  # printing is best effort: a formula is only a hint here
        text = str(var)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _brief(value: Any) -> str:
    if value is None:
        return "-"
    array = np.asarray(value)
    text = np.array2string(array, threshold=12, edgeitems=3, precision=4,
                           suppress_small=True)
    return " ".join(text.split())


def _count(n: int, noun: str) -> str:
    """`1 sum`, `3 sums`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
