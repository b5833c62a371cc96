"""Gradients of QR and SVD beyond the catalogue: wide QR (m < n) in every mode, shapes
known only when run, full_matrices=True SVD used through its first k columns, and
the refusal, naming the case, where the gradient is not defined."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.graph.type import NullTypeGradError
from workbench.core.tensor.linalg.rectangular import zero_beyond

la = wt.linalg


def finite_differences(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


# Q of mode='complete' of a tall matrix is refused (tested below)
SHAPES_AND_MODES = [(shape, mode) for shape in [(2, 4), (3, 5), (2, 3, 5), (5, 3), (3, 3)]
                    for mode in ["reduced", "r", "complete"]
                    if not (mode == "complete" and shape[-2] > shape[-1])]


@pytest.mark.parametrize(("shape", "mode"), SHAPES_AND_MODES)
def test_qr_gradient_for_every_shape_and_mode(shape, mode) -> None:

    def cost(a):
        if mode == "complete":  # complete needs the shape statically (wide or square)
            a = wt.specify_shape(a, shape)
        out = la.qr(a, mode=mode)
        if mode == "r":
            return (out ** 2 * 1.3 + out).sum()
        q, r = out
        return (q ** 3).sum() + (r * r.sum()).sum() + (q[..., :1] * 2).sum()

    wb.verify_grad(cost, [np.random.default_rng(0).normal(size=shape)],
                   rng=np.random.default_rng(1))


def test_wide_qr_gradient_when_the_shape_is_known_only_when_run() -> None:
    a = wt.dmatrix("a")
    q, r = la.qr(a)
    f = wb.function([a], wb.grad((q ** 3).sum() + (r ** 2).sum(), a))

    def cost(x):
        qq, rr = np.linalg.qr(x)
        return (qq ** 3).sum() + (rr ** 2).sum()

    for shape in [(3, 5), (5, 3)]:  # the same graph for a wide and a tall matrix
        x = np.random.default_rng(2).normal(size=shape)
        np.testing.assert_allclose(f(x), finite_differences(cost, x), atol=1e-7)


def test_complete_q_of_a_tall_matrix_is_refused() -> None:
    a = wt.TensorType("float64", (5, 3))("a")
    q, _ = la.qr(a, mode="complete")
    with pytest.raises(NullTypeGradError, match="Q of mode='complete' of a tall matrix"):
        wb.grad(q.sum(), a)


@pytest.mark.parametrize("static", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (3, 3), (2, 5, 3)])
def test_complete_qr_gradient_through_the_reduced_part(shape, static) -> None:
    # R of mode='complete' of a tall matrix raised 'solve_triangular: ... must be square,
    # but a's are (5, 3)'; a shape known only when run refused every gradient of Q
    k = min(shape[-2:])

    def cost(a):
        q, r = la.qr(wt.specify_shape(a, shape) if static else a, mode="complete")
        sign = wt.sign(wt.linalg.diagonal(r[..., :k, :k]))  # as numpy's, on both sides
        return (r ** 2).sum() + ((q[..., :k] * sign[..., None, :]) ** 3).sum()

    wb.verify_grad(cost, [np.random.default_rng(3).normal(size=shape)],
                   rng=np.random.default_rng(4))


def test_complete_q_of_a_tall_matrix_known_only_when_run_raises_when_run() -> None:
    a = wt.dmatrix("a")
    q, _ = la.qr(a, mode="complete")
    f = wb.function([a], wb.grad((q ** 3).sum(), a))
    assert f(np.random.default_rng(5).normal(size=(3, 5))).shape == (3, 5)
    with pytest.raises(ValueError, match="extra columns of the Q that mode='complete'"):
        f(np.random.default_rng(5).normal(size=(5, 3)))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 3)])
def test_full_svd_gradient_through_the_first_k_columns(shape) -> None:
    k = min(shape[-2:])

    def cost(a):
        u, s, vh = la.svd(wt.specify_shape(a, shape))
        u, vh = u[..., :, :k], vh[..., :k, :]
        signs = wt.sign(u[..., :1, :])  # each singular pair's sign fixed
        return ((u * signs) ** 3).sum() + s.sum() + ((la.base.transpose(signs) * vh) ** 3).sum()

    wb.verify_grad(cost, [np.random.default_rng(3).normal(size=shape)],
                   rng=np.random.default_rng(4))


def test_full_svd_singular_values_gradient_for_any_shape() -> None:
    a = wt.dmatrix("a")
    _, s, _ = la.svd(a)
    f = wb.function([a], wb.grad(s.sum(), a))
    for shape in [(5, 3), (3, 5)]:
        x = np.random.default_rng(5).normal(size=shape)
        u, _, vh = np.linalg.svd(x, full_matrices=False)
        np.testing.assert_allclose(f(x), u @ vh, atol=1e-12)


@pytest.mark.parametrize("use", [lambda u, vh: u[:, 3:].sum(), lambda u, vh: (u ** 2).sum(),
                                 lambda u, vh: (u.T @ u).sum()])
def test_full_svd_gradient_through_the_extra_columns_is_refused(use) -> None:
    a = wt.TensorType("float64", (5, 3))("a")
    u, _, vh = la.svd(a)
    with pytest.raises(NullTypeGradError, match="extra columns of U .* arbitrary basis"):
        wb.grad(use(u, vh), a)


def test_zero_beyond_reads_the_gradient_graph() -> None:
    u = wt.dmatrix("u")
    zeros = wt.zeros((5, 5))
    assert zero_beyond(wt.set_subtensor(zeros[:, :3], u), 1, 3)
    assert zero_beyond(wt.inc_subtensor(zeros[1:, 2], wt.dvector("v")), 1, 3)
    assert zero_beyond(wt.set_subtensor(zeros[:, :2], u) + wt.set_subtensor(zeros[:, 1:3], u),
                       1, 3)
    assert not zero_beyond(wt.set_subtensor(zeros[:, 2:], u), 1, 3)
    assert not zero_beyond(wt.set_subtensor(zeros[:, -1], wt.dvector("v")), 1, 3)
    assert not zero_beyond(wt.dmatrix("g"), 1, 3)


def test_full_svd_gradient_of_a_vectorized_graph() -> None:
    """vectorize_graph wraps the slicing in Blockwise; its gradient (a Blockwise set,
    reshaped and summed over the batch) still shows the extra columns unused."""
    a = wt.TensorType("float64", (4, 2))("a")
    u, s, _ = la.svd(a)
    batched = wt.TensorType("float64", (None, 4, 2))("b")
    # even powers: the same whatever sign each singular pair gets
    (cost,) = wb.vectorize_graph([(u[:, :2] ** 4).sum() + s.sum()], {a: batched})
    f = wb.function([batched], wb.grad(cost.sum(), batched))
    values = np.random.default_rng(6).normal(size=(3, 4, 2))
    for item, got in zip(values, f(values)):
        x = wt.dmatrix("x")
        thin_u, thin_s, _ = la.svd(x, full_matrices=False)
        one = wb.function([x], wb.grad((thin_u ** 4).sum() + thin_s.sum(), x))
        np.testing.assert_allclose(got, one(item), rtol=1e-10, atol=1e-12)


def test_full_svd_gradient_of_a_matrix_of_unknown_shape_is_checked_when_run() -> None:
    # NumPy's default full_matrices=True on a dmatrix: the gradient is built, and the
    # extra columns of U / rows of Vh (none for a square matrix) must get no gradient.
    a = wt.dmatrix("a")
    u, s, vh = la.svd(a)
    everything = wb.function([a], wb.grad(u.sum() + s.sum() + vh.sum(), a))
    thin = wb.function([a], wb.grad((u[:, :2] ** 4).sum() + (vh[:2] ** 2).sum(), a))
    x = wt.dmatrix("x")
    tu, _, tvh = la.svd(x, full_matrices=False)
    for shape in [(3, 3), (4, 2), (2, 4)]:
        value = np.random.default_rng(7).normal(size=shape)
        t = wb.function([x], wb.grad((tu[:, :2] ** 4).sum() + (tvh[:2] ** 2).sum(), x))
        np.testing.assert_allclose(thin(value), t(value), rtol=1e-10, atol=1e-12)
    wb.verify_grad(lambda m: sum(o.sum() for o in la.svd(m)),
                   [np.random.default_rng(8).normal(size=(3, 3))],
                   rng=np.random.default_rng(9))
    with pytest.raises(ValueError, match="extra columns of U .* full_matrices=False"):
        everything(np.random.default_rng(7).normal(size=(4, 2)))
