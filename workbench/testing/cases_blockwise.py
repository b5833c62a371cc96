"""Catalogue cases of `Blockwise` (a core Op over leading batch dimensions) and of
`vectorize`: a matrix product over a stack, with broadcast batch dimensions, and a
function of one example vectorized over a batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]


def _blockwise_dot(x: Any, y: Any) -> Any:
    import workbench.core.tensor as wt
    from workbench.core.tensor.linalg.products import Dot

    return wt.Blockwise(Dot(), "(m,k),(k,n)->(m,n)")(x, y)


def _vectorized_layer(m: Any, v: Any) -> Any:
    import workbench.core.tensor as wt

    return wt.vectorize(lambda a, b: wt.tanh(wt.dot(a, b)), signature="(m,n),(n)->(m)")(m, v)


def _layer_ref(m: Any, v: Any) -> Any:
    return np.tanh(np.einsum("...mn,...n->...m", m, v))


CASES: list[Case] = [
    Case("blockwise_dot_stack", _blockwise_dot, np.matmul, (Arg((3, 2, 4)), Arg((3, 4, 5)))),
    Case("blockwise_dot_broadcast_batch", _blockwise_dot, np.matmul,
         (Arg((2, 1, 2, 3)), Arg((4, 3, 2)))),
    Case("blockwise_dot_static", _blockwise_dot, np.matmul,
         (Arg((2, 3, 4), static=True), Arg((2, 4, 2), static=True))),
    Case("vectorize_dense_layer", _vectorized_layer, _layer_ref, (Arg((5, 3, 4)), Arg((5, 4)))),
]
