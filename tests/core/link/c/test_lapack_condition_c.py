"""The C linker's LinAlgWarning for a real `solve` "gen", "pos" and "sym"
(link/c/ops/lapack.py, `_RCOND_C`): a probe solve first, the estimate only when the
probe cannot show the matrix well conditioned. The warning is the decision of LAPACK's
gecon on the same LU factors (those of a^T, norm "I"), of pocon on the same Cholesky
factor, of sycon on the same Bunch-Kaufman factors, on families of ill-conditioned
matrices on both sides of the threshold. The bound of agreement: the probe is a fixed
pseudo-random vector, and an ill-conditioned matrix escapes it (no warning) with
probability at most 1e-8 over probes drawn independently of the matrix; where the
estimate runs, gen's rcond is gecon's within 1e-3 (tests/core/tensor/
test_linalg_lapack.py) and the others' are LAPACK's, so cases whose rcond is within 10%
of the epsilon are left out."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.link.c.compiler import has_compiler

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

la = wt.linalg


def _gecon_rcond(a: np.ndarray) -> float | None:
    """LAPACK's estimate on the LU factors of a^T (what the C factorises); None for an
    exactly singular U (solve raises LinAlgError)."""
    from scipy.linalg import lapack

    getrf, gecon = ((lapack.sgetrf, lapack.sgecon) if a.dtype == np.float32
                    else (lapack.dgetrf, lapack.dgecon))
    lu, _, info = getrf(a.T.copy())
    if info > 0:
        return None
    rcond, _ = gecon(lu, np.abs(a).sum(axis=0).max(), norm="I")
    return float(rcond)


def _hilbert(n: int) -> np.ndarray:
    i = np.arange(n)
    return 1.0 / (i[:, None] + i[None, :] + 1)


def _kahan(n: int, theta: float = 1.2) -> np.ndarray:
    """Kahan's upper triangular matrix: well scaled, its rcond falls geometrically in n."""
    s, c = np.sin(theta), np.cos(theta)
    return np.diag(s ** np.arange(n)) @ (np.eye(n) - c * np.triu(np.ones((n, n)), 1))


def _singular_values(n: int, decades: float, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    u, _ = np.linalg.qr(g.standard_normal((n, n)))
    v, _ = np.linalg.qr(g.standard_normal((n, n)))
    return (u * np.logspace(0, -decades, n)) @ v.T


def _near_duplicate_rows(n: int, gap: float, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    a = g.standard_normal((n, n))
    a[1] = a[0] + gap * g.standard_normal(n)
    return a


def _families() -> list[tuple[str, np.ndarray]]:
    cases = [(f"hilbert{n}", _hilbert(n)) for n in range(9, 15)]
    cases += [(f"kahan{n}", _kahan(n)) for n in (20, 50, 80, 90, 100, 120)]
    cases += [(f"svd{d}", _singular_values(40, d, 2)) for d in (10, 14, 15, 15.5, 16, 17, 18)]
    cases += [(f"rows{gap:g}", _near_duplicate_rows(50, gap, 3))
              for gap in (1e-8, 1e-10, 1e-13, 1e-15, 1e-17)]
    # the threshold does not move with the scale of the matrix
    cases += [(f"scaled{s:g}", s * _singular_values(30, d, 4))
              for s in (1e-150, 1e150) for d in (8, 17)]
    g = np.random.default_rng(5)
    cases += [(f"random{n}", g.standard_normal((n, n)) + np.sqrt(n) * np.eye(n))
              for n in (1, 2, 7, 64, 300)]
    return cases


def _warned(f, a: np.ndarray) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(a, np.linspace(-1, 2, a.shape[0]).astype(a.dtype))
    return any(issubclass(w.category, la.LinAlgWarning) for w in caught)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_warning_is_gecons_decision_on_ill_conditioned_families(dtype):
    a, b = wt.tensor(dtype, shape=(None, None)), wt.tensor(dtype, shape=(None,))
    f = wb.function([a, b], la.solve(a, b), linker="c")
    eps = np.finfo(dtype).eps
    checked = {True: 0, False: 0}
    for name, value in _families():
        value = value.astype(dtype)
        if not np.isfinite(value).all():
            continue  # float32 cannot hold the scaled cases
        rcond = _gecon_rcond(value)
        if rcond is None or abs(rcond / eps - 1) < 0.1:
            continue  # singular; or the two estimates' rounding could fall either side
        expected = rcond < eps
        assert _warned(f, value) == expected, (name, rcond / eps)
        checked[expected] += 1
    assert min(checked.values()) >= 4, checked  # both sides were really tested


def test_a_stack_warns_for_its_ill_conditioned_matrix_only():
    a, b = wt.dtensor3("a"), wt.dvector("b")
    f = wb.function([a, b], la.solve(a, b), linker="c")
    well = np.random.default_rng(0).standard_normal((12, 12)) + 4 * np.eye(12)
    with pytest.warns(la.LinAlgWarning,
                      match=r"solve: Ill-conditioned .*\(matrix 1 of the stack\)$"):
        f(np.stack([well, _hilbert(12), well]), np.ones(12))
    with warnings.catch_warnings():
        warnings.simplefilter("error", la.LinAlgWarning)
        # condition number about 1e10: the estimate runs, and says no
        f(np.stack([well, _singular_values(12, 10, 1), well]), np.ones(12))



def _pocon_rcond(a: np.ndarray, lower: bool) -> float | None:
    from scipy.linalg import lapack

    potrf, pocon = ((lapack.spotrf, lapack.spocon) if a.dtype == np.float32
                    else (lapack.dpotrf, lapack.dpocon))
    c, info = potrf(a, lower=lower, clean=False)
    if info > 0:
        return None
    triangle = np.tril(a) if lower else np.triu(a)
    symmetric = triangle + triangle.T - np.diag(np.diag(a))
    rcond, _ = pocon(c, np.abs(symmetric).sum(axis=0).max(), uplo="L" if lower else "U")
    return float(rcond)


def _spd_families() -> list[tuple[str, np.ndarray]]:
    cases = [(f"hilbert{n}", _hilbert(n)) for n in range(5, 15)]
    g = np.random.default_rng(8)
    for d in (6, 7, 8, 10, 14, 15, 15.5, 16, 17, 18):
        q, _ = np.linalg.qr(g.standard_normal((40, 40)))
        cases.append((f"spd{d}", (q * np.logspace(0, -d, 40)) @ q.T))
    x = np.sort(g.uniform(-5, 5, 120))
    for noise in (1e-1, 1e-6, 1e-12, 1e-15, 1e-17):
        kernel = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2)
        cases.append((f"gp{noise:g}", kernel + noise * np.eye(120)))
    for n in (1, 5, 200):
        m = g.standard_normal((n, n))
        cases.append((f"wishart{n}", m @ m.T / n + np.eye(n)))
    return cases


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_pos_warning_is_pocons_decision(dtype, lower):
    a, b = wt.tensor(dtype, shape=(None, None)), wt.tensor(dtype, shape=(None,))
    f = wb.function([a, b], la.solve(a, b, assume_a="pos", lower=lower), linker="c")
    eps = np.finfo(dtype).eps
    checked = {True: 0, False: 0}
    for name, value in _spd_families():
        value = value.astype(dtype)
        rcond = _pocon_rcond(value, lower)
        if rcond is None or abs(rcond / eps - 1) < 0.1:
            continue  # not positive definite; or too close to call
        expected = rcond < eps
        assert _warned(f, value) == expected, (name, rcond / eps)
        checked[expected] += 1
    assert min(checked.values()) >= 3, checked


def _sycon_rcond(a: np.ndarray, lower: bool) -> float | None:
    from scipy.linalg import lapack

    sytrf, sycon = ((lapack.ssytrf, lapack.ssycon) if a.dtype == np.float32
                    else (lapack.dsytrf, lapack.dsycon))
    f, ipiv, info = sytrf(a, lower=lower)
    if info > 0:
        return None
    triangle = np.tril(a) if lower else np.triu(a)
    symmetric = triangle + triangle.T - np.diag(np.diag(a))
    rcond, _ = sycon(f, ipiv, np.abs(symmetric).sum(axis=0).max(), lower=lower)
    return float(rcond)


def _symmetric_families() -> list[tuple[str, np.ndarray]]:
    cases = [(f"hilbert{n}", _hilbert(n)) for n in range(5, 15)]
    g = np.random.default_rng(9)
    for d in (6, 7, 8, 10, 14, 15, 15.5, 16, 17, 18):
        q, _ = np.linalg.qr(g.standard_normal((40, 40)))
        signs = np.where(np.arange(40) % 3 == 1, -1.0, 1.0)  # indefinite
        cases.append((f"indefinite{d}", (q * (signs * np.logspace(0, -d, 40))) @ q.T))
    for n in (1, 6, 150):
        m = g.standard_normal((n, n))
        cases.append((f"random{n}", m + m.T))
    return cases


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_sym_warning_is_sycons_decision(dtype, lower):
    a, b = wt.tensor(dtype, shape=(None, None)), wt.tensor(dtype, shape=(None,))
    f = wb.function([a, b], la.solve(a, b, assume_a="sym", lower=lower), linker="c")
    eps = np.finfo(dtype).eps
    checked = {True: 0, False: 0}
    for name, value in _symmetric_families():
        value = value.astype(dtype)
        rcond = _sycon_rcond(value, lower)
        if rcond is None or abs(rcond / eps - 1) < 0.1:
            continue  # singular; or too close to call
        expected = rcond < eps
        assert _warned(f, value) == expected, (name, rcond / eps)
        checked[expected] += 1
    assert min(checked.values()) >= 3, checked
