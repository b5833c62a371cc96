"""C for the linear-algebra Ops of `wt.linalg`: one LAPACK call per matrix of a stack,
through the same OpenBLAS the BLAS Ops link (blas_lib.py finds it; scipy-openblas
builds ship LAPACK). Never a hand-written factorisation.

LAPACK's Fortran routines are declared here under `wb_la_<t><name>` macros mapped to
the library's real symbols: ``<prefix><name>_<suffix>`` (``scipy_dgesv_64_`` in the
64-bit-integer scipy-openblas, ``dgesv_`` in a system OpenBLAS). Character arguments
pass their hidden Fortran length. Each matrix is copied into a column-major work
buffer (LAPACK overwrites its inputs; any strides are read), factorised or solved
there, and copied into the C-ordered output, so the inputs are never modified.

Batch dimensions broadcast like numpy's (a length-1 batch dimension is re-read). A
matrix for which LAPACK reports failure raises `numpy.linalg.LinAlgError` with the
function's name, LAPACK's position and the matrix's index in the stack, after the
GIL is taken back (large stacks run without it). Empty matrices never reach LAPACK.
Each node's calls run on the number of BLAS threads the C linker's policy gives its
work (blas_threads.py: one thread for small matrices or a busy machine), like the
BLAS Ops' calls.
float32 and float64 use the s and d routines; graphs compiled where the library
lacks a routine run the Ops' `perform`.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from workbench.core.link.c.blas_lib import BlasLibrary, find_blas
from workbench.core.link.c.blas_threads import POLICY_C
from workbench.core.link.c.interface import COpAdapter, register_c_op
from workbench.core.tensor.linalg.decompositions import Cholesky, Eigh
from workbench.core.tensor.linalg.rectangular import QR, SVD
from workbench.core.tensor.linalg.solvers import (
    Det,
    Inv,
    SLogDet,
    Solve,
    SolveTriangular,
    TriangularMatmul,
)

__all__ = ["LAPACK_ROUTINES", "lapack_available", "lapack_symbol"]

#: name -> (Fortran argument list with T for the float type, number of char arguments)
LAPACK_ROUTINES: dict[str, tuple[str, int]] = {
    "potrf": ("const char *uplo, const wb_laint *n, T *a, const wb_laint *lda, wb_laint *info",
              1),
    "gesv": ("const wb_laint *n, const wb_laint *nrhs, T *a, const wb_laint *lda, "
             "wb_laint *ipiv, T *b, const wb_laint *ldb, wb_laint *info", 0),
    "posv": ("const char *uplo, const wb_laint *n, const wb_laint *nrhs, T *a, "
             "const wb_laint *lda, T *b, const wb_laint *ldb, wb_laint *info", 1),
    "trtrs": ("const char *uplo, const char *trans, const char *diag, const wb_laint *n, "
              "const wb_laint *nrhs, const T *a, const wb_laint *lda, T *b, "
              "const wb_laint *ldb, wb_laint *info", 3),
    "getrf": ("const wb_laint *m, const wb_laint *n, T *a, const wb_laint *lda, "
              "wb_laint *ipiv, wb_laint *info", 0),
    "syevd": ("const char *jobz, const char *uplo, const wb_laint *n, T *a, "
              "const wb_laint *lda, T *w, T *work, const wb_laint *lwork, wb_laint *iwork, "
              "const wb_laint *liwork, wb_laint *info", 2),
    "getrs": ("const char *trans, const wb_laint *n, const wb_laint *nrhs, const T *a, "
              "const wb_laint *lda, const wb_laint *ipiv, T *b, const wb_laint *ldb, "
              "wb_laint *info", 1),
    "trmm": ("const char *side, const char *uplo, const char *transa, const char *diag, "
             "const wb_laint *m, const wb_laint *n, const T *alpha, const T *a, "
             "const wb_laint *lda, T *b, const wb_laint *ldb", 4),
    "gesdd": ("const char *jobz, const wb_laint *m, const wb_laint *n, T *a, "
              "const wb_laint *lda, T *s, T *u, const wb_laint *ldu, T *vt, "
              "const wb_laint *ldvt, T *work, const wb_laint *lwork, wb_laint *iwork, "
              "wb_laint *info", 1),
    "geqrf": ("const wb_laint *m, const wb_laint *n, T *a, const wb_laint *lda, T *tau, "
              "T *work, const wb_laint *lwork, wb_laint *info", 0),
    "orgqr": ("const wb_laint *m, const wb_laint *n, const wb_laint *k, T *a, "
              "const wb_laint *lda, const T *tau, T *work, const wb_laint *lwork, "
              "wb_laint *info", 0),
}

DTYPES: dict[str, tuple[str, str, str]] = {
    "float32": ("s", "float", "NPY_FLOAT32"),
    "float64": ("d", "double", "NPY_FLOAT64"),
}


def lapack_symbol(lib: BlasLibrary, name: str) -> str:
    """The exported name of LAPACK routine `name` (e.g. "dgesv") in `lib`."""
    return f"{lib.prefix}{name}_{lib.suffix}"


@functools.lru_cache(maxsize=8)
def _has_routines(path: str, prefix: str, suffix: str) -> bool:
    try:
        handle = ctypes.CDLL(path)
    except OSError:
        return False
    return all(hasattr(handle, f"{prefix}{t}{name}_{suffix}") for t in "sd"
               for name in LAPACK_ROUTINES)


def lapack_available() -> bool:
    """Whether the BLAS library found for the C linker exports every LAPACK routine
    used here."""
    try:
        lib = find_blas()
    except Exception:  # noqa: BLE001 - an unknown WORKBENCH_BLAS: BLAS Ops report it
        return False
    return lib is not None and _has_routines(lib.path, lib.prefix, lib.suffix)


def _declarations(lib: BlasLibrary) -> str:
    lines = [f"/* LAPACK: {lib.source} ({lib.path}) */",
             f"typedef {lib.int_type} wb_laint;"]
    for t, ctype in (("s", "float"), ("d", "double")):
        for name, (args, chars) in LAPACK_ROUTINES.items():
            hidden = "".join(", size_t" for _ in range(chars))
            lines.append(f"#define wb_la_{t}{name} {lapack_symbol(lib, t + name)}")
            lines.append(f"extern void wb_la_{t}{name}({args.replace('T *', ctype + ' *')}"
                         f"{hidden});")
    return "\n".join(lines) + "\n"


_SHARED_C = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>
#define WB_LA_NOGIL_FLOPS 65536.0

/* Raises numpy.linalg.LinAlgError (ValueError if numpy.linalg cannot be imported). */
static void wb_la_raise(const char *function, const char *message, long position,
                        npy_intp batch, int batched) {
  PyObject *mod = PyImport_ImportModule("numpy.linalg");
  PyObject *cls = mod ? PyObject_GetAttrString(mod, "LinAlgError") : NULL;
  Py_XDECREF(mod);
  if (!cls) { PyErr_Clear(); cls = PyExc_ValueError; Py_INCREF(cls); }
  if (batched)
    PyErr_Format(cls, "%s: %s%ld (matrix %ld of the stack)", function, message, position,
                 (long)batch);
  else
    PyErr_Format(cls, "%s: %s%ld", function, message, position);
  Py_DECREF(cls);
}

/* The broadcast batch shape of `count` arrays whose last cores[k] dimensions are core
   ones. Returns 0, or -1 with a ValueError naming the function. */
static int wb_la_batch(const char *function, PyArrayObject **arrays, const int *cores,
                       int count, npy_intp *bshape, int *bnd) {
  int nd = 0;
  for (int k = 0; k < count; ++k) {
    const int b = PyArray_NDIM(arrays[k]) - cores[k];
    if (b < 0) {
      PyErr_Format(PyExc_ValueError, "%s: input %d has %d dimensions, needs at least %d",
                   function, k, PyArray_NDIM(arrays[k]), cores[k]);
      return -1;
    }
    if (b > nd) nd = b;
  }
  for (int d = 0; d < nd; ++d) bshape[d] = 1;
  for (int k = 0; k < count; ++k) {
    const int b = PyArray_NDIM(arrays[k]) - cores[k];
    for (int d = 0; d < b; ++d) {
      const npy_intp len = PyArray_DIM(arrays[k], d);
      npy_intp *out = &bshape[nd - b + d];
      if (len == 1) continue;
      if (*out != 1 && *out != len) {
        PyErr_Format(PyExc_ValueError, "%s: the batch dimensions of the inputs cannot be "
                     "broadcast together (%ld against %ld)", function, (long)*out, (long)len);
        return -1;
      }
      *out = len;
    }
  }
  *bnd = nd;
  return 0;
}

/* The address of the core matrix of `a` at flat index `flat` of the broadcast batch. */
static char *wb_la_at(PyArrayObject *a, int core, const npy_intp *bshape, int bnd,
                      npy_intp flat) {
  const int b = PyArray_NDIM(a) - core;
  char *p = PyArray_BYTES(a);
  for (int d = bnd - 1; d >= 0; --d) {
    const npy_intp len = bshape[d], i = flat % len;
    flat /= len;
    const int ad = d - (bnd - b);
    if (ad >= 0 && PyArray_DIM(a, ad) != 1) p += i * PyArray_STRIDE(a, ad);
  }
  return p;
}

/* Makes *o a writeable C-ordered array of shape dims (reusing it when it fits). */
static int wb_la_out(PyArrayObject **o, int nd, const npy_intp *dims, int typenum) {
  if (*o && PyArray_ISWRITEABLE(*o) && PyArray_IS_C_CONTIGUOUS(*o) && PyArray_NDIM(*o) == nd
      && PyArray_TYPE(*o) == typenum) {
    int same = 1;
    for (int d = 0; d < nd; ++d) same &= PyArray_DIM(*o, d) == dims[d];
    if (same) return 0;
  }
  Py_XDECREF(*o);
  *o = (PyArrayObject*)PyArray_EMPTY(nd, (npy_intp*)dims, typenum, 0);
  return *o ? 0 : -1;
}
"""

_TYPED_C = r"""
#define WB_LA_TILE 32
/* buf (column-major, leading dimension m) = the m x n matrix at p with strides s0, s1,
   copied in tiles so that neither side is read with a long stride for long. */
static void wb_la_load_%(t)s(const char *p, npy_intp s0, npy_intp s1, npy_intp m, npy_intp n,
                           %(ctype)s *buf) {
  for (npy_intp i0 = 0; i0 < m; i0 += WB_LA_TILE)
    for (npy_intp j0 = 0; j0 < n; j0 += WB_LA_TILE) {
      const npy_intp i1 = i0 + WB_LA_TILE < m ? i0 + WB_LA_TILE : m;
      const npy_intp j1 = j0 + WB_LA_TILE < n ? j0 + WB_LA_TILE : n;
      for (npy_intp i = i0; i < i1; ++i)
        for (npy_intp j = j0; j < j1; ++j)
          buf[i + j * m] = *(const %(ctype)s*)(p + i * s0 + j * s1);
    }
}

/* buf (row-major: the column-major transpose) = the m x n matrix at p. */
static void wb_la_load_rows_%(t)s(const char *p, npy_intp s0, npy_intp s1, npy_intp m,
                                npy_intp n, %(ctype)s *buf) {
  for (npy_intp i = 0; i < m; ++i) {
    const char *row = p + i * s0;
    if (s1 == (npy_intp)sizeof(%(ctype)s)) memcpy(buf + i * n, row, sizeof(%(ctype)s) * n);
    else for (npy_intp j = 0; j < n; ++j) buf[i * n + j] = *(const %(ctype)s*)(row + j * s1);
  }
}

/* The C-ordered m x n matrix at out = buf (column-major, leading dimension m). */
static void wb_la_store_%(t)s(%(ctype)s *out, npy_intp m, npy_intp n, const %(ctype)s *buf) {
  for (npy_intp i0 = 0; i0 < m; i0 += WB_LA_TILE)
    for (npy_intp j0 = 0; j0 < n; j0 += WB_LA_TILE) {
      const npy_intp i1 = i0 + WB_LA_TILE < m ? i0 + WB_LA_TILE : m;
      const npy_intp j1 = j0 + WB_LA_TILE < n ? j0 + WB_LA_TILE : n;
      for (npy_intp i = i0; i < i1; ++i)
        for (npy_intp j = j0; j < j1; ++j) out[i * n + j] = buf[i + j * m];
    }
}
"""


def _lib() -> BlasLibrary:
    lib = find_blas()
    if lib is None:  # c_supports said no: code generation is never asked
        raise RuntimeError("no LAPACK found for the C linker (see workbench.core.link.c.blas_lib)")
    return lib


class _LapackC(COpAdapter):
    """What the LAPACK-backed Ops share: declarations, helpers, link flags, the batch loop."""

    def c_supports(self, node: Any) -> bool:
        dtype = str(node.outputs[0].type.dtype)
        return (dtype in DTYPES and all(str(v.type.dtype) == dtype for v in node.inputs)
                and lapack_available())

    def c_headers(self) -> list[str]:
        return ["<numpy/arrayobject.h>"]

    def c_support_code(self) -> str:
        """LAPACK's declarations, the BLAS's (its thread-count functions) and the C
        linker's BLAS thread policy (blas_threads.py), which every call here follows."""
        lib = _lib()
        return _declarations(lib) + lib.declarations() + POLICY_C + _SHARED_C

    def c_init_code(self) -> list[str]:
        """Find the thread policy block when the module loads."""
        return ["if (wb_blas_policy_init() < 0) return NULL;"]

    def c_support_code_apply(self, node: Any, name: str) -> str:
        t, ctype, _ = DTYPES[str(node.outputs[0].type.dtype)]
        return _TYPED_C % {"t": t, "ctype": ctype}

    def c_lib_dirs(self) -> list[str]:
        return [_lib().lib_dir]

    def c_libraries(self) -> list[str]:
        return [_lib().library]

    def c_compile_args(self) -> list[str]:
        return _lib().link_args

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (3,)

    # -- the generated function body ----------------------------------------------------
    def loop(self, node: Any, inputs: list[str], outputs: list[str], sub: dict[str, str],
             body: str, buffers: str, out_cores: list[str], function: str,
             flops: str = "(double)n * n * n", square: bool = True, run_if: str = "n > 0",
             when_empty: str = "") -> str:
        """C for the node: the batch shape of `inputs` (core ranks from the signature),
        the outputs (batch + `out_cores`, C expressions of their core dimensions), the
        work `buffers` (declarations + mallocs, each freed at the end), then `body` run
        for each flat batch index `wb_i` with `wb_status`/`wb_pos` set on failure."""
        t, ctype, npy = DTYPES[str(node.outputs[0].type.dtype)]
        fail = sub["fail"]
        in_cores, out_ranks = node.op.core_ndims
        count = len(inputs)
        a = inputs[0]
        code = [
            "{",
            f"PyArrayObject *wb_arrs[{count}] = {{{', '.join(inputs)}}};",
            f"const int wb_cores[{count}] = {{{', '.join(map(str, in_cores))}}};",
            "npy_intp wb_bshape[NPY_MAXDIMS]; int wb_bnd = 0;",
            f"if (wb_la_batch(\"{function}\", wb_arrs, wb_cores, {count}, wb_bshape, &wb_bnd)"
            f" < 0) {fail}",
            "npy_intp wb_nb = 1;",
            "for (int d = 0; d < wb_bnd; ++d) wb_nb *= wb_bshape[d];",
            f"const npy_intp n = PyArray_DIM({a}, PyArray_NDIM({a}) - 1);",
            f"const npy_intp m = PyArray_DIM({a}, PyArray_NDIM({a}) - 2); (void)m;",
            f"if ({'1' if square else '0'} && m != n) {{",
            f"  PyErr_Format(PyExc_ValueError, \"{function}: last 2 dimensions of the array "
            f"must be square, got (%ld, %ld)\", (long)PyArray_DIM({a}, PyArray_NDIM({a}) - 2),"
            " (long)n);",
            f"  {fail}",
            "}",
            f"const npy_intp wb_sa0 = PyArray_STRIDE({a}, PyArray_NDIM({a}) - 2);",
            f"const npy_intp wb_sa1 = PyArray_STRIDE({a}, PyArray_NDIM({a}) - 1);",
        ]
        for k, (o, core) in enumerate(zip(outputs, out_cores)):
            rank = out_ranks[k]
            dims = ", ".join(["0"] * rank)
            code += [
                f"npy_intp wb_dims{k}[NPY_MAXDIMS];",
                f"for (int d = 0; d < wb_bnd; ++d) wb_dims{k}[d] = wb_bshape[d];",
                f"{{ const npy_intp core[{max(rank, 1)}] = {{{core or dims or '0'}}};",
                f"  for (int d = 0; d < {rank}; ++d) wb_dims{k}[wb_bnd + d] = core[d]; }}",
                f"if (wb_la_out(&{o}, wb_bnd + {rank}, wb_dims{k}, {npy}) < 0) {fail}",
            ]
        code += [
            "int wb_status = 0; long wb_pos = 0; npy_intp wb_where = 0;",
            "const wb_laint wb_n = (wb_laint)n, wb_ld = (wb_laint)(n > 1 ? n : 1);",
            "(void)wb_n; (void)wb_ld; (void)wb_sa0; (void)wb_sa1;",
            buffers,
            f"if (wb_status == 0 && !({run_if})) {{ {when_empty} }}",
            f"if (wb_status == 0 && {run_if}) {{",
            "  static wb_blas_site wb_site;  /* its one-thread estimate (blas_threads.py) */",
            "  wb_blas_call wb_call;",
            f"  wb_blas_begin(&wb_call, &wb_site, {flops} * wb_nb);  /* its BLAS threads */",
            f"  PyThreadState *wb_ts = {flops} * wb_nb >= WB_LA_NOGIL_FLOPS ? "
            "PyEval_SaveThread() : NULL;",
            "  for (npy_intp wb_i = 0; wb_i < wb_nb && wb_status == 0; ++wb_i) {",
            f"    const char *wb_pa = wb_la_at({a}, {in_cores[0]}, wb_bshape, wb_bnd, wb_i);",
            body,
            "    if (wb_status) wb_where = wb_i;",
            "  }",
            "  if (wb_ts) PyEval_RestoreThread(wb_ts);",
            "  wb_blas_end(&wb_call);",
            "}",
            "WB_LA_FREE",
            "if (wb_status == -1) { PyErr_NoMemory(); " + fail + " }",
            "if (wb_status > 0) {",
            "  wb_la_raise(\"" + function + "\", wb_messages[wb_status - 1], wb_pos, wb_where, "
            "wb_bnd > 0);",
            f"  {fail}",
            "}",
            "}",
        ]
        return "\n".join(code).replace("%(t)s", t).replace("%(ctype)s", ctype)


def _buffers(*specs: tuple[str, str, str]) -> tuple[str, str]:
    """Declarations + mallocs of work buffers (name, C type, element count) and the C
    that frees them (the WB_LA_FREE placeholder)."""
    decl, free = [], []
    for name, ctype, count in specs:
        decl.append(f"{ctype} *{name} = ({ctype}*)malloc(sizeof({ctype}) * "
                    f"(size_t)(({count}) > 0 ? ({count}) : 1));")
        decl.append(f"if (!{name}) wb_status = -1;")
        free.append(f"free({name});")
    return "\n".join(decl), " ".join(free)


def _messages(*texts: str) -> str:
    """The failure messages, `wb_status` k > 0 selecting texts[k - 1] (each is followed
    by LAPACK's position)."""
    quoted = ", ".join(f"\"{t}\"" for t in texts)
    return f"static const char *wb_messages[] = {{{quoted}}};"


def _b_setup(b: str, b_ndim: int) -> str:
    """C for the right-hand side: k columns and its core strides."""
    if b_ndim == 1:
        return (f"const npy_intp k = 1; const npy_intp wb_sb0 = PyArray_STRIDE({b}, "
                f"PyArray_NDIM({b}) - 1), wb_sb1 = 0;")
    return (f"const npy_intp k = PyArray_DIM({b}, PyArray_NDIM({b}) - 1);\n"
            f"const npy_intp wb_sb0 = PyArray_STRIDE({b}, PyArray_NDIM({b}) - 2);\n"
            f"const npy_intp wb_sb1 = PyArray_STRIDE({b}, PyArray_NDIM({b}) - 1);")


def _rows_check(function: str, a: str, b: str, b_ndim: int, fail: str) -> str:
    axis = 1 if b_ndim == 1 else 2
    return (f"if (PyArray_DIM({b}, PyArray_NDIM({b}) - {axis}) != "
            f"PyArray_DIM({a}, PyArray_NDIM({a}) - 1)) {{\n"
            f"  PyErr_Format(PyExc_ValueError, \"{function}: a has %ld rows but b has %ld\", "
            f"(long)PyArray_DIM({a}, PyArray_NDIM({a}) - 1), (long)PyArray_DIM({b}, "
            f"PyArray_NDIM({b}) - {axis}));\n  {fail}\n}}\n")


def _finish(code: str, free: str) -> str:
    return code.replace("WB_LA_FREE", free)


@register_c_op(Cholesky)
class CholeskyC(_LapackC):
    """potrf on a copy; the other triangle of the output is zeroed."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        uplo = "L" if self.op.lower else "U"
        keep = "i >= j" if self.op.lower else "i <= j"
        decl, free = _buffers(("wb_a", "%(ctype)s", "n * n"))
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    const char uplo = '{uplo}'; wb_laint info = 0;
    wb_la_%(t)spotrf(&uplo, &wb_n, wb_a, &wb_ld, &info, (size_t)1);
    if (info > 0) {{ wb_status = 1; wb_pos = (long)info; }}
    else {{
      %(ctype)s *o = (%(ctype)s*)PyArray_DATA({outputs[0]}) + wb_i * n * n;
      for (npy_intp i = 0; i < n; ++i)
        for (npy_intp j = 0; j < n; ++j) o[i * n + j] = ({keep}) ? wb_a[i + j * n] : 0;
    }}"""
        code = self.loop(node, inputs, outputs, sub, body, decl, ["n, n"], "cholesky",
                         "(double)n * n * n / 3")
        msg = _messages("Matrix is not positive definite: the leading minor of order ")
        return "{\n" + msg + "\n" + _finish(code, free) + "\n}"


class _SolveLikeC(_LapackC):
    """Solve and SolveTriangular: a copy of a, b copied into the output's work buffer."""

    def solve_code(self, node: Any, inputs: list[str], outputs: list[str],
                   sub: dict[str, str], call: str, messages: str, function: str,
                   prepare: str = "", position: str = "(long)info",
                   load_a: str = "wb_la_load_%(t)s") -> str:
        a, b = inputs
        b_ndim = self.op.b_ndim
        decl, free = _buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_b", "%(ctype)s", "n * k"),
                              ("wb_ipiv", "wb_laint", "n"))
        body = f"""
    {load_a}(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    wb_la_load_%(t)s(wb_la_at({b}, {b_ndim}, wb_bshape, wb_bnd, wb_i), wb_sb0, wb_sb1, n, k,
                     wb_b);
    {prepare}
    const wb_laint wb_k = (wb_laint)k; wb_laint info = 0;
    {call}
    if (info > 0) {{ wb_status = 1; wb_pos = {position}; }}
    else wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA({outputs[0]}) + wb_i * n * k, n, k, wb_b);"""
        out_core = "n" if b_ndim == 1 else "n, k"
        code = self.loop(node, inputs, outputs, sub, body, decl, [out_core], function,
                         "(double)n * n * (n + k)")
        head = _rows_check(function, a, b, b_ndim, sub["fail"]) + _b_setup(b, b_ndim)
        return "{\n" + messages + "\n" + head + "\n" + _finish(code, free) + "\n}"


def _trtrs(lower: bool, trans: bool, unit: bool) -> str:
    return (f"const char uplo = '{'L' if lower else 'U'}', trans = '{'T' if trans else 'N'}', "
            f"diag = '{'U' if unit else 'N'}';\n"
            "    wb_la_%(t)strtrs(&uplo, &trans, &diag, &wb_n, &wb_k, wb_a, &wb_ld, wb_b, &wb_ld, "
            "&info, (size_t)1, (size_t)1, (size_t)1);")


@register_c_op(Solve)
class SolveC(_SolveLikeC):
    """gesv (general; "sym" on the symmetrised copy), posv ("pos"), trtrs ("tri")."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        prepare, position = "", "(long)info"
        if op.assume_a == "pos":
            uplo = "L" if op.lower else "U"
            call = (f"const char uplo = '{uplo}';\n    wb_la_%(t)sposv(&uplo, &wb_n, &wb_k, "
                    "wb_a, &wb_ld, wb_b, &wb_ld, &info, (size_t)1);")
            messages = _messages("Matrix is not positive definite (assume_a='pos'): the "
                                 "leading minor of order ")
        elif op.assume_a == "tri":
            call = _trtrs(op.lower, False, False)
            messages = _messages("singular matrix: resolution failed at diagonal ")
            position = "(long)info - 1"  # scipy counts diagonals from 0
        else:
            if op.assume_a == "sym":  # fill the triangle that is not read
                src = "wb_a[j + i * n]" if op.lower else "wb_a[i + j * n]"
                dst = "wb_a[i + j * n]" if op.lower else "wb_a[j + i * n]"
                prepare = (f"for (npy_intp j = 0; j < n; ++j) for (npy_intp i = 0; i < j; ++i) "
                           f"{dst} = {src};")
            call = ("wb_la_%(t)sgesv(&wb_n, &wb_k, wb_a, &wb_ld, wb_ipiv, wb_b, &wb_ld, "
                    "&info);")
            messages = _messages("Singular matrix: U is exactly zero at pivot ")
            if op.assume_a == "gen":
                # the row-major copy of a is a^T in column-major order: factorise that and
                # solve with its transpose (no transposing copy of a)
                call = ("wb_la_%(t)sgetrf(&wb_n, &wb_n, wb_a, &wb_ld, wb_ipiv, &info);\n"
                        "    if (info == 0) { const char trans = 'T'; wb_la_%(t)sgetrs(&trans, "
                        "&wb_n, &wb_k, wb_a, &wb_ld, wb_ipiv, wb_b, &wb_ld, &info, (size_t)1); }")
                return self.solve_code(node, inputs, outputs, sub, call, messages, "solve",
                                       position=position, load_a="wb_la_load_rows_%(t)s")
        return self.solve_code(node, inputs, outputs, sub, call, messages, "solve", prepare,
                               position)


@register_c_op(SolveTriangular)
class SolveTriangularC(_SolveLikeC):
    """trtrs (a zero on the diagonal: scipy's "resolution failed at diagonal i")."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        call = _trtrs(op.lower, op.trans, op.unit_diagonal)
        messages = _messages("singular matrix: resolution failed at diagonal ")
        return self.solve_code(node, inputs, outputs, sub, call, messages, "solve_triangular",
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
        return self.solve_code(node, inputs, outputs, sub, call, _messages("unreachable "),
                               "triangular_matmul")


@register_c_op(Inv)
class InvC(_LapackC):
    """gesv with the identity as right-hand side."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        decl, free = _buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_b", "%(ctype)s", "n * n"),
                              ("wb_ipiv", "wb_laint", "n"))
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    for (npy_intp j = 0; j < n * n; ++j) wb_b[j] = 0;
    for (npy_intp j = 0; j < n; ++j) wb_b[j + j * n] = 1;
    wb_laint info = 0;
    wb_la_%(t)sgesv(&wb_n, &wb_n, wb_a, &wb_ld, wb_ipiv, wb_b, &wb_ld, &info);
    if (info > 0) {{ wb_status = 1; wb_pos = (long)info; }}
    else wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA({outputs[0]}) + wb_i * n * n, n, n, wb_b);"""
        code = self.loop(node, inputs, outputs, sub, body, decl, ["n, n"], "inv")
        return ("{\n" + _messages("Singular matrix: U is exactly zero at pivot ") + "\n"
                + _finish(code, free) + "\n}")


class _LogDetC(_LapackC):
    """getrf, then the sign and log|det| from U's diagonal and the pivots (numpy's way:
    a singular matrix gives sign 0 and -inf; a 0x0 one 1 and 0)."""

    def logdet_code(self, node: Any, inputs: list[str], outputs: list[str],
                    sub: dict[str, str], store: str, function: str) -> str:
        decl, free = _buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_ipiv", "wb_laint", "n"))
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    wb_laint info = 0;
    wb_la_%(t)sgetrf(&wb_n, &wb_n, wb_a, &wb_ld, wb_ipiv, &info);
    %(ctype)s sign = 1, logdet = 0;
    if (info > 0) {{ sign = 0; logdet = -INFINITY; }}
    else for (npy_intp j = 0; j < n; ++j) {{
      const %(ctype)s u = wb_a[j + j * n];
      if (u < 0) sign = -sign;
      if (wb_ipiv[j] != (wb_laint)(j + 1)) sign = -sign;
      logdet += log(fabs(u));
    }}
    {store}"""
        empty = store.replace("sign", "(%(ctype)s)1").replace("logdet", "(%(ctype)s)0")
        code = self.loop(node, inputs, outputs, sub, body, decl, ["" for _ in outputs],
                         function)
        # 0x0 matrices never reach the loop: det 1, sign 1, log|det| 0
        ctype = DTYPES[str(node.outputs[0].type.dtype)][1]
        fill = ("if (n == 0) for (npy_intp wb_i = 0; wb_i < wb_nb; ++wb_i) { "
                + empty + " }").replace("%(ctype)s", ctype)
        code = code.replace("if (wb_status == 0 && n > 0) {", fill + "\nif (wb_status == 0 && "
                            "n > 0) {", 1)
        return "{\n" + _messages("unreachable ") + "\n" + _finish(code, free) + "\n}"


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
                 f"((%(ctype)s*)PyArray_DATA({ld}))[wb_i] = logdet;")
        return self.logdet_code(node, inputs, outputs, sub, store, "slogdet")


@register_c_op(Eigh)
class EighC(_LapackC):
    """syevd (numpy's routine), its workspace queried once per call."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        jobz = "V" if op.compute_v else "N"
        uplo = "L" if op.lower else "U"
        query = f"""
wb_laint wb_lwork = -1, wb_liwork = -1;
%(ctype)s *wb_work = NULL; wb_laint *wb_iwork = NULL;
if (wb_status == 0 && n > 0) {{
  %(ctype)s wq = 0; wb_laint iq = 0, info = 0; const char jobz = '{jobz}', uplo = '{uplo}';
  wb_la_%(t)ssyevd(&jobz, &uplo, &wb_n, wb_a, &wb_ld, wb_w, &wq, &wb_lwork, &iq, &wb_liwork,
                   &info, (size_t)1, (size_t)1);
  wb_lwork = (wb_laint)wq; wb_liwork = iq;
  wb_work = (%(ctype)s*)malloc(sizeof(%(ctype)s) * (size_t)(wb_lwork > 0 ? wb_lwork : 1));
  wb_iwork = (wb_laint*)malloc(sizeof(wb_laint) * (size_t)(wb_liwork > 0 ? wb_liwork : 1));
  if (!wb_work || !wb_iwork) wb_status = -1;
}}"""
        decl, free = _buffers(("wb_a", "%(ctype)s", "n * n"), ("wb_w", "%(ctype)s", "n"))
        store_v = (f"wb_la_store_%(t)s((%(ctype)s*)PyArray_DATA({outputs[1]}) + wb_i * n * n, "
                   "n, n, wb_a);" if op.compute_v else "")
        body = f"""
    wb_la_load_%(t)s(wb_pa, wb_sa0, wb_sa1, n, n, wb_a);
    const char jobz = '{jobz}', uplo = '{uplo}'; wb_laint info = 0;
    wb_la_%(t)ssyevd(&jobz, &uplo, &wb_n, wb_a, &wb_ld, wb_w, wb_work, &wb_lwork, wb_iwork,
                     &wb_liwork, &info, (size_t)1, (size_t)1);
    if (info > 0) {{ wb_status = 1; wb_pos = (long)info; }}
    else {{
      %(ctype)s *w = (%(ctype)s*)PyArray_DATA({outputs[0]}) + wb_i * n;
      for (npy_intp j = 0; j < n; ++j) w[j] = wb_w[j];
      {store_v}
    }}"""
        cores = ["n", "n, n"] if op.compute_v else ["n"]
        code = self.loop(node, inputs, outputs, sub, body, decl + query, cores, "eigh",
                         "(double)9 * n * n * n")
        free += " free(wb_work); free(wb_iwork);"
        return ("{\n" + _messages("Eigenvalues did not converge: info ") + "\n"
                + _finish(code, free) + "\n}")


def _identity_fill(out: str, rows: str) -> str:
    """C setting every (rows x rows) matrix of the C-ordered `out` to the identity."""
    return (f"{{ %(ctype)s *o = (%(ctype)s*)PyArray_DATA({out}); "
            f"for (npy_intp b = 0; b < wb_nb; ++b) for (npy_intp i = 0; i < {rows}; ++i) "
            f"for (npy_intp j = 0; j < {rows}; ++j) o[(b * {rows} + i) * {rows} + j] = "
            "(i == j); }")


@register_c_op(SVD)
class SVDC(_LapackC):
    """gesdd (numpy's routine), its workspace queried once per call; an empty matrix
    gives identity singular vectors where numpy gives them."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        op = self.op
        jobz = "N" if not op.compute_uv else ("A" if op.full_matrices else "S")
        ucol, vrow = ("m", "n") if op.full_matrices else ("k", "k")
        decl, free = _buffers(("wb_a", "%(ctype)s", "m * n"), ("wb_s", "%(ctype)s", "k"),
                              ("wb_u", "%(ctype)s", f"m * {ucol}"),
                              ("wb_vt", "%(ctype)s", f"{vrow} * n"),
                              ("wb_iwork", "wb_laint", "8 * k"))
        query = f"""
const wb_laint wb_m = (wb_laint)m, wb_ldu = (wb_laint)(m > 1 ? m : 1);
const wb_laint wb_ldvt = (wb_laint)({vrow} > 1 ? {vrow} : 1);
wb_laint wb_lwork = -1;
%(ctype)s *wb_work = NULL;
if (wb_status == 0 && k > 0) {{
  %(ctype)s wq = 0; wb_laint info = 0; const char jobz = '{jobz}';
  wb_la_%(t)sgesdd(&jobz, &wb_m, &wb_n, wb_a, &wb_ldu, wb_s, wb_u, &wb_ldu, wb_vt, &wb_ldvt,
                   &wq, &wb_lwork, wb_iwork, &info, (size_t)1);
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
                     wb_work, &wb_lwork, wb_iwork, &info, (size_t)1);
    if (info > 0) {{ wb_status = 1; wb_pos = (long)info; }}
    else {{
      %(ctype)s *s = (%(ctype)s*)PyArray_DATA({s_out}) + wb_i * k;
      for (npy_intp j = 0; j < k; ++j) s[j] = wb_s[j];
      {store}
    }}"""
        head = "const npy_intp k = m < n ? m : n;"
        code = self.loop(node, inputs, outputs, sub, body, decl + query, cores, "svd",
                         "(double)4 * m * n * k", square=False, run_if="k > 0",
                         when_empty=empty)
        free += " free(wb_work);"
        code = code.replace("const npy_intp wb_sa0", head + "\nconst npy_intp wb_sa0", 1)
        return ("{\n" + _messages("SVD did not converge: info ") + "\n" + _finish(code, free)
                + "\n}")


@register_c_op(QR)
class QRC(_LapackC):
    """geqrf, then orgqr for Q (numpy's routines); workspaces queried once per call."""

    def c_code(self, node: Any, name: str, inputs: list[str], outputs: list[str],
               sub: dict[str, str]) -> str:
        mode = self.op.mode
        qcols, rrows = {"reduced": ("k", "k"), "complete": ("m", "m"), "r": ("k", "k")}[mode]
        decl, free = _buffers(("wb_a", "%(ctype)s", "m * (n > m ? n : m)"),
                              ("wb_tau", "%(ctype)s", "k"))
        query = f"""
const wb_laint wb_m = (wb_laint)m, wb_k = (wb_laint)k, wb_lda = (wb_laint)(m > 1 ? m : 1);
const wb_laint wb_qcols = (wb_laint){qcols};
wb_laint wb_lwork = -1;
%(ctype)s *wb_work = NULL;
if (wb_status == 0 && k > 0) {{
  %(ctype)s wq = 0, wq2 = 0; wb_laint info = 0;
  wb_la_%(t)sgeqrf(&wb_m, &wb_n, wb_a, &wb_lda, wb_tau, &wq, &wb_lwork, &info);
  {"wb_la_%(t)sorgqr(&wb_m, &wb_qcols, &wb_k, wb_a, &wb_lda, wb_tau, &wq2, &wb_lwork, &info);"
   if mode != "r" else ""}
  wb_lwork = (wb_laint)(wq > wq2 ? wq : wq2);
  wb_work = (%(ctype)s*)malloc(sizeof(%(ctype)s) * (size_t)(wb_lwork > 0 ? wb_lwork : 1));
  if (!wb_work) wb_status = -1;
}}"""
        if mode == "r":
            (r_out,) = outputs
            q_store, cores, empty = "", [f"{rrows}, n"], ""
        else:
            q_out, r_out = outputs
            q_store = (f"wb_la_%(t)sorgqr(&wb_m, &wb_qcols, &wb_k, wb_a, &wb_lda, wb_tau, "
                       "wb_work, &wb_lwork, &info);\n"
                       "    if (info > 0) { wb_status = 1; wb_pos = (long)info; }\n"
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
    {{
      %(ctype)s *r = (%(ctype)s*)PyArray_DATA({r_out}) + wb_i * {rrows} * n;
      for (npy_intp i = 0; i < {rrows}; ++i)
        for (npy_intp j = 0; j < n; ++j) r[i * n + j] = (i <= j && i < m) ? wb_a[i + j * m] : 0;
    }}
    {q_store}"""
        head = "const npy_intp k = m < n ? m : n;"
        code = self.loop(node, inputs, outputs, sub, body, decl + query, cores, "qr",
                         "(double)4 * m * n * k", square=False, run_if="k > 0",
                         when_empty=empty + zero_r)
        free += " free(wb_work);"
        code = code.replace("const npy_intp wb_sa0", head + "\nconst npy_intp wb_sa0", 1)
        return ("{\n" + _messages("QR failed: info ") + "\n" + _finish(code, free) + "\n}")
