"""The transfer Ops are tensor-layer graph objects: a graph using `.transfer()` saves and loads."""

from __future__ import annotations

import numpy as np

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.tensor.transfer import ToDevice, ToHost
from workbench.io import load, save


def test_a_graph_with_transfers_round_trips_through_a_graph_file(tmp_path) -> None:
    x = wt.dvector("x")
    y = wt.exp(x.transfer("gpu")).transfer("cpu") * 2.0
    path = tmp_path / "transfers.json"
    save([y], path, inputs=[x])
    loaded = load(path)
    ops = [type(node.op) for node in wb.FunctionGraph(loaded.inputs, loaded.outputs).toposort()]
    assert ToDevice in ops and ToHost in ops
    assert wb.dprint(loaded.outputs, file="str") == wb.dprint([y], file="str")
    value = np.array([0.0, 1.0, 2.0])
    f = wb.function(loaded.inputs, loaded.outputs[0], linker="py")
    np.testing.assert_allclose(f(value), np.exp(value) * 2.0)


def test_transfer_ops_load_without_the_gpu_backend() -> None:
    from workbench.io import registry

    names = registry()
    assert names["workbench.core.tensor.transfer.ToDevice"] is ToDevice
    assert names["workbench.core.tensor.transfer.ToHost"] is ToHost
