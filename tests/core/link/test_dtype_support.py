"""A backend that lacks some dtypes: the error, and each casting mode (seed 004)."""

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core import dtypes
from workbench.core.compile.mode import register_linker
from workbench.core.link.vm import VMLinker

BACKEND = "no-bf16"


@pytest.fixture
def limited_backend():
    """A Python linker declared (for the test) without bfloat16, float16 and int8."""
    lacking = {dtypes.bfloat16, dtypes.float16, dtypes.int8}
    dtypes.register_backend_dtypes(BACKEND, [d for d in dtypes.all_dtypes if d not in lacking])
    register_linker(BACKEND, VMLinker)
    yield BACKEND
    dtypes.unregister_backend_dtypes(BACKEND)
    register_linker(BACKEND, None, reason="test backend removed")


def test_unsupported_dtype_error_names_op_dtype_backend_and_modes(limited_backend):
    x = wt.tensor("bfloat16", shape=(None,), name="x")
    with pytest.raises(dtypes.UnsupportedDtypeError) as info:
        wb.function([x], wt.exp(x), linker=limited_backend)
    message = str(info.value)
    assert "Elemwise{exp}" in message and "bfloat16" in message and BACKEND in message
    assert "upcast" in message
    assert "upcast" in info.value.suggested_modes


@pytest.mark.parametrize("mode, computed_in", [("upcast", "float32"), ("cast", "float32")])
def test_casting_mode_inserts_visible_casts(limited_backend, mode, computed_in):
    x = wt.tensor("bfloat16", shape=(None,), name="x")
    with dtypes.casting_mode_as(mode):
        f = wb.function([x], wt.exp(x), linker=limited_backend)
    text = wb.dprint(f, file="str")
    assert f"Cast{{{computed_in}}}" in text and "Cast{bfloat16}" in text
    value = np.array([0.5, 1.0, 2.0], dtype=dtypes.bfloat16.numpy)
    result = f(value)
    assert result.dtype == dtypes.bfloat16.numpy  # the graph's dtype, not the backend's
    np.testing.assert_allclose(result.astype(np.float32), np.exp([0.5, 1.0, 2.0]), rtol=1e-2)


def test_downcast_mode_picks_a_narrower_supported_dtype(limited_backend):
    x = wt.tensor("int16", shape=(None,), name="x")
    y = wt.tensor("int8", shape=(None,), name="y")
    with dtypes.casting_mode_as("downcast"):
        with pytest.raises(dtypes.UnsupportedDtypeError):  # nothing narrower than int8
            wb.function([y], y + y, linker=limited_backend)
    with dtypes.casting_mode_as("upcast"):
        f = wb.function([x, y], x * y, linker=limited_backend)
    assert f(np.array([3], "int16"), np.array([-2], "int8")).tolist() == [-6]


def test_crosscast_mode_moves_integers_to_the_default_float(limited_backend):
    y = wt.tensor("int8", shape=(None,), name="y")
    dtypes.register_backend_dtypes(
        BACKEND, [d for d in dtypes.all_dtypes if d not in dtypes.all_int_dtypes]
    )
    with dtypes.casting_mode_as("crosscast"):
        f = wb.function([y], y * 3, linker=limited_backend)
    text = wb.dprint(f, file="str")
    assert "Cast{float64}" in text
    assert f(np.array([2, -4], "int8")).tolist() == [6, -12]


def test_supported_graphs_are_untouched(limited_backend):
    x = wt.dvector("x")
    f = wb.function([x], wt.exp(x), linker=limited_backend)
    assert "Cast" not in wb.dprint(f, file="str")
