"""C for Bincount and Nonzero. Bincount is a counting loop over the (possibly strided)
integer vector: one pass for the largest value (a negative one or one too large to
count refused as in `perform`), one to count, adding the weights in float64 when there
are some. Nonzero calls NumPy's ``PyArray_Nonzero``. Unique and TopK have theirs in
selection.py.
"""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.shape import ViewCBase
from workbench.core.tensor.counting import (
    BINCOUNT_LARGEST,
    BINCOUNT_NEGATIVE,
    BINCOUNT_TOO_LARGE,
    Bincount,
    Nonzero,
)

__all__ = ["BincountC", "NonzeroC"]


@register_c_op(Bincount)
class BincountC(ViewCBase):
    """Counts (int64) or summed weights (float64) of the values 0..N-1."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        x, *weights = inputs
        (z,) = outputs
        fail = sub["fail"]
        negative = c_string_literal(BINCOUNT_NEGATIVE.format("%lld"))
        too_large = c_string_literal(BINCOUNT_TOO_LARGE.format("%llu"))
        lengths = c_string_literal("bincount: weights and x must have the same length, got "
                                   "%ld and %ld")
        weighted = bool(weights)
        out_num, out_c = ("NPY_FLOAT64", "double") if weighted else ("NPY_INT64", "npy_int64")
        add = "1"
        check = ""
        if weighted:
            (w,) = weights
            add = f"(double)*(const dtype_{w} *)(PyArray_BYTES({w}) + i * PyArray_STRIDE({w}, 0))"
            check = f"""
if (PyArray_DIM({w}, 0) != n) {{
  PyErr_Format(PyExc_ValueError, {lengths}, (long)PyArray_DIM({w}, 0), (long)n);
  {fail}
}}"""
        return f"""
{{
  const npy_intp n = PyArray_DIM({x}, 0), sx = PyArray_STRIDE({x}, 0);
  const char *xs = PyArray_BYTES({x});
  {check}
  long long top = -1;
  for (npy_intp i = 0; i < n; i++) {{
    const dtype_{x} raw = *(const dtype_{x} *)(xs + i * sx);
    if (raw < 0) {{ PyErr_Format(PyExc_ValueError, {negative}, (long long)raw); {fail} }}
    if ((npy_uint64)raw > (npy_uint64){BINCOUNT_LARGEST}LL) {{
      PyErr_Format(PyExc_ValueError, {too_large}, (unsigned long long)raw); {fail}
    }}
    const long long v = (long long)raw;
    if (v > top) top = v;
  }}
  npy_intp length = (npy_intp)(top + 1);
  if (length < {self.op.minlength}) length = {self.op.minlength};
  Py_XDECREF({z});
  {z} = (PyArrayObject *)PyArray_ZEROS(1, &length, {out_num}, 0);
  if (!{z}) {fail}
  {out_c} *counts = ({out_c} *)PyArray_DATA({z});
  for (npy_intp i = 0; i < n; i++)
    counts[(npy_intp)*(const dtype_{x} *)(xs + i * sx)] += {add};
}}"""

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (2,)


@register_c_op(Nonzero)
class NonzeroC(ViewCBase):
    """One int64 vector of positions per dimension, from NumPy's PyArray_Nonzero."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,) = inputs
        fail = sub["fail"]
        code = [f"PyObject *found = PyArray_Nonzero({x});", f"if (!found) {fail}"]
        for k, z in enumerate(outputs):
            code.append(f"""
{{
  PyArrayObject *pos = (PyArrayObject *)PyTuple_GET_ITEM(found, {k});
  Py_XDECREF({z});
  {z} = (PyArrayObject *)PyArray_Cast(pos, NPY_INT64);
  if (!{z}) {{ Py_DECREF(found); {fail} }}
}}""")
        code.append("Py_DECREF(found);")
        return "{\n" + "\n".join(code) + "\n}"

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)
