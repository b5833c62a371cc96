"""The canonicalize rules: each fires (the trace names it), gives the expected
graph, and preserves values (compared with the graph compiled without rewrites)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.graph.basic import Constant
from workbench.core.tensor.creation import Alloc
from workbench.core.tensor.elemwise import DimShuffle, Elemwise
from workbench.core.tensor.reduction import Sum

NO_REWRITES = wb.Mode(linker="py", rewriter=None)
RNG = np.random.default_rng(0)


def rewritten(outputs: Any, exclude: Sequence[str] = ()) -> tuple[Any, Any]:
    """(fgraph, trace) of FAST_RUN; no rewrite may fail."""
    outs = outputs if isinstance(outputs, list) else [outputs]
    fgraph, trace = wb.rewrite_graph(outs, mode="FAST_RUN", exclude=list(exclude), trace=True)
    assert not trace.failed_steps, trace.failed_steps.table()
    return fgraph, trace


def check(inputs: list[Any], output: Any, rule: str, values: list[Any],
          exclude: Sequence[str] = ()) -> Any:
    """Assert `rule` fires on `output` and FAST_RUN gives the values of no rewrites."""
    fgraph, trace = rewritten(output, exclude)
    assert rule in trace.rewrites_used(), trace.table()
    fast = wb.function(inputs, output, mode="FAST_RUN")
    slow = wb.function(inputs, output, mode=NO_REWRITES)
    got, expected = fast(*values), slow(*values)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    return fgraph


def is_input(fgraph: Any, name: str) -> bool:
    """True if the graph's (only) output is the input named `name`, unchanged."""
    out = fgraph.outputs[0]
    return out.owner is None and out in fgraph.inputs and out.name == name


def ops(fgraph: Any) -> list[str]:
    return [str(node.op) for node in fgraph.toposort()]


def mat(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, size=shape)


# -- x*y/y (seed 001) -------------------------------------------------------------


def test_mul_div_same_with_a_constant_divisor_leaves_x() -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], x * 1.7 / 1.7, "local_mul_div_same", [mat(2, 3)])
    assert is_input(fgraph, "x")
    fgraph = check([x], 1.7 * x / 1.7, "local_mul_div_same_left", [mat(2, 3)])
    assert is_input(fgraph, "x")


def test_mul_div_same_with_a_symbolic_divisor_keeps_its_nans() -> None:
    # x*y/y is NaN where y is 0, infinite or NaN: x where y is finite and nonzero
    x, s = wt.dmatrix("x"), wt.dscalar("s")
    fgraph = check([x, s], x * s / s, "local_mul_div_same", [mat(2, 3), 1.7])
    assert "Elemwise{mul}" not in ops(fgraph) and "Elemwise{true_div}" not in ops(fgraph)
    f = wb.function([x, s], x * s / s, mode="FAST_RUN")
    for y in (0.0, np.inf, np.nan):
        assert np.isnan(f(mat(2, 3), y)).all()
    big = np.full((1, 1), 1e200)
    np.testing.assert_array_equal(f(big, 1e200), big)  # x*y would overflow: x is exact


def test_mul_div_same_keeps_the_broadcast_shape() -> None:
    # y may broadcast x at run time: the result has the broadcast shape
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    check([x, y], x * y / y, "local_mul_div_same", [mat(1, 3), mat(2, 3)])
    f = wb.function([x, y], x * y / y, mode="FAST_RUN")
    assert f(mat(1, 3), mat(2, 3)).shape == (2, 3)
    c = wt.constant(mat(2, 3))
    fgraph = check([x], x * c / c, "local_mul_div_same", [mat(1, 3)])
    assert any(isinstance(n.op, Alloc) for n in fgraph.apply_nodes)
    assert wb.function([x], x * c / c, mode="FAST_RUN")(mat(1, 3)).shape == (2, 3)


# -- neutral and absorbing elements ----------------------------------------------------


@pytest.mark.parametrize("build, rule", [
    (lambda x: x + 0, "local_add_zero"),
    (lambda x: 0 + x, "local_add_zero"),
    (lambda x: x - 0, "local_sub_zero"),
    (lambda x: x * 1, "local_mul_one"),
    (lambda x: 1 * x, "local_mul_one"),
    (lambda x: x / 1, "local_div_one"),
    (lambda x: x ** 1, "local_pow_constant"),
    (lambda x: wt.neg(wt.neg(x)), "local_neg_neg"),
    (lambda x: wt.log(wt.exp(x)), "local_log_exp"),
])
def test_neutral_rewrites_leave_x(build: Any, rule: str) -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], build(x), rule, [mat(2, 3)])
    assert is_input(fgraph, "x")


def test_div_one_of_integers_keeps_the_float_dtype() -> None:
    i = wt.ivector("i")
    fgraph = check([i], i / 1, "local_div_one", [np.array([1, 2, 3], dtype=np.int32)])
    assert fgraph.outputs[0].type.dtype == "float64"


def test_add_zero_of_a_broadcast_zero_matrix_allocates() -> None:
    # x (a row) + zeros(2, 3): the result is x broadcast to (2, 3), not x
    x = wt.drow("x")
    out = x + wt.constant(np.zeros((2, 3)))
    check([x], out, "local_add_zero", [mat(1, 3)])


@pytest.mark.parametrize("build, rule", [
    (lambda x: x * 0, "local_mul_zero"),
    (lambda x: 0 * x, "local_mul_zero"),
    (lambda x: x - x, "local_sub_self"),
])
def test_absorbing_rewrites_give_zeros_of_the_right_shape_and_dtype(build: Any, rule: str
                                                                   ) -> None:
    x = wt.imatrix("x")
    fgraph = check([x], build(x), rule, [np.arange(6, dtype=np.int32).reshape(2, 3)])
    assert ops(fgraph)[-1] == "Alloc"
    assert fgraph.outputs[0].type == build(x).type


@pytest.mark.parametrize("build", [lambda x: x * 0, lambda x: x - x])
def test_absorbing_rewrites_keep_nan_of_floats(build: Any) -> None:
    """nan*0, inf*0 and inf-inf are NaN: a float x keeps its product or difference."""
    x = wt.dvector("x")
    value = np.array([np.nan, np.inf, 1.0])
    got = wb.function([x], build(x), mode="FAST_RUN")(value)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, build(value))


# -- constants collected, constant exponents ---------------------------------------------


def test_add_constants_are_collected() -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], (x + 1) + 2, "local_add_constants", [mat(2, 3)])
    (node,) = fgraph.toposort()
    assert str(node.op) == "Elemwise{add}"
    assert [float(np.asarray(v.data).reshape(-1)[0]) for v in node.inputs
            if isinstance(v, Constant)] == [3.0]


def test_mul_constants_are_collected() -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], 2 * (3 * x), "local_mul_constants", [mat(2, 3)])
    (node,) = fgraph.toposort()
    assert [float(np.asarray(v.data).reshape(-1)[0]) for v in node.inputs
            if isinstance(v, Constant)] == [6.0]


@pytest.mark.parametrize("exponent, op", [
    (2, "Elemwise{sqr}"), (0.5, "Elemwise{sqrt}"), (-1, "Elemwise{reciprocal}"),
])
def test_constant_exponents_become_dedicated_ops(exponent: float, op: str) -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], x ** exponent, "local_pow_constant", [mat(2, 3)])
    assert ops(fgraph) == [op]


def test_pow_zero_gives_ones_and_integer_powers_stay_integer() -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], x ** 0, "local_pow_constant", [mat(2, 3)])
    assert ops(fgraph)[-1] == "Alloc"
    i = wt.ivector("i")
    fgraph = check([i], i ** 2, "local_pow_constant", [np.array([1, -2, 3], dtype=np.int32)])
    assert fgraph.outputs[0].type.dtype == "int32"


# -- DimShuffle --------------------------------------------------------------------------


def test_consecutive_dimshuffles_merge() -> None:
    v = wt.dvector("v")
    out = wt.dimshuffle(wt.dimshuffle(v, ("x", 0)), (1, 0))
    fgraph = check([v], out, "local_dimshuffle_merge", [mat(4)])
    assert ops(fgraph) == ["DimShuffle{0,x}"]


def test_dimshuffles_that_cancel_disappear() -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], x.T.T, "local_dimshuffle_merge", [mat(2, 3)])
    assert is_input(fgraph, "x")


def test_identity_dimshuffle_is_removed() -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], DimShuffle(2, (0, 1))(x), "local_dimshuffle_identity", [mat(2, 3)])
    assert is_input(fgraph, "x")


def test_dimshuffle_is_lifted_through_elemwise() -> None:
    x = wt.dmatrix("x")
    out = wt.dimshuffle(wt.exp(x) + 1, (1, 0))
    fgraph = check([x], out, "local_dimshuffle_lift", [mat(2, 3)], exclude=["fusion"])
    assert isinstance(fgraph.outputs[0].owner.op, Elemwise)


# -- useless reshape / specify_shape / casts ------------------------------------------------


def test_useless_reshape_is_removed() -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], wt.reshape(x, x.shape), "local_useless_reshape", [mat(2, 3)])
    assert is_input(fgraph, "x")
    s = wt.tensor("float64", shape=(2, 3), name="s")
    fgraph = check([s], wt.reshape(s, (2, 3)), "local_useless_reshape", [mat(2, 3)])
    assert is_input(fgraph, "s")


def test_useless_specify_shape_is_removed() -> None:
    s = wt.tensor("float64", shape=(2, 3), name="s")
    out = wt.SpecifyShape()(s, 2, 3)
    fgraph = check([s], out, "local_useless_specify_shape", [mat(2, 3)])
    assert is_input(fgraph, "s")


def test_useful_specify_shape_stays() -> None:
    x = wt.dmatrix("x")
    fgraph, _ = rewritten(wt.specify_shape(x, (2, 3)))
    assert ops(fgraph) == ["SpecifyShape"]


def test_cast_to_the_same_dtype_is_removed() -> None:
    x = wt.dmatrix("x")
    fgraph = check([x], wt.cast_op("float64")(x), "local_useless_cast", [mat(2, 3)])
    assert is_input(fgraph, "x")


def test_lossless_cast_of_cast_is_one_cast() -> None:
    i = wt.imatrix("i")
    out = wt.cast(wt.cast(i, "float64"), "float32")
    fgraph = check([i], out, "local_cast_cast", [np.arange(6, dtype=np.int32).reshape(2, 3)])
    assert ops(fgraph) == ["Elemwise{Cast{float32}}"]


def test_lossy_cast_of_cast_stays() -> None:
    x = wt.dmatrix("x")
    out = wt.cast(wt.cast(x, "int32"), "float64")  # truncation must happen
    fgraph, trace = rewritten(out)
    assert "local_cast_cast" not in trace.rewrites_used()
    assert len(fgraph.apply_nodes) >= 1
    np.testing.assert_array_equal(wb.function([x], out, mode="FAST_RUN")(np.array([[1.7]])),
                                  [[1.0]])


# -- sum of sum, shapes of alloc -----------------------------------------------------------


def test_sum_of_sum_is_one_sum() -> None:
    t = wt.dtensor3("t")
    out = wt.sum(wt.sum(t, axis=0), axis=1)
    fgraph = check([t], out, "local_sum_sum", [mat(2, 3, 4)])
    (node,) = fgraph.toposort()
    assert isinstance(node.op, Sum) and node.op.axis == (0, 2)
    fgraph = check([t], wt.sum(wt.sum(t, axis=1)), "local_sum_sum", [mat(2, 3, 4)])
    assert fgraph.toposort()[0].op.axis is None


def test_shape_of_alloc_reads_the_lengths() -> None:
    a, n = wt.dscalar("a"), wt.lscalar("n")
    out = wt.alloc(a, 3, n).shape
    fgraph = check([a, n], out, "local_shape_of_alloc", [1.5, 4])
    assert not any(isinstance(node.op, Alloc) for node in fgraph.apply_nodes)
    out = wt.shape_i(wt.alloc(a, 3, n), 1)
    fgraph = check([a, n], out, "local_shape_i_of_alloc", [1.5, 4])
    assert is_input(fgraph, "n")


def test_excluding_a_rule_by_name_keeps_its_pattern() -> None:
    x = wt.dmatrix("x")
    fgraph, trace = rewritten(wt.neg(wt.neg(x)), exclude=["local_neg_neg"])
    assert "local_neg_neg" not in trace.rewrites_used()
    assert not is_input(fgraph, "x")


def test_every_rule_is_registered_with_its_pass_tags_and_source() -> None:
    from workbench.core.rewrite import rewrite_db
    from workbench.core.rewrite.rules import (
        canonicalize,
        elemwise_algebra,
        specialize,
        stabilize,
    )

    families = {"canonicalize": [*canonicalize.__all__, *elemwise_algebra.__all__],
                "stabilize": stabilize.__all__, "specialize": specialize.__all__}
    for pass_name, names in families.items():
        for name in names:
            if not name.startswith("local_"):
                continue
            tags = rewrite_db.tags_of(name)
            assert {pass_name, "fast_run"} <= tags, (name, tags)
            assert ("fast_compile" in tags) == (pass_name == "canonicalize"), (name, tags)
            assert "rules" in (rewrite_db[name].source or ""), name


def test_canonicalize_runs_in_fast_compile_too() -> None:
    x = wt.fvector("x")
    fgraph, trace = wb.rewrite_graph([(x + 0) * 1], mode="FAST_COMPILE", trace=True)
    assert {"local_add_zero", "local_mul_one"} <= set(trace.rewrites_used())
    assert is_input(fgraph, "x") and fgraph.outputs[0].type.dtype == "float32"


# -- what gradients are made of: ones filled to a shape, sums back to a shape ----------


def test_a_product_with_filled_ones_is_the_other_operand() -> None:
    x = wt.dvector("x")
    ones = wt.alloc(1.0, x.shape[0])
    fgraph = check([x], ones * wt.tanh(x), "local_mul_alloc", [mat(4)], exclude=["fusion"])
    assert ops(fgraph) == ["Elemwise{tanh}"]


def test_a_filled_value_multiplies_in_as_a_number() -> None:
    x = wt.dvector("x")
    n = wt.cast(x.shape[0], "float64")
    fgraph = check([x], wt.alloc(1.0 / n, x.shape[0]) * x, "local_mul_alloc", [mat(5)],
                   exclude=["fusion"])
    assert not any(isinstance(node.op, Alloc) for node in fgraph.apply_nodes)
    fgraph = check([x], wt.alloc(1.0, x.shape[0]) * 2.0 * wt.exp(x), "local_mul_alloc",
                   [mat(3)], exclude=["fusion"])
    assert not any(isinstance(node.op, Alloc) for node in fgraph.apply_nodes)


def test_filled_ones_of_another_length_still_broadcast() -> None:
    """x (length 1 at run time) times ones(n): the product has length n, so it stays."""
    x, y = wt.dvector("x"), wt.dvector("y")
    out = wt.alloc(1.0, y.shape[0]) * x
    fgraph, _ = rewritten(out)
    f = wb.function([x, y], out, mode="FAST_RUN")
    np.testing.assert_array_equal(f(np.array([2.0]), np.zeros(3)), [2.0, 2.0, 2.0])
    assert any(isinstance(node.op, Alloc) for node in fgraph.apply_nodes)


def test_a_transposed_fill_of_a_vector_is_not_read_as_its_value() -> None:
    x = wt.dmatrix("x")
    v = wt.dvector("v")
    filled_rows = wt.alloc(v, x.shape[1], x.shape[0]).T  # v runs down the columns
    fast = wb.function([x, v], filled_rows * x, mode="FAST_RUN")
    xv, vv = mat(2, 3), mat(2)
    np.testing.assert_allclose(fast(xv, vv), vv[:, None] * xv)


def test_sum_to_the_same_shape_is_removed() -> None:
    x = wt.dvector("x")
    (g,) = wb.grad((wt.tanh(x) * x).sum(), [x])
    fgraph, trace = rewritten(g, exclude=["fusion"])
    assert "local_useless_sum_to_shape" in trace.rewrites_used()
    assert "SumToShape" not in " ".join(ops(fgraph))


def test_the_gradient_of_sum_tanh_x_times_x_is_one_fused_loop() -> None:
    """The textbook tanh(x) + x * (1 - tanh(x)**2), in one Elemwise (issue 16)."""
    x = wt.dvector("x")
    (g,) = wb.grad((wt.tanh(x) * x).sum(), [x])
    formula, _ = rewritten(g, exclude=["fusion", "inplace"])
    assert wb.pprint(formula.outputs[0]) == "tanh(x) + x * (1.0 - tanh(x) * tanh(x))"
    fused, _ = rewritten(g)
    (node,) = fused.apply_nodes
    assert isinstance(node.op, Elemwise) and [v.name for v in node.inputs] == ["x"]
    xv = mat(7)
    np.testing.assert_allclose(wb.function([x], g)(xv), np.tanh(xv) + xv / np.cosh(xv) ** 2,
                               rtol=1e-13)
