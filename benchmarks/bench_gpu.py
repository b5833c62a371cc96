"""The GPU linker against torch eager on the same workloads, as a ratio table.

Workloads: a fused elementwise chain (FAST_RUN fuses it into one Composite node),
one SGD step of the MLP example with its weights kept on the device, and a softmax
over rows. Each is timed as a workbench Function compiled with linker="gpu" and as
the same computation written directly in torch (eager), on the same device; the
ratio is workbench's time over torch's (1.0: no overhead). With `--compile`, the
fused chain is also run through the optional torch.compile path
(`GpuLinker(compile_fused=True)`); its one-off compile time is reported apart.

    python benchmarks/bench_gpu.py                  # config.device ("auto": CUDA if present)
    python benchmarks/bench_gpu.py --device cuda    # on a GPU machine
    python benchmarks/bench_gpu.py --quick --compile

No GPU on the development machines: the CUDA numbers are left to a machine with one
(the script synchronises the device around every timed call).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402


def _timer(fn: Callable[[], Any], sync: Callable[[], None], repeats: int, number: int
           ) -> tuple[float, float]:
    """Median (wall, CPU) seconds per call of `fn` (after one warm-up call)."""
    fn()
    sync()
    walls, cpus = [], []
    for _ in range(repeats):
        cpu, start = time.process_time(), time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        walls.append((time.perf_counter() - start) / number)
        cpus.append((time.process_time() - cpu) / number)
    return statistics.median(walls), statistics.median(cpus)


def fused_chain(torch: Any, device: Any, size: int, compile_fused: bool = False
                ) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import workbench.tensor as wt

    import workbench as wb
    from workbench.core.link.gpu import GpuLinker

    x = wt.dvector("x")
    y = x
    for _ in range(8):
        y = wt.tanh(y) * 0.999 + 0.5 * x
    fn = wb.function([x], y.transfer("gpu"), linker=GpuLinker(device, compile_fused=compile_fused))
    value = np.random.default_rng(0).standard_normal(size)
    on_device = torch.from_numpy(value).to(device)

    def eager() -> Any:
        v = on_device
        for _ in range(8):
            v = torch.tanh(v) * 0.999 + 0.5 * on_device
        return v

    return (lambda: fn(on_device)), eager


def mlp_step(torch: Any, device: Any, batch: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import workbench as wb
    from workbench.core.link.gpu import GpuLinker, keep_on_device
    from workbench.examples import mlp

    source = mlp.build_source(batch=batch)
    for target, _ in source.updates:
        keep_on_device(target, device)
    step = wb.function(source.inputs, source.outputs, updates=source.updates,
                       linker=GpuLinker(device))
    x, labels = mlp.make_batch(batch=batch)
    tx, tl = (torch.from_numpy(v).to(device) for v in (x, labels))
    params = [torch.from_numpy(v).to(device) for v in mlp.initial_params()]

    def eager() -> Any:
        w1, b1, w2, b2 = params
        hidden = torch.tanh(tx @ w1 + b1)
        logits = hidden @ w2 + b2
        probabilities = torch.softmax(logits, dim=1)
        cost = -(tl * torch.log(probabilities)).sum(dim=1).mean()
        d_logits = (probabilities - tl) / tx.shape[0]
        d_hidden = (d_logits @ w2.T) * (1 - hidden * hidden)
        w2.sub_(0.1 * (hidden.T @ d_logits))
        b2.sub_(0.1 * d_logits.sum(dim=0))
        w1.sub_(0.1 * (tx.T @ d_hidden))
        b1.sub_(0.1 * d_hidden.sum(dim=0))
        return cost

    return (lambda: step(tx, tl)), eager


def softmax_rows(torch: Any, device: Any, rows: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import workbench.tensor as wt

    import workbench as wb
    from workbench.core.link.gpu import GpuLinker

    x = wt.dmatrix("x")
    fn = wb.function([x], wt.softmax(x, axis=-1).transfer("gpu"), linker=GpuLinker(device))
    value = torch.from_numpy(np.random.default_rng(0).standard_normal((rows, 1000))).to(device)
    return (lambda: fn(value)), (lambda: torch.softmax(value, dim=-1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="auto, cpu, cuda, cuda:1 ...")
    parser.add_argument("--quick", action="store_true", help="smaller inputs, fewer repeats")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: steadier on a shared machine)")
    parser.add_argument("--compile", action="store_true",
                        help="also time the torch.compile path of the fused chain")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)

    import torch

    from workbench.core.link.gpu import resolve_device

    device = resolve_device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    repeats, number = (3, 3) if args.quick else (3, 5)
    size = 100_000 if args.quick else 300_000
    rows = 100 if args.quick else 300
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        (f"fused chain (8 links, {size} floats)", *fused_chain(torch, device, size)),
        ("MLP step (784-256-10, batch 128)", *mlp_step(torch, device, 128)),
        (f"softmax over rows ({rows} x 1000)", *softmax_rows(torch, device, rows)),
    ]
    compile_time = None
    if args.compile:
        start = time.perf_counter()
        compiled, eager = fused_chain(torch, device, size, compile_fused=True)
        compiled()
        sync()
        compile_time = time.perf_counter() - start
        cases.append(("fused chain, torch.compile path", compiled, eager))
    # On the CPU the process time is the faithful measure on a loaded machine; on CUDA
    # the host mostly waits, so the ratio uses wall time there.
    use_cpu_time = device.type == "cpu"
    print(f"GPU linker vs torch eager on {device} (torch {torch.__version__}); "
          f"median of {repeats} x {number} calls; ratio = linker / eager "
          f"({'CPU' if use_cpu_time else 'wall'} time)")
    print(f"{'workload':40s} {'linker wall/cpu (ms)':>21s} {'eager wall/cpu (ms)':>21s} "
          f"{'ratio':>6s}")
    for name, linked, eager in cases:
        lw, lc = _timer(linked, sync, repeats, number)
        ew, ec = _timer(eager, sync, repeats, number)
        ratio = lc / ec if use_cpu_time else lw / ew
        print(f"{name:40s} {lw * 1e3:10.2f}/{lc * 1e3:<10.2f} {ew * 1e3:10.2f}/{ec * 1e3:<10.2f}"
              f" {ratio:6.2f}")
    if compile_time is not None:
        print(f"torch.compile of the fused chain (first call): {compile_time:.1f} s")
    if device.type != "cuda":
        print("CUDA timings: run this script on a machine with a GPU (--device cuda).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
