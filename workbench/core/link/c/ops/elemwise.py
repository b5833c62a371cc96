"""C for Elemwise: one fused loop per node over any number of inputs and outputs.

The loop visits the broadcast shape in the order of the first output's strides
(largest first), merges dimensions that are contiguous for every operand, and then
runs either
- a flat loop with typed pointers when every operand is contiguous (inputs known to
  be single elements from their static shape are loaded once), which gcc
  vectorises, calling libmvec for exp/log/sin/...; or
- a strided loop nest with broadcasting (stride 0) otherwise, whose inner loop is
  that vectorised typed loop, row by row, when every operand's rows are contiguous
  (a bias row broadcast down a matrix: tanh(x W + b) in an RNN's step).
Outputs reuse the previous call's buffer when it fits, or overwrite an input as
`inplace_pattern` says. Complex dtypes compute with C99's complex types (NumPy 2's
npy_complex128 is `double _Complex`) for the ops scalar_c.py has complex templates
for; float16/bfloat16 and the other complex ops make the node fall back to `perform`.
"""

from __future__ import annotations

import itertools
from typing import Any

from workbench.core.link.c.interface import COpAdapter, register_c_op
from workbench.core.link.c.scalar_c import (
    SCALAR_SUPPORT,
    VECTOR_MATH_DECLARATIONS,
    NoScalarC,
    scalar_c_code,
    scalar_c_support,
)
from workbench.core.link.c.types import c_type_name, type_num
from workbench.core.tensor.elemwise import Elemwise

MAX_DIMS = 32


def _kernel(node: Any, loads: list[str], stores: list[str]) -> str:
    """C statements for one element: `loads[k]` reads input k, `stores[j]` is a format
    string assigning output j (with `{}` for the value)."""
    counter = itertools.count()
    in_dtypes = [str(v.type.dtype) for v in node.inputs]
    out_dtypes = [str(v.type.dtype) for v in node.outputs]
    names = [f"x{k}" for k in range(len(node.inputs))]
    lines = [f"const {c_type_name(d)} {n} = {load};"
             for n, d, load in zip(names, in_dtypes, loads)]
    statements, exprs = scalar_c_code(node.op.scalar_op, names, in_dtypes, out_dtypes,
                                      lambda: f"t{next(counter)}")
    lines += statements
    lines += [store.format(expr) for store, expr in zip(stores, exprs)]
    return "\n      ".join(lines)


def _static_scalar(var: Any) -> bool:
    """Whether the Type says the value has exactly one element."""
    return all(s == 1 for s in var.type.shape)


@register_c_op(Elemwise)
class ElemwiseC(COpAdapter):
    def c_supports(self, node: Any) -> bool:
        try:
            self._kernel_text(node)
        except (NoScalarC, ValueError):
            return False
        return node.outputs[0].type.ndim <= MAX_DIMS

    def _kernel_text(self, node: Any) -> str:
        loads = [f"v{k}" for k in range(len(node.inputs))]
        stores = [f"y{j} = {{}};" for j in range(len(node.outputs))]
        return _kernel(node, loads, stores)

    def c_headers(self) -> list[str]:
        return ["<math.h>", "<complex.h>"]

    def c_support_code(self) -> str:
        from workbench.core.link.c.compiler import vector_math_libraries

        decls = VECTOR_MATH_DECLARATIONS if vector_math_libraries() else ""
        return decls + SCALAR_SUPPORT + scalar_c_support(self.op.scalar_op)

    def c_libraries(self) -> list[str]:
        from workbench.core.link.c.compiler import vector_math_libraries

        return [*vector_math_libraries(), "m"]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (5,)

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        fail, label = sub["fail"], sub["label"]
        n_in, n_out = len(inputs), len(outputs)
        nd = node.outputs[0].type.ndim
        ndl = max(nd, 1)
        n_ops = n_in + n_out
        destroyed = dict(self.op.inplace_pattern)
        # operand order in the loop: outputs first, then inputs
        operands = outputs + inputs
        code = [f"const int nd = {nd};", f"npy_intp shape[{ndl}];",
                f"char *ptr[{n_ops}];", f"npy_intp strides[{n_ops}][{ndl}];",
                f"int order[{ndl}];", "wb_errflag = 0;"]
        # broadcast shape
        code.append(f"for (int d = 0; d < {ndl}; d++) shape[d] = 1;")
        if nd:
            for k, x in enumerate(inputs):
                code.append(
                    f"for (int d = 0; d < nd; d++) {{ npy_intp n = PyArray_DIMS({x})[d];\n"
                    f"  if (n != 1) {{ if (shape[d] == 1) shape[d] = n;\n"
                    f"    else if (shape[d] != n) {{\n"
                    f"    PyErr_Format(PyExc_ValueError, \"%s: input {k} has length "
                    f"%ld in dimension %d where the other inputs have %ld (shapes do not "
                    f"broadcast)\", {label}, (long)n, d, (long)shape[d]); {fail} }} }} }}")
        # layout of fresh outputs: Fortran when every full-size input is F-contiguous
        big = [x for x, v in zip(inputs, node.inputs) if not _static_scalar(v)]
        if nd > 1 and big:
            conds = " && ".join(f"PyArray_IS_F_CONTIGUOUS({x}) && !PyArray_IS_C_CONTIGUOUS({x})"
                                for x in big)
            code.append(f"const int fortran = ({conds});")
        else:
            code.append("const int fortran = 0;")
        for j, (o, var) in enumerate(zip(outputs, node.outputs)):
            tn = type_num(var.type.dtype)
            if j in destroyed:
                x = inputs[destroyed[j]]
                code.append(
                    f"for (int d = 0; d < nd; d++) if (PyArray_DIMS({x})[d] != shape[d]) {{\n"
                    f"  PyErr_Format(PyExc_ValueError, \"%s: the input overwritten in place "
                    f"does not have the broadcast shape\", {label}); {fail} }}\n"
                    f"Py_XDECREF({o}); {o} = {x}; Py_INCREF({o});")
            else:
                code.append(
                    f"{{ int reuse = {o} != NULL && PyArray_ISWRITEABLE({o}) && "
                    f"(fortran ? PyArray_IS_F_CONTIGUOUS({o}) : PyArray_IS_C_CONTIGUOUS({o}));\n"
                    f"  for (int d = 0; reuse && d < nd; d++)\n"
                    f"    reuse = PyArray_DIMS({o})[d] == shape[d];\n"
                    f"  if (!reuse) {{ Py_XDECREF({o});\n"
                    f"    {o} = (PyArrayObject*)PyArray_EMPTY(nd, shape, {tn}, fortran);\n"
                    f"    if (!{o}) {fail} }} }}")
        # pointers and strides (0 where an input broadcasts)
        for k, x in enumerate(operands):
            code.append(f"ptr[{k}] = PyArray_BYTES({x});")
            if nd:
                code.append(f"for (int d = 0; d < nd; d++) strides[{k}][d] = "
                            f"PyArray_DIMS({x})[d] == 1 ? 0 : PyArray_STRIDES({x})[d];")
            else:
                code.append(f"strides[{k}][0] = 0;")
        code.append(f"npy_intp size = 1;\nfor (int d = 0; d < {ndl}; d++) size *= shape[d];"
                    )
        code.append("if (size > 0) {")
        code.append(self._scalar(node, n_out) if nd == 0 else
                    self._loops(node, n_in, n_out, nd, ndl))
        code.append("}")
        code.append("if (wb_errflag) { PyErr_Format(PyExc_ValueError, "
                    f"\"%s: Integers to negative integer powers are not allowed.\", {label}); "
                    f"{fail} }}")
        return "\n".join(code)

    def _scalar(self, node: Any, n_out: int) -> str:
        """The element of a 0-d node (shape arithmetic: broadcast lengths, a scalar's
        cast): the kernel once, without the loops' layout work (less C to compile, the
        same scalar expression as the loops' last element)."""
        loads = [f"*(const {c_type_name(v.type.dtype)}*)ptr[{n_out + k}]"
                 for k, v in enumerate(node.inputs)]
        stores = [f"*({c_type_name(v.type.dtype)}*)ptr[{j}] = {{}};"
                  for j, v in enumerate(node.outputs)]
        return "  {\n      " + _kernel(node, loads, stores) + "\n  }"

    def _loops(self, node: Any, n_in: int, n_out: int, nd: int, ndl: int) -> str:
        n_ops = n_in + n_out
        in_types = [c_type_name(v.type.dtype) for v in node.inputs]
        out_types = [c_type_name(v.type.dtype) for v in node.outputs]
        scalar_in = [_static_scalar(v) for v in node.inputs]
        lines = []
        # order dims by |stride| of output 0, largest first (insertion sort), then merge
        # dims contiguous for every operand
        lines.append(f"""
  for (int d = 0; d < {ndl}; d++) order[d] = d;
  for (int a = 1; a < {ndl}; a++) {{
    int v = order[a]; npy_intp sv = strides[0][v] < 0 ? -strides[0][v] : strides[0][v];
    int b = a - 1;
    while (b >= 0) {{ npy_intp sb = strides[0][order[b]];
      if (sb < 0) sb = -sb;
      if (sb >= sv) break; order[b + 1] = order[b]; b--; }}
    order[b + 1] = v; }}
  npy_intp cshape[{ndl}]; npy_intp cstr[{n_ops}][{ndl}]; int cnd = 0;
  for (int a = 0; a < {ndl}; a++) {{
    int d = order[a];
    if (shape[d] == 1) continue;  /* contributes nothing */
    if (cnd > 0) {{
      int merge = 1;
      for (int k = 0; k < {n_ops}; k++)
        if (cstr[k][cnd - 1] != strides[k][d] * shape[d]) {{ merge = 0; break; }}
      if (merge) {{ cshape[cnd - 1] *= shape[d];
        for (int k = 0; k < {n_ops}; k++) cstr[k][cnd - 1] = strides[k][d];
        continue; }}
    }}
    cshape[cnd] = shape[d];
    for (int k = 0; k < {n_ops}; k++) cstr[k][cnd] = strides[k][d];
    cnd++;
  }}
  if (cnd == 0) {{ cnd = 1; cshape[0] = 1; for (int k = 0; k < {n_ops}; k++) cstr[k][0] = 0; }}""")
        # fast path: one dim, every operand contiguous (static scalars may have stride 0)
        conds = ["cnd == 1"]
        for j in range(n_out):
            conds.append(f"cstr[{j}][0] == sizeof({out_types[j]})")
        for k in range(n_in):
            if scalar_in[k]:
                continue
            conds.append(f"cstr[{n_out + k}][0] == sizeof({in_types[k]})")
        fast_decls = []
        for j in range(n_out):
            fast_decls.append(f"{out_types[j]} *restrict w{j} = ({out_types[j]}*)ptr[{j}];")
        loads = []
        for k in range(n_in):
            t = in_types[k]
            if scalar_in[k]:
                fast_decls.append(f"const {t} sc{k} = *(const {t}*)ptr[{n_out + k}];")
                loads.append(f"sc{k}")
            else:
                fast_decls.append(f"const {t} *r{k} = (const {t}*)ptr[{n_out + k}];")
                loads.append(f"r{k}[i]")
        stores = [f"w{j}[i] = {{}};" for j in range(n_out)]
        # inplace outputs alias an input: drop restrict there
        if self.op.inplace_pattern:
            fast_decls = [d.replace("*restrict ", "*") for d in fast_decls]
        fast_kernel = _kernel(node, loads, stores)
        # general strided loop nest over the collapsed dims
        gen_loads = [f"*(const {in_types[k]}*)(p[{n_out + k}] + i * s{n_out + k})"
                     for k in range(n_in)]
        gen_stores = [f"*({out_types[j]}*)(p[{j}] + i * s{j}) = {{}};" for j in range(n_out)]
        general_kernel = _kernel(node, gen_loads, gen_stores)
        inner_strides = "\n".join(f"    const npy_intp s{k} = cstr[{k}][cnd - 1];"
                                  for k in range(n_ops))
        # rows contiguous for every operand (a bias row broadcast down a matrix): the
        # inner loop is the vectorised typed loop of the fast path, row by row
        row_conds = [f"s{j} == sizeof({out_types[j]})" for j in range(n_out)]
        row_conds += [f"s{n_out + k} == sizeof({in_types[k]})" for k in range(n_in)
                      if not scalar_in[k]]
        row_decls = [d.replace("ptr[", "p[") for d in fast_decls]
        lines.append(f"""
  if ({' && '.join(conds)}) {{
    const npy_intp n = cshape[0];
    {' '.join(fast_decls)}
    #pragma omp simd
    for (npy_intp i = 0; i < n; i++) {{
      {fast_kernel}
    }}
  }} else {{
    npy_intp idx[{ndl}];
    char *p[{n_ops}];
    for (int d = 0; d < cnd; d++) idx[d] = 0;
    const npy_intp n = cshape[cnd - 1];
{inner_strides}
    const int rows_contiguous = {' && '.join(row_conds)};
    for (;;) {{
      for (int k = 0; k < {n_ops}; k++) {{
        p[k] = ptr[k];
        for (int d = 0; d < cnd - 1; d++) p[k] += idx[d] * cstr[k][d];
      }}
      if (rows_contiguous) {{
        {' '.join(row_decls)}
        #pragma omp simd
        for (npy_intp i = 0; i < n; i++) {{
      {fast_kernel}
        }}
      }} else {{
        for (npy_intp i = 0; i < n; i++) {{
      {general_kernel}
        }}
      }}
      int d = cnd - 2;
      while (d >= 0) {{ if (++idx[d] < cshape[d]) break; idx[d] = 0; d--; }}
      if (d < 0) break;
    }}
  }}""")
        return "\n".join(lines)
