"""vectorize_graph over a batch of 7 equals a Python loop of 7 calls (values and
gradients) for every catalogue case built on an Op with a core signature; Blockwise
and its rewrites."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.blockwise import Blockwise
from workbench.core.tensor.linalg.products import Dot
from workbench.testing.catalog import all_cases, op_classes_in

BATCH = 7


def _has_core_signature(case) -> bool:
    _, outputs, _ = case.graph("float64")
    return any(getattr(cls, "gufunc_signature", None) or cls.__name__ in ("Dot", "MatMul")
               for cls in op_classes_in(outputs))


CASES = [c for c in all_cases() if "float64" in c.float_dtypes and _has_core_signature(c)]


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _batched_setup(case):
    inputs, outputs, _ = case.graph("float64")
    outputs = _as_list(outputs)
    symbolic = [not a.constant for a in case.args]
    items = [[v for s, v in zip(symbolic, case.values("float64", seed=k)) if s]
             for k in range(BATCH)]
    batched = [wt.TensorType(x.type.dtype, (None, *x.type.shape))(f"batched_{x.name}")
               for x in inputs]
    stacked = [np.stack([item[j] for item in items]) for j in range(len(inputs))]
    return inputs, outputs, items, batched, stacked


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.family}.{c.name}")
def test_vectorize_graph_equals_a_loop_of_calls(case):
    inputs, outputs, items, batched, stacked = _batched_setup(case)
    vectorized = wb.vectorize_graph(outputs, dict(zip(inputs, batched)))
    one = wb.function(inputs, outputs, mode="FAST_COMPILE", on_unused_input="ignore")
    many = wb.function(batched, vectorized, mode="FAST_COMPILE", on_unused_input="ignore")
    loop = [one(*item) for item in items]
    got = many(*stacked)
    for k, out in enumerate(outputs):
        rtol, atol = case.tolerance(str(out.type.dtype))
        want = np.stack([np.asarray(r[k]) for r in loop])
        assert got[k].shape == want.shape
        np.testing.assert_allclose(got[k], want, rtol=rtol * 10, atol=atol * 10,
                                   err_msg=f"output {k}")


def _uses_blockwise(case) -> bool:
    inputs, outputs, _ = case.graph("float64")
    batched = [wt.TensorType(x.type.dtype, (None, *x.type.shape))() for x in inputs]
    vectorized = wb.vectorize_graph(_as_list(outputs), dict(zip(inputs, batched)))
    return Blockwise in op_classes_in(vectorized)


@pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")
@pytest.mark.parametrize("case", [c for c in CASES if _uses_blockwise(c)],
                         ids=lambda c: f"{c.family}.{c.name}")
def test_the_c_loop_over_the_batch_equals_a_loop_of_calls(case):
    inputs, outputs, items, batched, stacked = _batched_setup(case)
    vectorized = wb.vectorize_graph(outputs, dict(zip(inputs, batched)))
    one = wb.function(inputs, outputs, linker="py", on_unused_input="ignore")
    many = wb.function(batched, vectorized, linker="c", on_unused_input="ignore")
    from workbench.core.link.c.ops.blockwise import BlockwiseC

    # every Blockwise whose core Op has C runs as a C loop
    assert not [n for n, _ in many.linker.report.py_nodes
                if isinstance(n.op, Blockwise) and BlockwiseC(n.op).c_supports(n)]
    loop = [one(*item) for item in items]
    for k, (out, got) in enumerate(zip(outputs, many(*stacked))):
        rtol, atol = case.tolerance(str(out.type.dtype))
        np.testing.assert_allclose(got, np.stack([np.asarray(r[k]) for r in loop]),
                                   rtol=rtol * 10, atol=atol * 10, err_msg=f"output {k}")


GRAD_CASES = [c for c in CASES if c.grad is True]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: f"{c.family}.{c.name}")
def test_gradients_of_vectorize_graph_equal_a_loop(case):
    inputs, outputs, items, batched, stacked = _batched_setup(case)
    floats = [k for k, x in enumerate(inputs) if x.type.dtype.is_float]
    outs = [o for o in outputs if o.type.dtype.is_float]
    if not floats or not outs:
        pytest.skip("no float input or output to differentiate")
    cost = sum((o ** 2).sum() for o in outs)
    vectorized = wb.vectorize_graph(outs, dict(zip(inputs, batched)))
    batched_cost = sum((o ** 2).sum() for o in vectorized)
    one = wb.function(inputs, wb.grad(cost, [inputs[k] for k in floats]),
                      mode="FAST_COMPILE", on_unused_input="ignore")
    many = wb.function(batched, wb.grad(batched_cost, [batched[k] for k in floats]),
                       mode="FAST_COMPILE", on_unused_input="ignore")
    loop = [one(*item) for item in items]
    got = many(*stacked)
    rtol, atol = case.tolerance("float64")
    for j in range(len(floats)):
        want = np.stack([r[j] for r in loop])
        np.testing.assert_allclose(got[j], want, rtol=rtol * 100, atol=atol * 100,
                                   err_msg=f"gradient {j}")


def test_vectorize_with_a_signature():
    def layer(m, v):
        return wt.tanh(m @ v) + wt.linalg.det(m)

    batched_layer = wb.vectorize(layer, signature="(m,m),(m)->(m)")
    ms, vs = wt.dtensor3("ms"), wt.dmatrix("vs")
    out = batched_layer(ms, vs)
    assert out.type.ndim == 2
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(BATCH, 3, 3)), rng.normal(size=(BATCH, 3))
    got = wb.function([ms, vs], out)(a, b)
    want = [np.tanh(a[i] @ b[i]) + np.linalg.det(a[i]) for i in range(BATCH)]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_unbatched_inputs_broadcast_against_batched_ones():
    m, v = wt.dmatrix("m"), wt.dvector("v")
    out = wt.linalg.solve(m, v) * v.sum()
    vs = wt.dmatrix("vs")
    batched = wb.vectorize_graph(out, {v: vs})  # the same matrix for every right-hand side
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(3, 3)) + 3 * np.eye(3), rng.normal(size=(BATCH, 3))
    got = wb.function([m, vs], batched)(a, b)
    np.testing.assert_allclose(got, [np.linalg.solve(a, b[i]) * b[i].sum()
                                     for i in range(BATCH)], rtol=1e-10)
    g = wb.function([m, vs], wb.grad(batched.sum(), m))(a, b)
    one = wb.function([m, v], wb.grad(out.sum(), m))
    np.testing.assert_allclose(g, sum(one(a, b[i]) for i in range(BATCH)), rtol=1e-10)


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
def test_blockwise_runs_and_differentiates_on_linkers(linker):
    from workbench.core.compile.mode import available_linkers

    if linker not in available_linkers():
        pytest.skip(f"{linker} linker not available")
    x, y = wt.dtensor3("x"), wt.dtensor3("y")
    z = Blockwise(Dot(), "(m,k),(k,n)->(m,n)")(x, y)
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(BATCH, 3, 4)), rng.normal(size=(BATCH, 4, 2))
    f = wb.function([x, y], [z, *wb.grad((z ** 2).sum(), [x, y])], linker=linker)
    got, gx, gy = f(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)
    np.testing.assert_allclose(gx, 2 * (a @ b) @ b.transpose(0, 2, 1), rtol=1e-12)
    np.testing.assert_allclose(gy, a.transpose(0, 2, 1) @ (2 * (a @ b)), rtol=1e-12)
    wb.verify_grad(lambda p, q: Blockwise(Dot(), "(m,k),(k,n)->(m,n)")(p, q).sum(),
                   [a[:2], b[:2]])


def test_a_blockwise_with_batch_dims_of_one_becomes_its_core_op():
    x = wt.tensor("float64", shape=(1, 3, 4), name="x")
    y = wt.tensor("float64", shape=(1, 4, 2), name="y")
    f = wb.function([x, y], Blockwise(Dot(), "(m,k),(k,n)->(m,n)")(x, y))
    ops = [type(n.op) for n in f.maker.fgraph.apply_nodes]
    assert Blockwise not in ops and Dot in ops
    a, b = np.ones((1, 3, 4)), np.ones((1, 4, 2))
    np.testing.assert_allclose(f(a, b), a @ b)


def test_a_blockwise_of_an_elemwise_becomes_the_elemwise():
    u, v = wt.dmatrix("u"), wt.dvector("v")
    add = wt.add(wt.dvector(), wt.dscalar()).owner.op
    f = wb.function([u, v], Blockwise(add, "(n),()->(n)")(u, v))
    assert not any(isinstance(n.op, Blockwise) for n in f.maker.fgraph.apply_nodes)
    np.testing.assert_allclose(f(np.ones((2, 3)), np.array([1.0, 2.0])),
                               [[2.0] * 3, [3.0] * 3])


def test_errors_name_the_problem():
    x = wt.dmatrix("x")
    with pytest.raises(ValueError, match="not a gufunc signature"):
        Blockwise(Dot(), "m,k->m")
    with pytest.raises(TypeError, match="needs a signature"):
        Blockwise(Dot())
    with pytest.raises(TypeError, match="at least 2 dimensions"):
        wb.vectorize_graph(x.sum(), {x: wt.dvector("v")})
    with pytest.raises(ValueError, match="fewer dimensions than its core"):
        wb.vectorize(lambda m: m.sum(), signature="(m,n)->()")(wt.dvector("v"))


@pytest.mark.parametrize("signature, u_shape", [("(n),()->(n)", (2, 3)),
                                                ("(a,b),()->(a,b)", (2, 3, 4))])
def test_gradients_of_a_blockwise_elemwise_with_inputs_of_different_ranks(signature, u_shape):
    # the core Elemwise expands the scalar to the other input's rank; the gradient must
    # still be one value per batch item of the scalar
    add = wt.add(wt.dvector(), wt.dscalar()).owner.op
    weights = np.arange(np.prod(u_shape[1:]), dtype=float).reshape(u_shape[1:])
    u, v = wt.TensorType("float64", (None,) * len(u_shape))("u"), wt.dvector("v")
    cost = (Blockwise(add, signature)(u, v) * weights).sum()
    got = wb.function([u, v], wb.grad(cost, v))(np.ones(u_shape), np.array([1.0, 2.0]))
    np.testing.assert_allclose(got, [weights.sum()] * 2)
    rng = np.random.default_rng(4)
    wb.verify_grad(lambda p, q: (Blockwise(add, signature)(p, q) * weights).sum(),
                   [rng.normal(size=u_shape), rng.normal(size=2)])
    wb.verify_grad(lambda p, q: (Blockwise(add, signature)(p, q) ** 2).sum(),
                   [rng.normal(size=u_shape), rng.normal(size=2)])


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
def test_an_empty_batch_has_the_core_lengths_of_its_inputs(linker):
    # as NumPy's gufuncs: (0, 4) vectors times a (3, 4) matrix are (0, 3), not (0, 0)
    from workbench.core.compile.mode import available_linkers

    if linker not in available_linkers():
        pytest.skip(f"{linker} linker not available")
    m, v, vs = wt.dmatrix("m"), wt.dvector("v"), wt.dmatrix("vs")
    by_name = wb.vectorize_graph(wt.dot(m, v), {v: vs})
    # names that say nothing: the lengths come from the core Op's infer_shape
    by_infer_shape = Blockwise(Dot(), "(a,b),(c)->(d)")(m, vs)
    f = wb.function([m, vs], [by_name, by_infer_shape], linker=linker)
    for got in f(np.ones((3, 4)), np.ones((0, 4))):
        assert got.shape == np.matmul(np.ones((3, 4)), np.ones((0, 4, 1)))[..., 0].shape
        assert got.shape == (0, 3)


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
def test_an_unbatched_run_time_integer_is_read_as_it_is(linker):
    # `n` has no batch dimension: the same length for every item (torch reads it as an
    # int inside the mapped kernel, outside vmap)
    from workbench.core.compile.mode import available_linkers

    if linker not in available_linkers():
        pytest.skip(f"{linker} linker not available")
    x, xs, n = wt.dvector("x"), wt.dmatrix("xs"), wt.iscalar("n")
    out = wb.vectorize_graph(x[:n] * 2, {x: xs})
    f = wb.function([xs, n], out, linker=linker)
    assert any(isinstance(node.op, Blockwise) for node in f.maker.fgraph.apply_nodes)
    a = np.arange(10.0).reshape(2, 5)
    np.testing.assert_array_equal(f(a, 3), a[:, :3] * 2)
    np.testing.assert_array_equal(f(a, 1), a[:, :1] * 2)
    if linker == "gpu":
        from workbench.core.link.gpu.linker import host_nodes

        assert not [nd for nd in host_nodes(f) if isinstance(nd.op, Blockwise)]


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
def test_a_batched_run_time_index_is_read_item_by_item(linker):
    # torch.vmap cannot read a batched index as an int: the gpu kernel loops instead
    from workbench.core.compile.mode import available_linkers

    if linker not in available_linkers():
        pytest.skip(f"{linker} linker not available")
    x, xs, n, ns = wt.dvector("x"), wt.dmatrix("xs"), wt.iscalar("n"), wt.ivector("ns")
    f = wb.function([xs, ns], wb.vectorize_graph(x[n] * 2, {x: xs, n: ns}), linker=linker)
    assert any(isinstance(node.op, Blockwise) for node in f.maker.fgraph.apply_nodes)
    a, idx = np.arange(15.0).reshape(3, 5), np.array([1, 3, 4], dtype="int32")
    for _ in range(2):  # the second call goes straight to the loop
        np.testing.assert_array_equal(f(a, idx), a[np.arange(3), idx] * 2)


def _needs_real_storage():
    """Core graphs whose torch kernels are not vmap-safe (numpy, data_ptr, in-place)."""
    x = wt.dvector("x")
    xp, fp = np.linspace(0.0, 10.0, 4), np.arange(4.0)
    return x, {"take": wt.take(x, np.array([3, 0])), "x[idx]": x[np.array([3, 0])],
               "diag": wt.diag(x), "pad": wt.pad(x, 2, mode="reflect"),
               "kron": wt.linalg.kron(x, x), "interp": wt.interp(x, xp, fp)}


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("name", list(_needs_real_storage()[1]))
def test_kernels_that_are_not_vmap_safe_run_item_by_item_on_gpu(name):
    # torch's batched tensors have no storage: a kernel reading data_ptr or .numpy()
    # falls back to a loop over the batch and agrees with the py linker
    from workbench.core.compile.mode import available_linkers

    if "gpu" not in available_linkers():
        pytest.skip("gpu linker not available")
    x, graphs = _needs_real_storage()
    xs = wt.dmatrix("xs")
    out = wb.vectorize_graph(graphs[name], {x: xs})
    a = np.arange(12.0).reshape(3, 4) * 1.3
    want = wb.function([xs], out, linker="py")(a)
    f = wb.function([xs], out, linker="gpu")
    for _ in range(2):  # the second call goes straight to the loop
        np.testing.assert_allclose(f(a), want, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
def test_a_real_error_in_a_looped_kernel_is_raised_on_gpu():
    from workbench.core.compile.mode import available_linkers

    if "gpu" not in available_linkers():
        pytest.skip("gpu linker not available")
    x, xs = wt.dvector("x"), wt.dmatrix("xs")
    f = wb.function([xs], wb.vectorize_graph(wt.take(x, np.array([3, 0])), {x: xs}),
                    linker="gpu")
    with pytest.raises(Exception, match="(?i)index|bounds"):
        f(np.ones((2, 2)))


EMPTY_BATCH_CASES = {
    # name: (workbench function, NumPy function, signature, number of inputs)
    "diag": (wt.diag, np.diag, "(n)->(n,n)", 1),
    "pad": (lambda v: wt.pad(v, 2, mode="reflect"), lambda v: np.pad(v, 2, mode="reflect"),
            "(n)->(m)", 1),
    "kron": (wt.kron, np.kron, "(n),(n)->(m)", 2),
    "take": (lambda v: wt.take(v, np.array([0, 2, 3])), lambda v: np.take(v, [0, 2, 3]),
             "(n)->(m)", 1),
}


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
@pytest.mark.parametrize("name", sorted(EMPTY_BATCH_CASES))
def test_an_empty_batch_has_the_core_shape_numpy_gives(name, linker):
    # the shape NumPy gives a batch of 2, sliced to none: (0, 4) vectors give diag
    # (0, 4, 4), reflect-pad by 2 (0, 8), kron (0, 16), not zeros in the core
    from workbench.core.compile.mode import available_linkers

    if linker not in available_linkers():
        pytest.skip(f"{linker} linker not available")
    fn, np_fn, signature, n_inputs = EMPTY_BATCH_CASES[name]
    xs = [wt.dmatrix(f"x{k}") for k in range(n_inputs)]
    f = wb.function(xs, wb.vectorize(fn, signature=signature)(*xs), linker=linker)
    items = np.arange(8.0).reshape(2, 4)
    expected = np.stack([np_fn(*[row] * n_inputs) for row in items])[:0]
    got = f(*[items[:0]] * n_inputs)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(f(*[items] * n_inputs)[:0], expected)


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", ["py", "c", "gpu"])
def test_an_empty_batch_of_a_value_dependent_core_length_is_refused(linker):
    # unique's length depends on each item's values: with no item there is none to read
    from workbench.core.compile.mode import available_linkers

    if linker not in available_linkers():
        pytest.skip(f"{linker} linker not available")
    xs = wt.dmatrix("xs")
    f = wb.function([xs], wb.vectorize(wt.unique, signature="(n)->(m)")(xs), linker=linker)
    np.testing.assert_array_equal(f(np.array([[1.0, 1.0, 2.0]])), [[1.0, 2.0]])
    with pytest.raises(ValueError, match="batch is empty.*values of a batched input"):
        f(np.ones((0, 3)))


def test_a_vectorized_shape_is_read_once_and_stacked_as_a_loop_would():
    # every item has the batched input's core shape: no Blockwise, yet one row per item
    x, xs = wt.dmatrix("x"), wt.TensorType("float64", (None, None, None))("xs")
    out = wb.vectorize_graph([x.shape, x.shape[1] * 2], {x: xs})
    f = wb.function([xs], out)
    assert not any(isinstance(n.op, Blockwise) for n in f.maker.fgraph.apply_nodes)
    shapes, doubled = f(np.ones((3, 4, 5)))
    np.testing.assert_array_equal(shapes, [[4, 5]] * 3)
    np.testing.assert_array_equal(doubled, [10] * 3)
    assert f(np.ones((0, 4, 5)))[0].shape == (0, 2)


def test_a_value_computed_core_length_stays_in_c_and_an_empty_batch_still_has_its_shape():
    # kron's Reshape takes its length from the unbatched input's value: the C loop runs a
    # non-empty batch, and only an empty one asks Python for the shape (no Python perform)
    from unittest import mock

    from workbench.core.compile.mode import available_linkers

    if "c" not in available_linkers():
        pytest.skip("c linker not available")
    a, b, batch = wt.dvector("a"), wt.dvector("b"), wt.dmatrix("batch")
    with mock.patch.object(Blockwise, "perform", side_effect=AssertionError("Python perform")):
        f = wb.function([batch, b], wb.vectorize_graph(wt.kron(a, b), {a: batch}), linker="c")
        rows, other = np.arange(24.0).reshape(3, 8), np.linspace(-1.0, 1.0, 8)
        np.testing.assert_array_equal(f(rows, other), np.stack([np.kron(r, other) for r in rows]))
        empty = f(rows[:0], other)
    assert empty.shape == (0, 64)
    assert empty.dtype == np.float64
