"""C for Blockwise: one C loop over the batch calling the core Op's compiled node function.

The core node's C (its whole node function, as the code generator makes it for
a node of its own) is placed in the Blockwise node's support code. The loop
broadcasts the batch dimensions, gives the core function views of each input
item (no copies), and copies each item's result into the batched output,
allocated once the first item's core shape is known (an empty batch takes the
core lengths from `Blockwise.empty_batch_core_shapes`: static lengths, or input
lengths named by the signature or the core Op's infer_shape, as NumPy's gufuncs).
A core length computed from input values (a Reshape's shape) is found for an empty
batch only, by a call back into Python (`empty_batch_outputs`); a non-empty batch
stays in C. A core Op without C, or a length no one can tell, leaves the Blockwise
to its Python `perform`.
"""

from __future__ import annotations

import base64
import functools
import pickle
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant
from workbench.core.link.c.codegen import NoCCode, node_parts
from workbench.core.link.c.cstring import include_guarded
from workbench.core.link.c.interface import COpAdapter, register_c_op
from workbench.core.link.c.ops.shape import VIEW_SUPPORT, tensor_dtypes_have_c
from workbench.core.link.c.types import type_num
from workbench.core.tensor.blockwise import Blockwise

__all__ = ["BlockwiseC", "empty_batch_outputs"]


def _node_key(node: Apply) -> str:
    """The core Op, signature and inputs' dtypes and static shapes (constants kept), pickled:
    what the C code hands back to `empty_batch_outputs` to rebuild the node (the same bytes
    in every process, so the C source and its cache key are too)."""
    inputs = [("constant", v) if isinstance(v, Constant) else
              (str(v.type.dtype), tuple(v.type.shape)) for v in node.inputs]
    spec = (node.op.core_op, node.op.signature, inputs)
    return base64.b64encode(pickle.dumps(spec)).decode("ascii")


@functools.lru_cache(maxsize=64)
def _node_of_key(key: str) -> Apply:
    from workbench.core.tensor.type import TensorType

    core_op, signature, inputs = pickle.loads(base64.b64decode(key))
    return Blockwise(core_op, signature).make_node(
        *[v if dtype == "constant" else TensorType(dtype, v)() for dtype, v in inputs])


def empty_batch_outputs(key: str, *inputs: Any) -> list[Any]:
    """The outputs of an empty batch whose core lengths are computed from input values,
    called by the C code (only then): shapes from `Blockwise.empty_batch_output_shapes`."""
    node = _node_of_key(key)
    shapes = node.op.empty_batch_output_shapes(node, [np.shape(x) for x in inputs], inputs)
    return [np.empty(shape, dtype=out.type.dtype.numpy)
            for shape, out in zip(shapes, node.outputs)]


def _core_parts(node: Apply, name: str) -> Any:
    core = node.op._core_node_of(node)
    # the loop calls the core function with labels of its own: its checks' expected
    # Types are constants of the code
    return node_parts(core, name=f"{name}_core", fn_name=f"wb_core_{name}",
                      typed_labels=False)


class BlockwiseC(COpAdapter):
    def c_supports(self, node: Any) -> bool:
        if not tensor_dtypes_have_c(node):
            return False
        # an empty batch's core length no one can tell (unique's): Python's perform says so
        if any(d is None for shape in node.op.empty_batch_core_shapes(node) for d in shape):
            return False
        try:
            _core_parts(node, "probe")
        except NoCCode:
            return False
        return True

    def c_headers(self) -> list[str]:
        return []

    def c_support_code(self) -> str:
        return VIEW_SUPPORT

    def c_support_code_apply(self, node: Any, name: str) -> str:
        """The core Op's C: its support blocks under the guards a bundle gives them
        (bundle.py), so a bundle holding this kind and one of the core Op's compiles
        them once."""
        parts = _core_parts(node, name)
        blocks = [include_guarded(b) for b in (*parts.support, parts.apply_support) if b]
        return "\n".join([*parts.headers, *blocks, parts.function])

    # what the core Op's C needs to compile and link (BLAS, LAPACK...), forwarded
    def _core_c(self, method: str) -> Any:
        from workbench.core.link.c.interface import c_op_of, c_optional

        core_c = c_op_of(self.op.core_op)
        return c_optional(core_c, method, default=[]) if core_c is not None else []

    def c_libraries(self) -> list[str]:
        return list(self._core_c("c_libraries") or [])

    def c_lib_dirs(self) -> list[str]:
        return list(self._core_c("c_lib_dirs") or [])

    def c_header_dirs(self) -> list[str]:
        return list(self._core_c("c_header_dirs") or [])

    def c_compile_args(self) -> list[str]:
        return list(self._core_c("c_compile_args") or [])

    def c_init_code(self) -> list[str]:
        return list(self._core_c("c_init_code") or [])

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = node.op
        parts = _core_parts(node, name)
        del parts  # generated in c_support_code_apply; called here by name
        nb = op.batch_ndim(node)
        fail, label = sub["fail"], sub["label"]
        n_in, n_out = len(inputs), len(outputs)
        batch = [v.type.ndim - len(c) for v, c in zip(node.inputs, op.core_inputs)]
        core_nd = [len(c) for c in op.core_inputs]
        out_nd = [len(c) for c in op.core_outputs]
        lines = [
            "{",
            f"  npy_intp wb_b[{max(nb, 1)}]; npy_intp wb_idx[{max(nb, 1)}];",
            "  npy_intp wb_total = 1;",
            f"  PyObject *wb_cin[{n_in}]; PyObject *wb_cout[{n_out}];",
            f"  const char *wb_clabels[{1 + n_in + n_out}];",
            f"  for (int k = 0; k < {1 + n_in + n_out}; ++k) wb_clabels[k] = {label};",
            f"  for (int d = 0; d < {nb}; ++d) {{ wb_b[d] = 1; wb_idx[d] = 0; }}",
        ]
        for k, (var, b) in enumerate(zip(inputs, batch)):
            for dd in range(b):
                d = dd + nb - b
                lines.append(
                    f"  {{ npy_intp n = PyArray_DIM({var}, {dd});\n"
                    f"    if (n != 1) {{ if (wb_b[{d}] != 1 && wb_b[{d}] != n) {{\n"
                    f"      PyErr_Format(PyExc_ValueError, \"%s: batch dimension {d} of input "
                    f"{k} has length %ld, another input's has %ld\", {label}, (long)n, "
                    f"(long)wb_b[{d}]); {fail} }}\n"
                    f"      wb_b[{d}] = n; }} }}")
        lines.append(f"  for (int d = 0; d < {nb}; ++d) wb_total *= wb_b[d];")
        lines.append("  for (npy_intp wb_it = 0; wb_it < wb_total; ++wb_it) {")
        for k, (var, b, c) in enumerate(zip(inputs, batch, core_nd)):
            lines.append(f"    {{ char *data = PyArray_BYTES({var});")
            for dd in range(b):
                d = dd + nb - b
                lines.append(f"      if (PyArray_DIM({var}, {dd}) != 1) data += wb_idx[{d}] * "
                             f"PyArray_STRIDE({var}, {dd});")
            lines.append(f"      wb_cin[{k}] = (PyObject*)wbv_view({var}, {c}, "
                         f"PyArray_DIMS({var}) + {b}, PyArray_STRIDES({var}) + {b}, data, 0);")
            lines.append(f"      if (!wb_cin[{k}]) {{ for (int j = 0; j < {k}; ++j) "
                         f"Py_DECREF(wb_cin[j]); {fail} }} }}")
        lines.append(f"    for (int j = 0; j < {n_out}; ++j) wb_cout[j] = NULL;")
        lines.append(f"    int wb_r = wb_core_{name}(wb_cin, wb_cout, wb_clabels);")
        lines.append(f"    for (int k = 0; k < {n_in}; ++k) Py_DECREF(wb_cin[k]);")
        lines.append(f"    if (wb_r < 0) {{ for (int j = 0; j < {n_out}; ++j) "
                     f"Py_XDECREF(wb_cout[j]); {fail} }}")
        for j, (var, nd) in enumerate(zip(outputs, out_nd)):
            num = type_num(node.outputs[j].type.dtype)
            lines.append(f"""    {{
      PyArrayObject *res = (PyArrayObject*)wb_cout[{j}];
      if (wb_it == 0) {{
        npy_intp dims[{nb + nd + 1}];
        for (int d = 0; d < {nb}; ++d) dims[d] = wb_b[d];
        for (int d = 0; d < {nd}; ++d) dims[{nb} + d] = PyArray_DIM(res, d);
        Py_XDECREF({var});
        {var} = (PyArrayObject*)PyArray_EMPTY({nb + nd}, dims, {num}, 0);
        if (!{var}) {{ for (int q = 0; q < {n_out}; ++q) Py_XDECREF(wb_cout[q]); {fail} }}
      }}
      int same = PyArray_NDIM(res) == {nd};
      for (int d = 0; same && d < {nd}; ++d)
        same = PyArray_DIM(res, d) == PyArray_DIM({var}, {nb} + d);
      if (!same) {{
        PyErr_Format(PyExc_ValueError, "%s: batch item %ld of output {j} has another shape "
                     "than the first item's", {label}, (long)wb_it);
        for (int q = 0; q < {n_out}; ++q) Py_XDECREF(wb_cout[q]); {fail}
      }}
      char *data = PyArray_BYTES({var}) + wb_it * PyArray_NBYTES(res);
      PyArrayObject *dest = wbv_view({var}, {nd}, PyArray_DIMS({var}) + {nb},
                                     PyArray_STRIDES({var}) + {nb}, data, 1);
      int bad = !dest || PyArray_CopyInto(dest, res) < 0;
      Py_XDECREF(dest);
      if (bad) {{ for (int q = 0; q < {n_out}; ++q) Py_XDECREF(wb_cout[q]); {fail} }}
    }}""")
        lines.append(f"    for (int j = 0; j < {n_out}; ++j) Py_XDECREF(wb_cout[j]);")
        lines.append(f"    for (int d = {nb} - 1; d >= 0; --d) {{ if (++wb_idx[d] < wb_b[d]) "
                     "break; wb_idx[d] = 0; }")
        lines.append("  }")
        # an empty batch: no item runs; the core lengths from the inputs' (as NumPy's gufuncs)
        lines.append("  if (wb_total == 0) {")
        core_shapes = op.empty_batch_core_shapes(node)
        if not all(isinstance(d, (int, tuple)) for shape in core_shapes for d in shape):
            # a length computed from values (a Reshape's shape): Python computes the shapes
            args = "".join(f", (PyObject*){v}" for v in inputs)
            lines.append(
                "    PyObject *wb_m = PyImport_ImportModule(\n"
                '      "workbench.core.link.c.ops.blockwise");\n'
                f'    PyObject *wb_res = wb_m ? PyObject_CallMethod(wb_m, "empty_batch_outputs", '
                f'"s{"O" * n_in}", "{_node_key(node)}"{args}) : NULL;\n'
                "    Py_XDECREF(wb_m);\n"
                f"    if (!wb_res) {fail}")
            for j, var in enumerate(outputs):
                lines.append(f"    Py_XDECREF({var}); {var} = (PyArrayObject*)PyList_GET_ITEM("
                             f"wb_res, {j}); Py_INCREF({var});")
            lines.append("    Py_DECREF(wb_res);")
            core_shapes = []
        for j, (var, core_shape) in enumerate(zip(outputs, core_shapes)):
            num = type_num(node.outputs[j].type.dtype)
            dims = ", ".join([f"wb_b[{d}]" for d in range(nb)] +
                             [str(s) if isinstance(s, int) else
                              f"PyArray_DIM({inputs[s[0]]}, {s[1]})" for s in core_shape])
            lines.append(f"    {{ npy_intp dims[{nb + len(core_shape) + 1}] = {{{dims}}};\n"
                         f"      Py_XDECREF({var});\n"
                         f"      {var} = (PyArrayObject*)PyArray_EMPTY({nb + len(core_shape)}, "
                         f"dims, {num}, 0);\n"
                         f"      if (!{var}) {fail} }}")
        lines.append("  }")
        lines.append("}")
        return "\n".join(lines)

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (3,)


register_c_op(Blockwise, BlockwiseC)
