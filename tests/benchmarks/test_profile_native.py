"""benchmarks/profile_native.py runs a benchmark step in a loop, pinned to one CPU, and
prints the command lines that attach perf or py-spy to it; its perf report parser sums
samples by what they are. Run here for a fraction of a second, without perf."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.link.c.compiler import has_compiler

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "profile_native.py"
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))

import profile_native  # noqa: E402

#: a flat report as perf 6.1 prints it (`--sort dso,symbol -g none`), columns narrowed:
#: the DSO and symbol padded, IPC columns ("-  -") after the symbol, XLA's code in the
#: DSO "[JIT] tid N", C++ symbols with spaces
REPORT = """\
# Overhead  Shared Object          Symbol                             IPC   [IPC Coverage]
# ........  .....................  .................................  ....................
#
    84.00%  libscipy_openblas64_.so  [.] dgemm_kernel_HASWELL          -      -
     5.90%  libscipy_openblas64_.so  [.] dgemm_itcopy_HASWELL          -      -
     1.80%  libscipy_openblas64_.so  [.] dgemm_oncopy_HASWELL          -      -
     1.30%  libmvec.so.1             [.] _ZGVeN8v_tanh_skx             -      -
     0.70%  wbbundle.cpython-311.so  [.] wb_node_run_b915a8dba82b9629  -      -
     0.30%  workbench_runtime.so     [.] run_node                      -      -
     0.20%  libc.so.6                [.] __memset_avx512_unaligned_erms  -      -
     0.20%  libc.so.6                [.] _int_malloc                   -      -
     0.10%  [kernel.kallsyms]        [k] clear_page_erms               -      -
     0.10%  [kernel.kallsyms]        [k] finish_task_switch.isra.0     -      -
     0.10%  python3.11               [.] _PyEval_EvalFrameDefault      -      -
     0.05%  libscipy_openblas64_.so  [.] dgemm_beta_HASWELL            -      -
     0.05%  libjax_common.so         [.] Eigen::gebp_kernel<double, long>::operator()  -  -
     0.04%  [JIT] tid 25602          [.] 0x00007fab7a6840e2            -      -
"""


def test_a_flat_perf_report_is_summed_by_what_the_samples_are():
    rows = profile_native.parse_report(REPORT)
    assert len(rows) == 14
    assert rows[0] == (84.0, "libscipy_openblas64_.so", "dgemm_kernel_HASWELL")
    assert rows[-2][2] == "Eigen::gebp_kernel<double, long>::operator()"
    assert rows[-1][1:] == ("[JIT] tid 25602", "0x00007fab7a6840e2")
    parts = {name: (share, [s for s, _ in tops])
             for name, share, tops in profile_native.breakdown(rows)}
    kernel = parts["OpenBLAS compute kernel"]
    assert kernel == (84.0, ["dgemm_kernel_HASWELL"])
    packing = parts["OpenBLAS packing (gemm *copy)"]
    assert packing[0] == pytest.approx(7.7)
    assert packing[1] == ["dgemm_itcopy_HASWELL", "dgemm_oncopy_HASWELL"]
    generated = next(v for k, v in parts.items() if k.startswith("workbench generated"))
    assert generated[1] == ["wb_node_run_b915a8dba82b9629", "run_node"]
    allocation = next(v for k, v in parts.items() if k.startswith("allocation"))
    assert allocation[1] == ["_int_malloc", "clear_page_erms"]
    # 'Default' in the interpreter's loop is not a page fault
    assert parts["Python interpreter and call overhead"][1] == ["_PyEval_EvalFrameDefault"]
    assert parts["kernel (other)"][1] == ["finish_task_switch.isra.0"]
    assert parts["OpenBLAS other (beta scaling, driver, level 1/2)"][1] == [
        "dgemm_beta_HASWELL"]
    jax = next(v for k, v in parts.items() if k.startswith("JAX/XLA"))
    assert jax[1] == ["Eigen::gebp_kernel<double, long>::operator()"]
    jit = next(v for k, v in parts.items() if k.startswith("JIT code"))
    assert jit[1] == ["0x00007fab7a6840e2"]
    assert profile_native.short_symbol(jax[1][0]) == "Eigen::gebp_kernel<...>::operator()"
    table = profile_native.format_breakdown(profile_native.breakdown(rows), per_step=2e-3)
    assert table.splitlines()[2].startswith("| OpenBLAS compute kernel | 84.0% | 1.680 ms |")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs Linux")
@pytest.mark.skipif(not has_compiler(), reason="the step is compiled by the C linker")
def test_the_loop_runs_pinned_on_one_thread_and_prints_how_to_attach():
    cpu = max(os.sched_getaffinity(0))
    done = subprocess.run([sys.executable, str(SCRIPT), "--case", "mlp", "--dtype", "float32",
                           "--seconds", "0.2", "--coretype", "auto"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    head = rf"^workbench mlp step, float32, pid (\d+), pinned to CPU {cpu}, one thread$"
    pid = int(re.search(head, out, re.M).group(1))
    assert f"perf record -F 999 -g -p {pid} -o perf.data -- sleep 1" in out
    assert f"py-spy record --native -p {pid} " in out
    assert f"py-spy dump --native -p {pid}" in out
    assert "OPENBLAS_CORETYPE=" not in out  # 'auto' unset it before NumPy loaded
    steps, wall, cpu_time = re.search(r"^(\d+) steps: ([\d.]+) ms wall, ([\d.]+) ms CPU per step",
                                      out, re.M).groups()
    assert int(steps) >= 1 and float(wall) > 0 and float(cpu_time) > 0


@pytest.mark.parametrize("argv, message", [
    (["--seconds", "0"], "--seconds must be > 0"),
    (["--cpu", "100000"], "--cpu: CPU 100000 is not among this process's CPUs"),
    (["--coretype", "9x"], "--coretype takes 'auto' or an OpenBLAS kernel name"),
])
def test_bad_arguments_exit_2_naming_the_option(argv, message):
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert message in done.stderr
