"""Every library Op lowers to torch, and every catalogue case gives NumPy's values on the
GPU linker (torch's CPU device here), with exactly workbench's dtypes.

A case whose node cannot run on torch (no kernel for that dtype) still passes
through the host fallback; the test records which Ops did, and a library Op
class without a lowering fails `test_every_library_op_has_a_lowering`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")

from workbench.core import dtypes  # noqa: E402
from workbench.core.compile.function import function  # noqa: E402
from workbench.core.link.gpu import GpuLinker, host_nodes, lowering_for  # noqa: E402
from workbench.core.link.gpu.lower_elemwise import scalar_kernel  # noqa: E402
from workbench.core.scalar.basic import Cast  # noqa: E402
from workbench.core.scalar.composite import Composite  # noqa: E402
from workbench.core.scalar.math import ALL_OPS  # noqa: E402
from workbench.testing.catalog import Case, all_cases, library_op_classes  # noqa: E402

CASES = all_cases()
PARAMS = [pytest.param(case, d, id=f"{case.family}.{case.name}[{d}]")
          for case in CASES for d in case.float_dtypes]


def _unsupported_dtypes(outs: list[Any]) -> set[Any]:
    """The dtypes of the graph (inputs, constants, results) the gpu backend lacks."""
    from workbench.core.graph.basic import ancestors

    GpuLinker(device="cpu")  # declares the backend's dtypes
    found = {getattr(v.type, "dtype", None) for v in ancestors(outs)}
    return {d for d in found if d is not None and not dtypes.is_supported("gpu", d)}


def test_every_library_op_has_a_lowering() -> None:
    missing = sorted(cls.__name__ for cls in library_op_classes()
                     if lowering_for(_instance_free(cls)) is None)
    assert not missing, f"Op classes without a torch lowering: {missing}"


def _instance_free(cls: type) -> Any:
    """An object whose type is `cls` for the registry lookup (no constructor call)."""
    return cls.__new__(cls)


def test_every_scalar_op_has_a_lowering() -> None:
    classes = {type(op) for op in ALL_OPS.values()} | {Cast, Composite}
    missing = sorted(c.__name__ for c in classes if scalar_kernel(_instance_free(c))
                     is None)
    assert not missing, f"scalar Ops without a torch kernel: {missing}"


def _as_list(outputs: Any) -> list[Any]:
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def _check(got: Any, want: Any, case: Case, var: Any, label: str) -> None:
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), f"{label}: got {type(got).__name__}, not an ndarray"
    assert dtypes.as_dtype(got.dtype) == var.type.dtype, (
        f"{label}: value of dtype {got.dtype}, its Type says {var.type.dtype}")
    assert got.shape == want.shape, f"{label}: shape {got.shape}, NumPy says {want.shape}"
    d = var.type.dtype
    if d.is_float or d.is_complex:
        wide = np.complex128 if d.is_complex or want.dtype.kind == "c" else np.float64
        rtol, atol = case.tolerance(str(d))
        np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(got, want, err_msg=label, strict=False)


@pytest.mark.parametrize(("case", "float_dtype"), PARAMS)
def test_case_matches_numpy_on_gpu_linker(case: Case, float_dtype: str) -> None:
    inputs, outputs, values = case.graph(float_dtype)
    outs = _as_list(outputs)
    saved = [np.copy(v) for v in values]
    needs = _unsupported_dtypes(outs)
    if needs:
        # torch lacks kernels for this dtype (uint16/32/64): compiling names it; the values
        # under a (lossy) casting mode are checked by test_gpu_dtypes.py.
        with pytest.raises(dtypes.UnsupportedDtypeError) as info:
            function(inputs, outs, linker=GpuLinker(device="cpu"), on_unused_input="ignore")
        assert info.value.dtype in needs and info.value.backend == "gpu"
        return
    fn = function(inputs, outs, linker=GpuLinker(device="cpu"), on_unused_input="ignore")
    results = fn(*values)
    for value, before in zip(values, saved):
        np.testing.assert_array_equal(value, before, err_msg="an input value was modified")
    expected = _as_list(case.expected(float_dtype))
    assert len(results) == len(expected)
    for k, (var, got, want) in enumerate(zip(outs, results, expected)):
        _check(got, want, case, var, f"{case.family}.{case.name}[{float_dtype}] output {k}")
    for node in host_nodes(fn):  # on the host only where torch lacks a kernel for the dtypes
        assert lowering_for(node.op) is not None, f"{node} has no lowering"
