"""DEBUG mode's linker: every node runs through `perform` and C, and the bugs an Op can
hide in a normal run are caught and named (C differing from perform, an input modified
without destroy_map, an output aliasing an input without view_map, a result that depends
on stale output storage, an output of the wrong Type).

The seeded bad Ops below are 1-d float64 Ops with their own C (the COp contract); their
`perform` is right, their C is wrong in one way each.
"""

from __future__ import annotations

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core.compile.mode import Mode, RewriteQuery, available_linkers, get_mode
from workbench.core.graph.basic import Apply
from workbench.core.graph.op import Op
from workbench.core.link.c.compiler import has_compiler
from workbench.core.link.c.debug import DebugLinker
from workbench.core.link.c.interface import COp
from workbench.core.link.debugmode import (
    BadDestroyMapError,
    BadImplementationError,
    BadViewMapError,
    DebugModeError,
    InvalidOutputError,
    StaleOutputError,
    layout_copy,
)

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

DVEC = wt.TensorType("float64", (None,))

# C fragments shared by the seeded Ops (1-d float64 only)
_ALLOC = """
npy_intp n = PyArray_DIMS(i0)[0];
if (!o0 || PyArray_DIMS(o0)[0] != n || !PyArray_ISWRITEABLE(o0)) {{
  Py_XDECREF(o0);
  o0 = (PyArrayObject*)PyArray_{kind}(1, &n, NPY_FLOAT64, 0);
  if (!o0) {fail}
}}
"""
_X = "*(double*)PyArray_GETPTR1(i0, k)"
_Y = "*(double*)PyArray_GETPTR1(o0, k)"


class TwiceOp(Op, COp):
    """y = 2 * x, in perform and (correctly) in C; subclasses break the C."""

    __props__ = ()

    def make_node(self, x):
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [DVEC()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = 2 * inputs[0]

    def c_code_cache_version(self):
        return (1,)

    def alloc(self, sub, kind="EMPTY"):
        return _ALLOC.format(kind=kind, fail=sub["fail"])

    def c_code(self, node, name, inputs, outputs, sub):
        return self.alloc(sub) + f"for (npy_intp k = 0; k < n; k++) {_Y} = 2 * {_X};\n"


class WrongC(TwiceOp):
    def c_code(self, node, name, inputs, outputs, sub):
        return self.alloc(sub) + f"for (npy_intp k = 0; k < n; k++) {_Y} = {_X} + 2;\n"


class ScribblesOnInputC(TwiceOp):
    """Right values, but the C zeroes its input afterwards (no destroy_map)."""

    def c_code(self, node, name, inputs, outputs, sub):
        return (super().c_code(node, name, inputs, outputs, sub)
                + f"for (npy_intp k = 0; k < n; k++) {_X} = 0;\n")


class StaleC(TwiceOp):
    """Accumulates into its output storage: right only when the storage is fresh zeros."""

    def c_code(self, node, name, inputs, outputs, sub):
        return (self.alloc(sub, kind="ZEROS")
                + f"for (npy_intp k = 0; k < n; k++) {_Y} += 2 * {_X};\n")


class AliasingC(Op, COp):
    """Identity whose C returns the input object itself, without a view_map."""

    __props__ = ()

    def make_node(self, x):
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [DVEC()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0].copy()

    def c_code_cache_version(self):
        return (1,)

    def c_code(self, node, name, inputs, outputs, sub):
        return "Py_XDECREF(o0); o0 = i0; Py_INCREF(o0);\n"


class ScaleInplaceC(TwiceOp):
    """x *= 2 in place, declared in destroy_map: DEBUG mode accepts it."""

    destroy_map = {0: [0]}

    def perform(self, node, inputs, output_storage):
        x = inputs[0]
        x *= 2
        output_storage[0][0] = x

    def c_code(self, node, name, inputs, outputs, sub):
        return ("npy_intp n = PyArray_DIMS(i0)[0];\n"
                f"for (npy_intp k = 0; k < n; k++) {_X} *= 2;\n"
                "Py_XDECREF(o0); o0 = i0; Py_INCREF(o0);\n")


class ViewPerform(Op):
    """A Python-only Op returning a view of its input without declaring it."""

    __props__ = ()

    def make_node(self, x):
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [DVEC()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0][::-1]


class StalePerform(ViewPerform):
    """Copies x into its output, but accumulates when it gets previous storage."""

    def perform(self, node, inputs, output_storage):
        old = output_storage[0][0]
        if old is not None and old.shape == inputs[0].shape:
            old += inputs[0]
        else:
            output_storage[0][0] = inputs[0].copy()


class WrongDtypePerform(ViewPerform):
    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0].astype(np.float32)


def debug_function(out, x, **linker_options):
    """FAST_RUN's rewrites with the debug linker (the rewrite steps are not re-checked)."""
    mode = Mode(linker=DebugLinker(**linker_options), rewriter=RewriteQuery(("fast_run",)))
    return wb.function([x], out, mode=mode)


def test_debug_mode_links_with_the_debug_linker_and_checks_c_against_perform():
    x, y = wt.dmatrix("x"), wt.dvector("y")
    f = wb.function([x, y], [wt.exp(x) * y + 1, x.T * 2, (x + y).sum()], mode="DEBUG")
    assert get_mode("DEBUG").linker == "debug" and "debug" not in available_linkers()
    assert isinstance(f.linker, DebugLinker)
    assert f.linker.report.c_nodes, "no node ran through C"
    a, b = np.arange(6.0).reshape(2, 3), np.linspace(-1, 1, 3)
    for args in ((a, b), (a[:, ::-1], b[::-1]), (np.asfortranarray(a), b)):
        got = f(*args)
        np.testing.assert_allclose(got[0], np.exp(args[0]) * args[1] + 1)
        np.testing.assert_allclose(got[1], args[0].T * 2)
        np.testing.assert_allclose(got[2], (args[0] + args[1]).sum())
    assert f.linker.checks == 3 * len(f.maker.fgraph.apply_nodes)
    # every compiled node ran through perform and C, first on fresh storage, then on
    # garbage in C order, Fortran order (2-d outputs) and a wrong shape
    for node in f.linker.report.c_nodes:
        runs = f.linker.checkers[node].runs
        layouts = 3 if node.outputs[0].ndim > 1 else (2 if node.outputs[0].ndim else 1)
        assert runs == 3 * 2 * (1 + layouts), (node, runs)


def test_a_right_c_implementation_passes_and_its_value_is_returned():
    x = wt.dvector("x")
    f = debug_function(TwiceOp()(x), x)
    assert len(f.linker.report.c_nodes) == 1
    np.testing.assert_array_equal(f(np.arange(4.0)), np.arange(4.0) * 2)


def test_c_differing_from_perform_is_reported_with_both_values():
    x = wt.dvector("x")
    f = debug_function(WrongC()(x), x)
    with pytest.raises(BadImplementationError) as info:
        f(np.array([1.0, 2.0, 3.0]))
    message = str(info.value)
    assert "WrongC" in message and "output 0" in message
    assert "perform: array(shape=(3,), dtype=float64) [2. 4. 6.]" in message
    assert "c: array(shape=(3,), dtype=float64) [3. 4. 5.]" in message
    assert "first at index (0,): 2.0 vs 3.0" in message
    assert info.value.node.op == WrongC()


def test_c_writing_into_an_undeclared_input_is_caught():
    x = wt.dvector("x")
    f = debug_function(ScribblesOnInputC()(x), x)
    value = np.array([1.0, 2.0])
    with pytest.raises(BadDestroyMapError, match=r"c modified input 0 .* destroy_map \{\}"):
        f(value)
    np.testing.assert_array_equal(value, [1.0, 2.0])  # the checks ran on copies


def test_c_depending_on_stale_output_storage_is_caught():
    x = wt.dvector("x")
    f = debug_function(StaleC()(x), x)
    with pytest.raises(StaleOutputError, match="pre-allocated c_order output storage") as info:
        f(np.array([1.0, 2.0]))
    assert "c with pre-allocated" in str(info.value) and "nan" in str(info.value)
    # without the pre-allocation runs the bug goes unnoticed on a first call
    np.testing.assert_array_equal(debug_function(StaleC()(x), x, prealloc=False)(
        np.array([1.0, 2.0])), [2.0, 4.0])


def test_perform_depending_on_stale_output_storage_is_caught():
    x = wt.dvector("x")
    f = debug_function(StalePerform()(x), x, use_c=False)
    with pytest.raises(StaleOutputError, match="perform with pre-allocated c_order"):
        f(np.array([1.0, 2.0]))


def test_an_output_aliasing_an_input_without_view_map_is_caught():
    x = wt.dvector("x")
    f = debug_function(AliasingC()(x), x)
    with pytest.raises(BadViewMapError, match="c's output 0 shares memory with input 0"):
        f(np.array([1.0, 2.0]))
    g = debug_function(ViewPerform()(x), x, use_c=False)
    with pytest.raises(BadViewMapError, match="perform's output 0 shares memory"):
        g(np.array([1.0, 2.0]))


def test_declared_inplace_ops_pass():
    x = wt.dvector("x")
    mode = Mode(linker=DebugLinker(), rewriter=None)
    f = wb.function([wb.In(x, mutable=True)], ScaleInplaceC()(x), mode=mode)
    assert len(f.linker.report.c_nodes) == 1
    np.testing.assert_array_equal(f(np.array([1.0, 3.0])), [2.0, 6.0])


def test_an_output_of_the_wrong_type_is_caught():
    x = wt.dvector("x")
    f = debug_function(WrongDtypePerform()(x), x, use_c=False)
    with pytest.raises(InvalidOutputError, match="perform returned an invalid value .*float32"):
        f(np.array([1.0]))


def test_errors_are_assertion_errors_naming_the_node():
    assert issubclass(DebugModeError, AssertionError)
    x = wt.dvector("x")
    f = debug_function(WrongC()(wt.exp(x)), x)
    with pytest.raises(DebugModeError, match=r"node WrongC\(Elemwise\{exp\}.*\(Op WrongC"):
        f(np.array([0.0]))


def test_both_implementations_raising_keeps_the_error():
    x = wt.lvector("x")
    f = wb.function([x], 2 ** x, mode=Mode(linker=DebugLinker(), rewriter=None))
    np.testing.assert_array_equal(f(np.array([1, 3])), [2, 8])
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.array([1, -1]))


def test_lazy_graphs_run_with_their_branches_checked():
    from workbench.core.ifelse import ifelse

    x = wt.dvector("x")
    c = wt.bscalar("c")
    f = wb.function([c, x], ifelse(c, wt.exp(x), wt.sin(x)), mode="DEBUG")
    np.testing.assert_allclose(f(1, np.array([0.5])), np.exp([0.5]))
    np.testing.assert_allclose(f(0, np.array([0.5])), np.sin([0.5]))


def test_layout_copy_keeps_strides_and_shares_no_memory():
    base = np.arange(24.0).reshape(4, 6)
    for value in (base, base[::-1, ::2], base.T, np.broadcast_to(base[0], (3, 6)), base[:0]):
        copy = layout_copy(value)
        assert copy.flags.writeable == value.flags.writeable
        assert copy.strides == value.strides or value.size == 0
        assert not np.may_share_memory(copy, value)
        np.testing.assert_array_equal(copy, value)


class _SignFree(Op):
    """x or -x, alternately: a result defined only up to sign (like a singular
    vector), which the Op says through `outputs_agree`."""

    __props__ = ("declares",)

    def __init__(self, declares: bool) -> None:
        self.declares = declares
        self.calls = 0

    def make_node(self, x):
        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        self.calls += 1
        sign = 1.0 if self.calls % 2 else -1.0
        output_storage[0][0] = sign * np.asarray(inputs[0]).copy()

    def outputs_agree(self, node, expected, got):
        if not self.declares:
            return None
        return bool(np.allclose(np.abs(expected[0]), np.abs(got[0])))


@pytest.mark.parametrize("declares", [True, False])
def test_an_op_that_declares_its_outputs_unique_only_up_to_sign_is_checked_that_way(declares):
    x = DVEC("x")
    f = wb.function([x], _SignFree(declares)(x), mode=Mode(linker=DebugLinker(), rewriter=None))
    if declares:
        assert np.allclose(np.abs(f(np.array([1.0, -2.0]))), [1.0, 2.0])
    else:
        with pytest.raises(DebugModeError):
            f(np.array([1.0, -2.0]))
