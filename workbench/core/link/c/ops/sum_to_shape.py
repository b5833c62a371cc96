"""C for SumToShape (the gradient of run-time broadcasting): the gradient passes through
as a view when no dimension needs summing, the usual case; otherwise NumPy's own
reduction runs from C (keepdims, the gradient's dtype), as `perform` does, without a
Python frame."""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.interface import COpAdapter, register_c_op
from workbench.core.tensor.elemwise import SumToShape


@register_c_op(SumToShape)
class SumToShapeC(COpAdapter):
    def c_code_cache_version(self) -> tuple[int, ...]:
        return (2,)

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        g, lengths, (out,) = inputs[0], inputs[1:], outputs
        fail = sub["fail"]
        nd = len(lengths)
        label = sub["label"]
        reads = "\n".join(f"  want[{d}] = (npy_intp)*(dtype_{n}*)PyArray_DATA({n});"
                          for d, n in enumerate(lengths))
        return f"""
{{
  npy_intp want[{max(nd, 1)}];
  PyObject *axes = NULL, *kwargs = NULL, *method = NULL, *summed = NULL, *empty = NULL;
{reads}
  const npy_intp *have = PyArray_DIMS({g});
  int n_axes = 0;
  for (int d = 0; d < {nd}; d++) if (want[d] == 1 && have[d] != 1) n_axes++;
  if (n_axes == 0) {{
    Py_XDECREF({out}); {out} = {g}; Py_INCREF({out});
  }} else {{
    axes = PyTuple_New(n_axes);
    if (!axes) {fail}
    for (int d = 0, k = 0; d < {nd}; d++)
      if (want[d] == 1 && have[d] != 1) PyTuple_SET_ITEM(axes, k++, PyLong_FromLong(d));
    kwargs = Py_BuildValue("{{s:O,s:O,s:O}}", "axis", axes, "keepdims", Py_True,
                           "dtype", (PyObject*)PyArray_DESCR({g}));
    method = PyObject_GetAttrString((PyObject*){g}, "sum");
    empty = PyTuple_New(0);
    if (kwargs && method && empty) summed = PyObject_Call(method, empty, kwargs);
    Py_XDECREF(axes); Py_XDECREF(kwargs); Py_XDECREF(method); Py_XDECREF(empty);
    if (!summed) {fail}
    if (!PyArray_Check(summed)) {{
      Py_DECREF(summed);
      PyErr_Format(PyExc_TypeError, "%s: sum did not return an array", {label});
      {fail}
    }}
    Py_XDECREF({out}); {out} = (PyArrayObject*)summed;
  }}
  for (int d = 0; d < {nd}; d++) if (PyArray_DIMS({out})[d] != want[d]) {{
    PyErr_Format(PyExc_ValueError, "SumToShape: a gradient with length %ld in dimension "
                 "%d cannot be summed to length %ld", (long)have[d], d, (long)want[d]);
    {fail}
  }}
}}"""
