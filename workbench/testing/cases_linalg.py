"""Catalogue cases of the products: `dot`, `matmul` (``@``), `tensordot`, `outer`,
`matvec` and `vecmat`, hence the `Dot` and `MatMul` Ops.

Shapes cover every rank combination numpy.dot and numpy.matmul accept (1-d
promotion, 0-d operands of dot), batch dimensions that broadcast, zero-size
inner and outer dimensions, transposed (non-contiguous) inputs, static shapes,
and int32/int64 and mixed float/int operands (promoted like numpy: float32 with
int32 gives float64). References are the numpy functions themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.testing.catalog import Arg, Case

__all__ = ["CASES"]

INT_ONLY = "no float inputs"
COMPLEX = "complex inputs (holomorphic gradients come later)"


def _wt() -> Any:
    import workbench.core.tensor as wt

    return wt


def _call(name: str, **kwargs: Any) -> Callable[..., Any]:
    """A builder calling the tensor function `name` on the symbolic inputs."""

    def build(*args: Any) -> Any:
        return getattr(_wt(), name)(*args, **kwargs)

    build.__name__ = name
    return build


def _ref(func: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    def reference(*args: Any) -> Any:
        return np.asarray(func(*args, **kwargs))

    return reference


def _matmul_operator(x: Any, y: Any) -> Any:
    return x @ y


def _method_dot(x: Any, y: Any) -> Any:
    return x.dot(y)


def _dot_transposed(x: Any, y: Any) -> Any:
    return _wt().dot(x.T, y.T)


def _np_dot_transposed(x: Any, y: Any) -> Any:
    return np.dot(x.T, y.T)


def _dot_cases() -> list[Case]:
    dot, ref = _call("dot"), _ref(np.dot)
    shapes = {
        "vector_vector": ((5,), (5,)),
        "matrix_vector": ((3, 4), (4,)),
        "vector_matrix": ((4,), (4, 3)),
        "matrix_matrix": ((3, 4), (4, 2)),
        "zero_inner": ((3, 0), (0, 2)),
        "zero_outer": ((0, 4), (4, 2)),
        "zero_vectors": ((0,), (0,)),
        "scalar_matrix": ((), (3, 4)),
        "matrix_scalar": ((2, 3), ()),
        "tensor3_matrix": ((2, 3, 4), (4, 5)),
        "tensor3_vector": ((2, 3, 4), (4,)),
        "matrix_tensor3": ((3, 4), (2, 4, 5)),
        "tensor3_tensor3": ((2, 3, 4), (2, 4, 3)),
    }
    cases = [Case(f"dot_{name}", dot, ref, (Arg(a), Arg(b))) for name, (a, b) in shapes.items()]
    cases += [
        Case("dot_static_shapes", dot, ref, (Arg((3, 4), static=True), Arg((4, 2), static=True))),
        Case("dot_method", _method_dot, ref, (Arg((3, 4)), Arg((4,)))),
        Case("dot_transposed_inputs", _dot_transposed, _np_dot_transposed,
             (Arg((4, 3)), Arg((2, 4)))),
        Case("dot_constant_operand", dot, ref, (Arg((3, 4)), Arg((4, 2), constant=True))),
        Case("dot_int32", dot, ref, (Arg((3, 4), "int32"), Arg((4, 2), "int32")),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("dot_int64_vectors", dot, ref, (Arg((6,), "int64"), Arg((6,), "int64")),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("dot_int32_int64", dot, ref, (Arg((2, 3), "int32"), Arg((3,), "int64")),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("dot_float_int32", dot, ref, (Arg((3, 4)), Arg((4, 2), "int32"))),
        Case("dot_complex", dot, ref, (Arg((3, 4), "complex128"), Arg((4, 2), "complex128")),
             float_dtypes=("float64",), grad=COMPLEX),
    ]
    return cases


def _matmul_cases() -> list[Case]:
    matmul, ref = _call("matmul"), _ref(np.matmul)
    shapes = {
        "matrix_matrix": ((3, 4), (4, 2)),
        "vector_matrix": ((4,), (4, 3)),
        "matrix_vector": ((3, 4), (4,)),
        "vector_vector": ((4,), (4,)),
        "batched": ((2, 3, 4), (2, 4, 5)),
        "broadcast_batch": ((2, 1, 3, 4), (5, 4, 2)),
        "broadcast_length_one_batch": ((1, 3, 4), (6, 4, 2)),
        "batch_matrix": ((3, 2, 4), (4, 5)),
        "matrix_batch": ((2, 4), (3, 4, 5)),
        "batch_vector": ((2, 3, 4), (4,)),
        "vector_batch": ((4,), (2, 4, 3)),
        "zero_batch": ((0, 3, 4), (4, 2)),
        "zero_inner_batched": ((2, 3, 0), (2, 0, 4)),
        "rank5_rank3": ((2, 1, 3, 2, 4), (3, 4, 2)),
    }
    cases = [
        Case(f"matmul_{name}", matmul, ref, (Arg(a), Arg(b))) for name, (a, b) in shapes.items()
    ]
    cases += [
        Case("matmul_operator", _matmul_operator, ref, (Arg((2, 3, 4)), Arg((4, 2)))),
        Case("matmul_static_batched", matmul, ref,
             (Arg((2, 1, 3, 4), static=True), Arg((5, 4, 2), static=True))),
        Case("matmul_int32_batched", matmul, ref, (Arg((2, 3, 4), "int32"),
                                                   Arg((2, 4, 2), "int32")),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("matmul_int64_broadcast", matmul, ref, (Arg((3, 1, 2, 3), "int64"),
                                                     Arg((4, 3, 2), "int64")),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("matmul_float_int32_batched", matmul, ref, (Arg((2, 3, 4)),
                                                         Arg((2, 4, 2), "int32"))),
    ]
    return cases


def _tensordot_cases() -> list[Case]:
    cases = []
    specs: list[tuple[str, tuple[int, ...], tuple[int, ...], Any]] = [
        ("axes2", (2, 3, 4), (3, 4, 5), 2),
        ("axes1", (2, 3, 4), (4, 5), 1),
        ("axes0_outer", (2, 3), (4,), 0),
        ("axes_pairs", (3, 2, 4), (2, 3, 5), ([1, 0], [0, 1])),
        ("negative_axes", (2, 3, 4), (4, 3), ([-1, -2], [0, 1])),
        ("single_int_axes", (3, 4), (5, 3), (0, 1)),
        ("full_contraction", (3, 4), (3, 4), 2),
        ("vector_vector", (4,), (4,), 1),
        ("free_axes_on_both_sides", (2, 3, 4, 5), (5, 4, 6, 2), ([2, 3], [1, 0])),
        ("zero_size", (0, 3), (3, 2), 1),
    ]
    for name, a, b, axes in specs:
        cases.append(Case(f"tensordot_{name}", _call("tensordot", axes=axes),
                          _ref(np.tensordot, axes=axes), (Arg(a), Arg(b))))
    cases.append(Case("tensordot_int32", _call("tensordot", axes=1),
                      _ref(np.tensordot, axes=1), (Arg((2, 3), "int32"), Arg((3, 4), "int32")),
                      float_dtypes=("float64",), grad=INT_ONLY))
    return cases


def _vector_product_cases() -> list[Case]:
    outer, outer_ref = _call("outer"), _ref(np.outer)
    matvec, matvec_ref = _call("matvec"), _ref(np.matvec)
    vecmat, vecmat_ref = _call("vecmat"), _ref(np.vecmat)
    return [
        Case("outer_vectors", outer, outer_ref, (Arg((3,)), Arg((4,)))),
        Case("outer_flattens", outer, outer_ref, (Arg((2, 3)), Arg((4,)))),
        Case("outer_scalar", outer, outer_ref, (Arg(()), Arg((3,)))),
        Case("outer_zero_size", outer, outer_ref, (Arg((0,)), Arg((3,)))),
        Case("outer_int32", outer, outer_ref, (Arg((3,), "int32"), Arg((2,), "int32")),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("matvec_matrix_vector", matvec, matvec_ref, (Arg((3, 4)), Arg((4,)))),
        Case("matvec_batched", matvec, matvec_ref, (Arg((2, 3, 4)), Arg((4,)))),
        Case("matvec_broadcast_batch", matvec, matvec_ref, (Arg((2, 3, 4)), Arg((5, 1, 4)))),
        Case("matvec_int64", matvec, matvec_ref, (Arg((2, 3, 4), "int64"), Arg((2, 4), "int64")),
             float_dtypes=("float64",), grad=INT_ONLY),
        Case("vecmat_vector_matrix", vecmat, vecmat_ref, (Arg((4,)), Arg((4, 3)))),
        Case("vecmat_batched", vecmat, vecmat_ref, (Arg((2, 4)), Arg((2, 4, 3)))),
        Case("vecmat_complex_conjugates", vecmat, vecmat_ref,
             (Arg((2, 3), "complex128"), Arg((3, 2), "complex128")),
             float_dtypes=("float64",), grad=COMPLEX),
    ]


CASES: list[Case] = _dot_cases() + _matmul_cases() + _tensordot_cases() + _vector_product_cases()
