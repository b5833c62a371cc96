"""C for Join (numpy.concatenate): each input copied into its slab of one output.

The output is C-ordered (the previous call's buffer when it has the shape,
buffers.py); each
input is copied by a strided loop (`wbc_copy`) that merges the innermost dimensions
both sides store contiguously into one `memcpy`, so C-ordered inputs along axis 0 are
one `memcpy` each and transposed or sliced inputs an element loop. An input of
another dtype than the output's is cast first (NumPy's cast, as `perform`).
"""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.buffers import alloc_output
from workbench.core.link.c.ops.shape import ViewCBase
from workbench.core.link.c.types import type_num
from workbench.core.tensor.join import Join

__all__ = ["COPY_SUPPORT", "JoinC"]

#: A strided block copy, shared with the advanced indexing C (advanced_subtensor.py).
COPY_SUPPORT = r"""
#ifndef WB_COPY_SUPPORT
#define WB_COPY_SUPPORT
#include <string.h>
/* Copies the nd-dimensional block `dims` of items of `size` bytes from `src` (byte
   strides `ss`) to `dst` (byte strides `ds`). The innermost dimensions contiguous on
   both sides are merged into one memcpy; otherwise the innermost loop copies items. */
static void wbc_copy(char *dst, const npy_intp *ds, const char *src, const npy_intp *ss,
                     const npy_intp *dims, int nd, npy_intp size) {
  for (int d = 0; d < nd; d++) if (dims[d] == 0) return;
  int inner = nd;
  npy_intp run = size;
  while (inner > 0 && (dims[inner - 1] == 1 ||
                       (ds[inner - 1] == run && ss[inner - 1] == run))) {
    run *= dims[inner - 1];
    inner--;
  }
  /* the unit: a memcpy of `run` bytes (inner < nd or nd == 0), else a strided row */
  const int rowwise = inner == nd && nd > 0;
  const int outer = rowwise ? nd - 1 : inner;
  const npy_intp n = rowwise ? dims[nd - 1] : 1;
  const npy_intp sd = rowwise ? ds[nd - 1] : 0, sr = rowwise ? ss[nd - 1] : 0;
  npy_intp idx[NPY_MAXDIMS];
  for (int d = 0; d < outer; d++) idx[d] = 0;
  for (;;) {
    char *po = dst;
    const char *pi = src;
    for (int d = 0; d < outer; d++) { po += idx[d] * ds[d]; pi += idx[d] * ss[d]; }
    if (!rowwise) memcpy(po, pi, run);
    else switch (size) {
      case 1: for (npy_intp i = 0; i < n; i++) po[i * sd] = pi[i * sr]; break;
      case 2: for (npy_intp i = 0; i < n; i++) memcpy(po + i * sd, pi + i * sr, 2); break;
      case 4: for (npy_intp i = 0; i < n; i++) memcpy(po + i * sd, pi + i * sr, 4); break;
      case 8: for (npy_intp i = 0; i < n; i++) memcpy(po + i * sd, pi + i * sr, 8); break;
      case 16: for (npy_intp i = 0; i < n; i++) memcpy(po + i * sd, pi + i * sr, 16); break;
      default: for (npy_intp i = 0; i < n; i++) memcpy(po + i * sd, pi + i * sr, size);
    }
    int d = outer - 1;
    while (d >= 0) { if (++idx[d] < dims[d]) break; idx[d] = 0; d--; }
    if (d < 0) break;
  }
}
#endif
"""


@register_c_op(Join)
class JoinC(ViewCBase):
    """numpy.concatenate along the Op's axis, any number of inputs, any strides."""

    def c_support_code(self) -> str:
        return super().c_support_code() + COPY_SUPPORT

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (z,) = outputs
        fail, label = sub["fail"], sub["label"]
        out_type = node.outputs[0].type
        nd = out_type.ndim
        axis = self.op.axis % nd
        num = type_num(out_type.dtype)
        mismatch = c_string_literal(
            "%s: all the input array dimensions except for the concatenation axis must "
            "match exactly, but along dimension %d, the array at index 0 has size %ld and "
            "the array at index %d has size %ld")
        first = inputs[0]
        code = [f"npy_intp dims[{nd}];",
                f"for (int d = 0; d < {nd}; d++) dims[d] = PyArray_DIMS({first})[d];",
                f"dims[{axis}] = 0;"]
        for k, x in enumerate(inputs):
            code.append(f"""for (int d = 0; d < {nd}; d++) {{
  if (d != {axis} && PyArray_DIMS({x})[d] != dims[d]) {{
    PyErr_Format(PyExc_ValueError, {mismatch}, {label}, d, (long)dims[d], {k},
                 (long)PyArray_DIMS({x})[d]);
    {fail}
  }}
}}
dims[{axis}] += PyArray_DIMS({x})[{axis}];""")
        code.append(alloc_output(z, str(nd), "dims", str(out_type.dtype), fail))
        code.append(f"char *slab = PyArray_BYTES({z});")
        code.append(f"const npy_intp step = PyArray_STRIDES({z})[{axis}];")
        for x, var in zip(inputs, node.inputs):
            cast = var.type.dtype != out_type.dtype
            src = "cast" if cast else x
            code.append("{")
            if cast:
                code.append(f"""  PyArrayObject *cast = (PyArrayObject *)PyArray_Cast({x}, {num});
  if (!cast) {fail}""")
            code.append(f"""  wbc_copy(slab, PyArray_STRIDES({z}), PyArray_BYTES({src}),
           PyArray_STRIDES({src}), PyArray_DIMS({src}), {nd}, PyArray_ITEMSIZE({z}));
  slab += PyArray_DIMS({src})[{axis}] * step;""")
            if cast:
                code.append("  Py_DECREF(cast);")
            code.append("}")
        return "\n".join(code)

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (2,)
