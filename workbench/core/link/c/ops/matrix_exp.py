"""C for Expm: the scaling-and-squaring method with Padé approximants of Higham (2005),
the algorithm of `Expm.perform` (tensor/linalg/matrix_exp.py) step for step, its
matrix products by the packaged OpenBLAS's ``dgemm``/``sgemm`` and its one solve
``r_m = (V - U)^-1 (V + U)`` by LAPACK's ``dgesv``/``sgesv`` (never an inverse, never a
hand-written factorisation).

Each matrix of the stack is copied into a C-ordered buffer of its own precision:
float64 runs ``dgemm``/``dgesv``, float32 ``sgemm``/``sgesv`` (as scipy.linalg.expm
computes a float32 matrix in float32, and as `perform` does), the Padé coefficients
rounded to float32 first as NumPy rounds a Python float meeting a float32 array. Its
1-norm picks the Padé degree m in (3, 5, 7, 9, 13) by Higham's bounds theta_m; above
theta_13 the matrix is scaled by 2^-s and the result squared s times. The sums of
scaled powers are formed in the same order as `perform`'s NumPy expressions.

``dgesv`` reads its row-major buffers as column-major, i.e. it is handed P^T and Q^T
(P = V - U, Q = V + U) and returns ``P^-T Q^T = (Q P^-1)^T``; P and Q are polynomials in
the same matrix, so they commute and ``Q P^-1 = P^-1 Q``: read row-major, the answer
is r_m itself, with no transposition. A triangular matrix (a lower one through its
transpose) has its diagonal and first superdiagonal recomputed exactly after the
approximant and each squaring, as `expm_numpy`. A diagonal matrix is the exponential of
its diagonal (as scipy, infinities included); another non-finite matrix gives NaN (as
`perform`); a
singular denominator raises numpy.linalg.LinAlgError as numpy.linalg.solve does.
Calls follow the C linker's BLAS thread policy (blas_threads.py) and large stacks
run without the GIL. Graphs compiled where no BLAS/LAPACK is found run `perform`.
"""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.buffers import alloc_output
from workbench.core.link.c.ops.lapack_base import LapackC, square_check
from workbench.core.tensor.linalg.matrix_exp import PADE, THETA, Expm

__all__ = ["ExpmC"]

#: The per-matrix algorithm (double precision), after LapackC's declarations.
_EXPM_C = r"""
#ifndef WB_EXPM_SUPPORT
#define WB_EXPM_SUPPORT
static const int wb_ex_degrees[5] = {3, 5, 7, 9, 13};
static const double wb_ex_theta[5] = {%(theta)s};
static const double wb_ex_pade[5][14] = {%(pade)s};
#endif
#ifndef WB_EXPM_SUPPORT_%(t)s
#define WB_EXPM_SUPPORT_%(t)s

/* c = a @ b for n x n row-major matrices. */
static void wb_ex_mm_%(t)s(wb_blasint n, const %(real)s *a, const %(real)s *b, %(real)s *c) {
  wb_cblas_%(t)sgemm(WB_ROW_MAJOR, WB_NO_TRANS, WB_NO_TRANS, n, n, n, 1, a, n, b, n, 0, c, n);
}

#ifndef WB_EXPM_SINCH
#define WB_EXPM_SINCH
/* sinh(x) / x, by its series near 0 (no cancellation). */
static double wb_ex_sinch(double x) {
  if (fabs(x) < 0.0135) {
    const double x2 = x * x;
    return 1 + (x2 / 6.0) * (1 + (x2 / 20.0) * (1 + (x2 / 42.0)));
  }
  return sinh(x) / x;
}
#endif

/* The diagonal and first superdiagonal of r ~ expm(2^j t), t upper triangular, set to
   their exact values in double precision (Al-Mohy and Higham 2009, Code Fragment 2.1;
   Higham's (10.42)), as _exact_triangle in matrix_exp.py; its strict lower triangle to
   0 (gesv of the transposed denominator pivots, and left rounding errors there that
   the squarings grew: 2e5 in float32 for [[10, 1e9], [0, 10]]). */
static void wb_ex_triangle_%(t)s(npy_intp n, const %(real)s *t, %(real)s *r, int j) {
  for (npy_intp i = 1; i < n; ++i)
    for (npy_intp k = 0; k < i; ++k) r[i * n + k] = 0;
  for (npy_intp k = 0; k < n; ++k) r[k * n + k] = (%(real)s)exp(ldexp((double)t[k * n + k], j));
  for (npy_intp k = 0; k + 1 < n; ++k) {
    const double l1 = ldexp((double)t[k * n + k], j);
    const double l2 = ldexp((double)t[(k + 1) * n + k + 1], j);
    const double t12 = ldexp((double)t[k * n + k + 1], j);
    r[k * n + k + 1] = (%(real)s)(t12 * exp(0.5 * (l1 + l2)) * wb_ex_sinch(0.5 * (l1 - l2)));
  }
}

/* Transpose the n x n matrix m in place. */
static void wb_ex_transpose_%(t)s(npy_intp n, %(real)s *m) {
  for (npy_intp i = 0; i < n; ++i)
    for (npy_intp j = i + 1; j < n; ++j) {
      const %(real)s x = m[i * n + j]; m[i * n + j] = m[j * n + i]; m[j * n + i] = x;
    }
}

/* expm of the n x n row-major matrix `a` (overwritten) into `out`, in %(real)s; `w`
   holds 7 n^2 entries of work, `ipiv` n pivots. Returns 0, or LAPACK's info > 0
   (singular). The Pade coefficients are rounded to %(real)s first, as NumPy rounds a
   Python float meeting a float32 array. */
static long wb_ex_expm_%(t)s(npy_intp n, %(real)s *a, %(real)s *out, %(real)s *w,
                            wb_laint *ipiv) {
  const npy_intp nn = n * n;
  %(real)s norm = 0;
  int diagonal = 1;  /* the exponential of its diagonal, as scipy (inf: inf, -inf: 0) */
  for (npy_intp k = 0; k < nn && diagonal; ++k)
    if (k / n != k %% n && a[k] != 0) diagonal = 0;
  if (diagonal) {
    for (npy_intp k = 0; k < nn; ++k)
      out[k] = (k / n == k %% n) ? (%(real)s)exp((double)a[k]) : 0;
    return 0;
  }
  for (npy_intp k = 0; k < nn; ++k)
    if (!isfinite(a[k])) {
      for (npy_intp i = 0; i < nn; ++i) out[i] = NAN;
      return 0;
    }
  int upper = 1, lower = 1;  /* a triangular matrix: exact diagonal, superdiagonal */
  for (npy_intp i = 0; i < n; ++i)
    for (npy_intp j = 0; j < n; ++j)
      if (a[i * n + j] != 0) { if (i > j) upper = 0; else if (i < j) lower = 0; }
  const int flip = lower && !upper;  /* expm(a) = expm(a^T)^T */
  if (flip) { wb_ex_transpose_%(t)s(n, a); upper = 1; }
  for (npy_intp j = 0; j < n; ++j) {
    %(real)s col = 0;
    for (npy_intp i = 0; i < n; ++i) col += fabs(a[i * n + j]);
    if (col > norm) norm = col;
  }
  int which = 4, s = 0;
  for (int d = 0; d < 4; ++d)
    if (norm <= wb_ex_theta[d]) { which = d; break; }
  if (which == 4) {
    const double e = ceil(log2(norm / wb_ex_theta[4]));
    s = e > 0 ? (int)e : 0;
    const %(real)s scale = (%(real)s)ldexp(1.0, -s);
    for (npy_intp k = 0; k < nn; ++k) a[k] *= scale;
  }
  const int m = wb_ex_degrees[which];
  %(real)s b[14];
  for (int k = 0; k < 14; ++k) b[k] = (%(real)s)wb_ex_pade[which][k];
  /* powers[j] = a^(2j), j >= 1 (powers[0] = I is implicit) */
  %(real)s *powers[5] = {NULL, w, w + nn, w + 2 * nn, w + 3 * nn};
  %(real)s *t = w + 4 * nn, *u = w + 5 * nn, *v = w + 6 * nn;
  const wb_blasint bn = (wb_blasint)n;
  wb_ex_mm_%(t)s(bn, a, a, powers[1]);
  if (m < 13) {
    const int top = m / 2;
    for (int j = 2; j <= top; ++j) wb_ex_mm_%(t)s(bn, powers[j - 1], powers[1], powers[j]);
    for (npy_intp k = 0; k < nn; ++k) {  /* sum(b[2j+1] P_j), sum(b[2j] P_j) */
      const %(real)s eye = (k / n == k %% n) ? 1 : 0;
      %(real)s odd = 0 + b[1] * eye, even = 0 + b[0] * eye;
      for (int j = 1; j <= top; ++j) {
        odd += b[2 * j + 1] * powers[j][k];
        even += b[2 * j] * powers[j][k];
      }
      t[k] = odd; v[k] = even;
    }
    wb_ex_mm_%(t)s(bn, a, t, u);
  } else {
    %(real)s *a2 = powers[1], *a4 = powers[2], *a6 = powers[3], *p = powers[4];
    wb_ex_mm_%(t)s(bn, a2, a2, a4);
    wb_ex_mm_%(t)s(bn, a4, a2, a6);
    for (npy_intp k = 0; k < nn; ++k)
      t[k] = b[13] * a6[k] + b[11] * a4[k] + b[9] * a2[k];
    wb_ex_mm_%(t)s(bn, a6, t, p);
    for (npy_intp k = 0; k < nn; ++k) {
      const %(real)s eye = (k / n == k %% n) ? 1 : 0;
      t[k] = p[k] + b[7] * a6[k] + b[5] * a4[k] + b[3] * a2[k] + b[1] * eye;
    }
    wb_ex_mm_%(t)s(bn, a, t, u);
    for (npy_intp k = 0; k < nn; ++k)
      t[k] = b[12] * a6[k] + b[10] * a4[k] + b[8] * a2[k];
    wb_ex_mm_%(t)s(bn, a6, t, p);
    for (npy_intp k = 0; k < nn; ++k) {
      const %(real)s eye = (k / n == k %% n) ? 1 : 0;
      v[k] = p[k] + b[6] * a6[k] + b[4] * a4[k] + b[2] * a2[k] + b[0] * eye;
    }
  }
  for (npy_intp k = 0; k < nn; ++k) {  /* v = V - U (the denominator), u = V + U */
    const %(real)s vk = v[k], uk = u[k];
    v[k] = vk - uk; u[k] = vk + uk;
  }
  const wb_laint ln = (wb_laint)n;
  wb_laint info = 0;
  wb_la_%(t)sgesv(&ln, &ln, v, &ln, ipiv, u, &ln, &info);
  if (info != 0) return (long)info;
  %(real)s *r = u, *spare = t;
  if (upper) wb_ex_triangle_%(t)s(n, a, r, 0);
  for (int k = 0; k < s; ++k) {
    wb_ex_mm_%(t)s(bn, r, r, spare);
    %(real)s *swap = r; r = spare; spare = swap;
    if (upper) wb_ex_triangle_%(t)s(n, a, r, k + 1);
  }
  memcpy(out, r, sizeof(%(real)s) * (size_t)nn);
  if (flip) wb_ex_transpose_%(t)s(n, out);
  return 0;
}
#endif
"""


def _support() -> str:
    """The per-matrix C, for float64 (dgemm, dgesv) and float32 (sgemm, sgesv), with
    Higham's bounds and Padé coefficients from the Python module (one source for both
    linkers)."""
    degrees = (3, 5, 7, 9, 13)
    theta = ", ".join(repr(THETA[m]) for m in degrees)
    rows = []
    for m in degrees:
        coefficients = list(PADE[m]) + [0.0] * (14 - len(PADE[m]))
        rows.append("{" + ", ".join(repr(float(c)) for c in coefficients) + "}")
    return "".join(_EXPM_C % {"theta": theta, "pade": ", ".join(rows), "t": t, "real": real}
                   for t, real in (("d", "double"), ("s", "float")))


@register_c_op(Expm)
class ExpmC(LapackC):
    """expm of each real matrix of the stack in its own precision: dgemm and one dgesv
    for float64, sgemm and sgesv for float32 (as scipy.linalg.expm); complex matrices
    run `perform`."""

    def c_supports(self, node: Any) -> bool:
        return (super().c_supports(node)
                and str(node.outputs[0].type.dtype) in ("float32", "float64"))

    def why_not_supported(self, node: Any) -> str | None:
        """The linker report's reason when `c_supports` says no."""
        dtype = str(node.outputs[0].type.dtype)
        if dtype.startswith("complex"):
            return (f"{node.op}: complex input ({dtype}): the C computes real matrices; the "
                    "node runs its Python perform (complex128 Padé)")
        return None

    def c_support_code(self) -> str:
        """LapackC's (LAPACK and BLAS declarations, the BLAS thread policy) and the
        per-matrix algorithm."""
        return super().c_support_code() + _support()

    def c_support_code_apply(self, node: Any, name: str) -> str:
        return ""  # none of LapackC's typed copy helpers: the input is made contiguous

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (x,), (z,) = inputs, outputs
        fail = sub["fail"]
        nd = node.inputs[0].type.ndim
        out_dtype = str(node.outputs[0].type.dtype)
        real, t, npy = (("double", "d", "NPY_FLOAT64") if out_dtype == "float64"
                        else ("float", "s", "NPY_FLOAT32"))
        square = square_check(node.op, f"PyArray_DIMS({x})[{nd - 2}]", "n", fail)
        return f"""
{{
  const npy_intp n = PyArray_DIMS({x})[{nd - 1}];
  {square}
  {alloc_output(z, str(nd), f"PyArray_DIMS({x})", out_dtype, fail)}
  PyArrayObject *xc = (PyArrayObject *)PyArray_FROMANY((PyObject *){x}, {npy}, 0, 0,
                                                       NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
  if (!xc) {fail}
  const npy_intp nn = n * n, batch = nn > 0 ? PyArray_SIZE(xc) / nn : 0;
  {real} *work = ({real} *)malloc(sizeof({real}) * (size_t)(8 * nn + 1));
  wb_laint *ipiv = (wb_laint *)malloc(sizeof(wb_laint) * (size_t)(n + 1));
  if (!work || !ipiv) {{ free(work); free(ipiv); Py_DECREF(xc); PyErr_NoMemory(); {fail} }}
  long info = 0;
  const double flops = 12.0 * (double)n * (double)nn * (double)batch;
  static wb_blas_site site;  /* this node's one-thread estimate (blas_threads.py) */
  wb_blas_call call;
  wb_blas_begin(&call, &site, flops);
  wb_la_solo_begin(call.blas);  /* one thread: lapack_solo.py's copy */
  PyThreadState *ts = flops >= WB_LA_NOGIL_FLOPS ? PyEval_SaveThread() : NULL;
  for (npy_intp i = 0; i < batch && info == 0; ++i) {{
    {real} *a = work + 7 * nn;
    memcpy(a, (const {real} *)PyArray_DATA(xc) + i * nn, sizeof({real}) * (size_t)nn);
    info = wb_ex_expm_{t}(n, a, ({real} *)PyArray_DATA({z}) + i * nn, work, ipiv);
  }}
  if (ts) PyEval_RestoreThread(ts);
  wb_la_solo_end();
  wb_blas_end(&call);
  free(work); free(ipiv); Py_DECREF(xc);
  if (info != 0) {{
    wb_la_raise("expm", "the Pade denominator V - U is singular at pivot ", info, 0, 0);
    {fail}
  }}
}}"""

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (7,)
