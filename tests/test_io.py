"""Graph files: every Op of the library round-trips; bad files fail with the place named."""

import json

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.io import GraphFileError, from_document, load, save, to_document
from workbench.testing import all_cases

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}.{c.name}" for c in CASES])
def test_every_case_round_trips_through_a_graph_file(case, tmp_path):
    dtype = case.float_dtypes[0]
    inputs, outputs, values = case.graph(dtype)
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    path = tmp_path / "graph.json"
    save(outs, path, inputs=inputs)
    loaded = load(path)
    assert len(loaded.inputs) == len(inputs)
    assert [o.type for o in loaded.outputs] == [o.type for o in outs]
    assert wb.dprint(loaded.outputs, file="str") == wb.dprint(outs, file="str")
    expected = wb.function(inputs, outs, on_unused_input="ignore")(*values)
    actual = wb.function(loaded.inputs, loaded.outputs, on_unused_input="ignore")(*values)
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)


def test_large_constants_are_stored_as_npy_and_names_survive(tmp_path):
    x = wt.dvector("x")
    big = np.arange(1000.0)
    y = x + big
    y.name = "shifted"
    document = to_document(y)
    assert any("npy" in (v.get("data") or {}) for v in document["variables"])
    loaded = from_document(json.loads(json.dumps(document)))
    assert loaded.outputs[0].name == "shifted"
    np.testing.assert_array_equal(wb.function(loaded.inputs, loaded.outputs[0])(np.ones(1000)),
                                  big + 1)


def test_a_complex_scalar_constant_keeps_its_rank():
    z = wt.zvector("z")
    y = z * np.complex128(2 - 1j)  # a 0-d complex constant: stored as npy
    loaded = from_document(json.loads(json.dumps(to_document(y))))
    f = wb.function(loaded.inputs, loaded.outputs[0])
    np.testing.assert_array_equal(f(np.array([1j, 2])), np.array([1j, 2]) * (2 - 1j))


def good_document():
    x = wt.dmatrix("x")
    return to_document(wt.exp(x).sum(axis=0))


@pytest.mark.parametrize("break_it, where, message", [
    (lambda d: d["nodes"][0]["op"].update(op="os.system"), "nodes[0].op", "unknown Op"),
    (lambda d: d["nodes"][1]["inputs"].__setitem__(0, 999), "nodes[1].inputs[0]", "dangling"),
    (lambda d: d["variables"][0].update(type={"type": "builtins.eval"}), "variables[0].type",
     "unknown Type"),
    (lambda d: d.update(version=99), "version", "unsupported version"),
    (lambda d: d.update(format="other"), "format", "not a workbench graph file"),
    # names: an Op name is an identifier, other text printable; only declared props
    (lambda d: d["nodes"][0]["op"]["props"]["scalar_op"].update(
        name='");}system("touch PWNED");{printf("'), "nodes[0].op.props.scalar_op.name",
     "an Op name must be an identifier"),
    (lambda d: d["variables"][0].update(name="x\n#include"), "variables[0].name",
     "unprintable character"),
    (lambda d: d["variables"][0]["type"]["props"].update(name="%s%s"), "variables[0].type.props",
     "TensorType has no prop 'name'"),
])
def test_broken_documents_name_the_place(break_it, where, message):
    document = good_document()
    break_it(document)
    with pytest.raises(GraphFileError, match=message) as info:
        from_document(document)
    assert info.value.where == where


def test_truncated_and_missing_files(tmp_path):
    path = tmp_path / "g.json"
    save(good_document_graph(), path)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(GraphFileError, match="not valid JSON"):
        load(path)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        load(tmp_path / "nope.json")


def good_document_graph():
    x = wt.dmatrix("x")
    return wt.exp(x).sum(axis=0)
