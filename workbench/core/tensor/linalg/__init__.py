"""Linear algebra: the `wt.linalg` namespace.

The products (`Dot`, `MatMul`, `dot`, `matmul`, `tensordot`, `outer`, `matvec`,
`vecmat`) live in `products.py` and are also top-level `wt` names, as in NumPy.
"""

from workbench.core.tensor.linalg.products import *  # noqa: F403
from workbench.core.tensor.linalg.products import __all__ as _products_all

__all__ = list(_products_all)
