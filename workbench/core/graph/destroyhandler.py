"""DestroyHandler: the feature that keeps inplace operations safe.

An Op that overwrites one of its inputs declares it in `destroy_map`; an Op
whose output shares memory with an input declares it in `view_map`. Both make
values *aliases* of a *root* value (one that is not a view). Destroying any
alias destroys the root's memory, so the handler checks, for every destroyed
root, that:

(a) it is not a graph input (unless listed in `mutable`), and (b) not a
constant; (c) every other reader of any alias can run before the destroyer
(it does not depend on the destroyer's outputs) and no alias is a graph output;
while the graph holds lazy Ops (IfElse), which a lazy VM runs on demand without
the orderings, there may be no other reader at all;
(d) it is destroyed by one node only; and no alias is a read-only view
(`BroadcastTo`, or an Op with ``read_only_view = True``).

`orderings()` then makes every reader of a destroyed value run before its
destroyer. Validation is incremental: only roots touched since the last
`validate` are rechecked, so an inplace pass over a long chain stays linear.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from workbench.core.graph.basic import Constant
from workbench.core.graph.features import AlreadyThere, Feature
from workbench.core.graph.fg import OUTPUT, InconsistencyError

if TYPE_CHECKING:
    from workbench.core.graph.basic import Apply, Variable
    from workbench.core.graph.fg import FunctionGraph

__all__ = [
    "DestroyHandler", "InconsistencyError", "is_read_only_view", "memory_walk", "view_roots",
]  # fmt: skip


def is_read_only_view(node: Apply) -> bool:
    """Whether `node`'s view outputs must never be written (e.g. BroadcastTo)."""
    op = node.op
    return bool(getattr(op, "read_only_view", False))


def memory_walk(var: Variable, through_destroyers: bool = False
                ) -> tuple[list[Variable], list[Variable]]:
    """The one walk along memory declarations: from `var` back through `view_map` (and,
    with `through_destroyers`, `destroy_map`: an in-place output is its input's memory)
    to values that are nobody's view. Returns (every Variable passed, the roots)."""
    passed: list[Variable] = []
    roots: list[Variable] = []
    seen: set[Variable] = set()
    stack = [var]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        passed.append(v)
        node = v.owner
        viewed: list[int] = []
        if node is not None:
            viewed = list(node.op.view_map.get(v.index, ()))
            if through_destroyers:
                viewed += node.op.destroy_map.get(v.index, ())
        if viewed:
            stack.extend(node.inputs[i] for i in viewed)  # type: ignore[union-attr]
        else:
            roots.append(v)
    return passed, roots


def view_roots(var: Variable, through_destroyers: bool = False) -> list[Variable]:
    """The non-view Variables whose memory `var` may share (see `memory_walk`)."""
    return memory_walk(var, through_destroyers)[1]


class DestroyHandler(Feature):
    """Validates destroy_map / view_map declarations and orders readers before destroyers.

    `mutable`: graph inputs that may be overwritten (e.g. with an update).
    Attaching adds `fgraph.destroy_handler` (this object) and, if missing, a
    `validate()` method, so `replace_validate` consults it.
    """

    def __init__(self, mutable: Iterable[Variable] = ()) -> None:
        self.mutable: set[Variable] = set(mutable)
        self.fgraph: FunctionGraph | None = None
        self.destroyers: set[Apply] = set()
        #: lazy nodes (IfElse) in the graph: a lazy VM runs nodes on demand and ignores
        #: orderings, so while there are any, a destroyed value may have no other reader.
        self.lazy_nodes: set[Apply] = set()
        self._dirty: set[Variable] = set()

    def clone(self) -> DestroyHandler:
        return DestroyHandler()

    # -- callbacks ----------------------------------------------------------------
    def on_attach(self, fgraph: FunctionGraph) -> None:
        if getattr(fgraph, "destroy_handler", None) is not None:
            raise AlreadyThere("a DestroyHandler is already attached")
        if self.fgraph is not None:
            raise AlreadyThere("this DestroyHandler is attached to another graph")
        self.fgraph = fgraph
        fgraph.destroy_handler = self  # type: ignore[attr-defined]
        if not hasattr(fgraph, "validate"):
            from workbench.core.graph.features import Validator

            fgraph.attach_feature(Validator())
        for node in fgraph.apply_nodes:
            self.on_import(fgraph, node, "attach")

    def on_detach(self, fgraph: FunctionGraph) -> None:
        del fgraph.destroy_handler  # type: ignore[attr-defined]
        self.fgraph = None
        self.destroyers.clear()
        self.lazy_nodes.clear()
        self._dirty.clear()

    def on_import(self, fgraph: FunctionGraph, node: Apply, reason: Any) -> None:
        if node.op.destroy_map:
            self.destroyers.add(node)
        if getattr(node.op, "lazy", False):
            self.lazy_nodes.add(node)
        for var in node.inputs:
            self._dirty.add(var)

    def on_prune(self, fgraph: FunctionGraph, node: Apply, reason: Any) -> None:
        self.destroyers.discard(node)
        self.lazy_nodes.discard(node)

    def on_change_input(self, fgraph: FunctionGraph, node: Any, i: int, old_var: Variable,
                        new_var: Variable, reason: Any) -> None:
        self._dirty.add(new_var)

    # -- analysis -----------------------------------------------------------------
    def _alias_tree(self, root: Variable) -> tuple[list[Variable], list[tuple[Any, int]],
                                                   list[tuple[Apply, int]]]:
        """Every alias of `root` (views of views ...), the clients reading them, and the
        (node, input index) pairs destroying them."""
        fgraph = self.fgraph
        assert fgraph is not None
        aliases = [root]
        readers: list[tuple[Any, int]] = []
        destroys: list[tuple[Apply, int]] = []
        seen = {root}
        k = 0
        while k < len(aliases):
            var = aliases[k]
            k += 1
            for client, i in fgraph.clients.get(var, ()):
                if client == OUTPUT:
                    readers.append((client, i))
                    continue
                op = client.op
                is_view = False
                for out_index, ins in op.view_map.items():
                    if i in ins:
                        is_view = True
                        out = client.outputs[out_index]
                        if out not in seen:
                            seen.add(out)
                            aliases.append(out)
                destroyed = any(i in ins for ins in op.destroy_map.values())
                if destroyed:
                    destroys.append((client, i))
                elif not is_view:
                    readers.append((client, i))
        return aliases, readers, destroys

    def _readers_before(self, node: Apply) -> list[Apply]:
        """The nodes that must run before destroyer `node`: other readers of what it destroys."""
        before: list[Apply] = []
        for ins in node.op.destroy_map.values():
            for i in ins:
                for root in view_roots(node.inputs[i]):
                    _, readers, _ = self._alias_tree(root)
                    before.extend(c for c, _ in readers if c != OUTPUT and c is not node)
        return before

    def _depends_on(self, node: Apply, target: Apply) -> bool:
        """Whether `node` must run after `target`: it (transitively) uses an output of
        `target`, counting the orderings other destroyers already impose."""
        stack = [node]
        seen: set[Apply] = {node}
        while stack:
            n = stack.pop()
            preds = [v.owner for v in n.inputs if v.owner is not None]
            if n in self.destroyers:
                preds.extend(self._readers_before(n))
            for owner in preds:
                if owner is target:
                    return True
                if owner not in seen:
                    seen.add(owner)
                    stack.append(owner)
        return False

    def _check_destroyable(self, root: Variable, destroyer: Apply) -> None:
        """Raise if `root` is a constant or a graph input not declared mutable."""
        if isinstance(root, Constant):
            raise InconsistencyError(f"{destroyer.op} would overwrite the constant {root}")
        if root.owner is None and root not in self.mutable:
            raise InconsistencyError(
                f"{destroyer.op} would overwrite the graph input {root}; inputs are protected "
                "unless declared mutable"
            )

    def _check_root(self, root: Variable, extra: tuple[Apply, int] | None = None) -> None:
        """Raise if the destroyers of `root`'s aliases are unsafe; `extra` is a
        hypothetical (node, input index) destroy to check before making it."""
        if extra is not None:
            # What no destroy may touch is refused before walking the aliases (a root
            # read by n nodes would make n prechecks cost n each)
            self._check_destroyable(root, extra[0])
        aliases, readers, destroys = self._alias_tree(root)
        if extra is not None:
            readers = [(c, i) for c, i in readers if not (c is extra[0] and i == extra[1])]
            destroys = [extra] + destroys
        if not destroys:
            return
        destroyer_nodes = list(dict.fromkeys(node for node, _ in destroys))
        first = destroyer_nodes[0]
        if len(destroyer_nodes) > 1:
            raise InconsistencyError(
                f"{root} would be destroyed twice, by {destroyer_nodes[0].op} and "
                f"{destroyer_nodes[1].op}; at most one Op may overwrite a value"
            )
        self._check_destroyable(root, first)
        fgraph = self.fgraph
        assert fgraph is not None
        for alias in aliases:
            owner = alias.owner
            if owner is not None and alias is not root and is_read_only_view(owner):
                raise InconsistencyError(
                    f"{first.op} would write into {alias}, a read-only view made by {owner.op}"
                )
        destroyed_vars = {first.inputs[i] for _, i in destroys}
        for client, i in readers:
            if client == OUTPUT:
                raise InconsistencyError(
                    f"{first.op} would overwrite {fgraph.outputs[i]}, which is output {i} of "
                    "the graph (or shares its memory)"
                )
            if client is first:
                if client.inputs[i] in destroyed_vars:
                    continue  # reading the value it overwrites is the Op's own business
                raise InconsistencyError(
                    f"{first.op} overwrites one alias of {root} while reading another "
                    f"({client.inputs[i]})"
                )
            if self.lazy_nodes:
                raise InconsistencyError(
                    f"{first.op} would overwrite {client.inputs[i]}, which {client.op} also "
                    "reads; with lazy Ops in the graph the evaluation order is not fixed"
                )
            if self._depends_on(client, first):
                raise InconsistencyError(
                    f"{client.op} reads {client.inputs[i]} after {first.op} overwrites it "
                    "(it needs the overwriting node's result)"
                )

    # -- the feature API ----------------------------------------------------------
    def validate(self, fgraph: FunctionGraph) -> None:
        """Raise InconsistencyError if some inplace operation is unsafe (see module doc)."""
        dirty, self._dirty = self._dirty, set()
        if not self.destroyers:
            return
        checked: set[Variable] = set()
        for var in dirty:
            if var not in fgraph.variables:
                continue
            for root in view_roots(var):
                if root in checked:
                    continue
                checked.add(root)
                try:
                    self._check_root(root)
                except InconsistencyError:
                    self._dirty.add(root)
                    raise
        # A destroyer's own inputs may have been re-rooted without a dirty mark (e.g. a
        # view Op swapped in above it): they were marked when the destroyer was imported.

    def check_destroy(self, node: Apply, i: int) -> None:
        """Raise InconsistencyError if `node` overwriting its input `i` would be unsafe
        (checked on the current graph, before any change: an inplace rewrite's precheck)."""
        for root in view_roots(node.inputs[i]):
            self._check_root(root, extra=(node, i))

    def check_destroyer(self, node: Apply) -> None:
        """Raise InconsistencyError if destroyer `node`, already in the graph, is unsafe
        (checks the roots of what it overwrites only, so it costs what `validate` does)."""
        for ins in node.op.destroy_map.values():
            for i in ins:
                for root in view_roots(node.inputs[i]):
                    self._check_root(root)

    def validate_all(self) -> None:
        """Check every destroyer from scratch (for tests and debugging)."""
        fgraph = self.fgraph
        assert fgraph is not None
        self._dirty = {node.inputs[i] for node in self.destroyers
                       for ins in node.op.destroy_map.values() for i in ins}
        self.validate(fgraph)

    def orderings(self, fgraph: FunctionGraph) -> dict[Apply, list[Apply]]:
        """destroyer -> the other readers of the value it destroys (they run first)."""
        result: dict[Apply, list[Apply]] = {}
        for node in self.destroyers:
            before = self._readers_before(node)
            if before:
                result[node] = list(dict.fromkeys(before))
        return result
