"""Reshape, flatten, squeeze, expand_dims, transpose & co, BroadcastTo and broadcast_arrays."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.tensor import BroadcastTo, Reshape, TensorType
from workbench.core.tensor.shape import SpecifyShape

FAST = settings(max_examples=30, deadline=None)


def frozen(array):
    """A read-only copy: perform must never write into its inputs."""
    array = np.array(array)
    array.flags.writeable = False
    return array


def run(evaluate, out, givens):
    """Evaluate with read-only inputs and check the inputs are unchanged afterwards."""
    saved = {var: np.array(value, copy=True) for var, value in givens.items()}
    result = evaluate(out, {var: frozen(value) for var, value in givens.items()})
    for var, before in saved.items():
        np.testing.assert_array_equal(givens[var], before)
    return result


# -- reshape ------------------------------------------------------------------------------


def test_reshape_method_forms_agree(evaluate, inferred_shape):
    x = wt.dmatrix("x")
    value = np.arange(12.0).reshape(3, 4)
    for y in (x.reshape(2, -1), x.reshape((2, -1)), x.reshape([2, -1]), wt.reshape(x, (2, -1))):
        assert isinstance(y.owner.op, Reshape) and str(y.owner.op) == "Reshape{2}"
        assert y.type == TensorType("float64", (2, None))
        np.testing.assert_array_equal(run(evaluate, y, {x: value}), value.reshape(2, -1))
        assert inferred_shape(y, {x: value}) == (2, 6)
    assert Reshape(2) == Reshape(2) and Reshape(2) != Reshape(3)
    assert Reshape.view_map == {0: [0]}


def test_reshape_compiled_function():
    x = wt.fmatrix("x")
    f = function([x], x.reshape(-1, 2))
    out = f(np.ones((3, 4), dtype="float32"))
    assert out.shape == (6, 2) and out.dtype == np.float32


def _regroup(shape, data):
    """A random target shape with the same size: the dims shuffled and grouped, maybe a -1."""
    dims = data.draw(st.permutations(list(shape))) if shape else []
    cuts = sorted(data.draw(st.lists(st.integers(0, len(dims)), max_size=3)))
    bounds = [0, *cuts, len(dims)]
    target = [math.prod(dims[a:b]) for a, b in zip(bounds, bounds[1:])]
    if target and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(target) - 1))
        if math.prod(target[:i] + target[i + 1:]) > 0:
            target[i] = -1
    return tuple(target)


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
       static=st.booleans(), dtype=st.sampled_from(["float64", "float32", "int32", "bool"]),
       data=st.data())
def test_reshape_matches_numpy(evaluate, inferred_shape, shape, static, dtype, data):
    target = _regroup(shape, data)
    x = TensorType(dtype, shape if static else (None,) * len(shape))("x")
    y = x.reshape(target)
    value = np.arange(math.prod(shape)).reshape(shape).astype(dtype)
    expected = value.reshape(target)
    got = run(evaluate, y, {x: value})
    assert got.dtype == value.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert inferred_shape(y, {x: value}) == expected.shape
    assert all(s is None or s == n for s, n in zip(y.type.shape, expected.shape))
    if static:  # every length is known at build time, -1 included
        assert y.type.shape == expected.shape


def test_reshape_build_time_errors():
    x = TensorType("float64", (2, 3))("x")
    with pytest.raises(ValueError, match=r"^cannot reshape array of size 6 into shape \(4,\)$"):
        x.reshape(4)
    with pytest.raises(ValueError, match=r"^cannot reshape array of size 6 into shape "
                                         r"\(4,newaxis\)$"):
        x.reshape(4, -1)
    with pytest.raises(ValueError, match="^can only specify one unknown dimension$"):
        wt.dmatrix().reshape(-1, -1)
    with pytest.raises(ValueError, match="cannot reshape array of size 6"):
        x.reshape(4, wt.lscalar())  # no length makes 4 * n == 6
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        x.reshape(2.0, 3)
    with pytest.raises(TypeError, match="integer scalar"):
        x.reshape(wt.dscalar(), 3)
    with pytest.raises(ValueError, match="pass ndim="):
        x.reshape(wt.lvector())
    with pytest.raises(ValueError, match="ndim=3"):
        wt.reshape(x, (2, 3), ndim=3)
    with pytest.raises(TypeError, match="integer shape"):
        wt.reshape(x, wt.dvector(), ndim=2)


def test_reshape_with_symbolic_lengths(evaluate, inferred_shape):
    x, n = wt.dmatrix("x"), wt.iscalar("n")
    y = x.reshape(n, -1)
    value = np.arange(12.0).reshape(3, 4)
    givens = {x: value, n: np.array(6, dtype="int32")}
    np.testing.assert_array_equal(evaluate(y, givens), value.reshape(6, -1))
    assert inferred_shape(y, givens) == (6, 2)
    # a symbolic -1 is resolved at run time, and by infer_shape too
    givens = {x: value, n: np.array(-1, dtype="int32")}
    assert evaluate(y.owner.op(x, [3, n]), givens).shape == (3, 4)
    assert inferred_shape(wt.reshape(x, (3, n)), givens) == (3, 4)
    with pytest.raises(ValueError, match="cannot reshape"):
        evaluate(y, {x: value, n: np.array(5, dtype="int32")})


def test_reshape_infers_the_symbolic_length_statically():
    x = TensorType("float64", (2, 3))("x")
    assert x.reshape(3, wt.lscalar()).type.shape == (3, 2)
    assert wt.dmatrix().reshape(3, wt.lscalar()).type.shape == (3, None)


def test_reshape_with_a_shape_vector(evaluate, inferred_shape):
    x, s = wt.dtensor3("x"), wt.lvector("s")
    y = wt.reshape(x, s, ndim=2)
    value = np.arange(24.0).reshape(2, 3, 4)
    givens = {x: value, s: np.array([4, -1])}
    np.testing.assert_array_equal(evaluate(y, givens), value.reshape(4, -1))
    assert inferred_shape(y, givens) == (4, 6)
    # the static length of the vector gives ndim; the shape of another tensor is read through
    other = TensorType("float64", (6, None))("other")
    z = x.reshape(other.shape)
    assert z.type.shape == (6, None)
    s3 = TensorType("int32", (3,))("s3")
    assert wt.reshape(x, s3).type.ndim == 3
    # constant vectors (of any integer dtype) give the static shape
    assert wt.reshape(x, wt.constant([4, -1])).type.shape == (4, None)
    fixed = TensorType("float64", (2, 3, 4))("fixed")
    assert fixed.reshape(np.array([4, -1], dtype="int16")).type.shape == (4, 6)


def test_reshape_of_non_contiguous_and_reversed_inputs(evaluate):
    x = wt.dmatrix("x")
    base = np.arange(12.0).reshape(3, 4)
    for value in (base.T, base[::-1], base[:, ::2], np.asfortranarray(base)):
        np.testing.assert_array_equal(run(evaluate, x.reshape(-1), {x: value}),
                                      value.reshape(-1))
    y = x.T.reshape(2, 6)  # a transposed Variable
    np.testing.assert_array_equal(run(evaluate, y, {x: base}), base.T.reshape(2, 6))


def test_reshape_returns_a_view_of_contiguous_input(evaluate):
    x = wt.dvector("x")
    value = frozen(np.arange(6.0))
    out = evaluate(x.reshape(2, 3), {x: value})
    assert np.shares_memory(out, value) and not out.flags.writeable


def test_reshape_zero_size_and_0d(evaluate, inferred_shape):
    x = wt.dtensor3("x")
    value = np.zeros((0, 3, 2))
    y = x.reshape(-1, 2)
    assert evaluate(y, {x: value}).shape == (0, 2)
    assert inferred_shape(y, {x: value}) == (0, 2)
    s = wt.dscalar("s")
    assert s.reshape(1, 1).type.shape == (1, 1)
    z = wt.dmatrix("z").reshape(())
    assert z.type.shape == () and evaluate(z, {z.owner.inputs[0]: np.ones((1, 1))}).shape == ()
    with pytest.raises(ValueError, match=r"size 0 into shape \(0,newaxis\)"):
        TensorType("float64", (0, 3))().reshape(0, -1)


def test_reshape_connection_pattern():
    x = wt.dmatrix("x")
    y = x.reshape(2, -1)
    assert y.owner.op.connection_pattern(y.owner) == [[True], [False]]


def test_shape_module_forwards_the_reshape_functions():
    from workbench.core.tensor.shape import flatten, reshape, squeeze

    assert reshape is wt.reshape and flatten is wt.flatten and squeeze is wt.squeeze


# -- flatten / ravel ------------------------------------------------------------------------


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=3), data=st.data())
def test_flatten_matches_numpy(evaluate, inferred_shape, shape, data):
    ndim = data.draw(st.integers(1, len(shape)))
    x = TensorType("float32", (None,) * len(shape))("x")
    y = wt.flatten(x, ndim)
    value = np.arange(math.prod(shape), dtype="float32").reshape(shape)
    expected = value.reshape(shape[:ndim - 1] + (math.prod(shape[ndim - 1:]),))
    got = evaluate(y, {x: value})
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
    if y is not x:
        assert inferred_shape(y, {x: value}) == expected.shape


def test_flatten_and_ravel():
    x = TensorType("float64", (2, 3, 4))("x")
    assert x.flatten().type.shape == (24,) and x.ravel().type.shape == (24,)
    assert wt.flatten(x, 2).type.shape == (2, 12)
    assert wt.flatten(x, 3) is x
    assert wt.ravel(wt.dscalar()).type.shape == (1,)
    with pytest.raises(ValueError, match="ndim=4"):
        wt.flatten(x, 4)
    with pytest.raises(ValueError, match="ndim=0"):
        wt.flatten(x, 0)


# -- squeeze / expand_dims -------------------------------------------------------------------


def test_squeeze_without_axis_drops_static_ones(evaluate):
    x = TensorType("float64", (1, None, 1))("x")
    y = wt.squeeze(x)
    assert y.type.shape == (None,)
    np.testing.assert_array_equal(run(evaluate, y, {x: np.ones((1, 3, 1))}), np.ones(3))
    # Documented difference with numpy: run-time ones are not known when building.
    m = wt.dmatrix("m")
    assert wt.squeeze(m) is m
    assert x.squeeze().type.shape == (None,)


def test_squeeze_named_axis_of_unknown_length(evaluate, inferred_shape):
    x = wt.dtensor3("x")
    y = wt.squeeze(x, (0, -1))
    assert y.type.shape == (None,)
    assert isinstance(y.owner.inputs[0].owner.op, SpecifyShape)
    value = np.arange(3.0).reshape(1, 3, 1)
    np.testing.assert_array_equal(run(evaluate, y, {x: value}), value.reshape(3))
    assert inferred_shape(y, {x: value}) == (3,)
    with pytest.raises(AssertionError, match=r"expected shape \(1, \?, 1\), got shape"):
        evaluate(y, {x: np.ones((2, 3, 1))})


def test_squeeze_errors():
    x = TensorType("float64", (1, 3))("x")
    with pytest.raises(ValueError, match="^cannot select an axis to squeeze out which has "
                                         "size not equal to one$"):
        wt.squeeze(x, 1)
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds for array of "
                                                      "dimension 2"):
        wt.squeeze(x, 2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        wt.squeeze(x, (0, -2))
    s = wt.dscalar()
    assert wt.squeeze(s) is s and wt.squeeze(s, 0) is s  # numpy accepts axis 0 of a 0-d array


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), data=st.data())
def test_expand_dims_matches_numpy(evaluate, inferred_shape, shape, data):
    out_ndim = len(shape) + data.draw(st.integers(1, 2))
    axes = data.draw(hnp.valid_tuple_axes(out_ndim, min_size=out_ndim - len(shape),
                                          max_size=out_ndim - len(shape)))
    x = TensorType("float64", shape)("x")
    y = wt.expand_dims(x, axes)
    value = frozen(np.random.default_rng(0).random(shape))
    expected = np.expand_dims(value, axes)
    assert y.type.shape == expected.shape
    got = evaluate(y, {x: value})
    np.testing.assert_array_equal(got, expected)
    assert np.shares_memory(got, value) or value.size == 0  # a view


def test_expand_dims_errors():
    x = wt.dmatrix()
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds for array of "
                                                      "dimension 3"):
        wt.expand_dims(x, 3)
    with pytest.raises(ValueError, match="repeated axis"):
        wt.expand_dims(x, (0, -4))


# -- transpose / swapaxes / moveaxis / atleast -------------------------------------------------


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3), data=st.data())
def test_transpose_swapaxes_moveaxis_match_numpy(evaluate, shape, data):
    ndim = len(shape)
    x = TensorType("int16", (None,) * ndim)("x")
    value = np.arange(math.prod(shape), dtype="int16").reshape(shape)
    axes = [a - ndim if data.draw(st.booleans()) else a
            for a in data.draw(st.permutations(range(ndim)))]
    np.testing.assert_array_equal(evaluate(wt.transpose(x, axes), {x: value}),
                                  np.transpose(value, axes))
    np.testing.assert_array_equal(evaluate(wt.transpose(x), {x: value}), value.T)
    if ndim:
        a, b = data.draw(st.integers(-ndim, ndim - 1)), data.draw(st.integers(-ndim, ndim - 1))
        np.testing.assert_array_equal(evaluate(wt.swapaxes(x, a, b), {x: value}),
                                      np.swapaxes(value, a, b))
        src = data.draw(hnp.valid_tuple_axes(ndim, min_size=1))
        dst = data.draw(hnp.valid_tuple_axes(ndim, min_size=len(src), max_size=len(src)))
        np.testing.assert_array_equal(evaluate(wt.moveaxis(x, src, dst), {x: value}),
                                      np.moveaxis(value, src, dst))


def test_transpose_swapaxes_moveaxis_errors():
    x = wt.dmatrix()
    with pytest.raises(ValueError, match="^axes don't match array$"):
        wt.transpose(x, (0,))
    with pytest.raises(ValueError, match="^repeated axis in transpose$"):
        wt.transpose(x, (0, -2))
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds"):
        wt.transpose(x, (0, 2))
    with pytest.raises(np.exceptions.AxisError, match="^axis2: axis 2 is out of bounds"):
        wt.swapaxes(x, 0, 2)
    with pytest.raises(ValueError, match="repeated axis in `source` argument"):
        wt.moveaxis(x, (0, 0), (1, 0))
    with pytest.raises(ValueError, match="must have the same number of elements"):
        wt.moveaxis(x, (0, 1), (1,))


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_atleast_nd_match_numpy(evaluate, shape):
    x = TensorType("float64", shape)("x")
    value = np.ones(shape)
    for ours, theirs in ((wt.atleast_1d, np.atleast_1d), (wt.atleast_2d, np.atleast_2d),
                         (wt.atleast_3d, np.atleast_3d)):
        y = ours(x)
        assert y.type.shape == theirs(value).shape
        assert evaluate(y, {x: value}).shape == theirs(value).shape
    assert len(wt.atleast_2d(x, x)) == 2


# -- broadcast_to / broadcast_arrays -------------------------------------------------------


def test_broadcast_to_is_a_read_only_view(evaluate, inferred_shape):
    x = wt.dvector("x")
    y = wt.broadcast_to(x, (2, 3))
    assert isinstance(y.owner.op, BroadcastTo) and BroadcastTo.view_map == {0: [0]}
    assert y.type.shape == (2, 3)
    value = np.arange(3.0)
    got = run(evaluate, y, {x: value})
    np.testing.assert_array_equal(got, np.broadcast_to(value, (2, 3)))
    assert not got.flags.writeable
    assert inferred_shape(y, {x: value}) == (2, 3)
    assert y.owner.op.connection_pattern(y.owner) == [[True], [False], [False]]


def test_broadcast_to_static_and_symbolic_shapes(evaluate, inferred_shape):
    x = TensorType("float32", (1, 3))("x")
    n = wt.lscalar("n")
    y = wt.broadcast_to(x, (n, 2, 3))
    assert y.type == TensorType("float32", (None, 2, 3))
    value = np.ones((1, 3), dtype="float32")
    assert evaluate(y, {x: value, n: np.array(4)}).shape == (4, 2, 3)
    assert inferred_shape(y, {x: value, n: np.array(4)}) == (4, 2, 3)
    assert wt.broadcast_to(x, (1, 3)) is x
    # a symbolic target keeps the input's known length
    m = TensorType("float64", (None, 5))("m")
    assert wt.broadcast_to(m, (wt.lscalar(), wt.lscalar())).type.shape == (None, 5)
    z = wt.broadcast_to(m, m.shape)
    assert z.type.shape == (None, 5)


def test_broadcast_to_errors(evaluate):
    x = TensorType("float64", (3,))("x")
    with pytest.raises(ValueError, match=r"^operands could not be broadcast together with "
                                         r"remapped shapes \[original->remapped\]: \(3,\)  and "
                                         r"requested shape \(4,\)$"):
        wt.broadcast_to(x, (4,))
    with pytest.raises(ValueError, match="more dimensions than allowed by the axis remapping"):
        wt.broadcast_to(wt.dmatrix(), (3,))
    with pytest.raises(ValueError, match="must be non-negative"):
        wt.broadcast_to(x, (-1, 3))
    v = wt.dvector("v")
    with pytest.raises(ValueError, match="could not be broadcast"):  # checked at run time
        evaluate(wt.broadcast_to(v, (2, 4)), {v: np.ones(3)})


@FAST
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3,
                                                min_side=0, max_side=3),
       static=st.booleans())
def test_broadcast_arrays_matches_numpy(evaluate, inferred_shape, shapes, static):
    rng = np.random.default_rng(1)
    values = [rng.random(s) for s in shapes.input_shapes]
    xs = [TensorType("float64", s if static else (None,) * len(s))(f"x{i}")
          for i, s in enumerate(shapes.input_shapes)]
    outs = wt.broadcast_arrays(*xs)
    givens = dict(zip(xs, values))
    got = evaluate(outs, givens)
    for out, value, result in zip(outs, np.broadcast_arrays(*values), got):
        np.testing.assert_array_equal(result, value)
        assert all(s is None or s == n for s, n in zip(out.type.shape, value.shape))
        if out.owner is not None:
            assert inferred_shape(out, givens) == value.shape


def test_broadcast_arrays_errors_and_zero_length():
    with pytest.raises(ValueError, match=r"^shape mismatch: objects cannot be broadcast to a "
                                         r"single shape\.  Mismatch is between arg 0 with shape "
                                         r"\(3,\) and arg 1 with shape \(4,\)\.$"):
        wt.broadcast_arrays(TensorType("float64", (3,))(), TensorType("float64", (4,))())
    assert wt.broadcast_arrays() == []
