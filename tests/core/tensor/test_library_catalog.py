"""The whole library catalogue checked against NumPy, and checked for completeness.

Every `Case` of every `workbench/testing/cases_*.py` module is compiled with
`function` (the Python VM) and run on its random inputs; each output must
match the NumPy reference (values within the dtype's tolerance, NaN at the
same places), have exactly its Variable's dtype, the reference's shape, the
static lengths its Type promises, and the shape the Ops' `infer_shape`
methods predict. A library Op class (or scalar Op) without a case fails
`test_every_library_op_has_a_case`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from workbench.core import dtypes
from workbench.core.compile.function import function
from workbench.core.graph.basic import Constant, Variable, graph_inputs, io_toposort
from workbench.core.graph.op import Op
from workbench.core.graph.utils import MethodNotDefined
from workbench.core.scalar.basic import Cast
from workbench.core.scalar.composite import Composite
from workbench.core.scalar.math import ALL_OPS
from workbench.core.tensor.shape import shape_i
from workbench.testing.catalog import (
    FLOAT,
    Case,
    _case_modules,
    all_cases,
    library_op_classes,
    op_classes_in,
)

#: Cases failing because of a known bug in the library (not in the case), by family.name.
#: strict xfail: once the bug is fixed the entry must go.
KNOWN_BUGS: dict[str, str] = {}

CASES = all_cases()


def _marks(case: Case) -> list[Any]:
    reason = KNOWN_BUGS.get(f"{case.family}.{case.name}")
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


PARAMS = [pytest.param(case, float_dtype, id=f"{case.family}.{case.name}[{float_dtype}]",
                       marks=_marks(case))
          for case in CASES for float_dtype in case.float_dtypes]

#: Reference dtypes an implementation must keep rather than widen (float32 stays float32).
NARROW = {np.dtype(np.float32), np.dtype(np.complex64), np.dtype(np.float16),
          dtypes.bfloat16.numpy}

LIBRARY_PACKAGES = ("workbench.core.tensor", "workbench.core.ifelse")


def _as_list(outputs: Any) -> list[Any]:
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


# -- infer_shape ---------------------------------------------------------------------


def _input_shape(var: Variable) -> tuple[Any, ...] | None:
    """The shape a graph input feeds to infer_shape: data lengths or symbolic Shape_i."""
    ndim = getattr(var.type, "ndim", None)
    if isinstance(var, Constant):
        return tuple(int(n) for n in np.shape(var.data))
    if ndim is None:
        return None
    return tuple(shape_i(var, d) for d in range(ndim))


def symbolic_shapes(outputs: Sequence[Variable]) -> dict[Variable, tuple[Any, ...] | None]:
    """The shape of every Variable of the graph, as `infer_shape` computes it node by node."""
    shapes: dict[Variable, tuple[Any, ...] | None] = {}
    roots = graph_inputs(outputs)
    for var in roots:
        shapes[var] = _input_shape(var)
    for node in io_toposort(roots, outputs):
        in_shapes = [shapes[v] for v in node.inputs]
        try:
            out_shapes = node.op.infer_shape(None, node, in_shapes)
        except (MethodNotDefined, NotImplementedError) as exc:
            raise AssertionError(f"{node.op} ({type(node.op).__name__}) has no infer_shape: "
                                 f"{exc}") from None
        assert len(out_shapes) == len(node.outputs), (
            f"{node.op}.infer_shape returned {len(out_shapes)} shapes for "
            f"{len(node.outputs)} outputs"
        )
        for var, shape in zip(node.outputs, out_shapes):
            ndim = getattr(var.type, "ndim", None)
            if ndim is None or shape is None:
                shapes[var] = None
                continue
            shape = tuple(shape)
            assert len(shape) == ndim, (
                f"{node.op}.infer_shape gave {len(shape)} lengths for an output of rank {ndim}"
            )
            shapes[var] = shape
    return shapes


def evaluate_shapes(inputs: list[Variable], values: list[Any],
                    shapes: list[tuple[Any, ...] | None]) -> list[tuple[int, ...] | None]:
    """Compile the symbolic lengths in `shapes` and return every shape as ints."""
    symbolic = [n for shape in shapes if shape is not None for n in shape
                if isinstance(n, Variable) and not isinstance(n, Constant)]
    computed: dict[int, int] = {}
    if symbolic:
        results = function(inputs, symbolic, on_unused_input="ignore")(*values)
        for var, value in zip(symbolic, results):
            assert np.ndim(value) == 0, f"infer_shape gave a length {var} of shape {value.shape}"
            computed[id(var)] = int(value)

    def length(n: Any) -> int:
        if isinstance(n, Constant):
            return int(n.data)
        if isinstance(n, Variable):
            return computed[id(n)]
        return int(n)

    return [None if shape is None else tuple(length(n) for n in shape) for shape in shapes]


# -- values against NumPy --------------------------------------------------------------


def assert_matches(got: Any, want: Any, case: Case, out_dtype: Any, label: str) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape, f"{label}: shape {got.shape}, NumPy says {want.shape}"
    d = dtypes.as_dtype(out_dtype)
    if d.is_float or d.is_complex:
        wide = np.complex128 if d.is_complex or want.dtype.kind == "c" else np.float64
        rtol, atol = case.tolerance(str(d))
        np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(got, want, err_msg=label, strict=False)


@pytest.mark.parametrize(("case", "float_dtype"), PARAMS)
def test_case_matches_numpy(case: Case, float_dtype: str) -> None:
    inputs, outputs, values = case.graph(float_dtype)
    outs = _as_list(outputs)
    saved = [np.copy(v) for v in values]
    results = function(inputs, outs, on_unused_input="ignore")(*values)
    expected = _as_list(case.expected(float_dtype))
    assert len(results) == len(expected), (
        f"the graph has {len(results)} outputs, the reference {len(expected)}"
    )
    for value, before in zip(values, saved):
        np.testing.assert_array_equal(value, before, err_msg="an input value was modified")

    inferred = evaluate_shapes(inputs, values, [symbolic_shapes(outs).get(o) for o in outs])
    for k, (var, got, want, shape) in enumerate(zip(outs, results, expected, inferred)):
        label = f"{case.family}.{case.name}[{float_dtype}] output {k} ({var.type})"
        assert isinstance(got, np.ndarray), f"{label}: got {type(got).__name__}, not an ndarray"
        assert dtypes.as_dtype(got.dtype) == var.type.dtype, (
            f"{label}: value of dtype {got.dtype}, its Type says {var.type.dtype}"
        )
        want_dtype = np.asarray(want).dtype
        if want_dtype in NARROW:
            assert got.dtype == want_dtype, f"{label}: {got.dtype} where NumPy keeps {want_dtype}"
        assert_matches(got, want, case, var.type.dtype, label)
        for d, static in enumerate(var.type.shape):
            assert static is None or static == got.shape[d], (
                f"{label}: static length {static} of dimension {d}, actual {got.shape[d]}"
            )
        assert shape == got.shape, f"{label}: infer_shape says {shape}, actual {got.shape}"


# -- completeness ------------------------------------------------------------------------


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    stack = [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return found


def required_op_classes() -> set[type]:
    """Every Op class of the library that needs a case.

    The tensor library's classes (`library_op_classes`), plus concrete subclasses
    of a base marked ``abstract = True`` (the mark applies to the class that
    sets it, not to its subclasses), plus every scalar Op class of ALL_OPS and
    the scalar Ops that have no shared instance (Cast, Composite).
    """
    required = set(library_op_classes(LIBRARY_PACKAGES))
    for cls in _subclasses(Op):
        if (cls.__module__.startswith(LIBRARY_PACKAGES)
                and not inspect.isabstract(cls)
                and not vars(cls).get("abstract", False)):
            required.add(cls)
    required |= {type(op) for op in ALL_OPS.values()}
    required |= {Cast, Composite}
    return required


def uncovered_classes(cases: Sequence[Case]) -> set[type]:
    """The required Op classes that no graph of `cases` uses."""
    covered: set[type] = set()
    for case in cases:
        _, outputs, _ = case.graph(case.float_dtypes[0])
        covered |= op_classes_in(outputs)
    return required_op_classes() - covered


def test_every_library_op_has_a_case() -> None:
    missing = uncovered_classes(CASES)
    shown = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in missing)
    assert not missing, (
        f"{len(missing)} Op classes have no case in workbench/testing/cases_*.py "
        "(add a Case using each, or mark an abstract base with `abstract = True`):\n  "
        + "\n  ".join(shown)
    )


def test_a_missing_case_is_reported() -> None:
    from workbench.core.scalar.math import Clip

    def uses_clip(case: Case) -> bool:
        _, outputs, _ = case.graph(case.float_dtypes[0])
        return Clip in op_classes_in(outputs)

    # other families (e.g. interp) use Clip too: drop every case whose graph does
    without_clip = [c for c in CASES if not uses_clip(c)]
    assert Clip in uncovered_classes(without_clip)
    assert Clip not in uncovered_classes([c for c in CASES if c.name == "clip"])


def test_required_classes_include_the_elementwise_core() -> None:
    from workbench.core.scalar.math import Clip, Exp
    from workbench.core.tensor.elemwise import DimShuffle, Elemwise
    from workbench.core.tensor.shape import Shape, Shape_i, SpecifyShape

    required = required_op_classes()
    assert {Elemwise, DimShuffle, Shape, Shape_i, SpecifyShape, Exp, Clip, Cast,
            Composite} <= required


def test_op_classes_in_sees_scalar_ops_inside_elemwise() -> None:
    import workbench.core.tensor as wt
    from workbench.core.scalar.math import Add, Exp
    from workbench.core.tensor.elemwise import DimShuffle, Elemwise

    x = wt.dmatrix("x")
    found = op_classes_in(wt.exp(x) + wt.dvector("y"))
    assert {Elemwise, Exp, Add, DimShuffle} <= found


# -- the catalogue itself ------------------------------------------------------------------


def test_catalogue_names_are_unique() -> None:
    ids = [param.id for param in PARAMS]
    assert len(ids) == len(set(ids))
    names = [f"{case.family}.{case.name}" for case in CASES]
    assert len(names) == len(set(names))


def test_catalogue_names_are_plain() -> None:
    """Names become test ids and file names: letters, digits and underscores only."""
    for case in CASES:
        assert case.name.replace("_", "").isalnum(), case.name
        assert case.family.replace("_", "").isalnum(), case.family


def test_every_family_module_has_cases() -> None:
    modules = _case_modules()
    assert modules, "no workbench/testing/cases_*.py module found"
    for module in modules:
        assert isinstance(module.CASES, list) and module.CASES, module.__name__
        assert all(isinstance(case, Case) for case in module.CASES), module.__name__


def test_case_fields_are_valid() -> None:
    for case in CASES:
        where = f"{case.family}.{case.name}"
        assert case.float_dtypes, where
        assert len(set(case.float_dtypes)) == len(case.float_dtypes), where
        for d in case.float_dtypes:
            assert dtypes.as_dtype(d).is_float, f"{where}: float_dtypes has {d}"
        for arg in case.args:
            if arg.dtype != FLOAT:
                dtypes.as_dtype(arg.dtype)  # raises for an unknown dtype
        assert case.grad is True or case.grad is False or (
            isinstance(case.grad, str) and case.grad
        ), f"{where}: grad must be a bool or a non-empty reason"
        assert callable(case.build) and callable(case.reference), where


def test_case_values_are_reproducible() -> None:
    for case in CASES:
        for first, second in zip(case.values(case.float_dtypes[0]),
                                 case.values(case.float_dtypes[0])):
            np.testing.assert_array_equal(first, second)


def test_case_graphs_are_fresh() -> None:
    """Building a case twice gives two independent graphs (no Variables shared)."""
    for case in CASES:
        first, _, _ = case.graph(case.float_dtypes[0])
        second, _, _ = case.graph(case.float_dtypes[0])
        assert not set(map(id, first)) & set(map(id, second)), case.name
