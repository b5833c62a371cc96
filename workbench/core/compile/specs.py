"""What `function` takes besides graphs: `In` and `Out`, the specifications of an
input (a name, a default value, mutability, an update) and of an output (whether it
may be returned without a copy), and the errors about unused inputs."""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Variable, describe_value
from workbench.core.link.shared import SharedVariable

__all__ = ["In", "Out", "UnusedInputError", "UnusedInputWarning", "default_updates"]


class UnusedInputError(ValueError):
    """An input given to `function` is not needed by any output or update."""


class UnusedInputWarning(UserWarning):
    """Warned for an unused input when `on_unused_input="warn"`."""


class In:
    """An input of a function, with options.

    `value`: default used when the argument is not given (None: no default).
    `name`: the keyword to pass it
    by (default: the variable's name). `borrow`: keep the default value itself
    rather than a copy. `mutable`: Ops may overwrite the value in place.
    `strict` / `allow_downcast`: how arguments are filtered through the type.
    `update`: an expression whose value replaces the default after each call.
    `implicit`: not an argument of the function; the default value is always used.
    """

    def __init__(
        self,
        variable: Variable,
        value: Any = None,
        name: str | None = None,
        borrow: bool = False,
        mutable: bool = False,
        strict: bool = False,
        allow_downcast: bool | None = None,
        update: Variable | None = None,
        implicit: bool = False,
    ) -> None:
        if not isinstance(variable, Variable):
            raise TypeError(f"In() takes a Variable, got {describe_value(variable)}")
        self.variable = variable
        self.value = value
        self.name = name if name is not None else variable.name
        self.borrow = borrow
        self.mutable = mutable
        self.strict = strict
        self.allow_downcast = allow_downcast
        self.update = update
        self.implicit = implicit
        if implicit and value is None and not isinstance(variable, SharedVariable):
            raise ValueError(f"In({variable}, implicit=True) needs a value")

    @property
    def has_default(self) -> bool:
        return self.value is not None

    def __repr__(self) -> str:
        return f"In({self.variable})"


class Out:
    """An output of a function; `borrow=True` allows returning internal storage (the
    value may then alias an input or be overwritten by the next call).

    On the C linker a lent output that is a buffer of its own is written by the next
    call into the array the previous call returned (no new allocation, even while the
    caller holds it), except when that array, or a view of it, is an argument of the
    call."""

    def __init__(self, variable: Variable, borrow: bool = False) -> None:
        if not isinstance(variable, Variable):
            raise TypeError(f"Out() takes a Variable, got {describe_value(variable)}")
        self.variable = variable
        self.borrow = borrow

    def __repr__(self) -> str:
        return f"Out({self.variable})"


def default_updates(exprs: list[Variable], pairs: list[tuple[Any, Variable]]
                    ) -> list[tuple[SharedVariable, Variable]]:
    """The updates a function adds by itself: for each shared variable the graph of
    `exprs` reads that has a `default_update` (a random generator's next state) and no
    update in `pairs`, the pair (variable, default_update). Repeated over the added
    expressions, which may read more such variables."""
    from workbench.core.graph.basic import ancestors, graph_inputs

    updated = {getattr(target, "variable", target) for target, _ in pairs}
    found: list[tuple[SharedVariable, Variable]] = []
    frontier = list(exprs)
    while frontier:
        new = []
        in_graph: set[Variable] | None = None
        for root in graph_inputs(frontier):
            update = getattr(root, "default_update", None)
            choose = getattr(root, "default_update_in", None)  # the update may depend on
            if update is not None and choose is not None:     # the graph (random draws)
                in_graph = in_graph if in_graph is not None else set(ancestors(frontier))
                update = choose(in_graph)
            if update is not None and isinstance(root, SharedVariable) and root not in updated:
                updated.add(root)
                found.append((root, update))
                new.append(update)
        frontier = new
    return found
