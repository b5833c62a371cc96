"""(3) logsumexp, softmax and log-softmax over the rows of a 1000x1000 float64 matrix.

References: NumPy (max-shifted), PyTensor, JAX jit, and hand-written C row loops compiled
like the fused family's (-O3 -march=native, glibc's vector exp): per row a max pass, then
one pass summing exp(x - max) (softmax storing them), then the write (softmax: times
1/sum; log-softmax: x - max - log(sum)); it allocates its output as the others do. For
logsumexp also a one-pass loop as XLA fuses it (a running maximum per block, exp summed
in several accumulators): with glibc's exp as the limit both hand-written loops take the
same time. With AVX-512, workbench's kernels use their
own inline exp (ops/special.py) instead of glibc's, which puts them ahead of both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wb_bench.common import (
    SUBJECT,
    Case,
    Context,
    Row,
    check_close,
    jax_module,
    pytensor_modes,
    pytensor_module,
)
from wb_bench.profiles import add_profile

REFERENCE_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
%(vector_math)s
/* noinline: inlined into the row loop, gcc 12 compiles the simd reductions as scalar loops */
__attribute__((noinline)) static double row_max(const double *restrict x, Py_ssize_t n) {
    double m = -INFINITY;
    #pragma omp simd reduction(max:m)
    for (Py_ssize_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}
#define NOINLINE __attribute__((noinline))
NOINLINE static double row_expsum(const double *restrict x, Py_ssize_t n, double shift) {
    double s = 0;
    #pragma omp simd reduction(+:s)
    for (Py_ssize_t i = 0; i < n; i++) s += exp(x[i] - shift);
    return s;
}
NOINLINE static double row_expsum_store(const double *restrict x, double *restrict y,
                                        Py_ssize_t n, double shift) {
    double s = 0;
    #pragma omp simd reduction(+:s)
    for (Py_ssize_t i = 0; i < n; i++) { const double v = exp(x[i] - shift); y[i] = v; s += v; }
    return s;
}
/* One pass over the row, as XLA's fused loop does it: a running maximum per block of
 * ONEPASS_BLOCK elements (the sum so far rescaled by exp(old - new) when it grows, rare
 * after the first blocks), the block's exp(x - max) summed in 4 vector accumulators
 * (ONEPASS_LANES = 4 x 8 doubles: four independent add chains), block by block out of L1. */
#define ONEPASS_BLOCK 256
#define ONEPASS_LANES 32
NOINLINE static double block_expsum4(const double *restrict x, Py_ssize_t n, double shift) {
    double acc[ONEPASS_LANES] = {0};
    Py_ssize_t i = 0;
    for (; i + ONEPASS_LANES <= n; i += ONEPASS_LANES) {
        #pragma omp simd
        for (int j = 0; j < ONEPASS_LANES; j++) acc[j] += exp(x[i + j] - shift);
    }
    double s = 0;
    for (; i < n; i++) s += exp(x[i] - shift);
    #pragma omp simd reduction(+:s)
    for (int j = 0; j < ONEPASS_LANES; j++) s += acc[j];
    return s;
}
NOINLINE static double row_lse_onepass(const double *restrict x, Py_ssize_t n, double *max) {
    double m = -INFINITY, s = 0;
    for (Py_ssize_t b = 0; b < n; b += ONEPASS_BLOCK) {
        const Py_ssize_t len = n - b < ONEPASS_BLOCK ? n - b : ONEPASS_BLOCK;
        const double bm = row_max(x + b, len);
        if (bm > m) { s = m == -INFINITY ? 0 : s * exp(m - bm); m = bm; }
        s += block_expsum4(x + b, len, m);
    }
    *max = m;
    return s;
}
/* run(which, x, out, rows, n): which 0 = logsumexp (out: rows), 1 = softmax (rows x n),
 * 2 = logsumexp in one pass (row_lse_onepass), 3 = log-softmax (rows x n) */
static PyObject *run(PyObject *self, PyObject *args) {
    int which; Py_buffer x, out; Py_ssize_t rows, n;
    if (!PyArg_ParseTuple(args, "iy*w*nn", &which, &x, &out, &rows, &n)) return NULL;
    const double *px = (const double *)x.buf; double *po = (double *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++) {
        const double *row = px + r * n;
        const double m = which == 2 ? 0 : row_max(row, n);
        if (which == 2) {
            double top;
            const double sum = row_lse_onepass(row, n, &top);
            po[r] = log(sum) + top;
        } else if (which == 0) {
            po[r] = log(row_expsum(row, n, m)) + m;
        } else if (which == 3) {
            double *y = po + r * n;
            const double shift = m + log(row_expsum(row, n, m));
            #pragma omp simd
            for (Py_ssize_t i = 0; i < n; i++) y[i] = row[i] - shift;
        } else {
            double *y = po + r * n;
            const double inv = 1.0 / row_expsum_store(row, y, n, m);
            #pragma omp simd
            for (Py_ssize_t i = 0; i < n; i++) y[i] *= inv;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&x); PyBuffer_Release(&out);
    Py_RETURN_NONE;
}
static PyMethodDef methods[] = {{"run", run, METH_VARARGS, "run(which, x, out, rows, n)"}, {0}};
static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "wb_bench_rows", NULL, -1, methods};
PyMODINIT_FUNC PyInit_wb_bench_rows(void) { return PyModule_Create(&moddef); }
"""


def reference_module() -> Any:
    """The hand-written row loops, compiled (and cached) like the fused family's."""
    from workbench.core.link.c.cache import default_cache
    from workbench.core.link.c.compiler import vector_math_libraries
    from workbench.core.link.c.scalar_c import VECTOR_MATH_DECLARATIONS

    return default_cache().get_or_build(
        ("benchmark", "row-kernels-reference"),
        REFERENCE_C % {"vector_math": VECTOR_MATH_DECLARATIONS}, "wb_bench_rows",
        version=(4,), extra_flags=["-fopenmp-simd", "-fno-math-errno"],
        libraries=[*vector_math_libraries(), "m"])


def reference_call(ref: Any, name: str, data: np.ndarray, one_pass: bool = False
                   ) -> np.ndarray:
    """The hand-written loops on `data`: the two-pass ones, or logsumexp in one pass."""
    rows, n = data.shape
    out = np.empty(rows if name == "logsumexp" else (rows, n))
    which = 2 if one_pass else {"logsumexp": 0, "softmax": 1, "log_softmax": 3}[name]
    ref.run(which, data, out, rows, n)
    return out


def numpy_logsumexp(m: np.ndarray) -> np.ndarray:
    top = m.max(axis=1, keepdims=True)
    return np.log(np.exp(m - top).sum(axis=1)) + top[:, 0]


def numpy_softmax(m: np.ndarray) -> np.ndarray:
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_log_softmax(m: np.ndarray) -> np.ndarray:
    shifted = m - m.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


#: the row kernels: (NumPy reference, what the hand-written C's second pass does)
KERNELS = {
    "logsumexp": (numpy_logsumexp, "max pass, exp-sum pass (glibc's vector exp)"),
    "softmax": (numpy_softmax, "max pass, exp-sum pass storing exp (glibc's vector exp), "
                               "scale pass"),
    "log_softmax": (numpy_log_softmax, "max pass, exp-sum pass (glibc's vector exp), "
                                       "x - max - log(sum) pass"),
}


def _graphs(lib: Any, m: Any) -> dict[str, Any]:
    return {"logsumexp": lib.logsumexp(m, axis=1), "softmax": lib.softmax(m, axis=1),
            "log_softmax": lib.log_softmax(m, axis=1)}


def _jax_kernel(jax: Any, name: str) -> Any:
    import jax.nn
    import jax.scipy.special

    return jax.jit({"logsumexp": lambda a: jax.scipy.special.logsumexp(a, axis=1),
                    "softmax": lambda a: jax.nn.softmax(a, axis=1),
                    "log_softmax": lambda a: jax.nn.log_softmax(a, axis=1)}[name])


def run(ctx: Context) -> list[Row]:
    import workbench.tensor as wt

    import workbench as wb

    pt = pytensor_module(ctx)
    jax = jax_module(ctx)
    rng = np.random.default_rng(2)
    data = rng.standard_normal((1000, 1000)) * 3.0
    m = wt.dmatrix("m")
    graphs = _graphs(wt, m)
    pt_graphs: dict[str, Any] = {}
    if pt is not None:
        import pytensor.tensor as ptt
        from pytensor.tensor.special import log_softmax as pt_log_softmax
        from pytensor.tensor.special import softmax as pt_softmax

        pm = ptt.dmatrix("m")
        pt_graphs = {"logsumexp": ptt.logsumexp(pm, axis=1), "softmax": pt_softmax(pm, axis=1),
                     "log_softmax": pt_log_softmax(pm, axis=1)}
    rows: list[Row] = []
    for name, graph in graphs.items():
        numpy_fn, passes = KERNELS[name]
        expected = numpy_fn(data)
        case = Case(f"{name.replace('_', '-')} rows 1000x1000 f64")
        try:
            fn = wb.function([m], graph, linker="c")
            check_close(expected, fn(data), case.name)
            note = ""
            py_nodes = fn.linker.report.py_nodes
            if py_nodes:
                note = "Python nodes: " + ", ".join(sorted({type(n.op).__name__
                                                            for n, _ in py_nodes}))
            case.add(SUBJECT, lambda fn=fn: fn(data), note=note)
            add_profile(ctx, case.name, fn, data)
        except Exception as exc:  # noqa: BLE001
            case.fail(SUBJECT, exc)
        case.add("numpy", lambda f=numpy_fn: f(data), note="max-shifted, stable")
        try:
            ref = reference_module()
            check_close(expected, reference_call(ref, name, data),
                        f"{case.name} (hand-written C)")
            case.add("C rows -O3 native+mvec",
                     lambda ref=ref, name=name: reference_call(ref, name, data),
                     note=f"hand-written: {passes}")
            if name == "logsumexp":
                check_close(expected, reference_call(ref, name, data, True),
                            f"{case.name} (hand-written C, one pass)")
                case.add("C one pass -O3 native+mvec",
                         lambda ref=ref, name=name: reference_call(ref, name, data, True),
                         note="hand-written: running max per 256-block, glibc's vector exp "
                              "in 4 accumulators (XLA's loop)")
        except Exception as exc:  # noqa: BLE001
            case.fail("C rows -O3 native+mvec", exc)
        if pt is not None:
            for label, mode in pytensor_modes(ctx):
                try:
                    pfn = pt.function([pm], pt_graphs[name], mode=mode)
                    check_close(expected, pfn(data), f"{case.name} ({label})")
                    case.add(label, lambda pfn=pfn: pfn(data))
                except Exception as exc:  # noqa: BLE001
                    case.fail(label, exc)
        if jax is not None:
            try:
                jfn = _jax_kernel(jax, name)
                jdata = jax.device_put(data)
                check_close(expected, np.asarray(jfn(jdata)), f"{case.name} (jax)")
                case.add("jax jit", lambda jfn=jfn, jdata=jdata: jfn(jdata).block_until_ready())
            except Exception as exc:  # noqa: BLE001
                case.fail("jax jit", exc)
        rows += case.measure(ctx)
    return rows
