"""DestroyHandler: which inplace operations are safe, and the orderings that make them so."""

from __future__ import annotations

import pytest

import workbench.core.tensor as wt
from workbench.core.graph.destroyhandler import DestroyHandler, view_roots
from workbench.core.graph.features import ReplaceValidate
from workbench.core.graph.fg import FunctionGraph, InconsistencyError
from workbench.core.ifelse import IfElse
from workbench.core.scalar import math as smath
from workbench.core.tensor.elemwise import DimShuffle, Elemwise

add_inplace = Elemwise(smath.add, inplace_pattern={0: 0})
tanh_inplace = Elemwise(smath.tanh, inplace_pattern={0: 0})


def _graph(inputs: list, outputs: list, mutable: tuple = ()
           ) -> tuple[FunctionGraph, DestroyHandler]:
    fgraph = FunctionGraph(inputs, outputs, clone=False)
    handler = DestroyHandler(mutable=mutable)
    fgraph.attach_feature(handler)
    return fgraph, handler


def test_an_intermediate_may_be_overwritten() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    out = add_inplace(wt.exp(x), y)
    fgraph, handler = _graph([x, y], [out])
    fgraph.validate()
    handler.validate_all()


def test_a_graph_input_is_protected_unless_mutable() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    out = add_inplace(x, y)
    fgraph, _ = _graph([x, y], [out])
    with pytest.raises(InconsistencyError, match="graph input"):
        fgraph.validate()
    fgraph, _ = _graph([x, y], [add_inplace(x, y)], mutable=(x,))
    fgraph.validate()


def test_a_constant_is_never_overwritten() -> None:
    y = wt.vector("y")
    const = wt.constant([1.0, 2.0])
    fgraph, _ = _graph([y], [add_inplace(const, y)])
    with pytest.raises(InconsistencyError, match="constant"):
        fgraph.validate()


def test_a_graph_output_is_never_overwritten() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    a = wt.exp(x)
    fgraph, _ = _graph([x, y], [add_inplace(a, y), a])
    with pytest.raises(InconsistencyError, match="output"):
        fgraph.validate()


def test_a_reader_that_needs_the_destroyer_result_is_refused() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    a = wt.exp(x)
    d = add_inplace(a, y)
    fgraph, _ = _graph([x, y], [d * a])  # the mul would read a after it was overwritten
    with pytest.raises(InconsistencyError, match="reads"):
        fgraph.validate()


def test_an_independent_reader_is_ordered_before_the_destroyer() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    a = wt.exp(x)
    s = wt.sum(a)
    d = tanh_inplace(a)
    fgraph, handler = _graph([x, y], [d + s])
    fgraph.validate()
    orderings = handler.orderings(fgraph)
    (destroyer,) = handler.destroyers
    assert s.owner in orderings[destroyer]
    order = fgraph.toposort()
    assert order.index(s.owner) < order.index(destroyer)


def test_destroying_twice_is_refused() -> None:
    x = wt.vector("x")
    a = wt.exp(x)
    fgraph, _ = _graph([x], [tanh_inplace(a) + tanh_inplace(a)])
    with pytest.raises(InconsistencyError, match="twice"):
        fgraph.validate()


def test_views_share_the_fate_of_their_root() -> None:
    x = wt.matrix("x")
    a = wt.exp(x)
    view = DimShuffle(2, (1, 0))(a)
    # Overwriting the transposed view overwrites a, which the sum still reads afterwards.
    d = tanh_inplace(view)
    fgraph, _ = _graph([x], [wt.sum(d) + wt.sum(a)])
    fgraph.validate()  # the independent sum of a can run first
    fgraph, _ = _graph([x], [d, a])
    with pytest.raises(InconsistencyError, match="output"):
        fgraph.validate()
    # A view of an input is the input.
    fgraph, _ = _graph([x], [tanh_inplace(DimShuffle(2, (1, 0))(x))])
    with pytest.raises(InconsistencyError, match="graph input"):
        fgraph.validate()


def test_broadcast_to_outputs_are_read_only() -> None:
    x = wt.vector("x")
    b = wt.broadcast_to(wt.exp(x), (3, x.shape[0]))
    fgraph, _ = _graph([x], [tanh_inplace(b)])
    with pytest.raises(InconsistencyError, match="read-only"):
        fgraph.validate()
    # ... and so are views of them.
    fgraph, _ = _graph([x], [tanh_inplace(DimShuffle(2, (1, 0))(b))])
    with pytest.raises(InconsistencyError, match="read-only"):
        fgraph.validate()


def test_ifelse_views_list_both_branches() -> None:
    c = wt.scalar("c", dtype="bool")
    x, y = wt.vector("x"), wt.vector("y")
    a, b = wt.exp(x), wt.sin(y)
    chosen = IfElse(1, as_view=True)(c, a, b)
    assert set(view_roots(chosen)) == {a, b}
    fgraph, _ = _graph([c, x, y], [tanh_inplace(chosen), a])  # a is also an output
    with pytest.raises(InconsistencyError, match="output"):
        fgraph.validate()
    fgraph, _ = _graph([c, x, y], [tanh_inplace(IfElse(1, as_view=True)(c, wt.exp(x), y))])
    with pytest.raises(InconsistencyError, match="graph input"):
        fgraph.validate()


def test_replace_validate_reverts_an_unsafe_replacement() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    a = wt.exp(x)
    out = a + y
    fgraph = FunctionGraph([x, y], [out, a], clone=False)
    fgraph.attach_feature(ReplaceValidate())
    fgraph.attach_feature(DestroyHandler())
    with pytest.raises(InconsistencyError):
        fgraph.replace_validate(out, add_inplace(a, y))
    assert fgraph.outputs[0] is out
    fgraph.check_integrity()
    fgraph.validate()  # the reverted graph is consistent


def test_check_destroy_is_a_precheck_without_changes() -> None:
    x, y = wt.vector("x"), wt.vector("y")
    a = wt.exp(x)
    out = a + y
    fgraph, handler = _graph([x, y], [out])
    handler.check_destroy(out.owner, 0)  # a may be overwritten by the add
    with pytest.raises(InconsistencyError):
        handler.check_destroy(out.owner, 1)  # y is an input
    assert not handler.destroyers


def test_two_destroyers_that_would_wait_for_each_other_are_refused() -> None:
    # d1 overwrites a while reading b; d2 overwrites b while reading a: each must run
    # before the other.
    x, y = wt.vector("x"), wt.vector("y")
    a, b = wt.exp(x), wt.sin(y)
    d1 = add_inplace(a, b)
    d2 = add_inplace(b, a)
    fgraph, _ = _graph([x, y], [d1 + d2])
    with pytest.raises(InconsistencyError, match="reads"):
        fgraph.validate()
