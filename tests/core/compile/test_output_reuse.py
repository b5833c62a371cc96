"""Output reuse: `Out(z, borrow=True)` on the C linker writes each call's result into the
array the previous call returned (no allocation per call), and never into anything the
call reads."""

import weakref

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.link.c.compiler import has_compiler

pytestmark = pytest.mark.skipif(not has_compiler(), reason="output reuse is the C linker's")


def chain(x, y):
    return wt.exp(x) * wt.sin(y) + x**2 / (1 + y * y)


def expected(a, b):
    return np.exp(a) * np.sin(b) + a**2 / (1 + b * b)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.uniform(-2, 2, 1000), rng.uniform(-2, 2, 1000)


@pytest.fixture
def vectors():
    return wt.dvector("x"), wt.dvector("y")


def test_a_lent_output_is_written_into_the_previous_result(data, vectors):
    a, b = data
    f = wb.function(list(vectors), wb.Out(chain(*vectors), borrow=True), linker="c")
    first = f(a, b)
    second = f(b, a)  # the caller still holds `first`
    assert second is first
    np.testing.assert_allclose(second, expected(b, a), rtol=1e-12)


def test_the_fast_path_and_the_python_path_both_reuse(data, vectors):
    a, b = data
    f = wb.function(list(vectors), wb.Out(chain(*vectors), borrow=True), linker="c")
    first = f(a, b)
    assert f(x=a, y=b) is first  # keywords: the Python call path
    f.trust_input = True
    assert f(a, b) is first


def test_outputs_are_new_arrays_by_default(data, vectors):
    a, b = data
    f = wb.function(list(vectors), chain(*vectors), linker="c")
    first = f(a, b)
    kept = first.copy()
    second = f(b, a)
    assert second is not first
    np.testing.assert_array_equal(first, kept)


def test_a_result_passed_back_in_is_never_overwritten_while_read(data, vectors):
    a, b = data
    x, y = vectors
    z = wt.exp(x) * 0.5 + y
    f = wb.function([x, y], [wb.Out(z, borrow=True), x + 1.0], linker="c")
    first, _ = f(a, b)
    before = first.copy()
    second, plus_one = f(first, b)  # the previous result is the input x
    assert second is not first
    np.testing.assert_array_equal(first, before)
    np.testing.assert_allclose(second, np.exp(before) * 0.5 + b, rtol=1e-12)
    np.testing.assert_array_equal(plus_one, before + 1.0)
    third, _ = f(second[::-1], b)  # a view of it: read, so not written either
    assert third is not second
    np.testing.assert_allclose(third, np.exp(second[::-1]) * 0.5 + b, rtol=1e-12)


def test_a_lent_view_of_an_input_never_writes_into_the_input(data):
    a, _ = data
    x = wt.dmatrix("x")
    f = wb.function([x], [wb.Out(x.T, borrow=True), wb.Out(wt.exp(x), borrow=True)],
                    linker="c")
    m = a.reshape(20, 50)
    kept = m.copy()
    transposed, e = f(m)
    transposed2, e2 = f(m * 2)
    np.testing.assert_array_equal(m, kept)
    np.testing.assert_array_equal(transposed2, (kept * 2).T)
    assert e2 is e
    np.testing.assert_allclose(e2, np.exp(kept * 2), rtol=1e-12)


def test_a_lent_output_that_is_also_an_update_is_a_new_array(data):
    a, _ = data
    x = wt.dvector("x")
    s = wb.shared(np.zeros(1000))
    new = s + x
    f = wb.function([x], wb.Out(new, borrow=True), updates={s: new}, linker="c")
    first = f(a)
    second = f(a)
    np.testing.assert_allclose(first, a)  # not overwritten: it is the shared value
    np.testing.assert_allclose(second, 2 * a)
    np.testing.assert_allclose(s.get_value(), 2 * a)


def test_a_dropped_result_is_reused_by_default_and_a_held_one_never(data, vectors):
    """Without borrow the runtime still writes into the previous result once the caller
    has let go of it (the output's cell is its only holder): no allocation per call for
    `f(a, b)` in a loop that does not keep the results."""
    a, b = data
    f = wb.function(list(vectors), chain(*vectors), linker="c")
    first = f(a, b)
    was_first = weakref.ref(first)
    del first
    second = f(b, a)
    assert was_first() is second  # the dropped array, written again
    np.testing.assert_allclose(second, expected(b, a), rtol=1e-12)
    view = second[:10]
    third = f(a, b)  # `second` and a view of it are held: a new array
    assert third is not second
    np.testing.assert_allclose(view, expected(b, a)[:10], rtol=1e-12)


def _buffers(f):
    """The data address of every intermediate ndarray a node of `f` left in its cell."""
    cells, outputs = f.vm.storage_map, set(f.maker.fgraph.outputs)
    return {v: cells[v][0].ctypes.data for v in cells if v.owner is not None
            and v not in outputs and isinstance(cells[v][0], np.ndarray)}


def test_an_intermediate_read_through_a_view_or_in_place_keeps_its_buffer(data):
    # exp(x) is read through the view y[::-1] and then written in place: the view's and
    # the in-place node's cells are emptied before each run, so exp's node, its cell the
    # one holder again, writes into the same buffer every call (issue 22: temporaries
    # were allocated per call)
    x = wt.dvector("x")
    y = wt.exp(x)
    f = wb.function([x], (wt.sin(y[::-1]) * y[::-1]).sum(), linker="c")
    ops = [type(n.op).__name__ for n in f.maker.fgraph.toposort()]
    assert "Subtensor" in ops and any(n.op.destroy_map for n in f.maker.fgraph.toposort())
    a, b = data
    f(a)
    first = _buffers(f)
    for v in (b, a):
        got = f(v)
        np.testing.assert_allclose(got, (np.sin(np.exp(v)[::-1]) * np.exp(v)[::-1]).sum(),
                                   rtol=1e-12)
        assert _buffers(f) == first


def test_an_intermediate_whose_view_the_caller_holds_is_never_overwritten(data):
    x = wt.dvector("x")
    y = wt.exp(x)
    f = wb.function([x], [y[::-1], y.sum()], linker="c")
    a, b = data
    held, _ = f(a)
    kept = held.copy()
    again, total = f(b)
    np.testing.assert_array_equal(held, kept)  # the caller's view: its base untouched
    np.testing.assert_allclose(again, np.exp(b)[::-1], rtol=1e-15)
    np.testing.assert_allclose(total, np.exp(b).sum(), rtol=1e-12)
