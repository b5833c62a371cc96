"""Catalogue cases of the lazy `IfElse`, through `ifelse`.

The condition is a symbolic input fed ``np.array(True)`` or ``np.array(False)``
(or an integer: nonzero is true) so each branch is taken by some case; the
branches are symbolic values, including several outputs and branches whose
lengths differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]


def _ifelse() -> Any:
    from workbench.core.ifelse import ifelse

    return ifelse


def _condition(value: Any, dtype: str = "bool") -> Arg:
    def sample(rng: np.random.Generator, shape: tuple[int, ...], d: str) -> Any:
        return np.array(value, dtype=dtypes.as_dtype(d).numpy)

    return Arg((), dtype, sample=sample)


def _pick(c: Any, a: Any, b: Any) -> Any:
    return np.array(a if c else b, copy=True)


def _case(name: str, condition: Arg, *branches: Arg, **options: Any) -> Case:
    def build(c: Any, a: Any, b: Any) -> Any:
        return _ifelse()(c, a, b)

    return Case(name, build, _pick, (condition, *branches), **options)


def _two_outputs(value: bool) -> Case:
    def build(c: Any, a: Any, b: Any) -> Any:
        return _ifelse()(c, [a, b * 2], [b, a])

    def reference(c: Any, a: Any, b: Any) -> Any:
        return [a.copy(), b * 2] if c else [b.copy(), a.copy()]

    return Case(f"two_outputs_{str(value).lower()}", build, reference,
                (_condition(value), Arg((2, 3)), Arg((2, 3))))


def _computed_condition() -> Case:
    build: Callable[..., Any] = lambda a, b: _ifelse()(a.sum() > b.sum(), a - b, b - a)  # noqa: E731

    def reference(a: Any, b: Any) -> Any:
        return a - b if a.sum() > b.sum() else b - a

    return Case("computed_condition", build, reference, (Arg((4,)), Arg((4,))))


CASES: list[Case] = [
    _case("then_branch", _condition(True), Arg((3,)), Arg((3,))),
    _case("else_branch", _condition(False), Arg((3,)), Arg((3,))),
    _case("int_condition", _condition(2, "int32"), Arg((2, 2)), Arg((2, 2))),
    _case("zero_int_condition", _condition(0, "int8"), Arg((2, 2)), Arg((2, 2))),
    _case("different_lengths", _condition(False), Arg((3,)), Arg((5,))),
    _case("static_lengths", _condition(True), Arg((3, 2), static=True), Arg((3, 2), static=True)),
    _case("zero_d", _condition(True), Arg(()), Arg(())),
    _case("zero_size", _condition(False), Arg((0, 2)), Arg((0, 2))),
    _case("int_values", _condition(True), Arg((3,), "int64"), Arg((3,), "int64"),
          float_dtypes=("float64",), grad="no float inputs"),
    _two_outputs(True),
    _two_outputs(False),
    _computed_condition(),
]
