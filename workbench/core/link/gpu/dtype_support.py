"""Which of workbench's 15 dtypes the torch backend computes with, probed, not assumed.

A dtype is supported when the installed torch can hold it, move it between
NumPy and the device, and run the core elementwise kernels on it (arithmetic,
comparison, selection, reduction). Torch 2.x holds uint16/uint32/uint64 but
has almost no kernels for them ("shell" dtypes): the probe finds that and the
backend declares them unsupported, so a graph using them raises
`UnsupportedDtypeError` unless a casting mode converts them (seed 004).

`probe_dtypes(device)` returns the per-dtype report (dtype -> the failing
kernels); `register_torch_dtypes(device)` declares the result as backend "gpu"
in `workbench.core.dtypes` (the name `function` checks with for linker="gpu").
"""

from __future__ import annotations

from typing import Any

from workbench.core import dtypes

__all__ = ["BACKEND", "probe_dtypes", "register_torch_dtypes", "torch_promotion"]

BACKEND = "gpu"

#: The kernels a dtype must have to count as computable: name -> fn(torch, a, b).
CORE_KERNELS = {
    "add": lambda torch, a, b: a + b,
    "mul": lambda torch, a, b: a * b,
    "eq": lambda torch, a, b: a == b,
    "lt": lambda torch, a, b: a < b if not a.is_complex() else a,  # complex: unordered
    "where": lambda torch, a, b: torch.where(a == b, a, b),
    "sum": lambda torch, a, b: a.sum(),
    "cat": lambda torch, a, b: torch.cat([a, b]),
    "index": lambda torch, a, b: a[torch.tensor([0], device=a.device)],
}

_probed: dict[str, dict[dtypes.Dtype, list[str]]] = {}


def probe_dtypes(device: Any) -> dict[dtypes.Dtype, list[str]]:
    """For each of the 15 dtypes, the core kernels torch lacks on `device` ([]: none)."""
    from workbench.core.link.gpu.device import import_torch, to_device, to_host, torch_dtype

    key = str(device)
    if key in _probed:
        return _probed[key]
    torch = import_torch()
    import numpy as np

    report: dict[dtypes.Dtype, list[str]] = {}
    for d in dtypes.all_dtypes:
        missing: list[str] = []
        try:
            tdt = torch_dtype(d)
            host = np.ones(2, dtype=d.numpy)
            a = to_device(host, device)
            if a.dtype != tdt or to_host(a).dtype != d.numpy:
                missing.append("transfer")
            b = torch.ones(2, dtype=tdt, device=device)
        except Exception:
            report[d] = ["storage"]
            continue
        for name, fn in CORE_KERNELS.items():
            try:
                fn(torch, a, b)
            except Exception:
                missing.append(name)
        report[d] = missing
    _probed[key] = report
    return report


def register_torch_dtypes(device: Any) -> tuple[dtypes.Dtype, ...]:
    """Declare backend "gpu" with the dtypes the probe on `device` found computable."""
    report = probe_dtypes(device)
    supported = [d for d, missing in report.items() if not missing]
    dtypes.register_backend_dtypes(BACKEND, supported)
    return tuple(supported)


def torch_promotion(a: Any, b: Any) -> str:
    """What torch itself promotes dtypes `a` and `b` to ("error" when it refuses)."""
    from workbench.core.link.gpu.device import import_torch, torch_dtype, workbench_dtype

    torch = import_torch()
    try:
        return str(workbench_dtype(torch.promote_types(torch_dtype(a), torch_dtype(b))))
    except (RuntimeError, TypeError):
        return "error"
