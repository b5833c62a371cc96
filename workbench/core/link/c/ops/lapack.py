"""C for the solvers of `wt.linalg` (Cholesky, Solve, SolveTriangular, TriangularMatmul,
Inv, Det, SLogDet) through LAPACK; what the LAPACK C shares is in lapack_base.py, the
factorisations (Eigh, SVD, QR) in lapack_factorizations.py.

Solve: getrf + getrs ("gen"), posv ("pos"), sysv ("sym"; hesv for "her" of complex
matrices, sysv for real ones) and trtrs ("tri").
"""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.lapack_base import (
    DTYPES,
    LAPACK_ROUTINES,
    LapackC,
    buffers,
    check_info,
    finish,
    lapack_available,
    lapack_symbol,
    messages,
    not_finite_c,
    rows_check,
    typed,
)
from workbench.core.tensor.linalg.decompositions import Cholesky, CholeskyGrad
from workbench.core.tensor.linalg.solvers import (
    Det,
    DiagonalSolve,
    Inv,
    SLogDet,
    Solve,
    SolveTriangular,
    TriangularMatmul,
)

__all__ = ["LAPACK_ROUTINES", "lapack_available", "lapack_symbol"]

def _b_setup(b: str, b_ndim: int) -> str:
    """C for the right-hand side: k columns and its core strides."""
    if b_ndim == 1:
        return (f"const npy_intp k = 1; const npy_intp wb_sb0 = PyArray_STRIDE({b}, "
                f"PyArray_NDIM({b}) - 1), wb_sb1 = 0;")
    return (f"const npy_intp k = PyArray_DIM({b}, PyArray_NDIM({b}) - 1);\n"
            f"const npy_intp wb_sb0 = PyArray_STRIDE({b}, PyArray_NDIM({b}) - 2);\n"
            f"const npy_intp wb_sb1 = PyArray_STRIDE({b}, PyArray_NDIM({b}) - 1);")




@register_c_op(Cholesky)
class CholeskyC(LapackC):
    """potrf on a copy; the other triangle of the output is zeroed."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        uplo = "L" if self.op.lower else "U"
        keep = "i >= j" if self.op.lower else "i <= j"
        decl, free = buffers(("wb_a", "%(ctype)s", "n * n"))
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    const char uplo = '{uplo}'; wb_laint info = 0;
    wb_la_%(t)spotrf(&uplo, &wb_n, wb_a, &wb_ld, &info, (size_t)1);
    {check_info()}
    else {{
      %(ctype)s *o = (%(ctype)s*)PyArray_DATA({outputs[0]}) + wb_i * n * n;
      for (npy_intp i = 0; i < n; ++i)
        for (npy_intp j = 0; j < n; ++j) o[i * n + j] = ({keep}) ? wb_a[i + j * n] : 0;
    }}"""
        code = self.loop(node, inputs, outputs, sub, body, decl, ["n, n"], "cholesky",
                         "(double)n * n * n / 3")
        msg = messages("Matrix is not positive definite: the leading minor of order ")
        return "{\n" + msg + "\n" + finish(code, free) + "\n}"


@register_c_op(CholeskyGrad)
class CholeskyGradC(LapackC):
    """Murray's formula: the lower triangle of ``W = L^T gL`` (a gemm per block row of
    64: n^3/3 flops where trmm's full W takes n^3); ``Phi`` its lower triangle with the
    diagonal halved; ``V = Phi L^-1``, lower triangular, by a trsm per block row (n^3/3);
    ``Z = L^-T V`` (trsm, n^3); out = tril(Z + Z^T) with diagonal diag(Z) (= tril(S),
    diagonal halved, for ``S = L^-T (Phi + Phi^T) L^-1``)."""

    def c_supports(self, node: Any) -> bool:
        return super().c_supports(node) and not DTYPES[str(node.inputs[0].type.dtype)].is_complex

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        g = inputs[1]
        decl, free = buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_b", "%(ctype)s", "n * n"),
                             ("wb_w", "%(ctype)s", "n * n"))
        body = f"""
    /* a C-contiguous L whose diagonal blocks are lower triangular (a Cholesky factor's)
       is read in place as the column-major upper U = L^T; else tril(L) is copied */
    int wb_l_rows = wb_sa1 == (npy_intp)sizeof(%(ctype)s)
                    && wb_sa0 == n * (npy_intp)sizeof(%(ctype)s);
    const %(ctype)s *wb_pl = (const %(ctype)s*)wb_pa;
    for (npy_intp r0 = 0; r0 < n && wb_l_rows; r0 += 64)
      for (npy_intp i = r0; i < (r0 + 64 < n ? r0 + 64 : n) && wb_l_rows; ++i)
        for (npy_intp j = i + 1; j < (r0 + 64 < n ? r0 + 64 : n); ++j)
          if (wb_pl[i * n + j] != 0) {{ wb_l_rows = 0; break; }}
    if (!wb_l_rows) {{
      wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
      for (npy_intp j = 1; j < n; ++j)  /* tril(L): W's diagonal blocks read L's block */
        for (npy_intp i = 0; i < j; ++i) wb_a[i + j * n] = 0;
    }}
    const %(ctype)s *wb_l = wb_l_rows ? wb_pl : wb_a;
    const char up = wb_l_rows ? 'U' : 'L', lt = wb_l_rows ? 'N' : 'T',
               ln = wb_l_rows ? 'T' : 'N';  /* op(A) = L^T and op(A) = L */
    /* a C-contiguous gL is read in place as the column-major gL^T (gemm's transb 'T') */
    const char *wb_pg = wb_la_at({g}, 2, wb_bshape, wb_bnd, wb_i);
    const int wb_g_rows = wb_sg1 == (npy_intp)sizeof(%(ctype)s)
                          && wb_sg0 == n * (npy_intp)sizeof(%(ctype)s);
    if (!wb_g_rows) wb_la_load_%(t)s(wb_pg, wb_sg0, wb_sg1, n, n, wb_b);
    const char nd = 'N', gt = wb_g_rows ? 'T' : 'N';
    const %(ctype)s one = 1, zero = 0;
    /* W[r0:r1, 0:r1] = L[r0:n, r0:r1]^T gL[r0:n, 0:r1]: with i >= j only k >= i >= j
       count (L lower), so gL's upper triangle is never read */
    for (npy_intp r0 = 0; r0 < n; r0 += 64) {{
      const npy_intp r1 = r0 + 64 < n ? r0 + 64 : n;
      const wb_laint bm = (wb_laint)(r1 - r0), bn = (wb_laint)r1, bk = (wb_laint)(n - r0);
      const %(ctype)s *gb = wb_g_rows ? (const %(ctype)s*)wb_pg + r0 * n : wb_b + r0;
      wb_la_%(t)sgemm(&lt, &gt, &bm, &bn, &bk, &one, wb_l + r0 + r0 * n, &wb_ld,
                      gb, &wb_ld, &zero, wb_w + r0, &wb_ld, (size_t)1, (size_t)1);
    }}
    for (npy_intp j = 0; j < n; ++j) {{  /* Phi: the gemms' upper entries dropped */
      for (npy_intp i = 0; i < j; ++i) wb_w[i + j * n] = 0;
      wb_w[j + j * n] *= 0.5;
    }}
    wb_laint info = 0;
    for (npy_intp j = 0; j < n; ++j)  /* trtrs's singularity test, before any solve */
      if (wb_l[j + j * n] == 0) {{ info = (wb_laint)(j + 1); break; }}
    if (info == 0) {{
      const char rs = 'R', ls = 'L';
      /* V[r0:r1, 0:r1] L[0:r1, 0:r1] = Phi[r0:r1, 0:r1] (V's row i is 0 beyond i) */
      for (npy_intp r0 = 0; r0 < n; r0 += 64) {{
        const npy_intp r1 = r0 + 64 < n ? r0 + 64 : n;
        const wb_laint bm = (wb_laint)(r1 - r0), bn = (wb_laint)r1;
        wb_la_%(t)strsm(&rs, &up, &ln, &nd, &bm, &bn, &one, wb_l, &wb_ld, wb_w + r0, &wb_ld,
                        (size_t)1, (size_t)1, (size_t)1, (size_t)1);
      }}
      wb_la_%(t)strsm(&ls, &up, &lt, &nd, &wb_n, &wb_n, &one, wb_l, &wb_ld, wb_w, &wb_ld,
                      (size_t)1, (size_t)1, (size_t)1, (size_t)1);
    }}
    {check_info("(long)info - 1")}
    else {{
      %(ctype)s *o = (%(ctype)s*)PyArray_DATA({outputs[0]}) + wb_i * n * n;
      for (npy_intp i = 0; i < n; ++i)
        for (npy_intp j = 0; j < n; ++j)
          o[i * n + j] = i > j ? wb_w[i + j * n] + wb_w[j + i * n]
                               : (i == j ? wb_w[i + i * n] : 0);
    }}"""
        head = (f"const npy_intp wb_sg0 = PyArray_STRIDE({g}, PyArray_NDIM({g}) - 2);\n"
                f"const npy_intp wb_sg1 = PyArray_STRIDE({g}, PyArray_NDIM({g}) - 1);")
        checks = (rows_check(self.op, inputs[0], g, 2, sub["fail"])
                  + rows_check(self.op, inputs[0], g, 1, sub["fail"]))
        code = self.loop(node, inputs, outputs, sub, body, decl, ["n, n"], "cholesky_grad",
                         "(double)n * n * n * 5 / 3", checks=checks)
        msg = messages("singular matrix: resolution failed at diagonal ")
        return "{\n" + msg + "\n" + head + "\n" + finish(code, free) + "\n}"


class _SolveLikeC(LapackC):
    """Solve and SolveTriangular: a copy of a, b copied into the output's work buffer."""

    def solve_code(self, node: Any, inputs: list[str], outputs: list[str],
                   sub: dict[str, str], call: str, texts: str, function: str,
                   prepare: str = "", position: str = "(long)info",
                   load_a: str = "wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);",
                   a_finite: str = "", a_reset: str = "",
                   work: tuple[tuple[str, str, str], ...] = ()) -> str:
        """The C of a solve: `load_a` (a's copy into wb_a; `a_finite` a C expression
        telling whether it was all finite, when the load found out), `call` (LAPACK on
        wb_a and wb_b, setting info) for each matrix, `texts` the failure messages,
        `work` more buffers (as `buffers`). An unchecked Solve or SolveTriangular follows
        the rule of non-finite input (solvers.py): `a_reset` is C run when wb_a was
        replaced by the identity (what `load_a` computed from a, made the identity's)."""
        a, b = inputs
        b_ndim = self.op.b_ndim
        ruled = getattr(self.op, "nan_rule", False) and not self.op.check_finite
        if ruled:
            work = (*work, ("wb_bad", "char", "k"))
        decl, free = buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_b", "%(ctype)s", "n * k"),
                             ("wb_ipiv", "wb_laint", "n"), *work)
        before, after = _nan_rule_c(self.op, a_reset) if ruled else ("", "")
        body = f"""
    {load_a}
    wb_la_load_%(t)s(wb_la_at({b}, {b_ndim}, wb_bshape, wb_bnd, wb_i), wb_sb0, wb_sb1, n, k,
                     wb_b);
    {self.finite_check(a_finite)}
    {before}
    {prepare}
    const wb_laint wb_k = (wb_laint)k; wb_laint info = 0;
    {call}
    {check_info(position)}
    else {{ {after}
      wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA({outputs[0]}) + wb_i * n * k, n, k, wb_b); }}"""
        out_core = "n" if b_ndim == 1 else "n, k"
        checks = rows_check(self.op, a, b, 1 if b_ndim == 1 else 2, sub["fail"])
        code = self.loop(node, inputs, outputs, sub, body, decl, [out_core], function,
                         "(double)n * n * (n + k)", checks=checks)
        head = _b_setup(b, b_ndim)
        return "{\n" + texts + "\n" + head + "\n" + finish(code, free) + "\n}"

    def finite_check(self, a_finite: str = "") -> str:
        """C setting `wb_status` -2 (scipy's ValueError) when the Op's `check_finite` and
        the copies of a (wb_pos 0) or b (1) hold an inf or a NaN (`a_finite`: a C
        expression that already tells for a)."""
        if not getattr(self.op, "check_finite", False):
            return ""
        a_finite = a_finite or "wb_la_finite_%(t)s(wb_a, n * n)"
        return (f"if (!{a_finite}) {{ wb_status = -2; wb_pos = 0; }}\n"
                "    else if (!wb_la_finite_%(t)s(wb_b, n * k)) { wb_status = -2; wb_pos = 1; }\n"
                "    if (wb_status) continue;")


def _nan_rule_c(op: Any, a_reset: str) -> tuple[str, str]:
    """The C before and after the LAPACK call of the rule of non-finite input of an
    unchecked solve (solvers.py, `not_finite_systems`): a system whose `a` (the part the
    solve reads, straight from the input) or column of b has an inf or a NaN is solved as
    ``I x = 0`` (no error, no warning), then its column of the solution made NaN."""
    triangle = op.read_triangle()
    part, k = (0, 0) if triangle is None else (1 if triangle[0] else 2, triangle[1])
    before = f"""const int wb_a_ok = wb_la_finite_part_%(t)s(wb_pa, wb_sa0, wb_sa1, n, {part}, {k});
    int wb_any_bad = 0;
    for (npy_intp j = 0; j < k; ++j) {{
      wb_bad[j] = (char)(!wb_a_ok || !wb_la_finite_%(t)s(wb_b + j * n, n));
      if (wb_bad[j]) {{ wb_any_bad = 1; for (npy_intp i = 0; i < n; ++i) wb_b[j * n + i] = 0; }}
    }}
    if (!wb_a_ok) {{
      for (npy_intp i = 0; i < n * n; ++i) wb_a[i] = 0;
      for (npy_intp i = 0; i < n; ++i) wb_a[i * n + i] = 1;
      {a_reset}
    }}"""
    after = ("if (wb_any_bad) for (npy_intp j = 0; j < k; ++j) if (wb_bad[j])\n"
             "        for (npy_intp i = 0; i < n; ++i) wb_b[j * n + i] = (%(ctype)s)NAN;")
    return before, after


def _trtrs(lower: bool, trans: bool, unit: bool, conjugate: bool = False) -> str:
    op = ("C" if conjugate else "T") if trans else "N"
    return (f"const char uplo = '{'L' if lower else 'U'}', trans = '{op}', "
            f"diag = '{'U' if unit else 'N'}';\n"
            "    wb_la_%(t)strtrs(&uplo, &trans, &diag, &wb_n, &wb_k, wb_a, &wb_ld, wb_b, &wb_ld, "
            "&info, (size_t)1, (size_t)1, (size_t)1);")


def _condition_buffers() -> tuple[tuple[str, str, str], ...]:
    """The workspaces of gecon/pocon/sycon/hecon (the largest any of them needs)."""
    return (("wb_cw", "%(ctype)s", "4 * n"), ("wb_ciw", "wb_laint", "n"),
            ("wb_crw", "%(rtype)s", "2 * n"))


def _condition(node: Any, routine: str, args: str) -> str:
    """C estimating the reciprocal condition number of the factorised matrix (LAPACK's
    `routine`, "gecon", "pocon", "sycon" or "hecon", with its leading `args`) from
    `anorm`, and noting it for the LinAlgWarning (scipy's test: below the epsilon)."""
    complex_ = DTYPES[str(node.inputs[0].type.dtype)].is_complex
    if routine in ("sycon", "hecon"):
        extra = "" if complex_ else ", wb_ciw"
    else:
        extra = ", wb_crw" if complex_ else ", wb_ciw"
    return ("{ %(rtype)s rcond = 0; wb_laint cinfo = 0;\n"
            f"      wb_la_%(t)s{routine}({args}, &anorm, &rcond, wb_cw{extra}, &cinfo, "
            "(size_t)1);\n"
            "      WB_LA_NOTE_RCOND(rcond, WB_LA_EPS_%(t)s) }")


def _probed(node: Any, probe: str, estimate: str) -> str:
    """`estimate` (C noting rcond) run unless the C expression `probe` (a call of
    `_RCOND_C`'s probes) shows the matrix well conditioned; complex matrices (which the
    probe's bound does not cover) always run it."""
    if DTYPES[str(node.inputs[0].type.dtype)].is_complex:
        return estimate
    return f"if (!{probe}) {estimate}"


#: The 1-norm estimate of an inverse from LU factors for real matrices: LAPACK's dlacn2
#: algorithm (Hager 1984, Higham 1988: the one gecon runs), its products by getrs
#: solves. gecon does the same solves through dlatrs, which guards every solve against
#: overflow (column norms, growth bounds) and costs twice as much: 0.38 ms against
#: 0.17 ms next to a 2 ms LU at n = 500 on one core. A solve that overflows here makes
#: the estimate inf (rcond 0: the warning), where gecon scales its way to a tiny rcond
#: (the warning too).
#:
#: The estimate takes five solves (five passes over the factors), pocon ("pos") and
#: sycon ("sym") as many, pocon with dlatrs's scaling (0.16 to 0.45 ms next to a 1 ms
#: potrf at n = 500), where only the comparison with the epsilon is wanted; so one solve
#: with a probe vector v goes first (`wb_la_probe_lu`, `wb_la_probe_cholesky`,
#: `wb_la_probe_ldl`), v uniform in the cube
#: [-1/2, 1/2]^n. For any B and sign vector s, |B v|_1 >= |s^T B v| = |(B^T s)^T v|,
#: and by Ball's cube-slicing theorem (1986: no central section of the unit cube exceeds
#: sqrt(2) in volume) the density of w^T v is at most sqrt(2) for a unit w, so
#: P(|B v|_1 < t |B^T s|_2) <= 2 sqrt(2) t; with s the signs of B's largest column,
#: |B^T s|_2 >= |B|_1. Hence |B|_1 <= |B v|_1 / t except with probability
#: 2 sqrt(2) t = WB_LA_PROBE_MISS (1e-8). When that bound puts rcond above twice the
#: epsilon, the estimate (a lower bound of |B|_1, as gecon's and pocon's are) could not
#: warn and is skipped; otherwise it runs as before. So the warning is the estimate's
#: decision, except that an ill-conditioned matrix goes unwarned with probability at
#: most 1e-8 over the probe (a fixed pseudo-random v: the probability is over matrices
#: drawn independently of it). As |B v|_1 >= |v|_1 / |A|_1, the probe can only pass
#: when 2 eps |v|_1 / t < 1 (|v|_1 is about n / 4): below 3e7 columns in float64,
#: never in float32, whose probe is not solved. In practice float64 matrices of
#: condition number below 1e5 to 1e7 pass (the benchmark's is 5e4: the rounding of the
#: probe is far inside the factor 2); the others run the estimate after it, one solve
#: more than before. Measured (n = 500, one core): the probe 0.03 ms, the estimate
#: 0.14 to 0.17 ms.
_RCOND_C = r"""
#ifndef WB_LA_INV_NORM1_%(t)s
#define WB_LA_INV_NORM1_%(t)s
#define WB_LA_PROBE_MISS 1e-8
/* Fills v (n entries) with the probe; tells whether it can pass (|B v|_1 >= |v|_1 /
   anorm: it cannot when 2 eps |v|_1 / t >= 1, and is then not solved). */
static int wb_la_probe_fill_%(t)s(%(ctype)s *v, wb_laint n, double eps) {
  uint64_t s = 0x2545F4914F6CDD1DULL;  /* the same probe every call */
  double vsum = 0;
  for (wb_laint i = 0; i < n; ++i) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;  /* xorshift64 */
    v[i] = (%(ctype)s)((double)(s >> 11) * 0x1.0p-53 - 0.5);
    vsum += fabs((double)v[i]);
  }
  return 2 * eps * vsum / (WB_LA_PROBE_MISS / (2 * 1.4142135623730951)) < 1;
}
/* Whether y = B v puts the 1-norm of B below 1 / (2 eps anorm), except with probability
   WB_LA_PROBE_MISS (_RCOND_C's comment). */
static int wb_la_probe_passed_%(t)s(const %(ctype)s *y, wb_laint n, double anorm,
                                  double eps) {
  double ysum = 0;
  for (wb_laint i = 0; i < n; ++i) ysum += fabs((double)y[i]);
  return 2 * eps * anorm * ysum / (WB_LA_PROBE_MISS / (2 * 1.4142135623730951)) < 1;
}
/* The probe of B = M^-T for M = P L U held by getrf in lu, ipiv (v: n entries of work). */
static int wb_la_probe_lu_%(t)s(const %(ctype)s *lu, const wb_laint *ipiv, wb_laint n,
                              double anorm, double eps, %(ctype)s *v) {
  if (!wb_la_probe_fill_%(t)s(v, n, eps)) return 0;
  const wb_laint one = 1; wb_laint info = 0;
  const char by_b = 'T';
  wb_la_%(t)sgetrs(&by_b, &n, &one, lu, &n, ipiv, v, &n, &info, (size_t)1);
  return wb_la_probe_passed_%(t)s(v, n, anorm, eps);
}
/* The probe of B = A^-1 for A = U^T U (uplo 'U') or L L^T ('L') held by potrf in c: two
   trsv (potrs solves by trsm, 0.09 against 0.03 ms for one column at n = 500). */
static int wb_la_probe_cholesky_%(t)s(char uplo, const %(ctype)s *c, wb_laint n,
                                    double anorm, double eps, %(ctype)s *v) {
  if (!wb_la_probe_fill_%(t)s(v, n, eps)) return 0;
  const wb_laint one = 1;
  const char first = uplo == 'U' ? 'T' : 'N', second = uplo == 'U' ? 'N' : 'T', diag = 'N';
  wb_la_%(t)strsv(&uplo, &first, &diag, &n, c, &n, v, &one, (size_t)1, (size_t)1, (size_t)1);
  wb_la_%(t)strsv(&uplo, &second, &diag, &n, c, &n, v, &one, (size_t)1, (size_t)1, (size_t)1);
  return wb_la_probe_passed_%(t)s(v, n, anorm, eps);
}
/* The probe of B = A^-1 for A = U D U^T or L D L^T held by sytrf (sysv) in f, ipiv. */
static int wb_la_probe_ldl_%(t)s(char uplo, const %(ctype)s *f, const wb_laint *ipiv,
                               wb_laint n, double anorm, double eps, %(ctype)s *v) {
  if (!wb_la_probe_fill_%(t)s(v, n, eps)) return 0;
  const wb_laint one = 1; wb_laint info = 0;
  wb_la_%(t)ssytrs(&uplo, &n, &one, f, &n, ipiv, v, &n, &info, (size_t)1);
  return wb_la_probe_passed_%(t)s(v, n, anorm, eps);
}
static %(rtype)s wb_la_asum_%(t)s(const %(ctype)s *x, wb_laint n) {
  %(rtype)s sum = 0;
  for (wb_laint i = 0; i < n; ++i) sum += fabs(x[i]);
  return sum;
}
static wb_laint wb_la_argmax_%(t)s(const %(ctype)s *x, wb_laint n) {
  wb_laint best = 0;
  for (wb_laint i = 1; i < n; ++i) if (fabs(x[i]) > fabs(x[best])) best = i;
  return best;
}
/* The estimate of the 1-norm of B = M^-T for M = P L U held by getrf in lu, ipiv (M = A^T
   for A's inverse 1-norm): B x solves M^T y = x, B^T x solves M y = x. x and sgn: n
   entries of work each. Returns inf when a solve overflowed. */
static %(rtype)s wb_la_inv_norm1_%(t)s(const %(ctype)s *lu, const wb_laint *ipiv,
                                     wb_laint n, %(ctype)s *x, %(ctype)s *sgn) {
  const wb_laint one = 1; wb_laint info = 0;
  const char by_b = 'T', by_bt = 'N';
#define WB_LA_TIMES(trans) \
  wb_la_%(t)sgetrs(&trans, &n, &one, lu, &n, ipiv, x, &n, &info, (size_t)1)
  for (wb_laint i = 0; i < n; ++i) x[i] = (%(ctype)s)1 / (%(ctype)s)n;
  WB_LA_TIMES(by_b);
  %(rtype)s est = wb_la_asum_%(t)s(x, n), estold = 0;
  if (n == 1) return est;
  if (!isfinite(est)) return INFINITY;
  for (wb_laint i = 0; i < n; ++i) { sgn[i] = x[i] >= 0 ? 1 : -1; x[i] = sgn[i]; }
  WB_LA_TIMES(by_bt);
  wb_laint j = wb_la_argmax_%(t)s(x, n), iter = 2;
  for (;;) {
    for (wb_laint i = 0; i < n; ++i) x[i] = 0;
    x[j] = 1;
    WB_LA_TIMES(by_b);
    estold = est;
    est = wb_la_asum_%(t)s(x, n);
    if (!isfinite(est)) return INFINITY;
    int same = 1;
    for (wb_laint i = 0; i < n; ++i) same &= (x[i] >= 0 ? 1 : -1) == sgn[i];
    if (same || est <= estold) break;  /* converged, or cycling */
    for (wb_laint i = 0; i < n; ++i) { sgn[i] = x[i] >= 0 ? 1 : -1; x[i] = sgn[i]; }
    WB_LA_TIMES(by_bt);
    const wb_laint last = j;
    j = wb_la_argmax_%(t)s(x, n);
    if (x[last] != fabs(x[j]) && iter < 5) { ++iter; continue; }
    break;
  }
  for (wb_laint i = 0; i < n; ++i)  /* the alternating-sign test vector */
    x[i] = (i %% 2 ? -1 : 1) * (1 + (%(ctype)s)i / (%(ctype)s)(n - 1));
  WB_LA_TIMES(by_b);
#undef WB_LA_TIMES
  const %(rtype)s alternating = 2 * wb_la_asum_%(t)s(x, n) / (3 * (%(rtype)s)n);
  if (!isfinite(alternating)) return INFINITY;
  return alternating > est ? alternating : est;
}
#endif
"""


#: the workspace of sysv/hesv per column of the matrix (LAPACK's block size, 64, is
#: enough for the blocked algorithm; no workspace query per call)
SYSV_WORK = 64


@register_c_op(Solve)
class SolveC(_SolveLikeC):
    """getrf + getrs ("gen"), posv ("pos"), sysv ("sym", and "her" of real matrices),
    hesv ("her" of complex matrices), trtrs ("tri"). The condition estimate of "gen"
    for real matrices is gecon's algorithm by getrs solves; it, pocon ("pos") and sycon
    ("sym") run after a probe solve that skips them for a real matrix it shows well
    conditioned (`_RCOND_C`)."""

    def c_support_code_apply(self, node: Any, name: str) -> str:
        lt = DTYPES[str(node.inputs[0].type.dtype)]
        extra = "" if lt.is_complex else _RCOND_C % {"t": lt.t, "ctype": lt.ctype,
                                                     "rtype": lt.rtype}
        return super().c_support_code_apply(node, name) + extra

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        uplo = "L" if op.lower else "U"
        sym_norm = (f"    const %(rtype)s anorm = wb_la_sym_norm_%(t)s(wb_a, n, {int(op.lower)}, "
                    "wb_crw);\n")  # of the symmetric matrix of that triangle
        if op.assume_a == "pos":
            call = (f"const char uplo = '{uplo}';\n"
                    + sym_norm +
                    "    wb_la_%(t)sposv(&uplo, &wb_n, &wb_k, wb_a, &wb_ld, wb_b, &wb_ld, &info, "
                    "(size_t)1);\n    if (info == 0) "
                    + _probed(node, "wb_la_probe_cholesky_%(t)s(uplo, wb_a, wb_n, "
                              "(double)anorm, WB_LA_EPS_%(t)s, wb_cw)",
                              _condition(node, "pocon", "&uplo, &wb_n, wb_a, &wb_ld")))
            texts = messages("Matrix is not positive definite (assume_a='pos'): the "
                             "leading minor of order ")
            return self.solve_code(node, inputs, outputs, sub, call, texts, op.function_name,
                                   work=_condition_buffers())
        if op.assume_a == "tri":
            call = _trtrs(op.lower, False, False)
            texts = messages("singular matrix: resolution failed at diagonal ")
            return self.solve_code(node, inputs, outputs, sub, call, texts, op.function_name,
                                   position="(long)info - 1")  # scipy counts from 0
        if op.assume_a in ("sym", "her"):
            routine = "hesv" if op.assume_a == "her" and DTYPES[
                str(node.inputs[0].type.dtype)].is_complex else "sysv"
            call = (f"const char uplo = '{uplo}'; const wb_laint wb_lwork = "
                    f"(wb_laint)({SYSV_WORK} * (n > 1 ? n : 1));\n"
                    + sym_norm +
                    f"    wb_la_%(t)s{routine}(&uplo, &wb_n, &wb_k, wb_a, &wb_ld, wb_ipiv, wb_b, "
                    "&wb_ld, wb_work, &wb_lwork, &info, (size_t)1);\n    if (info == 0) "
                    + _probed(node, "wb_la_probe_ldl_%(t)s(uplo, wb_a, wb_ipiv, wb_n, "
                              "(double)anorm, WB_LA_EPS_%(t)s, wb_cw)",
                              _condition(node, routine[:2] + "con", "&uplo, &wb_n, wb_a, "
                                         "&wb_ld, wb_ipiv")))
            texts = messages("Singular matrix: D is exactly zero at pivot ")
            return self.solve_code(node, inputs, outputs, sub, call, texts, op.function_name,
                                   work=(("wb_work", "%(ctype)s", f"{SYSV_WORK} * n"),
                                         *_condition_buffers()))
        # the row-major copy of a is a^T in column-major order: factorise that and solve
        # with its transpose (no transposing copy of a); one pass copies a, sums its
        # columns' moduli (its 1-norm, the infinity norm of a^T: gecon's "I" estimates
        # a's 1-norm rcond) and checks it is finite
        load = ("for (npy_intp j = 0; j < n; ++j) wb_colsum[j] = 0;\n"
                "    const int wb_a_finite = wb_la_load_rows_norm_%(t)s(wb_pa, wb_sa0, wb_sa1, "
                "n, n, wb_a, wb_colsum); (void)wb_a_finite;")
        if DTYPES[str(node.inputs[0].type.dtype)].is_complex:
            condition = _condition(node, "gecon", "&norm, &wb_n, wb_a, &wb_ld")
        else:  # gecon's estimate by faster solves, unless the probe rules it out (_RCOND_C)
            condition = _probed(
                node, "wb_la_probe_lu_%(t)s(wb_a, wb_ipiv, wb_n, (double)anorm, "
                "WB_LA_EPS_%(t)s, wb_cw)",
                "{ const %(rtype)s est = wb_la_inv_norm1_%(t)s(wb_a, wb_ipiv, wb_n, wb_cw, "
                "wb_cw + n);\n"
                "      const %(rtype)s rcond = est > 0 ? (1 / est) / anorm : 0;\n"
                "      WB_LA_NOTE_RCOND(rcond, WB_LA_EPS_%(t)s) }")
        call = ("const %(rtype)s anorm = wb_la_largest_%(t)s(wb_colsum, n); "
                "const char norm = 'I'; (void)norm;\n"
                "    wb_la_%(t)sgetrf(&wb_n, &wb_n, wb_a, &wb_ld, wb_ipiv, &info);\n"
                "    if (info == 0) { const char trans = 'T'; wb_la_%(t)sgetrs(&trans, "
                "&wb_n, &wb_k, wb_a, &wb_ld, wb_ipiv, wb_b, &wb_ld, &info, (size_t)1); }\n"
                "    if (info == 0) " + condition)
        texts = messages("Singular matrix: U is exactly zero at pivot ")
        return self.solve_code(node, inputs, outputs, sub, call, texts, op.function_name,
                               load_a=load, a_finite="wb_a_finite",
                               a_reset="for (npy_intp j = 0; j < n; ++j) wb_colsum[j] = 1;",
                               work=(*_condition_buffers(), ("wb_colsum", "%(rtype)s", "n")))


@register_c_op(DiagonalSolve)
class DiagonalSolveC(LapackC):
    """``b / d`` for each matrix of the broadcast stack: `check_finite`'s pass over every
    d and b first, then (`positive`) one for an entry <= 0, one over every d for a zero
    (the order of `perform`), then the divisions; `hermitian` reads d's real part. No
    LAPACK routine: the C is the loop."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        (d, b), (x,), fail, op = inputs, outputs, sub["fail"], self.op
        nd = op.b_ndim
        lt = DTYPES[str(node.outputs[0].type.dtype)]
        npy = lt.npy
        # the diagonal as the solve read it: its real part for a Hermitian matrix
        real = "crealf" if lt.t == "c" else "creal"
        entry = "*(const %(ctype)s*)(pd + i * wb_sd)"
        if op.hermitian and lt.is_complex:
            entry = f"(%(ctype)s){real}({entry})"
        positive = ""
        if op.positive:  # "pos": a diagonal entry <= 0 is not positive definite
            positive = f"""
  for (npy_intp wb_i = 0; wb_i < wb_nb && !wb_status; ++wb_i) {{
    const char *pd = wb_la_at({d}, 1, wb_bshape, wb_bnd, wb_i);
    for (npy_intp i = 0; i < n; ++i) {{
      const %(ctype)s v = {entry};
      if ({real + "(v)" if lt.is_complex else "v"} <= 0) {{  /* NaN passes, as in perform */
        wb_status = 3; wb_where = wb_i; break;
      }}
    }}
  }}"""
        # warn: min|d| / max|d|, the exact rcond of a diagonal matrix (a NaN never warns)
        rcond_entry = rcond_note = ""
        if op.warn:
            rcond_entry = (f"const %(rtype)s m = wb_la_abs_%(t)s({entry}); wb_nan |= m != m; "
                           "if (i == 0 || m < wb_lo) wb_lo = m; if (m > wb_hi) wb_hi = m;")
            rcond_note = ("if (!wb_status && !wb_nan && n > 0) "
                          "{ WB_LA_NOTE_RCOND(wb_lo / wb_hi, WB_LA_EPS_%(t)s) }")
        k = "1" if nd == 1 else f"PyArray_DIM({b}, PyArray_NDIM({b}) - 1)"
        sb1 = "0" if nd == 1 else f"PyArray_STRIDE({b}, PyArray_NDIM({b}) - 1)"
        finite = ""
        if op.check_finite:
            finite = f"""
  for (npy_intp wb_i = 0; wb_i < wb_nb && !wb_status; ++wb_i) {{
    const char *pd = wb_la_at({d}, 1, wb_bshape, wb_bnd, wb_i);
    const char *pb = wb_la_at({b}, {nd}, wb_bshape, wb_bnd, wb_i);
    int bad_d = 0, bad_b = 0;
    for (npy_intp i = 0; i < n; ++i) {{
      const %(ctype)s v = *(const %(ctype)s*)(pd + i * wb_sd);
      bad_d |= !((v - v) == 0);
      for (npy_intp j = 0; j < k; ++j) {{
        const %(ctype)s w = *(const %(ctype)s*)(pb + i * wb_sb0 + j * wb_sb1);
        bad_b |= !((w - w) == 0);
      }}
    }}
    if (bad_d) {{ wb_status = -2; wb_pos = 0; }} else if (bad_b) {{ wb_status = -2; wb_pos = 1; }}
  }}"""
        code = f"""{{
  {messages("Singular matrix: the diagonal matrix has a zero at position ")}
  PyArrayObject *wb_arrs[2] = {{{d}, {b}}};
  const int wb_cores[2] = {{1, {nd}}};
  npy_intp wb_bshape[NPY_MAXDIMS]; int wb_bnd = 0;
  if (wb_la_batch("solve", wb_arrs, wb_cores, 2, wb_bshape, &wb_bnd) < 0) {fail}
  npy_intp wb_nb = 1;
  for (int q = 0; q < wb_bnd; ++q) wb_nb *= wb_bshape[q];
  {rows_check(op, d, b, nd, fail)}
  const npy_intp n = PyArray_DIM({d}, PyArray_NDIM({d}) - 1), k = {k};
  const npy_intp wb_sd = PyArray_STRIDE({d}, PyArray_NDIM({d}) - 1);
  const npy_intp wb_sb0 = PyArray_STRIDE({b}, PyArray_NDIM({b}) - {nd}), wb_sb1 = {sb1};
  npy_intp wb_dims[NPY_MAXDIMS];
  for (int q = 0; q < wb_bnd; ++q) wb_dims[q] = wb_bshape[q];
  wb_dims[wb_bnd] = n;
  if ({nd} == 2) wb_dims[wb_bnd + 1] = k;
  if (wb_la_out(&{x}, wb_bnd + {nd}, wb_dims, {npy}) < 0) {fail}
  int wb_status = 0; long wb_pos = 0; npy_intp wb_where = 0;
  {finite}
  {positive}
  double wb_rcond = 0; npy_intp wb_rcond_at = -1;  /* WB_LA_NOTE_RCOND (warn) */
  for (npy_intp wb_i = 0; wb_i < wb_nb && !wb_status; ++wb_i) {{
    const char *pd = wb_la_at({d}, 1, wb_bshape, wb_bnd, wb_i);
    %(rtype)s wb_lo = 0, wb_hi = 0; int wb_nan = 0;
    for (npy_intp i = 0; i < n; ++i) {{
      if ({entry} == 0) {{
        wb_status = 1; wb_pos = (long)i; wb_where = wb_i; break;
      }}
      {rcond_entry}
    }}
    {rcond_note}
  }}
  for (npy_intp wb_i = 0; wb_i < wb_nb && !wb_status; ++wb_i) {{
    const char *pd = wb_la_at({d}, 1, wb_bshape, wb_bnd, wb_i);
    const char *pb = wb_la_at({b}, {nd}, wb_bshape, wb_bnd, wb_i);
    %(ctype)s *out = (%(ctype)s*)PyArray_DATA({x}) + wb_i * n * k;
    for (npy_intp i = 0; i < n; ++i) {{
      const %(ctype)s v = {entry};
      for (npy_intp j = 0; j < k; ++j)
        out[i * k + j] = *(const %(ctype)s*)(pb + i * wb_sb0 + j * wb_sb1) / v;
    }}
  }}
  if (wb_status == -2) {{
    PyErr_Format(PyExc_ValueError, {not_finite_c(op)}, wb_pos == 0 ? "a" : "b");
    {fail}
  }}
  if (wb_status == 3) {{
    PyObject *wb_cls = wb_la_error_class(1);
    if (wb_bnd > 0)
      PyErr_Format(wb_cls, "solve: Matrix is not positive definite (assume_a='pos') "
                   "(matrix %ld of the stack)", (long)wb_where);
    else
      PyErr_Format(wb_cls, "solve: Matrix is not positive definite (assume_a='pos')");
    Py_DECREF(wb_cls);
    {fail}
  }}
  if (wb_status > 0) {{
    wb_la_raise("solve", wb_messages[0], wb_pos, wb_where, wb_bnd > 0);
    {fail}
  }}
  if (wb_rcond_at >= 0 && wb_la_warn("solve", wb_rcond, wb_bnd > 0 ? wb_rcond_at : -1) < 0)
    {fail}
}}"""
        return typed(code, node.inputs[0].type.dtype)

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (*super().c_code_cache_version(), 1)


@register_c_op(SolveTriangular)
class SolveTriangularC(_SolveLikeC):
    """trtrs (a zero on the diagonal: scipy's "resolution failed at diagonal i")."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        call = _trtrs(op.lower, op.trans, op.unit_diagonal, op.conjugate)
        texts = messages("singular matrix: resolution failed at diagonal ")
        return self.solve_code(node, inputs, outputs, sub, call, texts, "solve_triangular",
                               position="(long)info - 1")


@register_c_op(TriangularMatmul)
class TriangularMatmulC(_SolveLikeC):
    """trmm (BLAS level 3, in the same library): ``op(t) @ b`` in place of b's copy."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        call = (f"const char side = 'L', uplo = '{'L' if op.lower else 'U'}', "
                f"transa = '{'T' if op.trans else 'N'}', diag = 'N';\n"
                "    const %(ctype)s one = 1;\n"
                "    wb_la_%(t)strmm(&side, &uplo, &transa, &diag, &wb_n, &wb_k, &one, wb_a, "
                "&wb_ld, wb_b, &wb_ld, (size_t)1, (size_t)1, (size_t)1, (size_t)1);")
        return self.solve_code(node, inputs, outputs, sub, call, messages("unreachable "),
                               "triangular_matmul")


@register_c_op(Inv)
class InvC(LapackC):
    """gesv with the identity as right-hand side, then gecon on its LU factors."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        decl, free = buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_b", "%(ctype)s", "n * n"),
                             ("wb_ipiv", "wb_laint", "n"), *_condition_buffers())
        condition = _condition(node, "gecon", "&norm, &wb_n, wb_a, &wb_ld")
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    for (npy_intp j = 0; j < n * n; ++j) wb_b[j] = 0;
    for (npy_intp j = 0; j < n; ++j) wb_b[j + j * n] = 1;
    wb_laint info = 0;
    const %(rtype)s anorm = wb_la_norm_%(t)s(wb_a, n); const char norm = '1';
    wb_la_%(t)sgesv(&wb_n, &wb_n, wb_a, &wb_ld, wb_ipiv, wb_b, &wb_ld, &info);
    {check_info()}
    else {{
      wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA({outputs[0]}) + wb_i * n * n, n, n, wb_b);
      {condition}
    }}"""
        code = self.loop(node, inputs, outputs, sub, body, decl, ["n, n"], "inv")
        return ("{\n" + messages("Singular matrix: U is exactly zero at pivot ") + "\n"
                + finish(code, free) + "\n}")


class _LogDetC(LapackC):
    """getrf, then the sign and log|det| from U's diagonal and the pivots (numpy's way:
    a singular matrix gives sign 0 and -inf; a 0x0 one 1 and 0)."""

    def logdet_code(self, node: Any, inputs: list[str], outputs: list[str],
                    sub: dict[str, str], store: str, function: str) -> str:
        decl, free = buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_ipiv", "wb_laint", "n"))
        # numpy's sign: the phase of a complex u; a real u flips it only when negative
        # (a NaN or +inf keeps it, as numpy; u / |u| gave NaN)
        phase = ("sign *= u / modulus;" if node.inputs[0].type.dtype.is_complex
                 else "if (u < 0) sign = -sign;")
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    wb_laint info = 0;
    wb_la_%(t)sgetrf(&wb_n, &wb_n, wb_a, &wb_ld, wb_ipiv, &info);
    %(ctype)s sign = 1; %(rtype)s logdet = 0;
    if (info < 0) {{ wb_status = wb_rejected; wb_pos = -(long)info; }}
    else if (info > 0) {{ sign = 0; logdet = -INFINITY; }}
    else for (npy_intp j = 0; j < n; ++j) {{
      const %(ctype)s u = wb_a[j + j * n];
      const %(rtype)s modulus = wb_la_abs_%(t)s(u);
      {phase}
      if (wb_ipiv[j] != (wb_laint)(j + 1)) sign = -sign;
      logdet += log(modulus);
    }}
    {store}"""
        empty = store.replace("= sign", "= (%(ctype)s)1").replace("logdet", "(%(rtype)s)0")
        code = self.loop(node, inputs, outputs, sub, body, decl, ["" for _ in outputs],
                         function)
        # 0x0 matrices never reach the loop: det 1, sign 1, log|det| 0
        fill = ("if (n == 0) for (npy_intp wb_i = 0; wb_i < wb_nb; ++wb_i) { "
                + typed(empty, node.inputs[0].type.dtype) + " }")
        code = code.replace("if (wb_status == 0 && n > 0) {", fill + "\nif (wb_status == 0 && "
                            "n > 0) {", 1)
        return "{\n" + messages("unreachable ") + "\n" + finish(code, free) + "\n}"


@register_c_op(Det)
class DetC(_LogDetC):
    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        store = f"((%(ctype)s*)PyArray_DATA({outputs[0]}))[wb_i] = sign * exp(logdet);"
        return self.logdet_code(node, inputs, outputs, sub, store, "det")


@register_c_op(SLogDet)
class SLogDetC(_LogDetC):
    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        s, ld = outputs
        store = (f"((%(ctype)s*)PyArray_DATA({s}))[wb_i] = sign; "
                 f"((%(rtype)s*)PyArray_DATA({ld}))[wb_i] = logdet;")
        return self.logdet_code(node, inputs, outputs, sub, store, "slogdet")

