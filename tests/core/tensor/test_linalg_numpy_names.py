"""The numpy.linalg names composed in linalg/numpy_names.py: refusals naming the input,
multi_dot's chain order, cond's gradient and inf for singular matrices, stacks in
float32 on every linker (values of every case are in the catalogue,
cases_linalg_names)."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.tensor.linalg.numpy_names import matrix_chain_order

la = wt.linalg


ORDERS = [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"]


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_stacks_in_float32_match_numpy_on_every_linker(linker: str) -> None:
    rng = np.random.default_rng(0)
    x, d = wt.tensor3("x", dtype="float32"), wt.tensor3("d", dtype="float32")
    value = (rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)).astype("float32")
    deficient = value.copy()
    deficient[1, :, 0] = deficient[1, :, 1]  # rank 3
    deficient[2] = np.outer(deficient[2, 0], deficient[2, 1])  # rank 1
    outputs = [la.cond(x, p) for p in ORDERS] + [
        la.matrix_rank(d), la.matrix_transpose(x), la.vecdot(x, x[0]),
        la.cross(x[:, :3, :3], x[0, :3, :3])]
    got = wb.function([x, d], outputs, linker=linker)(value, deficient)
    expected = [np.linalg.cond(value, p) for p in ORDERS] + [
        np.linalg.matrix_rank(deficient), np.linalg.matrix_transpose(value),
        np.linalg.vecdot(value, value[0]), np.linalg.cross(value[:, :3, :3], value[0, :3, :3])]
    assert list(got[len(ORDERS)]) == [4, 3, 1]
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:workbench GPU linker")
def test_an_exactly_singular_matrix_has_an_infinite_condition(linker: str) -> None:
    x = wt.dtensor3("x")
    f = wb.function([x], [la.cond(x, p) for p in ORDERS], linker=linker)
    singular = np.array([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])
    for p, got in zip(ORDERS, f(singular)):
        expected = [0.0, np.inf] if p == -2 else [np.inf, np.inf]  # -2: min / max
        np.testing.assert_array_equal(got, expected, err_msg=f"p={p}")
        if p != "nuc":  # numpy's SVD of its NaN inverse raises for 'nuc'
            np.testing.assert_array_equal(got, np.linalg.cond(singular, p))


def test_cond_gradients_through_the_svd() -> None:
    rng = np.random.default_rng(1)
    value = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    for p in ORDERS:
        wb.verify_grad(lambda a, p=p: la.cond(a, p), [value], rng=rng)


def test_matrix_rank_has_a_zero_gradient_and_numpys_thresholds() -> None:
    x = wt.dmatrix("x")
    rank = la.matrix_rank(x)
    assert rank.type.dtype == "int64"
    # an integer output: as for any comparison, the gradient is zero, not a derivative
    np.testing.assert_array_equal(wb.function([x], wb.grad(rank, x))(np.eye(2)), 0)
    value = np.diag([1.0, 1e-3, 1e-9])
    f = wb.function([x], [la.matrix_rank(x, 1e-2), la.matrix_rank(x, rtol=1e-6),
                          la.matrix_rank(x)])
    assert [int(r) for r in f(value)] == [1, 2, 3]
    stack, tol = wt.dtensor3("s"), wt.dvector("tol")  # one tolerance per matrix
    g = wb.function([stack, tol], la.matrix_rank(stack, tol))
    values, tols = np.stack([value, value]), np.array([0.5, 1e-12])
    np.testing.assert_array_equal(g(values, tols), np.linalg.matrix_rank(values, tols))


def test_matrix_chain_order_is_the_textbook_one() -> None:
    # (10x100)(100x5)(5x50): (AB)C costs 7500, A(BC) 75000
    assert matrix_chain_order([10, 100, 5, 50])[0][2] == 1
    # (50x5)(5x100)(100x10): A(BC) costs 7500, (AB)C 75000
    assert matrix_chain_order([50, 5, 100, 10])[0][2] == 0


def test_multi_dot_multiplies_in_the_cheapest_order_of_static_shapes() -> None:
    a = wt.tensor("float64", shape=(50, 5), name="a")
    b = wt.tensor("float64", shape=(5, 100), name="b")
    c = wt.tensor("float64", shape=(100, 10), name="c")
    out = la.multi_dot([a, b, c])
    assert out.owner.inputs[0] is a  # a @ (b @ c)
    unknown = [wt.dmatrix(n) for n in "abc"]
    left_to_right = la.multi_dot(unknown)
    assert left_to_right.owner.inputs[1] is unknown[2]  # (a @ b) @ c
    rng = np.random.default_rng(2)
    values = [rng.standard_normal(s) for s in ((50, 5), (5, 100), (100, 10))]
    np.testing.assert_allclose(wb.function([a, b, c], out)(*values),
                               np.linalg.multi_dot(values))


def test_bad_inputs_are_refused_naming_what_was_expected() -> None:
    with pytest.raises(ValueError, match="tol and rtol cannot both be set"):
        la.matrix_rank(wt.dmatrix(), 1e-3, rtol=1e-3)
    with pytest.raises(ValueError, match="p must be one of .* got 3"):
        la.cond(wt.dmatrix(), 3)
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        la.cond(wt.tensor("float64", shape=(2, 3)), 1)
    with pytest.raises(np.linalg.LinAlgError, match="empty"):
        wb.function([], la.cond(np.zeros((0, 0))))()
    x = wt.dmatrix("x")
    with pytest.raises(np.linalg.LinAlgError, match="empty"):
        wb.function([x], la.cond(x))(np.zeros((3, 0)))
    with pytest.raises(np.linalg.LinAlgError, match="cond: x has 1 dimension"):
        la.cond(wt.dvector("x"))
    with pytest.raises(ValueError, match="at least two arrays, got 1"):
        la.multi_dot([wt.dmatrix()])
    with pytest.raises(np.linalg.LinAlgError, match="array 1 must be two-dimensional.*got 3"):
        la.multi_dot([wt.dmatrix(), wt.dtensor3(), wt.dmatrix()])
    with pytest.raises(ValueError, match="matrix_transpose: x must have at least 2 "
                                         "dimensions, got 1"):
        la.matrix_transpose(wt.dvector())
    with pytest.raises(ValueError, match="vecdot: x1 and x2 must have vectors of one "
                                         "length along the axis, got 3 and 4"):
        la.vecdot(wt.tensor("float64", shape=(3,)), wt.tensor("float64", shape=(4,)))
    with pytest.raises(ValueError, match="cross: both inputs must be .*3-dimensional "
                                         "vectors, got lengths 2 and 3"):
        la.cross(wt.tensor("float64", shape=(2,)), wt.tensor("float64", shape=(3,)))
    u, v = wt.dvector("u"), wt.dvector("v")
    with pytest.raises(ValueError, match="3-dimensional vectors"):
        wb.function([u, v], la.cross(u, v))(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="one length"):
        wb.function([u, v], la.vecdot(u, v))(np.ones(2), np.ones(3))


def test_the_numpy_2_names_are_also_top_level() -> None:
    assert wt.matrix_transpose is la.matrix_transpose and wt.vecdot is la.vecdot
    assert {"matrix_transpose", "vecdot"} <= set(wt.__all__)
    assert {"cond", "cross", "matrix_rank", "matrix_transpose", "multi_dot",
            "vecdot"} <= set(la.__all__)


def test_complex_matrices_use_conjugates_as_numpy() -> None:
    rng = np.random.default_rng(3)
    value = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    x = wt.tensor3("x", dtype="complex128")
    f = wb.function([x], [*(la.cond(x, p) for p in ORDERS), la.matrix_rank(x),
                          la.vecdot(x, x[0])])
    expected = [*(np.linalg.cond(value, p) for p in ORDERS), np.linalg.matrix_rank(value),
                np.linalg.vecdot(value, value[0])]
    for got, e in zip(f(value), expected):
        assert got.dtype == e.dtype
        np.testing.assert_allclose(got, e, rtol=1e-10)
