"""Differential test: random graphs of the rewrite property test give the same values, and
the same gradients, on every available linker (py, c, gpu on torch's CPU device).

The graphs come from the grammar of tests/core/rewrite/test_rewrite_corpus.py (two
vectors and a scalar, +, -, *, /, exp, log of a positive, powers, sigmoid and the
constants the rewrites look for), compiled with FAST_RUN's rewrites on each linker:
100 graphs on py and gpu, every fourth of them on c as well (its compiler is slow).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")

import workbench.tensor as wt  # noqa: E402
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.core.compile.mode import available_linkers  # noqa: E402

_CORPUS = Path(__file__).parents[2] / "rewrite" / "test_rewrite_corpus.py"


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("_rewrite_corpus_generator", _CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


corpus = _load_generator()
LINKERS = sorted(set(available_linkers()) | {"gpu"}, key=lambda n: (n != "py", n))
#: Graphs per run, all on py and gpu; the C linker (about a second of compiling a graph)
#: takes every C_EVERY-th graph.
EXAMPLES = 100
C_EVERY = 4
_seen = [0]


def _evaluate(linker: str, inputs: list[Any], outputs: list[Any], args: list[Any]
              ) -> list[np.ndarray]:
    fn = wb.function(inputs, outputs, linker=linker, on_unused_input="ignore")
    return [np.asarray(v) for v in fn(*args)]


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(corpus.expressions)
def test_random_graphs_agree_on_every_linker_with_their_gradients(expr: Any) -> None:
    env = {"x": wt.dvector("x"), "y": wt.dvector("y"), "s": wt.dscalar("s")}
    out = corpus.build(expr, env)
    if not isinstance(out, wb.Variable) or out.owner is None:
        return
    inputs = [env["x"], env["y"], env["s"]]
    args = [corpus.VALUES["x"], corpus.VALUES["y"], corpus.VALUES["s"]]
    cost = out.sum()
    grads = wb.grad(cost, inputs, disconnected_inputs="ignore")
    outputs = [out, *grads]
    _seen[0] += 1
    linkers = [n for n in LINKERS if n != "c" or _seen[0] % C_EVERY == 0]
    with np.errstate(all="ignore"):
        results = {linker: _evaluate(linker, inputs, outputs, args) for linker in linkers}
    reference = results["py"]
    assume(all(np.all(np.isfinite(v)) and np.all(np.abs(v) < 1e12) for v in reference))
    for linker, values in results.items():
        for k, (var, got, want) in enumerate(zip(outputs, values, reference)):
            label = f"{expr}: output {k} on {linker!r}: {got!r} != {want!r}"
            assert got.dtype == want.dtype and got.shape == want.shape, label
            assert var.type.values_eq_approx(got, want), label
