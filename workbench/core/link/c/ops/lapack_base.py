"""What the C of the linear-algebra Ops of `wt.linalg` shares (lapack.py: the solvers,
lapack_factorizations.py: eigh, svd, qr): one LAPACK call per matrix of a stack,
through the same OpenBLAS the BLAS Ops link (blas_lib.py finds it; scipy-openblas
builds ship LAPACK). Never a hand-written factorisation.

LAPACK's Fortran routines are declared here, once each in `LAPACK_ROUTINES`, for
every type letter they exist in (s, d, c, z), under `wb_la_<t><name>` macros mapped
to the library's real symbols: ``<prefix><name>_<suffix>`` (``scipy_zgesv_64_`` in
the 64-bit-integer scipy-openblas, ``zgesv_`` in a system OpenBLAS). Character
arguments pass their hidden Fortran length. Each matrix is copied into a
column-major work buffer (LAPACK overwrites its inputs; any strides are read),
factorised or solved there, and copied into the C-ordered output, so the inputs are
never modified.

Batch dimensions broadcast like numpy's (a length-1 batch dimension is re-read). A
matrix for which LAPACK reports failure raises `numpy.linalg.LinAlgError` with the
function's name, LAPACK's position and the matrix's index in the stack, after the
GIL is taken back (large stacks run without it). Empty matrices never reach LAPACK.
Each node's calls run on the number of BLAS threads the C linker's policy gives its
work (blas_threads.py: one thread for small matrices or a busy machine), like the
BLAS Ops' calls.

float32, float64, complex64 and complex128 use the s, d, c and z routines (C99
``float _Complex``/``double _Complex``, NumPy's own complex types, which have
LAPACK's layout); the Hermitian routines (heevd, hesv, ungqr) replace the symmetric
and orthogonal ones for complex matrices. Graphs compiled where the library lacks a
routine run the Ops' `perform`.
"""

from __future__ import annotations

import ctypes
import functools
import re
from dataclasses import dataclass
from typing import Any

from workbench.core.link.c.blas_lib import BlasLibrary, find_blas
from workbench.core.link.c.blas_threads import POLICY_C
from workbench.core.link.c.cstring import c_string_literal, include_guarded
from workbench.core.link.c.interface import COpAdapter
from workbench.core.link.c.ops.lapack_solo import solo_c, solo_library
from workbench.core.tensor.linalg.base import MISMATCH_MESSAGE, SQUARE_MESSAGE

__all__ = ["DTYPES", "LAPACK_ROUTINES", "LapackC", "LapackType", "buffers", "check_info",
           "finish", "lapack_available", "lapack_symbol", "messages", "not_finite_c",
           "rows_check", "square_check", "typed"]

ALL = "sdcz"

#: name -> (Fortran argument list, number of char arguments, the type letters it exists
#: for). T is the matrix's element type and R its real type; ``[r:...]`` is only in the
#: real routines' list and ``[c:...]`` only in the complex ones'.
LAPACK_ROUTINES: dict[str, tuple[str, int, str]] = {
    "potrf": ("const char *uplo, const wb_laint *n, T *a, const wb_laint *lda, wb_laint *info",
              1, ALL),
    "gesv": ("const wb_laint *n, const wb_laint *nrhs, T *a, const wb_laint *lda, "
             "wb_laint *ipiv, T *b, const wb_laint *ldb, wb_laint *info", 0, ALL),
    "posv": ("const char *uplo, const wb_laint *n, const wb_laint *nrhs, T *a, "
             "const wb_laint *lda, T *b, const wb_laint *ldb, wb_laint *info", 1, ALL),
    "sysv": ("const char *uplo, const wb_laint *n, const wb_laint *nrhs, T *a, "
             "const wb_laint *lda, wb_laint *ipiv, T *b, const wb_laint *ldb, T *work, "
             "const wb_laint *lwork, wb_laint *info", 1, ALL),
    "hesv": ("const char *uplo, const wb_laint *n, const wb_laint *nrhs, T *a, "
             "const wb_laint *lda, wb_laint *ipiv, T *b, const wb_laint *ldb, T *work, "
             "const wb_laint *lwork, wb_laint *info", 1, "cz"),
    "trtrs": ("const char *uplo, const char *trans, const char *diag, const wb_laint *n, "
              "const wb_laint *nrhs, const T *a, const wb_laint *lda, T *b, "
              "const wb_laint *ldb, wb_laint *info", 3, ALL),
    "getrf": ("const wb_laint *m, const wb_laint *n, T *a, const wb_laint *lda, "
              "wb_laint *ipiv, wb_laint *info", 0, ALL),
    "getrs": ("const char *trans, const wb_laint *n, const wb_laint *nrhs, const T *a, "
              "const wb_laint *lda, const wb_laint *ipiv, T *b, const wb_laint *ldb, "
              "wb_laint *info", 1, ALL),
    "gecon": ("const char *norm, const wb_laint *n, const T *a, const wb_laint *lda, "
              "const R *anorm, R *rcond, T *work, [r:wb_laint *iwork][c:R *rwork], "
              "wb_laint *info", 1, ALL),
    "pocon": ("const char *uplo, const wb_laint *n, const T *a, const wb_laint *lda, "
              "const R *anorm, R *rcond, T *work, [r:wb_laint *iwork][c:R *rwork], "
              "wb_laint *info", 1, ALL),
    "sycon": ("const char *uplo, const wb_laint *n, const T *a, const wb_laint *lda, "
              "const wb_laint *ipiv, const R *anorm, R *rcond, T *work, "
              "[r:wb_laint *iwork, ]wb_laint *info", 1, ALL),
    "hecon": ("const char *uplo, const wb_laint *n, const T *a, const wb_laint *lda, "
              "const wb_laint *ipiv, const R *anorm, R *rcond, T *work, wb_laint *info",
              1, "cz"),
    "trmm": ("const char *side, const char *uplo, const char *transa, const char *diag, "
             "const wb_laint *m, const wb_laint *n, const T *alpha, const T *a, "
             "const wb_laint *lda, T *b, const wb_laint *ldb", 4, ALL),
    "gemm": ("const char *transa, const char *transb, const wb_laint *m, const wb_laint *n, "
             "const wb_laint *k, const T *alpha, const T *a, const wb_laint *lda, const T *b, "
             "const wb_laint *ldb, const T *beta, T *c, const wb_laint *ldc", 2, ALL),
    "sytrs": ("const char *uplo, const wb_laint *n, const wb_laint *nrhs, const T *a, "
              "const wb_laint *lda, const wb_laint *ipiv, T *b, const wb_laint *ldb, "
              "wb_laint *info", 1, "sd"),
    "trsv": ("const char *uplo, const char *trans, const char *diag, const wb_laint *n, "
             "const T *a, const wb_laint *lda, T *x, const wb_laint *incx", 3, ALL),
    "trsm": ("const char *side, const char *uplo, const char *transa, const char *diag, "
             "const wb_laint *m, const wb_laint *n, const T *alpha, const T *a, "
             "const wb_laint *lda, T *b, const wb_laint *ldb", 4, ALL),
    "syevd": ("const char *jobz, const char *uplo, const wb_laint *n, T *a, "
              "const wb_laint *lda, T *w, T *work, const wb_laint *lwork, wb_laint *iwork, "
              "const wb_laint *liwork, wb_laint *info", 2, "sd"),
    "heevd": ("const char *jobz, const char *uplo, const wb_laint *n, T *a, "
              "const wb_laint *lda, R *w, T *work, const wb_laint *lwork, R *rwork, "
              "const wb_laint *lrwork, wb_laint *iwork, const wb_laint *liwork, "
              "wb_laint *info", 2, "cz"),
    "gesdd": ("const char *jobz, const wb_laint *m, const wb_laint *n, T *a, "
              "const wb_laint *lda, R *s, T *u, const wb_laint *ldu, T *vt, "
              "const wb_laint *ldvt, T *work, const wb_laint *lwork, [c:R *rwork, ]"
              "wb_laint *iwork, wb_laint *info", 1, ALL),
    "geqrf": ("const wb_laint *m, const wb_laint *n, T *a, const wb_laint *lda, T *tau, "
              "T *work, const wb_laint *lwork, wb_laint *info", 0, ALL),
    "orgqr": ("const wb_laint *m, const wb_laint *n, const wb_laint *k, T *a, "
              "const wb_laint *lda, const T *tau, T *work, const wb_laint *lwork, "
              "wb_laint *info", 0, "sd"),
    "ungqr": ("const wb_laint *m, const wb_laint *n, const wb_laint *k, T *a, "
              "const wb_laint *lda, const T *tau, T *work, const wb_laint *lwork, "
              "wb_laint *info", 0, "cz"),
}


@dataclass(frozen=True)
class LapackType:
    """How the C of one dtype is written: LAPACK's type letter, the C element type, its
    NumPy type number, the real C type and C expressions of ``x``'s conjugate and
    modulus."""

    t: str
    ctype: str
    npy: str
    rtype: str
    conj: str
    abs: str

    @property
    def is_complex(self) -> bool:
        return self.t in "cz"


DTYPES: dict[str, LapackType] = {
    "float32": LapackType("s", "float", "NPY_FLOAT32", "float", "x", "fabsf(x)"),
    "float64": LapackType("d", "double", "NPY_FLOAT64", "double", "x", "fabs(x)"),
    "complex64": LapackType("c", "float _Complex", "NPY_COMPLEX64", "float", "conjf(x)",
                            "cabsf(x)"),
    "complex128": LapackType("z", "double _Complex", "NPY_COMPLEX128", "double", "conj(x)",
                             "cabs(x)"),
}

def typed(code: str, dtype: Any) -> str:
    """`code` with the placeholders of the dtype filled: ``%(t)s`` (LAPACK's letter),
    ``%(ctype)s``, ``%(rtype)s`` (the real type), ``%(he)s`` ("sy", or "he" for complex:
    the Hermitian routines) and ``%(or)s`` ("or", or "un")."""
    lt = DTYPES[str(dtype)]
    complex_ = lt.is_complex
    return (code.replace("%(t)s", lt.t).replace("%(ctype)s", lt.ctype)
            .replace("%(rtype)s", lt.rtype).replace("%(he)s", "he" if complex_ else "sy")
            .replace("%(or)s", "un" if complex_ else "or"))


def lapack_symbol(lib: BlasLibrary, name: str) -> str:
    """The exported name of LAPACK routine `name` (e.g. "dgesv") in `lib`."""
    return f"{lib.prefix}{name}_{lib.suffix}"


@functools.lru_cache(maxsize=8)
def _has_routines(path: str, prefix: str, suffix: str) -> bool:
    try:
        handle = ctypes.CDLL(path)
    except OSError:
        return False
    return all(hasattr(handle, f"{prefix}{t}{name}_{suffix}")
               for name, (_, _, kinds) in LAPACK_ROUTINES.items() for t in kinds)


def lapack_available() -> bool:
    """Whether the BLAS library found for the C linker exports every LAPACK routine
    used here."""
    try:
        lib = find_blas()
    except Exception:  # noqa: BLE001 - an unknown WORKBENCH_BLAS: BLAS Ops report it
        return False
    return lib is not None and _has_routines(lib.path, lib.prefix, lib.suffix)


def _arguments(args: str, lt: LapackType) -> str:
    """The C parameter list of a routine for one type (see `LAPACK_ROUTINES`)."""
    keep, drop = ("c", "r") if lt.is_complex else ("r", "c")
    args = re.sub(rf"\[{drop}:[^\]]*\]", "", args)
    args = re.sub(rf"\[{keep}:([^\]]*)\]", r"\1", args)
    return re.sub(r"\bR \*", lt.rtype + " *", re.sub(r"\bT \*", lt.ctype + " *", args))


def _declarations(lib: BlasLibrary) -> str:
    lines = [f"/* LAPACK: {lib.source} ({lib.path}) */",
             f"typedef {lib.int_type} wb_laint;"]
    protos = {}
    for lt in DTYPES.values():
        for name, (args, chars, kinds) in LAPACK_ROUTINES.items():
            if lt.t not in kinds:
                continue
            hidden = "".join(", size_t" for _ in range(chars))
            params, symbol = f"{_arguments(args, lt)}{hidden}", lapack_symbol(lib, lt.t + name)
            lines.append(f"#define wb_la_{lt.t}{name} {symbol}")
            lines.append(f"extern void wb_la_{lt.t}{name}({params});")
            protos[lt.t + name] = (params, symbol)
    # one-thread calls may go to a second copy without a thread pool (lapack_solo.py)
    return "\n".join(lines) + "\n" + solo_c(solo_library(), protos)


_SHARED_C = r"""
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#define WB_LA_NOGIL_FLOPS 65536.0

/* Notes the reciprocal condition number r of the matrix wb_i when it is below the
   machine epsilon `eps` and no earlier matrix of the stack was (the loop's variables). */
#define WB_LA_NOTE_RCOND(r, eps) \
  if ((r) < (eps) && wb_rcond_at < 0) { wb_rcond = (double)(r); wb_rcond_at = wb_i; }

/* Warns LinAlgWarning about an ill-conditioned matrix through the one Python function
   that words it (tensor/linalg/base.py); -1 with the exception set when the warning
   is an error. */
static int wb_la_warn(const char *function, double rcond, npy_intp batch) {
  PyObject *mod = PyImport_ImportModule("workbench.core.tensor.linalg.base");
  if (!mod) return -1;
  PyObject *done = PyObject_CallMethod(mod, "warn_ill_conditioned", "sdn", function, rcond,
                                       (Py_ssize_t)batch);
  Py_DECREF(mod);
  if (!done) return -1;
  Py_DECREF(done);
  return 0;
}

/* A new reference to numpy.linalg.LinAlgError when `linalg` (ValueError if numpy.linalg
   cannot be imported), else to ValueError. */
static PyObject *wb_la_error_class(int linalg) {
  PyObject *mod = linalg ? PyImport_ImportModule("numpy.linalg") : NULL;
  PyObject *cls = mod ? PyObject_GetAttrString(mod, "LinAlgError") : NULL;
  Py_XDECREF(mod);
  if (!cls) { PyErr_Clear(); cls = PyExc_ValueError; Py_INCREF(cls); }
  return cls;
}

/* Raises numpy.linalg.LinAlgError (ValueError if numpy.linalg cannot be imported). */
static void wb_la_raise(const char *function, const char *message, long position,
                        npy_intp batch, int batched) {
  PyObject *cls = wb_la_error_class(1);
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
/* the conjugate and the modulus (x itself and |x| for real types) */
static inline %(ctype)s wb_la_conj_%(t)s(%(ctype)s x) { return %(conj)s; }
/* whether the count entries at x are all finite (x - x is 0 unless x is inf or NaN; for
   complex x, unless a part is); no early exit, so that the loop vectorizes */
static int wb_la_finite_%(t)s(const %(ctype)s *x, npy_intp count) {
  int bad = 0;
  for (npy_intp i = 0; i < count; ++i) bad |= !((x[i] - x[i]) == 0);
  return !bad;
}
/* whether the entries a solve reads of the n x n matrix at p (strides s0, s1) are all
   finite: every one (part 0), those with j <= i + k (part 1: tril(a, k)) or those with
   j >= i + k (part 2: triu(a, k)) */
static int wb_la_finite_part_%(t)s(const char *p, npy_intp s0, npy_intp s1, npy_intp n,
                                  int part, npy_intp k) {
  int bad = 0;
  for (npy_intp i = 0; i < n; ++i)
    for (npy_intp j = 0; j < n; ++j) {
      if ((part == 1 && j > i + k) || (part == 2 && j < i + k)) continue;
      const %(ctype)s x = *(const %(ctype)s*)(p + i * s0 + j * s1);
      bad |= !((x - x) == 0);
    }
  return !bad;
}
static inline %(rtype)s wb_la_abs_%(t)s(%(ctype)s x) { return %(abs)s; }
#define WB_LA_EPS_%(t)s (sizeof(%(rtype)s) == sizeof(float) ? FLT_EPSILON : DBL_EPSILON)

/* The largest of the n sums (a NaN wins, as in wb_la_norm). */
static %(rtype)s wb_la_largest_%(t)s(const %(rtype)s *sums, npy_intp n) {
  %(rtype)s best = 0;
  for (npy_intp j = 0; j < n; ++j) if (sums[j] > best || sums[j] != sums[j]) best = sums[j];
  return best;
}

/* The 1-norm (largest column sum of moduli) of the n x n column-major a. LAPACK's *con
   routines take it with the factorisation. */
static %(rtype)s wb_la_norm_%(t)s(const %(ctype)s *a, npy_intp n) {
  %(rtype)s best = 0;
  for (npy_intp j = 0; j < n; ++j) {
    %(rtype)s sum = 0;
    for (npy_intp i = 0; i < n; ++i) sum += wb_la_abs_%(t)s(a[i + j * n]);
    if (sum > best || sum != sum) best = sum;
  }
  return best;
}

/* The 1-norm of the symmetric (Hermitian) matrix the lower (`lower`) or upper triangle
   of the n x n column-major a describes, in one pass down the triangle's columns: an
   entry off the diagonal counts in its own column's sum and, mirrored, in its row's
   (`sums`, n entries of work), so no entry is read across a row (a stride of n). */
static %(rtype)s wb_la_sym_norm_%(t)s(const %(ctype)s *a, npy_intp n, int lower,
                                    %(rtype)s *sums) {
  for (npy_intp i = 0; i < n; ++i) sums[i] = 0;
  for (npy_intp j = 0; j < n; ++j) {
    const %(ctype)s *col = a + j * n;
    const npy_intp lo = lower ? j + 1 : 0, hi = lower ? n : j;  /* off the diagonal */
    %(rtype)s own[4] = {wb_la_abs_%(t)s(col[j]), 0, 0, 0};
    npy_intp i = lo;
    for (; i + 4 <= hi; i += 4)
      for (int q = 0; q < 4; ++q) {
        const %(rtype)s x = wb_la_abs_%(t)s(col[i + q]);
        own[q] += x; sums[i + q] += x;
      }
    for (; i < hi; ++i) {
      const %(rtype)s x = wb_la_abs_%(t)s(col[i]);
      own[0] += x; sums[i] += x;
    }
    sums[j] += (own[0] + own[1]) + (own[2] + own[3]);
  }
  return wb_la_largest_%(t)s(sums, n);
}
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

/* wb_la_load_rows_%(t)s that also adds the moduli of each column into colsum (n
   entries, zeroed by the caller: the matrix's 1-norm is their largest) and tells
   whether every entry is finite, in the same pass over the matrix. */
static int wb_la_load_rows_norm_%(t)s(const char *p, npy_intp s0, npy_intp s1, npy_intp m,
                                    npy_intp n, %(ctype)s *buf, %(rtype)s *colsum) {
  int bad = 0;
  for (npy_intp i = 0; i < m; ++i) {
    const char *row = p + i * s0;
    %(ctype)s *out = buf + i * n;
    if (s1 == (npy_intp)sizeof(%(ctype)s)) {
      const %(ctype)s *in = (const %(ctype)s*)row;
      for (npy_intp j = 0; j < n; ++j) {
        const %(ctype)s x = in[j];
        out[j] = x; colsum[j] += wb_la_abs_%(t)s(x); bad |= !((x - x) == 0);
      }
    } else {
      for (npy_intp j = 0; j < n; ++j) {
        const %(ctype)s x = *(const %(ctype)s*)(row + j * s1);
        out[j] = x; colsum[j] += wb_la_abs_%(t)s(x); bad |= !((x - x) == 0);
      }
    }
  }
  return !bad;
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



def _npy(dtype: Any) -> str:
    """NumPy's type number of an output dtype (a real output of a complex Op too)."""
    return DTYPES[str(dtype)].npy


def lapack_library() -> BlasLibrary:
    """The library the generated code links (only asked once `c_supports` said yes)."""
    lib = find_blas()
    if lib is None:  # c_supports said no: code generation is never asked
        raise RuntimeError("no LAPACK found for the C linker (see workbench.core.link.c.blas_lib)")
    return lib


class LapackC(COpAdapter):
    """What the LAPACK-backed Ops share: declarations, helpers, link flags, the batch loop."""

    def c_supports(self, node: Any) -> bool:
        dtype = str(node.inputs[0].type.dtype)
        return (dtype in DTYPES and all(str(v.type.dtype) == dtype for v in node.inputs)
                and lapack_available())

    def c_headers(self) -> list[str]:
        return ["<numpy/arrayobject.h>", "<complex.h>"]

    def c_support_code(self) -> str:
        """LAPACK's declarations, the BLAS's (its thread-count functions) and the C
        linker's BLAS thread policy (blas_threads.py), which every call here follows.
        Under an include guard: subclasses add their own support after it (Expm), so a
        bundle holding their kinds and other LAPACK kinds sees it in two blocks."""
        lib = lapack_library()
        return include_guarded(_declarations(lib) + lib.declarations() + POLICY_C + _SHARED_C,
                               "WB_LAPACK_SUPPORT_") + "\n"

    def c_init_code(self) -> list[str]:
        """Find the thread policy block when the module loads."""
        return ["if (wb_blas_policy_init() < 0) return NULL;", "wb_la_solo_init();"]

    def c_support_code_apply(self, node: Any, name: str) -> str:
        """The helpers of the node's dtype (guarded too: subclasses add theirs after)."""
        lt = DTYPES[str(node.inputs[0].type.dtype)]
        return include_guarded(_TYPED_C % {"t": lt.t, "ctype": lt.ctype, "rtype": lt.rtype,
                                           "conj": lt.conj, "abs": lt.abs},
                               "WB_LAPACK_TYPED_") + "\n"

    def c_lib_dirs(self) -> list[str]:
        return [lapack_library().lib_dir]

    def c_libraries(self) -> list[str]:  # dl: dlopen of lapack_solo.py's copy
        return [lapack_library().library, "dl"]

    def c_compile_args(self) -> list[str]:
        return lapack_library().link_args

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (7,)

    # -- the generated function body ----------------------------------------------------
    def loop(self, node: Any, inputs: list[str], outputs: list[str], sub: dict[str, str],
             body: str, buffers: str, out_cores: list[str], function: str,
             flops: str = "(double)n * n * n", square: bool = True, run_if: str = "n > 0",
             when_empty: str = "", checks: str = "") -> str:
        """C for the node: the batch shape of `inputs` (core ranks from the signature),
        a's squareness (when `square`) and `checks` (more shape checks, as
        `rows_check`), the outputs (batch + `out_cores`, C expressions of their core
        dimensions), the work `buffers` (declarations + mallocs, each freed at the end),
        then `body` run for each flat batch index `wb_i` with `wb_status`/`wb_pos` set
        on failure (-2: input `wb_pos` is not finite, scipy's ValueError)."""
        dtype = node.inputs[0].type.dtype
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
            square_check(node.op, "m", "n", fail) if square else "",
            checks,
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
                f"if (wb_la_out(&{o}, wb_bnd + {rank}, wb_dims{k}, "
                f"{_npy(node.outputs[k].type.dtype)}) < 0) {fail}",
            ]
        code += [
            "int wb_status = 0; long wb_pos = 0; npy_intp wb_where = 0;",
            "double wb_rcond = 0; npy_intp wb_rcond_at = -1;  /* WB_LA_NOTE_RCOND */",
            "const wb_laint wb_n = (wb_laint)n, wb_ld = (wb_laint)(n > 1 ? n : 1);",
            "(void)wb_n; (void)wb_ld; (void)wb_sa0; (void)wb_sa1;",
            buffers,
            f"if (wb_status == 0 && !({run_if})) {{ {when_empty} }}",
            f"if (wb_status == 0 && {run_if}) {{",
            "  static wb_blas_site wb_site;  /* its one-thread estimate (blas_threads.py) */",
            "  wb_blas_call wb_call;",
            f"  wb_blas_begin(&wb_call, &wb_site, {flops} * wb_nb);  /* its BLAS threads */",
            "  wb_la_solo_begin(wb_call.blas);  /* one thread: lapack_solo.py's copy */",
            f"  PyThreadState *wb_ts = {flops} * wb_nb >= WB_LA_NOGIL_FLOPS ? "
            "PyEval_SaveThread() : NULL;",
            "  for (npy_intp wb_i = 0; wb_i < wb_nb && wb_status == 0; ++wb_i) {",
            f"    const char *wb_pa = wb_la_at({a}, {in_cores[0]}, wb_bshape, wb_bnd, wb_i);",
            body,
            "    if (wb_status) wb_where = wb_i;",
            "  }",
            "  if (wb_ts) PyEval_RestoreThread(wb_ts);",
            "  wb_la_solo_end();",
            "  wb_blas_end(&wb_call);",
            "}",
            "WB_LA_FREE",
            "if (wb_status == -1) { PyErr_NoMemory(); " + fail + " }",
            "if (wb_status == -2) {",
            f"  PyErr_Format(PyExc_ValueError, {not_finite_c(node.op)}, "
            "wb_pos == 0 ? \"a\" : \"b\");",
            f"  {fail}",
            "}",
            "if (wb_status > 0) {",
            "  wb_la_raise(\"" + function + "\", wb_messages[wb_status - 1], wb_pos, wb_where, "
            "wb_bnd > 0);",
            f"  {fail}",
            "}",
            f"if (wb_rcond_at >= 0 && wb_la_warn(\"{function}\", wb_rcond, "
            f"wb_bnd > 0 ? wb_rcond_at : -1) < 0) {fail}",
            "}",
        ]
        return typed("\n".join(code), dtype)


def _raise_shape_error(op: Any, message: str, args: str, fail: str) -> str:
    """C raising the Op's `shape_error` (LinAlgError or ValueError) with `message`
    formatted by the C expressions `args`."""
    linalg = int(op.shape_error is not ValueError)
    return ("{ PyObject *wb_cls = wb_la_error_class(" + str(linalg) + "); "
            f"PyErr_Format(wb_cls, {c_string_literal(message)}, {args}); "
            f"Py_DECREF(wb_cls); {fail} }}")


def square_check(op: Any, rows: str, cols: str, fail: str) -> str:
    """C refusing a core matrix of `rows` x `cols` (C expressions) that is not square,
    with the Op's error and message (`SQUARE_MESSAGE`, as `check_core_shapes`)."""
    message = SQUARE_MESSAGE.format(function=op.function_name, what=op.input_name(0),
                                    rows="%ld", cols="%ld")
    return (f"if ({rows} != {cols}) "
            + _raise_shape_error(op, message, f"(long){rows}, (long){cols}", fail))


def rows_check(op: Any, a: str, b: str, axis: int, fail: str) -> str:
    """C refusing a `b` whose core dimension `axis` from the end differs from a's last
    one (`MISMATCH_MESSAGE`, as `check_core_shapes`)."""
    message = MISMATCH_MESSAGE.format(function=op.function_name, what=op.input_name(1),
                                      got="%ld", name="m", other=op.input_name(0),
                                      expected="%ld", signature=op.gufunc_signature)
    got = f"PyArray_DIM({b}, PyArray_NDIM({b}) - {axis})"
    expected = f"PyArray_DIM({a}, PyArray_NDIM({a}) - 1)"
    return (f"if ({got} != {expected}) "
            + _raise_shape_error(op, message, f"(long){got}, (long){expected}", fail))


def not_finite_c(op: Any) -> str:
    """The C format (one %s: the input) of scipy's error for an inf or a NaN."""
    from workbench.core.tensor.linalg.solvers import not_finite_message

    return c_string_literal(not_finite_message(op.function_name, "%s"))


def buffers(*specs: tuple[str, str, str]) -> tuple[str, str]:
    """Declarations + mallocs of work buffers (name, C type, element count) and the C
    that frees them (the WB_LA_FREE placeholder)."""
    decl, free = [], []
    for name, ctype, count in specs:
        decl.append(f"{ctype} *{name} = ({ctype}*)malloc(sizeof({ctype}) * "
                    f"(size_t)(({count}) > 0 ? ({count}) : 1));")
        decl.append(f"if (!{name}) wb_status = -1;")
        free.append(f"free({name});")
    return "\n".join(decl), " ".join(free)


def messages(*texts: str) -> str:
    """The failure messages, `wb_status` k > 0 selecting texts[k - 1] (each is followed
    by LAPACK's position), then REJECTED (`wb_rejected`)."""
    quoted = ", ".join(f"\"{t}\"" for t in (*texts, REJECTED))
    return (f"static const char *wb_messages[] = {{{quoted}}};\n"
            "const int wb_rejected = (int)(sizeof(wb_messages) / sizeof(wb_messages[0])); "
            "(void)wb_rejected;")


# The last message: LAPACK refused an argument (info < 0), whose position follows.
REJECTED = "LAPACK rejected its argument "


def check_info(position: str = "(long)info") -> str:
    """C setting `wb_status` from LAPACK's `info`: a refused argument (info < 0, never
    left unread: the outputs would be uninitialised memory) or failure 1 (info > 0)."""
    return ("if (info < 0) { wb_status = wb_rejected; wb_pos = -(long)info; }\n"
            f"    else if (info > 0) {{ wb_status = 1; wb_pos = {position}; }}")



def finish(code: str, free: str) -> str:
    """`code` with the frees of its work buffers in place of WB_LA_FREE."""
    return code.replace("WB_LA_FREE", free)
