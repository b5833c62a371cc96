"""Malformed graph files: each gives a GraphFileError naming the place (never a
RecursionError, TypeError, MemoryError...), and `workbench show` exits 2 with one line."""

from __future__ import annotations

import base64
import io as _io
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt
from typer.testing import CliRunner

from workbench.cli import app
from workbench.io import MAX_DEPTH, GraphFileError, from_document, load, to_document

COMPOSITE = "workbench.core.scalar.composite.Composite"
SCALAR_TYPE = {"type": "workbench.core.scalar.basic.ScalarType",
               "props": {"dtype": {"dtype": "float64"}}}


def good_document() -> dict[str, Any]:
    x = wt.dmatrix("x")
    return to_document(wt.exp(x + np.arange(100.0).reshape(10, 10)).sum(axis=0))


def npy_variable(doc: dict[str, Any]) -> dict[str, Any]:
    return next(v for v in doc["variables"] if "npy" in (v.get("data") or {}))


def npy_claiming(shape: tuple[int, ...], descr: str = "<f8", data: bytes = b"") -> str:
    """Base64 `.npy` bytes whose header claims `shape` of `descr`, followed by `data`."""
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    raw = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data
    return base64.b64encode(raw).decode()


def nested_composites(depth: int) -> str:
    """The JSON of a scalar Op: `depth` Composites each holding the next (the innermost:
    exp). (Built as text: json.dumps itself refuses deep nesting.)"""
    op = json.dumps({"op": "workbench.core.scalar.math.Exp", "props": {
        "output_types_preference": {"function": "workbench.core.scalar.basic.upgrade_to_float"}}})
    graph = json.dumps({"op": COMPOSITE, "graph": {
        "variables": [{"id": 0, "kind": "input", "type": SCALAR_TYPE},
                      {"id": 1, "kind": "computed", "type": SCALAR_TYPE}],
        "nodes": [{"op": "INNER", "inputs": [0], "outputs": [1]}],
        "inputs": [0], "outputs": [1]}})
    before, after = graph.split('"INNER"')
    return before * depth + op + after * depth


def elemwise_of(scalar_op: str) -> str:
    """A graph file computing Elemwise(scalar_op)(x) on a float64 vector."""
    vector = {"type": "workbench.core.tensor.type.TensorType",
              "props": {"dtype": {"dtype": "float64"}, "shape": {"tuple": [None]}}}
    return json.dumps({"format": "workbench-graph", "version": 1,
                       "variables": [{"id": 0, "kind": "input", "type": vector, "name": "x"},
                                     {"id": 1, "kind": "computed", "type": vector}],
                       "nodes": [{"op": {"op": "workbench.core.tensor.elemwise.Elemwise",
                                         "props": {"scalar_op": "OP",
                                                   "inplace_pattern": {"tuple": []}}},
                                  "inputs": [0], "outputs": [1]}],
                       "inputs": [0], "outputs": [1]}).replace('"OP"', scalar_op)


def deep_tuple(depth: int) -> dict[str, Any]:
    value: Any = None
    for _ in range(depth):
        value = {"tuple": [value]}
    return value


def set_in(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def put(doc: dict[str, Any]) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return put


def set_npy(b64: str) -> Callable[[dict[str, Any]], None]:
    return lambda doc: npy_variable(doc)["data"]["npy"].__setitem__("base64", b64)


TENSOR_OP = ("nodes", 0, "op")
#: (what is wrong, how to break a good document (or the file's text), where, message)
MALFORMED: list[tuple[str, Any, str, str]] = [
    ("JSON nested 100,000 deep", "[" * 100_000 + "]" * 100_000, "", "nested more than"),
    ("a type nested 400 deep", set_in(("variables", 0, "type", "props", "shape"),
                                      deep_tuple(200)), "", "nested more than"),
    ("300 nested Composites", elemwise_of(nested_composites(300)), "", "nested more than"),
    ("an integer of 5,000 digits", '{"format": "workbench-graph", "version": '
     + "9" * 5000 + "}", "", "not valid JSON"),
    ("not UTF-8", b'{"format": "\xff\xfe"}', "byte 12", "not UTF-8"),
    ("a list as a variable id", set_in(("variables", 0, "id"), [0]), "variables[0].id",
     "a variable id is an integer"),
    ("a variable id declared twice", set_in(("variables", 1, "id"), 0), "variables[1].id",
     "declared twice"),
    ("a list as a node's input", set_in(("nodes", 0, "inputs", 0), [0]),
     "nodes[0].inputs[0]", "a variable id is an integer"),
    ("an object as a graph output", set_in(("outputs", 0), {"id": 3}), "outputs[0]",
     "a variable id is an integer"),
    ("a number as the node list", set_in(("nodes",), 5), "nodes", "expected a list"),
    ("a list as a node", set_in(("nodes", 0), []), "nodes[0]", "a node is an object"),
    ("a list as an Op", set_in(TENSOR_OP, ["Elemwise"]), "nodes[0].op", "an Op is an object"),
    ("a list as an Op's class", set_in((*TENSOR_OP, "op"), ["x"]), "nodes[0].op",
     "unknown Op"),
    ("a number as a node's inputs", set_in(("nodes", 0, "inputs"), 7), "nodes[0].inputs",
     "expected a list of variable ids"),
    ("a function named as a Type", set_in(("variables", 0, "type", "type"),
                                          "workbench.core.scalar.basic.upcast_out"),
     "variables[0].type", "unknown Type"),
    ("a list as a Type's class", set_in(("variables", 0, "type", "type"), []),
     "variables[0].type", "unknown Type"),
    ("a number as a tuple", set_in(("variables", 0, "type", "props", "shape"), {"tuple": 5}),
     "variables[0].type.shape", "malformed value"),
    ("a dict of bad pairs", set_in(("variables", 0, "type", "props", "shape"),
                                   {"dict": [[1, 2, 3]]}),
     "variables[0].type.shape", "malformed value"),
    ("a float of garbage", set_in(("variables", 0, "type", "props", "shape"),
                                  {"float": "many"}),
     "variables[0].type.shape", "malformed value"),
    ("a record of the wrong length", set_in(("variables", 0, "type", "props", "shape"),
                                            {"record": "workbench.core.tensor.indexing"
                                                       ".SliceSpec", "fields": [1] * 9}),
     "variables[0].type.shape", ""),
    ("a number as an Op's prop", set_in((*TENSOR_OP, "props", "scalar_op"), 3),
     "nodes[0].op", "cannot build"),
    ("a Composite without its graph", set_in((*TENSOR_OP, "props", "scalar_op"),
                                             {"op": COMPOSITE}),
     "nodes[0].op.props.scalar_op.graph", "a graph is an object"),
    ("a .npy header claiming 745 GiB", set_npy(npy_claiming((10**11,))), "variables[",
     "claims shape (100000000000,) of float64 (800000000000 bytes) but the data holds 0"),
    ("a .npy header claiming more than its data", set_npy(npy_claiming((4,), data=b"\0" * 8)),
     "variables[", "holds 8 bytes"),
    ("a .npy of Python objects", set_npy(npy_claiming((1,), descr="|O", data=b"\0" * 8)),
     "variables[", "Python objects"),
    ("a .npy of a negative length", set_npy(npy_claiming((-5,))), "variables[",
     "claims the shape (-5,)"),
    ("a .npy that is not one", set_npy(base64.b64encode(b"PK\x03\x04 zip").decode()),
     "variables[", "bad array data"),
]


def write(tmp_path: Path, break_it: Any) -> Path:
    path = tmp_path / "graph.json"
    if isinstance(break_it, bytes):
        path.write_bytes(break_it)
    elif isinstance(break_it, str):
        path.write_text(break_it)
    else:
        document = good_document()
        break_it(document)
        path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("break_it, where, message", [case[1:] for case in MALFORMED],
                         ids=[case[0] for case in MALFORMED])
def test_a_malformed_file_gives_a_graph_file_error(tmp_path, break_it, where, message):
    path = write(tmp_path, break_it)
    with pytest.raises(GraphFileError, match=message.replace("(", r"\(").replace(")", r"\)")
                       ) as info:
        load(path)
    assert info.value.where.startswith(where)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("break_it", [case[1] for case in MALFORMED],
                         ids=[case[0] for case in MALFORMED])
def test_the_cli_refuses_a_malformed_file_with_exit_2_and_one_line(tmp_path, break_it):
    result = CliRunner().invoke(app, ["show", str(write(tmp_path, break_it))])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("error: broken graph file")


def test_composites_nested_within_the_limit_load_and_run(tmp_path):
    import workbench as wb

    depth = (MAX_DEPTH - 10) // 5
    path = tmp_path / "graph.json"
    path.write_text(elemwise_of(nested_composites(depth)))
    inputs, outputs = load(path)
    f = wb.function(inputs, outputs, linker="py")
    np.testing.assert_allclose(f(np.array([0.0, 1.0]))[0], [1.0, np.e])


def test_a_npy_whose_header_matches_its_data_loads():
    from workbench.io import _read_npy

    buffer = _io.BytesIO()
    np.save(buffer, np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    array = _read_npy(buffer.getvalue(), "here")
    np.testing.assert_array_equal(array, np.arange(6.0).reshape(2, 3))
    array[0, 0] = 7.0  # a writable copy, not a view of the file's bytes


def test_a_document_nested_too_deeply_is_refused_before_decoding():
    document = good_document()
    document["variables"][0]["type"]["props"]["shape"] = deep_tuple(5000)
    with pytest.raises(GraphFileError, match=f"nested more than {MAX_DEPTH} deep"):
        from_document(document)
