"""Ops whose output length depends on the data: `Unique`, `Bincount`, `Nonzero`; and
`histogram`, built from `searchsorted` and `bincount`.

Their static output lengths are unknown (``?``). `infer_shape` gives what can be
computed without running the Op (`nonzero`: the count of non-zero entries;
`unique`'s inverse: the input's shape) and otherwise the length of the
output itself, which the shape machinery computes by running the Op.

No gradient flows through counts or positions. `unique`'s values are piecewise
constant in the input in the sense that matters (which values are distinct
changes discontinuously), so their gradient is undefined; `bincount`'s is
defined with respect to its weights (``gw = gz[x]``). Bincount and Nonzero have C
in link/c/ops/counting.py, Unique in link/c/ops/selection.py (real dtypes; complex
runs `perform`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.tensor.join import float_zeros_like
from workbench.core.tensor.reduction import as_grad_of
from workbench.core.tensor.type import TensorType
from workbench.core.tensor.variable import as_tensor_variable

__all__ = [
    "Bincount", "Nonzero", "Unique", "argwhere", "bincount", "flatnonzero", "histogram",
    "nonzero", "unique",
]  # fmt: skip


def _own_length(node: Apply, k: int) -> Any:
    from workbench.core.tensor.shape import shape_i

    return shape_i(node.outputs[k], 0)


# -- Unique -------------------------------------------------------------------------------


class Unique(Op):
    """numpy.unique: the sorted distinct values of the flattened input (``axis=None``;
    NaNs counted as one with ``equal_nan=True``, NumPy's default, each NaN its own value
    otherwise) or the distinct slices along `axis`, sorted lexicographically (a slice
    holding a NaN is always distinct, as in NumPy, whatever `equal_nan`); and as asked
    the int64 position of each one's first occurrence, the inverse (for every input
    entry, or slice, the position of its value) and the counts.

    Outputs in that order: values, then index, inverse, counts where asked.
    """

    __props__ = ("return_index", "return_inverse", "return_counts", "axis", "equal_nan")

    def __init__(self, return_index: bool = False, return_inverse: bool = False,
                 return_counts: bool = False, axis: int | None = None,
                 equal_nan: bool = True) -> None:
        self.return_index = bool(return_index)
        self.return_inverse = bool(return_inverse)
        self.return_counts = bool(return_counts)
        if not isinstance(equal_nan, (bool, np.bool_)):
            raise TypeError(f"unique: equal_nan must be a bool, got {equal_nan!r}")
        self.equal_nan = bool(equal_nan)
        if axis is not None and (isinstance(axis, (bool, np.bool_)) or not isinstance(
                axis, (int, np.integer)) or axis < 0):
            raise ValueError(f"Unique: axis must be None or a non-negative int, got {axis!r} "
                             "(the function unique accepts negative axes)")
        self.axis = None if axis is None else int(axis)

    def __str__(self) -> str:
        asked = [name for name, flag in (("index", self.return_index),
                                         ("inverse", self.return_inverse),
                                         ("counts", self.return_counts)) if flag]
        if self.axis is not None:
            asked.append(f"axis={self.axis}")
        if not self.equal_nan:
            asked.append("equal_nan=False")
        return f"Unique{{{', '.join(asked)}}}" if asked else "Unique"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if self.axis is None:
            values_shape: tuple[Any, ...] = (None,)
            inverse_shape = x.type.shape
        else:
            if self.axis >= x.type.ndim:
                raise ValueError(f"unique: axis {self.axis} is out of bounds for {x.type}")
            values_shape = tuple(None if d == self.axis else n
                                 for d, n in enumerate(x.type.shape))
            inverse_shape = (x.type.shape[self.axis],)
        outputs = [TensorType(x.type.dtype, values_shape)()]
        if self.return_index:
            outputs.append(TensorType("int64", (None,))())
        if self.return_inverse:
            outputs.append(TensorType("int64", inverse_shape)())
        if self.return_counts:
            outputs.append(TensorType("int64", (None,))())
        return Apply(self, [x], outputs)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        from workbench.core.tensor.sort import numpy_ordered

        x = inputs[0]
        results = np.unique(numpy_ordered(x), return_index=self.return_index,
                            return_inverse=self.return_inverse,
                            return_counts=self.return_counts, axis=self.axis,
                            equal_nan=self.equal_nan)
        results = results if isinstance(results, tuple) else (results,)
        for k, (storage, value) in enumerate(zip(output_storage, results)):
            out_type = node.outputs[k].type
            value = np.asarray(value, dtype=out_type.dtype.numpy)
            if k and out_type.ndim != 1:  # the inverse of axis=None: the input's shape
                value = value.reshape(x.shape)
            elif k:
                value = value.reshape(-1)
            storage[0] = value

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        from workbench.core.tensor.shape import shape_i

        axis = 0 if self.axis is None else self.axis
        count = shape_i(node.outputs[0], axis)
        values = (count,) if self.axis is None else tuple(
            count if d == axis else n for d, n in enumerate(input_shapes[0]))
        shapes: list[tuple[Any, ...]] = [values] + [(count,)] * (len(node.outputs) - 1)
        if self.return_inverse:
            shapes[1 + int(self.return_index)] = (tuple(input_shapes[0]) if self.axis is None
                                                  else (input_shapes[0][axis],))
        return shapes

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True] + [False] * (len(node.outputs) - 1)]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        from workbench.core.graph.type import grad_undefined

        return [grad_undefined(self, 0, inputs[0], "which values of x are distinct changes "
                               "discontinuously with x")]


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True
           ) -> Variable | list[Variable]:
    """numpy.unique: the sorted distinct values (of the flattened `ar`, or the distinct
    slices along `axis`), plus the index/inverse/counts outputs asked for, as a list.
    ``equal_nan=False`` keeps every NaN as a value of its own (``axis=None``)."""
    ar = as_tensor_variable(ar)
    if axis is not None:
        from workbench.core.tensor.shape import normalize_axis

        axis = normalize_axis(axis, ar.type.ndim, "axis")
    outputs = Unique(return_index, return_inverse, return_counts, axis,
                     equal_nan)(ar, return_list=True)
    return outputs[0] if len(outputs) == 1 else outputs


# -- Bincount -----------------------------------------------------------------------------


#: The largest value `bincount` counts: its result has max(x) + 1 entries, an int64 length
#: (NumPy's own max + 1 overflows at 2**63 - 1: an empty result, then a corrupted heap).
BINCOUNT_LARGEST = int(np.iinfo(np.int64).max) - 1
BINCOUNT_NEGATIVE = "bincount: x must be non-negative, got the value {}"
BINCOUNT_TOO_LARGE = ("bincount: x holds the value {}, too large: the result would have "
                      "max(x) + 1 entries, more than an int64 length")


def check_bincount_range(low: int, high: int) -> None:
    """The smallest and largest values of a non-empty x, checked as every linker does."""
    if low < 0:
        raise ValueError(BINCOUNT_NEGATIVE.format(low))
    if high > BINCOUNT_LARGEST:
        raise ValueError(BINCOUNT_TOO_LARGE.format(high))


class Bincount(Op):
    """numpy.bincount: how many times each value 0..N-1 occurs in the non-negative
    integer vector `x` (with `weights`: the sum of their weights, in float64), N the
    larger of ``max(x) + 1`` and `minlength`. Negative values are refused when run."""

    __props__ = ("minlength",)

    def __init__(self, minlength: int = 0) -> None:
        if isinstance(minlength, (bool, np.bool_)) or not isinstance(
                minlength, (int, np.integer)) or minlength < 0:
            raise ValueError(f"bincount: minlength must be a non-negative int, got "
                             f"{minlength!r}")
        self.minlength = int(minlength)

    def __str__(self) -> str:
        return f"Bincount{{minlength={self.minlength}}}"

    def make_node(self, x: Any, *weights: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.type.ndim != 1 or not (x.type.dtype.is_int or x.type.dtype.is_bool):
            raise TypeError(f"bincount: x must be a 1-d integer tensor, got {x.type}")
        if len(weights) > 1:
            raise TypeError(f"bincount: at most one weights input, got {len(weights)}")
        inputs = [x]
        dtype = "int64"
        if weights:
            w = as_tensor_variable(weights[0])
            if w.type.ndim != 1 or w.type.dtype.is_complex:
                raise TypeError(f"bincount: weights must be a 1-d real tensor, got {w.type}")
            inputs.append(w)
            dtype = "float64"
        return Apply(self, inputs, [TensorType(dtype, (None,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        x = inputs[0]
        if x.size:
            check_bincount_range(int(x.min()), int(x.max()))
        weights = inputs[1] if len(inputs) > 1 else None
        if weights is not None and len(weights) != len(x):
            raise ValueError(f"bincount: weights and x must have the same length, got "
                             f"{len(weights)} and {len(x)}")
        out = np.bincount(x.astype(np.int64), weights, minlength=self.minlength)
        output_storage[0][0] = out.astype(node.outputs[0].type.dtype.numpy)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [(_own_length(node, 0),)]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[False]] + [[True]] * (len(node.inputs) - 1)

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """With respect to the weights: each weight's bin's gradient, ``gz[x]``."""
        grads = [float_zeros_like(inputs[0])]
        if len(inputs) > 1:
            grads.append(as_grad_of(output_grads[0][inputs[0]], inputs[1]))
        return grads


def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Variable:
    """numpy.bincount: occurrences of 0, 1, ... in `x` (summed `weights`, in float64)."""
    op = Bincount(minlength)
    return op(x) if weights is None else op(x, weights)


# -- Nonzero ------------------------------------------------------------------------------


class Nonzero(Op):
    """numpy.nonzero: for each dimension of `x`, the int64 positions of its non-zero
    entries (in C order), as one output per dimension."""

    __props__ = ()

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.type.ndim == 0:
            raise ValueError(f"nonzero: x must have at least 1 dimension, got {x.type} "
                             "(NumPy refuses 0-d input too; use atleast_1d)")
        return Apply(self, [x], [TensorType("int64", (None,))() for _ in range(x.type.ndim)])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        for storage, positions in zip(output_storage, np.nonzero(inputs[0])):
            storage[0] = positions.astype(np.int64)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        from workbench.core.tensor.math import neq
        from workbench.core.tensor.reduction import sum

        count = sum(neq(node.inputs[0], 0), dtype="int64")
        return [(count,)] * len(node.outputs)

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[False] * len(node.outputs)]

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Integer positions: nothing flows back."""
        return [float_zeros_like(inputs[0])]


def nonzero(a: Any) -> list[Variable]:
    """numpy.nonzero: one int64 vector of positions per dimension of `a`."""
    return Nonzero()(a, return_list=True)


def flatnonzero(a: Any) -> Variable:
    """numpy.flatnonzero: positions of the non-zero entries of the flattened `a`."""
    from workbench.core.tensor.reshape import flatten

    return nonzero(flatten(as_tensor_variable(a)))[0]


def argwhere(a: Any) -> Variable:
    """numpy.argwhere: an (N, a.ndim) int64 matrix, one row per non-zero entry. A 0-d
    `a` gives shape (1, 0) when it is non-zero and (0, 0) when it is zero, as NumPy."""
    from workbench.core.tensor.join import stack

    a = as_tensor_variable(a)
    if a.type.ndim == 0:  # NumPy: argwhere(atleast_1d(a))[:, :0]
        return stack(nonzero(a.dimshuffle("x")), axis=1)[:, :0]
    return stack(nonzero(a), axis=1)


# -- histogram ----------------------------------------------------------------------------


def _outer_edges(a: Variable, range: Any, dtype: Any) -> tuple[Variable, Variable]:
    """numpy.histogram's first and last edges: `range`, or the data's min and max ((0, 1)
    for no data), widened by 0.5 each way when they are equal."""
    from workbench.core.tensor.math import and_, eq, isfinite, switch
    from workbench.core.tensor.reduction import max, min
    from workbench.core.tensor.shape import check_and_raise

    if range is not None:
        lo, hi = range
        if not lo <= hi:
            raise ValueError(f"histogram: range must be (low, high) with low <= high, "
                             f"got {range!r}")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"histogram: the supplied range of [{lo}, {hi}] is not finite")
        lo, hi = as_tensor_variable(np.asarray(lo, dtype.numpy)), as_tensor_variable(
            np.asarray(hi, dtype.numpy))
    else:  # NumPy's range of an empty `a` is (0, 1): +-inf sentinels keep min/max defined
        from workbench.core.tensor.join import concatenate
        from workbench.core.tensor.shape import shape_tuple

        lo = min(concatenate([a.astype(dtype), as_tensor_variable(np.array([np.inf],
                                                                           dtype.numpy))]))
        hi = max(concatenate([a.astype(dtype), as_tensor_variable(np.array([-np.inf],
                                                                            dtype.numpy))]))
        empty = eq(shape_tuple(a)[0], 0)
        lo, hi = switch(empty, 0.0, lo), switch(empty, 1.0, hi)
        # NumPy refuses NaN and infinite data without an explicit range, when run
        finite = [and_(isfinite(lo), isfinite(hi))]
        message = ("histogram: the autodetected range of a is not finite (a holds NaN or "
                   "infinite values); give a finite range= or remove them")
        lo, hi = (check_and_raise(v, finite, "ValueError", message) for v in (lo, hi))
    same = eq(lo, hi)
    return switch(same, lo - 0.5, lo), switch(same, hi + 0.5, hi)


def _edge_dtypes(a: Variable, range: Any) -> tuple[Any, Any]:
    """(the dtype equal edges are computed in, the edges' dtype). NumPy computes them as
    numpy.linspace of the outer edges: of an explicit range in its own precision (float64
    for Python numbers), rounded to result_type(range, a) (float32 for float32 data: the
    edges of range=(-0.3, 2.2) were computed in float32, -0.22500001 for NumPy's -0.225,
    and values on an edge counted in the bin beside); of the data's min and max in a's
    (floating) dtype."""
    from workbench.core import dtypes

    data = dtypes.result_type(a.type.dtype, 1.0)
    if range is None:
        return data, data
    lo, hi = range
    compute = np.result_type(lo, hi, 1.0)
    edges = np.result_type(lo, hi, np.empty(0, a.type.dtype.numpy))
    if edges.kind in "biu":
        edges = np.result_type(edges, float)
    return dtypes.as_dtype(compute), dtypes.as_dtype(edges)


def _edges(a: Variable, bins: Any, range: Any, weights: Any) -> tuple[Variable, Any]:
    """(bin edges, number of bins) of numpy.histogram's `bins` and `range`."""
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.grids import linspace

    dtype, edge_dtype = _edge_dtypes(a, range)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, (bool, np.bool_)):
        if bins < 1:
            raise ValueError(f"histogram: bins must be a positive int, got {bins}")
        lo, hi = _outer_edges(a, range, dtype)
        edges = cast(linspace(lo, hi, int(bins) + 1), edge_dtype)
        return _finite_sized(edges, int(bins)), int(bins)
    if isinstance(bins, str):
        from workbench.core.tensor.creation import arange
        from workbench.core.tensor.histogram_bins import bin_count
        from workbench.core.tensor.subtensor import set_subtensor

        if weights is not None:
            raise TypeError(f"histogram: bins={bins!r} (an estimator) does not take weights, "
                            "as in NumPy; give a number of bins or the edges")
        lo, hi = _outer_edges(a, range, dtype)
        n_bins = bin_count(bins, a, lo, hi, trim=range is not None, compare=edge_dtype)
        # numpy.linspace(lo, hi, n_bins + 1): start + j * step, the last edge exactly hi
        edges = arange(n_bins + 1).astype(dtype) * ((hi - lo) / n_bins.astype(dtype)) + lo
        edges = cast(set_subtensor(edges[-1], hi), edge_dtype)
        return _finite_sized(edges, "the"), n_bins
    edges = as_tensor_variable(bins)
    if edges.type.ndim != 1:
        raise ValueError(f"histogram: bins must be an int or a 1-d tensor of edges, got "
                         f"{edges.type}")
    from workbench.core.tensor.math import gt
    from workbench.core.tensor.reduction import any
    from workbench.core.tensor.shape import check_and_raise, shape_tuple

    edges = check_and_raise(edges, [~any(gt(edges[:-1], edges[1:]))], "ValueError",
                            "histogram: bins must increase monotonically, when an array")
    return edges, shape_tuple(edges)[0] - 1


def _finite_sized(edges: Variable, n_bins: Any) -> Variable:
    """Equal bins' `edges`, checked when run as NumPy does: each edge above the one before
    (a range too wide for float, or too narrow for `n_bins` bins, is refused)."""
    from workbench.core.tensor.math import ge
    from workbench.core.tensor.reduction import any
    from workbench.core.tensor.shape import check_and_raise

    return check_and_raise(edges, [~any(ge(edges[:-1], edges[1:]))], "ValueError",
                           f"histogram: too many bins for the data range; cannot create "
                           f"{n_bins} finite-sized bins")


def _same_shape_weights(w: Variable, a: Variable) -> Variable:
    """histogram's `weights`, which NumPy requires of a's shape (checked when run)."""
    from workbench.core.tensor.math import and_, eq
    from workbench.core.tensor.shape import check_and_raise, format_numpy_shape, shape_tuple

    shapes = (f"weights of shape {format_numpy_shape(w.type.shape)} and a of shape "
              f"{format_numpy_shape(a.type.shape)}")
    refusal = f"histogram: weights should have the same shape as a, got {shapes}"
    if w.type.ndim != a.type.ndim:
        raise ValueError(refusal)
    same: Any = True
    for n, m in zip(shape_tuple(w), shape_tuple(a)):
        if isinstance(n, int) and isinstance(m, int):
            if n != m:
                raise ValueError(refusal)
            continue
        same = eq(n, m) if same is True else and_(same, eq(n, m))
    # the lengths are known only when run (a check's message is fixed when built)
    return check_and_raise(w, [same], "ValueError", "histogram: weights should have the same "
                           f"shape as a; they differ when run ({shapes} as built)")


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: bool = False) -> tuple[Variable, Variable]:
    """numpy.histogram of the flattened `a`: (counts, bin edges). Bins are half-open
    except the last, which includes its right edge; values outside the edges are not
    counted. With `weights`, the bins sum them; `density` divides by the total and the
    bin widths. Not differentiable (the counts are piecewise constant in `a`).

    `bins` is a number of equal bins, a 1-d tensor of edges, or the name of one of
    NumPy's estimators ("auto", "fd", "doane", "scott", "stone", "rice", "sturges",
    "sqrt"; see `histogram_bins`), whose number of bins is computed when run.
    """
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.creation import zeros
    from workbench.core.tensor.join import concatenate, stack
    from workbench.core.tensor.math import and_, eq, ge, le, switch
    from workbench.core.tensor.reduction import sum
    from workbench.core.tensor.reshape import flatten
    from workbench.core.tensor.sort import searchsorted

    a = as_tensor_variable(a)
    if weights is not None:
        weights = _same_shape_weights(as_tensor_variable(weights), a)
    a = flatten(a)
    edges, n_bins = _edges(a, bins, range, weights)
    first, last = edges[0], edges[-1]
    position = searchsorted(edges, a, side="right") - 1
    position = switch(eq(a, last), n_bins - 1, position)
    inside = and_(ge(a, first), le(a, last))
    position = switch(inside, position, n_bins)  # an extra bin for the values outside
    # one more entry in that extra bin makes the counts at least n_bins + 1 long
    position = concatenate([position, stack([n_bins]).astype("int64")])
    if weights is None:
        counts = bincount(position)[:n_bins]
    else:
        w = flatten(weights)
        w = concatenate([w, zeros((1,), w.type.dtype)])
        if w.type.dtype.is_complex:  # NumPy sums complex weights: the two parts apart
            from workbench.core.tensor.grids import complex_from_parts
            from workbench.core.tensor.math import imag, real

            re, im = (bincount(position, part(w))[:n_bins] for part in (real, imag))
            counts = cast(complex_from_parts(re, im), w.type.dtype)
        else:
            counts = cast(bincount(position, w)[:n_bins], w.type.dtype)
    if density:
        widths = edges[1:] - edges[:-1]
        counts = counts / sum(counts) / widths
    return counts, edges
