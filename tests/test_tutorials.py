"""Every tutorial in tutorials/ runs top to bottom in a fresh kernel (nbclient), and its
outputs say what the prose promises: checked on key printed values, not just "no error".

The notebooks are stored without outputs; this is checked too. Without nbclient and
ipykernel (the `widgets-test` extra) the execution tests skip, unless the CI
environment variable is set: then they fail.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import numpy as np
import pytest

from workbench.core.compile.mode import available_linkers

REPO = Path(__file__).resolve().parents[1]
TUTORIALS = REPO / "tutorials"
NAMES = [
    "01_graphs_types_and_static_shapes",
    "02_autodiff_in_the_classroom",
    "03_rewrites_step_by_step",
    "04_compiling_and_profiling",
    "05_your_own_type_and_op",
    "06_dtypes_and_promotion",
    "07_loops_rnn_and_bptt",
    "08_gaussian_process_regression",
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _read(name: str):
    import nbformat

    return nbformat.read(TUTORIALS / f"{name}.ipynb", as_version=4)


def test_the_tutorials_are_there_and_listed_in_the_readme():
    found = sorted(p.stem for p in TUTORIALS.glob("*.ipynb"))
    assert found == NAMES
    readme = (TUTORIALS / "README.md").read_text()
    for name in NAMES:
        assert f"{name}.ipynb" in readme, f"{name} is not listed in tutorials/README.md"


@pytest.mark.parametrize("name", NAMES)
def test_tutorials_are_stored_without_outputs(name):
    pytest.importorskip("nbformat")
    book = _read(name)
    assert book.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in book.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code), (
        f"{name}: clear the outputs before committing (Kernel > Restart and Clear Outputs)")
    assert "widgets" not in book.metadata  # no stored widget state either


# -- running them ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory):
    """name -> (notebook after a run in a fresh kernel, its text outputs per cell)."""
    missing = [m for m in ("nbclient", "nbformat", "ipykernel")
               if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"{missing} not installed (pip install -e '.[test,widgets-test]')"
        if _in_ci():
            pytest.fail(f"tutorials cannot run in CI: {reason}", pytrace=False)
        pytest.skip(f"tutorials not run: {reason}")
    from nbclient import NotebookClient

    # The kernel imports this checkout (not some other installed copy) and writes
    # nothing into the repository.
    env_path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    mp = pytest.MonkeyPatch()
    mp.setenv("PYTHONPATH", env_path)
    mp.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    workdir = tmp_path_factory.mktemp("tutorial-run")
    cache: dict[str, tuple] = {}

    def run(name: str):
        if name not in cache:
            book = _read(name)
            NotebookClient(book, timeout=120, startup_timeout=60, kernel_name="python3",
                           resources={"metadata": {"path": str(workdir)}}).execute()
            cache[name] = (book, [_cell_text(c) for c in book.cells])
        return cache[name]

    yield run
    mp.undo()


def _cell_text(cell) -> str:
    if cell.cell_type != "code":
        return ""
    parts: list[str] = []
    stdout_at = None  # index in parts of the stdout text still being written
    for out in cell.outputs:
        if out.output_type == "stream" and out.name == "stdout" and stdout_at is not None:
            # one print() can reach the notebook in pieces with stderr from a background
            # thread (a cold C compile) between them: keep the printed line whole
            parts[stdout_at] += out.text
        elif out.output_type == "stream":
            if out.name == "stdout":
                stdout_at = len(parts)
            parts.append(out.text)
        elif out.output_type == "error":
            stdout_at = None
            parts.append(f"ERROR {out.ename}: {out.evalue}")
        else:
            stdout_at = None
            data = out.get("data", {})
            parts.append(data.get("text/plain", ""))
            if WIDGET_VIEW in data:
                parts.append(f"<widget {data[WIDGET_VIEW]['model_id']}>")
    return "\n".join(parts)


def _all_text(texts: list[str]) -> str:
    return "\n".join(texts)


def _no_errors(book, name: str) -> None:
    for k, cell in enumerate(book.cells):
        for out in getattr(cell, "outputs", []):
            assert out.output_type != "error", f"{name} cell {k}: {out.ename}: {out.evalue}"
            if out.output_type == "stream" and out.name == "stderr":
                assert "Traceback" not in out.text, f"{name} cell {k}: {out.text}"


def _stray_values(book) -> list[str]:
    """The values a cell echoed by accident (its last line returned something, like
    `Add.0` after a dprint): every execute_result that is not a widget."""
    return [out.get("data", {}).get("text/plain", "") for c in book.cells
            if c.cell_type == "code" for out in c.outputs
            if out.output_type == "execute_result" and WIDGET_VIEW not in out.get("data", {})]


def _widgets_shown(book) -> int:
    return sum(1 for c in book.cells if c.cell_type == "code" for o in c.outputs
               if WIDGET_VIEW in o.get("data", {}))


def test_01_graphs_types_and_static_shapes(executed):
    book, texts = executed("01_graphs_types_and_static_shapes")
    _no_errors(book, "01")
    text = _all_text(texts)
    assert "x is a TensorVariable of type TensorType(float64, (?,))" in text
    assert "y was produced by: Elemwise{add}" in text and "x has an owner? False" in text
    assert "as a formula: exp(x) * 2.0 + x" in text
    # dprint shows x once with its letter and again by reference
    assert len(re.findall(r"\|x \[id D\]", text)) == 2
    assert "m: TensorType(float32, (?, 3)) | dtype float32 | shape (None, 3) | ndim 2" in text
    assert "m @ v        : TensorType(float32, (?,))" in text
    assert "m.sum(axis=0): TensorType(float32, (3,))" in text
    assert ("building a @ b failed: matmul: a has shape (2, 3) and b has shape (4, 5): inner "
            "dimensions 3 and 4 differ") in text
    assert "f(ones(2,3), [0,1,2]) = [3. 3.]" in text
    assert ("refused: expected an array of shape (?, 3) for TensorType(float32, (?, 3)), got "
            "shape (2, 4)") in text
    assert "m5: TensorType(float32, (5, 3))" in text and "SpecifyShape" in text
    assert "value of y at x = [0, 1, 2]: [ 2.          6.43656366 16.7781122 ]" in text
    assert _widgets_shown(book) == 1  # the GraphView


def test_02_autodiff_in_the_classroom(executed):
    book, texts = executed("02_autodiff_in_the_classroom")
    _no_errors(book, "02")
    text = _all_text(texts)
    assert "x = 0.7: y = +0.450952   grad = +1.179607   by hand = +1.179607" in text
    assert "grad agrees with the product rule" in text
    assert "Elemwise{Composite{(sin(i0) + (i0 * cos(i0)))}}" in text  # the compiled gradient
    # the recorded backward pass: two steps, then the sum of x's two contributions
    assert re.search(r"^0\s+Elemwise\{mul\}", text, re.M)
    assert re.search(r"^1\s+Elemwise\{sin\}", text, re.M)
    assert re.search(r"^\+\s+sum for x", text, re.M)
    assert "x receives 2 contributions at x = 0.7:" in text
    assert "= +0.644218" in text and "= +0.535390" in text and "= +1.179607" in text
    assert "3 entries: 2 backward steps and 1 sum; finite differences agree: True" in text
    assert "verify_grad: the symbolic gradient matches finite differences" in text
    assert "verify_grad caught the mistake:" in text
    assert _widgets_shown(book) == 1  # the GradExplorer
    # the drawing of y: x's two edges, the one into mul routed around sin's box
    from workbench.testing.drawings import layout_problems, svg_layout

    (svg,) = [o["data"]["image/svg+xml"] for c in book.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if "image/svg+xml" in o.get("data", {})]
    drawn = svg_layout(svg if isinstance(svg, str) else "".join(svg))
    x_key = next(k for k, b in drawn.boxes.items() if b.lines == ("x",))
    assert sum(e.source == x_key for e in drawn.edges) == 2 and layout_problems(drawn) == []


def test_03_rewrites_step_by_step(executed):
    book, texts = executed("03_rewrites_step_by_step")
    _no_errors(book, "03")
    text = _all_text(texts)
    assert "np.log(1 + tiny) =   0.0" in text and "np.log1p(tiny)   =   1e-17" in text
    assert "Elemwise{log1p} [id A]" in text
    assert "[1.00000000e-17 1.00000000e-10 4.05465108e-01]" in text
    assert re.search(r"local_log1p\s+stabilize\s+stabilize\s+-2/\+1", text)
    assert "before: log(1.0 + x)" in text and "after:  log1p(x)" in text
    assert "the stepper is at: step 2: local_log1p" in text
    assert re.search(r"elemwise_fusion\s+fusion\s+fusion\s+-5/\+1", text)
    assert "nodes: 7 before rewriting, 1 after" in text
    assert "without fusion: 5 nodes instead of 1" in text
    assert "log(1 + 1e-17) without local_log1p: 0.0" in text
    assert "log(1 + 1e-17) with it:             1e-17" in text
    assert re.search(r"step \d+: 5 Apply nodes removed, 1 introduced; \d+ graph nodes stay",
                     text)
    assert _widgets_shown(book) == 2  # the RewriteStepper of log1p, the one of fusion


def test_04_compiling_and_profiling_covers_every_available_linker(executed):
    book, texts = executed("04_compiling_and_profiling")
    _no_errors(book, "04")
    assert _stray_values(book) == []
    text = _all_text(texts)
    linkers = available_linkers()
    assert f"available linkers: {', '.join(linkers)}" in text
    for name in linkers:
        # timed by the profiler's repeated calls, with their spread
        assert re.search(rf"linker +{re.escape(name)}: +[\d.]+ us per call \(median of 50\), "
                         rf"fastest [\d.]+, slowest [\d.]+; agrees with py: True", text), name
        assert re.search(rf"== linker {re.escape(name)}: [\d.]+ us per call", text), name
        assert re.search(rf"linker +{re.escape(name)}: Gemm +[\d.]+ us per call, "
                         rf"all other nodes +-?[\d.]+ us", text), name
    assert "Gemm" in text and "Elemwise" in text  # the by-Op-class tables
    assert "% of the time in nodes" in text
    if "c" in linkers:  # which BLAS the C linker's Gemm calls, and whether NumPy's
        assert re.search(r"Gemm in both py and c: OpenBLAS [\d.]+, the library bundled "
                         r"with NumPy|Gemm: py calls NumPy's BLAS, c calls|the C linker has "
                         r"no BLAS here", text)
    others = [n for n in linkers if n != "py"]
    for name in others:
        assert f"---- py vs {name} ----" in text and f"function: py vs {name}" in text
    if not others:
        assert "only the py linker is available here" in text
    assert f"profiled with: {', '.join(linkers)}" in text
    assert _widgets_shown(book) == 1  # the ProfilePanel


def test_05_your_own_type_and_op(executed):
    book, texts = executed("05_your_own_type_and_op")
    _no_errors(book, "05")
    assert _stray_values(book) == []  # no `Out: Add.0` after the gradient's dprint
    text = _all_text(texts)
    assert "refused: expected a float, got int 2" in text
    assert "refused: a double cannot hold 1152921504606846977 exactly" in text
    assert "f(3, 2) = 18.0" in text and "ints are filtered into floats" in text
    assert "du/dx = 10.0 (y*w = 10), du/dy = 15.0 (x*w = 15), du/dw = 6.0 (x*y = 6)" in text
    assert "dz/dx = 12.0 (2*x*y = 12), dz/dy = 9.0 (x*x = 9)" in text  # x used twice
    assert "the Op's C: out = a * b;" in text
    assert "with the py linker: f(3, 2) = 18.0" in text
    if "c" in available_linkers():
        assert "with the C linker:  f(3, 2) = 18.0" in text
        assert text.count("ran on backend C") == 2  # both CMul nodes ran their c_code
    else:
        assert "The C linker is not available on this machine" in text


def test_05_op_from_graph_and_vectorize(executed):
    book, texts = executed("05_your_own_type_and_op")
    text = _all_text(texts)
    assert text.count("dense_layer [id") >= 2 and "dense_layer of [id" in text
    cost = re.search(r"cost: (-?[\d.]+) == NumPy's (-?[\d.]+)", text)
    assert cost and cost.group(1) == cost.group(2)
    assert "d cost / d W1 has shape (3, 3)" in text
    assert "a batch of 7: (7, 2)" in text


def test_06_dtypes_and_promotion(executed):
    book, texts = executed("06_dtypes_and_promotion")
    _no_errors(book, "06")
    assert _stray_values(book) == []
    text = _all_text(texts)
    assert "promote_types(int8, uint8) = int16" in text
    assert "promote_types(int32, float32) = float64" in text
    assert "promote_types(float16, bfloat16) = float32" in text
    assert re.search(r"^\s+int8\s+int8\s+int16\s+int8\s+int32", text, re.M)  # a table row
    assert "result_type(float32, 2.5) = float32" in text
    assert "float32 vector + 2.5    -> TensorType(float32, (?,))" in text
    assert "int32 + float32 vectors -> TensorType(float64, (?,))" in text
    assert "inside the block: int32 vector * 1.5 -> TensorType(float32, (?,))" in text
    block = text.split("inside the block")[1].split("after the block")[0]
    assert "Elemwise{Cast{float32}}" in block  # i is cast to float32, the dtype of 1.5
    assert "after the block:  int32 vector * 1.5 -> TensorType(float64, (?,))" in text
    assert "can_cast(300, int8, 'safe') = False" in text
    assert "can_cast('float64', float32, 'same_kind') = True" in text
    assert "without a casting mode: Elemwise{exp} on backend 'toy' does not support" in text
    assert "Elemwise{Cast{float32}}" in text and "Elemwise{Cast{bfloat16}}" in text
    assert "result dtype: bfloat16" in text
    assert "resolve_unsupported('bfloat16', 'toy', mode='upcast') = float32" in text
    # every backend, with what it lacks, in a fresh kernel (c and gpu declare lazily)
    assert "backend 'py' lacks: nothing" in text
    assert "backend 'c' lacks: bfloat16, float16" in text
    if importlib.util.find_spec("torch") is not None:
        assert re.search(r"backend 'gpu' lacks: \w", text)


def test_04_random_draws_monte_carlo_pi_and_dropout(executed):
    book, texts = executed("04_compiling_and_profiling")
    text = _all_text(texts)
    estimates = re.search(r"pi ~ ([\d.]+), ([\d.]+), ([\d.]+) \(new draws at each call\)", text)
    assert estimates, text
    values = [float(v) for v in estimates.groups()]
    assert all(abs(v - np.pi) < 0.03 for v in values) and len(set(values)) == 3
    assert "re-seeded, the same three: True" in text
    assert "-> update of rng0" in text  # dprint shows where the state flows
    # the profiler shows the draw, advancing its updated generator in place
    assert re.search(r"bernoulli_rv\{int64, inplace\}", text)


def test_08_gaussian_process_regression(executed):
    book, texts = executed("08_gaussian_process_regression")
    _no_errors(book, "08")
    assert _stray_values(book) == []
    text = _all_text(texts)
    assert "nll: TensorType(float64, ())" in text
    assert "nll at the start: 31.3623" in text
    assert "verify_grad: the gradient through cholesky, cho_solve and the log-determinant" in text
    fitted = re.search(r"after 200 gradient steps: nll (-?[\d.]+), lengthscale ([\d.]+), "
                       r"signal sd ([\d.]+), noise sd ([\d.]+)", text)
    assert fitted and float(fitted.group(1)) < 0 and 0.05 < float(fitted.group(4)) < 0.2
    assert "GP mean : [-0.759 -0.803 -0.029  0.853  0.918]" in text
    assert re.search(r"SolveTriangular +4 node\(s\) per call", text)
    assert re.search(r"Cholesky +1 node\(s\) per call", text)
    assert re.search(r"CholeskyGrad +1 node\(s\) per call", text)
    naive = re.search(r"naive nll: (-?[\d.]+), cholesky nll: (-?[\d.]+)", text)
    assert naive and abs(float(naive.group(1)) - float(naive.group(2))) < 1e-5
    # the shapes are known when run: inv's square check and the product's stay; the
    # product as written stays too, for a K or y that is not finite (a lazy branch)
    step = re.search(r"local_inv_dot_to_solve in pass 'stabilize'\n +removed: +Dot\n"
                     r" +introduced: +(.*)\n", text)
    assert step, text
    assert re.search(r"ShapeCheck\{function=inv, [^}]*\}, ShapeCheck\{function=dot, [^}]*\}, "
                     r"Solve\{[^}]*\}, Dot, IfElse", step.group(1))
    assert re.search(r"local_log_det_to_slogdet in pass 'stabilize'\n +removed: +"
                     r"Elemwise\{log\}, Det\n +introduced: +SLogDet", text)
    assert re.search(r"the stepper is at: step \d+: local_inv_dot_to_solve", text)
    assert _widgets_shown(book) == 1  # the RewriteStepper


def test_07_loops_rnn_and_bptt(executed):
    book, texts = executed("07_loops_rnn_and_bptt")
    _no_errors(book, "07")
    assert _stray_values(book) == []
    text = _all_text(texts)
    assert "hs: TensorType(float64, (?, ?))   predictions: TensorType(float64, (?,))" in text
    assert " >loop body of [id A]:" in text and " > | | | |x[t]" in text
    assert "verify_grad: BPTT matches finite differences" in text
    assert "d cost / d U3 is the sum of 3 contributions, one per time step:" in text
    assert "equal to the sum: True" in text
    assert "the loss went down: True" in text
    assert "scan_push_out_invariants: 1 step(s)" in text
    assert "rewrite_inner_graph: 2 step(s)" in text
    assert re.search(r"Inside Scan\{rnn, for\} \(300 steps", text)
    assert re.search(r"300  (C|Python)  +.*x\[t\]", text)
    assert "1 loop expanded: collapse loop" in text
    assert _widgets_shown(book) == 2  # the GradExplorer and the GraphView
