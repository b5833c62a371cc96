"""C for workbench's own Types: TensorType (NumPy arrays through the NumPy C API),
ScalarType (numpy scalars as plain C numbers) and Generic (any PyObject).

Each adapter follows seed 002's CLinkerType contract. In the templates `py_<name>`
is the PyObject holding the value; `<name>` is the C view of it and
`dtype_<name>` the C type of its elements.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.dtypes import register_backend_dtypes, run_in_python
from workbench.core.graph.type import Generic
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import CTypeAdapter, register_c_type
from workbench.core.scalar.basic import ScalarType
from workbench.core.tensor.type import TensorType, format_shape

#: C element type per workbench dtype name (None: no C arithmetic for it).
C_TYPES: dict[str, str | None] = {
    "bool": "npy_bool", "int8": "npy_int8", "int16": "npy_int16", "int32": "npy_int32",
    "int64": "npy_int64", "uint8": "npy_uint8", "uint16": "npy_uint16",
    "uint32": "npy_uint32", "uint64": "npy_uint64", "float16": None, "bfloat16": None,
    "float32": "npy_float32", "float64": "npy_float64", "complex64": "npy_complex64",
    "complex128": "npy_complex128",
}

#: dtypes the C linker computes with: the C row of the per-backend dtype registry
#: (no float16/bfloat16 arithmetic in C: such graphs follow the casting mode; without
#: one, float16 nodes run their Python implementation, NumPy's float16 arithmetic
#: rounding after every operation, inside the C loop, and bfloat16 is refused).
C_DTYPES: tuple[str, ...] = tuple(name for name, ctype in C_TYPES.items() if ctype)
register_backend_dtypes("c", C_DTYPES)
run_in_python("c", ["float16"])


def c_type_name(dtype: Any) -> str:
    """The C element type of a workbench dtype; ValueError if C has none."""
    name = str(dtype)
    ctype = C_TYPES.get(name)
    if ctype is None:
        raise ValueError(f"the C linker has no element type for dtype {name}")
    return ctype


def type_num(dtype: Any) -> int:
    """NumPy's type number of a workbench dtype (NPY_FLOAT64 etc.)."""
    from workbench.core.dtypes import as_dtype

    return int(as_dtype(dtype).numpy.num)


def type_description(t: Any) -> str:
    """Type `t` by its structure, as C checks print it (a TensorType's display `name`
    is left out: it is not the generated code's business)."""
    if isinstance(t, TensorType):
        return f"TensorType({t.dtype}, {format_shape(t.shape)})"
    return str(t)


def type_text(t: Any) -> str:
    """A C literal describing Type `t` by its structure (type_description)."""
    return c_string_literal(type_description(t))


def static_lengths_text(t: Any) -> str:
    """The static lengths of a TensorType as STATIC_LENGTHS_CHECK reads them ("?,784"):
    "" when none is static or `t` is no TensorType."""
    if not isinstance(t, TensorType) or all(n is None for n in t.shape):
        return ""
    return ",".join("?" if n is None else str(n) for n in t.shape)


#: The static-length check of an input whose expected lengths are run-time data (see
#: codegen.node_labels): `lengths` is "" (none static) or one entry per dimension,
#: "?" or the length, separated by commas ("?,784"). 1 when the array matches, else 0
#: with a TypeError naming the input (`label`) and the expected Type (`expected`).
STATIC_LENGTHS_CHECK = r"""#ifndef WB_STATIC_LENGTHS_CHECK
#define WB_STATIC_LENGTHS_CHECK
static int wb_static_lengths_ok(PyArrayObject *a, const char *lengths, const char *label,
                                const char *expected) {
  const char *p = lengths;
  for (int d = 0; *p && d < PyArray_NDIM(a); ++d) {
    if (*p == '?') {
      ++p;
    } else {
      long want = 0;
      while (*p >= '0' && *p <= '9') want = want * 10 + (*p++ - '0');
      if ((long)PyArray_DIMS(a)[d] != want) {
        PyErr_Format(PyExc_TypeError, "%s: expected %s, got length %ld in dimension %d",
                     label, expected, (long)PyArray_DIMS(a)[d], d);
        return 0;
      }
    }
    if (*p == ',') ++p;
  }
  return 1;
}
#endif"""


@register_c_type(TensorType)
class TensorTypeC(CTypeAdapter):
    """A TensorType value in C: `PyArrayObject *<name>` (a new reference while in use)."""

    def c_headers(self) -> list[str]:
        return ["<numpy/arrayobject.h>"]

    def c_declare(self, name: str, sub: dict[str, str]) -> str:
        return (f"PyArrayObject *{name};\n"
                f"typedef {c_type_name(self.type.dtype)} dtype_{name};\n")

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        return f"{name} = NULL;\n"

    def _checks(self, name: str, sub: dict[str, str]) -> str:
        """C refusing a value of the wrong kind, dtype, rank or static shape with a
        TypeError naming the input (`sub["label"]`) and the expected Type.

        Where `sub` names run-time labels for them (`type_label`, `lengths_label`: see
        codegen.node_labels), the expected Type's text and its static lengths are such
        data, so that the code is the same for every static shape of a dtype and rank
        (fewer node kinds to compile); else they are constants of the code."""
        t = self.type
        label, fail = sub.get("label", c_string_literal(name)), sub["fail"]
        arr = f"((PyArrayObject*)py_{name})"
        expected = sub.get("type_label") or type_text(t)

        def refuse(fmt: str, args: str) -> str:
            # `fmt` is library text: "%s: expected %s" + its own conversions
            return (f"  PyErr_Format(PyExc_TypeError, {c_string_literal('%s: expected %s' + fmt)}"
                    f", {label}, {expected}, {args}); {fail}")

        lines = [f"if (!PyArray_Check(py_{name})) {{",
                 refuse(", got a non-array object of type %s", f"Py_TYPE(py_{name})->tp_name"),
                 "}",
                 f"if (PyArray_TYPE({arr}) != {type_num(t.dtype)} || "
                 f"PyArray_NDIM({arr}) != {t.ndim}) {{",
                 refuse(f" (dtype {t.dtype}, rank {t.ndim}), got an array of dtype number %d "
                        "and rank %d", f"PyArray_TYPE({arr}), PyArray_NDIM({arr})"),
                 "}"]
        if "lengths_label" in sub:
            if t.ndim:
                lines.append(f"if (!wb_static_lengths_ok({arr}, {sub['lengths_label']}, "
                             f"{label}, {expected})) {fail}")
            return "\n".join(lines) + "\n"
        for d, length in enumerate(t.shape):
            if length is not None:
                lines += [f"if (PyArray_DIMS({arr})[{d}] != {length}) {{",
                          refuse(f", got length %ld in dimension {d}",
                                 f"(long)PyArray_DIMS({arr})[{d}]"),
                          "}"]
        return "\n".join(lines) + "\n"

    def c_support_code(self) -> str:
        return STATIC_LENGTHS_CHECK

    def c_extract(self, name: str, sub: dict[str, str]) -> str:
        fail = sub["fail"]
        return (self._checks(name, sub)
                + f"{name} = (PyArrayObject*)py_{name};\n"
                # unaligned or byte-swapped data: work on a well-behaved copy
                + f"if (!PyArray_ISBEHAVED_RO({name})) {{\n"
                + f"  {name} = (PyArrayObject*)PyArray_FromArray({name}, NULL, "
                  "NPY_ARRAY_ALIGNED | NPY_ARRAY_ENSURECOPY);\n"
                + f"  if (!{name}) {fail}\n"
                + "} else {\n"
                + f"  Py_INCREF({name});\n"
                + "}\n")

    def c_extract_out(self, name: str, sub: dict[str, str]) -> str:
        # Previous output storage: reused only if it still has this Type exactly.
        t = self.type
        cond = [f"PyArray_CheckExact(py_{name})",
                f"PyArray_TYPE((PyArrayObject*)py_{name}) == {type_num(t.dtype)}",
                f"PyArray_NDIM((PyArrayObject*)py_{name}) == {t.ndim}",
                f"PyArray_ISBEHAVED((PyArrayObject*)py_{name})"]
        return (f"if (py_{name} != Py_None && {' && '.join(cond)}) {{\n"
                f"  {name} = (PyArrayObject*)py_{name};\n  Py_INCREF({name});\n}}\n")

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        return f"Py_XDECREF({name});\n{name} = NULL;\n"

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        return (f"if (!{name}) {{\n"
                f"  Py_XDECREF(py_{name});\n  Py_INCREF(Py_None);\n  py_{name} = Py_None;\n"
                f"}} else if ((void*)py_{name} != (void*){name}) {{\n"
                f"  Py_XDECREF(py_{name});\n  py_{name} = (PyObject*){name};\n"
                f"  Py_INCREF(py_{name});\n}}\n")

    def c_literal(self, data: Any) -> str:
        value = np.asarray(data)
        if value.size != 1:
            raise ValueError("only single-element tensors have a C literal")
        return scalar_literal(value.reshape(()).item(), str(self.type.dtype))

    def c_is_simple(self) -> bool:
        return False

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)


def scalar_literal(value: Any, dtype: str) -> str:
    """A C expression of `dtype` for a Python number (inf/nan spelled portably)."""
    ctype = c_type_name(dtype)
    if dtype.startswith("complex"):
        c = complex(value)
        return f"(({ctype}){{{scalar_literal(c.real, 'float64')}, " \
               f"{scalar_literal(c.imag, 'float64')}}})"
    if dtype == "bool":
        return "1" if value else "0"
    if dtype.startswith(("int", "uint")):
        v = int(value)
        if dtype == "int64" and v == -(2**63):
            return "((npy_int64)(-9223372036854775807LL - 1))"
        suffix = "ULL" if dtype.startswith("uint") else "LL"
        return f"(({ctype}){v}{suffix})"
    v = float(value)
    if v != v:
        return f"(({ctype})NAN)"
    if v in (float("inf"), float("-inf")):
        return f"(({ctype})({'-' if v < 0 else ''}INFINITY))"
    return f"(({ctype}){v!r})"


# --------------------------------------------------------------------------- ScalarType


@register_c_type(ScalarType)
class ScalarTypeC(CTypeAdapter):
    """A ScalarType value in C: `npy_<dtype> <name>` holding the number itself.

    Python values are numpy scalars (``np.float64(1.5)``); c_extract accepts only a
    numpy scalar of exactly this dtype (a TypeError naming the input otherwise) and
    c_sync boxes the C value into a new numpy scalar. float16/bfloat16 have no C type:
    their nodes run through `perform`.
    """

    def _ctype(self) -> str:
        ctype = C_TYPES.get(str(self.type.dtype))
        if ctype is None:
            raise MethodNotDefined(f"ScalarTypeC: no C type for dtype {self.type.dtype}")
        return ctype

    def c_headers(self) -> list[str]:
        return ["<numpy/arrayobject.h>", "<numpy/arrayscalars.h>", "<string.h>"]

    def c_declare(self, name: str, sub: dict[str, str]) -> str:
        ctype = self._ctype()
        return f"{ctype} {name};\ntypedef {ctype} dtype_{name};\n"

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        return f"memset(&{name}, 0, sizeof({name}));\n"

    def c_extract(self, name: str, sub: dict[str, str]) -> str:
        label = sub.get("label", c_string_literal(name))
        fail = sub["fail"]
        t = self.type
        num = type_num(t.dtype)
        what = f"%s: expected {t} (a numpy {t.dtype} scalar), got "
        bad_kind = c_string_literal(what + "an object of type %s")
        bad_dtype = c_string_literal(what + "a numpy scalar of type %s")
        return f"""
if (!PyArray_IsScalar(py_{name}, Generic)) {{
  PyErr_Format(PyExc_TypeError, {bad_kind}, {label}, Py_TYPE(py_{name})->tp_name); {fail}
}}
{{
  PyArray_Descr *wb_d_{name} = PyArray_DescrFromScalar(py_{name});
  if (!wb_d_{name}) {fail}
  const int wb_num_{name} = wb_d_{name}->type_num;
  Py_DECREF(wb_d_{name});
  if (wb_num_{name} != {num}) {{
    PyErr_Format(PyExc_TypeError, {bad_dtype}, {label}, Py_TYPE(py_{name})->tp_name); {fail}
  }}
}}
PyArray_ScalarAsCtype(py_{name}, &{name});
"""

    def c_extract_out(self, name: str, sub: dict[str, str]) -> str:
        return ""  # the previous value is irrelevant: the Op sets the C value

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        return ""

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        num = type_num(self.type.dtype)
        return f"""
{{
  PyArray_Descr *wb_d_{name} = PyArray_DescrFromType({num});
  PyObject *wb_s_{name} = wb_d_{name} ? PyArray_Scalar(&{name}, wb_d_{name}, NULL) : NULL;
  Py_XDECREF(wb_d_{name});
  Py_XDECREF(py_{name});
  if (!wb_s_{name}) {{ Py_INCREF(Py_None); py_{name} = Py_None; {sub["fail"]} }}
  py_{name} = wb_s_{name};
}}
"""

    def c_literal(self, data: Any) -> str:
        self._ctype()
        return scalar_literal(np.asarray(data).item(), str(self.type.dtype))

    def c_is_simple(self) -> bool:
        return True

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)


# --------------------------------------------------------------------------- Generic


@register_c_type(Generic)
class GenericC(CTypeAdapter):
    """A Generic value in C: the `PyObject *<name>` itself (a new reference while in
    use), for Ops that handle Python objects through the C API. An output starts as
    NULL: the Op stores a new reference in it (NULL at the end gives None)."""

    def c_declare(self, name: str, sub: dict[str, str]) -> str:
        return f"PyObject *{name};\n"

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        return f"{name} = NULL;\n"

    def c_extract(self, name: str, sub: dict[str, str]) -> str:
        return f"{name} = py_{name};\nPy_INCREF({name});\n"

    def c_extract_out(self, name: str, sub: dict[str, str]) -> str:
        # An object has no buffer worth reusing: the Op's code starts from NULL and
        # stores a new reference.
        return ""

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        return f"Py_XDECREF({name});\n{name} = NULL;\n"

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        return (f"if (!{name}) {{ Py_INCREF(Py_None); {name} = Py_None; }}\n"
                f"if (py_{name} != {name}) {{\n"
                f"  Py_XDECREF(py_{name});\n  py_{name} = {name};\n  Py_INCREF(py_{name});\n}}\n")

    def c_is_simple(self) -> bool:
        return False

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)
