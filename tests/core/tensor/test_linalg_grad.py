"""Gradients of the products: `Dot` for every combination of vectors and matrices,
`MatMul` with batch dimensions (broadcast statically and at run time) and 1-d
promotion, `tensordot` by composition, second order, `R_op`, and the integer rules
of seed 003 (dot of ints; a float times an int).
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.grad import grad
from workbench.core.gradcheck import verify_grad


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def _eval(outputs, inputs, *values):
    return function(inputs, outputs, on_unused_input="ignore")(*values)


DOT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4))]


@pytest.mark.parametrize(("xs", "ys"), DOT_SHAPES)
def test_dot_grad(rng, xs, ys):
    verify_grad(wt.dot, [rng.normal(size=xs), rng.normal(size=ys)], rng=rng)


@pytest.mark.parametrize(("xs", "ys"), DOT_SHAPES)
def test_dot_second_order(rng, xs, ys):
    """The gradient of ``sum(tanh(dot(x, y)))`` with respect to x, differentiated again."""
    def first(x, y):
        return grad(wt.sum(wt.tanh(wt.dot(x, y))), x)

    verify_grad(first, [rng.normal(size=xs), rng.normal(size=ys)], rng=rng)


def test_dot_grad_keeps_static_shapes_and_dtypes():
    x = wt.tensor("float32", shape=(2, 3))
    w = wt.tensor("float64", shape=(3, None))
    gx, gw = grad(wt.sum(wt.dot(x, w)), [x, w])
    assert gx.type == x.type
    assert gw.type == w.type


MATMUL_SHAPES = [
    ((2, 3, 4), (2, 4, 5)),  # same batch
    ((1, 3, 4), (2, 4, 5)),  # x broadcast along the batch at run time
    ((2, 3, 4), (1, 4, 5)),  # y broadcast along the batch at run time
    ((3, 4), (2, 4, 5)),  # x has no batch dimension
    ((2, 1, 3, 4), (5, 4, 2)),  # both broadcast
    ((4,), (2, 4, 5)),  # 1-d x: a row
    ((2, 3, 4), (4,)),  # 1-d y: a column
]


@pytest.mark.parametrize(("xs", "ys"), MATMUL_SHAPES)
def test_matmul_grad(rng, xs, ys):
    """verify_grad's inputs have unknown static lengths, so the batch broadcasting is only
    known at run time here."""
    verify_grad(wt.MatMul(), [rng.normal(size=xs), rng.normal(size=ys)], rng=rng)


def test_matmul_grad_static_broadcast(rng):
    x = wt.tensor("float64", shape=(1, 3, 4))
    y = wt.tensor("float64", shape=(2, 4, None))
    gx, gy = grad(wt.sum(wt.matmul(x, y) ** 2), [x, y])
    assert gx.type == x.type and gy.type.shape == (2, 4, None)
    xv, yv = rng.normal(size=(1, 3, 4)), rng.normal(size=(2, 4, 5))
    gxv, gyv = _eval([gx, gy], [x, y], xv, yv)
    z = np.matmul(xv, yv)
    np.testing.assert_allclose(gxv, np.sum(2 * z @ np.swapaxes(yv, -1, -2), axis=0,
                                           keepdims=True))
    np.testing.assert_allclose(gyv, np.swapaxes(xv, -1, -2) @ (2 * z))


def test_matmul_second_order(rng):
    def first(x, y):
        return grad(wt.sum(wt.tanh(wt.matmul(x, y))), y)

    verify_grad(first, [rng.normal(size=(2, 3, 4)), rng.normal(size=(1, 4, 2))], rng=rng)


def test_tensordot_grad(rng):
    verify_grad(lambda a, b: wt.tensordot(a, b, axes=([1, 2], [0, 1])),
                [rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4, 5))], rng=rng)


@pytest.mark.parametrize(("xs", "ys"), [*DOT_SHAPES, ((2, 3, 4), (1, 4, 5))])
def test_product_r_op_equals_jacobian_times_v(rng, xs, ys):
    """R_op of a bilinear product: ``ex . y + x . ey`` (a directional derivative)."""
    op = wt.MatMul() if len(xs) > 2 else wt.Dot()
    x, y = wt.tensor("float64", shape=(None,) * len(xs)), wt.tensor("float64",
                                                                    shape=(None,) * len(ys))
    ex, ey = x.type(), y.type()
    (r,) = op.R_op([x, y], [ex, ey])
    (rx,) = op.R_op([x, y], [ex, None])
    assert op.R_op([x, y], [None, None]) == [None]
    xv, yv, exv, eyv = (rng.normal(size=s) for s in (xs, ys, xs, ys))
    f = function([x, y], op(x, y))
    h = 1e-6
    numeric = (f(xv + h * exv, yv + h * eyv) - f(xv - h * exv, yv - h * eyv)) / (2 * h)
    np.testing.assert_allclose(_eval(r, [x, y, ex, ey], xv, yv, exv, eyv), numeric,
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_eval(rx, [x, y, ex], xv, yv, exv), np.matmul(exv, yv))


# -- integers (seed 003) ---------------------------------------------------------------


def test_dot_of_ints_has_zero_gradients():
    """Seed 003: x and y integers, so x.y is an integer step function: zero gradients
    (in a float dtype) for both."""
    x, y = wt.lvector("x"), wt.lvector("y")
    out = wt.dot(x, y)
    assert out.type.dtype == "int64"
    node = out.owner
    gx, gy = node.op.L_op(node.inputs, node.outputs, [wt.lscalar()])
    assert gx.type.dtype.is_float and gy.type.dtype.is_float
    xv, yv = np.array([1, 2, 3]), np.array([4, 5, 6])
    np.testing.assert_array_equal(_eval(gx, [x, y], xv, yv), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(_eval(gy, [x, y], xv, yv), [0.0, 0.0, 0.0])
    # through grad: the integer output receives a float gradient, which stops there
    gx, gy = grad(None, [x, y], known_grads={out: wt.constant(1.0)})
    np.testing.assert_array_equal(_eval(gx, [x, y], xv, yv), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(_eval(gy, [x, y], xv, yv), [0.0, 0.0, 0.0])


def test_dot_of_float_and_int_flows_to_the_int():
    """Seed 003: x float, y integer: the output is float and the gradient wrt y is the
    one a float y would get (x itself here), in a float dtype."""
    x, y = wt.dvector("x"), wt.lvector("y")
    gx, gy = grad(wt.dot(x, y), [x, y])
    assert gx.type.dtype == "float64" and gy.type.dtype == "float64"
    xv, yv = np.array([0.5, -1.0, 2.0]), np.array([4, 5, 6])
    np.testing.assert_allclose(_eval(gx, [x, y], xv, yv), yv)
    np.testing.assert_allclose(_eval(gy, [x, y], xv, yv), xv)


def test_matmul_of_ints_has_zero_gradients():
    x, y = wt.ltensor3("x"), wt.lmatrix("y")
    out = wt.matmul(x, y)
    node = out.owner
    gx, gy = node.op.L_op(node.inputs, node.outputs, [wt.ltensor3()])
    assert gx.type.dtype.is_float and gx.type.ndim == 3
    assert gy.type.dtype.is_float and gy.type.ndim == 2


def test_dot_and_matmul_grad_float32(rng):
    """float32 operands: float32 gradients, checked with verify_grad's float32 tolerances."""
    x, y = rng.normal(size=(2, 3)).astype("float32"), rng.normal(size=(3, 4)).astype("float32")
    verify_grad(wt.dot, [x, y], rng=rng)
    verify_grad(wt.MatMul(), [x[None], y], rng=rng)


def _abs2(z):
    """|z|^2 summed: a real cost of a complex tensor."""
    return wt.sum(wt.real(z * wt.conj(z)))


def test_complex_products_follow_the_elemwise_convention(rng):
    """Complex operands: the Dot / MatMul gradients equal those of the same product
    spelled with Elemwise mul and sum (contributions ``gz * conj(derivative)``)."""
    def c(*shape):
        return rng.normal(size=shape) + 1j * rng.normal(size=shape)

    a, b = wt.zmatrix("a"), wt.zmatrix("b")
    by_dot = grad(_abs2(wt.dot(a, b)), [a, b])
    by_mul = grad(_abs2(wt.sum(a.dimshuffle(0, 1, "x") * b.dimshuffle("x", 0, 1), axis=1)),
                  [a, b])
    got = _eval(by_dot + by_mul, [a, b], c(2, 3), c(3, 4))
    np.testing.assert_allclose(got[0], got[2])
    np.testing.assert_allclose(got[1], got[3])
    a3, b3 = wt.ztensor3("a3"), wt.ztensor3("b3")
    by_matmul = grad(_abs2(wt.matmul(a3, b3)), [a3, b3])
    by_mul = grad(_abs2(wt.sum(a3.dimshuffle(0, 1, 2, "x") * b3.dimshuffle(0, "x", 1, 2),
                               axis=2)), [a3, b3])
    got = _eval(by_matmul + by_mul, [a3, b3], c(2, 2, 3), c(1, 3, 4))
    np.testing.assert_allclose(got[0], got[2])
    np.testing.assert_allclose(got[1], got[3])
