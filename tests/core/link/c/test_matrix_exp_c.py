"""C for Expm (Higham's scaling and squaring by dgemm and one dgesv) agrees with
`perform` and SciPy for every Padé degree and scaling, stacks, float32, empty and
non-finite matrices; it and the other selection Ops run in C, as the linker report
and the profiler say."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import Mode
from workbench.core.link.c.compiler import has_compiler
from workbench.core.link.c.ops.lapack import lapack_available

pytestmark = pytest.mark.skipif(not (has_compiler() and lapack_available()),
                                reason="needs a C compiler and LAPACK")

C_MODE, PY_MODE = Mode(linker="c"), Mode(linker="py")


def compile_both(x):
    fc = wb.function([x], wt.linalg.expm(x), mode=C_MODE)
    fp = wb.function([x], wt.linalg.expm(x), mode=PY_MODE)
    assert fc.linker.report.py_nodes == []
    return fc, fp


@pytest.mark.parametrize("norm", [1e-4, 0.1, 0.5, 1.5, 4.0, 30.0, 400.0])
def test_expm_in_c_equals_perform_and_scipy_for_every_degree(norm: float) -> None:
    """The 1-norms straddle Higham's bounds: degrees 3, 5, 7, 9, 13 and s squarings."""
    scipy_linalg = pytest.importorskip("scipy.linalg")
    fc, fp = compile_both(wt.dtensor3("a"))
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 7, 7))
    a *= norm / np.abs(a).sum(axis=1).max(axis=1)[:, None, None]
    got = fc(a)
    scale = np.abs(got).max()
    np.testing.assert_allclose(got, fp(a), rtol=0, atol=1e-14 * scale)
    want = np.stack([scipy_linalg.expm(m) for m in a])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale)


def test_expm_in_c_of_float32_strided_empty_and_non_finite() -> None:
    fc, fp = compile_both(wt.ftensor3("a"))
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 8, 8)).astype("float32")[:, ::2, ::2]  # strided
    got = fc(a)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, fp(a), rtol=1e-6, atol=1e-6)
    assert fc(np.zeros((2, 0, 0), "float32")).shape == (2, 0, 0)
    assert fc(np.zeros((0, 3, 3), "float32")).shape == (0, 3, 3)
    bad = np.ones((2, 3, 3), "float32")
    bad[1, 0, 2] = np.inf
    got = fc(bad)
    assert np.isnan(got[1]).all()
    np.testing.assert_allclose(got[0], fp(bad)[0], rtol=1e-6)


def test_expm_in_c_refuses_a_non_square_matrix() -> None:
    fc, _ = compile_both(wt.dmatrix("a"))
    with pytest.raises(np.linalg.LinAlgError,
                       match=r"expm: last 2 dimensions .* square, but a's are \(2, 3\)"):
        fc(np.ones((2, 3)))


def test_profile_shows_expm_topk_and_unique_in_c() -> None:
    x = wt.dmatrix("x")
    f = wb.function([x], [wt.linalg.expm(x), wt.topk(x, 2), *wt.unique(x, True, True, True)],
                    mode=C_MODE)
    assert f.linker.report.py_nodes == []
    text = str(wb.profile(f, np.eye(3), calls=1))
    assert "(3 nodes in C, 0 in Python)" in text
    for op in ("Expm", "TopK", "Unique"):
        row = next(line for line in text.splitlines() if line.rstrip().endswith("(x)")
                   and op in line)
        assert " C " in row, row


def test_complex_expm_runs_perform_and_says_why() -> None:
    z = wt.ztensor3("z")
    f = wb.function([z], wt.linalg.expm(z), mode=C_MODE)
    ((node, why),) = f.linker.report.py_nodes
    assert "complex input (complex128)" in why
    value = np.zeros((1, 2, 2), complex)
    np.testing.assert_allclose(f(value), np.eye(2)[None])


@pytest.mark.parametrize("linker", ["py", "c"])
def test_expm_of_float32_is_computed_in_float32_as_scipys(linker) -> None:
    """scipy.linalg.expm keeps float32 (sgemm, sgesv): so do perform and the C, with
    scipy's accuracy to within a factor 10 (about 1e-6 relative to the float64 result,
    up to 1e-5 after many squarings)."""
    import scipy.linalg as sl

    x = wt.fmatrix("x")
    f = wb.function([x], wt.linalg.expm(x), mode=C_MODE if linker == "c" else "FAST_RUN",
                    linker=None if linker == "c" else "py")
    if linker == "c":
        assert any(type(n.op).__name__ == "Expm" for n in f.linker.report.c_nodes)
    rng = np.random.default_rng(4)
    for scale in (0.01, 0.5, 3.0, 20.0, 100.0):
        a = (rng.standard_normal((6, 6)) * scale / np.sqrt(6)).astype("float32")
        exact = sl.expm(a.astype("float64"))
        got, theirs = f(a), sl.expm(a)
        assert got.dtype == theirs.dtype == np.float32
        error = np.abs(got - exact).max() / np.abs(exact).max()
        scipy_error = np.abs(theirs - exact).max() / np.abs(exact).max()
        assert error < max(10 * scipy_error, 1e-6), (scale, error, scipy_error)
