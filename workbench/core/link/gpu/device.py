"""Torch, devices and values: the one place that imports torch and converts values.

Values on the device are `torch.Tensor`s; values on the host are NumPy arrays
(bfloat16 through ml_dtypes, which torch cannot read directly: it travels as
its int16 bit pattern). `resolve_device` turns the `config.device` setting
("auto", "cpu", "cuda", "cuda:1", ...) into a `torch.device`: "auto" picks
CUDA when available, otherwise the CPU with a one-time notice.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import numpy as np

from workbench.core import dtypes

__all__ = [
    "GpuUnavailableError", "import_torch", "resolve_device", "to_device", "to_host",
    "torch_available", "torch_dtype", "unavailable_reason",
]  # fmt: skip


class GpuUnavailableError(RuntimeError):
    """PyTorch is not installed, or the requested device does not exist here."""


_torch: Any = None
_import_error: str | None = None


def import_torch() -> Any:
    """The torch module (imported on first use); GpuUnavailableError if it is missing."""
    global _torch, _import_error
    if _torch is None:
        if _import_error is not None:
            raise GpuUnavailableError(_import_error)
        try:
            _torch = importlib.import_module("torch")
        except ImportError as exc:
            _import_error = (f"the GPU linker needs PyTorch (pip install 'workbench[gpu]'): "
                             f"{exc}")
            raise GpuUnavailableError(_import_error) from exc
    return _torch


def torch_available() -> bool:
    try:
        import_torch()
    except GpuUnavailableError:
        return False
    return True


def unavailable_reason() -> str | None:
    """Why the GPU linker cannot run here (None when it can)."""
    try:
        import_torch()
    except GpuUnavailableError as exc:
        return str(exc)
    return None


_notified = False


def resolve_device(spec: Any = None) -> Any:
    """A torch.device for `spec` (None: `config.device`; "auto": CUDA if available, else
    CPU with a one-time notice). GpuUnavailableError for a CUDA device that is not there."""
    global _notified
    torch = import_torch()
    if spec is None:
        from workbench.core.link import settings

        spec = settings.device
    if isinstance(spec, torch.device):
        device = spec
    else:
        if not isinstance(spec, str):
            raise TypeError(f"device must be 'auto', 'cpu', 'cuda[:n]' or a torch.device, "
                            f"got {spec!r}")
        if spec in ("auto", "gpu"):
            if torch.cuda.is_available():
                return torch.device("cuda")
            if not _notified:
                _notified = True
                warnings.warn("workbench GPU linker: no CUDA device is available; running "
                              "the torch kernels on the CPU", RuntimeWarning, stacklevel=3)
            return torch.device("cpu")
        try:
            device = torch.device(spec)
        except RuntimeError as exc:
            raise ValueError(f"unknown device {spec!r}: {exc}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise GpuUnavailableError(f"device {device} was asked for, but torch sees no CUDA "
                                  "device on this machine")
    return device


# -- dtypes -----------------------------------------------------------------------------

_TORCH_NAMES = {
    "bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bfloat16": "bfloat16", "float16": "float16", "float32": "float32", "float64": "float64",
    "complex64": "complex64", "complex128": "complex128",
}  # fmt: skip
_by_workbench: dict[str, Any] = {}
_by_torch: dict[Any, dtypes.Dtype] = {}


def torch_dtype(dtype: Any) -> Any:
    """The torch dtype of a workbench dtype (or anything `dtypes.as_dtype` reads)."""
    if not _by_workbench:
        torch = import_torch()
        for name, tname in _TORCH_NAMES.items():
            tdt = getattr(torch, tname, None)
            if tdt is not None:
                _by_workbench[name] = tdt
                _by_torch[tdt] = dtypes.as_dtype(name)
    d = dtypes.as_dtype(dtype)
    try:
        return _by_workbench[str(d)]
    except KeyError:
        raise TypeError(f"dtype {d} has no torch equivalent in this torch version") from None


def workbench_dtype(tdtype: Any) -> dtypes.Dtype:
    """The workbench dtype of a torch dtype."""
    torch_dtype("float64")  # fill the tables
    return _by_torch[tdtype]


# -- values -------------------------------------------------------------------------------

_BF16 = dtypes.bfloat16.numpy


def to_device(value: Any, device: Any) -> Any:
    """`value` as a tensor on `device`: NumPy arrays and scalars are converted (sharing
    memory on the CPU when possible), tensors moved, anything else returned as it is."""
    torch = import_torch()
    if isinstance(value, torch.Tensor):
        return value if value.device == device else value.to(device)
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype == _BF16:
        bits = np.ascontiguousarray(value).view(np.int16)
        return _from_numpy(torch, bits, device).view(torch.bfloat16)
    return _from_numpy(torch, value, device)


def _from_numpy(torch: Any, array: np.ndarray, device: Any) -> Any:
    if not array.flags.writeable or any(s < 0 for s in array.strides) or \
            not array.dtype.isnative:
        array = np.array(array, dtype=array.dtype.newbyteorder("="))
    tensor = torch.from_numpy(array)
    return tensor if device.type == "cpu" else tensor.to(device, non_blocking=False)


def to_host(value: Any) -> Any:
    """`value` as a NumPy array when it is a tensor (on the CPU: a view of its memory)."""
    torch = import_torch()
    if not isinstance(value, torch.Tensor):
        return value
    tensor = value.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(_BF16)
    if tensor.is_conj():
        tensor = tensor.resolve_conj()
    if tensor.is_neg():
        tensor = tensor.resolve_neg()
    return tensor.numpy()
