"""(1) The fused chain `exp(x)*sin(y) + x**2/(1+y*y) - tanh(x*y)` on float64 vectors.

References: NumPy eager, PyTensor, JAX jit, and a hand-written C loop compiled through
workbench's own compiler helpers with -O3 -march=native and glibc's vector math
(libmvec): the practical limit of one pass over the data on this machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wb_bench.common import (
    SUBJECT,
    Case,
    Context,
    Row,
    add_checked,
    jax_module,
    pytensor_modes,
    pytensor_module,
)

REFERENCE_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
%(vector_math)s

/* out[i] = exp(x)*sin(y) + x*x/(1+y*y) - tanh(x*y), one vectorised pass */
static void chain(Py_ssize_t n, const double *restrict x, const double *restrict y,
                  double *restrict out) {
    #pragma omp simd
    for (Py_ssize_t i = 0; i < n; i++) {
        double a = x[i], b = y[i];
        out[i] = exp(a) * sin(b) + (a * a) / (1.0 + b * b) - tanh(a * b);
    }
}

static PyObject *run(PyObject *self, PyObject *args) {
    Py_buffer x, y, out;
    if (!PyArg_ParseTuple(args, "y*y*w*", &x, &y, &out)) return NULL;
    Py_ssize_t n = out.len / (Py_ssize_t)sizeof(double);
    if (x.len != out.len || y.len != out.len) {
        PyBuffer_Release(&x); PyBuffer_Release(&y); PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "x, y and out must have the same length");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    chain(n, (const double *)x.buf, (const double *)y.buf, (double *)out.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&x); PyBuffer_Release(&y); PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"run", run, METH_VARARGS, "run(x, y, out)"}, {0}};
static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "wb_bench_chain", NULL, -1, methods};
PyMODINIT_FUNC PyInit_wb_bench_chain(void) { return PyModule_Create(&moddef); }
"""


def numpy_chain(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.exp(x) * np.sin(y) + x**2 / (1 + y * y) - np.tanh(x * y)


def reference_module() -> Any:
    """The hand-written loop, compiled (and cached) by workbench's ModuleCache with the
    compiler's default flags (-O3 -march=native when accepted) plus vector math."""
    from workbench.core.link.c.cache import default_cache
    from workbench.core.link.c.compiler import vector_math_libraries
    from workbench.core.link.c.scalar_c import VECTOR_MATH_DECLARATIONS

    source = REFERENCE_C % {"vector_math": VECTOR_MATH_DECLARATIONS}
    return default_cache().get_or_build(
        ("benchmark", "fused-chain-reference"), source, "wb_bench_chain", version=(1,),
        extra_flags=["-fopenmp-simd", "-fno-math-errno"],
        libraries=[*vector_math_libraries(), "m"])


def workbench_chain(linker: str = "c", borrow: bool = False) -> Any:
    """The chain compiled; `borrow`: its output lent (`Out(borrow=True)`), so each call
    writes into the previous result instead of allocating a new one."""
    import workbench.tensor as wt

    import workbench as wb

    x, y = wt.dvector("x"), wt.dvector("y")
    out = wt.exp(x) * wt.sin(y) + x**2 / (1 + y * y) - wt.tanh(x * y)
    return wb.function([x, y], wb.Out(out, borrow=True) if borrow else out, linker=linker)


def run(ctx: Context) -> list[Row]:
    sizes = [10**6] if ctx.quick else [10**6, 10**7]
    if ctx.quick:
        ctx.note("quick run: fused chain at 1e6 only")
    rng = np.random.default_rng(0)
    pt = pytensor_module(ctx)
    jax = jax_module(ctx)
    rows: list[Row] = []
    try:
        fn, lent = workbench_chain(), workbench_chain(borrow=True)
    except Exception as exc:  # noqa: BLE001
        fn = lent = None
        error = exc
    try:
        ref = reference_module()
    except Exception as exc:  # noqa: BLE001
        ref, ref_error = None, exc
    pt_fns = []
    if pt is not None:
        import pytensor.tensor as ptt

        px, py = ptt.dvector("x"), ptt.dvector("y")
        pout = ptt.exp(px) * ptt.sin(py) + px**2 / (1 + py * py) - ptt.tanh(px * py)
        for label, mode in pytensor_modes(ctx):
            try:
                pt_fns.append((label, pt.function([px, py], pout, mode=mode)))
            except Exception as exc:  # noqa: BLE001
                pt_fns.append((label, exc))
    if jax is not None:
        import jax.numpy as jnp

        jax_fn = jax.jit(lambda a, b: jnp.exp(a) * jnp.sin(b) + a**2 / (1 + b * b)
                         - jnp.tanh(a * b))
    for n in sizes:
        case = Case(f"fused chain n={n:.0e} f64")
        x = rng.uniform(-2.0, 2.0, n)
        y = rng.uniform(-2.0, 2.0, n)
        expected = numpy_chain(x, y)
        if fn is not None:
            # the case keeps every result until the next call (Case.add): a new array per
            # call, like every other row (a dropped result would be written again)
            add_checked(case, SUBJECT, lambda x=x, y=y: fn(x, y), expected,
                        note="result kept by the caller: allocates per call")
            add_checked(case, f"{SUBJECT}, Out(borrow=True)", lambda x=x, y=y: lent(x, y),
                        expected,
                        note="output lent back: each call overwrites the previous result")
        else:
            case.fail(SUBJECT, error)
        case.add("numpy", lambda x=x, y=y: numpy_chain(x, y))
        for label, pfn in pt_fns:
            if isinstance(pfn, Exception):
                case.fail(label, pfn)
            else:
                add_checked(case, label, lambda pfn=pfn, x=x, y=y: pfn(x, y), expected)
        if jax is not None:
            try:
                jx, jy = jax.device_put(x), jax.device_put(y)
                add_checked(case, "jax jit",
                            lambda jx=jx, jy=jy: jax_fn(jx, jy).block_until_ready(), expected)
            except Exception as exc:  # noqa: BLE001
                case.fail("jax jit", exc)
        if ref is not None:
            def allocating(x: np.ndarray = x, y: np.ndarray = y) -> np.ndarray:
                out = np.empty_like(x)
                ref.run(x, y, out)
                return out

            def preallocated(x: np.ndarray = x, y: np.ndarray = y,
                             out: np.ndarray = np.empty_like(x)) -> np.ndarray:
                ref.run(x, y, out)
                return out

            add_checked(case, "C loop -O3 native+mvec", allocating, expected,
                        note="hand-written, allocating its output (np.empty) as the others "
                             "do: the practical limit")
            add_checked(case, "C loop -O3 native+mvec, preallocated", preallocated, expected,
                        note="hand-written, writing into one output buffer kept across calls")
        else:
            case.fail("C loop -O3 native+mvec", ref_error)
        rows += case.measure(ctx)
    return rows
