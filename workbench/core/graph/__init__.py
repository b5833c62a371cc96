"""The graph core: Variables, Apply nodes, Ops, Types, FunctionGraph and features."""

from workbench.core.graph.basic import (
    Apply,
    Constant,
    Variable,
    ancestors,
    applys_between,
    clone,
    clone_get_equiv,
    clone_replace,
    explicit_graph_inputs,
    graph_inputs,
    io_toposort,
    orphans_between,
    register_transfer,
    variables_between,
    walk,
)
from workbench.core.graph.features import (
    AlreadyThere,
    Feature,
    History,
    NodeFinder,
    ReplaceValidate,
    Validator,
)
from workbench.core.graph.fg import (
    OUTPUT,
    FunctionGraph,
    InconsistencyError,
    MissingInputError,
)
from workbench.core.graph.inner_graph import InnerGraphOp, inner_graph_nodes
from workbench.core.graph.op import Op, Thunk
from workbench.core.graph.type import (
    DisconnectedType,
    Generic,
    NullType,
    NullTypeGradError,
    Type,
    disconnected_type,
    generic,
    grad_dtype,
    grad_not_implemented,
    grad_undefined,
)
from workbench.core.graph.utils import MethodNotDefined, SourceLocation

__all__ = [
    "OUTPUT", "AlreadyThere", "Apply", "Constant", "DisconnectedType", "Feature",
    "FunctionGraph", "Generic", "History", "InconsistencyError", "InnerGraphOp",
    "MethodNotDefined", "MissingInputError", "NodeFinder", "NullType", "NullTypeGradError", "Op",
    "ReplaceValidate",
    "SourceLocation", "Thunk", "Type", "Validator", "Variable", "ancestors", "applys_between",
    "clone", "clone_get_equiv", "clone_replace", "disconnected_type", "explicit_graph_inputs",
    "generic", "grad_dtype", "grad_not_implemented", "grad_undefined", "graph_inputs",
    "inner_graph_nodes", "io_toposort", "orphans_between",
    "register_transfer", "variables_between", "walk",
]
