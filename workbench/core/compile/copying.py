"""`Function.copy` with PyTensor's options: another function over the same compiled
graph, its shared variables swapped for others (``swap``), its updates dropped
(``delete_updates``), under another name.

Nothing is rewritten again. A swap only changes which storage the copy reads and
updates (the swapped variables must have exactly the same Type). Deleting updates
clones the rewritten graph with its features (the destroy handler among them, so
in-place Ops keep their order) and removes the update outputs; the nodes only they
needed are pruned.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from workbench.core.graph.fg import OUTPUT
from workbench.core.link.shared import SharedVariable

__all__ = ["derived_maker"]


def _checked_swap(maker: Any, swap: Mapping[Any, Any] | None) -> dict[Any, Any]:
    if swap is None:
        return {}
    if not isinstance(swap, Mapping):
        raise TypeError(f"copy: swap must be a dict old shared variable -> new shared "
                        f"variable, got {type(swap).__name__}")
    used = {spec.variable for spec in maker.inputs if isinstance(spec.variable, SharedVariable)}
    checked = {}
    for old, new in swap.items():
        if not isinstance(old, SharedVariable) or old not in used:
            raise ValueError(f"copy: swap names {old!r}, which is not a shared variable of "
                             f"{maker.label}")
        if not isinstance(new, SharedVariable):
            raise TypeError(f"copy: swap maps {old!r} to {new!r} ({type(new).__name__}); a "
                            "shared variable is needed")
        if new.type != old.type:
            raise TypeError(f"copy: swap maps {old!r} of type {old.type} to {new!r} of type "
                            f"{new.type}; the types must be equal")
        checked[old] = new
    return checked


def _without_updates(maker: Any) -> Any:
    """The rewritten graph of `maker` cloned, its update outputs removed."""
    old = maker.fgraph
    fgraph, equiv = old.clone_get_equiv()
    n_out = len(maker.outputs)
    for k in reversed(range(n_out, len(fgraph.outputs))):
        fgraph.remove_client(fgraph.outputs.pop(), (OUTPUT, k))
    fgraph.update_mapping = {}
    if old.mutable_inputs is not None:
        fgraph.mutable_inputs = tuple(equiv[v] for v in old.mutable_inputs)
    for attr in ("backend", "backend_fallback"):
        if attr in vars(old):
            setattr(fgraph, attr, getattr(old, attr))
    return fgraph


def derived_maker(maker: Any, swap: Mapping[Any, Any] | None = None,
                  delete_updates: bool = False, name: str | None = None) -> Any:
    """A FunctionMaker like `maker` with shared variables swapped, updates deleted and
    another name, as asked; its `create()` gives the copied Function."""
    swapped = _checked_swap(maker, swap)
    new = copy.copy(maker)
    if name is not None:
        new.name = name
        new.label = f"function {name!r}"
    if swapped:
        inputs = []
        for spec in maker.inputs:
            if spec.variable in swapped:
                spec = copy.copy(spec)
                spec.variable = swapped[spec.variable]
            inputs.append(spec)
        new.inputs = inputs
        new.updates = [(swapped.get(target, target), expr) for target, expr in maker.updates]
    if delete_updates and maker.updates:
        new.fgraph = _without_updates(maker)
        new.updates = []
        new._alias_plan = new._plan_alias_checks()
    return new
