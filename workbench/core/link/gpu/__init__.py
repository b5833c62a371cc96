"""The GPU linker: workbench graphs lowered to PyTorch and run on a device.

`function(inputs, outputs, linker="gpu")` (or `mode="GPU"`) lowers every node
through a registry keyed by Op class (`registry.py`; one module per Op family:
`lower_elemwise`, `lower_tensor`, `lower_index`, `lower_sort`), runs the torch kernels on
`config.device` ("auto": CUDA when available, else the CPU with a one-time
notice) and returns NumPy arrays. Nodes without a torch equivalent run on the
host through `Op.perform`. Transfers (`x.transfer("gpu")`), device shared
variables and their rewrites are in `transfer.py`; the dtypes torch supports
are probed in `dtype_support.py`.

Importing this package imports torch: workbench itself only does so when the
"gpu" linker is first asked for.
"""

from __future__ import annotations

from workbench.core.link.gpu import lower_blockwise as lower_blockwise

# Register the lowerings (import order: elementwise first, the others use astype).
from workbench.core.link.gpu import lower_elemwise as lower_elemwise  # noqa: I001
from workbench.core.link.gpu import lower_index as lower_index
from workbench.core.link.gpu import lower_linalg as lower_linalg
from workbench.core.link.gpu import lower_random as lower_random
from workbench.core.link.gpu import lower_sort as lower_sort
from workbench.core.link.gpu import lower_tensor as lower_tensor
from workbench.core.link.gpu.device import (
    GpuUnavailableError,
    resolve_device,
    to_device,
    to_host,
    torch_available,
)
from workbench.core.link.gpu.dtype_support import probe_dtypes, register_torch_dtypes
from workbench.core.link.gpu.linker import GpuLinker, host_nodes
from workbench.core.link.gpu.registry import (
    lowering_for,
    register_lowering,
    register_scalar,
    scalar_lowering_for,
)
from workbench.core.link.gpu.transfer import (
    DeviceCell,
    ToDevice,
    ToHost,
    device_shared,
    keep_on_device,
)

__all__ = [
    "DeviceCell", "GpuLinker", "GpuUnavailableError", "ToDevice", "ToHost", "device_shared",
    "host_nodes", "keep_on_device", "lowering_for", "probe_dtypes", "register_lowering",
    "register_scalar", "register_torch_dtypes", "resolve_device", "scalar_lowering_for",
    "to_device", "to_host", "torch_available",
]  # fmt: skip
