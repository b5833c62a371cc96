"""The linear-algebra rewrites: each fires where it should (named in the trace), leaves
the values of the unrewritten graph (FAST_COMPILE), and stays away where it must not."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import available_linkers, get_mode
from workbench.core.rewrite import rewrite_db
from workbench.core.rewrite.rules import linalg as rules
from workbench.core.rewrite.rules.rule_utils import computed_unconditionally

la = wt.linalg
rng = np.random.default_rng(3)
A, B, b, v = wt.dmatrix("A"), wt.dmatrix("B"), wt.dvector("b"), wt.dvector("v")
K = wt.dtensor3("K")


def _spd(n: int) -> np.ndarray:
    m = rng.uniform(-1, 1, (n, n))
    return m @ m.T + n * np.eye(n)


VALUES = {A: _spd(4), B: rng.random((4, 3)), b: rng.random(4), v: rng.random(4) + 0.5,
          K: np.stack([_spd(3), _spd(3)])}


def _op_names(f) -> set[str]:
    """The Ops every call runs (not those only the untaken branch of an ifelse needs)."""
    graph = f.maker.fgraph
    return {type(node.op).__name__ for node in graph.apply_nodes
            if computed_unconditionally(graph, node)}


def _fires(rule: str, inputs, output, absent: set[str] = frozenset()) -> None:
    f = wb.function(inputs, output)
    assert rule in f.maker.rewrite_trace.rewrites_used(), [str(s) for s in
                                                           f.maker.rewrite_trace.steps]
    assert not absent & _op_names(f), _op_names(f)
    plain = wb.function(inputs, output, mode="FAST_COMPILE")
    values = [VALUES[i] for i in inputs]
    np.testing.assert_allclose(f(*values), plain(*values), rtol=1e-9, atol=1e-12)


L = la.cholesky(A)
KK = K @ K.transpose(0, 2, 1)  # known symmetric, batched
FIRING = [
    ("inv_matrix_vector", "local_inv_dot_to_solve", [A, b], lambda: la.inv(A) @ b, {"Inv"}),
    ("inv_matrix_matrix", "local_inv_dot_to_solve", [A, B], lambda: wt.dot(la.inv(A), B),
     {"Inv"}),
    ("matrix_inv", "local_inv_dot_to_solve", [A, B], lambda: B.T @ la.inv(A), {"Inv"}),
    ("vector_inv", "local_inv_dot_to_solve", [A, b], lambda: b @ la.inv(A), {"Inv"}),
    ("batched_inv", "local_inv_dot_to_solve", [K], lambda: la.inv(K) @ K, {"Inv"}),
    ("log_det", "local_log_det_to_slogdet", [A], lambda: wt.log(la.det(A)), {"Det"}),
    ("log_abs_det", "local_log_det_to_slogdet", [A], lambda: wt.log(abs(la.det(A))), {"Det"}),
    ("det_diag", "local_det_of_triangular", [v], lambda: la.det(wt.diag(v)),
     {"Det", "AdvancedIncSubtensor"}),
    ("det_eye_times", "local_det_of_triangular", [v], lambda: la.det(wt.eye(4) * v), {"Det"}),
    ("det_cholesky", "local_det_of_triangular", [A], lambda: la.det(la.cholesky(A)), {"Det"}),
    ("log_det_cholesky", "local_det_of_triangular", [A],
     lambda: wt.log(la.det(la.cholesky(A))), {"Det", "SLogDet"}),
    ("log_det_with_factor", "local_det_from_cholesky", [K, b],
     lambda: wt.log(la.det(KK)).sum() + la.solve(la.cholesky(KK), b[:3]).sum(),
     {"Det", "SLogDet"}),
    ("det_with_factor", "local_det_from_cholesky", [A],
     lambda: la.det(A @ A.T) + la.cholesky(A @ A.T).sum(), {"Det"}),
    ("det_with_factor_of_a_sum", "local_det_from_cholesky", [A],
     lambda: la.det(A + A.T) + la.cholesky(A + A.T).sum(), {"Det"}),
    ("solve_factor", "local_solve_triangular_matrix", [A, b], lambda: la.solve(L, b),
     {"Solve"}),
    ("solve_factor_transposed", "local_solve_triangular_matrix", [A, B],
     lambda: la.solve(L.T, B), {"Solve"}),
    ("solve_upper_factor", "local_solve_triangular_matrix", [A, B],
     lambda: la.solve(la.cholesky(A, lower=False), B), {"Solve"}),
    ("solve_tril", "local_solve_triangular_matrix", [A, b], lambda: la.solve(wt.tril(A), b),
     {"Solve"}),
    ("solve_triu_transposed", "local_solve_triangular_matrix", [A, B],
     lambda: la.solve(wt.triu(A).T, B), {"Solve"}),
    ("solve_tril_offset", "local_solve_triangular_matrix", [A, b],
     lambda: la.solve(wt.triu(A, 0), b),
     {"Solve"}),
    ("det_tril", "local_det_of_triangular", [A], lambda: la.det(wt.tril(A)), {"Det"}),
    ("solve_diag", "local_solve_diagonal_matrix", [v, B], lambda: la.solve(wt.diag(v), B),
     {"Solve", "AdvancedIncSubtensor"}),
    ("solve_diag_vector", "local_solve_diagonal_matrix", [v, b],
     lambda: la.solve(wt.diag(v), b), {"Solve"}),
    ("solve_eye_times_unchecked", "local_solve_diagonal_matrix", [v, b],
     lambda: la.solve(wt.eye(4) * v, b, check_finite=False), {"Solve"}),
    # the factorisation stays for another use (its sum, a solve): it still raises; the
    # product stays only for a matrix with an inf or a NaN (an ifelse's lazy branch)
    ("cholesky_outer", "local_cholesky_outer_product", [A], lambda: L @ L.T + L.sum(),
     {"Dot", "MatMul"}),
    ("cholesky_upper_outer", "local_cholesky_outer_product", [A, b],
     lambda: (la.cholesky(A, lower=False).T @ la.cholesky(A, lower=False)).sum()
     + la.solve_triangular(la.cholesky(A, lower=False), b).sum(), {"Dot", "MatMul"}),
]


@pytest.mark.parametrize(("case", "rule", "inputs", "build", "absent"), FIRING,
                         ids=[c[0] for c in FIRING])
def test_rule_fires_and_keeps_the_values(case, rule, inputs, build, absent):
    _fires(rule, inputs, build(), set(absent))


INV_SHAPES = [  # (product, values): the error the user's graph raises when run
    ("inv(A) @ b", [np.ones((2, 3)), np.ones(3)], np.linalg.LinAlgError,
     r"inv: last 2 dimensions of the array must be square, but a's are \(2, 3\)"),
    ("B @ inv(A)", [np.ones((3, 2)), np.ones((2, 3))], np.linalg.LinAlgError,
     r"inv: last 2 dimensions of the array must be square, but a's are \(3, 2\)"),
    ("inv(A) @ b", [np.eye(3), np.ones(4)], ValueError, r"^(Dot: |dot: )?.*\b4\b"),
    ("inv(A) @ B", [np.eye(3), np.ones((4, 2))], ValueError, r"^(Dot: |dot: )?.*\b4\b"),
    ("B @ inv(A)", [np.eye(3), np.ones((2, 4))], ValueError, r"^(Dot: |dot: )?.*\b4\b"),
    ("b @ inv(A)", [np.eye(3), np.ones(4)], ValueError, r"^(Dot: |dot: )?.*\b4\b"),
    ("inv(A) @ b", [np.zeros((2, 2)), np.ones(2)], np.linalg.LinAlgError,
     r"^inv: Singular matrix"),
    ("B @ inv(A)", [np.ones((2, 2)), np.ones((3, 2))], np.linalg.LinAlgError,
     r"^inv: Singular matrix"),
]


@pytest.mark.parametrize(("product", "values", "error", "message"), INV_SHAPES)
def test_inv_times_b_of_wrong_shapes_or_a_singular_a_raises_inv_or_the_products_error(
        linker, product, values, error, message):
    # the graph says inv: a matrix that is not square is inv's error, not solve's
    # ValueError about a transposed `a`; a b that does not fit is the product's
    second = b if product.endswith(" b") or product.startswith("b ") else B
    out = {"inv(A) @ b": lambda: la.inv(A) @ b, "inv(A) @ B": lambda: la.inv(A) @ B,
           "B @ inv(A)": lambda: B @ la.inv(A), "b @ inv(A)": lambda: b @ la.inv(A)}[product]()
    f = wb.function([A, second], out, linker=linker)
    assert "local_inv_dot_to_solve" in f.maker.rewrite_trace.rewrites_used()
    plain = wb.function([A, second], out, linker=linker, mode="FAST_COMPILE")
    for call in (plain, f):
        with pytest.raises(error, match=message) as raised:
            call(*values)
        assert "solve" not in str(raised.value)
        assert str(raised.value).lower().startswith(("inv: ", "dot: ", "shapes ("))
        assert isinstance(raised.value, np.linalg.LinAlgError) == (error is not ValueError)


def test_an_inverse_used_elsewhere_is_kept():
    inverse = la.inv(A)
    f = wb.function([A, b], [inverse @ b, inverse])
    assert "local_inv_dot_to_solve" not in f.maker.rewrite_trace.rewrites_used()


def test_solve_of_a_general_matrix_stays_general():
    f = wb.function([A, b], la.solve(A, b))
    assert "Solve" in _op_names(f) and "SolveTriangular" not in _op_names(f)
    # tril with a positive offset is not triangular
    f = wb.function([A, b], la.solve(wt.tril(A, 1), b))
    assert "local_solve_triangular_matrix" not in f.maker.rewrite_trace.rewrites_used()


@pytest.mark.parametrize("linker", ["py", "c"])
def test_a_scaled_matrix_is_not_diagonal(linker):
    # 2 * A folds the 2 into a (1, 1) constant: it has no off-diagonal entries, but it
    # broadcasts, so the product is not diagonal (solve/det/inv gave wrong values)
    a, v = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])
    f = wb.function([A, b], [la.solve(2 * A, b), la.det(2 * A), la.slogdet(2 * A)[0],
                             la.inv(2 * A) @ b], linker=linker)
    solved, det, sign, inv_b = f(a, v)
    np.testing.assert_allclose(solved, np.linalg.solve(2 * a, v))
    np.testing.assert_allclose(det, np.linalg.det(2 * a))
    assert sign == 1.0
    np.testing.assert_allclose(inv_b, np.linalg.solve(2 * a, v))
    assert "local_solve_diagonal_matrix" not in f.maker.rewrite_trace.rewrites_used()
    # a rectangular eye(n, m) * a is no square diagonal matrix: solve still refuses it
    rect, n, m = wt.dmatrix("rect"), wt.iscalar("n"), wt.iscalar("m")
    g = wb.function([rect, n, m, b], la.solve(wt.eye(n, m) * rect, b), linker=linker)
    with pytest.raises(ValueError, match="solve: last 2 dimensions of the array must be "
                                         "square"):  # on every linker, before b's rows
        g(np.ones((2, 3)), 2, 3, v)


def test_the_triangular_solve_keeps_check_finite(linker):
    # solve checks for infs and NaNs (scipy's check_finite) in what it reads: the
    # triangular solve checks the same, and tril(x) keeps its mask (x's other triangle
    # may hold a NaN that tril drops)
    f = wb.function([A, b], [la.solve(wt.tril(A), b), la.solve(la.cholesky(A), b)],
                    linker=linker)
    assert "local_solve_triangular_matrix" in f.maker.rewrite_trace.rewrites_used()
    a = np.array([[2.0, np.nan], [1.0, 3.0]])
    spd = np.array([[4.0, 1.0], [1.0, 3.0]])
    g = wb.function([A, b], la.solve(wt.tril(A), b), linker=linker)
    np.testing.assert_allclose(g(a, np.ones(2)), np.linalg.solve(np.tril(a), np.ones(2)))
    with pytest.raises(ValueError, match="solve_triangular: array must not contain infs"):
        f(spd, np.array([1.0, np.nan]))
    unchecked = wb.function([A, b], la.solve(la.cholesky(A), b, check_finite=False),
                            linker=linker)
    assert np.isnan(unchecked(spd, np.array([1.0, np.nan]))).any()


def test_a_zero_on_the_diagonal_still_raises_as_scipy(linker):
    # solve(diag(v), b) gave b / v = inf for a zero in v, where scipy raises
    f = wb.function([v, B], la.solve(wt.diag(v), B), linker=linker)
    assert "local_solve_diagonal_matrix" in f.maker.rewrite_trace.rewrites_used()
    assert "Solve" not in _op_names(f)
    with pytest.raises(np.linalg.LinAlgError):
        sl.solve(np.diag([1.0, 0.0]), np.ones((2, 2)))
    with pytest.raises(np.linalg.LinAlgError, match="solve: Singular matrix: the diagonal "
                                                    "matrix has a zero at position 1"):
        f(np.array([1.0, 0.0]), np.ones((2, 2)))
    with pytest.raises(ValueError, match="solve: array must not contain infs or NaNs"):
        f(np.array([1.0, np.nan]), np.ones((2, 2)))
    np.testing.assert_allclose(f(np.array([2.0, 4.0]), np.ones((2, 3))),
                               sl.solve(np.diag([2.0, 4.0]), np.ones((2, 3))))


def test_eye_times_a_non_finite_matrix_keeps_its_checked_solve(linker):
    # eye(n) * x has 0 * inf = NaN off the diagonal: scipy's check_finite refuses it
    x = np.array([[2.0, np.inf], [1.0, 4.0]])
    f = wb.function([A, b], la.solve(wt.eye(2) * A, b), linker=linker)
    assert "local_solve_diagonal_matrix" not in f.maker.rewrite_trace.rewrites_used()
    with pytest.raises(ValueError, match="infs or NaNs"):
        f(x, np.ones(2))
    with pytest.raises(ValueError, match="infs or NaNs"):
        sl.solve(np.eye(2) * x, np.ones(2))


def test_the_outer_product_of_a_negative_definite_factor_still_raises(linker):
    # cholesky(a) @ cholesky(a).T -> a dropped the factorisation, and its error
    negative = -np.array([[4.0, 1.0], [1.0, 3.0]])
    with pytest.raises(np.linalg.LinAlgError):
        sl.cholesky(negative, lower=True)
    f = wb.function([A], L @ L.T, linker=linker)
    assert "local_cholesky_outer_product" not in f.maker.rewrite_trace.rewrites_used()
    with pytest.raises(np.linalg.LinAlgError, match="cholesky: Matrix is not positive"):
        f(negative)
    kept = wb.function([A], [L @ L.T, L], linker=linker)  # the factor stays: safe
    assert "local_cholesky_outer_product" in kept.maker.rewrite_trace.rewrites_used()
    with pytest.raises(np.linalg.LinAlgError, match="cholesky: Matrix is not positive"):
        kept(negative)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("position", [(0, 0), (1, 0), (0, 1), (2, 2), (2, 1)])
def test_the_outer_product_of_a_non_finite_matrix_keeps_its_nans(linker, value, position):
    # an inf or a NaN spreads through the factor into L @ L.T (numpy: NaN rows and
    # columns; +inf on the diagonal makes 0 * inf): the rewrite gave a, one entry off
    spd = np.array([[4.0, 2.0, 1.0], [2.0, 5.0, 3.0], [1.0, 3.0, 6.0]])
    a = spd.copy()
    a[position] = value
    f = wb.function([A], [L @ L.T, L], linker=linker)
    plain = wb.function([A], [L @ L.T, L], linker=linker, mode="FAST_COMPILE")
    assert "local_cholesky_outer_product" in f.maker.rewrite_trace.rewrites_used()
    with np.errstate(invalid="ignore"):
        try:
            expected = plain(a)[0]
        except np.linalg.LinAlgError:  # -inf on the diagonal, an inf below it
            with pytest.raises(np.linalg.LinAlgError, match="cholesky"):
                f(a)
            return
        np.testing.assert_array_equal(f(a)[0], expected)
    np.testing.assert_allclose(f(spd)[0], spd, rtol=1e-12)  # finite: a itself


def test_a_stack_with_one_non_finite_matrix_keeps_the_products(linker):
    factor = la.cholesky(K)
    product = factor @ factor.transpose(0, 2, 1)
    f = wb.function([K], [product, factor], linker=linker)
    assert "local_cholesky_outer_product" in f.maker.rewrite_trace.rewrites_used()
    stack = VALUES[K].copy()
    stack[1, 0, 0] = np.inf
    with np.errstate(invalid="ignore"):
        low = np.linalg.cholesky(stack)
        got = f(stack)[0]
    np.testing.assert_allclose(got, low @ low.transpose(0, 2, 1), rtol=1e-12)
    assert np.isnan(got[1, 1:, 0]).all() and np.isfinite(got[0]).all()


NON_FINITE_SOLVES = [  # (rule, inputs, build): unchecked solves a rule restructures
    ("local_solve_diagonal_matrix", [v, B],
     lambda: la.solve(wt.diag(v), B, check_finite=False)),
    ("local_solve_diagonal_matrix", [A, b],
     lambda: la.solve(wt.eye(4) * A, b, check_finite=False)),
    ("local_solve_diagonal_matrix", [v, B],
     lambda: la.solve_triangular(wt.diag(v), B, lower=True, check_finite=False)),
    ("local_solve_diagonal_matrix", [A, B], lambda: la.solve_triangular(
        wt.eye(4) * A, B, lower=True, unit_diagonal=True, check_finite=False)),
    ("local_solve_triangular_matrix", [A, B],
     lambda: la.solve(la.cholesky(A), B, check_finite=False)),
    ("local_solve_triangular_matrix", [A, b],
     lambda: la.solve(wt.tril(A), b, check_finite=False)),
    ("local_inv_dot_to_solve", [A, B], lambda: la.inv(A) @ B),
    ("local_inv_dot_to_solve", [A, b], lambda: b @ la.inv(A)),
]


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize(("rule", "inputs", "build"), NON_FINITE_SOLVES,
                         ids=[f"{rule}-{i}" for i, (rule, _, _) in enumerate(NON_FINITE_SOLVES)])
def test_a_restructured_solve_of_non_finite_input_keeps_the_solves_values(
        linker, rule, inputs, build, value):
    # b / d, a substitution and an LU solve each spread an inf or a NaN their own way
    # (the general solve's rule: solvers.py): for such input the solve stays, lazily
    f = wb.function(inputs, build(), linker=linker)
    assert rule in f.maker.rewrite_trace.rewrites_used()
    plain = wb.function(inputs, build(), linker=linker, mode="FAST_COMPILE")
    finite = [VALUES[i] for i in inputs]
    np.testing.assert_allclose(f(*finite), plain(*finite), rtol=1e-9)
    for position in range(2):
        for entry in ((0,), (1,), (1, 0), (2, 2), (0, 2)):
            values = [x.copy() for x in finite]
            if len(entry) != values[position].ndim:
                continue
            values[position][entry] = value
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    want = plain(*values)
                except np.linalg.LinAlgError as error:
                    with pytest.raises(np.linalg.LinAlgError, match=str(error)[:20]):
                        f(*values)
                    continue
                np.testing.assert_allclose(f(*values), want, rtol=1e-9, equal_nan=True,
                                           err_msg=f"input {position} entry {entry}")


def test_the_unchecked_outer_product_is_asked_for_by_tag():
    mode = get_mode("FAST_RUN").including("drops_checks")
    f = wb.function([A], L @ L.T, mode=mode)
    assert "local_cholesky_outer_product_unchecked" in f.maker.rewrite_trace.rewrites_used()
    assert not {"Cholesky", "Dot", "MatMul"} & _op_names(f)
    spd = VALUES[A]
    np.testing.assert_allclose(f(spd), spd, rtol=1e-12)
    assert "drops_checks" in rewrite_db.tags_of("local_cholesky_outer_product_unchecked")
    assert "fast_run" not in rewrite_db.tags_of("local_cholesky_outer_product_unchecked")
    by_name = get_mode("FAST_RUN").including("local_cholesky_outer_product_unchecked")
    assert "local_cholesky_outer_product_unchecked" in wb.function(
        [A], L @ L.T, mode=by_name).maker.rewrite_trace.rewrites_used()


def test_l_times_l_is_not_an_outer_product():
    f = wb.function([A], L @ L)
    assert "local_cholesky_outer_product" not in f.maker.rewrite_trace.rewrites_used()


def test_a_complex_factor_times_its_plain_transpose_is_kept():
    """a = L L^H for complex a: ``L @ L.T`` is not a, so the rule declines."""
    z = wt.zmatrix("z")
    factor = la.cholesky(z)
    f = wb.function([z], factor @ factor.T)
    assert "local_cholesky_outer_product" not in f.maker.rewrite_trace.rewrites_used()
    m = np.array([[2.0, 1j], [-1j, 3.0]])
    low = np.linalg.cholesky(m)
    np.testing.assert_allclose(f(m), low @ low.T)


@pytest.mark.parametrize("linker", ["py", "c"])
def test_det_of_a_non_symmetric_matrix_ignores_its_factor(linker):
    # cholesky reads the lower triangle only: its diagonal is not this matrix's det
    a = np.array([[2.0, 5.0], [0.1, 2.0]])
    f = wb.function([A], [la.det(A), la.cholesky(A)], linker=linker)
    assert "local_det_from_cholesky" not in f.maker.rewrite_trace.rewrites_used()
    det, _ = f(a)
    np.testing.assert_allclose(det, np.linalg.det(a), rtol=1e-12)
    assert np.isclose(det, 3.5)


def test_log_of_a_negative_determinant_stays_nan():
    f = wb.function([A], wt.log(la.det(A)))
    assert "local_log_det_to_slogdet" in f.maker.rewrite_trace.rewrites_used()
    assert np.isnan(f(-np.eye(3)))
    assert f(np.zeros((2, 2))) == -np.inf


def test_rules_are_registered_with_their_pass_tags():
    for name, pass_name in (("local_inv_dot_to_solve", "stabilize"),
                            ("local_det_grad_cancel", "stabilize"),
                            ("local_log_det_to_slogdet", "stabilize"),
                            ("local_det_of_triangular", "specialize"),
                            ("local_solve_triangular_matrix", "specialize"),
                            ("local_solve_diagonal_matrix", "specialize"),
                            ("local_cholesky_outer_product", "specialize"),
                            ("local_det_from_cholesky", "specialize")):
        assert name in rules.__all__
        tags = rewrite_db.tags_of(name)
        assert {pass_name, "fast_run"} <= tags, (name, tags)
        assert "rules" in (rewrite_db[name].source or "")


@pytest.mark.skipif("c" not in available_linkers(), reason="no C linker here")
def test_the_diagonal_solve_runs_in_c():
    f = wb.function([v, B], la.solve(wt.diag(v), B), linker="c")
    assert "DiagonalSolve" in {type(n.op).__name__ for n in f.linker.report.c_nodes}


@pytest.mark.linkers("py", "c")
def test_gradient_of_log_det_is_finite_where_the_determinant_underflows(linker):
    # A 300x300 squared-exponential kernel: det(K) underflows to 0, so log's 1/det times
    # Det's det * inv(K)^T was 0 * inf = NaN; the cancelled product is slogdet's gradient.
    x, ls = wt.dvector("x"), wt.dscalar("ls")
    X = np.sort(np.random.default_rng(0).uniform(0, 10, 300))
    kern = wt.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ls ** 2) + 0.01 * wt.eye(300)
    cost = 0.5 * wt.log(la.det(kern))
    f = wb.function([x, ls], [cost, wb.grad(cost, ls)], linker=linker)
    assert "local_det_grad_cancel" in f.maker.rewrite_trace.rewrites_used()
    value, grad = f(X, 0.5)
    ref = 0.5 * la.slogdet(kern)[1]
    ref_value, ref_grad = wb.function([x, ls], [ref, wb.grad(ref, ls)], linker=linker)(X, 0.5)
    assert np.isclose(value, ref_value, rtol=1e-12) and np.isfinite(grad)
    assert np.isclose(grad, ref_grad, rtol=1e-9)
    h = 1e-6
    cost_at = wb.function([x, ls], ref, linker=linker)
    assert np.isclose(grad, (cost_at(X, 0.5 + h) - cost_at(X, 0.5 - h)) / (2 * h), rtol=1e-6)


def test_gradient_of_log_det_at_an_overflowing_determinant():
    g = wb.function([A], wb.grad(wt.log(la.det(A)), A))
    np.testing.assert_allclose(g(1e120 * np.eye(3)), 1e-120 * np.eye(3), rtol=1e-14)
    np.testing.assert_allclose(g(1e-120 * np.eye(3)), 1e120 * np.eye(3), rtol=1e-14)
    np.testing.assert_allclose(g(VALUES[A]), np.linalg.inv(VALUES[A]).T, rtol=1e-12)


@pytest.mark.linkers("py", "c")
def test_det_does_not_reuse_a_cholesky_from_an_untaken_ifelse_branch(linker):
    # "Cholesky if positive definite, else a fallback": the factor may raise, so only
    # the taken branch computes it; det/slogdet of the indefinite a = [[2, 3], [3, -2]]
    # are -13 / (-1, log 13), as without rewrites.
    s, flag = wt.dmatrix("s"), wt.lscalar("flag")
    a = s + s.T
    guarded = wb.ifelse(flag, la.cholesky(a).sum(), wt.constant(0.0))
    sv = np.array([[1.0, 3.0], [0.0, -1.0]])
    f = wb.function([s, flag], [la.det(a), *la.slogdet(a), guarded], linker=linker)
    assert "local_det_from_cholesky" not in f.maker.rewrite_trace.rewrites_used()
    det, sign, logdet, rest = f(sv, 0)
    assert np.isclose(det, -13.0) and sign == -1.0 and np.isclose(logdet, np.log(13.0))
    assert rest == 0.0
    # Computed on every run (outside the branch too), the factor is reused as before.
    g = wb.function([s], [la.det(a), la.cholesky(a).sum()], linker=linker)
    assert "local_det_from_cholesky" in g.maker.rewrite_trace.rewrites_used()


def test_gradient_of_log_abs_det_and_of_a_stack_where_determinants_overflow():
    g = wb.function([A], wb.grad(wt.log(abs(la.det(A))), A))
    assert "local_det_grad_cancel" in g.maker.rewrite_trace.rewrites_used()
    np.testing.assert_allclose(g(-1e-120 * np.eye(3)), -1e120 * np.eye(3), rtol=1e-14)
    stack = np.stack([1e-120 * np.eye(4), 1e80 * VALUES[A]])
    h = wb.function([K], wb.grad(wt.log(la.det(K)).sum(), K))
    np.testing.assert_allclose(h(stack), np.swapaxes(np.linalg.inv(stack), -1, -2),
                               rtol=1e-12)
