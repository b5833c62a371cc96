"""Elemwise's C loop on every layout an input can have, and NumPy's semantics at the
corners where plain C differs.

Layouts: C and Fortran order, negative strides, gaps, broadcasting, zero-size, 0-d,
inplace outputs, and output storage reused across calls without corrupting values
returned before. Semantics: integer division and modulo by zero and by negatives,
NaN in maximum/minimum, integer powers with negative exponents, casts. Bad inputs
(wrong dtype, rank, static shape, non-broadcasting shapes) must raise a Python
exception naming the input, also when `trust_input` leaves the checks to C: those
run in a subprocess, so a crash fails the test instead of killing pytest.

The graphs are few and reused, so a cold cache compiles only a handful of kinds.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import Mode
from workbench.core.link.c.compiler import has_compiler
from workbench.core.scalar.math import add
from workbench.core.tensor.elemwise import Elemwise

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

RNG = np.random.default_rng(7)
BASE = RNG.normal(size=(6, 8))


def compiled(inputs, outputs, **kwargs):
    f = wb.function(inputs, outputs, linker="c", **kwargs)
    assert f.linker.report.c_nodes and not f.linker.report.py_nodes, f.linker.report.py_nodes
    return f


@pytest.fixture(scope="module")
def two_outputs():
    """One fused two-output Elemwise over two matrices."""
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    return compiled([x, y], [x * 2 + wt.exp(y), wt.sin(x) - y])


def reference(a, b):
    return [a * 2 + np.exp(b), np.sin(a) - b]


LAYOUTS = {
    "c_order": lambda a: a,
    "fortran": np.asfortranarray,
    "negative_strides": lambda a: a[::-1, ::-1],
    "gaps": lambda a: a[::2, 1::3],
    "transposed": lambda a: a.T,
    "zero_rows": lambda a: a[:0],
    "zero_cols": lambda a: a[:, :0],
    "one_row": lambda a: a[2:3],
    "one_col": lambda a: a[:, 3:4],
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_input_layout_gives_numpys_values(two_outputs, layout):
    a = LAYOUTS[layout](BASE)
    for b in (LAYOUTS[layout](BASE[::-1] * 0.5), np.ascontiguousarray(a) - 1):
        got = two_outputs(a, b)
        for g, want in zip(got, reference(a, b)):
            assert g.shape == want.shape
            np.testing.assert_allclose(g, want, rtol=1e-14, atol=1e-15)


def test_mixed_layouts_and_fortran_outputs(two_outputs):
    a, b = np.asfortranarray(BASE), BASE[::-1]
    for g, want in zip(two_outputs(a, b), reference(a, b)):
        np.testing.assert_allclose(g, want, rtol=1e-14, atol=1e-15)
    both_f = two_outputs(np.asfortranarray(BASE), np.asfortranarray(BASE * 2))
    assert all(g.flags.f_contiguous for g in both_f)  # fresh outputs follow the inputs


def test_broadcasting_rows_columns_and_scalars():
    x = wt.dmatrix("x")
    row, col = wt.TensorType("float64", (1, None))("row"), wt.TensorType("float64", (None, 1))(
        "col")
    s = wt.dscalar("s")
    f = compiled([x, row, col, s], x * row + col * s)
    r, c = RNG.normal(size=(1, 8)), RNG.normal(size=(6, 1))
    for a in (BASE, BASE.T.copy().T, BASE[::-1], np.broadcast_to(r, (6, 8))):
        np.testing.assert_allclose(f(a, r, c, np.array(1.5)), a * r + c * 1.5, rtol=1e-15)
    np.testing.assert_allclose(f(BASE, r[:, ::-1], c[::-1], np.array(-2.0)),
                               BASE * r[:, ::-1] + c[::-1] * -2.0, rtol=1e-15)
    empty = f(BASE[:, :0], r[:, :0], c, np.array(1.0))
    assert empty.shape == (6, 0)


def test_a_bias_row_broadcast_down_a_matrix_gives_the_python_linkers_values():
    """tanh(x + b) with b a vector (an RNN's step): the C loop runs each contiguous row
    through the vectorised loop (libmvec's tanh); rows with gaps take the strided loop."""
    x, b = wt.dmatrix("x"), wt.dvector("b")
    graph = wt.tanh(x * 0.5 + b)
    f, py = compiled([x, b], graph), wb.function([x, b], graph, linker="py")
    bias = RNG.normal(size=8)
    wide = RNG.normal(size=(6, 16)) * 3
    for a, row in ((BASE, bias), (BASE[::-1], bias), (wide[:, ::2], bias),
                   (BASE, RNG.normal(size=16)[::2]), (BASE.T.copy().T, bias)):
        np.testing.assert_allclose(f(a, row), py(a, row), rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(f(a, row), np.tanh(a * 0.5 + row), rtol=1e-14)


def test_zero_d_inputs_and_outputs():
    s, t = wt.dscalar("s"), wt.dscalar("t")
    f = compiled([s, t], [s * t + 1, wt.exp(s)])
    out = f(np.array(2.0), np.array(3.0))
    assert all(isinstance(o, np.ndarray) and o.shape == () for o in out)
    assert out[0] == 7.0 and out[1] == np.exp(2.0)


def test_zero_d_shape_arithmetic_casts_inplace_and_errors_follow_numpy():
    """A 0-d node runs its element once, without the loops (shape arithmetic in every
    gradient): switch and casts, an output overwriting its input, the power error."""
    from workbench.core.link.c.codegen import node_source
    from workbench.core.scalar.math import mul

    i, j = wt.lscalar("i"), wt.lscalar("j")
    f = compiled([i, j], [wt.switch(wt.eq(i, 1), j, i), wt.cast(i * j, "float32"), i**j])
    for a, b in [(1, 7), (3, 1), (-4, 3), (0, 0)]:
        got = f(np.array(a), np.array(b))
        want = [np.where(a == 1, b, a), np.float32(a * b), np.int64(a) ** np.int64(b)]
        for g, w in zip(got, want):
            assert g.shape == () and g.dtype == np.asarray(w).dtype
            assert g == w
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        f(np.array(2), np.array(-1))
    s = wt.dscalar("s")
    double = Elemwise(mul, {0: 0})
    g = wb.function([wb.In(s, mutable=True)], double(s, s), linker="c",
                    mode=Mode(linker="c", rewriter=None))
    a = np.array(3.0)
    assert g(a) == 9.0 and a == 9.0  # the mutable input itself was overwritten
    node = g.maker.fgraph.toposort()[0]
    row = wt.dvector("r")
    vector_node = wb.function([row], double(row, row), linker="py",
                              mode=Mode(linker="py", rewriter=None)).maker.fgraph.toposort()[0]
    assert "omp simd" not in node_source(node).body  # no loop for one element
    assert "omp simd" in node_source(vector_node).body


def test_an_inplace_output_overwrites_its_input():
    x, y = wt.dvector("x"), wt.dvector("y")
    add_inplace = Elemwise(add, {0: 0})
    f = wb.function([wb.In(x, mutable=True), y], add_inplace(x, y), linker="c",
                    mode=Mode(linker="c", rewriter=None))
    assert f.linker.report.c_nodes
    a = np.arange(5.0)
    out = f(a, np.ones(5))
    np.testing.assert_array_equal(out, np.arange(5.0) + 1)
    np.testing.assert_array_equal(a, out)  # the mutable input itself was overwritten
    # non-contiguous input overwritten in place, broadcast second input
    b = np.arange(10.0)
    f(b[::-2], np.ones(1) * 3)
    np.testing.assert_array_equal(b, [0, 4, 2, 6, 4, 8, 6, 10, 8, 12])


def test_the_inplace_rewrite_of_fast_run_keeps_values():
    x = wt.dvector("x")
    f = compiled([x], wt.exp(x * 2) + 1)
    a = np.linspace(-1, 1, 9)
    np.testing.assert_allclose(f(a), np.exp(a * 2) + 1, rtol=1e-15)
    np.testing.assert_array_equal(a, np.linspace(-1, 1, 9))  # the caller's input is intact


def test_returned_values_survive_later_calls(two_outputs):
    a = BASE.copy()
    first = two_outputs(a, a)
    kept = [v.copy() for v in first]
    for k in range(3):
        two_outputs(a * k, a + k)
    for v, want in zip(first, kept):
        np.testing.assert_array_equal(v, want)
    # once dropped, the storage may be reused: the values are still right
    del first
    for k in range(3):
        for g, want in zip(two_outputs(a - k, a), reference(a - k, a)):
            np.testing.assert_allclose(g, want, rtol=1e-14, atol=1e-15)


def test_integer_division_modulo_and_extremes_follow_numpy():
    i, j = wt.ivector("i"), wt.ivector("j")
    f = compiled([i, j], [i // j, i % j, wt.maximum(i, j), wt.minimum(i, j)])
    a = np.array([7, -7, 7, -7, 5, 0, -5, np.iinfo(np.int32).min, 3], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 0, 0, 0, -1, 7], dtype=np.int32)
    with np.errstate(all="ignore"):
        want = [a // b, a % b, np.maximum(a, b), np.minimum(a, b)]
    for got, w in zip(f(a, b), want):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, w)


def test_float_division_modulo_and_nan_extremes_follow_numpy():
    x, y = wt.dvector("x"), wt.dvector("y")
    f = compiled([x, y], [x // y, x % y, wt.maximum(x, y), wt.minimum(x, y)])
    nan, inf = np.nan, np.inf
    a = np.array([7.5, -7.5, 7.5, -7.5, 5.0, -5.0, 0.0, nan, 1.0, inf, -0.0, 3.0])
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 0.0, 0.0, 1.0, nan, 2.0, 1.0, inf])
    with np.errstate(all="ignore"):
        want = [a // b, a % b, np.maximum(a, b), np.minimum(a, b)]
    for got, w in zip(f(a, b), want):
        np.testing.assert_array_equal(got, w)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(w))


def test_integer_power_with_negative_exponent_raises_like_numpy():
    i, j = wt.lvector("i"), wt.lvector("j")
    f = compiled([i, j], i**j)
    a, b = np.array([2, -3, 5, 0, 1]), np.array([10, 3, 0, 4, 62])
    np.testing.assert_array_equal(f(a, b), a**b)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        np.array([2]) ** np.array([-1])  # NumPy's own message
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        f(np.array([2, 2]), np.array([1, -1]))
    np.testing.assert_array_equal(f(a, b), a**b)  # the error flag does not stick


def test_casts_follow_numpy():
    x = wt.dvector("x")
    f = compiled([x], [wt.cast(x, "int32"), wt.cast(x, "bool"), wt.cast(x, "float32"),
                       wt.cast(wt.cast(x, "int64"), "int8")])
    a = np.array([-2.7, -0.5, -0.0, 0.0, 0.5, 2.7, 1e10, np.nan, 300.0, -129.0])
    got = f(a)
    finite = np.isfinite(a) & (np.abs(a) < 2**31)
    np.testing.assert_array_equal(got[0][finite], a[finite].astype(np.int32))
    np.testing.assert_array_equal(got[1], a.astype(bool))
    np.testing.assert_array_equal(got[2], a.astype(np.float32))
    ok = np.isfinite(a)
    np.testing.assert_array_equal(got[3][ok], a[ok].astype(np.int64).astype(np.int8))
    assert [g.dtype for g in got] == [np.int32, np.bool_, np.float32, np.int8]


@pytest.mark.parametrize("source", ["float64", "float32", "complex128"])
def test_float_to_integer_casts_give_numpys_values_in_and_out_of_range(source):
    """A plain C conversion of -1.0 to uint32 is undefined (vectorised it gave 0; NumPy
    wraps it to 4294967295), and so is one of 1e10 to int16 (NumPy: 0). Within int32's
    range NumPy's results are the same everywhere; out of range (NaN, infinities, huge
    values) they are those of x86-64, which the C casts reproduce. (To uint32 and uint64
    NumPy itself gives out-of-range values differently in its vector loop and in the
    scalar loop of the last elements: those are left out.)"""
    targets = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    in_range = [-1.0, -3.7, -200.0, -0.0, 0.5, 255.9, -255.9, 70000.5, -70000.5, 2**31 - 1.0,
                -(2.0**31)]
    out_of_range = [4e9, -4e9, 1e10, -1e10, 3e19, -3e19, 2.0**63, 2.0**64, np.nan, np.inf,
                    -np.inf]
    x86 = platform.machine().lower() in ("x86_64", "amd64") and source != "complex128"
    x = wt.TensorType(source, (None,))("x")
    for target in targets:
        f = compiled([x], [wt.cast(x, target), wt.cast(x * 1, target) + 0])  # plain, fused
        wide = x86 and target not in ("uint32", "uint64")
        a = np.array((in_range + out_of_range * wide) * 3).astype(source)  # long: vectorised
        with np.errstate(invalid="ignore"):
            want = np.real(a).astype(target)
        for got in f(a):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{source} -> {target}")


BAD_INPUTS_SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    import workbench as wb
    import workbench.tensor as wt

    x = wt.dmatrix("x")
    v = wt.TensorType("float64", (3,))("v")
    results = {}
    for trust in (False, True):
        f = wb.function([x, v], x * 2 + v, linker="c", trust_input=trust)
        good = (np.ones((2, 3)), np.ones(3))
        cases = {
            "dtype": (np.ones((2, 3), dtype=np.complex128), good[1]),
            "float32": (np.ones((2, 3), dtype=np.float32), good[1]),
            "rank": (np.ones(3), good[1]),
            "static_shape": (good[0], np.ones(4)),
            "not_an_array": ("text", good[1]),
            "broadcast": (np.ones((2, 5)), good[1]),
        }
        for name, args in cases.items():
            try:
                f(*args)
                results[f"{name}/{trust}"] = "no error"
            except Exception as exc:
                results[f"{name}/{trust}"] = f"{type(exc).__name__}: {exc}"
        results[f"after/{trust}"] = f(*good).tolist()
    print(json.dumps(results))
""")


def test_bad_inputs_raise_python_errors_naming_the_input_even_when_trusted():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(wb.__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", BAD_INPUTS_SCRIPT], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, f"the process died ({proc.returncode}):\n{proc.stderr[-3000:]}"
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for trust in (False, True):
        for name in ("dtype", "rank", "static_shape", "not_an_array", "broadcast"):
            message = results[f"{name}/{trust}"]
            assert message.startswith(("TypeError", "ValueError")), (name, trust, message)
        assert results[f"after/{trust}"] == [[3.0] * 3] * 2
    # the Python filter names the argument
    for name in ("dtype", "rank", "static_shape"):
        assert "'x'" in results[f"{name}/False"] or "'v'" in results[f"{name}/False"] \
            or " x" in results[f"{name}/False"] or " v" in results[f"{name}/False"], \
            results[f"{name}/False"]
    # C's own checks name the input position, what it expected and what it got
    assert "input 0 of" in results["dtype/True"] and "float64" in results["dtype/True"]
    assert results["float32/False"] == "no error"  # float32 -> float64 is a safe upcast
    assert results["float32/True"].startswith("TypeError") and "input 0" in results[
        "float32/True"]
    assert "rank 2" in results["rank/True"] and "rank 1" in results["rank/True"]
    assert "length 4 in dimension 0" in results["static_shape/True"]
    assert "non-array" in results["not_an_array/True"] and "str" in results["not_an_array/True"]
    assert "do not broadcast" in results["broadcast/True"]


def complex_function(dtype: str, ops: dict) -> tuple:
    """One compiled Elemwise node computing every op of `ops` on (z, w)."""
    from workbench.core.scalar.basic import get_scalar_type
    from workbench.core.scalar.composite import Composite

    st = get_scalar_type(dtype)
    z, w = st("z"), st("w")
    comp = Composite([z, w], [build(z, w) for build, _ in ops.values()])
    tz, tw = (wt.TensorType(dtype, (None,))(n) for n in "zw")
    f = wb.function([tz, tw], Elemwise(comp)(tz, tw, return_list=True), linker="c",
                    mode=Mode(linker="c", rewriter=None))
    assert len(f.linker.report.c_nodes) == 1 and not f.linker.report.py_nodes
    return f


def assert_complex_equal(got, want, rtol, label):
    assert got.dtype == want.dtype, (label, got.dtype, want.dtype)
    for part in (np.real, np.imag):
        np.testing.assert_allclose(part(got), part(want), rtol=rtol, atol=0, equal_nan=True,
                                   err_msg=label)


def _arith_ops() -> dict:
    from workbench.core.scalar import math as sm

    return {
        "add": (lambda z, w: sm.add(z, w), np.add),
        "sub": (lambda z, w: sm.sub(z, w), np.subtract),
        "mul": (lambda z, w: sm.mul(z, w), np.multiply),
        "div": (lambda z, w: sm.true_div(z, w), np.true_divide),
        "neg": (lambda z, w: sm.neg(z), lambda a, b: -a),
        "sqr": (lambda z, w: sm.sqr(z), lambda a, b: np.square(a)),
        "reciprocal": (lambda z, w: sm.reciprocal(z), lambda a, b: np.reciprocal(a)),
        "abs": (lambda z, w: sm.abs(z), lambda a, b: np.abs(a)),
        "sign": (lambda z, w: sm.sign(z), lambda a, b: np.sign(a)),
        "real": (lambda z, w: sm.real(z), lambda a, b: a.real),
        "imag": (lambda z, w: sm.imag(z), lambda a, b: a.imag),
        "conj": (lambda z, w: sm.conj(z), lambda a, b: np.conj(a)),
        "angle": (lambda z, w: sm.angle(z), lambda a, b: np.angle(a)),
        "eq": (lambda z, w: sm.eq(z, w), np.equal),
        "neq": (lambda z, w: sm.neq(z, w), np.not_equal),
        "isnan": (lambda z, w: sm.isnan(z), lambda a, b: np.isnan(a)),
        "isinf": (lambda z, w: sm.isinf(z), lambda a, b: np.isinf(a)),
        "isfinite": (lambda z, w: sm.isfinite(z), lambda a, b: np.isfinite(a)),
    }


def _math_ops() -> dict:
    from workbench.core.scalar import math as sm
    from workbench.core.scalar.basic import as_scalar

    names = ["exp", "log", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
             "cosh", "tanh", "arcsinh", "arccosh", "arctanh"]
    ops = {n: ((lambda op: lambda z, w: op(z))(getattr(sm, n)),
               (lambda fn: lambda a, b: fn(a))(getattr(np, n))) for n in names}
    ops["pow"] = (lambda z, w: sm.pow(z, w), np.power)
    ops["pow_int"] = (lambda z, w: sm.pow(z, as_scalar(3, "int8")),
                      lambda a, b: a**3)
    return ops


#: exact in both (no rounding, or one correctly rounded operation)
EXACT_COMPLEX = ("add", "sub", "neg", "real", "imag", "conj", "eq", "neq", "isnan", "isinf",
                 "isfinite")


def complex_relative_error(got, want):
    """|got - want| / |want| on complex moduli, where `want` is finite."""
    finite = np.isfinite(want)
    scale = np.maximum(np.abs(want[finite]), np.finfo(want.real.dtype).tiny)
    return np.abs(got[finite] - want[finite]) / scale


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_arithmetic_follows_numpy_including_inf_and_nan(dtype):
    """Every pair of parts from zeros, finite, huge, tiny, inf and NaN. Exact ops match
    NumPy exactly; products and quotients within 4 eps (complex modulus; NumPy's SIMD
    loops may use FMA) and non-finite exactly where NumPy's are."""
    ops = _arith_ops()
    f = complex_function(dtype, ops)
    parts = np.array([0.0, -0.0, 1.5, -2.0, 0.1, np.inf, -np.inf, np.nan, 1e-300, 3e38])
    re, im = np.meshgrid(parts, parts)
    grid = np.empty(re.size, dtype=dtype)  # (re + 1j * im would turn inf parts into nan)
    grid.real, grid.imag = re.ravel(), im.ravel()
    z, w = np.repeat(grid, grid.size), np.tile(grid, grid.size)
    eps = np.finfo(grid.real.dtype).eps
    with np.errstate(all="ignore"):
        for (name, (_, reference)), got in zip(ops.items(), f(z, w)):
            want = np.asarray(reference(z, w))
            label = f"{name}[{dtype}]"
            assert got.dtype == want.dtype, (label, got.dtype, want.dtype)
            if name in EXACT_COMPLEX:
                assert_complex_equal(got, want, 0, label)
                continue
            np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want), err_msg=label)
            err = complex_relative_error(got, want)
            assert err.max() <= 4 * eps, (label, float(err.max()))


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_functions_match_numpy(dtype):
    ops = _math_ops()
    f = complex_function(dtype, ops)
    rng = np.random.default_rng(3)
    n = 2000
    z = (rng.normal(scale=3, size=n) + 1j * rng.normal(scale=3, size=n)).astype(dtype)
    w = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)
    z[:4] = [0, 1, -2, 0.5j]  # on the branch cuts and at zero
    w[:4] = [0, 2, -1, 3]
    rtol = {"complex128": 1e-13, "complex64": 2e-5}[dtype]
    with np.errstate(all="ignore"):
        for (name, (_, reference)), got in zip(ops.items(), f(z, w)):
            want = np.asarray(reference(z, w))
            assert got.dtype == want.dtype, name
            scale = np.maximum(np.abs(want), 1e-300)
            err = np.abs(got - want) / scale
            assert np.nanmax(err) <= rtol, (name, dtype, float(np.nanmax(err)))
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
