"""Every differentiable case of the library catalogue passes `verify_grad` in float64.

One parametrized test runs `verify_grad` on each `Case` whose `grad` is True,
with respect to its float inputs, at the case's own values (integer, bool and
constant arguments are fixed); a second one checks the gradient of the
gradient (second order) the same way. `test_every_differentiable_op_has_a_gradient`
enumerates the library's Op classes and scalar Ops and fails for any that
produces float outputs in the catalogue without a gradient method (a `grad`,
`L_op` or scalar `grad_terms` of its own, which may say why not with
`grad_undefined` / `grad_not_implemented`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from workbench.core import dtypes
from workbench.core.gradcheck import verify_grad
from workbench.core.graph.basic import Variable, ancestors, clone_replace
from workbench.core.graph.op import Op
from workbench.core.scalar.basic import ScalarOp
from workbench.core.scalar.math import ALL_OPS
from workbench.core.tensor.variable import constant
from workbench.testing.catalog import Case, all_cases, library_op_classes

#: Catalogue cases (family.name) whose gradient check fails for a known reason.
#: strict xfail: once the gradient is right the entry must go.
KNOWN_MISSING: dict[str, str] = {}

#: The same for the second-order check (the gradient of each gradient).
KNOWN_MISSING_SECOND_ORDER: dict[str, str] = {
    f"elemwise.{name}": "the gradient in a is numerical (gammainc_da), differentiable in x "
    "only: no second derivative in a" for name in ("gammainc", "gammaincc")}

#: Op classes still without a gradient method (qualified names).
KNOWN_MISSING_OPS: dict[str, str] = {}



def _has_float_input(case: Case) -> bool:
    return any(not arg.constant and dtypes.as_dtype(arg.resolved_dtype("float64")).is_float
               for arg in case.args)


#: cases with all inputs constant have nothing to differentiate
CASES = [case for case in all_cases()
         if case.grad is True and "float64" in case.float_dtypes and _has_float_input(case)]


def _marks(case: Case) -> list[Any]:
    reason = KNOWN_MISSING.get(f"{case.family}.{case.name}")
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


PARAMS = [pytest.param(case, id=f"{case.family}.{case.name}", marks=_marks(case))
          for case in CASES]


def _marks_second(case: Case) -> list[Any]:
    reason = KNOWN_MISSING_SECOND_ORDER.get(f"{case.family}.{case.name}")
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


PARAMS_SECOND = [pytest.param(case, id=f"{case.family}.{case.name}", marks=_marks_second(case))
                 for case in CASES]


def _as_list(outputs: Any) -> list[Any]:
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def _is_float(var: Variable) -> bool:
    d = getattr(var.type, "dtype", None)
    return d is not None and dtypes.as_dtype(d).is_float


@pytest.mark.parametrize("case", PARAMS)
def test_case_gradient_matches_finite_differences(case: Case) -> None:
    inputs, outputs, values = case.graph("float64")
    float_positions = [k for k, var in enumerate(inputs) if _is_float(var)]
    fixed = {var: constant(np.asarray(value)) for k, (var, value)
             in enumerate(zip(inputs, values)) if k not in float_positions}
    outs = [out for out in _as_list(outputs) if _is_float(out)]
    assert outs, f"{case.family}.{case.name} has grad=True but no float output"
    for out in outs:

        def fun(*xs: Variable, out: Variable = out) -> Variable:
            replace = dict(fixed)
            replace.update({inputs[k]: x for k, x in zip(float_positions, xs)})
            return clone_replace(out, replace)

        verify_grad(fun, [values[k] for k in float_positions], n_tests=1,
                    rng=np.random.default_rng(0))


@pytest.mark.parametrize("case", PARAMS_SECOND)
def test_case_second_order_gradient(case: Case) -> None:
    """verify_grad of x -> Lop(f, x, sin(f(x))) = grad of sum(1 - cos(f)): every Op's gradient
    graph is itself differentiable. Run with FAST_COMPILE, so a failure here is a gradient's
    (rewrites of gradient graphs are covered by the first-order test's default mode)."""
    from workbench.core.grad import grad
    from workbench.core.tensor.math import sin

    inputs, outputs, values = case.graph("float64")
    float_positions = [k for k, var in enumerate(inputs) if _is_float(var)]
    fixed = {var: constant(np.asarray(value)) for k, (var, value)
             in enumerate(zip(inputs, values)) if k not in float_positions}
    out = next(o for o in _as_list(outputs) if _is_float(o))

    def fun(*xs: Variable) -> Variable:
        replace = dict(fixed)
        replace.update({inputs[k]: x for k, x in zip(float_positions, xs)})
        f = clone_replace(out, replace)
        return grad(None, xs[0], known_grads={f: sin(f)}, disconnected_inputs="ignore")

    verify_grad(fun, [values[k] for k in float_positions], n_tests=1,
                rng=np.random.default_rng(1), mode="FAST_COMPILE")


# -- completeness ---------------------------------------------------------------------------

GRAD_METHODS = ("grad", "L_op", "grad_terms")
#: bases whose grad methods are generic defaults (they end in Op.grad, which raises)
DEFAULT_PROVIDERS = (Op, ScalarOp, object)


def has_gradient_method(cls: type) -> bool:
    """Whether `cls` (or a base of its own below Op/ScalarOp) defines a gradient method."""
    return any(name in vars(base) for base in cls.__mro__ if base not in DEFAULT_PROVIDERS
               for name in GRAD_METHODS)


def classes_with_float_outputs() -> set[type]:
    """Op classes (and scalar Op classes inside Elemwise) that give a float output somewhere
    in the catalogue."""
    found: set[type] = set()
    for case in all_cases():
        _, outputs, _ = case.graph(case.float_dtypes[0])
        for var in ancestors(_as_list(outputs)):
            node = var.owner
            if node is None or not any(_is_float(o) for o in node.outputs):
                continue
            found.add(type(node.op))
            scalar_op = getattr(node.op, "scalar_op", None)
            if scalar_op is not None:
                found.add(type(scalar_op))
    return found


def test_every_differentiable_op_has_a_gradient() -> None:
    candidates = set(library_op_classes()) | {type(op) for op in ALL_OPS.values()}
    floating = classes_with_float_outputs()
    missing = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in candidates & floating
                     if not has_gradient_method(cls))
    missing = [name for name in missing if name not in KNOWN_MISSING_OPS]
    assert not missing, (
        f"{len(missing)} Op classes have float outputs but no gradient (define grad/L_op, "
        "using grad_undefined or grad_not_implemented to say why not):\n  "
        + "\n  ".join(missing)
    )


def test_has_gradient_method_sees_own_and_inherited_definitions() -> None:
    class Plain(Op):
        pass

    class WithGrad(Op):
        def grad(self, inputs: Any, output_grads: Any) -> Any:
            return []

    class Child(WithGrad):
        pass

    class PlainScalar(ScalarOp):
        pass

    assert not has_gradient_method(Plain)
    assert has_gradient_method(WithGrad) and has_gradient_method(Child)
    assert not has_gradient_method(PlainScalar)


def test_gradients_never_carry_integer_dtypes() -> None:
    """Seed 003: for every case (differentiable or not), the gradient wrt each input,
    integer and bool ones included, is float (or complex) and has the input's rank, or is
    a DisconnectedType / NullType marker. Building the graphs suffices; nothing runs."""
    from workbench.core.grad import grad, grad_dtype, is_disconnected, is_null

    problems = []
    for case in all_cases():
        inputs, outputs, _ = case.graph(case.float_dtypes[0])
        outs = [o for o in _as_list(outputs) if getattr(o.type, "ndim", None) is not None]
        if not inputs or not outs:
            continue
        seeds = {o: o.type.clone(dtype=grad_dtype(o))() for o in outs}
        where = f"{case.family}.{case.name}"
        try:
            grads = grad(None, inputs, known_grads=seeds, disconnected_inputs="ignore",
                         null_gradients="return")
        except Exception as exc:  # noqa: BLE001 - every failure is listed below
            problems.append(f"{where}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            continue
        for k, (x, g) in enumerate(zip(inputs, grads)):
            if is_null(g) or is_disconnected(g):
                continue
            d = dtypes.as_dtype(g.type.dtype)
            if not (d.is_float or d.is_complex) or g.type.ndim != x.type.ndim:
                problems.append(f"{where}: input {k} of type {x.type} got gradient {g.type}")
    assert not problems, "\n".join(problems)
