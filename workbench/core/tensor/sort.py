"""Sorting and searching: `Sort`, `Argsort`, `TopK` and `SearchSorted`.

Every sort is stable (equal values keep their order) and puts NaN last, on
every linker: NumPy's ``kind`` ("quicksort", "mergesort", "heapsort",
"stable") is accepted and computed stably, which is a valid result of each
kind and the only one the py, C and torch linkers can all agree on. Complex
values sort lexicographically (real part, then imaginary) as NumPy does; they
run on the host on the torch linker (torch has no complex sort).

Gradients: `sort`'s is the output gradient scattered back through the
permutation `argsort` gives; `topk`'s values scatter the same way into zeros;
the index outputs (argsort, argtopk, searchsorted) are integers, so nothing
flows through them. Sort, Argsort and SearchSorted have C (link/c/ops/sort.py:
NumPy's C API); TopK has none, so the C linker runs its `perform` and lists it
among its Python nodes with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.tensor.join import float_zeros_like
from workbench.core.tensor.reduction import as_grad_of, is_int_like
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = [
    "Argsort", "SearchSorted", "Sort", "TopK", "argsort", "argtopk", "searchsorted", "sort",
    "topk",
]  # fmt: skip

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _checked_axis(op: Op, x: Variable) -> None:
    if x.type.ndim == 0:
        raise ValueError(f"{op}: x must have at least 1 dimension, got {x.type} (flatten it "
                         "or use axis=None)")
    if op.axis >= x.type.ndim:
        raise ValueError(f"{op}: axis {op.axis} is out of bounds for x of type {x.type}")


def _non_negative_axis(axis: Any, what: str) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or axis < 0:
        raise ValueError(f"{what} axis must be a non-negative int, got {axis!r} (the functions "
                         "accept negative axes and None)")
    return int(axis)


_BFLOAT16 = np.dtype("bfloat16")  # ml_dtypes'


def numpy_ordered(x: np.ndarray) -> np.ndarray:
    """`x` in a dtype NumPy sorts and searches with NaN last: bfloat16 as float32 (exact;
    ml_dtypes' own comparisons let a NaN scramble the sort)."""
    return x.astype(np.float32) if x.dtype == _BFLOAT16 else x


def _stable_argsort(x: np.ndarray, axis: int) -> np.ndarray:
    return np.argsort(numpy_ordered(x), axis=axis, kind="stable")


def _comparisons(shape: tuple[int, ...], axis: int) -> float:
    """About n log2 n comparisons per sorted line of length n along `axis`."""
    n = shape[axis] if shape else 1
    lines = math.prod(shape) / n if n else 0
    return float(lines * n * max(math.log2(n), 1.0)) if n else 0.0


class Sort(Op):
    """numpy.sort along `axis` (a non-negative int): ascending, stable, NaN last."""

    __props__ = ("axis",)

    def __init__(self, axis: int = 0) -> None:
        self.axis = _non_negative_axis(axis, "Sort")

    def __str__(self) -> str:
        return f"Sort{{axis={self.axis}}}"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        _checked_axis(self, x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x = inputs[0]
        output_storage[0][0] = np.sort(numpy_ordered(x), axis=self.axis,
                                       kind="stable").astype(x.dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """Comparisons: about n log2 n per sorted line."""
        return _comparisons(inputs[0], self.axis)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``gx[argsort(x)] = gz`` along the axis: each input receives the gradient of
        the place it was sorted to."""
        from workbench.core.tensor.array_utils import put_along_axis
        from workbench.core.tensor.creation import zeros_like

        (x,), (gz,) = inputs, output_grads
        if is_int_like(x):
            return [float_zeros_like(x)]
        order = Argsort(self.axis)(x)
        return [as_grad_of(put_along_axis(zeros_like(gz), order, gz, self.axis), x)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """The evaluation point permuted as `x` is."""
        from workbench.core.tensor.array_utils import take_along_axis

        if eval_points[0] is None:
            return [None]
        return [take_along_axis(eval_points[0], Argsort(self.axis)(inputs[0]), self.axis)]


class Argsort(Op):
    """numpy.argsort along `axis` (a non-negative int), stable: int64 positions that sort
    `x`, equal values in their original order, NaN last."""

    __props__ = ("axis",)

    def __init__(self, axis: int = 0) -> None:
        self.axis = _non_negative_axis(axis, "Argsort")

    def __str__(self) -> str:
        return f"Argsort{{axis={self.axis}}}"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        _checked_axis(self, x)
        return Apply(self, [x], [TensorType("int64", x.type.shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        output_storage[0][0] = _stable_argsort(inputs[0], self.axis).astype(np.int64)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[0]]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[False]]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """Comparisons: about n log2 n per sorted line."""
        return _comparisons(inputs[0], self.axis)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Integer positions: nothing flows back."""
        return [float_zeros_like(inputs[0])]


def _sorted_input(x: Any, axis: int | None, kind: str | None, func: str
                  ) -> tuple[Variable, int]:
    from workbench.core.tensor.reshape import flatten
    from workbench.core.tensor.shape import normalize_axis

    if kind not in _KINDS:
        raise ValueError(f"{func}: kind must be one of {_KINDS[1:]}, got {kind!r}")
    x = as_tensor_variable(x)
    if axis is None:
        return flatten(x), 0
    if x.type.ndim == 0:
        raise ValueError(f"{func}: x must have at least 1 dimension for axis={axis!r}, got "
                         f"{x.type} (use axis=None)")
    return x, normalize_axis(axis, x.type.ndim, "axis")


def sort(a: Any, axis: int | None = -1, kind: str | None = None) -> Variable:
    """numpy.sort: `a` sorted along `axis` (None: the flattened `a`), stably."""
    x, axis = _sorted_input(a, axis, kind, "sort")
    return Sort(axis)(x)


def argsort(a: Any, axis: int | None = -1, kind: str | None = None) -> Variable:
    """numpy.argsort: the int64 positions that sort `a` along `axis` (None: flattened),
    equal values in their original order."""
    x, axis = _sorted_input(a, axis, kind, "argsort")
    return Argsort(axis)(x)


# -- TopK ---------------------------------------------------------------------------------


class TopK(Op):
    """The `k` largest (or, ``largest=False``, smallest) entries along `axis`, in order,
    and their int64 positions: outputs (values, indices).

    Ties keep the lower position first; NaN counts as the largest value (as it
    sorts last in NumPy). `k` is a Python int; a `k` larger than the axis is
    refused when the Op runs.
    """

    __props__ = ("k", "axis", "largest")

    def __init__(self, k: int, axis: int = 0, largest: bool = True) -> None:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"TopK: k must be a non-negative int, got {k!r}")
        self.k = int(k)
        self.axis = _non_negative_axis(axis, "TopK")
        self.largest = bool(largest)

    def __str__(self) -> str:
        which = "largest" if self.largest else "smallest"
        return f"TopK{{k={self.k}, axis={self.axis}, {which}}}"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        _checked_axis(self, x)
        length = x.type.shape[self.axis]
        if length is not None and length < self.k:
            raise ValueError(f"{self}: k={self.k} is larger than axis {self.axis} of x "
                             f"({x.type})")
        shape = list(x.type.shape)
        shape[self.axis] = self.k
        return Apply(self, [x], [TensorType(x.type.dtype, shape)(),
                                 TensorType("int64", shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        (x,) = inputs
        n = x.shape[self.axis]
        if self.k > n:
            raise ValueError(f"{self}: k={self.k} is larger than axis {self.axis} of x, "
                             f"of shape {x.shape}")
        if self.largest:  # descending, ties in original order: sort the reversed axis
            reversed_order = _stable_argsort(np.flip(x, self.axis), self.axis)
            order = (n - 1) - np.flip(reversed_order, self.axis)
        else:
            order = _stable_argsort(x, self.axis)
        order = np.take(order, np.arange(self.k), axis=self.axis).astype(np.int64)
        output_storage[0][0] = np.take_along_axis(x, order, self.axis)
        output_storage[1][0] = order

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        shape = list(input_shapes[0])
        shape[self.axis] = self.k
        return [tuple(shape), tuple(shape)]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True, False]]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """Comparisons of the sort it runs: about n log2 n per line."""
        return _comparisons(inputs[0], self.axis)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """The values' gradient scattered into zeros at the chosen positions."""
        from workbench.core.graph.type import is_disconnected
        from workbench.core.tensor.array_utils import put_along_axis
        from workbench.core.tensor.creation import zeros_like

        (x,), gz = inputs[0:1], output_grads[0]
        if is_int_like(x) or is_disconnected(gz):
            return [float_zeros_like(x)]
        g = put_along_axis(zeros_like(x, dtype=gz.type.dtype), outputs[1], gz, self.axis)
        return [as_grad_of(g, x)]


def _topk(x: Any, k: int, axis: int, largest: bool) -> list[Variable]:
    from workbench.core.tensor.shape import normalize_axis

    x = as_tensor_variable(x)
    if x.type.ndim == 0:
        raise ValueError(f"topk: x must have at least 1 dimension, got {x.type}")
    return TopK(k, normalize_axis(axis, x.type.ndim, "axis"), largest)(x)


def topk(x: Any, k: int, axis: int = -1, largest: bool = True) -> Variable:
    """The `k` largest entries of `x` along `axis`, largest first (``largest=False``:
    the smallest, smallest first)."""
    return _topk(x, k, axis, largest)[0]


def argtopk(x: Any, k: int, axis: int = -1, largest: bool = True) -> Variable:
    """The int64 positions of `topk(x, k, axis, largest)` along `axis`."""
    return _topk(x, k, axis, largest)[1]


# -- SearchSorted --------------------------------------------------------------------------

_SIDES = ("left", "right")


class SearchSorted(Op):
    """numpy.searchsorted: for each entry of `v`, the int64 position in the sorted
    vector `a` where it would be inserted (`side` "left": before equal entries,
    "right": after)."""

    __props__ = ("side",)

    def __init__(self, side: str = "left") -> None:
        if side not in _SIDES:
            raise ValueError(f"SearchSorted: side must be 'left' or 'right', got {side!r}")
        self.side = side

    def __str__(self) -> str:
        return f"SearchSorted{{{self.side}}}"

    def make_node(self, a: Any, v: Any) -> Apply:
        a, v = as_tensor_variable(a), as_tensor_variable(v)
        if a.type.ndim != 1:
            raise ValueError(f"searchsorted: a must be a 1-d sorted tensor, got {a.type}")
        if a.type.dtype.is_complex or v.type.dtype.is_complex:
            raise TypeError(f"searchsorted: complex values are not supported, got a {a.type} "
                            f"and v {v.type}")
        return Apply(self, [a, v], [TensorType("int64", v.type.shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        a, v = inputs
        output_storage[0][0] = np.asarray(np.searchsorted(
            numpy_ordered(a), numpy_ordered(np.asarray(v)), side=self.side), np.int64)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [input_shapes[1]]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[False], [False]]

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        """Comparisons: a binary search, log2 len(a) + 1, per value."""
        return float(math.prod(inputs[1]) * (math.log2(max(inputs[0][0], 1)) + 1))

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Integer positions: nothing flows back."""
        return [float_zeros_like(inputs[0]), float_zeros_like(inputs[1])]


def _checked_sorter(sorter: Any, a: Variable) -> Variable:
    """searchsorted's `sorter`, refused as NumPy refuses it: not one position per entry
    of `a` ("sorter.size must equal a.size", when built if the static shapes show it),
    or a position outside ``[0, len(a))`` ("Sorter index out of range.", when run; NumPy
    checks the positions its binary search reads, every linker here checks them all, so
    a negative one never wraps around)."""
    from workbench.core.tensor.math import and_, eq, ge, lt
    from workbench.core.tensor.reduction import all as all_
    from workbench.core.tensor.shape import check_and_raise, shape_tuple

    sorter = as_tensor_variable(sorter)
    if not sorter.type.dtype.is_int:
        raise TypeError(f"searchsorted: sorter must hold integer positions, got {sorter.type}")
    if sorter.type.ndim != 1 or a.type.ndim != 1:
        raise ValueError(f"searchsorted: sorter and a must be 1-d, got a sorter {sorter.type} "
                         f"for a {a.type}")
    (n,), (m,) = shape_tuple(a), shape_tuple(sorter)
    sized = n == m if isinstance(n, int) and isinstance(m, int) else eq(m, n)
    sorter = check_and_raise(sorter, [sized], "ValueError",
                             f"searchsorted: sorter.size must equal a.size, got a sorter "
                             f"{sorter.type} for a {a.type}")
    inside = all_(and_(ge(sorter, 0), lt(sorter, n)))
    return check_and_raise(sorter, [inside], "ValueError",
                           "searchsorted: Sorter index out of range. (every entry of sorter "
                           "must be a position in a, from 0 to len(a) - 1)")


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Variable:
    """numpy.searchsorted: where the entries of `v` go in the ascending vector `a` (or
    in ``a[sorter]`` when `sorter` gives the order). The result is not checked: an `a`
    that is not sorted gives meaningless positions, as in NumPy."""
    a = as_tensor_variable(a)
    if sorter is not None:
        known_good = getattr(sorter, "owner", None) is not None and isinstance(
            sorter.owner.op, Argsort) and sorter.owner.inputs[0] is a
        a = a[sorter if known_good else _checked_sorter(sorter, a)]
    return SearchSorted(side)(a, v)
