"""Elementwise functions declared as data: one `declare` call per scalar Op.

A declared Op states what is not backend code, and every layer derives the rest:

* the NumPy kernel (`numpy`: a NumPy function name, or a function of arrays),
* the C function name (`c`: ``"exp"`` calls ``exp``/``expf`` by the computing dtype;
  ``wb_*`` names are the C backend's own functions, written beside its other code),
* the torch function (`torch`: ``"exp"``, ``"special.erfinv"``; a dotted path in torch),
* the derivative (`derivative`: f'(x) from (x, z), or the partial derivatives of a
  binary function from (x, y, z)), complex support (`complex_ok`),
* the test domain and reference (`domain`, `reference`) the test catalogue reads.

The C and torch kernels are made from `c` and `torch` by the backends
(`workbench.core.link.c.scalar_c`, `workbench.core.link.gpu.lower_elemwise`), the
tensor function by `workbench.core.tensor.math`, the catalogue entries by
`workbench.testing.cases_elemwise`. Nothing is looked up by a class name: the
backends hold Op *classes* and ask `backend_entry` which of their entries, if any,
computes what a given Op computes.

`backend_entry` is the one rule every backend table follows (a kernel table is keyed
by Op class, like JAX's lowering rules keyed by primitive): walking the class's MRO,
a class that changes the computation (defines `impl`, `nfunc` or a declaration) ends
the search, so a user's subclass of `Exp` that overrides `impl` runs its own code,
never the C `exp` it would otherwise inherit.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Variable
from workbench.core.graph.type import NullType, grad_not_implemented, grad_undefined
from workbench.core.scalar.basic import (
    ScalarOp,
    cast,
    upgrade_to_float,
    upgrade_to_float_no_complex,
)

__all__ = ["COMPUTATION_ATTRIBUTES", "DeclaredOp", "backend_entry", "computes_like", "declare",
           "declared_attribute"]

#: Attributes whose definition in a class changes what its Ops compute.
COMPUTATION_ATTRIBUTES = ("impl", "nfunc", "numpy", "c_function", "torch_function")


def _defines_computation(cls: type) -> bool:
    return any(attr in vars(cls) for attr in COMPUTATION_ATTRIBUTES)


def backend_entry(table: Mapping[type, Any], op_class: type) -> Any:
    """The entry of `table` (keyed by Op class) that computes what `op_class` computes.

    Walks the MRO: the first class found in `table` wins, unless a class before it
    redefines the computation (`COMPUTATION_ATTRIBUTES`), which ends the search with
    None: that class's Ops run their own `impl`, not a kernel of an ancestor.
    """
    for klass in op_class.__mro__:
        if klass in table:
            return table[klass]
        if _defines_computation(klass):
            return None
    return None


@functools.cache
def declared_attribute(op_class: type, attribute: str) -> Any:
    """`attribute` (e.g. "c_function") as declared by the class that defines what
    `op_class` computes; None when that class does not declare it (a subclass that
    overrides `impl` keeps none of its parent's backend functions). Cached: Op classes
    do not change what they compute after they are defined."""
    for klass in op_class.__mro__:
        if _defines_computation(klass):
            return vars(klass).get(attribute)
    return None


def computes_like(op: Any, library_class: type) -> bool:
    """Whether `op` is an instance of `library_class` computing what it computes.

    For rules that recognise a library Op (printing ``mean``, rewrites): a subclass
    that redefines the computation does not count.
    """
    return isinstance(op, library_class) and backend_entry({library_class: True},
                                                           type(op)) is True


# -- the declared Op ------------------------------------------------------------------

Derivative = Callable[..., Any]


class DeclaredOp(ScalarOp):
    """Base of Ops made by `declare`: every fact is a class attribute set there.

    `numpy` is the kernel (a function of NumPy arrays); `c_function` and
    `torch_function` name the backend functions (None: that backend runs `impl`
    through the host); `derivative` gives the derivative(s) as scalar graphs;
    `domain` and `reference` describe the tests.
    """

    numpy: Callable[..., Any] | None = None
    c_function: str | None = None
    torch_function: str | Callable[..., Any] | None = None
    complex_ok = False
    derivative: Derivative | None = None
    #: (low, high) per input: where the function is defined and smooth (tests draw there)
    domain: tuple[tuple[float, float], ...] = ()
    #: the test reference on NumPy arrays (None: `numpy`); a "module.function" string is
    #: imported by the test catalogue when a test runs (e.g. "scipy.special.gammaln")
    reference: Callable[..., Any] | str | None = None
    #: True, or the reason the test catalogue checks no gradient
    grad_note: bool | str = True
    #: inputs that are parameters held fixed by the tests (an integer order, say):
    #: the derivative gives None for them (undefined)
    fixed_inputs: tuple[int, ...] = ()

    def impl(self, *inputs: Any) -> Any:
        numpy = type(self).numpy
        if numpy is None:  # pragma: no cover - declare() always sets it
            raise NotImplementedError(f"{self.name}: no NumPy kernel declared")
        return numpy(*inputs)

    def grad_terms(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
                   output_grads: Sequence[Variable]) -> list[Variable]:
        from workbench.core.scalar.math import chain_rule

        derivative = type(self).derivative
        (z,), (gz,) = outputs, output_grads
        if derivative is None:
            return [grad_not_implemented(self, k, x, f"{self.name} declares no derivative")
                    for k, x in enumerate(inputs)]
        xs = [cast(x, z.type.dtype) for x in inputs]
        parts = derivative(*xs, z)
        if self.nin == 1:
            parts = (parts,)
        return [grad_undefined(self, k, x, f"{self.name} is not differentiable in input {k}")
                if d is None else d if isinstance(d.type, NullType) else chain_rule(gz, d)
                for k, (x, d) in enumerate(zip(inputs, parts))]


def _numpy_kernel(numpy: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(numpy):
        return numpy
    func = getattr(np, numpy, None)
    if func is None:
        raise ValueError(f"declare: NumPy has no function {numpy!r}")
    return func


def _domains(domain: Any, nin: int) -> tuple[tuple[float, float], ...]:
    if domain is None:
        return ((-2.0, 2.0),) * nin
    if len(domain) == 2 and all(isinstance(v, (int, float)) for v in domain):
        return (tuple(domain),) * nin  # type: ignore[return-value]
    if len(domain) != nin:
        raise ValueError(f"declare: domain needs one (low, high) per input ({nin})")
    return tuple(tuple(d) for d in domain)  # type: ignore[misc]


def declare(class_name: str, name: str, doc: str, *, numpy: str | Callable[..., Any],
            derivative: Derivative | None, nin: int = 1, c: str | None = None,
            torch: str | Callable[..., Any] | None = None, complex_ok: bool = False,
            domain: Any = None, reference: Callable[..., Any] | str | None = None,
            grad: bool | str = True, module: str | None = None,
            **attributes: Any) -> DeclaredOp:
    """A new elementwise scalar Op, its class named `class_name`, and its shared instance.

    Integer and bool inputs compute in the default float dtype (the float rule of
    `upgrade_to_float`); complex inputs are refused unless `complex_ok`. `numpy` is
    the NumPy function (its name, or a function of arrays), `c` the C function (called
    as ``c`` for double, ``c + "f"`` for float), `torch` the torch function's path,
    `derivative(x, z)` the derivative f'(x) as a scalar graph given the output z (for
    several inputs: `derivative(x, y, ..., z)` returns the partial derivatives; None for
    one means undefined there). `torch` may also be a function ``(torch, *tensors)``.
    `domain` ((low, high), or one per input) and `reference` serve the test
    catalogue; `grad` is True or the reason the gradient is not tested.
    The class belongs to the calling module (as `namedtuple` does), so graph files
    name it there. Extra keyword `attributes` become class attributes.
    """
    if nin < 1:
        raise ValueError(f"declare: {name} needs at least one input, got nin={nin}")
    if module is None:
        module = sys._getframe(1).f_globals.get("__name__", __name__)
    rule = upgrade_to_float if complex_ok else upgrade_to_float_no_complex
    attrs = {
        "__doc__": doc,
        "__module__": module,
        "__qualname__": class_name,
        "nin": nin,
        "name": name,
        "numpy": staticmethod(_numpy_kernel(numpy)),
        "nfunc": numpy if isinstance(numpy, str) else None,
        "c_function": c,
        "torch_function": staticmethod(torch) if callable(torch) else torch,
        "complex_ok": complex_ok,
        "derivative": None if derivative is None else staticmethod(derivative),
        "default_preference": staticmethod(rule),
        "domain": _domains(domain, nin),
        "reference": staticmethod(reference) if callable(reference) else reference,
        "grad_note": grad,
        **attributes,
    }
    cls = type(class_name, (DeclaredOp,), attrs)
    return cls(name=name)
