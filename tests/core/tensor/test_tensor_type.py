"""TensorType: printing, the Type contract (filter, relations, conversion) and shorthands."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench.core.tensor as wt
from workbench.core.dtypes import default_float_dtype_as
from workbench.core.printing import dprint
from workbench.core.tensor import SpecifyShape, TensorConstant, TensorType, TensorVariable

# -- seed 000, with workbench names ----------------------------------------------------


def test_seed_000_type_relations_and_narrowing():
    v1 = TensorType("float64", (2, None))()
    v2 = TensorType("float64", (2, 1))()
    assert str(v1.type) == "TensorType(float64, (2, ?))"
    assert str(v2.type) == "TensorType(float64, (2, 1))"
    assert v1.type.in_same_class(v2.type) is False
    assert v1.type.is_super(v2.type) is True

    # Filtering the narrower variable through the wider type returns it unchanged.
    assert v1.type.filter_variable(v2) is v2
    assert str(v1.type.filter_variable(v2)) == "<TensorType(float64, (2, 1))>"

    # The other way round inserts a SpecifyShape node.
    v3 = v2.type.filter_variable(v1)
    assert str(v3) == "SpecifyShape.0"
    assert isinstance(v3.owner.op, SpecifyShape)
    x, *lengths = v3.owner.inputs
    assert x is v1
    assert [c.data for c in lengths] == [2, 1]
    assert all(isinstance(c, TensorConstant) and str(c.type) == "TensorType(int8, ())"
               for c in lengths)
    assert v3.type == v2.type
    assert dprint(v3, print_type=True, file="str") == (
        "SpecifyShape [id A] <TensorType(float64, (2, 1))>\n"
        " |<TensorType(float64, (2, ?))> [id B] <TensorType(float64, (2, ?))>\n"
        " |TensorConstant{2} [id C] <TensorType(int8, ())>\n"
        " |TensorConstant{1} [id D] <TensorType(int8, ())>"
    )


def test_filter_variable_refuses_other_dtypes_and_ranks():
    v = TensorType("float64", (None,))()
    with pytest.raises(TypeError, match="TensorType\\(float32, \\(\\?,\\)\\)"):
        TensorType("float32", (None,)).filter_variable(v)
    with pytest.raises(TypeError, match="cannot convert"):
        TensorType("float64", (None, None)).filter_variable(v)
    # Incompatible static lengths cannot be reconciled either.
    with pytest.raises(TypeError):
        TensorType("float64", (3,)).filter_variable(TensorType("float64", (4,))())


def test_convert_variable_merges_compatible_static_shapes():
    a = TensorType("float64", (None, 3))()
    out = TensorType("float64", (2, None)).convert_variable(a)
    assert out.type == TensorType("float64", (2, 3))
    assert TensorType("int8", (None, 3)).convert_variable(a) is None


def test_filter_variable_makes_constants_from_data():
    c = TensorType("float32", (2,)).filter_variable([1.0, 2.0])
    assert isinstance(c, TensorConstant)
    assert c.type == TensorType("float32", (2,))


# -- description ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "shape", "text"),
    [
        ("float64", (2, None), "TensorType(float64, (2, ?))"),
        ("float64", (), "TensorType(float64, ())"),
        ("float32", (None,), "TensorType(float32, (?,))"),
        ("bool", (1, 1, None), "TensorType(bool, (1, 1, ?))"),
    ],
)
def test_str(dtype, shape, text):
    assert str(TensorType(dtype, shape)) == text
    assert repr(TensorType(dtype, shape)) == text


def test_broadcastable_and_shape_forms():
    t = TensorType("int32", broadcastable=(True, False))
    assert t.shape == (1, None)
    assert t.broadcastable == (True, False)
    assert t.ndim == 2
    assert t == TensorType("int32", (1, None))
    assert hash(t) == hash(TensorType("int32", (1, None)))
    assert TensorType("int32", (np.int64(3),)).shape == (3,)
    assert TensorType("float64", (None,), name="v") == TensorType("float64", (None,))
    assert str(TensorType("float64", (None,), name="v")) == "v"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({}, TypeError),
        ({"shape": (2,), "broadcastable": (True,)}, TypeError),
        ({"shape": (-1,)}, ValueError),
        ({"shape": (1.5,)}, TypeError),
        ({"shape": 3.0}, TypeError),
    ],
)
def test_bad_construction(kwargs, error):
    with pytest.raises(error):
        TensorType("float64", **kwargs)


def test_unknown_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="unknown dtype"):
        TensorType("float63", ())


def test_clone_and_numpy_dtype():
    t = TensorType("float32", (2, None))
    assert t.clone(dtype="int8") == TensorType("int8", (2, None))
    assert t.clone(shape=(None,)) == TensorType("float32", (None,))
    assert t.numpy_dtype == np.dtype("float32")
    assert TensorType("bfloat16", ()).numpy_dtype == np.dtype(ml_dtypes.bfloat16)


def test_make_variable_gives_tensor_variables():
    t = TensorType("float64", (None,))
    v = t("v")
    assert isinstance(v, TensorVariable) and v.name == "v" and v.type is t
    assert isinstance(t.make_variable(), TensorVariable)


# -- filter -----------------------------------------------------------------------------


def test_strict_filter_needs_exact_arrays():
    t = TensorType("float64", (None, 3))
    good = np.zeros((2, 3))
    assert t.filter(good, strict=True) is good
    with pytest.raises(TypeError, match=r"expected a numpy.ndarray for TensorType\(float64"):
        t.filter([[0.0, 0.0, 0.0]], strict=True)
    with pytest.raises(TypeError, match="expected an array of dtype float64 .* got dtype float32"):
        t.filter(np.zeros((2, 3), dtype="float32"), strict=True)


def test_rank_error_message_names_type_and_value():
    t = TensorType("float64", (None, 3))
    with pytest.raises(ValueError) as info:
        t.filter(np.zeros(5))
    assert str(info.value) == (
        "expected an array of rank 2 for TensorType(float64, (?, 3)), got rank 1 with shape (5,)"
    )


def test_static_shape_error_message():
    t = TensorType("float64", (None, 3))
    with pytest.raises(ValueError) as info:
        t.filter(np.zeros((2, 4)))
    assert str(info.value) == (
        "expected an array of shape (?, 3) for TensorType(float64, (?, 3)), got shape (2, 4)"
    )


def test_non_strict_conversions():
    f64 = TensorType("float64", (None,))
    out = f64.filter([1, 2, 3])
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0, 3.0]
    # safe upcast of arrays
    assert f64.filter(np.arange(3, dtype="int32")).dtype == np.float64
    # same dtype: no copy
    a = np.arange(3.0)
    assert f64.filter(a) is a


def test_unsafe_array_casts_need_allow_downcast():
    f32 = TensorType("float32", (None,))
    data = np.arange(3, dtype="float64")
    with pytest.raises(TypeError, match="float64 without risking loss of precision"):
        f32.filter(data)
    assert f32.filter(data, allow_downcast=True).dtype == np.float32
    with pytest.raises(TypeError):  # int64 -> float32 is not a safe cast
        f32.filter(np.arange(3))


def test_python_data_is_accepted_when_values_survive():
    i8 = TensorType("int8", (None,))
    assert i8.filter([1, 2, -3]).dtype == np.int8
    with pytest.raises(TypeError, match="without loss of precision"):
        i8.filter([1, 300])
    with pytest.raises(TypeError):  # floats never silently become integers
        i8.filter([1.0, 2.0])
    assert i8.filter([1.7], allow_downcast=True).tolist() == [1]


def test_python_floats_into_narrow_floats():
    f32 = TensorType("float32", ())
    # allow_downcast=None: Python floats may be rounded (the Theano convention)
    assert f32.filter(0.1) == np.float32(0.1)
    assert f32.filter(0.1).dtype == np.float32
    with pytest.raises(TypeError):
        f32.filter(0.1, allow_downcast=False)
    # exactly representable values are always fine
    assert f32.filter(0.5, allow_downcast=False) == 0.5
    # the rounding convention is for single Python floats, not lists
    vector = TensorType("float32", (None,))
    assert vector.filter([0.5, 1.0]).dtype == np.float32
    with pytest.raises(TypeError, match="without loss of precision"):
        vector.filter([0.1, 0.2])


@pytest.mark.parametrize("bad", ["abc", [[1, 2], [3]], np.array([object()]), {"a": 1}])
def test_non_numeric_data_is_a_type_error(bad):
    with pytest.raises(TypeError):
        TensorType("float64", (None,)).filter(bad)


def test_symbolic_variables_are_not_data():
    with pytest.raises(TypeError, match="symbolic variable"):
        TensorType("float64", (None,)).filter(wt.dvector("v"))


def test_bfloat16_filter():
    t = TensorType("bfloat16", (None,))
    data = np.array([1.5, 2.0], dtype=ml_dtypes.bfloat16)
    assert t.filter(data, strict=True) is data
    out = t.filter([1.5, 2.25])
    assert out.dtype == np.dtype(ml_dtypes.bfloat16)
    assert out.astype(np.float32).tolist() == [1.5, 2.25]
    assert t.filter(np.array([3], dtype="int8")).dtype == out.dtype  # safe per the table
    with pytest.raises(TypeError, match="bfloat16"):
        t.filter(np.array([1.0], dtype="float32"))
    assert t.filter(np.array([1.0], dtype="float32"), allow_downcast=True).dtype == out.dtype
    with pytest.raises(TypeError):
        t.filter(np.zeros(2, dtype="float32"), strict=True)


def test_complex_to_real_needs_allow_downcast():
    t = TensorType("float64", ())
    with pytest.raises(TypeError):
        t.filter(np.complex128(1 + 2j))
    assert t.filter(np.complex128(1 + 2j), allow_downcast=True) == 1.0


def test_is_valid_value_and_validity_message():
    t = TensorType("float64", (2,))
    assert t.is_valid_value(np.zeros(2))
    assert not t.is_valid_value(np.zeros(3))
    assert not t.is_valid_value([0.0, 0.0])  # strict by default
    assert "shape (2,)" in t.value_validity_msg(np.zeros(3))
    assert t.value_validity_msg(np.zeros(2)) == "value is valid"


def test_filter_inplace_reuses_storage():
    t = TensorType("float64", (None,))
    storage = np.zeros(3)
    out = t.filter_inplace([1, 2, 3], storage)
    assert out is storage and storage.tolist() == [1.0, 2.0, 3.0]
    other = t.filter_inplace([1, 2], storage)  # shape differs: a new array
    assert other is not storage and other.tolist() == [1.0, 2.0]


# -- comparing values --------------------------------------------------------------------


def test_values_eq():
    t = TensorType("float64", (None,))
    assert t.values_eq(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert not t.values_eq(np.array([1.0]), np.array([1.0 + 1e-12]))
    assert not t.values_eq(np.zeros(2), np.zeros(3))


def test_values_eq_approx_handles_nan_inf_and_tolerances():
    f64 = TensorType("float64", (None,))
    a = np.array([1.0, np.nan, np.inf, -np.inf])
    assert f64.values_eq_approx(a, a + np.array([1e-9, 0, 0, 0]))
    assert not f64.values_eq_approx(a, np.array([1.0, 0.0, np.inf, -np.inf]))
    assert not f64.values_eq_approx(a, np.array([1.0, np.nan, -np.inf, -np.inf]))
    assert not f64.values_eq_approx(np.array([1.0]), np.array([1.001]))
    f16 = TensorType("float16", (None,))
    assert f16.values_eq_approx(np.array([1.0], "float16"), np.array([1.003], "float16"))
    bf = TensorType("bfloat16", (None,))
    one = np.array([1.0], ml_dtypes.bfloat16)
    assert bf.values_eq_approx(one, np.array([1.0078125], ml_dtypes.bfloat16))
    i = TensorType("int32", (None,))
    assert not i.values_eq_approx(np.array([1]), np.array([2]))
    assert f64.values_eq_approx(np.array([1.0]), np.array([1.5]), atol=1.0)


def test_may_share_memory_and_sizes():
    t = TensorType("float32", (None, None))
    a = np.zeros((3, 4), dtype="float32")
    assert t.may_share_memory(a, a[1:])
    assert not t.may_share_memory(a, a.copy())
    assert not t.may_share_memory(a, 3)
    assert t.get_shape_info(a) == (3, 4)
    assert t.get_size(t.get_shape_info(a)) == 48
    assert TensorType("bfloat16", ()).get_size(()) == 2


# -- relations -----------------------------------------------------------------------------

static_shapes = st.lists(st.one_of(st.none(), st.integers(1, 3)), max_size=3).map(tuple)


@settings(max_examples=60, deadline=None)
@given(static_shapes, static_shapes)
def test_is_super_matches_its_definition(s1, s2):
    t1, t2 = TensorType("float64", s1), TensorType("float64", s2)
    expected = len(s1) == len(s2) and all(a is None or a == b for a, b in zip(s1, s2))
    assert t1.is_super(t2) == expected
    assert t1.is_super(t1)
    if t1.is_super(t2) and t2.is_super(t1):
        assert t1 == t2
    assert t1.in_same_class(t2) == (t1.broadcastable == t2.broadcastable)
    assert not t1.is_super(TensorType("float32", s2))


# -- shorthands --------------------------------------------------------------------------


def test_irow_prints_like_the_seed():
    assert str(wt.irow()) == "<TensorType(int32, (1, ?))>"
    named = wt.irow("r")
    assert named.name == "r" and str(named) == "r"


def test_shorthand_types_cover_all_dtypes_and_shapes():
    letters = {"b": "int8", "w": "int16", "i": "int32", "l": "int64",
               "f": "float32", "d": "float64", "c": "complex64", "z": "complex128"}
    shapes = {"scalar": (), "vector": (None,), "row": (1, None), "col": (None, 1),
              "matrix": (None, None), "tensor3": (None,) * 3, "tensor4": (None,) * 4}
    for letter, dtype in letters.items():
        for suffix, shape in shapes.items():
            t = getattr(wt, letter + suffix)
            assert t == TensorType(dtype, shape), letter + suffix


def test_default_dtype_constructors():
    assert wt.matrix("m").type == TensorType("float64", (None, None))
    assert wt.matrix("m").name == "m"
    assert wt.row().type.shape == (1, None)
    assert wt.col(dtype="int8").type == TensorType("int8", (None, 1))
    assert wt.vector(shape=(3,)).type.shape == (3,)
    assert wt.scalar().type.shape == ()
    assert wt.tensor3().type.ndim == 3 and wt.tensor4().type.ndim == 4
    with default_float_dtype_as("float32"):
        assert wt.vector().type.dtype == "float32"
    with pytest.raises(ValueError, match="length 1 in dimension 0"):
        wt.row(shape=(2, 3))
    with pytest.raises(ValueError, match="length 2"):
        wt.matrix(shape=(3,))


def test_tensor_constructor():
    x = wt.tensor("int16", shape=(None, 3), name="x")
    assert x.type == TensorType("int16", (None, 3)) and x.name == "x"
    assert wt.tensor(shape=(2,)).type.dtype == "float64"
    with pytest.raises(TypeError, match="needs a shape"):
        wt.tensor("float32")
    with pytest.raises(TypeError, match="name='x'"):
        wt.tensor("x", shape=())


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool"])
@pytest.mark.parametrize("allow_downcast", [None, True, False])
def test_numbers_for_scalar_inputs_filter_like_the_general_conversion(dtype, allow_downcast):
    """0-d inputs take Python floats and numpy scalars by a shortcut (a function called
    as f(1.5) does not pay the general conversion): it must agree with that path."""
    from workbench.core.scalar.basic import convert_data

    t = TensorType(dtype, ())
    for value in (1.5, 0.1, -0.0, float("nan"), np.float64(2.5), np.float32(0.1), np.int64(3),
                  np.int8(-4), np.bool_(True)):
        try:
            want = convert_data(value, t.dtype, allow_downcast, str(t))
        except TypeError:
            with pytest.raises(TypeError):
                t.filter(value, allow_downcast=allow_downcast)
            continue
        got = t.filter(value, allow_downcast=allow_downcast)
        assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == ()
        np.testing.assert_array_equal(got, want)


# -- byte order: compiled kernels read raw bytes, so inputs arrive in native order ---------
@pytest.mark.parametrize("strict", [False, True])
def test_filter_turns_byte_swapped_arrays_into_native_ones(strict):
    swapped = np.array([1.0, 2.0, 3.0], dtype=np.dtype("f8").newbyteorder("S"))
    data = wt.dvector().type.filter(swapped, strict=strict)
    assert data.dtype.isnative and data.dtype == np.float64
    np.testing.assert_array_equal(data, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("linker", ["py", "c", "gpu", "debug"])
def test_byte_swapped_inputs_give_numpys_values_on_every_linker(linker):
    import workbench as wb

    x, i = wt.dvector("x"), wt.lvector("i")
    f = wb.function([x, i], [x * 2 + 1, i.sum()], linker=linker)
    floats = np.array([1.0, 2.0, 3.0], dtype=np.dtype("f8").newbyteorder("S"))
    ints = np.array([1, 2, 3], dtype=np.dtype("i8").newbyteorder("S"))
    doubled, total = f(floats, ints)
    np.testing.assert_array_equal(doubled, [3.0, 5.0, 7.0])
    assert total == 6
