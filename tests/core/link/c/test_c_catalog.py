"""The whole library catalogue compiled with the C linker, and through DEBUG mode.

Every `Case` of `workbench/testing/cases_*.py` (see tests/core/tensor/
test_library_catalog.py, which checks them on the Python linker) is compiled with
`linker="c"` and must match its NumPy reference; then the same graphs run through
the debug linker, which compares every node's C with its `perform` (and checks
destroy_map, view_map and stale output storage) on the case's inputs.

Cases are grouped per family and dtype into one function each: one link step per
group, and the group's missing node kinds compile in parallel. A cold cache compiles
every distinct node kind once (about 5 minutes on 2 busy cores); warm, the file runs
in about 20 seconds. Cases using float16/bfloat16 (no C arithmetic) run one by one
in the 'upcast' casting mode. `test_report_how_many_cases_run_c` prints how many cases
run C and how many only `perform` (pytest -s).
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.core import dtypes
from workbench.core.compile.mode import Mode, RewriteQuery
from workbench.core.graph.basic import io_toposort
from workbench.core.link.c.compiler import has_compiler
from workbench.core.link.c.debug import DebugLinker
from workbench.core.tensor.elemwise import Elemwise
from workbench.testing.catalog import Case, all_cases

pytestmark = pytest.mark.skipif(not has_compiler(), reason="needs a C compiler")

CASES = all_cases()
GROUPS = sorted({(case.family, d) for case in CASES for d in case.float_dtypes
                 if d not in ("float16", "bfloat16")})


def _as_list(outputs: Any) -> list[Any]:
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def assert_matches(got: Any, want: Any, case: Case, out_dtype: Any, label: str) -> None:
    """`got` equals NumPy's `want` within the case's tolerance (exactly for integers)."""
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), f"{label}: got {type(got).__name__}, not an ndarray"
    assert dtypes.as_dtype(got.dtype) == out_dtype, f"{label}: dtype {got.dtype}"
    assert got.shape == want.shape, f"{label}: shape {got.shape}, NumPy says {want.shape}"
    d = dtypes.as_dtype(out_dtype)
    if d.is_float or d.is_complex:
        wide = np.complex128 if d.is_complex or want.dtype.kind == "c" else np.float64
        rtol, atol = case.tolerance(str(d))
        np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(got, want, err_msg=label, strict=False)


LOW_PRECISION = ("float16", "bfloat16")


def uses_low_precision(case: Case, float_dtype: str) -> bool:
    """Whether some variable of the case's graph is float16 or bfloat16 (no C for them)."""
    inputs, outputs, _ = case.graph(float_dtype)
    outs = _as_list(outputs)
    variables = list(outs)
    for node in io_toposort(inputs, outs):
        variables += node.inputs + node.outputs
    return any(str(getattr(v.type, "dtype", "")) in LOW_PRECISION for v in variables)


class Group:
    """Cases in one float dtype, built into one graph."""

    def __init__(self, cases: list[Case], float_dtype: str) -> None:
        self.cases = cases
        self.float_dtype = float_dtype
        self.inputs: list[Any] = []
        self.values: list[Any] = []
        self.outputs: list[Any] = []
        self.owner: list[int] = []  # case index of each output
        for k, case in enumerate(self.cases):
            inputs, outputs, values = case.graph(float_dtype)
            outs = _as_list(outputs)
            self.inputs += inputs
            self.values += values
            self.outputs += outs
            self.owner += [k] * len(outs)

    def compile(self, mode: Any = None, linker: Any = None) -> Any:
        # float16/bfloat16 have no C arithmetic: the 'upcast' casting mode computes such
        # nodes in float32 (casting back at the boundary) instead of refusing them
        with dtypes.casting_mode_as("upcast"):
            return wb.function(self.inputs, self.outputs, mode=mode, linker=linker,
                               on_unused_input="ignore")

    def check(self, f: Any, how: str) -> None:
        saved = [np.copy(v) for v in self.values]
        results = f(*self.values)
        expected: dict[int, list[Any]] = {}
        for j, (var, got, k) in enumerate(zip(self.outputs, results, self.owner)):
            case = self.cases[k]
            if k not in expected:
                expected[k] = _as_list(case.expected(self.float_dtype))
            position = self.owner[:j].count(k)
            label = (f"{case.family}.{case.name}[{self.float_dtype}] output {position} "
                     f"({var.type}), {how}")
            assert_matches(got, expected[k][position], case, var.type.dtype, label)
        for value, before in zip(self.values, saved):
            np.testing.assert_array_equal(value, before, err_msg=f"{how}: an input changed")

    def case_nodes(self, f: Any) -> list[set[Any]]:
        """The nodes of the compiled graph each case's outputs depend on."""
        fg = f.maker.fgraph
        nodes: list[set[Any]] = [set() for _ in self.cases]
        for out, k in zip(fg.outputs, self.owner):
            nodes[k] |= set(io_toposort(fg.inputs, [out]))
        return nodes


@functools.cache
def group(family: str, float_dtype: str) -> Group:
    """The family's cases in that dtype, except those using float16/bfloat16."""
    return Group([c for c in CASES if c.family == family and float_dtype in c.float_dtypes
                  and not uses_low_precision(c, float_dtype)], float_dtype)


@functools.cache
def compiled_c(family: str, float_dtype: str) -> Any:
    return group(family, float_dtype).compile(linker="c")


@pytest.mark.parametrize(("family", "float_dtype"), GROUPS, ids=[f"{f}[{d}]" for f, d in GROUPS])
def test_c_linker_matches_numpy(family: str, float_dtype: str) -> None:
    g = group(family, float_dtype)
    f = compiled_c(family, float_dtype)
    g.check(f, "linker c")
    g.check(f, "linker c, second call (reused output storage)")


@pytest.mark.parametrize(("family", "float_dtype"), GROUPS, ids=[f"{f}[{d}]" for f, d in GROUPS])
def test_debug_linker_finds_no_bad_node(family: str, float_dtype: str) -> None:
    g = group(family, float_dtype)
    linker = DebugLinker()
    f = g.compile(mode=Mode(linker=linker, rewriter=RewriteQuery(("fast_run",))))
    g.check(f, "debug linker")
    assert f.linker.checks > 0 or not f.maker.fgraph.apply_nodes


#: Low-precision cases the C linker refuses even in the 'upcast' casting mode: a Cast
#: *to* float16/bfloat16 has no wider replacement (its output dtype is the point), so
#: enforce_backend_dtypes raises UnsupportedDtypeError for it. Strict: a case that
#: starts working must leave this list.
def low_precision_cases() -> list[tuple[Case, str]]:
    return [(case, d) for case in CASES for d in case.float_dtypes
            if uses_low_precision(case, d)]


def test_low_precision_cases_run_through_the_casting_mode() -> None:
    """Every case, casts to float16/bfloat16 included (their loop is retyped to
    float32, a boundary cast makes the small dtype)."""
    refused = set()
    checked = 0
    for case, float_dtype in low_precision_cases():
        g = Group([case], float_dtype)
        try:
            f = g.compile(linker="c")
        except dtypes.UnsupportedDtypeError as exc:
            assert "float16" in str(exc), exc
            refused.add(f"{case.family}.{case.name}")
            continue
        g.check(f, "linker c, casting mode upcast")
        checked += 1
    assert not refused
    assert checked >= 10


def c_coverage() -> dict[str, Counter]:
    """Per family: case-dtypes whose Elemwise nodes all run C ('elemwise_c'), that have
    Elemwise nodes without C ('elemwise_py'), that run some node in C ('some_c'), and
    that run only `perform` ('py_only')."""
    table: dict[str, Counter] = {}
    for family, float_dtype in GROUPS:
        g, f = group(family, float_dtype), compiled_c(family, float_dtype)
        c_nodes = set(f.linker.report.c_nodes)
        row = table.setdefault(family, Counter())
        for nodes in g.case_nodes(f):
            elemwise = [n for n in nodes if isinstance(n.op, Elemwise)]
            if elemwise:
                row["elemwise_c" if all(n in c_nodes for n in elemwise) else "elemwise_py"] += 1
            row["some_c" if nodes & c_nodes else "py_only"] += 1
    return table


def test_report_how_many_cases_run_c() -> None:
    """Prints the table (pytest -s). Measured 2026-11-22 07:04 (1148 case-dtypes without
    float16/bfloat16): some node in C for 941, perform only for 207; of the 477 cases with
    Elemwise nodes, all 477 run every Elemwise node in C (complex included); the elemwise
    family: 385 with C, 2 without (no Elemwise node left after rewriting)."""
    table = c_coverage()
    total = sum(table.values(), Counter())
    lines = [f"{'family':<12} {'some C':>7} {'py only':>8} {'elemwise all C':>15} "
             f"{'elemwise py':>12}"]
    for family, row in sorted(table.items()) + [("total", total)]:
        lines.append(f"{family:<12} {row['some_c']:>7} {row['py_only']:>8} "
                     f"{row['elemwise_c']:>15} {row['elemwise_py']:>12}")
    print("\n".join(lines))
    elemwise_cases = total["elemwise_c"] + total["elemwise_py"]
    assert total["elemwise_c"] >= 0.9 * elemwise_cases, "\n".join(lines)
    row = table["elemwise"]
    assert row["some_c"] >= 0.9 * (row["some_c"] + row["py_only"]), "\n".join(lines)
    assert total["some_c"] >= 0.5 * (total["some_c"] + total["py_only"]), "\n".join(lines)
