"""numpy.einsum, lowered to the library's products with an explicit contraction order.

``einsum("ij,jk->ik", a, b)`` builds no einsum Op: the subscripts are parsed
(``...`` and the implicit output included), repeated indices inside one operand
become `diagonal`s, indices used by one operand only and not in the output are
summed at once, and then the operands are contracted two at a time:

- no shared index to keep (a plain contraction): `tensordot` (a `Dot`);
- shared indices that stay (batch indices) and some to sum: `matmul` on
  ``(batch..., M, K) @ (batch..., K, N)`` (a `MatMul`, batch dimensions
  broadcasting);
- nothing to sum: an elementwise product of broadcast operands.

The order of the pairwise contractions is the one given (``optimize`` as
``numpy.einsum_path`` writes it, ``["einsum_path", (0, 1), (0, 1)]``), or for
three operands and more the cheapest order, found exactly by dynamic
programming over subsets of operands (up to 10 operands; greedy beyond),
counting each pairwise contraction's floating-point operations as NumPy's
``einsum_path`` does (the product of the lengths of its indices, twice that
where an index is summed). Static lengths are used where known; an unknown length counts as
`UNKNOWN_LENGTH`. `einsum_path` returns the order chosen, in NumPy's format.
Gradients, printing and every linker come from the Ops the graph is made of.
"""

from __future__ import annotations

import itertools
import math
import string
from collections.abc import Sequence
from typing import Any

from workbench.core.dtypes.promotion import result_type
from workbench.core.graph.basic import Variable
from workbench.core.tensor.basic import cast
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["einsum", "einsum_path"]

#: The length assumed, for choosing the order, for a dimension whose length is unknown.
UNKNOWN_LENGTH = 32
#: With more operands than this, the order is greedy (cheapest next pair) instead of exact.
EXACT_LIMIT = 10


# -- parsing ------------------------------------------------------------------------------


def _parse(subscripts: str, ndims: Sequence[int]) -> tuple[list[str], str]:
    """Each operand's index letters (ellipses expanded, right-aligned) and the output's."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string, got {type(subscripts).__name__}")
    text = subscripts.replace(" ", "")
    inputs_text, arrow, output_text = text.partition("->")
    terms = inputs_text.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: the subscripts {subscripts!r} name {len(terms)} operands, "
                         f"got {len(ndims)}")
    used = set(text) - set(".,->")
    for letter in used:
        if letter not in string.ascii_letters:
            raise ValueError(f"einsum: subscripts may only use letters, got {letter!r} in "
                             f"{subscripts!r}")
    spare = [c for c in string.ascii_letters if c not in used]
    widest = 0
    for term, ndim in zip(terms, ndims):
        if "..." in term:
            widest = max(widest, ndim - len(term.replace("...", "")))
    ellipsis = "".join(spare[:widest])
    operands = []
    for k, (term, ndim) in enumerate(zip(terms, ndims)):
        if term.count("...") > 1 or "." in term.replace("...", ""):
            raise ValueError(f"einsum: operand {k}'s subscripts {term!r} are malformed")
        if "..." in term:
            covered = ndim - len(term.replace("...", ""))
            if covered < 0:
                raise ValueError(f"einsum: operand {k} has {ndim} dimensions, fewer than its "
                                 f"subscripts {term!r} name")
            term = term.replace("...", ellipsis[widest - covered:] if covered else "")
        if len(term) != ndim:
            raise ValueError(f"einsum: operand {k} has {ndim} dimensions but its subscripts "
                             f"{term!r} name {len(term)}")
        operands.append(term)
    if arrow:
        if "..." in output_text:
            output_text = output_text.replace("...", ellipsis)
        elif ellipsis and any("..." in t for t in terms):
            output_text = ellipsis + output_text  # numpy: broadcast dims lead
        for letter in output_text:
            if output_text.count(letter) > 1:
                raise ValueError(f"einsum: output index {letter!r} repeated in {subscripts!r}")
            if not any(letter in term for term in operands):
                raise ValueError(f"einsum: output index {letter!r} appears in no operand")
    else:
        counts = {c: sum(term.count(c) for term in operands) for c in set("".join(operands))}
        output_text = ellipsis + "".join(sorted(c for c, n in counts.items()
                                                if n == 1 and c not in ellipsis))
    return operands, output_text


# -- the contraction order ------------------------------------------------------------------


def _contraction_cost(indices: set[str], kept: set[str], sizes: dict[str, int]) -> int:
    """Floating-point operations of one pairwise contraction over `indices`: a multiply
    per combination, and an add too where some index is summed (NumPy's count)."""
    return math.prod(sizes[c] for c in indices) * (2 if indices - kept else 1)


def _reduced_letters(terms: list[str], output: str) -> list[set[str]]:
    """Each operand's indices once those it alone uses are summed (as `einsum` does first)."""
    return [set(t) & set(output).union(*(set(u) for j, u in enumerate(terms) if j != k))
            for k, t in enumerate(terms)]


def _optimal_order(terms: list[str], output: str, sizes: dict[str, int]
                   ) -> list[tuple[int, int]]:
    """The cheapest sequence of pairwise contractions, in einsum_path's format (each pair
    indexes the current list of operands; the result is appended at the end)."""
    n = len(terms)
    if n < 2:
        return []
    if n > EXACT_LIMIT:
        return _greedy_order(terms, output, sizes)
    full = (1 << n) - 1
    letters = _reduced_letters(terms, output)

    def kept(mask: int) -> set[str]:
        inside = set().union(*(letters[i] for i in range(n) if mask >> i & 1))
        outside = set(output).union(*(letters[i] for i in range(n) if not mask >> i & 1))
        return inside & outside

    best: dict[int, tuple[int, Any]] = {1 << i: (0, i) for i in range(n)}
    for size in range(2, n + 1):
        for members in itertools.combinations(range(n), size):
            mask = sum(1 << i for i in members)
            choice = None
            sub = (mask - 1) & mask
            while sub:
                other = mask ^ sub
                if sub < other and sub in best and other in best:
                    cost = best[sub][0] + best[other][0] + _contraction_cost(
                        kept(sub) | kept(other), kept(mask), sizes)
                    if choice is None or cost < choice[0]:
                        choice = (cost, (sub, other))
                sub = (sub - 1) & mask
            best[mask] = choice  # type: ignore[assignment]
    return _linearize(best, full, n)


def _linearize(best: dict[int, tuple[int, Any]], full: int, n: int) -> list[tuple[int, int]]:
    """The tree of `best` as a list of pairs of positions in a shrinking operand list."""
    order: list[tuple[int, int]] = []
    current: list[int] = [1 << i for i in range(n)]  # the mask each list entry holds

    def build(mask: int) -> None:
        plan = best[mask][1]
        if isinstance(plan, int):
            return
        left, right = plan
        build(left)
        build(right)
        i, j = sorted((current.index(left), current.index(right)))
        order.append((i, j))
        del current[j]
        del current[i]
        current.append(mask)

    build(full)
    return order


def _greedy_order(terms: list[str], output: str, sizes: dict[str, int]
                  ) -> list[tuple[int, int]]:
    remaining = _reduced_letters(terms, output)
    order = []
    while len(remaining) > 1:
        def merged_of(i: int, j: int) -> set[str]:
            others = set(output).union(*(r for k, r in enumerate(remaining) if k not in (i, j)))
            return (remaining[i] | remaining[j]) & others

        def cost(pair: tuple[int, int]) -> int:
            i, j = pair
            return _contraction_cost(remaining[i] | remaining[j], merged_of(i, j), sizes)

        i, j = min(itertools.combinations(range(len(remaining)), 2), key=cost)
        merged = merged_of(i, j)
        order.append((i, j))
        del remaining[j]
        del remaining[i]
        remaining.append(merged)
    return order


def _sizes(terms: list[str], operands: list[Variable]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for term, x in zip(terms, operands):
        for letter, length in zip(term, x.type.shape):
            if length is not None and length != 1:
                sizes[letter] = length
            else:
                sizes.setdefault(letter, UNKNOWN_LENGTH if length is None else 1)
    return sizes


# -- building the graph ---------------------------------------------------------------------


def _same_lengths(x: Variable, first: int, second: int, letter: str, operand: int
                  ) -> Variable:
    """`x`, its axes `first` and `second` (one index repeated) checked to be equally long:
    `diagonal` alone would cut the longer one short where NumPy refuses (no broadcasting
    inside one operand, a length of 1 included)."""
    from workbench.core.tensor.math import eq
    from workbench.core.tensor.shape import check_and_raise, shape_tuple

    message = (f"einsum: index {letter!r} is repeated in operand {operand}, whose axes "
               f"{first} and {second} must then have the same length")
    la, lb = x.type.shape[first], x.type.shape[second]
    if la is not None and lb is not None:
        if la != lb:
            raise ValueError(f"{message}, got {la} and {lb} ({x.type})")
        return x
    lengths = shape_tuple(x)
    return check_and_raise(x, [eq(lengths[first], lengths[second])], "ValueError", message)


def _reduce_own(x: Variable, term: str, keep: set[str], operand: int = 0
                ) -> tuple[Variable, str]:
    """`x` with repeated indices turned into diagonals and indices not in `keep` summed."""
    from workbench.core.tensor.array_utils import diagonal

    while len(set(term)) != len(term):
        letter = next(c for c in term if term.count(c) > 1)
        first = term.index(letter)
        second = term.index(letter, first + 1)
        x = diagonal(_same_lengths(x, first, second, letter, operand), 0, first, second)
        term = "".join(c for k, c in enumerate(term) if k not in (first, second)) + letter
    drop = [k for k, c in enumerate(term) if c not in keep]
    if drop:
        x = x.sum(axis=drop)
        term = "".join(c for k, c in enumerate(term) if k not in drop)
    return x, term


def _contract(a: Variable, ta: str, b: Variable, tb: str, keep: set[str]
              ) -> tuple[Variable, str]:
    """The product of two operands, summed over their shared indices not in `keep`."""
    from workbench.core.tensor.elemwise import dimshuffle
    from workbench.core.tensor.linalg.products import matmul, tensordot
    from workbench.core.tensor.math import mul
    from workbench.core.tensor.shape import reshape, shape_tuple

    shared = [c for c in ta if c in tb]
    summed = [c for c in shared if c not in keep]
    batch = [c for c in shared if c in keep]
    a_only = [c for c in ta if c not in tb]
    b_only = [c for c in tb if c not in ta]
    if not summed:  # an elementwise product over the union of the indices
        out = batch + a_only + b_only
        xa = dimshuffle(a, [ta.index(c) if c in ta else "x" for c in out])
        xb = dimshuffle(b, [tb.index(c) if c in tb else "x" for c in out])
        return mul(xa, xb), "".join(out)
    a, b = _broadcast_summed(a, ta, b, tb, summed)
    if not batch:
        axes = ([ta.index(c) for c in summed], [tb.index(c) for c in summed])
        return tensordot(a, b, axes), "".join(a_only + b_only)
    la, lb = shape_tuple(a), shape_tuple(b)
    xa = dimshuffle(a, [ta.index(c) for c in batch + a_only + summed])
    xb = dimshuffle(b, [tb.index(c) for c in batch + summed + b_only])
    a_batch = [la[ta.index(c)] for c in batch]
    b_batch = [lb[tb.index(c)] for c in batch]
    m = 1 if not a_only else _product([la[ta.index(c)] for c in a_only])
    n = 1 if not b_only else _product([lb[tb.index(c)] for c in b_only])
    k = _product([la[ta.index(c)] for c in summed])
    product = matmul(reshape(xa, (*a_batch, m, k)), reshape(xb, (*b_batch, k, n)))
    out_batch = list(shape_tuple(product))[:len(batch)]
    lengths = out_batch + [la[ta.index(c)] for c in a_only] + [lb[tb.index(c)] for c in b_only]
    return reshape(product, tuple(lengths)), "".join(batch + a_only + b_only)


def _broadcast_summed(a: Variable, ta: str, b: Variable, tb: str, summed: list[str]
                      ) -> tuple[Variable, Variable]:
    """`a` and `b` with the axes of each summed index broadcast to one length: NumPy's einsum
    lets a length-1 axis stand for any length (``"ij,j->i"`` on (3, 1) and (4,)), which the
    products (`tensordot`, `matmul`) do not. Nothing is added where the static lengths
    are known and equal."""
    from workbench.core.tensor.elemwise import broadcast_length
    from workbench.core.tensor.reshape import broadcast_to
    from workbench.core.tensor.shape import shape_tuple

    unproven = []
    for c in summed:
        sa, sb = a.type.shape[ta.index(c)], b.type.shape[tb.index(c)]
        if sa is not None and sa == sb:
            continue
        if sa is not None and sb is not None and 1 not in (sa, sb):
            raise ValueError(f"einsum: index {c!r} has length {sa} in one operand and {sb} "
                             f"in another (only a length of 1 broadcasts)")
        unproven.append(c)
    if not unproven:
        return a, b
    la, lb = list(shape_tuple(a)), list(shape_tuple(b))
    for c in unproven:
        ia, ib = ta.index(c), tb.index(c)
        la[ia] = lb[ib] = broadcast_length([la[ia], lb[ib]])
    return broadcast_to(a, la), broadcast_to(b, lb)


def _product(lengths: Sequence[Any]) -> Any:
    from workbench.core.tensor.join import length_product

    return length_product(list(lengths))


def _prepare(subscripts: str, operands: Sequence[Any]
             ) -> tuple[list[Variable], list[str], str, dict[str, int]]:
    xs = [as_tensor_variable(x) for x in operands]
    if not xs:
        raise ValueError("einsum: at least one operand is needed")
    terms, output = _parse(subscripts, [x.type.ndim for x in xs])
    return xs, terms, output, _sizes(terms, xs)


def _order(optimize: Any, terms: list[str], output: str, sizes: dict[str, int]
           ) -> list[tuple[int, int]]:
    if isinstance(optimize, (list, tuple)):
        steps = list(optimize[1:]) if optimize and optimize[0] == "einsum_path" else list(
            optimize)
        count = len(terms)
        for step in steps:
            if len(step) != 2 or not all(0 <= int(i) < count for i in step) or step[0] == step[1]:
                raise ValueError(f"einsum: each step of optimize must be a pair of distinct "
                                 f"positions among the {count} current operands, got {step!r}")
            count -= 1
        if count != 1:
            raise ValueError(f"einsum: optimize must contract the operands down to one, got "
                             f"{optimize!r} for {len(terms)} operands")
        return [tuple(sorted(int(i) for i in step)) for step in steps]  # type: ignore[misc]
    if optimize is False:
        return [(0, 1)] * (len(terms) - 1)
    return _optimal_order(terms, output, sizes)


def einsum_path(subscripts: str, *operands: Any, optimize: Any = True) -> list[Any]:
    """The contraction order `einsum` uses, as ``["einsum_path", (i, j), ...]``."""
    _, terms, output, sizes = _prepare(subscripts, operands)
    return ["einsum_path", *_order(optimize, terms, output, sizes)]


def einsum(subscripts: str, *operands: Any, optimize: Any = True) -> Variable:
    """numpy.einsum: the sum of products the subscripts describe (see the module).

    ``optimize``: True (default) picks the cheapest order, False contracts left
    to right, a list gives the order (numpy.einsum_path's format).
    """
    from workbench.core.tensor.elemwise import dimshuffle

    xs, terms, output, sizes = _prepare(subscripts, operands)
    steps = _order(optimize, terms, output, sizes)
    # NumPy's einsum keeps the operands' common dtype (int8 stays int8, bool stays bool).
    # Small integers and booleans are contracted in int64 and cast back at the end: the
    # same value modulo 2**bits as NumPy's wrapping (and "any" for booleans), where the
    # lowered sums alone would widen the result to int64.
    want = result_type(*(x.type.dtype for x in xs))
    if want.is_bool or (want.is_int and want.itemsize < 8):
        xs = [cast(x, "int64") for x in xs]

    def needed(skip: Sequence[int]) -> set[str]:
        return set(output).union(*(set(t) for k, t in enumerate(terms) if k not in skip))

    for k in range(len(xs)):
        xs[k], terms[k] = _reduce_own(xs[k], terms[k], needed([k]), k)
    for i, j in steps:
        keep = needed([i, j])
        result, term = _contract(xs[i], terms[i], xs[j], terms[j], keep)
        for k in (j, i):
            del xs[k]
            del terms[k]
        xs.append(result)
        terms.append(term)
    (x,), (term,) = xs, terms
    x, term = _reduce_own(x, term, set(output))
    if term != output:
        x = dimshuffle(x, [term.index(c) for c in output])
    return x if x.type.dtype == want else cast(x, want)
