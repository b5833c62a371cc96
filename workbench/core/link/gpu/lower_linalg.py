"""torch lowerings of the linear-algebra Ops of `wt.linalg`, through `torch.linalg`.

Each kernel reads the same triangle the Op's `perform` and C read (the other one is
filled by symmetry, or zeroed, before torch sees the matrix), and turns torch's
failure reports (`info` of the ``*_ex`` functions, a zero on a triangular diagonal)
into the `numpy.linalg.LinAlgError` the other linkers raise, with the function's name.
Checking `info` reads one small tensor back from the device. Before torch sees them,
the core shapes are checked as on the other linkers (`LinalgOp.check_core_shapes`,
from the host's view of the shapes: no read back), and the solvers' `check_finite`
reads one flag back. A matrix with a NaN fails torch's Cholesky (`info` > 0), where
LAPACK's (OpenBLAS, numpy, the C linker) propagates the NaN: such a matrix gives
NaN here too, never an error the other linkers do not raise.

Complex matrices go to the same functions (torch.linalg computes in complex64 and
complex128); Hermitian structure ("her", "pos", cholesky) mirrors the read triangle
conjugated, "sym" mirrors it as is (scipy's complex symmetric). torch has no
symmetric-indefinite solver (LAPACK sysv/hesv, which the C linker calls): "sym" and
"her" solve the mirrored matrix by LU. The `LinAlgWarning` of the py and C linkers
about an ill-conditioned matrix is not raised here: torch reports no condition
estimate, and computing one would cost an inverse and a read back per call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply
from workbench.core.link.gpu.registry import Kernel, LowerContext, register_lowering
from workbench.core.tensor.linalg.base import ShapeCheck
from workbench.core.tensor.linalg.decompositions import Cholesky, CholeskyGrad, Eigh
from workbench.core.tensor.linalg.matrix_exp import Expm
from workbench.core.tensor.linalg.rectangular import QR, SVD
from workbench.core.tensor.linalg.solvers import (
    Det,
    DiagonalSolve,
    Inv,
    SLogDet,
    Solve,
    SolveTriangular,
    TriangularMatmul,
    not_finite_systems,
)

__all__ = ["lower_cholesky", "lower_eigh", "lower_qr", "lower_solve", "lower_solve_triangular",
           "lower_svd"]


def _symmetrized(torch: Any, a: Any, lower: bool, hermitian: bool = True) -> Any:
    """The matrix one triangle of `a` describes: mirrored conjugated when `hermitian`
    (the diagonal's imaginary part dropped, as LAPACK reads it), as is otherwise."""
    t = torch.tril(a) if lower else torch.triu(a)
    strict = torch.tril(a, -1) if lower else torch.triu(a, 1)
    if not (hermitian and a.is_complex()):
        return t + strict.mT
    full = t + strict.mH
    return full - 1j * torch.diag_embed(torch.diagonal(full, dim1=-2, dim2=-1).imag)


def _shape_checked(lower: Any) -> Any:
    """A lowering whose kernel first checks the core shapes of its inputs as the Op's
    `perform` and C do (`check_core_shapes`)."""
    import functools

    @functools.wraps(lower)
    def lowering(node: Apply, ctx: LowerContext) -> Kernel:
        kernel, check = lower(node, ctx), node.op.check_core_shapes

        def checked(*inputs: Any) -> list[Any]:
            check([x.shape for x in inputs])
            return kernel(*inputs)

        return checked

    return lowering


def _check_finite(torch: Any, op: Any, a: Any, b: Any) -> None:
    """scipy's ValueError for an inf or a NaN when the solver's `check_finite`."""
    if op.check_finite:
        op.check_finite_values(a, b, lambda v: bool(torch.isfinite(v).all()))


def _has_nan(torch: Any, a: Any) -> Any:
    """Per matrix of the stack `a`: whether it holds a NaN."""
    return torch.isnan(a).flatten(-2).any(-1)


def _raise_if_failed(torch: Any, info: Any, function: str, message: str,
                     offset: int = 0, nan_passes: Any = None) -> None:
    """LinAlgError when some `info` (one per matrix of the stack) is positive, except
    where `nan_passes` (one per matrix) says the matrix holds a NaN, which LAPACK
    propagates instead of failing."""
    failed = info > 0
    if nan_passes is not None:
        failed = failed & ~nan_passes
    if not bool(torch.any(failed)):
        return
    flat = info.reshape(-1)
    index = int(torch.nonzero(failed.reshape(-1))[0, 0])
    where = f" (matrix {index} of the stack)" if info.dim() > 0 else ""
    raise np.linalg.LinAlgError(f"{function}: {message}{int(flat[index]) + offset}{where}")


def _check_triangular_diagonal(torch: Any, t: Any, function: str) -> None:
    """scipy's error for a zero on the diagonal of a triangular system."""
    zero = torch.diagonal(t, dim1=-2, dim2=-1) == 0
    if not bool(torch.any(zero)):
        return
    flat = zero.reshape(-1, zero.shape[-1])
    row = int(torch.nonzero(flat.any(dim=1))[0, 0])
    column = int(torch.nonzero(flat[row])[0, 0])
    where = f" (matrix {row} of the stack)" if t.dim() > 2 else ""
    raise np.linalg.LinAlgError(
        f"{function}: singular matrix: resolution failed at diagonal {column}{where}")


def _common_batch(torch: Any, *stacks: Any) -> list[Any]:
    """Stacks of matrices expanded (not copied) to their common batch shape: torch's
    solvers broadcast some operands themselves and read others differently."""
    batch = torch.broadcast_shapes(*(s.shape[:-2] for s in stacks))
    return [s.expand(*batch, *s.shape[-2:]) for s in stacks]


def _triangular(torch: Any, a: Any, b: Any, lower: bool, trans: bool, unit: bool,
                function: str, conjugate: bool = False) -> Any:
    t = torch.tril(a) if lower else torch.triu(a)
    if not unit:
        _check_triangular_diagonal(torch, t, function)
    if trans:
        t, lower = (t.mH if conjugate else t.mT), not lower
    t, b = _common_batch(torch, t, b)
    return torch.linalg.solve_triangular(t, b, upper=not lower, unitriangular=unit)


def _by_the_nan_rule(torch: Any, op: Any, a: Any, b2: Any, solve: Any) -> Any:
    """``solve(a, b2)`` under the rule of non-finite input of unchecked solves
    (solvers.py's docstring, `not_finite_systems`): the systems with an inf or a NaN are
    solved as ``I x = 0``, then their solutions (columns) made NaN."""
    bad = not_finite_systems(op, a, b2, torch) if op.nan_rule else None
    if bad is None:
        return solve(a, b2)
    a_bad, columns_bad = bad
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    zero = torch.zeros((), dtype=b2.dtype, device=b2.device)
    x = solve(torch.where(a_bad[..., None, None], eye, a),
              torch.where(columns_bad[..., None, :], zero, b2))
    nan = torch.full((), float("nan"), dtype=x.dtype, device=x.device)
    return torch.where((a_bad[..., None] | columns_bad)[..., None, :], nan, x)


@register_lowering(Solve)
@_shape_checked
def lower_solve(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op

    def kernel(a: Any, b: Any) -> list[Any]:
        _check_finite(torch, op, a, b)
        b2 = b.unsqueeze(-1) if op.b_ndim == 1 else b
        x = _by_the_nan_rule(torch, op, a, b2, solve)
        return [x.squeeze(-1) if op.b_ndim == 1 else x]

    def solve(a: Any, b2: Any) -> Any:
        if op.assume_a == "tri":
            x = _triangular(torch, a, b2, op.lower, False, False, op.function_name)
        elif op.assume_a == "pos":
            full = _symmetrized(torch, a, op.lower)
            low, info = torch.linalg.cholesky_ex(full)
            _raise_if_failed(torch, info, op.function_name, "Matrix is not positive definite "
                             "(assume_a='pos'): the leading minor of order ",
                             nan_passes=_has_nan(torch, full))
            low, b2 = _common_batch(torch, low, b2)
            x = torch.cholesky_solve(b2, low)
        else:
            m = a if op.assume_a == "gen" else _symmetrized(torch, a, op.lower,
                                                            op.assume_a == "her")
            # b as a stack of matrices of the broadcast batch (torch reads a b of one
            # dimension less than a as a stack of vectors)
            _, b2 = _common_batch(torch, m, b2)
            x, info = torch.linalg.solve_ex(m, b2)
            _raise_if_failed(torch, info, op.function_name, "Singular matrix: U is exactly zero at "
                             "pivot ")
        return x

    return kernel


@register_lowering(ShapeCheck)
@_shape_checked
def lower_shape_check(node: Apply, ctx: LowerContext) -> Kernel:
    """The shapes checked (by the wrapper), the first input passed on."""
    return lambda *inputs: [inputs[0]]


@register_lowering(DiagonalSolve)
@_shape_checked
def lower_diagonal_solve(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op

    def kernel(d: Any, b: Any) -> list[Any]:
        _check_finite(torch, op, d, b)
        if op.hermitian and d.is_complex():
            d = d.real.to(b.dtype if b.is_complex() else d.dtype)
        if op.positive and bool(torch.any(d.real <= 0)):
            flat = (d.real <= 0).reshape(-1, d.shape[-1])
            row = int(torch.nonzero(flat.any(dim=1))[0, 0])
            where = f" (matrix {row} of the stack)" if d.dim() > 1 else ""
            raise np.linalg.LinAlgError("solve: Matrix is not positive definite "
                                        f"(assume_a='pos'){where}")
        zero = d == 0
        if bool(torch.any(zero)):
            flat = zero.reshape(-1, zero.shape[-1])
            row = int(torch.nonzero(flat.any(dim=1))[0, 0])
            where = f" (matrix {row} of the stack)" if d.dim() > 1 else ""
            position = int(torch.nonzero(flat[row])[0, 0])
            raise np.linalg.LinAlgError("solve: Singular matrix: the diagonal matrix has a "
                                        f"zero at position {position}{where}")
        return [b / d if op.b_ndim == 1 else b / d.unsqueeze(-1)]

    return kernel


@register_lowering(SolveTriangular)
@_shape_checked
def lower_solve_triangular(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op

    def kernel(a: Any, b: Any) -> list[Any]:
        _check_finite(torch, op, a, b)
        b2 = b.unsqueeze(-1) if op.b_ndim == 1 else b
        x = _triangular(torch, a, b2, op.lower, op.trans, op.unit_diagonal, "solve_triangular",
                        op.conjugate)
        return [x.squeeze(-1) if op.b_ndim == 1 else x]

    return kernel


@register_lowering(Cholesky)
@_shape_checked
def lower_cholesky(node: Apply, ctx: LowerContext) -> Kernel:
    torch, lower = ctx.torch, node.op.lower

    def kernel(a: Any) -> list[Any]:
        full = _symmetrized(torch, a, lower)
        low, info = torch.linalg.cholesky_ex(full)
        nan = _has_nan(torch, full)
        _raise_if_failed(torch, info, "cholesky", "Matrix is not positive definite: the "
                         "leading minor of order ", nan_passes=nan)
        if bool(torch.any(nan)):  # LAPACK's factor of such a matrix: NaN (module docstring)
            low = torch.where(nan[..., None, None], torch.tril(torch.full_like(low, np.nan)),
                              low)
        return [low if lower else low.mH.contiguous()]  # a = L L^H = U^H U

    return kernel


@register_lowering(Inv)
@_shape_checked
def lower_inv(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch

    def kernel(a: Any) -> list[Any]:
        y, info = torch.linalg.inv_ex(a)
        _raise_if_failed(torch, info, "inv", "Singular matrix: U is exactly zero at pivot ")
        return [y]

    return kernel


@register_lowering(Det)
@_shape_checked
def lower_det(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch
    return lambda a: [torch.linalg.det(a)]


@register_lowering(SLogDet)
@_shape_checked
def lower_slogdet(node: Apply, ctx: LowerContext) -> Kernel:
    torch = ctx.torch

    def kernel(a: Any) -> list[Any]:
        # numpy's sign from getrf's U and pivots (torch's slogdet gives 0 for a NaN):
        # a real diagonal entry flips it only when negative, a complex one by its phase
        if a.shape[-1] == 0:
            return list(torch.linalg.slogdet(a))
        lu, pivots, info = torch.linalg.lu_factor_ex(a)
        u = torch.diagonal(lu, dim1=-2, dim2=-1)
        modulus = u.abs()
        swaps = (pivots != torch.arange(1, a.shape[-1] + 1, dtype=pivots.dtype)).sum(-1)
        parity = 1 - 2 * (swaps % 2)
        if a.is_complex():
            sign = parity * torch.prod(u / modulus, dim=-1)
        else:
            sign = parity * (1 - 2 * ((u < 0).sum(-1) % 2))
        logdet = torch.log(modulus).sum(-1)
        singular = info > 0
        sign = torch.where(singular, torch.zeros_like(sign), sign).to(a.dtype)
        logdet = torch.where(singular, torch.full_like(logdet, -torch.inf), logdet)
        return [sign, logdet]

    return kernel


@register_lowering(Eigh)
@_shape_checked
def lower_eigh(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op
    uplo = "L" if op.lower else "U"

    def kernel(a: Any) -> list[Any]:
        try:
            if op.compute_v:
                w, v = torch.linalg.eigh(a, UPLO=uplo)
                return [w, v]
            return [torch.linalg.eigvalsh(a, UPLO=uplo)]
        except torch.linalg.LinAlgError as exc:  # no convergence (NaNs): numpy's error
            raise np.linalg.LinAlgError(
                f"{op.function_name}: Eigenvalues did not converge ({exc})") from None

    return kernel


@register_lowering(SVD)
@_shape_checked
def lower_svd(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op

    def kernel(a: Any) -> list[Any]:
        try:
            if not op.compute_uv:
                return [torch.linalg.svdvals(a)]
            u, s, vh = torch.linalg.svd(a, full_matrices=op.full_matrices)
        except torch.linalg.LinAlgError as exc:  # a NaN or an inf: numpy's error
            raise np.linalg.LinAlgError(f"svd: SVD did not converge ({exc})") from None
        return [u, s, vh]

    return kernel


@register_lowering(QR)
@_shape_checked
def lower_qr(node: Apply, ctx: LowerContext) -> Kernel:
    torch, mode = ctx.torch, node.op.mode

    def kernel(a: Any) -> list[Any]:
        if mode == "raw":  # numpy's (h, tau): geqrf's reflectors, transposed
            h, tau = torch.geqrf(a)
            return [h.mT.contiguous(), tau]
        q, r = torch.linalg.qr(a, mode=mode)
        return [r] if mode == "r" else [q, r]

    return kernel


@register_lowering(Expm)
@_shape_checked
def lower_expm(node: Apply, ctx: LowerContext) -> Kernel:
    """torch's matrix_exp; a diagonal matrix gets the exponential of its diagonal, as on
    the other linkers and in scipy (its infinities included)."""
    torch = ctx.torch

    def kernel(a: Any) -> list[Any]:
        d = torch.diagonal(a, dim1=-2, dim2=-1)
        exact = torch.diag_embed(torch.exp(d))
        on = torch.eye(a.shape[-1], dtype=torch.bool, device=a.device)
        diagonal = (a.masked_fill(on, 0) == 0).flatten(-2).all(-1)
        return [torch.where(diagonal[..., None, None], exact, torch.linalg.matrix_exp(a))]

    return kernel


@register_lowering(TriangularMatmul)
@_shape_checked
def lower_triangular_matmul(node: Apply, ctx: LowerContext) -> Kernel:
    torch, op = ctx.torch, node.op

    def kernel(a: Any, b: Any) -> list[Any]:
        t = torch.tril(a) if op.lower else torch.triu(a)
        return [torch.matmul(t.mT if op.trans else t, b)]

    return kernel


@register_lowering(CholeskyGrad)
@_shape_checked
def lower_cholesky_grad(node: Apply, ctx: LowerContext) -> Kernel:
    """Murray's formula: ``S = L^-T M L^-1`` by two triangular solves."""
    torch = ctx.torch

    def kernel(low: Any, g: Any) -> list[Any]:
        low = torch.tril(low)
        inner = torch.tril(low.mT @ g)
        m = inner + torch.tril(inner, -1).mT
        x = torch.linalg.solve_triangular(low.mT, m, upper=True)  # L^-T M
        s = torch.linalg.solve_triangular(low, x, upper=False, left=False)  # .. L^-1
        return [torch.tril(s) - 0.5 * torch.diag_embed(torch.diagonal(s, 0, -2, -1))]

    return kernel
