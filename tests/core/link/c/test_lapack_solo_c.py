"""One-thread LAPACK calls of compiled code go to a second OpenBLAS, the
scipy-openblas64 package's, which has no thread pool of its own
(link/c/ops/lapack_solo.py): the answers are those of NumPy's LAPACK (values, the
pivots' parity in slogdet's sign, the errors and warnings of singular and
ill-conditioned matrices), for every dtype and for stacks; WORKBENCH_LAPACK_SOLO=none
keeps every call on NumPy's OpenBLAS."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.link.c import blas_lib, blas_threads
from workbench.core.link.c.compiler import has_compiler
from workbench.core.link.c.ops import lapack_solo

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

la = wt.linalg
DTYPES = ("float32", "float64", "complex64", "complex128")


@pytest.fixture
def one_thread():
    """Compiled calls on one thread (the policy's cap), as the benchmark suite runs."""
    before = blas_threads.max_threads()
    blas_threads.set_max_threads(1)
    yield
    blas_threads.set_max_threads(before)


def _random(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    x = g.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * g.standard_normal(shape)
    return x.astype(dtype)


def _solve_fn(dtype: str, choice: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(lapack_solo.SOLO_ENV, choice)
    a = wt.tensor(dtype=dtype, shape=(None, None, None), name="a")
    b = wt.tensor(dtype=dtype, shape=(None, None, None), name="b")
    return wb.function([a, b], la.solve(a, b), linker="c")


def test_the_copy_is_the_package_and_never_the_main_library(monkeypatch):
    monkeypatch.setenv(lapack_solo.SOLO_ENV, "none")
    assert lapack_solo.solo_library() is None
    monkeypatch.setenv(lapack_solo.SOLO_ENV, "auto")
    main, copy = blas_lib.find_blas(), lapack_solo.solo_library()
    if copy is not None:
        assert os.path.realpath(copy.path) != os.path.realpath(main.path)
        assert copy.int64 == main.int64 and copy.source == "scipy-openblas64"
    monkeypatch.setenv(lapack_solo.SOLO_ENV, "sometimes")
    with pytest.raises(ValueError, match="WORKBENCH_LAPACK_SOLO.*'sometimes'"):
        lapack_solo.solo_library()


def test_the_copy_is_used_only_when_its_openblas_is_a_later_release():
    assert lapack_solo.openblas_version("OpenBLAS 0.3.31.188.0  USE64BITINT Haswell") == (
        0, 3, 31)
    assert lapack_solo.openblas_version("0.3.34.481.3") == (0, 3, 34)
    assert lapack_solo.openblas_version("no version") == ()
    assert lapack_solo.is_newer((0, 3, 34), (0, 3, 31))
    assert not lapack_solo.is_newer((0, 3, 31), (0, 3, 31))
    assert not lapack_solo.is_newer((0, 3, 30), (0, 3, 31))
    assert not lapack_solo.is_newer((), (0, 3, 31))
    main, copy = blas_lib.find_blas(), lapack_solo.solo_library()
    if copy is not None:
        assert lapack_solo.openblas_version(copy.version) > lapack_solo.openblas_version(
            main.version)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_thread_solve_of_a_stack_matches_numpy_on_either_library(dtype, one_thread,
                                                                     monkeypatch):
    a = _random((3, 60, 60), dtype, 1)
    b = _random((3, 60, 2), dtype, 2)
    expected = np.linalg.solve(a, b)
    eps = np.finfo(a.real.dtype).eps
    results = {}
    for choice in ("auto", "none"):
        x = _solve_fn(dtype, choice, monkeypatch)(a, b)
        results[choice] = x
        # backward error in long double: |A x - b| / (|A| |x|) a small multiple of eps
        al, xl, bl = (v.astype(np.clongdouble) for v in (a, x, b))
        resid = np.abs(np.einsum("kij,kjr->kir", al, xl) - bl).max(axis=(1, 2))
        scale = np.abs(al).sum(axis=2).max(axis=1) * np.abs(xl).max(axis=(1, 2))
        assert (resid / scale < 60 * eps).all(), (choice, resid / scale / eps)
        np.testing.assert_allclose(x, expected, rtol=2e3 * eps, atol=2e3 * eps)
    np.testing.assert_allclose(results["auto"], results["none"], rtol=2e3 * eps,
                               atol=2e3 * eps)


@pytest.mark.parametrize("dtype", ("float64", "complex128"))
def test_one_thread_slogdet_sign_is_numpys(dtype, one_thread):
    """slogdet's sign is the pivots' parity times U's diagonal: the same pivots."""
    x = wt.tensor(dtype=dtype, shape=(None, None, None), name="x")
    fn = wb.function([x], la.slogdet(x), linker="c")
    stack = _random((8, 30, 30), dtype, 3)
    sign, logdet = fn(stack)
    ref_sign, ref_logdet = np.linalg.slogdet(stack)
    np.testing.assert_allclose(sign, ref_sign, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(logdet, ref_logdet, rtol=1e-12)


def test_one_thread_singular_raises_and_ill_conditioned_warns(one_thread, monkeypatch):
    fn = _solve_fn("float64", "auto", monkeypatch)
    singular = np.ones((1, 4, 4))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        fn(singular, np.ones((1, 4, 1)))
    i = np.arange(13)
    hilbert = (1.0 / (i[:, None] + i[None, :] + 1))[None]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = fn(hilbert, np.ones((1, 13, 1)))
    assert any("ill-conditioned" in str(w.message).lower() for w in caught)
    assert np.isfinite(x).all()


_CHILD = """
import os, numpy as np, workbench as wb, workbench.core.tensor as wt
from workbench.core.link.c import blas_threads
from workbench.core.link.c.ops import lapack_solo
blas_threads.set_max_threads(1)
a, b = wt.dmatrix("a"), wt.dvector("b")
fn = wb.function([a, b], wt.linalg.solve(a, b), linker="c")
m = np.random.default_rng(0).standard_normal((80, 80)) + 9 * np.eye(80)
assert np.allclose(fn(m, np.ones(80)), np.linalg.solve(m, np.ones(80)))
print(lapack_solo.solo_loaded(), lapack_solo.solo_threads(),
      os.environ.get("OPENBLAS_NUM_THREADS"))
"""


def test_the_copy_is_loaded_without_a_thread_pool_and_the_environment_kept():
    """In a fresh process: the copy was opened with OPENBLAS_NUM_THREADS=1 for its
    constructor alone (one thread: OpenBLAS starts no helper), then the variable was
    restored (unset here)."""
    if lapack_solo.solo_library() is None:
        pytest.skip("no scipy-openblas64 copy distinct from the main BLAS here")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout.split()
    assert out[-3:] == ["True", "1", "None"]
