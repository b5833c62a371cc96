"""Shape, Shape_i and SpecifyShape."""

import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core.tensor import (
    NoneConst,
    Shape,
    Shape_i,
    SpecifyShape,
    TensorConstant,
    TensorType,
    shape_i,
    shape_tuple,
    specify_shape,
)


def test_shape_op(evaluate, inferred_shape):
    x = wt.dtensor3("x")
    s = wt.shape(x)
    assert s.type == TensorType("int64", (3,))
    assert str(s.owner.op) == "Shape" and Shape() == Shape()
    data = np.zeros((2, 0, 4))
    assert evaluate(s, {x: data}).tolist() == [2, 0, 4]
    assert inferred_shape(s, {x: data}) == (3,)


def test_shape_i(evaluate, inferred_shape):
    x = wt.dmatrix("x")
    n = shape_i(x, 1)
    assert n.type == TensorType("int64", ()) and str(n.owner.op) == "Shape_i{1}"
    assert Shape_i(1) == Shape_i(1) and Shape_i(1) != Shape_i(0)
    value = evaluate(n, {x: np.zeros((2, 5))})
    assert isinstance(value, np.ndarray) and value.dtype == np.int64 and value == 5
    assert inferred_shape(n, {x: np.zeros((2, 5))}) == ()
    with pytest.raises(ValueError, match="has no dimension 2"):
        shape_i(x, 2)
    with pytest.raises(TypeError):
        Shape_i(-1)


def test_shape_tuple_mixes_static_and_symbolic():
    x = TensorType("float64", (2, None))("x")
    first, second = shape_tuple(x)
    assert first == 2 and isinstance(second.owner.op, Shape_i)


def test_specify_shape_refines_the_static_shape(evaluate, inferred_shape):
    x = wt.dmatrix("x")
    y = specify_shape(x, (3, None))
    assert isinstance(y.owner.op, SpecifyShape)
    assert y.type == TensorType("float64", (3, None))
    assert y.owner.inputs[2] is NoneConst
    assert isinstance(y.owner.inputs[1], TensorConstant) and y.owner.inputs[1].dtype == "int8"
    data = np.zeros((3, 4))
    out = evaluate(y, {x: data})
    assert out is data  # a view of its input
    assert SpecifyShape.view_map == {0: [0]}
    assert inferred_shape(y, {x: data}) == (3, 4)


def test_specify_shape_checks_at_run_time(evaluate):
    x = wt.dmatrix("x")
    y = specify_shape(x, (3, 2))
    with pytest.raises(AssertionError) as info:
        evaluate(y, {x: np.zeros((3, 4))})
    assert str(info.value) == "SpecifyShape: expected shape (3, 2), got shape (3, 4)"


def test_specify_shape_with_symbolic_lengths(evaluate, inferred_shape):
    x, n = wt.dvector("x"), wt.lscalar("n")
    y = specify_shape(x, (n,))
    assert y.type.shape == (None,)
    assert evaluate(y, {x: np.zeros(4), n: np.array(4)}).shape == (4,)
    assert inferred_shape(y, {x: np.zeros(4), n: np.array(4)}) == (4,)
    with pytest.raises(AssertionError):
        evaluate(y, {x: np.zeros(4), n: np.array(5)})


def test_specify_shape_shortcuts_and_errors():
    x = wt.dmatrix("x")
    assert specify_shape(x, (None, None)) is x
    assert specify_shape(wt.dvector(), 3).type.shape == (3,)
    with pytest.raises(ValueError, match="rank 2"):
        specify_shape(x, (1, 2, 3))
    with pytest.raises(ValueError, match="contradicts length 3"):
        specify_shape(TensorType("float64", (2, None))(), (3, None))
    with pytest.raises(TypeError, match="integer scalar"):
        specify_shape(x, (wt.dscalar(), None))
    with pytest.raises(ValueError, match="negative"):
        specify_shape(x, (-1, None))
    with pytest.raises(TypeError, match="one entry per dimension"):
        specify_shape(x, wt.lvector())


def test_shape_ops_are_not_connected_to_values():
    x = wt.dmatrix("x")
    assert Shape().connection_pattern(wt.shape(x).owner) == [[False]]
    y = specify_shape(x, (2, 2))
    assert SpecifyShape().connection_pattern(y.owner) == [[True], [False], [False]]


@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
def test_check_and_raise_passes_its_input_or_raises_its_error(linker):
    import workbench as wb
    from workbench.core.compile.mode import available_linkers

    if linker not in available_linkers():
        pytest.skip(f"linker {linker} is not available here")
    x = wt.dvector("x")
    y = wt.check_and_raise(x, [wt.all(wt.isfinite(x)), wt.gt(wt.shape_i(x, 0), 0)],
                           "ValueError", "x: expected finite values, got NaN or inf")
    assert str(y.owner.op) == "CheckAndRaise{ValueError}" and y.type == x.type
    f = wb.function([x], y * 2.0, linker=linker)
    np.testing.assert_array_equal(f(np.array([1.0, -2.0])), [2.0, -4.0])
    with pytest.raises(ValueError, match="x: expected finite values, got NaN or inf"):
        f(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="expected finite values"):
        f(np.zeros(0))
    g = wb.function([x], wt.check_and_raise(x, [wt.lt(wt.sum(x), 3)], "IndexError", "big"),
                    linker=linker)
    with pytest.raises(IndexError, match="big"):
        g(np.array([2.0, 2.0]))


def test_check_and_raise_refuses_known_failures_and_bad_conditions():
    from workbench.core.tensor import CheckAndRaise, check_and_raise

    x = wt.dvector("x")
    assert check_and_raise(x, [True], "ValueError", "never") is x
    with pytest.raises(IndexError, match="at once"):
        check_and_raise(x, [False], "IndexError", "at once")
    with pytest.raises(ValueError, match="constant"):
        check_and_raise(x, [wt.constant(np.bool_(False))], "ValueError", "constant")
    with pytest.raises(TypeError, match="0-d boolean"):
        check_and_raise(x, [x > 0], "ValueError", "m")
    with pytest.raises(ValueError, match="error must be one of"):
        CheckAndRaise("KeyError", "m")


def test_check_and_raise_gradient_passes_through():
    import workbench as wb

    def checked(x):
        return wt.sum(wt.check_and_raise(x, [wt.all(wt.isfinite(x))], "ValueError", "m") ** 2)

    wb.verify_grad(checked, [np.array([0.5, -1.5, 2.0])], rng=np.random.default_rng(0))


@pytest.mark.parametrize(("call", "name"), [
    (lambda x: wt.flip(x, 0.5), "axis"),
    (lambda x: wt.squeeze(x, 0.5), "axis"),
    (lambda x: wt.moveaxis(x, 0.5, 1), "source"),
])
def test_a_float_axis_is_refused_by_name(call, name) -> None:
    """An axis that is neither an int nor a sequence: the argument named ("'float' object
    is not iterable" before)."""
    with pytest.raises(TypeError, match=f"{name} must be an integer or a sequence of "
                                        f"integers, got float 0.5"):
        call(wt.dmatrix("x"))
