"""Write the notebooks the browser tests open (stored without outputs).

Run from the repository root after changing a cell:
    python tests/widgets/browser/notebooks/make_notebooks.py
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent

GRAPH_VIEW = '''\
import numpy as np
import workbench.tensor as wt

from workbench.widgets import GraphView

x = wt.dvector("x")
w = wt.dvector("w")
y = wt.tanh(x * w).sum() + (x ** 2).mean()
y.name = "y"
view = GraphView(y, point={x: np.array([0.5, -1.0, 2.0]), w: np.array([1.0, 2.0, 3.0])})
view
'''

GRAPH_VIEW_LOGISTIC = '''\
import ipywidgets as widgets

from workbench.examples import get_example
from workbench.widgets import GraphView

view = GraphView(get_example("logistic_regression"))
# what the kernel sees: the selection clicked in the browser
echo = widgets.Label("kernel: nothing selected")
echo.add_class("wb-kernel-echo")
view.canvas.observe(lambda change: setattr(echo, "value", f"kernel: selected {view.selected}"),
                    names="selected")
widgets.VBox([view, echo])
'''

GRAPH_VIEW_OP_FROM_GRAPH = '''\
import workbench.tensor as wt

import workbench as wb
from workbench.widgets import GraphView

x, w, b = wt.dmatrix("x"), wt.dmatrix("w"), wt.dvector("b")
dense_layer = wb.OpFromGraph([x, w, b], [wt.tanh(x @ w + b)], name="dense_layer")
X, W1, b1, W2 = wt.dmatrix("X"), wt.dmatrix("W1"), wt.dvector("b1"), wt.dmatrix("W2")
scores = dense_layer(X, W1, b1) @ W2
cost = (scores ** 2).mean()
cost.name = "cost"
view = GraphView(cost)
view
'''

PROFILE_PANEL = '''\
import workbench.tensor as wt

from workbench.widgets import ProfilePanel

x = wt.dmatrix("x")
w = wt.dmatrix("w")
y = wt.tanh(x @ w)
panel = ProfilePanel(y, input_shapes={"x": (200, 50), "w": (50, 20)}, calls=5)
panel
'''

REWRITE_STEPPER_LOOP = '''\
import numpy as np
import workbench.tensor as wt

import workbench as wb
from workbench.widgets import RewriteStepper

x = wt.dvector("x")
w = wt.dscalar("w")
h, _ = wb.scan(lambda x_t, h_prev: wt.tanh(h_prev * w + x_t), sequences=x,
               outputs_info=np.float64(0), name="rnn")
stepper = RewriteStepper(h * 2.0)
stepper.last()
stepper
'''

GRAPH_VIEW_LOOP = '''\
import numpy as np
import workbench.tensor as wt

import workbench as wb
from workbench.widgets import GraphView

x = wt.dvector("x")
w = wt.dscalar("w")
h, _ = wb.scan(lambda x_t, h_prev: wt.tanh(h_prev * w + x_t), sequences=x,
               outputs_info=np.float64(0), name="rnn")
h.name = "h"
view = GraphView(h, point={x: np.array([0.5, -1.0, 2.0]), w: 0.8})
view
'''

# the loop of tutorial 07: an RNN reading a noisy sine wave, predicting its next value
RNN_07 = '''\
import numpy as np
import workbench.tensor as wt

import workbench as wb

rng = np.random.default_rng(0)
hidden = 8
t = np.linspace(0, 6 * np.pi, 61)
wave = np.sin(t) + 0.05 * rng.normal(size=t.size)
inputs, targets = wave[:-1, None], wave[1:]
x = wt.dmatrix("x")
h0 = wt.dvector("h0")
W = wb.shared(rng.normal(size=(1, hidden)) * 0.5, name="W")
U = wb.shared(rng.normal(size=(hidden, hidden)) * 0.3, name="U")
b = wb.shared(np.zeros(hidden), name="b")
V = wb.shared(rng.normal(size=hidden) * 0.3, name="V")


def step(x_t, h_prev, W, U, b, V):
    h = wt.tanh(wt.dot(x_t, W) + wt.dot(h_prev, U) + b)
    return h, wt.dot(h, V)


(hs, predictions), _ = wb.scan(step, sequences=x, outputs_info=[h0, None],
                               non_sequences=[W, U, b, V], name="rnn")
y = wt.dvector("y")
loss = ((predictions - y) ** 2).mean()
'''

GRAPH_VIEW_RNN = '''\
from workbench.widgets import GraphView

view = GraphView(loss)
view
'''

# its rewrites, the last step shown; and its BPTT at the tutorial's data
REWRITE_STEPPER_RNN = '''\
from workbench.widgets import RewriteStepper

stepper = RewriteStepper(loss)
stepper.last()
stepper
'''

GRAD_EXPLORER_RNN = '''\
from workbench.widgets import GradExplorer

explorer = GradExplorer(loss, [W, U, b, V], point={x: inputs, h0: np.zeros(hidden), y: targets})
explorer
'''


def notebook(title: str, *code: str) -> nbformat.NotebookNode:
    nb = new_notebook(cells=[new_markdown_cell(title), *map(new_code_cell, code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


NOTEBOOKS = {
    "graph_view.ipynb": notebook("# GraphView\nPick a node to see its details and value.",
                                 GRAPH_VIEW),
    "graph_view_logistic.ipynb": notebook(
        "# GraphView of the logistic-regression cost", GRAPH_VIEW_LOGISTIC),
    "graph_view_loop.ipynb": notebook(
        "# GraphView of a loop\nSelect the loop, then expand it into its body.",
        GRAPH_VIEW_LOOP),
    "graph_view_rnn.ipynb": notebook(
        "# GraphView of tutorial 07's RNN\nSelect the loop rnn, then expand it into its body.",
        RNN_07, GRAPH_VIEW_RNN),
    "graph_view_op_from_graph.ipynb": notebook(
        "# GraphView of an MLP with a dense_layer box\nSelect it and press expand dense_layer.",
        GRAPH_VIEW_OP_FROM_GRAPH),
    "rewrite_stepper_rnn.ipynb": notebook(
        "# RewriteStepper of tutorial 07's RNN\nPress expand loop to see its body on both sides.",
        RNN_07, REWRITE_STEPPER_RNN),
    "grad_explorer_rnn.ipynb": notebook(
        "# GradExplorer of tutorial 07's RNN\nPress expand loop to see its body.",
        RNN_07, GRAD_EXPLORER_RNN),
    "rewrite_stepper_loop.ipynb": notebook(
        "# RewriteStepper of a loop\nPress expand loop to see its body on both sides.",
        REWRITE_STEPPER_LOOP),
    "profile_panel.ipynb": notebook("# ProfilePanel\nChoose shapes and calls, then Run.",
                                    PROFILE_PANEL),
}


def main() -> None:
    for name, nb in NOTEBOOKS.items():
        nbformat.write(nb, HERE / name)
        print(HERE / name)


if __name__ == "__main__":
    main()
