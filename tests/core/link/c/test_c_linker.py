"""The 'c' linker end to end: compiled nodes in a C loop, Python fallbacks inside the
same function, errors naming the node, lazy graphs, profiling, per-kind module reuse,
memory staying flat, and the processes and cache it shares."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import LinkerUnavailableError, available_linkers, get_linker
from workbench.core.link.c.compiler import has_compiler

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")


def chain(x, y):
    return wt.exp(x) * wt.sin(y) + x**2 / (1 + y * y) - wt.tanh(x * y)


def test_fused_chain_compiles_to_one_c_node_and_matches_numpy():
    x, y = wt.dvector("x"), wt.dvector("y")
    f = wb.function([x, y], chain(x, y), linker="c")
    assert [type(n.op).__name__ for n in f.linker.report.c_nodes] == ["Elemwise"]
    assert f.linker.report.py_nodes == []
    a, b = np.random.default_rng(0).normal(size=(2, 1000))
    np.testing.assert_allclose(f(a, b), np.exp(a) * np.sin(b) + a**2 / (1 + b * b)
                               - np.tanh(a * b), rtol=1e-14, atol=1e-15)
    assert "wb_node_run" in f.linker.generated_code
    assert f.linker.name == "c" and "c" in available_linkers()


def test_layouts_broadcasting_and_returned_values_stay_unchanged():
    x, y = wt.dmatrix("x"), wt.drow("y")
    f = wb.function([x, y], x * 2 + y, linker="c")
    rng = np.random.default_rng(1)
    a = rng.normal(size=(5, 7))
    for arg in (a, np.asfortranarray(a), a[::-1, ::2], a.T.copy().T, a[:, :0]):
        b = rng.normal(size=(1, arg.shape[1]))
        np.testing.assert_array_equal(f(arg, b), arg * 2 + b)
    first = f(a, np.ones((1, 7)))
    kept = first.copy()
    f(a * 3, np.zeros((1, 7)))  # the next call must not reuse the returned buffer
    np.testing.assert_array_equal(first, kept)


def test_zero_d_and_integer_semantics_follow_numpy():
    i, j = wt.lvector("i"), wt.lvector("j")
    f = wb.function([i, j], [i // j, i % j, wt.maximum(i, j)], linker="c")
    a = np.array([7, -7, 7, -7, 5, 0])
    b = np.array([2, 2, -2, -2, 0, 3])
    with np.errstate(all="ignore"):
        for got, want in zip(f(a, b), [a // b, a % b, np.maximum(a, b)]):
            np.testing.assert_array_equal(got, want)
    s = wt.dscalar("s")
    g = wb.function([s], ((s + 1) * 2 - 3) / 4, linker="c")
    out = g(np.array(2.0))
    assert isinstance(out, np.ndarray) and out.shape == () and out == 0.75


def test_nodes_without_c_run_perform_inside_the_compiled_function():
    x = wt.dmatrix("x")
    # cumsum has no C code: it runs through perform between two compiled nodes
    out = wt.cumsum(wt.exp(x), axis=1) * 2
    f = wb.function([x], out, linker="c")
    kinds = {type(n.op).__name__ for n, _ in f.linker.report.py_nodes}
    assert "CumOp" in kinds
    assert f.linker.report.c_nodes
    a = np.random.default_rng(2).normal(size=(3, 4))
    np.testing.assert_allclose(f(a), np.cumsum(np.exp(a), axis=1) * 2)


def test_bad_inputs_raise_python_errors_naming_the_input():
    x = wt.dvector("x")
    f = wb.function([x], wt.exp(x), linker="c")
    with pytest.raises((TypeError, ValueError), match="x"):
        f(np.ones((2, 2)))
    with pytest.raises(TypeError):
        f("not a number")
    # trusting the input skips the Python filter: the C extract check still refuses it
    g = wb.function([x], wt.exp(x), linker="c", trust_input=True)
    with pytest.raises(TypeError, match="input 0 of Elemwise"):
        g(np.ones((2, 2)))
    with pytest.raises(TypeError, match="expected TensorType\\(float64"):
        g(np.ones(3, dtype=np.float32))


def test_runtime_errors_are_annotated_with_the_node():
    x, y = wt.dvector("x"), wt.dvector("y")
    f = wb.function([x, y], x + y, linker="c")
    with pytest.raises(ValueError, match="broadcast") as info:
        f(np.ones(3), np.ones(4))
    assert any("Apply node that caused the error" in note
               for note in getattr(info.value, "__notes__", []))
    assert f(np.ones(2), np.ones(2)).tolist() == [2.0, 2.0]  # the function still works


@pytest.mark.parametrize("name", ['");}system("touch {canary}");{printf("',
                                  "%s%s%s%s%s%n", 'quote " and \\ back\nslash'])
def test_an_op_name_reaches_the_c_code_as_data_never_as_code(name, tmp_path):
    # (issue 14: a scalar op's name was pasted into C string literals and formats)
    from workbench.core.scalar.basic import upcast_out
    from workbench.core.scalar.math import Mul
    from workbench.core.tensor.elemwise import Elemwise

    name = name.replace("{canary}", str(tmp_path / "PWNED"))
    x, y = wt.dvector("x"), wt.dvector("y")
    f = wb.function([x, y], Elemwise(Mul(upcast_out, name=name))(x, y), linker="c",
                    mode="FAST_COMPILE")
    assert f.linker.report.py_nodes == []
    assert all(name not in src.source for src in f.linker.report.sources.values())
    with pytest.raises(ValueError) as info:
        f(np.ones(3), np.ones(4))
    assert str(info.value).startswith(f"Elemwise{{{name}}}"[:57])  # (long labels are cut)
    assert "input 1 has length 4" in str(info.value)
    assert list(tmp_path.iterdir()) == []
    assert f(np.ones(2), np.full(2, 3.0)).tolist() == [3.0, 3.0]


def test_lazy_ifelse_with_compiled_branches_runs_only_the_taken_branch():
    c, x = wt.bscalar("c"), wt.dvector("x")
    out = wb.ifelse(c, wt.exp(x) + 1, wt.log(x) * 2)
    f = wb.function([c, x], out, linker="c")
    assert f.linker.report.c_nodes
    a = np.array([1.0, 2.0])
    np.testing.assert_allclose(f(np.int8(1), a), np.exp(a) + 1)
    np.testing.assert_allclose(f(np.int8(0), a), np.log(a) * 2)


def test_profile_times_compiled_nodes_as_c():
    x = wt.dvector("x")
    f = wb.function([x], wt.exp(x) * 2, linker="c", profile=True)
    f(np.ones(100))
    f(np.ones(100))
    impls = {t.impl for t in f.thunks}
    assert impls == {"c"}
    assert sum(f.vm.node_calls.values()) == 2 * len(f.thunks)


def test_shared_variables_and_updates():
    w = wb.shared(np.zeros(3), name="w")
    x = wt.dvector("x")
    f = wb.function([x], (w * x).sum(), updates=[(w, w + x)], linker="c")
    for _ in range(3):
        f(np.ones(3))
    np.testing.assert_array_equal(w.get_value(), [3.0, 3.0, 3.0])


def test_a_new_graph_of_known_node_kinds_compiles_nothing():
    x, y = wt.fvector("x"), wt.fvector("y")
    wb.function([x, y], wt.sqrt(x * x + y * y), linker="c")
    u, v = wt.fvector("u"), wt.fvector("v")
    g = wb.function([u, v], wt.sqrt(u * u + v * v), linker="c")
    assert g.linker.report.compiled == 0
    assert g.linker.report.memory_hits >= 1


def test_unknown_linker_and_missing_compiler_are_clear(tmp_path):
    with pytest.raises(ValueError, match="unknown linker"):
        get_linker("fortran")
    code = textwrap.dedent("""
        import warnings, numpy as np
        import workbench as wb, workbench.tensor as wt
        from workbench.core.compile.mode import LinkerUnavailableError
        x = wt.dvector("x")
        try:
            wb.function([x], x + 1, linker="c")
        except LinkerUnavailableError as exc:
            print("refused:", exc)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = wb.function([x], x + 1, linker=None)
            g = wb.function([x], x * 2, linker=None)
        print("default:", f.maker.linker_name, g.maker.linker_name, f(np.ones(2)).tolist())
        print("warnings:", sum("C compiler" in str(w.message) for w in caught))
    """)
    env = dict(os.environ, CC=str(tmp_path / "no-such-cc"))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "refused: linker 'c' is unavailable" in res.stdout
    assert "default: py py [2.0, 2.0]" in res.stdout
    assert "warnings: 1" in res.stdout
    assert LinkerUnavailableError is not None


def test_many_calls_keep_resident_memory_flat():
    resource = pytest.importorskip("resource")
    x, y = wt.dvector("x"), wt.dvector("y")
    f = wb.function([x, y], chain(x, y), linker="c")
    a, b = np.ones(10), np.ones(10)
    for _ in range(2000):
        f(a, b)

    def rss_mb() -> float:
        with open(f"/proc/{os.getpid()}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    if not os.path.exists(f"/proc/{os.getpid()}/statm"):
        pytest.skip("no /proc here to read resident memory")
    before = rss_mb()
    for _ in range(100_000):
        f(a, b)
    assert rss_mb() - before < 5, "resident memory grew by 5 MB or more over 1e5 calls"
    assert resource is not None


def test_two_processes_compiling_one_graph_share_the_cache(tmp_path):
    code = textwrap.dedent("""
        import numpy as np, workbench as wb, workbench.tensor as wt
        x = wt.dvector("x")
        f = wb.function([x], wt.cosh(x) * 3 - wt.arcsinh(x), linker="c")
        a = np.linspace(-1, 1, 5)
        assert np.allclose(f(a), np.cosh(a) * 3 - np.arcsinh(a))
        print("ok", f.linker.report.compiled, f.linker.report.disk_hits)
    """)
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    compiled = [int(o[0].split()[1]) for o in outs]
    assert sum(compiled) >= 1  # at least one built the node; the other may have waited
    entries = [p for p in (tmp_path / "cache").rglob("manifest.json")]
    # one entry for the node kind and one for the runtime
    assert len(entries) == 2


def test_c_dtype_row_bfloat16_needs_a_casting_mode_or_falls_back_to_py():
    from workbench.core import dtypes

    assert not dtypes.is_supported("c", "bfloat16")
    assert dtypes.is_supported("c", "float32") and dtypes.is_supported("c", "uint64")
    x = wt.TensorType("bfloat16", (None,))("x")
    with pytest.raises(dtypes.UnsupportedDtypeError, match="bfloat16"):
        wb.function([x], x * 2, linker="c")
    # no linker named: the graph is linked by the Python linker instead
    f = wb.function([x], x * 2)
    assert f.maker.linker_name == "py"
    data = np.array([1.5, 2.0], dtype=x.type.numpy_dtype)
    np.testing.assert_array_equal(f(data).astype(float), [3.0, 4.0])
    # with a casting mode the arithmetic happens in float32, in C, between visible casts
    with dtypes.casting_mode_as("upcast"):
        g = wb.function([x], x * 2, linker="c")
    assert g(data).dtype == x.type.numpy_dtype
    np.testing.assert_array_equal(g(data).astype(float), [3.0, 4.0])
    assert any("float32" in str(n.outputs[0].type) for n in g.linker.report.c_nodes)


@pytest.mark.parametrize("mode", ["upcast", "cast"])
@pytest.mark.parametrize("small", ["float16", "bfloat16"])
def test_casts_to_a_dtype_c_lacks_follow_the_casting_mode(mode, small):
    """A cast to float16 names the dtype in the Op itself (also once fused into a loop):
    under a casting mode the loop computes in float32 and a visible boundary cast makes
    the float16 result, as for float16 inputs."""
    from workbench.core import dtypes

    x = wt.fvector("x")
    plain = wt.cast(x, small)
    fused = wt.cast(x * 3, small) + 1
    if small == "bfloat16":  # (float16 runs in Python without a casting mode: below)
        with pytest.raises(dtypes.UnsupportedDtypeError, match=small):
            wb.function([x], fused, linker="c")
    data = np.array([1.0001, -2.5, 300.7], dtype="float32")
    want = wb.function([x], [plain, fused], linker="py")(data)
    with dtypes.casting_mode_as(mode):
        f = wb.function([x], [plain, fused], linker="c")
    got = f(data)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.dtype(plain.type.numpy_dtype)
        np.testing.assert_allclose(g.astype(float), w.astype(float), rtol=1e-2)
    # the arithmetic ran in C in float32; only the boundary casts run in Python
    assert any("float32" in str(n.outputs[0].type) for n in f.linker.report.c_nodes)
    assert all(f"Cast{{{small}}}" in str(node.op) for node, _ in f.linker.report.py_nodes)


def test_sum_to_shape_passes_through_or_sums_in_c():
    from workbench.core.tensor.elemwise import SumToShape

    g, n0, n1 = wt.dmatrix("g"), wt.lscalar("n0"), wt.lscalar("n1")
    f = wb.function([g, n0, n1], SumToShape()(g, n0, n1) * 1.0, linker="c")
    assert "SumToShape" in {type(n.op).__name__ for n in f.linker.report.c_nodes}
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(f(a, 2, 3), a)
    np.testing.assert_array_equal(f(a, 1, 3), a.sum(axis=0, keepdims=True))
    np.testing.assert_array_equal(f(a, 1, 1), a.sum(keepdims=True))
    with pytest.raises(ValueError, match="cannot be summed"):
        f(a, 2, 2)


def test_the_c_call_path_behaves_like_the_python_one():
    x, y = wt.dvector("x"), wt.dvector("y")
    f = wb.function([x, y], [x + y, x * y], linker="c")
    assert type(f._call).__name__ == "FastCall"  # the call itself runs in C
    a, b = np.arange(3.0), np.ones(3)
    assert [v.tolist() for v in f(a, b)] == [[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]]
    # anything the fast path does not take goes through the Python path, same results
    assert [v.tolist() for v in f(y=b, x=a)] == [[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]]
    assert f([0.0, 1.0, 2.0], [1, 1, 1])[0].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="takes 2 argument"):
        f(a, b, b)
    with pytest.raises(ValueError, match="Bad input argument 0 \\('x'\\)"):
        f(np.ones((2, 2)), b)
    # updates of shared variables and a single output
    w = wb.shared(np.zeros(3), name="w")
    g = wb.function([x], w.sum(), updates=[(w, w + x)], linker="c")
    assert type(g._call).__name__ == "FastCall"
    for _ in range(4):
        g(np.ones(3))
    assert w.get_value().tolist() == [4.0, 4.0, 4.0]
    # switching trust_input on and off rebuilds the call path
    g.trust_input = True
    assert g.trust_input and type(g._call).__name__ == "FastCall"
    g.trust_input = False
    g([1, 1, 1])  # a list: converted by the Python filter
    assert w.get_value().tolist() == [5.0, 5.0, 5.0]
    # profiled functions keep the Python path (it times the run)
    p = wb.function([x], x + 1, linker="c", profile=True)
    assert p._call == p._call_python


def test_the_c_call_path_is_called_straight_from_the_functions_class():
    """CPython calls a class's `__call__` from the type's slot: a Function with a C call
    path gets a class of its own whose `__call__` is that path (no property or attribute
    lookup per call); it is still a Function, and toggling trust_input never stacks
    classes."""
    from workbench.core.compile.function import Function

    x = wt.dvector("x")
    f = wb.function([x], x * 2, linker="c")
    assert isinstance(f, Function) and type(f).__name__ == "Function"
    assert type(f).__dict__["__call__"] is f._call
    for _ in range(3):
        f.trust_input = not f.trust_input
        assert type(f).__mro__[1] is Function
        assert type(f).__dict__["__call__"] is f._call
    assert f(np.arange(3.0)).tolist() == [0.0, 2.0, 4.0]
    py = wb.function([x], x * 2, linker="py")
    assert type(py) is Function and py(np.arange(3.0)).tolist() == [0.0, 2.0, 4.0]
    profiled = wb.function([x], x * 2, linker="c", profile=True)
    assert type(profiled) is Function


def test_float16_nodes_run_their_python_implementation_inside_the_c_loop():
    """Without a casting mode a float16 graph links with linker="c": its float16 nodes
    run `perform` (NumPy's float16 arithmetic, rounded after every operation, so the
    values are the py linker's bit for bit), the others C; the report says which."""
    h, d = wt.vector("h", "float16"), wt.dvector("d")
    outputs = [wt.exp(h) * 3 + h.sum(), d * 2, wt.cast(d, "float16") / 3]
    f = wb.function([h, d], outputs, linker="c")
    reference = wb.function([h, d], outputs, linker="py")
    hv = np.array([0.1, 1.7, -2.3], dtype="float16")
    dv = np.array([1.0, 2.5, 1e-3])
    for got, want in zip(f(hv, dv), reference(hv, dv)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    report = f.linker.report
    assert report.c_nodes and report.py_nodes
    for _, why in report.py_nodes:
        assert "no C arithmetic for float16" in why and "Python implementation" in why
    assert all("float16" not in str(v.type) for n in report.c_nodes
               for v in (*n.inputs, *n.outputs))
    assert wb.function([h], h * 2).maker.linker_name == "c"  # the default stays C
