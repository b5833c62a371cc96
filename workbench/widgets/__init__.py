"""Jupyter widgets (ipywidgets 8) that show what the engine records.

    from workbench.widgets import GraphView, ProfilePanel
    GraphView(y, point={x: np.ones(3)})     # the graph, a node picker, node details
    ProfilePanel(get_example("mlp"))        # linkers, shapes, calls -> tables and a chart

Widgets only read what the engine records (graphs, profiles); they never
re-implement layout, rewriting or differentiation. Every interactive part has a
`wb-…` CSS class and a `wb-status` label reads "done" after slow callbacks, so
browser tests can drive them like a person. Callbacks are thread-safe
(JupyterLab runs them on a kernel subshell thread): no pyplot, no `with output:`.
"""

from workbench.widgets.graph_view import GraphView
from workbench.widgets.profile_panel import ProfilePanel, parse_shape, profile_with_progress

__all__ = ["GraphView", "ProfilePanel", "parse_shape", "profile_with_progress"]
