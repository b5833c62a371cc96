"""`function`: compile-time checks, calling conventions, outputs, aliasing, updates,
givens, modes and Variable.eval, on the tensor library."""

import importlib
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench.core.tensor as wt
from workbench.core.compile import (
    Function,
    In,
    LinkerUnavailableError,
    MissingInputError,
    Mode,
    Out,
    UnusedInputError,
    UnusedInputWarning,
    function,
    get_linker,
    get_mode,
    shared,
)
from workbench.core.compile.mode import available_linkers, default_linker, register_mode
from workbench.core.graph import Apply, FunctionGraph, Op, Thunk
from workbench.core.link import LoopVM, StackVM, VMLinker


class ViewOf(Op):
    """An identity that returns its input array itself, as declared by view_map."""

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0]


view_of = ViewOf()


class Fail(Op):
    """Raises when run (a branch that must not be taken)."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        raise AssertionError("the untaken branch was computed")


class IfElse(Op):
    """A lazy if-else of the test's own."""

    __props__ = ()
    lazy = True

    def make_node(self, cond, then, other):
        return Apply(self, [cond, then, other], [then.type()])

    def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
        ins = [storage_map[v] for v in node.inputs]
        done = [compute_map[v] for v in node.inputs]
        out, out_done = storage_map[node.outputs[0]], compute_map[node.outputs[0]]

        def thunk():
            if not done[0][0]:
                return [0]
            branch = 1 if ins[0][0] else 2
            if not done[branch][0]:
                return [branch]
            out[0] = ins[branch][0].copy()
            out_done[0] = 1
            return []

        return Thunk(thunk, node, ins, [out], lazy=True)


# -- seed 002: constants, missing inputs -------------------------------------------------


def test_constant_plus_fscalar():
    a = wt.constant(1.5)
    b = wt.fscalar("b")
    c = a + b
    f = function([b], [c])
    assert 4.0 == f(2.5)[0]
    assert function([b], c)(2.5) == 4.0


def test_output_needing_an_input_not_given_is_a_missing_input_error():
    a = wt.constant(1.5)
    line = sys._getframe().f_lineno + 1
    b = wt.fscalar("b")
    c = a + b
    x = wt.dscalar("x")
    with pytest.raises(MissingInputError, match="needs input variable b") as info:
        function([x], [c + x], on_unused_input="ignore")
    assert info.value.variable is b
    assert f"{__file__}:{line}" in str(info.value)
    with pytest.raises(MissingInputError):
        function([], c)


def test_constant_as_input_is_refused():
    a = wt.constant(1.5)
    b = wt.fscalar("b")
    with pytest.raises(TypeError, match=r"is a Constant and cannot be an input"):
        function([a, b], [a + b])
    with pytest.raises(TypeError, match="Constant"):
        function([a], [a + b])


def test_duplicate_and_shared_inputs_are_refused():
    x = wt.dvector("x")
    with pytest.raises(ValueError, match="given twice"):
        function([x, x], x * 2)
    s = shared(np.zeros(2))
    with pytest.raises(TypeError, match="shared variable"):
        function([s], s * 2)
    with pytest.raises(TypeError, match="list of Variables"):
        function(x, x * 2)
    with pytest.raises(TypeError, match="must be a Variable"):
        function([x], [x, 3])


# -- calling --------------------------------------------------------------------------------


def test_positional_keyword_and_default_arguments():
    x, y, z = wt.dscalar("x"), wt.dscalar("y"), wt.dscalar("z")
    f = function([x, In(y, value=10.0), In(z, value=100.0, name="zed")], x + y + z, name="f")
    assert f(1) == 111
    assert f(1, 2) == 103
    assert f(1, zed=3) == 14
    assert f(y=2, x=1) == 103
    with pytest.raises(TypeError, match="function 'f' takes 3 argument"):
        f(1, 2, 3, 4)
    with pytest.raises(TypeError, match="function 'f' is missing argument 0 \\('x'\\)"):
        f(y=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'w'"):
        f(1, w=2)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        f(1, x=2)


def test_wrong_count_names_unnamed_function_by_location():
    x = wt.dscalar("x")
    f = function([x], x * 2)
    with pytest.raises(TypeError, match=r"function compiled at .*test_function.py"):
        f()


def test_bad_inputs_name_the_input_and_keep_the_error_class():
    x = wt.tensor("float64", shape=(None, 3), name="x")
    f = function([x], x * 2, name="f")
    with pytest.raises(ValueError) as info:
        f(np.ones((2, 4)))
    assert str(info.value) == (
        "Bad input argument 0 ('x') to function 'f': expected an array of shape (?, 3) for "
        "TensorType(float64, (?, 3)), got shape (2, 4)"
    )  # said once, not restated around the type's own message
    y = wt.fvector("y")
    g = function([y], y * 2, name="g")
    with pytest.raises(TypeError, match=r"Bad input argument 0 \('y'\) to function 'g'.*float64"):
        g(np.ones(3))
    with pytest.raises(TypeError, match="Bad input argument 0"):
        g(y=np.ones(3))
    assert function([y], y * 2, allow_input_downcast=True)(np.ones(3)).dtype == np.float32
    strict = function([In(y, strict=True)], y * 2)
    with pytest.raises(TypeError, match="strict"):
        strict([1.0, 2.0])
    assert strict(np.ones(2, dtype=np.float32)).tolist() == [2.0, 2.0]


def test_trust_input_skips_filtering():
    x = wt.fvector("x")
    f = function([x], x + 1, trust_input=True)
    assert f.trust_input
    arr = np.arange(3, dtype=np.float32)
    assert f(arr).tolist() == [1, 2, 3]
    assert f.input_storage[0].storage[0] is arr
    f.trust_input = False
    f(arr.tolist())
    assert isinstance(f.input_storage[0].storage[0], np.ndarray)


# -- outputs ---------------------------------------------------------------------------------


def test_single_list_dict_and_no_outputs():
    x = wt.dscalar("x")
    assert function([x], x * 2)(3) == 6
    assert function([x], [x * 2, x + 1])(3) == [6, 4]
    assert function([x], (x * 2,))(3) == [6]
    result = function([x], {"double": x * 2, "inc": x + 1})(3)
    assert result == {"double": 6, "inc": 4} and list(result) == ["double", "inc"]
    assert function([x], None, on_unused_input="ignore")(3) == []


def test_outputs_are_fresh_arrays_each_call():
    x = wt.dvector("x")
    f = function([x], x * 2)
    a = f(np.ones(3))
    b = f(np.ones(3))
    assert a is not b
    a[0] = 100
    assert b[0] == 2


def test_outputs_never_alias_inputs_unless_borrowed():
    x = wt.dvector("x")
    data = np.arange(3.0)
    out = function([x], view_of(x))(data)
    assert out is not data and not np.may_share_memory(out, data)
    out = function([x], x)(data)
    assert out is not data and out.tolist() == [0, 1, 2]
    borrowed = function([x], Out(view_of(x), borrow=True))(data)
    assert np.may_share_memory(borrowed, data)


def test_duplicate_and_view_outputs_do_not_alias_each_other():
    x = wt.dvector("x")
    y = x * 2
    first, second, view = function([x], [y, y, view_of(y)])(np.ones(2))
    assert not np.may_share_memory(first, second)
    assert not np.may_share_memory(first, view)
    first[0] = 5
    assert second[0] == 2 and view[0] == 2


def test_constant_outputs_are_copied():
    c = wt.constant(np.arange(3.0))
    f = function([], [c, view_of(c)])
    first, view = f()
    first[0] = 99
    view[1] = 99
    assert f()[0].tolist() == [0, 1, 2]
    assert c.data.tolist() == [0, 1, 2]


# -- updates and shared variables -------------------------------------------------------------


def test_updates_apply_across_calls_and_set_value_is_seen():
    count = shared(np.array(0.0), name="count")
    step = wt.dscalar("step")
    f = function([step], count, updates={count: count + step})
    assert f(1) == 0
    assert f(2) == 1
    assert count.get_value() == 3
    count.set_value(np.array(10.0))
    assert f(1) == 10
    assert count.get_value() == 11
    assert len(f.maker.inputs) == 2 and f.maker.inputs[1].implicit


def test_all_updates_are_computed_before_any_is_applied():
    a = shared(np.array(1.0), name="a")
    b = shared(np.array(2.0), name="b")
    swap = function([], [], updates=[(a, b), (b, a)])
    swap()
    assert (a.get_value(), b.get_value()) == (2.0, 1.0)
    swap()
    assert (a.get_value(), b.get_value()) == (1.0, 2.0)


def test_update_values_do_not_alias_inputs_or_outputs():
    s = shared(np.zeros(3), name="s")
    x = wt.dvector("x")
    data = np.ones(3)
    y = x * 2
    out = function([x], y, updates={s: y})(data)
    assert not np.may_share_memory(out, s.get_value(borrow=True))
    function([x], [], updates={s: x})(data)
    assert not np.may_share_memory(s.get_value(borrow=True), data)


def test_update_type_errors_name_the_shared_variable():
    w = shared(np.zeros((2, 2)), name="W")
    v = wt.fvector("v")
    with pytest.raises(TypeError, match="update of shared variable W"):
        function([v], [], updates={w: v})
    with pytest.raises(TypeError, match="can only change shared variables"):
        function([v], [], updates={v: v * 2})


def test_shared_used_by_two_functions():
    s = shared(np.array(1.0), name="s")
    inc = function([], [], updates={s: s + 1})
    read = function([], s * 10)
    inc()
    inc()
    assert read() == 30


def test_in_with_update_accumulates_and_implicit_inputs():
    x = wt.dscalar("x")
    total = wt.dscalar("total")
    acc = function([x, In(total, value=0.0, update=total + x)], total + x)
    assert acc(1) == 1
    assert acc(2) == 3
    assert acc(3, 100) == 103  # the update is computed from the value given
    assert acc(0) == 103
    k = wt.dscalar("k")
    scaled = function([x, In(k, value=3.0, implicit=True)], x * k)
    assert scaled(2) == 6
    with pytest.raises(TypeError, match="takes 1 argument"):
        scaled(2, 4)


# -- givens, unused inputs, cut graphs ---------------------------------------------------------


def test_givens_substitute_variables():
    x, y = wt.dscalar("x"), wt.dscalar("y")
    out = x * 3
    assert function([y], out, givens={x: y + 1})(1) == 6
    assert function([y], out, givens=[(x, y * 2)])(1) == 6
    s = shared(np.array(5.0), name="s")
    assert function([y], s + 1, givens={s: y})(1) == 2
    assert function([], out, givens={x: s})() == 15
    with pytest.raises(TypeError, match="givens replaces x"):
        function([], out, givens={x: wt.dvector("v")})


def test_on_unused_input_modes():
    x, y = wt.dscalar("x"), wt.dscalar("y")
    with pytest.raises(UnusedInputError, match=r"input 1 \(y\) is not used"):
        function([x, y], x * 2)
    with pytest.warns(UnusedInputWarning, match="y"):
        f = function([x, y], x * 2, on_unused_input="warn")
    assert f(1, 2) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert function([x, y], x * 2, on_unused_input="ignore")(1, 2) == 2
    with pytest.raises(ValueError, match="on_unused_input"):
        function([x], x, on_unused_input="sometimes")


def test_intermediate_variable_as_input_cuts_the_graph():
    x = wt.dscalar("x")
    y = x * 2
    z = y + 1
    f = function([y], z)
    assert f(10) == 11
    assert x not in set(f.maker.fgraph.inputs)


def test_function_frees_intermediates_and_keeps_outputs():
    x = wt.dvector("x")
    mid = x * 2
    f = function([x], [mid + 1, x - 1], mode="FAST_COMPILE")  # no fusion
    f(np.ones(2))
    fg, vm = f.maker.fgraph, f.vm
    freed = fg.outputs[0].owner.inputs[0]
    assert vm.storage_map[freed] == [None] and vm.compute_map[freed] == [2]
    assert [c.storage[0].tolist() for c in f.output_storage] == [[3, 3], [0, 0]]


# -- errors at run time, lazy graphs ------------------------------------------------------------


def test_runtime_errors_point_at_the_users_line():
    x, y = wt.dvector("x"), wt.dvector("y")
    line = sys._getframe().f_lineno + 1
    z = x + y
    f = function([x, y], z * 2, mode="FAST_COMPILE")  # no fusion
    with pytest.raises(ValueError) as info:
        f(np.ones(3), np.ones(4))
    note = "\n".join(getattr(info.value, "__notes__", []))
    assert f"{__file__}:{line}" in note
    assert "shape (3,)" in note and "shape (4,)" in note


def test_lazy_graph_computes_only_the_taken_branch():
    c, x = wt.dscalar("c"), wt.dvector("x")
    f = function([c, x], IfElse()(c, x * 2, Fail()(x)))
    assert isinstance(f.vm, StackVM)
    assert f(1, np.ones(2)).tolist() == [2, 2]
    with pytest.raises(AssertionError, match="untaken"):
        f(0, np.ones(2))


# -- modes, linkers, maker ----------------------------------------------------------------------


def test_modes_and_linkers():
    assert {get_mode(n).name for n in ("FAST_RUN", "FAST_COMPILE", "DEBUG")} == {
        "FAST_RUN", "FAST_COMPILE", "DEBUG"}
    assert get_mode(None) is get_mode("FAST_RUN")
    with pytest.raises(ValueError, match="unknown mode"):
        get_mode("TURBO")
    x = wt.dscalar("x")
    for linker in ("c", "gpu"):
        if linker in available_linkers():
            assert function([x], x * 2, linker=linker)(2) == 4
            continue
        with pytest.raises(LinkerUnavailableError, match=f"linker '{linker}'"):
            function([x], x * 2, linker=linker)
        with pytest.raises(NotImplementedError):
            function([x], x * 2, mode=Mode(linker=linker))
    with pytest.raises(ValueError, match="unknown linker"):
        get_linker("fortran")
    assert "py" in available_linkers() and default_linker() in ("c", "py")
    assert isinstance(get_linker(None), VMLinker)
    for mode in ("FAST_RUN", "DEBUG", Mode()):
        assert function([x], x * 2, mode=mode, linker=None)(2) == 4


def test_mode_rewriter_sees_the_function_graph():
    seen = []
    x = wt.dscalar("x")
    register_mode("RECORDING", Mode(rewriter=seen.append, name="RECORDING"))
    f = function([x], x * 2, mode="RECORDING")
    assert seen == [f.maker.fgraph]
    assert isinstance(f.maker.fgraph, FunctionGraph)


def test_maker_attributes_copy_and_profile():
    x = wt.dscalar("x")
    s = shared(np.array(1.0), name="s")
    f = function([x], Out(x + s), updates={s: s * 2}, name="f", profile=True)
    assert isinstance(f, Function) and f.name == "f" and "f" in repr(f)
    assert [i.variable.name for i in f.maker.inputs] == ["x", "s"]
    assert len(f.maker.outputs) == 1 and isinstance(f.maker.outputs[0], Out)
    assert len(f.input_storage) == 2 and len(f.output_storage) == 2
    assert isinstance(f.vm, LoopVM)
    assert f(1) == 2
    assert {row.calls for row in f.profile.by_node()} == {1}
    g = f.copy()
    assert g is not f and g(1) == 3  # s was doubled by f's update
    assert s.get_value() == 4
    assert function([x], x * 2).profile is None


# -- Variable.eval --------------------------------------------------------------------------------


def test_eval_compiles_once(monkeypatch):
    function_module = importlib.import_module("workbench.core.compile.function")
    compiled = []
    real = function_module.function

    def counting(*args, **kwargs):
        compiled.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(function_module, "function", counting)
    x = wt.dscalar("x")
    y = x * 2 + 1
    assert y.eval({x: 1.0}) == 3
    assert y.eval({x: 2.0}) == 5
    assert len(compiled) == 1
    s = shared(np.array(4.0))
    z = s * 2
    assert z.eval() == 8
    s.set_value(np.array(5.0))
    assert z.eval() == 10
    assert len(compiled) == 2


@pytest.mark.parametrize("lazy", [False, True])
def test_function_on_a_chain_of_20000_nodes(lazy):
    x = wt.dscalar("x")
    out = x
    for _ in range(20_000):
        out = out + 1.0
    f = function([x], out, linker=VMLinker(lazy=lazy))
    assert isinstance(f.vm, StackVM if lazy else LoopVM)
    assert f(0.5) == 20_000.5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["x", "view x", "y", "view y", "x*2", "view x*2"]),
                          st.booleans()), min_size=1, max_size=5))
def test_returned_values_never_alias_unless_borrowed(picks):
    x, y = wt.dvector("x"), wt.dvector("y")
    doubled = x * 2
    exprs = {"x": x, "view x": view_of(x), "y": y, "view y": view_of(y), "x*2": doubled,
             "view x*2": view_of(doubled)}
    f = function([x, y], [Out(exprs[name], borrow=b) for name, b in picks],
                 on_unused_input="ignore")
    xs, ys = np.arange(3.0), np.arange(3.0) + 10
    values = f(xs, ys)
    for k, ((_, borrow), value) in enumerate(zip(picks, values)):
        if borrow:
            continue
        assert not np.may_share_memory(value, xs) and not np.may_share_memory(value, ys)
        for j, other in enumerate(values):
            if j != k:
                assert not np.may_share_memory(value, other)
