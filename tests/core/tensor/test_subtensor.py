"""Basic indexing (Subtensor), writing into it (IncSubtensor) and the catalogue cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.tensor import (
    SYMBOLIC,
    DimShuffle,
    IncSubtensor,
    Shape_i,
    SliceEntry,
    Subtensor,
    TensorType,
    inc_subtensor,
    set_subtensor,
    slice_length,
)
from workbench.testing import cases_subtensor

SETTINGS = settings(max_examples=40, deadline=None)


def check(var, givens, expected, evaluate, inferred_shape):
    """`var` computes `expected` (value and dtype), fits its static shape and infer_shape."""
    value = evaluate(var, givens)
    assert isinstance(value, np.ndarray)
    assert value.dtype == expected.dtype
    np.testing.assert_array_equal(value, expected)
    assert all(s is None or s == n for s, n in zip(var.type.shape, expected.shape))
    if var.owner is not None:
        assert inferred_shape(var, givens) == expected.shape
    return value


# -- reading -----------------------------------------------------------------------------


@SETTINGS
@given(st.data(), hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5),
       st.sampled_from(["float64", "float32", "int16"]), st.booleans())
def test_basic_indices_match_numpy(evaluate, inferred_shape, data, shape, dtype, static):
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    x = TensorType(dtype, shape if static else (None,) * len(shape))("x")
    value = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    expected = np.asarray(value[index])
    y = x[index]
    out = check(y, {x: value}, expected, evaluate, inferred_shape)
    if static:  # constant slices over known lengths: the static shape is complete
        assert y.type.shape == expected.shape
    if out.size:
        assert np.shares_memory(out, value)  # basic indexing returns a view


@SETTINGS
@given(st.integers(0, 6),
       st.one_of(st.none(), st.integers(-8, 8)), st.one_of(st.none(), st.integers(-8, 8)),
       st.one_of(st.none(), st.integers(-3, 3).filter(bool)),
       st.sampled_from(["int64", "int32", "int8"]))
def test_symbolic_slice_bounds(evaluate, inferred_shape, n, start, stop, step, dtype):
    x = wt.dvector("x")
    value = np.arange(float(n))
    parts = [None if p is None else TensorType(dtype, ())(f"p{k}")
             for k, p in enumerate((start, stop, step))]
    givens = {x: value}
    givens.update({v: np.array(p, dtype=dtype) for v, p in zip(parts, (start, stop, step))
                   if v is not None})
    y = x[parts[0]:parts[1]:parts[2]]
    check(y, givens, value[start:stop:step], evaluate, inferred_shape)
    # The length formula itself, for an int length and for a symbolic one.
    assert slice_length(n, start, stop, step) == len(range(n)[start:stop:step])


def test_subtensor_prints_and_compares_by_structure():
    x, i = wt.dmatrix("x"), wt.lscalar("i")
    assert str(x[1:3, ::-1].owner.op) == "Subtensor{1:3, ::-1}"
    assert str(x[i, :].owner.op) == "Subtensor{i}"  # trailing full slices are dropped
    assert str(x[:, i].owner.op) == "Subtensor{:, i}"
    assert str(x[i:, :i:i].owner.op) == "Subtensor{start:, :stop:step}"
    assert x[1].owner.op == wt.fmatrix()[1, :].owner.op  # equal Ops for equal structure
    assert hash(x[1:3].owner.op) == hash(Subtensor((slice(1, 3),)))
    op = x[i:2].owner.op
    assert op.idx_list == (SliceEntry(SYMBOLIC, 2, None),)
    assert x[::1].owner.op == x[:].owner.op  # a step of 1 is no step
    node = x[i, 1:].owner
    assert node.inputs[1] is i and node.op.view_map == {0: [0]}
    assert node.op.connection_pattern(node) == [[True], [False]]


def test_static_shapes():
    x = TensorType("float64", (5, None, 3))("x")
    assert x[1:3].type.shape == (2, None, 3)
    assert x[::-2, :0, 1].type.shape == (3, 0)
    assert x[:, 2:2].type.shape == (5, 0, 3)  # empty whatever the length
    assert x[:, 1:].type.shape == (5, None, 3)
    assert x[None, ..., None].type.shape == (1, 5, None, 3, 1)
    assert x[wt.lscalar("i"):].type.shape == (None, None, 3)
    assert TensorType("float64", (0, None))("z")[wt.lscalar("i")::wt.lscalar("s")].type.shape \
        == (0, None)


def test_integer_scalar_variables_index(evaluate):
    x = wt.dmatrix("x")
    value = np.arange(12.0).reshape(3, 4)
    for dtype in ["int8", "uint16", "int32", "int64"]:
        i = TensorType(dtype, ())("i")
        np.testing.assert_array_equal(evaluate(x[i], {x: value, i: 2}), value[2])
    # 0-d integer constants and numpy integers are folded into the structure.
    assert str(x[wt.constant(2)].owner.op) == "Subtensor{2}"
    assert str(x[np.int32(-1), np.array(1)].owner.op) == "Subtensor{-1, 1}"


def test_zero_d_and_zero_size(evaluate, inferred_shape):
    s = wt.dscalar("s")
    y = s[...]
    assert isinstance(y.owner.op, Subtensor) and y.type.shape == ()
    out = check(y, {s: 2.5}, np.array(2.5), evaluate, inferred_shape)
    assert isinstance(out, np.ndarray)
    assert s[()].type.shape == ()
    x = wt.dmatrix("x")
    value = np.zeros((0, 3))
    check(x[:, 1], {x: value}, value[:, 1], evaluate, inferred_shape)
    check(x[5:, ::-1], {x: value}, value[5:, ::-1], evaluate, inferred_shape)


def test_non_contiguous_inputs(evaluate):
    x = wt.dmatrix("x")
    base = np.arange(20.0).reshape(4, 5)
    for value in (base.T, base[::-1], base[:, ::2]):
        np.testing.assert_array_equal(evaluate(x[1:, ::-1], {x: value}), value[1:, ::-1])


def test_newaxis_is_a_dimshuffle():
    x = wt.dvector("x")
    y = x[None]
    assert isinstance(y.owner.op, DimShuffle) and y.owner.inputs[0] is x
    z = x[None, 1:]
    assert isinstance(z.owner.op, DimShuffle)
    assert str(z.owner.inputs[0].owner.op) == "Subtensor{1:}"


def test_shape_entries_are_shape_i(evaluate):
    x = wt.dtensor3("x")
    n = x.shape[0]
    assert isinstance(n.owner.op, Shape_i) and n.owner.op.i == 0
    assert x.shape[-1].owner.op == Shape_i(2)
    assert n.type == TensorType("int64", ())
    i = wt.lscalar("i")
    m = x.shape[i]
    assert isinstance(m.owner.op, Subtensor) and m.type == TensorType("int64", ())
    value = np.zeros((2, 3, 4))
    assert evaluate(m, {x: value, i: 1}) == 3
    assert str(x.shape[1:].owner.op) == "Subtensor{1:}"


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        (1.0, IndexError, "only integers, slices"),
        ("a", IndexError, "only integers, slices"),
        ((0, 0, 0), IndexError,
         "too many indices for array: array is 2-dimensional, but 3 were indexed"),
        (5, IndexError, "index 5 is out of bounds for axis 0 with size 3"),
        ((0, -5), IndexError, "index -5 is out of bounds for axis 1 with size 4"),
        ((Ellipsis, Ellipsis), IndexError, "an index can only have a single ellipsis"),
        (slice(None, None, 0), ValueError, "slice step cannot be zero"),
        (slice(1.0, 2), TypeError, "slice indices must be integers or None"),
        ([[0, 1], [2]], IndexError, "only integers"),
    ],
)
def test_bad_indices(key, error, message):
    x = TensorType("float64", (3, 4))("x")
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        x[key]


def test_bad_symbolic_indices():
    x = wt.dmatrix("x")
    with pytest.raises(IndexError, match="only integers"):
        x[wt.dscalar("f")]
    with pytest.raises(IndexError, match="only integers"):
        x[wt.fvector("v")]
    with pytest.raises(TypeError, match="slice indices must be integers"):
        x[wt.dscalar("f"):]
    with pytest.raises(TypeError, match="slice indices must be integers"):
        x[wt.lvector("v"):]
    with pytest.raises(IndexError, match="0-dimensional, but 1 were indexed"):
        wt.dscalar("s")[0]
    with pytest.raises(TypeError, match="takes 1 index inputs"):
        Subtensor((SYMBOLIC,))(x)
    with pytest.raises(TypeError, match="must be an integer scalar"):
        Subtensor((SYMBOLIC,))(x, wt.dscalar())


def test_symbolic_out_of_bounds_fails_at_run_time(evaluate):
    x, i = wt.dvector("x"), wt.lscalar("i")
    with pytest.raises(IndexError, match="out of bounds"):
        evaluate(x[i], {x: np.zeros(3), i: 3})


def test_through_the_vm():
    x, i = wt.fmatrix("x"), wt.iscalar("i")
    f = function([x, i], [x[i, ::-1], x[:i], x[None, -1]])
    value = np.arange(12, dtype="float32").reshape(3, 4)
    a, b, c = f(value, 1)
    np.testing.assert_array_equal(a, value[1, ::-1])
    np.testing.assert_array_equal(b, value[:1])
    np.testing.assert_array_equal(c, value[None, -1])
    assert a.dtype == np.float32


# -- writing ----------------------------------------------------------------------------


def reference_write(value, index, y, set_):
    out = value.copy()
    if set_:
        out[index] = y
    else:
        out[index] += y
    return out


@SETTINGS
@given(st.data(), hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
       st.sampled_from(["float64", "float32", "int32"]), st.booleans())
def test_set_and_inc_basic_indices(evaluate, inferred_shape, data, shape, dtype, set_):
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True))
    value = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    target = value[index]
    kept = data.draw(st.integers(0, np.ndim(target)))  # y: trailing dims, some of length 1
    y_shape = tuple(data.draw(st.sampled_from([1, n])) for n in np.shape(target)[np.ndim(target)
                                                                                - kept:])
    y_value = np.full(y_shape, 7, dtype=dtype)
    x = TensorType(dtype, (None,) * len(shape))("x")
    y = TensorType(dtype, (None,) * len(y_shape))("y")
    fn = set_subtensor if set_ else inc_subtensor
    out = fn(x[index], y)
    assert out.type == x.type
    expected = reference_write(value, index, y_value, set_)
    result = check(out, {x: value, y: y_value}, expected, evaluate, inferred_shape)
    assert not np.shares_memory(result, value)
    np.testing.assert_array_equal(value, np.arange(value.size, dtype=dtype).reshape(shape))


def test_incsubtensor_op():
    x, y, i = wt.dmatrix("x"), wt.dvector("y"), wt.lscalar("i")
    out = set_subtensor(x[i, 1:], y)
    op = out.owner.op
    assert isinstance(op, IncSubtensor) and str(op) == "SetSubtensor{i, 1:}"
    assert out.owner.inputs == [x, y, i]
    assert op.destroy_map == {} and op.connection_pattern(out.owner) == [[True], [True], [False]]
    assert str(inc_subtensor(x[1:3], y).owner.op) == "IncSubtensor{1:3}"
    inplace = IncSubtensor(op.idx_list, True, inplace=True)
    assert inplace.destroy_map == {0: [0]} and str(inplace) == "SetSubtensor{i, 1:;inplace}"
    assert inplace != op


def test_inplace_incsubtensor_overwrites_its_input(evaluate):
    x, y = wt.dvector("x"), wt.dscalar("y")
    out = IncSubtensor((slice(1, None),), inplace=True)(x, y)
    value = np.zeros(3)
    result = evaluate(out, {x: value, y: 1.0})
    assert result is value and value.tolist() == [0.0, 1.0, 1.0]


def test_value_dtype_is_cast_when_safe(evaluate):
    x = wt.fvector("x")
    out = set_subtensor(x[:2], wt.bvector("b"))  # int8 -> float32 is safe
    assert out.owner.inputs[1].type.dtype == "float32"
    assert set_subtensor(x[0], 0.5).owner.inputs[1].type.dtype == "float32"  # weak scalar
    with pytest.raises(TypeError, match="dtype float64 into x of dtype float32"):
        set_subtensor(x[0], wt.dscalar("d"))
    with pytest.raises(TypeError, match="cannot write 300"):
        inc_subtensor(wt.bvector("b")[0], 300)
    with pytest.raises(TypeError, match="cannot write 0.5"):
        inc_subtensor(wt.ivector("v")[0], 0.5)


def test_int_overflow_wraps_as_numpy(evaluate):
    x = wt.bvector("x")
    out = inc_subtensor(x[1:], 100)
    value = np.array([0, 100, -100], dtype="int8")
    expected = value.copy()
    expected[1:] += np.int8(100)
    np.testing.assert_array_equal(evaluate(out, {x: value}), expected)


def test_value_shape_is_checked_at_build_time():
    x = TensorType("float64", (5, 4))("x")
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\) "
                                         r"into shape \(2, 4\)"):
        set_subtensor(x[1:3], TensorType("float64", (3,))("y"))
    with pytest.raises(ValueError, match="could not broadcast"):
        inc_subtensor(x[0], wt.dmatrix("y"))  # more dimensions than x[0]
    # Setting accepts extra leading length-1 dimensions, like NumPy assignment.
    out = set_subtensor(x[0], TensorType("float64", (1, 4))("y"))
    assert out.owner.inputs[1].type.shape == (4,)


def test_set_through_newaxis(evaluate):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    out = set_subtensor(x[None, 1, ::2], y)
    value, y_value = np.zeros((3, 4)), np.ones((1, 2))
    expected = value.copy()
    expected[None, 1, ::2] = y_value
    np.testing.assert_array_equal(evaluate(out, {x: value, y: y_value}), expected)
    with pytest.raises(AssertionError):  # y's first length must be 1
        evaluate(out, {x: value, y: np.ones((2, 2))})
    whole = inc_subtensor(x[None], 1.0)  # x[None] alone is a DimShuffle of x
    np.testing.assert_array_equal(evaluate(whole, {x: value}), value + 1)


def test_refuses_non_indexing_expressions():
    x = wt.dmatrix("x")
    with pytest.raises(TypeError, match=r"must be an indexing expression x\[idx\]"):
        set_subtensor(x, 1.0)
    with pytest.raises(TypeError, match=r"computed by Elemwise\{exp\}"):
        inc_subtensor(wt.exp(x), 1.0)
    with pytest.raises(TypeError, match="indexing expression"):
        set_subtensor(np.zeros(3), 1.0)


def test_writes_through_the_vm():
    x, y, i = wt.dvector("x"), wt.dvector("y"), wt.lscalar("i")
    f = function([x, y, i], set_subtensor(x[i:], y))
    g = function([x, y, i], inc_subtensor(x[::-1][:i], y))
    value = np.arange(5.0)
    assert f(value, np.ones(2), 3).tolist() == [0, 1, 2, 1, 1]
    with pytest.raises(ValueError, match="could not broadcast"):
        f(value, np.ones(3), 3)
    assert g(value, np.ones(2), 2).tolist() == [5, 4, 2, 1, 0]  # writes into x[::-1], not x
    assert value.tolist() == [0, 1, 2, 3, 4]


# -- the catalogue -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "dtype"),
    [(c, d) for c in cases_subtensor.CASES for d in c.float_dtypes],
    ids=[f"{c.name}[{d}]" for c in cases_subtensor.CASES for d in c.float_dtypes],
)
def test_catalogue_cases(case, dtype, evaluate, inferred_shape):
    inputs, output, values = case.graph(dtype)
    expected = case.expected(dtype)
    givens = dict(zip(inputs, values))
    check(output, givens, expected, evaluate, inferred_shape)
    np.testing.assert_array_equal(function(inputs, output)(*values), expected)


# -- constant indices beyond int64: NumPy's values on every linker, never a wrapped index ---
HUGE = 2**64 + 1
HUGE_SLICES = {"start": slice(HUGE, None), "stop": slice(None, 2**63),
               "negative start": slice(-(2**64), 3), "step": slice(None, None, HUGE),
               "negative step": slice(None, None, -HUGE), "int64 min": slice(-(2**63), 3)}


@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
@pytest.mark.parametrize("which", sorted(HUGE_SLICES))
def test_huge_constant_slice_bounds_are_clamped_as_numpy_does(linker, which):
    index = HUGE_SLICES[which]
    x, y = wt.dvector("x"), wt.dvector("y")
    values = np.arange(5.0)
    f = function([x, y], [x[index], set_subtensor(x[index], y)], linker=linker)
    expected_set = values.copy()
    expected_set[index] = -1.0
    part, written = f(values, -np.ones(len(values[index])))
    np.testing.assert_array_equal(part, values[index])
    np.testing.assert_array_equal(written, expected_set)


@pytest.mark.parametrize("index", [HUGE, -HUGE, 2**63, np.uint64(2**64 - 1)])
def test_a_constant_index_beyond_int64_is_an_index_error_while_building(index):
    with pytest.raises(IndexError, match="out of bounds for any axis"):
        wt.dvector("x")[index]
    with pytest.raises(IndexError, match="out of bounds for any axis"):
        Subtensor([int(index)])  # as a graph file would rebuild it


def test_huge_slice_parts_in_an_op_are_clamped_so_static_shapes_stay_numpys():
    x = TensorType("float64", (5,))("x")
    op = Subtensor([SliceEntry(None, None, HUGE)])
    assert op.idx_list == (SliceEntry(None, None, 2**63 - 1),)
    assert op(x).type.shape == (1,)
