"""C for Join: numpy.concatenate along any axis of any number of inputs of any dtype and
layout gives NumPy's values; mismatched lengths raise NumPy's error. And the composed
array utilities (take, take_along_axis, put_along_axis, diag, pad, roll, concatenate,
stack, block_diag) compile to C with no node left to Python `perform`."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import Mode
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.join import Join

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")

C_MODE = Mode(linker="c")  # no rewrites: the Join stays as built
rng = np.random.default_rng(3)


def layouts(a):
    yield a
    yield np.asfortranarray(a)
    yield a[::-1, ::-1]
    yield np.repeat(a, 3, axis=-1)[..., ::3]


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("n_inputs", [1, 2, 5])
def test_join_matches_numpy_on_every_layout(axis, n_inputs):
    xs = [wt.dtensor3(f"x{k}") for k in range(n_inputs)]
    f = wb.function(xs, Join(axis)(*xs), mode=C_MODE)
    assert [type(n.op) for n in f.linker.report.c_nodes] == [Join]
    shapes = [[2, 3, 4] for _ in xs]
    for k, s in enumerate(shapes):
        s[axis] = k + 1  # a different length along the axis per input
    values = [rng.standard_normal(s) for s in shapes]
    for lay in zip(*(layouts(v) for v in values)):
        want = np.concatenate(lay, axis=axis)
        for _ in range(2):  # the second call reuses the output
            got = f(*lay)
            assert got.flags.c_contiguous
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtypes", [("int8", "int8"), ("bool", "bool"),
                                    ("complex64", "complex64"), ("int32", "float32"),
                                    ("uint8", "int64", "float64")])
def test_join_any_dtype_casts_like_numpy(dtypes):
    xs = [wt.tensor(name=f"x{k}", dtype=d, shape=(None, None)) for k, d in enumerate(dtypes)]
    f = wb.function(xs, Join(1)(*xs), mode=C_MODE)
    assert [type(n.op) for n in f.linker.report.c_nodes] == [Join]
    values = [(rng.standard_normal((3, k + 2)) * 50).astype(d) for k, d in enumerate(dtypes)]
    got = f(*values)
    want = np.concatenate(values, axis=1)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_join_empty_inputs():
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    f = wb.function([x, y], Join(0)(x, y), mode=C_MODE)
    assert f(np.zeros((0, 3)), np.ones((2, 3))).shape == (2, 3)
    assert f(np.zeros((0, 0)), np.zeros((0, 0))).shape == (0, 0)


def test_join_mismatched_lengths_raise_numpys_error():
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    f = wb.function([x, y], Join(0)(x, y), mode=C_MODE)
    with pytest.raises(ValueError, match="along dimension 1, the array at index 0 has size 3 "
                                         "and the array at index 1 has size 4"):
        f(np.ones((2, 3)), np.ones((2, 4)))


# -- the composed utilities compile to C, no node left in Python --------------------------


x_, v_, i_, m_ = wt.dmatrix("x"), wt.dvector("v"), wt.lvector("i"), wt.lmatrix("m")
XV, VV = rng.standard_normal((5, 6)), rng.standard_normal(4)
IV, MV = np.array([4, -1, 0, 0]), np.array([[5, 0], [1, 1], [2, -6], [0, 3], [4, 4]])
UTILITIES = {
    "take": (lambda: wt.take(x_, i_, axis=1), lambda: np.take(XV, IV, axis=1)),
    "take_flat": (lambda: wt.take(x_, i_), lambda: np.take(XV, IV)),
    "take_along_axis": (lambda: wt.take_along_axis(x_, m_, axis=1),
                        lambda: np.take_along_axis(XV, MV, axis=1)),
    "put_along_axis": (lambda: wt.put_along_axis(x_, m_, 2.0, axis=1),
                       lambda: _put(XV, MV, 2.0)),
    "diag_of_vector": (lambda: wt.diag(v_), lambda: np.diag(VV)),
    "diag_of_matrix": (lambda: wt.diag(x_), lambda: np.diag(XV)),
    "pad_constant": (lambda: wt.pad(x_, 2), lambda: np.pad(XV, 2)),
    "pad_reflect": (lambda: wt.pad(x_, 2, mode="reflect"), lambda: np.pad(XV, 2, "reflect")),
    "pad_wrap": (lambda: wt.pad(x_, (1, 3), mode="wrap"), lambda: np.pad(XV, (1, 3), "wrap")),
    "roll": (lambda: wt.roll(x_, 2, axis=1), lambda: np.roll(XV, 2, axis=1)),
    "roll_flat": (lambda: wt.roll(x_, -3), lambda: np.roll(XV, -3)),
    "concatenate": (lambda: wt.concatenate([x_, x_.T[:5]], axis=1),
                    lambda: np.concatenate([XV, XV.T[:5]], axis=1)),
    "stack": (lambda: wt.stack([v_, v_ * 2], axis=1), lambda: np.stack([VV, VV * 2], axis=1)),
    "block_diag": (lambda: wt.linalg.block_diag(x_, x_[:2]),
                   lambda: _block_diag(XV, XV[:2])),
}


def _put(a, idx, value):
    out = a.copy()
    np.put_along_axis(out, idx, value, axis=1)
    return out


def _block_diag(a, b):
    out = np.zeros((a.shape[0] + b.shape[0], a.shape[1] + b.shape[1]))
    out[:a.shape[0], :a.shape[1]] = a
    out[a.shape[0]:, a.shape[1]:] = b
    return out


@pytest.mark.parametrize("name", sorted(UTILITIES))
def test_composed_utility_runs_no_python_perform_on_the_c_linker(name):
    build, reference = UTILITIES[name]
    f = wb.function([x_, v_, i_, m_], build(), linker="c", on_unused_input="ignore")
    assert f.linker.report.py_nodes == [], f.linker.report.py_nodes
    np.testing.assert_allclose(f(XV, VV, IV, MV), reference(), rtol=1e-15)
