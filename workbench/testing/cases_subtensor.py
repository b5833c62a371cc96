"""Catalogue cases of indexing: `Subtensor`, `AdvancedSubtensor`, `IncSubtensor` and
`AdvancedIncSubtensor`, through ``x[...]``, `set_subtensor` and `inc_subtensor`.

Most reading cases use the same Python function as graph builder and NumPy
reference (``lambda x: x[1:3, ::-1]`` works on both). Index arrays, masks and
symbolic scalars are symbolic inputs drawn by fixed or random samplers;
constant indices are written in the builder. Writing cases compare with a
copy of the input modified by NumPy assignment (``out[idx] = y``), or by
``np.add.at`` when incrementing, so repeated indices accumulate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]

INT_ONLY = "no float inputs"
INT_OUTPUT = "integer output (a length)"
Sampler = Callable[[np.random.Generator, tuple[int, ...], str], Any]


def _wt() -> Any:
    import workbench.core.tensor as wt

    return wt


def _fixed(value: Any) -> Sampler:
    """A sampler always giving `value` (an index, a slice bound, a condition)."""

    def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
        return np.full(shape, value, dtype=dtypes.as_dtype(dtype).numpy)

    return sample


def _indices(low: int, high: int) -> Sampler:
    """Random integer indices in [low, high) (negative ones count from the end)."""

    def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
        return rng.integers(low, high, size=shape).astype(dtypes.as_dtype(dtype).numpy)

    return sample


def _scalar(value: int, dtype: str = "int64") -> Arg:
    return Arg((), dtype, sample=_fixed(value))


def _same(name: str, index: Callable[..., Any], *args: Arg, **options: Any) -> Case:
    """A reading case whose builder and reference are the same indexing function."""

    def reference(*values: Any) -> Any:
        return np.array(index(*values), copy=True)

    return Case(name, index, reference, tuple(args), **options)


def _write(name: str, index: Callable[..., Any], args: tuple[Arg, ...], set_: bool,
           **options: Any) -> Case:
    """A writing case: inputs (x, y, *index inputs); `index(x, *indices)` indexes x."""

    def build(x: Any, y: Any, *indices: Any) -> Any:
        fn = _wt().set_subtensor if set_ else _wt().inc_subtensor
        return fn(index(x, *indices), y)

    def reference(x: Any, y: Any, *indices: Any) -> Any:
        out = x.copy()
        key = _key_of(index, x, indices)
        if set_:
            out[key] = y
        else:
            np.add.at(out, key, y)
        return out

    return Case(name, build, reference, args, **options)


class _KeyRecorder:
    """Stands in for an array to record the key it is indexed with."""

    key: Any = None

    def __getitem__(self, key: Any) -> _KeyRecorder:
        self.key = key
        return self


def _key_of(index: Callable[..., Any], x: Any, indices: tuple[Any, ...]) -> Any:
    recorder = _KeyRecorder()
    index(recorder, *indices)
    return recorder.key


# -- reading: basic indexing -----------------------------------------------------------

_BASIC = [
    _same("slice", lambda x: x[1:3], Arg((5, 4))),
    _same("slice_negative_step", lambda x: x[::-1, 1:], Arg((5, 4))),
    _same("slice_negative_bounds", lambda x: x[-2:0:-2], Arg((7,))),
    _same("slice_past_the_end", lambda x: x[2:100, -100:2], Arg((4, 3))),
    _same("slice_empty", lambda x: x[3:1], Arg((4, 3))),
    _same("slice_static_shape", lambda x: x[1:-1, ::2], Arg((5, 4), static=True)),
    _same("int", lambda x: x[1], Arg((3, 4))),
    _same("negative_ints", lambda x: x[-1, :, -2], Arg((3, 4, 2))),
    _same("ints_to_0d", lambda x: x[1, 2], Arg((3, 4))),
    _same("newaxis", lambda x: x[None, :, None], Arg((3, 4))),
    _same("ellipsis", lambda x: x[..., 1], Arg((2, 3, 4))),
    _same("ellipsis_newaxis", lambda x: x[0, ..., None], Arg((2, 3, 4))),
    _same("ellipsis_of_0d", lambda x: x[...], Arg(())),
    _same("zero_size", lambda x: x[1:, 0], Arg((0, 3))),
    _same("symbolic_int", lambda x, i: x[i], Arg((4, 3)), _scalar(2)),
    _same("symbolic_negative_int", lambda x, i: x[:, i], Arg((4, 3)), _scalar(-1, "int8")),
    _same("symbolic_slice", lambda x, a, b, c: x[a:b:c], Arg((7, 2)), _scalar(-1, "int32"),
          _scalar(1), _scalar(-2, "int16")),
    _same("symbolic_slice_start", lambda x, a: x[a:, 1:], Arg((6, 3)), _scalar(2)),
    _same("int_input", lambda x: x[::2, 1], Arg((5, 3), "int32"),
          float_dtypes=("float64",), grad=INT_ONLY),
    _same("bool_input", lambda x: x[1:], Arg((4,), "bool"), float_dtypes=("float64",),
          grad=INT_ONLY),
    _same("shape_entry", lambda x: x.shape[-1], Arg((2, 5)), grad=INT_OUTPUT),
]

# -- reading: advanced indexing --------------------------------------------------------

_ADVANCED = [
    _same("int_list", lambda x: x[[0, 4, 4, -1]], Arg((5, 3))),
    _same("int_array_input", lambda x, i: x[i], Arg((5, 3)), Arg((6,), "int64",
          sample=_indices(-5, 5))),
    _same("int_matrix_input", lambda x, i: x[:, i], Arg((3, 5)), Arg((2, 3), "int32",
          sample=_indices(0, 5))),
    _same("broadcast_arrays", lambda x, i, j: x[i, j], Arg((4, 5)),
          Arg((3, 1), "int64", sample=_indices(0, 4)), Arg((2,), "int16", sample=_indices(0, 5))),
    _same("arrays_separated_by_slice", lambda x: x[[0, 2], :, [1, 3]], Arg((3, 4, 5))),
    _same("int_and_array_separated", lambda x: x[0, :, [1, 2]], Arg((3, 4, 5))),
    _same("array_slice_newaxis", lambda x: x[None, [1, 3], 1:], Arg((4, 5))),
    _same("arrays_around_empty_ellipsis", lambda x: x[:, [0], ..., [1]], Arg((2, 3, 4))),
    _same("empty_list", lambda x: x[[]], Arg((4, 3))),
    _same("mask_input", lambda x, m: x[m], Arg((3, 4)), Arg((3, 4), "bool")),
    _same("mask_on_axis_1", lambda x, m: x[:, m], Arg((3, 4)), Arg((4,), "bool")),
    _same("mask_from_values", lambda x: x[x > 0], Arg((5,))),
    _same("constant_mask", lambda x: x[np.array([True, False, True, True])], Arg((4, 3))),
    _same("mask_0d", lambda x: x[True], Arg((3,))),
    _same("mask_and_array", lambda x, m: x[m, [0, 2, 1]], Arg((3, 3, 4)),
          Arg((3, 3), "bool", sample=lambda rng, s, d: np.eye(3, dtype=bool))),
    _same("int_array_of_ints", lambda x: x[[2, 0]], Arg((3, 2), "int32"),
          float_dtypes=("float64",), grad=INT_ONLY),
]

# -- writing ---------------------------------------------------------------------------

_WRITING = [
    _write("set_slice", lambda x: x[1:3], (Arg((5, 4)), Arg((2, 4))), True),
    _write("set_scalar_broadcast", lambda x: x[:, 1], (Arg((5, 4)), Arg(())), True),
    _write("set_newaxis", lambda x: x[None, 1], (Arg((3, 4)), Arg((1, 4))), True),
    _write("set_symbolic_int", lambda x, i: x[i], (Arg((4, 3)), Arg((3,)), _scalar(-2)), True),
    _write("inc_negative_step", lambda x: x[::-2], (Arg((6,)), Arg((3,))), False),
    _write("inc_int", lambda x: x[1], (Arg((3, 4)), Arg((4,))), False),
    _write("inc_symbolic_slice", lambda x, a, b: x[a:b, 0], (Arg((5, 2)), Arg((1,)),
           _scalar(1), _scalar(-1)), False),
    _write("inc_0d", lambda x: x[...], (Arg(()), Arg(())), False),
    _write("inc_ints", lambda x: x[1, 1], (Arg((3, 3), "int8"), Arg((), "int8")), False,
           float_dtypes=("float64",), grad=INT_ONLY),
    _write("set_repeated_indices", lambda x: x[[0, 2, 2]], (Arg((5,)), Arg((3,))), True),
    _write("inc_repeated_indices", lambda x, i: x[i], (Arg((5, 3)), Arg((8, 3)),
           Arg((8,), "int64", sample=_indices(-5, 5))), False),
    _write("inc_repeated_broadcast", lambda x, i: x[i], (Arg((4,)), Arg(()),
           Arg((3, 2), "int32", sample=_indices(0, 4))), False),
    _write("inc_mask", lambda x, m: x[m], (Arg((3, 4)), Arg(()), Arg((3, 4), "bool")), False),
    _write("set_mask", lambda x, m: x[:, m], (Arg((3, 4)), Arg((3, 1)), Arg((4,), "bool")),
           True),
    _write("inc_arrays_separated", lambda x, i, j: x[i, :, j],
           (Arg((3, 4, 5)), Arg((2, 4)), Arg((2,), "int64", sample=_indices(0, 3)),
            Arg((2,), "int64", sample=_indices(0, 5))), False),
    _write("inc_repeated_ints", lambda x: x[[1, 1, 3]], (Arg((4,), "int32"),
           Arg((3,), "int32")), False, float_dtypes=("float64",), grad=INT_ONLY),
]

CASES: list[Case] = [*_BASIC, *_ADVANCED, *_WRITING]
