"""Advanced indexing (AdvancedSubtensor) and writing into it (AdvancedIncSubtensor)."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.tensor import (
    ADVANCED,
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    TensorType,
    inc_subtensor,
    set_subtensor,
)

SETTINGS = settings(max_examples=50, deadline=None)


def draw_index(data, shape):
    """A random NumPy index for `shape` with at least one index array or mask.

    Returns (numpy key, symbolic key, givens): arrays, masks and some ints are
    symbolic inputs in the symbolic key.
    """
    ndim = len(shape)
    array_shapes = iter(data.draw(hnp.mutually_broadcastable_shapes(
        num_shapes=4, min_dims=1, max_dims=2, min_side=0, max_side=3)).input_shapes)
    key, sym, givens = [], [], {}
    axis, has_ellipsis, has_advanced = 0, False, False

    def add(value, symbolic_dtype=None):
        key.append(value)
        if symbolic_dtype is not None and data.draw(st.booleans()):
            var = TensorType(symbolic_dtype, (None,) * np.ndim(value))()
            givens[var] = value
            sym.append(var)
        else:
            sym.append(value)

    while True:
        must_go_on = has_ellipsis and axis < ndim
        if not must_go_on and key and has_advanced and not data.draw(st.booleans()):
            break
        if len(key) > 6:
            break
        kinds = ["none", "array", "array", "mask"]
        if axis < ndim:
            kinds += ["int", "slice", "mask"]
        if not has_ellipsis:
            kinds.append("ellipsis")
        kind = data.draw(st.sampled_from(kinds))
        n = shape[axis] if axis < ndim else 0
        if kind == "none":
            add(None)
        elif kind == "ellipsis":
            has_ellipsis = True
            key.append(Ellipsis)
            sym.append(Ellipsis)
            axis += data.draw(st.integers(0, ndim - axis))
        elif kind == "int":
            if n == 0:
                continue
            add(np.int64(data.draw(st.integers(-n, n - 1))), "int64")
            axis += 1
        elif kind == "slice":
            bounds = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = data.draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool)))
            key.append(slice(data.draw(bounds), data.draw(bounds), step))
            sym.append(key[-1])
            axis += 1
        elif kind == "array":
            if axis >= ndim:
                continue
            index_shape = next(array_shapes, None)
            if index_shape is None or (n == 0 and 0 not in index_shape):
                continue
            dtype = data.draw(st.sampled_from(["int64", "int32", "int8"]))
            if n == 0:
                values = np.zeros(index_shape, dtype)
            else:
                values = data.draw(hnp.arrays(dtype, index_shape,
                                              elements=st.integers(-n, n - 1)))
            add(values, dtype)
            axis += 1
            has_advanced = True
        else:  # mask: 0-d (indexing no axis) or of the next axes' lengths, or 0
            width = data.draw(st.integers(0, min(2, ndim - axis)))
            lengths = [data.draw(st.sampled_from([n_, 0])) for n_ in shape[axis:axis + width]]
            mask = data.draw(hnp.arrays(bool, lengths))
            add(mask, "bool")
            axis += width
            has_advanced = True
    assume(has_advanced and axis <= ndim)
    return tuple(key), tuple(sym), givens


def numpy_result(fn):
    try:
        return fn(), None
    except IndexError as exc:
        return None, exc


@SETTINGS
@given(st.data(), hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
       st.sampled_from(["float64", "float32", "int16", "bool"]), st.booleans())
def test_advanced_indices_match_numpy(evaluate, inferred_shape, data, shape, dtype, static):
    key, sym_key, givens = draw_index(data, shape)
    check_reading(evaluate, inferred_shape, shape, dtype, static, key, sym_key, givens)


def check_reading(evaluate, inferred_shape, shape, dtype, static, key, sym_key, givens):
    """``x[sym_key]`` gives NumPy's ``value[key]`` (or its IndexError), static and inferred
    shapes included."""
    value = (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)
    x = TensorType(dtype, shape if static else (None,) * len(shape))("x")
    expected, error = numpy_result(lambda: value[key])
    if error is not None:  # NumPy refuses: so do we, when building or when running
        with pytest.raises(IndexError):
            evaluate(x[sym_key], {x: value, **givens})
        return
    y = x[sym_key]
    assert isinstance(y.owner.op, AdvancedSubtensor)
    out = evaluate(y, {x: value, **givens})
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)
    assert all(s is None or s == n for s, n in zip(y.type.shape, expected.shape))
    if static and not givens:  # everything constant: the static shape is complete
        assert y.type.shape == expected.shape
    assert inferred_shape(y, {x: value, **givens}) == expected.shape
    if out.size:
        assert not np.shares_memory(out, value)


# Indices selecting nothing. NumPy reads no index of an empty broadcast of the index
# arrays, so it checks none against its axis's bounds (integers are always checked);
# and a mask's length-0 dimension may index an axis of any length.
EMPTY_SELECTIONS = [
    # found by the property test: [0] indexes axis 3, of length 0, broadcast with []
    ((0, 0, 1, 0), (slice(None), None, np.array([], int), None, ..., None, np.array([0]))),
    ((3, 0), (np.array([], int), np.array([5]))),
    ((2, 3), (np.array([False, False]), np.array([5]))),
    ((2, 3), (np.zeros((0, 1), int), np.array([-7]))),
    ((3, 4, 5), (np.array([], int), slice(None), np.array([9]))),
    ((3, 4), (np.array(False), np.array([9]))),
    ((3, 4), (np.array([], int), 7)),  # an integer: out of bounds
    ((0, 1), (..., np.array([], bool), None)),  # found on the gpu linker (torch refused)
    ((2, 3), (np.zeros((2, 0), bool),)),
    ((2, 3, 4), (np.zeros((0, 0), bool), np.array([1]))),
    # errors NumPy still raises: a mask's other lengths must match, indices are checked
    # for an empty x or result (gpu: torch checked none of them)
    ((3, 0, 1, 0), (np.zeros((4, 0), bool),)),
    ((2, 0, 3), (np.array([[-1], [-3]], np.int32), ...)),
    ((2, 2, 1, 2), (..., np.array([-3, 2], np.int32), None, slice(None, -2))),
]


# A 0-d mask indexes no axis: it adds a dimension of length 1 (True) or 0 (False).
ZERO_D_MASKS = [
    ((), (np.True_,)),  # after the last axis
    ((2, 2), (slice(None, 4), np.False_, slice(3, -3, -2))),  # gpu: the slice was misplaced
    ((1, 1, 3), (np.True_, slice(-3, None, -1))),
]


@pytest.mark.parametrize(("shape", "key"), EMPTY_SELECTIONS + ZERO_D_MASKS)
@pytest.mark.parametrize("static", [True, False])
def test_corner_indices_match_numpy(evaluate, inferred_shape, shape, key, static):
    check_reading(evaluate, inferred_shape, shape, "float64", static, key, key, {})


@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
@pytest.mark.parametrize(("shape", "key"), EMPTY_SELECTIONS + ZERO_D_MASKS)
@pytest.mark.parametrize("static", [True, False])
def test_corner_indices_on_every_linker(linker, shape, key, static):
    if linker == "gpu":
        pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")
    value = np.arange(np.prod(shape), dtype="float64").reshape(shape)
    expected, error = numpy_result(lambda: value[key])
    x = TensorType("float64", shape if static else (None,) * len(shape))("x")

    def compile_(outputs, inputs):
        with warnings.catch_warnings():  # the gpu linker, on torch's CPU device here
            warnings.simplefilter("ignore", RuntimeWarning)
            return function(inputs, outputs, linker=linker)

    if error is not None:  # when building, or when running
        with pytest.raises(IndexError, match=re.escape(str(error))):
            compile_(x[key], [x])(value)
        return
    y = TensorType("float64", (None,) * expected.ndim)("y")
    y_value = np.arange(expected.size, dtype="float64").reshape(expected.shape) + 10
    f = compile_([x[key], set_subtensor(x[key], y), inc_subtensor(x[key], y)], [x, y])
    read, set_, inc = f(value, y_value)
    expected_set, expected_inc = value.copy(), value.copy()
    expected_set[key] = y_value
    np.add.at(expected_inc, key, y_value)
    np.testing.assert_array_equal(read, expected)
    assert read.shape == expected.shape
    np.testing.assert_array_equal(set_, expected_set)
    np.testing.assert_array_equal(inc, expected_inc)


@SETTINGS
@given(st.data(), hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
       st.sampled_from(["float64", "float32", "int32"]), st.booleans())
def test_advanced_set_and_inc_match_numpy(evaluate, inferred_shape, data, shape, dtype, set_):
    key, sym_key, givens = draw_index(data, shape)
    value = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    target, error = numpy_result(lambda: value[key])
    assume(error is None)
    y_value = data.draw(hnp.arrays(dtype, target.shape, elements=st.integers(-5, 5)))
    expected = value.copy()
    if set_:
        expected[key] = y_value
    else:
        np.add.at(expected, key, y_value)
    x = TensorType(dtype, (None,) * len(shape))("x")
    y = TensorType(dtype, (None,) * y_value.ndim)("y")
    out = (set_subtensor if set_ else inc_subtensor)(x[sym_key], y)
    assert isinstance(out.owner.op, AdvancedIncSubtensor) and out.type == x.type
    result = evaluate(out, {x: value, y: y_value, **givens})
    np.testing.assert_array_equal(result, expected)
    assert inferred_shape(out, {x: value, y: y_value, **givens}) == shape
    np.testing.assert_array_equal(value, np.arange(value.size).astype(dtype).reshape(shape))


def test_repeated_indices_accumulate_when_incrementing(evaluate):
    x, y, i = wt.dvector("x"), wt.dvector("y"), wt.lvector("i")
    given_ = {x: np.zeros(4), y: np.array([1.0, 2.0, 3.0, 4.0]), i: np.array([0, 2, 0, -4])}
    assert evaluate(inc_subtensor(x[i], y), given_).tolist() == [8, 0, 2, 0]
    assert evaluate(set_subtensor(x[i], y), given_).tolist() == [4, 0, 2, 0]  # last write wins
    assert evaluate(inc_subtensor(x[[1, 1, 1]], 1.0), {x: np.zeros(3)}).tolist() == [0, 3, 0]


def test_numpy_layout_rules():
    x = TensorType("float64", (2, 3, 4))("x")
    i = TensorType("int64", (5,))("i")
    assert x[i, :, i].type.shape == (5, 3)  # separated by a slice: broadcast dims go first
    assert x[:, i, i].type.shape == (2, 5)  # adjacent: they stay in place
    assert x[0, :, i].type.shape == (5, 3)  # ints count as advanced indices
    assert x[:, i, ..., i].type.shape == (5, 2)  # an Ellipsis separates, even when empty
    assert x[None, :, i].type.shape == (1, 2, 5, 4)
    assert x[i[:, None], 1:, [0, 1, 2]].type.shape == (5, 3, 2)
    m = TensorType("bool", (3, 4))("m")
    assert x[:, m].type.shape == (2, None)  # the count of True values is not static
    assert x[:, np.eye(3, 4, dtype=bool)].type.shape == (2, 3)  # unless the mask is constant
    assert x[True].type.shape == (1, 2, 3, 4)
    assert x[..., [0, 1], :].type.shape == (2, 2, 4)  # the slice keeps the Ellipsis short
    assert x[[0], ...].owner.op == x[[0]].owner.op


def test_printing_and_structure():
    x, i, n = wt.dmatrix("x"), wt.lvector("i"), wt.lscalar("n")
    y = x[n:, i]
    op = y.owner.op
    assert str(op) == "AdvancedSubtensor{start:, array}"
    assert op.idx_list[1] is ADVANCED and y.owner.inputs == [x, n, i]
    assert str(x[None, ..., [0]].owner.op) == "AdvancedSubtensor{None, ..., array}"
    assert x[[0]].owner.op == x[[1, 2], :].owner.op  # trailing full slices are dropped
    assert op.connection_pattern(y.owner) == [[True], [False], [False]]
    assert op.view_map == {}
    out = inc_subtensor(y, 1.0)
    assert str(out.owner.op) == "AdvancedIncSubtensor{start:, array}"
    assert str(set_subtensor(x[i], 1.0).owner.op) == "AdvancedSetSubtensor{array}"
    inplace = AdvancedIncSubtensor(op.idx_list, inplace=True)
    assert inplace.destroy_map == {0: [0]} and str(inplace).endswith(";inplace}")


def test_mask_infer_shape_counts_true_values(inferred_shape):
    x = wt.dmatrix("x")
    y = x[x > 0]
    value = np.array([[1.0, -1.0], [2.0, 3.0]])
    assert inferred_shape(y, {x: value}) == (3,)


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda x: x[[0, 5]], IndexError, "index 5 is out of bounds for axis 0 with size 3"),
        (lambda x: x[:, [-5]], IndexError, "index -5 is out of bounds for axis 1 with size 4"),
        (lambda x: x[[0, 1], [0, 1, 2]], IndexError,
         r"shape mismatch: indexing arrays could not be broadcast together with shapes "
         r"\(2,\) \(3,\)"),
        (lambda x: x[np.ones(4, bool)], IndexError,
         "boolean index did not match indexed array along axis 0; size of axis is 3 but size "
         "of corresponding boolean axis is 4"),
        (lambda x: x[[0.5]], IndexError, "only integers, slices"),
        (lambda x: x[wt.dvector("v")], IndexError, "only integers, slices"),
        (lambda x: x[[0], [0], [0]], IndexError, "too many indices"),
        (lambda x: x[np.ones((3, 4, 1), bool)], IndexError, "too many indices"),
    ],
)
def test_bad_advanced_indices(build, error, message):
    x = TensorType("float64", (3, 4))("x")
    with pytest.raises(error, match=message):
        build(x)


def test_bad_values():
    x = TensorType("float32", (3, 4))("x")
    with pytest.raises(ValueError, match=r"shape mismatch: value array of shape \(3,\) could "
                                         r"not be broadcast to indexing result of shape \(2, 4\)"):
        set_subtensor(x[[0, 1]], TensorType("float32", (3,))("y"))
    with pytest.raises(TypeError, match="dtype float64 into x"):
        inc_subtensor(x[[0, 1]], wt.dvector("y"))
    with pytest.raises(TypeError, match="must be an integer scalar"):
        AdvancedSubtensor((wt.SYMBOLIC, ADVANCED))(x, wt.dscalar(), wt.lvector())
    with pytest.raises(TypeError, match="takes 1 index inputs"):
        AdvancedSubtensor((ADVANCED,))(x)


def test_symbolic_errors_at_run_time(evaluate):
    x, i = wt.dvector("x"), wt.lvector("i")
    with pytest.raises(IndexError, match="out of bounds"):
        evaluate(x[i], {x: np.zeros(3), i: np.array([3])})
    m = wt.bvector("m").astype("bool")
    with pytest.raises(IndexError, match="boolean index did not match"):
        evaluate(x[m], {x: np.zeros(3), m.owner.inputs[0]: np.ones(2, "int8")})


def test_through_the_vm():
    x, i = wt.fmatrix("x"), wt.ivector("i")
    f = function([x, i], [x[i], x[x > 2], inc_subtensor(x[i, 0], 1.0)])
    value = np.arange(6, dtype="float32").reshape(3, 2)
    a, b, c = f(value, np.array([2, 2, 0], "int32"))
    np.testing.assert_array_equal(a, value[[2, 2, 0]])
    np.testing.assert_array_equal(b, value[value > 2])
    expected = value.copy()
    np.add.at(expected, ([2, 2, 0], 0), 1.0)
    np.testing.assert_array_equal(c, expected)
    assert a.dtype == b.dtype == c.dtype == np.float32
