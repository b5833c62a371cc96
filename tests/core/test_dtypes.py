"""Tests for workbench.core.dtypes; each test doubles as a usage example."""

from __future__ import annotations

import csv
import itertools
import pickle
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.core import dtypes
from workbench.core.dtypes import (
    Dtype,
    UnsupportedDtypeError,
    bfloat16,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

DATA_DIR = Path(__file__).parent.parent / "data" / "dtypes"


def _read_table(name: str) -> list[tuple[str, str, str]]:
    with open(DATA_DIR / name, newline="") as f:
        return [(row["a"], row["b"], row["result"]) for row in csv.DictReader(f)]


ARRAY_API_ROWS = _read_table("promotion_array_api.csv")
EXTRA_ROWS = _read_table("promotion_extra.csv")


@pytest.fixture(autouse=True)
def _known_dtype_settings():
    """Run every test with the stock settings, whatever the environment set."""
    saved = (dtypes.default_float_dtype(), dtypes.default_int_dtype(), dtypes.casting_mode())
    dtypes.set_default_float_dtype(float64)
    dtypes.set_default_int_dtype(int64)
    dtypes.set_casting_mode(None)
    yield
    dtypes.set_default_float_dtype(saved[0])
    dtypes.set_default_int_dtype(saved[1])
    dtypes.set_casting_mode(saved[2])


def _row_id(row: tuple[str, str, str]) -> str:
    return f"{row[0]}+{row[1]}"


# --------------------------------------------------------------------------- the tables


@pytest.mark.parametrize("row", ARRAY_API_ROWS, ids=_row_id)
def test_promotion_matches_array_api_table(row):
    a, b, result = row
    assert dtypes.promote_types(a, b) == result


@pytest.mark.parametrize("row", EXTRA_ROWS, ids=_row_id)
def test_promotion_matches_extra_table(row):
    a, b, result = row
    assert dtypes.promote_types(a, b) == result


def test_tables_cover_every_pair_exactly_once():
    pairs = [(a, b) for a, b, _ in ARRAY_API_ROWS + EXTRA_ROWS]
    assert len(pairs) == len(set(pairs)) == 225
    assert set(pairs) == set(itertools.product(dtypes.DTYPES, repeat=2))


def test_promote_types_is_symmetric_and_returns_dtypes():
    for a, b in itertools.product(dtypes.all_dtypes, repeat=2):
        result = dtypes.promote_types(a, b)
        assert isinstance(result, Dtype)
        assert result is dtypes.promote_types(b, a)


def test_promote_types_accepts_any_dtype_spelling():
    assert dtypes.promote_types("int8", np.dtype("uint8")) is int16
    assert dtypes.promote_types(np.float32, float) is float64
    assert dtypes.promote_types(ml_dtypes.bfloat16, "float16") is float32
    with pytest.raises(TypeError, match="floot32"):
        dtypes.promote_types("floot32", "int8")


def test_promotion_is_not_associative_outside_the_array_api_table():
    # Like NumPy: which of the three is folded in first matters here...
    assert dtypes.promote_types(dtypes.promote_types(int8, uint8), float16) is float32
    assert dtypes.promote_types(int8, dtypes.promote_types(uint8, float16)) is float16
    # ...so result_type() picks the least common safe target of all, in any order.
    assert dtypes.result_type(int8, uint8, float16) is float16
    assert dtypes.result_type(float16, uint8, int8) is float16


# Groups on which the Array API table alone is closed (so its lattice applies).
_ARRAY_API_GROUPS = (
    (int8, int16, int32, int64, uint8, uint16, uint32),
    (uint8, uint16, uint32, uint64),
    (float32, float64, complex64, complex128),
)
_any_dtype = st.sampled_from(dtypes.all_dtypes)


@given(st.sampled_from(_ARRAY_API_GROUPS).flatmap(lambda g: st.tuples(*[st.sampled_from(g)] * 3)))
def test_promotion_is_associative_within_the_array_api_lattice(triple):
    a, b, c = triple
    left = dtypes.promote_types(dtypes.promote_types(a, b), c)
    assert left is dtypes.promote_types(a, dtypes.promote_types(b, c))
    assert left is dtypes.result_type(a, b, c)


@given(st.lists(_any_dtype, min_size=1, max_size=5), st.randoms())
def test_result_type_of_strong_dtypes(ds, rnd):
    result = dtypes.result_type(*ds)
    if len(ds) == 2:
        assert result is dtypes.promote_types(*ds)
    shuffled = list(ds)
    rnd.shuffle(shuffled)
    assert dtypes.result_type(*shuffled) is result
    assert all(dtypes.can_cast(d, result) for d in ds)


@given(_any_dtype, _any_dtype)
def test_operands_cast_safely_to_their_promotion(a, b):
    result = dtypes.promote_types(a, b)
    assert dtypes.can_cast(a, result)
    assert dtypes.can_cast(b, result)
    assert dtypes.can_cast(a, b) == (result is b)


# --------------------------------------------------------------------------- Dtype


def test_dtype_is_an_interned_str():
    assert dtypes.float32 == "float32"
    assert isinstance(dtypes.float32, str)
    assert Dtype("float32") is float32
    assert Dtype(np.dtype("int16")) is int16
    assert pickle.loads(pickle.dumps(float32)) is float32


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("bool", bool_),
        ("bool_", bool_),
        ("float", float64),
        ("int", int64),
        ("complex", complex128),
        (bool, bool_),
        (int, int64),
        (float, float64),
        (complex, complex128),
        (np.float32, float32),
        (np.bool_, bool_),
        (np.dtype("uint64"), uint64),
        (np.dtype(">f8"), float64),
        (ml_dtypes.bfloat16, bfloat16),
        (np.dtype(ml_dtypes.bfloat16), bfloat16),
        (complex64, complex64),
    ],
)
def test_as_dtype_normalizes(spec, expected):
    assert dtypes.as_dtype(spec) is expected


@pytest.mark.parametrize("bad", ["floot32", "float128", "", "Float32"])
def test_unknown_names_are_rejected_with_the_valid_ones_listed(bad):
    with pytest.raises(TypeError) as info:
        Dtype(bad)
    message = str(info.value)
    assert repr(bad) in message
    assert all(name in message for name in dtypes.DTYPES)


@pytest.mark.parametrize("bad", [np.dtype("float128"), np.dtype(object), None, 3, [1, 2]])
def test_non_dtypes_are_rejected(bad):
    with pytest.raises(TypeError):
        dtypes.as_dtype(bad)


@pytest.mark.parametrize(
    ("d", "kind", "itemsize"),
    [
        (bool_, "b", 1),
        (int8, "i", 1),
        (int64, "i", 8),
        (uint16, "u", 2),
        (bfloat16, "f", 2),
        (float16, "f", 2),
        (float64, "f", 8),
        (complex64, "c", 8),
        (complex128, "c", 16),
    ],
)
def test_dtype_properties(d, kind, itemsize):
    assert d.kind == kind
    assert d.itemsize == itemsize
    assert d.bits == 8 * itemsize
    assert d.is_bool == (kind == "b")
    assert d.is_int == (kind in "iu")
    assert d.is_signed_int == (kind == "i")
    assert d.is_uint == (kind == "u")
    assert d.is_float == (kind == "f")
    assert d.is_complex == (kind == "c")
    assert d.is_numeric == (kind != "b")


def test_predicate_functions_accept_names():
    assert dtypes.is_float_dtype("bfloat16")
    assert not dtypes.is_float_dtype("complex64")
    assert dtypes.is_int_dtype("uint8") and dtypes.is_uint_dtype("uint8")
    assert not dtypes.is_signed_int_dtype("uint8")
    assert dtypes.is_bool_dtype("bool") and not dtypes.is_numeric_dtype("bool")
    assert dtypes.is_complex_dtype(np.complex64)


def test_numpy_dtypes_including_bfloat16():
    assert float32.numpy == np.dtype("float32")
    assert bfloat16.numpy == np.dtype(ml_dtypes.bfloat16)
    assert dtypes.numpy_dtype("bool") == np.dtype(bool)
    for d in dtypes.all_dtypes:
        assert d.numpy.itemsize == d.itemsize
        assert dtypes.as_dtype(d.numpy) is d
    assert np.zeros(2, dtype=bfloat16.numpy).dtype == bfloat16.numpy


def test_finfo_and_iinfo():
    assert dtypes.finfo(bfloat16).bits == 16
    assert float(dtypes.finfo(bfloat16).max) > 3e38  # bfloat16 keeps float32's range
    assert float(dtypes.finfo("float16").max) == 65504.0
    assert dtypes.iinfo("int8").min == -128
    assert dtypes.iinfo(uint64).max == 2**64 - 1
    with pytest.raises(TypeError):
        dtypes.iinfo(float32)
    with pytest.raises(TypeError):
        dtypes.finfo(int32)


def test_constants_and_tuples():
    assert dtypes.DTYPES["bool"] is bool_ is dtypes.bool
    assert len(dtypes.all_dtypes) == len(set(dtypes.all_dtypes)) == 15
    assert set(dtypes.all_numeric_dtypes) == set(dtypes.all_dtypes) - {bool_}
    assert dtypes.all_signed_int_dtypes == (int8, int16, int32, int64)
    assert dtypes.all_uint_dtypes == (uint8, uint16, uint32, uint64)
    assert set(dtypes.all_int_dtypes) == {int8, int16, int32, int64, uint8, uint16, uint32, uint64}
    assert dtypes.all_float_dtypes == (bfloat16, float16, float32, float64)
    assert dtypes.all_complex_dtypes == (complex64, complex128)
    assert all(isinstance(d, Dtype) for d in dtypes.all_dtypes)


# --------------------------------------------------------------------------- result_type


class FakeVariable:
    """Stands in for a symbolic variable: only its ``dtype`` matters."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


def _array(dtype: str) -> np.ndarray:
    return np.zeros(3, dtype=dtypes.numpy_dtype(dtype))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((_array("float32"), 2.5), float32),  # weak float keeps the array's float
        ((_array("int8"), 1), int8),  # weak int keeps the array's int
        ((_array("uint8"), True), uint8),
        ((_array("int32"), 1.5), float64),  # float scalar with ints -> default float
        ((_array("bool"), 1.5), float64),
        ((_array("bool"), 3), int64),
        ((_array("bfloat16"), 1.0), bfloat16),
        ((_array("complex64"), 1.0), complex64),
        ((_array("int16"), 1j), complex128),  # -> default complex
        ((_array("float16"), 1j), complex64),
        ((_array("bfloat16"), 1j), complex64),
        ((_array("float32"), 1j), complex64),
        ((_array("float64"), 1j), complex128),
        ((_array("complex64"), 1j), complex64),
        ((True,), bool_),
        ((1,), int64),
        ((1, 2.0), float64),  # the highest weak kind wins
        ((True, 1j), complex128),
        ((_array("int8"), 1, 2.0), float64),
        ((_array("int8"), _array("float32"), 1.5), float32),
        ((np.float64(2.0), _array("float32")), float64),  # NumPy scalars are strong
        ((FakeVariable("int16"), 3), int16),
        ((FakeVariable("int16"), "float32"), float32),
        (("uint64", int64), float64),
    ],
)
def test_result_type(args, expected):
    assert dtypes.result_type(*args) is expected


def test_weak_scalars_follow_the_default_float():
    with dtypes.default_float_dtype_as("float32"):
        assert dtypes.result_type(_array("int32"), 1.5) is float32
        assert dtypes.result_type(1.5) is float32
        assert dtypes.result_type(_array("int32"), 1j) is complex64
        assert dtypes.result_type(_array("float64"), 1.5) is float64


def test_result_type_errors():
    with pytest.raises(ValueError):
        dtypes.result_type()
    with pytest.raises(TypeError, match="object"):
        dtypes.result_type(object())


def test_dtype_of():
    assert dtypes.dtype_of(_array("uint16")) is uint16
    assert dtypes.dtype_of(np.int8(3)) is int8
    assert dtypes.dtype_of(FakeVariable("bfloat16")) is bfloat16
    assert dtypes.dtype_of(True) is bool_
    assert dtypes.dtype_of(3) is int64
    with dtypes.default_float_dtype_as(float16):
        assert dtypes.dtype_of(2.0) is float16
        assert dtypes.dtype_of(2j) is complex64


# --------------------------------------------------------------------------- can_cast


@pytest.mark.parametrize(
    ("from_", "to", "casting", "expected"),
    [
        (int8, int16, "safe", True),
        (int16, int8, "safe", False),
        (uint8, int16, "safe", True),
        (int8, uint8, "safe", False),
        (int64, float64, "safe", True),  # counted as safe, as in NumPy
        (int16, float16, "safe", False),
        (bfloat16, float16, "safe", False),
        (bool_, complex64, "safe", True),
        (float64, complex64, "safe", False),
        (int64, uint8, "same_kind", True),
        (float64, float16, "same_kind", True),
        (float32, int32, "same_kind", False),
        (complex64, float64, "same_kind", False),
        (complex128, bool_, "unsafe", True),
        (float32, float32, "no", True),
        (float32, float64, "equiv", False),
        ("int32", np.float64, "safe", True),
        (_array("int32"), "int64", "safe", True),
    ],
)
def test_can_cast_dtypes(from_, to, casting, expected):
    assert dtypes.can_cast(from_, to, casting) is expected


@pytest.mark.parametrize(
    ("value", "to", "casting", "expected"),
    [
        (100, int8, "safe", True),
        (300, int8, "safe", False),
        (-1, uint8, "safe", False),
        (2**64 - 1, uint64, "safe", True),
        (1, float16, "safe", True),
        (10**6, float16, "safe", False),  # overflows float16
        (True, int8, "safe", True),
        (1, bool_, "safe", False),
        (1.5, int64, "safe", False),
        (1.5, bfloat16, "safe", True),
        (1e300, float32, "safe", False),
        (float("inf"), float16, "safe", True),
        (1j, float64, "safe", False),
        (1j, complex64, "safe", True),
        (300, int8, "same_kind", True),
        (1.5, int8, "same_kind", False),
        (1.5, int8, "unsafe", True),
    ],
)
def test_can_cast_python_values(value, to, casting, expected):
    assert dtypes.can_cast(value, to, casting) is expected


def test_can_cast_rejects_unknown_casting():
    with pytest.raises(ValueError, match="casting"):
        dtypes.can_cast(int8, int16, "lossless")


# --------------------------------------------------------------------------- defaults


def test_defaults():
    assert dtypes.default_float_dtype() is float64
    assert dtypes.default_int_dtype() is int64
    assert dtypes.default_complex_dtype() is complex128


def test_setting_defaults():
    try:
        dtypes.set_default_float_dtype("float32")
        dtypes.set_default_int_dtype(np.int32)
        assert dtypes.default_float_dtype() is float32
        assert dtypes.default_complex_dtype() is complex64
        assert dtypes.default_int_dtype() is int32
    finally:
        dtypes.set_default_float_dtype(float64)
        dtypes.set_default_int_dtype(int64)


def test_default_context_managers_nest_and_restore_on_errors():
    with pytest.raises(RuntimeError), dtypes.default_float_dtype_as("float32") as d:
        assert d is float32
        with dtypes.default_float_dtype_as(bfloat16):
            assert dtypes.default_float_dtype() is bfloat16
            assert dtypes.default_complex_dtype() is complex64
        assert dtypes.default_float_dtype() is float32
        raise RuntimeError("boom")
    assert dtypes.default_float_dtype() is float64
    with pytest.raises(RuntimeError), dtypes.default_int_dtype_as(int32):
        assert dtypes.default_int_dtype() is int32
        raise RuntimeError("boom")
    assert dtypes.default_int_dtype() is int64


@pytest.mark.parametrize("bad", ["int32", "complex64", "bool"])
def test_default_float_must_be_a_float(bad):
    with pytest.raises(TypeError, match="float"):
        dtypes.set_default_float_dtype(bad)
    with pytest.raises(TypeError), dtypes.default_float_dtype_as(bad):
        pass
    assert dtypes.default_float_dtype() is float64


def test_default_int_must_be_an_int():
    with pytest.raises(TypeError, match="int"):
        dtypes.set_default_int_dtype("float32")


# --------------------------------------------------------------------------- infer_dtype


def test_infer_dtype_for_creation_functions():
    infer = dtypes.infer_dtype
    # zeros(shape, dtype="int16"): the explicit dtype wins
    assert infer("int16", arrays=[_array("float32")], scalars=[1.5]) is int16
    # zeros_like(x): the first argument with a dtype
    assert infer(arrays=[None, _array("uint8"), _array("float32")]) is uint8
    assert infer(arrays=[FakeVariable("bfloat16")], scalars=[1.0]) is bfloat16
    # arange(0, 5) / arange(0, 1.5) / full(shape, True) / full(shape, 1j)
    assert infer(scalars=[0, 5, None]) is int64
    assert infer(scalars=[0, 1.5]) is float64
    assert infer(scalars=[True]) is bool_
    assert infer(scalars=[1j]) is complex128
    assert infer(scalars=[np.int8(0), 5]) is int8
    # zeros(shape): the default
    assert infer() is float64
    assert infer(kind="int") is int64
    with dtypes.default_float_dtype_as("float32"), dtypes.default_int_dtype_as("int32"):
        assert infer(scalars=[0, 1.5]) is float32
        assert infer(scalars=[0, 5]) is int32
        assert infer() is float32
        assert infer(kind="complex") is complex64
    with pytest.raises(ValueError, match="kind"):
        infer(kind="integer")


# --------------------------------------------------------------------------- backends

# "fake" lacks bfloat16, float16 and uint64; some ops lack more.
FAKE_PER_OP = {
    "exp": (*dtypes.all_int_dtypes, bool_),  # float-only op
    "bitwise_and": dtypes.all_float_dtypes + dtypes.all_complex_dtypes,  # int-only op
    "cholesky": (complex64,),
    "sort": dtypes.all_complex_dtypes,
    "Exp": (float32,),  # matched by class name of an op object
}


@pytest.fixture
def fake_backend():
    supported = [d for d in dtypes.all_dtypes if d not in (bfloat16, float16, uint64)]
    dtypes.register_backend_dtypes("fake", supported, per_op=FAKE_PER_OP)
    yield "fake"
    dtypes.unregister_backend_dtypes("fake")


class Exp:
    def __str__(self) -> str:
        return "Elemwise{exp}"


def test_py_backend_supports_everything():
    assert "py" in dtypes.registered_backends()
    assert dtypes.supported_dtypes("py") == dtypes.all_dtypes
    assert dtypes.unsupported_dtypes("py", op="anything") == ()
    assert dtypes.is_supported("py", "bfloat16")


def test_backend_registry(fake_backend):
    assert dtypes.unsupported_dtypes("fake") == (uint64, bfloat16, float16)
    assert not dtypes.is_supported("fake", "bfloat16")
    assert dtypes.is_supported("fake", float32)
    assert dtypes.supported_dtypes("fake", op="exp") == (float32, float64, complex64, complex128)
    assert not dtypes.is_supported("fake", int8, op="exp")
    assert dtypes.is_supported("fake", int8, op="some_other_op")
    op = Exp()  # looked up by str(op) and by class name
    assert not dtypes.is_supported("fake", float32, op=op)
    assert dtypes.is_supported("fake", float64, op=op)
    dtypes.check_supported(float64, "fake", op="exp")


def test_unknown_backend_names_known_ones():
    with pytest.raises(KeyError, match=r"'nope'.*'py'"):
        dtypes.supported_dtypes("nope")
    with pytest.raises(KeyError):
        dtypes.is_supported("nope", float32)


# --------------------------------------------------------------------------- casting modes


def test_casting_mode_setting():
    assert dtypes.casting_mode() is None
    with pytest.raises(RuntimeError), dtypes.casting_mode_as("upcast"):
        assert dtypes.casting_mode() == "upcast"
        raise RuntimeError("boom")
    assert dtypes.casting_mode() is None
    try:
        dtypes.set_casting_mode("cast")
        assert dtypes.casting_mode() == "cast"
    finally:
        dtypes.set_casting_mode(None)
    with pytest.raises(ValueError, match="sideways"):
        dtypes.set_casting_mode("sideways")


@pytest.mark.parametrize(
    ("dtype", "op", "mode", "expected"),
    [
        (float32, None, "upcast", float32),  # supported dtypes are kept
        (bfloat16, None, "upcast", float32),  # skips float16 (less range)
        (float16, None, "upcast", float32),
        (complex64, "cholesky", "upcast", complex128),
        (uint64, None, "downcast", uint32),
        (float16, "some_op", "downcast", None),  # bfloat16 is unsupported too
        (int16, "exp", "crosscast", float64),  # float-only op: int -> default float
        (bool_, "exp", "crosscast", float64),
        (float32, "bitwise_and", "crosscast", int64),  # int-only op: float -> default int
        (bfloat16, None, "crosscast", None),  # other floats are supported
        (complex64, "sort", "crosscast", None),
        (bfloat16, None, "cast", float32),
        (int32, "exp", "cast", float64),
        (uint64, None, "cast", uint32),
        (complex64, "sort", "cast", None),
    ],
)
def test_resolve_unsupported(fake_backend, dtype, op, mode, expected):
    if expected is None:
        with pytest.raises(UnsupportedDtypeError):
            dtypes.resolve_unsupported(dtype, "fake", op, mode=mode)
    else:
        assert dtypes.resolve_unsupported(dtype, "fake", op, mode=mode) is expected


def test_resolve_unsupported_uses_the_current_mode(fake_backend):
    with pytest.raises(UnsupportedDtypeError):  # no mode set: no conversion
        dtypes.resolve_unsupported(bfloat16, "fake")
    with dtypes.casting_mode_as("upcast"):
        assert dtypes.resolve_unsupported(bfloat16, "fake") is float32
    with dtypes.casting_mode_as("cast"), dtypes.default_float_dtype_as(float32):
        assert dtypes.resolve_unsupported(int8, "fake", op="exp") is float32


def test_unsupported_dtype_error_message(fake_backend):
    with pytest.raises(UnsupportedDtypeError) as info:
        dtypes.check_supported("bfloat16", "fake", op="Elemwise{exp}")
    err = info.value
    assert isinstance(err, TypeError)
    assert (err.dtype, err.backend, err.op) == (bfloat16, "fake", "Elemwise{exp}")
    assert err.suggested_modes == ["upcast", "cast"]
    assert err.resolutions == {"upcast": float32, "cast": float32}
    assert str(err).startswith(
        "Elemwise{exp} on backend 'fake' does not support dtype bfloat16; "
        "set a casting mode to convert it: 'upcast' (-> float32), 'cast' (-> float32)"
    )
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err) and copy.suggested_modes == err.suggested_modes


def test_unsupported_dtype_error_when_no_mode_helps(fake_backend):
    with pytest.raises(UnsupportedDtypeError) as info:
        dtypes.check_supported(complex128, "fake", op="sort")
    assert info.value.suggested_modes == []
    message = str(info.value)
    assert "sort on backend 'fake' does not support dtype complex128" in message
    assert "no casting mode" in message
    with pytest.raises(UnsupportedDtypeError, match=r"^Backend 'fake'.*uint64.*'downcast'"
                       r".*would change values.*not advised") as narrowing:
        dtypes.check_supported(uint64, "fake")
    assert narrowing.value.suggested_modes == []  # every target would wrap large values


def test_settings_are_process_wide_and_overrides_are_per_thread():
    from concurrent.futures import ThreadPoolExecutor

    def in_other_thread(fn):
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(fn).result()

    try:
        with dtypes.default_float_dtype_as(float16):
            # the override is local to this thread; the process-wide value shows elsewhere
            assert in_other_thread(dtypes.default_float_dtype) is float64
            dtypes.set_default_float_dtype(bfloat16)  # only until the block ends
            assert dtypes.default_float_dtype() is bfloat16
        assert dtypes.default_float_dtype() is float64
        dtypes.set_default_float_dtype(float32)  # outside any block: process-wide
        assert in_other_thread(dtypes.default_float_dtype) is float32
    finally:
        dtypes.set_default_float_dtype(float64)


def test_a_backend_declared_later_is_listed_and_declared_when_first_asked():
    calls = []

    def declare():
        calls.append(1)
        dtypes.register_backend_dtypes("later", [float32, float64])

    dtypes.declare_backend_later("later", declare)
    dtypes.declare_backend_later("absent", declare, available=lambda: False)
    try:
        assert "later" in dtypes.registered_backends() and not calls
        assert "absent" not in dtypes.registered_backends()
        assert dtypes.unsupported_dtypes("later")[0] == dtypes.bool_ and calls == [1]
        assert dtypes.is_supported("later", float32) and calls == [1]
        with pytest.raises(KeyError, match=r"'absent'.*'later'"):
            dtypes.supported_dtypes("absent")
    finally:
        dtypes.unregister_backend_dtypes("later")
        dtypes.unregister_backend_dtypes("absent")
    assert "later" not in dtypes.registered_backends()


def test_a_fresh_process_lists_every_backend_with_what_it_lacks():
    import importlib.util
    import subprocess
    import sys

    # the backend records (compile/backends.py) declare the built-in backends' dtypes when
    # workbench's API is loaded; dtypes itself knows only the backends declared to it
    code = ("import workbench\nworkbench.function\nfrom workbench.core import dtypes\n"
            "print(dtypes.registered_backends())\n"
            "print([str(d) for d in dtypes.unsupported_dtypes('c')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    gpu = ("gpu",) if importlib.util.find_spec("torch") is not None else ()
    assert eval(out[0]) == ("py", "c", *gpu)
    assert eval(out[1]) == ["bfloat16", "float16"]  # the C linker has no half arithmetic
