"""workbench: a symbolic graph engine you can see into.

    import workbench as wb
    import workbench.tensor as wt

    x = wt.dmatrix("x")
    y = wt.exp(x).sum(axis=1)
    wb.dprint(y)
    f = wb.function([x], y)

`workbench` holds the graph-level API (`function`, `shared`, `dprint`, `pprint`,
`ifelse`, the graph classes, `config`); `workbench.tensor` (an alias of
`workbench.core.tensor`) holds the types and every tensor operation.
"""

# ruff: noqa: F401 (the graph-level API is imported in _load and exported through globals())
from __future__ import annotations

import sys
from typing import Any

__version__ = "0.1.0"


def _load() -> None:
    """Import the graph-level API into this module. Deferred to the first attribute
    use so that `import workbench.cli` (the `workbench` command, its --help and
    --version) does not import NumPy, ml_dtypes and the whole engine."""
    from workbench.config import config
    from workbench.core import dtypes
    from workbench.core import random as random
    from workbench.core import tensor as tensor
    from workbench.core.compile import In, Mode, Out, function, shared
    from workbench.core.compile.function import Function
    from workbench.core.compile.op_from_graph import OpFromGraph
    from workbench.core.compile.profiling import ProfileStats, profile
    from workbench.core.derivatives import Lop, Rop, hessian, jacobian
    from workbench.core.grad import (
        BackwardTrace,
        DisconnectedInputError,
        NullTypeGradError,
        consider_constant,
        disconnected_grad,
        disconnected_type,
        grad,
        grad_clip,
        grad_not_implemented,
        grad_undefined,
        zero_grad,
    )
    from workbench.core.gradcheck import GradientError, verify_grad
    from workbench.core.graph import (
        Apply,
        Constant,
        FunctionGraph,
        Op,
        Type,
        Variable,
        clone_replace,
        graph_inputs,
        register_transfer,
    )
    from workbench.core.ifelse import ifelse
    from workbench.core.link.shared import SharedVariable
    from workbench.core.printing import dprint, pprint
    from workbench.core.rewrite import RewriteTrace, rewrite_graph
    from workbench.core.scan import foldl, foldr, map, reduce, scan, until
    from workbench.core.tensor.vectorize import vectorize, vectorize_graph

    globals().update({name: value for name, value in locals().items()})
    # `import workbench.tensor` gives the tensor library (architecture: tensor = core.tensor).
    sys.modules[__name__ + ".tensor"] = tensor


_loading: list[bool] = []


class _TensorAlias:
    """`import workbench.tensor` gives the tensor library, `workbench.core.tensor` itself
    (one module under two names), imported only when asked for."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != __name__ + ".tensor":
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, self)

    def create_module(self, spec: Any) -> Any:
        from workbench.core import tensor

        return tensor

    def exec_module(self, module: Any) -> None:
        """Nothing to run: the module was imported under its own name."""


sys.meta_path.append(_TensorAlias())


def __getattr__(name: str) -> Any:
    if not _loading:  # the first miss loads everything, as an eager import would have
        _loading.append(True)
        _load()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Apply", "Constant", "Function", "FunctionGraph", "In", "Mode", "Op", "OpFromGraph", "Out",
    "ProfileStats",
    "RewriteTrace", "profile",
    "SharedVariable", "Type", "Variable", "__version__", "clone_replace", "config", "dprint",
    "dtypes", "function", "graph_inputs", "ifelse", "pprint", "register_transfer",
    "random", "rewrite_graph", "shared", "vectorize", "vectorize_graph",
    "tensor",
    # loops
    "foldl", "foldr", "map", "reduce", "scan", "until",
    # autodiff
    "BackwardTrace", "DisconnectedInputError", "GradientError", "Lop", "NullTypeGradError",
    "Rop", "consider_constant", "disconnected_grad", "disconnected_type", "grad", "grad_clip",
    "grad_not_implemented", "grad_undefined", "hessian", "jacobian", "verify_grad", "zero_grad",
]  # fmt: skip
