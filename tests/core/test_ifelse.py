"""The lazy IfElse: only the taken branch runs on the Python VM."""

import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core.compile.function import function
from workbench.core.compile.mode import Mode
from workbench.core.graph.basic import Apply
from workbench.core.graph.op import Op
from workbench.core.ifelse import IfElse, ifelse
from workbench.core.link.vm import VMLinker
from workbench.core.printing import pprint
from workbench.core.tensor import TensorType, specify_shape
from workbench.testing import cases_ifelse


class Recorder(Op):
    """Its input unchanged (a copy), recording each run in `runs` (or raising if `fail`)."""

    __props__ = ("label", "fail")

    def __init__(self, label, runs, fail=False):
        self.label, self.fail, self.runs = label, fail, runs

    def make_node(self, x):
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        self.runs.append(self.label)
        if self.fail:
            raise RuntimeError(f"branch {self.label} ran")
        output_storage[0][0] = inputs[0].copy()


def test_only_the_taken_branch_runs():
    c, x = wt.bscalar("c"), wt.dvector("x")
    runs = []
    out = ifelse(c, Recorder("then", runs)(x) * 2, Recorder("else", runs)(x) - 1)
    f = function([c, x], out)
    value = np.arange(3.0)
    np.testing.assert_array_equal(f(1, value), value * 2)
    assert runs == ["then"]
    np.testing.assert_array_equal(f(0, value), value - 1)
    assert runs == ["then", "else"]


def test_the_untaken_branch_may_fail():
    c, x = wt.scalar("c", dtype="bool"), wt.dvector("x")
    bad = specify_shape(x, (7,))  # wrong at run time: raises only if computed
    boom = Recorder("boom", [], fail=True)(x)
    f = function([c, x], ifelse(c, x + 1, bad))
    g = function([c, x], ifelse(c, boom, x - 1))
    value = np.zeros(2)
    assert f(True, value).tolist() == [1, 1]
    assert g(False, value).tolist() == [-1, -1]
    with pytest.raises(AssertionError, match="SpecifyShape"):
        f(False, value)
    with pytest.raises(RuntimeError, match="branch boom ran"):
        g(True, value)


def test_several_outputs_are_lazy_too():
    c, x, y = wt.iscalar("c"), wt.dvector("x"), wt.dmatrix("y")
    runs = []
    then_values = [Recorder("then0", runs)(x), Recorder("then1", runs)(y)]
    else_values = [Recorder("else0", runs)(x) * 0, Recorder("else1", runs)(y).T]
    a, b = ifelse(c, then_values, else_values)
    f = function([c, x, y], [a, b])
    xv, yv = np.arange(3.0), np.arange(4.0).reshape(2, 2)
    out = f(5, xv, yv)  # nonzero is true
    np.testing.assert_array_equal(out[0], xv)
    np.testing.assert_array_equal(out[1], yv)
    assert sorted(runs) == ["then0", "then1"]
    runs.clear()
    out = f(0, xv, yv)
    np.testing.assert_array_equal(out[1], yv.T)
    assert sorted(runs) == ["else0", "else1"]


def test_a_non_lazy_vm_computes_both_branches():
    c, x = wt.bscalar("c"), wt.dvector("x")
    runs = []
    out = ifelse(c, Recorder("then", runs)(x), Recorder("else", runs)(x))
    f = function([c, x], out, mode=Mode(linker=VMLinker(lazy=False)))
    assert f(1, np.ones(2)).tolist() == [1, 1]
    assert sorted(runs) == ["else", "then"]


def test_shared_inputs_and_computed_conditions():
    x = wt.dvector("x")
    total = x.sum()
    out = ifelse(total > 0, total * x, -x)  # the condition shares work with a branch
    f = function([x], out)
    assert f(np.array([1.0, 2.0])).tolist() == [3.0, 6.0]
    assert f(np.array([-1.0, -2.0])).tolist() == [1.0, 2.0]


def test_the_thunk_protocol():
    """Called repeatedly, the thunk asks for the condition, then the taken branch."""
    c, a, b = wt.bscalar("c"), wt.dvector("a"), wt.dvector("b")
    node = IfElse(1).make_node(c, a, b)
    storage = {v: [None] for v in node.inputs + node.outputs}
    computed = {v: [0] for v in node.inputs + node.outputs}
    thunk = node.op.make_thunk(node, storage, computed, [])
    assert thunk.lazy and thunk.node is node
    assert thunk() == [0]
    storage[c][0], computed[c][0] = np.array(0, "int8"), 1
    assert thunk() == [2]  # the else value
    storage[b][0], computed[b][0] = np.array([4.0]), 1
    assert thunk() == []
    assert computed[node.outputs[0]][0] and storage[node.outputs[0]][0].tolist() == [4.0]
    assert storage[node.outputs[0]][0] is not storage[b][0]  # a copy, not a view


def test_as_view(evaluate):
    c, a, b = wt.bscalar("c"), wt.dvector("a"), wt.dvector("b")
    op = IfElse(1, as_view=True)
    out = op(c, a, b)
    assert op.view_map == {0: [1, 2]} and str(op) == "IfElse{n_outs=1, as_view}"
    av, bv = np.zeros(2), np.ones(2)
    assert evaluate(out, {c: 1, a: av, b: bv}) is av
    copied = evaluate(ifelse(c, a, b), {c: 1, a: av, b: bv})
    assert copied is not av and not np.shares_memory(copied, av)


def test_types():
    c = wt.bscalar("c")
    a = TensorType("float32", (3, None))("a")
    b = TensorType("float32", (3, 4))("b")
    out = ifelse(c, a, b)
    assert out.type == TensorType("float32", (3, None))  # static shapes merged
    assert ifelse(c, b, b).type == b.type
    assert ifelse(c, wt.fscalar(), 0.5).type.dtype == "float32"  # a number takes the other dtype
    assert ifelse(c, [a, b], [b, a], name="pick")[1].name == "pick_1"
    assert ifelse(c, a, b, name="pick").name == "pick"
    with pytest.raises(TypeError, match=r"output 0 has type TensorType\(float32, \(3, \?\)\) in "
                                        r"the then branch but TensorType\(float64, \(\?, \?\)\)"):
        ifelse(c, a, wt.dmatrix("d"))
    with pytest.raises(TypeError, match="output 1 has type"):
        ifelse(c, [a, a], [b, wt.fvector("v")])
    with pytest.raises(TypeError, match=r"condition must be a scalar \(a 0-d tensor\), got v"):
        ifelse(wt.bvector("v"), a, b)
    with pytest.raises(ValueError, match="then_branch has 2 values but else_branch has 1"):
        ifelse(c, [a, a], [b])
    with pytest.raises(TypeError, match="both as lists"):
        ifelse(c, [a], b)
    with pytest.raises(TypeError, match="takes a condition and 2 branch values"):
        IfElse(1)(c, a)
    with pytest.raises(TypeError, match="positive number of outputs"):
        IfElse(0)


def test_infer_shape_of_differing_branches(inferred_shape):
    c, a, b = wt.bscalar("c"), wt.dmatrix("a"), wt.dmatrix("b")
    out = ifelse(c, a, b)
    av, bv = np.zeros((2, 3)), np.zeros((4, 3))
    assert inferred_shape(out, {c: 1, a: av, b: bv}) == (2, 3)
    assert inferred_shape(out, {c: 0, a: av, b: bv}) == (4, 3)
    same = ifelse(c, a, a)
    shape = same.owner.op.infer_shape(None, same.owner, [(), (5, 6), (5, 6)])
    assert shape == [(5, 6)]


def test_connection_pattern_and_perform(evaluate):
    c, a, b = wt.bscalar("c"), wt.dvector("a"), wt.dmatrix("b")
    x, y = ifelse(c, [a, b], [a * 2, b])
    node = x.owner
    assert node.op.connection_pattern(node) == [[True, True], [True, False], [False, True],
                                                [True, False], [False, True]]
    assert evaluate(x, {c: 0, a: np.ones(2), b: np.ones((1, 1))}).tolist() == [2, 2]
    assert IfElse(2) == IfElse(2) and IfElse(2) != IfElse(2, as_view=True)


@pytest.mark.parametrize(
    ("case", "dtype"),
    [(c, d) for c in cases_ifelse.CASES for d in c.float_dtypes],
    ids=[f"{c.name}[{d}]" for c in cases_ifelse.CASES for d in c.float_dtypes],
)
def test_catalogue_cases(case, dtype, evaluate):
    inputs, outputs, values = case.graph(dtype)
    outs = outputs if isinstance(outputs, list) else [outputs]
    expected = case.expected(dtype)
    expected = expected if isinstance(expected, list) else [expected]
    results = function(inputs, outs)(*values)
    for var, got, want in zip(outs, results, expected):
        assert got.dtype == want.dtype and var.type.dtype == got.dtype
        np.testing.assert_allclose(got, want)
    eager = evaluate(outs, dict(zip(inputs, values)))
    for got, want in zip(eager, expected):
        np.testing.assert_allclose(got, want)


def test_pprint_writes_ifelse_as_a_call_with_its_branches():
    c, x, y = wt.dscalar("c"), wt.dvector("x"), wt.dvector("y")
    assert pprint(ifelse(c > 0, x, y)) == "ifelse(c > 0.0, x, y)"
    first, second = ifelse(c > 0, [x, y], [y, x])
    assert pprint(second) == "ifelse(c > 0.0, (x, y), (y, x))[1]"
