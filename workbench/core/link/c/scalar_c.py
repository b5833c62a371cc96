"""C expressions for every scalar Op, the kernels of fused Elemwise loops.

`scalar_c_code(op, inputs, in_dtypes, out_dtypes, tmp)` returns C statements
computing the op's outputs into fresh locals, for one element; a `Composite` is
its inner steps in order. Inputs are first converted the way the Python kernel
does (`ScalarOp.input_cast`). Semantics follow NumPy, including the corners where
C differs: integer division and modulo by zero give 0 (and floor like Python),
max/min propagate NaN, integer powers with a negative exponent raise ValueError
(through an error flag checked after the loop).

Transcendental functions vectorise: `VECTOR_MATH_DECLARATIONS` declares them with
`#pragma omp declare simd`, so gcc's loop vectoriser calls glibc's libmvec
(e.g. `_ZGVdN4v_exp`) for 4 or 8 elements at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.core.dtypes import as_dtype, result_type
from workbench.core.link.c.special_math import SPECIAL_C, support_code
from workbench.core.link.c.types import c_type_name, scalar_literal
from workbench.core.scalar import math as sm
from workbench.core.scalar.basic import Cast
from workbench.core.scalar.composite import Composite
from workbench.core.scalar.declared import backend_entry, declared_attribute

__all__ = ["NoScalarC", "VECTOR_MATH_DECLARATIONS", "SCALAR_SUPPORT", "scalar_c_code",
           "scalar_c_support", "scalar_op_has_c", "vector_math_functions"]


class NoScalarC(Exception):
    """The scalar op has no C code for these dtypes."""


#: libmvec's functions (glibc >= 2.35 on x86-64), double and float versions.
_VECTOR_FUNCS = ("exp", "log", "sin", "cos", "tan", "pow", "exp2", "exp10", "expm1", "log2",
                 "log10", "log1p", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
                 "asinh", "acosh", "atanh", "erf", "erfc", "cbrt", "hypot")
_TWO_ARG = {"pow", "atan2", "hypot"}


def vector_math_functions() -> tuple[str, ...]:
    return _VECTOR_FUNCS


def _vector_decls() -> str:
    lines = ["/* vector math: let the vectoriser call glibc's libmvec */",
             "#ifndef WB_VECTOR_MATH_DECLARED", "#define WB_VECTOR_MATH_DECLARED"]
    for f in _VECTOR_FUNCS:
        for ctype, suffix in (("double", ""), ("float", "f")):
            args = f"{ctype}, {ctype}" if f in _TWO_ARG else ctype
            lines.append("#pragma omp declare simd notinbranch")
            lines.append(f"extern {ctype} {f}{suffix}({args});")
    lines.append("#endif")
    return "\n".join(lines) + "\n"


VECTOR_MATH_DECLARATIONS = _vector_decls()

#: Helpers the templates use (static inline, so unused ones cost nothing).
SCALAR_SUPPORT = r"""
#ifndef WB_SCALAR_SUPPORT
#define WB_SCALAR_SUPPORT
#include <complex.h>
static int wb_errflag = 0;
/* float -> integer conversions with NumPy's (x86-64) results out of range: see c_cast */
static inline npy_int32 wb_f2i32(double v) {
  return v > -2147483649.0 && v < 2147483648.0 ? (npy_int32)v : NPY_MIN_INT32;
}
static inline npy_int64 wb_f2i64(double v) {
  return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (npy_int64)v
                                                                   : NPY_MIN_INT64;
}
static inline npy_uint32 wb_f2u32(double v) {
  return !(v >= 0) ? (npy_uint32)wb_f2i32(v) : v < 4294967296.0 ? (npy_uint32)v : 0;
}
static inline npy_uint64 wb_f2u64(double v) {
  return !(v >= 0) ? (npy_uint64)wb_f2i64(v) : v < 18446744073709551616.0 ? (npy_uint64)v : 0;
}
#define WB_DEF_INT_HELPERS(T, NAME, SIGNED) \
static inline T wb_floordiv_##NAME(T a, T b) { \
  if (b == 0) return 0; \
  if (SIGNED && b == (T)-1) return (T)(0 - a); \
  T q = a / b; \
  if (SIGNED && ((a % b) != 0) && ((a < 0) != (b < 0))) q -= 1; \
  return q; } \
static inline T wb_mod_##NAME(T a, T b) { \
  if (b == 0) return 0; \
  if (SIGNED && b == (T)-1) return 0; \
  T r = a % b; \
  if (SIGNED && r != 0 && ((r < 0) != (b < 0))) r += b; \
  return r; } \
static inline T wb_pow_##NAME(T a, T b) { \
  if (SIGNED && b < 0) { wb_errflag = 1; return 0; } \
  T result = 1; \
  while (b) { if (b & 1) result *= a; a *= a; b >>= 1; } \
  return result; }
WB_DEF_INT_HELPERS(npy_int8, int8, 1)
WB_DEF_INT_HELPERS(npy_int16, int16, 1)
WB_DEF_INT_HELPERS(npy_int32, int32, 1)
WB_DEF_INT_HELPERS(npy_int64, int64, 1)
WB_DEF_INT_HELPERS(npy_uint8, uint8, 0)
WB_DEF_INT_HELPERS(npy_uint16, uint16, 0)
WB_DEF_INT_HELPERS(npy_uint32, uint32, 0)
WB_DEF_INT_HELPERS(npy_uint64, uint64, 0)
#define WB_DEF_FLOAT_HELPERS(T, NAME, SFX) \
static inline T wb_mod_##NAME(T a, T b) { \
  T m = fmod##SFX(a, b); \
  if (b == 0) return m; \
  if (m != 0) { if ((b < 0) != (m < 0)) m += b; } \
  else m = copysign##SFX(0, b); \
  return m; } \
static inline T wb_floordiv_##NAME(T a, T b) { \
  if (b == 0) return a / b; \
  T m = fmod##SFX(a, b); \
  T div = (a - m) / b; \
  if (m != 0 && ((b < 0) != (m < 0))) div -= 1; \
  T floordiv; \
  if (div != 0) { floordiv = floor##SFX(div); if (div - floordiv > (T)0.5) floordiv += 1; } \
  else floordiv = copysign##SFX(0, a / b); \
  return floordiv; } \
static inline T wb_sigmoid_##NAME(T x) { \
  T e = exp##SFX(-fabs##SFX(x)); \
  return x >= 0 ? 1 / (1 + e) : e / (1 + e); } \
static inline T wb_softplus_##NAME(T x) { \
  /* log(1 + exp(x)) as NumPy's logaddexp(0, x) */ \
  if (x != x) return x; \
  if (x > 0) return x + log1p##SFX(exp##SFX(-x)); \
  return log1p##SFX(exp##SFX(x)); } \
static inline T wb_max_##NAME(T a, T b) { return (a >= b || a != a) ? a : b; } \
static inline T wb_min_##NAME(T a, T b) { return (a <= b || a != a) ? a : b; } \
static inline T wb_sign_##NAME(T a) { return a > 0 ? (T)1 : (a < 0 ? (T)-1 : (a == 0 ? (T)0 : a)); }
WB_DEF_FLOAT_HELPERS(npy_float32, float32, f)
WB_DEF_FLOAT_HELPERS(npy_float64, float64, )
/* complex (NumPy 2: npy_complex128 is C99 double _Complex). Multiplication and division
   as NumPy computes them (textbook product, Smith's quotient): C99's operators recover
   infinities from NaN results (Annex G), where NumPy returns the NaNs. Sign is z/|z| with
   NumPy's rules for infinite |z|;
   pow special-cases zero and small integer exponents like NumPy before using cpow. */
#define WB_DEF_COMPLEX_HELPERS(T, R, NAME, SFX) \
static inline T wb_mul_##NAME(T a, T b) { \
  R ar = creal##SFX(a), ai = cimag##SFX(a), br = creal##SFX(b), bi = cimag##SFX(b); \
  return __builtin_complex(ar * br - ai * bi, ar * bi + ai * br); } \
static inline T wb_div_##NAME(T a, T b) { \
  R ar = creal##SFX(a), ai = cimag##SFX(a), br = creal##SFX(b), bi = cimag##SFX(b); \
  R abr = fabs##SFX(br), abi = fabs##SFX(bi); \
  if (abr >= abi) { \
    if (abr == 0 && abi == 0) return __builtin_complex(ar / abr, ai / abr); \
    R rat = bi / br, scl = (R)1 / (br + bi * rat); \
    return __builtin_complex((ar + ai * rat) * scl, (ai - ar * rat) * scl); } \
  R rat = br / bi, scl = (R)1 / (bi + br * rat); \
  return __builtin_complex((ar * rat + ai) * scl, (ai * rat - ar) * scl); } \
static inline T wb_sign_##NAME(T z) { \
  R re = creal##SFX(z), im = cimag##SFX(z), m = cabs##SFX(z); \
  if (m != m) return __builtin_complex((R)NAN, (R)NAN); \
  if (isinf(m)) { \
    if (isinf(re)) { \
      if (isinf(im)) return __builtin_complex((R)NAN, (R)NAN); \
      return __builtin_complex(re > 0 ? (R)1 : (R)-1, (R)0); } \
    return __builtin_complex((R)0, im > 0 ? (R)1 : (R)-1); } \
  if (m == 0) return 0; \
  return __builtin_complex(re / m, im / m); } \
static inline T wb_pow_##NAME(T a, T b) { \
  R br = creal##SFX(b), bi = cimag##SFX(b); \
  if (br == 0 && bi == 0) return 1; \
  if (a == 0) { \
    if (br > 0 && bi == 0) return 0; \
    return __builtin_complex((R)NAN, (R)NAN); } \
  if (bi == 0 && br > -100 && br < 100 && br == (R)(npy_intp)br) { \
    npy_intp n = (npy_intp)br, m = n < 0 ? -n : n; \
    T acc = 1, p = a; \
    while (m) { if (m & 1) acc = wb_mul_##NAME(acc, p); p = wb_mul_##NAME(p, p); m >>= 1; } \
    return n < 0 ? wb_div_##NAME(1, acc) : acc; } \
  return cpow##SFX(a, b); }
WB_DEF_COMPLEX_HELPERS(npy_complex64, npy_float32, complex64, f)
WB_DEF_COMPLEX_HELPERS(npy_complex128, npy_float64, complex128, )
#endif
"""


def _kind(dtype: str) -> str:
    d = as_dtype(dtype)
    return {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}[d.kind]


def _fsuffix(dtype: str) -> str:
    return "f" if dtype in ("float32", "complex64") else ""


#: The C functions that <complex.h> has for complex numbers (``c`` + the name): a
#: declared Op whose C function is one of them runs complex dtypes in C too.
_COMPLEX_FUNCS = {"exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                  "cosh", "tanh", "asinh", "acosh", "atanh"}


# A template gets (args: list of C expressions already cast, dtype: str computing dtype,
# out: str output dtype) and returns a C expression. Templates are keyed by the scalar Op
# class (never by its name); `backend_entry` decides which one, if any, serves an Op.
Template = Callable[[list[str], str, str], str]
_T: dict[type, Template] = {}
#: The classes whose templates handle complex dtypes (C99's complex arithmetic and
#: <complex.h>); any other op with a complex input or output runs `perform`.
_COMPLEX: set[type] = set()


def _template(*classes: type, complex_ok: bool = False) -> Callable[[Template], Template]:
    def add(fn: Template) -> Template:
        for cls in classes:
            _T[cls] = fn
            if complex_ok:
                _COMPLEX.add(cls)
        return fn
    return add


@_template(sm.Add, complex_ok=True)
def _add(a: list[str], t: str, out: str) -> str:
    return f"({a[0]} || {a[1]})" if t == "bool" else f"({a[0]} + {a[1]})"


@_template(sm.Sub, complex_ok=True)
def _sub(a: list[str], t: str, out: str) -> str:
    return f"({a[0]} - {a[1]})"


@_template(sm.Mul, complex_ok=True)
def _mul(a: list[str], t: str, out: str) -> str:
    if _kind(t) == "complex":
        return f"wb_mul_{t}({a[0]}, {a[1]})"
    return f"({a[0]} && {a[1]})" if t == "bool" else f"({a[0]} * {a[1]})"


@_template(sm.TrueDiv, complex_ok=True)
def _truediv(a: list[str], t: str, out: str) -> str:
    if _kind(t) == "complex":
        return f"wb_div_{t}({a[0]}, {a[1]})"
    return f"({a[0]} / {a[1]})"


def _helper_call(helper: str) -> Template:
    """A template calling SCALAR_SUPPORT's `wb_<helper>_<dtype>(a, b)`."""
    return lambda a, t, out: f"wb_{helper}_{t}({a[0]}, {a[1]})"


_T[sm.IntDiv] = _helper_call("floordiv")
_T[sm.Mod] = _helper_call("mod")


@_template(sm.Pow, complex_ok=True)
def _pow(a: list[str], t: str, out: str) -> str:
    if _kind(t) == "complex":
        return f"wb_pow_{t}({a[0]}, {a[1]})"
    if _kind(t) == "float":
        return f"pow{_fsuffix(t)}({a[0]}, {a[1]})"
    return f"wb_pow_{t}({a[0]}, {a[1]})"


def _extreme(which: str) -> Template:
    def template(a: list[str], t: str, out: str) -> str:
        if _kind(t) == "float":
            return f"wb_{which}_{t}({a[0]}, {a[1]})"
        op = ">" if which == "max" else "<"
        return f"(({a[0]}) {op} ({a[1]}) ? ({a[0]}) : ({a[1]}))"
    return template


_T[sm.Maximum] = _extreme("max")
_T[sm.Minimum] = _extreme("min")


@_template(sm.Neg, complex_ok=True)
def _neg(a: list[str], t: str, out: str) -> str:
    return f"(-{a[0]})"


@_template(sm.Abs, complex_ok=True)
def _abs(a: list[str], t: str, out: str) -> str:
    k = _kind(t)
    if k == "complex":
        return f"cabs{_fsuffix(t)}({a[0]})"
    if k == "float":
        return f"fabs{_fsuffix(t)}({a[0]})"
    if k in ("uint", "bool"):
        return a[0]
    return f"(({a[0]}) < 0 ? ({t_c(t)})(0 - ({a[0]})) : ({a[0]}))"


def t_c(dtype: str) -> str:
    return c_type_name(dtype)


@_template(sm.Sqr, complex_ok=True)
def _sqr(a: list[str], t: str, out: str) -> str:
    if _kind(t) == "complex":
        return f"wb_mul_{t}({a[0]}, {a[0]})"
    return f"({a[0]} * {a[0]})"


@_template(sm.Reciprocal, complex_ok=True)
def _reciprocal(a: list[str], t: str, out: str) -> str:
    if _kind(t) == "complex":
        return f"wb_div_{t}(1, {a[0]})"
    return f"(({t_c(t)})1 / {a[0]})"


@_template(sm.Sign, complex_ok=True)
def _sign(a: list[str], t: str, out: str) -> str:
    if _kind(t) in ("float", "complex"):
        return f"wb_sign_{t}({a[0]})"
    if _kind(t) == "uint":
        return f"(({t_c(t)})(({a[0]}) > 0))"
    return f"(({t_c(t)})((({a[0]}) > 0) - (({a[0]}) < 0)))"


@_template(sm.Identity, complex_ok=True)
def _identity(a: list[str], t: str, out: str) -> str:
    return a[0]


def _complex_part(fname: str) -> Template:
    def template(a: list[str], t: str, out: str) -> str:
        if _kind(t) == "complex":
            return f"{fname}{_fsuffix(t)}({a[0]})"
        return a[0]
    return template


_T[sm.Real] = _complex_part("creal")
_T[sm.Conj] = _complex_part("conj")
_COMPLEX.update((sm.Real, sm.Conj))


def _comparison(op: str) -> Template:
    def template(a: list[str], t: str, out: str) -> str:
        if _kind(t) == "complex" and op not in ("==", "!="):
            raise NoScalarC(f"ordering comparison {op} of {t}")  # NumPy: lexicographic
        return f"({a[0]} {op} {a[1]})"
    return template


for _cls, _op in ((sm.EQ, "=="), (sm.NEQ, "!="), (sm.LT, "<"), (sm.GT, ">"), (sm.LE, "<="),
                  (sm.GE, ">=")):
    _T[_cls] = _comparison(_op)
_COMPLEX.update((sm.EQ, sm.NEQ))


for _cls, _op in ((sm.AND, "&"), (sm.OR, "|"), (sm.XOR, "^")):
    _T[_cls] = (lambda op: lambda a, t, out: f"({a[0]} {op} {a[1]})")(_op)


@_template(sm.Invert)
def _invert(a: list[str], t: str, out: str) -> str:
    return f"(!{a[0]})" if t == "bool" else f"(({t_c(t)})~{a[0]})"


@_template(sm.Clip)
def _clip(a: list[str], t: str, out: str) -> str:
    # NumPy: minimum(maximum(x, lo), hi): crossed bounds give hi, NaN anywhere gives NaN
    x, lo, hi = a
    if _kind(t) == "float":
        return f"wb_min_{t}(wb_max_{t}({x}, {lo}), {hi})"
    low = f"(({x}) > ({lo}) ? ({x}) : ({lo}))"
    return f"({low} < ({hi}) ? {low} : ({hi}))"


def _math(fname: str) -> Template:
    def template(a: list[str], t: str, out: str) -> str:
        if _kind(t) == "complex" and fname in _COMPLEX_FUNCS:
            return f"c{fname}{_fsuffix(t)}({', '.join(a)})"
        if _kind(t) != "float":
            raise NoScalarC(f"{fname} of {t}")
        return f"{fname}{_fsuffix(t)}({', '.join(a)})"
    return template


def _declared_template(op_class: type) -> Template | None:
    """The template of a declared Op: a call of its C function (`DeclaredOp.c_function`):
    ``wb_*`` helpers of SCALAR_SUPPORT by dtype (``wb_sigmoid_float32``), C library
    functions by suffix (``expf``), complex ones through <complex.h> (``cexp``)."""
    fname = declared_attribute(op_class, "c_function")
    if fname is None:
        return None
    if fname.startswith("wb_"):
        if fname not in SPECIAL_C and f"{fname}_##NAME" not in SCALAR_SUPPORT:
            return None  # a helper this backend does not have: the node runs `perform`
        def helper(a: list[str], t: str, out: str) -> str:
            if _kind(t) != "float":
                raise NoScalarC(f"{fname} of {t}")
            return f"{fname}_{t}({', '.join(a)})"
        return helper
    return _math(fname)


def _rounding(fname: str) -> Template:
    def template(a: list[str], t: str, out: str) -> str:
        if _kind(t) != "float":
            return a[0]  # integers are already whole
        return f"{fname}{_fsuffix(t)}({a[0]})"
    return template


_T[sm.Floor] = _rounding("floor")
_T[sm.Ceil] = _rounding("ceil")
_T[sm.RoundHalfToEven] = _rounding("rint")


@_template(sm.LogAddExp)
def _logaddexp(a: list[str], t: str, out: str) -> str:
    """As NumPy's npy_logaddexp: equal arguments (infinities included) give x + log 2,
    others the larger plus log1p(exp(-|x - y|)); a NaN argument makes that NaN."""
    if _kind(t) != "float":
        raise NoScalarC(f"logaddexp of {t}")
    x, y, f = f"({a[0]})", f"({a[1]})", _fsuffix(t)
    larger = f"({x} > {y} ? {x} : {y})"
    return (f"({x} == {y} ? {x} + ({c_type_name(t)})0.69314718055994530942 : "
            f"{larger} + log1p{f}(exp{f}(-fabs{f}({x} - {y}))))")


def _predicate(fname: str, int_value: str) -> Template:
    def template(a: list[str], t: str, out: str) -> str:
        if _kind(t) == "complex":  # NumPy: of either part (finite: of both)
            sfx = _fsuffix(t)
            re, im = f"creal{sfx}({a[0]})", f"cimag{sfx}({a[0]})"
            join = " && " if fname == "isfinite" else " || "
            return f"(({fname}({re}) != 0){join}({fname}({im}) != 0))"
        if _kind(t) != "float":
            return int_value
        return f"({fname}({a[0]}) != 0)"
    return template


_T[sm.IsNan] = _predicate("isnan", "0")
_T[sm.IsInf] = _predicate("isinf", "0")
_T[sm.IsFinite] = _predicate("isfinite", "1")
_COMPLEX.update((sm.IsNan, sm.IsInf, sm.IsFinite))


@_template(sm.Imag, complex_ok=True)
def _imag(a: list[str], t: str, out: str) -> str:
    if _kind(t) == "complex":
        return f"cimag{_fsuffix(t)}({a[0]})"
    return f"(({t_c(out)})0)"


@_template(sm.Angle, complex_ok=True)
def _angle(a: list[str], t: str, out: str) -> str:
    if _kind(t) == "complex":
        return f"carg{_fsuffix(t)}({a[0]})"
    return f"(({t_c(out)})atan2(0.0, (double)({a[0]})))"


def _literal(value: Any, dtype: str) -> str:
    """A C constant of `dtype` (complex through gcc's __builtin_complex, exact for inf/nan
    parts, where `re + im * I` would not be)."""
    if _kind(dtype) == "complex":
        part = "float32" if dtype == "complex64" else "float64"
        c = complex(value)
        return (f"__builtin_complex({scalar_literal(c.real, part)}, "
                f"{scalar_literal(c.imag, part)})")
    return scalar_literal(value, dtype)


#: Float to integer conversions, as NumPy does them on x86-64 (a plain C conversion of
#: a value out of the target's range is undefined, and vectorised it saturates or gives
#: 0): narrow targets go through int32 (-1.0 -> 255 for uint8), a value out of int32's
#: or int64's range (NaN, infinities) becomes its minimum (and so 0 in 8 or 16 bits);
#: unsigned 32 and 64 bits wrap negative values around and give 0 above their range.
_FLOAT_TO_INT = {"int8": "wb_f2i32", "int16": "wb_f2i32", "uint8": "wb_f2i32",
                 "uint16": "wb_f2i32", "int32": "wb_f2i32", "int64": "wb_f2i64",
                 "uint32": "wb_f2u32", "uint64": "wb_f2u64"}


def c_cast(expr: str, from_dtype: str, to_dtype: str) -> str:
    if from_dtype == to_dtype:
        return expr
    if to_dtype == "bool":
        return f"((npy_bool)(({expr}) != 0))"
    if _kind(from_dtype) in ("float", "complex") and to_dtype in _FLOAT_TO_INT:
        # (a complex value converts its real part)
        return f"(({t_c(to_dtype)}){_FLOAT_TO_INT[to_dtype]}({expr}))"
    return f"(({t_c(to_dtype)})({expr}))"


#: The Ops scalar_c_code writes itself.
_BUILT_IN = {Composite: "composite", Cast: "cast", sm.Switch: "switch"}


def _built_in(op: Any) -> str | None:
    return backend_entry(_BUILT_IN, type(op))


def _template_of(op: Any) -> Template | None:
    """The C template computing `op`: registered for its class (or a base class that
    computes the same, see `backend_entry`), else made from its declaration."""
    found = backend_entry(_T, type(op))
    return found if found is not None else _declared_template(type(op))


def _has_complex_c(op: Any) -> bool:
    if _built_in(op) or backend_entry(dict.fromkeys(_COMPLEX, True), type(op)):
        return True
    fname = declared_attribute(type(op), "c_function")
    return fname in _COMPLEX_FUNCS


def scalar_c_support(op: Any) -> str:
    """The C of the special functions (`special_math`) that `op` (a Composite: its
    steps) calls; empty when it calls none."""
    ops = [inner for inner, _ in op._steps] if _built_in(op) == "composite" else [op]
    return support_code(name for name in (declared_attribute(type(o), "c_function")
                                          for o in ops) if name is not None)


def scalar_op_has_c(op: Any) -> bool:
    """Whether `op` (a ScalarOp) has a C template (Composite: all its inner ops do)."""
    kind = _built_in(op)
    if kind == "composite":
        return all(scalar_op_has_c(inner) for inner, _ in op._steps)
    return kind is not None or _template_of(op) is not None


def scalar_c_code(op: Any, inputs: list[str], in_dtypes: list[str], out_dtypes: list[str],
                  tmp: Callable[[], str]) -> tuple[list[str], list[str]]:
    """(statements, output expressions) computing `op` on one element.

    `inputs` are C expressions of dtypes `in_dtypes`; `tmp()` returns a fresh local
    name. Raises NoScalarC when some dtype or op has no C here.
    """
    for d in (*in_dtypes, *out_dtypes):
        if d in ("float16", "bfloat16"):
            raise NoScalarC(f"{op}: dtype {d}")
    if not _has_complex_c(op) and any(_kind(d) == "complex"
                                      for d in (*in_dtypes, *out_dtypes)):
        raise NoScalarC(f"{op}: no C for complex dtypes")
    kind = _built_in(op)
    if kind == "composite":
        return _composite_code(op, inputs, in_dtypes, out_dtypes, tmp)
    if kind == "cast":
        return [], [c_cast(inputs[0], in_dtypes[0], out_dtypes[0])]
    if kind == "switch":
        cond = f"({inputs[0]} != 0)"
        a = c_cast(inputs[1], in_dtypes[1], out_dtypes[0])
        b = c_cast(inputs[2], in_dtypes[2], out_dtypes[0])
        return [], [f"({cond} ? {a} : {b})"]
    template = _template_of(op)
    if template is None:
        raise NoScalarC(f"no C template for scalar op {op} ({type(op).__qualname__})")
    if template is _angle and _kind(in_dtypes[0]) == "complex":
        return [], [c_cast(_angle(inputs, in_dtypes[0], out_dtypes[0]), out_dtypes[0],
                          out_dtypes[0])]
    if op.input_cast == "output":
        t = out_dtypes[0]
    elif op.input_cast == "common":
        t = str(result_type(*(as_dtype(d) for d in in_dtypes)))
    else:
        t = in_dtypes[0]
    args = inputs if op.input_cast is None else [
        c_cast(x, d, t) for x, d in zip(inputs, in_dtypes)]
    expr = template(args, t, out_dtypes[0])
    return [], [c_cast(expr, t if op.input_cast is not None else out_dtypes[0],
                      out_dtypes[0])]


def _composite_code(op: Any, inputs: list[str], in_dtypes: list[str], out_dtypes: list[str],
                    tmp: Callable[[], str]) -> tuple[list[str], list[str]]:
    plan = op._plan(tuple(as_dtype(d) for d in in_dtypes))
    values: dict[Any, tuple[str, str]] = {("i", k): (x, d) for k, (x, d) in
                                          enumerate(zip(inputs, in_dtypes))}
    statements: list[str] = []

    def value_of(ref: Any) -> tuple[str, str]:
        if ref[0] == "c":
            data = op._constants[ref]
            return _literal(data.item(), ref[1]), ref[1]
        return values[ref]

    for n, ((inner, args), dtypes) in enumerate(zip(op._steps, plan.step_dtypes)):
        arg_values = [value_of(a) for a in args]
        step_out = [str(d) for d in dtypes]
        stmts, exprs = scalar_c_code(inner, [v[0] for v in arg_values],
                                     [v[1] for v in arg_values], step_out, tmp)
        statements += stmts
        for j, (expr, d) in enumerate(zip(exprs, step_out)):
            name = tmp()
            statements.append(f"const {t_c(d)} {name} = {expr};")
            values[("n", n, j)] = (name, d)
    outs = []
    for ref, d in zip(op._output_refs, out_dtypes):
        expr, dtype = value_of(ref)
        outs.append(c_cast(expr, dtype, d))
    return statements, outs
