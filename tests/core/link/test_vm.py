"""The Python linker and its VMs, on Types and Ops of the test's own (floats and
float64 vectors), so that only the graph core and the linker are exercised."""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.graph import Apply, Constant, FunctionGraph, Op, Thunk, Type
from workbench.core.link import Container, Linker, LoopVM, StackVM, VMLinker

# -- a tiny type system ---------------------------------------------------------------


class DoubleType(Type):
    """Seed 000's DoubleType: values are Python floats."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict:
            if isinstance(x, float):
                return x
            raise TypeError("expected a float!")
        if allow_downcast:
            return float(x)
        x_float = float(x)
        if x_float == x:
            return x_float
        raise TypeError(f"The double type cannot accurately represent value {x}")

    def __str__(self):
        return "double"


double = DoubleType()


class VectorType(Type):
    """1-d float64 arrays."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict and not (isinstance(x, np.ndarray) and x.dtype == np.float64):
            raise TypeError("expected a float64 array")
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1:
            raise ValueError(f"expected 1 dimension, got {x.ndim}")
        return x

    def may_share_memory(self, a, b):
        return np.may_share_memory(a, b)

    def __str__(self):
        return "vector"


vector = VectorType()


class Binary(Op):
    """A binary Op from a Python function; the output type is the first input's."""

    __props__ = ("name_",)

    def __init__(self, name_, fn, log=None):
        self.name_ = name_
        self.fn = fn
        self.log = log

    def make_node(self, a, b):
        return Apply(self, [a, b], [a.type()])

    def perform(self, node, inputs, output_storage):
        if self.log is not None:
            self.log.append(self.name_)
        output_storage[0][0] = self.fn(*inputs)

    def __str__(self):
        return self.name_


add = Binary("add", lambda a, b: a + b)
mul = Binary("mul", lambda a, b: a * b)
div = Binary("div", lambda a, b: a / b)


class Boom(Op):
    """Fails when run: stands for a branch that must not be computed."""

    __props__ = ()

    def make_node(self, a):
        return Apply(self, [a], [a.type()])

    def perform(self, node, inputs, output_storage):
        raise AssertionError("the untaken branch was computed")


boom = Boom()


class IfElse(Op):
    """A lazy if-else of the test's own: asks for the condition, then one branch."""

    __props__ = ()
    lazy = True

    def make_node(self, cond, then, other):
        return Apply(self, [cond, then, other], [then.type()])

    def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
        ins = [storage_map[v] for v in node.inputs]
        computed = [compute_map[v] for v in node.inputs]
        out = storage_map[node.outputs[0]]
        out_computed = compute_map[node.outputs[0]]

        def thunk():
            if not computed[0][0]:
                return [0]
            branch = 1 if ins[0][0] else 2
            if not computed[branch][0]:
                return [branch]
            out[0] = ins[branch][0]
            out_computed[0] = 1
            return []

        return Thunk(thunk, node, ins, [out], lazy=True)


ifelse = IfElse()


def link(inputs, outputs, **options):
    fg = FunctionGraph(inputs, outputs)
    linker = VMLinker(**options).accept(fg)
    run, in_cells, out_cells, thunks, order = linker.make_thunk()
    return fg, linker, run, in_cells, out_cells


def call(linked, *values):
    fg, linker, run, in_cells, out_cells = linked
    for cell, value in zip(in_cells, values):
        cell[0] = value
    run()
    return [cell[0] for cell in out_cells]


# -- the loop VM ---------------------------------------------------------------------


def test_loop_vm_computes_and_keeps_constants():
    x, y = double("x"), double("y")
    out = add(mul(x, y), Constant(double, 1.5))
    linked = link([x, y], [out])
    assert isinstance(linked[1].vm, LoopVM)
    assert call(linked, 2.0, 3.0) == [7.5]
    assert call(linked, 1.0, 1.0) == [2.5]


def test_intermediates_are_freed_and_outputs_survive():
    x, y = double("x"), double("y")
    t = mul(x, y)
    u = add(t, x)
    out = add(u, y)
    fg, linker, run, in_cells, out_cells = linked = link([x, y], [out, t])
    assert call(linked, 2.0, 3.0) == [11.0, 6.0]
    vm = linker.vm
    u_new = fg.outputs[0].owner.inputs[0]
    assert vm.storage_map[u_new] == [None]
    assert vm.compute_map[u_new] == [2]
    # outputs (even those used by other nodes) and inputs are never freed
    for var in fg.outputs:
        assert vm.storage_map[var][0] is not None
        assert vm.compute_map[var][0] == 1
    assert [vm.storage_map[v][0] for v in fg.inputs] == [2.0, 3.0]
    # a second run gives the same result
    assert call(linked, 2.0, 3.0) == [11.0, 6.0]


def test_allow_gc_false_keeps_intermediates():
    x = double("x")
    mid = mul(x, x)
    fg, linker, *_ = linked = link([x], [add(mid, x)], allow_gc=False)
    assert call(linked, 3.0) == [12.0]
    kept = fg.outputs[0].owner.inputs[0]
    assert linker.vm.storage_map[kept] == [9.0]
    assert linker.vm.compute_map[kept] == [True]


def test_unused_output_of_a_node_is_freed():
    class Split(Op):
        __props__ = ()

        def make_node(self, a):
            return Apply(self, [a], [a.type(), a.type()])

        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = inputs[0] + 1
            output_storage[1][0] = inputs[0] - 1

    x = double("x")
    first, second = Split()(x)
    fg, linker, *_ = linked = link([x], [first])
    assert call(linked, 1.0) == [2.0]
    unused = fg.outputs[0].owner.outputs[1]
    assert linker.vm.storage_map[unused] == [None]
    assert linker.vm.compute_map[unused] == [2]


def test_no_recycling_cells_are_emptied_before_each_run():
    seen = []

    class Remember(Op):
        __props__ = ()

        def make_node(self, a):
            return Apply(self, [a], [a.type()])

        def perform(self, node, inputs, output_storage):
            seen.append(output_storage[0][0])
            output_storage[0][0] = inputs[0] * 2

    x = double("x")
    fg = FunctionGraph([x], [Remember()(x)])
    recycled = VMLinker().accept(fg).make_thunk()
    fresh = VMLinker().accept(fg, no_recycling=fg.outputs).make_thunk()
    for run, in_cells, *_ in (recycled, recycled, fresh, fresh):
        in_cells[0][0] = 1.0
        run()
    assert seen == [None, 2.0, None, None]


def test_storage_can_be_given():
    x = double("x")
    fg = FunctionGraph([x], [add(x, x)])
    cell = [4.0]
    run, in_cells, out_cells, thunks, order = VMLinker().accept(fg).make_thunk(
        input_storage=[cell])
    assert in_cells[0] is cell
    run()
    assert out_cells[0][0] == 8.0
    assert [t.node for t in thunks] == order
    with pytest.raises(ValueError, match="input_storage"):
        VMLinker().accept(fg).make_thunk(input_storage=[])


def test_output_that_is_an_input_or_a_constant():
    x = double("x")
    c = Constant(double, 2.0)
    linked = link([x], [x, c])
    assert call(linked, 5.0) == [5.0, 2.0]


def test_accept_rebinds_through_a_fresh_linker():
    x = double("x")
    fg1 = FunctionGraph([x], [add(x, x)])
    fg2 = FunctionGraph([x], [mul(x, x)])
    linker = VMLinker(allow_gc=False)
    assert linker.accept(fg1) is linker
    other = linker.accept(fg2)
    assert other is not linker and other.fgraph is fg2 and other.allow_gc is False
    with pytest.raises(NotImplementedError):
        Linker().accept(fg1).make_thunk()


def test_bare_callable_thunks_are_wrapped():
    class Plain(Op):
        __props__ = ()

        def make_node(self, a):
            return Apply(self, [a], [a.type()])

        def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
            src, dst = storage_map[node.inputs[0]], storage_map[node.outputs[0]]

            def thunk():
                dst[0] = -src[0]

            return thunk

    x = double("x")
    linked = link([x], [add(Plain()(x), x)])
    assert call(linked, 2.0) == [0.0]


# -- errors ----------------------------------------------------------------------------


def test_thunk_error_keeps_type_and_points_at_user_line():
    x, y = vector("x"), vector("y")
    line = sys._getframe().f_lineno + 1
    bad = div(x, y)
    linked = link([x, y], [add(bad, x)])
    with pytest.raises(ValueError, match="operands could not be broadcast") as info:
        call(linked, np.ones(3), np.ones(4))
    note = "\n".join(info.value.__notes__)
    assert "Apply node that caused the error: div(x, y)" in note
    assert "Input types: [vector, vector]" in note
    assert "shape (3,) and dtype float64" in note and "shape (4,)" in note
    assert f"{__file__}:{line}" in note
    assert info.value.workbench_node.op is div


@pytest.mark.parametrize("lazy", [False, True])
def test_error_in_either_vm_is_annotated_and_storage_dropped(lazy):
    x = double("x")
    mid = mul(x, x)
    linked = link([x], [add(boom(mid), x)], lazy=lazy)
    linker = linked[1]
    assert isinstance(linker.vm, StackVM if lazy else LoopVM)
    with pytest.raises(AssertionError, match="untaken") as info:
        call(linked, 3.0)
    assert "Apply node that caused the error: Boom" in "\n".join(info.value.__notes__)
    assert all(linker.vm.storage_map[v][0] is None for v in linker.vm.intermediates)
    # the error leaves the VM usable
    with pytest.raises(AssertionError):
        call(linked, 3.0)


# -- the lazy (stack) VM -----------------------------------------------------------------


def test_only_the_taken_branch_is_computed():
    log = []
    logged_add = Binary("add", lambda a, b: a + b, log)
    c, x = double("c"), double("x")
    out = ifelse(c, logged_add(x, x), boom(x))
    linked = link([c, x], [out])
    assert isinstance(linked[1].vm, StackVM)
    assert call(linked, 1.0, 2.0) == [4.0]
    assert log == ["add"]
    flipped = link([c, x], [ifelse(c, boom(x), logged_add(x, x))])
    assert call(flipped, 0.0, 5.0) == [10.0]


def test_loop_vm_forced_on_lazy_graph_runs_both_branches():
    c, x = double("c"), double("x")
    strict = link([c, x], [ifelse(c, add(x, x), boom(x))], lazy=False)
    assert isinstance(strict[1].vm, LoopVM)
    with pytest.raises(AssertionError, match="untaken"):
        call(strict, 1.0, 2.0)
    both_fine = link([c, x], [ifelse(c, add(x, x), mul(x, x))], lazy=False)
    assert call(both_fine, 0.0, 3.0) == [9.0]


def test_nested_lazy_and_shared_subexpressions():
    c1, c2, x = double("c1"), double("c2"), double("x")
    shared_sub = mul(x, x)
    inner = ifelse(c2, add(shared_sub, x), boom(x))
    out = ifelse(c1, add(inner, shared_sub), boom(shared_sub))
    linked = link([c1, c2, x], [out, shared_sub])
    assert call(linked, 1.0, 1.0, 3.0) == [21.0, 9.0]
    with pytest.raises(AssertionError):
        call(linked, 1.0, 0.0, 3.0)
    assert call(linked, 1.0, 1.0, 2.0) == [10.0, 4.0]


def test_stack_vm_frees_intermediates_including_untaken_branch_inputs():
    c, x = double("c"), double("x")
    sq = mul(x, x)  # read by both branches; only the taken one runs
    taken = add(sq, x)
    out = ifelse(c, taken, boom(sq))
    fg, linker, *_ = linked = link([c, x], [out])
    assert call(linked, 1.0, 3.0) == [12.0]
    vm = linker.vm
    for var in vm.intermediates:
        assert vm.storage_map[var] == [None]
        assert vm.compute_map[var][0] in (0, 2)
    node = fg.outputs[0].owner
    assert vm.compute_map[node.inputs[1]] == [2]  # the taken branch: computed, freed
    assert vm.compute_map[node.inputs[2]] == [0]  # the untaken branch: never computed
    assert vm.compute_map[fg.outputs[0]] == [1]


def test_lazy_thunk_asking_for_computed_input_is_an_error():
    class Greedy(IfElse):
        def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
            ins = [storage_map[v] for v in node.inputs]
            return Thunk(lambda: [0], node, ins, [storage_map[node.outputs[0]]], lazy=True)

    c, x = double("c"), double("x")
    linked = link([c, x], [add(Greedy()(c, x, x), x)])
    with pytest.raises(RuntimeError, match="already computed"):
        call(linked, 1.0, 2.0)


def test_stack_vm_on_a_graph_without_lazy_nodes():
    x, y = double("x"), double("y")
    t = mul(x, y)
    linked = link([x, y], [add(t, t), t], lazy=True)
    assert isinstance(linked[1].vm, StackVM)
    assert call(linked, 2.0, 3.0) == [12.0, 6.0]


# -- deep graphs -------------------------------------------------------------------------


@pytest.mark.parametrize("lazy", [False, True])
def test_chain_of_20000_nodes_runs_without_recursion(lazy):
    x = double("x")
    one = Constant(double, 1.0)
    out = x
    for _ in range(20_000):
        out = add(out, one)
    linked = link([x], [out], lazy=lazy)
    assert call(linked, 0.5) == [20_000.5]
    vm = linked[1].vm
    assert isinstance(vm, StackVM if lazy else LoopVM)
    assert sum(cell[0] is not None for cell in vm.storage_map.values()) == 3  # x, 1, out


def test_deep_chain_of_lazy_nodes():
    c, x = double("c"), double("x")
    out = x
    for _ in range(5_000):
        out = ifelse(c, add(out, x), boom(out))
    linked = link([c, x], [out])
    assert call(linked, 1.0, 1.0) == [5_001.0]


# -- profiling and containers ------------------------------------------------------------


def test_profile_records_time_per_node():
    x = double("x")
    fg, linker, *_ = linked = link([x], [add(mul(x, x), x)], profile=True)
    call(linked, 1.0)
    call(linked, 2.0)
    assert set(linker.vm.node_calls.values()) == {2}
    assert all(t >= 0 for t in linker.vm.node_time.values())
    assert set(linker.vm.node_time) == set(fg.apply_nodes)


def test_container_filters_values():
    box = Container(double, name="box")
    box.value = 3
    assert box.storage == [3.0] and isinstance(box.value, float)
    with pytest.raises(TypeError):
        box.value = 2.5j
    frozen = Container(double, [1.0], readonly=True)
    with pytest.raises(ValueError, match="read-only"):
        frozen.value = 2.0


# -- property: both VMs agree with direct evaluation ---------------------------------------

_ops = {"add": (add, lambda a, b: a + b), "mul": (mul, lambda a, b: a * b)}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(_ops)), st.integers(0, 50),
                          st.integers(0, 50)), min_size=1, max_size=25),
       st.lists(st.integers(-3, 3), min_size=2, max_size=2))
def test_random_dags_agree_with_python(program, values):
    inputs = [double("a"), double("b")]
    symbols, numbers = list(inputs), [float(v) for v in values]
    for name, i, j in program:
        op, fn = _ops[name]
        i, j = i % len(symbols), j % len(symbols)
        symbols.append(op(symbols[i], symbols[j]))
        numbers.append(fn(numbers[i], numbers[j]))
    outputs = symbols[-2:] if len(symbols) > 3 else symbols[-1:]
    expected = numbers[-len(outputs):]
    for lazy in (False, True):
        linked = link(inputs, outputs, lazy=lazy)
        assert call(linked, *numbers[:2]) == expected
        vm = linked[1].vm
        assert all(vm.storage_map[v][0] is None for v in vm.intermediates)
