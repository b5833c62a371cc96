"""The linear-algebra rewrites respect what a solve assumes about its matrix: a
symmetric/Hermitian/positive-definite solve mirrors the triangle it reads, a conjugate
triangular solve conjugates, a Hermitian one reads a real diagonal. Each case is checked
on every linker against SciPy, in the default mode (rewritten) and with no rewrites."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import workbench as wb
import workbench.core.tensor as wt

la = wt.linalg


def _outcome(call, *args):
    """The value of `call(*args)`, or the LinAlgError class it raised."""
    try:
        return call(*args)
    except np.linalg.LinAlgError:
        return np.linalg.LinAlgError


def _agree(f, g, values, expected) -> None:
    """`f` (default mode) and `g` (no rewrites) both give `expected` (or both raise)."""
    for compiled in (f, g):
        got = _outcome(compiled, *values)
        if expected is np.linalg.LinAlgError:
            assert got is np.linalg.LinAlgError
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("assume_a", ["sym", "her", "pos"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("structure", ["tril", "triu", "cholesky"])
def test_a_mirrored_solve_of_a_triangular_matrix_is_not_a_triangular_solve(
        linker, assume_a, lower, structure):
    # solve(tril(x), b, assume_a="sym", lower=True) solves with the symmetric matrix
    # whose lower triangle is x's; it was rewritten into solve_triangular(x, b)
    x, b = wt.dmatrix("x"), wt.dmatrix("b")
    rng = np.random.default_rng(0)
    m = rng.standard_normal((3, 3)) + 4 * np.eye(3)
    xs, bs = m @ m.T, rng.standard_normal((3, 2))
    build = {"tril": wt.tril, "triu": wt.triu, "cholesky": la.cholesky}[structure]
    matrix = {"tril": np.tril, "triu": np.triu, "cholesky": np.linalg.cholesky}[structure]
    out = la.solve(build(x), b, assume_a=assume_a, lower=lower)
    f = wb.function([x, b], out, linker=linker)
    g = wb.function([x, b], out, mode=wb.Mode(linker=linker))
    assert "local_solve_triangular_matrix" not in f.maker.rewrite_trace.rewrites_used()
    expected = _outcome(lambda: sl.solve(matrix(xs), bs, assume_a=assume_a, lower=lower))
    _agree(f, g, [xs, bs], expected)


def test_a_general_solve_of_a_triangular_matrix_is_still_triangular(linker):
    x, b = wt.dmatrix("x"), wt.dmatrix("b")
    f = wb.function([x, b], la.solve(wt.tril(x), b), linker=linker)
    assert "local_solve_triangular_matrix" in f.maker.rewrite_trace.rewrites_used()
    xs = np.array([[2.0, 5.0], [1.0, 3.0]])
    np.testing.assert_allclose(f(xs, np.ones((2, 1))), sl.solve(np.tril(xs), np.ones((2, 1))))


CV, CB = wt.vector("v", dtype="complex128"), wt.matrix("b", dtype="complex128")
V = np.array([1 + 2j, 3 - 1j, 2 + 0.5j])
BV = np.array([[1 + 1j, 2], [0.5j, 1], [3, -1j]])


@pytest.mark.parametrize("case", ["trans_c", "trans_c_eye", "her", "pos", "sym"])
def test_a_diagonal_solve_conjugates_or_reads_a_real_diagonal_as_scipy(linker, case):
    # the rewrite gave b / v whatever the solve's conjugate or assume_a said
    d = wt.diag(CV)
    out, ref = {
        "trans_c": (la.solve_triangular(d, CB, trans="C"),
                    sl.solve_triangular(np.diag(V), BV, trans="C")),
        "trans_c_eye": (la.solve_triangular(wt.eye(3) * wt.diag(CV), CB, trans="C",
                                            check_finite=False),
                        sl.solve_triangular(np.diag(V), BV, trans="C")),
        "her": (la.solve(d, CB, assume_a="her"), sl.solve(np.diag(V), BV, assume_a="her")),
        "pos": (la.solve(d, CB, assume_a="pos"), sl.solve(np.diag(V.real), BV)),
        "sym": (la.solve(d, CB, assume_a="sym"), sl.solve(np.diag(V), BV, assume_a="sym")),
    }[case]
    f = wb.function([CV, CB], out, linker=linker)
    g = wb.function([CV, CB], out, mode=wb.Mode(linker=linker))
    assert "local_solve_diagonal_matrix" in f.maker.rewrite_trace.rewrites_used()
    _agree(f, g, [V, BV], ref)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_a_positive_definite_diagonal_solve_still_raises_for_a_negative_entry(linker, dtype):
    v, b = wt.vector("v", dtype=dtype), wt.matrix("b", dtype=dtype)
    out = la.solve(wt.diag(v), b, assume_a="pos")
    f = wb.function([v, b], out, linker=linker)
    g = wb.function([v, b], out, mode=wb.Mode(linker=linker))
    assert "local_solve_diagonal_matrix" in f.maker.rewrite_trace.rewrites_used()
    diagonal = np.array([2.0, -1.0, 4.0]) + (3j if dtype == "complex128" else 0)
    values = [diagonal, np.ones((3, 2), dtype=dtype)]
    with pytest.raises(np.linalg.LinAlgError):
        sl.solve(np.diag(values[0]), values[1], assume_a="pos")
    for compiled in (f, g):
        with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
            compiled(*values)


CS = wt.matrix("s", dtype="complex128")
SV = np.array([[2, 0], [0.5j, 2]])


@pytest.mark.parametrize("form", ["s + s.T", "s.T + s", "s @ s.T", "diag"])
def test_a_complex_symmetric_matrix_takes_no_determinant_from_its_factor(linker, form):
    # a complex s + s^T is complex-symmetric, not Hermitian: its Cholesky factor reads
    # the lower triangle as Hermitian, the determinant of another matrix (15.75, not 16.25)
    a, value = {"s + s.T": (CS + CS.T, SV + SV.T), "s.T + s": (CS.T + CS, SV + SV.T),
                "s @ s.T": (CS @ CS.T, SV @ SV.T),
                "diag": (wt.diag(wt.diagonal(CS)), np.diag(np.diag(SV + 1j)))}[form]
    entry = SV + 1j if form == "diag" else SV
    outs = [la.det(a), *la.slogdet(a), la.cholesky(a)]
    f = wb.function([CS], outs, linker=linker)
    g = wb.function([CS], outs, mode=wb.Mode(linker=linker))
    assert "local_det_from_cholesky" not in f.maker.rewrite_trace.rewrites_used()
    sign, logabsdet = np.linalg.slogdet(value)
    for compiled in (f, g):
        det, s, l, _ = compiled(entry)
        np.testing.assert_allclose(det, np.linalg.det(value), rtol=1e-12)
        np.testing.assert_allclose([s, l], [sign, logabsdet], rtol=1e-12)


@pytest.mark.parametrize("form", ["s + s^H", "s @ s^H", "s^H @ s"])
def test_a_hermitian_matrix_takes_its_determinant_from_its_factor(linker, form):
    a, value = {"s + s^H": (CS + wt.conj(CS).T, SV + SV.conj().T),
                "s @ s^H": (CS @ wt.conj(CS.T), SV @ SV.conj().T),
                "s^H @ s": (wt.conj(CS).T @ CS, SV.conj().T @ SV)}[form]
    outs = [la.det(a), *la.slogdet(a), la.cholesky(a)]
    f = wb.function([CS], outs, linker=linker)
    g = wb.function([CS], outs, mode=wb.Mode(linker=linker))
    assert "local_det_from_cholesky" in f.maker.rewrite_trace.rewrites_used()
    sign, logabsdet = np.linalg.slogdet(value)
    for compiled in (f, g):
        det, s, l, _ = compiled(SV)
        np.testing.assert_allclose(det, np.linalg.det(value), rtol=1e-12)
        np.testing.assert_allclose([s, l], [sign, logabsdet], rtol=1e-12)


def _diagonal_into_zeros(v, rows, cols):
    """A diagonal written into zeros of a shape known only when run (a 2 x 3 one too)."""
    index = wt.arange(v.shape[0])
    return wt.set_subtensor(wt.zeros((rows, cols))[index, index], v)


NOT_SQUARE = [  # (name, build from x, values, the reference), x of shape (2, 3)
    ("det_tril", lambda x: la.det(wt.tril(x)), lambda x: np.linalg.det(np.tril(x))),
    ("slogdet_triu", lambda x: la.slogdet(wt.triu(x))[1],
     lambda x: np.linalg.slogdet(np.triu(x))[1]),
    ("det_diagonal", lambda x: la.det(_diagonal_into_zeros(x[0, :2], x.shape[0], x.shape[1])),
     lambda x: np.linalg.det(np.diag(x[0, :2], 1)[:2])),
    ("solve_diagonal", lambda x: la.solve(
        _diagonal_into_zeros(x[0, :2], x.shape[0], x.shape[1]), x[1, :2], check_finite=False),
     lambda x: sl.solve(np.diag(x[0, :2], 1)[:2], x[1, :2])),
]


@pytest.mark.parametrize(("name", "build", "reference"), NOT_SQUARE,
                         ids=[case[0] for case in NOT_SQUARE])
def test_a_rule_reading_a_diagonal_keeps_the_square_check(linker, name, build, reference):
    # det(tril(x)) of a 2 x 3 x became prod(diagonal(x)) (0.27 where numpy raises)
    x = wt.dmatrix("x")
    value = np.arange(1.0, 7.0).reshape(2, 3)
    with pytest.raises(Exception) as expected:
        reference(value)
    for mode in (None, wb.Mode(linker=linker)):
        f = wb.function([x], build(x), linker=linker if mode is None else None, mode=mode)
        with pytest.raises(type(expected.value), match="must be square"):
            f(value)


def test_an_eye_of_a_length_known_only_when_run_may_spread(linker):
    # eye(k) * x with k = 1 is x itself: det, solve and solve_triangular read it as
    # diagonal and gave prod(diag(x)) and b / diag(x)
    k, x, b = wt.lscalar("k"), wt.dmatrix("x"), wt.dvector("b")
    m = np.arange(9.0).reshape(3, 3) + 3 * np.eye(3)
    outs = [la.det(wt.eye(k) * x), la.solve(wt.eye(k) * x, b, check_finite=False),
            la.solve_triangular(wt.eye(k) * x, b, check_finite=False)]
    for k_value in (1, 3):
        spread = np.eye(k_value) * m
        expected = [np.linalg.det(spread), sl.solve(spread, np.ones(3)),
                    sl.solve_triangular(spread, np.ones(3))]
        for mode in (None, wb.Mode(linker=linker)):
            f = wb.function([k, x, b], outs, linker=linker if mode is None else None, mode=mode)
            for got, want in zip(f(k_value, m, np.ones(3)), expected):
                np.testing.assert_allclose(got, want, rtol=1e-12)
    # a length of the other factor cannot spread: the rule still fires
    f = wb.function([x, b], la.solve(wt.eye(x.shape[0]) * x, b, check_finite=False),
                    linker=linker)
    assert "local_solve_diagonal_matrix" in f.maker.rewrite_trace.rewrites_used()
    np.testing.assert_allclose(f(m, np.ones(3)), 1 / np.diag(m), rtol=1e-12)


def test_the_sign_of_slogdet_of_a_diagonal_is_numpys(linker):
    # slogdet(diag(d)) from the diagonal: prod(sign(d)) made a NaN entry's sign NaN and
    # a 0 beside a NaN gave logdet NaN, where numpy (and the unrewritten graph on py and
    # c) flips the sign only for d < 0 and gives (0, -inf) for any 0 on the diagonal
    v = wt.dvector("v")
    f = wb.function([v], list(la.slogdet(wt.diag(v))), linker=linker)
    assert "local_det_of_triangular" in f.maker.rewrite_trace.rewrites_used()
    for d in ([-1.0, np.nan, -3.0], [-1.0, 0.0, np.nan], [-1.0, 2.0, 3.0], [np.inf, -2.0]):
        want = np.linalg.slogdet(np.diag(d))
        for got, expected in zip(f(np.array(d)), want):
            np.testing.assert_array_equal(got, expected)


@pytest.mark.linkers("py", "c")
def test_a_diagonal_solve_warns_as_the_solve_it_replaces(linker):
    # solve(diag(v), b) became b / v without scipy's LinAlgWarning for an ill-conditioned
    # matrix (rcond = min|v| / max|v|); solve_triangular never warns, as scipy's
    import warnings

    v, b, a = wt.dvector("v"), wt.dvector("b"), wt.dmatrix("a")
    bad, good = np.array([1.0, 1e-20]), np.array([1.0, 1e-3])
    builds = [(lambda: la.solve(wt.diag(v), b), [v, b], bad, good, True),
              (lambda: la.solve(a, b, assume_a="diagonal"), [a, b], np.diag(bad),
               np.diag(good), True),
              (lambda: la.solve_triangular(wt.diag(v), b), [v, b], bad, good, False)]
    for build, inputs, ill, fine, warns in builds:
        f = wb.function(inputs, build(), linker=linker)
        assert "Solve" not in {type(n.op).__name__ for n in f.maker.fgraph.apply_nodes}
        if warns:
            with pytest.warns(la.LinAlgWarning, match=r"solve: Ill-conditioned matrix "
                                                       r"\(rcond=1e-20\)"):
                f(ill, np.ones(2))
        with warnings.catch_warnings():
            warnings.simplefilter("error", la.LinAlgWarning)
            np.testing.assert_allclose(f(fine, np.ones(2)), 1 / good)
            if not warns:
                f(ill, np.ones(2))
    k = wt.dtensor3("k")  # a stack: the first ill-conditioned matrix is named
    f = wb.function([k, b], la.solve(k, b, assume_a="diagonal"), linker=linker)
    with pytest.warns(la.LinAlgWarning, match=r"\(matrix 1 of the stack\)"):
        f(np.stack([np.diag(good), np.diag(bad), np.diag(bad)]), np.ones(2))
