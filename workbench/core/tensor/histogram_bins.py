"""numpy.histogram's bin estimators (``bins="auto"``, "fd", "doane", "scott", "stone",
"rice", "sturges", "sqrt"), as graphs: the number of equal bins is computed when the
function runs, so the counts and edges have unknown (``?``) static lengths.

Each rule gives a bin width from the data (already trimmed to `range`), as NumPy's
``_hist_bin_*`` functions do; the number of bins is ``ceil((last - first) / width)``,
1 when the width is 0 or the data empty, and a width below 1 is raised to 1 for
integer data. "fd" and "auto" use the interquartile range of NumPy's default
(linear) percentile; "stone" minimises the cross-validated ISE over 1 ..
``max(100, sqrt(n))`` bins, as NumPy (which also warns when the bound is chosen;
a graph does not).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Variable

__all__ = ["BIN_RULES", "bin_count"]

#: the string values of `bins` numpy.histogram accepts
BIN_RULES = ("auto", "doane", "fd", "rice", "scott", "sqrt", "stone", "sturges")


def _percentile(sorted_x: Variable, n: Variable, q: float) -> Variable:
    """NumPy's linear percentile `q` of the sorted vector of length n >= 1, with its
    lerp (``b - (b - a) * (1 - t)`` for t >= 0.5)."""
    from workbench.core.tensor.math import floor, minimum, switch

    where = (q / 100.0) * (n - 1)
    below = floor(where)
    t = where - below
    lo = below.astype("int64")
    a, b = sorted_x[lo], sorted_x[minimum(lo + 1, n - 1)]
    return switch(t >= 0.5, b - (b - a) * (1 - t), a + (b - a) * t)


def _stone_bins(x: Variable, n: Variable, ptp: Variable, first: Variable, last: Variable
                ) -> Variable:
    """The number of bins in 1 .. max(100, int(sqrt n)) that minimises Stone's
    estimate ``(2 - (n + 1) sum p_k^2) / h``, the first one on ties (Python's min)."""
    from workbench.core.tensor.counting import bincount
    from workbench.core.tensor.creation import arange
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.math import eq, floor, maximum, sqrt, switch
    from workbench.core.tensor.reduction import argmin, sum

    upper = maximum(100, floor(sqrt(n.astype("float64"))).astype("int64"))
    k = arange(1, upper + 1).astype("float64").dimshuffle(0, "x")
    # each value's bin for every candidate k: numpy.histogram's uniform-bin rule
    # (floor of the scaled offset, the last edge in the last bin), data within range
    delta = last - first
    step = delta / k
    xs = x.dimshuffle("x", 0)
    index = floor((xs - first) / delta * k)
    index = index - (index >= k)
    index = index - (xs < index * step + first)
    edge_hi = switch(eq(index + 1, k), last, (index + 1) * step + first)
    index = index + ((xs >= edge_hi) & (index < k - 1))
    row = arange(upper).dimshuffle(0, "x")
    flat = (row * upper + index.astype("int64")).flatten()
    # one entry past the table makes bincount at least upper * upper long
    flat = concatenate([flat, (upper * upper).dimshuffle("x")])
    counts = bincount(flat)[: upper * upper].reshape((upper, upper)).astype("float64")
    p = counts / n.astype("float64")
    jhat = (2 - (n + 1) * sum(p * p, axis=1)) / (ptp / k[:, 0])
    return argmin(jhat) + 1


def _width(rule: str, x: Variable, n: Variable, first: Variable, last: Variable
           ) -> Variable:
    """The bin width of `rule` for the non-empty data vector `x` of length n."""
    from workbench.core.tensor.math import abs, log2, maximum, minimum, sqrt, switch
    from workbench.core.tensor.reduction import max, mean, min, std
    from workbench.core.tensor.sort import sort

    size = n.astype("float64")
    ptp = max(x) - min(x)

    def sturges() -> Variable:
        return ptp / (log2(size) + 1.0)

    def sqrt_rule() -> Variable:
        return ptp / sqrt(size)

    def fd() -> Variable:
        s = sort(x)
        iqr = _percentile(s, n, 75.0) - _percentile(s, n, 25.0)
        return 2.0 * iqr * size ** (-1.0 / 3.0)

    if rule == "sturges":
        return sturges()
    if rule == "sqrt":
        return sqrt_rule()
    if rule == "rice":
        return ptp / (2.0 * size ** (1.0 / 3))
    if rule == "scott":
        return (24.0 * np.pi ** 0.5 / size) ** (1.0 / 3.0) * std(x)
    if rule == "fd":
        return fd()
    if rule == "auto":
        return minimum(maximum(fd(), sqrt_rule() / 2), sturges())
    if rule == "doane":
        sg1 = sqrt(6.0 * (size - 2) / ((size + 1.0) * (size + 3)))
        sigma = std(x)
        g1 = mean(((x - mean(x)) / sigma) ** 3)
        width = ptp / (1.0 + log2(size) + log2(1.0 + abs(g1) / sg1))
        return switch((n > 2) & (sigma > 0.0), width, 0.0)
    # stone
    bins = _stone_bins(x, n, ptp, first, last).astype("float64")
    return switch((n <= 1) | (ptp == 0), 0.0, ptp / bins)


def bin_count(rule: str, a: Variable, first: Variable, last: Variable, trim: bool,
              compare: Any = "float64") -> Variable:
    """The int64 number of equal bins numpy.histogram picks for ``bins=rule`` on the
    flattened float data `a` of the given integer-ness, between the outer edges
    `first` and `last` (`trim`: drop the values outside them first, as NumPy does when
    a range is given, comparing in the dtype `compare`: NumPy rounds a Python range to
    float16 data's precision, where float16(0.7) > 0.7)."""
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.math import ceil, maximum, switch

    if rule not in BIN_RULES:
        raise ValueError(f"histogram: {rule!r} is not a valid estimator for bins; "
                         f"expected one of {', '.join(BIN_RULES)}")
    integer = a.type.dtype.kind in "iub"
    x = a.astype("float64")
    first64, last64 = first.astype("float64"), last.astype("float64")
    if trim:
        data, low, high = (v.astype(compare) for v in (a, first, last))
        x = x[(data >= low) & (data <= high)]
    n = x.shape[0]
    # with no data the rules see one dummy value (their width is then not used)
    x_safe = concatenate([x, first64.dimshuffle("x")])[: maximum(n, 1)]
    width = _width(rule, x_safe, maximum(n, 1), first64, last64)
    if integer:
        width = switch((width > 0) & (width < 1), 1.0, width)
    count = ceil((last64 - first64) / switch(width > 0, width, 1.0)).astype("int64")
    return switch((n > 0) & (width > 0), count, 1).astype("int64")

