"""Catalogue cases of the join family: `workbench.core.tensor.join`.

concatenate (axes 0, negative and None, zero-size pieces, mixed dtypes),
stack, hstack, vstack, split (equal sections, sorted, unsorted, negative and
out-of-range indices), array_split, repeat (a count, a count per element,
symbolic counts, ``axis=None``) and tile (reps shorter and longer than the
rank, zero, symbolic), on float, integer and bool tensors. The references
are the NumPy functions of the same names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import workbench.core.tensor as wt
from workbench.testing.cases_shape import INT_INPUTS, ONLY_FLOAT64, fixed, reversed_rows, transposed
from workbench.testing.catalog import Arg, Case


def _case(name: str, build: Callable[..., Any], reference: Callable[..., Any], *args: Arg,
          **options: Any) -> Case:
    return Case(name=name, build=build, reference=reference, args=tuple(args), **options)


def _int_case(name: str, build: Callable[..., Any], reference: Callable[..., Any], *args: Arg,
              **options: Any) -> Case:
    """A case without float inputs: not differentiable, one run."""
    return _case(name, build, reference, *args, float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS,
                 **options)


def _concat(axis: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda *xs: wt.concatenate(list(xs), axis=axis),
            lambda *xs: np.concatenate(xs, axis=axis))


def _stack(axis: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda *xs: wt.stack(list(xs), axis=axis),
            lambda *xs: np.stack(xs, axis=axis))


def _split(how: Any, axis: int = 0) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda x: wt.split(x, how, axis=axis), lambda x: np.split(x, how, axis=axis))


def _array_split(how: Any, axis: int = 0) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda x: wt.array_split(x, how, axis=axis),
            lambda x: np.array_split(x, how, axis=axis))


def _tile(reps: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda x: wt.tile(x, reps), lambda x: np.tile(x, reps))


M23 = Arg((2, 3))
T234 = Arg((2, 3, 4))

CASES: list[Case] = [
    # -- concatenate -----------------------------------------------------------------------
    _case("concatenate_axis0", *_concat(0), M23, Arg((4, 3))),
    _case("concatenate_axis_neg", *_concat(-1), M23, Arg((2, 1)), Arg((2, 0))),
    _case("concatenate_3d_axis1", *_concat(1), T234, Arg((2, 1, 4)), Arg((2, 5, 4))),
    _case("concatenate_static", *_concat(0), Arg((2, 3), static=True),
          Arg((1, 3), static=True)),
    _case("concatenate_partly_static", *_concat(1), Arg((2, 3), static=True), Arg((2, 2))),
    _case("concatenate_zero_size", *_concat(0), Arg((0, 3)), Arg((0, 3))),
    _case("concatenate_vectors", *_concat(0), Arg((3,)), Arg((1,)), Arg((0,)), Arg((2,))),
    _case("concatenate_axis_none", *_concat(None), M23, Arg((4,))),
    _case("concatenate_noncontiguous", *_concat(1), Arg((3, 4), sample=transposed),
          Arg((3, 2), sample=reversed_rows)),
    _case("concatenate_int_float", *_concat(0), Arg((2, 3), dtype="int32"), M23),
    _int_case("concatenate_int32", *_concat(-1), Arg((2, 2), dtype="int32"),
              Arg((2, 3), dtype="int32")),
    _int_case("concatenate_int8_int16", *_concat(0), Arg((1, 3), dtype="int8"),
              Arg((2, 3), dtype="int16")),
    _int_case("concatenate_bool_int8", *_concat(0), Arg((2,), dtype="bool"),
              Arg((3,), dtype="int8")),
    _int_case("concatenate_bool", *_concat(0), Arg((2, 2), dtype="bool"),
              Arg((1, 2), dtype="bool")),
    # -- stack / hstack / vstack -----------------------------------------------------------
    _case("stack_axis0", *_stack(0), M23, M23),
    _case("stack_axis_neg", *_stack(-1), M23, M23, M23),
    _case("stack_middle", *_stack(1), T234, T234),
    _case("stack_0d", *_stack(0), Arg(()), Arg(()), Arg(())),
    _case("stack_zero_size", *_stack(1), Arg((0, 2)), Arg((0, 2))),
    _case("stack_static", *_stack(0), Arg((2, 3), static=True), M23),
    _int_case("stack_int64", *_stack(0), Arg((3,), dtype="int64"), Arg((3,), dtype="int64")),
    _case("hstack_vectors", lambda x, y: wt.hstack([x, y]), lambda x, y: np.hstack([x, y]),
          Arg((3,)), Arg((2,))),
    _case("hstack_matrices", lambda x, y: wt.hstack([x, y]), lambda x, y: np.hstack([x, y]),
          M23, Arg((2, 1))),
    _case("vstack_vectors", lambda x, y: wt.vstack([x, y]), lambda x, y: np.vstack([x, y]),
          Arg((3,)), Arg((3,))),
    _case("vstack_mixed", lambda x, y: wt.vstack([x, y]), lambda x, y: np.vstack([x, y]),
          M23, Arg((3,))),
    # -- split / array_split -----------------------------------------------------------------
    _case("split_sections", *_split(3), Arg((6, 2))),
    _case("split_sections_axis_neg", *_split(2, -1), Arg((3, 4))),
    _case("split_sections_static", *_split(3), Arg((6,), static=True)),
    _case("split_one_section", *_split(1), M23),
    _case("split_zero_size", *_split(2), Arg((0, 3))),
    _case("split_indices", *_split([2, 5]), Arg((7, 2))),
    _case("split_indices_axis1", *_split([1, 3], 1), T234),
    _case("split_indices_static", *_split([1, 3]), Arg((5,), static=True)),
    _case("split_indices_negative", *_split([-4, -1]), Arg((6,))),
    _case("split_indices_out_of_range", *_split([2, 10]), Arg((5,))),
    _case("split_indices_unsorted", *_split([3, 1]), Arg((5, 2))),
    _case("split_indices_mixed_signs", *_split([1, -1]), Arg((4,))),
    _case("split_indices_empty_piece", *_split([0, 0, 2]), Arg((3,))),
    _case("split_reversed_value", *_split(2), Arg((4, 3), sample=reversed_rows)),
    _int_case("split_int16", *_split(2, 1), Arg((3, 4), dtype="int16")),
    _int_case("split_bool", *_split([1]), Arg((3,), dtype="bool")),
    _case("array_split_uneven", *_array_split(3), Arg((7,))),
    _case("array_split_static", *_array_split(3, -1), Arg((2, 8), static=True)),
    _case("array_split_more_than_length", *_array_split(4), Arg((2, 2))),
    _case("array_split_indices", *_array_split([2]), Arg((5,))),
    # -- repeat ------------------------------------------------------------------------------
    _case("repeat_axis", lambda x: x.repeat(2, axis=1), lambda x: np.repeat(x, 2, axis=1), M23),
    _case("repeat_axis_neg", lambda x: wt.repeat(x, 3, axis=-1),
          lambda x: np.repeat(x, 3, axis=-1), T234),
    _case("repeat_flat", lambda x: wt.repeat(x, 2), lambda x: np.repeat(x, 2), M23),
    _case("repeat_0d", lambda x: wt.repeat(x, 3), lambda x: np.repeat(x, 3), Arg(())),
    _case("repeat_zero", lambda x: wt.repeat(x, 0, axis=0), lambda x: np.repeat(x, 0, axis=0),
          M23),
    _case("repeat_static", lambda x: wt.repeat(x, 2, axis=0), lambda x: np.repeat(x, 2, axis=0),
          Arg((2, 3), static=True)),
    _case("repeat_counts", lambda x: wt.repeat(x, [1, 0, 2], axis=1),
          lambda x: np.repeat(x, [1, 0, 2], axis=1), M23),
    _case("repeat_single_count_vector", lambda x: wt.repeat(x, [2], axis=0),
          lambda x: np.repeat(x, [2], axis=0), M23),
    _case("repeat_symbolic_count", lambda x, n: wt.repeat(x, n, axis=0),
          lambda x, n: np.repeat(x, n, axis=0), M23, Arg((), dtype="int32", sample=fixed(3))),
    _case("repeat_symbolic_counts", lambda x, r: wt.repeat(x, r, axis=0),
          lambda x, r: np.repeat(x, r, axis=0), Arg((3, 2)),
          Arg((3,), dtype="int64", sample=fixed(2, 0, 1))),
    _case("repeat_zero_size", lambda x: wt.repeat(x, 2, axis=1),
          lambda x: np.repeat(x, 2, axis=1), Arg((0, 2))),
    _int_case("repeat_int32", lambda x: wt.repeat(x, 2, axis=0),
              lambda x: np.repeat(x, 2, axis=0), Arg((2, 2), dtype="int32")),
    _int_case("repeat_bool", lambda x: x.repeat(2), lambda x: np.repeat(x, 2),
              Arg((3,), dtype="bool")),
    # -- tile --------------------------------------------------------------------------------
    _case("tile_vector", *_tile(2), Arg((3,))),
    _case("tile_matrix", *_tile((2, 3)), M23),
    _case("tile_reps_longer", *_tile((2, 1, 2)), M23),
    _case("tile_reps_shorter", *_tile(2), T234),
    _case("tile_zero", *_tile((0, 2)), M23),
    _case("tile_ones", *_tile((1, 1)), M23),
    _case("tile_static", *_tile((3, 1)), Arg((1, 2), static=True)),
    _case("tile_0d", *_tile((2, 2)), Arg(())),
    _case("tile_symbolic", lambda x, n: wt.tile(x, (n, 2)),
          lambda x, n: np.tile(x, (int(n), 2)), M23, Arg((), dtype="int64", sample=fixed(3))),
    _int_case("tile_int8", *_tile((2, 1)), Arg((2, 2), dtype="int8")),
    _int_case("tile_bool", *_tile(3), Arg((2,), dtype="bool")),
]
