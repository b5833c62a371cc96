"""Loops on the gpu linker (on torch's CPU device here): every value stays a device tensor
inside the loop, nothing is copied to or read back from the host per step, and a
while-loop reads its condition back only after 1, 2, 4, ... steps, discarding the steps
it ran past the stop."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")

import workbench.tensor as wt  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.core.scan import run as scan_run  # noqa: E402

#: the ways a value leaves the device or is read by the host
READS = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__")


@contextlib.contextmanager
def host_reads(monkeypatch):
    """Record every host read or transfer of a torch tensor, and every NumPy array made a
    tensor: (what, inside a run of loop steps) per event."""
    events: list[tuple[str, bool]] = []
    inside = [False]
    for name in READS:
        real = getattr(torch.Tensor, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            events.append((_name, inside[0]))
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, spy)
    for name in ("from_numpy", "tensor", "as_tensor"):  # host data made a device tensor
        real = getattr(torch, name)

        def make(*args, _real=real, _name=name, **kwargs):
            events.append((_name, inside[0]))
            return _real(*args, **kwargs)

        monkeypatch.setattr(torch, name, make)
    real_steps = scan_run.LoopRunner._python_steps

    def steps(self, start, stop, *args, **kwargs):
        inside[0] = True
        try:
            return real_steps(self, start, stop, *args, **kwargs)
        finally:
            inside[0] = False

    monkeypatch.setattr(scan_run.LoopRunner, "_python_steps", steps)
    yield events


def _rnn(steps):
    x, h0, w = wt.dmatrix("x"), wt.dvector("h0"), wt.dmatrix("W")
    hs, _ = wb.scan(lambda xt, h, w_: wt.tanh(xt + h @ w_), sequences=x, outputs_info=h0,
                    non_sequences=w, name="rnn")
    ys, _ = wb.map(lambda ht: (ht**2).sum(), sequences=hs, name="norms")
    r = np.random.default_rng(0)
    return [x, h0, w], [hs, ys], [r.normal(size=(steps, 4)), r.normal(size=4),
                                  r.normal(size=(4, 4)) * 0.5]


def test_a_for_loop_on_the_device_moves_nothing_to_the_host_inside_the_loop(monkeypatch):
    inputs, outputs, values = _rnn(steps=40)
    f = wb.function(inputs, outputs, linker="gpu")
    expected = wb.function(inputs, outputs, linker="py")(*values)
    f(*values)  # (the first call compiles the body)
    with host_reads(monkeypatch) as events:
        got = f(*values)
    assert [what for what, inside in events if inside] == []
    # outside the steps: the arguments in, n_steps read once per loop, the outputs out
    assert len(events) < 20
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def _power_iteration(tol=1e-9):
    """Power iteration: stop when the vector moves less than `tol`."""
    a, v0 = wt.dmatrix("A"), wt.dvector("v0")

    def step(v, a_):
        w = a_ @ v
        w = w / wt.sqrt((w**2).sum())
        return w, wb.until(wt.sqrt(((w - v) ** 2).sum()) < tol)

    vs, _ = wb.scan(step, outputs_info=v0, non_sequences=a, n_steps=500, name="power")
    return [a, v0], vs


def _matrix(n=5, gap=0.8):
    r = np.random.default_rng(3)
    q, _ = np.linalg.qr(r.normal(size=(n, n)))
    return q @ np.diag([1.0, gap] + [0.1] * (n - 2)) @ q.T


def test_a_while_loop_on_the_device_reads_its_condition_back_rarely(monkeypatch):
    inputs, vs = _power_iteration()
    values = [_matrix(), np.ones(5)]
    expected = wb.function(inputs, vs, linker="py")(*values)
    steps = len(expected)
    assert 40 < steps < 500  # (the test needs a loop that stops on its own, long enough)
    f = wb.function(inputs, [vs, vs[-1]], linker="gpu")
    f(*values)
    with host_reads(monkeypatch) as events:
        got, last = f(*values)
    assert [what for what, inside in events if inside] == []  # none inside a run of steps
    # one read after steps 1, 2, 4, ... 64 apart: O(log n + n / 64), not one per step
    reads = [what for what, inside in events if what in ("__int__", "item", "__bool__")]
    assert len(reads) <= 3 + int(np.log2(scan_run.UNTIL_CHECK_MAX)) + steps // 64, reads
    np.testing.assert_allclose(got, expected, rtol=1e-12)  # the steps past the stop dropped
    np.testing.assert_allclose(last, expected[-1], rtol=1e-12)


@pytest.mark.parametrize("stop_at", [1, 2, 3, 7, 64, 65, 130])
def test_a_while_loop_on_the_device_stops_where_python_stops(stop_at):
    # a kept-last output (only its last row used), a nit-sot, and one kept entirely
    x0 = wt.dscalar("x0")

    def step(x):
        return [x + 1.0, x * 2.0], wb.until(x + 1.0 >= stop_at)

    (xs, doubled), _ = wb.scan(step, outputs_info=[x0, None], n_steps=200, name="count")
    outputs = [xs[-1], doubled[-1], xs, doubled]
    got = wb.function([x0], outputs, linker="gpu")(0.0)
    expected = wb.function([x0], outputs, linker="py")(0.0)
    assert len(expected[2]) == stop_at
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def test_an_error_in_a_step_past_the_stop_is_not_raised():
    # step t reads table[t]: the loop stops at step 2, a step run past it (3) reads out of
    # range, which the loop ignores as the steps past the stop are not part of the loop
    i0, table = wt.lscalar("i0"), wt.dvector("table")

    def step(i, t):
        return i + 1, t[i] * 2.0, wb.until(i + 1 >= 3)

    (idx, vals), _ = wb.scan(step, outputs_info=[i0, None], non_sequences=table, n_steps=50)
    f = wb.function([i0, table], [idx, vals], linker="gpu")
    got_idx, got_vals = f(0, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(got_idx, [1, 2, 3])
    np.testing.assert_array_equal(got_vals, [2.0, 4.0, 6.0])
    with pytest.raises(IndexError):  # (a step before the stop that fails still raises)
        f(0, np.array([1.0, 2.0]))


def test_a_generator_carried_by_a_while_loop_ends_in_its_state_at_the_stop():
    rng = wb.shared(np.random.default_rng(2), name="rng")

    def step(k):
        d = wb.random.normal(0.0, 1.0, size=(2,), rng=rng)
        return k + 1.0, {rng: d.owner.outputs[0]}, wb.until(k + 1.0 >= 5)

    ks, updates = wb.scan(step, outputs_info=wt.as_tensor_variable(np.float64(0)),
                          n_steps=100, name="drawing")
    f = wb.function([], ks, updates=updates, linker="gpu")
    assert len(f()) == 5
    # five draws, each taking one seed from the generator, whatever ran past the stop
    numpy_rng = np.random.default_rng(2)
    for _ in range(5):
        numpy_rng.integers(2**63)
    assert rng.get_value().bit_generator.state == numpy_rng.bit_generator.state


def _shape_work():
    """A loop body reading its row's length: zeros of that length, a reshape to it."""
    x, h0 = wt.dmatrix("x"), wt.dvector("h0")

    def step(xt, h):
        n = xt.shape[0]
        column = (h + xt + wt.zeros(n)).reshape((n, 1))
        return column.sum(axis=1) * 0.5

    hs, _ = wb.scan(step, sequences=x, outputs_info=h0, name="shapes")
    r = np.random.default_rng(4)
    return [x, h0], hs, [r.normal(size=(30, 5)), r.normal(size=5)]


def test_shape_work_in_a_loop_body_stays_host_ints(monkeypatch):
    # the lengths read from x[t] and used as lengths (Alloc, Reshape) are never a device
    # tensor: no tensor made from host data, no read back, at any step
    inputs, hs, values = _shape_work()
    f = wb.function(inputs, hs, linker="gpu")
    f(*values)
    with host_reads(monkeypatch) as events:
        got = f(*values)
    assert [what for what, inside in events if inside] == []
    np.testing.assert_allclose(got, wb.function(inputs, hs, linker="py")(*values), rtol=1e-12)


def test_a_shape_read_by_arithmetic_or_returned_is_still_a_tensor():
    x = wt.dmatrix("x")
    outputs = [x.shape[0] * 2, x.shape, x.reshape((x.shape[1], x.shape[0]))]
    got = wb.function([x], outputs, linker="gpu")(np.ones((2, 3)))
    assert int(got[0]) == 4 and got[1].tolist() == [2, 3] and got[2].shape == (3, 2)


def test_a_gamma_draw_in_a_loop_reads_nothing_back_per_step(monkeypatch):
    rng = wb.shared(np.random.default_rng(6), name="rng")
    x = wt.dvector("x")

    def step(xt):
        draw = wb.random.gamma(np.array([0.5, 2.0]), 3.0, size=(4, 2), rng=rng)
        return xt * draw.sum(), {rng: draw.owner.outputs[0]}

    ys, updates = wb.scan(step, sequences=x, name="gammas")
    f = wb.function([x], ys, updates=updates, linker="gpu")
    f(np.ones(3))
    with host_reads(monkeypatch) as events:
        got = f(np.ones(40))
    assert [what for what, inside in events if inside] == []
    assert got.shape == (40,) and len(set(got.tolist())) == 40 and (got > 0).all()
