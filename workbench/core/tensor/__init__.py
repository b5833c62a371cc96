"""Tensors: TensorType and TensorVariable, elementwise Ops, shapes, casts and math.

``import workbench.core.tensor as wt`` gives everything needed to build array
graphs: types (``wt.dmatrix``, ``wt.tensor("float32", shape=(None, 3))``),
conversion (``wt.as_tensor_variable``, ``wt.constant``), Ops (``wt.Elemwise``,
``wt.DimShuffle``, ``wt.SpecifyShape``) and functions (``wt.exp``, ``wt.add``, ...).
"""

# The families of the tensor library; each module lists its public names in __all__.
from workbench.core.tensor import advanced_subtensor as _advanced_subtensor  # noqa: E402
from workbench.core.tensor import array_utils as _array_utils  # noqa: E402
from workbench.core.tensor import counting as _counting  # noqa: E402
from workbench.core.tensor import creation as _creation  # noqa: E402
from workbench.core.tensor import einsum as _einsum  # noqa: E402
from workbench.core.tensor import extra_ops as _extra_ops  # noqa: E402
from workbench.core.tensor import grids as _grids  # noqa: E402
from workbench.core.tensor import join as _join  # noqa: E402
from workbench.core.tensor import linalg  # noqa: E402
from workbench.core.tensor import math as _math  # noqa: E402
from workbench.core.tensor import pad as _pad  # noqa: E402
from workbench.core.tensor import reduction as _reduction  # noqa: E402
from workbench.core.tensor import reshape as _reshape  # noqa: E402
from workbench.core.tensor import shape as _shape  # noqa: E402
from workbench.core.tensor import sort as _sort  # noqa: E402
from workbench.core.tensor import special as _special  # noqa: E402
from workbench.core.tensor import subtensor as _subtensor  # noqa: E402
from workbench.core.tensor.advanced_subtensor import *  # noqa: F403,E402
from workbench.core.tensor.array_utils import *  # noqa: F403,E402
from workbench.core.tensor.basic import astype, cast, cast_op
from workbench.core.tensor.counting import *  # noqa: F403,E402
from workbench.core.tensor.creation import *  # noqa: F403,E402
from workbench.core.tensor.einsum import *  # noqa: F403,E402
from workbench.core.tensor.elemwise import (
    DimShuffle,
    Elemwise,
    broadcast_static_shapes,
    dimshuffle,
)
from workbench.core.tensor.extra_ops import *  # noqa: F403,E402
from workbench.core.tensor.grids import *  # noqa: F403,E402
from workbench.core.tensor.join import *  # noqa: F403,E402
from workbench.core.tensor.linalg import products as _products  # noqa: E402
from workbench.core.tensor.linalg.products import *  # noqa: F403,E402
from workbench.core.tensor.math import *  # noqa: F403,E402  (every elementwise function)
from workbench.core.tensor.pad import *  # noqa: F403,E402
from workbench.core.tensor.reduction import *  # noqa: F403,E402
from workbench.core.tensor.reshape import *  # noqa: F403,E402
from workbench.core.tensor.shape import *  # noqa: F403,E402
from workbench.core.tensor.sort import *  # noqa: F403,E402
from workbench.core.tensor.special import *  # noqa: F403,E402
from workbench.core.tensor.subtensor import *  # noqa: F403,E402
from workbench.core.tensor.type import (  # the shorthand Types: 8 dtypes x 8 shapes
    SHORTHAND_TYPES,
    TensorType,
    bcol,
    bmatrix,
    brow,
    bscalar,
    btensor3,
    btensor4,
    btensor5,
    bvector,
    ccol,
    cmatrix,
    col,
    crow,
    cscalar,
    ctensor3,
    ctensor4,
    ctensor5,
    cvector,
    dcol,
    dmatrix,
    drow,
    dscalar,
    dtensor3,
    dtensor4,
    dtensor5,
    dvector,
    fcol,
    fmatrix,
    format_shape,
    frow,
    fscalar,
    ftensor3,
    ftensor4,
    ftensor5,
    fvector,
    icol,
    imatrix,
    irow,
    iscalar,
    itensor3,
    itensor4,
    itensor5,
    ivector,
    lcol,
    lmatrix,
    lrow,
    lscalar,
    ltensor3,
    ltensor4,
    ltensor5,
    lvector,
    matrix,
    row,
    scalar,
    tensor,
    tensor3,
    tensor4,
    tensor5,
    vector,
    wcol,
    wmatrix,
    wrow,
    wscalar,
    wtensor3,
    wtensor4,
    wtensor5,
    wvector,
    zcol,
    zmatrix,
    zrow,
    zscalar,
    ztensor3,
    ztensor4,
    ztensor5,
    zvector,
)
from workbench.core.tensor.variable import (
    TensorConstant,
    TensorVariable,
    as_tensor_variable,
    constant,
)

_FAMILIES = (_advanced_subtensor, _array_utils, _counting, _creation, _einsum, _extra_ops,
             _grids, _join, _pad, _products, _reduction, _reshape, _shape, _sort, _special,
             _subtensor)

__all__ = [
    # types, variables, conversion
    "TensorType", "TensorVariable", "TensorConstant", "as_tensor_variable", "constant",
    "format_shape", "SHORTHAND_TYPES",
    "scalar", "vector", "row", "col", "matrix", "tensor3", "tensor4", "tensor5", "tensor",
    # the shorthand Types (8 dtypes x 8 shapes)
    "bscalar", "bvector", "brow", "bcol", "bmatrix", "btensor3", "btensor4", "btensor5",
    "cscalar", "cvector", "crow", "ccol", "cmatrix", "ctensor3", "ctensor4", "ctensor5",
    "dscalar", "dvector", "drow", "dcol", "dmatrix", "dtensor3", "dtensor4", "dtensor5",
    "fscalar", "fvector", "frow", "fcol", "fmatrix", "ftensor3", "ftensor4", "ftensor5",
    "iscalar", "ivector", "irow", "icol", "imatrix", "itensor3", "itensor4", "itensor5",
    "lscalar", "lvector", "lrow", "lcol", "lmatrix", "ltensor3", "ltensor4", "ltensor5",
    "wscalar", "wvector", "wrow", "wcol", "wmatrix", "wtensor3", "wtensor4", "wtensor5",
    "zscalar", "zvector", "zrow", "zcol", "zmatrix", "ztensor3", "ztensor4", "ztensor5",
    # Ops
    "Elemwise", "DimShuffle", "dimshuffle", "broadcast_static_shapes",
    "cast", "astype", "cast_op",
    # elementwise functions (those of the declared scalar Ops included)
    *_math.__all__,
]  # fmt: skip
__all__ += [name for module in _FAMILIES for name in module.__all__]
__all__ += ["linalg"]  # the namespace wt.linalg (solve, cholesky, det, ...)
# numpy's top-level names among them: wt.kron, wt.trace (numpy.trace's axis1/axis2),
# NumPy 2's wt.matrix_transpose and wt.vecdot
from workbench.core.tensor.linalg.functions import kron  # noqa: E402
from workbench.core.tensor.linalg.functions import trace_np as trace  # noqa: E402
from workbench.core.tensor.linalg.numpy_names import matrix_transpose, vecdot  # noqa: E402

__all__ += ["kron", "matrix_transpose", "trace", "vecdot"]
del _FAMILIES

# batching a graph written for one example over leading dimensions
from workbench.core.tensor.blockwise import Blockwise  # noqa: E402
from workbench.core.tensor.vectorize import vectorize, vectorize_graph  # noqa: E402

__all__ += ["Blockwise", "vectorize", "vectorize_graph"]
