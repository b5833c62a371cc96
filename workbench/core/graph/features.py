"""Features: observers attached to a FunctionGraph that react to its changes.

A feature defines any of the callbacks `on_attach(fgraph)`, `on_detach(fgraph)`,
`on_import(fgraph, node, reason)`, `on_prune(fgraph, node, reason)`,
`on_change_input(fgraph, node, i, old_var, new_var, reason)`, `validate(fgraph)`
and `orderings(fgraph)`. History can undo changes to a checkpoint (a mark in the
graph's one journal, `fgraph.journal`);
ReplaceValidate replaces variables and undoes the change if a validator objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.core.graph.basic import Apply, Variable
    from workbench.core.graph.fg import FunctionGraph


class AlreadyThere(Exception):
    """The feature (or one of its kind) is already attached to this graph."""


class Feature:
    """Base class of features; every callback is optional."""

    def on_attach(self, fgraph: FunctionGraph) -> None:
        """Called when attached; may add methods to `fgraph` or raise AlreadyThere."""

    def on_detach(self, fgraph: FunctionGraph) -> None:
        """Called when removed; undo what on_attach added."""

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: str | None) -> None:
        """A node entered the graph (each node is imported after its inputs' owners)."""

    def on_prune(self, fgraph: FunctionGraph, node: Apply, reason: str | None) -> None:
        """A node left the graph because nothing used its outputs any more."""

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old_var: Variable,
                        new_var: Variable, reason: str | None) -> None:
        """Input `i` of `node` (or output `i` if node is "output") changed."""

    def orderings(self, fgraph: FunctionGraph) -> dict[Apply, list[Apply]]:
        """Extra ordering constraints: node -> nodes that must run before it."""
        return {}

    def clone(self) -> Feature | None:
        return type(self)()


class History(Feature):
    """`fgraph.checkpoint()` and `fgraph.revert(mark)` over the graph's one journal.

    A checkpoint is a mark in `fgraph.journal` (its length); `revert(mark)` undoes every
    change made since, most recent first, and removes those entries, so the journal
    (which a RewriteTrace reads too) describes the graph as it is.
    """

    def on_attach(self, fgraph: FunctionGraph) -> None:
        if hasattr(fgraph, "checkpoint") or hasattr(fgraph, "revert"):
            raise AlreadyThere("a History is already attached")
        fgraph.start_journal()
        fgraph.checkpoint = lambda: len(fgraph.journal)  # type: ignore[attr-defined,arg-type]
        fgraph.revert = lambda mark: self.revert(fgraph, mark)  # type: ignore[attr-defined]

    def on_detach(self, fgraph: FunctionGraph) -> None:
        del fgraph.checkpoint  # type: ignore[attr-defined]
        del fgraph.revert  # type: ignore[attr-defined]
        fgraph.stop_journal()

    def revert(self, fgraph: FunctionGraph, checkpoint: int) -> None:
        journal = fgraph.journal
        assert journal is not None
        fgraph.journal = None  # the undo removes entries instead of adding some
        try:
            while len(journal) > checkpoint:
                node, i, old_var, new_var = journal.pop()
                fgraph.change_node_input(node, i, old_var, reason="revert", check=False)
        finally:
            fgraph.journal = journal


class Validator(Feature):
    """Gives the graph a `validate()` that asks every feature's `validate` callback."""

    def on_attach(self, fgraph: FunctionGraph) -> None:
        if hasattr(fgraph, "validate"):
            raise AlreadyThere("a Validator is already attached")
        fgraph.validate = lambda: self.validate_(fgraph)  # type: ignore[attr-defined]
        fgraph.consistent = lambda: self.consistent_(fgraph)  # type: ignore[attr-defined]

    def on_detach(self, fgraph: FunctionGraph) -> None:
        del fgraph.validate  # type: ignore[attr-defined]
        del fgraph.consistent  # type: ignore[attr-defined]

    def validate_(self, fgraph: FunctionGraph) -> bool:
        fgraph.execute_callbacks("validate")
        return True

    def consistent_(self, fgraph: FunctionGraph) -> bool:
        try:
            self.validate_(fgraph)
            return True
        except Exception:
            return False


class ReplaceValidate(History, Validator):
    """`fgraph.replace_validate(var, new)`: replace, then undo if validation fails."""

    def on_attach(self, fgraph: FunctionGraph) -> None:
        for attr in ("replace_validate", "replace_all_validate"):
            if hasattr(fgraph, attr):
                raise AlreadyThere(f"fgraph already has {attr}")
        History.on_attach(self, fgraph)
        Validator.on_attach(self, fgraph)
        fgraph.replace_validate = (  # type: ignore[attr-defined]
            lambda var, new, reason=None: self.replace_all_validate(fgraph, [(var, new)], reason)
        )
        fgraph.replace_all_validate = (  # type: ignore[attr-defined]
            lambda pairs, reason=None: self.replace_all_validate(fgraph, pairs, reason)
        )

    def on_detach(self, fgraph: FunctionGraph) -> None:
        History.on_detach(self, fgraph)
        Validator.on_detach(self, fgraph)
        del fgraph.replace_validate  # type: ignore[attr-defined]
        del fgraph.replace_all_validate  # type: ignore[attr-defined]

    def replace_all_validate(self, fgraph: FunctionGraph,
                             pairs: Iterable[tuple[Variable, Variable]],
                             reason: str | None = None) -> None:
        mark = fgraph.checkpoint()  # type: ignore[attr-defined]
        try:
            for var, new in pairs:
                fgraph.replace(var, new, reason=reason)
            fgraph.validate()  # type: ignore[attr-defined]
        except Exception:
            fgraph.revert(mark)  # type: ignore[attr-defined]
            raise


class NodeFinder(Feature):
    """Keeps, per Op class, the set of nodes of that class (for fast rewrite lookups)."""

    def __init__(self) -> None:
        self.by_op_class: dict[type, set[Apply]] = {}

    def on_attach(self, fgraph: FunctionGraph) -> None:
        if hasattr(fgraph, "nodes_of_class"):
            raise AlreadyThere("a NodeFinder is already attached")
        fgraph.nodes_of_class = self.nodes_of_class  # type: ignore[attr-defined]
        for node in fgraph.apply_nodes:
            self.on_import(fgraph, node, "attach")

    def on_detach(self, fgraph: FunctionGraph) -> None:
        del fgraph.nodes_of_class  # type: ignore[attr-defined]

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: str | None) -> None:
        self.by_op_class.setdefault(type(node.op), set()).add(node)

    def on_prune(self, fgraph: FunctionGraph, node: Apply, reason: str | None) -> None:
        self.by_op_class.get(type(node.op), set()).discard(node)

    def nodes_of_class(self, op_class: type) -> list[Apply]:
        found: list[Apply] = []
        for cls, nodes in self.by_op_class.items():
            if issubclass(cls, op_class):
                found.extend(nodes)
        return found
