"""Bundles: the node kinds a graph is missing compile as a few translation units, and
the cache still finds every kind on its own (through its alias) in later graphs and
processes. Kinds whose C clashes in one unit fall back to a module each."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import Mode
from workbench.core.graph.basic import Apply
from workbench.core.graph.op import Op
from workbench.core.link.c import bundle, compiler, tiers
from workbench.core.link.c.cache import CorruptCacheEntryWarning, ModuleCache
from workbench.core.link.c.codegen import node_source
from workbench.core.link.c.compiler import CompileError, has_compiler
from workbench.core.link.c.interface import COp
from workbench.core.link.c.linker import CLinker
from workbench.core.scalar.basic import get_scalar_type

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")


def c_function(inputs, outputs, cache):
    return wb.function(inputs, outputs, mode=Mode(linker=CLinker(cache=cache)))


def mixed_graph():
    """Elemwise, a reduction (built with -fwrapv), a view and a dot: several kinds."""
    x, w = wt.dmatrix("x"), wt.dmatrix("w")
    h = wt.tanh(wt.dot(x, w))
    return [x, w], [h.sum(axis=1), h.T * 2, wt.exp(x).max()]


def mixed_values(f):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
    h = np.tanh(x @ w)
    got = f(x, w)
    np.testing.assert_allclose(got[0], h.sum(axis=1))
    np.testing.assert_allclose(got[1], h.T * 2)
    np.testing.assert_allclose(got[2], np.exp(x).max())


def test_missing_kinds_compile_in_a_few_modules_and_later_graphs_reuse_each_kind(tmp_path):
    cache = ModuleCache(tmp_path / "c")
    f = c_function(*mixed_graph(), cache)
    mixed_values(f)
    report = f.linker.report
    kinds = len({node_source(n).source for n in report.c_nodes})
    assert report.compiled == kinds >= 5
    assert 1 <= report.modules_built <= bundle.default_workers()
    # the same kinds in a new graph: nothing to compile, in memory
    g = c_function(*mixed_graph(), cache)
    assert (g.linker.report.compiled, g.linker.report.memory_hits) == (0, kinds)
    # a fresh process (a new cache object on the same directory) finds each kind on
    # disk, including a graph made of only some of them (once the -O3 build that
    # follows the quick one is there: tiers.py)
    tiers.wait_for_upgrades()
    fresh = ModuleCache(tmp_path / "c")
    x, w = wt.dmatrix("x"), wt.dmatrix("w")
    part = c_function([x, w], wt.tanh(wt.dot(x, w)).T * 2, fresh)
    assert part.linker.report.compiled == 0
    assert part.linker.report.disk_hits == len(part.linker.report.c_nodes) >= 2
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 2))
    np.testing.assert_allclose(part(a, b), np.tanh(a @ b).T * 2)


def test_blas_and_lapack_kinds_share_a_bundle(tmp_path):
    # both kinds' support holds the BLAS declarations and the thread policy
    # (blas_threads.py): guarded, one translation unit holds both once
    from workbench.core.link.c.ops.lapack_base import lapack_available

    if not lapack_available():
        pytest.skip("no LAPACK found here")
    k, y, x, w = wt.dmatrix("k"), wt.dvector("y"), wt.dmatrix("x"), wt.dmatrix("w")
    graph = [k, y, x, w], [wt.linalg.solve(k, y), wt.dot(x, w)]
    nodes = wb.function(*graph, linker="py").maker.fgraph.toposort()
    assert {type(n.op).__name__ for n in nodes} == {"Solve", "Dot"}
    cache = ModuleCache(tmp_path / "c")
    _, stats = bundle.node_functions([(n, node_source(n)) for n in nodes], cache, workers=1)
    assert (stats.compiled, stats.modules_built, stats.bundle_fallbacks) == (2, 1, 0)
    f = c_function(*graph, cache)  # the bundle's kinds, from memory
    assert f.linker.report.memory_hits == 2
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(4, 4)) + 4 * np.eye(4), rng.normal(size=4)
    p, q = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    got = f(a, b, p, q)
    np.testing.assert_allclose(got[0], np.linalg.solve(a, b), rtol=1e-12)
    np.testing.assert_allclose(got[1], p @ q, rtol=1e-12)


def test_kinds_whose_support_embeds_another_kinds_share_a_bundle(tmp_path):
    # Expm's support is LAPACK's plus its own, QR's per-dtype helpers LAPACK's plus its
    # own, a Blockwise's holds its core Op's (Dot): each embedded block is guarded, so
    # one translation unit holds them beside SVD, Solve and Dot (an audit compiled one
    # kind of every C-implemented op class of the catalogue together this way)
    from workbench.core.link.c.ops.lapack_base import lapack_available
    from workbench.core.tensor.linalg.products import Dot

    if not lapack_available():
        pytest.skip("no LAPACK found here")
    a, b, y, s = wt.dmatrix("a"), wt.dmatrix("b"), wt.dvector("y"), wt.dtensor3("s")
    outs = [wt.linalg.expm(a), wt.linalg.svd(a, compute_uv=False), wt.linalg.solve(a, y),
            wt.linalg.qr(a)[1], wt.dot(a, b), wt.Blockwise(Dot(), "(m,k),(k,n)->(m,n)")(s, s)]
    graph = [a, b, y, s], outs
    nodes = wb.function(*graph, linker="py").maker.fgraph.toposort()
    assert {type(n.op).__name__ for n in nodes} == {"Expm", "SVD", "Solve", "QR", "Dot",
                                                    "Blockwise"}
    cache = ModuleCache(tmp_path / "c")
    _, stats = bundle.node_functions([(n, node_source(n)) for n in nodes], cache, workers=1)
    assert (stats.compiled, stats.modules_built, stats.bundle_fallbacks) == (6, 1, 0)
    f = c_function(*graph, cache)
    assert f.linker.report.memory_hits == 6
    assert f.linker.report.bundle_fallbacks == 0
    rng = np.random.default_rng(3)
    m, n = rng.normal(size=(4, 4)) / 4 + 2 * np.eye(4), rng.normal(size=(4, 3))
    v, t = rng.normal(size=4), rng.normal(size=(2, 3, 3))
    got = f(m, n, v, t)
    w, q = np.linalg.eig(m)
    np.testing.assert_allclose(got[0], ((q * np.exp(w)) @ np.linalg.inv(q)).real, rtol=1e-10)
    np.testing.assert_allclose(got[1], np.linalg.svd(m, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(got[2], np.linalg.solve(m, v), rtol=1e-12)
    np.testing.assert_allclose(np.abs(got[3]), np.abs(np.linalg.qr(m)[1]), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(got[4], m @ n, rtol=1e-12)
    np.testing.assert_allclose(got[5], t @ t, rtol=1e-12)


def test_plan_groups_kinds_by_flags_balances_them_and_is_deterministic():
    x, w = wt.dmatrix("x"), wt.dmatrix("w")
    outs = [wt.exp(x), wt.log(x), wt.sin(x) + w, wt.dot(x, w), x.sum(), (x * 2).T]
    f = wb.function([x, w], outs, linker="py")
    nodes = f.maker.fgraph.toposort()
    cache = ModuleCache()
    kinds = [bundle.Kind(n, node_source(n), bundle.kind_key(cache, node_source(n)))
             for n in nodes]
    plan = bundle.plan_bundles(kinds, workers=2)
    assert sorted(k.key for b in plan for k in b) == sorted(k.key for k in kinds)
    assert len(plan) == 2
    assert all(len({k.group for k in b}) == 1 for b in plan)
    assert bundle.plan_bundles(list(reversed(kinds)), workers=2) == plan
    assert len(bundle.plan_bundles(kinds, workers=1)) == 1
    # a flag that changes what code means keeps kinds apart; -fwrapv and linker flags
    # do not
    special = bundle.Kind(nodes[0], node_source(nodes[0]), "f" * 32)
    special.source.extra_flags = [*special.source.extra_flags, "-DWB_TEST_FLAG"]
    assert len(bundle.plan_bundles([*kinds, special], workers=1)) == 2


def test_a_bundle_holds_each_support_block_once():
    x = wt.dvector("x")
    f = wb.function([x], [wt.exp(x), wt.log(x), wt.sin(x)], linker="py")
    cache = ModuleCache()
    kinds = [bundle.Kind(n, node_source(n), bundle.kind_key(cache, node_source(n)))
             for n in f.maker.fgraph.toposort()]
    src = bundle.bundle_source(kinds)
    assert len(src.capsules) == 3 and src.version
    assert src.source.count("#define WB_SCALAR_SUPPORT") == 1
    assert src.source.count("PyInit_wbbundle") == 1
    assert all(f"wb_node_run_{k.tag}" in src.source for k in kinds)


# -- two user Ops whose C cannot share a translation unit --------------------------



def kinds_of(nodes):
    cache = ModuleCache()
    found = {}
    for n in nodes:
        src = node_source(n)
        found.setdefault(bundle.kind_key(cache, src), bundle.Kind(n, src,
                                                                  bundle.kind_key(cache, src)))
    return list(found.values())


def test_nodes_differing_only_in_static_lengths_are_one_kind_and_still_checked(tmp_path):
    # the four products of an MLP-like graph differ only in static lengths: one kind
    a = wt.tensor("float64", shape=(None, 784), name="a")
    b = wt.tensor("float64", shape=(784, None), name="b")
    c, d = wt.dmatrix("c"), wt.dmatrix("d")
    f = wb.function([a, b, c, d], [wt.dot(a, b), wt.dot(c, d)], linker="py")
    dots = [n for n in f.maker.fgraph.toposort() if "Dot" in str(n.op)]
    assert len(dots) == 2 and len(kinds_of(dots)) == 1
    # the static lengths are still checked by the compiled code (trusted inputs skip the
    # Python filter): the message names the input and the Type it expected
    g = c_function([a, b], wt.dot(a, b), ModuleCache(tmp_path / "c"))
    g.trust_input = True
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2, 784)), rng.normal(size=(784, 3))
    np.testing.assert_allclose(g(x, y), x @ y)
    with pytest.raises(TypeError, match=r"input 0 of .*TensorType\(float64, \(\?, 784\)\), got "
                                        r"length 5 in dimension 1"):
        g(rng.normal(size=(2, 5)), y)


def test_kinds_sharing_support_code_share_a_bundle():
    # softmax and log-softmax (one float type: its row kernels only) compile their
    # shared row kernels once, in one bundle. The kinds are chosen so that balancing
    # alone would split them (the dot and the tanh kind each open a bundle first, and
    # the second row kernel costs full price beside the dot); only the discount for
    # shared support puts them together.
    x, y = wt.fmatrix("x"), wt.fmatrix("y")
    outs = [wt.softmax(x, axis=1), wt.log_softmax(y, axis=1), x.sum(axis=0), y.sum(axis=1),
            wt.tanh(x) * y, wt.dot(x, y)]
    f = wb.function([x, y], outs, linker="py")
    kinds = kinds_of(f.maker.fgraph.toposort())
    plan = bundle.plan_bundles(kinds, workers=2)
    assert len(plan) == 2
    rows = {i for i, b in enumerate(plan) for k in b if "Softmax" in str(k.node.op)}
    assert len(rows) == 1
    source = bundle.bundle_source(plan[rows.pop()]).source
    assert "WB_ROW_KERNELS_FLOAT32" in source and "WB_ROW_KERNELS_FLOAT64" not in source
    assert "immintrin.h" not in source  # the float64 kernels' AVX-512 exp is not parsed
    # sums over other axes of the same Types are one kind (the axes are run-time data)
    assert len([k for k in kinds if "Sum" in str(k.node.op)]) == 1
    # sums of one dtype into other ranks have the same fold helpers: one copy per bundle
    g = wb.function([x], [x.sum(axis=0), x.sum()], linker="py")
    sums = [k for k in kinds_of(g.maker.fgraph.toposort()) if "Sum" in str(k.node.op)]
    assert len(sums) == 2
    assert bundle.bundle_source(sums).source.count("static npy_float32 wb_leaf_contig_") == 1

class Scale(Op, COp):
    """x * k on float64 scalars; its support code defines a helper (or a macro) whose
    name does not depend on k, so two instances clash in one translation unit."""

    __props__ = ("k", "style")

    def __init__(self, k: int, style: str) -> None:
        self.k, self.style = k, style

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.float64(inputs[0] * self.k)

    def c_support_code(self):
        if self.style == "function":
            return f"static double wb_test_scale(double v) {{ return v * {self.k}; }}"
        return f"#define WB_TEST_SCALE {self.k}"

    def c_code(self, node, name, inputs, outputs, sub):
        if self.style == "function":
            return f"{outputs[0]} = wb_test_scale({inputs[0]});"
        # in one unit, both functions would come after both definitions: both 3
        return f"{outputs[0]} = {inputs[0]} * WB_TEST_SCALE;"

    def c_code_cache_version(self):
        return (1,)


@pytest.mark.parametrize("style", ["function", "macro"])
def test_kinds_whose_c_clashes_fall_back_to_a_module_each(tmp_path, style, monkeypatch):
    monkeypatch.setattr(bundle, "default_workers", lambda: 1)  # both kinds in one bundle
    t = get_scalar_type("float64")
    x = t("x")
    cache = ModuleCache(tmp_path / "c")
    f = c_function([x], [Scale(2, style)(x), Scale(3, style)(x)], cache)
    assert [float(v) for v in f(np.float64(5.0))] == [10.0, 15.0]
    assert f.linker.report.compiled == 2
    assert f.linker.report.modules_built == 2  # not one bundle: a module each
    # the fallback is counted where compile phases are shown, with no warning
    report = f.linker.report
    assert report.bundle_fallbacks == 1 and report.as_dict()["bundle_fallbacks"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = str(wb.profile(f, np.float64(5.0), calls=1)).split("Compile time:")[1]
    assert "in 2 module(s) (1 bundle(s) did not compile as one unit: their kinds " \
           "compiled a module each), " in text


def test_broken_c_in_one_kind_raises_its_own_error(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle, "default_workers", lambda: 1)

    class Broken(Scale):
        def c_code(self, node, name, inputs, outputs, sub):
            return f"{outputs[0]} = {inputs[0]} +* broken_c_of_the_test;"

    class Undefined(Scale):
        def c_code(self, node, name, inputs, outputs, sub):
            return f"{outputs[0]} = undefined_function_of_the_test({inputs[0]});"

    t = get_scalar_type("float64")
    x = t("x")
    with pytest.raises(CompileError, match="(?s)module 'wbnode'.*broken_c_of_the_test") as info:
        c_function([x], [Broken(2, "function")(x), Scale(3, "function")(x)],
                   ModuleCache(tmp_path))
    assert "broken_c_of_the_test" in info.value.source_path.read_text()  # only this kind's C
    assert "wb_test_scale(" not in info.value.source_path.read_text().split("wb_node_run")[1]
    # C that compiles but does not load: the kind's own module names the symbol
    with pytest.raises(ImportError, match="(?s)wbnode.*undefined_function_of_the_test"):
        c_function([x], [Undefined(2, "macro")(x), Scale(3, "macro")(x)], ModuleCache(tmp_path))


def test_a_truncated_bundle_is_detected_and_rebuilt_in_a_new_process(tmp_path):
    code = textwrap.dedent("""
        import warnings, numpy as np, workbench as wb, workbench.tensor as wt
        x = wt.dvector("x")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = wb.function([x], [wt.cosh(x) * 3, x.sum()], linker="c")
            a = np.linspace(-1, 1, 5)
            got = f(a)
        assert np.allclose(got[0], np.cosh(a) * 3) and np.isclose(got[1], a.sum())
        r = f.linker.report
        print(r.compiled, r.disk_hits, r.modules_built,
              sum("corrupt" in str(w.message) for w in caught))
    """)
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(tmp_path))

    def run() -> list[int]:
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=240)
        assert res.returncode == 0, res.stderr
        return [int(v) for v in res.stdout.split()]

    compiled, disk_hits, modules, corrupt = run()
    assert (compiled, disk_hits, corrupt) == (2, 0, 0) and modules >= 1
    assert run() == [0, 2, 0, 0]
    bundles = list(tmp_path.rglob("wbbundle*.so"))
    assert len(bundles) == modules
    for so in bundles:
        so.write_bytes(so.read_bytes()[:1000])
    assert run() == [2, 0, modules, modules]  # each truncated module: one warning
    assert run() == [0, 2, 0, 0]


def test_load_entry_removes_a_corrupt_entry_with_a_warning(tmp_path):
    cache = ModuleCache(tmp_path)
    src = "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, " \
          "\"wbt\", NULL, -1, NULL};\nPyMODINIT_FUNC PyInit_wbt(void) { return " \
          "PyModule_Create(&m); }\n"
    path = cache.ensure_built(("t",), src, "wbt", version=(1,))
    key = cache.key(("t",), src, "wbt", version=(1,))
    path.write_bytes(b"truncated")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.load_entry(key, "wbt") is None
    assert any(issubclass(w.category, CorruptCacheEntryWarning) for w in caught)
    assert not cache.entry_dir(key).exists()
    cache.write_alias("some-kind", {"entry": key})
    assert cache.read_alias("some-kind") == {"entry": key}
    assert cache.clear() == 0 and cache.read_alias("some-kind") is None


@pytest.mark.parametrize("tiered", ["1", "0"])
def test_progress_listeners_hear_the_kinds_compile(tmp_path, monkeypatch, tiered):
    """What moves the CLI's progress bar: (kinds done, kinds to compile), from none
    (heard as the compilers start, so the bar shows while they run) up to all; tiered
    (the quick -O1 builds, as every function compiles) or not."""
    monkeypatch.setenv(tiers.TIERED_ENV, tiered)
    heard = []
    monkeypatch.setattr(bundle, "progress_listeners",
                        [lambda done, total: heard.append((done, total))])
    f = c_function(*mixed_graph(), ModuleCache(tmp_path / "c"))
    kinds = f.linker.report.compiled
    assert heard[0] == (0, kinds) and heard[-1] == (kinds, kinds)
    assert [done for done, _ in heard] == sorted(done for done, _ in heard)
    mixed_values(f)
    tiers.wait_for_upgrades()  # (the -O3 builds that follow quick ones reach the disk)
    heard.clear()
    c_function(*mixed_graph(), ModuleCache(tmp_path / "c"))  # every kind on disk
    assert heard == []


@pytest.mark.parametrize("tiered", ["1", "0"])
def test_with_gcc_the_progress_moves_once_per_kind_within_one_bundle(tmp_path, monkeypatch,
                                                                     tiered):
    """Issue 16: a cold compile shows progress per node kind, not per compiler run. With
    one compiler run for every kind, the listener still hears each count 1, 2, ..., n
    (the compiler's dump of each finished function, compile_progress.py), in the quick
    -O1 build of tiered compilation too (its kinds' functions inlined into their
    trampolines)."""
    if not compiler.reports_functions():
        pytest.skip("this C compiler does not report finished functions (not GCC)")
    monkeypatch.setenv(tiers.TIERED_ENV, tiered)
    held: list = []
    monkeypatch.setattr(tiers, "in_background", held.append)
    heard = []
    monkeypatch.setattr(bundle, "progress_listeners",
                        [lambda done, total: heard.append((done, total))])
    monkeypatch.setattr(bundle, "default_workers", lambda: 1)  # one bundle for all kinds
    f = c_function(*mixed_graph(), ModuleCache(tmp_path / "c"))
    kinds = f.linker.report.compiled
    assert kinds >= 4 and f.linker.report.modules_built == 1
    assert len(held) == (1 if tiered == "1" else 0)  # the -O3 build, held back
    assert [done for done, _ in heard] == list(range(kinds + 1))
    assert not list(tmp_path.rglob("*.final"))  # the compiler's dumps are not kept
    mixed_values(f)
    heard.clear()
    for work in held:  # the -O3 build in the background moves no bar
        work()
    assert heard == []
    mixed_values(f)


def test_reporting_functions_names_what_the_compiler_finished(tmp_path):
    if not compiler.reports_functions():
        pytest.skip("this C compiler does not report finished functions (not GCC)")
    from workbench.core.link.c import compile_progress

    src = ("#include <Python.h>\nstatic int wb_one(void) { return 1; }\n"
           "static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"wbr\", NULL, -1, NULL};\n"
           "PyMODINIT_FUNC PyInit_wbr(void) { return wb_one() ? PyModule_Create(&m) : 0; }\n")
    names = []
    with compile_progress.reporting_functions(names.append):
        compiler.compile_module(src, "wbr", out_dir=tmp_path)
    assert "PyInit_wbr" in names
    assert not (tmp_path / "wb-function-dumps").exists()
    names.clear()
    compiler.compile_module(src, "wbr", out_dir=tmp_path / "again")  # nobody listening
    assert names == []


def test_a_kind_is_keyed_by_the_blas_compiled_code_links(monkeypatch, tmp_path):
    # exp(x) calls no BLAS, but its bundle may link one: under another WORKBENCH_BLAS
    # choice it must be another kind, never that bundle (a second OpenBLAS in-process)
    from workbench.core.link.c import blas_lib

    if not blas_lib.blas_available():
        pytest.skip("no BLAS found here: nothing to tell apart")
    x = wt.dvector("x")
    node = wb.function([x], wt.exp(x), linker="py").maker.fgraph.toposort()[0]
    cache = ModuleCache(tmp_path)
    monkeypatch.delenv(blas_lib.BLAS_ENV, raising=False)
    linked = bundle.kind_key(cache, node_source(node))
    monkeypatch.setenv(blas_lib.BLAS_ENV, "none")
    unlinked = bundle.kind_key(cache, node_source(node))
    assert linked != unlinked
    monkeypatch.delenv(blas_lib.BLAS_ENV)
    assert bundle.kind_key(cache, node_source(node)) == linked
