"""CAReduce (Sum, Prod, Max, Min, All, Any, bitwise) and Argmax/Argmin in C, against
their `perform` on the same graphs.

Every layout an input can have goes through the same compiled functions: C and
Fortran order, transposed, negative strides, gaps, broadcast (stride 0), zero-size;
values with NaN and infinities; every combination of axes of a 3-d input; the dtypes where C's
arithmetic differs from NumPy's unless done with care (bool sums, small integers
accumulating in int64, wrapping int64 products, float32 sums that must stay as
accurate as NumPy's pairwise ones). Graphs are few and shared by the tests, so a cold
cache compiles a small number of node kinds.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.link.c.compiler import has_compiler
from workbench.core.scalar import math as smath
from workbench.core.tensor import reduction as R
from workbench.testing.layouts import LAYOUTS_3D

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

RNG = np.random.default_rng(11)
AXES_3D = [(), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), None]

LAYOUTS = LAYOUTS_3D


def compiled_and_reference(inputs, outputs):
    """The graph compiled with the C linker (every node in C) and with the Python one."""
    f = wb.function(inputs, outputs, linker="c")
    report = f.linker.report
    assert not report.py_nodes, report.py_nodes
    ops = {type(n.op) for n in report.c_nodes}
    assert ops & {R.Sum, R.Prod, R.Max, R.Min, R.All, R.Any, R.CAReduce, R.Argmax,
                  R.Argmin}, ops
    return f, wb.function(inputs, outputs, linker="py")


def assert_same(f_c, f_py, outputs, *values):
    """C and perform agree: dtype, shape and values (within the output type's tolerance)."""
    got, want = f_c(*values), f_py(*values)
    for out, g, w in zip(outputs, got, want):
        assert g.dtype == w.dtype, (out, g.dtype, w.dtype)
        assert g.shape == w.shape, (out, g.shape, w.shape)
        assert out.type.values_eq_approx(g, w), (out, g, w)


@pytest.fixture(scope="module")
def axes_graph():
    x = wt.dtensor3("x")
    outs = [R.Sum(axis)(x) for axis in AXES_3D] + [R.Max(axis)(x) for axis in AXES_3D]
    return x, outs, *compiled_and_reference([x], outs)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_axes_combination_on_every_layout(axes_graph, layout):
    x, outs, f_c, f_py = axes_graph
    value = LAYOUTS[layout](RNG.normal(size=(3, 4, 5)))
    if value.size == 0:  # Max has no identity: an empty reduced axis raises like NumPy
        sums = outs[:len(AXES_3D)]
        f_sum = wb.function([x], sums, linker="c")
        assert_same(f_sum, wb.function([x], sums, linker="py"), sums, value)
        return
    assert_same(f_c, f_py, outs, value)


def test_nan_and_infinities_propagate_like_numpy(axes_graph):
    _, outs, f_c, f_py = axes_graph
    value = RNG.normal(size=(3, 4, 5))
    value[0, 1, 2] = np.nan
    value[1, :, 3] = np.inf
    value[2, 2, :] = -np.inf
    value[2, 0, 0] = np.nan
    assert_same(f_c, f_py, outs, value)
    got = f_c(value)
    assert np.isnan(got[len(AXES_3D) + 3][0, 1])  # Max over axis 2: the row with the NaN
    assert np.isnan(got[-1])  # Max over everything


def test_one_long_contiguous_row_and_a_long_column():
    # the vectorised pairwise sum over contiguous data, and accumulation down columns
    x = wt.dmatrix("x")
    outs = [R.Sum((1,))(x), R.Sum((0,))(x), R.Max((1,))(x), R.Min((0,))(x)]
    f_c, f_py = compiled_and_reference([x], outs)
    assert_same(f_c, f_py, outs, RNG.normal(size=(3, 10_007)))
    assert_same(f_c, f_py, outs, RNG.normal(size=(10_007, 3)))


@pytest.mark.parametrize("dtype, ops", [
    ("float32", [R.Sum, R.Prod, R.Max, R.Min, R.All, R.Any]),
    ("int8", [R.Sum, R.Prod, R.Max, R.Min]),
    ("uint8", [R.Sum, R.Max]),
    ("bool", [R.Sum, R.Max, R.All, R.Any]),
    ("int64", [R.Sum, R.Prod]),
])
def test_dtypes_follow_numpys_accumulators(dtype, ops):
    x = wt.tensor3("x", dtype=dtype)
    outs = [op((1,))(x) for op in ops] + [op(None)(x) for op in ops[:1]]
    f_c, f_py = compiled_and_reference([x], outs)
    if dtype == "bool":
        value = RNG.random((3, 4, 5)) > 0.5
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        value = RNG.integers(info.min, info.max, size=(3, 4, 5), endpoint=True).astype(dtype)
    else:
        value = RNG.normal(size=(3, 4, 5)).astype(dtype)
    for layout in ("c_order", "negative_strides", "gaps"):
        assert_same(f_c, f_py, outs, LAYOUTS[layout](value))
    if dtype == "int64":  # products wrap around as NumPy's do
        big = np.full((2, 70, 3), 3, dtype=np.int64)
        assert_same(f_c, f_py, outs, big)
    if dtype == "float32":  # All/Any read NaN as true
        value[0, :, 0] = np.nan
        assert_same(f_c, f_py, outs, value)


def test_output_and_accumulator_dtypes():
    x, y, z = wt.dmatrix("x"), wt.fmatrix("y"), wt.bmatrix("z")
    outs = [R.Sum((1,), dtype="float32")(x), R.Sum((0,), acc_dtype="float64")(y),
            R.Prod(None, dtype="int16")(z), R.Max((1,))(z)]
    assert [str(o.type.dtype) for o in outs] == ["float32", "float32", "int16", "int8"]
    f_c, f_py = compiled_and_reference([x, y, z], outs)
    values = (RNG.normal(size=(4, 300)) * 1e3, RNG.normal(size=(5000, 3)).astype("float32"),
              RNG.integers(-3, 4, size=(3, 5)).astype("int8"))
    assert_same(f_c, f_py, outs, *values)
    assert_same(f_c, f_py, outs, *(v[::-1] for v in values))


def test_float32_sums_are_as_accurate_as_numpys_pairwise_ones():
    y = wt.fmatrix("y")
    out = R.Sum((1,))(y)
    f = wb.function([y], out, linker="c")
    value = np.full((2, 1_000_003), 0.1, dtype=np.float32)
    got = f(value)
    want = value.astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-6)  # a naive float32 loop is off by ~1e-3
    assert out.type.values_eq_approx(got, wb.function([y], out, linker="py")(value))


def test_bitwise_reductions_and_their_identities():
    x = wt.imatrix("x")
    outs = [R.CAReduce(smath.and_, (0,))(x), R.CAReduce(smath.or_, (1,))(x),
            R.CAReduce(smath.xor, None)(x)]
    f_c, f_py = compiled_and_reference([x], outs)
    value = RNG.integers(-2**31, 2**31, size=(4, 6)).astype(np.int32)
    assert_same(f_c, f_py, outs, value)
    assert_same(f_c, f_py, outs, value.T[::-1])
    empty = np.zeros((0, 3), dtype=np.int32)
    assert_same(f_c, f_py, outs, empty)
    assert f_c(empty)[0].tolist() == [-1, -1, -1]  # bitwise_and's identity


def test_empty_reductions_give_the_identity_or_numpys_error():
    x = wt.dmatrix("x")
    outs = [R.Sum((0,))(x), R.Prod((1,))(x), R.All((0,))(x), R.Any(None)(x)]
    f_c, f_py = compiled_and_reference([x], outs)
    for shape in [(0, 3), (3, 0), (0, 0)]:
        assert_same(f_c, f_py, outs, np.zeros(shape))
    f_max = wb.function([x], R.Max((0,))(x), linker="c")
    assert f_max(np.zeros((3, 0))).shape == (0,)  # nothing reduced is empty
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        f_max(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="zero-size array"):
        f_max(np.zeros((0, 0)))


def test_reused_output_storage_leaves_earlier_results_intact():
    x = wt.dmatrix("x")
    f = wb.function([x], R.Sum((1,))(x), linker="c")
    a, b = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5))
    first = f(a).copy()
    kept = f(a)
    second = f(b)
    np.testing.assert_allclose(kept, first)
    np.testing.assert_allclose(second, b.sum(axis=1))
    assert f(np.ones((7, 2))).tolist() == [2.0] * 7  # a new shape: fresh storage


# -- argmax / argmin --------------------------------------------------------------------


@pytest.fixture(scope="module")
def arg_graph():
    x = wt.dtensor3("x")
    outs = [cls(axis)(x) for cls, axis in itertools.product((R.Argmax, R.Argmin),
                                                            (None, 0, 1, 2))]
    return x, outs, *compiled_and_reference([x], outs)


@pytest.mark.parametrize("layout", [k for k in LAYOUTS if k != "zero_size"])
def test_argmax_argmin_on_every_layout(arg_graph, layout):
    _, outs, f_c, f_py = arg_graph
    assert_same(f_c, f_py, outs, LAYOUTS[layout](RNG.normal(size=(3, 4, 5))))
    # ties: the first index wins
    assert_same(f_c, f_py, outs, LAYOUTS[layout](RNG.integers(0, 2, (3, 4, 5)) * 1.0))


def test_argmax_the_first_nan_wins(arg_graph):
    _, outs, f_c, f_py = arg_graph
    value = RNG.normal(size=(3, 4, 600))  # rows longer than one scan block
    value[0, 0, 550] = np.nan
    value[0, 0, 570] = np.nan
    value[1, 2, 0] = np.nan
    value[2, 3, :] = -np.inf
    value[2, 1, 599] = np.inf
    assert_same(f_c, f_py, outs, value)
    got = f_c(value)
    assert got[3][0, 0] == 550 and got[7][0, 0] == 550  # axis 2
    assert got[0] == np.argmax(value) == 550


def test_argmax_of_integers_and_empty_inputs():
    x = wt.imatrix("x")
    outs = [R.Argmax(1)(x), R.Argmin(0)(x)]
    f_c, f_py = compiled_and_reference([x], outs)
    value = RNG.integers(-5, 5, size=(6, 700)).astype(np.int32)
    assert_same(f_c, f_py, outs, value)
    assert_same(f_c, f_py, outs, value[::-1, ::-3])
    assert_same(f_c, f_py, outs, np.zeros((3, 2), dtype=np.int32))  # all tied
    f_arg = wb.function([x], R.Argmax(1)(x), linker="c")
    assert f_arg(np.zeros((0, 4), dtype=np.int32)).shape == (0,)
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        f_arg(np.zeros((4, 0), dtype=np.int32))


def test_reductions_over_other_axes_share_one_kind_and_give_numpys_values():
    """The reduced axes are the node's run-time data (codegen.node_labels): sums of a
    3-d array over (0,), (2,) and (1,) make 2-d results with one compiled function."""
    from workbench.core.link.c.codegen import node_source

    x = wt.dtensor3("x")
    outs = [wt.sum(x, axis=0), wt.sum(x, axis=2), wt.sum(x, axis=1), wt.max(x, axis=0)]
    f = wb.function([x], outs, linker="c")
    sums = [n for n in f.maker.fgraph.toposort() if "Sum" in str(n.op)]
    assert len(sums) == 3 and len({node_source(n).source for n in sums}) == 1
    a = np.random.default_rng(3).standard_normal((3, 4, 5))
    for got, want in zip(f(a), [a.sum(0), a.sum(2), a.sum(1), a.max(0)]):
        np.testing.assert_allclose(got, want, rtol=1e-14)
