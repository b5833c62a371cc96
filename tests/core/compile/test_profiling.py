"""Profiling compiled functions: tables, memory, flops, JSON, Chrome trace, comparison."""

import json

import numpy as np
import pytest
import workbench.tensor as wt

from workbench.core.compile import function
from workbench.core.compile.profiling import compare, format_profile, profile


def mlp_layer():
    x, w = wt.dmatrix("x"), wt.dmatrix("W")
    return [x, w], wt.tanh(x @ w).sum()


def test_function_with_profile_true_collects_per_node_times():
    inputs, cost = mlp_layer()
    f = function(inputs, cost, profile=True, linker="py")
    x, w = np.ones((50, 40)), np.ones((40, 30))
    for _ in range(3):
        f(x, w)
    stats = f.profile
    assert stats.calls == 3
    rows = stats.by_node()
    assert {r.calls for r in rows} == {3}
    assert {r.op_class for r in rows} >= {"Dot", "Elemwise", "Sum"}
    assert all(r.backend == "Python" for r in rows)
    # node times add up to the time inside thunks, which fits inside the VM time
    assert abs(sum(r.time for r in rows) - stats.thunk_time) < 1e-12
    assert stats.thunk_time <= stats.run_time
    groups = stats.by_op_class()
    assert abs(groups[-1].cumulative - 1.0) < 1e-9
    assert groups == sorted(groups, key=lambda g: -g.time)


def test_memory_and_flops_from_types_and_ops():
    inputs, cost = mlp_layer()
    f = function(inputs, cost, profile=True)
    f(np.ones((50, 40)), np.ones((40, 30)))
    rows = {r.op_class: r for r in f.profile.by_node()}
    assert rows["Dot"].output_bytes == 50 * 30 * 8
    assert rows["Dot"].flops is None or rows["Dot"].flops > 0
    memory = f.profile.memory()
    assert memory.peak_without_gc >= memory.peak_with_gc >= 50 * 30 * 8
    assert memory.largest[0][1] == 50 * 30 * 8


@pytest.mark.parametrize("linker", ["py", "c"])
def test_views_and_in_place_updates_allocate_no_memory(linker):
    # an SGD step: x.T is a view, the Gemm writes into W's own storage, the
    # gradient x.T @ d is folded into that Gemm; only x @ W allocates (tanh in place)
    import workbench as wb
    from workbench.core.tensor.blas import Gemm

    x, d = wt.dmatrix("x"), wt.dmatrix("d")
    w = wb.shared(np.ones((40, 30)), name="W")
    f = function([x, d], wt.tanh(x @ w), updates=[(w, w - 0.1 * (x.T @ d))],
                 profile=True, linker=linker)
    f(np.ones((50, 40)), np.ones((50, 30)))
    rows = {r.op: r for r in f.profile.by_node()}
    assert rows["DimShuffle{1,0}"].output_bytes == 0
    assert rows[str(Gemm(inplace=True))].output_bytes == 0
    assert rows["Elemwise{tanh,inplace}"].output_bytes == 0
    assert rows["Dot"].output_bytes == 50 * 30 * 8
    memory = f.profile.memory()
    assert memory.peak_without_gc == memory.largest[0][1] == 50 * 30 * 8
    assert "in-place results count 0" in format_profile(f.profile)


def test_workbench_profile_json_chrome_trace_and_text():
    inputs, cost = mlp_layer()
    f = function(inputs, cost)
    stats = profile(f, np.ones((20, 10)), np.ones((10, 5)), calls=4)
    assert stats.calls == 4 and stats.call_time > 0
    assert len(stats.call_times) == 4  # each call: the spread says how noisy the machine is
    assert sum(stats.call_times) == pytest.approx(stats.call_time)
    summary = stats.summary()
    assert summary["per_call"] > 0 and summary["overhead"] >= 0
    data = json.loads(stats.to_json())
    assert set(data) == {"summary", "by_op_class", "by_op", "by_node", "memory"}
    trace = json.loads(json.dumps(stats.chrome_trace()))
    events = trace["traceEvents"]
    assert len(events) == 4 * len(stats.order)  # one event per node call
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    text = str(stats)
    assert "By Op class" in text and "By Apply node" in text and "Memory" in text
    assert f.profile is None  # the original function is left unprofiled
    # fitted to a terminal: long node names wrap under themselves, nothing is lost
    for width in (80, 116):
        fitted = format_profile(stats, width=width)
        assert max(len(line) for line in fitted.splitlines()) <= width
        assert fitted.split() == text.split()


def test_two_profiles_side_by_side():
    inputs, cost = mlp_layer()
    f = function(inputs, cost)
    args = (np.ones((20, 10)), np.ones((10, 5)))
    first, second = profile(f, *args, calls=2), profile(f, *args, calls=2)
    table = compare(first, second)
    assert "Dot" in table and "per call" in table
