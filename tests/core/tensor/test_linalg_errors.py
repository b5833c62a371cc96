"""Bad input to wt.linalg, table-driven: every function x bad input x linker raises the
exception SciPy or NumPy raises for the same call (scipy.linalg's ValueError for the
shapes and the infs/NaNs of `solve`, `solve_triangular` and `cho_solve`; numpy.linalg's
LinAlgError elsewhere, and scipy.linalg.expm's, which is LinAlgError too), or gives a
value where they give one; the message names the function. Shapes are unknown when the
graph is built (the check happens when it runs) unless the case says `static`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import workbench as wb
import workbench.core.tensor as wt

la = wt.linalg

SQUARE = np.array([[4.0, 1.0], [1.0, 3.0]])
NON_SQUARE = np.ones((2, 3))
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
NEGATIVE_DEFINITE = -SQUARE
NAN = np.array([[np.nan, 1.0], [1.0, 3.0]])
INF_B = np.array([1.0, np.inf])
INF = np.array([[2.0, np.inf], [np.inf, 3.0]])
ZERO_DIAGONAL = np.array([[0.0, 0.0], [1.0, 1.0]])
ALL_NAN = np.full((3, 3), np.nan)  # eigh does not converge (torch's error on gpu was its own)
B2, B3, VECTOR = np.ones(2), np.ones(3), np.ones(3)

# (function, ours, reference, [(bad input, values)])
TABLE = [
    ("solve", la.solve, sl.solve,
     [("non_square", (NON_SQUARE, B2)), ("mismatched_b", (SQUARE, B3)),
      ("singular", (SINGULAR, B2)), ("nan_a", (NAN, B2)), ("inf_b", (SQUARE, INF_B))]),
    ("solve_pos", lambda a, b: la.solve(a, b, assume_a="pos"),
     lambda a, b: sl.solve(a, b, assume_a="pos"),
     [("not_positive_definite", (NEGATIVE_DEFINITE, B2)), ("nan_a", (NAN, B2))]),
    ("solve_unchecked", lambda a, b: la.solve(a, b, check_finite=False),
     lambda a, b: np.linalg.solve(a, b), [("nan_a", (np.full((2, 2), np.nan), B2))]),
    ("solve_triangular", lambda a, b: la.solve_triangular(a, b, lower=True),
     lambda a, b: sl.solve_triangular(a, b, lower=True),
     [("non_square", (NON_SQUARE, B2)), ("mismatched_b", (SQUARE, B3)),
      ("singular", (ZERO_DIAGONAL, B2)), ("nan_a", (NAN, B2))]),
    ("cho_solve", lambda c, b: la.cho_solve((c, True), b),
     lambda c, b: sl.cho_solve((c, True), b),
     [("non_square", (NON_SQUARE, B2)), ("mismatched_b", (SQUARE, B3)),
      ("nan_c", (NAN, B2)), ("inf_b", (SQUARE, INF_B))]),
    ("inv", la.inv, np.linalg.inv,
     [("non_square", (NON_SQUARE,)), ("singular", (SINGULAR,)), ("nan", (NAN,))]),
    ("cholesky", la.cholesky, np.linalg.cholesky,
     [("non_square", (NON_SQUARE,)), ("not_positive_definite", (NEGATIVE_DEFINITE,)),
      ("nan", (NAN,))]),
    ("det", la.det, np.linalg.det,
     [("non_square", (NON_SQUARE,)), ("singular", (SINGULAR,)), ("nan", (NAN,))]),
    ("slogdet", lambda a: la.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1],
     [("non_square", (NON_SQUARE,)), ("singular", (SINGULAR,))]),
    ("eigh", lambda a: la.eigh(a)[0], lambda a: np.linalg.eigh(a)[0],
     [("non_square", (NON_SQUARE,)), ("nan", (NAN,)), ("all_nan", (ALL_NAN,))]),
    ("eigvalsh", la.eigvalsh, np.linalg.eigvalsh,
     [("non_square", (NON_SQUARE,)), ("all_nan", (ALL_NAN,))]),
    ("svd", lambda a: la.svd(a)[1], lambda a: np.linalg.svd(a)[1], [("nan", (NAN,))]),
    ("pinv", la.pinv, np.linalg.pinv, [("nan", (NAN,))]),
    ("expm", la.expm, sl.expm, [("non_square", (NON_SQUARE,)), ("nan", (NAN,))]),
    ("matrix_power", lambda a: la.matrix_power(a, 1), lambda a: np.linalg.matrix_power(a, 1),
     [("non_square", (NON_SQUARE,))]),
    ("lstsq", lambda a, b: la.lstsq(a, b)[0], lambda a, b: np.linalg.lstsq(a, b)[0],
     [("mismatched_b", (SQUARE, B3)), ("nan", (NAN, B2)), ("inf", (INF, B2))]),
]

CASES = [(name, bad, ours, ref, values) for name, ours, ref, rows in TABLE
         for bad, values in rows]
IDS = [f"{name}-{bad}" for name, bad, *_ in CASES]


def _outcome(call):
    """``("raises", exception)`` or ``("value", array)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "value", np.asarray(call())
        except Exception as exc:  # noqa: BLE001 - the type is what is compared
            return "raises", exc


def _function_name(name: str) -> str:
    return {"solve_pos": "solve", "solve_unchecked": "solve", "cho_solve": "solve_triangular",
            "pinv": "svd", "lstsq": "svd"}.get(name, name)


def _assert_same_outcome(name, expected, got):
    kind, ref = expected
    assert got[0] == kind, (name, expected, got)
    if kind == "raises":
        assert type(got[1]) is type(ref), (name, ref, got[1])
        assert str(got[1]).startswith(f"{_function_name(name)}: ") or str(got[1]).startswith(
            f"{name}: "), got[1]
        return
    nan = np.isnan(ref)
    assert np.isnan(got[1])[nan].all(), (ref, got[1])


@pytest.mark.parametrize(("name", "bad", "ours", "ref", "values"), CASES, ids=IDS)
def test_bad_input_fails_as_scipy_or_numpy_when_run(linker, name, bad, ours, ref, values):
    inputs = [wt.tensor("float64", shape=(None,) * np.ndim(v)) for v in values]
    f = wb.function(inputs, ours(*inputs), linker=linker)
    _assert_same_outcome(name, _outcome(lambda: ref(*values)), _outcome(lambda: f(*values)))


STATIC = [(name, ours, ref, values) for name, bad, ours, ref, values in CASES
          if bad in ("non_square", "mismatched_b")]
STATIC += [(name, ours, ref, (VECTOR,) + values[1:]) for name, bad, ours, ref, values in CASES
           if bad == "non_square"]  # a of the wrong rank


@pytest.mark.parametrize(("name", "ours", "ref", "values"), STATIC,
                         ids=[f"{s[0]}-{np.shape(s[3][0])}-{np.shape(s[3][-1])}" for s in STATIC])
def test_bad_static_shapes_fail_as_scipy_or_numpy_when_built(name, ours, ref, values):
    inputs = [wt.tensor("float64", shape=np.shape(v)) for v in values]
    _assert_same_outcome(name, _outcome(lambda: ref(*values)), _outcome(lambda: ours(*inputs)))


def test_the_shape_is_checked_before_b(linker):
    # a non-square a with a b that fits neither side: the square check comes first
    a, b = wt.dmatrix("a"), wt.dvector("b")
    f = wb.function([a, b], la.solve(a, b), linker=linker)
    with pytest.raises(ValueError, match=r"solve: last 2 dimensions of the array must be "
                                         r"square, but a's are \(2, 3\)"):
        f(NON_SQUARE, np.ones(5))
    g = wb.function([a], la.inv(a), linker=linker)
    with pytest.raises(np.linalg.LinAlgError, match=r"inv: last 2 dimensions .* \(2, 3\)"):
        g(NON_SQUARE)


def test_a_stack_names_the_failing_check_and_check_finite_can_be_turned_off(linker):
    a, b = wt.dtensor3("a"), wt.dmatrix("b")
    values = np.stack([SQUARE, NAN])
    f = wb.function([a, b], la.solve(a, b), linker=linker)
    with pytest.raises(ValueError, match="solve: array must not contain infs or NaNs"):
        f(values, np.ones((2, 2)))
    g = wb.function([a, b], la.solve(a, b, check_finite=False), linker=linker)
    got = g(values, np.ones((2, 2)))
    np.testing.assert_allclose(got[0], np.linalg.solve(SQUARE, np.ones((2, 2))))


def _with(value, where):
    m = np.tril(np.random.default_rng(5).uniform(1, 2, (4, 4))) + 3 * np.eye(4)
    m[where] = value
    return m


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_unchecked_triangular_solve_of_non_finite_entries_gives_scipys_values(linker, value):
    # scipy (check_finite=False) runs trtrs/trsm: a substitution, so an inf or a NaN
    # reaches only the entries that depend on it, and a zero of b skips its column
    # (audit19b F15b: py's LU gave NaN everywhere, or a singular-matrix error for inf).
    a, b = wt.dtensor3("a"), wt.dmatrix("b")
    stack = np.stack([_with(value, (2, 1)), _with(value, (3, 3)), _with(value, (1, 1))])
    rhs = np.array([[1.0, 0.0], [2.0, 0.0], [-1.0, 1.0], [0.5, 2.0]])
    for lower, trans in ((True, False), (True, True), (False, False), (False, True)):
        mats = stack if lower else np.swapaxes(stack, -1, -2)
        f = wb.function([a, b], la.solve_triangular(a, b, lower=lower, trans=trans,
                                                    check_finite=False), linker=linker)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.stack([sl.solve_triangular(m, rhs, lower=lower, trans=trans,
                                                 check_finite=False) for m in mats])
            np.testing.assert_allclose(f(mats, rhs), want, rtol=1e-13, equal_nan=True,
                                       err_msg=f"lower={lower} trans={trans}")


def _spd_with(value, where):
    m = np.array([[4.0, 1.0, 0.5, 0.2], [1.0, 5.0, 1.0, 0.3], [0.5, 1.0, 6.0, 1.0],
                  [0.2, 0.3, 1.0, 7.0]])
    if where is not None:
        m[where] = value
    return m


@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos"])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_an_unchecked_factorising_solve_of_non_finite_input_is_nan_where_it_reads_it(
        linker, assume_a, value):
    # LU, LDL^T and Cholesky make of an inf or a NaN what their algorithm does (numpy,
    # scipy, OpenBLAS and torch differ: partial NaNs, finite values, a singular-matrix
    # error), so the rule is workbench's, the same on every linker: NaN for a system
    # whose a has one where the solve reads it, and for a column of b that has one
    a, b = wt.dtensor3("a"), wt.dmatrix("b")
    stack = np.stack([_spd_with(value, None), _spd_with(value, (2, 1)),
                      _spd_with(value, (1, 2))])  # the last: in the upper triangle
    rhs = np.arange(12.0).reshape(4, 3) + 1
    rhs[0, 1] = value
    f = wb.function([a, b], la.solve(a, b, assume_a=assume_a, lower=True,
                                     check_finite=False), linker=linker)
    clean = rhs.copy()
    clean[:, 1] = 0
    want = np.stack([sl.solve(m, clean, assume_a=assume_a, lower=True, check_finite=False)
                     for m in np.where(np.isfinite(stack), stack, 0)])
    want[:, :, 1] = np.nan
    want[1] = np.nan  # reads (2, 1): every solve here
    if assume_a == "gen":
        want[2] = np.nan  # reads (1, 2) too; the others read the lower triangle only
    np.testing.assert_allclose(f(stack, rhs), want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_an_unchecked_triangular_solve_of_a_non_finite_b_gives_scipys_values(linker, value):
    # a substitution: the inf or NaN reaches the entries after it (0 * inf included)
    a, b = wt.dmatrix("a"), wt.dmatrix("b")
    t = np.tril(_spd_with(value, None))
    rhs = np.array([[1.0, 2.0], [value, 1.0], [3.0, 0.0], [1.0, 1.0]])
    for lower, trans in ((True, False), (True, True), (False, False)):
        m = t if lower else t.T
        f = wb.function([a, b], la.solve_triangular(a, b, lower=lower, trans=trans,
                                                    check_finite=False), linker=linker)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = sl.solve_triangular(m, rhs, lower=lower, trans=trans, check_finite=False)
            np.testing.assert_allclose(f(m, rhs), want, rtol=1e-13, equal_nan=True,
                                       err_msg=f"lower={lower} trans={trans}")
