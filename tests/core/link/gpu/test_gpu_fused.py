"""The optional torch.compile path of fused elementwise regions (off by default).

torch.compile itself takes seconds to minutes on a CPU, so these tests replace it
with a recording stand-in: they check which nodes go through it, that values do
not change, and the eager fallback when compiling fails. The real compile is
measured by benchmarks/bench_gpu.py --compile.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")

import workbench.tensor as wt  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.core.link.gpu import GpuLinker  # noqa: E402
from workbench.core.link.gpu.fused import is_fused_region  # noqa: E402


def _chain():
    x = wt.dvector("x")
    y = x
    for _ in range(3):
        y = wt.tanh(y) * 0.5 + x
    return x, y.sum()


@pytest.fixture
def compiled(monkeypatch):
    """torch.compile replaced by a stand-in that records what it was given."""
    seen = []

    def fake_compile(fn, **options):
        seen.append(options)
        return fn

    monkeypatch.setattr(torch, "compile", fake_compile)
    return seen


def test_fused_regions_are_compiled_only_when_asked(compiled) -> None:
    x, out = _chain()
    value = np.array([0.1, -0.4, 2.0])
    eager = wb.function([x], out, linker=GpuLinker(device="cpu"))
    assert compiled == []  # off by default
    fused = wb.function([x], out, linker=GpuLinker(device="cpu", compile_fused=True))
    regions = [n for n in fused.maker.fgraph.toposort() if is_fused_region(n)]
    assert len(regions) == 1 and len(compiled) == 1 and compiled[0] == {"dynamic": True}
    assert fused(value) == pytest.approx(eager(value), rel=1e-12)


def test_a_failing_compile_falls_back_to_eager_with_a_warning(monkeypatch) -> None:
    def broken_compile(fn, **options):
        def run(*args):
            raise RuntimeError("no C++ compiler")

        return run

    monkeypatch.setattr(torch, "compile", broken_compile)
    x, out = _chain()
    f = wb.function([x], out, linker=GpuLinker(device="cpu", compile_fused=True))
    with pytest.warns(RuntimeWarning, match="torch.compile failed"):
        first = f(np.ones(3))
    assert f(np.ones(3)) == first  # eager from then on, no second warning needed
