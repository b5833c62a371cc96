"""Differential test: every linker gives NumPy's values, and gradients that agree with
finite differences, on seeded random graphs; and the compiled linkers agree with the
Python VM.

The graphs come from `workbench.testing.random_graphs` (menu SMOOTH: float64 DAGs of
elementwise math, reductions, the softmax family, dot, indexing, joins and the
patterns the stabilize rewrites look for, each step drawn only where its sample
values are finite and smooth). Each graph's outputs and the gradient of a weighted
sum of them with respect to every input are compiled with FAST_RUN on each linker
(py, c, and gpu, which runs on torch's CPU device without a GPU), then compared with
NumPy's values of the same program and with its central finite differences.

A second family, menu DTYPE, probes the corners where C, torch and NumPy part ways:
elementwise graphs over every bool, integer and float dtype with NaN, infinities,
-0.0, integer extremes, division by zero and casts out of range. It has no NumPy
reference: the Python VM (NumPy per node) is the reference, errors included, and
c and gpu must give the same dtypes and values, or raise the same exception class.
The gpu linker refuses the unsigned dtypes torch lacks with a documented
UnsupportedDtypeError; those graphs are counted, not compared.

Compiling is the cost (the C compiler above all), so graphs are compiled in batches:
one function per batch and linker, whose node kinds (reductions, softmax, dot,
indexing and the elementwise kernels the fused Composites leave) compile once and
are shared by the batch's graphs. A batch that fails to compile is retried graph by
graph, so a failure names its graph.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.core.compile.mode import available_linkers
from workbench.core.dtypes.backends import UnsupportedDtypeError
from workbench.core.graph.basic import variables_between
from workbench.testing.random_graphs import (
    DTYPE,
    SMOOTH,
    RandomGraph,
    RngChooser,
    arrays_agree,
    generate,
    numeric_gradient,
)

GRAPHS = 200
BATCH = 50
DTYPE_GRAPHS = 100
#: values against NumPy: the same float64 program, rounded differently by fusion,
#: rewrites (reassociated constants, stable forms) and vector math libraries
VALUE_RTOL, VALUE_ATOL = 1e-8, 1e-10
#: gradients against central differences with h = 1e-6 relative
GRAD_RTOL, GRAD_ATOL = 1e-4, 1e-6
#: a compiled linker against the Python VM: the same rewritten graph, so only vector
#: math and summation order differ
VM_RTOL, VM_ATOL = 1e-10, 1e-12


def _linkers() -> list[str]:
    names = sorted(set(available_linkers()), key=lambda n: (n != "py", n))
    try:
        import torch  # noqa: F401
    except ImportError:  # pragma: no cover - torch is installed in development
        return [n for n in names if n != "gpu"]
    return names if "gpu" in names else [*names, "gpu"]


LINKERS = _linkers()


@dataclass
class Batch:
    """Graphs compiled together: their symbolic inputs, outputs and gradients, where
    each graph's results sit among the function's outputs, and the references."""

    graphs: list[RandomGraph]
    inputs: list[Any]
    outputs: list[Any]
    spans: list[tuple[int, int, int]]  # (first output, number of values, of gradients)
    values: list[list[np.ndarray]]
    gradients: list[list[np.ndarray]]

    @property
    def args(self) -> list[np.ndarray]:
        return [v for g in self.graphs for v in g.values]


def _symbolic(graph: RandomGraph) -> tuple[list[Any], list[Any], list[Any]]:
    """Fresh inputs, outputs and the gradients of `graph.cost` wrt every input."""
    inputs, outputs = graph.symbolic()
    grads = wb.grad(graph.cost(outputs), inputs, disconnected_inputs="ignore")
    return inputs, outputs, list(grads)


@functools.cache
def batch(index: int) -> Batch:
    graphs = [generate(RngChooser(seed), SMOOTH, max_steps=8, label=f"seed {seed}")
              for seed in range(index * BATCH, (index + 1) * BATCH)]
    inputs, outputs, spans = [], [], []
    for graph in graphs:
        ins, outs, grads = _symbolic(graph)
        spans.append((len(outputs), len(outs), len(grads)))
        inputs += ins
        outputs += outs + grads
    values = [graph.reference() for graph in graphs]
    gradients = [numeric_gradient(graph, range(len(graph.values))) for graph in graphs]
    return Batch(graphs, inputs, outputs, spans, values, gradients)


def _run(linker: str, inputs: list[Any], outputs: list[Any], args: list[Any]) -> list[Any]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*no CUDA device.*")
        fn = wb.function(inputs, outputs, linker=linker, on_unused_input="ignore")
    with np.errstate(all="ignore"):
        return [np.asarray(v) for v in fn(*args)]


def _compile_failures(linker: str, b: Batch) -> list[str]:
    """The graphs of batch `b` that do not compile or run on `linker`, one by one."""
    failures = []
    for graph in b.graphs:
        inputs, outputs, grads = _symbolic(graph)
        try:
            _run(linker, inputs, outputs + grads, list(graph.values))
        except Exception as exc:  # noqa: BLE001 - reported with the graph
            failures.append(f"{graph}\n  {type(exc).__name__}: {exc}")
    return failures


@functools.cache
def results(linker: str, index: int) -> list[Any]:
    b = batch(index)
    try:
        return _run(linker, b.inputs, b.outputs, b.args)
    except Exception:
        failures = _compile_failures(linker, b)
        pytest.fail(f"{len(failures)} graph(s) fail on {linker!r}:\n" + "\n".join(failures))


def _mismatches(b: Batch, got: list[Any], want: list[Any] | None, label: str) -> list[str]:
    """Graphs of `b` whose results `got` differ from the references (`want` None) or
    from `want` (another linker's results)."""
    found = []
    for graph, (first, n_values, n_grads), ref_values, ref_grads in zip(
            b.graphs, b.spans, b.values, b.gradients):
        for k in range(n_values + n_grads):
            is_value = k < n_values
            if want is not None:
                expected, rtol, atol = want[first + k], VM_RTOL, VM_ATOL
            elif is_value:
                expected, rtol, atol = ref_values[k], VALUE_RTOL, VALUE_ATOL
            else:
                expected, rtol, atol = ref_grads[k - n_values], GRAD_RTOL, GRAD_ATOL
            value = got[first + k]
            if not arrays_agree(value, expected, rtol=rtol, atol=atol):
                what = f"output {k}" if is_value else f"gradient wrt v{k - n_values}"
                found.append(f"{graph}\n  {what} on {label}: {value!r}\n  expected {expected!r}")
    return found


@pytest.mark.parametrize("index", range(GRAPHS // BATCH))
@pytest.mark.parametrize("linker", LINKERS)
def test_values_and_gradients_match_numpy(linker: str, index: int) -> None:
    b = batch(index)
    mismatches = _mismatches(b, results(linker, index), None, linker)
    assert not mismatches, f"{len(mismatches)} mismatch(es):\n" + "\n".join(mismatches)


@pytest.mark.parametrize("index", range(GRAPHS // BATCH))
@pytest.mark.parametrize("linker", [n for n in LINKERS if n != "py"])
def test_compiled_linkers_match_the_python_vm(linker: str, index: int) -> None:
    b = batch(index)
    mismatches = _mismatches(b, results(linker, index), results("py", index),
                             f"{linker} (vs py)")
    assert not mismatches, f"{len(mismatches)} mismatch(es):\n" + "\n".join(mismatches)


def test_the_batches_hold_the_promised_number_of_graphs() -> None:
    """GRAPHS distinct graphs, each with a step, an output and a gradient (not vacuous)."""
    graphs = [g for index in range(GRAPHS // BATCH) for g in batch(index).graphs]
    assert len(graphs) >= 200
    assert len({str(g).split(" (", 1)[1] for g in graphs}) > 0.9 * len(graphs)
    assert all(g.steps and g.outputs for g in graphs)
    assert sum(len(g.steps) for g in graphs) > 3 * len(graphs)


# -- DTYPE: the Python VM is the reference ------------------------------------------


@dataclass
class DtypeCase:
    """A DTYPE graph and what the Python VM gives for it: values, or an exception."""

    graph: RandomGraph
    values: list[np.ndarray] | None
    error: type[BaseException] | None

    def rtol(self) -> float:
        """Vector math differs from NumPy's by a few ulp: a float32 step anywhere (even
        in a float64 result) carries float32's error."""
        inputs, outputs = self.graph.symbolic()
        low = any(getattr(v.type, "dtype", None) == "float32"
                  for v in variables_between(inputs, outputs))
        return 1e-5 if low else 1e-12


def _run_graph(linker: str, graph: RandomGraph) -> list[np.ndarray]:
    inputs, outputs = graph.symbolic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's overflow and invalid-cast warnings
        return _run(linker, inputs, outputs, list(graph.values))


@functools.cache
def dtype_cases() -> list[DtypeCase]:
    cases = []
    for seed in range(DTYPE_GRAPHS):
        graph = generate(RngChooser(10_000 + seed), DTYPE, max_steps=6, label=f"seed {seed}")
        try:
            cases.append(DtypeCase(graph, _run_graph("py", graph), None))
        except Exception as exc:  # noqa: BLE001 - e.g. an integer to a negative power
            cases.append(DtypeCase(graph, None, type(exc)))
    return cases


def _dtype_mismatch(case: DtypeCase, got: list[np.ndarray], linker: str) -> list[str]:
    assert case.values is not None
    found = []
    for k, (value, want) in enumerate(zip(got, case.values)):
        if value.dtype != want.dtype or not arrays_agree(value, want, rtol=case.rtol()):
            found.append(f"{case.graph}\n  output {k} on {linker}: {value!r}\n"
                         f"  Python VM: {want!r}")
    return found


def _batched(linker: str, cases: list[DtypeCase]) -> dict[int, list[np.ndarray]]:
    """The results of the graphs of `cases` (which the VM runs without error) compiled
    as one function on `linker`, by index in `cases`; {} if the batch fails."""
    inputs, outputs, args, spans = [], [], [], {}
    for k, case in enumerate(cases):
        if case.error is None:
            ins, outs = case.graph.symbolic()
            spans[k] = (len(outputs), len(outs))
            inputs += ins
            outputs += outs
            args += list(case.graph.values)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = _run(linker, inputs, outputs, args)
    except Exception:  # noqa: BLE001 - the graphs are then run one by one
        return {}
    return {k: results[first:first + n] for k, (first, n) in spans.items()}


@pytest.mark.parametrize("linker", [n for n in LINKERS if n != "py"])
def test_dtype_corners_match_the_python_vm(linker: str) -> None:
    cases = dtype_cases()
    batched = _batched(linker, cases)
    mismatches, refused = [], 0
    for k, case in enumerate(cases):
        if k in batched:
            mismatches.extend(_dtype_mismatch(case, batched[k], linker))
            continue
        try:
            got = _run_graph(linker, case.graph)
        except UnsupportedDtypeError:
            refused += 1  # the backend's documented refusal (gpu: uint16/32/64)
            continue
        except Exception as exc:  # noqa: BLE001 - compared with the VM's
            if case.error is None or not isinstance(exc, case.error):
                mismatches.append(f"{case.graph}\n  {linker} raised {type(exc).__name__}: "
                                  f"{exc}\n  Python VM: {case.error or 'values'}")
            continue
        if case.error is not None:
            mismatches.append(f"{case.graph}\n  {linker} gave values, the Python VM raised "
                              f"{case.error.__name__}")
            continue
        mismatches.extend(_dtype_mismatch(case, got, linker))
    assert not mismatches, f"{len(mismatches)} mismatch(es):\n" + "\n".join(mismatches)
    assert refused < len(cases) / 2  # most graphs are compared
