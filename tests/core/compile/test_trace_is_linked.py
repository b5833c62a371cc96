"""Every edit of a compiled graph is a step of its trace: the graph at the end of the
RewriteTrace is exactly the graph the linker runs, for every case of the catalogue,
with FAST_RUN and FAST_COMPILE on each linker, DEBUG, and with a casting mode.

The casting pass (`backend_dtypes`) and `protect_inputs` are passes of the rewrite
database that run inside the trace; before, the casts a casting mode inserted appeared
in no step. The comparison is structural: every Variable gets a number from its Op (or
its value, for a constant), its type and the numbers of its inputs, shared by both
graphs, so the two graphs are equal exactly when their outputs get the same numbers
and they hold as many nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.core import dtypes
from workbench.core.compile.function import FunctionMaker
from workbench.core.compile.mode import available_linkers, register_linker
from workbench.core.graph.basic import Constant, io_toposort
from workbench.core.link.vm import VMLinker
from workbench.testing.catalog import all_cases

CASES = all_cases()


class Numbering:
    """Numbers Variables by structure (op, output index, type, inputs), across graphs."""

    def __init__(self) -> None:
        self.numbers: dict[Any, int] = {}

    def _number(self, key: Any) -> int:
        return self.numbers.setdefault(key, len(self.numbers))

    def of_graph(self, fgraph: Any) -> tuple[tuple[int, ...], int]:
        seen: dict[Any, int] = {}
        for position, var in enumerate(fgraph.inputs):
            seen[var] = self._number(("input", position, str(var.type)))
        for node in fgraph.toposort():
            for var in node.inputs:
                if var not in seen and isinstance(var, Constant):
                    data = np.asarray(var.data)
                    seen[var] = self._number(("constant", str(var.type), data.dtype.str,
                                              data.shape, data.tobytes()))
            ins = tuple(seen[v] for v in node.inputs)
            for index, out in enumerate(node.outputs):
                seen[out] = self._number((node.op, index, str(out.type), ins))
        outputs = []
        for var in fgraph.outputs:
            if var not in seen:  # an output that is a constant
                data = np.asarray(var.data)
                seen[var] = self._number(("constant", str(var.type), data.tobytes()))
            outputs.append(seen[var])
        return tuple(outputs), len(fgraph.apply_nodes)


def _differences(mode: str, linker: str, float_dtype: str | None = None, link: bool = True,
                 cases: list[Any] = CASES) -> tuple[list[str], list[str]]:
    """Compile every case; the ids of those whose trace does not end at the linked graph,
    and the ids of those the backend refuses (UnsupportedDtypeError)."""
    differences, refused = [], []
    for case in cases:
        dtype = float_dtype or case.float_dtypes[0]
        if dtype not in case.float_dtypes:
            continue
        inputs, outputs, _ = case.graph(dtype)
        try:
            maker = FunctionMaker(inputs, outputs, mode=mode, linker=linker,
                                  on_unused_input="ignore")
        except dtypes.UnsupportedDtypeError:
            refused.append(f"{case.family}.{case.name}[{dtype}]")
            continue
        linked = maker.fgraph
        if link:  # the graph the linker was handed is the maker's, unchanged
            function = maker.create()
            assert function.linker.fgraph is maker.fgraph
        trace = maker.rewrite_trace
        numbering = Numbering()
        if numbering.of_graph(trace.graph_at(len(trace))) != numbering.of_graph(linked):
            differences.append(f"{case.family}.{case.name}[{dtype}]")
    return differences, refused


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_the_trace_ends_at_the_linked_graph_on_the_python_linker(mode):
    differences, refused = _differences(mode, "py")
    assert refused == []
    assert differences == []


@pytest.mark.parametrize("linker", ["c", "gpu"])
@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_the_trace_ends_at_the_graph_each_compiled_linker_gets(mode, linker):
    """Linking the whole catalogue in C is the C catalogue test's job; here each graph is
    prepared for the linker (rewrites, casting pass) and one is linked (below)."""
    if linker not in available_linkers():
        pytest.skip(f"linker {linker!r} is not available here")
    differences, refused = _differences(mode, linker, link=False)
    assert len(refused) < len(CASES) * 0.1  # gpu: the unsigned dtypes torch lacks
    assert differences == []


@pytest.mark.filterwarnings("ignore:DEBUG mode cannot check")
def test_the_trace_ends_at_the_graph_the_debug_linker_gets():
    """DEBUG: FAST_RUN's rewrites, each step checked numerically, for the checking linker."""
    differences, refused = _differences("DEBUG", "debug", link=False)
    assert refused == [] and differences == []


@pytest.mark.parametrize("linker", ["c", "gpu"])
def test_a_compiled_linker_links_the_maker_graph(linker):
    if linker not in available_linkers():
        pytest.skip(f"linker {linker!r} is not available here")
    x = wt.dvector("x")
    f = wb.function([x], wt.exp(x) * 2, linker=linker)
    assert f.linker.fgraph is f.maker.fgraph
    np.testing.assert_allclose(f(np.ones(3)), 2 * np.e * np.ones(3))


@pytest.fixture
def no_float32_backend():
    """A Python linker declared (for the test) without float32."""
    name = "no-float32"
    dtypes.register_backend_dtypes(name, [d for d in dtypes.all_dtypes if d != dtypes.float32])
    register_linker(name, VMLinker)
    yield name
    dtypes.unregister_backend_dtypes(name)
    register_linker(name, None, reason="test backend removed")


def test_the_casts_of_a_casting_mode_are_steps_of_the_trace(no_float32_backend):
    float32_cases = [c for c in CASES if "float32" in c.float_dtypes]
    with dtypes.casting_mode_as("upcast"):
        differences, refused = _differences("FAST_RUN", no_float32_backend, "float32",
                                            cases=float32_cases)
    assert differences == []
    # refused: a graph with an Op whose parameters name its dtype (ARange, Eye, a Sum
    # with a dtype) or whose inner graph fixes its input types (a loop body): the
    # casting pass retypes only elementwise Ops, and says so with UnsupportedDtypeError
    fixed = {f"{c.family}.{c.name}[float32]" for c in float32_cases if _fixes_its_dtypes(c)}
    assert refused and set(refused) <= fixed


def _fixes_its_dtypes(case: Any) -> bool:
    inputs, outputs, _ = case.graph("float32")
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    return any("dtype" in getattr(node.op, "__props__", ()) or
               hasattr(node.op, "inner_inputs") for node in io_toposort(inputs, outputs))


def test_a_casting_step_is_named_and_shows_the_casts(no_float32_backend):
    x = wt.tensor("float32", shape=(None,), name="x")
    with dtypes.casting_mode_as("upcast"):
        f = wb.function([x], wt.exp(x), linker=no_float32_backend)
    steps = f.maker.rewrite_trace.filter(pass_="backend_dtypes", changed_only=True)
    assert [s.rewrite for s in steps] == ["backend_dtypes"]
    assert "casting" in steps[0].tags
    last = wb.dprint(f.maker.rewrite_trace.graph_at(len(f.maker.rewrite_trace)), file="str")
    assert "float64" in last
    np.testing.assert_allclose(f(np.ones(2, "float32")), np.e * np.ones(2), rtol=1e-6)
