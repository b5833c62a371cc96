"""Profiling on the C linker: the MLP example's BLAS nodes (gemm/dot) are profiled as their
Op classes, per-node times add up to the time inside the VM, each node says whether C or
Python ran it, and the compile section reports the C compilation and cache hits of
`linker.report`. Which share of the time each class takes depends on the machine and its
load: no assertion here depends on it (benchmarks/ measures speed)."""

import json

import numpy as np
import pytest

import workbench as wb
from workbench.core.link.c.compiler import has_compiler
from workbench.examples import mlp

pytestmark = pytest.mark.skipif(not has_compiler(), reason="the C linker needs a C compiler")

BLAS_OP_CLASSES = ("Gemm", "Gemv", "Dot", "Dot22", "Ger")


@pytest.fixture(scope="module")
def compiled_mlp():
    source = mlp.build_source()
    fn = wb.function(source.inputs, source.outputs[0], updates=source.updates, linker="c")
    return fn, mlp.make_batch()


@pytest.fixture(scope="module")
def stats(compiled_mlp):
    fn, (x, labels) = compiled_mlp
    return wb.profile(fn, x, labels, calls=5)


def test_profiled_mlp_still_trains_like_numpy(compiled_mlp):
    fn, (x, labels) = compiled_mlp
    source = mlp.build_source()
    fresh = wb.function(source.inputs, source.outputs[0], updates=source.updates, linker="c")
    params = mlp.initial_params()
    for _ in range(2):
        np.testing.assert_allclose(fresh(x, labels), mlp.numpy_step(params, x, labels),
                                   rtol=1e-10)
    np.testing.assert_allclose(source.updates[0][0].get_value(), params[0], atol=1e-12)


def test_blas_ops_are_rows_of_the_op_class_table_sorted_by_time(stats):
    groups = stats.by_op_class()
    assert [g.time for g in groups] == sorted((g.time for g in groups), reverse=True)
    blas = [g for g in groups if g.name in BLAS_OP_CLASSES]
    assert blas and all(g.calls >= 5 for g in blas), [(g.name, g.calls) for g in groups]
    assert sum(g.fraction for g in groups) == pytest.approx(1.0)
    first_row = str(stats).split("By Op class:")[1].splitlines()[2]
    assert first_row.split()[-1] == groups[0].name


def test_node_times_add_up_to_the_time_inside_the_vm(stats):
    rows = stats.by_node()
    assert len(rows) == len(stats.order) and all(r.calls == 5 for r in rows)
    node_total = sum(r.time for r in rows)
    assert node_total == pytest.approx(stats.thunk_time)
    assert node_total <= stats.run_time


def test_backend_column_says_c_or_python(stats):
    fn = stats.function
    c_nodes = set(fn.linker.report.c_nodes)
    py_nodes = {node for node, _ in fn.linker.report.py_nodes}
    assert c_nodes and c_nodes.isdisjoint(py_nodes)
    impl = {t.node: t.impl for t in fn.thunks}
    for node, row in zip(stats.order, stats.by_node()):
        assert row.backend == ("C" if node in c_nodes else "Python"), row
        assert impl[node] == ("c" if node in c_nodes else "py")
    table = str(stats).split("By Apply node:")[1]
    assert " C " in table


def test_compile_section_reports_c_compilation_and_cache_hits(compiled_mlp, stats):
    fn, _ = compiled_mlp
    report = fn.linker.report
    assert stats.linker_report == report.as_dict()  # the profiled function's, not its twin's
    assert report.compiled + report.disk_hits + report.memory_hits >= 1
    text = str(stats).split("Compile time:")[1]
    assert "C compilation" in text
    assert f"{report.compiled} compiled in {report.modules_built} module(s), " \
           f"{report.disk_hits} disk cache hits, " \
           f"{report.memory_hits} memory hits" in text
    assert f"{len(report.c_nodes)} nodes in C, {len(report.py_nodes)} in Python" in text
    document = json.loads(stats.to_json())
    assert document["summary"]["linker_report"]["compiled"] == report.compiled


def test_py_linker_profile_has_no_c_section():
    source = mlp.build_source(n_in=8, n_hidden=4, n_out=3, batch=2)
    fn = wb.function(source.inputs, source.outputs[0], updates=source.updates, linker="py")
    stats = wb.profile(fn, *mlp.make_batch(batch=2, n_in=8, n_out=3), calls=2)
    assert stats.linker_report is None
    assert "C compilation" not in str(stats)
    assert {row.backend for row in stats.by_node()} == {"Python"}
