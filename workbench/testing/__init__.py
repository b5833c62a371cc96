"""Testing helpers shipped with workbench (like `numpy.testing`).

`workbench.testing.catalog` lists every Op of the library with inputs and a
NumPy reference; the tests of each backend, of autodiff and of the graph file
format enumerate it, so adding an Op without a reference fails a test.
"""

from workbench.testing.catalog import Arg, Case, all_cases, cases_by_family, library_op_classes

__all__ = ["Arg", "Case", "all_cases", "cases_by_family", "library_op_classes"]
