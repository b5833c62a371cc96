"""The inner-graph Op protocol: identity by structure, dprint and graph files see inside."""

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench import io as graph_io
from workbench.core.graph import Apply, FunctionGraph
from workbench.core.graph.inner_graph import (
    InnerGraphOp,
    inner_graph_nodes,
    inner_graph_signature,
)
from workbench.core.graph.utils import MethodNotDefined


class Packaged(InnerGraphOp):
    """A test's own inner-graph Op: its graph applied once, node by node via `perform`."""

    __props__ = ("label",)
    inner_graph_title = "packaged graph"

    def __init__(self, inputs, outputs, label="p"):
        self.fgraph = FunctionGraph(inputs, outputs)
        self.label = label

    def clone_with_inner_graph(self, fgraph):
        return Packaged(fgraph.inputs, fgraph.outputs, self.label)

    @classmethod
    def from_inner_graph(cls, inputs, outputs, **props):
        return cls(inputs, outputs, **props)

    def make_node(self, *inputs):
        inputs = [wt.as_tensor_variable(v) for v in inputs]
        return Apply(self, inputs, [o.type() for o in self.inner_outputs])

    def perform(self, node, inputs, output_storage):
        values = dict(zip(self.inner_inputs, inputs))
        for inner in self.fgraph.toposort():
            cells = [[None] for _ in inner.outputs]
            args = [values[v] if v in values else v.data for v in inner.inputs]
            inner.op.perform(inner, args, cells)
            values.update(zip(inner.outputs, (c[0] for c in cells)))
        for cell, out in zip(output_storage, self.inner_outputs):
            cell[0] = values[out]


def _packaged(label="p", constant=2.0):
    a, b = wt.dvector("a"), wt.dvector("b")
    return Packaged([a, b], [wt.exp(a) * b + constant], label)


def test_equal_graphs_make_equal_ops_and_different_graphs_do_not():
    assert _packaged() == _packaged()
    assert hash(_packaged()) == hash(_packaged())
    assert _packaged() != _packaged(constant=3.0)
    assert _packaged() != _packaged(label="q")
    assert str(_packaged()) == "Packaged{label=p}"


def test_signature_ignores_names_and_sees_wiring():
    a, b = wt.dvector("a"), wt.dvector("b")
    c, d = wt.dvector("c"), wt.dvector("d")
    assert inner_graph_signature(FunctionGraph([a, b], [a - b])) == inner_graph_signature(
        FunctionGraph([c, d], [c - d]))
    assert inner_graph_signature(FunctionGraph([a, b], [a - b])) != inner_graph_signature(
        FunctionGraph([c, d], [d - c]))


def test_the_op_runs_and_dprint_shows_its_inner_graph_under_the_node():
    x, y = wt.dvector("x"), wt.dvector("y")
    z = _packaged()(x, y) + 1.0
    f = wb.function([x, y], z, mode="FAST_COMPILE")
    np.testing.assert_allclose(f(np.zeros(2), np.ones(2)), [4.0, 4.0])
    text = wb.dprint(z, file="str")
    lines = text.splitlines()
    packaged_line = next(i for i, line in enumerate(lines) if "Packaged{label=p}" in line)
    label = lines[packaged_line].split("[id ")[1].split("]")[0]
    after = lines[packaged_line + 1:]
    assert after[0].strip(" |").startswith("x [id")
    assert after[1].strip(" |").startswith("y [id")
    assert after[2] == f" | >packaged graph of [id {label}]:"
    assert after[3].startswith(" | >Elemwise{add}")
    assert any(line.startswith(" | > |") and "exp" in line for line in after)
    assert any(line.strip(" |>").startswith("a [id") for line in after)


def test_inner_graph_nodes_finds_only_inner_graph_ops():
    x, y = wt.dvector("x"), wt.dvector("y")
    fg = FunctionGraph([x, y], [_packaged()(x, y) * 2.0])
    found = inner_graph_nodes(fg)
    assert [type(n.op) for n in found] == [Packaged]


def test_a_graph_file_saves_the_inner_graph_and_loads_an_equal_op(monkeypatch):
    monkeypatch.setitem(graph_io.registry(), graph_io._qualified(Packaged), Packaged)
    x, y = wt.dvector("x"), wt.dvector("y")
    z = _packaged(label="saved")(x, y)
    document = graph_io.to_document(z, inputs=[x, y])
    node_spec = document["nodes"][0]["op"]
    assert node_spec["props"] == {"label": "saved"}
    assert len(node_spec["graph"]["nodes"]) == len(z.owner.op.fgraph.apply_nodes)
    loaded = graph_io.from_document(document)
    assert loaded.outputs[0].owner.op == z.owner.op
    assert wb.dprint(loaded.outputs, file="str") == wb.dprint(z, file="str")


def test_a_malformed_inner_graph_is_refused_with_its_place(monkeypatch):
    monkeypatch.setitem(graph_io.registry(), graph_io._qualified(Packaged), Packaged)
    x, y = wt.dvector("x"), wt.dvector("y")
    document = graph_io.to_document(_packaged()(x, y), inputs=[x, y])
    document["nodes"][0]["op"]["props"] = {"colour": "red"}
    with pytest.raises(graph_io.GraphFileError, match=r"nodes\[0\]"):
        graph_io.from_document(document)


def test_the_base_class_says_what_a_subclass_must_define():
    class Bare(InnerGraphOp):
        pass

    with pytest.raises(MethodNotDefined, match="Bare.from_inner_graph"):
        Bare.from_inner_graph([], [])
