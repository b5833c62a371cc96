"""The nodes of a graph and the ways to walk it.

A graph is bipartite: `Variable`s (data) and `Apply` nodes (an `Op` applied to
input Variables, producing output Variables). A Variable points at the Apply that
computed it through `owner`; an Apply points at its `inputs` and `outputs`.
Nothing here knows about tensors or linkers.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import count
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.core.graph.utils import SourceLocation, user_source_location

if TYPE_CHECKING:
    from workbench.core.graph.op import Op
    from workbench.core.graph.type import Type

_variable_ids = count()


class Variable:
    """A datum in a graph: a value of `type`, produced by `owner.outputs[index]`.

    `owner` is None for graph inputs. `name` is only for printing. `tag` holds
    free-form annotations (e.g. `tag.source`, the user's file:line that created it).
    """

    __slots__ = ("type", "owner", "index", "name", "tag", "auto_name", "_eval_cache")

    def __init__(
        self,
        type: Type,
        owner: Apply | None = None,
        index: int | None = None,
        name: str | None = None,
    ) -> None:
        self.type = type
        self.owner = owner
        self.index = index
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Variable name must be a str or None, got {type_name(name)}")
        self.name = name
        self.auto_name = f"auto_{next(_variable_ids)}"
        self.tag = SimpleNamespace(source=user_source_location(skip=1))
        self._eval_cache: dict | None = None

    # -- printing -------------------------------------------------------------
    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        if self.owner is not None:
            return f"{self.owner.op}.{self.index}"
        return f"<{self.type}>"

    def __repr__(self) -> str:
        return str(self)

    @property
    def source(self) -> SourceLocation | None:
        """Where in the user's code this Variable was created, if recorded."""
        return getattr(self.tag, "source", None)

    # -- graph helpers --------------------------------------------------------
    def clone(self, name: str | None = None) -> Variable:
        """A new Variable of the same type and name with no owner (tags are copied)."""
        cp = self.__class__.__new__(self.__class__)
        Variable.__init__(cp, self.type, None, None, self.name if name is None else name)
        cp.tag = SimpleNamespace(**vars(self.tag))
        return cp

    def get_parents(self) -> list[Apply]:
        return [self.owner] if self.owner is not None else []

    def transfer(self, target: str) -> Variable:
        """This Variable moved to `target` (e.g. "cpu", "gpu") by a registered transfer.

        Each function given to `register_transfer` is asked in turn; the first that
        returns a Variable wins. Raises ValueError if no function knows the target.
        """
        for transfer_fn in reversed(_transfer_functions):
            moved = transfer_fn(self, target)
            if moved is not None:
                return moved
        raise ValueError(
            f"no registered transfer can move {self} (type {self.type}) to target {target!r}"
        )

    def eval(self, inputs_to_values: Mapping[Variable, Any] | None = None) -> Any:
        """Evaluate this Variable, compiling a function for it once per set of inputs.

        `inputs_to_values` maps the graph's inputs (Variables) to values; values of
        inputs this Variable does not depend on are ignored (``grad(x, x)`` is the
        constant 1, and ``grad(x, x).eval({x: 12})`` gives it).
        """
        from workbench.core.compile.function import function

        inputs_to_values = dict(inputs_to_values or {})
        inputs = tuple(sorted(inputs_to_values, key=lambda v: v.auto_name))
        if self._eval_cache is None:
            self._eval_cache = {}
        fn = self._eval_cache.get(inputs)
        if fn is None:
            fn = function(list(inputs), self, on_unused_input="ignore")
            self._eval_cache[inputs] = fn
        return fn(*[inputs_to_values[v] for v in inputs])


_transfer_functions: list[Callable[[Variable, str], Variable | None]] = []


def register_transfer(fn: Callable[[Variable, str], Variable | None]) -> None:
    """Register `fn(variable, target)` returning the transferred Variable or None.

    The returned Variable may be the input itself when no transfer is needed.
    """
    _transfer_functions.append(fn)


class Constant(Variable):
    """A Variable whose value (`data`) is fixed when the graph is built.

    The data is filtered through the type and must never be modified. Equal
    constants of equal types share a `signature`, which lets merging unify them.
    """

    __slots__ = ("data", "_signature")

    def __init__(self, type: Type, data: Any, name: str | None = None) -> None:
        super().__init__(type, None, None, name)
        self.data = type.filter(data)
        self._signature: Any = None

    def signature(self) -> Any:
        """A hashable key equal for constants of equal type and equal value."""
        if self._signature is None:
            self._signature = (self.type, data_signature(self.data))
        return self._signature

    def equals(self, other: Any) -> bool:
        return isinstance(other, Constant) and self.signature() == other.signature()

    @property
    def value(self) -> Any:
        return self.data

    def clone(self, name: str | None = None) -> Constant:
        """Constants are immutable: the copy shares the data."""
        cp = self.__class__.__new__(self.__class__)
        Variable.__init__(cp, self.type, None, None, self.name if name is None else name)
        cp.data = self.data
        cp._signature = self._signature
        cp.tag = SimpleNamespace(**vars(self.tag))
        return cp

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        return f"{type(self).__name__}{{{short_data_repr(self.data)}}}"


def data_signature(data: Any) -> Any:
    """A hashable summary of a constant value, exact for small and large arrays."""
    if isinstance(data, np.ndarray):
        contiguous = np.ascontiguousarray(data)
        if contiguous.nbytes <= 64:
            payload: Any = contiguous.tobytes()
        else:
            payload = hashlib.sha1(contiguous.view(np.uint8).reshape(-1)).hexdigest()
        return ("ndarray", str(data.dtype), data.shape, payload)
    if isinstance(data, np.generic):
        return ("npscalar", str(data.dtype), data.tobytes())
    try:
        hash(data)
    except TypeError:
        return ("object", id(data))
    return ("value", type(data).__name__, data)


def short_data_repr(data: Any, limit: int = 30) -> str:
    if isinstance(data, np.ndarray):
        if data.ndim == 0:
            text = repr(data.item())
        else:
            text = np.array2string(data, separator=", ", threshold=6, edgeitems=2)
            text = " ".join(text.split())
    else:
        text = repr(data)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_value(value: Any) -> str:
    """A short description of a runtime value for error messages."""
    if value is None:
        return "None"
    if isinstance(value, Variable):
        return f"symbolic variable {value} of type {value.type}"
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, np.generic):
        return f"numpy {value.dtype} scalar {value!r}"
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        return f"{type(value).__name__} of shape {shape} and dtype {dtype}"
    return f"{type(value).__name__} {short_data_repr(value, 40)}"


class Apply:
    """The application of `op` to `inputs`, producing `outputs`.

    Creating an Apply sets `owner` and `index` on each output. Ops build Apply
    nodes in `make_node`; users reach them through `variable.owner`.
    """

    __slots__ = ("op", "inputs", "outputs", "tag", "__weakref__")

    def __init__(self, op: Op, inputs: Sequence[Variable], outputs: Sequence[Variable]) -> None:
        self.op = op
        self.inputs: list[Variable] = []
        for position, variable in enumerate(inputs):
            if not isinstance(variable, Variable):
                raise TypeError(
                    f"input {position} of {op} must be a Variable, got {type_name(variable)}"
                )
            self.inputs.append(variable)
        self.outputs: list[Variable] = []
        for index, output in enumerate(outputs):
            if not isinstance(output, Variable):
                raise TypeError(
                    f"output {index} of {op} must be a Variable, got {type_name(output)}"
                )
            if output.owner is None:
                output.owner = self
                output.index = index
            elif output.owner is not self or output.index != index:
                raise ValueError(f"output {index} of {op} already belongs to another Apply")
            self.outputs.append(output)
        self.tag = SimpleNamespace()

    def __str__(self) -> str:
        return f"{self.op}({', '.join(str(i) for i in self.inputs)})"

    def __repr__(self) -> str:
        return str(self)

    @property
    def nin(self) -> int:
        return len(self.inputs)

    @property
    def nout(self) -> int:
        return len(self.outputs)

    def default_output(self) -> Variable:
        """The output that `op(...)` returns when it returns a single Variable."""
        index = self.op.default_output
        if index is None:
            if len(self.outputs) != 1:
                raise ValueError(f"{self.op} has {len(self.outputs)} outputs and no default")
            return self.outputs[0]
        return self.outputs[index]

    @property
    def out(self) -> Variable:
        return self.default_output()

    def get_parents(self) -> list[Variable]:
        return list(self.inputs)

    def clone(self) -> Apply:
        """A copy with the same inputs and fresh, cloned outputs."""
        cp = Apply.__new__(Apply)
        cp.op = self.op
        cp.inputs = list(self.inputs)
        cp.outputs = []
        for index, output in enumerate(self.outputs):
            new = output.clone()
            new.owner, new.index = cp, index
            cp.outputs.append(new)
        cp.tag = SimpleNamespace(**vars(self.tag))
        return cp

    def clone_with_new_inputs(self, inputs: Sequence[Variable], strict: bool = True) -> Apply:
        """A copy applied to `inputs`, rebuilt through `make_node` if types change.

        With `strict`, each new input is first filtered through the old input's type
        (so a narrower type is accepted and a wider one is refused).
        """
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{self.op} takes {len(self.inputs)} inputs, got {len(inputs)}")
        same_types = True
        new_inputs = list(inputs)
        for i, (old, new) in enumerate(zip(self.inputs, inputs)):
            if old.type != new.type:
                if strict:
                    new_inputs[i] = old.type.filter_variable(new)
                    same_types = same_types and new_inputs[i].type == old.type
                else:
                    same_types = False
        if same_types:
            cp = self.clone()
            cp.inputs = new_inputs
            return cp
        return self.op.make_node(*new_inputs)


def type_name(value: Any) -> str:
    return type(value).__name__


# -- traversal -------------------------------------------------------------------


def walk(
    nodes: Iterable[Any],
    expand: Callable[[Any], Iterable[Any] | None],
    bfs: bool = True,
) -> Iterator[Any]:
    """Yield each node reachable from `nodes` through `expand`, once."""
    pending = deque(nodes)
    seen: set[int] = set()
    pop = pending.popleft if bfs else pending.pop
    while pending:
        node = pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        children = expand(node)
        if children:
            pending.extend(children)


def ancestors(
    outputs: Iterable[Variable], blockers: Iterable[Variable] | None = None
) -> Iterator[Variable]:
    """Every Variable that `outputs` depend on (outputs included), stopping at blockers."""
    blocked = set(blockers) if blockers is not None else set()

    def expand(var: Variable) -> Iterable[Variable] | None:
        if var.owner is not None and var not in blocked:
            return reversed(var.owner.inputs)
        return None

    return walk(outputs, expand, bfs=False)


def graph_inputs(
    outputs: Iterable[Variable], blockers: Iterable[Variable] | None = None
) -> list[Variable]:
    """The ownerless Variables (and blockers) the outputs depend on, in a stable order."""
    blocked = set(blockers) if blockers is not None else set()
    return [v for v in ancestors(outputs, blocked) if v.owner is None or v in blocked]


def explicit_graph_inputs(outputs: Iterable[Variable]) -> list[Variable]:
    """The graph inputs that are not constants: what a user must provide."""
    return [v for v in graph_inputs(outputs) if not isinstance(v, Constant)]


def io_toposort(
    inputs: Iterable[Variable],
    outputs: Iterable[Variable],
    orderings: Mapping[Apply, Iterable[Apply]] | None = None,
) -> list[Apply]:
    """The Apply nodes between inputs and outputs, each after the nodes it depends on.

    `orderings` adds extra dependencies (node -> nodes that must run before it),
    as the DestroyHandler needs for inplace operations.
    """
    # A set is used as is (FunctionGraph passes its `variables`: no O(graph) copy per import).
    stop = inputs if isinstance(inputs, (set, frozenset)) else set(inputs)
    order: list[Apply] = []
    done: set[Apply] = set()
    extra = orderings or {}
    # Iterative depth-first post-order: graphs can be far deeper than Python's stack.
    for out in outputs:
        if out.owner is None or out in stop or out.owner in done:
            continue
        stack: list[tuple[Apply, Iterator[Apply]]] = []
        on_stack: set[Apply] = set()

        def predecessors(node: Apply) -> Iterator[Apply]:
            for var in node.inputs:
                if var.owner is not None and var not in stop:
                    yield var.owner
            yield from extra.get(node, ())

        root = out.owner
        stack.append((root, predecessors(root)))
        on_stack.add(root)
        while stack:
            node, preds = stack[-1]
            for pred in preds:
                if pred in done:
                    continue
                if pred in on_stack:
                    raise ValueError(f"the graph has a cycle through {pred}")
                stack.append((pred, predecessors(pred)))
                on_stack.add(pred)
                break
            else:
                stack.pop()
                on_stack.discard(node)
                done.add(node)
                order.append(node)
    return order


def applys_between(inputs: Iterable[Variable], outputs: Iterable[Variable]) -> list[Apply]:
    return io_toposort(inputs, outputs)


def variables_between(inputs: Iterable[Variable], outputs: Iterable[Variable]) -> list[Variable]:
    """Every Variable on a path from inputs to outputs (inputs and outputs included)."""
    inputs = list(inputs)
    result: list[Variable] = list(inputs)
    seen = set(inputs)
    for node in io_toposort(inputs, outputs):
        for var in (*node.inputs, *node.outputs):
            if var not in seen:
                seen.add(var)
                result.append(var)
    return result


def orphans_between(inputs: Iterable[Variable], outputs: Iterable[Variable]) -> list[Variable]:
    """Ownerless Variables (typically constants) the outputs need besides `inputs`."""
    inputs = set(inputs)
    return [v for v in graph_inputs(outputs, inputs) if v not in inputs]


# -- cloning ---------------------------------------------------------------------


def clone_get_equiv(
    inputs: Sequence[Variable],
    outputs: Sequence[Variable],
    copy_inputs: bool = True,
    copy_orphans: bool = True,
    memo: dict[Any, Any] | None = None,
) -> dict[Any, Any]:
    """Clone the graph between inputs and outputs; return the old -> new mapping.

    The mapping covers Variables and Apply nodes. Inputs are cloned only with
    `copy_inputs`; other ownerless Variables (constants) only with `copy_orphans`.
    """
    equiv: dict[Any, Any] = {} if memo is None else memo
    for var in inputs:
        if var not in equiv:
            equiv[var] = var.clone() if copy_inputs else var
    for node in io_toposort(inputs, outputs):
        for var in node.inputs:
            if var not in equiv:
                if var.owner is None:
                    equiv[var] = var.clone() if copy_orphans else var
                else:  # an owner outside the subgraph (cannot happen for a true subgraph)
                    equiv[var] = var
        new_node = node.clone_with_new_inputs([equiv[v] for v in node.inputs], strict=False)
        equiv[node] = new_node
        for old, new in zip(node.outputs, new_node.outputs):
            new.name = old.name
            new.tag = SimpleNamespace(**vars(old.tag))
            equiv[old] = new
    for var in outputs:
        if var not in equiv:
            equiv[var] = var.clone() if copy_orphans or var.owner is not None else var
    return equiv


def clone(
    inputs: Sequence[Variable], outputs: Sequence[Variable], copy_inputs: bool = True
) -> tuple[list[Variable], list[Variable]]:
    """A copy of the graph from inputs to outputs: (new inputs, new outputs)."""
    equiv = clone_get_equiv(inputs, outputs, copy_inputs=copy_inputs)
    return [equiv[v] for v in inputs], [equiv[v] for v in outputs]


def clone_replace(
    outputs: Variable | Sequence[Variable],
    replace: Mapping[Variable, Variable] | Sequence[tuple[Variable, Variable]] | None = None,
) -> Variable | list[Variable]:
    """A copy of `outputs` in which each key of `replace` is replaced by its value.

    The replacements are substituted, not cloned; everything downstream of them is
    rebuilt. Returns a single Variable if a single Variable was given.
    """
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    pairs = list(replace.items()) if isinstance(replace, Mapping) else list(replace or [])
    for old, new in pairs:
        if not isinstance(old, Variable) or not isinstance(new, Variable):
            raise TypeError("clone_replace: replacements must map Variables to Variables")
    memo: dict[Any, Any] = {}
    for old, new in pairs:
        memo[old] = old.type.filter_variable(new) if old.type != new.type else new
    blockers = [old for old, _ in pairs]
    leaves = graph_inputs(outs, blockers)
    for leaf in leaves:
        if leaf not in memo:
            memo[leaf] = leaf
    # Clone only the nodes between the leaves and the outputs.
    for node in io_toposort(leaves, outs):
        new_inputs = [memo.get(v, v) for v in node.inputs]
        if all(a is b for a, b in zip(new_inputs, node.inputs)):
            new_node = node.clone()
        else:
            new_node = node.clone_with_new_inputs(new_inputs, strict=False)
        memo[node] = new_node
        for old, new in zip(node.outputs, new_node.outputs):
            new.name = old.name
            memo[old] = new
    result = [memo.get(v, v) for v in outs]
    return result[0] if single else result
