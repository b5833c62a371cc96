"""C for Sort, Argsort and SearchSorted: NumPy's own sorting and searching, called
through its C API (``PyArray_Sort`` / ``PyArray_ArgSort`` with ``NPY_STABLESORT``,
``PyArray_SearchSorted``), so the results equal `perform`'s to the bit and ties keep
their order; what the C saves is the Python call per node.

Sort copies its input into the output (the previous call's buffer when it is a
contiguous writeable array of the same shape) and sorts it in place. TopK and Unique
have their C in selection.py, Bincount and Nonzero in counting.py.
"""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.buffers import copy_to_output
from workbench.core.link.c.ops.shape import ViewCBase
from workbench.core.tensor.sort import Argsort, SearchSorted, Sort

__all__ = ["ArgsortC", "SearchSortedC", "SortC"]


def _as_int64(z: str, fail: str) -> str:
    """Make the intp result `z` int64 (a no-op where intp is int64, as on 64-bit Linux)."""
    return f"""
if (PyArray_TYPE({z}) != NPY_INT64) {{
  PyArrayObject *wide = (PyArrayObject *)PyArray_Cast({z}, NPY_INT64);
  Py_DECREF({z});
  {z} = wide;
  if (!{z}) {fail}
}}"""


@register_c_op(Sort)
class SortC(ViewCBase):
    """A stable ascending sort along the Op's axis (NaN last, as NumPy)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (z,) = inputs, outputs
        fail, nd = sub["fail"], node.inputs[0].type.ndim
        return f"""
{{
{copy_to_output(z, x, nd, fail)}
  if (PyArray_Sort({z}, {self.op.axis}, NPY_STABLESORT) < 0) {fail}
}}"""

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)


@register_c_op(Argsort)
class ArgsortC(ViewCBase):
    """The int64 positions of a stable ascending sort along the Op's axis."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (z,) = inputs, outputs
        fail = sub["fail"]
        return f"""
Py_XDECREF({z});
{z} = (PyArrayObject *)PyArray_ArgSort({x}, {self.op.axis}, NPY_STABLESORT);
if (!{z}) {fail}
{_as_int64(z, fail)}"""

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)


@register_c_op(SearchSorted)
class SearchSortedC(ViewCBase):
    """numpy.searchsorted of the values in the sorted vector (NumPy converts both to
    their common dtype)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (a, v), (z,) = inputs, outputs
        fail = sub["fail"]
        side = "NPY_SEARCHRIGHT" if self.op.side == "right" else "NPY_SEARCHLEFT"
        not_array = c_string_literal("searchsorted: NumPy returned a non-array")
        return f"""
{{
  PyObject *found = PyArray_SearchSorted({a}, (PyObject *){v}, {side}, NULL);
  if (!found) {fail}
  if (!PyArray_Check(found)) {{
    Py_DECREF(found);
    PyErr_SetString(PyExc_TypeError, {not_array});
    {fail}
  }}
  Py_XDECREF({z});
  {z} = (PyArrayObject *)found;
}}
{_as_int64(z, fail)}"""

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)
