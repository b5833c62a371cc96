"""C snippets that give a node its output array through NumPy's C API, reusing the
previous call's buffer when it fits (the runtime hands a node its previous output
only when nothing else holds it): `alloc_output` (an uninitialised C-contiguous
array of a shape) and `copy_to_output` (a C-contiguous copy of an input, to be
modified in place: sorted, written into)."""

from __future__ import annotations

from workbench.core.link.c.types import type_num

__all__ = ["alloc_output", "copy_to_output"]


def alloc_output(out: str, nd_expr: str, shape_expr: str, dtype: str, fail: str) -> str:
    """C that keeps the previous output `out` when it is a writeable C-contiguous array of
    shape `shape_expr` (length `nd_expr`) and of `dtype`, else allocates a fresh one."""
    return f"""{{
  int wb_reuse = {out} != NULL && PyArray_ISWRITEABLE({out}) && PyArray_IS_C_CONTIGUOUS({out})
                 && PyArray_NDIM({out}) == ({nd_expr}) && PyArray_TYPE({out}) == {type_num(dtype)};
  for (int d = 0; wb_reuse && d < ({nd_expr}); d++)
    wb_reuse = PyArray_DIMS({out})[d] == ({shape_expr})[d];
  if (!wb_reuse) {{
    Py_XDECREF({out});
    {out} = (PyArrayObject*)PyArray_EMPTY(({nd_expr}), ({shape_expr}), {type_num(dtype)}, 0);
    if (!{out}) {fail}
  }}
}}"""


def copy_to_output(out: str, x: str, nd: int, fail: str) -> str:
    """C making `out` a writeable C-contiguous copy of the array `x` (`nd` dimensions):
    the previous output's buffer when it is one of the same shape and type (and not
    `x` itself), else ``PyArray_NewCopy``."""
    return f"""{{
  int wb_reuse = {out} != NULL && {out} != {x} && PyArray_ISWRITEABLE({out})
                 && PyArray_IS_C_CONTIGUOUS({out}) && PyArray_TYPE({out}) == PyArray_TYPE({x});
  for (int d = 0; wb_reuse && d < {nd}; d++)
    wb_reuse = PyArray_DIMS({out})[d] == PyArray_DIMS({x})[d];
  if (wb_reuse) {{
    if (PyArray_CopyInto({out}, {x}) < 0) {fail}
  }} else {{
    Py_XDECREF({out});
    {out} = (PyArrayObject *)PyArray_NewCopy({x}, NPY_CORDER);
    if (!{out}) {fail}
  }}
}}"""
