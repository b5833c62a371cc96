"""numpy.pad with the modes "constant", "edge", "reflect", "symmetric" and "wrap",
built from existing Ops.

Axes are padded one after the other, as NumPy does (so a corner takes the value
of the last padded axis). "constant" joins blocks of the fill value on both
sides of each axis (`Join` of `Alloc`s). The other modes read the input at an
index vector computed from the padded positions ``i = -before .. n + after - 1``:
"edge" clips `i` to ``[0, n - 1]``, "wrap" takes ``i mod n``, "reflect" folds `i`
with period ``2 (n - 1)`` (the edge value not repeated), "symmetric" with period
``2 n`` (repeated). One gather per axis whatever the widths, even widths larger
than the axis (which NumPy handles by reflecting again: the same periodic
extension). Where the widths allow it ("edge" always; the others when the axis has a
static length and each width fits in one reflection or period) the pads are slices of
the input joined to it instead, which costs a copy rather than a gather. Gradients
come from the gather (`AdvancedSubtensor`: the pad's gradients add into the entries
they copy), the slices and `Join`/`Alloc` (the fill value's gradient is the sum over
the blocks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.graph.basic import Variable
from workbench.core.tensor.shape import check_and_raise, shape_tuple
from workbench.core.tensor.variable import as_tensor_variable

__all__ = ["pad"]

_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pairs(value: Any, ndim: int, what: str, ints: bool) -> list[tuple[Any, Any]]:
    """NumPy's broadcasting of pad_width / constant_values to one (before, after) per axis."""
    if isinstance(value, Variable):
        if ints:
            raise TypeError(f"pad: {what} must hold Python ints, got the tensor {value}")
        return [(value, value)] * ndim
    array = np.asarray(value, dtype=object)
    try:
        pairs = np.broadcast_to(array, (ndim, 2)) if array.ndim <= 2 else None
    except ValueError:
        pairs = None
    if pairs is None:
        raise ValueError(f"pad: {what} must be a number, a (before, after) pair or one pair "
                         f"per axis ({ndim} axes), got {value!r}")
    result = []
    for before, after in pairs:
        if ints:
            for width in (before, after):
                if isinstance(width, (bool, np.bool_)) or not isinstance(
                        width, (int, np.integer)) or width < 0:
                    raise ValueError(f"pad: {what} must hold non-negative ints, got "
                                     f"{value!r}")
            before, after = int(before), int(after)
        result.append((before, after))
    return result


def _fill_block(x: Variable, axis: int, width: int, value: Any) -> Variable:
    from workbench.core.tensor.basic import cast
    from workbench.core.tensor.creation import alloc

    lengths = list(shape_tuple(x))
    lengths[axis] = width
    return alloc(cast(as_tensor_variable(value), x.type.dtype), *lengths)


def _padded_positions(n: Any, before: int, after: int, mode: str) -> Variable:
    """The index into the axis of length `n` that each padded position reads."""
    from workbench.core.tensor.creation import arange
    from workbench.core.tensor.math import clip, maximum, mod, switch

    i = arange(-before, n + after, dtype="int64")
    if mode == "edge":
        return clip(i, 0, n - 1)
    if mode == "wrap":
        return mod(i, n)
    if mode == "reflect":
        period = maximum(2 * (n - 1), 1)
        folded = mod(i, period)
        return switch(folded < n, folded, period - folded)
    period = 2 * n  # symmetric
    folded = mod(i, period)
    return switch(folded < n, folded, period - 1 - folded)


def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0
        ) -> Variable:
    """numpy.pad: `array` extended by ``pad_width`` entries before and after each axis.

    `pad_width` is an int, a (before, after) pair or one pair per axis (Python ints).
    `mode`: "constant" (filled with `constant_values`, which broadcast like
    pad_width and may be tensors), "edge", "reflect", "symmetric" or "wrap". Modes
    other than "constant" refuse an empty axis when run, as NumPy does.
    """
    x = as_tensor_variable(array)
    if mode not in _MODES:
        raise ValueError(f"pad: mode must be one of {_MODES}, got {mode!r}")
    ndim = x.type.ndim
    widths = _pairs(pad_width, ndim, "pad_width", ints=True)
    if mode == "constant":
        from workbench.core.tensor.join import concatenate

        values = _pairs(constant_values, ndim, "constant_values", ints=False)
        for axis, ((before, after), (v_before, v_after)) in enumerate(zip(widths, values)):
            if before or after:
                pieces = [_fill_block(x, axis, before, v_before)] if before else []
                pieces.append(x)
                if after:
                    pieces.append(_fill_block(x, axis, after, v_after))
                x = concatenate(pieces, axis)
        return x
    for axis, (before, after) in enumerate(widths):
        if before or after:
            n = shape_tuple(x)[axis]
            empty = (f"pad: cannot extend the empty axis {axis} of {x.type} with mode "
                     f"{mode!r} (only 'constant' can)")
            if isinstance(n, Variable):  # a length known only when run: checked then
                from workbench.core.tensor.math import gt

                x = check_and_raise(x, [gt(n, 0)], "ValueError", empty)
            elif n == 0:
                raise ValueError(empty)
            pieces = _border_slices(x, axis, before, after, mode)
            if pieces is not None:
                from workbench.core.tensor.join import concatenate

                x = concatenate([p for p in (pieces[0], x, pieces[1]) if p is not None], axis)
            else:
                x = x[(slice(None),) * axis + (_padded_positions(n, before, after, mode),)]
    return x


def _border_slices(x: Variable, axis: int, before: int, after: int, mode: str
                   ) -> tuple[Variable | None, Variable | None] | None:
    """The two pads as slices of `x` (views: cheaper than a gather), where the widths
    allow it: "edge" always (a length-1 slice broadcast), the others when the axis has a
    static length and each width stays within one reflection (or one period)."""
    from workbench.core.tensor.reshape import broadcast_to

    lead = (slice(None),) * axis
    if mode == "edge":
        def edge(part: slice, width: int) -> Variable:
            lengths = list(shape_tuple(x))
            lengths[axis] = width
            return broadcast_to(x[lead + (part,)], lengths)

        return (edge(slice(0, 1), before) if before else None,
                edge(slice(-1, None), after) if after else None)
    n = x.type.shape[axis]
    limit = None if n is None else n - 1 if mode == "reflect" else n
    if limit is None or max(before, after) > limit:
        return None
    if mode == "reflect":  # the edge entry not repeated
        parts = (slice(before, 0, -1), slice(-2, -2 - after, -1))
    elif mode == "symmetric":
        parts = (slice(before - 1, None, -1), slice(-1, -1 - after, -1))
    else:  # wrap
        parts = (slice(n - before, None), slice(0, after))
    return (x[lead + (parts[0],)] if before else None,
            x[lead + (parts[1],)] if after else None)
