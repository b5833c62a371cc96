"""Transfers between host and device: transfer Ops, their rewrites, device shared variables,
and 100 training steps of the MLP example with its weights kept on the device."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")

import workbench.tensor as wt  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.core.link.gpu import (  # noqa: E402
    DeviceCell,
    GpuLinker,
    ToDevice,
    ToHost,
    device_shared,
    keep_on_device,
)
from workbench.core.link.gpu import linker as gpu_linker  # noqa: E402
from workbench.examples import mlp  # noqa: E402


def _op_classes(fn) -> list[str]:
    return [type(node.op).__name__ for node in fn.maker.fgraph.toposort()]


def test_transfer_inserts_transfer_ops_that_print() -> None:
    x = wt.dvector("x")
    on_device = x.transfer("gpu")
    assert isinstance(on_device.owner.op, ToDevice)
    back = wt.exp(on_device).transfer("cpu")
    assert isinstance(back.owner.op, ToHost)
    assert on_device.transfer("gpu") is on_device
    assert on_device.transfer("cpu") is x  # moving back cancels at construction
    assert "ToDevice" in wb.dprint(back, file="str")
    with pytest.raises(ValueError, match="no registered transfer"):
        x.transfer("tpu")


def test_rewrites_remove_transfer_pairs_and_compute_on_the_device() -> None:
    x = wt.dvector("x")
    host_then_device = ToDevice()(ToHost()(ToDevice()(x)))  # built directly, no shortcut
    f = wb.function([x], wt.exp(host_then_device) * 2, linker="gpu")
    assert _op_classes(f).count("ToHost") == 0
    lifted = wb.function([x], wt.exp(ToHost()(x)) + 1, linker="gpu")
    names = _op_classes(lifted)
    assert names[-1] == "ToHost" and names.count("ToHost") == 1  # one move, at the end
    np.testing.assert_allclose(lifted(np.array([0.0, 1.0])), np.exp([0.0, 1.0]) + 1)


def test_transfers_are_the_identity_on_the_python_linker() -> None:
    x = wt.dvector("x")
    f = wb.function([x], wt.exp(x.transfer("gpu")).transfer("cpu"), linker="py")
    np.testing.assert_allclose(f(np.array([0.0, 1.0])), [1.0, np.e])


def test_device_shared_variables_read_as_numpy_and_update_on_the_device() -> None:
    w = device_shared(np.arange(3.0), name="w", device="cpu")
    assert isinstance(w.container.storage, DeviceCell)
    assert isinstance(w.container.storage.tensor, torch.Tensor)
    value = w.get_value()
    assert isinstance(value, np.ndarray)
    value[0] = 99.0  # a copy
    np.testing.assert_array_equal(w.get_value(), [0.0, 1.0, 2.0])
    step = wb.function([], w.sum(), updates=[(w, w * 2)], linker="gpu")
    assert step() == 3.0
    assert isinstance(w.container.storage.tensor, torch.Tensor)
    np.testing.assert_array_equal(w.get_value(), [0.0, 2.0, 4.0])
    w.set_value(np.ones(3))
    assert step() == 3.0
    # other linkers see NumPy values
    assert wb.function([], w.sum(), linker="py")() == 6.0
    shared_gpu = wb.shared(np.zeros(2), target="gpu")
    assert isinstance(shared_gpu.container.storage, DeviceCell)


def test_updates_of_device_weights_never_visit_the_host(monkeypatch) -> None:
    w = device_shared(np.ones(4), name="w", device="cpu")
    x = wt.dvector("x")
    f = wb.function([x], (w * x).sum(), updates=[(w, w - 0.1 * x)], linker="gpu")
    moved = []
    real = gpu_linker.to_host
    monkeypatch.setattr(gpu_linker, "to_host", lambda v: moved.append(v) or real(v))
    for _ in range(3):
        f(np.ones(4))
    assert len(moved) == 3  # the cost only: the update stayed a device tensor
    np.testing.assert_allclose(w.get_value(), np.full(4, 0.7))


def _train(linker: str, steps: int, on_device: bool) -> list[np.ndarray]:
    source = mlp.build_source(n_in=20, n_hidden=16, n_out=5, batch=8)
    params = [target for target, _ in source.updates]
    if on_device:
        for p in params:
            keep_on_device(p, device="cpu")
    step = wb.function(source.inputs, source.outputs, updates=source.updates, linker=linker)
    x, labels = mlp.make_batch(batch=8, n_in=20, n_out=5)
    for _ in range(steps):
        step(x, labels)
    if on_device:
        assert all(isinstance(p.container.storage.tensor, torch.Tensor) for p in params)
    return [p.get_value() for p in params]


def test_mlp_trains_100_steps_with_weights_on_the_device() -> None:
    from workbench.core.compile.mode import available_linkers

    # the reference is the C linker's run (the Python linker's where no compiler)
    reference = _train("c" if "c" in available_linkers() else "py", 100, on_device=False)
    on_device = _train("gpu", 100, on_device=True)
    start = mlp.initial_params(20, 16, 5)
    for got, want, first in zip(on_device, reference, start):
        assert not np.allclose(want, first)  # the weights did move
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_keep_on_device_needs_a_shared_variable() -> None:
    with pytest.raises(TypeError, match="shared variable"):
        keep_on_device(wt.dvector("x"))


def test_a_device_shared_variable_is_read_on_the_linker_device(monkeypatch) -> None:
    w = device_shared(np.ones(2), device="cpu")
    f = wb.function([], w * 2, linker=GpuLinker(device="cpu"))
    moved = []
    real = gpu_linker.to_device
    monkeypatch.setattr(gpu_linker, "to_device",
                        lambda v, d: moved.append((type(v).__name__, d)) or real(v, d))
    np.testing.assert_array_equal(f(), [2.0, 2.0])
    # the stored tensor (not a NumPy copy) is handed to the linker's device
    assert moved == [("Tensor", torch.device("cpu"))]
