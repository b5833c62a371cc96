"""C for the products: `Dot` (matrix-matrix, matrix-vector, vector-matrix,
vector-vector), `Gemm` and `Gemv`, each one call into a real BLAS (see blas_lib.py).

Layouts: a 2-d operand is handed to BLAS without copying when it is row-major
(C order, any leading dimension) or the transpose of one (F order, e.g. the view
`W.T`), with the matching transpose flag; only an operand that is neither (a
doubly strided slice, negative or zero strides) is copied to C order first. A
1-d operand is read in place with its positive stride as BLAS increment. A
result written in place (Gemm/Gemv with `inplace=True`, or a reused F-ordered
output) is written directly when BLAS can address it and it shares no memory
with the factors; otherwise through a C-ordered temporary copied back.

Semantics follow the Ops' `perform`: ``beta*z + alpha*dot(x, y)`` where z may
broadcast against the product (a bias row); with ``beta == 0`` z is not read, so
NaN in it (or in a reused output buffer) never leaks into the result; a zero
summed length gives ``beta*z`` (zeros when beta is 0); empty results skip BLAS.
As in BLAS, ``alpha == 0`` skips the product (NaN in the factors is not seen).

Only float32 and float64 with every operand of the output's dtype go to BLAS
(`c_supports`); other dtypes (integers, complex, float16, mixed) and graphs
compiled where no BLAS is found run the Ops' `perform`. Large calls release the GIL.
Each call chooses its BLAS thread count (blas_threads.py: by size, capped by
`config.blas_threads`, one thread while the machine is busy); a GEMM given several
runs in panels over workbench's own threads (`wb_gemm_call`, thread_pool.py), each
panel a one-thread BLAS call.
"""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.blas_lib import BlasLibrary, find_blas
from workbench.core.link.c.blas_threads import POLICY_C
from workbench.core.link.c.interface import COpAdapter, register_c_op
from workbench.core.link.c.thread_pool import POOL_C
from workbench.core.tensor.blas import Gemm, Gemv
from workbench.core.tensor.linalg import Dot
from workbench.core.tensor.linalg.products import MatMul

__all__ = ["BLAS_DTYPES", "DotC", "GemmC", "GemvC", "MatMulC", "NOGIL_FLOPS"]

#: dtypes computed through BLAS (prefix of the BLAS routine, C type, NumPy type number).
BLAS_DTYPES: dict[str, tuple[str, str, str]] = {
    "float32": ("s", "float", "NPY_FLOAT32"),
    "float64": ("d", "double", "NPY_FLOAT64"),
}

#: Calls with at least this many multiply-adds release the GIL while BLAS runs.
NOGIL_FLOPS = 1 << 16

_SHARED_C = r"""
#define WB_NOGIL_FLOPS %(nogil)d
/* How BLAS reads a matrix of m x n items of `is` bytes with byte strides s0, s1 in
   place: row-major (*trans = 0) or as the transpose of a row-major matrix (*trans = 1,
   F order), with leading dimension *ld. Returns 0 when it cannot (the caller copies
   it to C order). The stride of a dimension of length <= 1 is never used. */
static int wb_blas_layout_raw(npy_intp m, npy_intp n, npy_intp s0, npy_intp s1,
                              npy_intp is, int *trans, wb_blasint *ld) {
  const npy_intp mm = m > 1 ? m : 1, nn = n > 1 ? n : 1;
  const int free0 = m <= 1, free1 = n <= 1;
  if (s0 %% is || s1 %% is) return 0;
  s0 /= is; s1 /= is;
  if ((free1 || s1 == 1) && (free0 || s0 >= nn)) { *trans = 0; *ld = free0 ? nn : s0; }
  else if ((free0 || s0 == 1) && (free1 || s1 >= mm)) { *trans = 1; *ld = free1 ? mm : s1; }
  else return 0;
  return *ld <= WB_BLASINT_MAX;
}

/* wb_blas_layout_raw of the 2-d array `a`. */
static int wb_blas_layout(PyArrayObject *a, int *trans, wb_blasint *ld) {
  return wb_blas_layout_raw(PyArray_DIM(a, 0), PyArray_DIM(a, 1), PyArray_STRIDE(a, 0),
                            PyArray_STRIDE(a, 1), PyArray_ITEMSIZE(a), trans, ld);
}

/* The BLAS increment of the 1-d array `v` read in place; 0 when it needs a copy
   (zero, negative or non-itemsize stride). */
static wb_blasint wb_blas_inc(PyArrayObject *v) {
  const npy_intp n = PyArray_DIM(v, 0), is = PyArray_ITEMSIZE(v), s = PyArray_STRIDE(v, 0);
  if (n <= 1) return 1;
  if (s <= 0 || s %% is) return 0;
  return (wb_blasint)(s / is);
}

/* Whether the memory spans of two arrays intersect (conservative: spans, not elements). */
static int wb_blas_overlap(PyArrayObject *a, PyArrayObject *b) {
  char *lo[2], *hi[2];
  PyArrayObject *arr[2] = {a, b};
  for (int t = 0; t < 2; t++) {
    char *p = PyArray_BYTES(arr[t]), *l = p, *h = p;
    for (int d = 0; d < PyArray_NDIM(arr[t]); d++) {
      const npy_intp n = PyArray_DIM(arr[t], d), s = PyArray_STRIDE(arr[t], d);
      if (n == 0) return 0;
      if (s > 0) h += s * (n - 1); else l += s * (n - 1);
    }
    lo[t] = l; hi[t] = h + PyArray_ITEMSIZE(arr[t]);
  }
  return lo[0] < hi[1] && lo[1] < hi[0];
}

/* Fails when a length does not fit the BLAS integer type (32-bit builds). */
static int wb_blas_fits(npy_intp n) {
  if ((unsigned long long)n > (unsigned long long)WB_BLASINT_MAX) {
    PyErr_Format(PyExc_ValueError, "a length of %%ld is too large for this BLAS's %%d-bit "
                 "integers", (long)n, (int)(8 * sizeof(wb_blasint)));
    return 0;
  }
  return 1;
}

/* A C-ordered copy of `a` (new reference, NULL with an exception set). */
static PyArrayObject *wb_blas_c_copy(PyArrayObject *a) {
  return (PyArrayObject*)PyArray_NewCopy(a, NPY_CORDER);
}
"""

_TYPED_C = r"""
/* A row-major GEMM c = alpha op(a) op(b) + beta c cut in panels along the longer side of
   c (columns: each panel repacks op(a); rows: each repacks op(b)), `width` items each. */
typedef struct {
  int ta, tb, by_columns;
  wb_blasint m, n, k, lda, ldb, ldc, width;
  %(ctype)s alpha, beta;
  const %(ctype)s *a, *b;
  %(ctype)s *c;
} wb_gemm_panels_%(t)s;

/* Panels [p0, p1) of a wb_gemm_panels, each one BLAS call (for wb_pool_run). */
static void wb_gemm_panel_%(t)s(void *ctx, npy_intp p0, npy_intp p1) {
  const wb_gemm_panels_%(t)s *g = (const wb_gemm_panels_%(t)s *)ctx;
  const int ta = g->ta ? WB_TRANS : WB_NO_TRANS, tb = g->tb ? WB_TRANS : WB_NO_TRANS;
  for (npy_intp p = p0; p < p1; p++) {
    const wb_blasint s = (wb_blasint)p * g->width;
    const wb_blasint len = g->by_columns ? g->n : g->m;
    const wb_blasint w = len - s < g->width ? len - s : g->width;
    if (g->by_columns)
      wb_cblas_%(t)sgemm(WB_ROW_MAJOR, ta, tb, g->m, w, g->k, g->alpha, g->a, g->lda,
                       g->tb ? g->b + (npy_intp)s * g->ldb : g->b + s, g->ldb, g->beta,
                       g->c + s, g->ldc);
    else
      wb_cblas_%(t)sgemm(WB_ROW_MAJOR, ta, tb, w, g->n, g->k, g->alpha,
                       g->ta ? g->a + s : g->a + (npy_intp)s * g->lda, g->lda, g->b, g->ldb,
                       g->beta, g->c + (npy_intp)s * g->ldc, g->ldc);
  }
}

/* The row-major GEMM c = alpha op(a) op(b) + beta c (op: transposed when ta / tb) on the
   threads the policy gives the call at `site` (blas_threads.py): on several, in panels
   shared by the caller and the pool's helpers (thread_pool.py), each panel a one-thread
   BLAS call, so a helper the scheduler has not run never holds the call up. */
static void wb_gemm_call_%(t)s(wb_blas_site *site, int ta, int tb, wb_blasint m,
                               wb_blasint n, wb_blasint k, %(ctype)s alpha,
                               const %(ctype)s *a, wb_blasint lda, const %(ctype)s *b,
                               wb_blasint ldb, %(ctype)s beta, %(ctype)s *c, wb_blasint ldc) {
  wb_blas_call call;
  wb_blas_begin_pooled(&call, site, (double)m * n * k, 1);
  if (call.pooled) {
    wb_gemm_panels_%(t)s g = {ta, tb, n >= m, m, n, k, lda, ldb, ldc, 0, alpha, beta, a, b, c};
    const wb_blasint len = g.by_columns ? n : m;
    const double per = wb_blas_policy[WB_BP_PANELS] >= 1 ? wb_blas_policy[WB_BP_PANELS] : 1;
    const wb_blasint want = (wb_blasint)(per * call.threads);
    wb_blasint width = (len + want - 1) / want;
    if (width > 16) width = (width + 15) / 16 * 16;  /* whole blocks of the BLAS kernel */
    g.width = width;
    const npy_intp panels = (len + width - 1) / width;
    call.worked = wb_pool_run(wb_gemm_panel_%(t)s, &g, panels, 1, call.threads - 1,
                              wb_blas_policy[WB_BP_HOLD] != 0);
  } else {
    wb_cblas_%(t)sgemm(WB_ROW_MAJOR, ta ? WB_TRANS : WB_NO_TRANS, tb ? WB_TRANS : WB_NO_TRANS,
                     m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  wb_blas_end(&call);
}
/* c[...] = beta * c[...] for an array of rank <= 2; exactly 0 when beta == 0. */
static void wb_blas_scale_%(t)s(PyArrayObject *c, %(ctype)s beta) {
  const int nd = PyArray_NDIM(c);
  const npy_intp n0 = nd > 0 ? PyArray_DIM(c, 0) : 1, n1 = nd > 1 ? PyArray_DIM(c, 1) : 1;
  const npy_intp s0 = nd > 0 ? PyArray_STRIDE(c, 0) : 0, s1 = nd > 1 ? PyArray_STRIDE(c, 1) : 0;
  char *base = PyArray_BYTES(c);
  for (npy_intp i = 0; i < n0; i++)
    for (npy_intp j = 0; j < n1; j++) {
      %(ctype)s *p = (%(ctype)s*)(base + i * s0 + j * s1);
      *p = beta == 0 ? (%(ctype)s)0 : beta * *p;
    }
}

/* c = alpha * a.b + beta * c for 2-d arrays (a: m x k, b: k x n, c: m x n; shapes
   checked by the caller). c is not read when beta == 0. a and b are read in place
   (transposed when F-ordered) or copied; c is written in place when BLAS can address
   it and it overlaps neither factor, else through a C-ordered temporary.
   Returns 0, or -1 with a Python exception set. */
static int wb_gemm_%(t)s(PyArrayObject *a, PyArrayObject *b, %(ctype)s alpha, %(ctype)s beta,
                         PyArrayObject *c) {
  const npy_intp m = PyArray_DIM(c, 0), n = PyArray_DIM(c, 1), k = PyArray_DIM(a, 1);
  if (m == 0 || n == 0) return 0;
  if (k == 0) { wb_blas_scale_%(t)s(c, beta); return 0; }
  if (!wb_blas_fits(m) || !wb_blas_fits(n) || !wb_blas_fits(k)) return -1;
  int tc; wb_blasint ldc;
  if (!wb_blas_layout(c, &tc, &ldc) || wb_blas_overlap(c, a) || wb_blas_overlap(c, b)) {
    PyArrayObject *tmp = beta != 0 ? wb_blas_c_copy(c)
        : (PyArrayObject*)PyArray_EMPTY(2, PyArray_DIMS(c), %(npy)s, 0);
    if (!tmp) return -1;
    int r = wb_gemm_%(t)s(a, b, alpha, beta, tmp);
    if (r == 0) r = PyArray_CopyInto(c, tmp) < 0 ? -1 : 0;
    Py_DECREF(tmp);
    return r;
  }
  PyArrayObject *ac = NULL, *bc = NULL;
  int ta, tb; wb_blasint lda, ldb;
  if (!wb_blas_layout(a, &ta, &lda)) {
    if (!(ac = wb_blas_c_copy(a))) return -1;
    a = ac; wb_blas_layout(a, &ta, &lda);
  }
  if (!wb_blas_layout(b, &tb, &ldb)) {
    if (!(bc = wb_blas_c_copy(b))) { Py_XDECREF(ac); return -1; }
    b = bc; wb_blas_layout(b, &tb, &ldb);
  }
  const %(ctype)s *pa = (const %(ctype)s*)PyArray_DATA(a), *pb = (const %(ctype)s*)PyArray_DATA(b);
  %(ctype)s *pc = (%(ctype)s*)PyArray_DATA(c);
  const double work = (double)m * n * k;
  PyThreadState *ts = work >= WB_NOGIL_FLOPS ? PyEval_SaveThread() : NULL;
  static wb_blas_site site;  /* this helper's one-thread estimate (blas_threads.py) */
  if (!tc)  /* c row-major: c = op(a) op(b) */
    wb_gemm_call_%(t)s(&site, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc);
  else      /* c F-ordered: its row-major transpose is op(b)^T op(a)^T */
    wb_gemm_call_%(t)s(&site, !tb, !ta, n, m, k, alpha, pb, ldb, pa, lda, beta, pc, ldc);
  if (ts) PyEval_RestoreThread(ts);
  Py_XDECREF(ac); Py_XDECREF(bc);
  return 0;
}

/* y = alpha * op(a).x + beta * y, op(a) = a (m x k) or, with transpose_a, a^T (a is
   k x m); x has length k, y length m. y is zeroed first when beta == 0 (NaN in it must
   not leak). Layout handling as in wb_gemm. Returns 0, or -1 with an exception set. */
static int wb_gemv_%(t)s(PyArrayObject *a, PyArrayObject *x, %(ctype)s alpha, %(ctype)s beta,
                         PyArrayObject *y, int transpose_a) {
  const npy_intp m = PyArray_DIM(y, 0), k = PyArray_DIM(x, 0);
  if (m == 0) return 0;
  if (k == 0) { wb_blas_scale_%(t)s(y, beta); return 0; }
  if (!wb_blas_fits(m) || !wb_blas_fits(k)) return -1;
  wb_blasint incy = wb_blas_inc(y);
  if (!incy || wb_blas_overlap(y, a) || wb_blas_overlap(y, x)) {
    PyArrayObject *tmp = beta != 0 ? wb_blas_c_copy(y)
        : (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(y), %(npy)s, 0);
    if (!tmp) return -1;
    int r = wb_gemv_%(t)s(a, x, alpha, beta, tmp, transpose_a);
    if (r == 0) r = PyArray_CopyInto(y, tmp) < 0 ? -1 : 0;
    Py_DECREF(tmp);
    return r;
  }
  if (beta == 0) wb_blas_scale_%(t)s(y, 0);
  PyArrayObject *ac = NULL, *xc = NULL;
  int ta; wb_blasint lda;
  if (!wb_blas_layout(a, &ta, &lda)) {
    if (!(ac = wb_blas_c_copy(a))) return -1;
    a = ac; wb_blas_layout(a, &ta, &lda);
  }
  wb_blasint incx = wb_blas_inc(x);
  if (!incx) {
    if (!(xc = wb_blas_c_copy(x))) { Py_XDECREF(ac); return -1; }
    x = xc; incx = 1;
  }
  /* the stored row-major matrix s is a (ta == 0) or a^T (ta == 1); op(a) = s or s^T */
  const npy_intp rows = ta ? PyArray_DIM(a, 1) : PyArray_DIM(a, 0);
  const npy_intp cols = ta ? PyArray_DIM(a, 0) : PyArray_DIM(a, 1);
  const int trans = ta ^ (transpose_a != 0);
  const double work = (double)m * k;
  PyThreadState *ts = work >= WB_NOGIL_FLOPS ? PyEval_SaveThread() : NULL;
  static wb_blas_site site;  /* this helper's one-thread estimate (blas_threads.py) */
  wb_blas_call call;
  wb_blas_begin(&call, &site, work);
  wb_cblas_%(t)sgemv(WB_ROW_MAJOR, trans ? WB_TRANS : WB_NO_TRANS, rows, cols, alpha,
                   (const %(ctype)s*)PyArray_DATA(a), lda, (const %(ctype)s*)PyArray_DATA(x),
                   incx, beta, (%(ctype)s*)PyArray_DATA(y), incy);
  wb_blas_end(&call);
  if (ts) PyEval_RestoreThread(ts);
  Py_XDECREF(ac); Py_XDECREF(xc);
  return 0;
}

/* *out = x.y for 1-d arrays of one length. Returns 0, or -1 with an exception set. */
static int wb_dot_%(t)s(PyArrayObject *x, PyArrayObject *y, %(ctype)s *out) {
  const npy_intp n = PyArray_DIM(x, 0);
  *out = 0;
  if (n == 0) return 0;
  if (!wb_blas_fits(n)) return -1;
  PyArrayObject *xc = NULL, *yc = NULL;
  wb_blasint incx = wb_blas_inc(x), incy = wb_blas_inc(y);
  if (!incx) { if (!(xc = wb_blas_c_copy(x))) return -1; x = xc; incx = 1; }
  if (!incy) { if (!(yc = wb_blas_c_copy(y))) { Py_XDECREF(xc); return -1; } y = yc; incy = 1; }
  static wb_blas_site site;
  wb_blas_call call;
  wb_blas_begin(&call, &site, (double)n);
  *out = wb_cblas_%(t)sdot(n, (const %(ctype)s*)PyArray_DATA(x), incx,
                          (const %(ctype)s*)PyArray_DATA(y), incy);
  wb_blas_end(&call);
  Py_XDECREF(xc); Py_XDECREF(yc);
  return 0;
}
"""


def _blas() -> BlasLibrary:
    lib = find_blas()
    if lib is None:  # c_supports said no: code generation is never asked
        raise RuntimeError("no BLAS found for the C linker (see workbench.core.link.c.blas_lib)")
    return lib


class _BlasC(COpAdapter):
    """What the three products share: BLAS declarations, helpers, link flags."""

    def c_supports(self, node: Any) -> bool:
        """BLAS for float32/float64 when every operand has the output's dtype and a BLAS
        is found; anything else runs `perform`. A WORKBENCH_BLAS naming a missing or
        unknown BLAS raises (an explicit choice is not silently ignored)."""
        if find_blas() is None:
            return False
        dtype = str(node.outputs[0].type.dtype)
        return dtype in BLAS_DTYPES and all(str(v.type.dtype) == dtype for v in node.inputs)

    def why_not_supported(self, node: Any) -> str | None:
        """The linker report's reason when `c_supports` says no."""
        if find_blas() is None:
            return f"{node.op}: no BLAS found for the C linker; the node runs its perform"
        dtypes = ", ".join(str(v.type.dtype) for v in node.inputs)
        return (f"{node.op}: BLAS computes float32 or float64 with every operand of the "
                f"output's dtype, not ({dtypes}) -> {node.outputs[0].type.dtype}; the node "
                "runs its perform (NumPy)")

    def _dtype(self, node: Any) -> tuple[str, str, str]:
        return BLAS_DTYPES[str(node.outputs[0].type.dtype)]

    def c_headers(self) -> list[str]:
        return ["<numpy/arrayobject.h>"]

    def c_support_code(self) -> str:
        return (_blas().declarations() + POLICY_C + POOL_C
                + _SHARED_C % {"nogil": NOGIL_FLOPS})

    def c_init_code(self) -> list[str]:
        """Find the thread policy block (blas_threads.py) when the module loads."""
        return ["if (wb_blas_policy_init() < 0) return NULL;"]

    def c_support_code_apply(self, node: Any, name: str) -> str:
        """The gemm/gemv/dot helpers of this node's dtype only (named by dtype, not by
        node: a module holds one node)."""
        t, ctype, npy = self._dtype(node)
        return _TYPED_C % {"t": t, "ctype": ctype, "npy": npy}

    def c_lib_dirs(self) -> list[str]:
        return [_blas().lib_dir]

    def c_compile_args(self) -> list[str]:
        return _blas().link_args

    def c_libraries(self) -> list[str]:
        return [_blas().library, "pthread"]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (7,)

    @staticmethod
    def _out(o: str, nd: int, dims: str, npy: str, fail: str) -> str:
        """C making `o` a writeable C-ordered array of shape `dims` (reusing it if it fits)."""
        checks = " && ".join(f"PyArray_DIM({o}, {d}) == {dims}[{d}]" for d in range(nd))
        reuse = f"{o} && PyArray_ISWRITEABLE({o}) && PyArray_IS_C_CONTIGUOUS({o})"
        if checks:
            reuse += " && " + checks
        return (f"if (!({reuse})) {{\n  Py_XDECREF({o});\n"
                f"  {o} = (PyArrayObject*)PyArray_EMPTY({nd}, {dims}, {npy}, 0);\n"
                f"  if (!{o}) {fail}\n}}\n")


def _aligned_check(label: str, x: str, y: str, xd: int, yd: int, fail: str) -> str:
    """numpy.dot's "not aligned" error when the summed lengths differ (`label`: the C
    expression naming the node)."""
    x_axis, y_axis = xd - 1, max(yd - 2, 0)
    shape_fmt = {1: "(%ld,)", 2: "(%ld,%ld)"}
    x_args = ", ".join(f"(long)PyArray_DIM({x}, {d})" for d in range(xd))
    y_args = ", ".join(f"(long)PyArray_DIM({y}, {d})" for d in range(yd))
    return (f"if (PyArray_DIM({x}, {x_axis}) != PyArray_DIM({y}, {y_axis})) {{\n"
            f"  PyErr_Format(PyExc_ValueError, \"%s: shapes {shape_fmt[xd]} and "
            f"{shape_fmt[yd]} not aligned: %ld (dim {x_axis}) != %ld (dim {y_axis})\", "
            f"{label}, {x_args}, {y_args}, (long)PyArray_DIM({x}, {x_axis}), "
            f"(long)PyArray_DIM({y}, {y_axis}));\n  {fail}\n}}\n")


@register_c_op(Dot)
class DotC(_BlasC):
    """numpy.dot of rank-1/2 operands: gemm, gemv (the vector-matrix case through the
    transposed matrix) or dot, with alpha = 1 and beta = 0."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        t, ctype, npy = self._dtype(node)
        fail, label = sub["fail"], sub["label"]
        (x, y), (o,) = inputs, outputs
        xd, yd = node.inputs[0].type.ndim, node.inputs[1].type.ndim
        code = [_aligned_check(label, x, y, xd, yd, fail)]
        if xd == 1 and yd == 1:
            code.append(self._out(o, 0, "NULL", npy, fail))
            code.append(f"if (wb_dot_{t}({x}, {y}, ({ctype}*)PyArray_DATA({o})) < 0) {fail}")
            return "\n".join(code)
        if xd == 2 and yd == 2:
            dims = f"npy_intp dims[2] = {{PyArray_DIM({x}, 0), PyArray_DIM({y}, 1)}};"
            call = f"wb_gemm_{t}({x}, {y}, 1, 0, {o})"
            nd = 2
        elif xd == 2:
            dims = f"npy_intp dims[1] = {{PyArray_DIM({x}, 0)}};"
            call = f"wb_gemv_{t}({x}, {y}, 1, 0, {o}, 0)"
            nd = 1
        else:
            dims = f"npy_intp dims[1] = {{PyArray_DIM({y}, 1)}};"
            call = f"wb_gemv_{t}({y}, {x}, 1, 0, {o}, 1)"
            nd = 1
        code += [dims, self._out(o, nd, "dims", npy, fail), f"if ({call} < 0) {fail}"]
        return "\n".join(code)


class _AccumulateC(_BlasC):
    """Gemm and Gemv: ``beta*z + alpha*product`` with z broadcasting or overwritten.

    When the product has length 1 along an axis where z is longer (a one-row factor:
    ``dot(v, M) + v`` with M of shape (n, 1)), BLAS writes the product into a temporary
    and a loop spreads it over z's shape, as numpy's ``+`` broadcasts."""

    def c_run_time_params(self, node: Any) -> list[str]:
        """Whether the node accumulates into z ("1") or into a copy ("0"): run-time data,
        so that the in-place and the copying node share one kind (codegen.node_labels)."""
        return ["1" if self.op.inplace else "0"]

    def _inplace(self, sub: dict[str, Any]) -> str:
        """A C condition: whether this node accumulates into z (its run-time parameter,
        else the Op's constant where the caller passes labels of its own)."""
        if "params" in sub:
            return f"({sub['params'][0]}[0] == '1')"
        return "1" if self.op.inplace else "0"

    def _accumulate(self, node: Any, inputs: list[str], outputs: list[str],
                    sub: dict[str, str], nd: int, dims: str, call: Any) -> str:
        """C for the node; `call(out, beta)` is the BLAS call writing into `out`."""
        t, ctype, npy = self._dtype(node)
        fail, label = sub["fail"], sub["label"]
        z, alpha, _, _, beta = inputs
        (o,) = outputs
        fmt = "(" + ",".join(["%ld"] * nd) + ("," if nd == 1 else "") + ")"
        z_args = ", ".join(f"(long)PyArray_DIM({z}, {d})" for d in range(nd))
        r_args = ", ".join(f"(long)dims[{d}]" for d in range(nd))
        code = [dims,
                f"const {ctype} alpha = *({ctype}*)PyArray_DATA({alpha});",
                f"const {ctype} beta = *({ctype}*)PyArray_DATA({beta});"]
        fits = " || ".join(f"(PyArray_DIM({z}, {d}) != dims[{d}] && PyArray_DIM({z}, {d}) != 1"
                           f" && dims[{d}] != 1)" for d in range(nd))
        code.append(f"if ({fits}) {{\n  PyErr_Format(PyExc_ValueError, \"%s: the "
                    f"accumulated operand of shape {fmt} cannot broadcast against the product "
                    f"of shape {fmt}\", {label}, {z_args}, {r_args});\n  {fail}\n}}")
        full = ", ".join(f"PyArray_DIM({z}, {d}) == 1 ? dims[{d}] : PyArray_DIM({z}, {d})"
                         for d in range(nd))
        spread = " || ".join(f"odims[{d}] != dims[{d}]" for d in range(nd))
        code.append(f"npy_intp odims[{nd}] = {{{full}}};")
        code.append(f"if ({spread}) {{\n{self._spread(node, inputs, outputs, sub, nd, call)}}}"
                    " else {")
        fresh = (self._out(o, nd, "dims", npy, fail)
                 + f"if (beta != 0 && PyArray_CopyInto({o}, {z}) < 0) {fail}")
        code.append(f"if ({self._inplace(sub)}) {{\n{self._into_z(z, o, nd, fresh, fail)}\n}}"
                    f" else {{\n{fresh}\n}}")
        code.append(f"if ({call(o, 'beta')} < 0) {fail}")
        code.append("}")
        return "\n".join(code)

    @staticmethod
    def _into_z(z: str, o: str, nd: int, fresh: str, fail: str) -> str:
        """C making the output `o` be z itself (or a copy of a read-only z); when z does
        not have the result's shape (it broadcasts), `fresh` makes a new output instead,
        as without inplace: the rewrite that makes the node inplace cannot always prove
        the shapes equal (a shared weight of unknown static shape)."""
        exact = " || ".join(f"PyArray_DIM({z}, {d}) != odims[{d}]" for d in range(nd))
        return (f"if ({exact}) {{\n{fresh}\n}} else {{\n"
                f"Py_XDECREF({o});\n"
                f"if (PyArray_ISWRITEABLE({z})) {{ {o} = {z}; Py_INCREF({o}); }}\n"
                f"else {{ {o} = (PyArrayObject*)PyArray_NewCopy({z}, NPY_ANYORDER); "
                f"if (!{o}) {fail} }}\n}}")

    def _spread(self, node: Any, inputs: list[str], outputs: list[str], sub: dict[str, str],
                nd: int, call: Any) -> str:
        """C for a product broadcast over z: BLAS into a temporary, then
        ``out = beta*z + product`` element by element (z not read when beta is 0)."""
        _, ctype, npy = self._dtype(node)
        fail = sub["fail"]
        z = inputs[0]
        (o,) = outputs
        fresh = self._out(o, nd, "odims", npy, fail)
        prepare = (f"if ({self._inplace(sub)}) {{\n{self._into_z(z, o, nd, fresh, fail)}\n}}"
                   f" else {{\n{fresh}\n}}")
        axes = "ij"[:nd]
        loops = "".join(f"for (npy_intp {a} = 0; {a} < odims[{d}]; ++{a}) "
                        for d, a in enumerate(axes))

        def at(array: str, own_dims: str) -> str:
            index = ", ".join(f"{own_dims}[{d}] == 1 ? 0 : {a}" for d, a in enumerate(axes))
            return f"*({ctype}*)PyArray_GETPTR{nd}({array}, {index})"

        return (f"{prepare}\n"
                f"PyArrayObject *wb_product = "
                f"(PyArrayObject*)PyArray_ZEROS({nd}, dims, {npy}, 0);\n"
                f"if (!wb_product) {fail}\n"
                f"if ({call('wb_product', '0')} < 0) {{ Py_DECREF(wb_product); {fail} }}\n"
                f"const npy_intp *zdims = PyArray_DIMS({z});\n"
                f"{loops}{{\n"
                f"  const {ctype} zv = beta == 0 ? 0 : beta * {at(z, 'zdims')};\n"
                f"  *({ctype}*)PyArray_GETPTR{nd}({o}, {', '.join(axes)}) = "
                f"zv + {at('wb_product', 'dims')};\n}}\n"
                f"Py_DECREF(wb_product);\n")


@register_c_op(Gemm)
class GemmC(_AccumulateC):
    """``beta*z + alpha*dot(x, y)`` as one gemm call (z copied into the output first
    unless inplace, in which case BLAS accumulates into z itself)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        t = self._dtype(node)[0]
        _, _, x, y, _ = inputs
        check = _aligned_check(sub["label"], x, y, 2, 2, sub["fail"])
        dims = f"npy_intp dims[2] = {{PyArray_DIM({x}, 0), PyArray_DIM({y}, 1)}};"
        return check + self._accumulate(
            node, inputs, outputs, sub, 2, dims,
            lambda out, beta: f"wb_gemm_{t}({x}, {y}, alpha, {beta}, {out})")


@register_c_op(Gemv)
class GemvC(_AccumulateC):
    """``beta*y + alpha*dot(A, x)`` as one gemv call (F-ordered A through the transposed
    routine)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        t = self._dtype(node)[0]
        _, _, a, x, _ = inputs
        check = _aligned_check(sub["label"], a, x, 2, 1, sub["fail"])
        dims = f"npy_intp dims[1] = {{PyArray_DIM({a}, 0)}};"
        return check + self._accumulate(
            node, inputs, outputs, sub, 1, dims,
            lambda out, beta: f"wb_gemv_{t}({a}, {x}, alpha, {beta}, {out}, 0)")


@register_c_op(MatMul)
class MatMulC(_BlasC):
    """numpy.matmul with batch dimensions: one gemm per item of the broadcast batch.

    The core strides are the same for every item, so the layout (row-major, or the
    transpose of one) is chosen once; an operand BLAS cannot address is copied to C
    order once, whole. The output is C-ordered. A 1-d operand is a row (first) or a
    column (second) read with its stride. The GIL is released around the loop when
    the whole product is large; the thread policy chooses per item."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        t, ctype, npy = self._dtype(node)
        fail, label = sub["fail"], sub["label"]
        (x, y), (o,) = inputs, outputs
        xd, yd, od = node.inputs[0].type.ndim, node.inputs[1].type.ndim, node.outputs[0].type.ndim
        nb = od - (xd >= 2) - (yd >= 2)
        xb, yb = xd - (2 if xd >= 2 else 1), yd - (2 if yd >= 2 else 1)
        nbl = max(nb, 1)
        lines = [f"npy_intp wb_b[{nbl}], wb_i[{nbl}], wb_xs[{nbl}], wb_ys[{nbl}], "
                 f"wb_od[{max(od, 1)}];",
                 f"for (int d = 0; d < {nbl}; d++) {{ wb_b[d] = 1; wb_i[d] = 0; wb_xs[d] = 0; "
                 "wb_ys[d] = 0; }",
                 "PyArrayObject *wb_xc = NULL, *wb_yc = NULL;"]
        # core lengths and strides (a 1-d operand: a row of x, a column of y)
        if xd >= 2:
            lines.append(f"const npy_intp n = PyArray_DIM({x}, {xd - 2}), "
                         f"k = PyArray_DIM({x}, {xd - 1});")
        else:
            lines.append(f"const npy_intp n = 1, k = PyArray_DIM({x}, 0);")
        if yd >= 2:
            lines.append(f"const npy_intp ky = PyArray_DIM({y}, {yd - 2}), "
                         f"m = PyArray_DIM({y}, {yd - 1});")
        else:
            lines.append(f"const npy_intp ky = PyArray_DIM({y}, 0), m = 1;")
        lines.append(f"""if (k != ky) {{
  PyErr_Format(PyExc_ValueError, "%s: matmul: the last dimension of the first operand "
               "(%ld) differs from the %s dimension of the second (%ld)", {label},
               (long)k, {'"second-to-last"' if yd >= 2 else '"only"'}, (long)ky);
  {fail}
}}""")
        for arr, rank in ((x, xb), (y, yb)):
            for dd in range(rank):
                d = dd + nb - rank
                lines.append(f"""{{ const npy_intp len = PyArray_DIM({arr}, {dd});
  if (len != 1) {{
    if (wb_b[{d}] != 1 && wb_b[{d}] != len) {{
      PyErr_Format(PyExc_ValueError, "%s: matmul: batch dimension {d} has length %ld in one "
                   "operand and %ld in the other: they cannot be broadcast together", {label},
                   (long)wb_b[{d}], (long)len);
      {fail}
    }}
    wb_b[{d}] = len;
  }} }}""")
        # output shape
        lines.append(f"for (int d = 0; d < {nb}; d++) wb_od[d] = wb_b[d];")
        if xd >= 2:
            lines.append(f"wb_od[{nb}] = n;")
        if yd >= 2:
            lines.append(f"wb_od[{od - 1}] = m;")
        lines.append(self._out(o, od, "wb_od", npy, fail))
        lines.append(f"npy_intp wb_total = 1;\nfor (int d = 0; d < {nb}; d++) wb_total *= wb_b[d];")

        def core_strides(arr: str, nd: int, first: bool) -> tuple[str, str]:
            if nd >= 2:
                return f"PyArray_STRIDE({arr}, {nd - 2})", f"PyArray_STRIDE({arr}, {nd - 1})"
            return ("0", f"PyArray_STRIDE({arr}, 0)") if first else \
                (f"PyArray_STRIDE({arr}, 0)", "0")

        sx0, sx1 = core_strides("wb_xa", xd, True)
        sy0, sy1 = core_strides("wb_ya", yd, False)
        batch_strides = []
        for arr, rank, strides in (("wb_xa", xb, "wb_xs"), ("wb_ya", yb, "wb_ys")):
            for dd in range(rank):
                d = dd + nb - rank
                batch_strides.append(f"{strides}[{d}] = PyArray_DIM({arr}, {dd}) == 1 ? 0 : "
                                     f"PyArray_STRIDE({arr}, {dd});")
        lines.append(f"""if (wb_total > 0 && n > 0 && m > 0) {{
  {ctype} *pc = ({ctype} *)PyArray_DATA({o});
  if (k == 0) memset(pc, 0, (size_t)(wb_total * n * m) * sizeof({ctype}));
  else {{
    PyArrayObject *wb_xa = {x}, *wb_ya = {y};
    int ta, tb; wb_blasint lda, ldb;
    if (!wb_blas_fits(n) || !wb_blas_fits(m) || !wb_blas_fits(k)) {fail}
    if (!wb_blas_layout_raw(n, k, {sx0}, {sx1}, sizeof({ctype}), &ta, &lda)) {{
      if (!(wb_xc = wb_blas_c_copy({x}))) {fail}
      wb_xa = wb_xc;
      wb_blas_layout_raw(n, k, {sx0}, {sx1}, sizeof({ctype}), &ta, &lda);
    }}
    if (!wb_blas_layout_raw(k, m, {sy0}, {sy1}, sizeof({ctype}), &tb, &ldb)) {{
      if (!(wb_yc = wb_blas_c_copy({y}))) {{ Py_XDECREF(wb_xc); {fail} }}
      wb_ya = wb_yc;
      wb_blas_layout_raw(k, m, {sy0}, {sy1}, sizeof({ctype}), &tb, &ldb);
    }}
    {chr(10).join(batch_strides)}
    const char *xa = PyArray_BYTES(wb_xa), *ya = PyArray_BYTES(wb_ya);
    const wb_blasint ldc = m;
    const double work = (double)n * m * k;
    PyThreadState *ts = work * wb_total >= WB_NOGIL_FLOPS ? PyEval_SaveThread() : NULL;
    static wb_blas_site site;  /* one item's one-thread estimate (blas_threads.py) */
    for (npy_intp it = 0; it < wb_total; it++) {{
      const char *px = xa, *py = ya;
      for (int d = 0; d < {nb}; d++) {{ px += wb_i[d] * wb_xs[d]; py += wb_i[d] * wb_ys[d]; }}
      wb_gemm_call_{t}(&site, ta, tb, n, m, k, 1, (const {ctype} *)px, lda,
                       (const {ctype} *)py, ldb, 0, pc + it * n * m, ldc);
      for (int d = {nb} - 1; d >= 0; d--) {{ if (++wb_i[d] < wb_b[d]) break; wb_i[d] = 0; }}
    }}
    if (ts) PyEval_RestoreThread(ts);
    Py_XDECREF(wb_xc); Py_XDECREF(wb_yc);
  }}
}}""")
        return "\n".join(lines)
