"""C for the shape and view Ops (DimShuffle, Reshape, BroadcastTo, SpecifyShape, Shape,
Shape_i) and the creation Ops (Alloc, ARange, Eye): the same values as `perform` on
every layout, views that share their input's memory and survive later calls, and the
same errors."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.function import Out
from workbench.core.compile.mode import Mode
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.creation import Alloc, ARange, Eye
from workbench.core.tensor.elemwise import DimShuffle
from workbench.core.tensor.reshape import BroadcastTo, Reshape
from workbench.core.tensor.shape import Shape, Shape_i, SpecifyShape, specify_shape
from workbench.core.tensor.type import TensorType

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")

C_MODE, PY_MODE = Mode(linker="c"), Mode(linker="py")  # no rewrites: the graphs stay as built
rng = np.random.default_rng(42)


def layouts(a):
    """`a` contiguous, Fortran-ordered, reversed along every axis and strided."""
    yield a
    yield np.asfortranarray(a)
    yield a[(slice(None, None, -1),) * a.ndim]
    big = np.repeat(np.repeat(a, 2, axis=0), 3, axis=-1) if a.ndim else a
    yield big[::2, ::3] if a.ndim >= 2 else big[::2] if a.ndim == 1 else big


def compile_both(inputs, outputs, kinds):
    """The function compiled with C and with Python; `kinds` must all have run as C."""
    fc = wb.function(inputs, outputs, mode=C_MODE)
    fp = wb.function(inputs, outputs, mode=PY_MODE)
    ran = {type(n.op) for n in fc.linker.report.c_nodes}
    missing = set(kinds) - ran
    assert not missing, f"ran through perform: {fc.linker.report.py_nodes}"
    return fc, fp


def assert_same(got, want):
    if not isinstance(got, (list, tuple)):
        got, want = [got], [want]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def same_errors(fc, fp, *args):
    """Both functions raise the same exception type with the same first line."""
    with pytest.raises(Exception) as c_err:
        fc(*args)
    with pytest.raises(Exception) as py_err:
        fp(*args)
    assert c_err.type is py_err.type
    assert str(c_err.value).splitlines()[0] == str(py_err.value).splitlines()[0]
    return c_err.value


# -- DimShuffle ---------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [(1, 0), ("x", 0, "x", 1), (1, "x", 0), (0, 1, "x")])
def test_dimshuffle_matches_perform_on_every_layout(pattern):
    x = wt.dmatrix("x")
    y = DimShuffle(2, pattern)(x)
    fc, fp = compile_both([x], [y, y * 2], [DimShuffle])
    for a in layouts(rng.normal(size=(3, 4))):
        assert_same(fc(a), fp(a))
    assert_same(fc(np.zeros((0, 5))), fp(np.zeros((0, 5))))


def test_dimshuffle_drops_length_one_dimensions_and_handles_zero_d():
    x = TensorType("float32", (None, 1, None))("x")
    s = wt.fscalar("s")
    outs = [DimShuffle(3, (2, 0))(x), DimShuffle(0, ("x", "x"))(s)]
    fc, fp = compile_both([x, s], outs, [DimShuffle])
    a = rng.normal(size=(2, 1, 3)).astype("float32")
    for arg in layouts(a):
        assert_same(fc(arg, np.float32(2)), fp(arg, np.float32(2)))


def test_dimshuffle_output_is_a_view_of_its_input_keeping_writeability():
    x = wt.dmatrix("x")
    f = wb.function([x], Out(DimShuffle(2, (1, "x", 0))(x), borrow=True), mode=C_MODE)
    a = rng.normal(size=(3, 4))
    out = f(a)
    assert np.shares_memory(out, a) and out.flags.writeable
    expected = a.T[:, None, :].copy()
    np.testing.assert_array_equal(out, expected)
    frozen = a.copy()
    assert out.base is a  # the view keeps the memory it reads alive
    del a
    np.testing.assert_array_equal(out, expected)
    frozen.flags.writeable = False
    assert not f(frozen).flags.writeable  # as numpy: a view of read-only data is read-only


def test_a_returned_view_is_not_overwritten_by_later_calls():
    x = wt.dmatrix("x")
    f = wb.function([x], [(x * 2).T, (x + 1)[1:, ::-1]], mode=C_MODE)
    assert {type(n.op) for n in f.linker.report.c_nodes} >= {DimShuffle}
    a = rng.normal(size=(3, 4))
    first = f(a)
    kept = [v.copy() for v in first]
    for _ in range(3):
        f(a * 10)  # the intermediate buffers under the views must not be reused
    for v, k in zip(first, kept):
        np.testing.assert_array_equal(v, k)
    del first
    assert_same(f(a), [(a * 2).T, (a + 1)[1:, ::-1]])


# -- Reshape ------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(12,), (-1,), (3, -1), (2, 2, 3), (-1, 1, 2), (1, 12, 1)])
def test_reshape_matches_numpy_on_every_layout(shape):
    x = wt.dmatrix("x")
    y = x.reshape(shape)
    fc, fp = compile_both([x], [y, y + 0], [Reshape])
    for a in layouts(rng.normal(size=(3, 4))):
        assert_same(fc(a), fp(a))
        np.testing.assert_array_equal(fc(a)[0], a.reshape(shape))


def test_reshape_with_a_symbolic_shape_views_contiguous_inputs_and_copies_others():
    x, shape = wt.dtensor3("x"), wt.lvector("shape")
    fc, fp = compile_both([x, shape], Out(Reshape(2)(x, shape), borrow=True), [Reshape])
    a = rng.normal(size=(2, 3, 4))
    for target in ([6, 4], [-1, 12], [24, -1], [4, 6]):
        out = fc(a, np.array(target))
        assert np.shares_memory(out, a)
        assert_same(out, fp(a, np.array(target)))
    t = a.transpose(1, 0, 2)  # no view possible: numpy copies, and so does C
    out = fc(t, np.array([6, 4]))
    assert not np.shares_memory(out, t)
    assert_same(out, t.reshape(6, 4))
    u = a.transpose(2, 0, 1)  # not contiguous, but its last two axes merge: a view
    out = fc(u, np.array([4, 6]))
    assert np.shares_memory(out, u) and np.shares_memory(u.reshape(4, 6), u)
    assert_same(out, u.reshape(4, 6))
    z = np.zeros((0, 3, 4))
    assert_same(fc(z, np.array([-1, 12])), fp(z, np.array([-1, 12])))


@pytest.mark.parametrize("target", [[5, -1], [-1, -1], [0, -1], [7, 2], [5, 5]])
def test_reshape_errors_match_perform(target):
    x, shape = wt.dvector("x"), wt.lvector("shape")
    fc, fp = compile_both([x, shape], Reshape(2)(x, shape), [Reshape])
    err = same_errors(fc, fp, np.arange(6.0), np.array(target))
    assert isinstance(err, ValueError)


def test_reshape_refuses_a_shape_vector_of_the_wrong_length_naming_the_input():
    x, shape = wt.dvector("x"), wt.lvector("shape")
    fc = wb.function([x, shape], Reshape(2)(x, shape), mode=C_MODE)
    with pytest.raises(ValueError, match=r"Reshape\{2\}: expected a shape of length 2, got 3"):
        fc(np.arange(6.0), np.array([1, 2, 3]))


# -- BroadcastTo, SpecifyShape, Shape, Shape_i --------------------------------------------


def test_broadcast_to_is_a_read_only_view_with_numpys_errors():
    x, n = wt.dvector("x"), wt.lscalar("n")
    y = wt.broadcast_to(x, (n, 2, x.shape[0]))
    fc, fp = compile_both([x, n], Out(y, borrow=True), [BroadcastTo])
    a = rng.normal(size=3)
    for arg in layouts(a):
        out = fc(arg, 4)
        assert_same(out, fp(arg, 4))
        assert not out.flags.writeable and np.shares_memory(out, arg)
    g = wt.broadcast_to(x, (n, 4))
    fc, fp = compile_both([x, n], g, [BroadcastTo])
    assert_same(fc(np.ones(1), 2), np.ones((2, 4)))
    same_errors(fc, fp, a, 2)
    same_errors(fc, fp, np.ones(1), -1)


def test_specify_shape_checks_and_passes_through():
    x, n = wt.dmatrix("x"), wt.lscalar("n")
    y = specify_shape(x, (n, 4))
    fc, fp = compile_both([x, n], [Out(y, borrow=True), y * 2], [SpecifyShape])
    a = rng.normal(size=(3, 4))
    out = fc(a, 3)
    assert out[0] is a or np.shares_memory(out[0], a)
    assert_same(out, fp(a, 3))
    err = same_errors(fc, fp, a, 2)
    assert isinstance(err, AssertionError) and "expected shape (2, 4), got shape (3, 4)" in str(err)


def test_shape_and_shape_i_on_any_layout_and_zero_size():
    x = wt.dtensor3("x")
    outs = [Shape()(x), Shape_i(0)(x), Shape_i(2)(x)]
    fc, fp = compile_both([x], outs, [Shape, Shape_i])
    for a in [rng.normal(size=(2, 3, 4)), np.zeros((0, 5, 1)), rng.normal(size=(4, 3, 2)).T]:
        got = fc(a)
        assert_same(got, fp(a))
        assert got[0].tolist() == list(a.shape)
    first = fc(np.zeros((1, 2, 3)))
    fc(np.zeros((4, 5, 6)))
    assert first[0].tolist() == [1, 2, 3] and first[1] == 1  # returned values stay put


# -- Alloc --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8", "bool",
                                   "complex128"])
def test_alloc_fills_with_a_scalar_or_broadcasts_a_value(dtype):
    v = TensorType(dtype, (None,))("v")
    s = TensorType(dtype, ())("s")
    n, m = wt.lscalar("n"), wt.lscalar("m")
    outs = [Alloc()(s, n, m), Alloc()(v, n, v.shape[0]), Alloc()(v[:1], n, m, 3)]
    fc, fp = compile_both([v, s, n, m], outs, [Alloc])
    vals = (rng.normal(size=5) * 10).astype(dtype)
    for arg in layouts(vals):
        got = fc(arg, vals[0], 3, 2)
        assert_same(got, fp(arg, vals[0], 3, 2))
    assert_same(fc(vals, vals[1], 0, 4), fp(vals, vals[1], 0, 4))


def test_alloc_gives_fresh_arrays_and_numpys_errors():
    v, n = wt.dvector("v"), wt.lscalar("n")
    y = Alloc()(v, n, 3)
    fc, fp = compile_both([v, n], y, [Alloc])
    first = fc(np.arange(3.0), 2)
    second = fc(np.ones(3), 2)
    np.testing.assert_array_equal(first, [[0, 1, 2], [0, 1, 2]])
    assert not np.shares_memory(first, second) and second.flags.writeable
    err = same_errors(fc, fp, np.ones(3), -1)
    assert "negative dimensions are not allowed" in str(err)
    err = same_errors(fc, fp, np.ones(2), 2)
    assert "could not broadcast input array from shape (2,) into shape (2,3)" in str(err)




@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint16"])
def test_arange_equals_numpy_to_the_last_bit(dtype):
    start, stop, step = wt.dscalar("start"), wt.dscalar("stop"), wt.dscalar("step")
    i, j, k = wt.lscalar("i"), wt.lscalar("j"), wt.lscalar("k")
    outs = [ARange(dtype)(start, stop, step), ARange(dtype)(i, j, k), ARange(dtype)(i, stop, k)]
    fc, fp = compile_both([start, stop, step, i, j, k], outs, [ARange])
    floats = [(0.1, 9.7, 0.3), (5.0, -5.0, -1.5), (-2.5, 3.0, 1.5), (0.0, 0.0, 1.0),
              (3.0, 1.0, 1.0), (0.5, 100.0, 0.7), (1.0, 2.0, 10.0)]
    ints = [(0, 10, 1), (120, 130, 3), (10, -3, -4), (5, 5, 1), (0, 1000, 7)]
    for (a, b, c), (u, v, w) in zip(floats, ints * 2):
        args = (a, b, c, u, v, w)
        try:
            want = fp(*args)
        except OverflowError:  # numpy refuses a first or second value out of the dtype
            with pytest.raises(OverflowError, match="out of bounds for"):
                fc(*args)
            continue
        assert_same(fc(*args), want)
    same_errors(fc, fp, 0.0, 1.0, 0.0, 0, 1, 1)
    same_errors(fc, fp, 0.0, np.nan, 1.0, 0, 1, 1)


def test_eye_matches_numpy_for_every_offset_and_dtype():
    n, m, k = wt.lscalar("n"), wt.lscalar("m"), wt.lscalar("k")
    outs = [Eye(d)(n, m, k) for d in ("float64", "int32", "bool", "complex128")]
    fc, fp = compile_both([n, m, k], outs, [Eye])
    for shape in [(3, 3), (2, 5), (5, 2), (0, 3), (1, 1)]:
        for off in (-6, -2, -1, 0, 1, 3, 7, -(2**63), 2**63 - 1):  # offsets at the int64 limits
            got = fc(*shape, off)
            assert_same(got, fp(*shape, off))
            np.testing.assert_array_equal(got[0], np.eye(*shape, off))
    same_errors(fc, fp, -1, 2, 0)


def test_debug_linker_finds_c_and_perform_agreeing_and_aliasing_as_declared():
    from workbench.core.link.c.debug import DebugLinker

    x, v, n = wt.dmatrix("x"), wt.dvector("v"), wt.lscalar("n")
    outs = [DimShuffle(2, (1, "x", 0))(x) * 1, x.reshape((-1,)) * 1, x.T.reshape((2, -1)) * 1,
            wt.broadcast_to(v, (n, 3)) * 1, specify_shape(x, (n, None)) * 1,
            Shape()(x) * 1, Alloc()(v, n, 3) * 1, ARange("float64")(v[0], 5.0, 0.5) * 1,
            Eye("float64")(n, 4, -1) * 1]
    linker = DebugLinker(prealloc=False)
    f = wb.function([x, v, n], outs, mode=Mode(linker=linker))
    kinds = {type(node.op) for node in linker.report.c_nodes}
    assert kinds >= {DimShuffle, Reshape, BroadcastTo, Shape, Alloc, ARange, Eye}
    a = rng.normal(size=(3, 2))
    for arg in (a, a[::-1], np.asfortranarray(a)):
        f(arg, np.arange(3.0), 3)
    assert linker.checks >= 2 * len(linker.report.c_nodes)


def test_the_lengths_of_each_dimension_share_one_kind():
    """Shape_i's dimension is the node's run-time data (codegen.node_labels)."""
    from workbench.core.link.c.codegen import node_source
    from workbench.core.tensor.shape import Shape_i

    x = wt.dtensor3("x")
    f = wb.function([x], [Shape_i(i)(x) for i in range(3)],
                    mode=Mode(linker="c", rewriter=None))
    nodes = f.maker.fgraph.toposort()
    assert len({node_source(n).source for n in nodes}) == 1
    assert [int(v) for v in f(np.zeros((2, 5, 7)))] == [2, 5, 7]
