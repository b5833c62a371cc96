"""Gradients of indexing: Subtensor, IncSubtensor (set/inc_subtensor), AdvancedSubtensor
(integer arrays, boolean masks) and AdvancedIncSubtensor.

Reading ``x[idx]`` sends the gradient back into zeros at idx (repeated indices
accumulate); writing sends x the gradient outside the written part (setting) or all
of it (incrementing), and y the gradient at idx summed over its broadcast dimensions.
Index inputs are always disconnected.
"""

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.graph.type import DisconnectedType
from workbench.core.tensor import (
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    TensorType,
)


def lop_check(build, values, seed=0):
    """Check the L_op of the last node of ``build(*inputs)`` against finite differences
    of ``sum(out * w)`` (random `w`); returns the symbolic gradients."""
    rng = np.random.default_rng(seed)
    values = [np.asarray(v) for v in values]
    xs = [TensorType(v.dtype, (None,) * v.ndim)() for v in values]
    out = build(*xs)
    node = out.owner
    forward = function(xs, out, on_unused_input="ignore")
    w = rng.uniform(0.5, 1.5, size=np.shape(forward(*values)))
    grads = node.op.L_op(node.inputs, node.outputs, [wt.constant(w)])
    assert len(grads) == len(node.inputs)
    float_pos = [k for k, x in enumerate(xs) if x.type.dtype.is_float]
    checked = [grads[node.inputs.index(xs[k])] for k in float_pos]
    got = function(xs, checked, on_unused_input="ignore")(*values)
    eps = 1e-6
    for k, g in zip(float_pos, got):
        assert g.shape == values[k].shape
        numeric = np.zeros(values[k].shape)
        for j in np.ndindex(values[k].shape):
            up = [v.copy() for v in values]
            down = [v.copy() for v in values]
            up[k][j] += eps
            down[k][j] -= eps
            numeric[j] = (np.sum(forward(*up) * w) - np.sum(forward(*down) * w)) / (2 * eps)
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-6)
    return grads


def is_disconnected(g):
    return isinstance(g.type, DisconnectedType)


@pytest.fixture
def verify_grad():
    """`workbench.verify_grad` on float64 points with a fixed seed."""

    def check(fun, pt, **kwargs):
        kwargs.setdefault("rng", np.random.default_rng(7))
        wb.verify_grad(fun, [np.asarray(p, dtype="float64") for p in pt], **kwargs)

    return check


RNG = np.random.default_rng(99)


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape)


# -- basic indexing -----------------------------------------------------------------------


@pytest.mark.parametrize("key", [
    (slice(1, None), slice(None, None, -2)),
    (2, slice(-1, 0, -1)),
    (slice(None, None, -1), 1),
    (-1,),
    (slice(5, 9),),  # empty
])
def test_subtensor_lop(key):
    grads = lop_check(lambda x: x[key], [rand(4, 5)])
    assert isinstance(grads[0].owner.op, IncSubtensor)


def test_subtensor_symbolic_index_disconnected():
    x, i, j = wt.dmatrix(), wt.lscalar(), wt.lscalar()
    y = x[i, j:]
    assert isinstance(y.owner.op, Subtensor)
    assert y.owner.op.connection_pattern(y.owner) == [[True], [False], [False]]
    gx, gi, gj = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [wt.dvector()])
    assert is_disconnected(gi) and is_disconnected(gj) and gx.type.ndim == 2
    g = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [wt.ones_like(y)])[0]
    out = function([x, i, j], g)(np.zeros((3, 4)), 1, 2)
    expected = np.zeros((3, 4))
    expected[1, 2:] = 1
    np.testing.assert_array_equal(out, expected)


def test_subtensor_int_input_gets_float_zeros():
    x = wt.lvector()
    y = x[1:]
    (g,) = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [wt.dvector()])
    assert g.type.dtype.is_float


def test_subtensor_rop():
    x, v = wt.dvector(), wt.dvector()
    y = x[::-1]
    (r,) = y.owner.op.R_op(y.owner.inputs, [v])
    np.testing.assert_array_equal(function([v], r)(np.arange(3.0)), [2.0, 1.0, 0.0])


@pytest.mark.parametrize(("build", "y_shape"), [
    (lambda x, y: wt.set_subtensor(x[1:3], y), (2, 5)),
    (lambda x, y: wt.set_subtensor(x[1:3], y), (5,)),  # y broadcast over rows
    (lambda x, y: wt.set_subtensor(x[::-2, 1], y), ()),
    (lambda x, y: wt.inc_subtensor(x[1:3], y), (2, 1)),
    (lambda x, y: wt.inc_subtensor(x[-1], y), (5,)),
    (lambda x, y: wt.inc_subtensor(x[:, 2:0:-1], y), (1, 2)),
])
def test_inc_subtensor_lop(build, y_shape):
    grads = lop_check(build, [rand(4, 5), rand(*y_shape)])
    assert all(is_disconnected(g) for g in grads[2:])


def test_set_subtensor_gradient_values():
    x, y = wt.dmatrix(), wt.dvector()
    out = wt.set_subtensor(x[0], y)
    gx, gy = out.owner.op.L_op(out.owner.inputs, out.owner.outputs, [wt.ones_like(out)])
    f = function([x, y], [gx, gy])
    got_x, got_y = f(np.zeros((2, 3)), np.zeros(3))
    np.testing.assert_array_equal(got_x, [[0, 0, 0], [1, 1, 1]])  # overwritten: no gradient
    np.testing.assert_array_equal(got_y, [1, 1, 1])


def test_inc_subtensor_rop():
    x, y, ex, ey = wt.dvector(), wt.dvector(), wt.dvector(), wt.dvector()
    out = wt.set_subtensor(x[1:], y)
    (r,) = out.owner.op.R_op(out.owner.inputs, [ex, None])
    np.testing.assert_array_equal(function([ex, y], r)(np.ones(3), np.ones(2)), [1, 0, 0])
    (r,) = out.owner.op.R_op(out.owner.inputs, [None, ey])
    np.testing.assert_array_equal(function([x, ey], r)(np.ones(3), np.ones(2) * 2), [0, 2, 2])


# -- advanced indexing --------------------------------------------------------------------


@pytest.mark.parametrize("key", [
    ([0, 2, 0, 0],),
    (slice(1, None), [0, 2, 2]),
    ([[1, 1], [0, 3]], [4, 4]),
    (Ellipsis, [-1, 0]),
])
def test_advanced_subtensor_lop(key):
    grads = lop_check(lambda x: x[key], [rand(4, 5)])
    assert isinstance(grads[0].owner.op, AdvancedIncSubtensor)


def test_repeated_indices_accumulate():
    x = wt.dvector()
    y = x[[1, 1, 1, 0]]
    assert isinstance(y.owner.op, AdvancedSubtensor)
    (g, _) = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [wt.ones_like(y)])
    np.testing.assert_array_equal(function([x], g)(np.zeros(3)), [1, 3, 0])


def test_boolean_mask_lop():
    x = wt.dmatrix()
    y = x[wt.gt(x, 0)]
    grads = lop_check(lambda x: x[wt.gt(x, 0)], [rand(3, 4)])
    assert is_disconnected(grads[1])
    gx = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [wt.ones_like(y)])[0]
    value = np.array([[1.0, -1.0], [-2.0, 3.0]])
    np.testing.assert_array_equal(function([x], gx)(value), value > 0)


@pytest.mark.parametrize(("build", "y_shape"), [
    (lambda x, y: wt.inc_subtensor(x[[0, 2, 0]], y), (3, 5)),
    (lambda x, y: wt.inc_subtensor(x[[0, 2, 0]], y), (5,)),
    (lambda x, y: wt.set_subtensor(x[[0, 2, 3]], y), (3, 5)),
    (lambda x, y: wt.set_subtensor(x[[0, 2, 0]], y), (3, 5)),  # repeated: last write wins
    (lambda x, y: wt.set_subtensor(x[[0, 2, 0], [1, 1, 1]], y), (3,)),
    (lambda x, y: wt.set_subtensor(x[[0, 0]], y), (1,)),
    (lambda x, y: wt.set_subtensor(x[x > 0], y), ()),
    (lambda x, y: wt.inc_subtensor(x[:, [4, 4]], y), (4, 1)),
])
def test_advanced_inc_subtensor_lop(build, y_shape):
    grads = lop_check(build, [rand(4, 5), rand(*y_shape)])
    assert all(is_disconnected(g) for g in grads[2:])


def test_set_with_repeated_indices_only_last_write_gets_gradient():
    x, y = wt.dvector(), wt.dvector()
    out = wt.set_subtensor(x[[0, 1, 0]], y)
    gx, gy, _ = out.owner.op.L_op(out.owner.inputs, out.owner.outputs, [wt.ones_like(out)])
    got_x, got_y = function([x, y], [gx, gy])(np.zeros(3), np.zeros(3))
    np.testing.assert_array_equal(got_x, [0, 0, 1])
    np.testing.assert_array_equal(got_y, [0, 1, 1])


def test_advanced_rops():
    x, v = wt.dvector(), wt.dvector()
    y = x[[2, 0]]
    (r,) = y.owner.op.R_op(y.owner.inputs, [v, None])
    np.testing.assert_array_equal(function([v], r)(np.array([1.0, 2.0, 3.0])), [3.0, 1.0])
    w = wt.inc_subtensor(x[[0, 0]], wt.dvector())
    (r,) = w.owner.op.R_op(w.owner.inputs, [None, v, None])
    np.testing.assert_array_equal(function([x, v], r)(np.zeros(1), np.array([1.0, 2.0])), [3.0])


# -- through the gradient machinery -----------------------------------------------------------


def test_basic_indexing_verify_grad(verify_grad):
    verify_grad(lambda x: x[1:, ::-2], [rand(4, 5)])
    verify_grad(lambda x: x[2, -1:0:-1], [rand(4, 5)])
    verify_grad(lambda x: x[None, ..., 1], [rand(3, 4)])


def test_set_inc_subtensor_verify_grad(verify_grad):
    verify_grad(lambda x, y: wt.set_subtensor(x[1:3], y), [rand(4, 5), rand(5)])
    verify_grad(lambda x, y: wt.inc_subtensor(x[:, 1], y), [rand(4, 5), rand(4)])
    verify_grad(lambda x, y: wt.inc_subtensor(x[1:3], y), [rand(4, 5), rand(2, 1)])


def test_advanced_indexing_verify_grad(verify_grad):
    verify_grad(lambda x: x[[0, 2, 0, 0]], [rand(4, 5)])
    verify_grad(lambda x: x[[1, 1], [0, 3]], [rand(4, 5)])
    verify_grad(lambda x: x[x > 0], [rand(3, 4)])
    verify_grad(lambda x, y: wt.set_subtensor(x[[0, 2, 0]], y), [rand(4, 5), rand(3, 5)])
    verify_grad(lambda x, y: wt.inc_subtensor(x[[0, 2, 0]], y), [rand(4, 5), rand(5)])


def test_grad_of_indexing_accumulates_repeated_reads():
    x = wt.dvector()
    g = wb.grad(wt.sum(x[[0, 0, 2]]), x)
    np.testing.assert_array_equal(function([x], g)(np.zeros(3)), [2.0, 0.0, 1.0])


def test_rop_through_indexing():
    x, y, v, w = wt.dmatrix(), wt.dvector(), wt.dmatrix(), wt.dvector()
    out = wt.set_subtensor(x[[0, 0], 1:], y)[::-1]
    f = function([x, y, v, w], wb.Rop(out, [x, y], [v, w]), on_unused_input="ignore")
    vx, vy = rand(2, 3), rand(2)
    expected = vx.copy()
    expected[[0, 0], 1:] = vy
    np.testing.assert_allclose(f(np.zeros((2, 3)), np.zeros(2), vx, vy), expected[::-1])


# FAST_COMPILE: under FAST_RUN the inplace rewrites currently let two inplace
# IncSubtensors destroy one merged Alloc (and fusion makes cycles); reported to the lead.
SECOND_ORDER_MODE = "FAST_COMPILE"


@pytest.mark.parametrize("build", [
    lambda x: x[1:, ::-1],
    lambda x: wt.set_subtensor(x[1:], x[0] * 2.0),
    lambda x: x[[0, 0, 2]],
    lambda x: wt.set_subtensor(x[[0, 0]], x[1:] * 3.0),
    lambda x: x[x > 0],
])
def test_second_order(verify_grad, build):
    verify_grad(lambda x: wb.grad(wt.sum(build(x) ** 2), x), [rand(3, 2)],
                mode=SECOND_ORDER_MODE)
