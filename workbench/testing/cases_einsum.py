"""Catalogue cases of `einsum`: products, traces and diagonals, batch contractions,
ellipses that broadcast, the implicit output, three and five operands (contracted in
the cheapest order), a given order, static shapes and integer operands. The
reference is numpy.einsum on the same subscripts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]

INT_ONLY = "no float inputs"


def _einsum(subscripts: str, **kwargs: Any) -> Callable[..., Any]:
    def build(*operands: Any) -> Any:
        import workbench.core.tensor as wt

        return wt.einsum(subscripts, *operands, **kwargs)

    return build


def _np_einsum(subscripts: str) -> Callable[..., Any]:
    return lambda *operands: np.asarray(np.einsum(subscripts, *operands))


def _case(name: str, subscripts: str, *shapes: tuple[int, ...], dtype: str = "float",
          static: bool = False, **kwargs: Any) -> Case:
    args = tuple(Arg(s, dtype, static=static) if dtype != "float" else Arg(s, static=static)
                 for s in shapes)
    return Case(name, _einsum(subscripts, **kwargs), _np_einsum(subscripts), args,
                grad=INT_ONLY if dtype != "float" else True)


CASES: list[Case] = [
    _case("matmul", "ij,jk->ik", (3, 4), (4, 5)),
    _case("implicit_output", "jk,ij", (4, 5), (3, 4)),
    _case("transpose", "ij->ji", (3, 4)),
    _case("trace", "ii", (4, 4)),
    _case("diagonal", "ii->i", (3, 3)),
    _case("diagonal_sum", "iij->j", (3, 3, 2)),
    _case("sum_all", "ijk->", (2, 3, 4)),
    _case("inner", "i,i->", (5,), (5,)),
    _case("outer", "i,j->ij", (3,), (4,)),
    _case("hadamard", "ij,ij->ij", (2, 3), (2, 3)),
    _case("batch_matmul", "bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    _case("batch_dot", "bi,bi->b", (3, 4), (3, 4)),
    _case("ellipsis_broadcast", "...ij,...jk->...ik", (2, 3, 4), (4, 5)),
    _case("ellipsis_implicit", "...i,...i", (2, 3), (3,)),
    _case("chain_of_three", "ij,jk,kl->il", (5, 2), (2, 6), (6, 3)),
    _case("three_with_batch", "abc,cd,bde->ae", (2, 3, 4), (4, 5), (3, 5, 6)),
    _case("five_operands", "ea,fb,abcd,gc,hd->efgh", (4, 5), (3, 6), (5, 6, 2, 3), (4, 2),
          (3, 3)),
    _case("given_order", "ij,jk,kl->il", (3, 4), (4, 5), (5, 2),
          optimize=["einsum_path", (1, 2), (0, 1)]),
    _case("left_to_right", "i,jk,k->ij", (2,), (3, 4), (4,), optimize=False),
    _case("static_shapes", "bij,jk->bik", (2, 3, 4), (4, 5), static=True),
    _case("zero_size", "ij,jk->ik", (3, 0), (0, 2)),
    _case("int32", "ij,jk->ik", (3, 4), (4, 2), dtype="int32"),
]
