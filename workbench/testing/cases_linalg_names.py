"""Catalogue cases of the numpy.linalg names composed in `numpy_names.py`: `matrix_rank`
(tol, rtol, hermitian, stacks, vectors), `cond` (every order, stacks, rectangular for
the 2-norms, exactly singular matrices giving inf), `multi_dot` (1-d ends, the chain
order from static shapes, unknown lengths), `matrix_transpose`, `vecdot` (axis,
broadcasting, integers) and `linalg.cross`. References are numpy.linalg's."""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.testing.catalog import Arg, Case, numpy_reference, tensor_function

__all__ = ["CASES"]

INTEGER_OUTPUT = "the output is an integer (a rank)"
SINGULAR = "a singular matrix: the condition number is inf"


def _call(name: str, *args: Any, **kwargs: Any) -> Any:
    return tensor_function(f"linalg.{name}", *args, **kwargs)


_np = numpy_reference


def _well_conditioned(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Random square matrices plus 3 I: distinct singular values, condition numbers
    of a few units (float32 keeps 1e-4 relative)."""
    m = rng.uniform(-1, 1, size=shape) + 3 * np.eye(shape[-1])
    return m.astype(dtype)


def _rank_deficient(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Matrices of rank min(m, n) - 1 (the first column repeated), stack entry 0 of rank
    1, so a stack holds different ranks."""
    m = rng.uniform(-1, 1, size=shape)
    m[..., :, 0] = m[..., :, 1]
    if len(shape) > 2:
        m[0] = np.outer(rng.uniform(1, 2, shape[-2]), rng.uniform(1, 2, shape[-1]))
    return m.astype(dtype)


def _symmetric_singular(rng: np.random.Generator, shape: tuple[int, ...], dtype: str
                        ) -> Any:
    """Symmetric matrices with eigenvalues 2, -1, 0, ... (rank 2)."""
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    w = np.zeros(shape[-1])
    w[:2] = (2.0, -1.0)
    return ((q * w) @ q.T).astype(dtype)


def _singular(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """An exactly singular stack: diag(1, 0) and the zero matrix."""
    return np.array([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]], dtype)


def _rank_cases() -> list[Case]:
    deficient = Arg((3, 4, 3), sample=_rank_deficient)
    return [
        Case("matrix_rank_stack", _call("matrix_rank"), _np(np.linalg.matrix_rank),
             (deficient,), grad=INTEGER_OUTPUT),
        Case("matrix_rank_wide", _call("matrix_rank"), _np(np.linalg.matrix_rank),
             (Arg((3, 5), sample=_rank_deficient),), grad=INTEGER_OUTPUT),
        Case("matrix_rank_rtol", _call("matrix_rank", rtol=0.5),
             _np(np.linalg.matrix_rank, rtol=0.5), (deficient,), grad=INTEGER_OUTPUT),
        Case("matrix_rank_tol", _call("matrix_rank", 1.0), _np(np.linalg.matrix_rank, 1.0),
             (Arg((2, 4, 4)),), grad=INTEGER_OUTPUT),
        Case("matrix_rank_hermitian", _call("matrix_rank", hermitian=True),
             _np(np.linalg.matrix_rank, hermitian=True),
             (Arg((4, 4), sample=_symmetric_singular),), grad=INTEGER_OUTPUT),
        Case("matrix_rank_vector", _call("matrix_rank"), _np(np.linalg.matrix_rank),
             (Arg((4,)),), grad=INTEGER_OUTPUT),
        Case("matrix_rank_int", _call("matrix_rank"), _np(np.linalg.matrix_rank),
             (Arg((3, 3), "int64"),), float_dtypes=("float64",), grad=INTEGER_OUTPUT),
    ]


def _cond_cases() -> list[Case]:
    square = Arg((2, 3, 3), sample=_well_conditioned)
    cases = []
    for name, p in (("default", None), ("2", 2), ("minus_2", -2), ("1", 1), ("minus_1", -1),
                    ("inf", np.inf), ("minus_inf", -np.inf), ("fro", "fro"), ("nuc", "nuc")):
        cases.append(Case(f"cond_{name}", _call("cond", p), _np(np.linalg.cond, p), (square,)))
    cases += [
        Case("cond_rectangular", _call("cond"), _np(np.linalg.cond), (Arg((3, 5)),)),
        Case("cond_minus_2_tall", _call("cond", -2), _np(np.linalg.cond, -2), (Arg((4, 2)),)),
        Case("cond_int", _call("cond", 1), _np(np.linalg.cond, 1), (Arg((3, 3), "int64"),),
             float_dtypes=("float64",), grad="no float inputs"),
    ]
    for name, p in (("default", None), ("minus_2", -2), ("1", 1), ("inf", np.inf),
                    ("fro", "fro")):
        cases.append(Case(f"cond_singular_{name}", _call("cond", p), _np(np.linalg.cond, p),
                          (Arg((2, 2, 2), sample=_singular),), grad=SINGULAR))
    return cases


def _multi_dot_cases() -> list[Case]:
    return [
        Case("multi_dot_two", _multi_dot, _np_multi_dot,
             (Arg((3, 4)), Arg((4, 2)))),
        Case("multi_dot_three_static", _multi_dot, _np_multi_dot,
             (Arg((6, 2), static=True), Arg((2, 5), static=True), Arg((5, 3), static=True))),
        Case("multi_dot_vector_ends_static", _multi_dot, _np_multi_dot,
             (Arg((5,), static=True), Arg((5, 7), static=True), Arg((7, 2), static=True),
              Arg((2, 4), static=True), Arg((4,), static=True))),
        Case("multi_dot_first_vector", _multi_dot, _np_multi_dot,
             (Arg((3,)), Arg((3, 4)), Arg((4, 2)))),
        Case("multi_dot_last_vector_unknown_lengths", _multi_dot, _np_multi_dot,
             (Arg((2, 3)), Arg((3, 4)), Arg((4, 2)), Arg((2,)))),
    ]


def _multi_dot(*arrays: Any) -> Any:
    import workbench.core.tensor as wt

    return wt.linalg.multi_dot(list(arrays))


def _np_multi_dot(*arrays: Any) -> Any:
    return np.asarray(np.linalg.multi_dot(arrays))


def _array_api_cases() -> list[Case]:
    return [
        Case("matrix_transpose", _call("matrix_transpose"), _np(np.linalg.matrix_transpose),
             (Arg((2, 3, 4)),)),
        Case("matrix_transpose_top_level", tensor_function("matrix_transpose"),
             _np(np.matrix_transpose), (Arg((3, 4)),)),
        Case("vecdot", _call("vecdot"), _np(np.linalg.vecdot), (Arg((2, 3, 4)), Arg((4,)))),
        Case("vecdot_axis_0_broadcast", _call("vecdot", axis=0),
             _np(np.linalg.vecdot, axis=0), (Arg((3, 1, 4)), Arg((3, 2, 1)))),
        Case("vecdot_top_level", tensor_function("vecdot"), _np(np.vecdot),
             (Arg((5,)), Arg((2, 5)))),
        Case("vecdot_int", _call("vecdot"), _np(np.linalg.vecdot),
             (Arg((2, 3), "int32"), Arg((2, 3), "int32")), float_dtypes=("float64",),
             grad="no float inputs"),
        Case("linalg_cross", _call("cross"), _np(np.linalg.cross), (Arg((2, 3)), Arg((3,)))),
        Case("linalg_cross_axis_0", _call("cross", axis=0), _np(np.linalg.cross, axis=0),
             (Arg((3, 2)), Arg((3, 2)))),
    ]


CASES: list[Case] = [*_rank_cases(), *_cond_cases(), *_multi_dot_cases(),
                     *_array_api_cases()]
