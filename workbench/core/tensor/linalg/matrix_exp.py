"""The matrix exponential: `Expm` and `expm` (scipy.linalg.expm, stacks of matrices
included).

`perform` is the scaling-and-squaring method with Padé approximants of Higham (2005),
"The scaling and squaring method for the matrix exponential revisited", SIAM J. Matrix
Anal. Appl. 26(4): the smallest Padé degree m in (3, 5, 7, 9, 13) whose bound theta_m
the 1-norm of the matrix respects; above theta_13 the matrix is scaled by 2^-s, its
degree-13 approximant computed and squared s times. ``r_m = (V - U)^-1 (V + U)`` with U
the odd and V the even part of the Padé numerator (a solve, never an inverse).
Computed in the input's own precision, as scipy.linalg.expm (float32 and complex64 in
single precision: float32 output, accurate to about 1e-6 relative, as scipy's; the
bounds theta_m are the double-precision ones for every dtype, as scipy's). For real
matrices the C linker runs the same algorithm in generated C, its products by
OpenBLAS's dgemm/sgemm and its solve by LAPACK's dgesv/sgesv
(link/c/ops/matrix_exp.py; no LAPACK routine computes expm itself); complex ones run
this `perform`; torch uses `torch.linalg.matrix_exp` (in the input's precision too).

Gradient (and R_op): the Fréchet derivative by the block-triangular identity
``expm([[X, E], [0, X]]) = [[expm(X), L(X, E)], [0, expm(X)]]`` (Higham, "Functions
of Matrices", 2008, (3.16)): ``ga = L(a^T, g)``, ``R_op = L(a, ea)``: one expm of a
matrix twice the size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Variable
from workbench.core.tensor.linalg.base import LinalgOp, as_lapack_operands, transpose

__all__ = ["Expm", "expm", "expm_numpy"]

#: Higham's bounds theta_m on ||A||_1 for the degree-m Padé approximant (double precision)
THETA = {3: 1.495585217958292e-2, 5: 2.539398330063230e-1, 7: 9.504178996162932e-1,
         9: 2.097847961257068e0, 13: 5.371920351148152e0}

#: the coefficients b_0 .. b_m of the degree-m Padé approximant of exp
PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0, 1.0),
}


def _pade(a: np.ndarray, m: int) -> np.ndarray:
    """r_m(a) = (V - U)^-1 (V + U)."""
    b = PADE[m]
    n = a.shape[0]
    ident = np.eye(n, dtype=a.dtype)
    a2 = a @ a
    if m < 13:
        powers = [ident, a2]
        while len(powers) <= m // 2:
            powers.append(powers[-1] @ a2)
        u = a @ sum(b[2 * j + 1] * powers[j] for j in range(m // 2 + 1))
        v = sum(b[2 * j] * powers[j] for j in range(m // 2 + 1))
    else:
        a4 = a2 @ a2
        a6 = a4 @ a2
        u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2)
                 + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
        v = (a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2)
             + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident)
    return np.linalg.solve(v - u, v + u)


def _sinch(x: Any) -> Any:
    """sinh(x) / x, by its series near 0 (no cancellation)."""
    if abs(x) < 0.0135:
        x2 = x * x
        return 1 + (x2 / 6.0) * (1 + (x2 / 20.0) * (1 + (x2 / 42.0)))
    return np.sinh(x) / x


def _exact_triangle(r: np.ndarray, t: np.ndarray, j: int) -> None:
    """Set the diagonal and first superdiagonal of `r` (an approximation of
    ``expm(2^j t)``, `t` upper triangular) to their exact values: ``exp(2^j t_kk)``
    and Higham's (10.42), ``t12 exp((l1 + l2) / 2) sinch((l1 - l2) / 2)`` (Al-Mohy and
    Higham 2009, Code Fragment 2.1), in double precision as the C linker; the strict
    lower triangle to 0."""
    wide = np.result_type(t.dtype, np.float64)
    scale = 2.0 ** j
    d = t.diagonal().astype(wide) * scale
    n = r.shape[0]
    r[np.tril_indices(n, -1)] = 0
    r[np.arange(n), np.arange(n)] = np.exp(d)
    for k in range(n - 1):
        t12 = wide.type(t[k, k + 1]) * scale
        r[k, k + 1] = t12 * np.exp(0.5 * (d[k] + d[k + 1])) * _sinch(0.5 * (d[k] - d[k + 1]))


def expm_numpy(a: np.ndarray) -> np.ndarray:
    """The matrix exponential of one square matrix (Higham 2005), in its dtype (float32,
    float64, complex64 or complex128: Python floats meeting it keep it, NEP 50). For a
    triangular matrix the diagonal and first superdiagonal are recomputed exactly
    after the approximant and after each squaring (Al-Mohy and Higham 2009, as
    scipy.linalg.expm): a squaring doubles their rounding errors (the nilpotent
    [[0, 1e10], [0, 0]] lost 2.4e-7 on its unit diagonal). A diagonal matrix is the
    exponential of its diagonal, as scipy's, infinities included (exp(-inf) = 0);
    another matrix with an inf or a NaN gives NaN everywhere."""
    n = a.shape[0]
    if n == 0:
        return np.zeros((0, 0), a.dtype)
    if not np.any(a[~np.eye(n, dtype=bool)]):  # diagonal: exp of it, as scipy (inf: inf)
        with np.errstate(over="ignore"):
            return np.diag(np.exp(np.diag(a))).astype(a.dtype)
    if not np.all(np.isfinite(a)):
        return np.full((n, n), np.nan, a.dtype)
    upper, lower = not np.any(np.tril(a, -1)), not np.any(np.triu(a, 1))
    if lower and not upper:  # expm(a) = expm(a^T)^T
        return np.ascontiguousarray(expm_numpy(np.ascontiguousarray(a.T)).T)
    norm = np.abs(a).sum(axis=0).max()
    s, m = 0, 13
    for degree in (3, 5, 7, 9):
        if norm <= THETA[degree]:
            m = degree
            break
    else:
        s = max(0, int(np.ceil(np.log2(float(norm) / THETA[13]))))
        a = a / a.dtype.type(2.0 ** s)
    result = _pade(a, m)
    if upper:
        _exact_triangle(result, a, 0)
    for k in range(s):
        result = result @ result
        if upper:
            _exact_triangle(result, a, k + 1)
    return result


class Expm(LinalgOp):
    """The matrix exponential of each square matrix (scipy.linalg.expm)."""

    __props__ = ()
    gufunc_signature = "(m,m)->(m,m)"
    function_name = "expm"

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        (a,) = inputs
        batch = int(np.prod(a.shape[:-2], dtype=np.int64))
        flat = np.asarray(a, dtype=node.outputs[0].type.numpy_dtype).reshape(
            (batch,) + a.shape[-2:])
        result = np.empty_like(flat)
        for k in range(flat.shape[0]):
            result[k] = expm_numpy(flat[k])
        output_storage[0][0] = result.reshape(a.shape).astype(node.outputs[0].type.numpy_dtype)

    def flops(self, inputs: list[tuple[int, ...]], outputs: list[tuple[int, ...]]) -> float:
        n = inputs[0][-1]
        return float(np.prod(inputs[0][:-2])) * 12 * n ** 3

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """``L(a^T, g)``, the Fréchet derivative at ``a^T`` in the direction g."""
        (a,), (g,) = inputs, output_grads
        return [frechet(transpose(a), g)]

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Variable | None]
             ) -> list[Variable | None]:
        """``L(a, ea)``."""
        (a,), (ea,) = inputs, eval_points
        return [None if ea is None else frechet(a, ea)]


def frechet(x: Variable, e: Variable) -> Variable:
    """``L(x, e)``: the upper-right block of ``expm([[x, e], [0, x]])``."""
    from workbench.core.tensor.creation import zeros_like
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.shape import shape_tuple

    nd = x.type.ndim
    top = concatenate([x, e], axis=nd - 1)
    bottom = concatenate([zeros_like(x), x], axis=nd - 1)
    big = Expm()(concatenate([top, bottom], axis=nd - 2))
    n = shape_tuple(x)[-1]
    return big[(slice(None),) * (nd - 2) + (slice(None, n), slice(n, None))]


def expm(a: Any) -> Variable:
    """scipy.linalg.expm: the matrix exponential of each square matrix of `a`."""
    (a,) = as_lapack_operands("expm", a, min_ndims=(2,))
    return Expm()(a)
