"""Jupyter widgets (ipywidgets 8) that show what the engine records.

    from workbench.widgets import GraphView, ProfilePanel
    GraphView(y, point={x: np.ones(3)})     # the graph, a node picker, node details
    GraphCanvas(graph_data(to_networkx(y)))  # just the interactive drawing (pan, zoom, click)
    ProfilePanel(get_example("mlp"))        # linkers, shapes, calls -> tables and a chart
    RewriteStepper(y)                       # the rewrite trace, step by step
    GradExplorer(cost, [x, w])              # the recorded backward pass, step by step
    Workbench("exp(x).sum()", variables=["x=float64[?]"])  # all of them, in tabs

Widgets only read what the engine records (graphs, profiles); they never
re-implement layout, rewriting or differentiation. Every interactive part has a
`wb-…` CSS class and a `wb-status` label reads "done" after slow callbacks, so
browser tests can drive them like a person. Callbacks are thread-safe
(JupyterLab runs them on a kernel subshell thread): no pyplot, no `with output:`.
"""

from workbench.widgets.app import Workbench
from workbench.widgets.grad_explorer import GradExplorer
from workbench.widgets.graph_canvas import GraphCanvas, graph_data
from workbench.widgets.graph_view import GraphView
from workbench.widgets.profile_panel import ProfilePanel, parse_shape, profile_with_progress
from workbench.widgets.rewrite_stepper import RewriteStepper

__all__ = ["GradExplorer", "GraphCanvas", "GraphView", "ProfilePanel", "RewriteStepper",
           "Workbench", "graph_data", "parse_shape", "profile_with_progress"]
