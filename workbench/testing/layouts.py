"""Memory layouts a 3-d input can arrive in, for tests of compiled loops: each maps a
C-ordered array to an array with the same values (or a part of them) laid out
otherwise. Compiled code must give NumPy's values on every one of them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["LAYOUTS_3D"]

LAYOUTS_3D: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "c_order": lambda a: a,
    "fortran": np.asfortranarray,
    "transposed": lambda a: np.ascontiguousarray(a.transpose(2, 0, 1)).transpose(1, 2, 0),
    "negative_strides": lambda a: a[::-1, :, ::-1],
    "gaps": lambda a: np.repeat(a, 2, axis=2)[:, ::-1, ::2],
    "zero_size": lambda a: a[:, :0],
    "broadcast": lambda a: np.broadcast_to(a[:, 1:2, :], a.shape),  # a stride of 0
    "one_element_dims": lambda a: a[1:2, :, 2:3],
}
