"""TensorType: the Type of n-dimensional arrays of one dtype with a partial static shape.

``TensorType("float64", (2, None))`` describes every float64 array of shape
``(2, n)``. Its values are ``numpy.ndarray`` objects (``ml_dtypes.bfloat16``
arrays for bfloat16). The static shape is what lets graph building check
broadcasting and lets rewrites know a dimension has length 1.

The module also defines the shorthand types of PyTensor (``dmatrix``,
``irow``, ...; calling one makes a Variable) and the default-dtype constructors
``scalar``, ``vector``, ``matrix``, ..., ``tensor``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from workbench.core.dtypes import Dtype, as_dtype, default_float_dtype
from workbench.core.graph.basic import Variable
from workbench.core.graph.type import Type
from workbench.core.scalar.basic import arrays_approx_equal, convert_data
from workbench.core.scalar.conversion import native_byte_order

StaticShape = tuple[int | None, ...]


def format_shape(shape: Iterable[int | None]) -> str:
    """A static shape as text: ``(2, ?)``, ``(?,)``, ``()``."""
    items = ["?" if s is None else str(s) for s in shape]
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


def normalize_shape(shape: Iterable[Any], what: str = "shape") -> StaticShape:
    """A tuple of non-negative ints and Nones; booleans mean broadcastable (True -> 1).

    Raises TypeError for entries of other types and ValueError for negative sizes.
    """
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        entries = tuple(shape)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of ints or None, got {shape!r}") from None
    result: list[int | None] = []
    for i, s in enumerate(entries):
        if s is None:
            result.append(None)
        elif isinstance(s, (bool, np.bool_)):
            result.append(1 if s else None)
        elif isinstance(s, (int, np.integer)):
            if s < 0:
                raise ValueError(f"{what}[{i}] must be >= 0 or None, got {s}")
            result.append(int(s))
        else:
            raise TypeError(f"{what}[{i}] must be an int or None, got {type(s).__name__} {s!r}")
    return tuple(result)


class TensorType(Type):
    """The Type of arrays of `dtype` with static shape `shape` (ints, or None = unknown).

    `broadcastable` (a sequence of bools) may be given instead of `shape`: True
    means a dimension of length 1, False an unknown length. `name` only changes
    how the Type prints. Equality and hashing use (dtype, shape).
    """

    __props__ = ("dtype", "shape")

    def __init__(
        self,
        dtype: Any,
        shape: Iterable[Any] | None = None,
        name: str | None = None,
        broadcastable: Iterable[bool] | None = None,
    ) -> None:
        if shape is not None and broadcastable is not None:
            raise TypeError("give TensorType either shape or broadcastable, not both")
        if shape is None and broadcastable is None:
            raise TypeError(
                "TensorType needs a static shape, e.g. TensorType('float64', (None, 3)); "
                "use () for a 0-d tensor"
            )
        if broadcastable is not None:
            shape = [1 if b else None for b in broadcastable]
        self.dtype: Dtype = as_dtype(dtype)
        self.shape: StaticShape = normalize_shape(shape)  # type: ignore[arg-type]
        self.name = name
        self.numpy_dtype: np.dtype = self.dtype.numpy
        self._ndim = len(self.shape)
        self._hash = hash((TensorType, self.dtype, self.shape))  # Types are hashed a lot
        self._any_static_length = any(length is not None for length in self.shape)
        #: a Python float converts to this dtype by the filter's rules (float64 exactly,
        #: float32 rounded: the Theano convention for a single Python float)
        self._float_target = str(self.dtype) in ("float64", "float32")

    def __hash__(self) -> int:
        return self._hash

    # -- description ------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def broadcastable(self) -> tuple[bool, ...]:
        """For each dimension, whether its length is statically 1."""
        return tuple(s == 1 for s in self.shape)

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        return f"TensorType({self.dtype}, {format_shape(self.shape)})"

    def __repr__(self) -> str:
        return str(self)

    def clone(self, dtype: Any = None, shape: Iterable[Any] | None = None,
              broadcastable: Iterable[bool] | None = None, **kwargs: Any) -> TensorType:
        """A copy with a different dtype and/or static shape (the name is not kept)."""
        if kwargs:
            raise TypeError(f"TensorType.clone got unknown arguments {sorted(kwargs)}")
        if shape is None and broadcastable is None:
            shape = self.shape
        return TensorType(self.dtype if dtype is None else dtype, shape=shape,
                          broadcastable=broadcastable)

    # -- values -----------------------------------------------------------------
    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """`data` as an ndarray of this Type, or TypeError (dtype) / ValueError (rank, shape).

        strict: `data` must already be an ndarray of exactly this dtype.
        Otherwise Python data and safely castable arrays are converted; lossy
        conversions need `allow_downcast` (see `workbench.core.scalar.basic.convert_data`).
        """
        # Fast path (every function call filters its arguments): an ndarray that
        # already has this dtype and rank, and no static length to check.
        if (
            type(data) is np.ndarray
            and data.dtype is self.numpy_dtype
            and data.ndim == self._ndim
            and not self._any_static_length
        ):
            return data
        if self._ndim == 0 and not strict:
            # numbers passed to a scalar input (f(1.5), f(np.float64(2))): the cases whose
            # conversion `convert_data` would accept unchanged, without its dtype lookups
            kind = type(data)
            if kind is float and self._float_target and allow_downcast is not False:
                return np.array(data, dtype=self.numpy_dtype)
            if isinstance(data, np.generic) and data.dtype is self.numpy_dtype:
                return np.asarray(data)
        if strict:
            if not isinstance(data, np.ndarray):
                raise TypeError(
                    f"expected a numpy.ndarray for {self} (strict filtering), "
                    f"got {type(data).__name__}"
                )
            data = native_byte_order(data)
            if data.dtype != self.numpy_dtype:
                raise TypeError(
                    f"expected an array of dtype {self.dtype} for {self} (strict filtering), "
                    f"got dtype {data.dtype}"
                )
        else:
            data = convert_data(data, self.dtype, allow_downcast, str(self))
        self._check_shape(data)
        return data

    def _check_shape(self, data: np.ndarray) -> None:
        if data.ndim != self.ndim:
            raise ValueError(
                f"expected an array of rank {self.ndim} for {self}, "
                f"got rank {data.ndim} with shape {data.shape}"
            )
        for expected, actual in zip(self.shape, data.shape):
            if expected is not None and expected != actual:
                raise ValueError(
                    f"expected an array of shape {format_shape(self.shape)} for {self}, "
                    f"got shape {data.shape}"
                )

    def filter_inplace(self, value: Any, storage: Any, strict: bool = False,
                       allow_downcast: bool | None = None) -> Any:
        """Filter `value` and copy it into `storage` when that array fits, else return it."""
        data = self.filter(value, strict=strict, allow_downcast=allow_downcast)
        if (isinstance(storage, np.ndarray) and storage.shape == data.shape
                and storage.dtype == data.dtype and storage.flags.writeable
                and storage is not data):
            storage[...] = data
            return storage
        return data

    def values_eq(self, a: Any, b: Any) -> bool:
        """Exact equality of shape and values (NaN equals NaN)."""
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(
            np.array_equal(a, b, equal_nan=self.dtype.kind in "fc")
        )

    def values_eq_approx(self, a: Any, b: Any, rtol: float | None = None,
                         atol: float | None = None) -> bool:
        """Equal shapes and values within a dtype-dependent tolerance.

        NaNs and infinities must be at the same positions; float16 and
        bfloat16 use looser tolerances than float32 and float64.
        """
        return arrays_approx_equal(a, b, self.dtype, rtol=rtol, atol=atol)

    def may_share_memory(self, a: Any, b: Any) -> bool:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return bool(np.may_share_memory(a, b))
        return False

    def get_shape_info(self, obj: Any) -> tuple[int, ...]:
        return tuple(obj.shape)

    def get_size(self, shape_info: Sequence[int]) -> int:
        """Bytes of an array of this dtype with shape `shape_info`."""
        return math.prod(shape_info) * self.dtype.itemsize

    # -- relations between Types --------------------------------------------------
    def in_same_class(self, otype: Type) -> bool:
        """Same dtype and same broadcastable pattern (which dims are statically 1)."""
        return (
            isinstance(otype, TensorType)
            and otype.dtype == self.dtype
            and otype.broadcastable == self.broadcastable
        )

    def is_super(self, otype: Type) -> bool:
        """True if every array of `otype` is an array of self (same dtype and rank,
        and each of self's static lengths is unknown or equal)."""
        return (
            isinstance(otype, TensorType)
            and otype.dtype == self.dtype
            and otype.ndim == self.ndim
            and all(s is None or s == o for s, o in zip(self.shape, otype.shape))
        )

    def convert_variable(self, var: Variable) -> Variable | None:
        """`var` if self accepts it; if only static shapes differ compatibly, `var`
        narrowed by a SpecifyShape node to self's shape; otherwise None."""
        vtype = var.type
        if self.is_super(vtype):
            return var
        if (
            isinstance(vtype, TensorType)
            and vtype.dtype == self.dtype
            and vtype.ndim == self.ndim
            and all(s is None or o is None or s == o for s, o in zip(self.shape, vtype.shape))
        ):
            from workbench.core.tensor.shape import specify_shape

            return specify_shape(var, self.shape)
        return None

    # -- variables ----------------------------------------------------------------
    def __call__(self, name: str | None = None) -> Variable:
        return self.make_variable(name)


def _check_dims(shape: Iterable[Any] | None, template: StaticShape, what: str) -> StaticShape:
    """A static shape for a shorthand constructor: `template` refined by `shape`."""
    if shape is None:
        return template
    given = normalize_shape(shape)
    if len(given) != len(template):
        raise ValueError(f"{what} needs a shape of length {len(template)}, got {given}")
    for i, (g, t) in enumerate(zip(given, template)):
        if t is not None and g != t:
            raise ValueError(f"{what} has length {t} in dimension {i}; got shape {given}")
    return given


def _make(template: StaticShape, what: str):  # noqa: ANN202 - a family of constructors
    def constructor(name: str | None = None, dtype: Any = None,
                    shape: Iterable[Any] | None = None) -> Variable:
        d = default_float_dtype() if dtype is None else dtype
        return TensorType(d, _check_dims(shape, template, what))(name)

    constructor.__name__ = constructor.__qualname__ = what
    constructor.__doc__ = (
        f"A {what} Variable (static shape {format_shape(template)}) of `dtype` "
        "(default: the default float dtype); `shape` may fix unknown lengths."
    )
    return constructor


scalar = _make((), "scalar")
vector = _make((None,), "vector")
row = _make((1, None), "row")
col = _make((None, 1), "col")
matrix = _make((None, None), "matrix")
tensor3 = _make((None,) * 3, "tensor3")
tensor4 = _make((None,) * 4, "tensor4")
tensor5 = _make((None,) * 5, "tensor5")


def tensor(dtype: Any = None, shape: Iterable[Any] | None = None,
           name: str | None = None) -> Variable:
    """A Variable of ``TensorType(dtype, shape)``; dtype defaults to the default float.

    `shape` is required: a sequence of ints (known lengths) and None (unknown).
    """
    if shape is None:
        raise TypeError("tensor() needs a shape, e.g. tensor('float32', shape=(None, 3))")
    if isinstance(dtype, str) and dtype not in _DTYPE_NAMES:
        try:
            as_dtype(dtype)
        except TypeError as exc:
            raise TypeError(f"{exc} (to name the variable, pass name={dtype!r})") from None
    return TensorType(default_float_dtype() if dtype is None else dtype, shape)(name)


_DTYPE_NAMES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "bfloat16", "float16", "float32", "float64", "complex64", "complex128"]
)

# Shorthand Types: prefix letter = dtype, suffix = static shape. Calling one makes a Variable.
_PREFIXES = {
    "b": "int8", "w": "int16", "i": "int32", "l": "int64",
    "f": "float32", "d": "float64", "c": "complex64", "z": "complex128",
}
_SUFFIXES: dict[str, StaticShape] = {
    "scalar": (), "vector": (None,), "row": (1, None), "col": (None, 1),
    "matrix": (None, None), "tensor3": (None,) * 3, "tensor4": (None,) * 4,
    "tensor5": (None,) * 5,
}

bscalar = TensorType("int8", ())
bvector = TensorType("int8", (None,))
brow = TensorType("int8", (1, None))
bcol = TensorType("int8", (None, 1))
bmatrix = TensorType("int8", (None, None))
btensor3 = TensorType("int8", (None,) * 3)
btensor4 = TensorType("int8", (None,) * 4)
btensor5 = TensorType("int8", (None,) * 5)
wscalar = TensorType("int16", ())
wvector = TensorType("int16", (None,))
wrow = TensorType("int16", (1, None))
wcol = TensorType("int16", (None, 1))
wmatrix = TensorType("int16", (None, None))
wtensor3 = TensorType("int16", (None,) * 3)
wtensor4 = TensorType("int16", (None,) * 4)
wtensor5 = TensorType("int16", (None,) * 5)
iscalar = TensorType("int32", ())
ivector = TensorType("int32", (None,))
irow = TensorType("int32", (1, None))
icol = TensorType("int32", (None, 1))
imatrix = TensorType("int32", (None, None))
itensor3 = TensorType("int32", (None,) * 3)
itensor4 = TensorType("int32", (None,) * 4)
itensor5 = TensorType("int32", (None,) * 5)
lscalar = TensorType("int64", ())
lvector = TensorType("int64", (None,))
lrow = TensorType("int64", (1, None))
lcol = TensorType("int64", (None, 1))
lmatrix = TensorType("int64", (None, None))
ltensor3 = TensorType("int64", (None,) * 3)
ltensor4 = TensorType("int64", (None,) * 4)
ltensor5 = TensorType("int64", (None,) * 5)
fscalar = TensorType("float32", ())
fvector = TensorType("float32", (None,))
frow = TensorType("float32", (1, None))
fcol = TensorType("float32", (None, 1))
fmatrix = TensorType("float32", (None, None))
ftensor3 = TensorType("float32", (None,) * 3)
ftensor4 = TensorType("float32", (None,) * 4)
ftensor5 = TensorType("float32", (None,) * 5)
dscalar = TensorType("float64", ())
dvector = TensorType("float64", (None,))
drow = TensorType("float64", (1, None))
dcol = TensorType("float64", (None, 1))
dmatrix = TensorType("float64", (None, None))
dtensor3 = TensorType("float64", (None,) * 3)
dtensor4 = TensorType("float64", (None,) * 4)
dtensor5 = TensorType("float64", (None,) * 5)
cscalar = TensorType("complex64", ())
cvector = TensorType("complex64", (None,))
crow = TensorType("complex64", (1, None))
ccol = TensorType("complex64", (None, 1))
cmatrix = TensorType("complex64", (None, None))
ctensor3 = TensorType("complex64", (None,) * 3)
ctensor4 = TensorType("complex64", (None,) * 4)
ctensor5 = TensorType("complex64", (None,) * 5)
zscalar = TensorType("complex128", ())
zvector = TensorType("complex128", (None,))
zrow = TensorType("complex128", (1, None))
zcol = TensorType("complex128", (None, 1))
zmatrix = TensorType("complex128", (None, None))
ztensor3 = TensorType("complex128", (None,) * 3)
ztensor4 = TensorType("complex128", (None,) * 4)
ztensor5 = TensorType("complex128", (None,) * 5)

#: Every shorthand Type by name (``"irow"`` -> ``TensorType(int32, (1, ?))``).
SHORTHAND_TYPES: dict[str, TensorType] = {
    prefix + suffix: globals()[prefix + suffix] for prefix in _PREFIXES for suffix in _SUFFIXES
}
