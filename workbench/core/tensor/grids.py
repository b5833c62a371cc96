"""Grids, differences and interpolation, built from existing Ops: ``linspace``,
``logspace``, ``meshgrid``, ``diff``, ``cross`` and ``interp``.

As in NumPy: `linspace` computes ``start + arange(num) * step`` and writes `stop`
exactly into the last entry; `meshgrid` broadcasts its vectors (``indexing="xy"``
swaps the first two axes); `diff` of booleans is ``!=``; `cross` takes 3-vectors
along `axisa`/`axisb` (2-vectors, deprecated by NumPy 2, as NumPy still computes them,
lengths known only when run checked then); `interp` finds each point's interval with
`searchsorted` and computes in float64 (complex128 for complex values), as NumPy does.
All are differentiable where NumPy's result is (`interp` in `x`, `xp` and `fp`
between the knots).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core import dtypes
from workbench.core.graph.basic import Variable
from workbench.core.tensor.basic import cast
from workbench.core.tensor.shape import normalize_axis, shape_tuple
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["cross", "diff", "interp", "linspace", "logspace", "meshgrid"]


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0
             ) -> Variable | tuple[Variable, Variable]:
    """numpy.linspace: `num` evenly spaced values from `start` to `stop` (included unless
    ``endpoint=False``). `start` and `stop` may be tensors (they broadcast; the new axis
    goes to `axis`); `num` is a Python int. The dtype is the floating promotion of
    start and stop unless `dtype` is given."""
    from workbench.core.tensor.creation import arange
    from workbench.core.tensor.elemwise import dimshuffle
    from workbench.core.tensor.reshape import moveaxis
    from workbench.core.tensor.subtensor import set_subtensor

    if isinstance(num, (bool, np.bool_)) or not isinstance(num, (int, np.integer)) or num < 0:
        raise ValueError(f"linspace: num must be a non-negative Python int, got {num!r}")
    num = int(num)
    # a Python number is weak (NEP 50): linspace(float32 x, 0.7) is float32, as NumPy 2
    strong = [as_tensor_variable(v) for v in (start, stop)]
    work = dtypes.result_type(*(dtypes.weak_or_dtype(v, t.type.dtype)
                                for v, t in zip((start, stop), strong)), 1.0)
    start, stop = (cast(t, work) for t in strong)
    delta = stop - start
    div = num - 1 if endpoint else num
    from workbench.core.tensor.linalg.base import real_dtype

    # complex endpoints: real step counts (arange has no complex dtype), promoted below
    steps = dimshuffle(arange(num, dtype=real_dtype(work)), [0] + ["x"] * delta.type.ndim)
    if div > 0:
        step = delta / div
        y = steps * step + start
    else:
        step = delta * np.nan
        y = steps * delta + start
    if endpoint and num > 1:
        y = set_subtensor(y[-1], stop)
    if axis != 0:
        y = moveaxis(y, 0, normalize_axis(axis, y.type.ndim, "axis"))
    if dtype is not None:
        target = dtypes.as_dtype(dtype)
        if target.is_int:
            from workbench.core.tensor.math import floor

            y = floor(y)
        y = cast(y, target)
    return (y, step) if retstep else y


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: float = 10.0, dtype: Any = None, axis: int = 0) -> Variable:
    """numpy.logspace: ``base ** linspace(start, stop, num, endpoint)``.

    An array `base` (NumPy >= 1.25) broadcasts against `start` and `stop`: all three
    are padded on the left to a common rank, and `base` gets the new axis at `axis`.
    """
    if isinstance(base, (int, float, np.number)) or np.ndim(base) == 0 and not isinstance(
            base, Variable):
        exponents = linspace(start, stop, num, endpoint, axis=axis)
        y = base ** exponents  # a Python float base is weak: float32 exponents stay float32
        return y if dtype is None else cast(y, dtype)
    from workbench.core.tensor.elemwise import dimshuffle
    from workbench.core.tensor.reshape import expand_dims

    parts = [as_tensor_variable(v) for v in (start, stop, base)]
    rank = max(v.type.ndim for v in parts)
    start, stop, base = (dimshuffle(v, ["x"] * (rank - v.type.ndim) + list(range(v.type.ndim)))
                         for v in parts)
    exponents = linspace(start, stop, num, endpoint, axis=axis)
    y = expand_dims(base, normalize_axis(axis, rank + 1, "axis")) ** exponents
    return y if dtype is None else cast(y, dtype)


def meshgrid(*xi: Any, indexing: str = "xy", sparse: bool = False, copy: bool = True
             ) -> list[Variable]:
    """numpy.meshgrid: coordinate arrays from coordinate vectors (each input flattened).
    ``indexing="xy"`` (Cartesian) swaps the first two output axes, "ij" does not;
    ``sparse=True`` returns the broadcastable (1, ..., n, ..., 1) shapes instead."""
    from workbench.core.tensor.elemwise import dimshuffle
    from workbench.core.tensor.reshape import broadcast_arrays, flatten

    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    ndim = len(xi)
    vectors = [flatten(as_tensor_variable(x)) for x in xi]
    grids = []
    for k, v in enumerate(vectors):
        place = k
        if indexing == "xy" and ndim > 1 and k < 2:
            place = 1 - k
        grids.append(dimshuffle(v, [0 if d == place else "x" for d in range(ndim)]))
    if sparse or ndim <= 1:
        return grids
    return broadcast_arrays(*grids)


def _edge(values: Any, like: Variable, axis: int, func: str, arg: str) -> Variable:
    """`prepend`/`append` of diff: a scalar broadcast to one slice of `like`, or a tensor."""
    from workbench.core.tensor.reshape import broadcast_to

    v = as_tensor_variable(values)
    if v.type.ndim == 0:
        shape = list(shape_tuple(like))
        shape[axis] = 1
        return broadcast_to(v, shape)
    if v.type.ndim != like.type.ndim:
        raise ValueError(f"{func}: {arg} must be a scalar or have {like.type.ndim} "
                         f"dimensions like a, got {v.type}")
    return v


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None
         ) -> Variable:
    """numpy.diff: the `n`-th discrete difference along `axis` (``a[1:] - a[:-1]``; for
    booleans ``a[1:] != a[:-1]``), after joining `prepend`/`append` to `a`."""
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.math import neq

    a = as_tensor_variable(a)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"diff: order n must be a non-negative int, got {n!r}")
    if n == 0:
        return a
    if a.type.ndim == 0:
        raise ValueError(f"diff: a must have at least 1 dimension, got {a.type}")
    axis = normalize_axis(axis, a.type.ndim, "axis")
    pieces = [a]
    if prepend is not None:
        pieces.insert(0, _edge(prepend, a, axis, "diff", "prepend"))
    if append is not None:
        pieces.append(_edge(append, a, axis, "diff", "append"))
    if len(pieces) > 1:
        a = concatenate(pieces, axis)
    before = (slice(None),) * axis
    for _ in range(n):
        upper, lower = a[before + (slice(1, None),)], a[before + (slice(None, -1),)]
        a = neq(upper, lower) if a.type.dtype.is_bool else upper - lower
    return a


_CROSS_LENGTHS = "incompatible dimensions for cross product (dimension must be 2 or 3)"


def _cross_vectors(v: Any, axis: int, arg: str) -> tuple[Variable, Any]:
    """`v` with its vectors (along `axis`) last, and whether they are 3-vectors: True,
    False (2-vectors), or a 0-d boolean tensor when the length is known only when run
    (then the vectors are padded with a zero to length 3, the length checked)."""
    from workbench.core.tensor.creation import zeros
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.math import eq, or_
    from workbench.core.tensor.reshape import moveaxis
    from workbench.core.tensor.shape import check_and_raise

    v = as_tensor_variable(v)
    if v.type.ndim == 0:
        raise ValueError(f"cross: {arg} must have at least 1 dimension (NumPy: at least one "
                         f"array has zero dimension), got {v.type}")
    v = moveaxis(v, normalize_axis(axis, v.type.ndim, f"axis{arg}"), -1)
    length = v.type.shape[-1]
    if length is not None:
        if length not in (2, 3):
            raise ValueError(f"cross: {_CROSS_LENGTHS}, got {arg} of {v.type} (vectors last)")
        return v, length == 3
    n = shape_tuple(v)[-1]
    v = check_and_raise(v, [or_(eq(n, 2), eq(n, 3))], "ValueError",
                        f"cross: {_CROSS_LENGTHS}, for {arg}")
    pad = zeros((*shape_tuple(v)[:-1], 3 - n), v.type.dtype)
    return concatenate([v, pad], -1), eq(n, 3)


def _pick(flag: Any, if_true: Any, if_false: Any) -> Variable:
    """`if_true()` or `if_false()` by a bool flag, or a `switch` by a boolean tensor."""
    from workbench.core.tensor.math import switch

    if flag is True:
        return if_true()
    if flag is False:
        return if_false()
    return switch(flag, if_true(), if_false())


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Variable:
    """numpy.cross of the vectors along `axisa` of `a` and `axisb` of `b` (the other axes
    broadcast); the result's vectors lie along `axisc` (`axis`, when given, sets all
    three).

    2-vectors behave as in NumPy 2, which deprecates them but still computes: a
    2-vector stands for a 3-vector whose third component is 0 (its products with that
    0 are left out, as NumPy does); two 2-vectors give the z component only (the axis is
    dropped). A DeprecationWarning says so when the graph is built for a static length
    of 2, as NumPy warns when called. A length known only when run may be 2 or 3 and
    is checked then; the result then holds 3-vectors, so two 2-vectors are refused when
    run unless both lengths are static (then the result is NumPy's z component).
    """
    import warnings

    from workbench.core.tensor.join import stack
    from workbench.core.tensor.math import and_, invert, neg
    from workbench.core.tensor.reshape import moveaxis
    from workbench.core.tensor.shape import check_and_raise

    if axis is not None:
        axisa = axisb = axisc = axis
    (a, a3), (b, b3) = _cross_vectors(a, axisa, "a"), _cross_vectors(b, axisb, "b")
    if dtypes.result_type(a.type.dtype, b.type.dtype).is_bool:
        raise TypeError(f"cross: a and b must not both be boolean (NumPy's boolean subtract "
                        f"is not supported), got {a.type} and {b.type}")
    if a3 is False or b3 is False:
        warnings.warn("cross: arrays of 2-dimensional vectors are deprecated (as in NumPy "
                      "2.0); use arrays of 3-dimensional vectors instead",
                      DeprecationWarning, stacklevel=2)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if a3 is False and b3 is False:
        return z
    if a3 is not True and b3 is not True:  # both lengths known only when run
        not_a3, not_b3 = (True if f is False else invert(f) for f in (a3, b3))
        two = not_b3 if not_a3 is True else not_a3 if not_b3 is True else and_(not_a3, not_b3)
        z = check_and_raise(z, [invert(two)], "ValueError",
                            "cross: a and b both hold 2-vectors, known only when run: NumPy "
                            "gives their z components (one dimension less), this graph 3 "
                            "components per vector; give both a static length of 2 to get them")

    def last(v: Variable) -> Variable:
        """The third components; a placeholder 0 for static 2-vectors, whose branch is
        taken only with two 2-vectors, refused above."""
        return v[..., 2] if v.type.shape[-1] != 2 else v[..., 0] * 0

    c0 = _pick(a3, lambda: _pick(b3, lambda: a1 * last(b) - last(a) * b1,
                                 lambda: neg(last(a) * b1)),
               lambda: a1 * last(b))
    c1 = _pick(a3, lambda: _pick(b3, lambda: last(a) * b0 - a0 * last(b),
                                 lambda: last(a) * b0),
               lambda: neg(a0 * last(b)))
    c = stack([c0, c1, z], axis=-1)
    return moveaxis(c, -1, normalize_axis(axisc, c.type.ndim, "axisc"))


def _interp_real(x: Variable, xp: Variable, fp: Variable, left: Any, right: Any
                 ) -> Variable:
    """numpy.interp of real float64 `fp` at `x` (float64), NumPy's rules: a knot hit
    exactly gives its value; where ``slope * (x - x0) + y0`` is NaN (infinite values),
    ``slope * (x - x1) + y1``, then ``y0`` when both ends are equal."""
    from workbench.core.tensor.math import and_, clip, eq, gt, isnan, lt, switch
    from workbench.core.tensor.sort import searchsorted

    n = shape_tuple(xp)[0]
    interval = clip(searchsorted(xp, x, side="right") - 1, 0, n - 2)
    x0, x1, y0, y1 = xp[interval], xp[interval + 1], fp[interval], fp[interval + 1]
    slope = (y1 - y0) / (x1 - x0)
    y = slope * (x - x0) + y0
    y = switch(isnan(y), slope * (x - x1) + y1, y)
    y = switch(and_(isnan(y), eq(y0, y1)), y0, y)
    y = switch(eq(x, x0), y0, y)  # a knot: its value, even next to an infinite one
    y = switch(eq(x1, x0), y1, y)  # a single knot: its value everywhere
    y = switch(eq(x, xp[-1]), fp[-1], y)
    y = switch(lt(x, xp[0]), fp[0] if left is None else left, y)
    return switch(gt(x, xp[-1]), fp[-1] if right is None else right, y)


def complex_from_parts(re: Variable, im: Variable) -> Variable:
    """``re + 1j * im`` as complex128, exact for infinite and NaN `im` too (``inf * 1j``
    is ``nan + inf j`` in complex arithmetic: those parts are added as constants)."""
    from workbench.core.tensor.math import gt, isfinite, isnan, switch

    def unit(v: complex) -> Variable:
        return as_tensor_variable(np.asarray(v, np.complex128))

    infinite = switch(isnan(im), unit(complex(0.0, np.nan)),
                      switch(gt(im, 0), unit(complex(0.0, np.inf)),
                             unit(complex(0.0, -np.inf))))
    finite = switch(isfinite(im), im, 0.0)
    return cast(re, "complex128") + switch(isfinite(im), cast(finite, "complex128") * 1j,
                                           infinite)


def _interp_edge(value: Any, complex_fp: bool, arg: str) -> Any:
    """`left`/`right` of interp as float64 or complex128 (a complex value with real `fp`
    is refused, as NumPy refuses it)."""
    if value is None:
        return None
    v = as_tensor_variable(value)
    if v.type.dtype.is_complex and not complex_fp:
        raise TypeError(f"interp: {arg} must be a real number when fp is real, got {v.type}"
                        f" ({value!r})")
    return cast(v, "complex128" if complex_fp else "float64")


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Variable:
    """numpy.interp: the piecewise-linear function through (xp, fp), at `x`.

    `xp` is an increasing 1-d tensor (not checked, as in NumPy), `fp` of the same
    length. Below ``xp[0]`` the
    result is `left` (default ``fp[0]``), above ``xp[-1]`` `right` (default
    ``fp[-1]``). Computed in float64, as NumPy does; a complex `fp` gives complex128,
    its real and imaginary parts interpolated apart (`left`/`right` may then be
    complex). `x` and `xp` must be real.

    With `period` (a non-zero Python number) the knots are periodic, as in NumPy:
    `x` and `xp` are taken modulo ``abs(period)``, `xp` need not be sorted (it is
    sorted with `fp`), the first knot is repeated one period up and the last one
    period down, and `left`/`right` are ignored.
    """
    from workbench.core.tensor.join import concatenate
    from workbench.core.tensor.math import eq, imag, isnan, real, switch
    from workbench.core.tensor.shape import check_and_raise
    from workbench.core.tensor.sort import argsort

    x, xp, fp = (as_tensor_variable(v) for v in (x, xp, fp))
    for arg, v in (("x", x), ("xp", xp)):
        if v.type.dtype.is_complex:
            raise TypeError(f"interp: {arg} must be real, got {v.type} (NumPy cannot cast "
                            "it to float64 either)")
    complex_fp = fp.type.dtype.is_complex
    x, xp = cast(x, "float64"), cast(xp, "float64")
    fp = cast(fp, "complex128" if complex_fp else "float64")
    for arg, v in (("xp", xp), ("fp", fp)):
        if v.type.ndim != 1:
            raise ValueError(f"interp: {arg} must be 1-d, got {v.type}")
    (n_xp,), (n_fp,) = shape_tuple(xp), shape_tuple(fp)
    same = n_xp == n_fp if isinstance(n_xp, int) and isinstance(n_fp, int) else eq(n_xp, n_fp)
    xp = check_and_raise(xp, [n_xp > 0], "ValueError",  # bools when the lengths are static
                         f"interp: the array of sample points xp is empty ({xp.type})")
    fp = check_and_raise(fp, [same], "ValueError",
                         f"interp: fp and xp are not of the same length ({fp.type} and "
                         f"{xp.type})")
    if period is None:  # with a period NumPy ignores left and right, unchecked
        left, right = (_interp_edge(v, complex_fp, arg) for v, arg in ((left, "left"),
                                                                        (right, "right")))
    if period is not None:
        if isinstance(period, (bool, np.bool_)) or not isinstance(
                period, (int, float, np.integer, np.floating)):
            raise TypeError(f"interp: period must be a Python number, got {period!r}")
        if period == 0:
            raise ValueError("interp: period must be a non-zero value, got 0")
        period = abs(float(period))
        left = right = None
        x, xp = x % period, xp % period
        order = argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = concatenate([xp[-1:] - period, xp, xp[0:1] + period])
        fp = concatenate([fp[-1:], fp, fp[0:1]])
    if not complex_fp:
        return _interp_real(x, xp, fp, left, right)
    parts = [_interp_real(x, xp, part(fp), None if edge is None else part(edge),
                          None if other is None else part(other))
             for part, edge, other in ((real, left, right), (imag, left, right))]
    # NumPy's complex interp gives NaN + 0j at a NaN x
    return complex_from_parts(parts[0], switch(isnan(x), 0.0, parts[1]))
