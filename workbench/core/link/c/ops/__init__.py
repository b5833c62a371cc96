"""C implementations of workbench's Ops, registered per Op class (importing this
package registers them all)."""

from workbench.core.link.c.ops import (  # noqa: F401
    advanced_subtensor,
    blas,
    blockwise,
    counting,
    creation,
    elemwise,
    join,
    lapack,
    lapack_factorizations,
    matrix_exp,
    reduction,
    selection,
    shape,
    sort,
    special,
    subtensor,
    sum_to_shape,
)
