"""Write the notebooks the RewriteStepper and GradExplorer browser tests open
(stored without outputs; the tests copy them next to the other test notebooks).

Run from the repository root after changing a cell:
    python tests/widgets/browser/stepper_notebooks/make_stepper_notebooks.py
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent

REWRITE_STEPPER = '''\
import workbench.tensor as wt

from workbench.widgets import RewriteStepper

x = wt.dvector("x")
y = wt.log(1 + x) * 2 + wt.exp(x).sum()
stepper = RewriteStepper(y)
stepper
'''

GRAD_EXPLORER = '''\
import numpy as np
import workbench.tensor as wt

from workbench.widgets import GradExplorer

x = wt.dvector("x")
w = wt.dvector("w")
cost = (wt.tanh(x * w) + x * x).sum()  # x is used three times
cost.name = "cost"
explorer = GradExplorer(cost, [x, w], point={x: np.array([1.0, 2.0]), w: np.array([0.5, -0.3])})
explorer
'''

FUSION_STEPPER = '''\
from workbench.examples import get_example
from workbench.widgets import RewriteStepper

stepper = RewriteStepper(get_example("logistic_regression"))
fusion = next(s for s in stepper.trace.steps if s.rewrite == "elemwise_fusion")
stepper.go_to_step(fusion.index)  # the step that fuses 11 nodes into one Composite
stepper
'''

GRAD_X_SIN_X = '''\
import ipywidgets as widgets
import workbench.tensor as wt

from workbench.inspector import node_key
from workbench.widgets import GradExplorer

x = wt.dscalar("x")
y = x * wt.sin(x)
explorer = GradExplorer(y, [x], point={x: 0.7})
keys = widgets.HTML(f"<span class='wb-test-keys' data-x='{node_key(x)}' "
                    f"data-mul='{node_key(y.owner)}'></span>")
widgets.VBox([explorer, keys])
'''


def notebook(title: str, code: str) -> nbformat.NotebookNode:
    cells = [new_markdown_cell(title)] if title else []
    nb = new_notebook(cells=[*cells, new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


NOTEBOOKS = {
    "rewrite_stepper.ipynb": notebook(
        "# RewriteStepper\nStep through the rewrites of `log(1 + x) * 2 + sum(exp(x))`.",
        REWRITE_STEPPER),
    "grad_explorer.ipynb": notebook(
        "# GradExplorer\nThe backward pass of `sum(tanh(x * w) + x * x)`, step by step.",
        GRAD_EXPLORER),
    # no title cell: the widget is the first thing on the page, as at the top of a screen
    "fusion_stepper.ipynb": notebook("", FUSION_STEPPER),
    "grad_x_sin_x.ipynb": notebook("", GRAD_X_SIN_X),
}


def main() -> None:
    for name, nb in NOTEBOOKS.items():
        nbformat.write(nb, HERE / name)
        print(HERE / name)


if __name__ == "__main__":
    main()
