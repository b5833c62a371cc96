"""Shared fixtures for the test suite."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import settings

from workbench.core.graph.basic import Constant, Variable, io_toposort

# No time limit per Hypothesis example (its default is 200 ms): on a loaded machine (CI,
# shared cores) one example may take longer with nothing wrong, and fail as "too slow".
settings.register_profile("portable", deadline=None)
settings.load_profile("portable")

# The C linker compiles each cold bundle once, at -O3 (the code that stays), instead of
# at -O1 and then again at -O3 in the background (tiered compilation, link/c/tiers.py):
# measured on tests/core/link/c, tiering cost 415 s of CPU against 265 s without, the
# second build of every bundle. Subprocesses the tests start inherit it. The tiered path
# keeps tests of its own, which turn it on (tests/core/link/c/test_tiers.py, the progress
# tests of test_bundle.py, the CLI's); WORKBENCH_C_TIERED=1 runs the whole suite tiered.
os.environ.setdefault("WORKBENCH_C_TIERED", "0")


def _linker_params() -> list[Any]:
    """py; c (skipped, with the reason, where there is no C compiler); gpu where torch
    imports (on torch's CPU device when there is no GPU, with its warning)."""
    import importlib.util

    from workbench.core.link.c.compiler import has_compiler

    params: list[Any] = ["py", pytest.param("c", marks=pytest.mark.skipif(
        not has_compiler(), reason="needs a C compiler"))]
    if importlib.util.find_spec("torch") is not None:
        params.append("gpu")
    return params


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "linkers(*names): run a test taking `linker` on these linkers only "
        "(those of them this machine has), not on every one")


@pytest.hookimpl(trylast=True)  # after the parametrize marks: the linker's id comes last
def pytest_generate_tests(metafunc: Any) -> None:
    """A test taking an argument `linker` that it does not parametrize itself runs on
    every linker (`_linker_params`), or on those named by ``@pytest.mark.linkers(...)``."""
    if "linker" not in metafunc.fixturenames:
        return
    if any("linker" in _argnames(mark) for mark in metafunc.definition.iter_markers("parametrize")):
        return
    params = _linker_params()
    chosen = metafunc.definition.get_closest_marker("linkers")
    if chosen is not None:
        params = [p for p in params if getattr(p, "values", (p,))[0] in chosen.args]
    metafunc.parametrize("linker", params)


def _argnames(mark: Any) -> list[str]:
    names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


def evaluate_graph(outputs: Variable | Sequence[Variable],
                   givens: Mapping[Variable, Any] | None = None,
                   check: bool = True) -> Any:
    """Run a graph by calling each node's `perform` in topological order.

    A linker-free evaluator for testing Ops on their own. `givens` maps input
    Variables to values (filtered through their types). With `check`, every
    computed value must be a valid value of its Variable's Type (exact dtype,
    rank and static shape), which enforces the `perform` contract.
    """
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    values: dict[Variable, Any] = {}
    for var, value in (givens or {}).items():
        values[var] = var.type.filter(value)
    for node in io_toposort(list(values), outs):
        args = []
        for var in node.inputs:
            if var in values:
                args.append(values[var])
            elif isinstance(var, Constant):
                args.append(var.data)
            else:
                raise KeyError(f"no value given for input {var} of {node.op}")
        cells: list[list[Any]] = [[None] for _ in node.outputs]
        node.op.perform(node, args, cells)
        for var, cell in zip(node.outputs, cells):
            if check:
                var.type.filter(cell[0], strict=True)
            values[var] = cell[0]
    results = [values[o] if o in values else o.data for o in outs]
    return results[0] if single else results


@pytest.fixture(scope="session")
def evaluate():
    """`evaluate(outputs, givens)`: the values of `outputs` computed by `perform` calls."""
    return evaluate_graph


@pytest.fixture(scope="session")
def inferred_shape():
    """`inferred_shape(var, givens)`: the shape `var.owner.op.infer_shape` predicts, evaluated.

    Input shapes are given to `infer_shape` as symbolic `Shape_i` nodes, so the
    answer is checked as a graph, not just as static information.
    """
    from workbench.core.tensor.shape import shape_i

    def compute(var: Variable, givens: Mapping[Variable, Any] | None = None) -> tuple[int, ...]:
        node = var.owner
        in_shapes = [tuple(shape_i(v, d) for d in range(getattr(v.type, "ndim", 0)))
                     for v in node.inputs]
        out_shape = node.op.infer_shape(None, node, in_shapes)[var.index]
        symbolic = [s for s in out_shape if isinstance(s, Variable)]
        computed = iter(evaluate_graph(symbolic, givens) if symbolic else [])
        return tuple(int(next(computed)) if isinstance(s, Variable) else int(s)
                     for s in out_shape)

    return compute
