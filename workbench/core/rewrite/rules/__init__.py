"""The standard rewrite families; importing this package registers them in the database."""

from workbench.core.rewrite.rules import (  # noqa: F401
    blockwise,
    canonicalize,
    casting,
    fusion,
    inline,
    inplace,
    linalg,
    shape,
    specialize,
    stabilize,
    stabilize_sigmoid,
    transfer,
)
