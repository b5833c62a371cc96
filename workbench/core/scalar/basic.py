"""Scalars: `ScalarType`, scalar Variables and constants, and the `ScalarOp` base class.

A scalar Op describes one elementwise computation (``add``, ``exp``, ...) on
numpy scalars. Its three jobs are:

* the dtype rule (`output_types_preference`): output dtypes from input dtypes,
  built on the one promotion table in `workbench.core.dtypes`;
* the numerical kernel (`impl`, usually the numpy ufunc named by `nfunc`), which
  works on numpy scalars *and* on broadcastable arrays, so `Elemwise` can run a
  whole tensor through it in one call;
* printing hints (`name`, `symbol`, `precedence`) for `dprint`/`pprint` and for
  `Composite`'s formula.

`ScalarOp.compute` is the single place that runs a kernel: it casts the inputs
to the dtype the computation happens in, silences floating point warnings
(a graph engine reports nan/inf through values, as compiled code would), falls
back to float32 for kernels numpy lacks for float16/bfloat16, and returns arrays
of exactly the promised output dtypes. `Elemwise.perform` and `Composite` both
call it, so scalar and tensor results can never disagree.

The data-conversion policy that `TensorType.filter` shares with `ScalarType.filter`
lives in `conversion.py` (its names are re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.core import dtypes as _dt
from workbench.core.dtypes import Dtype, as_dtype, default_float_dtype, result_type
from workbench.core.graph.basic import Apply, Constant, Variable, describe_value
from workbench.core.graph.op import Op
from workbench.core.graph.type import Type, grad_dtype, is_differentiable_dtype, is_disconnected
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.scalar.conversion import (  # noqa: F401  (re-exported)
    PythonScalar,
    WeakScalars,
    astype_dropping_imaginary,
    convert_data,
    is_python_scalar,
    python_constant_dtype,
    resolve_weak_scalars,
    weak_scalar_array,
)

# -- approximate equality ----------------------------------------------------------

#: (rtol, atol) by dtype for `values_eq_approx`; low-precision floats are looser.
TOLERANCES: dict[str, tuple[float, float]] = {
    "bfloat16": (2e-2, 1e-2),
    "float16": (5e-3, 1e-3),
    "float32": (1e-4, 1e-5),
    "float64": (1e-5, 1e-8),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-5, 1e-8),
}


def arrays_approx_equal(
    a: Any, b: Any, dtype: Dtype, rtol: float | None = None, atol: float | None = None
) -> bool:
    """True if `a` and `b` have equal shapes and values close for `dtype`.

    NaNs must sit at the same positions, infinities at the same positions with
    the same sign; integer and bool values must be exactly equal.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if not (dtype.is_float or dtype.is_complex):
        return bool(np.array_equal(a, b))
    if dtype is _dt.bfloat16 or a.dtype != b.dtype:
        a = a.astype(np.complex128 if dtype.is_complex else np.float64)
        b = b.astype(a.dtype)
    default_rtol, default_atol = TOLERANCES[str(dtype)]
    return bool(
        np.allclose(
            a,
            b,
            rtol=default_rtol if rtol is None else rtol,
            atol=default_atol if atol is None else atol,
            equal_nan=True,
        )
    )


# -- ScalarType --------------------------------------------------------------------


class ScalarType(Type):
    """The Type of a single number of a given dtype; values are numpy scalars.

    `filter` follows the same conversion policy as `TensorType.filter` (see
    `convert_data`) and returns a numpy scalar (``np.float32(1.5)``, an
    ``ml_dtypes.bfloat16`` scalar for bfloat16).
    """

    __props__ = ("dtype",)
    ndim = 0
    shape: tuple[int, ...] = ()

    def __init__(self, dtype: Any) -> None:
        self.dtype: Dtype = as_dtype(dtype)
        self.numpy_dtype = self.dtype.numpy

    def __str__(self) -> str:
        return f"ScalarType({self.dtype})"

    def clone(self, dtype: Any = None, **kwargs: Any) -> ScalarType:
        if kwargs:
            raise TypeError(f"ScalarType.clone got unknown arguments {sorted(kwargs)}")
        return ScalarType(self.dtype if dtype is None else dtype)

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        if strict:
            if not isinstance(data, np.generic):
                raise TypeError(
                    f"{self} (strict) expected a numpy scalar of dtype {self.dtype}, "
                    f"got {describe_value(data)}"
                )
            if data.dtype != self.numpy_dtype:
                raise TypeError(
                    f"{self} (strict) expected a numpy scalar of dtype {self.dtype}, "
                    f"got one of dtype {data.dtype}"
                )
            return data
        arr = convert_data(data, self.dtype, allow_downcast, str(self))
        if arr.ndim != 0:
            raise ValueError(f"{self} expected a single number, got an array of shape {arr.shape}")
        return arr[()]

    def values_eq(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=self.dtype.kind in "fc"))

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        return arrays_approx_equal(a, b, self.dtype)

    def get_shape_info(self, obj: Any) -> tuple[int, ...]:
        return ()

    def get_size(self, shape_info: Any) -> int:
        return self.dtype.itemsize

    def make_constant(self, value: Any, name: str | None = None) -> ScalarConstant:
        return ScalarConstant(self, value, name=name)


_scalar_types: dict[Dtype, ScalarType] = {}


def get_scalar_type(dtype: Any) -> ScalarType:
    """The (cached) ScalarType of `dtype`."""
    d = as_dtype(dtype)
    t = _scalar_types.get(d)
    if t is None:
        t = _scalar_types[d] = ScalarType(d)
    return t


class _ScalarOperators:
    """Python operators on scalar Variables, so small scalar graphs read naturally."""

    __slots__ = ()

    def _binary(self, op_name: str, other: Any, reverse: bool = False) -> Any:
        if not (isinstance(other, Variable) or is_python_scalar(other)
                or isinstance(other, np.generic)):
            return NotImplemented
        from workbench.core.scalar import math as smath

        op = getattr(smath, op_name)
        return op(other, self) if reverse else op(self, other)

    def __add__(self, o: Any) -> Any: return self._binary("add", o)
    def __radd__(self, o: Any) -> Any: return self._binary("add", o, True)
    def __sub__(self, o: Any) -> Any: return self._binary("sub", o)
    def __rsub__(self, o: Any) -> Any: return self._binary("sub", o, True)
    def __mul__(self, o: Any) -> Any: return self._binary("mul", o)
    def __rmul__(self, o: Any) -> Any: return self._binary("mul", o, True)
    def __truediv__(self, o: Any) -> Any: return self._binary("true_div", o)
    def __rtruediv__(self, o: Any) -> Any: return self._binary("true_div", o, True)
    def __floordiv__(self, o: Any) -> Any: return self._binary("int_div", o)
    def __rfloordiv__(self, o: Any) -> Any: return self._binary("int_div", o, True)
    def __mod__(self, o: Any) -> Any: return self._binary("mod", o)
    def __rmod__(self, o: Any) -> Any: return self._binary("mod", o, True)
    def __pow__(self, o: Any) -> Any: return self._binary("pow", o)
    def __rpow__(self, o: Any) -> Any: return self._binary("pow", o, True)
    def __lt__(self, o: Any) -> Any: return self._binary("lt", o)
    def __le__(self, o: Any) -> Any: return self._binary("le", o)
    def __gt__(self, o: Any) -> Any: return self._binary("gt", o)
    def __ge__(self, o: Any) -> Any: return self._binary("ge", o)

    def __neg__(self) -> Any:
        from workbench.core.scalar.math import neg

        return neg(self)

    def __abs__(self) -> Any:
        from workbench.core.scalar.math import abs as abs_

        return abs_(self)

    def __bool__(self) -> bool:
        raise TypeError(
            "a symbolic scalar has no truth value: its value is only known when the "
            "graph runs; use switch(cond, a, b) for a symbolic choice"
        )


class ScalarVariable(_ScalarOperators, Variable):
    """A Variable of a ScalarType."""

    __slots__ = ()

    @property
    def dtype(self) -> Dtype:
        return self.type.dtype


class ScalarConstant(_ScalarOperators, Constant):
    """A constant number inside a scalar graph (e.g. the ``2.0`` of ``x * 2.0``)."""

    __slots__ = ()

    @property
    def dtype(self) -> Dtype:
        return self.type.dtype


ScalarType.variable_type = ScalarVariable
ScalarType.constant_type = ScalarConstant


def scalar_constant(value: Any, dtype: Any = None, name: str | None = None) -> ScalarConstant:
    """A ScalarConstant; Python values without `dtype` follow `python_constant_dtype`."""
    if dtype is None:
        if is_python_scalar(value):
            dtype = python_constant_dtype(value)
        else:
            dtype = np.asarray(value).dtype
    t = get_scalar_type(dtype)
    return ScalarConstant(t, t.filter(value, allow_downcast=True), name=name)


def as_scalar(value: Any, dtype: Any = None) -> Variable:
    """`value` as a scalar Variable: scalar Variables pass through, numbers become constants."""
    if isinstance(value, Apply):
        value = value.default_output()
    if isinstance(value, Variable):
        if not isinstance(value.type, ScalarType):
            raise TypeError(f"expected a scalar Variable, got {value} of type {value.type}")
        return value
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) != 0:
        raise TypeError(f"expected a single number, got {describe_value(value)}")
    return scalar_constant(value, dtype)


# -- dtype rules -------------------------------------------------------------------
# Each rule maps the input dtypes to a tuple of output dtypes, or raises
# DtypeRuleError saying why the combination is invalid.


class DtypeRuleError(TypeError):
    """An Op's dtype rule refused its input dtypes (wrapped with the Op's name by make_node)."""


def _promote(dtypes: Sequence[Dtype]) -> Dtype:
    return result_type(*dtypes)


def upcast_out(*dtypes: Dtype) -> tuple[Dtype, ...]:
    """The promoted dtype (arithmetic: ``int8 + float32 -> float32``)."""
    return (_promote(dtypes),)


def upcast_out_nobool(*dtypes: Dtype) -> tuple[Dtype, ...]:
    """The promoted dtype; bool is refused (numpy refuses ``-`` on booleans)."""
    out = _promote(dtypes)
    if out.is_bool:
        raise DtypeRuleError("not defined for booleans (use xor / invert for logic)")
    return (out,)


def upcast_out_bool_as_int8(*dtypes: Dtype) -> tuple[Dtype, ...]:
    """The promoted dtype, booleans counting as int8 (numpy's ``//``, ``%``, ``**``)."""
    out = _promote(dtypes)
    return (_dt.int8 if out.is_bool else out,)


def upcast_out_int8_nocomplex(*dtypes: Dtype) -> tuple[Dtype, ...]:
    """Like `upcast_out_bool_as_int8`, refusing complex inputs (``//``, ``%``)."""
    out = upcast_out_bool_as_int8(*dtypes)
    if out[0].is_complex:
        raise DtypeRuleError("not defined for complex numbers")
    return out


def upgrade_to_float(*dtypes: Dtype) -> tuple[Dtype, ...]:
    """The promoted dtype, with bool/integer results raised to the default float dtype.

    workbench promises the *default float dtype* (float64 unless changed) for
    transcendental functions and true division of integers, whatever the
    integer width. NumPy instead picks float16 for int8 inputs; tests compare
    against NumPy after casting the inputs to the default float dtype.
    """
    out = _promote(dtypes)
    if out.is_bool or out.is_int:
        out = default_float_dtype()
    return (out,)


def upgrade_to_float_no_complex(*dtypes: Dtype) -> tuple[Dtype, ...]:
    """`upgrade_to_float` for real-only functions (erf, arctan2, sigmoid, ...)."""
    out = upgrade_to_float(*dtypes)
    if out[0].is_complex:
        raise DtypeRuleError("not defined for complex numbers")
    return out


def same_out(dtype: Dtype, *rest: Dtype) -> tuple[Dtype, ...]:
    """The dtype of the first input."""
    return (dtype,)


def same_out_nobool(dtype: Dtype) -> tuple[Dtype, ...]:
    if dtype.is_bool:
        raise DtypeRuleError("not defined for booleans")
    return (dtype,)


def same_out_nocomplex(dtype: Dtype) -> tuple[Dtype, ...]:
    if dtype.is_complex:
        raise DtypeRuleError("not defined for complex numbers")
    return (dtype,)


def bool_out(*dtypes: Dtype) -> tuple[Dtype, ...]:
    """Always bool (comparisons, isnan, ...)."""
    return (_dt.bool_,)


def int_or_bool_out(*dtypes: Dtype) -> tuple[Dtype, ...]:
    """The promoted dtype, which must be integer or bool (bitwise operators)."""
    out = _promote(dtypes)
    if not (out.is_bool or out.is_int):
        raise DtypeRuleError("only defined for integers and booleans")
    return (out,)


_REAL_OF_COMPLEX = {"complex64": _dt.float32, "complex128": _dt.float64}


def complex_to_real(dtype: Dtype) -> tuple[Dtype, ...]:
    """Complex -> the real dtype of the same precision; other dtypes unchanged (abs, real)."""
    return (_REAL_OF_COMPLEX.get(str(dtype), dtype),)


def angle_out(dtype: Dtype) -> tuple[Dtype, ...]:
    """Complex -> real of the same precision; otherwise `upgrade_to_float`."""
    if dtype.is_complex:
        return complex_to_real(dtype)
    return upgrade_to_float(dtype)


# -- ScalarOp ----------------------------------------------------------------------

_LOW_PRECISION = tuple(d.numpy for d in (_dt.float16, _dt.bfloat16))


class ScalarOp(Op):
    """Base class of elementwise computations on scalars.

    Class attributes a subclass sets:

    * `nin`, `nout`: arity;
    * `nfunc`: name of the numpy function computing it (``"add"``); the default
      `impl` calls it, and it is what a fast vectorised `Elemwise` runs;
    * `default_preference`: the dtype rule used when none is given;
    * `input_cast`: which dtype the inputs are converted to before the kernel
      runs: ``"output"`` (the output dtype: arithmetic and float math, so int
      inputs of ``exp`` become the default float first), ``"common"`` (the
      promoted input dtype: comparisons), or None (no conversion);
    * `symbol` / `precedence`: infix operator and its binding strength (the
      scale of `workbench.core.printing`), or None for a function-call look;
    * `commutative`, `associative`: facts rewrites may use.

    Instances are compared by class and dtype rule (`__props__`).
    """

    __props__ = ("output_types_preference",)
    nin: int = -1
    nout: int = 1
    nfunc: str | None = None
    default_preference: Callable[..., tuple[Dtype, ...]] | None = None
    input_cast: str | None = "output"
    symbol: str | None = None
    precedence: int | None = None
    commutative = False
    associative = False
    #: indices of the inputs whose dtypes decide the dtype of weak Python scalars
    #: (None: all inputs); Switch excludes its condition.
    dtype_inputs: tuple[int, ...] | None = None
    #: whether `impl` accepts broadcastable arrays; if not, `compute` maps it over
    #: the elements with ``np.vectorize`` (slow, but any Python function works).
    vectorized = True
    name: str = ""

    def __init__(
        self,
        output_types_preference: Callable[..., tuple[Dtype, ...]] | None = None,
        name: str | None = None,
    ) -> None:
        rule = output_types_preference or type(self).default_preference
        if rule is None:
            raise TypeError(f"{type(self).__name__} needs an output_types_preference (dtype rule)")
        self.output_types_preference = rule
        self.name = name or self.name or type(self).__name__.lower()

    def __str__(self) -> str:
        return self.name

    # -- types ----------------------------------------------------------------
    def output_dtypes(self, input_dtypes: Sequence[Dtype]) -> tuple[Dtype, ...]:
        """Output dtypes for these input dtypes; TypeError naming the Op if invalid."""
        input_dtypes = [as_dtype(d) for d in input_dtypes]
        try:
            out = self.output_types_preference(*input_dtypes)
        except DtypeRuleError as exc:
            shown = ", ".join(str(d) for d in input_dtypes)
            raise TypeError(f"{self.name} of dtypes ({shown}) is invalid: {exc}") from None
        return tuple(as_dtype(d) for d in out)

    def output_types(self, input_types: Sequence[Type]) -> list[ScalarType]:
        return [get_scalar_type(d) for d in self.output_dtypes([t.dtype for t in input_types])]

    def make_node(self, *inputs: Any) -> Apply:
        if self.nin >= 0 and len(inputs) != self.nin:
            raise TypeError(f"{self.name} takes {self.nin} inputs, got {len(inputs)}")
        variables = self._convert_inputs(inputs)
        outputs = [t() for t in self.output_types([v.type for v in variables])]
        return Apply(self, variables, outputs)

    def _convert_inputs(self, inputs: Sequence[Any]) -> list[Variable]:
        converted: list[Any] = list(inputs)
        for i, x in enumerate(inputs):
            if not is_python_scalar(x):
                try:
                    converted[i] = as_scalar(x)
                except TypeError as exc:
                    raise TypeError(f"input {i} of {self.name}: {exc}") from None
        dtypes = [None if is_python_scalar(x) else x.type.dtype for x in converted]
        try:
            weak = resolve_weak_scalars(inputs, dtypes, self.dtype_inputs)
        except OverflowError as exc:
            raise OverflowError(f"{self.name}: {exc}") from None
        for i, data in weak.arrays.items():
            converted[i] = ScalarConstant(get_scalar_type(data.dtype), data[()])
        for i, dtype in weak.casts.items():
            converted[i] = cast(converted[i], dtype)
        return converted

    # -- running --------------------------------------------------------------
    def impl(self, *inputs: Any) -> Any:
        """The kernel on numpy values (scalars or broadcastable arrays)."""
        if self.nfunc is None:
            raise MethodNotDefined(f"{type(self).__name__}.impl")
        return getattr(np, self.nfunc)(*inputs)

    def cast_inputs(self, inputs: Sequence[np.ndarray], output_dtypes: Sequence[Dtype]
                    ) -> list[np.ndarray]:
        """The inputs converted to the dtype the kernel computes in (see `input_cast`)."""
        if self.input_cast == "output":
            target = output_dtypes[0].numpy
        elif self.input_cast == "common":
            target = result_type(*(as_dtype(x.dtype) for x in inputs)).numpy
        else:
            return list(inputs)
        return [x if x.dtype == target else astype_dropping_imaginary(x, as_dtype(target))
                for x in inputs]

    def compute(self, inputs: Sequence[np.ndarray], output_dtypes: Sequence[Any]
                ) -> list[np.ndarray]:
        """Run the kernel on arrays; return one ndarray per output, of exactly `output_dtypes`.

        Results may alias inputs (e.g. identity); callers that must not alias copy.
        """
        out_dtypes = [as_dtype(d) for d in output_dtypes]
        args = self.cast_inputs([np.asarray(x) for x in inputs], out_dtypes)
        kernel = self.impl
        if not self.vectorized:
            kernel = np.vectorize(self.impl, otypes=[d.numpy for d in out_dtypes])
        with np.errstate(all="ignore"):
            try:
                raw = kernel(*args)
            except TypeError:
                # No numpy loop for float16/bfloat16 (or a kernel written for
                # wider floats): compute in float32, then cast back below.
                if not any(a.dtype in _LOW_PRECISION for a in args):
                    raise
                widened = [a.astype(np.float32) if a.dtype in _LOW_PRECISION else a
                           for a in args]
                raw = kernel(*widened)
        results = list(raw) if self.nout > 1 else [raw]
        final = []
        for value, dtype in zip(results, out_dtypes):
            arr = np.asarray(value)
            if arr.dtype != dtype.numpy:
                arr = astype_dropping_imaginary(arr, dtype)
            final.append(arr)
        return final

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]
                ) -> None:
        dtypes = [out.type.dtype for out in node.outputs]
        for cell, value in zip(output_storage, self.compute(inputs, dtypes)):
            cell[0] = value[()]

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[tuple[Any, ...]]
                    ) -> list[tuple[Any, ...]]:
        return [() for _ in node.outputs]

    # -- differentiation ----------------------------------------------------------
    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             output_grads: Sequence[Variable]) -> list[Variable]:
        """Gradients of the cost wrt each scalar input, as scalar graphs.

        Applies the integer rules of seed 003 around `grad_terms` (the Op's own
        formulas): an Op whose outputs are all integer/bool gives zero gradients
        (its output is constant almost everywhere); a disconnected output
        gradient counts as zero; every result is brought to the gradient dtype of
        its input by `conform_grad` (the input's float/complex dtype; a float
        dtype, never an integer one, for integer and bool inputs).
        """
        if all(not is_differentiable_dtype(out.type.dtype) for out in outputs):
            return [zero_gradient(x) for x in inputs]
        ograds = [zero_gradient(out) if is_disconnected(g) else g
                  for g, out in zip(output_grads, outputs)]
        terms = self.grad_terms(inputs, outputs, ograds)
        return [conform_grad(g, x) for g, x in zip(terms, inputs)]

    def grad_terms(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
                   output_grads: Sequence[Variable]) -> list[Variable]:
        """The Op's gradient formulas (any dtype; `L_op` conforms them).

        Built-in Ops override this; a user's ScalarOp may instead define
        `grad(inputs, output_grads)`, which this default calls.
        """
        return self.grad(inputs, output_grads)


# -- gradient helpers ------------------------------------------------------------------


def zero_gradient(x: Variable) -> ScalarConstant:
    """A zero gradient for the scalar `x`: the constant 0 in `grad_dtype(x.dtype)`."""
    return scalar_constant(0, dtype=grad_dtype(x.type.dtype))


def conform_grad(g: Variable, x: Variable) -> Variable:
    """The gradient term `g` in the gradient dtype of the input `x`.

    A complex term for a real input keeps its real part (the derivative of a
    real cost along the real axis); a real term for a complex input is cast to
    complex. NullType/DisconnectedType gradients pass unchanged.
    """
    from workbench.core.graph.type import NullType

    if isinstance(g.type, NullType) or is_disconnected(g):
        return g
    g = as_scalar(g)
    if g.type.dtype.is_complex and not x.type.dtype.is_complex:
        from workbench.core.scalar.math import real

        g = real(g)
    return cast(g, grad_dtype(x.type.dtype))


class UnaryScalarOp(ScalarOp):
    nin = 1


class BinaryScalarOp(ScalarOp):
    nin = 2


class Cast(UnaryScalarOp):
    """Conversion to the dtype of `o_type` (a ScalarType); prints as ``Cast{float32}``.

    Casting complex to real drops the imaginary part; float to integer truncates
    toward zero, as numpy's ``astype`` does.
    """

    __props__ = ("o_type",)
    input_cast = None

    def __init__(self, o_type: Any, name: str | None = None) -> None:
        if not isinstance(o_type, ScalarType):
            o_type = get_scalar_type(o_type)
        self.o_type = o_type
        super().__init__(self._rule, name or f"Cast{{{o_type.dtype}}}")

    def _rule(self, *dtypes: Dtype) -> tuple[Dtype, ...]:
        return (self.o_type.dtype,)

    def __str__(self) -> str:
        return self.name

    def impl(self, x: Any) -> Any:
        return astype_dropping_imaginary(np.asarray(x), self.o_type.dtype)

    def grad_terms(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
                   output_grads: Sequence[Variable]) -> list[Variable]:
        """The output gradient cast back to the input's (gradient) dtype.

        Casts to integers give zero through `ScalarOp.L_op` (seed 003's
        ``int(x)``); a cast from an integer passes the gradient on as a float
        (``float(y)``); complex -> real gives a complex gradient with zero
        imaginary part, real -> complex keeps the real part.
        """
        return [output_grads[0]]


def cast(x: Any, dtype: Any) -> Variable:
    """`x` (a scalar Variable or number) converted to `dtype`; returns `x` if already so."""
    var = as_scalar(x)
    d = as_dtype(dtype)
    if var.type.dtype is d:
        return var
    return Cast(get_scalar_type(d))(var)
