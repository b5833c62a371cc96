"""Scalar Ops as declarations: a new Op in one `declare` call runs on every linker, with
its gradient, printing and catalogue cases; and a user's Op class named like a library
Op runs its own code everywhere (backend kernels are keyed by class, never by name)."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

import workbench as wb
import workbench.core.scalar as ps
import workbench.core.tensor as wt
from workbench.core.compile.mode import available_linkers
from workbench.core.gradcheck import verify_grad
from workbench.core.scalar.declared import backend_entry, declare
from workbench.core.tensor.elemwise import Elemwise
from workbench.testing.cases_elemwise import declared_cases

HAS_TORCH = importlib.util.find_spec("torch") is not None
LINKERS = [pytest.param(name, marks=pytest.mark.skipif(
    name not in available_linkers() or (name == "gpu" and not HAS_TORCH),
    reason=f"the {name} linker is not available here")) for name in ("py", "c", "gpu")]


# -- a user's Op named like a library Op ---------------------------------------------------


class Exp(ps.UnaryScalarOp):
    """Not the exponential: x + 1, under the library's class name."""

    default_preference = staticmethod(ps.upgrade_to_float)

    def impl(self, x: Any) -> Any:
        return x + 1


class Add(ps.BinaryScalarOp):
    """Not addition: x * y, under the library's class name."""

    default_preference = staticmethod(ps.upcast_out)

    def impl(self, x: Any, y: Any) -> Any:
        return x * y


class ShiftedExp(type(ps.exp)):  # a subclass of the library's Exp that changes impl
    def impl(self, x: Any) -> Any:
        return np.exp(x) - 1


@pytest.mark.parametrize("linker", LINKERS)
def test_user_ops_named_like_library_ops_run_their_own_code(linker: str) -> None:
    x, y = wt.dvector("x"), wt.dvector("y")
    outputs = [Elemwise(Exp())(x), Elemwise(Add())(x, y), Elemwise(ShiftedExp())(x),
               Elemwise(Add())(Elemwise(Exp())(x), y)]  # fused into one Composite
    f = wb.function([x, y], outputs, linker=linker)
    a, b = np.array([0.5, 1.0, 2.0]), np.array([3.0, -1.0, 0.25])
    got = f(a, b)
    for value, want in zip(got, [a + 1, a * b, np.exp(a) - 1, (a + 1) * b]):
        np.testing.assert_allclose(value, want, rtol=1e-12)


def test_backend_tables_answer_by_class_and_computation() -> None:
    table = {type(ps.exp): "exp kernel", ps.Add: "add kernel"}
    assert backend_entry(table, type(ps.exp)) == "exp kernel"
    assert backend_entry(table, Exp) is None  # same name, other class
    assert backend_entry(table, Add) is None
    assert backend_entry(table, ShiftedExp) is None  # a subclass overriding impl

    class QuietAdd(ps.Add):  # a subclass that computes the same keeps the kernel
        pass

    assert backend_entry(table, QuietAdd) == "add kernel"


# -- a new Op in one declaration -------------------------------------------------------------

hypot = declare(
    "Hypot", "hypot", "sqrt(x ** 2 + y ** 2) without overflow.", nin=2,
    numpy="hypot", c="hypot", torch="hypot",
    derivative=lambda x, y, z: (x / z, y / z),
    domain=((0.5, 3.0), (-3.0, -0.5)), reference=lambda x, y: np.sqrt(x * x + y * y),
)
hypot_function = wt.elemwise_function(hypot)


def test_one_declaration_gives_an_op_with_every_fact() -> None:
    assert type(hypot).__name__ == "Hypot" and type(hypot).__module__ == __name__
    assert hypot.nin == 2 and hypot.name == "hypot" and str(hypot) == "hypot"
    assert hypot_function.op.scalar_op is hypot
    from workbench.core.link.c.scalar_c import scalar_c_code, scalar_op_has_c

    assert scalar_op_has_c(hypot)
    _, (expr,) = scalar_c_code(hypot, ["a", "b"], ["float32", "float32"], ["float32"],
                               lambda: "t")
    assert "hypotf(a, b)" in expr
    if HAS_TORCH:
        from workbench.core.link.gpu.lower_elemwise import scalar_kernel

        assert scalar_kernel(hypot) is not None


@pytest.mark.parametrize("linker", LINKERS)
def test_declared_op_runs_on_every_linker(linker: str) -> None:
    x, y = wt.dmatrix("x"), wt.fvector("y")
    z = hypot_function(x, y) * 2.0  # fused with the product
    f = wb.function([x, y], z, linker=linker)
    a = np.random.default_rng(1).uniform(-3, 3, (2, 3))
    b = np.array([0.5, -4.0, 1e-3], dtype="float32")
    np.testing.assert_allclose(f(a, b), 2 * np.hypot(a, b.astype("float64")), rtol=1e-13)
    i = wt.ivector("i")  # integers compute in the default float dtype
    assert wb.function([i], hypot_function(i, i), linker=linker)(
        np.array([3, 4], dtype="int32")).dtype == np.float64


def test_declared_op_gradient_and_printing() -> None:
    rng = np.random.default_rng(2)
    verify_grad(hypot_function, [rng.uniform(0.5, 2, (3, 2)), rng.uniform(-2, -0.5, (3, 2))],
                rng=rng)
    x, y = wt.dvector("x"), wt.dvector("y")
    assert wb.pprint(hypot_function(x, y) + 1) == "hypot(x, y) + 1.0"
    assert "Elemwise{hypot}" in wb.dprint(hypot_function(x, y), file="str")


@pytest.mark.parametrize("linker", LINKERS)
def test_declared_op_catalogue_cases(linker: str) -> None:
    cases = declared_cases(hypot, hypot_function)
    assert [c.name for c in cases] == ["hypot", "hypot_int32"]
    for case in cases:
        for float_dtype in case.float_dtypes:
            inputs, output, values = case.graph(float_dtype)
            got = wb.function(inputs, output, linker=linker)(*values)
            want = case.expected(float_dtype)
            assert got.dtype == want.dtype
            rtol, atol = case.tolerance(float_dtype)
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
