"""Scalar gradients: each ScalarOp's `L_op` as a scalar graph, checked against finite
differences of its own kernel; the integer/dtype rules; Composite's gradient."""

import numpy as np
import pytest

import workbench.core.scalar as ps
from workbench.core.graph.basic import Constant, io_toposort
from workbench.core.graph.type import NullType
from workbench.core.scalar.composite import scalar_gradients


def scalar(dtype="float64"):
    return ps.get_scalar_type(dtype)()


def evaluate(outputs, inputs, values):
    """Values of scalar `outputs` given `inputs`, through a Composite (its kernels)."""
    op = ps.Composite(inputs, outputs)
    result = op.impl(*[np.asarray(v) for v in values])
    return result if op.nout > 1 else (result,)


# name -> a point where the op is smooth
POINTS = {
    "add": (0.3, -1.2), "sub": (0.3, -1.2), "mul": (0.3, -1.2), "true_div": (0.3, -1.2),
    "pow": (1.3, -0.7), "maximum": (0.3, -1.2), "minimum": (0.3, -1.2), "mod": (2.5, 1.1),
    "int_div": (2.5, 1.1), "neg": (0.4,), "abs": (-0.4,), "sqr": (0.4,),
    "reciprocal": (0.4,), "identity": (0.4,), "sign": (0.4,), "floor": (0.4,),
    "ceil": (0.4,), "round_half_to_even": (0.3,), "real": (0.4,), "imag": (0.4,),
    "conj": (0.4,), "angle": (-0.4,), "clip": (0.1, -0.5, 0.5), "switch": (1.0, 0.2, 0.7),
}
# every declared Op: a point in the middle of its declared domain
POINTS.update({op.name: tuple(lo if k in op.fixed_inputs else (lo + hi) / 2 + 0.1
                              for k, (lo, hi) in enumerate(op.domain))
               for op in ps.DECLARED_OPS if op.derivative is not None})
#: declared Ops without a derivative (a numerical derivative itself, say)
UNDIFFERENTIATED = {op.name for op in ps.DECLARED_OPS if op.derivative is None}
#: inputs held fixed (an integer order): no gradient there
FIXED = {op.name: op.fixed_inputs for op in ps.DECLARED_OPS}
DISCRETE = {"eq", "neq", "lt", "gt", "le", "ge", "isnan", "isinf", "isfinite", "and_", "or_",
            "xor", "invert"}


def test_points_cover_every_op():
    assert set(POINTS) | DISCRETE | UNDIFFERENTIATED == set(ps.ALL_OPS)


@pytest.mark.parametrize("name", sorted(POINTS))
def test_scalar_gradient_matches_finite_differences(name):
    op = ps.ALL_OPS[name]
    point = POINTS[name]
    xs = [scalar() for _ in point]
    (z,) = op(*xs, return_list=True)
    gz = scalar()
    grads = op.L_op(xs, [z], [gz])
    fixed = FIXED.get(name, ())
    assert all(isinstance(g.type, NullType) for k, g in enumerate(grads) if k in fixed)
    grads = [g if k not in fixed else ps.scalar_constant(0.0) for k, g in enumerate(grads)]
    assert all(g.type.dtype == "float64" for g in grads)
    symbolic = evaluate(grads, [*xs, gz], [*point, 1.0])
    eps = 1e-6
    for k in (k for k in range(len(point)) if k not in fixed):
        hi = list(point)
        lo = list(point)
        hi[k] += eps
        lo[k] -= eps
        numeric = (op.impl(*map(np.float64, hi)) - op.impl(*map(np.float64, lo))) / (2 * eps)
        if name == "switch" and k == 0:
            numeric = 0.0  # the condition: a step function
        np.testing.assert_allclose(symbolic[k], numeric, rtol=1e-5, atol=1e-8, err_msg=str(k))


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_outputs_give_float_zero_constants(name):
    op = ps.ALL_OPS[name]
    dtype = "int16" if name in {"and_", "or_", "xor", "invert"} else "float32"
    xs = [scalar(dtype) for _ in range(op.nin)]
    outs = op(*xs, return_list=True)
    grads = op.L_op(xs, outs, [scalar("float64")])
    assert len(grads) == len(xs)
    for g in grads:
        assert isinstance(g, Constant) and g.data == 0
        assert g.type.dtype == ("float64" if dtype == "int16" else "float32")


def test_integer_inputs_of_float_functions_are_differentiated_as_reals():
    k = scalar("int8")
    z = ps.exp(k)
    (g,) = ps.exp.L_op([k], [z], [scalar()])
    assert g.type.dtype == "float64"
    assert not isinstance(g, Constant)


def test_gradient_dtype_is_the_input_dtype():
    x, y = scalar("float32"), scalar("float64")
    z = ps.mul(x, y)
    gx, gy = ps.mul.L_op([x, y], [z], [scalar("float64")])
    assert (gx.type.dtype, gy.type.dtype) == ("float32", "float64")


def test_cast_gradients_follow_seed_003():
    x = scalar("float64")
    to_int = ps.Cast(ps.get_scalar_type("int64"))
    (g,) = to_int.L_op([x], [to_int(x)], [scalar("float64")])
    assert isinstance(g, Constant) and g.data == 0  # int(x): integer-valued output
    y = scalar("int64")
    to_float = ps.Cast(ps.get_scalar_type("float32"))
    gz = scalar("float32")
    (g,) = to_float.L_op([y], [to_float(y)], [gz])
    assert g.type.dtype == "float64"  # float(y): the gradient flows, never as an integer
    assert evaluate([g], [gz], [0.5]) == (0.5,)


def test_sign_of_complex_is_not_implemented():
    z = scalar("complex128")
    (g,) = ps.sign.L_op([z], [ps.sign(z)], [scalar("complex128")])
    assert isinstance(g.type, NullType) and "not implemented" in g.type.why_null


def test_user_scalar_op_with_grad_gets_the_dtype_rules():
    class Cube(ps.UnaryScalarOp):
        default_preference = staticmethod(ps.upgrade_to_float)

        def impl(self, x):
            return x ** 3

        def grad(self, inputs, output_grads):
            (x,), (gz,) = inputs, output_grads
            return [gz * 3 * x * x]

    cube = Cube(name="cube")
    k = scalar("int32")
    (g,) = cube.L_op([k], [cube(k)], [scalar()])
    assert g.type.dtype == "float64"


# -- Composite ---------------------------------------------------------------------------


def test_composite_gradient_is_one_composite():
    a, b = scalar(), scalar()
    op = ps.Composite([a, b], [ps.exp(a) * b + a * a])
    x, y, gz = scalar(), scalar(), scalar()
    gx, gy = op.L_op([x, y], [op(x, y)], [gz])
    assert gx.owner is gy.owner and isinstance(gx.owner.op, ps.Composite)
    vx, vy = evaluate([gx, gy], [x, y, gz], [0.5, 2.0, 3.0])
    np.testing.assert_allclose([vx, vy], [3 * (np.exp(0.5) * 2 + 1.0), 3 * np.exp(0.5)])


def test_composite_with_two_outputs_and_second_order():
    a = scalar()
    op = ps.Composite([a], [ps.sin(a), ps.cos(a)])
    x, g0, g1 = scalar(), scalar(), scalar()
    (gx,) = op.L_op([x], op(x, return_list=True), [g0, g1])
    value = evaluate([gx], [x, g0, g1], [0.3, 1.0, 2.0])[0]
    np.testing.assert_allclose(value, np.cos(0.3) - 2 * np.sin(0.3))
    # differentiate the gradient Composite again: d/dx (cos x - 2 sin x) = -sin x - 2 cos x
    (gg,) = scalar_gradients([x], [gx], [ps.scalar_constant(1.0)])
    value = evaluate([gg], [x, g0, g1], [0.3, 1.0, 2.0])[0]
    np.testing.assert_allclose(value, -np.sin(0.3) - 2 * np.cos(0.3))


def test_composite_disconnected_output_gradient_counts_as_zero():
    from workbench.core.grad import disconnected_type

    a = scalar()
    op = ps.Composite([a], [ps.sin(a), ps.cos(a)])
    x, g0 = scalar(), scalar()
    (gx,) = op.L_op([x], op(x, return_list=True), [g0, disconnected_type()])
    np.testing.assert_allclose(evaluate([gx], [x, g0], [0.3, 1.0])[0], np.cos(0.3))


def test_scalar_gradients_accumulates_over_uses():
    x = scalar()
    y = x * x + ps.sin(x)
    (g,) = scalar_gradients([x], [y], [ps.scalar_constant(1.0)])
    nodes = io_toposort([x], [g])
    assert nodes
    np.testing.assert_allclose(evaluate([g], [x], [0.7])[0], 1.4 + np.cos(0.7))
