"""C for advanced indexing: AdvancedSubtensor (gather) and AdvancedIncSubtensor (set, and
increment accumulating repeated indices like np.add.at) give NumPy's values and
`perform`'s for integer arrays (broadcast, negative, any integer dtype), boolean masks,
slices, None and Ellipsis mixed in, on non-contiguous inputs; bad indices raise
NumPy's IndexError, never a crash or a silent read."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import Mode
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")

C_MODE, PY_MODE = Mode(linker="c"), Mode(linker="py")  # no rewrites: the graphs stay as built
rng = np.random.default_rng(11)
X = rng.standard_normal((4, 5, 6))


def compile_both(inputs, output, kind):
    fc = wb.function(inputs, output, mode=C_MODE)
    fp = wb.function(inputs, output, mode=PY_MODE)
    assert kind in {type(n.op) for n in fc.linker.report.c_nodes}, fc.linker.report.py_nodes
    return fc, fp


def layouts(a):
    """The same values in C order, F order, reversed and strided views."""
    yield a
    yield np.asfortranarray(a)
    yield a[::-1, ::-1]
    yield np.repeat(a, 2, axis=-1)[..., ::2]


#: (name, index built from its arrays, the arrays' values)
I1 = np.array([3, -1, 0, 3, 1])
I2 = np.array([[0, -2], [1, 1]], dtype=np.int32)
COLS = np.array([0, 4, 5], dtype=np.uint8)
MASK = X[:, :, 0] > 0
GATHERS = [
    ("rows", lambda i: (i,), [I1]),
    ("matrix_index", lambda j: (j,), [I2]),
    ("second_axis", lambda i: (slice(None), i), [I1]),
    ("last_axis", lambda i: (Ellipsis, i), [I1]),
    ("two_adjacent", lambda i, j: (i, j), [I1, I1[::-1]]),
    ("broadcast", lambda j, c: (j[:, :, None] % 4, slice(1, None, 2), c), [I2, COLS]),
    ("separated", lambda i: (i, slice(None, None, -2), i), [I1]),
    ("with_int", lambda i: (1, slice(None), i), [I1]),
    ("with_negative_int", lambda i: (i, -2), [I1]),
    ("new_axis", lambda i: (None, i, None), [I1]),
    ("mask", lambda m: (m,), [MASK]),
    ("mask_then_slice", lambda m: (m, slice(None, 3)), [MASK]),
    ("mask1_and_array", lambda m, i: (m, slice(None), i), [MASK[:, 0], I1[:3]]),
    ("slice_between_masks", lambda m, i: (slice(3), m, i), [MASK[0], I1[:1]]),
]


@pytest.mark.parametrize(("name", "build", "values"), GATHERS, ids=[g[0] for g in GATHERS])
def test_gather_matches_numpy_and_perform(name, build, values):
    x = wt.dtensor3("x")
    vars_ = [wt.tensor(name=f"i{k}", dtype=str(v.dtype), shape=(None,) * v.ndim)
             for k, v in enumerate(values)]
    out = x[build(*vars_)]
    assert isinstance(out.owner.op, AdvancedSubtensor)
    fc, fp = compile_both([x, *vars_], out, AdvancedSubtensor)
    for xv in layouts(X):
        want = xv[build(*values)]
        for _ in range(2):  # the second call reuses the output buffer
            got = fc(xv, *values)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(fp(xv, *values), want)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint64", "int64"])
def test_index_dtypes(dtype):
    x = wt.dmatrix("x")
    i = wt.tensor(name="i", dtype=dtype, shape=(None,))
    fc, _ = compile_both([x, i], x[:, i], AdvancedSubtensor)
    idx = np.array([5, 0, 2, 2], dtype=dtype)
    np.testing.assert_array_equal(fc(X[0], idx), X[0][:, idx])


@pytest.mark.parametrize("dtype", ["float32", "int16", "complex128", "bool"])
def test_gather_any_dtype(dtype):
    x = wt.tensor(name="x", dtype=dtype, shape=(None, None))
    i = wt.lvector("i")
    fc, _ = compile_both([x, i], x[i], AdvancedSubtensor)
    xv = (X[0] * 3).astype(dtype)
    np.testing.assert_array_equal(fc(xv, I1), xv[I1])


def test_empty_index_and_empty_array():
    x = wt.dmatrix("x")
    i = wt.lvector("i")
    fc, _ = compile_both([x, i], x[i], AdvancedSubtensor)
    assert fc(X[0], np.array([], dtype=np.int64)).shape == (0, 6)
    # an empty broadcast reads no index (as NumPy): 9 is never checked
    fc2, _ = compile_both([x, i], x[i, i[:0]], AdvancedSubtensor)
    assert fc2(X[0], np.array([9])).shape == (0,)
    # an empty row still has its indices checked (as NumPy)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 4"):
        fc(np.zeros((4, 0)), np.array([7]))


@pytest.mark.parametrize(("index", "message"), [
    (np.array([4]), "index 4 is out of bounds for axis 0 with size 4"),
    (np.array([0, -5]), "index -5 is out of bounds for axis 0 with size 4"),
    (np.array([2**62]), "out of bounds for axis 0 with size 4"),
])
def test_out_of_bounds_raises_numpys_index_error(index, message):
    x = wt.dmatrix("x")
    i = wt.lvector("i")
    for f in compile_both([x, i], x[i], AdvancedSubtensor):
        with pytest.raises(IndexError, match=message):
            f(X[:, :, 0], index)
    with pytest.raises(IndexError, match=message):
        X[:, :, 0][index]


def test_bad_broadcast_and_bad_mask_raise_index_error():
    x = wt.dmatrix("x")
    i, k = wt.lvector("i"), wt.lvector("k")
    fc, _ = compile_both([x, i, k], x[i, k], AdvancedSubtensor)
    with pytest.raises(IndexError, match=r"shape mismatch: .*\(2,\) \(3,\)"):
        fc(X[0], np.array([0, 1]), np.array([0, 1, 2]))
    m = wt.tensor(name="m", dtype="bool", shape=(None,))
    fm, _ = compile_both([x, m], x[m], AdvancedSubtensor)
    with pytest.raises(IndexError, match="boolean index did not match indexed array along "
                                         "axis 0; size of axis is 5 but size of corresponding "
                                         "boolean axis is 3"):
        fm(X[0], np.array([True, False, True]))


# -- AdvancedIncSubtensor ----------------------------------------------------------------


def _reference(xv, index, yv, set_):
    out = xv.copy()
    if set_:
        out[index] = yv
    else:
        np.add.at(out, index, yv)
    return out


@pytest.mark.parametrize("set_", [False, True], ids=["inc", "set"])
@pytest.mark.parametrize("form", ["rows", "cols_repeated", "pairs", "mask", "broadcast_value"])
def test_scatter_matches_numpy_and_perform(set_, form):
    x = wt.dmatrix("x")
    i, k = wt.lvector("i"), wt.lvector("k")
    m = wt.tensor(name="m", dtype="bool", shape=(None, None))
    iv, kv = np.array([1, -1, 1, 0, 1]), np.array([2, 2, -6, 0, 2])
    mv = X[0] > 0
    if form == "rows":
        region, index, y, yv, inputs = x[i], (iv,), wt.dmatrix("y"), rng.random((5, 6)), [i]
    elif form == "cols_repeated":
        region, index, y, yv, inputs = (x[:, k], (slice(None), kv), wt.dmatrix("y"),
                                        rng.random((5, 5)), [k])
    elif form == "pairs":
        region, index, y, yv, inputs = x[i, k], (iv, kv), wt.dvector("y"), rng.random(5), [i, k]
    elif form == "mask":
        region, index, y, yv, inputs = (x[m], (mv,), wt.dvector("y"),
                                        rng.random(int(mv.sum())), [m])
    else:
        region, index, y, yv, inputs = x[i], (iv,), wt.dvector("y"), rng.random(6), [i]
    out = wt.set_subtensor(region, y) if set_ else wt.inc_subtensor(region, y)
    fc, fp = compile_both([x, y, *inputs], out, AdvancedIncSubtensor)
    args = [dict(zip([i, k, m], [iv, kv, mv]))[v] for v in inputs]
    for xv in layouts(X[0]):
        want = _reference(xv, index, yv, set_)
        before = xv.copy()
        for _ in range(2):
            np.testing.assert_allclose(fc(xv, yv, *args), want, rtol=1e-15)
        np.testing.assert_allclose(fp(xv, yv, *args), want, rtol=1e-15)
        np.testing.assert_array_equal(xv, before)  # not in place: the input is kept


@pytest.mark.parametrize("dtype", ["int8", "int64", "bool", "complex64", "float32"])
def test_inc_repeated_indices_accumulate_in_any_dtype(dtype):
    x = wt.tensor(name="x", dtype=dtype, shape=(None,))
    y = wt.tensor(name="y", dtype=dtype, shape=(None,))
    i = wt.lvector("i")
    fc, _ = compile_both([x, y, i], wt.inc_subtensor(x[i], y), AdvancedIncSubtensor)
    xv = np.arange(4).astype(dtype)
    yv = np.array([100, 100, 7, 1, 1]).astype(dtype)
    iv = np.array([0, 0, -1, 2, 2])
    want = xv.copy()
    np.add.at(want, iv, yv)
    np.testing.assert_array_equal(fc(xv, yv, iv), want)


def test_inplace_scatter_with_value_aliasing_the_output():
    """In place, a value that is a view of x itself is read before any write."""
    x = wt.dvector("x")
    i = wt.lvector("i")
    op = AdvancedIncSubtensor(x[i].owner.op.idx_list, inplace=True)
    xv = np.arange(6.0)
    node_out = op(x, x[::-1][:3], i)
    f = wb.function([wb.In(x, mutable=True), i], node_out, mode=C_MODE)
    assert any(isinstance(n.op, AdvancedIncSubtensor) for n in f.linker.report.c_nodes)
    want = xv.copy()
    np.add.at(want, np.array([0, 1, 0]), want[::-1][:3].copy())
    np.testing.assert_array_equal(f(xv.copy(), np.array([0, 1, 0])), want)


def test_scatter_bad_index_and_bad_value_shape():
    x = wt.dmatrix("x")
    i = wt.lvector("i")
    y = wt.dmatrix("y")
    fc, fp = compile_both([x, y, i], wt.inc_subtensor(x[i], y), AdvancedIncSubtensor)
    xv = X[0].copy()
    for f in (fc, fp):
        with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
            f(xv, np.ones((1, 6)), np.array([0, -6]))
    np.testing.assert_array_equal(xv, X[0])  # nothing written
    with pytest.raises(ValueError, match=r"value array of shape \(3,6\) could not be "
                                         r"broadcast to indexing result of shape \(2,6\)"):
        fc(xv, np.ones((3, 6)), np.array([0, 1]))


def test_zero_d_mask_keeps_perform_and_the_report_says_so():
    x = wt.dmatrix("x")
    m = wt.tensor(name="m", dtype="bool", shape=())
    f = wb.function([x, m], x[m], mode=C_MODE)
    assert [type(n.op) for n, _ in f.linker.report.py_nodes] == [AdvancedSubtensor]
    (_, why), = f.linker.report.py_nodes
    assert "0-d boolean mask" in why and "perform" in why
    np.testing.assert_array_equal(f(X[0], np.array(True)), X[0][True])


def test_out_of_bounds_in_an_index_broadcast_along_the_last_dimension():
    """take_along_axis's row index (a column, read once per row) is checked too."""
    x = wt.dmatrix("x")
    r, c = wt.lmatrix("r"), wt.lmatrix("c")
    fc, fp = compile_both([x, r, c], x[r, c], AdvancedSubtensor)
    cols = np.array([[1, 2, -3]])
    np.testing.assert_array_equal(fc(X[0], np.array([[0], [-5]]), cols),
                                  X[0][np.array([[0], [-5]]), cols])
    for f in (fc, fp):
        with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
            f(X[0], np.array([[0], [5]]), cols)


def test_run_time_scalars_and_slice_bounds_mixed_with_arrays():
    x = wt.dtensor3("x")
    s, a, b = wt.lscalar("s"), wt.lscalar("a"), wt.lscalar("b")
    i = wt.lvector("i")
    out = x[s, a:b:-1, i]
    fc, fp = compile_both([x, s, a, b, i], out, AdvancedSubtensor)
    for sv, av, bv in [(1, 4, 0), (-4, -1, -10), (3, 0, 2)]:
        want = X[sv, av:bv:-1, I1]
        np.testing.assert_array_equal(fc(X, sv, av, bv, I1), want)
        np.testing.assert_array_equal(fp(X, sv, av, bv, I1), want)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        fc(X, 4, 0, 2, I1)
    step = wt.lscalar("step")
    fz, _ = compile_both([x, step, i], x[::step, i], AdvancedSubtensor)
    np.testing.assert_array_equal(fz(X, -2, I1), X[::-2, I1])
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        fz(X, 0, I1)


def test_inplace_scatter_with_a_bad_index_leaves_x_untouched():
    x = wt.dvector("x")
    i = wt.lvector("i")
    op = AdvancedIncSubtensor(x[i].owner.op.idx_list, inplace=True)
    f = wb.function([wb.In(x, mutable=True), i], op(x, 1.0 + x[:1] * 0, i), mode=C_MODE)
    assert any(isinstance(n.op, AdvancedIncSubtensor) for n in f.linker.report.c_nodes)
    xv = np.arange(4.0)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        f(xv, np.array([0, 1, 4]))
    np.testing.assert_array_equal(xv, np.arange(4.0))
    f(xv, np.array([0, 1, 1]))
    np.testing.assert_array_equal(xv, [1.0, 3.0, 2.0, 3.0])  # it does write into x
