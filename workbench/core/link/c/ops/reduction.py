"""C for reductions: `CAReduce` (Sum, Prod, Max, Min, All, Any and the bitwise
reductions) over any axes, and `Argmax`/`Argmin`.

CAReduce follows NumPy's `ufunc.reduce(x, axis, dtype=acc)`: every element is
cast to the accumulator dtype, folded with the scalar Op, and the result cast to
the output dtype. The generated loop
- visits the input in the order of its strides (largest first), with the
  accumulator's strides 0 on reduced dimensions, and merges dimensions that are
  contiguous for both;
- when the innermost dimension is reduced, folds it in one call: a vectorised
  `#pragma omp simd reduction` loop over contiguous data (float sums are pairwise
  over blocks, like NumPy's, so they stay as accurate), a plain strided loop
  otherwise; max/min track NaN separately so it propagates;
- when the innermost dimension is kept, combines a whole row of inputs into a row of
  accumulators (a vectorised elementwise loop when both are contiguous).
An empty reduction gives the Op's `initial`, the ufunc's identity, or NumPy's
ValueError for max/min.

Argmax/Argmin move the axis last and make rows contiguous (as NumPy does), then
per row: the extreme and whether a NaN occurs in one vectorised pass, the first
block of ARG_BLOCK elements holding it (a vectorised test per block), and the
element inside that block (the first NaN wins, ties keep the first index).
"""

from __future__ import annotations

import hashlib
import itertools
from string import Template
from typing import Any

import numpy as np

from workbench.core.link.c.interface import COpAdapter, register_c_op
from workbench.core.link.c.ops.buffers import alloc_output
from workbench.core.link.c.scalar_c import (
    SCALAR_SUPPORT,
    NoScalarC,
    c_cast,
    scalar_c_code,
)
from workbench.core.link.c.types import C_TYPES, c_type_name, scalar_literal
from workbench.core.scalar import math as smath
from workbench.core.tensor.reduction import All, Argmax, Argmin, CAReduce
from workbench.core.tensor.reduction import Any as AnyOp

__all__ = ["ArgReduceC", "CAReduceC", "fill"]

#: Elements folded by one vectorised leaf of the pairwise float sum.
PAIRWISE_BLOCK = 256
#: Elements per block of the argmax/argmin search for the index.
ARG_BLOCK = 128


def fill(text: str, **values: Any) -> str:
    """`text` with `${key}` replaced by `values[key]` (C uses no `$`, braces stay as is)."""
    return Template(text).substitute({k: str(v) for k, v in values.items()})


def _kind(dtype: str) -> str:
    return np.dtype(dtype).kind


def _has_c(dtype: str) -> bool:
    return bool(C_TYPES.get(dtype)) and not dtype.startswith("complex")


def _extreme_literal(dtype: str, lowest: bool) -> str:
    """The smallest (largest) value of `dtype`: the start of a max (min) fold."""
    if dtype == "bool":
        return "0" if lowest else "1"
    if _kind(dtype) == "f":
        return scalar_literal(float("-inf") if lowest else float("inf"), dtype)
    info = np.iinfo(dtype)
    return scalar_literal(int(info.min if lowest else info.max), dtype)


def _omp_op(scalar_op: Any, acc: str) -> str:
    """The OpenMP reduction identifier matching the scalar Op on `acc`."""
    if isinstance(scalar_op, smath.Add):
        return "||" if acc == "bool" else "+"
    if isinstance(scalar_op, smath.Mul):
        return "&&" if acc == "bool" else "*"
    if isinstance(scalar_op, smath.Maximum):
        return "max"
    if isinstance(scalar_op, smath.Minimum):
        return "min"
    return {smath.AND: "&", smath.OR: "|", smath.XOR: "^"}[type(scalar_op)]


_SUPPORTED_OPS = (smath.Add, smath.Mul, smath.Maximum, smath.Minimum, smath.AND, smath.OR,
                  smath.XOR)


@register_c_op(CAReduce)
class CAReduceC(COpAdapter):
    """C for every CAReduce: see the module docstring for the loop structure."""

    # -- dtypes ---------------------------------------------------------------
    def _dtypes(self, node: Any) -> tuple[str, str, str, str]:
        """(input, prepared input, accumulator, output) dtype names."""
        in_dt = str(node.inputs[0].type.dtype)
        out_dt = str(node.outputs[0].type.dtype)
        acc_dt = str(self.op.acc_dtype) if self.op.acc_dtype is not None else out_dt
        prep = "bool" if isinstance(self.op, (All, AnyOp)) else in_dt
        return in_dt, prep, acc_dt, out_dt

    def c_supports(self, node: Any) -> bool:
        op = self.op
        if not isinstance(op.scalar_op, _SUPPORTED_OPS):
            return False
        if type(op).prepare_value is not CAReduce.prepare_value and not isinstance(
                op, (All, AnyOp)):
            return False  # an unknown input conversion: only perform knows it
        dtypes = self._dtypes(node)
        if not all(_has_c(d) for d in dtypes):
            return False
        acc = dtypes[2]
        if isinstance(op.scalar_op, (smath.AND, smath.OR, smath.XOR)) and _kind(acc) == "f":
            return False
        try:
            self._combine(node, "a", "b")
        except (NoScalarC, ValueError):
            return False
        return True

    def _combine(self, node: Any, a: str, b: str) -> str:
        """A C expression folding accumulator values `a` and `b` (NumPy semantics)."""
        acc = self._dtypes(node)[2]
        counter = itertools.count()
        stmts, exprs = scalar_c_code(self.op.scalar_op, [a, b], [acc, acc], [acc],
                                     lambda: f"wb_t{next(counter)}")
        if stmts:
            raise NoScalarC("a combine step needing statements")
        return exprs[0]

    def _load(self, node: Any, expr: str) -> str:
        in_dt, prep, acc, _ = self._dtypes(node)
        return c_cast(c_cast(expr, in_dt, prep), prep, acc)

    def _start(self, node: Any) -> str:
        """The value a fold starts from: the Op's `initial`, the identity, or the dtype's
        extreme for max/min."""
        acc = self._dtypes(node)[2]
        sop = self.op.scalar_op
        if self.op.initial is not None:
            return scalar_literal(self.op.initial, acc)
        if isinstance(sop, smath.Maximum):
            return _extreme_literal(acc, lowest=True)
        if isinstance(sop, smath.Minimum):
            return _extreme_literal(acc, lowest=False)
        if isinstance(sop, smath.Add) and _kind(acc) == "f":
            return scalar_literal(-0.0, acc)  # the exact identity of IEEE addition
        return self._identity_literal(acc)

    def _identity_literal(self, dtype: str) -> str:
        with np.errstate(all="ignore"):
            value = np.array(self.op.ufunc.identity).astype(dtype)
        return scalar_literal(value.item(), dtype)

    # -- contract ---------------------------------------------------------------
    def c_headers(self) -> list[str]:
        return ["<math.h>", "<stdlib.h>"]

    def c_support_code(self) -> str:
        return SCALAR_SUPPORT

    def c_compile_args(self) -> list[str]:
        return ["-fwrapv"]  # integer sums and products wrap around like NumPy's

    def c_libraries(self) -> list[str]:
        return ["m"]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (4,)

    def _helpers_name(self, node: Any) -> str:
        """The suffix of the fold helpers' names: a hash of their text, so that nodes
        with the same helpers (sums over other axes of the same dtype) share them in
        a bundle, compiled once."""
        text = self._helpers(node, "@")
        return "h" + hashlib.sha256(text.encode()).hexdigest()[:16]

    def c_support_code_apply(self, node: Any, name: str) -> str:
        helpers = self._helpers_name(node)
        return (f"#ifndef WB_FOLD_{helpers}\n#define WB_FOLD_{helpers}\n"
                f"{self._helpers(node, helpers)}\n#endif")

    def _helpers(self, node: Any, name: str) -> str:
        """The fold helpers of `node`'s reduction, their names ending in `name`."""
        in_dt, _, acc, _ = self._dtypes(node)
        in_t, acc_t = c_type_name(in_dt), c_type_name(acc)
        sop = self.op.scalar_op
        omp = _omp_op(sop, acc)
        nan_tracking = isinstance(sop, (smath.Maximum, smath.Minimum)) and _kind(acc) == "f"
        values = dict(name=name, in_t=in_t, acc_t=acc_t, omp=omp, start=self._start(node),
                      block=PAIRWISE_BLOCK)
        if nan_tracking:
            cmp = ">" if isinstance(sop, smath.Maximum) else "<"
            step = f"r = v {cmp} r ? v : r; nan |= (v != v);"
            clauses = f"reduction({omp}:r) reduction(|:nan)"
            head, tail = "int nan = 0;", f"return nan ? ({acc_t})NAN : r;"
        else:
            step = f"r = {self._combine(node, 'r', 'v')};"
            clauses = f"reduction({omp}:r)"
            head, tail = "", "return r;"
        leaf = fill("""
  ${acc_t} r = ${start}; ${head}
  #pragma omp simd ${clauses}
  for (npy_intp i = 0; i < n; i++) { const ${acc_t} v = ${load}; ${step} }
  ${tail}""", acc_t=acc_t, start=values["start"], head=head, clauses=clauses, step=step,
                    tail=tail, load="${load}")
        contig_leaf = fill(leaf, load=self._load(node, "x[i]"))
        strided_leaf = fill(leaf, load=self._load(node, f"*(const {in_t}*)(p + i * s)"))
        row = fill("""
WB_NOINLINE static void wb_rowcomb_${name}(${acc_t} *restrict a, const ${in_t} *restrict xr,
                                         const npy_intp n) {
  #pragma omp simd
  for (npy_intp j = 0; j < n; j++) a[j] = ${row_combine};
}""", name=name, acc_t=acc_t, in_t=in_t,
                   row_combine=self._combine(node, "a[j]", self._load(node, "xr[j]")))
        pairwise = isinstance(sop, smath.Add) and _kind(acc) == "f"
        # pairwise float sums: halves (multiples of 64) down to vectorised leaves, like NumPy
        split = fill("""
  if (n > ${block}) {
    const npy_intp h = (n / 2) & ~(npy_intp)63;
    return ${call_lo} + ${call_hi};
  }""", block=PAIRWISE_BLOCK, call_lo="${lo}", call_hi="${hi}") if pairwise else ""
        return fill("""
#define WB_NOINLINE __attribute__((noinline))
/* the vectorised leaves stay functions of their own: inlined into an outer loop, gcc 12
   turns an omp simd reduction into a slow scalar loop */
WB_NOINLINE static ${acc_t} wb_leaf_contig_${name}(const ${in_t} *restrict x, npy_intp n) {
${contig}
}
WB_NOINLINE static ${acc_t} wb_leaf_strided_${name}(const char *p, npy_intp n, npy_intp s) {
${strided}
}
static ${acc_t} wb_fold_contig_${name}(const ${in_t} *restrict x, npy_intp n) {${split_c}
  return wb_leaf_contig_${name}(x, n);
}
static ${acc_t} wb_fold_strided_${name}(const char *p, npy_intp n, npy_intp s) {${split_s}
  return wb_leaf_strided_${name}(p, n, s);
}
${row}
""", contig=contig_leaf, strided=strided_leaf, row=row,
                    split_c=fill(split, lo=f"wb_fold_contig_{name}(x, h)",
                                 hi=f"wb_fold_contig_{name}(x + h, n - h)") if split else "",
                    split_s=fill(split, lo=f"wb_fold_strided_{name}(p, h, s)",
                                 hi=f"wb_fold_strided_{name}(p + h * s, n - h, s)")
                    if split else "", **values)

    def _reduced(self, node: Any) -> str:
        """One character per input dimension (one for a 0-d input): "1" where it is
        reduced, else "0"."""
        nd = node.inputs[0].type.ndim
        axes = tuple(range(nd)) if self.op.axis is None else self.op.axis
        return "".join("1" if d in axes else "0" for d in range(nd)) if nd else "1"

    def c_run_time_params(self, node: Any) -> list[str]:
        """The reduced axes (`_reduced`) as run-time data, so that reductions over other
        axes of the same input and output Types share one kind (codegen.node_labels)."""
        return [self._reduced(node)]

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, Any]) -> str:
        (x,), (o,) = inputs, outputs
        fail = sub["fail"]
        in_dt, _, acc, out_dt = self._dtypes(node)
        helpers = self._helpers_name(node)
        in_t, acc_t, out_t = c_type_name(in_dt), c_type_name(acc), c_type_name(out_dt)
        nd = node.inputs[0].type.ndim
        ndl = max(nd, 1)
        if "params" in sub:
            red = (f"int red[{ndl}];\n"
                   f"for (int d = 0; d < {ndl}; d++) red[d] = {sub['params'][0]}[d] == '1';")
        else:
            red = (f"static const int red[{ndl}] = "
                   f"{{{', '.join(self._reduced(node))}}};")
        ufunc = self.op.ufunc
        if self.op.initial is not None:
            empty = (f"{out_t} *w = ({out_t}*)PyArray_DATA({o}); const {out_t} e = "
                     f"{c_cast(self._start(node), acc, out_dt)};\n"
                     "  for (npy_intp j = 0; j < n_out; j++) w[j] = e;")
        elif ufunc.identity is None:  # NumPy raises even when the output is empty
            empty = (f"PyErr_SetString(PyExc_ValueError, \"zero-size array to reduction "
                     f"operation {ufunc.__name__} which has no identity\"); {fail}")
        else:
            empty = (f"{out_t} *w = ({out_t}*)PyArray_DATA({o}); const {out_t} e = "
                     f"{self._identity_literal(out_dt)};\n"
                     "  for (npy_intp j = 0; j < n_out; j++) w[j] = e;")
        separate = acc != out_dt
        combine = self._combine(node, "*q", "r")
        strided_combine = self._combine(node, f"*({acc_t}*)(q + j * as)",
                                        self._load(node, f"*(const {in_t}*)(p + j * is)"))
        return fill("""
const int nd = ${nd};
${red}
npy_intp oshape[${ndl}]; int ond = 0;
npy_intp n_red = 1, n_out = 1;
for (int d = 0; d < nd; d++) {
  const npy_intp n = PyArray_DIMS(${x})[d];
  if (red[d]) n_red *= n; else { oshape[ond++] = n; n_out *= n; }
}
${alloc}
if (n_red == 0) {
  ${empty}
} else if (n_out > 0) {
  ${acc_t} *acc = ${separate} ? (${acc_t}*)malloc(n_out * sizeof(${acc_t}))
                              : (${acc_t}*)PyArray_DATA(${o});
  if (!acc) { PyErr_NoMemory(); ${fail} }
  for (npy_intp j = 0; j < n_out; j++) acc[j] = ${start};
  /* byte strides of the accumulator per input dim: C order over kept dims, 0 on reduced */
  npy_intp ast[${ndl}], ist[${ndl}], dims[${ndl}];
  { npy_intp s = sizeof(${acc_t});
    for (int d = nd - 1; d >= 0; d--) {
      dims[d] = PyArray_DIMS(${x})[d]; ist[d] = PyArray_STRIDES(${x})[d];
      if (red[d]) ast[d] = 0; else { ast[d] = s; s *= dims[d]; } } }
  /* dims longer than 1, ordered by |input stride| (largest first), then merged */
  int ord[${ndl}], m = 0;
  for (int d = 0; d < nd; d++) if (dims[d] != 1) ord[m++] = d;
  for (int a = 1; a < m; a++) {
    const int v = ord[a]; const npy_intp sv = ist[v] < 0 ? -ist[v] : ist[v];
    int b = a - 1;
    while (b >= 0) { const npy_intp sb = ist[ord[b]] < 0 ? -ist[ord[b]] : ist[ord[b]];
      if (sb >= sv) break; ord[b + 1] = ord[b]; b--; }
    ord[b + 1] = v;
  }
  npy_intp csh[${ndl}], cis[${ndl}], cas[${ndl}]; int cnd = 0;
  for (int a = 0; a < m; a++) {
    const int d = ord[a];
    if (cnd > 0 && cis[cnd - 1] == ist[d] * dims[d] && cas[cnd - 1] == ast[d] * dims[d]) {
      csh[cnd - 1] *= dims[d]; cis[cnd - 1] = ist[d]; cas[cnd - 1] = ast[d]; continue; }
    csh[cnd] = dims[d]; cis[cnd] = ist[d]; cas[cnd] = ast[d]; cnd++;
  }
  if (cnd == 0) { cnd = 1; csh[0] = 1; cis[0] = 0; cas[0] = 0; }
  const npy_intp n = csh[cnd - 1], is = cis[cnd - 1], as = cas[cnd - 1];
  npy_intp idx[${ndl}];
  for (int d = 0; d < cnd; d++) idx[d] = 0;
  const char *base = PyArray_BYTES(${x});
  for (;;) {
    const char *p = base; char *qb = (char*)acc;
    for (int d = 0; d < cnd - 1; d++) { p += idx[d] * cis[d]; qb += idx[d] * cas[d]; }
    if (as == 0) {  /* the inner dim is reduced: fold it, then combine */
      ${acc_t} *q = (${acc_t}*)qb;
      const ${acc_t} r = is == sizeof(${in_t}) ? wb_fold_contig_${helpers}((const ${in_t}*)p, n)
                                                : wb_fold_strided_${helpers}(p, n, is);
      *q = ${combine};
    } else if (is == sizeof(${in_t}) && as == sizeof(${acc_t})) {
      wb_rowcomb_${helpers}((${acc_t}*)qb, (const ${in_t}*)p, n);
    } else {
      char *q = qb;
      for (npy_intp j = 0; j < n; j++) *(${acc_t}*)(q + j * as) = ${strided_combine};
    }
    int d = cnd - 2;
    while (d >= 0) { if (++idx[d] < csh[d]) break; idx[d] = 0; d--; }
    if (d < 0) break;
  }
  if (${separate}) {
    ${out_t} *w = (${out_t}*)PyArray_DATA(${o});
    for (npy_intp j = 0; j < n_out; j++) w[j] = ${cast};
    free(acc);
  }
}
""", nd=nd, ndl=ndl, red=red, x=x, o=o, fail=fail, acc_t=acc_t, in_t=in_t,
            out_t=out_t, empty=empty, separate=int(separate), start=self._start(node),
            name=name, helpers=helpers, combine=combine,
            strided_combine=strided_combine, cast=c_cast("acc[j]", acc, out_dt),
            alloc=alloc_output(o, "ond", "oshape", out_dt, fail))


# -- argmax / argmin ------------------------------------------------------------------


@register_c_op(Argmax)
@register_c_op(Argmin)
class ArgReduceC(COpAdapter):
    """C for Argmax/Argmin: contiguous rows (axis moved last), blocked vectorised scan."""

    def c_supports(self, node: Any) -> bool:
        return _has_c(str(node.inputs[0].type.dtype))

    def c_headers(self) -> list[str]:
        return ["<math.h>"]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)

    def c_support_code_apply(self, node: Any, name: str) -> str:
        dt = str(node.inputs[0].type.dtype)
        is_max = isinstance(self.op, Argmax)
        cmp = ">" if is_max else "<"
        return fill("""
#define WB_NOINLINE __attribute__((noinline))
/* vectorised leaves (functions of their own so that gcc vectorises them) */
WB_NOINLINE static ${t} wb_argbest_${name}(const ${t} *restrict x, const npy_intp n, int *nan_out) {
  ${t} bm = ${start}; int nan = 0;
  #pragma omp simd reduction(${omp}:bm) reduction(|:nan)
  for (npy_intp i = 0; i < n; i++) { const ${t} v = x[i]; bm = v ${cmp} bm ? v : bm;
                                     nan |= (v != v); }
  *nan_out = nan;
  return bm;
}
WB_NOINLINE static int wb_argholds_${name}(const ${t} *restrict x, const npy_intp n,
                                        const ${t} m, const int nan) {
  int found = 0;
  if (nan) {
    #pragma omp simd reduction(|:found)
    for (npy_intp i = 0; i < n; i++) found |= (x[i] != x[i]);
  } else {
    #pragma omp simd reduction(|:found)
    for (npy_intp i = 0; i < n; i++) found |= (x[i] == m);
  }
  return found;
}
/* index of the first ${what} of x[0..n) (n > 0), the first NaN if there is one: the
   extreme in one vectorised pass, then the first block holding it, then the element */
static npy_intp wb_arg_${name}(const ${t} *restrict x, const npy_intp n) {
  int nan;
  const ${t} m = wb_argbest_${name}(x, n, &nan);
  for (npy_intp b = 0; b < n; b += ${block}) {
    const npy_intp e = n - b > ${block} ? b + ${block} : n;
    if (!wb_argholds_${name}(x + b, e - b, m, nan)) continue;
    for (npy_intp i = b; i < e; i++) if (nan ? x[i] != x[i] : x[i] == m) return i;
  }
  return 0;  /* all elements equal the starting extreme (e.g. all -inf for argmax) */
}
""", name=name, t=c_type_name(dt), what="maximum" if is_max else "minimum",
            block=ARG_BLOCK, start=_extreme_literal(dt, lowest=is_max), cmp=cmp,
            omp="max" if is_max else "min")

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (o,) = inputs, outputs
        fail = sub["fail"]
        nd = node.inputs[0].type.ndim
        t = c_type_name(str(node.inputs[0].type.dtype))
        what = "argmax" if isinstance(self.op, Argmax) else "argmin"
        axis = self.op.axis
        if axis is None or nd == 0:
            perm = list(range(nd))
            n_expr = f"PyArray_SIZE({x})"
            out_nd = 0
        else:
            perm = [d for d in range(nd) if d != axis] + [axis]
            n_expr = f"PyArray_DIMS({x})[{axis}]"
            out_nd = nd - 1
        keep = [d for d in perm[:out_nd]]
        shape_fill = "".join(f"oshape[{k}] = PyArray_DIMS({x})[{d}]; "
                             for k, d in enumerate(keep))
        transpose = perm != list(range(nd))
        perm_c = ", ".join(str(p) for p in perm) or "0"
        return fill("""
const npy_intp n = ${n_expr};
if (n == 0) {
  PyErr_SetString(PyExc_ValueError, "attempt to get ${what} of an empty sequence"); ${fail}
}
npy_intp oshape[${ondl}];
${shape_fill}
${alloc}
{
  PyArrayObject *src = ${x};
  if (${transpose}) {
    static npy_intp perm[${ndl}] = {${perm}};
    PyArray_Dims pd = {perm, ${nd}};
    src = (PyArrayObject*)PyArray_Transpose(${x}, &pd);
    if (!src) ${fail}
  } else {
    Py_INCREF(src);
  }
  PyArrayObject *xc = (PyArrayObject*)PyArray_GETCONTIGUOUS(src);
  Py_DECREF(src);
  if (!xc) ${fail}
  const npy_intp rows = PyArray_SIZE(${o});
  const ${t} *data = (const ${t}*)PyArray_DATA(xc);
  npy_int64 *w = (npy_int64*)PyArray_DATA(${o});
  for (npy_intp r = 0; r < rows; r++) w[r] = (npy_int64)wb_arg_${name}(data + r * n, n);
  Py_DECREF(xc);
}
""", n_expr=n_expr, what=what, fail=fail, ondl=max(out_nd, 1), shape_fill=shape_fill,
            alloc=alloc_output(o, str(out_nd), "oshape", "int64", fail), x=x,
            transpose=int(transpose), ndl=max(nd, 1), perm=perm_c, nd=nd, o=o, t=t,
            name=name)
