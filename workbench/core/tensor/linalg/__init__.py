"""Linear algebra: the `wt.linalg` namespace.

The products (`Dot`, `MatMul`, `dot`, `matmul`, `tensordot`, `outer`, `matvec`,
`vecmat`) live in `products.py` and are also top-level `wt` names, as in NumPy.
"""

from workbench.core.tensor.linalg.products import *  # noqa: F403
from workbench.core.tensor.linalg.products import __all__ as _products_all

__all__ = list(_products_all)

from workbench.core.tensor.linalg.base import LinAlgError, LinAlgWarning  # noqa: E402
from workbench.core.tensor.linalg.decompositions import *  # noqa: F403,E402
from workbench.core.tensor.linalg.decompositions import __all__ as _decompositions_all  # noqa: E402
from workbench.core.tensor.linalg.functions import *  # noqa: F403,E402
from workbench.core.tensor.linalg.functions import __all__ as _functions_all  # noqa: E402
from workbench.core.tensor.linalg.matrix_exp import expm  # noqa: E402
from workbench.core.tensor.linalg.numpy_names import *  # noqa: F403,E402
from workbench.core.tensor.linalg.numpy_names import __all__ as _numpy_names_all  # noqa: E402
from workbench.core.tensor.linalg.rectangular import *  # noqa: F403,E402
from workbench.core.tensor.linalg.rectangular import __all__ as _rectangular_all  # noqa: E402
from workbench.core.tensor.linalg.solvers import *  # noqa: F403,E402
from workbench.core.tensor.linalg.solvers import __all__ as _solvers_all  # noqa: E402

__all__ += [*_decompositions_all, *_functions_all, *_numpy_names_all, *_rectangular_all,
            *_solvers_all, "expm", "LinAlgError", "LinAlgWarning"]
