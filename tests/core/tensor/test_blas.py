"""Gemm and Gemv: values against NumPy, shapes, broadcasting of the accumulated
operand, beta == 0, inplace variants, input checks, infer_shape and flops."""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.tensor.blas import Gemm, Gemv, gemm, gemv

RNG = np.random.default_rng(2)


def test_gemm_matches_numpy() -> None:
    z, x, y = wt.dmatrix("z"), wt.dmatrix("x"), wt.dmatrix("y")
    a, b = wt.dscalar("a"), wt.dscalar("b")
    out = gemm(z, a, x, y, b)
    assert str(out.owner.op).startswith("Gemm")
    zv, xv, yv = (RNG.standard_normal(s) for s in ((3, 2), (3, 4), (4, 2)))
    got = wb.function([z, a, x, y, b], out)(zv, 0.5, xv, yv, 2.0)
    np.testing.assert_allclose(got, 2.0 * zv + 0.5 * xv @ yv)
    assert zv.shape == (3, 2)  # not modified


def test_gemv_matches_numpy() -> None:
    yv_, av, xv = RNG.standard_normal(3), RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    y, a, x = wt.dvector("y"), wt.dmatrix("a"), wt.dvector("x")
    got = wb.function([y, a, x], gemv(y, 1.5, a, x, -1.0))(yv_, av, xv)
    np.testing.assert_allclose(got, -yv_ + 1.5 * av @ xv)


def test_beta_zero_ignores_nan_in_the_accumulated_operand() -> None:
    z, x, y = wt.dmatrix("z"), wt.dmatrix("x"), wt.dmatrix("y")
    f = wb.function([z, x, y], gemm(z, 1.0, x, y, 0.0))
    got = f(np.full((2, 2), np.nan), np.eye(2), np.ones((2, 2)))
    np.testing.assert_array_equal(got, np.ones((2, 2)))


def test_accumulated_operand_may_broadcast() -> None:
    z = wt.tensor("float64", shape=(1, None), name="z")
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    out = gemm(z, 1.0, x, y, 1.0)
    assert out.type.shape == (None, None)
    zv, xv, yv = (RNG.standard_normal(s) for s in ((1, 2), (3, 4), (4, 2)))
    np.testing.assert_allclose(wb.function([z, x, y], out)(zv, xv, yv), zv + xv @ yv)


def test_static_shapes_are_propagated_and_checked() -> None:
    x = wt.tensor("float64", shape=(3, 4))
    y = wt.tensor("float64", shape=(4, 2))
    z = wt.dmatrix("z")
    assert gemm(z, 1.0, x, y, 1.0).type.shape == (3, 2)
    with pytest.raises(ValueError, match="not aligned"):
        gemm(z, 1.0, x, wt.tensor("float64", shape=(5, 2)), 1.0)


def test_bad_inputs_name_the_culprit() -> None:
    z, x, y = wt.dmatrix("z"), wt.dmatrix("x"), wt.dmatrix("y")
    with pytest.raises(TypeError, match="rank 2"):
        gemm(z, 1.0, wt.dvector("v"), y, 1.0)
    with pytest.raises(TypeError, match="alpha must be 0-d"):
        Gemm()(z, wt.dvector("a"), x, y, wt.dscalar("b"))
    with pytest.raises(TypeError, match="cast first"):
        Gemm()(z, wt.dscalar("a"), wt.fmatrix("xf"), y, wt.dscalar("b"))
    with pytest.raises(TypeError, match="float or complex"):
        gemm(wt.imatrix("i"), 1, wt.imatrix("j"), wt.imatrix("k"), 1)


def test_inplace_writes_into_the_accumulated_operand() -> None:
    op = Gemm(inplace=True)
    assert op.destroy_map == {0: [0]} and Gemm().destroy_map == {}
    assert op != Gemm() and op == Gemm(inplace=True)
    z, x, y = wt.dmatrix("z"), wt.dmatrix("x"), wt.dmatrix("y")
    a, b = wt.dscalar("a"), wt.dscalar("b")
    node = op.make_node(z, a, x, y, b)
    zv = np.ones((2, 2))
    cells = [[None]]
    op.perform(node, [zv, np.float64(1.0), np.eye(2), np.eye(2), np.float64(1.0)], cells)
    assert cells[0][0] is zv
    np.testing.assert_array_equal(zv, np.ones((2, 2)) + np.eye(2))
    with pytest.raises(ValueError, match="static shape"):
        op.make_node(wt.tensor("float64", shape=(1, None)), a, x, y, b)


def test_gemv_inplace_variant() -> None:
    op = Gemv(inplace=True)
    y, a, x = wt.dvector("y"), wt.dmatrix("a"), wt.dvector("x")
    s = wt.dscalar("s")
    node = op.make_node(y, s, a, x, s)
    yv = np.zeros(2)
    cells = [[None]]
    op.perform(node, [yv, np.float64(2.0), np.eye(2), np.array([1.0, 2.0]), np.float64(2.0)],
               cells)
    assert cells[0][0] is yv
    np.testing.assert_array_equal(yv, [2.0, 4.0])


def test_infer_shape_and_flops() -> None:
    z, x, y = wt.dmatrix("z"), wt.dmatrix("x"), wt.dmatrix("y")
    out = gemm(z, 1.0, x, y, 1.0)
    node = out.owner
    symbolic = [wt.shape_tuple(v) for v in node.inputs]
    shapes = node.op.infer_shape(None, node, symbolic)
    assert len(shapes[0]) == 2
    f = wb.function([z, x, y], list(shapes[0]), on_unused_input="ignore")
    assert [int(v) for v in f(np.zeros((3, 2)), np.zeros((3, 4)), np.zeros((4, 2)))] == [3, 2]
    assert node.op.flops([(3, 2), (), (3, 4), (4, 2), ()], [(3, 2)]) == 2 * 6 * 4 + 3 * 6
