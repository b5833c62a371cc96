"""C implementations of workbench's Ops, registered per Op class (importing this
package registers them all)."""

from workbench.core.link.c.ops import (  # noqa: F401
    blas,
    blockwise,
    counting,
    creation,
    elemwise,
    lapack,
    lapack_factorizations,
    reduction,
    shape,
    sort,
    special,
    subtensor,
    sum_to_shape,
)
