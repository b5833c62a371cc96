"""`function`: compile a graph into a Python callable.

`function(inputs, outputs, updates=..., givens=...)` checks the inputs and
outputs, substitutes `givens`, turns shared variables into implicit inputs,
builds a `FunctionGraph`, applies the mode's rewrites and links it (see
`workbench.core.link`). The resulting `Function` filters each argument through
its input's Type, runs the VM, copies outputs that would alias an input or
another output (unless `Out(borrow=True)`), and applies the updates.

Errors are raised at compile time for what can be known then (a Constant as an
input, an input the outputs need but that was not given, an unused input, an
update of the wrong type) and name the Variable and where the user created it.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import operator
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from workbench.core.compile.backends import get_backend, registered_backends
from workbench.core.compile.mode import Mode, configured_linker, get_linker, get_mode
from workbench.core.compile.specs import (
    In,
    Out,
    UnusedInputError,
    UnusedInputWarning,
    default_updates,
)
from workbench.core.graph.basic import (
    Constant,
    Variable,
    ancestors,
    clone_replace,
    graph_inputs,
)
from workbench.core.graph.destroyhandler import view_roots
from workbench.core.graph.fg import FunctionGraph, MissingInputError
from workbench.core.graph.utils import SourceLocation, user_source_location
from workbench.core.link.shared import SharedVariable, reworded_error
from workbench.core.link.vm import (
    Container,
    Linker,
    copy_value,
    describe_value,
    may_share_memory,
)
from workbench.core.random.type import RandomGeneratorType
from workbench.core.rewrite.rules.inplace import protect_inputs

__all__ = [
    "Function", "FunctionMaker", "In", "MissingInputError", "Out", "UnusedInputError",
    "UnusedInputWarning", "function",
]  # fmt: skip

_MISSING = object()


def function(
    inputs: Sequence[Variable | In],
    outputs: Any = None,
    updates: Any = None,
    givens: Any = None,
    mode: str | Mode | None = None,
    linker: str | Linker | None = None,
    name: str | None = None,
    on_unused_input: str = "raise",
    allow_input_downcast: bool | None = None,
    profile: Any = None,
    trust_input: bool = False,
    no_default_updates: bool = False,
) -> Function:
    """Compile a callable computing `outputs` from `inputs`.

    `inputs`: Variables or `In`s (shared variables are used implicitly).
    `outputs`: a Variable or `Out` (the call returns a value), a list (returns a
    list), a dict name -> Variable (returns a dict) or None. `updates`: a dict or
    list of pairs shared variable -> expression, applied after each call (all
    computed before any is applied). `givens`: pairs or dict Variable ->
    replacement, substituted before compiling. `mode`: a mode name or Mode;
    `linker`: "py", "c", "gpu" or None (the fastest available) overrides the
    mode's. `on_unused_input`: "raise", "warn" or "ignore". Shared variables with a
    `default_update` (random generators of a RandomStream) are updated with it unless
    `updates` names them or `no_default_updates` is True.
    """
    with _gc_paused():
        maker = FunctionMaker(
            inputs, outputs, mode=mode, updates=updates, givens=givens, linker=linker,
            name=name, on_unused_input=on_unused_input,
            allow_input_downcast=allow_input_downcast, profile=profile,
            source=user_source_location(skip=1), no_default_updates=no_default_updates,
        )
        return maker.create(trust_input=trust_input)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while compiling: cloning and linking a
    large graph allocates many objects, and the collections this triggers (each
    traversing the whole heap) took over half the compile time of 20,000-node graphs."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class FunctionMaker:
    """Prepares the graph of a function (checks, givens, rewrites) and creates Functions.

    `inputs`: the `In`s, explicit ones first then implicit ones (shared variables);
    `outputs`: the `Out`s; `updates`: (SharedVariable or In, expression) pairs;
    `fgraph`: the rewritten FunctionGraph whose inputs are those of `inputs` and
    whose outputs are the outputs followed by the update expressions.
    """

    def __init__(
        self,
        inputs: Sequence[Variable | In],
        outputs: Any = None,
        mode: str | Mode | None = None,
        updates: Any = None,
        givens: Any = None,
        linker: str | Linker | None = None,
        name: str | None = None,
        on_unused_input: str = "raise",
        allow_input_downcast: bool | None = None,
        profile: Any = None,
        source: SourceLocation | None = None,
        no_default_updates: bool = False,
    ) -> None:
        if on_unused_input not in ("raise", "warn", "ignore"):
            raise ValueError(
                f"on_unused_input must be 'raise', 'warn' or 'ignore', got {on_unused_input!r}"
            )
        self.name = name
        self.source = source
        self.label = (f"function {name!r}" if name else
                      f"function compiled at {source}" if source else "function")
        self.mode = get_mode(mode)
        # an explicit linker wins over the mode's, which wins over config.linker
        self.linker_spec = linker if linker is not None else self.mode.linker
        if self.linker_spec is None:
            self.linker_spec = configured_linker()
        get_linker(self.linker_spec)  # fail early if unavailable
        self.linker_name = _linker_name(self.linker_spec)
        self.mode = _with_backend_rewrites(self.mode, self.linker_name)
        self.allow_input_downcast = allow_input_downcast
        self.profile = profile
        self.on_unused_input = on_unused_input

        explicit = self._check_inputs(inputs)
        self.outputs, self.return_kind, self.output_keys = self._check_outputs(outputs)
        update_pairs = self._check_updates(updates, explicit)
        if not no_default_updates:
            update_pairs += default_updates(
                [o.variable for o in self.outputs] + [e for _, e in update_pairs], update_pairs)
        replacements = self._check_givens(givens)
        for spec in explicit:  # an intermediate used as input: cut the graph there
            if spec.variable.owner is not None:
                replacements.append((spec.variable, spec.variable.clone()))

        exprs = [o.variable for o in self.outputs] + [e for _, e in update_pairs]
        if replacements and exprs:
            exprs = list(clone_replace(exprs, replacements))
            new_of = dict(replacements)
            for spec in explicit:
                spec.variable = new_of.get(spec.variable, spec.variable)
        implicit = self._implicit_inputs(
            exprs, explicit, [getattr(t, "variable", t) for t, _ in update_pairs])
        self._check_unused(exprs, explicit)
        self.inputs: list[In] = explicit + implicit
        n_out = len(self.outputs)
        self.updates: list[tuple[Any, Variable]] = [
            (target, expr) for (target, _), expr in zip(update_pairs, exprs[n_out:])
        ]
        self.fgraph = FunctionGraph([s.variable for s in self.inputs], exprs)
        # output index -> index of the input it updates (linkers may keep updates in place)
        self.fgraph.update_mapping = {n_out + u: self.inputs_index_of_update(u)
                                      for u in range(len(self.updates))}
        # Ops may overwrite only the inputs marked In(mutable=True); user-made inplace
        # Ops that would overwrite another copy instead (before rewriting, so the
        # rewrites see a consistent graph, and after, in case one moved a destroyer)
        mutable = [v for v, s in zip(self.fgraph.inputs, self.inputs) if s.mutable]
        self.fgraph.mutable_inputs = tuple(mutable)
        protect_inputs(self.fgraph, mutable)
        # The casting pass (seed 004's casting modes) makes every node computable on the
        # linker's backend. When no linker was named and the fastest one lacks a dtype the
        # graph needs (e.g. bfloat16 on "c") and no casting mode is set, the graph is
        # linked with the Python linker instead of failing.
        self.fgraph.backend = self.linker_name
        if self.linker_spec is None and self.linker_name != "py":
            self.fgraph.backend_fallback = "py"
        #: seconds per phase of this compilation (what the profiler's compile_time shows)
        self.compile_times: dict[str, float] = {}
        start = time.perf_counter()
        #: the RewriteTrace of this compilation: its last graph is the graph linked
        self.rewrite_trace = self.mode.rewrite(self.fgraph)
        self.compile_times["rewriting"] = time.perf_counter() - start
        if self.fgraph.backend != self.linker_name:
            self.linker_spec = self.linker_name = self.fgraph.backend
        self._alias_plan = self._plan_alias_checks()

    # -- checks ------------------------------------------------------------------

    def _check_inputs(self, inputs: Any) -> list[In]:
        if isinstance(inputs, (Variable, In)) or not isinstance(inputs, Sequence):
            raise TypeError(
                f"{self.label}: inputs must be a list of Variables or In, got "
                f"{describe_value(inputs)}"
            )
        specs: list[In] = []
        seen: dict[Variable, int] = {}
        for position, item in enumerate(inputs):
            # A copy: the graph may be cut at the input, which changes `spec.variable`.
            spec = copy.copy(item) if isinstance(item, In) else None
            if spec is None:
                if not isinstance(item, Variable):
                    raise TypeError(
                        f"{self.label}: input {position} must be a Variable or In, got "
                        f"{describe_value(item)}"
                    )
                spec = In(item)
            var = spec.variable
            if isinstance(var, Constant):
                raise TypeError(
                    f"{self.label}: input {position} ({var}) is a Constant and cannot be an "
                    "input; its value is fixed in the graph. Remove it from the inputs, or "
                    "use a symbolic variable of the same type to pass the value at call time."
                )
            if isinstance(var, SharedVariable) and not spec.implicit:
                raise TypeError(
                    f"{self.label}: input {position} ({var}) is a shared variable and cannot "
                    "be an explicit input; functions read shared variables implicitly. To "
                    "pass another value, substitute it with givens={shared: other_variable}."
                )
            if var in seen:
                raise ValueError(
                    f"{self.label}: input {var} is given twice (positions {seen[var]} and "
                    f"{position}); each input must appear once"
                )
            seen[var] = position
            specs.append(spec)
        return specs

    def _check_outputs(self, outputs: Any) -> tuple[list[Out], str, list[Any] | None]:
        if outputs is None:
            return [], "list", None
        if isinstance(outputs, (Variable, Out)):
            return [self._as_out(outputs, "output")], "single", None
        if isinstance(outputs, Mapping):
            keys = list(outputs)
            outs = [self._as_out(outputs[k], f"output {k!r}") for k in keys]
            return outs, "dict", keys
        if isinstance(outputs, Sequence) and not isinstance(outputs, str):
            return [self._as_out(o, f"output {i}") for i, o in enumerate(outputs)], "list", None
        raise TypeError(
            f"{self.label}: outputs must be a Variable, Out, list or dict, got "
            f"{describe_value(outputs)}"
        )

    def _as_out(self, item: Any, what: str) -> Out:
        if isinstance(item, Out):
            return Out(item.variable, item.borrow)
        if isinstance(item, Variable):
            return Out(item)
        raise TypeError(f"{self.label}: {what} must be a Variable or Out, got "
                        f"{describe_value(item)}")

    def _check_updates(self, updates: Any, explicit: list[In]
                       ) -> list[tuple[Any, Variable]]:
        pairs: list[tuple[Any, Any]]
        if updates is None:
            pairs = []
        elif isinstance(updates, Mapping):
            pairs = list(updates.items())
        else:
            pairs = [tuple(p) for p in updates]
            if any(len(p) != 2 for p in pairs):
                raise TypeError(f"{self.label}: updates must be a dict or (variable, "
                                "expression) pairs")
        checked: list[tuple[Any, Variable]] = []
        seen: set[Variable] = set()
        for target, expr in pairs:
            if not isinstance(target, SharedVariable):
                raise TypeError(
                    f"{self.label}: updates can only change shared variables, but {target} "
                    f"is a {type(target).__name__}; make it with shared(value)"
                )
            if target in seen:
                raise ValueError(f"{self.label}: shared variable {target} is updated twice")
            seen.add(target)
            checked.append((target, self._typed_update(target, expr)))
        for spec in explicit:
            if spec.update is not None:
                if not spec.has_default:
                    raise ValueError(
                        f"{self.label}: input {spec.variable} has an update but no value "
                        "(In(..., value=...)) to update"
                    )
                checked.append((spec, self._typed_update(spec.variable, spec.update, "input")))
        return checked

    def _typed_update(self, target: Variable, expr: Any, kind: str = "shared variable"
                      ) -> Variable:
        try:
            return target.type.filter_variable(expr)
        except (TypeError, ValueError) as exc:
            got = expr.type if isinstance(expr, Variable) else describe_value(expr)
            raise TypeError(
                f"{self.label}: the update of {kind} {target} has type {got}, which "
                f"does not fit the variable's type {target.type}; cast the update "
                f"expression to that type. ({exc})"
            ) from exc

    def _check_givens(self, givens: Any) -> list[tuple[Variable, Variable]]:
        if givens is None:
            return []
        pairs = list(givens.items()) if isinstance(givens, Mapping) else list(givens)
        checked = []
        for pair in pairs:
            if len(pair) != 2:
                raise TypeError(f"{self.label}: givens must be a dict or (old, new) pairs")
            old, new = pair
            if not isinstance(old, Variable):
                raise TypeError(f"{self.label}: givens keys must be Variables, got "
                                f"{describe_value(old)}")
            try:
                new = old.type.filter_variable(new)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{self.label}: givens replaces {old} (type {old.type}) by {new} of an "
                    f"incompatible type: {exc}"
                ) from exc
            checked.append((old, new))
        return checked

    def _implicit_inputs(self, exprs: list[Variable], explicit: list[In],
                         update_targets: list[Any]) -> list[In]:
        """Shared variables used by the graph become implicit inputs; any other root
        that is neither given nor a constant is a missing input."""
        given = {s.variable for s in explicit}
        implicit: list[In] = []
        for root in graph_inputs(exprs):
            if root in given or isinstance(root, Constant):
                continue
            if isinstance(root, SharedVariable):
                # a shared tensor the call updates may be overwritten by the node that
                # computes its new value (the inplace pass: an SGD step's Gemm writes
                # into the weight's storage); the DestroyHandler orders every reader
                # first. A random generator the call updates is advanced in place by
                # its draw (no copy of the state per draw; random/op.py).
                updated = any(root is t or getattr(t, "variable", None) is root
                              for t in update_targets)
                in_place = getattr(root.type, "shape", None) is not None or isinstance(
                    root.type, RandomGeneratorType)
                implicit.append(In(root, implicit=True, mutable=updated and in_place))
                continue
            needing = next(i for i, e in enumerate(exprs) if root in set(ancestors([e])))
            n_out = len(self.outputs)
            what = (f"output {needing}" if needing < n_out
                    else f"the update of {update_targets[needing - n_out]}")
            source = root.source
            where = f" (created at {source})" if source is not None else ""
            given_names = ", ".join(str(s.variable) for s in explicit) or "none"
            raise MissingInputError(
                f"{self.label}: {what} needs input variable {root} of type {root.type}{where}, "
                f"which is not among the inputs given ({given_names}). Add it to the inputs, "
                "or replace it with givens.",
                variable=root,
            )
        return implicit

    def _check_unused(self, exprs: list[Variable], explicit: list[In]) -> None:
        if self.on_unused_input == "ignore":
            return
        used = set(ancestors(exprs))
        for position, spec in enumerate(explicit):
            if spec.variable in used:
                continue
            message = (
                f"{self.label}: input {position} ({spec.variable}) is not used to compute the "
                "outputs or updates; remove it, or pass on_unused_input='warn' or 'ignore'"
            )
            if self.on_unused_input == "raise":
                raise UnusedInputError(message)
            warnings.warn(message, UnusedInputWarning, stacklevel=4)

    # -- aliasing ----------------------------------------------------------------
    def _plan_alias_checks(self) -> list[tuple[int, Any, list[int], list[int]]]:
        """For each returned value (outputs then updates) that could alias an input, a
        constant or another returned value, what to compare it with after each call.

        A value is a view of another when an Op declares it in view_map/destroy_map;
        following those declarations back gives each output's possible memory roots.
        Entries: (position, type, input positions, other returned positions).
        """
        fg = self.fgraph
        input_pos = {var: i for i, var in enumerate(fg.inputs)}
        n_out = len(self.outputs)
        borrowed = [o.borrow for o in self.outputs] + [False] * len(self.updates)
        out_roots = [frozenset(view_roots(v, through_destroyers=True)) for v in fg.outputs]
        plan = []
        for k, (var, mine) in enumerate(zip(fg.outputs, out_roots)):
            if borrowed[k]:
                continue
            own = self.inputs_index_of_update(k - n_out) if k >= n_out else None
            inputs = sorted(input_pos[r] for r in mine if r in input_pos and input_pos[r] != own)
            consts = [r for r in mine if isinstance(r, Constant)]
            others = [j for j, theirs in enumerate(out_roots)
                      if j != k and (borrowed[j] or j < k) and mine & theirs]
            if inputs or consts or others:
                plan.append((k, var.type, inputs + [-1] * bool(consts), others))
        return plan

    def _overwritable_outputs(self) -> list[Variable]:
        """Outputs lent with `Out(borrow=True)` whose value is a buffer of their own (no
        view of an input, a constant or another output, nor an updated value): the next
        call may write into the previous value, held by the caller or not."""
        fg = self.fgraph
        n_out = len(self.outputs)
        updated = set(fg.outputs[n_out:])
        return [var for var, spec in zip(fg.outputs[:n_out], self.outputs)
                if spec.borrow and var.owner is not None and var not in updated
                and fg.outputs[:n_out].count(var) == 1
                and view_roots(var, through_destroyers=True) == [var]]

    def inputs_index_of_update(self, u: int) -> int | None:
        """Position in `inputs` of the variable changed by update `u`."""
        target = self.updates[u][0]
        for i, spec in enumerate(self.inputs):
            if spec is target or spec.variable is target:
                return i
        return None

    # -- creating ----------------------------------------------------------------
    def create(self, trust_input: bool = False) -> Function:
        """Link the graph (fresh storage) and return the callable Function."""
        linker = get_linker(self.linker_spec)
        if self.profile:
            linker.profile = True
        n_out = len(self.outputs)
        no_recycling = [v for v, o in zip(self.fgraph.outputs, self.outputs) if not o.borrow]
        no_recycling += self.fgraph.outputs[n_out:]
        input_containers: list[Container] = []
        defaults: list[Container | None] = []
        for spec in self.inputs:
            var = spec.variable
            if isinstance(var, SharedVariable):
                input_containers.append(var.container)
                defaults.append(None)
                continue
            default = None
            if spec.has_default:
                default = Container(var.type, [self._filtered_default(spec)], name=spec.name)
            defaults.append(default)
            if spec.implicit:  # not an argument: the input reads (and updates) its value
                input_containers.append(default)
            else:
                input_containers.append(Container(var.type, [None], name=spec.name,
                                                  strict=spec.strict))
        start = time.perf_counter()
        linker = linker.accept(self.fgraph, no_recycling)
        linker.overwrite_outputs = self._overwritable_outputs()
        run, in_cells, out_cells, thunks, order = linker.make_thunk(
            input_storage=[c.storage for c in input_containers]
        )
        # the first link is the compilation's (a profiled twin relinks a compiled graph)
        self.compile_times.setdefault("linking (total)",
                                      time.perf_counter() - start)
        return Function(self, linker, run, input_containers, defaults, out_cells, thunks,
                        order, trust_input=trust_input)

    def _filtered_default(self, spec: In) -> Any:
        try:
            value = spec.variable.type.filter(spec.value, spec.strict, self._downcast(spec))
        except (TypeError, ValueError) as exc:
            raise reworded_error(exc, f"{self.label}: default value of input {spec.name!r} "
                                 f"does not fit type {spec.variable.type}: {exc}") from exc
        if not spec.borrow and may_share_memory(spec.variable.type, value, spec.value):
            value = copy_value(value)
        return value

    def _downcast(self, spec: In) -> bool | None:
        return spec.allow_downcast if spec.allow_downcast is not None else \
            self.allow_input_downcast


class Function:
    """A compiled graph: call it with the input values; returns the output values.

    Attributes: `maker` (the FunctionMaker, with `fgraph`, `inputs`, `outputs`),
    `input_storage` / `output_storage` (Containers), `name`, `trust_input` (skip
    filtering the arguments: faster, for callers that pass values of the exact
    types), `profile` (a ProfileStats when compiled with profile=True, else None).
    """

    def __init__(self, maker: FunctionMaker, linker: Linker, run: Any,
                 input_containers: list[Container], defaults: list[Container | None],
                 out_cells: list[list[Any]], thunks: list[Any], order: list[Any],
                 trust_input: bool = False) -> None:
        self.maker = maker
        self.linker = linker
        self.name = maker.name
        self._trust_input = trust_input
        self.vm = getattr(linker, "vm", None)
        self.thunks, self.order = thunks, order
        self.input_storage = input_containers
        self.output_storage = [Container(v.type, cell, name=v.name)
                               for v, cell in zip(maker.fgraph.outputs, out_cells)]
        self.profile: Any = None
        if maker.profile and self.vm is not None:
            from workbench.core.compile.profiling import ProfileStats

            self.profile = ProfileStats(self)
            run = self.profile.timed(run)
        self._run = run
        self._defaults = defaults
        # Arguments: the inputs that are not implicit; _arg_index[p] is the input index
        # of argument p.
        explicit = [i for i, s in enumerate(maker.inputs) if not s.implicit]
        self._arg_index = explicit
        self._n_args = len(explicit)
        self._arg_cells = tuple(input_containers[i].storage for i in explicit)
        self._arg_filters = tuple(
            (input_containers[i].storage, maker.inputs[i].variable.type.filter,
             maker.inputs[i].strict, maker._downcast(maker.inputs[i]))
            for i in explicit
        )
        names: dict[str, int | None] = {}
        for position, i in enumerate(explicit):
            name = maker.inputs[i].name
            if name is not None:
                names[name] = None if name in names else position  # None: ambiguous
        self._names = names
        self._arg_defaults = tuple(defaults[i] for i in explicit)
        self._out_cells = tuple(out_cells)
        n_out = len(maker.outputs)
        self._n_out = n_out
        self._update_targets = tuple(
            (self._update_cell(target), n_out + u) for u, (target, _) in enumerate(maker.updates)
        )
        self._alias = tuple(
            (k, typ, tuple(self._alias_cell(i) for i in ins), tuple(others))
            for k, typ, ins, others in maker._alias_plan
        )
        self._kind = maker.return_kind
        self._keys = maker.output_keys
        self._collect = self._make_collector()
        #: what calling the Function runs: the C call path when the linker offers one
        #: (see `_fast_call`), else the Python path `_call_python`
        self._call: Any = None
        self._set_call(self._fast_call(linker))

    @property
    def trust_input(self) -> bool:
        """Whether arguments are used as given, without filtering (faster; for callers
        passing values of exactly the input types)."""
        return self._trust_input

    @trust_input.setter
    def trust_input(self, value: bool) -> None:
        self._trust_input = bool(value)
        self._set_call(self._fast_call(self.linker))

    def _set_call(self, fast: Any) -> None:
        """Make `fast` (a C call path) or else `_call_python` what a call runs.

        A C call path becomes the `__call__` of a class of this Function's own (a subclass
        adding nothing else): CPython then calls it straight from the type's slot, with
        no property, attribute lookup or Python frame per call (~30 -> ~15 ns)."""
        self._call = fast if fast is not None else self._call_python
        base = type(self).__mro__[1] if getattr(type(self), "_direct_call", False) \
            else type(self)
        if fast is None:
            self.__class__ = base
        else:
            self.__class__ = type(base.__name__, (base,), {
                "__call__": fast, "__slots__": (), "_direct_call": True,
                "__module__": base.__module__, "__qualname__": base.__qualname__,
                "__doc__": base.__doc__})

    def _fast_call(self, linker: Linker) -> Any:
        """The backend's whole-call path (its record's `fast_call`: the C linker's is
        runtime.c's FastCall), or None when the backend has none or this Function needs
        Python around its run (profiling, output copies, dict results)."""
        name = getattr(linker, "name", None)
        if name not in registered_backends() or self.profile is not None or self._alias \
                or self._kind not in ("single", "list"):
            return None
        fast_call = get_backend(name).fast_call
        if fast_call is None:
            return None
        from workbench.core.tensor.type import TensorType

        checks = []
        for i in self._arg_index:
            spec = self.maker.inputs[i]
            t = spec.variable.type
            checks.append((int(t.numpy_dtype.num), t.ndim, tuple(t.shape))
                          if type(t) is TensorType else None)
        n_out = self._n_out
        return fast_call(
            linker, self._arg_cells, tuple(checks), self._out_cells[:n_out],
            tuple((self._out_cells[k], target) for target, k in self._update_targets),
            self._kind == "single", self.trust_input, self._call_python)

    def _update_cell(self, target: Any) -> list[Any]:
        if isinstance(target, SharedVariable):
            return target.container.storage
        index = self.maker.inputs.index(target)  # an In with a value
        cell = self._defaults[index]
        assert cell is not None
        return cell.storage

    def _alias_cell(self, i: int) -> list[Any]:
        if i < 0:  # constants: every output value rooted at one is copied
            return [_ALWAYS]
        return self.input_storage[i].storage

    # -- calling -----------------------------------------------------------------
    #: Calling a Function runs `self._call`: the Python path here (a property with a C
    #: getter, not a method: no extra frame); a Function with a C call path has it as
    #: the `__call__` of its own class instead (`_set_call`).
    __call__ = property(operator.attrgetter("_call"))
    #: whether this class is a Function's own class holding its C call path
    _direct_call = False

    def _call_python(self, *args: Any, **kwargs: Any) -> Any:
        """The call path in Python: bind and filter the arguments, run, collect."""
        if kwargs or len(args) != self._n_args:
            self._bind(args, kwargs)
        elif self.trust_input:
            for cell, arg in zip(self._arg_cells, args):
                cell[0] = arg
        else:
            cell = None
            try:
                for (cell, filt, strict, downcast), arg in zip(self._arg_filters, args):
                    cell[0] = filt(arg, strict, downcast)
            except Exception as exc:
                position = next(i for i, c in enumerate(self._arg_cells) if c is cell)
                raise self._bad_input(position, args[position], exc) from exc
        self._run()
        return self._collect()

    def _make_collector(self) -> Any:
        """The closure that reads the outputs after a run, unaliases them, applies the
        updates and shapes the result; specialised for the common simple cases."""
        out_cells, kind, keys = self._out_cells, self._kind, self._keys
        if not self._alias and not self._update_targets:
            if kind == "single":
                cell = out_cells[0]
                return lambda: cell[0]
            if kind == "list":
                return lambda: [c[0] for c in out_cells]
        unalias, updates, n_out = self._unalias, self._update_targets, self._n_out
        alias = bool(self._alias)

        def collect() -> Any:
            values = [c[0] for c in out_cells]
            if alias:
                unalias(values)
            if updates:
                for target, k in updates:
                    target[0] = values[k]
                del values[n_out:]
            if kind == "single":
                return values[0]
            if kind == "dict":
                return dict(zip(keys, values))
            return values

        return collect

    def _unalias(self, values: list[Any]) -> None:
        for k, typ, cells, others in self._alias:
            value = values[k]
            if any(cell[0] is _ALWAYS or may_share_memory(typ, value, cell[0])
                   for cell in cells) or \
                    any(may_share_memory(typ, value, values[j]) for j in others):
                values[k] = copy_value(value)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Slow path: match positional and keyword arguments, fill defaults, filter."""
        n = self._n_args
        if len(args) > n:
            raise TypeError(f"{self.maker.label} takes {n} argument(s) but {len(args)} were "
                            f"given ({self._signature()})")
        values: list[Any] = list(args) + [_MISSING] * (n - len(args))
        for key, value in kwargs.items():
            if key not in self._names:
                raise TypeError(f"{self.maker.label} got an unexpected keyword argument "
                                f"{key!r} ({self._signature()})")
            position = self._names[key]
            if position is None:
                raise TypeError(f"{self.maker.label}: several inputs are named {key!r}; pass "
                                "them by position")
            if values[position] is not _MISSING:
                raise TypeError(f"{self.maker.label} got multiple values for argument {key!r}")
            values[position] = value
        for position, ((cell, filt, strict, downcast), value) in enumerate(
                zip(self._arg_filters, values)):
            if value is _MISSING:
                default = self._arg_defaults[position]
                if default is None:
                    name = self.maker.inputs[self._arg_index[position]].name
                    raise TypeError(f"{self.maker.label} is missing argument {position}"
                                    f"{f' ({name!r})' if name else ''} ({self._signature()})")
                cell[0] = default.storage[0]
            elif self.trust_input:
                cell[0] = value
            else:
                try:
                    cell[0] = filt(value, strict, downcast)
                except Exception as exc:
                    raise self._bad_input(position, value, exc) from exc

    def _bad_input(self, position: int, value: Any, exc: Exception) -> Exception:
        spec = self.maker.inputs[self._arg_index[position]]
        name = f" ({spec.name!r})" if spec.name else ""
        reason = str(exc)
        if str(spec.variable.type) not in reason:  # the type's own words say expected/got
            reason = f"expected {spec.variable.type}, got {describe_value(value)}: {reason}"
        message = f"Bad input argument {position}{name} to {self.maker.label}: {reason}"
        if isinstance(exc, (TypeError, ValueError)):
            return reworded_error(exc, message)
        return TypeError(message)

    def _signature(self) -> str:
        parts = []
        for position, index in enumerate(self._arg_index):
            spec = self.maker.inputs[index]
            part = spec.name or f"<input {position}>"
            if self._arg_defaults[position] is not None:
                part += "=default"
            parts.append(part)
        return f"inputs: {', '.join(parts) or 'none'}"

    # -- misc --------------------------------------------------------------------
    def copy(self, share_memory: bool = False, swap: Mapping[Any, Any] | None = None,
             delete_updates: bool = False, name: str | None = None) -> Function:
        """A new Function for the same compiled graph with its own storage (shared
        variables stay shared), as PyTensor's: `swap` maps shared variables to others of
        the same Type to use instead, `delete_updates` drops the updates, `name` renames
        it (see compile/copying.py). `share_memory=True` is not supported."""
        if share_memory:
            raise NotImplementedError("Function.copy: share_memory=True is not supported "
                                      "(each copy has its own storage)")
        from workbench.core.compile.copying import derived_maker

        maker = self.maker
        if swap or delete_updates or name is not None:
            maker = derived_maker(maker, swap, delete_updates, name)
        return maker.create(trust_input=self.trust_input)

    def free(self) -> None:
        """Drop intermediate and output values held by the VM."""
        if self.vm is not None:
            self.vm.free()

    def __repr__(self) -> str:
        return f"<Function {self.maker.label[len('function '):]}>"


class _Always:
    """Marker stored in a fake cell: the value is a constant's and must be copied."""


_ALWAYS = _Always()


def _with_backend_rewrites(mode: Mode, backend: str) -> Mode:
    """`mode` with the rewrites tagged for `backend` (its record's `rewrite_tag`) added."""
    from workbench.core.rewrite.db import RewriteQuery

    if backend not in registered_backends() or not isinstance(mode.rewriter, RewriteQuery):
        return mode
    tag = get_backend(backend).rewrite_tag
    if tag is None or tag in mode.rewriter.include:
        return mode
    return mode.including(tag)


def _linker_name(spec: Any) -> str:
    """The name of the linker a spec resolves to ("py", "c", "gpu")."""
    from workbench.core.compile.mode import default_linker

    if spec is None:
        return default_linker()
    if isinstance(spec, str):
        return spec
    return getattr(spec, "name", type(spec).__name__)
