"""Weak Python scalars in tensor graphs follow `dtypes.result_type` (NEP 50), whatever
the default float dtype.

With float32 as default float, ``result_type(int32, 1.5)`` is float32, but the
strong pair (int32, float32) promotes to float64. A graph must agree with
`result_type`: ``ivector * 1.5`` is float32, because `Elemwise` casts the int32
operand to float32 before multiplying. Each check below compares three things:
the graph's dtype, the dtype rule applied to ``result_type(tensor, scalar)``,
and the dtype of the value a compiled function returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.core import dtypes
from workbench.core.graph.basic import Variable, ancestors
from workbench.core.scalar.basic import Cast, get_scalar_type
from workbench.core.tensor.elemwise import Elemwise

TENSOR_DTYPES = (dtypes.bool_, *dtypes.all_int_dtypes, *dtypes.all_float_dtypes,
                 *dtypes.all_complex_dtypes)
# One Python scalar of each kind; bool first because it is also an int.
SCALARS = (True, 3, 1.5, 1.5 + 0.5j)
DEFAULT_FLOATS = ("float64", "float32")

# name -> (build(x, cond, scalar), the Elemwise Op it applies)
Build = Callable[[Variable, Variable, Any], Variable]
OPERATORS: dict[str, tuple[Build, Any]] = {
    "x + s": (lambda x, c, s: x + s, wt.add.op),
    "s + x": (lambda x, c, s: s + x, wt.add.op),
    "x * s": (lambda x, c, s: x * s, wt.mul.op),
    "s - x": (lambda x, c, s: s - x, wt.sub.op),
    "x / s": (lambda x, c, s: x / s, wt.true_div.op),
    "s / x": (lambda x, c, s: s / x, wt.true_div.op),
    "x < s": (lambda x, c, s: x < s, wt.lt.op),
    "eq(s, x)": (lambda x, c, s: wt.eq(s, x), wt.eq.op),
    "maximum(x, s)": (lambda x, c, s: wt.maximum(x, s), wt.maximum.op),
    "wt.mul(s, x)": (lambda x, c, s: wt.mul(s, x), wt.mul.op),
    "where(c, x, s)": (lambda x, c, s: wt.where(c, x, s), wt.where.op),
    "where(c, s, x)": (lambda x, c, s: wt.where(c, s, x), wt.where.op),
    "clip(x, s, s)": (lambda x, c, s: wt.clip(x, s, s), wt.clip.op),
}
# Operators whose output dtype *is* the promoted dtype.
PROMOTING = {"x + s", "s + x", "x * s", "s - x", "maximum(x, s)", "wt.mul(s, x)",
             "where(c, x, s)", "where(c, s, x)", "clip(x, s, s)"}


def _expected(op: Elemwise, promoted: dtypes.Dtype) -> dtypes.Dtype | None:
    """The op's dtype rule applied to the promoted dtype; None when the rule refuses it."""
    scalar_op = op.scalar_op
    n = scalar_op.nin
    in_dtypes = [dtypes.bool_ if i not in (scalar_op.dtype_inputs or range(n)) else promoted
                 for i in range(n)]
    try:
        return scalar_op.output_dtypes(in_dtypes)[0]
    except TypeError:
        return None


def _data(dtype: dtypes.Dtype) -> np.ndarray:
    values = [False, True, True] if dtype.is_bool else [0, 1, 2]
    return np.asarray(values, dtype=dtype.numpy)


@pytest.mark.parametrize("default_float", DEFAULT_FLOATS)
@pytest.mark.parametrize("scalar", SCALARS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("dtype", TENSOR_DTYPES, ids=str)
def test_graph_and_computed_dtypes_follow_result_type(dtype, scalar, default_float):
    with dtypes.default_float_dtype_as(default_float):
        promoted = dtypes.result_type(dtype, scalar)
        x = wt.tensor(dtype, shape=(3,), name="x")
        c = wt.tensor("bool", shape=(3,), name="c")
        outputs, names = [], []
        for name, (build, op) in OPERATORS.items():
            expected = _expected(op, promoted)
            if expected is None:  # e.g. bool - bool, complex clip: refused when building
                with pytest.raises(TypeError):
                    build(x, c, scalar)
                continue
            out = build(x, c, scalar)
            assert out.dtype == expected, name
            if name in PROMOTING:
                assert out.dtype == promoted, name
            # the Elemwise computes in the promoted dtype: its operands promote to it
            node = out.owner
            operands = [v.dtype for i, v in enumerate(node.inputs)
                        if i in (op.scalar_op.dtype_inputs or range(len(node.inputs)))]
            assert dtypes.result_type(*operands) == promoted, name
            outputs.append(out)
            names.append(name)
        f = wb.function([x, c], outputs, linker="py")
        results = f(_data(dtype), np.array([True, False, True]))
    for name, out, value in zip(names, outputs, results):
        assert value.dtype == out.dtype.numpy, name


@pytest.mark.parametrize("default_float", DEFAULT_FLOATS)
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint64", "bool", "float16", "float32"])
def test_values_are_computed_in_the_promoted_dtype(dtype, default_float):
    dtype = dtypes.as_dtype(dtype)
    data = _data(dtype)
    with dtypes.default_float_dtype_as(default_float):
        x = wt.tensor(dtype, shape=(3,), name="x")
        for scalar in (2, 1.25, 0.5 - 1j):
            promoted = dtypes.result_type(dtype, scalar)
            f = wb.function([x], [x * scalar, scalar + x, x < scalar], linker="py")
            product, total, less = f(data)
            as_promoted = data.astype(promoted.numpy)
            weak = np.asarray(scalar, dtype=promoted.numpy)
            np.testing.assert_array_equal(product, as_promoted * weak)
            np.testing.assert_array_equal(total, weak + as_promoted)
            if not promoted.is_complex:
                np.testing.assert_array_equal(less, as_promoted < weak)


def test_the_reported_case_int32_times_a_float_under_float32():
    with dtypes.default_float_dtype_as("float32"):
        x = wt.ivector("x")
        y = x * 1.5
        assert dtypes.result_type("int32", 1.5) == y.dtype == "float32"
        # the int32 operand is cast to float32; the constant is a float32 1.5
        cast_node, constant = (v.owner for v in y.owner.inputs)
        assert isinstance(cast_node.op, Elemwise) and cast_node.op.scalar_op == Cast(
            get_scalar_type("float32"))
        assert constant.inputs[0].dtype == "float32"
        assert wb.function([x], y, linker="py")(np.array([1, 2], "int32")).dtype == np.float32
    assert (x * 1.5).dtype == "float64"  # the default float again


def test_no_cast_when_the_tensor_already_promotes_safely():
    """A cast appears only where strong promotion would overshoot `result_type`."""
    with dtypes.default_float_dtype_as("float32"):
        for x, scalar in [(wt.tensor("int16", shape=(None,)), 1.5), (wt.fvector(), 2),
                          (wt.bvector(), 2.5), (wt.dvector(), 1j), (wt.ivector(), 7)]:
            y = x * scalar
            assert not any(
                v.owner and isinstance(v.owner.op, Elemwise)
                and isinstance(v.owner.op.scalar_op, Cast) for v in ancestors([y])
            ), (x.dtype, scalar)
    for dtype in TENSOR_DTYPES:  # with the float64 default, no cast is ever needed
        y = wt.tensor(dtype, shape=(None,)) * (1.5 + 1j)
        assert y.owner.inputs[0].owner is None, dtype


def test_several_strong_operands_are_each_cast_when_needed():
    with dtypes.default_float_dtype_as("float32"):
        x = wt.tensor("int32", shape=(None,), name="x")
        lo = wt.tensor("int64", shape=(None,), name="lo")
        small = wt.tensor("int8", shape=(None,), name="small")
        y = wt.clip(x, lo, 2.5)
        assert y.dtype == dtypes.result_type("int32", "int64", 2.5) == "float32"
        z = wt.clip(small, lo, 2.5)
        assert z.dtype == "float32"
        f = wb.function([x, lo, small], [y, z], linker="py")
        out_y, out_z = f(np.array([0, 5], "int32"), np.array([1, 1], "int64"),
                         np.array([3, -1], "int8"))
    np.testing.assert_array_equal(out_y, np.array([1, 2.5], "float32"))
    np.testing.assert_array_equal(out_z, np.array([2.5, 1], "float32"))
    assert out_y.dtype == out_z.dtype == np.float32


def test_scalar_graphs_follow_the_same_rule():
    with dtypes.default_float_dtype_as("float32"):
        a = get_scalar_type("int32")()
        assert (a * 1.5).type.dtype == "float32"
        assert (2 + a).type.dtype == "int32"
        assert (a < 1.5).type.dtype == "bool"
        assert (a * 1.5).owner.inputs[0].owner.op == Cast(get_scalar_type("float32"))
    assert (a * 1.5).type.dtype == "float64"


def test_weak_integer_overflow_is_still_refused():
    with dtypes.default_float_dtype_as("float32"):
        with pytest.raises(OverflowError, match="does not fit in int8"):
            wt.tensor("int8", shape=(None,)) + 1000


def test_the_condition_of_where_keeps_its_own_dtype():
    with dtypes.default_float_dtype_as("float32"):
        x = wt.ivector("x")
        y = wt.where(True, x, 0.5)
        assert y.dtype == "float32"
        assert y.owner.inputs[0].dtype == "bool"


@settings(max_examples=25, deadline=None)
@given(
    strong=st.lists(st.sampled_from(TENSOR_DTYPES), min_size=1, max_size=2),
    scalar=st.sampled_from(SCALARS + (7, 0.25, 2j, False)),
    default_float=st.sampled_from(("float64", "float32", "float16", "bfloat16")),
)
def test_add_of_tensors_and_a_scalar_matches_result_type(strong, scalar, default_float):
    with dtypes.default_float_dtype_as(default_float):
        tensors = [wt.tensor(d, shape=(None,)) for d in strong]
        y = wt.add(*tensors, scalar) if len(tensors) > 1 else tensors[0] + scalar
        if len(tensors) > 1:  # add folds left: (a + b) + s
            expected = dtypes.result_type(dtypes.promote_types(*strong), scalar)
        else:
            expected = dtypes.result_type(strong[0], scalar)
        assert y.dtype == expected
