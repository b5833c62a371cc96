"""C for the softmax family: `Softmax`, `LogSoftmax` and `LogSumExp` as fused row kernels.

Each node views its input as rows: the reduced axes are moved last (a transpose,
free) and the data made C-contiguous in the working float dtype (no copy in the
usual case of rows of a C-contiguous float array; otherwise NumPy's fast copy and
cast). Every row then takes three vectorised passes:
1. the maximum (NaN tracked on the side so it propagates),
2. the sum of ``exp(x - shift)`` (softmax stores the exponentials on the way): for
   float64 with AVX-512, 8 at a time with `AVX512_EXP` (within 1.5 ulp of the exact exp);
   otherwise with libmvec's SIMD exp through the `declare simd` declarations (within the
   4 ulp libmvec documents; `WORKBENCH_C_AVX512=off` forces this path, see compiler.py),
3. the write: softmax multiplies by the reciprocal of the sum, log-softmax
   subtracts the log of the sum, logsumexp stores ``log(sum) + shift``.
Sums run over blocks: a vectorised leaf per block of SUM_BLOCK elements, then the
block sums added (in double for float32 rows). The non-finite cases follow `perform` exactly because
the kernels do the same IEEE arithmetic: softmax shifts by the raw maximum (rows
with NaN, +inf or only -inf give NaN), log-softmax and logsumexp by the maximum
when finite and 0 otherwise (scipy's rule); an empty reduction gives -inf.
float16/bfloat16 outputs have no C and run through `perform`.

Large inputs (rows x row length >= `PARALLEL_MIN_ELEMENTS`, at least two rows) share their
rows among helper threads (`PARALLEL_SUPPORT`): each row is still computed by one thread
with the same kernel, so the results are bit-identical to the serial loop. The thread
count obeys the one cap of compiled code, the `max` of blas_threads.py's policy block read
at every such call (`config.blas_threads`, `set_max_threads`, ``WORKBENCH_NUM_THREADS``;
unset: the BLAS's own count, from ``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS`` when it
loaded or a threadpoolctl limit), never more than the cores allowed; 1 keeps the serial
loop. No back-off as for BLAS calls: like a pooled GEMM, the caller never waits for a
helper that has not started. Small inputs never touch the threads. Every call notes its
threads, given and worked, for the profiler (`last_worked_threads`).
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

from workbench.core.link.c.blas_threads import CAP_C
from workbench.core.link.c.interface import COpAdapter, register_c_op
from workbench.core.link.c.ops.buffers import alloc_output
from workbench.core.link.c.ops.reduction import fill
from workbench.core.link.c.scalar_c import VECTOR_MATH_DECLARATIONS
from workbench.core.link.c.thread_pool import POOL_C
from workbench.core.link.c.types import C_TYPES, c_type_name, type_num
from workbench.core.tensor.special import LogSoftmax, LogSumExp, Softmax

__all__ = ["LogSumExpC", "PARALLEL_MIN_ELEMENTS", "ROW_KERNELS", "ROW_KERNELS_OF",
           "RowKernelC"]

#: Elements summed by one vectorised leaf before the block sums are added.
SUM_BLOCK = 1024

#: Input size (rows x row length) from which the rows are split among threads: below
#: it, waking a helper costs more than it saves. Read when the C source is generated (a
#: different value is a different source, hence a different module).
PARALLEL_MIN_ELEMENTS = 100_000


#: The row loops share their rows through the helper threads of thread_pool.py (the
#: caller takes rows too and never waits for a helper that has not started), as many as
#: the policy's cap allows (blas_threads.CAP_C). Each row is computed by one thread with
#: the same kernel, so results do not depend on threads.
PARALLEL_SUPPORT = CAP_C + POOL_C + r"""
typedef struct { const void *src; void *dst; npy_intp n; } wb_rows_ctx;

/* Threads for `rows` rows of `n` elements: 1 below the size threshold, else what the
   policy allows now (the cap, the cores), at most one per row. */
static int wb_row_threads(const npy_intp rows, const npy_intp n) {
  if (rows < 2 || rows * n < WB_PAR_MIN) return 1;
  long t = wb_threads_allowed();
  if (t > WB_POOL_MAX + 1) t = WB_POOL_MAX + 1;
  if (t > rows) t = (long)rows;
  return t > 1 ? (int)t : 1;
}

/* fn(ctx, 0, rows), the rows shared among helper threads when the input is large; notes
   the threads given and those that computed rows. */
static void wb_run_rows(const wb_pool_fn fn, void *ctx, const npy_intp rows, const npy_intp n) {
  const int threads = wb_row_threads(rows, n);
  int worked = 1;
  if (threads < 2) fn(ctx, 0, rows);
  else worked = wb_pool_run(fn, ctx, rows, rows / ((npy_intp)threads * 8), threads - 1,
                            wb_blas_policy[WB_BP_HOLD] != 0);
  wb_threads_note(threads, worked);
}
"""


def _exp_constants() -> dict[str, str]:
    """Hex literals of the AVX-512 exp: 2**(j/16) for j < 16, 16/ln 2, and ln(2)/16 split in
    a high part and the rest (each correctly rounded from 40 digits)."""
    with localcontext() as ctx:
        ctx.prec = 40
        ln2 = Decimal(2).ln()
        table = [float(Decimal(2) ** (Decimal(j) / 16)) for j in range(16)]
        hi = float(ln2 / 16)
        lo = float(ln2 / 16 - Decimal(hi))
        inv = float(16 / ln2)
    return {"table": ", ".join(v.hex() for v in table), "inv_ln2_16": inv.hex(),
            "ln2_16_hi": hi.hex(), "ln2_16_lo": lo.hex()}


#: float64 exp leaves with AVX-512 (replacing libmvec's 4-wide exp, 2.4x slower here):
#: exp(x) = 2**(k/16) * exp(r) with k = round(16 x / ln 2), |r| <= ln(2)/32; the 16 powers
#: 2**(j/16) sit in two registers (a permute, no gather); exp(r) - 1 is its Taylor
#: polynomial to r**7 (truncation below 2e-18); `scalef` applies 2**floor(k/16) with IEEE
#: overflow to inf and gradual underflow to subnormals and 0. Inputs are clamped to
#: [-746, 710] first (NaN kept). Bound: the rounded 2**(j/16) (up to 1 ulp of the result)
#: plus the final rounding (0.5 ulp): 1.5 ulp of the exact exp. Measured against exp in
#: long double on 3 million inputs in [-746, -40]: 1.02 ulp (libmvec's exp: 3.00 ulp).
AVX512_EXP = fill(r"""
#include <immintrin.h>
static const double wb_exp2_16[16] = {${table}};
static inline __m512d wb_exp8(__m512d x, const __m512d t0, const __m512d t1) {
  x = _mm512_max_pd(_mm512_set1_pd(-746.0), x);  /* a NaN x is kept: the second operand */
  x = _mm512_min_pd(_mm512_set1_pd(710.0), x);
  const __m512d shifter = _mm512_set1_pd(0x1.8p52);
  const __m512d t = _mm512_fmadd_pd(x, _mm512_set1_pd(${inv_ln2_16}), shifter);
  const __m512d k = _mm512_sub_pd(t, shifter);  /* round(16 x / ln 2); its low bits are in t */
  __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(${ln2_16_hi}), x);
  r = _mm512_fnmadd_pd(k, _mm512_set1_pd(${ln2_16_lo}), r);
  __m512d q = _mm512_set1_pd(1.0 / 5040);
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 720));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 120));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 24));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 6));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(0.5));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
  q = _mm512_mul_pd(q, r);  /* exp(r) - 1 */
  const __m512d p = _mm512_permutex2var_pd(t0, _mm512_castpd_si512(t), t1);  /* 2^(j/16) */
  return _mm512_scalef_pd(_mm512_fmadd_pd(p, q, p), _mm512_mul_pd(k, _mm512_set1_pd(0.0625)));
}
static inline __mmask8 wb_tail_mask(const npy_intp left) {
  return (__mmask8)((1u << (unsigned)left) - 1u);
}
WB_NOINLINE static npy_float64 wb_expsum_leaf_float64(const npy_float64 *restrict x,
                                                      const npy_intp n, const npy_float64 shift) {
  const __m512d t0 = _mm512_loadu_pd(wb_exp2_16), t1 = _mm512_loadu_pd(wb_exp2_16 + 8);
  const __m512d sh = _mm512_set1_pd(shift);
  __m512d s = _mm512_setzero_pd();
  npy_intp i = 0;
  for (; i + 8 <= n; i += 8)
    s = _mm512_add_pd(s, wb_exp8(_mm512_sub_pd(_mm512_loadu_pd(x + i), sh), t0, t1));
  if (i < n) {
    const __mmask8 m = wb_tail_mask(n - i);
    const __m512d v = wb_exp8(_mm512_sub_pd(_mm512_maskz_loadu_pd(m, x + i), sh), t0, t1);
    s = _mm512_mask_add_pd(s, m, s, v);
  }
  return _mm512_reduce_add_pd(s);
}
WB_NOINLINE static npy_float64 wb_expsum_store_leaf_float64(const npy_float64 *restrict x,
    npy_float64 *restrict y, const npy_intp n, const npy_float64 shift) {
  const __m512d t0 = _mm512_loadu_pd(wb_exp2_16), t1 = _mm512_loadu_pd(wb_exp2_16 + 8);
  const __m512d sh = _mm512_set1_pd(shift);
  __m512d s = _mm512_setzero_pd();
  npy_intp i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512d v = wb_exp8(_mm512_sub_pd(_mm512_loadu_pd(x + i), sh), t0, t1);
    _mm512_storeu_pd(y + i, v);
    s = _mm512_add_pd(s, v);
  }
  if (i < n) {
    const __mmask8 m = wb_tail_mask(n - i);
    const __m512d v = wb_exp8(_mm512_sub_pd(_mm512_maskz_loadu_pd(m, x + i), sh), t0, t1);
    _mm512_mask_storeu_pd(y + i, m, v);
    s = _mm512_mask_add_pd(s, m, s, v);
  }
  return _mm512_reduce_add_pd(s);
}""", **_exp_constants())

#: The row kernels, as macros instantiated per float type (ROW_KERNELS_OF).
ROW_KERNELS = r"""
/* every kernel with an omp simd loop stays a function of its own (WB_NOINLINE): inlined
   into an outer loop, gcc 12 turns its reduction into a slow scalar loop (10x) */
#define WB_NOINLINE __attribute__((noinline))
/* the sums of exp(x - shift) over one block (libmvec's SIMD exp), also storing them */
#define WB_EXP_LEAVES(T, NAME, SFX) \
WB_NOINLINE static T wb_expsum_leaf_##NAME(const T *restrict x, const npy_intp n, \
                                           const T shift) { \
  T s = 0; \
  _Pragma("omp simd reduction(+:s)") \
  for (npy_intp i = 0; i < n; i++) s += exp##SFX(x[i] - shift); \
  return s; } \
WB_NOINLINE static T wb_expsum_store_leaf_##NAME(const T *restrict x, T *restrict y, \
                                                 const npy_intp n, const T shift) { \
  T s = 0; \
  _Pragma("omp simd reduction(+:s)") \
  for (npy_intp i = 0; i < n; i++) { const T v = exp##SFX(x[i] - shift); y[i] = v; s += v; } \
  return s; }
#define WB_ROW_KERNELS(T, NAME, SFX, ACC) \
WB_NOINLINE static T wb_rowmax_##NAME(const T *restrict x, const npy_intp n) { \
  T m = -INFINITY; int nan = 0; \
  _Pragma("omp simd reduction(max:m) reduction(|:nan)") \
  for (npy_intp i = 0; i < n; i++) { const T v = x[i]; m = v > m ? v : m; nan |= (v != v); } \
  return nan ? (T)NAN : m; } \
static inline ACC wb_expsum_##NAME(const T *restrict x, const npy_intp n, const T shift) { \
  ACC total = 0; \
  for (npy_intp b = 0; b < n; b += WB_SUM_BLOCK) \
    total += (ACC)wb_expsum_leaf_##NAME(x + b, n - b > WB_SUM_BLOCK ? WB_SUM_BLOCK : n - b, \
                                        shift); \
  return total; } \
static inline ACC wb_expsum_store_##NAME(const T *restrict x, T *restrict y, const npy_intp n, \
                                         const T shift) { \
  ACC total = 0; \
  for (npy_intp b = 0; b < n; b += WB_SUM_BLOCK) \
    total += (ACC)wb_expsum_store_leaf_##NAME(x + b, y + b, \
                                              n - b > WB_SUM_BLOCK ? WB_SUM_BLOCK : n - b, \
                                              shift); \
  return total; } \
static inline T wb_finite_shift_##NAME(const T m) { return isfinite(m) ? m : (T)0; } \
WB_NOINLINE static void wb_softmax_row_##NAME(const T *restrict x, T *restrict y, \
                                              const npy_intp n) { \
  const T m = wb_rowmax_##NAME(x, n); \
  const T r = (T)1 / (T)wb_expsum_store_##NAME(x, y, n, m); \
  _Pragma("omp simd") \
  for (npy_intp i = 0; i < n; i++) y[i] *= r; } \
WB_NOINLINE static void wb_log_softmax_row_##NAME(const T *restrict x, T *restrict y, \
                                                  const npy_intp n) { \
  const T shift = wb_finite_shift_##NAME(wb_rowmax_##NAME(x, n)); \
  const T ls = log##SFX((T)wb_expsum_##NAME(x, n, shift)); \
  _Pragma("omp simd") \
  for (npy_intp i = 0; i < n; i++) y[i] = (x[i] - shift) - ls; } \
WB_NOINLINE static T wb_logsumexp_row_##NAME(const T *restrict x, const npy_intp n) { \
  const T shift = wb_finite_shift_##NAME(wb_rowmax_##NAME(x, n)); \
  return log##SFX((T)wb_expsum_##NAME(x, n, shift)) + shift; } \
/* the row loops over rows [r0, r1) of a wb_rows_ctx, for wb_run_rows */ \
static void wb_softmax_rows_##NAME(void *c, const npy_intp r0, const npy_intp r1) { \
  const wb_rows_ctx *k = (const wb_rows_ctx *)c; const npy_intp n = k->n; \
  const T *x = (const T *)k->src; T *y = (T *)k->dst; \
  for (npy_intp r = r0; r < r1; r++) wb_softmax_row_##NAME(x + r * n, y + r * n, n); } \
static void wb_log_softmax_rows_##NAME(void *c, const npy_intp r0, const npy_intp r1) { \
  const wb_rows_ctx *k = (const wb_rows_ctx *)c; const npy_intp n = k->n; \
  const T *x = (const T *)k->src; T *y = (T *)k->dst; \
  for (npy_intp r = r0; r < r1; r++) wb_log_softmax_row_##NAME(x + r * n, y + r * n, n); } \
static void wb_logsumexp_rows_##NAME(void *c, const npy_intp r0, const npy_intp r1) { \
  const wb_rows_ctx *k = (const wb_rows_ctx *)c; const npy_intp n = k->n; \
  const T *x = (const T *)k->src; T *y = (T *)k->dst; \
  for (npy_intp r = r0; r < r1; r++) y[r] = wb_logsumexp_row_##NAME(x + r * n, n); }
"""

#: The row kernels of one float type (ROW_KERNELS_OF[dtype]): a node's apply support
#: holds those of its own type only, so a float32 graph does not compile the float64
#: kernels nor parse <immintrin.h> for their AVX-512 exp (~0.12 s of compiler CPU).
ROW_KERNELS_OF = {
    "float64": r"""#ifndef WB_ROW_KERNELS_FLOAT64
#define WB_ROW_KERNELS_FLOAT64
#if defined(__AVX512F__)
${avx512_exp}
#else
WB_EXP_LEAVES(npy_float64, float64, )
#endif
WB_ROW_KERNELS(npy_float64, float64, , npy_float64)
#endif""".replace("${avx512_exp}", AVX512_EXP),
    "float32": r"""#ifndef WB_ROW_KERNELS_FLOAT32
#define WB_ROW_KERNELS_FLOAT32
WB_EXP_LEAVES(npy_float32, float32, f)
WB_ROW_KERNELS(npy_float32, float32, f, npy_float64)
#endif""",
}


def _supported(node: Any) -> bool:
    in_dt = str(node.inputs[0].type.dtype)
    out_dt = str(node.outputs[0].type.dtype)
    return (out_dt in ("float32", "float64") and bool(C_TYPES.get(in_dt))
            and not in_dt.startswith("complex"))


def _rows_code(x: str, nd: int, reduced: tuple[int, ...], work: str, fail: str) -> str:
    """C declaring `xc` (a new reference: `x` with the `reduced` axes moved last, C-contiguous
    in dtype `work`), `n` (elements per row) and `rows`."""
    kept = [d for d in range(nd) if d not in reduced]
    perm = kept + list(reduced)
    transpose = perm != list(range(nd))
    n_expr = " * ".join(f"PyArray_DIMS({x})[{d}]" for d in reduced) or "1"
    return fill("""
PyArrayObject *xc;
const npy_intp n = ${n_expr};
const npy_intp rows = n ? PyArray_SIZE(${x}) / n : 0;
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
  xc = (PyArrayObject*)PyArray_FromArray(src, PyArray_DescrFromType(${num}),
       NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
  Py_DECREF(src);
  if (!xc) ${fail}
}
""", n_expr=n_expr, x=x, transpose=int(transpose), ndl=max(nd, 1),
                perm=", ".join(map(str, perm)) or "0", nd=nd, fail=fail, num=type_num(work))


class _RowC(COpAdapter):
    """What the three adapters share: headers, libraries and the row kernels."""

    def c_supports(self, node: Any) -> bool:
        return _supported(node)

    def c_headers(self) -> list[str]:
        return ["<math.h>"]

    def c_support_code(self) -> str:
        from workbench.core.link.c.compiler import vector_math_libraries

        decls = VECTOR_MATH_DECLARATIONS if vector_math_libraries() else ""
        return (f"{decls}#define WB_SUM_BLOCK {SUM_BLOCK}\n"
                f"#define WB_PAR_MIN ((npy_intp){int(PARALLEL_MIN_ELEMENTS)})\n"
                f"{PARALLEL_SUPPORT}{ROW_KERNELS}")

    def c_init_code(self) -> list[str]:
        """Find the thread policy block (blas_threads.py) when the module loads."""
        return ["if (wb_blas_policy_init() < 0) return NULL;"]

    def c_support_code_apply(self, node: Any, name: str) -> str:
        return ROW_KERNELS_OF[str(node.outputs[0].type.dtype)]

    def c_libraries(self) -> list[str]:
        from workbench.core.link.c.compiler import vector_math_libraries

        # the thread pool links libpthread; no -pthread at compile time: it only defines
        # _REENTRANT (meaningless to glibc today) and would keep the module off the
        # precompiled prelude
        return [*vector_math_libraries(), "m", "pthread"]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (6,)


@register_c_op(Softmax)
@register_c_op(LogSoftmax)
class RowKernelC(_RowC):
    """C for Softmax and LogSoftmax along one axis (None: all elements as one row)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (o,) = inputs, outputs
        fail = sub["fail"]
        nd = node.inputs[0].type.ndim
        work = str(node.outputs[0].type.dtype)
        t = c_type_name(work)
        axis = self.op.axis
        reduced = tuple(range(nd)) if axis is None else (axis,)
        kernel = ("wb_softmax_rows_" if isinstance(self.op, Softmax) else
                  "wb_log_softmax_rows_") + work
        last = reduced == tuple(range(nd - len(reduced), nd))
        perm = [d for d in range(nd) if d not in reduced] + list(reduced)
        return _rows_code(x, nd, reduced, work, fail) + fill("""
npy_intp oshape[${ndl}];
for (int d = 0; d < ${nd}; d++) oshape[d] = PyArray_DIMS(${x})[d];
${alloc_fail}
{
  /* rows along the last axis are the output's own rows; others go through a buffer */
  PyArrayObject *dst = ${o};
  if (!${last}) {
    npy_intp tshape[${ndl}];
    static const int perm[${ndl}] = {${perm}};
    for (int d = 0; d < ${nd}; d++) tshape[d] = oshape[perm[d]];
    dst = (PyArrayObject*)PyArray_EMPTY(${nd}, tshape, ${num}, 0);
    if (!dst) { Py_DECREF(xc); ${fail} }
  }
  const ${t} *src = (const ${t}*)PyArray_DATA(xc);
  ${t} *w = (${t}*)PyArray_DATA(dst);
  ${loop}
  Py_DECREF(xc);
  if (!${last}) {
    static npy_intp tperm[${ndl}] = {${perm}};
    PyArray_Dims pd = {tperm, ${nd}};
    PyArrayObject *view = (PyArrayObject*)PyArray_Transpose(${o}, &pd);
    int bad = !view || PyArray_CopyInto(view, dst) < 0;
    Py_XDECREF(view); Py_DECREF(dst);
    if (bad) ${fail}
  }
}
""", ndl=max(nd, 1), nd=nd, x=x, o=o, t=t, last=int(last),
            loop=f"wb_rows_ctx wb_ctx = {{src, w, n}}; wb_run_rows({kernel}, &wb_ctx, rows, n);",
            perm=", ".join(map(str, perm)) or "0", num=type_num(work), fail=fail,
            alloc_fail=alloc_output(o, str(nd), "oshape", work,
                                    f"{{ Py_DECREF(xc); {fail} }}"))


@register_c_op(LogSumExp)
class LogSumExpC(_RowC):
    """C for LogSumExp over any axes, with or without kept dimensions."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (o,) = inputs, outputs
        fail = sub["fail"]
        nd = node.inputs[0].type.ndim
        out_nd = node.outputs[0].type.ndim
        work = str(node.outputs[0].type.dtype)
        t = c_type_name(work)
        reduced = self.op._axes(nd)
        shape_fill = []
        k = 0
        for d in range(nd):
            if d in reduced:
                if self.op.keepdims:
                    shape_fill.append(f"oshape[{k}] = 1;")
                    k += 1
            else:
                shape_fill.append(f"oshape[{k}] = PyArray_DIMS({x})[{d}];")
                k += 1
        return _rows_code(x, nd, reduced, work, fail) + fill("""
npy_intp oshape[${ondl}];
${shape_fill}
${alloc_fail}
{
  const ${t} *src = (const ${t}*)PyArray_DATA(xc);
  ${t} *w = (${t}*)PyArray_DATA(${o});
  ${loop}
  if (n == 0) {  /* empty rows: the log of an empty sum */
    const npy_intp m = PyArray_SIZE(${o});
    for (npy_intp r = 0; r < m; r++) w[r] = -INFINITY;
  }
  Py_DECREF(xc);
}
""", ondl=max(out_nd, 1), shape_fill="\n".join(shape_fill), t=t, o=o,
            loop=(f"wb_rows_ctx wb_ctx = {{src, w, n}}; "
                  f"wb_run_rows(wb_logsumexp_rows_{work}, &wb_ctx, rows, n);"),
            alloc_fail=alloc_output(o, str(out_nd), "oshape", work,
                                    f"{{ Py_DECREF(xc); {fail} }}"))
