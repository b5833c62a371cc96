"""Differential test: random elementwise graphs over every integer, unsigned, bool and
float dtype, with broadcasting, casts, switches and reductions, give the same dtype and
values on the C linker as on the Python one (NumPy per node).

Values include the corners where C and NumPy part ways unless the generated code takes
care: negative numbers cast to unsigned types, integer division and modulo by zero,
NaN, infinities and -0.0, the extremes of each integer type. Found so far: a negative
float cast to uint32 gave 0 in a vectorised loop (NumPy wraps around), and a float out
of int32's range cast to int16 wrapped around (NumPy gives 0): the float to integer
casts now follow NumPy's x86-64 results everywhere (see scalar_c.c_cast).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.graph.basic import variables_between
from workbench.core.link.c.compiler import has_compiler

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64"]
BINARY: list[Callable[[Any, Any], Any]] = [
    wt.add, wt.sub, wt.mul, wt.true_div, wt.int_div, wt.mod, wt.maximum, wt.minimum, wt.eq,
    wt.lt, wt.ge, wt.and_, wt.or_, wt.xor, wt.pow, wt.arctan2]
UNARY: list[Callable[[Any], Any]] = [
    wt.neg, wt.abs, wt.exp, wt.log, wt.sqrt, wt.sin, wt.tanh, wt.floor, wt.ceil, wt.sign,
    wt.invert, wt.sqr, wt.reciprocal, wt.sigmoid, wt.isnan, wt.expm1, wt.log1p,
    wt.round_half_to_even, wt.erf, wt.cosh, wt.arcsinh]
REDUCTIONS: list[Callable[[Any], Any]] = [
    lambda v: v.sum(axis=0), lambda v: v.max(axis=-1), lambda v: v.prod(axis=None),
    lambda v: wt.argmax(v, axis=0), lambda v: v.min(axis=0), lambda v: v.mean(axis=1)]
#: a matrix, a row, a column and a 0-d value: every broadcasting combination
SHAPES = [(3, 4), (1, 4), (3, 1), ()]
GRAPHS = 40


def random_value(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("float"):
        value = rng.normal(size=shape) * rng.choice([0.5, 3.0, 50.0])
        if value.size and rng.random() < 0.3:
            value.reshape(-1)[rng.integers(value.size)] = rng.choice(
                [0.0, -0.0, np.inf, -np.inf, np.nan])
        return value.astype(dtype)
    info = np.iinfo(dtype)
    low, high = (info.min, info.max) if rng.random() < 0.2 else (max(info.min, -100),
                                                                  min(info.max, 100))
    return rng.integers(low, high, size=shape, endpoint=True, dtype=dtype)


def random_expression(rng: np.random.Generator, leaves: list[Any], depth: int) -> Any:
    """A random graph over `leaves`; an operation the dtypes refuse becomes a leaf."""
    if depth == 0 or rng.random() < 0.25:
        return leaves[rng.integers(len(leaves))]

    def sub() -> Any:
        return random_expression(rng, leaves, depth - 1)

    pick = rng.random()
    try:
        if pick < 0.45:
            return BINARY[rng.integers(len(BINARY))](sub(), sub())
        if pick < 0.75:
            return UNARY[rng.integers(len(UNARY))](sub())
        if pick < 0.85:
            return wt.switch(sub() > 0, sub(), sub())
        if pick < 0.93:
            return wt.cast(sub(), DTYPES[rng.integers(len(DTYPES))])
        if pick < 0.97:
            return sub() * int(rng.integers(-3, 4))
        return sub() + float(rng.choice([0.5, 2.0, -1.5]))
    except (TypeError, ValueError, OverflowError):  # e.g. invert of a float, uint8 * -1
        return leaves[0]


def random_graph(seed: int) -> tuple[list[Any], Any, list[np.ndarray]]:
    """(inputs, output, argument values) of a random graph with at least one node."""
    rng = np.random.default_rng(seed)
    out = None
    while out is None or out.owner is None:
        inputs, args = [], []
        for k in range(rng.integers(1, 4)):
            dtype, shape = DTYPES[rng.integers(len(DTYPES))], SHAPES[rng.integers(len(SHAPES))]
            static = tuple(1 if s == 1 else None for s in shape)
            inputs.append(wt.TensorType(dtype, static)(f"v{k}"))
            args.append(random_value(rng, dtype, shape))
        out = random_expression(rng, inputs, 4)
    if out.type.ndim >= 1 and rng.random() < 0.3:
        try:
            out = REDUCTIONS[rng.integers(len(REDUCTIONS))](out)
        except (TypeError, ValueError):
            pass
    return inputs, out, args


def assert_same(got: np.ndarray, want: np.ndarray, rtol: float, label: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, label
    if want.dtype.kind == "f":
        ok = (np.isnan(got) & np.isnan(want)) | (got == want) | np.isclose(got, want, rtol=rtol,
                                                                           atol=0)
        assert ok.all(), label
    else:
        np.testing.assert_array_equal(got, want, err_msg=label)


@pytest.mark.parametrize("seed", range(GRAPHS))
def test_random_graphs_agree_between_c_and_python(seed: int) -> None:
    inputs, out, args = random_graph(seed)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # NumPy's warnings on overflow, invalid casts...
        try:
            want = wb.function(inputs, out, linker="py", on_unused_input="ignore")(*args)
        except (ValueError, ZeroDivisionError) as exc:  # e.g. an integer to a negative power
            with pytest.raises(type(exc)):
                wb.function(inputs, out, linker="c", on_unused_input="ignore")(*args)
            return
        got = wb.function(inputs, out, linker="c", on_unused_input="ignore")(*args)
    label = f"seed {seed}: {out} on {[a.dtype for a in args]}"
    # vector math differs from NumPy's by a few ulp: a float32 step anywhere (even in a
    # float64 result) carries float32's error
    low = any(getattr(v.type, "dtype", None) == "float32"
              for v in variables_between(inputs, [out]))
    assert_same(np.asarray(got), np.asarray(want), 1e-5 if low else 1e-12, label)
