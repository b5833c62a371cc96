"""Loop rewrites: the body rewritten with the outer passes (and traced), loop-invariant
work pushed out, outputs read only at their last row stored as that row."""

import numpy as np
import workbench.tensor as wt

import workbench as wb
from workbench.core.scan import Scan


def _scan_nodes(f):
    return [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, Scan)]


def test_the_body_is_rewritten_by_the_outer_passes_and_the_trace_says_so():
    x = wt.dvector("x")
    w = wt.dscalar("w")
    hs, _ = wb.scan(lambda xt, h: wt.tanh(h * w + xt) * 1.0 + 0.0, sequences=x,
                    outputs_info=np.float64(0), name="tiny")
    f = wb.function([x, w], hs)
    steps = [s for s in f.maker.rewrite_trace.steps if s.rewrite == "rewrite_inner_graph"]
    assert len(steps) == 1 and steps[0].pass_ == "inner graphs"
    assert "Scan{tiny" in str(steps[0].node.op)
    inner_rewrites = {s.rewrite for s in steps[0].inner_trace.steps}
    assert {"local_mul_one", "local_add_zero"} <= inner_rewrites
    (node,) = _scan_nodes(f)
    assert len(node.op.fgraph.apply_nodes) == 1  # one fused Composite
    assert node.op.inner_graph_rewritten
    h, expected = 0.0, []
    for _ in range(3):
        h = np.tanh(h * 0.5 + 1.0)
        expected.append(h)
    np.testing.assert_allclose(f(np.ones(3), 0.5), expected)


def test_loop_invariant_work_is_computed_once_before_the_loop():
    a = wt.dscalar("a")
    w = wt.dvector("w")
    ys, _ = wb.scan(lambda y, w_: y * wt.exp(w_).sum() + 1.0, outputs_info=a, non_sequences=w,
                    n_steps=5, name="growth")
    f = wb.function([a, w], ys, linker="py")
    assert "scan_push_out_invariants" in f.maker.rewrite_trace.rewrites_used()
    (node,) = _scan_nodes(f)
    inner_ops = {type(n.op).__name__ for n in node.op.fgraph.apply_nodes}
    assert "Sum" not in inner_ops
    outer_exp = [n for n in f.maker.fgraph.apply_nodes if "exp" in str(n.op)]
    assert outer_exp
    rate = np.exp([0.1, 0.2]).sum()
    expected, y = [], 1.0
    for _ in range(5):
        y = y * rate + 1.0
        expected.append(y)
    np.testing.assert_allclose(f(1.0, np.array([0.1, 0.2])), expected)
    wb.dprint(node.outputs[0], file="str")  # the pushed-out value prints by its formula


def test_an_output_read_only_at_its_last_row_stores_only_that_row():
    a = wt.dscalar("a")
    ys, _ = wb.scan(lambda y: y * 0.5 + 1.0, outputs_info=a, n_steps=1000)
    for linker in ("py", "c"):
        f = wb.function([a], ys[-1], linker=linker)
        (node,) = _scan_nodes(f)
        assert node.op.keep_last == (True,)
        assert node.outputs[0].type.shape == (1,)
        y = 3.0
        for _ in range(1000):
            y = y * 0.5 + 1.0
        np.testing.assert_allclose(f(3.0), y)


def test_keeping_the_last_row_with_two_taps_and_with_zero_steps():
    n = wt.lscalar("n")
    start = wt.dvector("start")
    fib, _ = wb.scan(lambda p, q: p + q, outputs_info=dict(initial=start, taps=[-2, -1]),
                     n_steps=n)
    counter = wb.shared(np.float64(0.0), name="counter")
    _, updates = wb.scan(lambda: {counter: counter + 2.0}, n_steps=n)
    for linker in ("py", "c"):
        f = wb.function([n, start], fib[-1], linker=linker)
        (node,) = _scan_nodes(f)
        assert node.op.keep_last == (True,)
        np.testing.assert_allclose(f(10, np.array([0.0, 1.0])), 89.0)
        g = wb.function([n], [], updates=updates, linker=linker)
        (node,) = _scan_nodes(g)
        assert node.op.keep_last == (True,)
        counter.set_value(np.float64(0.0))
        g(0)
        assert counter.get_value() == 0.0
        g(4)
        assert counter.get_value() == 8.0


def test_gradients_and_tangents_of_a_loop_that_keeps_only_its_last_row():
    a = wt.dscalar("a")
    w = wt.dscalar("w")
    ys, _ = wb.scan(lambda y, w_: wt.sin(y * w_), outputs_info=a, non_sequences=w, n_steps=4)
    full = ys.owner.inputs[0]  # the buffer (initial row and 4 steps) that ys slices
    last_only = full.owner.op.with_keep_last((True,))(*full.owner.inputs)
    assert last_only.type.shape == (1,)
    last = last_only[0]
    f = wb.function([a, w], [last, wb.grad(last, w), wb.Rop(last, w, wt.constant(1.0))],
                    linker="py")
    value, gradient, tangent = f(0.3, 1.1)
    reference = wb.function([a, w], ys[-1])
    eps = 1e-6
    numeric = (reference(0.3, 1.1 + eps) - reference(0.3, 1.1 - eps)) / (2 * eps)
    np.testing.assert_allclose(value, reference(0.3, 1.1))
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)


def test_two_loops_over_the_same_sequence_become_one():
    x = wt.dvector("x")
    doubled, _ = wb.scan(lambda xt: xt * 2.0, sequences=x, name="double")
    sums, _ = wb.scan(lambda xt, acc: acc + xt, sequences=x, outputs_info=np.float64(0),
                      name="sum")
    other = wt.dvector("other")
    mixed, _ = wb.scan(lambda xt, o: o.sum() * xt, sequences=x, non_sequences=other,
                       name="mix")
    values = (np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    for linker in ("py", "c"):
        f = wb.function([x, other], [doubled, sums, mixed], linker=linker)
        assert f.maker.rewrite_trace.rewrites_used().get("scan_merge") == 2
        (node,) = _scan_nodes(f)
        assert node.op.info.n_seqs == 1  # x read once for the three bodies
        got = f(*values)
        np.testing.assert_allclose(got[0], [2.0, 4.0, 6.0])
        np.testing.assert_allclose(got[1], [1.0, 3.0, 6.0])
        np.testing.assert_allclose(got[2], [15.0, 30.0, 45.0])


def test_a_loop_that_reads_another_loop_is_not_merged_with_it():
    x = wt.dvector("x")
    first, _ = wb.scan(lambda xt: xt * 2.0, sequences=x)
    second, _ = wb.scan(lambda xt, f: xt + f.sum(), sequences=x, non_sequences=first)
    f = wb.function([x], second, linker="py")
    assert len(_scan_nodes(f)) == 2
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), [7.0, 8.0])


def test_invariant_work_made_by_the_body_rewrite_moves_out_too():
    x = wt.dmatrix("x")
    h0 = wt.dvector("h0")
    w = wt.dmatrix("w")
    u = wt.dmatrix("u")
    hs, _ = wb.scan(lambda xt, h, w_, u_: wt.tanh(wt.dot(xt, w_) + wt.dot(h, u_)),
                    sequences=x, outputs_info=h0, non_sequences=[w, u], name="rnn")
    f = wb.function([x, h0, w, u], hs)
    steps = [s for s in f.maker.rewrite_trace.steps if s.rewrite == "rewrite_inner_graph"]
    made = {s.rewrite for s in steps[0].inner_trace.steps}
    assert "local_dot_to_gemv" in made  # the body's rewrite transposes w for a Gemv ...
    (node,) = _scan_nodes(f)
    body_ops = [str(n.op) for n in node.op.fgraph.apply_nodes]
    assert not any(op.startswith("DimShuffle") for op in body_ops), body_ops  # ... once
    rng = np.random.default_rng(0)
    values = (rng.normal(size=(4, 1)), rng.normal(size=3), rng.normal(size=(1, 3)),
              rng.normal(size=(3, 3)))
    reference = wb.function([x, h0, w, u], hs, linker="py", mode=wb.Mode(linker="py"))
    np.testing.assert_allclose(f(*values), reference(*values))


def rnn_reference(xs, h0, w, u, b):
    """NumPy forward and full BPTT of h_t = tanh(x_t w + h_{t-1} u + b), cost sum(h**2):
    (cost, dw, du, db, dh0)."""
    hs, h = [], h0
    for xt in xs:
        h = np.tanh(xt @ w + h @ u + b)
        hs.append(h)
    dw, du, db, adjoint = np.zeros_like(w), np.zeros_like(u), np.zeros_like(b), 0.0
    for t in range(len(xs) - 1, -1, -1):
        dz = (2 * hs[t] + adjoint) * (1 - hs[t] ** 2)
        prev = hs[t - 1] if t else h0
        dw, du, db = dw + xs[t].T @ dz, du + prev.T @ dz, db + dz.sum(0)
        adjoint = dz @ u.T
    return sum((h**2).sum() for h in hs), dw, du, db, adjoint


def rnn_training_step(linker, wrt=("w", "u", "b")):
    x, h0 = wt.dtensor3("x"), wt.dmatrix("h0")
    w, u, b = wt.dmatrix("w"), wt.dmatrix("u"), wt.dvector("b")
    hs, _ = wb.scan(lambda xt, h, w_, u_, b_: wt.tanh(wt.dot(xt, w_) + wt.dot(h, u_) + b_),
                    sequences=x, outputs_info=h0, non_sequences=[w, u, b], name="rnn")
    cost = (hs**2).sum()
    named = {"w": w, "u": u, "b": b, "h0": h0}
    return wb.function([x, h0, w, u, b], [cost, *wb.grad(cost, [named[v] for v in wrt])],
                       linker=linker)


def rnn_values(steps=5, batch=3, hidden=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(steps, batch, hidden)), rng.normal(size=(batch, hidden)),
            rng.normal(size=(hidden, hidden)) * 0.5, rng.normal(size=(hidden, hidden)) * 0.5,
            rng.normal(size=hidden) * 0.5]


def test_bptt_for_the_weights_does_not_compute_the_sequences_gradient():
    """The backward loop computes a gradient row per step for each sequence; a training
    step reads none of them: scan_remove_unused drops those outputs (and their products)."""
    values = rnn_values()
    expected = rnn_reference(*values)[:4]
    for linker in ("py", "c"):
        f = rnn_training_step(linker)
        assert "scan_remove_unused" in f.maker.rewrite_trace.rewrites_used()
        backward = [n for n in _scan_nodes(f) if n.op.name == "grad of rnn"]
        assert len(backward) == 1 and backward[0].op.info.n_nit_sot == 0
        for got, want in zip(f(*values), expected):
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_an_unread_output_of_a_loop_is_not_computed():
    x = wt.dvector("x")
    (sums, doubled), _ = wb.scan(lambda xt, acc: (acc + xt, wt.exp(xt) * 2), sequences=x,
                                 outputs_info=[np.float64(0), None], name="two")
    values = np.array([1.0, 2.0, 3.0])
    for linker in ("py", "c"):
        f = wb.function([x], sums, linker=linker)
        (node,) = _scan_nodes(f)
        assert node.op.info.n_nit_sot == 0 and len(node.outputs) == 1
        assert not any("exp" in str(n.op) for n in node.op.fgraph.apply_nodes)
        np.testing.assert_allclose(f(values), np.cumsum(values))


def test_bptt_adds_each_steps_weight_gradient_into_one_buffer_in_place():
    """The backward loop keeps only the last row of its accumulators (the sums of the
    weights' gradients): their ring is one row, which the body's Gemm{inplace} updates,
    so no step allocates or copies a weight-sized array; the adjoint of h0, which nobody
    asked for, is kept as its last row too."""
    from workbench.core.tensor.blas import Gemm

    values = rnn_values(steps=7)
    expected = rnn_reference(*values)[:4]
    for linker in ("py", "c", "debug"):
        f = rnn_training_step(linker)
        (backward,) = [n for n in _scan_nodes(f) if n.op.name == "grad of rnn"]
        assert all(backward.op.keep_last)
        mutable = {v.name for v in backward.op.mutable_inner_inputs()}
        assert {"sum d w", "sum d u"} <= mutable
        gemms = [n for n in backward.op.fgraph.apply_nodes if isinstance(n.op, Gemm)]
        assert {n.inputs[0].name for n in gemms if n.op.inplace} == {"sum d w", "sum d u"}
        for _ in range(2):  # (a second call starts from fresh accumulators)
            for got, want in zip(f(*values), expected):
                np.testing.assert_allclose(got, want, rtol=1e-12)


def test_an_accumulator_row_is_not_overwritten_with_another_output():
    """A fused body may compute another output into the accumulator's row; the loop
    copies each output into its row after the step, so such a body is compiled with that
    accumulator copying (here the running sum times 3, before the add)."""
    x = wt.dvector("x")
    (sums, thrice), _ = wb.scan(lambda xt, acc: (acc + xt, acc * 3.0), sequences=x,
                                outputs_info=[np.float64(0), None], name="sum and thrice")
    values = np.array([1.0, 2.0, 3.0, 4.0])
    running = np.concatenate([[0.0], np.cumsum(values)[:-1]])
    for linker in ("py", "c", "debug"):
        f = wb.function([x], [sums[-1], thrice], linker=linker)
        last, got = f(values)
        np.testing.assert_allclose(last, values.sum())
        np.testing.assert_allclose(got, running * 3.0)


def test_bptt_reads_the_cost_gradient_of_the_visible_rows_without_padding_them():
    """The gradient of hs = out[1:] is that of the visible rows written into n + 1 rows of
    zeros; the backward loop reads the visible rows themselves (no n-row Alloc to fill),
    and h0's gradient is the adjoint the loop carries back (its own row got zero)."""
    from workbench.core.tensor.creation import Alloc

    values = rnn_values(steps=6, seed=3)
    _, dw, du, db, dh0 = rnn_reference(*values)
    for linker in ("py", "c"):
        f = rnn_training_step(linker, wrt=("w", "h0"))
        allocs = [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, Alloc)]
        assert all(n.outputs[0].type.ndim < 3 for n in allocs), allocs
        _, got_dw, got_dh0 = f(*values)
        np.testing.assert_allclose(got_dw, dw, rtol=1e-12)
        np.testing.assert_allclose(got_dh0, dh0, rtol=1e-12)


def test_the_last_row_of_an_empty_loop_is_its_initial_value_in_every_mode():
    # as in PyTensor (FAST_RUN and FAST_COMPILE): ys[-1] reads the loop's whole buffer
    v, n = wt.dvector("v"), wt.iscalar("n")
    ys, _ = wb.scan(lambda h: h * 2, outputs_info=v, n_steps=n)
    taps, _ = wb.scan(lambda a, b: a + b, outputs_info=dict(initial=v, taps=[-2, -1]),
                      n_steps=n)
    for options in ({"mode": "FAST_RUN"}, {"mode": "FAST_COMPILE"}, {"mode": "DEBUG"},
                    {"linker": "c"}):
        f = wb.function([v, n], [ys[-1], taps[-1], ys], **options)
        last, last_tap, rows = f(np.array([1.0, 2.0]), 0)
        np.testing.assert_array_equal(last, [1.0, 2.0])
        assert last_tap == 2.0 and rows.shape == (0, 2)
        last, last_tap, rows = f(np.array([1.0, 2.0]), 3)
        np.testing.assert_array_equal(last, [8.0, 16.0])
        assert last_tap == 8.0 and rows.shape == (3, 2)  # 1, 2, 3, 5, 8
