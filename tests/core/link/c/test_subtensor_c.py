"""C for basic indexing: Subtensor views and IncSubtensor (set/increment, in place or on
a copy) give `perform`'s values for constant and run-time indices, negative steps,
clamped slice bounds, zero-size and non-contiguous inputs, and raise its errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.function import In, Out
from workbench.core.compile.mode import Mode
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.subtensor import SYMBOLIC, IncSubtensor, Subtensor
from workbench.core.tensor.type import TensorType

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")

C_MODE, PY_MODE = Mode(linker="c"), Mode(linker="py")  # no rewrites: the graphs stay as built
rng = np.random.default_rng(7)


def compile_both(inputs, outputs, kind):
    fc = wb.function(inputs, outputs, mode=C_MODE)
    fp = wb.function(inputs, outputs, mode=PY_MODE)
    assert kind in {type(n.op) for n in fc.linker.report.c_nodes}, fc.linker.report.py_nodes
    return fc, fp


def assert_same(got, want):
    if not isinstance(got, (list, tuple)):
        got, want = [got], [want]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def layouts(a):
    yield a
    yield np.asfortranarray(a)
    yield a[::-1, ::-1]
    yield np.repeat(np.repeat(a, 2, axis=0), 3, axis=1)[::2, ::3]


# -- Subtensor ----------------------------------------------------------------------


CONSTANT_INDICES = [
    (1,), (-1,), (slice(1, 3),), (slice(None, None, -1),), (slice(-2, None),),
    (1, slice(None, None, 2)), (slice(None), -2), (slice(5, -7, -2), slice(1, 100)),
    (slice(100, None),), (slice(None, None, -3), 0), (-4, -5),
]


@pytest.mark.parametrize("idx", CONSTANT_INDICES, ids=str)
def test_constant_indices_match_perform_on_every_layout(idx):
    x = wt.dmatrix("x")
    y = x[idx]
    fc, fp = compile_both([x], [y, y * 1], Subtensor)
    for a in layouts(rng.normal(size=(4, 5))):
        assert_same(fc(a), fp(a))
        np.testing.assert_array_equal(fc(a)[0], a[idx])


def test_run_time_slice_parts_follow_python_slices():
    x = wt.dvector("x")
    start, stop, step = wt.lscalar("start"), wt.lscalar("stop"), wt.lscalar("step")
    f = wb.function([x, start, stop, step], Out(x[start:stop:step], borrow=True), mode=C_MODE)
    g = wb.function([x, start, stop], Out(x[start:stop], borrow=True), mode=C_MODE)
    h = wb.function([x, step], Out(x[::step], borrow=True), mode=C_MODE)
    for fn in (f, g, h):
        assert [type(n.op) for n in fn.linker.report.c_nodes] == [Subtensor]
    a = np.arange(7.0)
    bounds = [-9, -7, -3, -1, 0, 1, 3, 6, 7, 9]
    for b, e, s in itertools.product(bounds, bounds, [-3, -1, 1, 2, 5]):
        np.testing.assert_array_equal(f(a, b, e, s), a[b:e:s])
        np.testing.assert_array_equal(g(a, b, e), a[b:e])
        np.testing.assert_array_equal(h(a, s), a[::s])
    out = f(a, 5, 1, -2)
    assert np.shares_memory(out, a) and out.flags.writeable  # a view of the input
    assert_same(f(np.zeros(0), 0, 5, 1), np.zeros(0))
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        f(a, 0, 3, 0)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_run_time_integer_indices_of_any_integer_dtype(dtype):
    x = wt.dtensor3("x")
    i = TensorType(dtype, ())("i")
    j = TensorType(dtype, ())("j")
    fc, fp = compile_both([x, i, j], Out(x[i, 1:, j], borrow=True), Subtensor)
    a = rng.normal(size=(3, 4, 5))
    signed = dtype.startswith("int")
    for u, v in [(0, 0), (2, 4), (1, 3)] + ([(-1, -5), (-3, 2)] if signed else []):
        iu, jv = np.array(u, dtype=dtype), np.array(v, dtype=dtype)
        got = fc(a, iu, jv)
        assert_same(got, fp(a, iu, jv))
        assert np.shares_memory(got, a)
    big = np.iinfo(dtype).max
    with pytest.raises(IndexError, match=rf"index {big if big < 2**63 else 2**63 - 1} is out "
                                         "of bounds for axis 0 with size 3"):
        fc(a, np.array(big, dtype=dtype), np.array(0, dtype=dtype))


def test_out_of_range_indices_raise_index_error_naming_the_input():
    x, i = wt.dmatrix("x"), wt.lscalar("i")
    fc, fp = compile_both([x, i], x[1:, i], Subtensor)
    a = rng.normal(size=(3, 4))
    for bad in (4, -5, 100):
        with pytest.raises(IndexError) as c_err:
            fc(a, bad)
        with pytest.raises(IndexError) as py_err:
            fp(a, bad)
        c_text, py_text = str(c_err.value), str(py_err.value)
        assert py_text.splitlines()[0] in c_text  # numpy's message...
        assert "index input 1" in c_text and "Subtensor{1:, i}" in c_text  # ...and where
    static = wb.function([x], x[:, 3], mode=C_MODE)
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 1 with size 2 "
                                         r"\(Subtensor\{:, 3\}\)"):
        static(a[:, :2])


def test_zero_d_results_and_zero_size_inputs():
    x = wt.dmatrix("x")
    fc, fp = compile_both([x], [x[1, 2], x[:, 1:1], x[::-1][2:]], Subtensor)
    a = rng.normal(size=(3, 4))
    got = fc(a)
    assert_same(got, fp(a))
    assert got[0].shape == () and isinstance(got[0], np.ndarray)
    z = np.zeros((3, 0))
    with pytest.raises(IndexError):
        fc(z)
    g = wb.function([x], x[1:, ::2], mode=C_MODE)
    assert_same(g(np.zeros((0, 4))), np.zeros((0, 2)))


def test_subtensor_view_survives_later_calls():
    x = wt.dmatrix("x")
    f = wb.function([x], (x * 2)[::-1, 1], mode=C_MODE)
    a = rng.normal(size=(3, 4))
    first = f(a)
    kept = first.copy()
    f(a + 100)
    np.testing.assert_array_equal(first, kept)


# -- IncSubtensor -------------------------------------------------------------------


WRITE_INDICES = [(1,), (slice(None, None, -1), 2), (slice(1, None), slice(None, None, -2)),
                 (slice(None), slice(3, 0, -1)), (-1, slice(2, 100))]


@pytest.mark.parametrize("idx", WRITE_INDICES, ids=str)
@pytest.mark.parametrize("set_instead_of_inc", [True, False])
def test_set_and_inc_subtensor_match_perform(idx, set_instead_of_inc):
    x = wt.dmatrix("x")
    region = x[idx]
    y = TensorType("float64", (None,) * region.type.ndim)("y")
    write = wt.set_subtensor if set_instead_of_inc else wt.inc_subtensor
    out = write(region, y)
    fc, fp = compile_both([x, y], out, IncSubtensor)
    for a in layouts(rng.normal(size=(4, 5))):
        shape = a[idx].shape
        for value in (rng.normal(size=shape), np.full((1,) * len(shape), 2.5),
                      rng.normal(size=shape[1:]) if shape else np.array(3.0)):
            value = value.reshape((1,) * (len(shape) - value.ndim) + value.shape)
            before = a.copy()
            assert_same(fc(a, value), fp(a, value))
            np.testing.assert_array_equal(a, before)  # not in place: x is unchanged


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "bool", "complex64", "float32"])
def test_inc_subtensor_follows_numpy_arithmetic_per_dtype(dtype):
    x = TensorType(dtype, (None, None))("x")
    y = TensorType(dtype, (None,))("y")
    i = wt.lscalar("i")
    outs = [wt.inc_subtensor(x[i], y), wt.set_subtensor(x[:, i], y[:1])]
    fc, fp = compile_both([x, y, i], outs, IncSubtensor)
    if dtype == "bool":
        a, b = rng.random((3, 4)) > 0.5, rng.random(4) > 0.5
    elif dtype.startswith("complex"):
        a = (rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))).astype(dtype)
        b = (rng.normal(size=4) - 2j).astype(dtype)
    else:  # values near the limits: increments wrap around as numpy's do
        info = np.iinfo(dtype) if dtype.startswith(("int", "uint")) else None
        lo, hi = (info.max - 5, info.max) if info else (-1, 1)
        a = rng.integers(lo, hi, size=(3, 4)).astype(dtype) if info else \
            rng.normal(size=(3, 4)).astype(dtype)
        b = rng.integers(0, 10, size=4).astype(dtype) if info else rng.normal(size=4) \
            .astype(dtype)
    for k in (0, 2, -1):
        assert_same(fc(a, b, k), fp(a, b, k))


def test_value_that_does_not_broadcast_raises_numpys_error():
    x, y = wt.dmatrix("x"), wt.dvector("y")
    fc, fp = compile_both([x, y], wt.set_subtensor(x[1:], y), IncSubtensor)
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\) "
                                         r"into shape \(2,4\)"):
        fc(np.zeros((3, 4)), np.ones(3))
    with pytest.raises(ValueError):
        fp(np.zeros((3, 4)), np.ones(3))
    g = wb.function([x, y], wt.inc_subtensor(x[:, 1:], y), mode=C_MODE)
    with pytest.raises(IndexError, match=None):
        wb.function([x, y], wt.inc_subtensor(x[5], y), mode=C_MODE)(np.zeros((3, 4)), np.ones(4))
    assert_same(g(np.zeros((0, 4)), np.ones(3)), np.zeros((0, 4)))  # zero-size region


def test_inplace_variant_writes_into_its_input():
    x, y, i = wt.dmatrix("x"), wt.dvector("y"), wt.lscalar("i")
    op = IncSubtensor([slice(None, None, -1), 0], set_instead_of_inc=False, inplace=True)
    assert op.destroy_map == {0: [0]}
    f = wb.function([In(x, mutable=True), y], op(x, y), mode=C_MODE)
    assert [type(n.op) for n in f.linker.report.c_nodes] == [IncSubtensor]
    a = rng.normal(size=(3, 4))
    expected = a.copy()
    expected[::-1, 0] += [1.0, 2.0, 3.0]
    out = f(a, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(a, expected)  # destroyed, as destroy_map says
    frozen = np.zeros((3, 4))
    frozen.flags.writeable = False  # a read-only input is copied, never written
    np.testing.assert_array_equal(f(frozen, np.ones(3))[:, 0], np.ones(3))
    assert not frozen.any()
    set_i = IncSubtensor([SYMBOLIC], set_instead_of_inc=True, inplace=True)
    g = wb.function([In(x, mutable=True), y, i], set_i(x, y, i), mode=C_MODE)
    b = np.zeros((3, 4))
    g(b, np.arange(4.0), -1)
    np.testing.assert_array_equal(b[-1], np.arange(4.0))


def test_a_value_overlapping_the_written_region_is_read_before_writing():
    x, y = wt.dvector("x"), wt.dvector("y")
    op = IncSubtensor([slice(1, None)], set_instead_of_inc=True, inplace=True)
    f = wb.function([In(x, mutable=True), y], op(x, y), mode=C_MODE, trust_input=True)
    assert [type(n.op) for n in f.linker.report.c_nodes] == [IncSubtensor]
    a = np.arange(6.0)
    f(a, a[:-1])  # y is x's memory shifted by one element
    np.testing.assert_array_equal(a, [0, 0, 1, 2, 3, 4])
    inc = IncSubtensor([slice(None, None, -1)], set_instead_of_inc=False, inplace=True)
    g = wb.function([In(x, mutable=True), y], inc(x, y), mode=C_MODE, trust_input=True)
    b = np.arange(4.0)
    g(b, b)
    np.testing.assert_array_equal(b, [3, 3, 3, 3])


def test_results_stay_unchanged_when_the_output_buffer_is_reused():
    x, y = wt.dmatrix("x"), wt.dscalar("y")
    f = wb.function([x, y], wt.set_subtensor(x[1], y) * 1, mode=C_MODE)
    a = rng.normal(size=(3, 4))
    first = f(a, 1.0)
    kept = first.copy()
    for k in range(3):
        np.testing.assert_array_equal(f(a * k, 2.0)[1], 2.0)
    np.testing.assert_array_equal(first, kept)


def test_debug_linker_checks_views_and_the_in_place_write():
    from workbench.core.link.c.debug import DebugLinker

    x, y, i = wt.dmatrix("x"), wt.dvector("y"), wt.lscalar("i")
    inplace = IncSubtensor([slice(None, None, -1), SYMBOLIC], inplace=True)
    region = x[1:, ::-1]
    outs = [region * 1, inplace(x * 1, y, i), wt.set_subtensor(region, y[:2]) * 1]
    linker = DebugLinker(prealloc=False)
    f = wb.function([x, y, i], outs, mode=Mode(linker=linker))
    assert {type(node.op) for node in linker.report.c_nodes} >= {Subtensor, IncSubtensor}
    a = rng.normal(size=(3, 2))
    for arg in (a, a[::-1], np.asfortranarray(a)):
        f(arg, np.arange(3.0), -1)
    assert linker.checks >= 2 * len(linker.report.c_nodes)
