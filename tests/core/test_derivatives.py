"""`Lop`, `Rop`, `jacobian` and `hessian` against each other and against finite differences."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.derivatives import JacobianOp
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op
from workbench.core.graph.utils import MethodNotDefined

RNG = np.random.default_rng(11)
WV = RNG.normal(size=(2, 3))
XV = RNG.normal(size=3)


def fn(inputs: list[Variable], outputs: Any) -> Any:
    return wb.function(inputs, outputs, on_unused_input="ignore")


def numeric_jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, eps: float = 1e-6
                     ) -> np.ndarray:
    """d f / d x by central differences, shape f(x).shape + x.shape."""
    y = np.asarray(f(x))
    jac = np.zeros(y.shape + x.shape)
    for index in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[index] += eps
        minus[index] -= eps
        jac[(...,) + index] = (np.asarray(f(plus)) - np.asarray(f(minus))) / (2 * eps)
    return jac


# -- jacobian -------------------------------------------------------------------------------


def test_jacobian_shapes_follow_numpy_conventions() -> None:
    x = wt.dmatrix("x")
    v = wt.dvector("v")
    y = wt.tanh(wt.dot(x, v))  # (m,) output, (m, k) and (k,) inputs
    jx, jv = wb.jacobian(y, [x, v])
    xv = RNG.normal(size=(4, 3))
    vv = RNG.normal(size=3)
    got_x, got_v = fn([x, v], [jx, jv])(xv, vv)
    assert got_x.shape == (4, 4, 3) and got_v.shape == (4, 3)
    np.testing.assert_allclose(got_x, numeric_jacobian(lambda a: np.tanh(a @ vv), xv),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_v, numeric_jacobian(lambda b: np.tanh(xv @ b), vv),
                               rtol=1e-6, atol=1e-8)


def test_jacobian_of_a_matrix_wrt_a_matrix() -> None:
    m = wt.dmatrix("m")
    value = RNG.normal(size=(2, 3))
    got = fn([m], wb.jacobian(m**2, m))(value)
    assert got.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(got, numeric_jacobian(lambda a: a**2, value), atol=1e-8)


def test_jacobian_of_a_scalar_is_the_gradient() -> None:
    x = wt.dvector("x")
    got = fn([x], wb.jacobian((x**2).sum(), x))(XV)
    np.testing.assert_allclose(got, 2 * XV)


def test_jacobian_of_an_empty_output() -> None:
    x = wt.dvector("x")
    got = fn([x], wb.jacobian(x[:0] * 2.0, x))(XV)
    assert got.shape == (0, 3)


def test_vectorized_jacobian_matches_and_is_differentiable() -> None:
    w = wt.TensorType("float64", (2, 3))("w")
    x = wt.TensorType("float64", (3,))("x")
    y = wt.tanh(w @ x)
    loop = fn([w, x], wb.jacobian(y, [x, w]))(WV, XV)
    unrolled = wb.jacobian(y, [x, w], vectorize=True)
    for a, b in zip(loop, fn([w, x], unrolled)(WV, XV)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    third = fn([w, x], wb.grad(unrolled[0].sum(), x))(WV, XV)

    def jac_sum(b: np.ndarray) -> float:
        t = np.tanh(WV @ b)
        return float(np.sum((1 - t**2)[:, None] * WV))

    np.testing.assert_allclose(third, numeric_jacobian(jac_sum, XV), rtol=1e-5, atol=1e-8)


def test_vectorized_jacobian_without_static_shapes_loops_and_is_differentiable() -> None:
    w, x = wt.dmatrix("w"), wt.dvector("x")
    ws = wt.TensorType("float64", (2, 3))("ws")
    xs = wt.TensorType("float64", (3,))("xs")
    loop = wb.jacobian(wt.tanh(w @ x), [x, w], vectorize=True)  # shapes unknown: a loop
    unrolled = wb.jacobian(wt.tanh(ws @ xs), [xs, ws], vectorize=True)
    assert isinstance(loop[0].owner.op, JacobianOp)
    for a, b in zip(fn([w, x], loop)(WV, XV), fn([ws, xs], unrolled)(WV, XV)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for a, b in zip(fn([w, x], wb.grad(loop[0].sum(), [x, w]))(WV, XV),
                    fn([ws, xs], wb.grad(unrolled[0].sum(), [xs, ws]))(WV, XV)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_the_loop_jacobian_reaches_shared_variables_in_its_gradient() -> None:
    s, x = wb.shared(WV, name="s"), wt.dvector("x")
    j = wb.jacobian(wt.tanh(s @ x), x)
    got = fn([x], wb.grad((j**2).sum(), s))(XV)

    def jac_norm(a: np.ndarray) -> float:
        t = np.tanh(a @ XV)
        return float(np.sum(((1 - t**2)[:, None] * a) ** 2))

    np.testing.assert_allclose(got, numeric_jacobian(jac_norm, WV), rtol=1e-5, atol=1e-7)


def test_the_loop_jacobian_is_differentiable_once_and_says_so_beyond() -> None:
    x = wt.dvector("x")
    j = wb.jacobian(x**3, x)
    assert isinstance(j.owner.op, JacobianOp)
    g = wb.grad(j.sum(), x)  # d/dx_i sum_j 3 x_j**2 delta_ij = 6 x_i
    np.testing.assert_allclose(fn([x], g)(XV), 6 * XV)
    with pytest.raises(wb.NullTypeGradError, match="vectorize=True"):
        wb.grad(g.sum(), x)


def test_jacobian_and_hessian_return_the_container_they_were_given() -> None:
    x, v = wt.dscalar("x"), wt.dvector("v")
    assert isinstance(wb.jacobian(v**2, (v,)), tuple)
    assert isinstance(wb.jacobian(v**2, [v]), list)
    assert isinstance(wb.jacobian(x**2, (x,)), tuple)
    assert isinstance(wb.hessian(x**2, (x,)), tuple)
    assert isinstance(wb.hessian((v**2).sum(), [v]), list)
    assert isinstance(wb.jacobian(v**2, v), Variable)


def test_derivatives_that_do_not_depend_on_the_input_evaluate_with_it_given() -> None:
    x = wt.dscalar("x")
    assert wb.grad(x, x).eval({x: 12}) == 1.0
    assert wb.jacobian(x, x).eval({x: 12}) == 1.0
    assert wb.jacobian(2 * x, [x])[0].eval({x: 12}) == 2.0


# -- hessian ----------------------------------------------------------------------------------


def test_hessian_of_sum_tanh_matches_finite_differences() -> None:
    w, x = wt.dmatrix("w"), wt.dvector("x")
    cost = wt.tanh(w @ x).sum()
    hx, hw = wb.hessian(cost, [x, w])
    got_x, got_w = fn([w, x], [hx, hw])(WV, XV)

    def grad_x(b: np.ndarray) -> np.ndarray:
        return WV.T @ (1 - np.tanh(WV @ b) ** 2)

    def grad_w(a: np.ndarray) -> np.ndarray:
        return np.outer(1 - np.tanh(a @ XV) ** 2, XV)

    assert got_x.shape == (3, 3) and got_w.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(got_x, numeric_jacobian(grad_x, XV), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_w, numeric_jacobian(grad_w, WV), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_x, got_x.T, atol=1e-12)


def test_vectorized_hessian_matches() -> None:
    w = wt.TensorType("float64", (2, 3))("w")
    x = wt.TensorType("float64", (3,))("x")
    cost = wt.tanh(w @ x).sum()
    a = fn([w, x], wb.hessian(cost, x))(WV, XV)
    b = fn([w, x], wb.hessian(cost, x, vectorize=True))(WV, XV)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_hessian_needs_a_scalar_cost() -> None:
    x = wt.dvector("x")
    with pytest.raises(TypeError, match="scalar"):
        wb.hessian(x**2, x)


# -- Lop and Rop --------------------------------------------------------------------------------

FUNCTIONS: list[tuple[str, Callable[[Variable, Variable], Variable]]] = [
    ("tanh_matvec", lambda w, x: wt.tanh(w @ x)),
    ("softmax", lambda w, x: wt.softmax(w * x, axis=-1)),
    ("exp_times_sum", lambda w, x: wt.exp(w) * x.sum()),
    ("slice_square", lambda w, x: (w[:, ::2] ** 2).sum(axis=0) + x[0]),
    ("logsumexp", lambda w, x: wt.logsumexp(w + x, axis=1)),
]


@pytest.mark.parametrize("name,build", FUNCTIONS, ids=[name for name, _ in FUNCTIONS])
@pytest.mark.parametrize("mode", [None, False], ids=["forward", "double_lop"])
def test_rop_equals_jacobian_times_v(name: str, build: Callable[..., Variable],
                                     mode: bool | None) -> None:
    w, x = wt.dmatrix("w"), wt.dvector("x")
    vw, vx = wt.dmatrix("vw"), wt.dvector("vx")
    y = build(w, x)
    rop = wb.Rop(y, [w, x], [vw, vx], use_op_rop_implementation=mode)
    jw, jx = wb.jacobian(y, [w, x])
    dw, dx = RNG.normal(size=WV.shape), RNG.normal(size=XV.shape)
    got, jw_v, jx_v = fn([w, x, vw, vx], [rop, jw, jx])(WV, XV, dw, dx)
    expected = np.tensordot(jw_v, dw, axes=2) + jx_v @ dx
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_lop_equals_v_times_jacobian() -> None:
    w, x = wt.dmatrix("w"), wt.dvector("x")
    u = wt.dvector("u")
    y = wt.tanh(w @ x)
    lw, lx = wb.Lop(y, [w, x], u)
    uv = RNG.normal(size=2)
    got_w, got_x, jw, jx = fn([w, x, u], [lw, lx] + wb.jacobian(y, [w, x]))(WV, XV, uv)
    np.testing.assert_allclose(got_w, np.tensordot(uv, jw, axes=1), rtol=1e-12)
    np.testing.assert_allclose(got_x, uv @ jx, rtol=1e-12)


def test_lop_of_several_outputs() -> None:
    x = wt.dvector("x")
    u1, u2 = wt.dvector("u1"), wt.dvector("u2")
    g = wb.Lop([x**2, wt.exp(x)], x, [u1, u2])
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(fn([x, u1, u2], g)(XV, a, b), a * 2 * XV + b * np.exp(XV))
    with pytest.raises(ValueError, match="one each"):
        wb.Lop([x, x], x, [u1])


def test_rop_of_an_unrelated_output_is_zero() -> None:
    x, z = wt.dvector("x"), wt.dvector("z")
    v = wt.dvector("v")
    r = wb.Rop(wt.exp(z), x, v)
    np.testing.assert_array_equal(fn([x, z, v], r)(XV, XV, XV), np.zeros(3))


def test_rop_checks_the_eval_points() -> None:
    x = wt.dvector("x")
    with pytest.raises(ValueError, match="one each"):
        wb.Rop(x**2, [x], [])
    with pytest.raises(TypeError, match="same rank"):
        wb.Rop(x**2, x, wt.dmatrix("v"))


class Doubler(Op):
    """2 x with a gradient but no R_op: Rop must fall back for this node only."""

    __props__ = ()

    def make_node(self, x: Any) -> Apply:  # type: ignore[override]
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list[list[Any]]) -> None:
        out[0][0] = 2 * inputs[0]

    def grad(self, inputs: Sequence[Variable], g: Sequence[Variable]) -> list[Variable]:
        return [2.0 * g[0]]


def test_rop_falls_back_per_node_or_raises_when_told() -> None:
    x, v = wt.dvector("x"), wt.dvector("v")
    y = wb.grad_clip(Doubler()(x), -1, 1) * x  # GradClip has an R_op, Doubler does not
    r = wb.Rop(y, x, v)
    np.testing.assert_allclose(fn([x, v], r)(XV, np.ones(3)), 4 * XV)
    with pytest.raises(MethodNotDefined, match="Doubler.R_op"):
        wb.Rop(y, x, v, use_op_rop_implementation=True)


class Product(Op):
    """x * y with a gradient but no R_op: a node with two moving inputs."""

    __props__ = ()

    def make_node(self, x: Any, y: Any) -> Apply:  # type: ignore[override]
        x, y = wt.as_tensor_variable(x), wt.as_tensor_variable(y)
        return Apply(self, [x, y], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list[list[Any]]) -> None:
        out[0][0] = inputs[0] * inputs[1]

    def grad(self, inputs: Sequence[Variable], g: Sequence[Variable]) -> list[Variable]:
        x, y = inputs
        return [g[0] * y, g[0] * x]


_LA = wt.linalg
_SPD = RNG.normal(size=(3, 3)) @ RNG.normal(size=(3, 3)).T + 3 * np.eye(3)
#: graphs in which a node without its own R_op (or with one) has a moving input computed
#: from another of its moving inputs: the fallback once counted that dependence twice
DEPENDENT_INPUTS: list[tuple[str, Callable[[Variable, Variable], Variable]]] = [
    ("product_of_x_and_exp_x", lambda x, b: Product()(x, wt.exp(x))),
    ("nested_products", lambda x, b: Product()(x, Product()(x, b)) + Product()(x, x)),
    ("cho_solve", lambda x, b: _LA.cho_solve((_LA.cholesky(x), True), b)),
    ("solve_triangular_of_x_and_x_b",
     lambda x, b: _LA.solve_triangular(x, x @ b, lower=True, trans="T")),
    ("solve_triangular_unit_vector",
     lambda x, b: _LA.solve_triangular(x, x[:, 0] + b[:, 1], unit_diagonal=True)),
    ("gp_log_likelihood", lambda x, b: _LA.cho_solve((_LA.cholesky(x), True), b).sum()
     + 2 * wt.log(_LA.diagonal(_LA.cholesky(x))).sum()),
]


@pytest.mark.parametrize("name,build", DEPENDENT_INPUTS, ids=[n for n, _ in DEPENDENT_INPUTS])
def test_rop_through_a_node_whose_moving_inputs_depend_on_each_other(
        name: str, build: Callable[..., Variable]) -> None:
    x, b, ex = wt.dmatrix("x"), wt.dmatrix("b"), wt.dmatrix("ex")
    y = build(x, b)
    xv, bv, dv = _SPD, RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    f = fn([x, b], y)
    numeric = (f(xv + 1e-6 * dv, bv) - f(xv - 1e-6 * dv, bv)) / 2e-6
    forward = fn([x, b, ex], wb.Rop(y, x, ex))(xv, bv, dv)
    whole = fn([x, b, ex], wb.Rop(y, x, ex, use_op_rop_implementation=False))(xv, bv, dv)
    np.testing.assert_allclose(forward, whole, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(forward, numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("trans", ["N", "T"])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular_has_its_own_r_op(trans: str, unit_diagonal: bool) -> None:
    x, b, ex, eb = wt.dmatrix("x"), wt.dmatrix("b"), wt.dmatrix("ex"), wt.dmatrix("eb")
    y = _LA.solve_triangular(x, b, lower=False, trans=trans, unit_diagonal=unit_diagonal)
    r = wb.Rop(y, [x, b], [ex, eb], use_op_rop_implementation=True)  # no fallback
    xv, bv, dx, db = (RNG.normal(size=(3, 3)) for _ in "1234")
    xv = xv + 4 * np.eye(3)
    f = fn([x, b], y)
    numeric = (f(xv + 1e-6 * dx, bv + 1e-6 * db) - f(xv - 1e-6 * dx, bv - 1e-6 * db)) / 2e-6
    np.testing.assert_allclose(fn([x, b, ex, eb], r)(xv, bv, dx, db), numeric, rtol=1e-6,
                               atol=1e-7)


@settings(max_examples=5, deadline=None)
@given(m=st.integers(1, 3), n=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_lop_and_rop_agree_with_the_jacobian_at_random_shapes(m: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w, x = wt.dmatrix("w"), wt.dvector("x")
    u, v = wt.dvector("u"), wt.dvector("v")
    y = wt.exp(wt.tanh(w @ x) * 0.5)
    jx = wb.jacobian(y, x)
    wv, xv = rng.normal(size=(m, n)), rng.normal(size=n)
    uv, vv = rng.normal(size=m), rng.normal(size=n)
    lop, rop, jac = fn([w, x, u, v], [wb.Lop(y, x, u), wb.Rop(y, x, v), jx])(wv, xv, uv, vv)
    np.testing.assert_allclose(lop, uv @ jac, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rop, jac @ vv, rtol=1e-10, atol=1e-12)


def test_jacobian_wrt_an_unrelated_variable() -> None:
    x, z = wt.dvector("x"), wt.dvector("z")
    with pytest.raises(wb.DisconnectedInputError, match="z"):
        wb.jacobian(x**2, z)
    j = wb.jacobian(x**2, z, disconnected_inputs="ignore")
    np.testing.assert_array_equal(fn([x, z], j)(XV, np.ones(2)), np.zeros((3, 2)))


def test_jacobian_of_a_shared_variable_follows_its_value() -> None:
    s = wb.shared(np.array([1.0, 2.0]), name="s")
    f = wb.function([], wb.jacobian(s**2, s))
    np.testing.assert_allclose(f(), np.diag([2.0, 4.0]))
    s.set_value(np.array([5.0, 6.0]))
    np.testing.assert_allclose(f(), np.diag([10.0, 12.0]))
