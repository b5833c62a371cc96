"""Accuracy of the C linker's transcendental functions against NumPy.

The C Elemwise loop calls glibc's vector math library (libmvec, through
`#pragma omp declare simd`) when its operands are contiguous, and scalar libm
otherwise. Both paths are measured here over wide input ranges: log-uniform
magnitudes of both signs from denormals to the largest finite values, the
function's interesting range, and the special values (+-0, +-inf, NaN, denormals,
huge). Each function of each dtype is one output of a single fused Elemwise node
(one compiled module per dtype and layout).

Checked: NaN exactly where NumPy gives NaN, infinities where NumPy gives them
(same sign), zeros with NumPy's sign, and the largest error in units in the last
place (of the reference, in the function's dtype) below a bound, against NumPy and
against a more precise reference (NumPy in float64 for float32, in long double for
float64). The measured figures are in the comment above the bounds.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from functools import cache
from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.link.c.compiler import has_compiler, vector_math_libraries
from workbench.core.scalar import math as sm
from workbench.core.scalar.basic import get_scalar_type
from workbench.core.scalar.composite import Composite
from workbench.core.tensor.elemwise import Elemwise
from workbench.testing.accuracy import ulp_error

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")


def _libm(fname: str) -> Any:
    """Python's math module function (the C library's scalar version) over arrays, in
    float64: NumPy has no erf/erfc, and SciPy's flush to zero before the denormals."""
    scalar = getattr(math, fname)
    vectorised = np.vectorize(lambda v: scalar(v) if v == v else v, otypes=[np.float64])

    def fn(x: np.ndarray) -> np.ndarray:
        return vectorised(np.asarray(x, dtype=np.float64)).astype(
            x.dtype if x.dtype != np.longdouble else np.float64)

    return fn

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324,
                     2.2250738585072014e-308, 1e-310, -1e-310, 1.7976931348623157e308,
                     -1.7976931348623157e308, 1e300, -1e300, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-30,
                     1.1754943508222875e-38, 1e-40, 3.4028234663852886e38, 1e20, -1e20])

#: name -> (scalar op, NumPy reference, interesting range (low, high) in float64)
UNARY: dict[str, tuple[Any, Any, tuple[float, float]]] = {
    "exp": (sm.exp, np.exp, (-750.0, 712.0)),
    "exp2": (sm.exp2, np.exp2, (-1080.0, 1030.0)),
    "expm1": (sm.expm1, np.expm1, (-40.0, 712.0)),
    "log": (sm.log, np.log, (0.0, 10.0)),
    "log2": (sm.log2, np.log2, (0.0, 10.0)),
    "log10": (sm.log10, np.log10, (0.0, 10.0)),
    "log1p": (sm.log1p, np.log1p, (-1.0, 10.0)),
    "sin": (sm.sin, np.sin, (-1e4, 1e4)),
    "cos": (sm.cos, np.cos, (-1e4, 1e4)),
    "tan": (sm.tan, np.tan, (-1e4, 1e4)),
    "arcsin": (sm.arcsin, np.arcsin, (-1.0, 1.0)),
    "arccos": (sm.arccos, np.arccos, (-1.0, 1.0)),
    "arctan": (sm.arctan, np.arctan, (-50.0, 50.0)),
    "sinh": (sm.sinh, np.sinh, (-712.0, 712.0)),
    "cosh": (sm.cosh, np.cosh, (-712.0, 712.0)),
    "tanh": (sm.tanh, np.tanh, (-20.0, 20.0)),
    "arcsinh": (sm.arcsinh, np.arcsinh, (-50.0, 50.0)),
    "arccosh": (sm.arccosh, np.arccosh, (1.0, 50.0)),
    "arctanh": (sm.arctanh, np.arctanh, (-1.0, 1.0)),
    "erf": (sm.erf, _libm("erf"), (-6.0, 6.0)),
    "erfc": (sm.erfc, _libm("erfc"), (-6.0, 28.0)),
    "sqrt": (sm.sqrt, np.sqrt, (0.0, 100.0)),
}
BINARY: dict[str, tuple[Any, Any]] = {
    "pow": (sm.pow, np.power),
    "arctan2": (sm.arctan2, np.arctan2),
}
N = 20_000

#: Max ulp errors measured here (x86-64 with AVX2, glibc 2.36's libmvec, NumPy 2.4), as
#: (against NumPy, against the precise reference) per path; functions not listed: <= 2.
#:   float64 contiguous (libmvec): exp 3/3, sin 3/3, cos 3/3, tan 3/3, erfc 3/3, others <= 2
#:   float64 strided (scalar libm): all <= 2/2 (log10, tanh, arccosh 2; most 1 or 0)
#:   float32 contiguous (libmvec): log 5/4, erf 4/4, exp 3/2, tan 0/3, arcsin 0/3,
#:                                 arctan2 1/3; NumPy's own float32 loops are up to 3 ulp
#:                                 from the precise reference (tan, arcsin, arctan2)
#:   float32 strided (scalar libm): tan 3/1, arcsin 3/1, tanh 3/2, others <= 2/2
#: sqrt is correctly rounded everywhere (0 ulp against NumPy).
#: The bounds asserted: libmvec documents at most 4 ulp; against NumPy the errors of both
#: sides add up (NumPy's float32 loops are not correctly rounded either).
BOUND_PRECISE = 4.0
BOUND_NUMPY = {"float64": 4.0, "float32": 6.0}


def _wide(rng: np.random.Generator, n: int) -> np.ndarray:
    """Log-uniform magnitudes from 1e-323 to 1e308, random signs."""
    return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-323, 308, n)


def unary_inputs(name: str, dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    low, high = UNARY[name][2]
    parts = [rng.uniform(low, high, N), _wide(rng, N // 4), SPECIALS,
             np.nextafter(np.array([low, high]), [-np.inf, np.inf])]
    with np.errstate(over="ignore"):
        return np.concatenate(parts).astype(dtype)


def binary_inputs(name: str, dtype: str, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "pow":
        x = np.concatenate([rng.uniform(0, 10, N), 10.0 ** rng.uniform(-30, 30, N // 4),
                            -rng.integers(1, 20, N // 8).astype(float)])
        y = np.concatenate([rng.uniform(-60, 60, N), rng.uniform(-8, 8, N // 4),
                            rng.integers(-40, 40, N // 8).astype(float)])
    else:
        x, y = _wide(rng, N), _wide(rng, N)
        x = np.concatenate([x, rng.normal(size=N // 4)])
        y = np.concatenate([y, rng.normal(size=N // 4)])
    gx, gy = np.meshgrid(SPECIALS, SPECIALS)
    with np.errstate(over="ignore"):
        return (np.concatenate([x, gx.ravel()]).astype(dtype),
                np.concatenate([y, gy.ravel()]).astype(dtype))


@cache
def vector_function(dtype: str, isa: str) -> Any:
    """One compiled node computing every function, each on its own input (compiled for the
    code path `isa`, which the `isa` fixture has selected)."""
    st = get_scalar_type(dtype)
    names = [*UNARY, *BINARY]
    scalars: list[Any] = []
    outs = []
    for name in UNARY:
        a = st(f"a_{name}")
        scalars.append(a)
        outs.append(UNARY[name][0](a))
    for name in BINARY:
        a, b = st(f"a_{name}"), st(f"b_{name}")
        scalars += [a, b]
        outs.append(BINARY[name][0](a, b))
    comp = Composite(scalars, outs)
    tensors = [wt.TensorType(dtype, (None,))(s.name) for s in scalars]
    outputs = Elemwise(comp)(*tensors, return_list=True)
    f = wb.function(tensors, outputs, linker="c", mode=wb.Mode(linker="c", rewriter=None))
    assert len(f.linker.report.c_nodes) == 1 and not f.linker.report.py_nodes
    return f, names


def computed(dtype: str, strided: bool, isa: str) -> dict[str, tuple[np.ndarray, ...]]:
    """name -> (C result, NumPy's result, a more precise one rounded to `dtype`).

    The precise reference is NumPy in float64 for float32, and in long double (x87,
    64-bit mantissa) for float64; erf/erfc use the C library's scalar functions."""
    f, names = vector_function(dtype, isa)
    wide = np.float64 if dtype == "float32" else np.longdouble
    args: list[np.ndarray] = []
    wants: list[np.ndarray] = []
    truths: list[np.ndarray] = []
    n = N * 2  # every input padded to one common length
    with np.errstate(all="ignore"):
        for name in UNARY:
            x = np.resize(unary_inputs(name, dtype), n)
            fn = UNARY[name][1]
            args.append(x)
            wants.append(np.asarray(fn(x)).astype(dtype))
            truths.append(np.asarray(fn(x.astype(wide))).astype(dtype))
        for name in BINARY:
            x, y = (np.resize(v, n) for v in binary_inputs(name, dtype))
            fn = BINARY[name][1]
            args += [x, y]
            wants.append(fn(x, y))
            truths.append(fn(x.astype(wide), y.astype(wide)).astype(dtype))
    if strided:
        args = [np.repeat(a, 2)[::2] for a in args]
        assert not args[0].flags.c_contiguous
    gots = f(*args)
    return {name: values for name, *values in zip(names, gots, wants, truths)}


def check_specials(name: str, got: np.ndarray, want: np.ndarray) -> None:
    label = f"{name}[{got.dtype}]"
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{label}: NaNs")
    inf = np.isinf(want)
    assert np.array_equal(got[inf], want[inf]), f"{label}: infinities {got[inf]} vs {want[inf]}"
    big = np.isinf(got) & ~np.isinf(want)
    assert not big.any(), f"{label}: inf where NumPy is finite: {want[big][:5]}"
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]),
                                  err_msg=f"{label}: sign of zeros")


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous_libmvec", "strided_libm"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_max_ulp_error_and_special_values(dtype: str, strided: bool, isa: str) -> None:
    results = computed(dtype, strided, isa)
    against_numpy, against_precise = {}, {}
    for name, (got, want, precise) in results.items():
        assert got.dtype == want.dtype == np.dtype(dtype), name
        check_specials(name, got, want)
        against_numpy[name] = float(ulp_error(got, want).max())
        against_precise[name] = float(ulp_error(got, precise).max())
    report = f"against NumPy {against_numpy}\nagainst the precise reference {against_precise}"
    assert max(against_numpy.values()) <= BOUND_NUMPY[dtype], report
    assert max(against_precise.values()) <= BOUND_PRECISE, report
    assert against_numpy["sqrt"] == 0.0, report  # IEEE: correctly rounded on both sides
    # the measurement is not vacuous: wide inputs, and libmvec differs from libm
    assert all(len(got) == 2 * N for got, _, _ in results.values())


def _node_library(dtype: str, isa: str) -> str:
    from workbench.core.link.c.bundle import module_file
    from workbench.core.link.c.cache import default_cache

    f, _ = vector_function(dtype, isa)
    src = f.linker.report.sources[f.linker.report.c_nodes[0]]
    path = module_file(default_cache(), src)
    assert path is not None, "the compiled node's module is not in the cache"
    return path


@pytest.mark.skipif(not vector_math_libraries(), reason="no libmvec on this machine")
@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_compiled_loop_calls_libmvec(dtype: str, isa: str) -> None:
    symbols = subprocess.run(["nm", "-D", _node_library(dtype, isa)], capture_output=True,
                             text=True, check=True).stdout
    vector = {line.split()[-1].split("@")[0] for line in symbols.splitlines()
              if "_ZGV" in line}
    # the x86-64 vector ABI names the ISA: 'e' AVX-512, 'd' AVX2, 'c' AVX, 'b' SSE4
    assert any(s.startswith("_ZGVe") for s in vector) == (isa == "avx512"), sorted(vector)
    suffix = "f" if dtype == "float32" else ""
    for fname in ("exp", "log", "sin", "cos", "tan", "tanh", "expm1", "log1p", "asin", "acos",
                  "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "exp2",
                  "log2", "log10", "pow", "atan2"):
        assert any(s.endswith(f"_{fname}{suffix}") for s in vector), (fname, sorted(vector))
