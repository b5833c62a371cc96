"""Workbench's own helper threads (thread_pool.py) and the GEMMs cut in panels over them
(ops/blas.py): every element computed exactly once whatever the shape, layout, dtype
and beta; the caller does every panel when no helper comes; caps obeyed; several
Python threads at once; a process with helpers exits (and forks) cleanly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import Mode
from workbench.core.link.c import blas_lib, blas_threads
from workbench.core.link.c.compiler import has_compiler
from workbench.core.tensor.blas import Gemm

pytestmark = [
    pytest.mark.skipif(not (has_compiler() and blas_lib.blas_available()),
                       reason="needs a C compiler and a BLAS"),
    pytest.mark.skipif(not (blas_lib.find_blas() and blas_lib.find_blas().threads_api),
                       reason="this BLAS exports no thread controls: no pooled GEMM"),
]

C_ONLY = Mode(linker="c", rewriter=None)
TOL = {"float32": dict(rtol=3e-5, atol=3e-5), "float64": dict(rtol=1e-12, atol=1e-12)}
#: (m, k, n): odd lengths, panels along columns (n >= m) and along rows (m > n), widths
#: below and above the 16-item rounding, a last panel shorter than the others
SHAPES = [(37, 53, 91), (91, 53, 37), (200, 7, 301), (301, 3, 17), (3, 40, 2)]


@pytest.fixture
def pooled():
    """Every product of these tests pooled on 2 threads, cut in many panels (the policy
    is process-wide: restored afterwards)."""
    saved, cap = blas_threads.policy(), wb.config.blas_threads
    wb.config.blas_threads = 2
    blas_threads.set_policy(work_per_thread=1, adaptive=False, pool=True, panels_per_thread=4)
    yield
    wb.config.blas_threads = cap
    blas_threads.set_policy(work_per_thread=saved["work"], adaptive=bool(saved["adaptive"]),
                            pool=bool(saved["pool"]), panels_per_thread=int(saved["panels"]))


def _gemm(dtype: str):
    z, x, y = (wt.matrix(n, dtype) for n in "zxy")
    a, b = wt.scalar("a", dtype), wt.scalar("b", dtype)
    return wb.function([wb.In(z, mutable=True), a, x, y, b],
                       Gemm(inplace=True)(z, a, x, y, b), mode=C_ONLY)


def _layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": a.copy(), "F": np.asfortranarray(a), "transposed view": a.T.copy().T}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_element_of_a_pooled_gemm_is_accumulated_exactly_once(pooled, dtype):
    # beta = 1 into z in place: a panel done twice would add its product twice, one
    # skipped would leave z; every layout of x, y and z (F order: transposed BLAS calls)
    f = _gemm(dtype)
    rng = np.random.default_rng(0)
    for m, k, n in SHAPES:
        xv = rng.standard_normal((m, k)).astype(dtype)
        yv = rng.standard_normal((k, n)).astype(dtype)
        zv = rng.standard_normal((m, n)).astype(dtype)
        want = zv.astype(np.longdouble) + 0.5 * (xv.astype(np.longdouble) @ yv)
        for zl, z0 in _layouts(zv).items():
            for xl, x_ in _layouts(xv).items():
                for yl, y_ in _layouts(yv).items():
                    z_ = z0.copy(order="A")
                    f(z_, np.asarray(0.5, dtype), x_, y_, np.asarray(1, dtype))
                    np.testing.assert_allclose(z_, want.astype(dtype), **TOL[dtype],
                                               err_msg=f"{(m, k, n)} z {zl} x {xl} y {yl}")
                    assert blas_threads.last_threads() == (2 if m * n > 1 else 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot_and_batched_matmul_are_pooled_too(pooled, dtype):
    x, y = wt.matrix("x", dtype), wt.matrix("y", dtype)
    s, t = wt.tensor3("s", dtype), wt.tensor3("t", dtype)
    f = wb.function([x, y, s, t], [wt.dot(x, y), wt.matmul(s, t)], mode=C_ONLY)
    rng = np.random.default_rng(1)
    xv, yv = (rng.standard_normal(shape).astype(dtype) for shape in ((45, 33), (33, 70)))
    sv, tv = (rng.standard_normal(shape).astype(dtype) for shape in ((3, 29, 18), (3, 18, 41)))
    d, mm = f(xv, yv, sv, tv)
    np.testing.assert_allclose(d, xv @ yv, **TOL[dtype])
    np.testing.assert_allclose(mm, sv @ tv, **TOL[dtype])


def test_the_caller_does_every_panel_when_no_helper_comes(pooled):
    f = _gemm("float64")
    rng = np.random.default_rng(2)
    xv, yv = rng.standard_normal((90, 60)), rng.standard_normal((60, 130))
    zv = np.zeros((90, 130))
    with blas_threads.helpers_held():  # helpers woken, but they take no panel
        f(zv, np.asarray(1.0), xv, yv, np.asarray(0.0))
        assert blas_threads.last_threads() == 2  # given two...
        assert blas_threads.last_worked_threads() == 1  # ...the caller alone did the work
    np.testing.assert_allclose(zv, xv @ yv, rtol=1e-12)


def test_caps_are_obeyed(pooled):
    f = _gemm("float64")
    rng = np.random.default_rng(3)
    xv, yv = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    wb.config.blas_threads = 1
    zv = np.zeros((64, 64))
    f(zv, np.asarray(1.0), xv, yv, np.asarray(0.0))
    assert blas_threads.last_threads() == 1 and blas_threads.last_worked_threads() == 1
    np.testing.assert_allclose(zv, xv @ yv, rtol=1e-12)
    wb.config.blas_threads = 64  # never more than the cores this process may run on
    f(zv, np.asarray(1.0), xv, yv, np.asarray(0.0))
    cores = blas_threads_cores()
    assert 1 <= blas_threads.last_worked_threads() <= blas_threads.last_threads() <= cores


def blas_threads_cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 64


def test_several_python_threads_at_once_get_their_own_right_answers(pooled):
    # one pool per module: a caller that finds it busy computes its panels alone
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    f = wb.function([x, y], wt.dot(x, y), mode=C_ONLY)
    rng = np.random.default_rng(4)
    pairs = [(rng.standard_normal((70, 50)), rng.standard_normal((50, 90))) for _ in range(8)]

    def run(pair):
        return [f(*pair) for _ in range(20)]

    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(run, pairs))
    for (xv, yv), got in zip(pairs, results):
        for value in got:
            np.testing.assert_allclose(value, xv @ yv, rtol=1e-12)


def test_a_process_with_helpers_forks_and_exits_cleanly(tmp_path):
    script = textwrap.dedent("""
        import os, numpy as np, workbench as wb, workbench.tensor as wt
        from workbench.core.link.c import blas_threads
        wb.config.blas_threads = 2
        blas_threads.set_policy(work_per_thread=1, adaptive=False, pool=True)
        x, y = wt.dmatrix("x"), wt.dmatrix("y")
        f = wb.function([x, y], wt.dot(x, y), linker="c")
        a = np.random.default_rng(0).standard_normal((120, 120))
        assert np.allclose(f(a, a), a @ a)
        pid = os.fork()
        if pid == 0:  # the child has no helpers of its parent: its pool starts afresh
            ok = np.allclose(f(a, a), a @ a)
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert np.allclose(f(a, a), a @ a)
        print("done")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("done")


def test_the_profile_counts_the_threads_that_computed_a_panel(pooled):
    x, y = wt.dmatrix("x"), wt.dmatrix("y")
    f = wb.function([x, y], wt.dot(x, y), linker="c", profile=True)
    rng = np.random.default_rng(5)
    xv, yv = rng.standard_normal((80, 40)), rng.standard_normal((40, 120))
    with blas_threads.helpers_held():
        f(xv, yv)
    product = next(row for row in f.profile.by_node() if row.threads)
    assert product.threads == "1"  # given two, but the helper took no panel
    assert "those that computed a panel" in str(f.profile)
