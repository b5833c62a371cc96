"""Catalogue cases of tensor creation: `alloc`, `zeros`, `ones`, `full`, the `*_like`
functions, `arange` and `eye`, hence the `Alloc`, `ARange` and `Eye` Ops.

Lengths and scalar arguments are given both as constants (the case then has
no symbolic input, or only the value) and as symbolic integer / float
scalars, drawn by fixed samplers so the reference knows them. Shapes include
0-d and zero-size results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]

INT_ONLY = "no float inputs"
NO_INPUTS = "no symbolic inputs"
SHAPE_ONLY = "the output does not depend on the values of the inputs, only their shapes"
DEFAULT_FLOAT = ("float64",)  # cases whose output dtype does not follow a float Arg


def _wt() -> Any:
    import workbench.core.tensor as wt

    return wt


def _fixed(value: Any) -> Callable[[np.random.Generator, tuple[int, ...], str], Any]:
    """A sampler always giving `value` (for lengths and arange bounds)."""

    def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
        return np.full(shape, value, dtype=dtypes.as_dtype(dtype).numpy)

    return sample


def _int_input(n: int, dtype: str = "int64") -> Arg:
    """A symbolic integer scalar input (a length, a bound, a diagonal) always fed `n`."""
    return Arg((), dtype, sample=_fixed(n))


def _number(v: float) -> Arg:
    """A symbolic float scalar input (of the case's float dtype) always fed `v`."""
    return Arg((), sample=_fixed(v))


def _const(build: Callable[[], Any], reference: Callable[[], Any], name: str) -> Case:
    """A case with no symbolic input at all (the function compiles with no arguments)."""
    return Case(name, build, reference, (), float_dtypes=DEFAULT_FLOAT, grad=NO_INPUTS)


def _alloc_cases() -> list[Case]:
    def alloc(*shape: int) -> Callable[[Any], Any]:
        return lambda v: _wt().alloc(v, *shape)

    def broadcast(*shape: int) -> Callable[[Any], Any]:
        return lambda v: np.broadcast_to(v, shape).copy()

    return [
        Case("alloc_scalar_value", alloc(3, 4), broadcast(3, 4), (Arg(()),)),
        Case("alloc_vector_value", alloc(2, 3, 4), broadcast(2, 3, 4), (Arg((4,)),)),
        Case("alloc_length_one_value", alloc(3, 4), broadcast(3, 4), (Arg((3, 1)),)),
        Case("alloc_zero_size", alloc(0, 3), broadcast(0, 3), (Arg((3,)),)),
        Case("alloc_0d", alloc(), broadcast(), (Arg(()),)),
        Case("alloc_same_shape", alloc(2, 3), broadcast(2, 3), (Arg((2, 3), static=True),)),
        Case("alloc_symbolic_lengths", lambda v, n: _wt().alloc(v, n, 3),
             lambda v, n: np.broadcast_to(v, (int(n), 3)).copy(), (Arg((3,)), _int_input(2))),
        Case("alloc_int32_lengths", lambda v, n, m: _wt().alloc(v, n, m),
             lambda v, n, m: np.broadcast_to(v, (int(n), int(m))).copy(),
             (Arg(()), _int_input(4, "int32"), _int_input(2, "int8"))),
        Case("alloc_int_value", alloc(2, 3), broadcast(2, 3), (Arg((3,), "int32"),),
             float_dtypes=DEFAULT_FLOAT, grad=INT_ONLY),
    ]


def _fill_cases() -> list[Case]:
    wt = _wt
    return [
        _const(lambda: wt().zeros((2, 3)), lambda: np.zeros((2, 3)), "zeros_constant_shape"),
        _const(lambda: wt().zeros(4, dtype="int32"), lambda: np.zeros(4, "int32"), "zeros_int"),
        _const(lambda: wt().zeros(()), lambda: np.zeros(()), "zeros_0d"),
        _const(lambda: wt().zeros((0, 3)), lambda: np.zeros((0, 3)), "zeros_zero_size"),
        _const(lambda: wt().ones((3, 2), dtype="float32"), lambda: np.ones((3, 2), "float32"),
               "ones_float32"),
        _const(lambda: wt().ones(3, dtype="bool"), lambda: np.ones(3, bool), "ones_bool"),
        _const(lambda: wt().full((2, 2), 1.5), lambda: np.full((2, 2), 1.5), "full_float"),
        _const(lambda: wt().full(3, 7), lambda: np.full(3, 7), "full_int"),
        _const(lambda: wt().full((2, 3), 2.7, dtype="int16"),
               lambda: np.full((2, 3), 2.7).astype("int16"), "full_converts_to_dtype"),
        Case("zeros_symbolic_lengths", lambda n: _wt().zeros((n, 3)),
             lambda n: np.zeros((int(n), 3)), (_int_input(2),), float_dtypes=DEFAULT_FLOAT,
             grad=INT_ONLY),
        Case("ones_symbolic_int32_length", lambda n: _wt().ones(n, dtype="int32"),
             lambda n: np.ones(int(n), "int32"), (_int_input(5, "int32"),),
             float_dtypes=DEFAULT_FLOAT, grad=INT_ONLY),
        Case("zeros_of_a_shape_vector", lambda x: _wt().zeros(x.shape, dtype="int64"),
             lambda x: np.zeros(x.shape, "int64"), (Arg((2, 3)),), grad=SHAPE_ONLY),
        Case("full_symbolic_fill", lambda v: _wt().full((2, 3), v),
             lambda v: np.full((2, 3), v), (Arg(()),)),
        Case("full_vector_fill", lambda v: _wt().full((2, 3), v),
             lambda v: np.full((2, 3), v), (Arg((3,)),)),
        Case("full_symbolic_fill_and_length", lambda v, n: _wt().full((n, 2), v),
             lambda v, n: np.full((int(n), 2), v), (Arg(()), _int_input(3))),
        Case("zeros_like", lambda x: _wt().zeros_like(x), np.zeros_like, (Arg((2, 3)),),
             grad=SHAPE_ONLY),
        Case("zeros_like_0d", lambda x: _wt().zeros_like(x), np.zeros_like, (Arg(()),),
             grad=SHAPE_ONLY),
        Case("ones_like_int32", lambda x: _wt().ones_like(x), np.ones_like,
             (Arg((3, 0, 2), "int32"),), float_dtypes=DEFAULT_FLOAT, grad=INT_ONLY),
        Case("ones_like_dtype", lambda x: _wt().ones_like(x, dtype="int8"),
             lambda x: np.ones_like(x, dtype="int8"), (Arg((4,)),), grad=SHAPE_ONLY),
        Case("full_like", lambda x: _wt().full_like(x, 2.5), lambda x: np.full_like(x, 2.5),
             (Arg((2, 3)),), grad=SHAPE_ONLY),
        Case("full_like_int_truncates", lambda x: _wt().full_like(x, 2.5),
             lambda x: np.full_like(x, 2.5), (Arg((3,), "int32"),), float_dtypes=DEFAULT_FLOAT,
             grad=INT_ONLY),
        Case("full_like_symbolic_fill", lambda x, v: _wt().full_like(x, v),
             lambda x, v: np.full_like(x, v), (Arg((2, 2)), Arg(()))),
    ]


def _arange_cases() -> list[Case]:
    wt = _wt
    return [
        _const(lambda: wt().arange(5), lambda: np.arange(5), "arange_stop"),
        _const(lambda: wt().arange(2, 11, 3), lambda: np.arange(2, 11, 3), "arange_int_step"),
        _const(lambda: wt().arange(5, 0, -1.5), lambda: np.arange(5, 0, -1.5),
               "arange_negative_float_step"),
        _const(lambda: wt().arange(0.0, 1.0, 0.1), lambda: np.arange(0.0, 1.0, 0.1),
               "arange_float_step"),
        _const(lambda: wt().arange(3, 3), lambda: np.arange(3, 3), "arange_empty"),
        _const(lambda: wt().arange(4, 0), lambda: np.arange(4, 0), "arange_empty_backwards"),
        _const(lambda: wt().arange(0, 5, dtype="float32"),
               lambda: np.arange(0, 5, dtype="float32"), "arange_float32"),
        _const(lambda: wt().arange(0.5, 4, dtype="int64"),
               lambda: np.arange(0.5, 4, dtype="int64"), "arange_float_bounds_int_dtype"),
        Case("arange_symbolic_stop", lambda n: _wt().arange(n), lambda n: np.arange(int(n)),
             (_int_input(6),), float_dtypes=DEFAULT_FLOAT, grad=INT_ONLY),
        Case("arange_symbolic_int32", lambda a, b: _wt().arange(a, b, 2),
             lambda a, b: np.arange(a, b, 2, dtype="int32"),
             (_int_input(-3, "int32"), _int_input(8, "int32")), float_dtypes=DEFAULT_FLOAT,
             grad=INT_ONLY),
        Case("arange_symbolic_floats", lambda a, b, c: _wt().arange(a, b, c),
             lambda a, b, c: np.arange(a, b, c, dtype=a.dtype),
             (_number(0.5), _number(3.1), _number(0.25))),
        Case("arange_symbolic_negative_step", lambda a, b, c: _wt().arange(a, b, c),
             lambda a, b, c: np.arange(a, b, c, dtype=a.dtype),
             (_number(2.0), _number(-1.1), _number(-0.5))),
    ]


def _eye_cases() -> list[Case]:
    wt = _wt
    return [
        _const(lambda: wt().eye(3), lambda: np.eye(3), "eye_square"),
        _const(lambda: wt().eye(3, 4, 1), lambda: np.eye(3, 4, 1), "eye_upper_diagonal"),
        _const(lambda: wt().eye(4, 3, -2), lambda: np.eye(4, 3, -2), "eye_lower_diagonal"),
        _const(lambda: wt().eye(2, k=5), lambda: np.eye(2, k=5), "eye_diagonal_outside"),
        _const(lambda: wt().eye(0), lambda: np.eye(0), "eye_empty"),
        _const(lambda: wt().eye(3, dtype="int32"), lambda: np.eye(3, dtype="int32"),
               "eye_int32"),
        Case("eye_symbolic", lambda n, m, k: _wt().eye(n, m, k),
             lambda n, m, k: np.eye(int(n), int(m), int(k)),
             (_int_input(3), _int_input(5, "int32"), _int_input(-1)), float_dtypes=DEFAULT_FLOAT,
             grad=INT_ONLY),
        Case("eye_symbolic_square", lambda n: _wt().eye(n, dtype="float32"),
             lambda n: np.eye(int(n), dtype="float32"), (_int_input(4),),
             float_dtypes=DEFAULT_FLOAT, grad=INT_ONLY),
    ]


CASES: list[Case] = _alloc_cases() + _fill_cases() + _arange_cases() + _eye_cases()
