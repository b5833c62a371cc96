"""Loops drawing random numbers: fresh draws at every step, and gradients through the
loop that reuse the forward pass's draws (the generator is a carried state with a
disconnected adjoint; the backward loop reads the recorded draws, never draws)."""

import copy

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import Mode, available_linkers
from workbench.core.grad import is_disconnected
from workbench.core.scan import Scan

LINKERS = [name for name in ("py", "c", "gpu") if name in available_linkers()]
NUMPY_STREAM_LINKERS = [name for name in LINKERS if name != "gpu"]  # (torch's streams differ)


def loops_of(f):
    return [n for n in f.maker.fgraph.apply_nodes if isinstance(n.op, Scan)]


def test_random_draws_inside_the_loop_are_fresh_at_every_step_and_carry_on():
    srng = wb.random.RandomStream(seed=3)
    x = wt.dvector("x")
    ys, updates = wb.scan(lambda xt: xt + srng.normal(0.0, 1.0, size=()), sequences=x,
                          name="noisy")
    (rng,) = updates
    start = copy.deepcopy(rng.get_value())
    one = wb.random.normal(0.0, 1.0, size=(), rng=rng)  # the same draws, one per call
    draw = wb.function([], one, updates={rng: one.owner.outputs[0]}, linker="py")
    expected = [float(draw()) for _ in range(8)]
    for linker in LINKERS:
        rng.set_value(copy.deepcopy(start))
        f = wb.function([x], ys, updates=updates, linker=linker)
        first, second = f(np.zeros(4)), f(np.zeros(4))
        assert len(set(first.tolist())) == 4  # a new draw at each step
        if linker in NUMPY_STREAM_LINKERS:
            np.testing.assert_allclose(np.concatenate([first, second]), expected)


SEED, KEEP, HIDDEN, STEPS = 5, 0.7, 3, 4


def _dropout_rnn(rng):
    """An RNN whose step drops hidden units: h' = tanh(x_t + h W) * mask / keep."""
    x, h0, w = wt.dmatrix("x"), wt.dvector("h0"), wt.dmatrix("W")

    def step(xt, h, w_):
        mask = wb.random.bernoulli(KEEP, size=(HIDDEN,), rng=rng)
        return wt.tanh(xt + h @ w_) * mask / KEEP, {rng: mask.owner.outputs[0]}

    hs, updates = wb.scan(step, sequences=x, outputs_info=h0, non_sequences=w, name="dropout")
    return [x, h0, w], (hs**2).sum(), updates


def _loop_node(cost):
    """The Scan node a cost of `_dropout_rnn` is computed from."""
    from workbench.core.graph.basic import ancestors

    return next(v.owner for v in ancestors([cost]) if v.owner and isinstance(v.owner.op, Scan))


def _rnn_values():
    r = np.random.default_rng(1)
    return [r.normal(size=(STEPS, HIDDEN)), r.normal(size=HIDDEN) * 0.3,
            r.normal(size=(HIDDEN, HIDDEN))]


@pytest.mark.parametrize("linker", NUMPY_STREAM_LINKERS)
def test_gradient_through_dropout_equals_the_gradient_with_the_masks_as_a_sequence(linker):
    rng = wb.shared(np.random.default_rng(SEED), name="rng")
    (x, h0, w), cost, updates = _dropout_rnn(rng)
    f = wb.function([x, h0, w], [cost, *wb.grad(cost, [w, h0])], updates=updates,
                    linker=linker)
    # the same loop with NumPy's masks (the same seed, the same calls) given as a sequence
    numpy_rng = np.random.default_rng(SEED)
    masks = np.array([numpy_rng.binomial(1, KEEP, size=HIDDEN) for _ in range(STEPS)])
    m = wt.dmatrix("masks")
    hs, _ = wb.scan(lambda xt, mt, h, w_: wt.tanh(xt + h @ w_) * mt / KEEP,
                    sequences=[x, m], outputs_info=h0, non_sequences=w)
    cost_given = (hs**2).sum()
    given = wb.function([x, h0, w, m], [cost_given, *wb.grad(cost_given, [w, h0])],
                        linker="py")
    values = _rnn_values()
    for got, expected in zip(f(*values), given(*values, masks)):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    # one forward loop for the cost and the gradient, drawing once: the generator moved
    # on by the STEPS draws of the forward pass only
    assert sorted(n.op.name for n in loops_of(f)) == ["dropout", "grad of dropout"]
    assert rng.get_value().bit_generator.state == numpy_rng.bit_generator.state


def _noisy_loop(mu, log_sigma, w, h0):
    """A loop with reparameterised noise: mu + sigma * eps, and a draw normal(mu, sigma)."""
    rng = wb.shared(np.random.default_rng(11), name="rng")

    def step(h, mu_, log_sigma_, w_):
        sigma = wt.exp(log_sigma_)
        eps = wb.random.normal(0.0, 1.0, size=(3,), rng=rng)
        z = wb.random.normal(mu_, sigma, size=(3,), rng=eps.owner.outputs[0])
        return wt.tanh(h * w_ + mu_ + sigma * eps) + 0.1 * z, {rng: z.owner.outputs[0]}

    hs, _ = wb.scan(step, outputs_info=h0, non_sequences=[mu, log_sigma, w], n_steps=5,
                    name="noisy")
    return hs


@pytest.mark.parametrize("linker", LINKERS)
def test_verify_grad_through_reparameterised_noise_with_a_fixed_seed(linker):
    # verify_grad's function does not update the generator: every evaluation, the finite
    # differences' and the gradient's, sees the same noise
    r = np.random.default_rng(0)
    point = [r.normal(size=3), r.normal(size=3) * 0.3, r.normal(size=3), r.normal(size=3)]
    wb.verify_grad(_noisy_loop, point, mode=Mode(linker=linker))


def test_the_generator_state_has_a_disconnected_adjoint():
    rng = wb.shared(np.random.default_rng(0), name="rng")
    (x, h0, w), cost, _ = _dropout_rnn(rng)
    node = _loop_node(cost)
    grads = node.op.L_op(node.inputs, node.outputs,
                         [wt.ones_like(o) if isinstance(o.type, wt.TensorType)
                          else wb.core.grad.disconnected_type() for o in node.outputs])
    state = next(k for k in range(node.op.info.n_recurrent) if node.op.is_state(k))
    assert is_disconnected(grads[1 + node.op.info.n_seqs + state])


def test_draws_are_recorded_only_when_a_gradient_reads_them():
    rng = wb.shared(np.random.default_rng(0), name="rng")
    (x, h0, w), cost, updates = _dropout_rnn(rng)
    (forward_only,) = loops_of(wb.function([x, h0, w], cost, updates=updates))
    assert forward_only.op.info.n_recorded == 0  # (dropped: nothing reads the masks)
    with_grad = wb.function([x, h0, w], [cost, wb.grad(cost, w)], updates=updates)
    forward = next(n for n in loops_of(with_grad) if n.op.name == "dropout")
    assert forward.op.info.n_recorded == 1


def test_a_loop_built_without_records_records_them_for_its_gradient():
    # a Scan made by hand (here: the builder's loop without its records) still gets the
    # forward pass's draws: its gradient runs a loop recording them from the same state
    rng = wb.shared(np.random.default_rng(SEED), name="rng")
    (x, h0, w), cost, updates = _dropout_rnn(rng)
    node = _loop_node(cost)
    bare = node.op.without_records([0])(*node.inputs, return_list=True)
    assert bare[0].owner.op.info.n_recorded == 0
    bare_cost = (bare[0][1:] ** 2).sum()
    f = wb.function([x, h0, w], [bare_cost, wb.grad(bare_cost, w)], linker="py")
    g = wb.function([x, h0, w], [cost, wb.grad(cost, w)], linker="py")
    values = _rnn_values()
    for a, b in zip(f(*values), g(*values)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_r_op_and_a_hessian_vector_product_through_a_loop_with_noise():
    mu, w = wt.dvector("mu"), wt.dvector("w")
    hs = _noisy_loop(mu, wt.zeros_like(mu) - 1.0, w, wt.ones_like(mu) * 0.2)
    dw = wt.dvector("dw")
    cost = hs.sum()
    jvp = wb.Rop(cost, w, dw)
    hvp = wb.grad((wb.grad(cost, w) * dw).sum(), w)
    f = wb.function([mu, w, dw], [jvp, hvp])
    grad_f = wb.function([mu, w], wb.grad(cost, w))
    cost_f = wb.function([mu, w], cost)
    r = np.random.default_rng(4)
    mu_v, w_v, dw_v = r.normal(size=3), r.normal(size=3), r.normal(size=3)
    got_jvp, got_hvp = f(mu_v, w_v, dw_v)
    e = 1e-6  # (no update: the same noise at every call)
    np.testing.assert_allclose(got_jvp, (cost_f(mu_v, w_v + e * dw_v)
                                         - cost_f(mu_v, w_v - e * dw_v)) / (2 * e), rtol=1e-6)
    np.testing.assert_allclose(got_hvp, (grad_f(mu_v, w_v + e * dw_v)
                                         - grad_f(mu_v, w_v - e * dw_v)) / (2 * e),
                               rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("linker", LINKERS)
def test_a_while_loop_drawing_noise_has_the_gradient_of_its_draws(linker):
    # it stops when the noisy state passes 3: the backward loop runs the steps it ran
    rng = wb.shared(np.random.default_rng(4), name="rng")
    w = wt.dscalar("w")

    def step(h, w_):
        eps = wb.random.normal(0.0, 1.0, rng=rng)
        h_next = h * w_ + 0.1 * eps
        return h_next, {rng: eps.owner.outputs[0]}, wb.until(h_next > 3.0)

    hs, _ = wb.scan(step, outputs_info=wt.as_tensor_variable(np.float64(1.0)),
                    non_sequences=w, n_steps=50, name="noisy while")
    cost = hs.sum()
    f = wb.function([w], [wb.grad(cost, w), hs.shape[0]], linker=linker)
    cost_f = wb.function([w], cost, linker=linker)  # (no update: the same noise each call)
    got, steps = f(1.3)
    assert 1 < steps < 50
    numeric = (cost_f(1.3 + 1e-6) - cost_f(1.3 - 1e-6)) / 2e-6
    np.testing.assert_allclose(got, numeric, rtol=1e-6)


def test_debug_mode_checks_a_loop_with_dropout_and_its_gradient():
    rng = wb.shared(np.random.default_rng(SEED), name="rng")
    (x, h0, w), cost, _ = _dropout_rnn(rng)
    outputs = [cost, wb.grad(cost, w)]
    got = wb.function([x, h0, w], outputs, mode="DEBUG")(*_rnn_values())
    expected = wb.function([x, h0, w], outputs, linker="py")(*_rnn_values())
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def _inner_draws(f):
    """The random draws of the loop bodies of a compiled function."""
    from workbench.core.random.op import RandomVariable

    return [n.op for loop in loops_of(f) for n in loop.op.fgraph.apply_nodes
            if isinstance(n.op, RandomVariable)]


@pytest.mark.parametrize("linker", LINKERS)
def test_draws_in_a_loop_advance_its_generator_in_place_with_numpys_draws(linker):
    # the loop carries the generator as its own state: the body's two draws advance it
    # in place at every step (no copy per step) and give NumPy's sequence
    rng = wb.shared(np.random.default_rng(21), name="rng")
    x = wt.dvector("x")

    def step(xt):
        a = wb.random.normal(0.0, 1.0, size=(2,), rng=rng)
        b = wb.random.uniform(0.0, 1.0, size=(), rng=a.owner.outputs[0])
        return xt + a.sum() * b, {rng: b.owner.outputs[0]}

    ys, updates = wb.scan(step, sequences=x, name="two_draws")
    f = wb.function([x], ys, updates=updates, linker=linker)
    assert [op.inplace for op in _inner_draws(f)] == [True, True]
    got = np.concatenate([f(np.zeros(3)), f(np.zeros(2))])
    g = np.random.default_rng(21)
    if linker in NUMPY_STREAM_LINKERS:
        expected = [g.normal(size=2).sum() * g.uniform() for _ in range(5)]
        np.testing.assert_allclose(got, expected, rtol=1e-15)
        assert rng.get_value().bit_generator.state == g.bit_generator.state
    else:  # torch's streams: one seed taken per draw
        assert len(set(got.tolist())) == 5


@pytest.mark.parametrize("linker", LINKERS)
def test_a_loop_drawing_in_place_leaves_a_generator_it_does_not_update_alone(linker):
    # without the update the shared generator is read, not updated: each call draws the
    # same values from it, and it is not mutated (the loop advances its own copy)
    rng = wb.shared(np.random.default_rng(4), name="rng")
    x = wt.dvector("x")

    def step(xt):
        d = wb.random.normal(0.0, 1.0, size=(), rng=rng)
        return xt + d, {rng: d.owner.outputs[0]}

    ys, _ = wb.scan(step, sequences=x, name="reads")
    f = wb.function([x], ys, linker=linker)  # (the updates not given)
    assert [op.inplace for op in _inner_draws(f)] == [True]
    held = rng.get_value(borrow=True)
    state = copy.deepcopy(held.bit_generator.state)
    first, second = f(np.zeros(4)), f(np.zeros(4))
    np.testing.assert_array_equal(first, second)
    assert rng.get_value(borrow=True) is held and held.bit_generator.state == state
    if linker in NUMPY_STREAM_LINKERS:
        np.testing.assert_allclose(first, np.random.default_rng(4).normal(size=4))
