"""(7) Linear algebra: `solve` of a 500x500 float64 system, and a Gaussian process's
negative log marginal likelihood with its gradient at n = 1000 (quick: 200 and 300).

The GP: a squared-exponential kernel with three log-hyperparameters (lengthscale,
signal variance, noise variance) on n points; ``nll = 0.5 y^T K^-1 y + sum(log(diag
L)) + n/2 log(2 pi)`` through the Cholesky factor ``L`` and two triangular solves,
with the gradient with respect to the three hyperparameters. workbench, PyTensor and
JAX differentiate the same graph; the NumPy/SciPy reference is written by hand
(``0.5 tr((K^-1 - alpha alpha^T) dK/dtheta)``, ``K^-1`` by ``cho_solve`` of the
identity), which is what a careful person writes without autodiff.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wb_bench.common import (
    SUBJECT,
    Case,
    Context,
    Row,
    check_close,
    jax_module,
    pytensor_modes,
    pytensor_module,
)


def gp_data(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(-5, 5, n))
    y = np.sin(x) + 0.1 * rng.standard_normal(n)
    return x, y, np.array([0.3, 0.1, np.log(0.05)])


def gp_graph(lib: Any, cholesky: Any, cho_solve: Any, x: Any, y: Any, params: Any) -> Any:
    """The negative log likelihood with `lib` (workbench.tensor, pytensor.tensor or
    jax.numpy) and its Cholesky and cho_solve."""
    sqdist = (x[:, None] - x[None, :]) ** 2
    k = lib.exp(params[1]) * lib.exp(-0.5 * sqdist / lib.exp(2 * params[0]))
    k = k + lib.exp(params[2]) * lib.eye(x.shape[0])
    factor = cholesky(k)
    alpha = cho_solve((factor, True), y)
    return (0.5 * (y * alpha).sum() + lib.log(lib.diagonal(factor)).sum()
            + 0.5 * x.shape[0] * np.log(2 * np.pi))


def numpy_gp(x: np.ndarray, y: np.ndarray, params: np.ndarray) -> tuple[float, np.ndarray]:
    """The same value and gradient by hand with NumPy and SciPy."""
    from scipy.linalg import cho_factor, cho_solve

    n = x.shape[0]
    sqdist = (x[:, None] - x[None, :]) ** 2
    ell2, s2, noise = np.exp(2 * params[0]), np.exp(params[1]), np.exp(params[2])
    rbf = s2 * np.exp(-0.5 * sqdist / ell2)
    k = rbf + noise * np.eye(n)
    factor = cho_factor(k, lower=True, check_finite=False)
    alpha = cho_solve(factor, y, check_finite=False)
    nll = (0.5 * y @ alpha + np.log(np.diag(factor[0])).sum() + 0.5 * n * np.log(2 * np.pi))
    inner = cho_solve(factor, np.eye(n), check_finite=False) - np.outer(alpha, alpha)
    d_ell = rbf * sqdist / ell2  # dK / dlog(ell)
    grads = [0.5 * np.sum(inner * d_ell), 0.5 * np.sum(inner * rbf),
             0.5 * noise * np.trace(inner)]
    return float(nll), np.array(grads)


def _solve_case(ctx: Context, pt: Any, jax: Any) -> list[Row]:
    import workbench.tensor as wt

    import workbench as wb
    from workbench.core.link.c.ops.lapack_solo import solo_library

    n = 200 if ctx.quick else 500
    rng = np.random.default_rng(5)
    a_value = rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)
    b_value = rng.standard_normal(n)
    expected = np.linalg.solve(a_value, b_value)
    case = Case(f"solve {n}x{n} f64")
    a, b = wt.dmatrix("a"), wt.dvector("b")
    try:
        fn = wb.function([a, b], wt.linalg.solve(a, b), linker="c")
        check_close(expected, fn(a_value, b_value), case.name)
        case.add(SUBJECT, lambda: fn(a_value, b_value),
                 note="getrf+getrs, rcond by a probe solve (gecon's estimate if inconclusive)"
                      + ("; one-thread calls on the scipy-openblas64 copy (lapack_solo.py)"
                         if solo_library() is not None else ""))
    except Exception as exc:  # noqa: BLE001
        case.fail(SUBJECT, exc)
    case.add("numpy", lambda: np.linalg.solve(a_value, b_value))
    try:
        import scipy.linalg

        case.add("scipy", lambda: scipy.linalg.solve(a_value, b_value, check_finite=False),
                 note="check_finite=False")
    except ImportError as exc:
        case.fail("scipy", exc)
    if pt is not None:
        import pytensor.tensor as ptt

        pa, pb = ptt.dmatrix("a"), ptt.dvector("b")
        for label, mode in pytensor_modes(ctx):
            try:
                pfn = pt.function([pa, pb], ptt.linalg.solve(pa, pb), mode=mode)
                check_close(expected, pfn(a_value, b_value), f"{case.name} ({label})")
                case.add(label, lambda pfn=pfn: pfn(a_value, b_value))
            except Exception as exc:  # noqa: BLE001
                case.fail(label, exc)
    if jax is not None:
        import jax.numpy as jnp

        jfn = jax.jit(jnp.linalg.solve)
        ja, jb = jax.device_put(a_value), jax.device_put(b_value)
        check_close(expected, np.asarray(jfn(ja, jb)), f"{case.name} (jax)")
        case.add("jax jit", lambda: jfn(ja, jb).block_until_ready())
    return case.measure(ctx)


def _gp_case(ctx: Context, pt: Any, jax: Any) -> list[Row]:
    import workbench.tensor as wt

    import workbench as wb

    n = 300 if ctx.quick else 1000
    x_value, y_value, p_value = gp_data(n)
    nll_ref, grad_ref = numpy_gp(x_value, y_value, p_value)
    case = Case(f"GP nll + gradient n={n} f64")
    x, y, params = wt.dvector("x"), wt.dvector("y"), wt.dvector("params")
    try:
        nll = gp_graph(wt, wt.linalg.cholesky, wt.linalg.cho_solve, x, y, params)
        fn = wb.function([x, y, params], [nll, wb.grad(nll, params)], linker="c")
        value, grad = fn(x_value, y_value, p_value)
        check_close(nll_ref, value, case.name)
        check_close(grad_ref, grad, case.name, rtol=1e-5)
        case.add(SUBJECT, lambda: fn(x_value, y_value, p_value))
    except Exception as exc:  # noqa: BLE001
        case.fail(SUBJECT, exc)
    case.add("numpy+scipy", lambda: numpy_gp(x_value, y_value, p_value),
             note="gradient by hand, K^-1 by cho_solve")
    if pt is not None:
        import pytensor
        import pytensor.tensor as ptt
        from pytensor.tensor.linalg import cho_solve as pt_cho_solve

        px, py, pp = ptt.dvector("x"), ptt.dvector("y"), ptt.dvector("params")
        pnll = gp_graph(ptt, ptt.linalg.cholesky, pt_cho_solve, px, py, pp)
        for label, mode in pytensor_modes(ctx):
            try:
                pfn = pt.function([px, py, pp], [pnll, pytensor.grad(pnll, pp)], mode=mode)
                value, grad = pfn(x_value, y_value, p_value)
                check_close(grad_ref, grad, f"{case.name} ({label})", rtol=1e-5)
                case.add(label, lambda pfn=pfn: pfn(x_value, y_value, p_value))
            except Exception as exc:  # noqa: BLE001
                case.fail(label, exc)
    if jax is not None:
        import jax.numpy as jnp
        import jax.scipy.linalg as jsl

        def jax_nll(p: Any, xs: Any, ys: Any) -> Any:
            return gp_graph(jnp, lambda k: jnp.linalg.cholesky(k), jsl.cho_solve, xs, ys, p)

        jfn = jax.jit(jax.value_and_grad(jax_nll))
        jx, jy, jp = (jax.device_put(v) for v in (x_value, y_value, p_value))
        value, grad = jfn(jp, jx, jy)
        check_close(grad_ref, np.asarray(grad), f"{case.name} (jax)", rtol=1e-5)
        case.add("jax jit", lambda: jax.block_until_ready(jfn(jp, jx, jy)),
                 note="value_and_grad")
    return case.measure(ctx)


def run(ctx: Context) -> list[Row]:
    pt = pytensor_module(ctx)
    jax = jax_module(ctx)
    return _solve_case(ctx, pt, jax) + _gp_case(ctx, pt, jax)
