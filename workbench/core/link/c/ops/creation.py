"""C for the creation Ops: Alloc (a value broadcast into a fresh array), ARange and Eye.

Outputs are C-contiguous writeable arrays (the previous call's buffer when it has the
requested shape: the runtime only offers a buffer nobody else holds). Alloc stores a
single-element value with a flat loop the compiler vectorises and broadcasts a larger
value with NumPy's `PyArray_CopyInto`. ARange computes its values exactly as
numpy.arange does (the first two elements converted to the dtype, then
``first + i * (second - first)`` in the dtype's arithmetic), so results are equal to
the last bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.buffers import alloc_output
from workbench.core.link.c.ops.shape import ViewCBase
from workbench.core.link.c.types import c_type_name, type_num
from workbench.core.tensor.creation import NEGATIVE_DIMENSIONS, Alloc, ARange, Eye

__all__ = ["ARangeC", "AllocC", "EyeC"]


@register_c_op(Alloc)
class AllocC(ViewCBase):
    """Alloc: negative lengths raise numpy's ValueError; a value that does not broadcast
    to the shape raises numpy's "could not broadcast" ValueError."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        value, *lengths = inputs
        (z,) = outputs
        fail = sub["fail"]
        nd = len(lengths)
        ndl = max(nd, 1)
        v_nd = node.inputs[0].type.ndim
        dtype = str(node.outputs[0].type.dtype)
        ctype = c_type_name(dtype)
        tn = type_num(dtype)
        negative = c_string_literal(NEGATIVE_DIMENSIONS)
        mismatch = c_string_literal("could not broadcast input array from shape %s into shape %s")
        code = [f"npy_intp dims[{ndl}];"]
        for k, n in enumerate(lengths):
            code.append(f"dims[{k}] = (npy_intp)*(const dtype_{n} *)PyArray_DATA({n});")
        code.append(f"""
for (int k = 0; k < {nd}; k++)
  if (dims[k] < 0) {{ PyErr_SetString(PyExc_ValueError, {negative}); {fail} }}
{{
  int ok = 1;
  for (int k = 0; k < {v_nd}; k++) {{
    const npy_intp have = PyArray_DIMS({value})[k];
    if (have != 1 && have != dims[k + {nd - v_nd}]) ok = 0;
  }}
  if (!ok) {{
    char a[512], b[512];
    PyErr_Format(PyExc_ValueError, {mismatch},
                 wbv_shape_text(a, sizeof(a), PyArray_DIMS({value}), {v_nd}, 1),
                 wbv_shape_text(b, sizeof(b), dims, {nd}, 1));
    {fail}
  }}
}}
{{
  int reuse = {z} != NULL && PyArray_ISWRITEABLE({z}) && PyArray_IS_C_CONTIGUOUS({z});
  for (int k = 0; reuse && k < {nd}; k++) reuse = PyArray_DIMS({z})[k] == dims[k];
  if (!reuse) {{
    Py_XDECREF({z});
    {z} = (PyArrayObject *)PyArray_EMPTY({nd}, dims, {tn}, 0);
    if (!{z}) {fail}
  }}
}}
const npy_intp size = PyArray_SIZE({z});
if (size > 0) {{
  if (PyArray_SIZE({value}) == 1) {{
    const {ctype} v = *(const {ctype} *)PyArray_DATA({value});
    {ctype} *restrict out = ({ctype} *)PyArray_DATA({z});
    #pragma omp simd
    for (npy_intp i = 0; i < size; i++) out[i] = v;
  }} else if (PyArray_CopyInto({z}, {value}) < 0) {fail}
}}""")
        return "\n".join(code)


@register_c_op(ARange)
class ARangeC(ViewCBase):
    """ARange with numpy.arange's length, conversions and fill arithmetic (integer
    results wrap around as numpy's do; a first or second value that does not fit an
    integer dtype raises numpy's OverflowError)."""

    def c_supports(self, node: Any) -> bool:
        # uint64 inputs beyond int64 would need Python's big integers: perform
        return super().c_supports(node) and not any(
            str(v.type.dtype) == "uint64" for v in node.inputs)

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        start, stop, step = inputs
        (z,) = outputs
        fail = sub["fail"]
        dtype = str(node.outputs[0].type.dtype)
        ctype = c_type_name(dtype)
        all_int = all(v.type.dtype.is_int for v in node.inputs)
        # Python's arithmetic on the .item() values: exact integers, or doubles as soon
        # as one of them is a float
        num = "npy_int64" if all_int else "double"
        check_first = check_next = ""
        if np.dtype(dtype).kind in "iu":
            # numpy converts the first two values to Python ints (floats truncated) and
            # refuses those outside the dtype
            info = np.iinfo(dtype)
            lo, hi = int(info.min), int(info.max)
            if all_int:
                fmt, conv = "%lld", "(long long){v}"
            else:
                fmt, conv = "%.0f", "trunc({v})"
            bounds = c_string_literal(f"Python integer {fmt} out of bounds for {dtype}")

            def check(v: str) -> str:
                value = conv.format(v=v)
                tests = []
                if not all_int or lo > -(2**63):
                    tests.append(f"{value} < {lo}.0" if not all_int else f"{v} < {lo}LL")
                if not all_int or hi < 2**63 - 1:
                    tests.append(f"{value} > {hi}.0" if not all_int else f"{v} > {hi}LL")
                if not tests:
                    return ""
                return (f"if ({' || '.join(tests)}) {{ PyErr_Format(PyExc_OverflowError, "
                        f"{bounds}, {value}); {fail} }}")

            check_first, check_next = check("a"), check("next")
        return f"""
typedef {ctype} dtype_v;
const {num} a = ({num})*(const dtype_{start} *)PyArray_DATA({start});
const {num} b = ({num})*(const dtype_{stop} *)PyArray_DATA({stop});
const {num} c = ({num})*(const dtype_{step} *)PyArray_DATA({step});
if (c == 0) {{
  PyErr_SetString(PyExc_ZeroDivisionError, "arange: the step is 0 (division by zero)");
  {fail}
}}
const double span = (double)(b - a) / (double)c;
const double up = ceil(span);
if (isnan(up)) {{ PyErr_SetString(PyExc_ValueError, "arange: cannot compute length"); {fail} }}
if (up > (double)NPY_MAX_INTP) {{
  PyErr_SetString(PyExc_OverflowError, "arange: overflow while computing length"); {fail}
}}
npy_intp len = up > 0 ? (npy_intp)up : 0;
{alloc_output(z, "1", "(&len)", dtype, fail)}
if (len > 0) {{
  {check_first}
  dtype_v *restrict out = (dtype_v *)PyArray_DATA({z});
  out[0] = (dtype_v)a;
  if (len > 1) {{
    const {num} next = a + c;
    {check_next}
    out[1] = (dtype_v)next;
    const dtype_v first = out[0];
    dtype_v delta = out[1];
    delta -= first;
    for (npy_intp i = 2; i < len; i++) out[i] = first + i * delta;
  }}
}}"""


@register_c_op(Eye)
class EyeC(ViewCBase):
    """Eye: zeros with ones on the k-th diagonal; negative lengths raise numpy's
    ValueError."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        n, m, k = inputs
        (z,) = outputs
        fail = sub["fail"]
        dtype = str(node.outputs[0].type.dtype)
        ctype = c_type_name(dtype)
        if dtype.startswith("complex"):  # the real part of a zeroed complex
            part = "npy_float32" if dtype == "complex64" else "npy_float64"
            set_one = f"*({part} *)&out[i * cols + i + off] = 1;"
        else:
            set_one = f"out[i * cols + i + off] = ({ctype})1;"
        negative = c_string_literal(NEGATIVE_DIMENSIONS)
        return f"""
npy_intp dims[2];
dims[0] = (npy_intp)*(const npy_int64 *)PyArray_DATA({n});
dims[1] = (npy_intp)*(const npy_int64 *)PyArray_DATA({m});
const npy_intp off = (npy_intp)*(const npy_int64 *)PyArray_DATA({k});
if (dims[0] < 0 || dims[1] < 0) {{ PyErr_SetString(PyExc_ValueError, {negative}); {fail} }}
{alloc_output(z, "2", "dims", dtype, fail)}
const npy_intp rows = dims[0], cols = dims[1];
if (rows > 0 && cols > 0) {{
  {ctype} *out = ({ctype} *)PyArray_DATA({z});
  memset(out, 0, (size_t)rows * (size_t)cols * sizeof({ctype}));
  /* row i holds its one at column i + off when 0 <= i + off < cols; a diagonal
     outside the matrix has none (tested first: -off and cols - off overflow for
     offsets near the int64 limits) */
  npy_intp lo = 0, hi = 0;
  if (off > -rows && off < cols) {{
    lo = off < 0 ? -off : 0;
    hi = cols - off < rows ? cols - off : rows;
  }}
  for (npy_intp i = lo; i < hi; i++) {set_one}
}}"""

    def c_headers(self) -> list[str]:
        return [*super().c_headers(), "<string.h>"]
