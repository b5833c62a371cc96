"""C for basic indexing: Subtensor (a view) and IncSubtensor (set/increment a region).

The index is compiled from the Op's `idx_list`: constant ints and slice parts are
literals, `SYMBOLIC` parts are read from the node's integer 0-d inputs. Slices follow
Python's `slice.indices` (clamping, negative steps); an integer index out of range
raises numpy's IndexError text naming the Op and where the index came from.

IncSubtensor writes into its input when `inplace` (its `destroy_map`; a read-only or
misaligned input is copied instead), otherwise into a fresh C-ordered copy (the
previous output's buffer when it fits). The value is broadcast into the region by a
strided loop; a value overlapping the region in memory is copied first.
"""

from __future__ import annotations

import functools
from typing import Any

from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.buffers import copy_to_output
from workbench.core.link.c.ops.shape import ViewCBase
from workbench.core.link.c.types import c_type_name
from workbench.core.tensor.subtensor import SYMBOLIC, IncSubtensor, SliceEntry, Subtensor

__all__ = ["IncSubtensorC", "SUBTENSOR_SUPPORT", "SubtensorC", "element_update", "index_code",
           "inner_update_loop"]

#: Slice arithmetic (Python's slice.indices) and index reading.
SUBTENSOR_SUPPORT = r"""
#ifndef WB_SUBTENSOR_SUPPORT
#define WB_SUBTENSOR_SUPPORT
/* Python's slice.indices for an axis of length n: first index and length. */
static inline void wbs_slice(npy_intp n, int has_start, npy_intp start, int has_stop,
                             npy_intp stop, npy_intp step, npy_intp *first, npy_intp *len) {
  const npy_intp lower = step < 0 ? -1 : 0, upper = step < 0 ? n - 1 : n;
  if (!has_start) start = step < 0 ? upper : lower;
  else {
    if (start < 0) { start += n; if (start < lower) start = lower; }
    else if (start > upper) start = upper;
  }
  if (!has_stop) stop = step < 0 ? lower : upper;
  else {
    if (stop < 0) { stop += n; if (stop < lower) stop = lower; }
    else if (stop > upper) stop = upper;
  }
  *first = start;
  if (step < 0) *len = stop < start ? (start - stop - 1) / (-step) + 1 : 0;
  else *len = start < stop ? (stop - start - 1) / step + 1 : 0;
}
/* An integer 0-d array's value as npy_intp (huge unsigned values saturate). */
#define WBS_INDEX(arr, T) wbs_clamp_##T(*(const T *)PyArray_DATA(arr))
static inline npy_intp wbs_clamp_npy_int8(npy_int8 v) { return v; }
static inline npy_intp wbs_clamp_npy_int16(npy_int16 v) { return v; }
static inline npy_intp wbs_clamp_npy_int32(npy_int32 v) { return v; }
static inline npy_intp wbs_clamp_npy_int64(npy_int64 v) {
  return v > NPY_MAX_INTP ? NPY_MAX_INTP : v < NPY_MIN_INTP ? NPY_MIN_INTP : (npy_intp)v; }
static inline npy_intp wbs_clamp_npy_uint8(npy_uint8 v) { return v; }
static inline npy_intp wbs_clamp_npy_uint16(npy_uint16 v) { return v; }
static inline npy_intp wbs_clamp_npy_uint32(npy_uint32 v) { return (npy_intp)v; }
static inline npy_intp wbs_clamp_npy_uint64(npy_uint64 v) {
  return v > (npy_uint64)NPY_MAX_INTP ? NPY_MAX_INTP : (npy_intp)v; }
/* The byte range [lo, hi) an array's elements occupy. */
static inline void wbs_extent(PyArrayObject *a, char **lo, char **hi) {
  char *l = PyArray_BYTES(a), *h = PyArray_BYTES(a);
  for (int d = 0; d < PyArray_NDIM(a); d++) {
    const npy_intp n = PyArray_DIMS(a)[d], s = PyArray_STRIDES(a)[d];
    if (n == 0) { *lo = *hi = PyArray_BYTES(a); return; }
    if (s < 0) l += (n - 1) * s; else h += (n - 1) * s;
  }
  *lo = l; *hi = h + PyArray_ITEMSIZE(a);
}
#endif
"""


def index_code(op: Any, node: Any, x: str, index_inputs: list[str], index_vars: list[Any],
               label: str, fail: str, input_offset: int) -> str:
    """C computing the region `x[idx]`: `npy_intp dims[], strides[]` (of the region),
    `char *data` (its first element) and `int nd_out`.

    `index_inputs`/`index_vars` are the C names and Variables of the SYMBOLIC parts in
    order; `input_offset` is the node input position of the first one (for messages).
    """
    x_nd = node.inputs[0].type.ndim
    ndl = max(x_nd, 1)
    code = [f"npy_intp dims[{ndl}], strides[{ndl}];", f"char *data = PyArray_BYTES({x});",
            "int nd_out = 0;"]
    symbolic = iter(zip(index_inputs, index_vars, range(input_offset, 10**9)))

    def value(part: Any) -> tuple[str, str]:
        """(has, value) C expressions of one slice part."""
        if part is None:
            return "0", "0"
        if part is SYMBOLIC:
            cname, var, _ = next(symbolic)
            return "1", f"WBS_INDEX({cname}, {c_type_name(var.type.dtype)})"
        return "1", f"((npy_intp){int(part)}LL)"

    for axis, entry in enumerate(op.idx_list):
        if isinstance(entry, SliceEntry):
            has_start, start = value(entry.start)
            has_stop, stop = value(entry.stop)
            if entry.step is SYMBOLIC:
                cname, var, _ = next(symbolic)
                code.append(f"""{{
  const npy_intp step_in = WBS_INDEX({cname}, {c_type_name(var.type.dtype)});
  if (step_in == 0) {{ PyErr_SetString(PyExc_ValueError, "slice step cannot be zero"); {fail} }}
  const npy_intp step = step_in < -NPY_MAX_INTP ? -NPY_MAX_INTP : step_in; /* -step fits */""")
                step = "step"
            else:
                code.append("{")
                step = "1" if entry.step is None else f"((npy_intp){int(entry.step)}LL)"
            code.append(f"""  npy_intp first, len;
  const npy_intp n = PyArray_DIMS({x})[{axis}], s = PyArray_STRIDES({x})[{axis}];
  wbs_slice(n, {has_start}, {start}, {has_stop}, {stop}, {step}, &first, &len);
  if (len > 0) data += first * s;
  /* a step longer than the axis selects at most one element: its stride is never used
     (and s * step could overflow) */
  dims[nd_out] = len; strides[nd_out] = len > 1 ? s * {step} : s; nd_out++;
}}""")
        else:
            if entry is SYMBOLIC:
                cname, var, pos = next(symbolic)
                read = f"WBS_INDEX({cname}, {c_type_name(var.type.dtype)})"
                where = f" (%s: index input {pos})"
            else:
                read = f"((npy_intp){int(entry)}LL)"
                where = " (%s)"
            msg = c_string_literal(f"index %ld is out of bounds for axis {axis} with size "
                                   f"%ld{where}")
            code.append(f"""{{
  const npy_intp n = PyArray_DIMS({x})[{axis}];
  const npy_intp ival = {read};
  const npy_intp i = ival < 0 ? ival + n : ival;
  if (i < 0 || i >= n) {{
    PyErr_Format(PyExc_IndexError, {msg}, (long)ival, (long)n, {label}); {fail}
  }}
  data += i * PyArray_STRIDES({x})[{axis}];
}}""")
    for axis in range(len(op.idx_list), x_nd):
        code.append(f"dims[nd_out] = PyArray_DIMS({x})[{axis}]; "
                    f"strides[nd_out] = PyArray_STRIDES({x})[{axis}]; nd_out++;")
    return "\n".join(code)


class _IndexCBase(ViewCBase):
    def c_headers(self) -> list[str]:
        return [*super().c_headers(), "<string.h>"]

    def c_support_code(self) -> str:
        return super().c_support_code() + SUBTENSOR_SUPPORT


@register_c_op(Subtensor)
class SubtensorC(_IndexCBase):
    """Subtensor as a view of its input (as writeable as the input)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        x, *idx = inputs
        (z,) = outputs
        fail = sub["fail"]
        code = [index_code(self.op, node, x, idx, node.inputs[1:], sub["label"],
                           fail, 1)]
        code.append(f"""Py_XDECREF({z});
{z} = wbv_view({x}, nd_out, dims, strides, data, PyArray_ISWRITEABLE({x}));
if (!{z}) {fail}""")
        return "\n".join(code)


def element_update(dtype: str, set_instead_of_inc: bool, dst: str, src: str) -> str:
    """C statement writing (or adding) the element `src` into the element `dst` (both
    lvalues of the dtype's C type), with numpy's arithmetic."""
    ctype = c_type_name(dtype)
    if set_instead_of_inc:
        return f"{dst} = {src};"
    if dtype == "bool":  # numpy adds booleans with logical or
        return f"{dst} = {dst} || {src};"
    if dtype.startswith("complex"):
        part = "npy_float32" if dtype == "complex64" else "npy_float64"
        return (f"(({part} *)&{dst})[0] += ((const {part} *)&{src})[0]; "
                f"(({part} *)&{dst})[1] += ((const {part} *)&{src})[1];")
    if dtype.startswith("int"):  # wrap around as numpy does, without signed overflow
        unsigned = ctype.replace("npy_int", "npy_uint")
        return f"{dst} = ({ctype})(({unsigned}){dst} + ({unsigned}){src});"
    return f"{dst} += {src};"


def inner_update_loop(dtype: str, set_instead_of_inc: bool) -> str:
    """The innermost loop of the write: typed (vectorisable) when the region row is
    contiguous and the value row contiguous or broadcast, strided otherwise."""
    t = c_type_name(dtype)
    update = functools.partial(element_update, dtype, set_instead_of_inc)
    copy_row = ("memcpy(po, py, n_in * sizeof(" + t + "));" if set_instead_of_inc else
                "for (npy_intp i = 0; i < n_in; i++) { " + update("w[i]", "r[i]") + " }")
    return f"""
    if (so == (npy_intp)sizeof({t}) && sy == (npy_intp)sizeof({t})) {{
      {t} *restrict w = ({t} *)po;
      const {t} *restrict r = (const {t} *)py;
      (void)w; (void)r;
      {copy_row}
    }} else if (so == (npy_intp)sizeof({t}) && sy == 0) {{
      {t} *restrict w = ({t} *)po;
      const {t} v = *(const {t} *)py;
      for (npy_intp i = 0; i < n_in; i++) {{ {update("w[i]", "v")} }}
    }} else {{
      for (npy_intp i = 0; i < n_in; i++, po += so, py += sy) {{
        {update(f"*({t} *)po", f"*(const {t} *)py")}
      }}
    }}"""


@register_c_op(IncSubtensor)
class IncSubtensorC(_IndexCBase):
    """set_subtensor / inc_subtensor with basic indices; in place when the Op says so."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        x, y, *idx = inputs
        (z,) = outputs
        fail, label = sub["fail"], sub["label"]
        op = self.op
        nd = node.inputs[0].type.ndim
        y_nd = node.inputs[1].type.ndim
        ndl = max(nd, 1)
        code = []
        if op.inplace:
            code.append(f"""
if (PyArray_ISWRITEABLE({x})) {{
  Py_XDECREF({z}); {z} = {x}; Py_INCREF({z});
}} else {{  /* read-only input (a constant, a broadcast view): work on a copy */
  Py_XDECREF({z});
  {z} = (PyArrayObject *)PyArray_NewCopy({x}, NPY_CORDER);
  if (!{z}) {fail}
}}""")
        else:
            code.append(copy_to_output(z, x, nd, fail))
        code.append(index_code(op, node, z, idx, node.inputs[2:], label, fail, 2))
        mismatch = c_string_literal("could not broadcast input array from shape %s into shape %s")
        code.append(f"""
npy_intp ystr[{ndl}];
{{
  int ok = 1;
  for (int d = 0; d < nd_out; d++) {{
    const int yd = d - (nd_out - {y_nd});
    if (yd < 0) {{ ystr[d] = 0; continue; }}
    const npy_intp yn = PyArray_DIMS({y})[yd];
    if (yn == dims[d]) ystr[d] = PyArray_STRIDES({y})[yd];
    else if (yn == 1) ystr[d] = 0;
    else ok = 0;
  }}
  if (!ok || {y_nd} > nd_out) {{
    char a[512], b[512];
    PyErr_Format(PyExc_ValueError, {mismatch},
                 wbv_shape_text(a, sizeof(a), PyArray_DIMS({y}), {y_nd}, 1),
                 wbv_shape_text(b, sizeof(b), dims, nd_out, 1));
    {fail}
  }}
}}
npy_intp size = 1;
for (int d = 0; d < nd_out; d++) size *= dims[d];
if (size > 0) {{
  PyArrayObject *ysrc = {y}, *ycopy = NULL;
  {{ /* a value sharing memory with the region is read from a copy */
    char *ylo, *yhi, *rlo = data, *rhi = data;
    wbs_extent({y}, &ylo, &yhi);
    for (int d = 0; d < nd_out; d++) {{
      if (strides[d] < 0) rlo += (dims[d] - 1) * strides[d];
      else rhi += (dims[d] - 1) * strides[d];
    }}
    rhi += PyArray_ITEMSIZE({z});
    if (ylo < rhi && rlo < yhi) {{
      ycopy = (PyArrayObject *)PyArray_NewCopy({y}, NPY_CORDER);
      if (!ycopy) {fail}
      ysrc = ycopy;
      for (int d = 0; d < nd_out; d++) {{
        const int yd = d - (nd_out - {y_nd});
        if (yd >= 0 && ystr[d] != 0) ystr[d] = PyArray_STRIDES(ycopy)[yd];
      }}
    }}
  }}
  char *ybase = PyArray_BYTES(ysrc);
  npy_intp idx[{ndl}];
  for (int d = 0; d < {ndl}; d++) idx[d] = 0;
  const int last = nd_out - 1;
  const npy_intp n_in = nd_out ? dims[last] : 1;
  const npy_intp so = nd_out ? strides[last] : 0, sy = nd_out ? ystr[last] : 0;
  for (;;) {{
    char *po = data, *py = ybase;
    for (int d = 0; d < last; d++) {{ po += idx[d] * strides[d]; py += idx[d] * ystr[d]; }}
{inner_update_loop(str(node.inputs[0].type.dtype), op.set_instead_of_inc)}
    int d = last - 1;
    while (d >= 0) {{ if (++idx[d] < dims[d]) break; idx[d] = 0; d--; }}
    if (d < 0) break;
  }}
  Py_XDECREF(ycopy);
}}""")
        return "\n".join(code)
