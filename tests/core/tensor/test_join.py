"""Join (concatenate, stack, hstack, vstack), Split (split, array_split), Repeat and tile."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.tensor import Join, Repeat, Split, TensorType

FAST = settings(max_examples=30, deadline=None)


def frozen(array):
    """A read-only copy: perform must never write into its inputs."""
    array = np.array(array)
    array.flags.writeable = False
    return array


def run(evaluate, outs, givens):
    """Evaluate with read-only inputs and check the inputs are unchanged afterwards."""
    saved = {var: np.array(value, copy=True) for var, value in givens.items()}
    result = evaluate(outs, {var: frozen(value) for var, value in givens.items()})
    for var, before in saved.items():
        np.testing.assert_array_equal(givens[var], before)
    return result


# -- concatenate ------------------------------------------------------------------------------


def test_concatenate_example(evaluate, inferred_shape):
    x, y = wt.dmatrix("x"), TensorType("float64", (None, 3))("y")
    z = wt.concatenate([x, y], axis=-1)
    assert isinstance(z.owner.op, Join) and str(z.owner.op) == "Join{axis=-1}"
    assert z.type.shape == (None, None)
    a, b = np.ones((2, 2)), np.zeros((2, 3))
    np.testing.assert_array_equal(run(evaluate, z, {x: a, y: b}), np.concatenate([a, b], -1))
    assert inferred_shape(z, {x: a, y: b}) == (2, 5)
    f = function([x, y], wt.concatenate([x, y], axis=1))
    assert f(a, b).shape == (2, 5)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3), data=st.data())
def test_concatenate_matches_numpy(evaluate, inferred_shape, shape, data):
    ndim = len(shape)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    lengths = data.draw(st.lists(st.integers(0, 3), min_size=2, max_size=4))
    dtype_list = data.draw(st.lists(st.sampled_from(["float32", "float64", "int8", "int32",
                                                     "bool"]), min_size=len(lengths),
                                    max_size=len(lengths)))
    static = data.draw(st.booleans())
    shapes = []
    for n in lengths:
        s = list(shape)
        s[axis] = n
        shapes.append(tuple(s))
    xs = [TensorType(d, s if static else (None,) * ndim)(f"x{i}")
          for i, (d, s) in enumerate(zip(dtype_list, shapes))]
    values = [np.arange(math.prod(s)).reshape(s).astype(d) for s, d in zip(shapes, dtype_list)]
    z = wt.concatenate(xs, axis=axis)
    expected = np.concatenate(values, axis=axis)
    got = run(evaluate, z, dict(zip(xs, values)))
    assert got.dtype == expected.dtype == z.type.dtype.numpy
    np.testing.assert_array_equal(got, expected)
    assert inferred_shape(z, dict(zip(xs, values))) == expected.shape
    if static:
        assert z.type.shape == expected.shape


def test_concatenate_build_time_errors():
    a, b = TensorType("float64", (2, 2))(), TensorType("float64", (2, 3))()
    with pytest.raises(ValueError, match=r"^all the input array dimensions except for the "
                                         r"concatenation axis must match exactly, but along "
                                         r"dimension 1, the array at index 0 has size 2 and the "
                                         r"array at index 1 has size 3$"):
        wt.concatenate([a, b])
    with pytest.raises(ValueError, match=r"the array at index 0 has 2 dimension\(s\) and the "
                                         r"array at index 1 has 1 dimension\(s\)"):
        wt.concatenate([a, wt.dvector()])
    with pytest.raises(ValueError, match="^zero-dimensional arrays cannot be concatenated$"):
        wt.concatenate([wt.dscalar(), wt.dscalar()])
    with pytest.raises(ValueError, match="^zero-dimensional arrays cannot be concatenated$"):
        wt.concatenate([wt.dscalar()])
    with pytest.raises(ValueError, match="^need at least one array to concatenate$"):
        wt.concatenate([])
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds for array of "
                                                      "dimension 2"):
        wt.concatenate([a, a], axis=2)
    with pytest.raises(TypeError, match="sequence"):
        wt.concatenate(a)


def test_concatenate_special_forms():
    x = wt.dmatrix("x")
    assert wt.concatenate([x]) is x
    flat = wt.concatenate([x, wt.dvector("v")], axis=None)
    assert flat.type.ndim == 1
    mixed = wt.concatenate([wt.ivector(), wt.fvector()])
    assert mixed.type.dtype == "float64"  # int32 and float32 promote like numpy
    assert wt.concatenate([wt.bvector(), TensorType("bool", (None,))()]).type.dtype == "int8"


def test_concatenate_run_time_mismatch(evaluate):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    with pytest.raises(ValueError, match="along dimension 1"):
        evaluate(wt.concatenate([x, y]), {x: np.ones((2, 2)), y: np.ones((2, 3))})


# -- stack / hstack / vstack -------------------------------------------------------------------


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       n=st.integers(1, 3), data=st.data())
def test_stack_matches_numpy(evaluate, inferred_shape, shape, n, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    xs = [TensorType("float32", (None,) * len(shape))(f"x{i}") for i in range(n)]
    values = [np.full(shape, i, dtype="float32") for i in range(n)]
    z = wt.stack(xs, axis=axis)
    expected = np.stack(values, axis=axis)
    got = run(evaluate, z, dict(zip(xs, values)))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
    assert inferred_shape(z, dict(zip(xs, values))) == expected.shape


def test_stack_errors_and_static_shape():
    a = TensorType("float64", (2, 3))()
    assert wt.stack([a, wt.dmatrix()], axis=-1).type.shape == (2, 3, 2)
    with pytest.raises(ValueError, match="^all input arrays must have the same shape$"):
        wt.stack([a, TensorType("float64", (2, 4))()])
    with pytest.raises(ValueError, match="^all input arrays must have the same shape$"):
        wt.stack([a, wt.dvector()])
    with pytest.raises(ValueError, match="^need at least one array to stack$"):
        wt.stack([])
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        wt.stack([a, a], axis=3)


def test_hstack_vstack(evaluate):
    v, m = wt.dvector("v"), wt.dmatrix("m")
    vv, mv = np.arange(3.0), np.ones((2, 3))
    np.testing.assert_array_equal(evaluate(wt.vstack([m, v]), {v: vv, m: mv}),
                                  np.vstack([mv, vv]))
    np.testing.assert_array_equal(evaluate(wt.hstack([v, v]), {v: vv}), np.hstack([vv, vv]))
    np.testing.assert_array_equal(evaluate(wt.hstack([m, m]), {m: mv}), np.hstack([mv, mv]))


# -- split / array_split -----------------------------------------------------------------------


def test_split_outputs_are_views(evaluate, inferred_shape):
    x = wt.dmatrix("x")
    pieces = wt.split(x, 3, axis=1)
    op = pieces[0].owner.op
    assert isinstance(op, Split) and str(op) == "Split{n_splits=3, axis=1}"
    assert op.view_map == {0: [0], 1: [0], 2: [0]}
    assert all(p.owner is pieces[0].owner for p in pieces)
    value = frozen(np.arange(12.0).reshape(2, 6))
    got = evaluate(pieces, {x: value})
    for result, expected, piece in zip(got, np.split(value, 3, axis=1), pieces):
        np.testing.assert_array_equal(result, expected)
        assert np.shares_memory(result, value) and not result.flags.writeable
        assert inferred_shape(piece, {x: value}) == (2, 2)
    np.testing.assert_array_equal(value, np.arange(12.0).reshape(2, 6))
    assert op.connection_pattern(pieces[0].owner) == [[True] * 3, [False] * 3]


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6), data=st.data(),
       static=st.booleans())
def test_split_matches_numpy(evaluate, inferred_shape, shape, data, static):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    length = shape[axis]
    if data.draw(st.booleans()):
        divisors = [n for n in range(1, 7) if length % n == 0]
        how = data.draw(st.sampled_from(divisors))
    else:
        how = data.draw(st.lists(st.integers(-8, 8), max_size=4))
    x = TensorType("int32", shape if static else (None,) * len(shape))("x")
    value = np.arange(math.prod(shape), dtype="int32").reshape(shape)
    pieces = wt.split(x, how, axis=axis)
    expected = np.split(value, how, axis=axis)
    got = run(evaluate, pieces, {x: value})
    assert len(got) == len(expected)
    for piece, result, want in zip(pieces, got, expected):
        np.testing.assert_array_equal(result, want)
        assert result.dtype == np.int32
        assert all(s is None or s == n for s, n in zip(piece.type.shape, want.shape))
        if piece.owner is not None:
            assert inferred_shape(piece, {x: value}) == want.shape


@FAST
@given(length=st.integers(0, 9), sections=st.integers(1, 5))
def test_array_split_matches_numpy(evaluate, inferred_shape, length, sections):
    x = wt.fvector("x")
    value = np.arange(length, dtype="float32")
    pieces = wt.array_split(x, sections)
    for piece, result, want in zip(pieces, evaluate(pieces, {x: value}),
                                   np.array_split(value, sections)):
        np.testing.assert_array_equal(result, want)
        if piece.owner is not None:
            assert inferred_shape(piece, {x: value}) == want.shape
    assert [p.type.shape for p in wt.array_split(TensorType("float32", (7,))(), 3)] == [
        (3,), (2,), (2,)]


def test_split_errors(evaluate):
    with pytest.raises(ValueError, match="^array split does not result in an equal division$"):
        wt.split(TensorType("float64", (7,))(), 3)
    with pytest.raises(ValueError, match=r"^number sections must be larger than 0\.$"):
        wt.split(wt.dvector(), 0)
    with pytest.raises(ValueError, match=r"^number sections must be larger than 0\.$"):
        wt.array_split(wt.dvector(), 0)
    with pytest.raises(ValueError, match="zero-dimensional"):
        wt.split(wt.dscalar(), 1)
    with pytest.raises(np.exceptions.AxisError, match="axis 1 is out of bounds"):
        wt.split(wt.dvector(), 2, axis=1)
    with pytest.raises(ValueError, match="add up to 5, not to the length 6"):
        Split(2)(TensorType("float64", (6,))(), [2, 3])
    x = wt.dvector("x")
    with pytest.raises(ValueError, match="equal division"):  # unknown length: at run time
        evaluate(wt.split(x, 3), {x: np.ones(7)})


def test_split_with_symbolic_sizes(evaluate, inferred_shape):
    x, sizes = wt.dvector("x"), wt.lvector("sizes")
    a, b = Split(2)(x, sizes)
    givens = {x: np.arange(5.0), sizes: np.array([2, 3])}
    first, second = evaluate([a, b], givens)
    np.testing.assert_array_equal(second, [2.0, 3.0, 4.0])
    assert inferred_shape(a, givens) == (2,) and inferred_shape(b, givens) == (3,)


# -- repeat -----------------------------------------------------------------------------------


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), data=st.data())
def test_repeat_matches_numpy(evaluate, inferred_shape, shape, data):
    axis = None if not shape or data.draw(st.booleans()) else data.draw(
        st.integers(-len(shape), len(shape) - 1))
    n = math.prod(shape) if axis is None else shape[axis]
    if data.draw(st.booleans()):
        repeats = data.draw(st.integers(0, 3))
    else:
        repeats = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    x = TensorType("float64", (None,) * len(shape))("x")
    value = np.arange(math.prod(shape), dtype="float64").reshape(shape)
    y = wt.repeat(x, repeats, axis=axis)
    expected = np.repeat(value, repeats, axis=axis)
    np.testing.assert_array_equal(run(evaluate, y, {x: value}), expected)
    assert inferred_shape(y, {x: value}) == expected.shape


def test_repeat_static_symbolic_and_method(evaluate, inferred_shape):
    x = TensorType("int32", (2, 3))("x")
    assert x.repeat(2, axis=1).type.shape == (2, 6)
    assert wt.repeat(x, [1, 2], axis=0).type.shape == (3, 3)
    assert x.repeat(2).type.shape == (12,)
    assert str(x.repeat(2, axis=0).owner.op) == "Repeat{axis=0}"
    n, counts = wt.iscalar("n"), wt.lvector("counts")
    y, z = wt.repeat(x, n, axis=0), wt.repeat(x, counts, axis=1)
    value = np.arange(6, dtype="int32").reshape(2, 3)
    givens = {x: value, n: np.array(2, dtype="int32"), counts: np.array([0, 1, 3])}
    np.testing.assert_array_equal(evaluate(y, givens), np.repeat(value, 2, axis=0))
    np.testing.assert_array_equal(evaluate(z, givens), np.repeat(value, [0, 1, 3], axis=1))
    assert inferred_shape(y, givens) == (4, 3) and inferred_shape(z, givens) == (2, 4)
    assert y.owner.op.connection_pattern(y.owner) == [[True], [False]]
    assert Repeat(0) == Repeat(0) != Repeat(1)
    one_count = {x: value, counts: np.array([3])}  # a single count repeats every element
    np.testing.assert_array_equal(evaluate(z, one_count), np.repeat(value, [3], axis=1))
    assert inferred_shape(z, one_count) == (2, 9)


def test_repeat_errors():
    x = TensorType("float64", (3,))("x")
    with pytest.raises(ValueError, match=r"^repeats may not contain negative values\.$"):
        wt.repeat(x, -1)
    with pytest.raises(ValueError, match=r"could not be broadcast together with shape "
                                         r"\(3,\) \(2,\)"):
        wt.repeat(x, [1, 2], axis=0)
    with pytest.raises(TypeError, match="integers"):
        wt.repeat(x, 2.5)
    with pytest.raises(TypeError, match="integer scalar or vector"):
        wt.repeat(x, np.ones((1, 1), dtype="int64"))
    with pytest.raises(np.exceptions.AxisError, match="axis 0 is out of bounds for array of "
                                                      "dimension 0"):
        wt.repeat(wt.dscalar(), 2, axis=0)


# -- tile ------------------------------------------------------------------------------------


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       reps=st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=4).map(tuple)),
       static=st.booleans())
def test_tile_matches_numpy(evaluate, inferred_shape, shape, reps, static):
    x = TensorType("int8", shape if static else (None,) * len(shape))("x")
    value = (np.arange(math.prod(shape)) % 100).astype("int8").reshape(shape)
    y = wt.tile(x, reps)
    expected = np.tile(value, reps)
    got = run(evaluate, y, {x: value})
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, expected)
    if y.owner is not None:
        assert inferred_shape(y, {x: value}) == expected.shape
    if static:
        assert y.type.shape == expected.shape


def test_tile_symbolic_reps_and_errors(evaluate, inferred_shape):
    x, n = wt.dvector("x"), wt.lscalar("n")
    y = wt.tile(x, (n, 2))
    givens = {x: np.arange(3.0), n: np.array(2)}
    np.testing.assert_array_equal(evaluate(y, givens), np.tile(np.arange(3.0), (2, 2)))
    assert inferred_shape(y, givens) == (2, 6)
    with pytest.raises(ValueError, match="^negative dimensions are not allowed$"):
        wt.tile(x, -1)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        wt.tile(x, 1.5)
