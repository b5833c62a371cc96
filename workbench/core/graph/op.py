"""The Op contract: what a computation is, how it builds nodes and how it runs.

An Op is immutable and compared by the attributes it lists in `__props__`
(which generate `__eq__`, `__hash__` and `__str__`). `make_node` checks input
types and returns an `Apply`; `perform` computes on concrete values; `make_thunk`
turns a node into a zero-argument callable over storage cells for a linker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.utils import MethodNotDefined

StorageMap = dict[Variable, list[Any]]
ComputeMap = dict[Variable, list[Any]]


class Thunk:
    """A node's computation bound to its storage cells.

    Calling it computes the node's outputs into their cells and marks them computed.
    A lazy thunk returns the indices of inputs it still needs (or [] when done).
    """

    __slots__ = ("fn", "node", "lazy", "inputs", "outputs", "impl")

    def __init__(
        self,
        fn: Callable[[], Any],
        node: Apply,
        inputs: list[list[Any]],
        outputs: list[list[Any]],
        lazy: bool = False,
        impl: str = "py",
    ) -> None:
        self.fn = fn
        self.node = node
        self.inputs = inputs
        self.outputs = outputs
        self.lazy = lazy
        self.impl = impl

    def __call__(self) -> Any:
        return self.fn()


def _props_str(op: Op) -> str:
    props = op._props_dict()
    if not props:
        return type(op).__name__
    inner = ", ".join(f"{k}={_short(v)}" for k, v in props.items())
    return f"{type(op).__name__}{{{inner}}}"


def _short(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_short(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


class Op:
    """Base class of all Ops. Subclasses define `make_node` and `perform` (or `make_thunk`).

    Optional parts of the contract, with their defaults:
    `__props__` (identity), `default_output` (None), `view_map` / `destroy_map`
    (which outputs alias / overwrite which inputs), `infer_shape`, `flops`,
    `do_constant_folding` (True), `debug_perform`, `grad` / `L_op`, `R_op`,
    `connection_pattern`, `lazy` (False: the Op needs all inputs before running).
    """

    __props__: tuple[str, ...] | None = None
    default_output: int | None = None
    view_map: dict[int, list[int]] = {}
    destroy_map: dict[int, list[int]] = {}
    lazy: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        props = cls.__dict__.get("__props__")
        if props is not None:
            if not isinstance(props, tuple) or not all(isinstance(p, str) for p in props):
                raise TypeError(f"{cls.__name__}.__props__ must be a tuple of attribute names")
            # Generated only where the class itself declares __props__ and did not
            # write its own methods.
            if "__eq__" not in cls.__dict__:
                cls.__eq__ = Op._props_eq  # type: ignore[method-assign]
            if "__hash__" not in cls.__dict__:
                cls.__hash__ = Op._props_hash  # type: ignore[method-assign]
            if "__str__" not in cls.__dict__:
                cls.__str__ = _props_str  # type: ignore[method-assign]

    # -- identity ---------------------------------------------------------------
    def _props(self) -> tuple[Any, ...]:
        if self.__props__ is None:
            raise TypeError(f"{type(self).__name__} does not declare __props__")
        return tuple(getattr(self, name) for name in self.__props__)

    def _props_dict(self) -> dict[str, Any]:
        if self.__props__ is None:
            return {}
        return {name: getattr(self, name) for name in self.__props__}

    def _props_eq(self, other: object) -> bool:
        return type(self) is type(other) and self._props() == other._props()  # type: ignore[attr-defined]

    def _props_hash(self) -> int:
        return hash((type(self), self._props()))

    def __str__(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return str(self)

    @property
    def name(self) -> str:
        return str(self)

    # -- building ---------------------------------------------------------------
    def make_node(self, *inputs: Any) -> Apply:
        """Check the inputs and return an Apply with outputs of the right Types."""
        raise MethodNotDefined(f"{type(self).__name__}.make_node")

    def __call__(self, *inputs: Any, name: str | None = None, return_list: bool = False,
                 **kwargs: Any) -> Any:
        """Build a node and return its default output (or all outputs)."""
        node = self.make_node(*inputs, **kwargs)
        if name is not None:
            if len(node.outputs) == 1:
                node.outputs[0].name = name
            else:
                for i, out in enumerate(node.outputs):
                    out.name = f"{name}_{i}"
        if return_list:
            return list(node.outputs)
        if self.default_output is not None:
            return node.outputs[self.default_output]
        if len(node.outputs) == 1:
            return node.outputs[0]
        return list(node.outputs)

    # -- running ----------------------------------------------------------------
    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        """Compute the outputs of `node` from the input values into `output_storage` cells."""
        raise MethodNotDefined(f"{type(self).__name__}.perform")

    def prepare_node(self, node: Apply, storage_map: StorageMap | None,
                     compute_map: ComputeMap | None, impl: str | None) -> None:
        """Hook called once before thunks are made (e.g. to precompute a ufunc)."""

    def make_py_thunk(
        self,
        node: Apply,
        storage_map: StorageMap,
        compute_map: ComputeMap,
        no_recycling: Sequence[Variable],
        debug: bool = False,
    ) -> Thunk:
        """A thunk that calls `perform` (or `debug_perform` with `debug`)."""
        input_cells = [storage_map[v] for v in node.inputs]
        output_cells = [storage_map[v] for v in node.outputs]
        computed_cells = [compute_map[v] for v in node.outputs]
        perform = self.debug_perform if debug else self.perform

        if len(output_cells) == 1:
            computed = computed_cells[0]

            def thunk() -> None:
                perform(node, [cell[0] for cell in input_cells], output_cells)
                computed[0] = True
        else:

            def thunk() -> None:
                perform(node, [cell[0] for cell in input_cells], output_cells)
                for cell in computed_cells:
                    cell[0] = True

        return Thunk(thunk, node, input_cells, output_cells, lazy=False, impl="py")

    def make_thunk(
        self,
        node: Apply,
        storage_map: StorageMap,
        compute_map: ComputeMap,
        no_recycling: Sequence[Variable],
        impl: str | None = None,
    ) -> Thunk:
        """Return a Thunk computing `node` over the given storage and compute maps.

        `impl` names a backend ('py', 'c', ...); the base Op only has 'py'.
        Linkers for other backends look up their own code before calling this.
        """
        self.prepare_node(node, storage_map, compute_map, impl)
        return self.make_py_thunk(node, storage_map, compute_map, no_recycling)

    def debug_perform(
        self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
    ) -> None:
        """What DebugMode runs instead of `perform`; by default `perform` itself."""
        self.perform(node, inputs, output_storage)

    def outputs_agree(self, node: Apply, expected: Sequence[Any], got: Sequence[Any]
                      ) -> bool | None:
        """Whether two implementations' outputs of `node` are the same result.

        DebugMode asks this before comparing output by output with each Type's
        `values_eq_approx`. None (the default) means "compare each output"; an Op
        whose outputs are not unique (the singular vectors of a rank-deficient
        matrix) answers by comparing what is unique about them.
        """
        return None

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        """Whether a node of this Op with constant inputs may be computed at compile time."""
        return True

    # -- shapes and costs -------------------------------------------------------
    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        """Symbolic output shapes from symbolic input shapes (one tuple per output)."""
        raise MethodNotDefined(f"{type(self).__name__}.infer_shape")

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """Floating point operations for inputs and outputs of the given shapes."""
        raise MethodNotDefined(f"{type(self).__name__}.flops")

    # -- differentiation --------------------------------------------------------
    def grad(self, inputs: Sequence[Variable], output_grads: Sequence[Variable]
             ) -> list[Variable]:
        """Gradient of the cost with respect to each input (a vector-Jacobian product)."""
        raise MethodNotDefined(f"{type(self).__name__}.grad")

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Like `grad`, also given the node's outputs (to reuse, e.g., exp(x))."""
        return self.grad(inputs, output_grads)

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """Jacobian-vector products of each output with the `eval_points`."""
        raise MethodNotDefined(f"{type(self).__name__}.R_op")

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        """[input][output] booleans: does the input's value affect the output's value."""
        return [[True] * len(node.outputs) for _ in node.inputs]
