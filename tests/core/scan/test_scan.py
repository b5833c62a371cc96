"""scan: PyTensor's loop semantics, checked against NumPy loops, on the py and c linkers."""

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import available_linkers
from workbench.core.scan import Scan, ScanError

LINKERS = [name for name in ("py", "c", "gpu") if name in available_linkers()]


def run(inputs, outputs, *values, updates=None):
    """The outputs on every linker; all must agree with the Python VM. Returns py's."""
    results = {}
    for linker in LINKERS:
        f = wb.function(inputs, outputs, updates=updates, linker=linker)
        results[linker] = f(*values)
    reference = results["py"]
    for linker, got in results.items():
        for a, b in zip(np.atleast_1d(got) if not isinstance(got, list) else got,
                        np.atleast_1d(reference) if not isinstance(reference, list)
                        else reference):
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=f"linker {linker}")
    return reference


def test_cumulative_sum_and_product():
    x = wt.dvector("x")
    sums, _ = wb.scan(lambda xt, acc: acc + xt, sequences=x, outputs_info=np.float64(0))
    prods, _ = wb.scan(lambda xt, acc: acc * xt, sequences=x, outputs_info=np.float64(1))
    values = np.array([1.0, 2.0, -3.0, 0.5, 4.0])
    got_sum, got_prod = run([x], [sums, prods], values)
    np.testing.assert_allclose(got_sum, np.cumsum(values))
    np.testing.assert_allclose(got_prod, np.cumprod(values))


def test_polynomial_with_sequences_and_non_sequences():
    coefficients = wt.dvector("coefficients")
    x = wt.dscalar("x")
    powers = wt.arange(1000)
    terms, _ = wb.scan(lambda c, power, base: c * base**power,
                       sequences=[coefficients, powers], non_sequences=x)
    value = terms.sum()
    c = np.array([1.0, 0.0, 2.0, -1.5])
    got = run([coefficients, x], value, c, 3.0)
    np.testing.assert_allclose(got, np.polyval(c[::-1], 3.0))


def test_fibonacci_with_two_taps_and_a_static_length():
    start = wt.constant(np.array([0, 1], dtype="int64"))
    fib, _ = wb.scan(lambda a, b: a + b, outputs_info=dict(initial=start, taps=[-2, -1]),
                     n_steps=10)
    assert fib.type.shape == (10,)
    got = run([], fib)
    expected = [0, 1]
    for _ in range(10):
        expected.append(expected[-1] + expected[-2])
    np.testing.assert_array_equal(got, expected[2:])


def test_power_iteration_stops_with_until():
    a = wt.dmatrix("a")
    v0 = wt.dvector("v0")

    def step(v, matrix):
        w = wt.dot(matrix, v)
        w = w / wt.sqrt((w**2).sum())
        return w, wb.until(wt.abs(w - v).max() < 1e-10)

    vs, _ = wb.scan(step, outputs_info=v0, non_sequences=a, n_steps=500)
    assert vs.owner.inputs[0].owner.op.info.as_while
    matrix = np.array([[2.0, 1.0], [1.0, 3.0]])
    got = run([a, v0], vs, matrix, np.array([1.0, 0.0]))
    assert 3 < got.shape[0] < 500
    eigenvalues, eigenvectors = np.linalg.eigh(matrix)
    top = eigenvectors[:, -1] * np.sign(eigenvectors[0, -1])
    np.testing.assert_allclose(got[-1] * np.sign(got[-1][0]), top, atol=1e-8)


def _rnn(x, h0, w, u, b):
    hs, _ = wb.scan(lambda xt, h, w_, u_, b_: wt.tanh(wt.dot(xt, w_) + wt.dot(h, u_) + b_),
                    sequences=x, outputs_info=h0, non_sequences=[w, u, b], name="rnn")
    return hs


def _rnn_numpy(x, h0, w, u, b):
    h, out = h0, []
    for xt in x:
        h = np.tanh(xt @ w + h @ u + b)
        out.append(h)
    return np.array(out)


def _rnn_point(rng, steps=4, batch=2, n_in=3, hidden=5):
    return [rng.normal(size=(steps, batch, n_in)), rng.normal(size=(batch, hidden)),
            rng.normal(size=(n_in, hidden)) * 0.5, rng.normal(size=(hidden, hidden)) * 0.5,
            rng.normal(size=hidden)]


def test_rnn_forward_matches_numpy():
    x, h0, w, u = wt.dtensor3("x"), wt.dmatrix("h0"), wt.dmatrix("w"), wt.dmatrix("u")
    b = wt.dvector("b")
    point = _rnn_point(np.random.default_rng(0))
    got = run([x, h0, w, u, b], _rnn(x, h0, w, u, b), *point)
    np.testing.assert_allclose(got, _rnn_numpy(*point))


def test_rnn_gradient_wrt_weights_and_initial_state_against_finite_differences():
    point = _rnn_point(np.random.default_rng(1))
    wb.verify_grad(lambda x, h0, w, u, b: _rnn(x, h0, w, u, b), point)
    # and one gradient against a NumPy central difference of the NumPy RNN
    x, h0, w, u = wt.dtensor3("x"), wt.dmatrix("h0"), wt.dmatrix("w"), wt.dmatrix("u")
    b = wt.dvector("b")
    cost = (_rnn(x, h0, w, u, b)[-1] ** 2).sum()
    gu, gh0 = wb.grad(cost, [u, h0])
    got_u, got_h0 = run([x, h0, w, u, b], [gu, gh0], *point)

    def numpy_cost(h0_, u_):
        return (_rnn_numpy(point[0], h0_, point[2], u_, point[4])[-1] ** 2).sum()

    eps = 1e-6
    for (i, j) in [(0, 0), (2, 3), (4, 1)]:
        bump = np.zeros_like(point[3])
        bump[i, j] = eps
        numeric = (numpy_cost(point[1], point[3] + bump)
                   - numpy_cost(point[1], point[3] - bump)) / (2 * eps)
        np.testing.assert_allclose(got_u[i, j], numeric, rtol=1e-6)
    bump = np.zeros_like(point[1])
    bump[1, 2] = eps
    numeric = (numpy_cost(point[1] + bump, point[3])
               - numpy_cost(point[1] - bump, point[3])) / (2 * eps)
    np.testing.assert_allclose(got_h0[1, 2], numeric, rtol=1e-6)


def test_gradient_through_mit_sot_taps_and_sequence_taps():
    def fun(x, init):
        out, _ = wb.scan(lambda x_prev, x_now, y2, y1: wt.sin(y2) * x_now + y1 * x_prev,
                         sequences=dict(input=x, taps=[-1, 0]),
                         outputs_info=dict(initial=init, taps=[-2, -1]))
        return out

    rng = np.random.default_rng(2)
    wb.verify_grad(fun, [rng.normal(size=6), rng.normal(size=3)])


def test_hessian_vector_product_through_a_loop():
    w = wt.dvector("w")
    v = wt.dvector("v")
    x = wt.dmatrix("x")
    hs, _ = wb.scan(lambda xt, h, w_: wt.tanh(xt * w_ + h), sequences=x,
                    outputs_info=wt.zeros_like(w), non_sequences=w)
    cost = (hs**2).sum()
    g = wb.grad(cost, w)
    hv = wb.grad((g * v).sum(), w)
    rng = np.random.default_rng(3)
    xs, w0, v0 = rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=3)
    got = run([x, w, v], hv, xs, w0, v0)

    def numpy_grad(w_):
        h, hs_ = np.zeros(3), []
        for xt in xs:
            h = np.tanh(xt * w_ + h)
            hs_.append(h)
        # reverse mode by hand: gh is the adjoint of h_t, pre that of tanh's argument
        gw, gh = np.zeros(3), np.zeros(3)
        for t in reversed(range(len(xs))):
            gh = gh + 2 * hs_[t]
            pre = gh * (1 - hs_[t] ** 2)
            gw += pre * xs[t]
            gh = pre
        return gw

    eps = 1e-6
    numeric = (numpy_grad(w0 + eps * v0) - numpy_grad(w0 - eps * v0)) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-8)


def test_truncate_gradient_backpropagates_only_the_last_steps():
    x = wt.dvector("x")
    w = wt.dscalar("w")
    steps, keep = 6, 3
    hs, _ = wb.scan(lambda xt, h, w_: w_ * h + xt, sequences=x, outputs_info=np.float64(0.5),
                    non_sequences=w, truncate_gradient=keep)
    gw = wb.grad(hs[-1], w)
    xs, w0 = np.arange(1.0, steps + 1), 0.7
    h = [0.5]
    for xt in xs:
        h.append(w0 * h[-1] + xt)
    # d h_n / d w through the last `keep` steps only: sum over s of w^(n-1-s) * h_{s-1}
    expected = sum(w0 ** (steps - 1 - s) * h[s] for s in range(steps - keep, steps))
    np.testing.assert_allclose(run([x, w], gw, xs, w0), expected)


def truncated_bptt(xs, h0, a, keep, direct_row, direct_weight):
    """NumPy reference of PyTensor's truncated BPTT for h_t = tanh(a h_{t-1} + x_t) and
    cost = sum(h**2) / 2 + direct_weight * h[direct_row]: the backward loop visits the
    last `keep` steps only; earlier sequence rows and the initial state get no gradient
    through the loop (PyTensor 3's Scan.L_op: the sit-sot buffer's rows before the cut
    keep their direct gradient, which for h0 is zero)."""
    n = len(xs)
    hs, h = [], h0
    for xt in xs:
        h = np.tanh(a * h + xt)
        hs.append(h)
    hs = np.array(hs)
    prev = np.concatenate([[h0], hs[:-1]])
    direct = hs.copy()
    direct[direct_row] += direct_weight
    adjoint, gx, ga = 0.0, np.zeros(n), 0.0
    for t in range(n - 1, max(n - keep, 0) - 1, -1):
        dz = (direct[t] + adjoint) * (1 - hs[t] ** 2)
        gx[t], ga, adjoint = dz, ga + dz * prev[t], dz * a
    gh0 = adjoint if keep >= n else 0.0
    return gx, gh0, ga


@pytest.mark.parametrize("keep", [2, 4, 6, 9])
def test_truncated_bptt_matches_pytensors_semantics(keep):
    """Truncated at `keep` steps of 6: gradients w.r.t. the sequence, the initial state and
    the weight as PyTensor computes them (a cost term on the row just before the cut does
    not reach the sequence row that made it; h0 gets a gradient only when nothing is cut)."""
    x, h0, a = wt.dvector("x"), wt.dscalar("h0"), wt.dscalar("a")
    hs, _ = wb.scan(lambda xt, h, a_: wt.tanh(a_ * h + xt), sequences=x, outputs_info=h0,
                    non_sequences=a, truncate_gradient=keep)
    cost = (hs**2).sum() / 2 + 3.0 * hs[1]
    grads = wb.grad(cost, [x, h0, a])
    xs, h0v, av = np.linspace(-1, 1, 6), 0.3, 0.7
    got = run([x, h0, a], grads, xs, np.float64(h0v), np.float64(av))
    expected = truncated_bptt(xs, h0v, av, keep, 1, 3.0)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-15)


def test_go_backwards_walks_the_sequence_from_the_end():
    x = wt.dvector("x")
    sums, _ = wb.scan(lambda xt, acc: acc + xt, sequences=x, outputs_info=np.float64(0),
                      go_backwards=True)
    values = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(run([x], sums, values), np.cumsum(values[::-1]))
    wb.verify_grad(lambda s: wb.scan(lambda xt, acc: acc * xt + xt, sequences=s,
                                     outputs_info=np.float64(1), go_backwards=True)[0],
                   [values])


def test_shared_variable_updated_inside_the_loop():
    total = wb.shared(np.float64(10.0), name="total")
    x = wt.dvector("x")
    outs, updates = wb.scan(lambda xt: (xt * total, {total: total + xt}), sequences=x)
    assert list(updates) == [total]
    f = wb.function([x], outs, updates=updates)
    got = f(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(got, [10.0, 22.0, 39.0])  # each step sees the updated total
    np.testing.assert_allclose(total.get_value(), 16.0)


def test_zero_steps_give_empty_outputs_and_unchanged_state():
    n = wt.lscalar("n")
    x0 = wt.dvector("x0")
    counter = wb.shared(np.float64(1.0), name="counter")
    hs, updates = wb.scan(lambda h: (h * 2, {counter: counter + 1}), outputs_info=x0,
                          n_steps=n)
    f = wb.function([n, x0], [hs, wb.grad(hs.sum(), x0)], updates=updates)
    values, gradient = f(0, np.array([1.0, 2.0]))
    assert values.shape == (0, 2)
    np.testing.assert_array_equal(gradient, [0.0, 0.0])
    assert counter.get_value() == 1.0
    values, gradient = f(3, np.array([1.0, 2.0]))
    np.testing.assert_allclose(values[-1], [8.0, 16.0])
    np.testing.assert_allclose(gradient, [14.0, 14.0])
    assert counter.get_value() == 4.0


def test_nit_sot_outputs_and_none_in_outputs_info():
    x = wt.dvector("x")
    outs, _ = wb.scan(lambda xt, acc: (acc + xt, xt**2), sequences=x,
                      outputs_info=[np.float64(0), None])
    sums, squares = run([x], outs, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(sums, [1.0, 3.0, 6.0])
    np.testing.assert_allclose(squares, [1.0, 4.0, 9.0])


def test_a_step_returning_the_wrong_shape_names_the_loop_and_output():
    x0 = wt.dvector("x0")
    hs, _ = wb.scan(lambda h: wt.concatenate([h, h]), outputs_info=x0, n_steps=3,
                    name="doubler")
    for linker in LINKERS:
        f = wb.function([x0], hs, linker=linker)
        with pytest.raises(ScanError, match=r"loop 'doubler': at step 0, recurrent output 0 "
                                            r"has shape \(4,\), but it must have shape \(2,\)"):
            f(np.ones(2))


def test_a_dtype_mismatch_between_step_and_initial_value_is_refused_clearly():
    x = wt.dvector("x")
    with pytest.raises(TypeError, match=r"scan 'scan': output 0 .*float64.*int8"):
        wb.scan(lambda xt, acc: acc + xt, sequences=x, outputs_info=0)


def test_the_loop_prints_with_its_body_and_runs_in_debug_mode():
    x = wt.dvector("x")
    w = wt.dscalar("w")
    hs, _ = wb.scan(lambda xt, h: wt.tanh(h * w + xt), sequences=x,
                    outputs_info=np.float64(0), name="tiny")
    text = wb.dprint(hs, file="str")
    assert "Scan{tiny, for}" in text and "loop body of" in text
    cost = hs.sum()
    f = wb.function([x, w], [cost, wb.grad(cost, w)], mode="DEBUG")
    reference = wb.function([x, w], [cost, wb.grad(cost, w)], linker="py")
    values = (np.array([0.1, 0.2, 0.3]), 0.9)
    np.testing.assert_allclose(f(*values), reference(*values))


def test_a_nested_loop_names_its_rows_with_one_tap_suffix():
    x, s0 = wt.dmatrix("x"), wt.dvector("s0")

    def outer(row, s):
        inner, _ = wb.scan(lambda xi, si: si + xi, sequences=row, outputs_info=s)
        return inner[-1]

    sums, _ = wb.scan(outer, sequences=x, outputs_info=s0, name="outer")
    text = wb.dprint(sums, file="str")
    assert "x[t]" in text and "s0[t-1]" in text
    assert "[t][t]" not in text and "[t-1][t" not in text
    xv, sv = np.arange(6.0).reshape(3, 2), np.array([1.0, 2.0])
    expected, s = [], sv
    for row in xv:
        s = s + row.sum()
        expected.append(s)
    np.testing.assert_allclose(run([x, s0], sums, xv, sv), expected)


def test_r_op_through_a_loop_matches_finite_differences():
    x = wt.dvector("x")
    w = wt.dscalar("w")
    dw = wt.dscalar("dw")
    hs, _ = wb.scan(lambda xt, h, w_: wt.sin(h * w_) + xt, sequences=x,
                    outputs_info=np.float64(0.3), non_sequences=w)
    jvp = wb.Rop(hs, w, dw)
    assert isinstance(jvp.owner.inputs[0].owner.op, Scan)
    xs = np.array([0.5, -0.2, 0.8])
    got = run([x, w, dw], jvp, xs, 1.3, 1.0)
    f = wb.function([x, w], hs)
    numeric = (f(xs, 1.3 + 1e-6) - f(xs, 1.3 - 1e-6)) / 2e-6
    np.testing.assert_allclose(got, numeric, rtol=1e-6)


def test_a_loop_round_trips_through_a_graph_file(tmp_path):
    from workbench.io import load, save

    x = wt.dvector("x")
    w = wt.dscalar("w")
    hs, _ = wb.scan(lambda xt, h: wt.tanh(h * w + xt), sequences=x,
                    outputs_info=np.float64(0), name="saved")
    path = tmp_path / "loop.json"
    save(hs, path, inputs=[x, w])
    loaded = load(path)
    assert wb.dprint(loaded.outputs, file="str") == wb.dprint(hs, file="str")
    values = (np.array([0.1, 0.2, 0.3]), 0.9)
    np.testing.assert_allclose(wb.function(loaded.inputs, loaded.outputs[0])(*values),
                               wb.function([x, w], hs)(*values))


def test_a_shape_change_in_a_later_step_is_caught_on_every_linker():
    lengths = wt.lvector("lengths")
    rows, _ = wb.scan(lambda n: wt.arange(n) * 1.0, sequences=lengths, name="ragged")
    for linker in LINKERS:
        f = wb.function([lengths], rows, linker=linker)
        np.testing.assert_allclose(f(np.array([2, 2])), [[0.0, 1.0], [0.0, 1.0]])
        with pytest.raises(ScanError, match=r"loop 'ragged': at step 2, output 0 \(not fed "
                                            r"back\) has shape \(3,\), but its earlier values "
                                            r"have shape \(2,\)"):
            f(np.array([2, 2, 3, 2]))


def test_the_c_linker_runs_the_steps_in_c_and_agrees_with_python():
    if "c" not in LINKERS:
        pytest.skip("no C compiler")
    a = wt.dscalar("a")
    x = wt.dmatrix("x")
    outs, _ = wb.scan(lambda xt, y, z: (y * 0.5 + xt.sum(), z + xt, y * z.sum()),
                      sequences=x, outputs_info=[a, wt.zeros(3), None], name="mixed")
    f = wb.function([a, x], outs, linker="c")
    scan_node = next(n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, Scan))
    values = (np.array(2.0), np.arange(12.0).reshape(4, 3)[::-1])  # a reversed view
    got = f(*values)
    assert scan_node.op.runner("c").c_loop is not None
    expected = wb.function([a, x], outs, linker="py")(*values)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e)


def test_the_inspector_expands_a_loop_into_its_body():
    from workbench.inspector import to_networkx, to_svg

    x = wt.dvector("x")
    w = wt.dscalar("w")
    hs, _ = wb.scan(lambda xt, h: wt.tanh(h * w + xt), sequences=x,
                    outputs_info=np.float64(0), name="rnn")
    closed, opened = to_networkx(hs), to_networkx(hs, expand=True)
    inner = {k for k, d in opened.nodes(data=True) if d["inner_of"] is not None}
    assert set(closed) == set(opened) - inner
    assert {opened.nodes[k]["text"] for k in inner} >= {"x[t]", "rnn.out0[t-1]", "w",
                                                         "Elemwise{tanh}"}
    scan_key = next(k for k, d in opened.nodes(data=True) if d.get("op_class") == "Scan")
    feeds = [(s, t) for s, t, d in opened.edges(data=True) if d.get("feeds")]
    assert any(t == scan_key for _, t in feeds)  # the body's output goes to the loop
    x_key = next(k for k, d in opened.nodes(data=True) if d["obj"] is x)
    assert any(s == x_key and opened.nodes[t]["text"] == "x[t]" for s, t in feeds)
    letter = closed.nodes[scan_key]["label"]
    assert set(to_networkx(hs, expand=[letter])) == set(opened)
    svg = to_svg(opened)
    assert 'class="edge feeds"' in svg and "data-inner-of" in svg


def test_the_profiler_reports_the_time_inside_a_loop_per_body_node():
    x = wt.dmatrix("x")
    w = wt.dmatrix("w")
    hs, _ = wb.scan(lambda xt, h, w_: wt.tanh(wt.dot(h, w_) + xt), sequences=x,
                    outputs_info=wt.zeros(3), non_sequences=w, name="rnn")
    for linker in LINKERS:
        f = wb.function([x, w], hs, linker=linker)
        stats = wb.profile(f, np.ones((7, 3)), np.eye(3) * 0.5, calls=2, warmup=1)
        (inner,) = stats.inner().values()
        assert inner.calls == 14  # 7 steps x 2 measured calls (the warm-up is forgotten)
        rows = inner.by_node()
        assert rows and all(row.calls == 14 for row in rows)
        text = str(stats)
        assert "Inside Scan{rnn, for} (14 steps" in text
        assert any("tanh" in row.node for row in rows)


def test_unroll_writes_a_short_loop_out_with_the_same_values():
    from workbench.core.scan import unroll

    x = wt.dvector("x")
    start = wt.dvector("start")
    outs, _ = wb.scan(lambda xt, a, b: (a * b + xt, xt * 2.0), sequences=x,
                      outputs_info=[dict(initial=start, taps=[-2, -1]), None], n_steps=4)
    written = unroll(outs)
    from workbench.core.graph.basic import io_toposort

    assert not any(isinstance(n.op, Scan) for n in io_toposort([x, start], written))
    values = (np.array([0.5, 1.0, -1.0, 2.0, 3.0]), np.array([1.0, 2.0]))
    for a, b in zip(wb.function([x, start], written)(*values),
                    wb.function([x, start], outs)(*values)):
        np.testing.assert_allclose(a, b)
    assert unroll(outs, max_steps=3)[0] is outs[0]  # longer loops stay loops


def test_map_reduce_and_the_folds():
    x = wt.dvector("x")
    squares, _ = wb.map(lambda xt: xt**2, sequences=x)
    total, _ = wb.reduce(lambda xt, acc: acc + xt, sequences=x, outputs_info=np.float64(0))
    left, _ = wb.foldl(lambda xt, acc: acc * 2.0 + xt, sequences=x, outputs_info=np.float64(0))
    right, _ = wb.foldr(lambda xt, acc: acc * 2.0 + xt, sequences=x,
                        outputs_info=np.float64(0))
    values = np.array([1.0, 2.0, 3.0])
    got = run([x], [squares, total, left, right], values)
    np.testing.assert_allclose(got[0], values**2)
    assert float(got[1]) == 6.0
    assert float(got[2]) == ((1.0 * 2 + 2.0) * 2 + 3.0)
    assert float(got[3]) == ((3.0 * 2 + 2.0) * 2 + 1.0)
    f = wb.function([x], total)
    (node,) = [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, Scan)]
    assert node.op.keep_last == (True,)  # a reduction keeps no history
