"""Catalogue cases of sorting, searching and counting: `sort`, `argsort`, `topk`,
`argtopk`, `searchsorted`, `unique`, `bincount`, `nonzero`, `argwhere` and
`histogram`, hence the `Sort`, `Argsort`, `TopK`, `SearchSorted`, `Unique`,
`Bincount` and `Nonzero` Ops.

Inputs include ties (small integers, repeated floats: the stable order is
checked), NaN (sorted last), empty and 0-d-flattened inputs, every axis, and
outputs whose length depends on the data. References are NumPy's functions
with ``kind="stable"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.testing.catalog import Arg, Case, numpy_reference, tensor_function

__all__ = ["CASES"]

INT_ONLY = "no float inputs"
INT_OUTPUT = "integer output (positions or counts)"
NOT_DIFFERENTIABLE = "piecewise constant in the input (counts and distinct values)"


def _wt() -> Any:
    import workbench.core.tensor as wt

    return wt


_call, _np = tensor_function, numpy_reference


def _ties(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Values from a small pool, so equal values (ties) are common."""
    return rng.choice([-1.5, 0.0, 0.25, 2.0], size=shape).astype(dtypes.as_dtype(dtype).numpy)


def _with_nan(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    values = rng.uniform(-2, 2, size=shape)
    values[rng.random(shape) < 0.25] = np.nan
    return values.astype(dtypes.as_dtype(dtype).numpy)


def _counts(high: int) -> Callable[[np.random.Generator, tuple[int, ...], str], Any]:
    def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
        return rng.integers(0, high, size=shape).astype(dtypes.as_dtype(dtype).numpy)

    return sample


def _sorted(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Increasing values with one repeat (for searchsorted's sides)."""
    values = np.sort(rng.uniform(-2, 2, size=shape))
    if shape[0] > 2:
        values[1] = values[2]
    return values.astype(dtypes.as_dtype(dtype).numpy)


def _stable(func: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    return _np(func, kind="stable", **kwargs)


def _np_topk(k: int, axis: int = -1, largest: bool = True, indices: bool = False
             ) -> Callable[..., Any]:
    """NumPy's top-k: a stable sort (of the reversed axis, for the largest first)."""

    def reference(x: Any) -> Any:
        n = x.shape[axis]
        if largest:
            order = (n - 1) - np.flip(np.argsort(np.flip(x, axis), axis, kind="stable"), axis)
        else:
            order = np.argsort(x, axis, kind="stable")
        order = np.take(order, np.arange(k), axis=axis)
        return order if indices else np.take_along_axis(x, order, axis)

    return reference


def _sort_cases() -> list[Case]:
    return [
        Case("sort_last_axis", _call("sort"), _stable(np.sort), (Arg((3, 5)),)),
        Case("sort_first_axis", _call("sort", axis=0), _stable(np.sort, axis=0),
             (Arg((4, 3)),)),
        Case("sort_flattened", _call("sort", axis=None), _stable(np.sort, axis=None),
             (Arg((2, 3, 2)),)),
        Case("sort_ties", _call("sort"), _stable(np.sort), (Arg((6,), sample=_ties),),
             grad="ties: the gradient picks one of the equal entries"),
        Case("sort_nan", _call("sort"), _stable(np.sort), (Arg((2, 6), sample=_with_nan),),
             grad="NaN inputs"),
        Case("sort_static", _call("sort", axis=0), _stable(np.sort, axis=0),
             (Arg((3, 2), static=True),)),
        Case("sort_empty", _call("sort"), _stable(np.sort), (Arg((2, 0)),)),
        Case("sort_int32", _call("sort", kind="quicksort"), _stable(np.sort),
             (Arg((7,), "int32", -5, 5),), grad=INT_ONLY),
        Case("sort_bool", _call("sort"), _stable(np.sort), (Arg((7,), "bool"),),
             grad=INT_ONLY),
        Case("argsort_last_axis", _call("argsort"), _stable(np.argsort), (Arg((3, 5)),),
             grad=INT_OUTPUT),
        Case("argsort_ties_axis0", _call("argsort", axis=0), _stable(np.argsort, axis=0),
             (Arg((6, 2), sample=_ties),), grad=INT_OUTPUT),
        Case("argsort_flattened_nan", _call("argsort", axis=None),
             _stable(np.argsort, axis=None), (Arg((2, 4), sample=_with_nan),),
             grad=INT_OUTPUT),
        Case("argsort_int64", _call("argsort"), _stable(np.argsort),
             (Arg((8,), "int64", -3, 3),), grad=INT_ONLY),
        Case("topk_largest", _call("topk", 2), _np_topk(2), (Arg((3, 5)),)),
        Case("topk_smallest_axis0", _call("topk", 3, axis=0, largest=False),
             _np_topk(3, 0, False), (Arg((4, 2)),)),
        Case("topk_ties", _call("topk", 3), _np_topk(3), (Arg((2, 6), sample=_ties),),
             grad="ties: the gradient picks one of the equal entries"),
        Case("topk_zero", _call("topk", 0), _np_topk(0), (Arg((3, 4)),)),
        Case("argtopk_ties", _call("argtopk", 4), _np_topk(4, indices=True),
             (Arg((3, 6), sample=_ties),), grad=INT_OUTPUT),
        Case("argtopk_nan_int", _call("argtopk", 2, axis=0), _np_topk(2, 0, indices=True),
             (Arg((5, 2), "int16", -3, 3),), grad=INT_ONLY),
        Case("topk_values_and_indices",
             lambda x: [_wt().topk(x, 2, axis=1), _wt().argtopk(x, 2, axis=1)],
             lambda x: [_np_topk(2, 1)(x), _np_topk(2, 1, indices=True)(x)], (Arg((3, 4)),)),
    ]


def _search_cases() -> list[Case]:
    return [
        Case("searchsorted_left", _call("searchsorted"), _np(np.searchsorted),
             (Arg((6,), sample=_sorted), Arg((3, 4), low=-2.5, high=2.5)), grad=INT_OUTPUT),
        Case("searchsorted_right_ties", _call("searchsorted", side="right"),
             _np(np.searchsorted, side="right"),
             (Arg((8,), sample=_ties), Arg((5,), sample=_ties)), grad=INT_OUTPUT),
        Case("searchsorted_int_float", _call("searchsorted"), _np(np.searchsorted),
             (Arg((5,), "int64", sample=lambda r, s, d: np.arange(5)), Arg((4,), low=-1,
                                                                             high=5)),
             grad=INT_OUTPUT),
        Case("searchsorted_scalar", _call("searchsorted", side="right"),
             _np(np.searchsorted, side="right"), (Arg((5,), sample=_sorted), Arg(())),
             grad=INT_OUTPUT),
        Case("searchsorted_sorter", lambda a, v: _wt().searchsorted(a, v, sorter=_wt().argsort(a)),
             lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a)),
             (Arg((7,)), Arg((4,))), grad=INT_OUTPUT),
    ]


def _unique_cases() -> list[Case]:
    def unique_all(x: Any) -> Any:
        return _wt().unique(x, return_index=True, return_inverse=True, return_counts=True)

    def np_unique_all(x: Any) -> Any:
        return [np.asarray(r) for r in np.unique(x, return_index=True, return_inverse=True,
                                                 return_counts=True)]

    def unique_nans_apart(x: Any) -> Any:
        return _wt().unique(x, True, True, True, equal_nan=False)

    def np_unique_nans_apart(x: Any) -> Any:
        return [np.asarray(r) for r in np.unique(x, True, True, True, equal_nan=False)]

    return [
        Case("unique", _call("unique"), _np(np.unique), (Arg((3, 4), sample=_ties),),
             grad=NOT_DIFFERENTIABLE),
        Case("unique_all_outputs", unique_all, np_unique_all, (Arg((3, 5), sample=_ties),),
             grad=NOT_DIFFERENTIABLE),
        Case("unique_inverse", _call("unique", return_inverse=True),
             _np(np.unique, return_inverse=True), (Arg((2, 3), sample=_ties),),
             grad=NOT_DIFFERENTIABLE),
        Case("unique_nan", unique_all, np_unique_all, (Arg((8,), sample=_with_nan),),
             grad=NOT_DIFFERENTIABLE),
        Case("unique_nans_apart", unique_nans_apart, np_unique_nans_apart,
             (Arg((3, 4), sample=_with_nan),), grad=NOT_DIFFERENTIABLE),
        Case("unique_rows_with_nan", _call("unique", return_counts=True, axis=0),
             _np(np.unique, return_counts=True, axis=0),
             (Arg((6, 2), sample=_with_nan),), grad=NOT_DIFFERENTIABLE),
        Case("unique_empty", unique_all, np_unique_all, (Arg((0, 3)),),
             grad=NOT_DIFFERENTIABLE),
        Case("unique_int32", unique_all, np_unique_all, (Arg((9,), "int32", -2, 2),),
             grad=INT_ONLY),
        Case("unique_rows", _call("unique", return_inverse=True, return_counts=True, axis=0),
             _np(np.unique, return_inverse=True, return_counts=True, axis=0),
             (Arg((6, 2), sample=_ties),), grad=NOT_DIFFERENTIABLE),
        Case("unique_columns_all", lambda x: _wt().unique(x, True, True, True, axis=-1),
             lambda x: [np.asarray(r) for r in np.unique(x, True, True, True, axis=-1)],
             (Arg((2, 7), "int64", 0, 1),), grad=INT_ONLY),
        Case("unique_axis_static", _call("unique", axis=1), _np(np.unique, axis=1),
             (Arg((2, 5, 3), sample=_ties, static=True),), grad=NOT_DIFFERENTIABLE),
    ]


def _count_cases() -> list[Case]:
    return [
        Case("bincount", _call("bincount"), _np(np.bincount),
             (Arg((9,), "int64", sample=_counts(5)),), grad=INT_ONLY),
        Case("bincount_minlength_int32", _call("bincount", minlength=7),
             _np(np.bincount, minlength=7), (Arg((5,), "int32", sample=_counts(4)),),
             grad=INT_ONLY),
        Case("bincount_empty", _call("bincount", minlength=2), _np(np.bincount, minlength=2),
             (Arg((0,), "int64"),), grad=INT_ONLY),
        Case("bincount_weights", _call("bincount"), _np(np.bincount),
             (Arg((8,), "int64", sample=_counts(4)), Arg((8,)))),
        Case("nonzero_matrix", lambda x: _wt().nonzero(x > 0), lambda x: np.nonzero(x > 0),
             (Arg((3, 4)),), grad=INT_OUTPUT),
        Case("nonzero_int_vector", _call("nonzero"), lambda x: list(np.nonzero(x)),
             (Arg((7,), "int32", -1, 1),), grad=INT_ONLY),
        Case("nonzero_empty", _call("nonzero"), lambda x: list(np.nonzero(x)),
             (Arg((0, 2)),), grad=INT_OUTPUT),
        Case("flatnonzero", _call("flatnonzero"), _np(np.flatnonzero),
             (Arg((2, 3), "int64", -1, 1),), grad=INT_ONLY),
        Case("argwhere_scalar", _call("argwhere"), _np(np.argwhere), (Arg((), "int64", 0, 1),),
             grad=INT_ONLY),
        Case("argwhere", _call("argwhere"), _np(np.argwhere), (Arg((2, 3, 2), "bool"),),
             grad=INT_ONLY),
        Case("histogram", lambda a: list(_wt().histogram(a, 5)),
             lambda a: list(np.histogram(a, 5)), (Arg((4, 6)),), grad=NOT_DIFFERENTIABLE),
        Case("histogram_range_weights_density",
             lambda a, w: list(_wt().histogram(a, 4, range=(-1, 1), weights=w, density=True)),
             lambda a, w: list(np.histogram(a, 4, range=(-1, 1), weights=w, density=True)),
             (Arg((20,)), Arg((20,), low=0, high=1)), grad=NOT_DIFFERENTIABLE),
        Case("histogram_auto", lambda a: list(_wt().histogram(a, "auto")),
             lambda a: list(np.histogram(a, "auto")), (Arg((40,)),), grad=NOT_DIFFERENTIABLE),
        Case("histogram_stone_range", lambda a: list(_wt().histogram(a, "stone", (-1, 1.5))),
             lambda a: list(np.histogram(a, "stone", (-1, 1.5))), (Arg((30,)),),
             grad=NOT_DIFFERENTIABLE),
        Case("histogram_doane_int", lambda a: list(_wt().histogram(a, "doane")),
             lambda a: list(np.histogram(a, "doane")), (Arg((25,), "int64", -9, 9),),
             grad=INT_ONLY),
        Case("histogram_empty", lambda a: list(_wt().histogram(a, 3)),
             lambda a: list(np.histogram(a, 3)), (Arg((0,)),), grad=NOT_DIFFERENTIABLE),
        Case("histogram_constant_input", lambda a: list(_wt().histogram(a, 2)),
             lambda a: list(np.histogram(a, 2)), (Arg((5,), sample=lambda r, s, d: np.full(
                 s, 1.5, d)),), grad=NOT_DIFFERENTIABLE),
        Case("histogram_edges", lambda a, e: list(_wt().histogram(a, e)),
             lambda a, e: list(np.histogram(a, e)), (Arg((12,)), Arg((4,), sample=_sorted)),
             grad=NOT_DIFFERENTIABLE),
        Case("histogram_int_weights", lambda a, w: list(_wt().histogram(a, 3, weights=w)),
             lambda a, w: list(np.histogram(a, 3, weights=w)),
             (Arg((10,), "int32", -4, 4), Arg((10,), "int64", 0, 3)), grad=INT_ONLY),
    ]


CASES: list[Case] = [*_sort_cases(), *_search_cases(), *_unique_cases(), *_count_cases()]
