"""Catalogue cases of NumPy's array utilities (workbench/core/tensor/array_utils.py and
the functions beside it): diagonals, triangles, closeness, take/put along an axis,
flip, roll, round, and the grids and differences.

Each case's reference is the NumPy function itself. Shapes include batches
(diagonal of a 3-d tensor), offsets past the edge (an empty diagonal),
zero-size inputs, static shapes, negative and symbolic shifts, and integer
inputs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.testing.catalog import Arg, Case, numpy_reference, tensor_function

__all__ = ["CASES"]

INT_ONLY = "no float inputs"
BOOL_OUTPUT = "boolean output"
PIECEWISE_CONSTANT = "piecewise constant (zero gradient almost everywhere)"
NO_INPUTS = "no symbolic inputs"
COMPLEX_OUTPUT = ("complex output: tests/core/tensor/test_array_utils.py verifies the "
                  "gradients of its real and imaginary parts")


def _wt() -> Any:
    import workbench.core.tensor as wt

    return wt


_call, _np = tensor_function, numpy_reference


def _fixed(value: Any) -> Callable[[np.random.Generator, tuple[int, ...], str], Any]:
    def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
        return np.asarray(value, dtype=dtypes.as_dtype(dtype).numpy).reshape(shape)

    return sample


def _indices(high: int) -> Callable[[np.random.Generator, tuple[int, ...], str], Any]:
    """Random indices in [-high, high) (negative ones count from the end)."""

    def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
        return rng.integers(-high, high, size=shape).astype(dtypes.as_dtype(dtype).numpy)

    return sample


def _permutations(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Along the last axis, a permutation per row (indices without repeats)."""
    rows = np.stack([rng.permutation(shape[-1]) for _ in range(int(np.prod(shape[:-1])))])
    return rows.reshape(shape).astype(dtypes.as_dtype(dtype).numpy)


def _halves(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Values with ties at the rounding point (k + 0.5) / 10 and random ones."""
    ties = (rng.integers(-30, 30, size=shape) + 0.5) / 10
    values = np.where(rng.random(shape) < 0.5, ties, rng.uniform(-3, 3, size=shape))
    return values.astype(dtypes.as_dtype(dtype).numpy)


def _near(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Pairs of values for isclose: a few equal, close, far, inf and NaN."""
    pool = np.array([0.0, 1.0, 1.0 + 1e-9, 1.0 + 1e-3, np.inf, -np.inf, np.nan, 1e-9, -2.0])
    return rng.choice(pool, size=shape).astype(dtypes.as_dtype(dtype).numpy)


def _diagonal_cases() -> list[Case]:
    return [
        Case("diagonal_matrix", _call("diagonal"), _np(np.diagonal), (Arg((4, 3)),)),
        Case("diagonal_offset_above", _call("diagonal", 1), _np(np.diagonal, 1),
             (Arg((3, 4)),)),
        Case("diagonal_offset_below", _call("diagonal", -2), _np(np.diagonal, -2),
             (Arg((4, 4)),)),
        Case("diagonal_offset_past_edge", _call("diagonal", 5), _np(np.diagonal, 5),
             (Arg((3, 4)),)),
        Case("diagonal_batch_axes", _call("diagonal", 1, 2, 0), _np(np.diagonal, 1, 2, 0),
             (Arg((3, 2, 4)),)),
        Case("diagonal_static", _call("diagonal", -1), _np(np.diagonal, -1),
             (Arg((3, 5), static=True),)),
        Case("diagonal_int32", _call("diagonal"), _np(np.diagonal), (Arg((3, 3), "int32"),),
             grad=INT_ONLY),
        Case("diag_of_vector", _call("diag"), _np(np.diag), (Arg((4,)),)),
        Case("diag_of_vector_offset", _call("diag", -2), _np(np.diag, -2), (Arg((3,)),)),
        Case("diag_of_vector_static", _call("diag", 1), _np(np.diag, 1),
             (Arg((3,), static=True),)),
        Case("diag_of_empty_vector", _call("diag", 1), _np(np.diag, 1), (Arg((0,)),)),
        Case("diag_of_matrix", _call("diag", 1), _np(np.diag, 1), (Arg((4, 3)),)),
    ]


def _triangle_cases() -> list[Case]:
    cases = []
    for name, func in (("tril", np.tril), ("triu", np.triu)):
        cases += [
            Case(f"{name}_matrix", _call(name), _np(func), (Arg((4, 3)),)),
            Case(f"{name}_offset_above", _call(name, 1), _np(func, 1), (Arg((3, 4)),)),
            Case(f"{name}_offset_below", _call(name, -1), _np(func, -1), (Arg((4, 4)),)),
            Case(f"{name}_batch", _call(name), _np(func), (Arg((2, 3, 3)),)),
            Case(f"{name}_vector", _call(name), _np(func), (Arg((3,)),)),
            Case(f"{name}_static", _call(name), _np(func), (Arg((2, 3), static=True),)),
            Case(f"{name}_nan_inf", _call(name), _np(func), (Arg((3, 3), sample=_near),),
                 grad="NaN and inf inputs"),
            Case(f"{name}_bool", _call(name), _np(func), (Arg((3, 3), "bool"),),
                 grad=BOOL_OUTPUT),
        ]
    cases += [
        Case("tri_square", lambda: _wt().tri(3), lambda: np.tri(3), (), float_dtypes=("float64",),
             grad=NO_INPUTS),
        Case("tri_offset_int32", lambda: _wt().tri(3, 5, -1, dtype="int32"),
             lambda: np.tri(3, 5, -1, dtype="int32"), (), float_dtypes=("float64",),
             grad=NO_INPUTS),
        Case("tri_symbolic_lengths", lambda n, m: _wt().tri(n, m, 1, dtype="float32"),
             lambda n, m: np.tri(int(n), int(m), 1, dtype="float32"),
             (Arg((), "int64", sample=_fixed(4)), Arg((), "int32", sample=_fixed(2))),
             float_dtypes=("float64",), grad=INT_ONLY),
    ]
    return cases


def _closeness_cases() -> list[Case]:
    return [
        Case("isclose", _call("isclose"), _np(np.isclose),
             (Arg((4, 5), sample=_near), Arg((4, 5), sample=_near)), grad=BOOL_OUTPUT),
        Case("isclose_equal_nan_bcast", _call("isclose", equal_nan=True),
             _np(np.isclose, equal_nan=True), (Arg((4, 5), sample=_near),
                                               Arg((5,), sample=_near)), grad=BOOL_OUTPUT),
        Case("isclose_tolerances", _call("isclose", rtol=0.1, atol=0.5),
             _np(np.isclose, rtol=0.1, atol=0.5), (Arg((6,)), Arg((6,))), grad=BOOL_OUTPUT),
        Case("isclose_int_float", _call("isclose"), _np(np.isclose),
             (Arg((5,), "int32", -2, 2), Arg((5,), low=-2, high=2)), grad=BOOL_OUTPUT),
        Case("allclose_true", lambda a: _wt().allclose(a, a + 1e-10), lambda a: np.asarray(
            np.allclose(a, a + 1e-10)), (Arg((3, 4)),), grad=BOOL_OUTPUT),
        Case("allclose", _call("allclose", atol=1.0), _np(np.allclose, atol=1.0),
             (Arg((3, 4)), Arg((3, 4))), grad=BOOL_OUTPUT),
    ]


def _take_cases() -> list[Case]:
    return [
        Case("take_flat", _call("take"), _np(np.take), (Arg((3, 4)), Arg((5,), "int64",
                                                                          sample=_indices(12)))),
        Case("take_axis", _call("take", axis=1), _np(np.take, axis=1),
             (Arg((3, 4)), Arg((2, 3), "int64", sample=_indices(4)))),
        Case("take_scalar_index", _call("take", axis=0), _np(np.take, axis=0),
             (Arg((3, 4)), Arg((), "int32", sample=_fixed(2)))),
        Case("take_wrap", _call("take", axis=0, mode="wrap"), _np(np.take, axis=0, mode="wrap"),
             (Arg((3, 2)), Arg((6,), "int64", sample=_indices(9)))),
        Case("take_clip", _call("take", axis=-1, mode="clip"),
             _np(np.take, axis=-1, mode="clip"),
             (Arg((2, 3)), Arg((6,), "int64", sample=_indices(9)))),
        Case("take_bool_indices", _call("take", axis=1), _np(np.take, axis=1),
             (Arg((3, 2)), Arg((2, 3), "bool"))),
        Case("take_along_axis_last", _call("take_along_axis", axis=-1),
             _np(np.take_along_axis, axis=-1),
             (Arg((3, 4)), Arg((3, 6), "int64", sample=_indices(4)))),
        Case("take_along_axis_first_bcast", _call("take_along_axis", axis=0),
             _np(np.take_along_axis, axis=0),
             (Arg((3, 4)), Arg((2, 1), "int64", sample=_indices(3)))),
        Case("take_along_axis_none", _call("take_along_axis", axis=None),
             _np(np.take_along_axis, axis=None),
             (Arg((3, 4)), Arg((5,), "int64", sample=_indices(12)))),
        Case("put_along_axis_set", _call("put_along_axis", axis=1), _put(axis=1),
             (Arg((3, 4)), Arg((3, 4), "int64", sample=_permutations), Arg((3, 4)))),
        Case("put_along_axis_set_scalar", _call("put_along_axis", axis=0), _put(axis=0),
             (Arg((4, 3)), Arg((2, 3), "int64", sample=_indices(4)), Arg(()))),
        Case("put_along_axis_inc_repeats", _call("put_along_axis", axis=1, inc=True),
             _put(axis=1, inc=True),
             (Arg((3, 4)), Arg((3, 5), "int64", sample=_indices(4)), Arg((3, 5)))),
        Case("put_along_axis_flat_keeps_shape", _call("put_along_axis", axis=None),
             _put(axis=None), (Arg((3, 4)), Arg((5,), "int64", sample=_flat_positions),
                               Arg((5,), "float64"))),
        Case("put_along_axis_inc_flat", _call("put_along_axis", axis=None, inc=True),
             _put(axis=None, inc=True),
             (Arg((3, 4)), Arg((6,), "int64", sample=_indices(12)), Arg((6,), "float64"))),
        Case("put_along_axis_float_into_int", _call("put_along_axis", axis=1),
             _put(axis=1), (Arg((3, 4), "int32", -9, 9),
                            Arg((3, 4), "int64", sample=_permutations), Arg((3, 4))),
             grad="the float values are truncated into an integer array"),
    ]


def _put(axis: int | None, inc: bool = False) -> Callable[..., Any]:
    def reference(arr: Any, indices: Any, values: Any) -> Any:
        out = arr.copy()
        if inc:  # numpy.add.at at put_along_axis's index
            flat = out.reshape(-1) if axis is None else out
            lead = np.arange(arr.shape[0])[:, None]
            where = indices if axis is None else (lead, indices) if axis == 1 else (
                indices, lead.T)
            np.add.at(flat, where, values)
        else:
            np.put_along_axis(out, indices, values, axis)
        return out

    return reference


def _flat_positions(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Distinct positions into a flattened 3 x 4 array, some negative."""
    positions = rng.permutation(12)[:shape[0]] - rng.integers(0, 2, size=shape[0]) * 12
    return positions.astype(dtypes.as_dtype(dtype).numpy)


def _reorder_cases() -> list[Case]:
    return [
        Case("flip_all", _call("flip"), _np(np.flip), (Arg((3, 4)),)),
        Case("flip_axes", _call("flip", axis=(0, 2)), _np(np.flip, axis=(0, 2)),
             (Arg((2, 3, 4)),)),
        Case("flip_static", _call("flip", axis=-1), _np(np.flip, axis=-1),
             (Arg((2, 3), static=True),)),
        Case("roll_flat", _call("roll", 5), _np(np.roll, 5), (Arg((3, 4)),)),
        Case("roll_axis_negative", _call("roll", -1, axis=1), _np(np.roll, -1, axis=1),
             (Arg((3, 4)),)),
        Case("roll_several_axes", _call("roll", (1, 2), axis=(0, 1)),
             _np(np.roll, (1, 2), axis=(0, 1)), (Arg((3, 4)),)),
        Case("roll_static_full_turn", _call("roll", 4, axis=0), _np(np.roll, 4, axis=0),
             (Arg((4, 2), static=True),)),
        Case("roll_symbolic_shift", lambda x, s: _wt().roll(x, s, axis=0),
             lambda x, s: np.roll(x, int(s), axis=0),
             (Arg((5, 2)), Arg((), "int64", sample=_fixed(-7)))),
        Case("roll_empty", _call("roll", 2, axis=0), _np(np.roll, 2, axis=0), (Arg((0, 3)),)),
        Case("round", _call("round"), _np(np.round), (Arg((3, 4), sample=_halves),),
             grad=PIECEWISE_CONSTANT),
        Case("round_decimals", _call("round", 1), _np(np.round, 1),
             (Arg((3, 4), sample=_halves),), grad=PIECEWISE_CONSTANT),
        Case("round_negative_decimals", _call("round", -1), _np(np.round, -1),
             (Arg((5,), low=-300, high=300),), grad=PIECEWISE_CONSTANT),
        Case("round_int_negative_decimals", _call("round", -1), _np(np.round, -1),
             (Arg((6,), "int32", sample=_fixed([15, 25, -15, 4, 96, 0])),), grad=INT_ONLY),
        Case("round_int", _call("round", 2), _np(np.round, 2), (Arg((4,), "int64"),),
             grad=INT_ONLY),
    ]


def _increasing(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Strictly increasing knots for interp (gaps of at least 0.2)."""
    values = np.cumsum(rng.uniform(0.2, 1.0, size=shape)) - 2.0
    return values.astype(dtypes.as_dtype(dtype).numpy)


def _deprecated(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with DeprecationWarnings silenced (NumPy 2's 2-vectors in cross)."""
    def quiet(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return function(*args)
    return quiet


def _grid_cases() -> list[Case]:
    def meshgrid(**kwargs: Any) -> Callable[..., Any]:
        return lambda *xs: _wt().meshgrid(*xs, **kwargs)

    def np_meshgrid(**kwargs: Any) -> Callable[..., Any]:
        return lambda *xs: [np.asarray(g) for g in np.meshgrid(*xs, **kwargs)]

    return [
        Case("linspace", _call("linspace", 7), _np(np.linspace, num=7),
             (Arg(()), Arg(()))),
        Case("linspace_no_endpoint_axis", _call("linspace", 4, endpoint=False, axis=1),
             _np(np.linspace, num=4, endpoint=False, axis=1), (Arg((3,)), Arg((2, 1)))),
        Case("linspace_one", _call("linspace", 1), _np(np.linspace, num=1), (Arg(()), Arg(()))),
        Case("linspace_constant", lambda: _wt().linspace(-1, 2.5, 5), lambda: np.linspace(
            -1, 2.5, 5), (), float_dtypes=("float64",), grad=NO_INPUTS),
        Case("logspace", _call("logspace", 5, base=2.0), _np(np.logspace, num=5, base=2.0),
             (Arg(()), Arg((2,)))),
        Case("meshgrid_xy", meshgrid(), np_meshgrid(), (Arg((3,)), Arg((2,)), Arg((4,)))),
        Case("meshgrid_ij_sparse", meshgrid(indexing="ij", sparse=True),
             np_meshgrid(indexing="ij", sparse=True), (Arg((3,)), Arg((2,)))),
        Case("diff", _call("diff"), _np(np.diff), (Arg((3, 5)),)),
        Case("diff_second_axis0", _call("diff", 2, axis=0), _np(np.diff, n=2, axis=0),
             (Arg((5, 3)),)),
        Case("diff_prepend_append", _call("diff", prepend=0.0, append=1.0),
             _np(np.diff, prepend=0.0, append=1.0), (Arg((2, 4)),)),
        Case("diff_bool", _call("diff"), _np(np.diff), (Arg((7,), "bool"),), grad=BOOL_OUTPUT),
        Case("diff_int32", _call("diff"), _np(np.diff), (Arg((6,), "int32", -9, 9),),
             grad=INT_ONLY),
        Case("cross", _call("cross"), _np(np.cross), (Arg((4, 3)), Arg((3,)))),
        Case("cross_axis0", _call("cross", axis=0), _np(np.cross, axis=0),
             (Arg((3, 2)), Arg((3, 2)))),
        Case("cross_2_vectors", _deprecated(_call("cross")), _deprecated(_np(np.cross)),
             (Arg((4, 2), static=True), Arg((2,), static=True))),
        Case("cross_2_and_3_vectors", _deprecated(_call("cross")),
             _deprecated(_np(np.cross)), (Arg((2,), static=True), Arg((4, 3)))),
        Case("cross_2_and_3_vectors_known_when_run", _deprecated(_call("cross")),
             _deprecated(_np(np.cross)), (Arg((4, 2)), Arg((4, 3)))),
        Case("cross_axisa_axisb_axisc", _call("cross", axisa=1, axisb=0, axisc=-2),
             _np(np.cross, axisa=1, axisb=0, axisc=-2), (Arg((2, 3, 4)), Arg((3, 4)))),
        Case("interp_period", _call("interp", period=-10.0), _np(np.interp, period=-10.0),
             (Arg((3, 4), low=0.5, high=9.5), Arg((6,), sample=_increasing), Arg((6,)))),
        Case("interp", _call("interp"), _np(np.interp),
             (Arg((3, 4), low=-3, high=4), Arg((6,), sample=_increasing), Arg((6,)))),
        Case("interp_one_knot", _call("interp"), _np(np.interp),
             (Arg((4,)), Arg((1,)), Arg((1,))), grad="a single knot: constant in x"),
        Case("interp_complex", _call("interp", left=2j), _np(np.interp, left=2j),
             (Arg((3, 4), low=-3, high=4), Arg((6,), sample=_increasing),
              Arg((6,), "complex128")), grad=COMPLEX_OUTPUT),
        Case("interp_complex64_period", _call("interp", period=3.0),
             _np(np.interp, period=3.0),
             (Arg((5,), low=-3, high=4), Arg((4,)), Arg((4,), "complex64")),
             grad=COMPLEX_OUTPUT),
        Case("interp_left_right", _call("interp", left=-9.0, right=9.0),
             _np(np.interp, left=-9.0, right=9.0),
             (Arg((10,), low=-4, high=6), Arg((5,), sample=_increasing), Arg((5,)))),
    ]


def _pad_cases() -> list[Case]:
    def pad(width: Any, mode: str, **kwargs: Any) -> tuple[Any, Any]:
        return _call("pad", width, mode, **kwargs), _np(np.pad, width, mode, **kwargs)

    cases = [
        ("pad_constant", pad((1, 2), "constant"), (Arg((3, 4)),)),
        ("pad_constant_per_axis", pad(((1, 0), (2, 3)), "constant",
                                      constant_values=((1.5, 2), (3, -4))), (Arg((2, 3)),)),
        ("pad_edge", pad(2, "edge"), (Arg((3, 2)),)),
        ("pad_reflect_wide", pad(((5, 1), (2, 7)), "reflect"), (Arg((3, 4)),)),
        ("pad_symmetric", pad(((2, 3),), "symmetric"), (Arg((4,)),)),
        ("pad_wrap_static", pad(((1, 2), (0, 5)), "wrap"), (Arg((2, 3), static=True),)),
        ("pad_reflect_length_one", pad(3, "reflect"), (Arg((1,)),)),
        ("pad_empty_constant", pad(1, "constant"), (Arg((0, 2)),)),
    ]
    result = [Case(name, build, ref, args) for name, (build, ref), args in cases]
    result.append(Case("pad_constant_symbolic_value",
                       lambda x, v: _wt().pad(x, 1, constant_values=v),
                       lambda x, v: np.pad(x, 1, constant_values=v), (Arg((2, 3)), Arg(()))))
    result.append(Case("pad_int32_reflect", _call("pad", 2, "reflect"), _np(np.pad, 2, "reflect"),
                       (Arg((3, 3), "int32", -9, 9),), grad=INT_ONLY))
    return result


CASES: list[Case] = [
    *_diagonal_cases(), *_triangle_cases(), *_closeness_cases(), *_take_cases(),
    *_reorder_cases(), *_grid_cases(), *_pad_cases(),
]
