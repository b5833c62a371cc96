"""Checking a symbolic gradient against finite differences: `verify_grad`.

The tool a student runs on a hand-written Op: `verify_grad(fun, [x0, y0])`
builds symbolic inputs with the dtypes and ranks of the points (unknown
lengths, so broadcasting gradients are exercised), projects the output on a
random tensor `p` (the cost is ``sum(fun(*x) * p)``, seeded through
`known_grads` so only `fun`'s own gradients are involved) and compares the
symbolic gradient with central finite differences, element by element.
A mismatch raises `GradientError` naming the input, the largest absolute and
relative errors, where they occur and both values there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Variable, ancestors

__all__ = ["GradientError", "numeric_grad", "verify_grad"]

#: default finite-difference step and tolerances per dtype
DEFAULT_STEPS = {"float64": 1e-7, "float32": 3e-3, "float16": 2.0**-5, "bfloat16": 2.0**-3}
_ABS_TOL = {"float64": 1e-4, "float32": 1e-2, "float16": 5e-2, "bfloat16": 5e-2}
_REL_TOL = {"float64": 1e-4, "float32": 1e-2, "float16": 5e-2, "bfloat16": 5e-2}
#: the narrowest dtype among the points and the output decides the step and tolerances
DTYPE_NARROWNESS = ("float64", "float32", "float16", "bfloat16")


class GradientError(AssertionError):
    """The symbolic and numeric gradients of `verify_grad` disagree for input `arg`."""

    def __init__(self, arg: int, abs_err: float, rel_err: float, abs_tol: float,
                 rel_tol: float, abs_pos: tuple[int, ...], rel_pos: tuple[int, ...],
                 symbolic: np.ndarray, numeric: np.ndarray, test: int = 0) -> None:
        self.arg = arg
        self.abs_err = abs_err
        self.rel_err = rel_err
        self.abs_tol = abs_tol
        self.rel_tol = rel_tol
        self.abs_pos = abs_pos
        self.rel_pos = rel_pos
        self.symbolic = symbolic
        self.numeric = numeric
        self.test = test
        super().__init__(str(self))

    def __str__(self) -> str:
        def at(pos: tuple[int, ...]) -> str:
            return (f"index {pos}: symbolic {float(self.symbolic[pos])!r}, "
                    f"numeric {float(self.numeric[pos])!r}")

        return (
            f"verify_grad: the gradient with respect to input {self.arg} does not match finite "
            f"differences (random projection {self.test}).\n"
            f"  largest absolute error {self.abs_err:.3g} (tolerance {self.abs_tol:.3g}) at "
            f"{at(self.abs_pos)}\n"
            f"  largest relative error {self.rel_err:.3g} (tolerance {self.rel_tol:.3g}) at "
            f"{at(self.rel_pos)}"
        )


def _as_rng(rng: Any) -> np.random.Generator:
    if rng is None:
        return np.random.default_rng(0)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.RandomState):
        return np.random.default_rng(rng.randint(2**31))
    return np.random.default_rng(rng)


def numeric_grad(cost: Callable[..., float], pt: Sequence[np.ndarray], eps: float
                 ) -> list[np.ndarray]:
    """Central finite differences of the scalar function `cost(*pt)`, one array per point.

    The step actually taken is measured after rounding to the point's dtype, so
    float32 points are differentiated as accurately as their precision allows.
    """
    grads = []
    points = [np.array(p, copy=True) for p in pt]  # keeps the memory layout of each point
    for x in points:
        g = np.zeros(x.shape, dtype=np.float64)
        for index in np.ndindex(x.shape):
            original = x[index]
            x[index] = original + eps
            plus_value, plus = x[index], float(cost(*points))
            x[index] = original - eps
            minus_value, minus = x[index], float(cost(*points))
            x[index] = original
            g[index] = (plus - minus) / (float(plus_value) - float(minus_value))
        grads.append(g)
    return grads


def _tolerance(table: dict[str, float], given: float | None, dtype: str) -> float:
    if given is not None:
        return float(given)
    return table.get(dtype, table["float32"])


def verify_grad(
    fun: Callable[..., Variable],
    pt: Sequence[Any] | np.ndarray,
    n_tests: int = 2,
    rng: Any = None,
    eps: float | None = None,
    abs_tol: float | None = None,
    rel_tol: float | None = None,
    mode: Any = None,
) -> None:
    """Check the symbolic gradient of `fun` at the point `pt` against finite differences.

    `fun(*symbolic_inputs)` returns one Variable; `pt` is a list of float arrays
    (one per input; a bare array means one input). For each of `n_tests`
    random projections `p`, the gradient of ``sum(fun(*x) * p)`` is compared
    with central differences of step `eps`; an element passes if its absolute
    error is within `abs_tol` or its relative error within `rel_tol`. The
    defaults follow the narrowest float dtype among the points and the graph
    of the output (float64: eps 1e-7, tolerances 1e-4; float32: 3e-3 and 1e-2; float16 and
    bfloat16: coarser). Raises `GradientError` on a mismatch, ValueError if a
    gradient does not have its input's shape.
    """
    from workbench.core.compile.function import function
    from workbench.core.grad import grad, grad_dtype
    from workbench.core.tensor.type import TensorType

    if isinstance(pt, np.ndarray) or np.isscalar(pt):
        pt = [pt]
    points = [np.asarray(p) for p in pt]
    if not points:
        raise ValueError("verify_grad needs at least one point")
    for k, p in enumerate(points):
        d = dtypes.as_dtype(p.dtype)
        if not d.is_float or str(d) not in DEFAULT_STEPS:
            raise TypeError(f"verify_grad: point {k} has dtype {p.dtype}; give float arrays "
                            "(integer inputs have no finite differences)")
    if n_tests < 1:
        raise ValueError(f"verify_grad: n_tests must be at least 1, got {n_tests}")
    generator = _as_rng(rng)
    inputs = [TensorType(p.dtype, (None,) * p.ndim)(f"verify_grad_input_{k}")
              for k, p in enumerate(points)]
    out = fun(*inputs)
    if not isinstance(out, Variable) or getattr(out.type, "ndim", None) is None:
        raise TypeError(f"verify_grad: fun must return one tensor Variable, got {out!r}")
    out_dtype = dtypes.as_dtype(out.type.dtype)
    if out_dtype.is_complex:
        raise TypeError("verify_grad: fun returns a complex tensor; return a real one "
                        "(e.g. abs(z) ** 2 or z.real)")
    projection = out.type.clone(dtype=grad_dtype(out))("verify_grad_projection")
    grads = grad(None, inputs, known_grads={out: projection},
                 disconnected_inputs="ignore", return_disconnected="zero")
    f_out = function(inputs, out, mode=mode, on_unused_input="ignore")
    f_grad = function(inputs + [projection], grads, mode=mode, on_unused_input="ignore")

    # finite differences are only as precise as the narrowest float on the way
    involved = [str(dtypes.as_dtype(p.dtype)) for p in points] + [
        str(var.type.dtype) for var in ancestors([out]) if hasattr(var.type, "dtype")]
    narrowest = max((d for d in involved if d in DTYPE_NARROWNESS), key=DTYPE_NARROWNESS.index)
    step = eps if eps is not None else DEFAULT_STEPS[narrowest]
    a_tol = _tolerance(_ABS_TOL, abs_tol, narrowest)
    r_tol = _tolerance(_REL_TOL, rel_tol, narrowest)
    value = np.asarray(f_out(*points))
    for test in range(n_tests):
        p = generator.normal(size=value.shape).astype(projection.type.dtype.numpy)
        p64 = p.astype(np.float64)

        def cost(*xs: np.ndarray, p64: np.ndarray = p64) -> float:
            return float(np.sum(np.asarray(f_out(*xs), dtype=np.float64) * p64))

        symbolic = [np.asarray(g, dtype=np.float64) for g in f_grad(*points, p)]
        numeric = numeric_grad(cost, points, step)
        for k, (s, n) in enumerate(zip(symbolic, numeric)):
            if s.shape != n.shape:
                raise ValueError(
                    f"verify_grad: the symbolic gradient with respect to input {k} has shape "
                    f"{s.shape}, but the input has shape {n.shape} (a gradient must have its "
                    "input's shape; e.g. sum over the dimensions an input was broadcast along)")
            _compare(k, s, n, a_tol, r_tol, test)


def _compare(k: int, s: np.ndarray, n: np.ndarray, a_tol: float, r_tol: float, test: int
             ) -> None:
    abs_err = np.abs(s - n)
    scale = np.abs(s) + np.abs(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_err = np.where(scale > 0, abs_err / scale, 0.0)
    abs_err = np.where(np.isnan(abs_err), np.inf, abs_err)
    rel_err = np.where(np.isnan(rel_err), np.inf, rel_err)
    bad = (abs_err > a_tol) & (rel_err > r_tol)
    if not np.any(bad):
        return
    abs_pos = tuple(int(i) for i in np.unravel_index(np.argmax(abs_err), s.shape))
    rel_pos = tuple(int(i) for i in np.unravel_index(np.argmax(rel_err), s.shape))
    raise GradientError(k, float(abs_err[abs_pos]), float(rel_err[rel_pos]), a_tol, r_tol,
                        abs_pos, rel_pos, s, n, test)
