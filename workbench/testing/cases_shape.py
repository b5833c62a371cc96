"""Catalogue cases of the shape family: `workbench.core.tensor.reshape` and `shape`.

Reshape (``-1``, tuples, symbolic lengths and symbolic shape vectors,
transposed and reversed inputs, zero-size and 0-d), flatten/ravel, squeeze,
expand_dims, transpose, swapaxes, moveaxis, atleast_*d, broadcast_to and
broadcast_arrays, on float, integer and bool tensors, with static and unknown
input shapes. The references are the NumPy functions of the same names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import workbench.core.tensor as wt
from workbench.testing.catalog import Arg, Case, random_array

INT_INPUTS = "integer inputs"
BOOL_INPUTS = "boolean inputs"
ONLY_FLOAT64 = ("float64",)  # for cases without float inputs: one run is enough


def _case(name: str, build: Callable[..., Any], reference: Callable[..., Any], *args: Arg,
          **options: Any) -> Case:
    return Case(name=name, build=build, reference=reference, args=tuple(args), **options)


def _int_case(name: str, build: Callable[..., Any], reference: Callable[..., Any], *args: Arg,
              **options: Any) -> Case:
    """A case without float inputs: not differentiable, one run."""
    dtypes = {a.dtype for a in args}
    reason = BOOL_INPUTS if dtypes == {"bool"} else INT_INPUTS
    return _case(name, build, reference, *args, float_dtypes=ONLY_FLOAT64, grad=reason,
                 **options)


def transposed(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A random array of `shape` laid out in Fortran order (a transposed view)."""
    return random_array(rng, tuple(reversed(shape)), dtype).T


def reversed_rows(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A random array of `shape` with a negative stride along its first dimension."""
    return random_array(rng, shape, dtype)[::-1]


def fixed(*values: int) -> Callable[[np.random.Generator, tuple[int, ...], str], np.ndarray]:
    """A sampler giving always the same integers (a length or a shape vector)."""
    def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
        return np.array(values if shape else values[0], dtype=dtype)

    return sample


M34 = Arg((3, 4))
T234 = Arg((2, 3, 4))
SCALAR = Arg(())

CASES: list[Case] = [
    # -- reshape ---------------------------------------------------------------------------
    _case("reshape_to_vector", lambda x: x.reshape(-1), lambda x: x.reshape(-1), M34),
    _case("reshape_neg_one", lambda x: x.reshape(2, -1), lambda x: x.reshape(2, -1), M34),
    _case("reshape_tuple", lambda x: x.reshape((4, 1, 3)), lambda x: x.reshape((4, 1, 3)), M34),
    _case("reshape_leading_unknown", lambda x: x.reshape(-1, 2, 3),
          lambda x: x.reshape(-1, 2, 3), T234),
    _case("reshape_static", lambda x: x.reshape(2, -1, 3), lambda x: x.reshape(2, -1, 3),
          Arg((3, 4), static=True)),
    _case("reshape_to_0d", lambda x: x.reshape(()), lambda x: x.reshape(()), Arg((1, 1))),
    _case("reshape_0d_to_matrix", lambda x: x.reshape(1, 1), lambda x: x.reshape(1, 1), SCALAR),
    _case("reshape_zero_size", lambda x: x.reshape(-1, 2), lambda x: x.reshape(-1, 2),
          Arg((0, 3, 2))),
    _case("reshape_zero_size_static", lambda x: x.reshape(3, 0), lambda x: x.reshape(3, 0),
          Arg((0, 3), static=True)),
    _case("reshape_of_transpose", lambda x: x.T.reshape(-1), lambda x: x.T.reshape(-1), M34),
    _case("reshape_fortran_value", lambda x: x.reshape(6, 2), lambda x: x.reshape(6, 2),
          Arg((3, 4), sample=transposed)),
    _case("reshape_reversed_value", lambda x: x.reshape(4, 3), lambda x: x.reshape(4, 3),
          Arg((3, 4), sample=reversed_rows)),
    _case("reshape_symbolic_length", lambda x, n: x.reshape(n, -1),
          lambda x, n: x.reshape(int(n), -1), M34, Arg((), dtype="int64", sample=fixed(6))),
    _case("reshape_symbolic_neg_one", lambda x, n: x.reshape(4, n),
          lambda x, n: x.reshape(4, int(n)), M34, Arg((), dtype="int32", sample=fixed(-1))),
    _case("reshape_shape_vector", lambda x, s: wt.reshape(x, s, ndim=3),
          lambda x, s: x.reshape(tuple(s)), T234,
          Arg((3,), dtype="int64", sample=fixed(4, -1, 2))),
    _case("reshape_static_shape_vector", lambda x, s: wt.reshape(x, s),
          lambda x, s: x.reshape(tuple(s)), T234,
          Arg((2,), dtype="int32", sample=fixed(-1, 6), static=True)),
    _case("reshape_like_other", lambda x, y: x.reshape(y.shape), lambda x, y: x.reshape(y.shape),
          Arg((2, 6)), Arg((4, 3))),
    _int_case("reshape_int32", lambda x: x.reshape(4, 3), lambda x: x.reshape(4, 3),
              Arg((2, 6), dtype="int32")),
    _int_case("reshape_int8_neg_one", lambda x: x.reshape(-1, 2, 2),
              lambda x: x.reshape(-1, 2, 2), Arg((2, 2, 2), dtype="int8")),
    _int_case("reshape_bool", lambda x: x.reshape(3, 2), lambda x: x.reshape(3, 2),
              Arg((6,), dtype="bool")),
    # -- flatten / ravel -------------------------------------------------------------------
    _case("flatten", lambda x: x.flatten(), lambda x: x.reshape(-1), T234),
    _case("flatten_ndim2", lambda x: wt.flatten(x, 2), lambda x: x.reshape(x.shape[0], -1),
          T234),
    _case("flatten_ndim2_zero_size", lambda x: wt.flatten(x, 2),
          lambda x: x.reshape(x.shape[0], 6), Arg((0, 3, 2))),
    _case("flatten_ndim3_static", lambda x: wt.flatten(x, 3),
          lambda x: x.reshape(2, 3, -1), Arg((2, 3, 4, 1), static=True)),
    _case("ravel", lambda x: wt.ravel(x), np.ravel, M34),
    _case("ravel_0d", lambda x: x.ravel(), np.ravel, SCALAR),
    _case("ravel_transposed_value", lambda x: x.ravel(), np.ravel, Arg((3, 4), sample=transposed)),
    _int_case("ravel_int64", lambda x: wt.ravel(x), np.ravel, Arg((2, 3), dtype="int64")),
    # -- squeeze / expand_dims ---------------------------------------------------------------
    _case("squeeze_static", lambda x: wt.squeeze(x), np.squeeze, Arg((1, 3, 1), static=True)),
    _case("squeeze_axis", lambda x: x.squeeze(1), lambda x: np.squeeze(x, 1), Arg((3, 1, 4))),
    _case("squeeze_neg_axes", lambda x: wt.squeeze(x, (0, -1)),
          lambda x: np.squeeze(x, (0, -1)), Arg((1, 3, 1))),
    _case("squeeze_to_0d", lambda x: wt.squeeze(x, (0, 1)), np.squeeze, Arg((1, 1))),
    _case("squeeze_zero_size", lambda x: wt.squeeze(x, -1), lambda x: np.squeeze(x, -1),
          Arg((0, 1))),
    _int_case("squeeze_bool", lambda x: wt.squeeze(x, 0), lambda x: np.squeeze(x, 0),
              Arg((1, 4), dtype="bool")),
    _case("expand_dims", lambda x: wt.expand_dims(x, 0), lambda x: np.expand_dims(x, 0), M34),
    _case("expand_dims_neg_tuple", lambda x: wt.expand_dims(x, (0, -1)),
          lambda x: np.expand_dims(x, (0, -1)), M34),
    _case("expand_dims_middle", lambda x: wt.expand_dims(x, (1, 3)),
          lambda x: np.expand_dims(x, (1, 3)), Arg((2, 0))),
    _case("expand_dims_0d", lambda x: wt.expand_dims(x, -1), lambda x: np.expand_dims(x, -1),
          SCALAR),
    _int_case("expand_dims_int16", lambda x: wt.expand_dims(x, 1),
              lambda x: np.expand_dims(x, 1), Arg((3,), dtype="int16")),
    # -- transpose / swapaxes / moveaxis -----------------------------------------------------
    _case("transpose", lambda x: wt.transpose(x), np.transpose, T234),
    _case("transpose_axes", lambda x: wt.transpose(x, (1, -1, 0)),
          lambda x: np.transpose(x, (1, -1, 0)), T234),
    _case("transpose_0d", lambda x: wt.transpose(x), np.transpose, SCALAR),
    _case("swapaxes", lambda x: wt.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1), T234),
    _case("moveaxis", lambda x: wt.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), T234),
    _case("moveaxis_tuple", lambda x: wt.moveaxis(x, (0, 1), (-1, 0)),
          lambda x: np.moveaxis(x, (0, 1), (-1, 0)), Arg((2, 3, 4, 5))),
    _int_case("transpose_uint8", lambda x: wt.transpose(x), np.transpose,
              Arg((2, 3), dtype="uint8", low=0, high=200)),
    # -- atleast_nd ------------------------------------------------------------------------
    _case("atleast_1d_0d", lambda x: wt.atleast_1d(x), np.atleast_1d, SCALAR),
    _case("atleast_2d_vector", lambda x: wt.atleast_2d(x), np.atleast_2d, Arg((3,))),
    _case("atleast_3d_vector", lambda x: wt.atleast_3d(x), np.atleast_3d, Arg((3,))),
    _case("atleast_3d_matrix", lambda x: wt.atleast_3d(x), np.atleast_3d, M34),
    _case("atleast_2d_several", lambda x, y: wt.atleast_2d(x, y),
          lambda x, y: list(np.atleast_2d(x, y)), SCALAR, T234),
    # -- broadcast_to / broadcast_arrays -----------------------------------------------------
    _case("broadcast_to_rows", lambda x: wt.broadcast_to(x, (2, 3)),
          lambda x: np.broadcast_to(x, (2, 3)), Arg((3,))),
    _case("broadcast_to_static", lambda x: wt.broadcast_to(x, (4, 2, 3)),
          lambda x: np.broadcast_to(x, (4, 2, 3)), Arg((1, 3), static=True)),
    _case("broadcast_to_0d", lambda x: wt.broadcast_to(x, (2, 2)),
          lambda x: np.broadcast_to(x, (2, 2)), SCALAR),
    _case("broadcast_to_zero_size", lambda x: wt.broadcast_to(x, (0, 3)),
          lambda x: np.broadcast_to(x, (0, 3)), Arg((1, 3))),
    _case("broadcast_to_symbolic", lambda x, n: wt.broadcast_to(x, (n, 1, 3)),
          lambda x, n: np.broadcast_to(x, (int(n), 1, 3)), Arg((1, 3)),
          Arg((), dtype="int64", sample=fixed(4))),
    _case("broadcast_to_shape_of", lambda x, y: wt.broadcast_to(x, y.shape),
          lambda x, y: np.broadcast_to(x, y.shape), Arg((3, 1)), T234),
    _int_case("broadcast_to_bool", lambda x: wt.broadcast_to(x, (2, 4)),
              lambda x: np.broadcast_to(x, (2, 4)), Arg((4,), dtype="bool")),
    _case("broadcast_arrays", lambda x, y: wt.broadcast_arrays(x, y),
          lambda x, y: list(np.broadcast_arrays(x, y)), Arg((3, 1)), Arg((4,))),
    _case("broadcast_arrays_zero_size", lambda x, y: wt.broadcast_arrays(x, y),
          lambda x, y: list(np.broadcast_arrays(x, y)), Arg((2, 1)), Arg((0,))),
    _case("broadcast_arrays_three", lambda x, y, z: wt.broadcast_arrays(x, y, z),
          lambda x, y, z: list(np.broadcast_arrays(x, y, z)), SCALAR, Arg((2, 1)),
          Arg((1, 1, 3), static=True)),
]
