"""Catalogue cases of the elementwise library: every scalar Op through its tensor function.

One or more `Case`s per scalar Op of `workbench.core.scalar.math.ALL_OPS`
(arithmetic, comparisons, logic, switch, clip, float math, complex parts), for
`Cast` (several target dtypes), for `Composite` (an `Elemwise` of a small scalar
program), and for the structural Ops beside them: `DimShuffle`, `SpecifyShape`,
`Shape` and `Shape_i`.

References follow workbench's documented dtype rules rather than NumPy's where
they differ: bool/integer inputs of true division and transcendental functions
are computed in the default float dtype (``_float_ref``), rounding keeps integer
dtypes. Inputs are drawn from each function's domain (log: positive, arcsin:
[-1, 1], arccosh: >= 1, ...). Every reference returns arrays of exactly the
dtype workbench promises (the elementwise tests check this).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import workbench.core.tensor as wt
from workbench.core import dtypes
from workbench.core.scalar import math as smath
from workbench.core.scalar.basic import get_scalar_type
from workbench.core.scalar.composite import Composite
from workbench.core.tensor.elemwise import Elemwise, SumToShape
from workbench.testing.catalog import FLOAT, Arg, Case

__all__ = ["CASES", "declared_cases", "gammainc_da_reference", "reference_of"]

ALL_FLOATS = ("float64", "float32", "float16", "bfloat16")
NOT_DIFFERENTIABLE = "piecewise constant: the gradient is zero almost everywhere"
BOOL_OUTPUT = "bool output"
INT_ONLY = "no float inputs"
COMPLEX = "complex inputs (holomorphic gradients come later)"


def _fn(name: str) -> Callable[..., Any]:
    """A builder calling the tensor function `name` on the symbolic inputs."""

    def build(*args: Any) -> Any:
        return getattr(wt, name)(*args)

    build.__name__ = name
    return build


# -- samplers -----------------------------------------------------------------------


def _away_from_zero(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Values of either sign with |v| in [0.5, 2] (floats) or in 1..4 (integers)."""
    sign = np.where(rng.random(shape) < 0.5, -1, 1)
    if dtypes.as_dtype(dtype).is_int:
        magnitude = rng.integers(1, 5, size=shape)
        if dtypes.as_dtype(dtype).is_uint:
            sign = np.ones(shape, dtype=int)
        return (sign * magnitude).astype(dtype)
    return (sign * rng.uniform(0.5, 2.0, size=shape)).astype(dtypes.as_dtype(dtype).numpy)


def _halves(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Multiples of 0.5 in [-3, 3], so rounding meets its ties."""
    return (rng.integers(-6, 7, size=shape) / 2).astype(dtypes.as_dtype(dtype).numpy)


def _few_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Integers in [-2, 2] (as `dtype`), so comparisons meet equal pairs."""
    return rng.integers(-2, 3, size=shape).astype(dtypes.as_dtype(dtype).numpy)


def _with_specials(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Finite values with NaN, +inf and -inf sprinkled in."""
    values = rng.uniform(-2, 2, size=shape)
    pick = rng.random(shape)
    values[pick < 0.15] = np.nan
    values[(pick >= 0.15) & (pick < 0.3)] = np.inf
    values[(pick >= 0.3) & (pick < 0.4)] = -np.inf
    return values.astype(dtypes.as_dtype(dtype).numpy)


def _some_zeros(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Values in [-3, 3] of which about a third are exactly zero."""
    values = rng.uniform(-3, 3, size=shape)
    values[rng.random(shape) < 0.35] = 0.0
    return values.astype(dtypes.as_dtype(dtype).numpy)


# -- reference helpers --------------------------------------------------------------


def _float_ref(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` applied to the inputs raised to floats as workbench does, result in that dtype."""

    def reference(*xs: np.ndarray) -> np.ndarray:
        target = dtypes.result_type(*(dtypes.as_dtype(x.dtype) for x in xs))
        if target.is_bool or target.is_int:
            target = dtypes.default_float_dtype()
        args = [x.astype(target.numpy) for x in xs]
        return np.asarray(func(*args)).astype(target.numpy)

    return reference


def _sigmoid(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.float64)
    return (1.0 / (1.0 + np.exp(-wide))).astype(x.dtype)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x.astype(np.float64)).astype(x.dtype)


def _quiet(reference: Callable[..., Any]) -> Callable[..., Any]:
    """`reference` with NumPy's floating point warnings silenced (NaN/inf are expected)."""

    def quiet(*xs: np.ndarray) -> Any:
        with np.errstate(all="ignore"):
            return reference(*xs)

    quiet.__name__ = getattr(reference, "__name__", "reference")
    return quiet


def _case(name: str, build: Callable[..., Any], reference: Callable[..., Any], *args: Arg,
          grad: bool | str = True, float_dtypes: tuple[str, ...] | None = None,
          rtol: float | None = None, atol: float | None = None,
          tags: tuple[str, ...] = ()) -> Case:
    """A Case; cases without a float placeholder input run once (as "float64")."""
    if float_dtypes is None:
        has_float = any(arg.dtype == FLOAT for arg in args)
        float_dtypes = ("float64", "float32") if has_float else ("float64",)
    return Case(name=name, build=build, reference=_quiet(reference), args=tuple(args),
                float_dtypes=float_dtypes, grad=grad, rtol=rtol, atol=atol,
                tags=("elemwise", *tags))


CASES: list[Case] = []
add_case = CASES.append

M = (3, 4)  # the usual matrix shape

# -- arithmetic ---------------------------------------------------------------------

# Broadcasting and rank/size edge cases, shown on `add`.
for name, shapes in {
    "add": (M, M),
    "add_bcast_col_row": ((3, 1), (1, 4)),
    "add_bcast_vector": ((2, 3), (3,)),
    "add_bcast_scalar": ((), (2, 2)),
    "add_scalars": ((), ()),
    "add_zero_size": ((0, 3), (3,)),
    "add_zero_size_bcast": ((0, 3), (1, 1)),
    "add_rank3": ((2, 1, 4), (3, 1)),
}.items():
    add_case(_case(name, _fn("add"), np.add, *(Arg(s) for s in shapes)))

add_case(_case("add_static_shapes", _fn("add"), np.add,
               Arg((3, 1), static=True), Arg((1, 4), static=True)))
add_case(_case("add_variadic", _fn("add"), lambda x, y, z: x + y + z,
               Arg(M), Arg((4,)), Arg(())))
add_case(_case("add_low_precision", _fn("add"), np.add, Arg(M), Arg(M),
               float_dtypes=ALL_FLOATS))
add_case(_case("add_int8_overflow", _fn("add"), np.add,
               Arg(M, "int8", 100, 127), Arg(M, "int8", 100, 127), grad=INT_ONLY))
add_case(_case("add_int32_float", _fn("add"), np.add, Arg(M, "int32", -5, 5), Arg(M)))
add_case(_case("add_bool", _fn("add"), np.add, Arg(M, "bool"), Arg(M, "bool"),
               grad=INT_ONLY))
add_case(_case("add_uint8_int8", _fn("add"), np.add, Arg(M, "uint8", 0, 255),
               Arg(M, "int8", -128, 127), grad=INT_ONLY))
add_case(_case("add_python_scalar", lambda x: x + 2.5, lambda x: x + 2.5, Arg(M)))
add_case(_case("add_int8_python_int", lambda x: x + 3, lambda x: x + np.int8(3),
               Arg(M, "int8", -50, 50), grad=INT_ONLY))
add_case(_case("add_complex128", _fn("add"), np.add, Arg(M, "complex128"),
               Arg((4,), "complex128"), grad=COMPLEX))

add_case(_case("sub", _fn("sub"), np.subtract, Arg(M), Arg(M)))
add_case(_case("sub_bcast", _fn("sub"), np.subtract, Arg((3, 1)), Arg((1, 4))))
add_case(_case("sub_python_scalar_left", lambda x: 2 - x, lambda x: 2 - x, Arg(M)))
add_case(_case("sub_uint8_wraps", _fn("sub"), np.subtract, Arg(M, "uint8", 0, 2),
               Arg(M, "uint8", 1, 5), grad=INT_ONLY))
add_case(_case("sub_int64", _fn("sub"), np.subtract, Arg(M, "int64", -100, 100),
               Arg(M, "int64", -100, 100), grad=INT_ONLY))

add_case(_case("mul", _fn("mul"), np.multiply, Arg(M), Arg(M)))
add_case(_case("mul_bcast_scalar", _fn("mul"), np.multiply, Arg(()), Arg((2, 3))))
add_case(_case("mul_variadic", _fn("mul"), lambda x, y, z: x * y * z,
               Arg((3, 1)), Arg((1, 4)), Arg(M)))
add_case(_case("mul_low_precision", _fn("mul"), np.multiply, Arg(M), Arg(M),
               float_dtypes=ALL_FLOATS))
add_case(_case("mul_int16_overflow", _fn("mul"), np.multiply,
               Arg(M, "int16", 200, 1000), Arg(M, "int16", 200, 1000), grad=INT_ONLY))
add_case(_case("mul_bool", _fn("mul"), np.multiply, Arg(M, "bool"), Arg(M, "bool"),
               grad=INT_ONLY))
add_case(_case("mul_complex64", _fn("mul"), np.multiply, Arg(M, "complex64"),
               Arg(M, "complex64"), grad=COMPLEX))

add_case(_case("true_div", _fn("true_div"), np.true_divide, Arg(M),
               Arg(M, sample=_away_from_zero)))
add_case(_case("true_div_bcast", _fn("true_div"), np.true_divide, Arg((3, 1)),
               Arg((4,), sample=_away_from_zero)))
add_case(_case("true_div_int32", _fn("true_div"), _float_ref(np.true_divide),
               Arg(M, "int32", -10, 10), Arg(M, "int32", sample=_away_from_zero),
               grad=INT_ONLY))
add_case(_case("true_div_int8", _fn("true_div"), _float_ref(np.true_divide),
               Arg(M, "int8", -10, 10), Arg(M, "int8", sample=_away_from_zero),
               grad=INT_ONLY))
add_case(_case("true_div_python_scalar", lambda x: 1 / x, lambda x: 1 / x,
               Arg(M, sample=_away_from_zero)))

add_case(_case("floor_div", _fn("floor_div"), np.floor_divide, Arg(M, low=-5, high=5),
               Arg(M, sample=_away_from_zero), grad=NOT_DIFFERENTIABLE))
add_case(_case("floor_div_int32", _fn("floor_div"), np.floor_divide,
               Arg(M, "int32", -20, 20), Arg(M, "int32", sample=_away_from_zero),
               grad=INT_ONLY))
add_case(_case("floor_div_uint8_int8", _fn("floor_div"), np.floor_divide,
               Arg(M, "uint8", 0, 255), Arg(M, "int8", sample=_away_from_zero),
               grad=INT_ONLY))

add_case(_case("mod", _fn("mod"), np.remainder, Arg(M, low=-5, high=5),
               Arg(M, sample=_away_from_zero)))
add_case(_case("mod_int64_bcast", _fn("mod"), np.remainder, Arg(M, "int64", -20, 20),
               Arg((4,), "int64", sample=_away_from_zero), grad=INT_ONLY))

add_case(_case("pow", _fn("pow"), np.power, Arg(M, low=0.5, high=2.0), Arg(M)))
add_case(_case("pow_bcast", _fn("pow"), np.power, Arg((3, 1), low=0.5, high=2.0),
               Arg((1, 4))))
add_case(_case("pow_python_exponent", lambda x: x ** 3, lambda x: x ** 3, Arg(M)))
add_case(_case("pow_int32", _fn("pow"), np.power, Arg(M, "int32", -3, 3),
               Arg(M, "int32", 0, 3), grad=INT_ONLY))

for name, func in (("maximum", np.maximum), ("minimum", np.minimum)):
    add_case(_case(name, _fn(name), func, Arg(M), Arg(M)))
    add_case(_case(f"{name}_bcast", _fn(name), func, Arg((3, 1)), Arg((1, 4))))
    add_case(_case(f"{name}_nan", _fn(name), func, Arg(M, sample=_with_specials), Arg(M)))
    add_case(_case(f"{name}_int8_uint8", _fn(name), func, Arg(M, "int8", -128, 127),
                   Arg(M, "uint8", 0, 255), grad=INT_ONLY))

add_case(_case("neg", _fn("neg"), np.negative, Arg(M)))
add_case(_case("neg_int8", _fn("neg"), np.negative, Arg(M, "int8", -128, 127),
               grad=INT_ONLY))
add_case(_case("neg_operator_0d", lambda x: -x, np.negative, Arg(())))

add_case(_case("abs", _fn("abs"), np.abs, Arg(M)))
add_case(_case("abs_int16", _fn("abs"), np.abs, Arg(M, "int16", -300, 300), grad=INT_ONLY))
add_case(_case("abs_complex128", _fn("abs"), np.abs, Arg(M, "complex128"), grad=COMPLEX))
add_case(_case("abs_complex64", _fn("abs"), np.abs, Arg(M, "complex64"), grad=COMPLEX))

add_case(_case("sqr", _fn("sqr"), np.square, Arg(M)))
add_case(_case("sqr_int32", _fn("sqr"), np.square, Arg(M, "int32", -100, 100),
               grad=INT_ONLY))
add_case(_case("sqr_bool", _fn("sqr"), lambda x: np.square(x.astype(np.int8)),
               Arg(M, "bool"), grad=INT_ONLY))

add_case(_case("reciprocal", _fn("reciprocal"), np.reciprocal, Arg(M, sample=_away_from_zero)))
add_case(_case("reciprocal_int32", _fn("reciprocal"), _float_ref(np.reciprocal),
               Arg(M, "int32", sample=_away_from_zero), grad=INT_ONLY))

add_case(_case("sign", _fn("sign"), np.sign, Arg(M, sample=_some_zeros),
               grad=NOT_DIFFERENTIABLE))
add_case(_case("sign_int8", _fn("sign"), np.sign, Arg(M, "int8", -3, 3), grad=INT_ONLY))
add_case(_case("sign_complex128", _fn("sign"), np.sign, Arg(M, "complex128"), grad=COMPLEX))

add_case(_case("identity", _fn("identity"), np.copy, Arg(M)))
add_case(_case("identity_int32", _fn("identity"), np.copy, Arg(M, "int32", -9, 9),
               grad=INT_ONLY))

# -- comparisons and logic ------------------------------------------------------------

_COMPARISONS = {"eq": np.equal, "neq": np.not_equal, "lt": np.less, "gt": np.greater,
                "le": np.less_equal, "ge": np.greater_equal}
for name, func in _COMPARISONS.items():
    add_case(_case(name, _fn(name), func, Arg(M, sample=_few_values),
                   Arg(M, sample=_few_values), grad=BOOL_OUTPUT))
    add_case(_case(f"{name}_bcast_int_float", _fn(name), func,
                   Arg((3, 1), "int32", -2, 2), Arg((4,), sample=_few_values),
                   grad=BOOL_OUTPUT))
add_case(_case("lt_nan", _fn("lt"), np.less, Arg(M, sample=_with_specials), Arg(M),
               grad=BOOL_OUTPUT))
add_case(_case("eq_uint8_int8", _fn("eq"), np.equal, Arg(M, "uint8", 0, 3),
               Arg(M, "int8", -1, 3), grad=BOOL_OUTPUT))
add_case(_case("gt_operator_python_scalar", lambda x: x > 0.5, lambda x: x > 0.5, Arg(M),
               grad=BOOL_OUTPUT))

_LOGIC = {"and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor}
for name, func in _LOGIC.items():
    add_case(_case(f"{name}_bool", _fn(name), func, Arg(M, "bool"), Arg(M, "bool"),
                   grad=BOOL_OUTPUT))
    add_case(_case(f"{name}_int8", _fn(name), func, Arg(M, "int8", -128, 127),
                   Arg((4,), "int8", -128, 127), grad=INT_ONLY))
    add_case(_case(f"{name}_uint16_int16", _fn(name), func, Arg(M, "uint16", 0, 65535),
                   Arg(M, "int16", -32768, 32767), grad=INT_ONLY))
add_case(_case("and_operator", lambda x, y: x & y, np.bitwise_and, Arg(M, "bool"),
               Arg((3, 1), "bool"), grad=BOOL_OUTPUT))
add_case(_case("invert_bool", _fn("invert"), np.invert, Arg(M, "bool"), grad=BOOL_OUTPUT))
add_case(_case("invert_uint8", _fn("invert"), np.invert, Arg(M, "uint8", 0, 255),
               grad=INT_ONLY))
add_case(_case("invert_int64_operator", lambda x: ~x, np.invert, Arg(M, "int64", -99, 99),
               grad=INT_ONLY))

add_case(_case("switch", _fn("switch"), np.where, Arg(M, "bool"), Arg(M), Arg(M)))
add_case(_case("switch_bcast", _fn("switch"), np.where, Arg((3, 1), "bool"), Arg((1, 4)),
               Arg(())))
add_case(_case("switch_int_float", _fn("switch"), np.where, Arg(M, "bool"),
               Arg(M, "int32", -5, 5), Arg((4,))))
add_case(_case("switch_int_cond", _fn("switch"), lambda c, a, b: np.where(c != 0, a, b),
               Arg(M, "int8", -1, 1), Arg(M), Arg(M)))
add_case(_case("switch_python_scalars", lambda c: wt.switch(c, 1.5, -1.5),
               lambda c: np.where(c, 1.5, -1.5), Arg(M, "bool"), grad=INT_ONLY))
add_case(_case("switch_zero_size", _fn("switch"), np.where, Arg((0, 4), "bool"),
               Arg((0, 4)), Arg((4,))))

add_case(_case("clip", _fn("clip"), np.clip, Arg(M, low=-3, high=3), Arg(M, low=-2, high=0),
               Arg(M, low=0, high=2)))
add_case(_case("clip_python_bounds", lambda x: x.clip(-0.5, 0.5),
               lambda x: np.clip(x, -0.5, 0.5), Arg(M)))
add_case(_case("clip_bcast_bounds", _fn("clip"), np.clip, Arg((2, 3, 4)),
               Arg((3, 1), low=-1, high=0), Arg((4,), low=0, high=1)))
add_case(_case("clip_crossed_bounds", lambda x: wt.clip(x, 1.0, -1.0),
               lambda x: np.clip(x, 1.0, -1.0), Arg(M), grad=NOT_DIFFERENTIABLE))
add_case(_case("clip_nan", lambda x: wt.clip(x, -1.0, 1.0),
               lambda x: np.clip(x, -1.0, 1.0), Arg(M, sample=_with_specials)))
add_case(_case("clip_one_sided", lambda x: wt.clip(x, None, 0.5),
               lambda x: np.clip(x, None, 0.5), Arg(M)))
add_case(_case("clip_int8", lambda x: wt.clip(x, -10, 10),
               lambda x: np.clip(x, np.int8(-10), np.int8(10)), Arg(M, "int8", -128, 127),
               grad=INT_ONLY))
add_case(_case("clip_zero_size", lambda x: wt.clip(x, 0.0, 1.0),
               lambda x: np.clip(x, 0.0, 1.0), Arg((0, 3))))

# -- casts --------------------------------------------------------------------------

_CASTS: list[tuple[str, Arg, str, bool | str]] = [
    ("float_to_int32", Arg(M, low=-50, high=50), "int32", NOT_DIFFERENTIABLE),
    ("float_to_int8", Arg(M, low=-100, high=100), "int8", NOT_DIFFERENTIABLE),
    ("float_to_uint8", Arg(M, low=0, high=200), "uint8", NOT_DIFFERENTIABLE),
    ("float_to_bool", Arg(M, sample=_some_zeros), "bool", NOT_DIFFERENTIABLE),
    ("float_to_float16", Arg(M), "float16", True),
    ("float_to_bfloat16", Arg(M), "bfloat16", True),
    ("float_to_complex128", Arg(M), "complex128", "complex output"),
    ("float32_to_float64", Arg(M, "float32"), "float64", True),
    ("int32_to_float32", Arg(M, "int32", -1000, 1000), "float32", INT_ONLY),
    ("int64_to_int8_wraps", Arg(M, "int64", -1000, 1000), "int8", INT_ONLY),
    ("uint8_to_int8_wraps", Arg(M, "uint8", 0, 255), "int8", INT_ONLY),
    ("bool_to_float64", Arg(M, "bool"), "float64", INT_ONLY),
    ("int8_to_bool", Arg(M, "int8", -2, 2), "bool", INT_ONLY),
    ("complex128_to_float64", Arg(M, "complex128"), "float64", COMPLEX),
    ("complex128_to_complex64", Arg(M, "complex128"), "complex64", COMPLEX),
    ("float_zero_size_to_int16", Arg((0, 3)), "int16", NOT_DIFFERENTIABLE),
]


def _cast_case(name: str, arg: Arg, target: str, grad: bool | str) -> Case:
    numpy_target = dtypes.as_dtype(target).numpy

    def reference(x: np.ndarray) -> np.ndarray:
        if x.dtype.kind == "c" and numpy_target.kind != "c":
            x = x.real  # numpy's astype would warn about the discarded imaginary part
        return x.astype(numpy_target)

    return _case(f"cast_{name}", lambda x: wt.cast(x, target), reference, arg, grad=grad)


for cast_name, cast_arg, cast_target, cast_grad in _CASTS:
    add_case(_cast_case(cast_name, cast_arg, cast_target, cast_grad))
add_case(_case("astype_method", lambda x: x.astype("int16"), lambda x: x.astype(np.int16),
               Arg(M, low=-50, high=50), grad=NOT_DIFFERENTIABLE))

# -- float math -----------------------------------------------------------------------

# Every declared Op (`workbench.core.scalar.declared`) gets its cases from its declaration:
# one on its domain, one on int32 inputs inside it; a few get low-precision and complex
# cases too. Adding an Op adds its cases.
_LOW_PRECISION_MATH = ("exp", "log", "tanh", "sigmoid", "sqrt")
_COMPLEX_MATH = ("exp", "log", "sqrt", "sin", "cosh", "tanh", "arcsin", "arctanh")


def reference_of(op: Any) -> Callable[..., Any]:
    """The test reference of a declared Op as a function of NumPy arrays computing in the
    float dtype workbench uses (`_float_ref`): its declared `reference` (a function, or
    a "module.function" imported now: the catalogue runs in tests, where SciPy is
    installed), else its NumPy function."""
    ref = op.reference
    if ref is None:
        ref = type(op).numpy
    elif isinstance(ref, str):
        module_name, _, attr = ref.rpartition(".")
        ref = getattr(importlib.import_module(module_name), attr)
        if not isinstance(ref, np.ufunc):
            ref = np.vectorize(ref, otypes=[np.float64])
    return _float_ref(ref)


def gammainc_da_reference(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dP(a, x)/da by SciPy's gammainc and a 5-point central difference (tests only)."""
    import scipy.special

    p = scipy.special.gammainc
    h = 1e-3 * np.maximum(a, 1.0)
    return (-p(a + 2 * h, x) + 8 * p(a + h, x) - 8 * p(a - h, x) + p(a - 2 * h, x)) / (12 * h)


def declared_cases(op: Any, function: Callable[..., Any] | None = None) -> list[Case]:
    """The catalogue cases of declared scalar Op `op` through its tensor function
    (`function`, default ``wt.<name>``): values on its domain for every float dtype and,
    with a gradient check unless the declaration says why not, on int32 inputs."""
    build = function or _fn(op.name)
    reference = reference_of(op)
    cases = [_case(op.name, build, reference,
                   *(Arg(M, low=lo, high=hi) for lo, hi in op.domain), grad=op.grad_note)]
    int_args = []
    for lo, hi in op.domain:
        ilo, ihi = math.ceil(lo), math.floor(hi)
        int_args.append(Arg(M, "int32", *((ilo, ihi) if ilo <= ihi else (ilo, ilo))))
    cases.append(_case(f"{op.name}_int32", build, reference, *int_args, grad=INT_ONLY))
    return cases


for declared in smath.DECLARED_OPS:
    for declared_case in declared_cases(declared):
        add_case(declared_case)
    name = declared.name
    func = reference_of(declared)
    (low, high), *_ = declared.domain
    if name in _LOW_PRECISION_MATH:
        add_case(_case(f"{name}_low_precision", _fn(name), func,
                       Arg((2, 3), low=low, high=high), float_dtypes=("float16", "bfloat16")))
    if name in _COMPLEX_MATH:
        add_case(_case(f"{name}_complex128", _fn(name), getattr(np, declared.nfunc),
                       Arg(M, "complex128", -0.8, 0.8), grad=COMPLEX))
add_case(_case("exp_0d", _fn("exp"), np.exp, Arg(())))
add_case(_case("exp_zero_size", _fn("exp"), np.exp, Arg((0, 3))))
add_case(_case("exp_rank4", _fn("exp"), np.exp, Arg((2, 1, 3, 2))))
add_case(_case("exp_bool", _fn("exp"), _float_ref(np.exp), Arg(M, "bool"), grad=INT_ONLY))
add_case(_case("exp_uint8", _fn("exp"), _float_ref(np.exp), Arg(M, "uint8", 0, 5),
               grad=INT_ONLY))
add_case(_case("log_complex64", _fn("log"), np.log, Arg(M, "complex64", 0.2, 2),
               grad=COMPLEX))
add_case(_case("sigmoid_large", _fn("sigmoid"), _sigmoid, Arg(M, low=-800, high=800),
               atol=1e-30))
add_case(_case("softplus_large", _fn("softplus"), _softplus, Arg(M, low=-800, high=800)))
add_case(_case("log_specials", _fn("log"), np.log, Arg(M, sample=_with_specials)))

add_case(_case("logaddexp_large", _fn("logaddexp"), np.logaddexp, Arg(M, low=-800, high=800),
               Arg((4,), low=-800, high=800)))
add_case(_case("arctan2_bcast", _fn("arctan2"), np.arctan2, Arg((3, 1)), Arg((4,))))

for name, func in (("floor", np.floor), ("ceil", np.ceil), ("round_half_to_even", np.rint)):
    add_case(_case(name, _fn(name), func, Arg(M, sample=_halves), grad=NOT_DIFFERENTIABLE))
    add_case(_case(f"{name}_int16", _fn(name), lambda x: x.copy(),
                   Arg(M, "int16", -300, 300), grad=INT_ONLY))
add_case(_case("round_method", lambda x: x.round(), np.rint, Arg((5,), sample=_halves),
               grad=NOT_DIFFERENTIABLE))

for name, func in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
    add_case(_case(name, _fn(name), func, Arg(M, sample=_with_specials), grad=BOOL_OUTPUT))
    add_case(_case(f"{name}_int32", _fn(name), func, Arg(M, "int32", -5, 5),
                   grad=BOOL_OUTPUT))
    add_case(_case(f"{name}_complex64", _fn(name), func, Arg(M, "complex64"),
                   grad=BOOL_OUTPUT))

# -- complex parts --------------------------------------------------------------------

_PARTS = {"real": np.real, "imag": np.imag, "conj": np.conjugate, "angle": np.angle}
for name, func in _PARTS.items():
    for complex_dtype in ("complex128", "complex64"):
        add_case(_case(f"{name}_{complex_dtype}", _fn(name), func, Arg(M, complex_dtype),
                       grad=COMPLEX))
    add_case(_case(f"{name}_real_input", _fn(name), func, Arg(M),
                   grad=NOT_DIFFERENTIABLE if name in ("imag", "angle") else True))
add_case(_case("angle_int32", _fn("angle"), _float_ref(np.angle), Arg(M, "int32", -3, 3),
               grad=INT_ONLY))
add_case(_case("real_property", lambda z: z.real, np.real, Arg(M, "complex128"),
               grad=COMPLEX))
add_case(_case("imag_property", lambda z: z.imag, np.imag, Arg((2,), "complex64"),
               grad=COMPLEX))

# -- Composite ------------------------------------------------------------------------


def _composite_one(x: Any, y: Any) -> Any:
    """Elemwise{Composite{((exp(i0) * i1) + 2.0)}}(x, y)."""
    i0, i1 = get_scalar_type(x.dtype)("i0"), get_scalar_type(y.dtype)("i1")
    program = Composite([i0, i1], [smath.add(smath.mul(smath.exp(i0), i1), 2.0)])
    return Elemwise(program)(x, y)


def _composite_two(x: Any, y: Any) -> Any:
    """Two outputs from one pass: sin(i0) + i1 and the maximum of i0 * i1 and 0."""
    i0, i1 = get_scalar_type(x.dtype)("i0"), get_scalar_type(y.dtype)("i1")
    first = smath.add(smath.sin(i0), i1)
    second = smath.maximum(smath.mul(i0, i1), 0.0)
    return Elemwise(Composite([i0, i1], [first, second]))(x, y)


def _composite_int(x: Any) -> Any:
    """An integer program whose float step gets the default float dtype: sqrt(i0 * i0)."""
    i0 = get_scalar_type(x.dtype)("i0")
    return Elemwise(Composite([i0], [smath.sqrt(smath.mul(i0, i0))]))(x)


add_case(_case("composite", _composite_one, lambda x, y: np.exp(x) * y + 2.0,
               Arg(M), Arg((4,))))
add_case(_case("composite_two_outputs", _composite_two,
               lambda x, y: [np.sin(x) + y, np.maximum(x * y, 0.0).astype(x.dtype)],
               Arg((3, 1)), Arg((1, 4))))
add_case(_case("composite_int_to_float", _composite_int,
               _float_ref(lambda x: np.sqrt(x * x)), Arg(M, "int32", -9, 9), grad=INT_ONLY))

# -- DimShuffle, SpecifyShape, Shape, Shape_i ------------------------------------------


def _dimshuffle(pattern: tuple[int | str, ...]) -> Callable[[Any], Any]:
    def build(x: Any) -> Any:
        return x.dimshuffle(*pattern)

    return build


add_case(_case("dimshuffle_transpose", _dimshuffle((1, 0)), np.transpose, Arg((2, 3))))
add_case(_case("dimshuffle_permute3", _dimshuffle((2, 0, 1)),
               lambda x: np.transpose(x, (2, 0, 1)), Arg((2, 3, 4))))
add_case(_case("dimshuffle_expand", _dimshuffle(("x", 0, "x", 1)),
               lambda x: x[None, :, None, :], Arg((2, 3))))
add_case(_case("dimshuffle_drop", _dimshuffle((1,)), lambda x: x[0],
               Arg((1, 3), static=True)))
add_case(_case("dimshuffle_drop_and_transpose", _dimshuffle((2, "x", 0)),
               lambda x: np.transpose(x[:, 0, :], (1, 0))[:, None, :],
               Arg((2, 1, 3), static=True)))
add_case(_case("dimshuffle_0d", _dimshuffle(("x", "x")), lambda x: x.reshape(1, 1), Arg(())))
add_case(_case("dimshuffle_zero_size", lambda x: x.T, np.transpose, Arg((0, 3))))
add_case(_case("transpose_int8", lambda x: x.T, np.transpose, Arg((2, 3, 4), "int8", -9, 9),
               grad=INT_ONLY))


def _specify(shape: tuple[Any, ...]) -> Callable[[Any], Any]:
    def build(x: Any) -> Any:
        return wt.specify_shape(x, shape)

    return build


add_case(_case("specify_shape", _specify((3, 4)), np.copy, Arg(M)))
add_case(_case("specify_shape_partial", _specify((None, 4)), np.copy, Arg(M)))
add_case(_case("specify_shape_zero_size", _specify((0, 3)), np.copy, Arg((0, 3))))
add_case(_case("specify_shape_symbolic",
               lambda x, y: wt.specify_shape(x, (wt.shape_i(y, 0), None)),
               lambda x, y: x.copy(), Arg(M), Arg((3,))))
add_case(_case("specify_shape_then_add", lambda x, y: wt.specify_shape(x, (3, 4)) + y,
               np.add, Arg(M), Arg((3, 1))))

add_case(_case("check_and_raise_passes", lambda x: wt.check_and_raise(
    x, [wt.all(wt.isfinite(x))], "ValueError", "x must be finite") * 2.0,
    lambda x: x * 2.0, Arg(M)))
add_case(_case("check_and_raise_int", lambda x: wt.check_and_raise(
    x, [wt.any(wt.ge(x, -10)), wt.lt(wt.shape_i(x, 0), 9)], "IndexError", "x too long"),
    np.copy, Arg((4,), "int32", -9, 9), grad=INT_ONLY))

SHAPE_ONLY = "shape only: the values of the input do not reach the output"
for shape_in in (M, (), (0, 2, 5)):
    label = "x".join(str(s) for s in shape_in) or "0d"
    add_case(_case(f"shape_{label}", lambda x: x.shape,
                   lambda x: np.array(x.shape, dtype=np.int64), Arg(shape_in), grad=SHAPE_ONLY))
add_case(_case("shape_i", lambda x: wt.shape_i(x, 1),
               lambda x: np.array(x.shape[1], dtype=np.int64), Arg(M), grad=SHAPE_ONLY))
add_case(_case("shape_i_zero_size", lambda x: wt.shape_i(x, 0),
               lambda x: np.array(x.shape[0], dtype=np.int64), Arg((0, 3), "int32"),
               grad=SHAPE_ONLY))
add_case(_case("shape_in_arithmetic", lambda x: x * wt.shape_i(x, 0),
               lambda x: x * np.array(x.shape[0], dtype=np.int64), Arg(M)))

# SumToShape: the reduction Elemwise gradients use when broadcasting is decided at run time.
add_case(_case("sum_to_shape_column",
               lambda g: SumToShape()(g, wt.shape_i(g, 0), 1),
               lambda g: g.sum(axis=1, keepdims=True), Arg(M)))
add_case(_case("sum_to_shape_unchanged",
               lambda g: SumToShape()(g, wt.shape_i(g, 0), wt.shape_i(g, 1)),
               np.copy, Arg(M)))
