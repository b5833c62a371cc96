"""C for the factorisations of `wt.linalg` through LAPACK: Eigh (syevd, heevd for
complex matrices), SVD (gesdd) and QR (geqrf, then orgqr / ungqr); see lapack_base.py."""

from __future__ import annotations

from typing import Any

from workbench.core.link.c.interface import register_c_op
from workbench.core.link.c.ops.lapack_base import (
    DTYPES,
    LapackC,
    buffers,
    check_info,
    finish,
    messages,
)
from workbench.core.tensor.linalg.decompositions import Eigh
from workbench.core.tensor.linalg.rectangular import QR, SVD

__all__: list[str] = []


@register_c_op(Eigh)
class EighC(LapackC):
    """syevd (numpy's routine; heevd for complex matrices, with its real workspace), its
    workspaces queried once per call."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        jobz = "V" if op.compute_v else "N"
        uplo = "L" if op.lower else "U"
        complex_ = DTYPES[str(node.inputs[0].type.dtype)].is_complex
        rq, rw = (", &rq, &wb_lrwork", ", wb_rwork, &wb_lrwork") if complex_ else ("", "")
        query = f"""
wb_laint wb_lwork = -1, wb_liwork = -1, wb_lrwork = -1; (void)wb_lrwork;
%(ctype)s *wb_work = NULL; wb_laint *wb_iwork = NULL; %(rtype)s *wb_rwork = NULL;
if (wb_status == 0 && n > 0) {{
  %(ctype)s wq = 0; %(rtype)s rq = 0; wb_laint iq = 0, info = 0; (void)rq;
  const char jobz = '{jobz}', uplo = '{uplo}';
  wb_la_%(t)s%(he)sevd(&jobz, &uplo, &wb_n, wb_a, &wb_ld, wb_w, &wq, &wb_lwork{rq}, &iq,
                       &wb_liwork, &info, (size_t)1, (size_t)1);
  wb_lwork = (wb_laint)wq; wb_liwork = iq; wb_lrwork = (wb_laint)rq;
  wb_work = (%(ctype)s*)malloc(sizeof(%(ctype)s) * (size_t)(wb_lwork > 0 ? wb_lwork : 1));
  wb_iwork = (wb_laint*)malloc(sizeof(wb_laint) * (size_t)(wb_liwork > 0 ? wb_liwork : 1));
  wb_rwork = (%(rtype)s*)malloc(sizeof(%(rtype)s) * (size_t)(wb_lrwork > 0 ? wb_lrwork : 1));
  if (!wb_work || !wb_iwork || !wb_rwork) wb_status = -1;
}}"""
        decl, free = buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_w", "%(rtype)s", "n"))
        store_v = (f"wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA({outputs[1]}) + wb_i * n * n, "
                   "n, n, wb_a);" if op.compute_v else "")
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    const char jobz = '{jobz}', uplo = '{uplo}'; wb_laint info = 0;
    wb_la_%(t)s%(he)sevd(&jobz, &uplo, &wb_n, wb_a, &wb_ld, wb_w, wb_work, &wb_lwork{rw},
                         wb_iwork, &wb_liwork, &info, (size_t)1, (size_t)1);
    {check_info()}
    else {{
      %(rtype)s *w = (%(rtype)s*)PyArray_DATA({outputs[0]}) + wb_i * n;
      for (npy_intp j = 0; j < n; ++j) w[j] = wb_w[j];
      {store_v}
    }}"""
        cores = ["n", "n, n"] if op.compute_v else ["n"]
        code = self.loop(node, inputs, outputs, sub, body, decl + query, cores, op.function_name,
                         "(double)9 * n * n * n")
        free += " free(wb_work); free(wb_iwork); free(wb_rwork);"
        return ("{\n" + messages("Eigenvalues did not converge: info ") + "\n"
                + finish(code, free) + "\n}")


def _identity_fill(out: str, rows: str) -> str:
    """C setting every (rows x rows) matrix of the C-ordered `out` to the identity."""
    return (f"{{ %(ctype)s *o = (%(ctype)s*)PyArray_DATA({out}); "
            f"for (npy_intp b = 0; b < wb_nb; ++b) for (npy_intp i = 0; i < {rows}; ++i) "
            f"for (npy_intp j = 0; j < {rows}; ++j) o[(b * {rows} + i) * {rows} + j] = "
            "(i == j); }")


@register_c_op(SVD)
class SVDC(LapackC):
    """gesdd (numpy's routine), its workspace queried once per call; an empty matrix
    gives identity singular vectors where numpy gives them."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        jobz = "N" if not op.compute_uv else ("A" if op.full_matrices else "S")
        ucol, vrow = ("m", "n") if op.full_matrices else ("k", "k")
        complex_ = DTYPES[str(node.inputs[0].type.dtype)].is_complex
        # complex gesdd's real workspace (LAPACK's bound for every jobz, as numpy's)
        big = "(2 * (m > n ? m : n) + 2 * k + 1)"
        lrwork = f"k * ((5 * k + 7) > {big} ? (5 * k + 7) : {big})" if complex_ else "1"
        rwork = ", wb_rwork" if complex_ else ""
        decl, free = buffers(("wb_a", "%(ctype)s", "m * n"), ("wb_s", "%(rtype)s", "k"),
                             ("wb_u", "%(ctype)s", f"m * {ucol}"),
                             ("wb_vt", "%(ctype)s", f"{vrow} * n"),
                             ("wb_iwork", "wb_laint", "8 * k"),
                             ("wb_rwork", "%(rtype)s", lrwork))
        query = f"""
const wb_laint wb_m = (wb_laint)m, wb_ldu = (wb_laint)(m > 1 ? m : 1);
const wb_laint wb_ldvt = (wb_laint)({vrow} > 1 ? {vrow} : 1);
wb_laint wb_lwork = -1;
%(ctype)s *wb_work = NULL;
if (wb_status == 0 && k > 0) {{
  %(ctype)s wq = 0; wb_laint info = 0; const char jobz = '{jobz}';
  wb_la_%(t)sgesdd(&jobz, &wb_m, &wb_n, wb_a, &wb_ldu, wb_s, wb_u, &wb_ldu, wb_vt, &wb_ldvt,
                   &wq, &wb_lwork{rwork}, wb_iwork, &info, (size_t)1);
  wb_lwork = (wb_laint)wq;
  wb_work = (%(ctype)s*)malloc(sizeof(%(ctype)s) * (size_t)(wb_lwork > 0 ? wb_lwork : 1));
  if (!wb_work) wb_status = -1;
}}"""
        if op.compute_uv:
            u_out, s_out, v_out = outputs
            store = (f"wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA({u_out}) + wb_i * m * {ucol}, "
                     f"m, {ucol}, wb_u);\n      wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA("
                     f"{v_out}) + wb_i * {vrow} * n, {vrow}, n, wb_vt);")
            cores = [f"m, {ucol}", "k", f"{vrow}, n"]
            empty = (_identity_fill(u_out, "m") + _identity_fill(v_out, "n")
                     if op.full_matrices else "")
        else:
            (s_out,) = outputs
            store, cores, empty = "", ["k"], ""
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, m, n, wb_a);
    const char jobz = '{jobz}'; wb_laint info = 0;
    wb_la_%(t)sgesdd(&jobz, &wb_m, &wb_n, wb_a, &wb_ldu, wb_s, wb_u, &wb_ldu, wb_vt, &wb_ldvt,
                     wb_work, &wb_lwork{rwork}, wb_iwork, &info, (size_t)1);
    /* any failure is numpy's "did not converge": gesdd refuses a NaN matrix (info -4) */
    if (info != 0) {{ wb_status = 1; wb_pos = (long)info; }}
    else {{
      %(rtype)s *s = (%(rtype)s*)PyArray_DATA({s_out}) + wb_i * k;
      for (npy_intp j = 0; j < k; ++j) s[j] = wb_s[j];
      {store}
    }}"""
        head = "const npy_intp k = m < n ? m : n;"
        code = self.loop(node, inputs, outputs, sub, body, decl + query, cores, "svd",
                         "(double)4 * m * n * k", square=False, run_if="k > 0",
                         when_empty=empty)
        free += " free(wb_work);"
        code = code.replace("const npy_intp wb_sa0", head + "\nconst npy_intp wb_sa0", 1)
        return ("{\n" + messages("SVD did not converge: info ") + "\n" + finish(code, free)
                + "\n}")


@register_c_op(QR)
class QRC(LapackC):
    """geqrf, then orgqr (ungqr for complex matrices) for Q (numpy's routines);
    workspaces queried once per call. Mode "raw" is geqrf alone (`raw_code`)."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        mode = self.op.mode
        if mode == "raw":
            return self.raw_code(node, inputs, outputs, sub)
        qcols, rrows = {"reduced": ("k", "k"), "complete": ("m", "m"), "r": ("k", "k")}[mode]
        decl, free = buffers(("wb_a", "%(ctype)s", "m * (n > m ? n : m)"),
                             ("wb_tau", "%(ctype)s", "k"))
        query = f"""
const wb_laint wb_m = (wb_laint)m, wb_k = (wb_laint)k, wb_lda = (wb_laint)(m > 1 ? m : 1);
const wb_laint wb_qcols = (wb_laint){qcols};
wb_laint wb_lwork = -1;
%(ctype)s *wb_work = NULL;
if (wb_status == 0 && k > 0) {{
  %(ctype)s wq = 0, wq2 = 0; wb_laint info = 0;
  wb_la_%(t)sgeqrf(&wb_m, &wb_n, wb_a, &wb_lda, wb_tau, &wq, &wb_lwork, &info);
  {"wb_la_%(t)s%(or)sgqr(&wb_m, &wb_qcols, &wb_k, wb_a, &wb_lda, wb_tau, &wq2, &wb_lwork, "
   "&info);" if mode != "r" else ""}
  const wb_laint l1 = (wb_laint)wq, l2 = (wb_laint)wq2;
  wb_lwork = l1 > l2 ? l1 : l2;
  wb_work = (%(ctype)s*)malloc(sizeof(%(ctype)s) * (size_t)(wb_lwork > 0 ? wb_lwork : 1));
  if (!wb_work) wb_status = -1;
}}"""
        if mode == "r":
            (r_out,) = outputs
            q_store, cores, empty = "", [f"{rrows}, n"], ""
        else:
            q_out, r_out = outputs
            q_store = ("wb_la_%(t)s%(or)sgqr(&wb_m, &wb_qcols, &wb_k, wb_a, &wb_lda, wb_tau, "
                       "wb_work, &wb_lwork, &info);\n    " + check_info() + "\n"
                       f"    else wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA({q_out}) + "
                       f"wb_i * m * {qcols}, m, {qcols}, wb_a);")
            cores = [f"m, {qcols}", f"{rrows}, n"]
            empty = (_identity_fill(q_out, "m") if mode == "complete" else "")
        zero_r = (f"{{ %(ctype)s *o = (%(ctype)s*)PyArray_DATA({r_out}); "
                  f"for (npy_intp j = 0; j < wb_nb * {rrows} * n; ++j) o[j] = 0; }}")
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, m, n, wb_a);
    wb_laint info = 0;
    wb_la_%(t)sgeqrf(&wb_m, &wb_n, wb_a, &wb_lda, wb_tau, wb_work, &wb_lwork, &info);
    {check_info()}
    if (wb_status == 0) {{
      %(ctype)s *r = (%(ctype)s*)PyArray_DATA({r_out}) + wb_i * {rrows} * n;
      for (npy_intp i = 0; i < {rrows}; ++i)
        for (npy_intp j = 0; j < n; ++j) r[i * n + j] = (i <= j && i < m) ? wb_a[i + j * m] : 0;
    }}
    if (wb_status == 0) {{ {q_store} }}"""
        head = "const npy_intp k = m < n ? m : n;"
        code = self.loop(node, inputs, outputs, sub, body, decl + query, cores, "qr",
                         "(double)4 * m * n * k", square=False, run_if="k > 0",
                         when_empty=empty + zero_r)
        free += " free(wb_work);"
        code = code.replace("const npy_intp wb_sa0", head + "\nconst npy_intp wb_sa0", 1)
        return ("{\n" + messages("QR failed: info ") + "\n" + finish(code, free) + "\n}")

    def raw_code(self, node: Any, inputs: list[str], outputs: list[str],
                 sub: dict[str, str]) -> str:
        """mode "raw": geqrf alone; its column-major (m, n) result is the C-ordered
        (n, m) `h`, and `tau` is copied as is."""
        h_out, tau_out = outputs
        decl, free = buffers(("wb_a", "%(ctype)s", "m * n"), ("wb_tau", "%(ctype)s", "k"))
        query = """
const wb_laint wb_m = (wb_laint)m, wb_lda = (wb_laint)(m > 1 ? m : 1);
wb_laint wb_lwork = -1;
%(ctype)s *wb_work = NULL;
if (wb_status == 0 && k > 0) {
  %(ctype)s wq = 0; wb_laint info = 0;
  wb_la_%(t)sgeqrf(&wb_m, &wb_n, wb_a, &wb_lda, wb_tau, &wq, &wb_lwork, &info);
  wb_lwork = (wb_laint)wq;
  wb_work = (%(ctype)s*)malloc(sizeof(%(ctype)s) * (size_t)(wb_lwork > 0 ? wb_lwork : 1));
  if (!wb_work) wb_status = -1;
}"""
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, m, n, wb_a);
    wb_laint info = 0;
    wb_la_%(t)sgeqrf(&wb_m, &wb_n, wb_a, &wb_lda, wb_tau, wb_work, &wb_lwork, &info);
    {check_info()}
    else {{
      memcpy((%(ctype)s*)PyArray_DATA({h_out}) + wb_i * m * n, wb_a,
             sizeof(%(ctype)s) * (size_t)(m * n));
      memcpy((%(ctype)s*)PyArray_DATA({tau_out}) + wb_i * k, wb_tau,
             sizeof(%(ctype)s) * (size_t)k);
    }}"""
        head = "const npy_intp k = m < n ? m : n;"
        code = self.loop(node, inputs, outputs, sub, body, decl + query, ["n, m", "k"], "qr",
                         "(double)2 * m * n * k", square=False, run_if="k > 0")
        free += " free(wb_work);"
        code = code.replace("const npy_intp wb_sa0", head + "\nconst npy_intp wb_sa0", 1)
        return ("{\n" + messages("QR failed: info ") + "\n" + finish(code, free) + "\n}")
