"""Sorting, searching and counting beyond the catalogue: the stable order on every
linker, gradients (R_op), how the C linker reports these Ops, and bad input.

Values, shapes, first/second-order gradients and graph files of every function are
covered by the catalogue (workbench/testing/cases_sorting.py)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.link.c.compiler import has_compiler


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_ties_keep_their_order_on_every_linker(linker: str) -> None:
    x = wt.dmatrix("x")
    values = np.array([[2.0, 1.0, 2.0, 1.0, np.nan, 1.0], [0.0, 0.0, 0.0, -1.0, 3.0, 3.0]])
    f = wb.function([x], [wt.argsort(x), wt.argtopk(x, 4), wt.sort(x, axis=None),
                          wt.unique(x, return_index=True)[1]], linker=linker)
    order, top, flat, first = f(values)
    np.testing.assert_array_equal(order, np.argsort(values, kind="stable"))
    np.testing.assert_array_equal(top, [[4, 0, 2, 1], [4, 5, 0, 1]])
    np.testing.assert_array_equal(flat, np.sort(values, axis=None))
    np.testing.assert_array_equal(first, np.unique(values, return_index=True)[1])


def test_sort_rop_permutes_the_evaluation_point() -> None:
    x, v = wt.dvector("x"), wt.dvector("v")
    f = wb.function([x, v], wb.Rop(wt.sort(x), x, v))
    xs, vs = np.array([3.0, -1.0, 2.0]), np.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(f(xs, vs), [20.0, 30.0, 10.0])


def test_sort_gradient_follows_the_permutation() -> None:
    x = wt.dvector("x")
    g = wb.grad((wt.sort(x) * np.arange(4.0)).sum(), x)
    np.testing.assert_array_equal(wb.function([x], g)(np.array([5.0, -2.0, 9.0, 0.0])),
                                  [2.0, 0.0, 3.0, 1.0])


def test_topk_gradient_reaches_only_the_chosen_entries() -> None:
    x = wt.dmatrix("x")
    g = wb.grad(wt.topk(x, 1).sum(), x)
    np.testing.assert_array_equal(wb.function([x], g)(np.array([[1.0, 3.0], [4.0, 2.0]])),
                                  [[0.0, 1.0], [1.0, 0.0]])


def test_bincount_gradient_wrt_weights() -> None:
    x, w = wt.lvector("x"), wt.dvector("w")
    g = wb.grad((wt.bincount(x, w) * np.array([1.0, 10.0, 100.0])).sum(), w)
    np.testing.assert_array_equal(wb.function([x, w], g)(np.array([2, 0, 2, 1]),
                                                         np.ones(4)), [100.0, 1.0, 100.0, 10.0])


@pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")
def test_c_linker_runs_sorting_and_selection_in_c() -> None:
    x = wt.dvector("x")
    f = wb.function([x], [wt.sort(x) * 2, wt.bincount(wt.argsort(x), x, minlength=6),
                          wt.searchsorted(wt.sort(x), x), wt.nonzero(x > 0)[0],
                          wt.topk(x, 1), *wt.unique(x, True, True, True)], linker="c")
    assert f.linker.report.py_nodes == []
    c_ops = {str(node.op) for node in f.linker.report.c_nodes}
    assert {"Sort{axis=0}", "Argsort{axis=0}", "SearchSorted{left}", "Bincount{minlength=6}",
            "Nonzero", "TopK{k=1, axis=0, largest}", "Unique{index, inverse, counts}"} <= c_ops
    values = np.array([2.0, np.nan, -1.0, 2.0])
    for _ in range(2):  # the second call reuses the output buffers
        doubled, sums, positions, nonzero, top, *unique = f(values)
        for got, want in zip(unique, np.unique(values, True, True, True)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(doubled, np.sort(values) * 2)
        np.testing.assert_array_equal(sums, np.bincount(np.argsort(values, kind="stable"),
                                                        values, 6))
        np.testing.assert_array_equal(positions, np.searchsorted(np.sort(values), values))
        np.testing.assert_array_equal(nonzero, [0, 3])
        np.testing.assert_array_equal(top, [np.nan])
    i = wt.lvector("i")
    with pytest.raises(ValueError, match="non-negative, got the value -1"):
        wb.function([i], wt.bincount(i), linker="c")(np.array([0, -1]))


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_gpu_linker_runs_sorting_in_torch() -> None:
    pytest.importorskip("torch")
    from workbench.core.link.gpu import host_nodes

    x = wt.dmatrix("x")
    outs = [wt.sort(x), wt.topk(x, 1), *wt.unique(x, True, True, True), wt.argwhere(x > 0),
            wt.searchsorted(wt.sort(x, axis=None), x), wt.bincount(wt.argsort(x, axis=None))]
    f = wb.function([x], outs, linker="gpu")
    assert host_nodes(f) == []
    # complex sorts have no torch kernel: the node runs on the host, still correct
    z = wt.zvector("z")
    g = wb.function([z], wt.sort(z), linker="gpu")
    assert [str(n.op) for n in host_nodes(g)] == ["Sort{axis=0}"]
    values = np.array([1 + 2j, 1 - 1j, -3 + 0j])
    np.testing.assert_array_equal(g(values), np.sort(values))


def test_dynamic_lengths_print_as_unknown() -> None:
    x = wt.TensorType("float64", (4,))("x")
    assert wt.unique(x).type.shape == (None,)
    assert [v.type.shape for v in wt.nonzero(wt.dmatrix("m"))] == [(None,), (None,)]
    assert wt.topk(x, 3).type.shape == (3,)
    assert str(wt.topk(x, 3).owner.op) == "TopK{k=3, axis=0, largest}"


@pytest.mark.parametrize(("build", "error", "message"), [
    (lambda: wt.sort(wt.dvector("x"), kind="bogo"), ValueError, "kind must be one of"),
    (lambda: wt.sort(wt.dscalar("x")), ValueError, "at least 1 dimension"),
    (lambda: wt.argsort(wt.dmatrix("x"), axis=2), Exception, "axis"),
    (lambda: wt.Sort(-1), ValueError, "non-negative int"),
    (lambda: wt.topk(wt.TensorType("float64", (3,))("x"), 4), ValueError, "k=4 is larger"),
    (lambda: wt.topk(wt.dvector("x"), -1), ValueError, "k must be a non-negative int"),
    (lambda: wt.searchsorted(wt.dmatrix("a"), 1.0), ValueError, "a must be a 1-d sorted"),
    (lambda: wt.searchsorted(wt.dvector("a"), 1.0, side="middle"), ValueError, "side must"),
    (lambda: wt.searchsorted(wt.dvector("a"), 1.0, sorter=wt.dvector("s")), TypeError,
     "sorter must hold integer"),
    (lambda: wt.bincount(wt.dvector("x")), TypeError, "x must be a 1-d integer tensor"),
    (lambda: wt.bincount(wt.lvector("x"), minlength=-1), ValueError, "minlength"),
    (lambda: wt.nonzero(wt.dscalar("x")), ValueError, "at least 1 dimension"),
    (lambda: wt.unique(wt.dvector("x"), axis=1), Exception, "axis 1 is out of bounds"),
    (lambda: wt.Unique(axis=-1), ValueError, "None or a non-negative int"),
    (lambda: wt.histogram(wt.dvector("x"), 0), ValueError, "bins must be a positive int"),
    (lambda: wt.histogram(wt.dvector("x"), 3, range=(2, 1)), ValueError, "low <= high"),
    (lambda: wt.histogram(wt.dvector("x"), "best"), ValueError,
     "'best' is not a valid estimator"),
    (lambda: wt.histogram(wt.dvector("x"), "auto", weights=wt.dvector("w")), TypeError,
     "does not take weights"),
])
def test_bad_input_names_the_argument(build, error, message) -> None:
    with pytest.raises(error, match=message):
        build()


def test_bad_values_are_refused_when_run() -> None:
    x = wt.lvector("x")
    with pytest.raises(ValueError, match="non-negative, got the value -2"):
        wb.function([x], wt.bincount(x), linker="py")(np.array([1, -2]))
    v = wt.dvector("v")
    with pytest.raises(ValueError, match="k=3 is larger"):
        wb.function([v], wt.topk(v, 3), linker="py")(np.ones(2))


@pytest.mark.parametrize("rule", ["auto", "fd", "doane", "scott", "stone", "rice", "sturges",
                                  "sqrt"])
def test_histogram_bin_rules_match_numpy(rule: str) -> None:
    """Every NumPy estimator, on data of several sizes and shapes (skewed, constant, a
    single value, none), with and without a range that trims the data."""
    import warnings

    rng = np.random.default_rng(3)
    x = wt.dvector("x")
    data = [rng.normal(size=300), rng.exponential(size=500), rng.normal(size=3),
            np.array([2.0]), np.zeros(0), np.full(7, 3.0)]
    for limits in (None, (-1.0, 1.5)):
        f = wb.function([x], list(wt.histogram(x, rule, range=limits)), linker="py")
        for values in data:
            with warnings.catch_warnings():  # stone's "may be suboptimal"
                warnings.simplefilter("ignore", RuntimeWarning)
                counts, edges = np.histogram(values, rule, range=limits)
            got_counts, got_edges = f(values)
            np.testing.assert_array_equal(got_counts, counts)
            np.testing.assert_array_equal(got_edges, edges)


def test_flops_count_comparisons() -> None:
    x = wt.dmatrix("x")
    assert wt.Sort(1).flops([(3, 8)], [(3, 8)]) == 3 * 8 * 3
    assert wt.Argsort(0).flops([(0, 4)], [(0, 4)]) == 0.0
    assert wt.TopK(2, 1).flops([(2, 4)], [(2, 2), (2, 2)]) == 2 * 4 * 2
    assert wt.SearchSorted().flops([(8,), (5,)], [(5,)]) == 5 * 4
    profile = wb.profile(wb.function([x], wt.sort(x), linker="py"), np.ones((4, 16)), calls=1)
    assert "Sort" in str(profile)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_histogram_refuses_non_finite_data_without_a_range_as_numpy(linker: str) -> None:
    """NaN or inf in the data: NumPy's ValueError when the range is autodetected (the
    counts were all 0); with a finite range the values outside it are not counted."""
    x = wt.dvector("x")
    auto = wb.function([x], list(wt.histogram(x, 4)), linker=linker)
    rule = wb.function([x], list(wt.histogram(x, "auto")), linker=linker)
    ranged = wb.function([x], list(wt.histogram(x, 4, range=(0, 3))), linker=linker)
    for values in (np.array([1.0, np.nan, 2.0]), np.array([1.0, np.inf]),
                   np.array([-np.inf, 1.0]), np.array([np.nan])):
        for f in (auto, rule):
            with pytest.raises(ValueError, match="autodetected range of a is not finite"):
                f(values)
        with pytest.raises(ValueError, match="autodetected range"):
            np.histogram(values, 4)
        for got, want in zip(ranged(values), np.histogram(values, 4, range=(0, 3))):
            np.testing.assert_array_equal(got, want)
    finite = np.array([0.5, 2.0, 2.0, 7.0])
    for got, want in zip(auto(finite), np.histogram(finite, 4)):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match=r"supplied range of \[0, inf\] is not finite"):
        wt.histogram(x, 4, range=(0, np.inf))


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_unique_equal_nan_as_numpy(linker: str) -> None:
    """equal_nan=True (NumPy's default) counts the NaNs as one value, equal_nan=False
    keeps each (index, inverse and counts agreeing); rows holding a NaN are distinct
    either way (the gpu linker sorted them first)."""
    x, m = wt.dvector("x"), wt.dmatrix("m")
    outputs = [*wt.unique(x, True, True, True), *wt.unique(x, True, True, True,
                                                          equal_nan=False),
               *wt.unique(m, return_counts=True, axis=0, equal_nan=False)]
    f = wb.function([x, m], outputs, linker=linker)
    values = np.array([1.0, np.nan, 2.0, np.nan, 1.0, -np.inf, np.nan])
    rows = np.array([[np.nan, 1.0], [0.0, 1.0], [np.nan, 1.0], [0.0, 1.0]])
    want = [*np.unique(values, True, True, True), *np.unique(values, True, True, True,
                                                             equal_nan=False),
            *np.unique(rows, return_counts=True, axis=0)]
    got = f(values, rows)
    assert len(got[0]) == 4 and len(got[4]) == 6
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert str(wt.unique(x, equal_nan=False).owner.op) == "Unique{equal_nan=False}"


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_histogram_checks_edges_and_weights_and_sums_complex_weights(linker: str) -> None:
    """NumPy's refusals when run: edges that decrease, equal bins too narrow (or wide)
    for float, weights of another shape; complex weights give complex counts (they
    were refused)."""
    x, w, z, e = wt.dvector("x"), wt.dvector("w"), wt.zvector("z"), wt.dvector("e")
    f = wb.function([x, w, z, e], [*wt.histogram(x, 3, weights=w),
                                   wt.histogram(x, 3, weights=z, density=True)[0],
                                   wt.histogram(x, e)[0]], linker=linker)
    a, weights = np.array([1.0, 2.0, 3.0, 3.0]), np.array([1.0, 2.0, 0.5, 4.0])
    complex_weights, edges = np.array([1, 2j, 3, 1 + 1j]), np.array([0.0, 1.0, 1.0, 3.0])
    got = f(a, weights, complex_weights, edges)
    want = [*np.histogram(a, 3, weights=weights),
            np.histogram(a, 3, weights=complex_weights, density=True)[0],
            np.histogram(a, edges)[0]]
    for g, expected in zip(got, want):
        assert g.dtype == expected.dtype
        np.testing.assert_allclose(g, expected, rtol=1e-15)
    with pytest.raises(ValueError, match="bins must increase monotonically"):
        f(a, weights, complex_weights, np.array([0.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match=r"weights should have the same shape as a; they "
                       r"differ when run \(weights of shape \(\?,\) and a of shape \(\?,\)"):
        f(a, weights[:3], complex_weights, edges)
    with pytest.raises(ValueError, match="cannot create 3 finite-sized bins"):
        f(np.array([-1e308, 1e308]), np.ones(2), np.ones(2, complex), edges)
    with pytest.raises(ValueError, match=r"same shape as a, got weights of shape \(\?,\?\) "
                       r"and a of shape \(\?,\)"):
        wt.histogram(x, 3, weights=wt.dmatrix("m"))
    with pytest.raises(ValueError, match=r"got weights of shape \(3,\) and a of shape \(4,\)"):
        wt.histogram(wt.TensorType("float64", (4,))(), 3, weights=wt.TensorType("float64", (3,))())


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.parametrize(("dtype", "bounds"), [
    ("float32", (-0.3, 2.2)), ("float32", (np.float64(-0.3), np.float64(2.2))),
    ("float32", (np.float32(-0.3), np.float32(2.2))), ("float16", (-1.1, 0.7)),
    ("int8", (0, 3)), ("float32", None),
])
def test_histogram_edges_of_a_range_are_numpys_bit_for_bit(linker, dtype, bounds) -> None:
    """NumPy computes equal edges as linspace of the range in the range's precision
    (float64 for Python numbers) rounded to the edges' dtype: float32 data with
    range=(-0.3, 2.2) had edges computed in float32 (-0.22500001 for -0.225), so values
    on an edge (0.0, 0.9, 1.4, ...) were counted one bin off."""
    data = (np.arange(31) * 0.1).astype(dtype) if dtype != "int8" else np.arange(-3, 7, dtype=dtype)
    v = wt.TensorType(dtype, (None,))("v")
    for bins in (10, 100, "sturges"):
        counts, edges = wb.function([v], list(wt.histogram(v, bins, range=bounds)),
                                    linker=linker)(data)
        want_counts, want_edges = np.histogram(data, bins, range=bounds)
        assert edges.dtype == want_edges.dtype
        np.testing.assert_array_equal(edges, want_edges)
        np.testing.assert_array_equal(counts, want_counts)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_bincount_refuses_weights_of_another_length(linker: str) -> None:
    x, w = wt.lvector("x"), wt.dvector("w")
    f = wb.function([x, w], wt.bincount(x, w), linker=linker)
    np.testing.assert_array_equal(f(np.array([0, 2]), np.array([1.5, 2.0])), [1.5, 0, 2.0])
    with pytest.raises(ValueError, match="weights and x must have the same length"):
        f(np.array([0, 0, 2]), np.ones(2))


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_bincount_refuses_a_value_whose_count_has_no_int64_length(linker: str, dtype: str
                                                                  ) -> None:
    """max(x) + 1 entries: for x = 2**63 - 1 NumPy's length overflowed (an empty result, a
    corrupted heap after), C's was negative; a uint64 above 2**63 was read as negative.
    The gpu linker refuses uint64 (a known limit), by name."""
    x = wt.TensorType(dtype, (None,))("x")
    if linker == "gpu" and dtype == "uint64":
        with pytest.raises(Exception, match="does not support dtype uint64"):
            wb.function([x], wt.bincount(x), linker=linker)(np.array([1], dtype))
        return
    f = wb.function([x], wt.bincount(x), linker=linker)
    for value in (2**63 - 1, 2**63 + 5) if dtype == "uint64" else (2**63 - 1,):
        with pytest.raises(ValueError, match=f"x holds the value {value}, too large"):
            f(np.array([1, value], dtype))
    np.testing.assert_array_equal(f(np.array([3, 1], dtype)), [0, 1, 0, 1])


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_searchsorted_follows_numpys_nan_order(linker: str, dtype: str) -> None:
    """NumPy sorts NaN last and searches as if NaN were above +inf (all NaNs equal,
    -0.0 equal to 0.0): a sorted `a` ending in NaNs, with or without a sorter, on both
    sides (the gpu linker returned len(a) for values above the last finite entry)."""
    a, v = wt.TensorType(dtype, (None,))("a"), wt.TensorType(dtype, (None,))("v")
    outputs = [wt.searchsorted(a, v, side=side, sorter=sorter)
               for side in ("left", "right") for sorter in (None, wt.argsort(a))]
    f = wb.function([a, v], outputs, linker=linker)
    queries = np.array([5.0, np.nan, -np.nan, 2.0, 2.5, 0.0, -0.0, -np.inf, np.inf, 1.0],
                       dtype)
    for values in ([1.0, 2.0, np.nan], [3.0, 1.0, np.nan, 2.0, 2.0, -0.0, np.nan],
                   [-np.inf, -0.0, 0.0, np.inf, np.inf], [np.nan, np.nan], []):
        unsorted = np.array(values, dtype)
        got = f(np.sort(unsorted), queries)[0::2] + f(unsorted, queries)[1::2]
        want = [np.searchsorted(np.sort(unsorted), queries, side) for side in ("left", "right")]
        want += [np.searchsorted(unsorted, queries, side, sorter=np.argsort(unsorted))
                 for side in ("left", "right")]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_searchsorted_refuses_a_sorter_numpy_refuses(linker: str) -> None:
    """A sorter of another length than `a`, or with a position outside it, raises
    NumPy's ValueError (the answer came from ``a[sorter]``, another array, and a
    negative position wrapped around); when the static shapes already differ, at once."""
    a, v, s = wt.dvector("a"), wt.dvector("v"), wt.TensorType("int32", (None,))("s")
    f = wb.function([a, v, s], wt.searchsorted(a, v, side="right", sorter=s), linker=linker)
    values, queries = np.array([3.0, 1.0, 2.0]), np.array([2.5, 0.5, 2.0])
    np.testing.assert_array_equal(f(values, queries, np.array([1, 2, 0], np.int32)),
                                  np.searchsorted(values, queries, "right", [1, 2, 0]))
    for sorter, message in (([1, 2], "sorter.size must equal a.size"),
                            ([1, 2, 0, 0], "sorter.size must equal a.size"),
                            ([1, -1, 0], "Sorter index out of range"),
                            ([1, 2, 3], "Sorter index out of range")):
        with pytest.raises(ValueError, match=message):
            np.searchsorted(values, queries, sorter=sorter)
        with pytest.raises(ValueError, match=message):
            f(values, queries, np.array(sorter, np.int32))
    with pytest.raises(ValueError, match="sorter.size must equal a.size"):
        wt.searchsorted(wt.TensorType("float64", (4,))("a"), v,
                        sorter=wt.TensorType("int64", (3,))("s"))
    with pytest.raises(ValueError, match="sorter and a must be 1-d"):
        wt.searchsorted(a, v, sorter=wt.lmatrix("s"))
    # argsort(a) is a valid sorter of a: no check is put in the graph
    sorted_a = wt.searchsorted(a, v, sorter=wt.argsort(a)).owner.inputs[0]
    assert str(sorted_a.owner.inputs[1].owner.op) == "Argsort{axis=0}"


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_unique_along_an_axis_as_numpy(linker: str) -> None:
    """Distinct slices of a matrix holding NaNs and -0.0 in NumPy's order (NaN last in
    the lexicographic order; the gpu linker put those slices first, index, inverse and
    counts permuted alike), and of empty inputs (torch refused an empty dimension
    other than the axis)."""
    m, t = wt.dmatrix("m"), wt.dtensor3("t")
    f = wb.function([m, t], [*wt.unique(m, True, True, True, axis=0),
                             *wt.unique(m, False, True, True, axis=-1),
                             *wt.unique(t, False, True, True, axis=1)], linker=linker)
    rng = np.random.default_rng(0)
    matrix = rng.integers(0, 3, (7, 40)).astype(float)
    matrix[rng.random((7, 40)) < 0.1] = np.nan
    matrix[0, :5] = -0.0
    for rows, cube in ((matrix, np.zeros((2, 3, 4))), (np.zeros((0, 4)), np.zeros((2, 0, 3))),
                       (np.zeros((3, 0)), np.zeros((0, 2, 3)))):
        want = [*np.unique(rows, True, True, True, axis=0),
                *np.unique(rows, False, True, True, axis=-1),
                *np.unique(cube, False, True, True, axis=1)]
        for got, expected in zip(f(rows, cube), want):
            np.testing.assert_array_equal(got, expected)
            assert got.shape == expected.shape


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
@pytest.mark.linkers("py", "gpu")
def test_bfloat16_sorts_and_searches_with_nan_last(linker: str) -> None:
    """bfloat16 (ml_dtypes) in NumPy's float order, as its float32 values sort: the py
    linker's NumPy calls let a NaN scramble the sort (the C linker refuses bfloat16
    without a casting mode)."""
    import ml_dtypes

    x = wt.TensorType("bfloat16", (None,))("x")
    f = wb.function([x], [wt.sort(x), wt.argsort(x), *wt.unique(x, True, True, True),
                          wt.searchsorted(wt.sort(x), x, side="right"), *wt.TopK(3)(x)],
                    linker=linker)
    values = np.array([2, np.nan, -0.0, 1, 0, -np.inf, np.nan, 1], ml_dtypes.bfloat16)
    wide = values.astype(np.float32)
    order = np.argsort(wide, kind="stable")
    want = [np.sort(wide), order, *np.unique(wide, True, True, True),
            np.searchsorted(np.sort(wide), wide, side="right"), [np.nan, np.nan, 2.0], [1, 6, 0]]
    got = f(values)
    assert got[0].dtype == got[2].dtype == got[-2].dtype == values.dtype
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g, np.float64), w)
