"""C for TopK and Unique gives `perform`'s results to the bit: every real dtype, every
axis, NaN and -0.0 among ties, zero-size and non-contiguous inputs, k from 0 to the
axis length, and each combination of Unique's optional outputs; both raise its errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import Mode
from workbench.core.link.c.compiler import has_compiler

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")

C_MODE, PY_MODE = Mode(linker="c"), Mode(linker="py")
DTYPES = ["float64", "float32", "int64", "int8", "uint16", "bool"]


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Few distinct values (many ties); floats with NaN and -0.0 among them."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    values = rng.integers(-3, 4, shape).astype(dtype)
    if dtype.startswith("float"):
        values[rng.random(shape) < 0.2] = np.nan
        values[values == 0] = -0.0 if rng.random() < 0.5 else 0.0
    return values


def inputs(dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [sample(rng, (3, 5, 4), dtype), sample(rng, (2, 0, 3), dtype),
            sample(rng, (1, 7, 1), dtype), sample(rng, (4, 6, 3), dtype)[:, ::2, ::-1]]


def assert_c_equals_py(build, x, values) -> None:
    fc, fp = wb.function([x], build(x), mode=C_MODE), wb.function([x], build(x), mode=PY_MODE)
    assert fc.linker.report.py_nodes == []
    for value in values:
        for _ in range(2):  # the second call reuses the output buffers
            for got, want in zip(fc(value), fp(value)):
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_in_c_equals_perform(dtype: str) -> None:
    x = wt.tensor(dtype, shape=(None, None, None))
    values = inputs(dtype)
    for axis, k, largest in itertools.product(range(3), (0, 1, 3), (True, False)):
        fits = [v for v in values if v.shape[axis] >= k]
        op = wt.TopK(k, axis, largest)
        assert_c_equals_py(lambda x, op=op: list(op(x)), x, fits)


def test_topk_in_c_on_long_lines() -> None:
    """The heap path: k well below the length, and k equal to it (a full sort)."""
    x = wt.dmatrix("x")
    rng = np.random.default_rng(2)
    values = rng.integers(-20, 20, (5, 300)).astype(float)
    values[rng.random(values.shape) < 0.05] = np.nan
    for k, largest in itertools.product((1, 17, 300), (True, False)):
        op = wt.TopK(k, 1, largest)
        assert_c_equals_py(lambda x, op=op: list(op(x)), x, [values])


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_in_c_equals_perform(dtype: str) -> None:
    x = wt.tensor(dtype, shape=(None, None, None))
    values = inputs(dtype)
    for axis, flags in itertools.product((None, 0, 1, 2),
                                         itertools.product((False, True), repeat=3)):
        op = wt.Unique(*flags, axis=axis)
        assert_c_equals_py(lambda x, op=op: op(x, return_list=True), x, values)


def test_unique_in_c_of_a_scalar_and_of_empty_slices() -> None:
    s = wt.dscalar("s")
    assert_c_equals_py(lambda s: wt.Unique(True, True, True)(s, return_list=True), s, [3.0])
    m = wt.dmatrix("m")
    assert_c_equals_py(lambda m: wt.Unique(True, True, True, axis=0)(m, return_list=True), m,
                       [np.zeros((3, 0)), np.zeros((0, 2))])


def test_complex_inputs_run_perform_and_say_so() -> None:
    z = wt.zvector("z")
    f = wb.function([z], [wt.topk(z, 1), wt.unique(z)], mode=C_MODE)
    reasons = {type(node.op).__name__: why for node, why in f.linker.report.py_nodes}
    assert set(reasons) == {"TopK", "Unique"}
    assert all("complex input (complex128)" in why for why in reasons.values())
    values = np.array([1 + 2j, 1 - 1j, 1 + 2j])
    top, distinct = f(values)
    np.testing.assert_array_equal(distinct, np.unique(values))
    assert top[0] == 1 + 2j


def test_topk_in_c_refuses_k_past_the_axis() -> None:
    v = wt.dvector("v")
    with pytest.raises(ValueError, match=r"k=3 is larger than axis 0 of x, of shape \(2,\)"):
        wb.function([v], wt.topk(v, 3), mode=C_MODE)(np.ones(2))
