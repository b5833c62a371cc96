"""scipy 1.15's structure names of `solve` ("diagonal", "tridiagonal", "banded",
"upper triangular", "lower triangular") and `transposed`: the entries each one reads,
its errors and its gradient, on every linker, rewritten and not, against SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import get_mode

la = wt.linalg
STRUCTURES = ["diagonal", "tridiagonal", "banded", "upper triangular", "lower triangular",
              "gen"]
rng = np.random.default_rng(19)
A = rng.standard_normal((4, 4)) + 4 * np.eye(4)  # every entry nonzero: each one read counts
NAN_CORNER = A.copy()
NAN_CORNER[0, 3] = np.nan  # outside every band but the general one's
ZERO_ON_DIAGONAL = A.copy()
ZERO_ON_DIAGONAL[2, 2] = 0.0


def _outcome(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except (ValueError, np.linalg.LinAlgError) as exc:
        return type(exc)


@pytest.mark.parametrize("assume_a", STRUCTURES)
@pytest.mark.parametrize("transposed", [False, True])
def test_each_structure_reads_what_scipy_reads(linker, assume_a, transposed):
    a, b = wt.dmatrix("a"), wt.dvector("b")
    bv = rng.standard_normal(4)
    for check_finite in (True, False):
        out = la.solve(a, b, assume_a=assume_a, transposed=transposed,
                       check_finite=check_finite)
        compiled = [wb.function([a, b], out, linker=linker),
                    wb.function([a, b], out, mode=wb.Mode(linker=linker))]
        for value in (A, NAN_CORNER, ZERO_ON_DIAGONAL):
            if value is NAN_CORNER and not check_finite and assume_a == "banded":
                continue  # scipy's gbsv calls a NaN singular; a general solve gives NaN
            expected = _outcome(sl.solve, value, bv, assume_a=assume_a,
                                transposed=transposed, check_finite=check_finite)
            for f in compiled:
                got = _outcome(f, value, bv)
                if isinstance(expected, type):
                    assert got is expected, (value, got)
                else:
                    np.testing.assert_allclose(got, expected, rtol=1e-10, equal_nan=True)


@pytest.mark.parametrize("assume_a", ["diagonal", "tridiagonal", "upper triangular"])
def test_a_structure_batches_and_has_the_gradient_of_the_entries_it_reads(linker, assume_a):
    a, b = wt.dtensor3("a"), wt.dmatrix("b")
    stack, rhs = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4), rng.standard_normal((4, 2))
    f = wb.function([a, b], la.solve(a, b, assume_a=assume_a), linker=linker)
    expected = [sl.solve(m, rhs, assume_a=assume_a) for m in stack]
    np.testing.assert_allclose(f(stack, rhs), expected, rtol=1e-10)
    mode = get_mode("FAST_RUN").clone(linker=linker)
    wb.verify_grad(lambda m, r: la.solve(m, r, assume_a=assume_a, transposed=True),
                   [stack, rhs], rng=rng, mode=mode)


def test_names_and_refusals_are_scipys():
    a, b = wt.dmatrix("a"), wt.dvector("b")
    with pytest.raises(ValueError, match="'diagonal', 'tridiagonal', 'banded'.*got 'band'"):
        la.solve(a, b, assume_a="band")
    with pytest.raises(NotImplementedError, match="transposed=True .* real a only"):
        la.solve(wt.cmatrix("c"), wt.cvector("v"), transposed=True)
