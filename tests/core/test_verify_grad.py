"""`verify_grad`: finite differences against the symbolic gradient, and its error report.

The Ops here have hand-written gradients, right or deliberately wrong, so the
checker is tested independently of the library's own gradients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.gradcheck import GradientError, numeric_grad
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.op import Op


class Cube(Op):
    """x ** 3 with gradient `factor` * x ** 2 * g (factor 3 is right)."""

    __props__ = ("factor",)

    def __init__(self, factor: float = 3.0) -> None:
        self.factor = factor

    def make_node(self, x: Any) -> Apply:  # type: ignore[override]
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list[list[Any]]) -> None:
        out[0][0] = inputs[0] ** 3

    def grad(self, inputs: Sequence[Variable], g: Sequence[Variable]) -> list[Variable]:
        return [self.factor * inputs[0] * inputs[0] * g[0]]


class WeightedRows(Op):
    """x * w[:, None] for a matrix x and a vector w, with a gradient for both."""

    __props__ = ("bug",)

    def __init__(self, bug: bool = False) -> None:
        self.bug = bug

    def make_node(self, x: Any, w: Any) -> Apply:  # type: ignore[override]
        x, w = wt.as_tensor_variable(x), wt.as_tensor_variable(w)
        return Apply(self, [x, w], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list[list[Any]]) -> None:
        x, w = inputs
        out[0][0] = x * w[:, None]

    def grad(self, inputs: Sequence[Variable], g: Sequence[Variable]) -> list[Variable]:
        x, w = inputs
        gw = wt.sum(g[0] * x, axis=1)
        if self.bug:
            gw = gw * 1.01
        return [g[0] * w.dimshuffle(0, "x"), gw]


class Unused(Op):
    """2 x, ignoring a second input entirely (its gradient is disconnected)."""

    __props__ = ()

    def make_node(self, x: Any, y: Any) -> Apply:  # type: ignore[override]
        x, y = wt.as_tensor_variable(x), wt.as_tensor_variable(y)
        return Apply(self, [x, y], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list[list[Any]]) -> None:
        out[0][0] = 2 * inputs[0]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True], [False]]

    def grad(self, inputs: Sequence[Variable], g: Sequence[Variable]) -> list[Variable]:
        return [2.0 * g[0], wb.disconnected_type()]


RNG = np.random.default_rng(7)
A = RNG.uniform(-1, 1, size=(3, 4))
W = RNG.uniform(-1, 1, size=3)


def test_a_right_gradient_passes() -> None:
    wb.verify_grad(Cube(), [A])
    wb.verify_grad(lambda x, w: WeightedRows()(x, w), [A, W], n_tests=3)


def test_a_bare_array_is_one_point() -> None:
    wb.verify_grad(Cube(), A)


def test_a_wrong_gradient_raises_a_report_naming_input_errors_and_place() -> None:
    with pytest.raises(GradientError) as info:
        wb.verify_grad(Cube(factor=2.5), [A])
    err = info.value
    assert isinstance(err, AssertionError)
    assert err.arg == 0
    assert err.abs_err > err.abs_tol and err.rel_err > err.rel_tol
    assert len(err.abs_pos) == 2 and len(err.rel_pos) == 2
    expected = 2.5 / 3.0
    np.testing.assert_allclose(err.symbolic, expected * err.numeric, rtol=1e-5, atol=1e-6)
    text = str(err)
    assert "input 0" in text
    assert "largest absolute error" in text and "largest relative error" in text
    assert f"index {err.abs_pos}" in text and "symbolic" in text and "numeric" in text


def test_the_report_names_the_right_input() -> None:
    with pytest.raises(GradientError) as info:
        wb.verify_grad(lambda x, w: WeightedRows(bug=True)(x, w), [A, W])
    assert info.value.arg == 1
    assert info.value.symbolic.shape == W.shape


def test_a_disconnected_input_has_a_zero_gradient_and_passes() -> None:
    wb.verify_grad(lambda x, y: Unused()(x, y), [A, W])


def test_float32_points_use_float32_step_and_tolerance() -> None:
    wb.verify_grad(Cube(), [A.astype("float32")])
    with pytest.raises(GradientError):
        wb.verify_grad(Cube(factor=2.0), [A.astype("float32")])


def test_tolerances_and_step_can_be_given() -> None:
    wb.verify_grad(Cube(factor=3.003), [A], abs_tol=1e-2, rel_tol=1e-2)
    with pytest.raises(GradientError):
        wb.verify_grad(Cube(factor=3.003), [A])
    wb.verify_grad(Cube(), [A], eps=1e-5, rng=np.random.default_rng(3))
    wb.verify_grad(Cube(), [A], rng=123)


def test_a_mode_can_be_given() -> None:
    wb.verify_grad(Cube(), [A], mode=wb.Mode(linker="py"))


def test_integer_points_are_rejected() -> None:
    with pytest.raises(TypeError, match="point 0 has dtype int64"):
        wb.verify_grad(Cube(), [np.arange(3)])


def test_fun_must_return_one_variable() -> None:
    with pytest.raises(TypeError, match="one tensor Variable"):
        wb.verify_grad(lambda x: [x, x], [A])


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n_tests"):
        wb.verify_grad(Cube(), [A], n_tests=0)
    with pytest.raises(ValueError, match="at least one point"):
        wb.verify_grad(Cube(), [])


def test_inputs_have_unknown_static_lengths() -> None:
    seen = []

    def fun(x: Variable) -> Variable:
        seen.append(x.type.shape)
        return Cube()(x)

    wb.verify_grad(fun, [A])
    assert seen == [(None, None)]


def test_numeric_grad_of_a_numpy_function() -> None:
    x = np.array([0.5, -1.0, 2.0])
    y = np.array([[1.0, 2.0]])
    gx, gy = numeric_grad(lambda a, b: float(np.sum(a**2) * np.sum(b)), [x, y], 1e-6)
    np.testing.assert_allclose(gx, 2 * x * 3.0, rtol=1e-7)
    np.testing.assert_allclose(gy, np.full_like(y, np.sum(x**2)), rtol=1e-7)
    assert x.tolist() == [0.5, -1.0, 2.0]  # the points are not modified


def test_a_narrow_output_dtype_widens_the_step() -> None:
    wb.verify_grad(lambda x: wt.cast(x, "float16"), [A])
