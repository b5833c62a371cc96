"""FunctionGraph: a graph with known inputs and outputs that can be changed safely.

It knows every Variable's clients (who uses it), imports and prunes nodes as
inputs are changed, validates replacements through the Types, and lets
features (History, the rewrite trace, the DestroyHandler, ...) observe every
change through callbacks. Rewrites, linkers and the inspector all work on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.core.graph.basic import (
    Apply,
    Constant,
    Variable,
    clone_get_equiv,
    graph_inputs,
    io_toposort,
)
from workbench.core.graph.features import Feature

if TYPE_CHECKING:
    from workbench.core.rewrite.trace import RewriteTrace

#: The client that stands for "this Variable is output number i of the graph".
OUTPUT = "output"

Client = tuple[Any, int]  # (Apply or OUTPUT, input index or output index)


class ClientList(list):
    """A Variable's clients: a list with O(1) membership and removal.

    After merging, one constant can have thousands of clients; removing one by
    `list.remove` would make every replacement cost O(clients). Removal swaps
    the last client into the freed slot (the order stays deterministic).
    """

    __slots__ = ("_position",)

    def __init__(self) -> None:
        super().__init__()
        self._position: dict[Client, int] = {}

    def append(self, client: Client) -> None:
        self._position[client] = len(self)
        super().append(client)

    def remove(self, client: Client) -> None:
        try:
            index = self._position.pop(client)
        except KeyError:
            raise ValueError(f"{client} is not a client") from None
        last = super().pop()
        if index < len(self):
            super().__setitem__(index, last)
            self._position[last] = index

    def __contains__(self, client: object) -> bool:
        return client in self._position


class MissingInputError(ValueError):
    """An output depends on a Variable that is neither an input nor a constant."""

    def __init__(self, message: str, variable: Variable | None = None) -> None:
        super().__init__(message)
        self.variable = variable


class InconsistencyError(Exception):
    """A feature refused a change (e.g. an inplace operation would corrupt a value)."""


class FunctionGraph:
    """A graph from `inputs` to `outputs`, cloned by default so the user's graph is untouched.

    `clients[var]` lists `(node, i)` pairs using `var` as input i, and
    `(OUTPUT, i)` when `var` is output i.

    What the rewrite passes read from a graph is declared here: `rewrite_trace`,
    `backend` (and `backend_fallback`), `mutable_inputs` and `rewrite_strict`; and
    `journal`, the one record of its edits.
    """

    #: The RewriteTrace recording this graph's edits while one is attached (else None).
    rewrite_trace: RewriteTrace | None = None
    #: The backend ("py", "c", "gpu", ...) the graph will be linked for; the casting pass
    #: (`backend_dtypes`) makes every node computable on it. None: not for linking yet.
    backend: str | None = None
    #: The backend to link for instead when `backend` lacks a dtype and no casting mode is
    #: set (a function whose linker was not named falls back to "py"); None: raise.
    backend_fallback: str | None = None
    #: The inputs that Ops may overwrite, when the graph is compiled into a function (the
    #: `protect_inputs` pass keeps every other input intact); None: not compiled.
    mutable_inputs: tuple[Variable, ...] | None = None
    #: While True (DEBUG), a rewrite that raises stops rewriting instead of being skipped.
    rewrite_strict: bool = False
    #: The graph's one journal of input changes, (node, i, old_var, new_var) in order, kept
    #: while a feature needs it (`start_journal`): History's checkpoints and the steps of a
    #: RewriteTrace are marks (lengths) in it. None: not kept.
    journal: list[tuple[Any, int, Variable, Variable]] | None = None
    _journal_users = 0

    def __init__(
        self,
        inputs: Sequence[Variable] | None = None,
        outputs: Sequence[Variable] | None = None,
        features: Iterable[Feature] = (),
        clone: bool = True,
        update_mapping: dict[int, int] | None = None,
    ) -> None:
        if outputs is None:
            raise ValueError("FunctionGraph needs outputs")
        outputs = list(outputs)
        if inputs is None:
            inputs = [v for v in graph_inputs(outputs) if not isinstance(v, Constant)]
        inputs = list(inputs)
        for position, var in enumerate(inputs):
            if not isinstance(var, Variable):
                raise TypeError(f"FunctionGraph input {position} is not a Variable: {var!r}")
            if var.owner is not None:
                raise ValueError(
                    f"FunctionGraph input {position} ({var}) is computed by {var.owner.op}; "
                    "inputs must be graph roots"
                )
        if len(set(inputs)) != len(inputs):
            raise ValueError("FunctionGraph inputs must be distinct Variables")
        if clone:
            equiv = clone_get_equiv(inputs, outputs, copy_inputs=True, copy_orphans=False)
            inputs = [equiv[v] for v in inputs]
            outputs = [equiv[v] for v in outputs]
            self.equiv: dict[Any, Any] | None = equiv
        else:
            self.equiv = None

        self.inputs: list[Variable] = []
        self.outputs: list[Variable] = []
        self.apply_nodes: set[Apply] = set()
        self.variables: set[Variable] = set()
        self.clients: dict[Variable, ClientList] = {}
        self._features: list[Feature] = []
        self.update_mapping = update_mapping or {}
        self.profile: Any = None

        for var in inputs:
            self.add_input(var, check=False)
        for feature in features:
            self.attach_feature(feature)
        for var in outputs:
            self.add_output(var, reason="init")

    # -- building ---------------------------------------------------------------
    def add_input(self, var: Variable, check: bool = True) -> None:
        if check and var in self.variables:
            return
        self.inputs.append(var)
        self._setup_variable(var)
        self.variables.add(var)

    def add_output(self, var: Variable, reason: str | None = None) -> None:
        self.outputs.append(var)
        self.import_var(var, reason=reason)
        self.clients[var].append((OUTPUT, len(self.outputs) - 1))

    def _setup_variable(self, var: Variable) -> None:
        if var not in self.clients:
            self.clients[var] = ClientList()

    def import_var(self, var: Variable, reason: str | None = None) -> None:
        """Bring `var` (and everything it needs) into the graph."""
        if var in self.variables:
            return
        if var.owner is not None:
            self.import_node(var.owner, reason=reason)
        elif not isinstance(var, Constant) and var not in self.inputs:
            raise MissingInputError(_missing_input_message(var), variable=var)
        else:
            self._setup_variable(var)
            self.variables.add(var)

    def import_node(self, node: Apply, check: bool = True, reason: str | None = None) -> None:
        """Bring `node` and its not-yet-known ancestors into the graph."""
        if node in self.apply_nodes:
            return
        new_nodes = io_toposort(self.variables, node.outputs)
        if check:
            for new in new_nodes:
                for var in new.inputs:
                    if (var.owner is None and var not in self.variables
                            and not isinstance(var, Constant)):
                        raise MissingInputError(_missing_input_message(var, new), variable=var)
        for new in new_nodes:
            if new in self.apply_nodes:
                continue
            self.apply_nodes.add(new)
            for out in new.outputs:
                self._setup_variable(out)
                self.variables.add(out)
            for i, var in enumerate(new.inputs):
                if var not in self.variables:
                    self._setup_variable(var)
                    self.variables.add(var)
                self.clients[var].append((new, i))
            self.execute_callbacks("on_import", new, reason)

    def remove_client(self, var: Variable, client: Client, reason: str | None = None,
                      remove_if_empty: bool = True) -> None:
        """Forget that `client` uses `var`; prune nodes that become unused."""
        pending = [(var, client)]
        while pending:
            var, client = pending.pop()
            clients = self.clients[var]
            try:
                clients.remove(client)
            except ValueError:
                continue
            if clients or not remove_if_empty:
                continue
            node = var.owner
            if node is None:
                if var not in self.inputs:
                    self.variables.discard(var)
                    del self.clients[var]
                continue
            if any(self.clients.get(out) for out in node.outputs):
                continue
            # Nobody uses any output of `node`: prune it.
            self.apply_nodes.discard(node)
            for out in node.outputs:
                self.variables.discard(out)
                self.clients.pop(out, None)
            self.execute_callbacks("on_prune", node, reason)
            for i, inp in enumerate(node.inputs):
                pending.append((inp, (node, i)))

    # -- changing ---------------------------------------------------------------
    def change_node_input(
        self, node: Any, i: int, new_var: Variable, reason: str | None = None,
        import_missing: bool = False, check: bool = True,
    ) -> None:
        """Make input `i` of `node` (or output `i` if `node` is OUTPUT) be `new_var`."""
        if node == OUTPUT:
            old_var = self.outputs[i]
            if check and old_var.type != new_var.type:
                new_var = _checked_replacement(old_var, new_var)
            if old_var is new_var:
                return
            self.import_var(new_var, reason=reason)
            self.outputs[i] = new_var
        else:
            old_var = node.inputs[i]
            if old_var is new_var:
                return
            if check and old_var.type != new_var.type:
                new_var = _checked_replacement(old_var, new_var)
            self.import_var(new_var, reason=reason)
            node.inputs[i] = new_var
        self.clients[new_var].append((node, i))
        journal = self.journal
        if journal is not None:
            journal.append((node, i, old_var, new_var))
        self.execute_callbacks("on_change_input", node, i, old_var, new_var, reason)
        self.remove_client(old_var, (node, i), reason=reason)

    def replace(self, var: Variable, new_var: Variable, reason: str | None = None,
                verbose: bool = False, import_missing: bool = False) -> None:
        """Replace every use of `var` by `new_var` (types checked by `filter_variable`)."""
        if var not in self.variables:
            return
        if var.type != new_var.type:
            new_var = _checked_replacement(var, new_var)
        if var is new_var:
            return
        for node, i in list(self.clients[var]):
            self.change_node_input(node, i, new_var, reason=reason, check=False)

    def replace_all(self, pairs: Iterable[tuple[Variable, Variable]], reason: str | None = None
                    ) -> None:
        for var, new_var in pairs:
            self.replace(var, new_var, reason=reason)

    def start_journal(self) -> list[tuple[Any, int, Variable, Variable]]:
        """Start keeping the journal (or join whoever keeps it already); returns it. Each
        call is matched by one `stop_journal`."""
        if self.journal is None:
            self.journal = []
        self._journal_users += 1
        return self.journal

    def stop_journal(self) -> None:
        """One user of the journal is done; the last one stops it."""
        self._journal_users -= 1
        if self._journal_users <= 0:
            self._journal_users = 0
            self.journal = None

    # -- features ---------------------------------------------------------------
    def attach_feature(self, feature: Feature) -> None:
        if feature in self._features:
            return
        attach = getattr(feature, "on_attach", None)
        if attach is not None:
            attach(self)
        self._features.append(feature)

    def remove_feature(self, feature: Feature) -> None:
        try:
            self._features.remove(feature)
        except ValueError:
            return
        detach = getattr(feature, "on_detach", None)
        if detach is not None:
            detach(self)

    @property
    def features(self) -> list[Feature]:
        return list(self._features)

    def execute_callbacks(self, name: str, *args: Any) -> None:
        for feature in self._features:
            callback = getattr(feature, name, None)
            if callback is not None:
                callback(self, *args)

    # -- ordering and checks ----------------------------------------------------
    def orderings(self) -> dict[Apply, list[Apply]]:
        """Extra dependencies from features: node -> nodes that must run before it."""
        merged: dict[Apply, list[Apply]] = {}
        for feature in self._features:
            get = getattr(feature, "orderings", None)
            if get is None:
                continue
            for node, before in get(self).items():
                merged.setdefault(node, []).extend(before)
        return merged

    def toposort(self) -> list[Apply]:
        """The Apply nodes in an order where each comes after its inputs' owners."""
        if len(self.apply_nodes) < 2:
            return list(self.apply_nodes)
        order = io_toposort(self.inputs, self.outputs, self.orderings())
        return order

    def check_integrity(self) -> None:
        """Raise if the bookkeeping (nodes, variables, clients) is inconsistent."""
        nodes = set(io_toposort(self.inputs, self.outputs))
        if nodes != self.apply_nodes:
            missing = nodes - self.apply_nodes
            extra = self.apply_nodes - nodes
            raise ValueError(f"apply_nodes out of date: missing {missing}, extra {extra}")
        for node in nodes:
            for i, var in enumerate(node.inputs):
                if var not in self.variables:
                    raise ValueError(f"input {i} of {node} is not in the graph")
                if (node, i) not in self.clients[var]:
                    raise ValueError(f"{var} does not list ({node}, {i}) among its clients")
            for out in node.outputs:
                if out not in self.variables:
                    raise ValueError(f"output {out} of {node} is not in the graph")
        for var in self.variables:
            for client, i in self.clients[var]:
                if client == OUTPUT:
                    if self.outputs[i] is not var:
                        raise ValueError(f"{var} claims to be output {i} but is not")
                elif client not in self.apply_nodes or client.inputs[i] is not var:
                    raise ValueError(f"{var} has a stale client ({client}, {i})")

    # -- copies -----------------------------------------------------------------
    def clone_get_equiv(self, check_integrity: bool = True, attach_feature: bool = True
                        ) -> tuple[FunctionGraph, dict[Any, Any]]:
        """A copy of this graph and the old -> new mapping of its nodes and variables."""
        if check_integrity:
            self.check_integrity()
        equiv = clone_get_equiv(self.inputs, self.outputs, copy_inputs=True, copy_orphans=False)
        fg = FunctionGraph([equiv[v] for v in self.inputs], [equiv[v] for v in self.outputs],
                           clone=False, update_mapping=dict(self.update_mapping))
        if attach_feature:
            for feature in self._features:
                clone = getattr(feature, "clone", None)
                if clone is not None:
                    fg.attach_feature(clone())
        return fg, equiv

    def clone(self, check_integrity: bool = True) -> FunctionGraph:
        return self.clone_get_equiv(check_integrity)[0]

    def __str__(self) -> str:
        return f"FunctionGraph({', '.join(str(o) for o in self.outputs)})"

    def __repr__(self) -> str:
        return str(self)

    def __len__(self) -> int:
        return len(self.apply_nodes)


def _checked_replacement(old: Variable, new: Variable) -> Variable:
    try:
        return old.type.filter_variable(new)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"cannot replace {old} (type {old.type}) by {new} (type {new.type}): {exc}"
        ) from exc


def _missing_input_message(var: Variable, node: Apply | None = None) -> str:
    where = f" (needed by {node.op})" if node is not None else ""
    name = var.name or str(var)
    text = f"the graph needs input variable {name} of type {var.type}{where}, which was not given"
    source = getattr(var.tag, "source", None)
    if source is not None:
        text += f"; it was created at {source}"
    return text
