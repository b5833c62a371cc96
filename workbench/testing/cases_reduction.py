"""Catalogue cases of reductions, the softmax family and cumulative operations.

Covers `workbench.core.tensor.reduction` (sum, prod, max, min, all, any, mean,
var, std, argmax, argmin and a bare CAReduce), `workbench.core.tensor.special`
(softmax, log_softmax, logsumexp) and `workbench.core.tensor.extra_ops`
(cumsum, cumprod): axes None, int, negative and tuples, keepdims, 0-d inputs,
zero-size inputs where the operation has an identity, integer and bool dtypes.
The references are NumPy; logsumexp and the softmaxes use the stable formulas
written below (scipy is not a dependency).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core import scalar
from workbench.testing.catalog import Arg, Case

INT_OUTPUT = "integer output"
BOOL_OUTPUT = "boolean output"
INT_INPUTS = "integer inputs"
ONLY_FLOAT64 = ("float64",)  # for cases without float inputs: one run is enough


def _case(name: str, build: Callable[..., Any], reference: Callable[..., Any], *args: Arg,
          **options: Any) -> Case:
    return Case(name=name, build=build, reference=reference, args=tuple(args), **options)


# -- stable NumPy references ----------------------------------------------------------


def np_logsumexp(a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    """log(sum(exp(a))) with the max subtracted (non-finite maxima replaced by 0)."""
    shift = np.max(a, axis=axis, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(shift), shift, 0)
    with np.errstate(divide="ignore"):  # log(0) = -inf for an empty axis
        out = np.log(np.sum(np.exp(a - shift), axis=axis, keepdims=True)) + shift
    return out if keepdims else np.squeeze(out, axis=axis)


def np_softmax(a: np.ndarray, axis: Any = -1) -> np.ndarray:
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def np_log_softmax(a: np.ndarray, axis: Any = -1) -> np.ndarray:
    shifted = a - np.max(a, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _float_of(x: np.ndarray) -> np.ndarray:
    """What softmax-like Ops compute on: ints become float64 (the default float)."""
    return x if x.dtype.kind == "f" else x.astype(np.float64)


# -- reductions -----------------------------------------------------------------------

M34 = Arg((3, 4))
T234 = Arg((2, 3, 4))
SCALAR = Arg(())
EMPTY_ROWS = Arg((0, 3))


def _reduction_cases() -> list[Case]:
    cases = [
        # sum
        _case("sum_all", lambda x: x.sum(), lambda x: np.sum(x), M34),
        _case("sum_axis0", lambda x: x.sum(axis=0), lambda x: np.sum(x, axis=0), M34),
        _case("sum_axis_neg", lambda x: x.sum(axis=-1), lambda x: np.sum(x, axis=-1), T234),
        _case("sum_axes_tuple", lambda x: x.sum(axis=(0, 2)), lambda x: np.sum(x, axis=(0, 2)),
              T234),
        _case("sum_keepdims", lambda x: x.sum(axis=1, keepdims=True),
              lambda x: np.sum(x, axis=1, keepdims=True), T234),
        _case("sum_all_keepdims", lambda x: x.sum(keepdims=True),
              lambda x: np.sum(x, keepdims=True), M34),
        _case("sum_0d", lambda x: x.sum(), lambda x: np.sum(x), SCALAR),
        _case("sum_0d_axis0", lambda x: x.sum(axis=0), lambda x: np.sum(x, axis=0), SCALAR),
        _case("sum_empty_axis", lambda x: x.sum(axis=0), lambda x: np.sum(x, axis=0), EMPTY_ROWS),
        _case("sum_empty_all", lambda x: x.sum(), lambda x: np.sum(x), Arg((2, 0))),
        _case("sum_no_axes", lambda x: x.sum(axis=()), lambda x: np.sum(x, axis=()), M34),
        _case("sum_static", lambda x: x.sum(axis=1), lambda x: np.sum(x, axis=1),
              Arg((3, 4), static=True)),
        _case("sum_of_list", lambda x: _tensor_function("sum")(x.tolist(), axis=0),
              lambda x: np.sum(x.tolist(), axis=0), Arg((2, 3), constant=True),
              float_dtypes=ONLY_FLOAT64),
        _case("sum_int32", lambda x: x.sum(axis=0), lambda x: np.sum(x, axis=0),
              Arg((3, 4), dtype="int32"), float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        _case("sum_int8_keepdims", lambda x: x.sum(axis=-1, keepdims=True),
              lambda x: np.sum(x, axis=-1, keepdims=True),
              Arg((2, 3, 4), dtype="int8", low=-100, high=100),
              float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        _case("sum_uint8", lambda x: x.sum(), lambda x: np.sum(x),
              Arg((3, 4), dtype="uint8", low=0, high=255), float_dtypes=ONLY_FLOAT64,
              grad=INT_INPUTS),
        _case("sum_bool", lambda x: x.sum(axis=1), lambda x: np.sum(x, axis=1),
              Arg((3, 4), dtype="bool"), float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        _case("sum_dtype_float32", lambda x: x.sum(axis=0, dtype="float32"),
              lambda x: np.sum(x, axis=0, dtype=np.float32), Arg((3, 4), dtype="int16"),
              float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        # prod
        _case("prod_all", lambda x: x.prod(), lambda x: np.prod(x), Arg((3, 4), low=0.5, high=1.5)),
        _case("prod_axis1", lambda x: x.prod(axis=1), lambda x: np.prod(x, axis=1), M34),
        _case("prod_axes_keepdims", lambda x: x.prod(axis=(0, 2), keepdims=True),
              lambda x: np.prod(x, axis=(0, 2), keepdims=True), T234),
        _case("prod_empty_axis", lambda x: x.prod(axis=0), lambda x: np.prod(x, axis=0),
              EMPTY_ROWS),
        _case("prod_0d", lambda x: x.prod(), lambda x: np.prod(x), SCALAR),
        _case("prod_int16", lambda x: x.prod(axis=-1), lambda x: np.prod(x, axis=-1),
              Arg((3, 4), dtype="int16"), float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        # max / min
        _case("max_all", lambda x: x.max(), lambda x: np.max(x), M34),
        _case("max_axis0", lambda x: x.max(axis=0), lambda x: np.max(x, axis=0), M34),
        _case("max_neg_axes_keepdims", lambda x: x.max(axis=(-1, -3), keepdims=True),
              lambda x: np.max(x, axis=(-1, -3), keepdims=True), T234),
        _case("max_0d", lambda x: x.max(), lambda x: np.max(x), SCALAR),
        _case("max_zero_rows", lambda x: x.max(axis=1), lambda x: np.max(x, axis=1), EMPTY_ROWS),
        _case("max_int32", lambda x: x.max(axis=1), lambda x: np.max(x, axis=1),
              Arg((3, 4), dtype="int32"), float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        _case("min_all", lambda x: x.min(), lambda x: np.min(x), M34),
        _case("min_axis_neg", lambda x: x.min(axis=-1), lambda x: np.min(x, axis=-1), T234),
        _case("min_keepdims", lambda x: x.min(axis=0, keepdims=True),
              lambda x: np.min(x, axis=0, keepdims=True), M34),
        _case("min_0d", lambda x: x.min(), lambda x: np.min(x), SCALAR),
        _case("min_uint8", lambda x: x.min(axis=(0, 1)), lambda x: np.min(x, axis=(0, 1)),
              Arg((2, 3, 4), dtype="uint8", low=0, high=255), float_dtypes=ONLY_FLOAT64,
              grad=INT_INPUTS),
        # all / any
        _case("all_bool_axis0", lambda x: x.all(axis=0), lambda x: np.all(x, axis=0),
              Arg((3, 4), dtype="bool"), float_dtypes=ONLY_FLOAT64, grad=BOOL_OUTPUT),
        _case("all_bool_keepdims", lambda x: x.all(axis=(0, 2), keepdims=True),
              lambda x: np.all(x, axis=(0, 2), keepdims=True), Arg((2, 3, 4), dtype="bool"),
              float_dtypes=ONLY_FLOAT64, grad=BOOL_OUTPUT),
        _case("all_empty_axis", lambda x: x.all(axis=0), lambda x: np.all(x, axis=0),
              Arg((0, 3), dtype="bool"), float_dtypes=ONLY_FLOAT64, grad=BOOL_OUTPUT),
        _case("all_float", lambda x: x.all(axis=-1), lambda x: np.all(x, axis=-1), M34,
              grad=BOOL_OUTPUT),
        _case("all_0d", lambda x: x.all(), lambda x: np.all(x), Arg((), dtype="bool"),
              float_dtypes=ONLY_FLOAT64, grad=BOOL_OUTPUT),
        _case("any_bool_all", lambda x: x.any(), lambda x: np.any(x), Arg((3, 4), dtype="bool"),
              float_dtypes=ONLY_FLOAT64, grad=BOOL_OUTPUT),
        _case("any_bool_axis_neg", lambda x: x.any(axis=-1), lambda x: np.any(x, axis=-1),
              Arg((2, 3, 4), dtype="bool"), float_dtypes=ONLY_FLOAT64, grad=BOOL_OUTPUT),
        _case("any_empty_axis", lambda x: x.any(axis=0, keepdims=True),
              lambda x: np.any(x, axis=0, keepdims=True), Arg((0, 3), dtype="bool"),
              float_dtypes=ONLY_FLOAT64, grad=BOOL_OUTPUT),
        _case("any_int32", lambda x: x.any(axis=1), lambda x: np.any(x, axis=1),
              Arg((3, 4), dtype="int32", low=0, high=1), float_dtypes=ONLY_FLOAT64,
              grad=BOOL_OUTPUT),
        # a bare CAReduce: bitwise or of integers, maximum of floats
        _case("careduce_or_int32", _careduce(scalar.or_, (0,)),
              lambda x: np.bitwise_or.reduce(x, axis=0), Arg((3, 4), dtype="int32", high=100),
              float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        _case("careduce_maximum", _careduce(scalar.maximum, (1,)),
              lambda x: np.maximum.reduce(x, axis=1), M34),
        # mean / var / std
        _case("mean_all", lambda x: x.mean(), lambda x: np.mean(x), M34),
        _case("mean_axes_tuple", lambda x: x.mean(axis=(0, -1)),
              lambda x: np.mean(x, axis=(0, -1)), T234),
        _case("mean_keepdims", lambda x: x.mean(axis=1, keepdims=True),
              lambda x: np.mean(x, axis=1, keepdims=True), M34),
        _case("mean_0d", lambda x: x.mean(), lambda x: np.mean(x), SCALAR),
        _case("mean_static", lambda x: x.mean(axis=0), lambda x: np.mean(x, axis=0),
              Arg((3, 4), static=True)),
        _case("mean_int32", lambda x: x.mean(axis=0), lambda x: np.mean(x, axis=0),
              Arg((3, 4), dtype="int32", low=-50, high=50), float_dtypes=ONLY_FLOAT64,
              grad=INT_INPUTS),
        _case("var_all", lambda x: x.var(), lambda x: np.var(x), M34),
        _case("var_axis1_ddof1", lambda x: x.var(axis=1, ddof=1),
              lambda x: np.var(x, axis=1, ddof=1), M34),
        _case("var_keepdims", lambda x: x.var(axis=(0, 2), keepdims=True),
              lambda x: np.var(x, axis=(0, 2), keepdims=True), T234),
        _case("var_int16", lambda x: x.var(axis=0), lambda x: np.var(x, axis=0),
              Arg((3, 4), dtype="int16", low=-50, high=50), float_dtypes=ONLY_FLOAT64,
              grad=INT_INPUTS),
        _case("std_all", lambda x: x.std(), lambda x: np.std(x), M34),
        _case("std_axis0_ddof1", lambda x: x.std(axis=0, ddof=1),
              lambda x: np.std(x, axis=0, ddof=1), Arg((5, 3))),
        _case("std_neg_keepdims", lambda x: x.std(axis=-1, keepdims=True),
              lambda x: np.std(x, axis=-1, keepdims=True), T234),
    ]
    return cases


def _tensor_function(name: str) -> Callable[..., Any]:
    from workbench.core import tensor

    return getattr(tensor, name)


def _careduce(scalar_op: Any, axis: tuple[int, ...]) -> Callable[[Any], Any]:
    def build(x: Any) -> Any:
        from workbench.core.tensor import CAReduce

        return CAReduce(scalar_op, axis)(x)

    return build


def _arg_cases() -> list[Case]:
    cases = []
    for name in ("argmax", "argmin"):
        ref = getattr(np, name)
        cases += [
            _case(f"{name}_all", _method(name), lambda x, ref=ref: ref(x), M34, grad=INT_OUTPUT),
            _case(f"{name}_axis0", _method(name, axis=0), lambda x, ref=ref: ref(x, axis=0), M34,
                  grad=INT_OUTPUT),
            _case(f"{name}_axis_neg_keepdims", _method(name, axis=-1, keepdims=True),
                  lambda x, ref=ref: ref(x, axis=-1, keepdims=True), T234, grad=INT_OUTPUT),
            _case(f"{name}_all_keepdims", _method(name, keepdims=True),
                  lambda x, ref=ref: ref(x, keepdims=True), T234, grad=INT_OUTPUT),
            _case(f"{name}_0d", _method(name), lambda x, ref=ref: ref(x), SCALAR,
                  grad=INT_OUTPUT),
            _case(f"{name}_int32", _method(name, axis=1), lambda x, ref=ref: ref(x, axis=1),
                  Arg((3, 4), dtype="int32", low=-100, high=100), float_dtypes=ONLY_FLOAT64,
                  grad=INT_OUTPUT),
        ]
    return cases


def _method(name: str, **kwargs: Any) -> Callable[[Any], Any]:
    def build(x: Any) -> Any:
        return getattr(x, name)(**kwargs)

    return build


# -- softmax family -----------------------------------------------------------------


def _special(name: str, **kwargs: Any) -> Callable[[Any], Any]:
    def build(x: Any) -> Any:
        from workbench.core.tensor import special

        return getattr(special, name)(x, **kwargs)

    return build


def _special_cases() -> list[Case]:
    large = Arg((3, 4), low=900.0, high=1000.0)
    return [
        _case("softmax_last", _special("softmax"), lambda x: np_softmax(x), M34),
        _case("softmax_axis0", _special("softmax", axis=0), lambda x: np_softmax(x, 0), M34),
        _case("softmax_axis1_3d", _special("softmax", axis=1), lambda x: np_softmax(x, 1), T234),
        _case("softmax_all", _special("softmax", axis=None), lambda x: np_softmax(x, None), M34),
        _case("softmax_vector", _special("softmax"), lambda x: np_softmax(x), Arg((5,))),
        _case("softmax_0d", _special("softmax"), lambda x: np_softmax(x, None), SCALAR),
        _case("softmax_empty", _special("softmax"), lambda x: np.zeros_like(x), EMPTY_ROWS),
        _case("softmax_large", _special("softmax"), lambda x: np_softmax(x), large,
              float_dtypes=ONLY_FLOAT64),
        _case("softmax_int32", _special("softmax"), lambda x: np_softmax(_float_of(x)),
              Arg((3, 4), dtype="int32"), float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        _case("log_softmax_last", _special("log_softmax"), lambda x: np_log_softmax(x), M34),
        _case("log_softmax_axis0", _special("log_softmax", axis=0),
              lambda x: np_log_softmax(x, 0), T234),
        _case("log_softmax_all", _special("log_softmax", axis=None),
              lambda x: np_log_softmax(x, None), M34),
        _case("log_softmax_large", _special("log_softmax"), lambda x: np_log_softmax(x), large,
              float_dtypes=ONLY_FLOAT64),
        _case("log_softmax_int8", _special("log_softmax", axis=-1),
              lambda x: np_log_softmax(_float_of(x)), Arg((2, 5), dtype="int8"),
              float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        _case("logsumexp_all", _special("logsumexp"), lambda x: np_logsumexp(x), M34),
        _case("logsumexp_axis1", _special("logsumexp", axis=1), lambda x: np_logsumexp(x, 1),
              M34),
        _case("logsumexp_axes_keepdims", _special("logsumexp", axis=(0, -1), keepdims=True),
              lambda x: np_logsumexp(x, (0, -1), keepdims=True), T234),
        _case("logsumexp_0d", _special("logsumexp"), lambda x: np_logsumexp(x), SCALAR),
        _case("logsumexp_large", _special("logsumexp", axis=-1),
              lambda x: np_logsumexp(x, -1), large, float_dtypes=ONLY_FLOAT64),
        _case("logsumexp_empty_axis", _special("logsumexp", axis=1),
              lambda x: np_logsumexp(x, 1), Arg((2, 0)), grad="the output is -inf"),
        _case("logsumexp_int32", _special("logsumexp", axis=0),
              lambda x: np_logsumexp(_float_of(x), 0), Arg((3, 4), dtype="int32"),
              float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
    ]


# -- cumulative operations ----------------------------------------------------------


def _cumulative_cases() -> list[Case]:
    return [
        _case("cumsum_flat", lambda x: x.cumsum(), lambda x: np.cumsum(x), M34),
        _case("cumsum_axis0", lambda x: x.cumsum(axis=0), lambda x: np.cumsum(x, axis=0), M34),
        _case("cumsum_axis_neg", lambda x: x.cumsum(axis=-1), lambda x: np.cumsum(x, axis=-1),
              T234),
        _case("cumsum_0d", lambda x: x.cumsum(), lambda x: np.cumsum(x), SCALAR),
        _case("cumsum_empty", lambda x: x.cumsum(axis=0), lambda x: np.cumsum(x, axis=0),
              EMPTY_ROWS),
        _case("cumsum_static_flat", lambda x: x.cumsum(), lambda x: np.cumsum(x),
              Arg((2, 3), static=True)),
        _case("cumsum_int8", lambda x: x.cumsum(axis=1), lambda x: np.cumsum(x, axis=1),
              Arg((3, 4), dtype="int8", low=-100, high=100), float_dtypes=ONLY_FLOAT64,
              grad=INT_INPUTS),
        _case("cumsum_bool", lambda x: x.cumsum(), lambda x: np.cumsum(x),
              Arg((3, 4), dtype="bool"), float_dtypes=ONLY_FLOAT64, grad=INT_INPUTS),
        _case("cumprod_flat", lambda x: x.cumprod(), lambda x: np.cumprod(x),
              Arg((3, 4), low=0.5, high=1.5)),
        _case("cumprod_axis1", lambda x: x.cumprod(axis=1), lambda x: np.cumprod(x, axis=1),
              M34),
        _case("cumprod_axis_neg", lambda x: x.cumprod(axis=-2),
              lambda x: np.cumprod(x, axis=-2), T234),
        _case("cumprod_0d", lambda x: x.cumprod(axis=0), lambda x: np.cumprod(x, axis=0), SCALAR),
        _case("cumprod_uint16", lambda x: x.cumprod(axis=0), lambda x: np.cumprod(x, axis=0),
              Arg((3, 4), dtype="uint16", low=0, high=9), float_dtypes=ONLY_FLOAT64,
              grad=INT_INPUTS),
    ]


CASES: list[Case] = _reduction_cases() + _arg_cases() + _special_cases() + _cumulative_cases()
