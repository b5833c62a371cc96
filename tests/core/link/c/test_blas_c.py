"""Dot, Gemm and Gemv in the C linker: one BLAS call each, values equal to NumPy's for
every layout (C, F, transposed and strided views, negative and zero strides, empty
dimensions), alpha/beta semantics (beta == 0 never reads the accumulated operand),
in-place updates, float32 and float64; other dtypes run `perform`. MatMul with batch
dimensions: a gemm per item, on every layout."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import Mode
from workbench.core.link.c import blas_lib
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.blas import Gemm, Gemv
from workbench.core.tensor.linalg import Dot
from workbench.core.tensor.linalg.products import MatMul

pytestmark = pytest.mark.skipif(not (has_compiler() and blas_lib.blas_available()),
                                reason="needs a C compiler and a BLAS")

#: exactly the nodes built here, no rewrites, compiled to C
C_ONLY = Mode(linker="c", rewriter=None)
TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    """The same values of a 2-d array `a` in every memory layout BLAS meets."""
    m, n = a.shape
    big = np.zeros((2 * m + 1, 3 * n + 1), a.dtype)
    big[: 2 * m : 2, : 3 * n : 3] = a
    flipped = np.ascontiguousarray(a[::-1])
    return {
        "C": a.copy(order="C"),
        "F": a.copy(order="F"),
        "transposed view": np.ascontiguousarray(a.T).T,
        "strided view": big[: 2 * m : 2, : 3 * n : 3],
        "row slice (ld > n)": np.pad(a, ((0, 0), (0, 3)))[:, :n],
        "negative stride": flipped[::-1],
    }


def vector_layouts(v: np.ndarray) -> dict[str, np.ndarray]:
    """The same values of a 1-d array in contiguous, strided and reversed layouts."""
    padded = np.zeros(3 * len(v), v.dtype)
    padded[::3] = v
    return {"contiguous": v.copy(), "strided": padded[::3], "reversed": v[::-1].copy()[::-1]}


def compiled(inputs, output, **kw):
    f = wb.function(inputs, output, mode=C_ONLY, **kw)
    return f, [type(n.op) for n in f.linker.report.c_nodes], f.linker.report.py_nodes


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot_of_every_rank_pair_and_layout_runs_blas_and_matches_numpy(dtype):
    x, y = wt.matrix("x", dtype), wt.matrix("y", dtype)
    u, v = wt.vector("u", dtype), wt.vector("v", dtype)
    f, c_ops, py = compiled([x, y, u, v], [wt.dot(x, y), wt.dot(x, u), wt.dot(v, y),
                                           wt.dot(u, v)])
    assert c_ops.count(Dot) == 4 and py == []
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 5)).astype(dtype)
    b = rng.standard_normal((5, 7)).astype(dtype)
    p = rng.standard_normal(5).astype(dtype)
    for la, a_ in layouts(a).items():
        for lb, b_ in layouts(b).items():
            np.testing.assert_allclose(f(a_, b_, p, p)[0], a @ b, **TOL[dtype],
                                       err_msg=f"{la} @ {lb}")
        for lp, p_ in vector_layouts(p).items():
            got = f(a_, b, p_, p_[::-1].copy()[::-1])
            np.testing.assert_allclose(got[1], a @ p, **TOL[dtype], err_msg=f"{la} @ {lp}")
            np.testing.assert_allclose(got[3], p @ p, **TOL[dtype], err_msg=f"{lp} . {lp}")
            assert got[0].dtype == dtype and got[3].shape == () and got[3].dtype == dtype
    # vector @ matrix: the product with the transposed matrix, any layout of either
    for label, b_ in layouts(b).items():
        for vlabel, p_ in vector_layouts(p).items():
            got = f(a, b_, p, p_)[2]
            np.testing.assert_allclose(got, p @ b, **TOL[dtype], err_msg=f"{vlabel} @ {label}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot_with_empty_and_broadcast_operands(dtype):
    x, y = wt.matrix("x", dtype), wt.matrix("y", dtype)
    u, v = wt.vector("u", dtype), wt.vector("v", dtype)
    f, _, _ = compiled([x, y, u, v], [wt.dot(x, y), wt.dot(x, u), wt.dot(u, v)])
    rng = np.random.default_rng(1)
    for m, k, n in [(0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0), (1, 1, 1), (1, 5, 1)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        p = rng.standard_normal(k).astype(dtype)
        mm, mv, vv = f(a, b, p, p)
        assert mm.shape == (m, n) and mv.shape == (m,)
        np.testing.assert_allclose(mm, a @ b, **TOL[dtype])
        np.testing.assert_allclose(mv, a @ p, **TOL[dtype])
        np.testing.assert_allclose(vv, p @ p, **TOL[dtype])
    # zero strides (a broadcast view): copied, never handed to BLAS as is
    a = np.broadcast_to(rng.standard_normal((1, 4)).astype(dtype), (3, 4))
    b = np.broadcast_to(rng.standard_normal((4, 1)).astype(dtype), (4, 5))
    p = np.broadcast_to(np.asarray(2, dtype), (4,))
    mm, mv, vv = f(a, b, p, p)
    np.testing.assert_allclose(mm, a @ b, **TOL[dtype])
    np.testing.assert_allclose(mv, a @ p, **TOL[dtype])
    np.testing.assert_allclose(vv, p @ p, **TOL[dtype])


def test_dot_misaligned_shapes_raise_numpys_message():
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    f, _, _ = compiled([x, y], wt.dot(x, y))
    with pytest.raises(ValueError, match=r"shapes \(2,3\) and \(4,5\) not aligned: 3 \(dim 1\) "
                                         r"!= 4 \(dim 0\)"):
        f(np.ones((2, 3)), np.ones((4, 5)))


def gemm_ref(z, alpha, x, y, beta):
    product = alpha * (x.astype(np.float64) @ y.astype(np.float64))
    return product if beta == 0 else product + beta * z


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (-0.5, 2.0), (2.0, 0.0), (1.0, -1.0)])
def test_gemm_alpha_beta_and_broadcast_accumulator(dtype, alpha, beta):
    z = wt.tensor(dtype, shape=(None, None), name="z")
    x, y = wt.matrix("x", dtype), wt.matrix("y", dtype)
    a, b = wt.scalar("a", dtype), wt.scalar("b", dtype)
    f, c_ops, py = compiled([z, a, x, y, b], Gemm()(z, a, x, y, b))
    assert c_ops == [Gemm] and py == []
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((6, 5)).astype(dtype)
    yv = rng.standard_normal((5, 4)).astype(dtype)
    for zshape in [(6, 4), (1, 4), (6, 1), (1, 1)]:
        zv = rng.standard_normal(zshape).astype(dtype)
        if beta == 0:
            zv[...] = np.nan  # beta == 0: z is not read, NaN included
        for label, x_ in layouts(xv).items():
            got = f(zv, np.asarray(alpha, dtype), x_, yv.T.copy().T, np.asarray(beta, dtype))
            np.testing.assert_allclose(got, gemm_ref(zv, alpha, xv, yv, beta), **TOL[dtype],
                                       err_msg=f"z {zshape}, x {label}")
    with pytest.raises(ValueError, match="cannot broadcast against the product"):
        f(np.ones((3, 4), dtype), np.asarray(1, dtype), xv, yv, np.asarray(1, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_empty_dimensions_give_beta_z(dtype):
    z, x, y = (wt.matrix(n, dtype) for n in "zxy")
    a, b = wt.scalar("a", dtype), wt.scalar("b", dtype)
    f, _, _ = compiled([z, a, x, y, b], Gemm()(z, a, x, y, b))
    one, three, zero = (np.asarray(v, dtype) for v in (1, 3, 0))
    zv = np.arange(6, dtype=dtype).reshape(2, 3)
    empty_k = (np.ones((2, 0), dtype), np.ones((0, 3), dtype))
    np.testing.assert_array_equal(f(zv, one, *empty_k, three), 3 * zv)
    np.testing.assert_array_equal(f(np.full((2, 3), np.nan, dtype), one, *empty_k, zero),
                                  np.zeros((2, 3)))
    assert f(np.ones((0, 3), dtype), one, np.ones((0, 4), dtype), np.ones((4, 3), dtype),
             one).shape == (0, 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_inplace_writes_into_the_accumulator_of_any_layout(dtype):
    z, x, y = (wt.matrix(n, dtype) for n in "zxy")
    a, b = wt.scalar("a", dtype), wt.scalar("b", dtype)
    f, c_ops, _ = compiled([wb.In(z, mutable=True), a, x, y, b],
                           Gemm(inplace=True)(z, a, x, y, b))
    assert c_ops == [Gemm]
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 6)).astype(dtype)
    yv = rng.standard_normal((6, 5)).astype(dtype)
    zv = rng.standard_normal((4, 5)).astype(dtype)
    alpha = np.asarray(-1.5, dtype)
    for beta in (0.5, 0.0):
        want = gemm_ref(zv, -1.5, xv, yv, beta)
        for label, z_ in layouts(zv).items():
            got = f(z_, alpha, xv, yv, np.asarray(beta, dtype))
            np.testing.assert_allclose(got, want, **TOL[dtype], err_msg=label)
            np.testing.assert_allclose(z_, want, **TOL[dtype], err_msg=f"{label}: z updated")
        # a view BLAS cannot address: written through a temporary, the rest of its base kept
        big = rng.standard_normal((9, 16)).astype(dtype)
        before = big.copy()
        view = big[:8:2, :15:3]
        view[...] = zv
        f(view, alpha, xv, yv, np.asarray(beta, dtype))
        np.testing.assert_allclose(big[:8:2, :15:3], want, **TOL[dtype])
        outside = np.ones(big.shape, bool)
        outside[:8:2, :15:3] = False
        np.testing.assert_array_equal(big[outside], before[outside])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_inplace_accumulator_sharing_memory_with_a_factor(dtype):
    z, x, y = (wt.matrix(n, dtype) for n in "zxy")
    a, b = wt.scalar("a", dtype), wt.scalar("b", dtype)
    f, _, _ = compiled([wb.In(z, mutable=True), a, x, y, b],
                       Gemm(inplace=True)(z, a, x, y, b))
    rng = np.random.default_rng(4)
    buf = rng.standard_normal((5, 5)).astype(dtype)
    want = gemm_ref(buf, 1.0, buf, buf, 1.0)
    f(buf, np.asarray(1, dtype), buf, buf.T.copy().T, np.asarray(1, dtype))
    np.testing.assert_allclose(buf, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (0.25, -3.0), (-1.0, 0.0)])
def test_gemv_alpha_beta_layouts_and_broadcast_accumulator(dtype, alpha, beta):
    yv_, av_, xv_ = wt.vector("y", dtype), wt.matrix("A", dtype), wt.vector("x", dtype)
    a, b = wt.scalar("a", dtype), wt.scalar("b", dtype)
    f, c_ops, py = compiled([yv_, a, av_, xv_, b], Gemv()(yv_, a, av_, xv_, b))
    assert c_ops == [Gemv] and py == []
    rng = np.random.default_rng(5)
    am = rng.standard_normal((7, 4)).astype(dtype)
    xv = rng.standard_normal(4).astype(dtype)
    for ylen in (7, 1):
        yv = rng.standard_normal(ylen).astype(dtype)
        if beta == 0:
            yv[...] = np.nan
        want = gemm_ref(yv, alpha, am, xv, beta)
        for la, a_ in layouts(am).items():
            for lx, x_ in vector_layouts(xv).items():
                got = f(yv, np.asarray(alpha, dtype), a_, x_, np.asarray(beta, dtype))
                np.testing.assert_allclose(got, want, **TOL[dtype], err_msg=f"A {la}, x {lx}")
    one = np.asarray(1, dtype)
    np.testing.assert_array_equal(  # empty summed axis: beta * y
        f(np.ones(3, dtype), one, np.ones((3, 0), dtype), np.ones(0, dtype), np.asarray(2, dtype)),
        np.full(3, 2.0))
    with pytest.raises(ValueError, match="not aligned"):
        f(np.ones(7, dtype), one, am, np.ones(5, dtype), one)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemv_inplace_updates_strided_and_contiguous_accumulators(dtype):
    yv_, av_, xv_ = wt.vector("y", dtype), wt.matrix("A", dtype), wt.vector("x", dtype)
    a, b = wt.scalar("a", dtype), wt.scalar("b", dtype)
    f, c_ops, _ = compiled([wb.In(yv_, mutable=True), a, av_, xv_, b],
                           Gemv(inplace=True)(yv_, a, av_, xv_, b))
    assert c_ops == [Gemv]
    rng = np.random.default_rng(6)
    am = rng.standard_normal((5, 3)).astype(dtype)
    xv = rng.standard_normal(3).astype(dtype)
    for beta in (2.0, 0.0):
        for label, y_ in {"contiguous": np.full(5, np.nan if beta == 0 else 1, dtype),
                          "strided": np.full(15, np.nan if beta == 0 else 1, dtype)[::3],
                          "reversed": np.full(5, np.nan if beta == 0 else 1, dtype)[::-1]
                          }.items():
            want = gemm_ref(np.ones(5), 0.5, am, xv, beta)
            f(y_, np.asarray(0.5, dtype), am, xv, np.asarray(beta, dtype))
            np.testing.assert_allclose(y_, want, **TOL[dtype], err_msg=label)
        # y sharing memory with A and x: the factors are read before y is written
        buf = rng.standard_normal((4, 4)).astype(dtype)
        want = gemm_ref(buf[0], 0.5, buf, buf[1], beta)
        f(buf[0], np.asarray(0.5, dtype), buf, buf[1], np.asarray(beta, dtype))
        np.testing.assert_allclose(buf[0], want, **TOL[dtype])


def spread_ref(z, alpha, x, y, beta):
    """numpy's ``beta*z + alpha*dot(x, y)`` with the product broadcast over z (z not read
    when beta is 0, as in BLAS)."""
    product = alpha * (x.astype(np.float64) @ y.astype(np.float64))
    return np.broadcast_to(product, z.shape) + (0 if beta == 0 else beta * z)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("beta", [1.0, -2.0, 0.0])
@pytest.mark.parametrize("inplace", [False, True])
def test_a_length_one_product_broadcasts_over_the_accumulated_operand(dtype, beta, inplace):
    y_, a_, x_ = wt.vector("y", dtype), wt.matrix("A", dtype), wt.vector("x", dtype)
    z_, u_, w_ = wt.matrix("z", dtype), wt.matrix("u", dtype), wt.matrix("w", dtype)
    a, b = wt.scalar("a", dtype), wt.scalar("b", dtype)
    gemv_out = Gemv(inplace=inplace)(y_, a, a_, x_, b)
    gemm_out = Gemm(inplace=inplace)(z_, a, u_, w_, b)
    f, c_ops, py = compiled([wb.In(y_, mutable=True), a, a_, x_, wb.In(z_, mutable=True),
                             u_, w_, b], [gemv_out, gemm_out])
    assert sorted(op.__name__ for op in c_ops) == ["Gemm", "Gemv"] and py == []
    rng = np.random.default_rng(8)
    yv, av, xv = (rng.standard_normal(s).astype(dtype) for s in ((3,), (1, 2), (2,)))
    alpha = np.asarray(0.5, dtype)
    for uv, wv in (((1, 2), (2, 3)), ((3, 2), (2, 1)), ((1, 2), (2, 1))):
        uv, wv = rng.standard_normal(uv).astype(dtype), rng.standard_normal(wv).astype(dtype)
        zv = rng.standard_normal((3, 3)).astype(dtype)
        want_v, want_m = spread_ref(yv, alpha, av, xv, beta), spread_ref(zv, alpha, uv, wv, beta)
        got_v, got_m = f(yv.copy(), alpha, av, xv, zv.copy(), uv, wv, np.asarray(beta, dtype))
        np.testing.assert_allclose(got_v, want_v, **TOL[dtype])
        np.testing.assert_allclose(got_m, want_m, **TOL[dtype])


def test_dot_of_a_vector_and_a_one_column_matrix_plus_the_vector_broadcasts():
    v = wt.dvector("v")
    m = wt.TensorType("float64", (None, 1))("M")
    f = wb.function([v, m], wt.dot(v, m) + v)  # the default linker makes it a Gemv
    assert any(isinstance(n.op, Gemv) for n in f.maker.fgraph.apply_nodes)
    np.testing.assert_array_equal(f(np.array([1.0, 2.0, 3.0]), np.ones((3, 1))), [7.0, 8.0, 9.0])


def test_reused_output_buffers_do_not_leak_previous_values():
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    z = wt.dmatrix("z")
    f, _, _ = compiled([x, y, z], [Gemm()(z, np.asarray(1.0), x, y, np.asarray(0.0)),
                                   wt.dot(x, y)])
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    nan = np.full((3, 4), np.nan)
    f(nan, b, np.zeros((3, 2)))  # NaN results left in the (dropped) output buffers
    got, dot = f(a, b, np.full((3, 2), np.nan))
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)
    np.testing.assert_allclose(dot, a @ b, rtol=1e-12)


def test_other_dtypes_run_perform_inside_the_compiled_function():
    i, j = wt.lmatrix("i"), wt.lmatrix("j")
    s, d = wt.fmatrix("s"), wt.dmatrix("d")
    zc = wt.matrix("zc", "complex128")
    f, c_ops, py = compiled([i, j, s, d, zc], [wt.dot(i, j), wt.dot(s, d),
                                               Gemm()(zc, np.asarray(2 + 0j), zc, zc,
                                                      np.asarray(1 + 0j))])
    assert Dot not in c_ops and Gemm not in c_ops
    assert {type(n.op) for n, _ in py} == {Dot, Gemm}
    ia = np.arange(6).reshape(2, 3)
    sa = np.ones((3, 2), np.float32)
    za = np.array([[1 + 1j, 2], [0, 1j]])
    got = f(ia, ia.T, sa, sa.T.astype(np.float64), za)
    np.testing.assert_array_equal(got[0], ia @ ia.T)
    np.testing.assert_allclose(got[1], sa @ sa.T)
    np.testing.assert_allclose(got[2], 2 * za @ za + za)


def test_without_a_blas_the_products_run_perform(monkeypatch):
    monkeypatch.setenv(blas_lib.BLAS_ENV, "none")
    assert blas_lib.find_blas() is None
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    f, c_ops, py = compiled([x, y], wt.dot(x, y))
    assert Dot not in c_ops and [type(n.op) for n, _ in py] == [Dot]
    np.testing.assert_allclose(f(np.eye(2), np.ones((2, 2))), np.ones((2, 2)))


def test_an_unknown_blas_choice_is_refused(monkeypatch):
    monkeypatch.setenv(blas_lib.BLAS_ENV, "mkl-please")
    with pytest.raises(ValueError, match="WORKBENCH_BLAS must be one of"):
        blas_lib.find_blas()
    assert not blas_lib.blas_available()
    x = wt.dmatrix("x")
    with pytest.raises(ValueError, match="mkl-please"):  # compiling says so too
        wb.function([x], wt.dot(x, x), mode=C_ONLY)


def _available_choices() -> list[str]:
    names = []
    for name in ("scipy-openblas64", "scipy-openblas32", "numpy", "system"):
        try:
            if blas_lib._find(name) is not None:
                names.append(name)
        except blas_lib.BlasNotFoundError:
            pass
    return names


@pytest.mark.parametrize("choice", _available_choices())
def test_every_available_blas_links_and_loads_without_library_path(monkeypatch, choice):
    monkeypatch.setenv(blas_lib.BLAS_ENV, choice)
    lib = blas_lib.find_blas()
    assert lib.symbol("cblas_dgemm").startswith(lib.prefix) and lib.int_type in ("int",
                                                                                  "long long")
    assert f"-Wl,-rpath,{lib.lib_dir}" in lib.link_args
    x, y = wt.fmatrix("x"), wt.fmatrix("y")
    f, c_ops, _ = compiled([x, y], wt.dot(x, y.T))
    assert c_ops == [Dot] or Dot in c_ops
    src = next(s for n, s in f.linker.report.sources.items() if isinstance(n.op, Dot))
    assert lib.symbol("cblas_sgemm") in src.source and lib.library in src.libraries
    a = np.random.default_rng(8).standard_normal((9, 4)).astype(np.float32)
    np.testing.assert_allclose(f(a, a), a @ a.T, rtol=2e-5, atol=2e-5)
    with open("/proc/self/maps") as fh:  # the module pulled the library in itself
        assert any(line.rstrip().endswith(lib.path) for line in fh) or choice == "numpy"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mlp_training_step_runs_its_products_through_blas_and_matches_the_py_linker(dtype):
    from workbench.core.link.c.interface import c_op_of
    from workbench.core.link.c.ops.blas import _BlasC
    from workbench.examples.mlp import build_source

    sizes = dict(n_in=12, n_hidden=8, n_out=3, batch=5, dtype=dtype)
    functions = []
    for linker in ("c", "py"):
        src = build_source(**sizes)
        functions.append((wb.function(src.inputs, src.outputs, updates=src.updates,
                                      linker=linker), src))
    (fc, src_c), (fp, src_p) = functions
    report = fc.linker.report
    products = [n for n in report.c_nodes if isinstance(n.op, (Dot, Gemm, Gemv))]
    assert len(products) >= 4  # forward layers, and weight / input gradients
    assert not [n for n, _ in report.py_nodes if isinstance(c_op_of(n.op), _BlasC)]
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 12)).astype(dtype)
    labels = np.eye(3, dtype=dtype)[rng.integers(0, 3, 5)]
    for _ in range(3):
        np.testing.assert_allclose(fc(x, labels), fp(x, labels), **TOL[dtype])
    for (pc, _), (pp, _) in zip(src_c.updates, src_p.updates):
        np.testing.assert_allclose(pc.get_value(), pp.get_value(), **TOL[dtype])


@pytest.mark.parametrize("linker", ["c", "py"])
def test_the_mlp_step_updates_every_parameter_in_its_own_storage(linker):
    # issue 22 found W1 copied every step: each update writes into the shared value
    from workbench.examples.mlp import build_source, initial_params, make_batch, numpy_step

    sizes = dict(n_in=12, n_hidden=8, n_out=3)
    src = build_source(**sizes, batch=5)
    f = wb.function(src.inputs, src.outputs, updates=src.updates, linker=linker)
    weights = [n for n in f.maker.fgraph.toposort() if isinstance(n.op, Gemm)
               and n.op.inplace and n.inputs[0].name in ("W1", "W2")]
    assert sorted(n.inputs[0].name for n in weights) == ["W1", "W2"]
    storage = [p.get_value(borrow=True) for p, _ in src.updates]
    reference = initial_params(**sizes)
    x, labels = make_batch(5, 12, 3, seed=3)
    for _ in range(3):
        np.testing.assert_allclose(f(x, labels), numpy_step(reference, x, labels),
                                   **TOL["float64"])
    for (shared, _), own, want in zip(src.updates, storage, reference):
        assert shared.get_value(borrow=True) is own, shared.name
        np.testing.assert_allclose(own, want, **TOL["float64"])


def test_sgd_update_of_a_weight_matrix_is_one_gemm_in_c():
    w, x, g = wt.dmatrix("W"), wt.dmatrix("x"), wt.dmatrix("g")
    f = wb.function([w, x, g], w - 0.1 * wt.dot(x.T, g), linker="c")
    assert [type(n.op) for n in f.linker.report.c_nodes if not isinstance(
        n.op, wt.DimShuffle)] == [Gemm]
    rng = np.random.default_rng(10)
    wv, xv, gv = (rng.standard_normal(s) for s in ((4, 3), (6, 4), (6, 3)))
    np.testing.assert_allclose(f(wv, xv, gv), wv - 0.1 * xv.T @ gv, rtol=1e-12)
    h = wb.function([w, x, g], wt.dot(x.T, g) - 2 * w, linker="c")  # the other way round
    (node,) = [n for n in h.linker.report.c_nodes if isinstance(n.op, Gemm)]
    assert node.inputs[4].data == -2
    np.testing.assert_allclose(h(wv, xv, gv), xv.T @ gv - 2 * wv, rtol=1e-12)


def test_symbol_names_and_integer_width_come_from_the_packages_pkg_config():
    text = ("Libs: ${libdir}/libscipy_openblas64_.so\nCflags: -I${includedir} "
            "-DBLAS_SYMBOL_PREFIX=scipy_ -DBLAS_SYMBOL_SUFFIX=64_ -DHAVE_BLAS_ILP64\n")
    assert blas_lib.pkg_config_flags(text) == ("scipy_", "64_", True)
    assert blas_lib.pkg_config_flags("Cflags: -I/x -DBLAS_SYMBOL_PREFIX=scipy_\n") == (
        "scipy_", "", False)
    lib = blas_lib.BlasLibrary(source="test", path="/opt/blas/libopenblas.so.0",
                               prefix="scipy_", suffix="64_", int64=True)
    assert lib.symbol("cblas_dgemm") == "scipy_cblas_dgemm64_"
    assert lib.library == ":libopenblas.so.0" and lib.lib_dir == "/opt/blas"
    decls = lib.declarations()
    assert "typedef long long wb_blasint;" in decls
    assert "#define wb_cblas_sgemv scipy_cblas_sgemv64_" in decls


@pytest.mark.parametrize("linker", ["py", "c"])
def test_an_sgd_update_writes_the_weight_in_its_own_storage(linker):
    # W's static shape is unknown and the product's rows are known (784-like): the
    # inplace pass makes the update's Gemm write into W (it checks the shapes at run time)
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((6, 3))
    w = wb.shared(w0.copy(), name="W")
    x = wt.tensor("float64", shape=(None, 6), name="x")
    d = wt.dmatrix("d")
    f = wb.function([x, d], [], updates=[(w, w - 0.1 * wt.dot(x.T, d))], linker=linker)
    gemms = [n.op for n in f.maker.fgraph.toposort() if isinstance(n.op, Gemm)]
    assert gemms == [Gemm(inplace=True)]
    storage = w.get_value(borrow=True)
    xv, dv = rng.standard_normal((4, 6)), rng.standard_normal((4, 3))
    f(xv, dv)
    assert w.get_value(borrow=True) is storage
    np.testing.assert_allclose(w.get_value(), w0 - 0.1 * xv.T @ dv, rtol=1e-12)


@pytest.mark.parametrize("linker", ["py", "c"])
def test_an_inplace_gemm_whose_accumulator_broadcasts_makes_a_new_result(linker):
    z = wt.dmatrix("z")
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    a, b = wt.dscalar("a"), wt.dscalar("b")
    f = wb.function([wb.In(z, mutable=True), x, y, a, b], Gemm(inplace=True)(z, a, x, y, b),
                    mode=Mode(linker=linker, rewriter=None))
    rng = np.random.default_rng(1)
    zv, xv, yv = rng.standard_normal((1, 3)), rng.standard_normal((2, 4)), \
        rng.standard_normal((4, 3))
    kept = zv.copy()
    got = f(zv, xv, yv, np.float64(2.0), np.float64(0.5))
    np.testing.assert_allclose(got, 0.5 * zv + 2.0 * xv @ yv, rtol=1e-12)
    np.testing.assert_array_equal(zv, kept)  # z broadcast: not overwritten


def test_an_inplace_and_a_copying_gemm_share_one_kind_and_keep_their_semantics():
    """Inplace-ness is the node's run-time data (codegen.node_labels): one compiled kind,
    the copying node leaves its accumulator intact, the inplace one writes into it."""
    from workbench.core.link.c.codegen import node_source

    z, w = wt.dmatrix("z"), wt.dmatrix("w")
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    a, b = wt.dscalar("a"), wt.dscalar("b")
    copying, inplace = Gemm(inplace=False)(z, a, x, y, b), Gemm(inplace=True)(w, a, x, y, b)
    f = wb.function([z, wb.In(w, mutable=True), x, y, a, b], [copying, inplace],
                    mode=Mode(linker="c", rewriter=None))
    nodes = f.maker.fgraph.toposort()
    assert {n.op for n in nodes} == {Gemm(inplace=False), Gemm(inplace=True)}
    assert node_source(nodes[0]).source == node_source(nodes[1]).source
    assert f.linker.report.compiled <= 1  # one kind (0 when an earlier test built it)
    rng = np.random.default_rng(2)
    zv, wv = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    xv, yv = rng.standard_normal((2, 4)), rng.standard_normal((4, 3))
    z_kept, w_kept = zv.copy(), wv.copy()
    got_copy, got_inplace = f(zv, wv, xv, yv, np.float64(2.0), np.float64(0.5))
    np.testing.assert_allclose(got_copy, 0.5 * z_kept + 2.0 * xv @ yv, rtol=1e-12)
    np.testing.assert_allclose(got_inplace, 0.5 * w_kept + 2.0 * xv @ yv, rtol=1e-12)
    np.testing.assert_array_equal(zv, z_kept)  # the copying node leaves z intact
    np.testing.assert_array_equal(wv, got_inplace)  # the inplace one wrote into w


# -- MatMul with batch dimensions: a gemm per item ---------------------------------------


def batched_layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    """A batched operand in C order, with its core transposed in memory, strided, and
    with its last axis reversed (negative stride: copied once for BLAS)."""
    if a.ndim < 2:
        return {"C": a, "strided": np.repeat(a, 2)[::2], "reversed": a[::-1].copy()[::-1]}
    return {"C": a, "core transposed": np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2),
            "strided": np.repeat(a, 2, axis=-1)[..., ::2], "reversed": a[..., ::-1]}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("x_shape", "y_shape"), [
    ((3, 4, 5), (3, 5, 2)), ((3, 4, 5), (5, 2)), ((4, 5), (2, 5, 3)),
    ((2, 1, 4, 5), (3, 5, 2)), ((5,), (3, 5, 2)), ((3, 4, 5), (5,)),
    ((3, 4, 0), (3, 0, 2)), ((0, 4, 5), (5, 2)), ((3, 1, 5), (3, 5, 1)),
], ids=str)
def test_batched_matmul_is_a_gemm_per_item_on_every_layout(dtype, x_shape, y_shape):
    x = wt.tensor(name="x", dtype=dtype, shape=(None,) * len(x_shape))
    y = wt.tensor(name="y", dtype=dtype, shape=(None,) * len(y_shape))
    f = wb.function([x, y], wt.matmul(x, y), mode=C_ONLY)
    assert [type(n.op) for n in f.linker.report.c_nodes] == [MatMul]
    rng = np.random.default_rng(5)
    xv = rng.standard_normal(x_shape).astype(dtype)
    yv = rng.standard_normal(y_shape).astype(dtype)
    for xl in batched_layouts(xv).values():
        for yl in batched_layouts(yv).values():
            want = np.matmul(xl, yl)
            for _ in range(2):  # the second call reuses the output
                got = f(xl, yl)
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_allclose(got, want, **TOL[dtype])


def test_batched_matmul_errors_and_other_dtypes():
    x, y = wt.dtensor3("x"), wt.dtensor3("y")
    f = wb.function([x, y], wt.matmul(x, y), mode=C_ONLY)
    with pytest.raises(ValueError, match=r"last dimension of the first operand \(4\) differs "
                                         r"from the second-to-last dimension of the second "
                                         r"\(5\)"):
        f(np.ones((2, 3, 4)), np.ones((2, 5, 6)))
    with pytest.raises(ValueError, match="batch dimension 0 has length 2 in one operand and 3 "
                                         "in the other"):
        f(np.ones((2, 3, 4)), np.ones((3, 4, 6)))
    i, j = wt.ltensor3("i"), wt.ltensor3("j")
    g = wb.function([i, j], wt.matmul(i, j), mode=C_ONLY)
    assert [type(n.op) for n, _ in g.linker.report.py_nodes] == [MatMul]  # no integer BLAS
    (_, why), = g.linker.report.py_nodes
    assert "not (int64, int64) -> int64" in why and "perform" in why
    a = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(g(a, a.swapaxes(1, 2)), a @ a.swapaxes(1, 2))
