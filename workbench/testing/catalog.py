"""The catalogue of the library's operations: how to build each one, on what
inputs, and what NumPy says the answer is.

A `Case` builds a graph from symbolic inputs described by `Arg`s and gives a
NumPy reference for the same computation. Families of cases live in the
`cases_*` modules beside this one (one per part of the library); `all_cases()`
gathers them. Tests enumerate the catalogue to check values, static shapes,
`infer_shape`, gradients, backends and serialisation against one list, and
`library_op_classes()` lets a test fail when an Op of the library has no case.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.core import dtypes

FLOAT = "float"  # placeholder dtype: replaced by each dtype the case runs in


@dataclass(frozen=True)
class Arg:
    """One input of a case: a symbolic tensor of `dtype` fed a random value of `shape`.

    `low`/`high` bound the random values (e.g. positive for log); `sample(rng,
    shape, dtype)` replaces the default generator (e.g. for indices or masks).
    `static` gives the symbolic input its static shape instead of `(?, ...)`.
    `constant` passes the value into the graph as a constant instead.
    """

    shape: tuple[int, ...]
    dtype: str = FLOAT
    low: float = -2.0
    high: float = 2.0
    sample: Callable[[np.random.Generator, tuple[int, ...], str], Any] | None = None
    static: bool = False
    constant: bool = False

    def resolved_dtype(self, float_dtype: str) -> str:
        return float_dtype if self.dtype == FLOAT else self.dtype

    def value(self, rng: np.random.Generator, float_dtype: str) -> Any:
        dtype = self.resolved_dtype(float_dtype)
        if self.sample is not None:
            return self.sample(rng, self.shape, dtype)
        return random_array(rng, self.shape, dtype, self.low, self.high)


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str,
                 low: float = -2.0, high: float = 2.0) -> np.ndarray:
    """Random values of `dtype` in [low, high) (integers: a small range; bools: coin flips)."""
    d = dtypes.as_dtype(dtype)
    if d.is_bool:
        return rng.random(shape) < 0.5
    if d.is_int:
        lo = max(int(np.floor(low)), int(dtypes.iinfo(d).min))
        hi = min(int(np.ceil(high)) + 1, int(dtypes.iinfo(d).max))
        if lo >= hi:
            hi = lo + 1
        return rng.integers(lo, hi, size=shape).astype(d.numpy)
    if d.is_complex:
        real = rng.uniform(low, high, size=shape)
        imag = rng.uniform(low, high, size=shape)
        return (real + 1j * imag).astype(d.numpy)
    return rng.uniform(low, high, size=shape).astype(d.numpy)


@dataclass(frozen=True)
class Case:
    """An operation of the library with its inputs and NumPy reference.

    `build(*symbolic_inputs)` returns the output Variable (or a list);
    `reference(*numpy_values)` returns the expected array(s). `dtypes` lists
    the float dtypes substituted for `Arg(dtype=FLOAT)`; `grad` says whether
    the output is differentiable with respect to the float inputs (or gives
    the reason it is not, as a string). `rtol`/`atol` override the default
    tolerance for the dtype.
    """

    name: str
    build: Callable[..., Any]
    reference: Callable[..., Any]
    args: tuple[Arg, ...]
    family: str = ""
    float_dtypes: tuple[str, ...] = ("float64", "float32")
    grad: bool | str = True
    rtol: float | None = None
    atol: float | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)

    def ids(self) -> list[str]:
        return [f"{self.family}.{self.name}[{d}]" for d in self.float_dtypes]

    def inputs(self, float_dtype: str) -> list[Any]:
        """Fresh symbolic inputs (or None for constant args)."""
        from workbench.core.tensor import TensorType

        symbolic = []
        for position, arg in enumerate(self.args):
            if arg.constant:
                symbolic.append(None)
                continue
            shape = arg.shape if arg.static else tuple(None for _ in arg.shape)
            var = TensorType(arg.resolved_dtype(float_dtype), shape)(f"i{position}")
            symbolic.append(var)
        return symbolic

    def values(self, float_dtype: str, seed: int = 0) -> list[Any]:
        rng = np.random.default_rng(seed)
        return [arg.value(rng, float_dtype) for arg in self.args]

    def graph(self, float_dtype: str, seed: int = 0) -> tuple[list[Any], Any, list[Any]]:
        """(symbolic inputs, outputs, values) ready to compile and call.

        Constant args are baked into the graph; the returned inputs and values
        cover only the symbolic ones.
        """
        symbolic = self.inputs(float_dtype)
        values = self.values(float_dtype, seed)
        built_args = [v if s is None else s for s, v in zip(symbolic, values)]
        outputs = self.build(*built_args)
        inputs = [s for s in symbolic if s is not None]
        given = [v for s, v in zip(symbolic, values) if s is not None]
        return inputs, outputs, given

    def expected(self, float_dtype: str, seed: int = 0) -> Any:
        return self.reference(*self.values(float_dtype, seed))

    def tolerance(self, dtype: str) -> tuple[float, float]:
        d = dtypes.as_dtype(dtype)
        if d in (dtypes.float16, dtypes.bfloat16):
            rtol, atol = 1e-2, 1e-2
        elif d in (dtypes.float32, dtypes.complex64):
            rtol, atol = 1e-4, 1e-5
        else:
            rtol, atol = 1e-7, 1e-9
        return (self.rtol if self.rtol is not None else rtol,
                self.atol if self.atol is not None else atol)


def _case_modules() -> list[Any]:
    package = importlib.import_module("workbench.testing")
    modules = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("cases_"):
            modules.append(importlib.import_module(f"workbench.testing.{info.name}"))
    return modules


def all_cases() -> list[Case]:
    """Every case of every family, in a stable order."""
    cases: list[Case] = []
    for module in _case_modules():
        family = module.__name__.rsplit(".", 1)[-1].removeprefix("cases_")
        for case in module.CASES:
            cases.append(case if case.family else _with_family(case, family))
    names = [f"{c.family}.{c.name}" for c in cases]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"duplicate case names in the catalogue: {sorted(duplicates)}")
    return cases


def cases_by_family() -> dict[str, list[Case]]:
    grouped: dict[str, list[Case]] = {}
    for case in all_cases():
        grouped.setdefault(case.family, []).append(case)
    return grouped


def _with_family(case: Case, family: str) -> Case:
    from dataclasses import replace

    return replace(case, family=family)


def library_op_classes(packages: Sequence[str] = ("workbench.core.tensor",
                                                  "workbench.core.ifelse")) -> set[type]:
    """Every concrete Op class defined in the library's tensor modules."""
    from workbench.core.graph.op import Op

    found: set[type] = set()
    for package_name in packages:
        try:
            package = importlib.import_module(package_name)
        except ImportError:
            continue
        modules = [package]
        if hasattr(package, "__path__"):
            for info in pkgutil.walk_packages(package.__path__, package_name + "."):
                modules.append(importlib.import_module(info.name))
        for module in modules:
            for obj in vars(module).values():
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, Op)
                    and obj.__module__ == module.__name__
                    and not inspect.isabstract(obj)
                    and not vars(obj).get("abstract", False)
                ):
                    found.add(obj)
    return found


def op_classes_in(outputs: Any) -> set[type]:
    """The Op classes (and scalar op classes inside Elemwise) a built graph uses."""
    from workbench.core.graph.basic import ancestors

    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    found: set[type] = set()
    for var in ancestors(outs):
        if var.owner is not None:
            op = var.owner.op
            found.add(type(op))
            scalar_op = getattr(op, "scalar_op", None)
            if scalar_op is not None:
                found.add(type(scalar_op))
    return found


def tensor_function(path: str, *args: Any, **kwargs: Any) -> Callable[..., Any]:
    """A case builder calling ``workbench.core.tensor.<path>(*inputs, *args, **kwargs)``;
    `path` may name a namespace (``"sort"``, ``"linalg.solve"``). Resolved at build time,
    so a cases module imports no tensor code when loaded."""

    def build(*inputs: Any) -> Any:
        import workbench.core.tensor as wt

        function: Any = wt
        for part in path.split("."):
            function = getattr(function, part)
        return function(*inputs, *args, **kwargs)

    build.__name__ = path.rsplit(".", 1)[-1]
    return build


def numpy_reference(func: Callable[..., Any], *args: Any, **kwargs: Any
                    ) -> Callable[..., Any]:
    """A case reference calling ``func(*values, *args, **kwargs)``, as arrays (a tuple
    result, e.g. numpy.linalg.slogdet's, as a list of arrays: one per output)."""

    def reference(*inputs: Any) -> Any:
        result = func(*inputs, *args, **kwargs)
        if isinstance(result, tuple):
            return [np.asarray(r) for r in result]
        return np.asarray(result)

    return reference
