"""C for the shape and view Ops: DimShuffle, Reshape, BroadcastTo, SpecifyShape,
CheckAndRaise, Shape and Shape_i.

The view Ops build their output with `PyArray_NewFromDescr` over the input's data
(permuted, inserted or dropped strides) and make the input its base
(`PyArray_SetBaseObject`), so a view keeps the memory it reads alive. The runtime
only lets a node reuse a previous output whose reference count is 1, so an array
with a live view is never overwritten by a later call. A view is as writeable as
its input; BroadcastTo's (overlapping elements) is read-only, as numpy's.
"""

from __future__ import annotations

from typing import Any

from workbench.core.graph.basic import Apply, Constant
from workbench.core.link.c.cstring import c_string_literal
from workbench.core.link.c.interface import COpAdapter, register_c_op
from workbench.core.link.c.types import C_DTYPES, type_num
from workbench.core.tensor.elemwise import DimShuffle
from workbench.core.tensor.reshape import BroadcastTo, Reshape
from workbench.core.tensor.shape import CheckAndRaise, Shape, Shape_i, SpecifyShape
from workbench.core.tensor.type import TensorType

__all__ = ["BroadcastToC", "CheckAndRaiseC", "DimShuffleC", "ReshapeC", "ShapeC", "Shape_iC",
           "SpecifyShapeC", "VIEW_SUPPORT", "tensor_dtypes_have_c"]

#: C helpers shared by the view Ops (and the subtensor/creation modules).
VIEW_SUPPORT = r"""
#ifndef WB_VIEW_SUPPORT
#define WB_VIEW_SUPPORT
#include <stdio.h>
/* A new array over `data` (memory of `base`) whose base is `base` (kept alive). */
static PyArrayObject *wbv_view(PyArrayObject *base, int nd, npy_intp *dims,
                               npy_intp *strides, char *data, int writeable) {
  PyArray_Descr *descr = PyArray_DESCR(base);
  Py_INCREF(descr);
  PyArrayObject *v = (PyArrayObject *)PyArray_NewFromDescr(
      &PyArray_Type, descr, nd, dims, strides, data, writeable ? NPY_ARRAY_WRITEABLE : 0,
      NULL);
  if (!v) return NULL;
  Py_INCREF(base);
  if (PyArray_SetBaseObject(v, (PyObject *)base) < 0) { Py_DECREF(v); return NULL; }
  return v;
}
/* A shape as text. numpy style: "(2,3)", negative entries "newaxis"; Python style
   (a tuple's repr): "(2, 3)", negative entries "?". */
static const char *wbv_shape_text(char *buf, size_t size, const npy_intp *dims, int n,
                                  int numpy_style) {
  size_t at = 0;
  at += snprintf(buf + at, at < size ? size - at : 0, "(");
  for (int k = 0; k < n; k++) {
    const char *sep = k == 0 ? "" : (numpy_style ? "," : ", ");
    if (dims[k] < 0)
      at += snprintf(buf + at, at < size ? size - at : 0, "%s%s", sep,
                     numpy_style ? "newaxis" : "?");
    else
      at += snprintf(buf + at, at < size ? size - at : 0, "%s%ld", sep, (long)dims[k]);
  }
  snprintf(buf + at, at < size ? size - at : 0, n == 1 ? ",)" : ")");
  return buf;
}
#endif
"""


#: Whether compiled nodes may receive None input values (runtime.c passes them through);
#: SpecifyShape with unspecified lengths (NoneConst inputs) relies on it.
NONE_INPUTS_OK = True


def tensor_dtypes_have_c(node: Apply) -> bool:
    """Whether every tensor of `node` has a C element type (float16/bfloat16 do not)."""
    for var in [*node.inputs, *node.outputs]:
        if isinstance(var.type, TensorType) and str(var.type.dtype) not in C_DTYPES:
            return False
    return True


class ViewCBase(COpAdapter):
    """What the shape Ops share: NumPy headers, the view helpers, dtype support."""

    def c_supports(self, node: Apply) -> bool:
        return tensor_dtypes_have_c(node)

    def c_headers(self) -> list[str]:
        return ["<numpy/arrayobject.h>", "<stdio.h>"]

    def c_support_code(self) -> str:
        return VIEW_SUPPORT

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)


def _set_view(out: str, base: str, nd: int, dims: str, strides: str, data: str,
              writeable: str, fail: str) -> str:
    return (f"Py_XDECREF({out});\n"
            f"{out} = wbv_view({base}, {nd}, {dims}, {strides}, {data}, {writeable});\n"
            f"if (!{out}) {fail}\n")


@register_c_op(DimShuffle)
class DimShuffleC(ViewCBase):
    """DimShuffle as a view: output dimension k takes the length and stride of its input
    dimension, or length 1 for an inserted ('x') one; dropped dimensions must be 1."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (z,) = inputs, outputs
        fail, label = sub["fail"], sub["label"]
        order = self.op.new_order
        nd = len(order)
        ndl = max(nd, 1)
        code = [f"npy_intp dims[{ndl}], strides[{ndl}];"]
        for d in self.op.drop:
            msg = c_string_literal(f"%s: dimension {d} to drop has length %ld, not 1")
            code.append(f"if (PyArray_DIMS({x})[{d}] != 1) {{ PyErr_Format(PyExc_ValueError, "
                        f"{msg}, {label}, (long)PyArray_DIMS({x})[{d}]); {fail} }}")
        for k, d in enumerate(order):
            if d == "x":
                code.append(f"dims[{k}] = 1; strides[{k}] = 0;")
            else:
                code.append(f"dims[{k}] = PyArray_DIMS({x})[{d}]; "
                            f"strides[{k}] = PyArray_STRIDES({x})[{d}];")
        code.append(_set_view(z, x, nd, "dims", "strides", f"PyArray_BYTES({x})",
                              f"PyArray_ISWRITEABLE({x})", fail))
        return "\n".join(code)


@register_c_op(Reshape)
class ReshapeC(ViewCBase):
    """Reshape with numpy's rules: one negative entry is inferred from the size; a view
    of a C-contiguous input (C strides), else `PyArray_Newshape` (a view when the
    strides allow one, a copy otherwise, exactly as numpy.reshape)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x, shp), (z,) = inputs, outputs
        fail, label = sub["fail"], sub["label"]
        nd = self.op.ndim
        ndl = max(nd, 1)
        bad_len = c_string_literal(f"%s: expected a shape of length {nd}, got %ld entries")
        two_unknown = c_string_literal("can only specify one unknown dimension")
        cannot = c_string_literal("cannot reshape array of size %ld into shape %s")
        return f"""
npy_intp dims[{ndl}];
if (PyArray_DIMS({shp})[0] != {nd}) {{
  PyErr_Format(PyExc_ValueError, {bad_len}, {label}, (long)PyArray_DIMS({shp})[0]); {fail}
}}
int unknown = -1;
npy_intp known = 1;
const npy_intp size = PyArray_SIZE({x});
for (int k = 0; k < {nd}; k++) {{
  dims[k] = (npy_intp)*(const npy_int64 *)(PyArray_BYTES({shp}) + k * PyArray_STRIDES({shp})[0]);
  if (dims[k] < 0) {{
    if (unknown >= 0) {{ PyErr_SetString(PyExc_ValueError, {two_unknown}); {fail} }}
    unknown = k;
  }} else {{
    known *= dims[k];
  }}
}}
if (unknown >= 0 ? (known == 0 || size % known != 0) : known != size) {{
  char text[512];
  PyErr_Format(PyExc_ValueError, {cannot}, (long)size,
               wbv_shape_text(text, sizeof(text), dims, {nd}, 1));
  {fail}
}}
if (unknown >= 0) dims[unknown] = size / known;
Py_XDECREF({z}); {z} = NULL;
if (PyArray_IS_C_CONTIGUOUS({x})) {{
  npy_intp strides[{ndl}];
  npy_intp step = PyArray_ITEMSIZE({x});
  for (int k = {nd} - 1; k >= 0; k--) {{ strides[k] = step; step *= dims[k] > 0 ? dims[k] : 1; }}
  {z} = wbv_view({x}, {nd}, dims, strides, PyArray_BYTES({x}), PyArray_ISWRITEABLE({x}));
}} else {{
  PyArray_Dims newshape = {{dims, {nd}}};
  {z} = (PyArrayObject *)PyArray_Newshape({x}, &newshape, NPY_CORDER);
}}
if (!{z}) {fail}
"""


@register_c_op(BroadcastTo)
class BroadcastToC(ViewCBase):
    """BroadcastTo as a read-only view: stride 0 along broadcast dimensions."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        x, *lengths = inputs
        (z,) = outputs
        fail = sub["fail"]
        nd = len(lengths)
        ndl = max(nd, 1)
        in_nd = node.inputs[0].type.ndim
        lead = nd - in_nd
        negative = c_string_literal("all elements of broadcast shape must be non-negative")
        mismatch = c_string_literal("operands could not be broadcast together with remapped "
                                    "shapes [original->remapped]: %s  and requested shape %s")
        code = [f"npy_intp dims[{ndl}], strides[{ndl}];"]
        for k, n in enumerate(lengths):
            code.append(f"dims[{k}] = (npy_intp)*(const dtype_{n} *)PyArray_DATA({n});")
        code.append(f"""
int ok = 1;
for (int k = 0; k < {nd}; k++) {{
  if (dims[k] < 0) {{ PyErr_SetString(PyExc_ValueError, {negative}); {fail} }}
  if (k < {lead}) {{ strides[k] = 0; continue; }}
  const npy_intp have = PyArray_DIMS({x})[k - {lead}];
  if (have == dims[k]) strides[k] = PyArray_STRIDES({x})[k - {lead}];
  else if (have == 1) strides[k] = 0;
  else ok = 0;
}}
if (!ok) {{
  char a[512], b[512];
  PyErr_Format(PyExc_ValueError, {mismatch},
               wbv_shape_text(a, sizeof(a), PyArray_DIMS({x}), {in_nd}, 1),
               wbv_shape_text(b, sizeof(b), dims, {nd}, 1));
  {fail}
}}""")
        code.append(_set_view(z, x, nd, "dims", "strides", f"PyArray_BYTES({x})", "0", fail))
        return "\n".join(code)


@register_c_op(SpecifyShape)
class SpecifyShapeC(ViewCBase):
    """SpecifyShape: checks the given lengths (AssertionError as `perform`) and passes
    its input through (the same array object). Unspecified lengths are the Generic
    None constant."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        x, *lengths = inputs
        (z,) = outputs
        fail = sub["fail"]
        nd = len(lengths)
        ndl = max(nd, 1)
        msg = c_string_literal("SpecifyShape: expected shape %s, got shape %s")
        code = [f"npy_intp expected[{ndl}];", "int ok = 1;"]
        for k, (n, var) in enumerate(zip(lengths, node.inputs[1:])):
            if isinstance(var.type, TensorType):
                code.append(f"expected[{k}] = (npy_intp)*(const dtype_{n} *)PyArray_DATA({n});"
                            f"\nif (expected[{k}] < 0) expected[{k}] = -2;")
            else:  # NoneConst (or any None): not specified
                code.append(f"expected[{k}] = ({n} == Py_None) ? -1 : -2;")
            code.append(f"if (expected[{k}] != -1 && expected[{k}] != PyArray_DIMS({x})[{k}]) "
                        "ok = 0;")
        code.append(f"""
if (!ok) {{
  char a[512], b[512];
  PyErr_Format(PyExc_AssertionError, {msg},
               wbv_shape_text(a, sizeof(a), expected, {nd}, 0),
               wbv_shape_text(b, sizeof(b), PyArray_DIMS({x}), {nd}, 0));
  {fail}
}}
Py_XDECREF({z});
{z} = {x};
Py_INCREF({z});""")
        return "\n".join(code)

    def c_supports(self, node: Apply) -> bool:
        # Only the None constant may stand for "unspecified", and while the runtime
        # takes a None input value for "not computed yet", such nodes run `perform`.
        for var in node.inputs[1:]:
            if not isinstance(var.type, TensorType) and not (
                    isinstance(var, Constant) and var.data is None and NONE_INPUTS_OK):
                return False
        return tensor_dtypes_have_c(node)


@register_c_op(CheckAndRaise)
class CheckAndRaiseC(ViewCBase):
    """CheckAndRaise: reads each 0-d boolean condition, raises the Op's exception with
    its message when one is false (as `perform`), and passes its input through."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        x, *conditions = inputs
        (z,) = outputs
        message = c_string_literal(node.op.message)
        held = " && ".join(f"*(const npy_bool *)PyArray_DATA({c})" for c in conditions) or "1"
        if node.op.error == "LinAlgError":  # numpy's class, looked up when raised
            set_error = f"""{{
  PyObject *mod = PyImport_ImportModule("numpy.linalg");
  PyObject *cls = mod ? PyObject_GetAttrString(mod, "LinAlgError") : NULL;
  Py_XDECREF(mod);
  if (cls) {{ PyErr_SetString(cls, {message}); Py_DECREF(cls); }}
}}"""
        else:
            set_error = f"PyErr_SetString(PyExc_{node.op.error}, {message});"
        return f"""
if (!({held})) {{
  {set_error}
  {sub["fail"]}
}}
Py_XDECREF({z});
{z} = {x};
Py_INCREF({z});"""


@register_c_op(Shape)
class ShapeC(ViewCBase):
    """The shape as an int64 vector (the previous output reused when it fits)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (z,) = inputs, outputs
        nd = node.inputs[0].type.ndim
        return f"""
if (!({z} && PyArray_DIMS({z})[0] == {nd} && PyArray_ISWRITEABLE({z})
      && PyArray_IS_C_CONTIGUOUS({z}))) {{
  npy_intp n = {nd};
  Py_XDECREF({z});
  {z} = (PyArrayObject *)PyArray_EMPTY(1, &n, {type_num('int64')}, 0);
  if (!{z}) {sub["fail"]}
}}
for (int k = 0; k < {nd}; k++) ((npy_int64 *)PyArray_DATA({z}))[k] = PyArray_DIMS({x})[k];
"""


@register_c_op(Shape_i)
class Shape_iC(ViewCBase):
    """The length of one dimension as an int64 0-d array."""

    def c_run_time_params(self, node: Any) -> list[str]:
        """The dimension, as run-time data: Shape_i{0} and Shape_i{1} of a matrix are one
        kind (codegen.node_labels)."""
        return [str(self.op.i)]

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, Any]) -> str:
        (x,), (z,) = inputs, outputs
        i = f"strtol({sub['params'][0]}, NULL, 10)" if "params" in sub else str(self.op.i)
        return f"""
if (!({z} && PyArray_ISWRITEABLE({z}))) {{
  Py_XDECREF({z});
  {z} = (PyArrayObject *)PyArray_EMPTY(0, NULL, {type_num('int64')}, 0);
  if (!{z}) {sub["fail"]}
}}
*(npy_int64 *)PyArray_DATA({z}) = PyArray_DIMS({x})[{i}];
"""
