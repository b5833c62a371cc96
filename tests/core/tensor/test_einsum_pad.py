"""einsum's contraction order and the graph it builds, and pad's bad input; values,
gradients, graph files and linkers are covered by the catalogue (cases_einsum.py,
cases_arrays.py)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.compile.mode import available_linkers
from workbench.core.graph.basic import ancestors


def _numpy_flops(subscripts: str, values: list[np.ndarray], path: list) -> float:
    report = np.einsum_path(subscripts, *values, optimize=path)[1]
    return float(re.search(r"Optimized FLOP count:\s*([0-9.e+]+)", report).group(1))


@pytest.mark.parametrize(("subscripts", "shapes"), [
    ("ij,jk,kl->il", [(30, 4), (4, 50), (50, 2)]),
    ("ab,bc,cd,de,ef->af", [(2, 40), (40, 3), (3, 50), (50, 2), (2, 60)]),
    ("ea,fb,abcd,gc,hd->efgh", [(4, 5), (3, 6), (5, 6, 2, 3), (4, 2), (3, 3)]),
    ("ij,ik,il,jkl->", [(5, 6), (5, 7), (5, 8), (6, 7, 8)]),
])
def test_order_is_as_cheap_as_numpys_optimal(subscripts, shapes) -> None:
    values = [np.ones(s) for s in shapes]
    xs = [wt.TensorType("float64", s)(f"x{k}") for k, s in enumerate(shapes)]
    mine = wt.einsum_path(subscripts, *xs)
    best = np.einsum_path(subscripts, *values, optimize="optimal")[0]
    assert _numpy_flops(subscripts, values, mine) <= _numpy_flops(subscripts, values, best)


def _model_cost(terms: list[str], output: str, sizes: dict, path: list) -> int:
    """The cost of a pairwise order in einsum's own model (see workbench/core/tensor/einsum)."""
    from workbench.core.tensor.einsum import _contraction_cost, _reduced_letters

    remaining, total = _reduced_letters(terms, output), 0
    for i, j in path:
        others = set(output).union(*(r for k, r in enumerate(remaining) if k not in (i, j)))
        union = remaining[i] | remaining[j]
        total += _contraction_cost(union, union & others, sizes)
        del remaining[j]
        del remaining[i]
        remaining.append(union & others)
    return total


def _every_order(n: int):
    if n == 1:
        yield []
        return
    for pair in itertools.combinations(range(n), 2):
        for rest in _every_order(n - 1):
            yield [pair, *rest]


def test_order_is_the_cheapest_of_all_orders_on_random_subscripts() -> None:
    """Against brute force over every pairwise order, in einsum's cost model (which sums
    an operand's own indices first, as the graph does; NumPy's count does not)."""
    rng = np.random.default_rng(5)
    letters = list("abcdefg")
    for _ in range(25):
        terms = ["".join(rng.choice(letters, rng.integers(1, 4), replace=False))
                 for _ in range(int(rng.integers(3, 6)))]
        sizes = {c: int(rng.integers(2, 9)) for c in letters}
        output = "".join(sorted(c for c in set("".join(terms)) if rng.random() < 0.3))
        xs = [wt.TensorType("float64", tuple(sizes[c] for c in t))() for t in terms]
        chosen = wt.einsum_path(",".join(terms) + "->" + output, *xs)[1:]
        cheapest = min(_model_cost(terms, output, sizes, p) for p in _every_order(len(terms)))
        assert _model_cost(terms, output, sizes, chosen) == cheapest, (terms, output)


def test_einsum_builds_products_not_a_new_op() -> None:
    a, b, c = wt.dmatrix("a"), wt.dmatrix("b"), wt.dtensor3("c")
    ops = {type(v.owner.op).__name__ for v in ancestors([wt.einsum("ij,jk->ik", a, b)])
           if v.owner}
    assert "Dot" in ops
    ops = {type(v.owner.op).__name__ for v in ancestors([wt.einsum("bij,bjk->bik", c, c)])
           if v.owner}
    assert "MatMul" in ops


def test_einsum_gradient_of_a_chain() -> None:
    rng = np.random.default_rng(1)
    wb.verify_grad(lambda a, b, c: wt.einsum("ij,jk,kl->il", a, b, c),
                   [rng.normal(size=s) for s in ((3, 4), (4, 2), (2, 5))])


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda a: wt.einsum("ij,jk->ik", a), ValueError, "name 2 operands, got 1"),
    (lambda a: wt.einsum("ijk->i", a), ValueError, "has 2 dimensions but its subscripts"),
    (lambda a: wt.einsum("i1->i", a), ValueError, "only use letters"),
    (lambda a: wt.einsum("ij->ii", a), ValueError, "output index 'i' repeated"),
    (lambda a: wt.einsum("ij->k", a), ValueError, "appears in no operand"),
    (lambda a: wt.einsum(3, a), TypeError, "subscripts must be a string"),
    (lambda a: wt.einsum("ij,jk,kl", a, a, a, optimize=[(0, 0), (0, 1)]), ValueError,
     "pair of distinct positions"),
    (lambda a: wt.einsum("ij,jk,kl", a, a, a, optimize=[(0, 1)]), ValueError, "down to one"),
    (lambda a: wt.pad(a, 1, mode="mean"), ValueError, "mode must be one of"),
    (lambda a: wt.pad(a, -1), ValueError, "non-negative ints"),
    (lambda a: wt.pad(a, ((1, 2), (3, 4), (5, 6))), ValueError, "one pair per axis"),
    (lambda a: wt.pad(a, 1.5), ValueError, "non-negative ints"),
    (lambda a: wt.pad(wt.TensorType("float64", (0, 2))("e"), 1, "wrap"), ValueError,
     "cannot extend the empty axis 0"),
])
def test_bad_input_names_the_argument(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call(wt.dmatrix("a"))


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", available_linkers())
@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,j->i", ((3, 1), (4,))),
    ("ij,jk->ik", ((2, 1), (3, 4))),
    ("ij,jk->ik", ((2, 3), (1, 4))),
    ("bij,bjk->bik", ((1, 2, 1), (5, 3, 4))),
    ("ij,j->i", ((3, 0), (1,))),
])
def test_a_summed_index_of_length_one_broadcasts_as_numpy(linker, subscripts, shapes) -> None:
    rng = np.random.default_rng(3)
    values = [rng.normal(size=s) for s in shapes]
    want = np.einsum(subscripts, *values)
    for static in (False, True):
        xs = [wt.TensorType("float64", s if static else (None,) * len(s))() for s in shapes]
        got = wb.function(xs, wt.einsum(subscripts, *xs), linker=linker)(*values)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_broadcast_summed_index_has_the_gradient_of_numpy_broadcasting() -> None:
    rng = np.random.default_rng(4)
    wb.verify_grad(lambda a, b: wt.einsum("ij,jk->ik", a, b),
                   [rng.normal(size=(2, 1)), rng.normal(size=(3, 4))])


def test_summed_lengths_that_cannot_broadcast_name_the_index() -> None:
    a, b = wt.TensorType("float64", (3, 2))(), wt.TensorType("float64", (4,))()
    with pytest.raises(ValueError, match="index 'j' has length 2 in one operand and 4"):
        wt.einsum("ij,j->i", a, b)


@pytest.mark.parametrize("linker", available_linkers())
@pytest.mark.parametrize(("dtype_a", "dtype_b"), [
    ("int8", "int8"), ("int16", "int16"), ("uint8", "uint8"), ("bool", "bool"),
    ("int8", "int16"), ("uint8", "int8"), ("bool", "int8"), ("int8", "float32"),
])
def test_small_integer_and_boolean_operands_keep_numpys_dtype_and_wrapping(
        linker, dtype_a, dtype_b) -> None:
    rng = np.random.default_rng(7)
    high_a, high_b = (2 if d == "bool" else 120 for d in (dtype_a, dtype_b))
    a_value = rng.integers(0, high_a, (30, 30)).astype(dtype_a)  # sums overflow 8 bits
    b_value = rng.integers(0, high_b, 30).astype(dtype_b)
    a = wt.TensorType(dtype_a, (None, None))("a")
    b = wt.TensorType(dtype_b, (None,))("b")
    forms = [("ij->", [a]), ("ij,jk->ik", [a, a]), ("ij,j->i", [a, b]), ("ii->i", [a]),
             ("ij,j->", [a, b])]
    f = wb.function([a, b], [wt.einsum(s, *xs) for s, xs in forms], linker=linker,
                    on_unused_input="ignore")
    values = {a: a_value, b: b_value}
    for (subscripts, xs), got in zip(forms, f(a_value, b_value), strict=True):
        want = np.einsum(subscripts, *(values[x] for x in xs))
        assert got.dtype == want.dtype, subscripts
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=subscripts)


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", available_linkers())
@pytest.mark.parametrize(("subscripts", "shape"), [
    ("ii->i", (3, 4)), ("ii", (4, 3)), ("ijj->ij", (2, 3, 1)), ("iij->j", (1, 3, 2)),
])
def test_an_index_repeated_in_one_operand_needs_equal_lengths(linker, subscripts, shape
                                                              ) -> None:
    """NumPy refuses ``einsum("ii->i", x)`` for a non-square x (no broadcasting inside one
    operand, a length of 1 included); the diagonal alone returned the leading square's."""
    with pytest.raises(ValueError, match="repeated in operand 0"):
        wt.einsum(subscripts, wt.TensorType("float64", shape)("x"))
    x = wt.TensorType("float64", (None,) * len(shape))("x")
    f = wb.function([x], wt.einsum(subscripts, x), linker=linker)
    with pytest.raises(ValueError, match="index '.' is repeated in operand 0"):
        f(np.ones(shape))
    square = np.arange(float(np.prod([3] * len(shape)))).reshape([3] * len(shape))
    np.testing.assert_allclose(f(square), np.einsum(subscripts, square))


@pytest.mark.filterwarnings("ignore:.*no CUDA device")
@pytest.mark.parametrize("linker", available_linkers())
@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric", "wrap"])
def test_pad_refuses_an_empty_axis_known_only_when_run(linker, mode) -> None:
    """As for a static empty axis (NumPy: can't extend empty axis 0): the gather or the
    broadcast failed with an IndexError naming neither pad nor the axis."""
    a = wt.dmatrix("a")
    f = wb.function([a], wt.pad(a, ((1, 2), (0, 0)), mode=mode), linker=linker)
    with pytest.raises(ValueError, match="pad: cannot extend the empty axis 0"):
        f(np.zeros((0, 3)))
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(f(value), np.pad(value, ((1, 2), (0, 0)), mode=mode))
    wb.verify_grad(lambda x: wt.pad(x, ((1, 2), (0, 1)), mode=mode), [value])
