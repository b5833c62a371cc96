"""Shape rewrites and the ShapeFeature: lengths of computed tensors without computing them."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt
from workbench.core.graph import utils as graph_utils
from workbench.core.graph.basic import Apply, Variable
from workbench.core.graph.fg import FunctionGraph
from workbench.core.graph.op import Op
from workbench.core.rewrite import rewrite_graph
from workbench.core.scalar.basic import get_scalar_type
from workbench.core.tensor.elemwise import Elemwise
from workbench.core.tensor.linalg import Dot, MatMul
from workbench.core.tensor.shape import Shape_i
from workbench.core.tensor.shape_feature import ShapeFeature, get_shape_feature
from workbench.core.tensor.type import TensorType


def _ops(fgraph: FunctionGraph) -> list:
    return [n.op for n in fgraph.apply_nodes]


def test_length_of_a_product_does_not_compute_the_product() -> None:
    x, w = wt.matrix("x"), wt.matrix("W")
    f = wb.function([x, w], (wt.exp(x) @ w).shape[0], mode="FAST_RUN",
                    on_unused_input="ignore")
    ops = _ops(f.maker.fgraph)
    assert not any(isinstance(op, (Elemwise, Dot, MatMul)) for op in ops), ops
    assert [str(op) for op in ops] == ["Shape_i{0}"]
    assert f(np.ones((3, 4)), np.ones((4, 5))) == 3


def test_whole_shape_of_a_computed_tensor() -> None:
    x, w = wt.matrix("x"), wt.matrix("W")
    fgraph, trace = rewrite_graph([(wt.tanh(x) @ w).shape], mode="FAST_RUN", trace=True)
    assert not any(isinstance(op, (Elemwise, Dot, MatMul)) for op in _ops(fgraph))
    assert "local_shape_of_computed" in [step.rewrite for step in trace.steps]
    f = wb.function([x, w], (wt.tanh(x) @ w).shape, mode="FAST_RUN")
    np.testing.assert_array_equal(f(np.ones((3, 4)), np.ones((4, 5))), [3, 5])


def test_static_lengths_become_constants() -> None:
    x = wt.tensor(dtype="float64", shape=(2, None), name="x")
    f = wb.function([x], [wt.exp(x).shape[0], wt.exp(x).shape], mode="FAST_RUN")
    first, whole = f(np.zeros((2, 7)))
    assert first == 2
    np.testing.assert_array_equal(whole, [2, 7])
    assert not any(isinstance(op, Elemwise) and "exp" in str(op) for op in _ops(f.maker.fgraph))


def test_shape_feature_follows_infer_shape() -> None:
    x, y = wt.matrix("x"), wt.vector("y")
    z = wt.exp(x) + y  # broadcasting: the last length is x's or y's
    s = wt.sum(z, axis=0)
    fgraph = FunctionGraph([x, y], [s], clone=False)
    feature = get_shape_feature(fgraph)
    assert fgraph.shape_feature is feature
    (length,) = feature.get_shape(s)
    assert isinstance(length, Variable) and length.type.ndim == 0
    assert str(length.type.dtype) == "int64"
    f = wb.function([x, y], length, on_unused_input="ignore")
    assert f(np.ones((3, 4)), np.ones(4)) == 4
    assert f(np.ones((3, 1)), np.ones(5)) == 5
    row = feature.get_shape(x)
    assert isinstance(row[0].owner.op, Shape_i) and row[0].owner.inputs[0] is x


def test_shape_feature_on_a_deep_chain_needs_no_recursion(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(graph_utils, "capture_source_locations", False)
    x = wt.vector("x")
    z = x
    for _ in range(3000):
        z = wt.tanh(z)
    fgraph = FunctionGraph([x], [z], clone=False)
    (length,) = get_shape_feature(fgraph).get_shape(z)
    assert length.owner.inputs[0] is x


class _NoShape(Op):
    """An Op without infer_shape: its output's lengths need the output itself."""

    __props__ = ()

    def make_node(self, x: Variable) -> Apply:
        return Apply(self, [x], [TensorType(x.type.dtype, (None,))()])

    def perform(self, node: Apply, inputs: list, output_storage: list) -> None:
        output_storage[0][0] = np.concatenate([inputs[0], inputs[0]])


def test_ops_without_infer_shape_fall_back_to_their_output() -> None:
    x = wt.vector("x")
    doubled = _NoShape()(wt.exp(x))
    out = wt.tanh(doubled)
    fgraph = FunctionGraph([x], [out], clone=False)
    (length,) = get_shape_feature(fgraph).get_shape(out)
    assert isinstance(length.owner.op, Shape_i) and length.owner.inputs[0] is doubled
    f = wb.function([x], out.shape[0], mode="FAST_RUN")
    assert f(np.ones(3)) == 6
    assert not any("tanh" in str(op) for op in _ops(f.maker.fgraph))


def test_replacements_inherit_the_shape_of_what_they_replace() -> None:
    x = wt.vector("x")
    a = wt.exp(x)
    fgraph = FunctionGraph([x], [wt.tanh(a)], clone=False)
    feature = ShapeFeature()
    fgraph.attach_feature(feature)
    before = feature.get_shape(a)
    new = wt.sin(x)
    fgraph.replace(a, new)
    assert feature.get_shape(new) == before
    with pytest.raises(TypeError, match="not a tensor"):
        feature.get_length(get_scalar_type("float64")(), 0)


def test_feature_is_attached_once() -> None:
    x = wt.vector("x")
    fgraph = FunctionGraph([x], [wt.exp(x)], clone=False)
    assert get_shape_feature(fgraph) is get_shape_feature(fgraph)
