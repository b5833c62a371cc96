"""Function.copy with PyTensor's options: swap (other shared variables), delete_updates
and name, on the py and C linkers; and the errors for bad swaps."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
import workbench.core.tensor as wt


def _accumulator(linker: str):
    w = wb.shared(np.ones(3), "w")
    x = wt.dvector("x")
    f = wb.function([x], (w * x).sum(), updates={w: w + x}, linker=linker)
    return f, w, x


@pytest.mark.linkers("py", "c")
def test_swap_reads_and_updates_the_other_shared_variable(linker: str) -> None:
    f, w, _ = _accumulator(linker)
    other = wb.shared(np.full(3, 10.0), "other")
    g = f.copy(swap={w: other})
    assert g(np.ones(3)) == 30.0
    np.testing.assert_array_equal(other.get_value(), [11.0, 11.0, 11.0])
    np.testing.assert_array_equal(w.get_value(), [1.0, 1.0, 1.0])
    assert f(np.ones(3)) == 3.0  # the original still uses w
    np.testing.assert_array_equal(w.get_value(), [2.0, 2.0, 2.0])


@pytest.mark.linkers("py", "c")
def test_delete_updates_leaves_the_shared_variables_alone(linker: str) -> None:
    f, w, _ = _accumulator(linker)
    h = f.copy(delete_updates=True, name="h")
    assert [h(np.ones(3)) for _ in range(2)] == [3.0, 3.0]
    np.testing.assert_array_equal(w.get_value(), [1.0, 1.0, 1.0])
    assert repr(h) == "<Function 'h'>"
    assert len(h.maker.fgraph.outputs) == 1 and len(f.maker.fgraph.outputs) == 2
    assert f(np.ones(3)) == 3.0 and w.get_value()[0] == 2.0  # the original still updates


def test_swap_and_delete_updates_together() -> None:
    f, w, _ = _accumulator("py")
    other = wb.shared(np.full(3, 5.0), "other")
    k = f.copy(swap={w: other}, delete_updates=True)
    assert k(np.ones(3)) == 15.0
    np.testing.assert_array_equal(other.get_value(), [5.0, 5.0, 5.0])


def test_bad_swaps_are_refused() -> None:
    f, w, x = _accumulator("py")
    with pytest.raises(TypeError, match="types must be equal"):
        f.copy(swap={w: wb.shared(np.ones((2, 2)), "m")})
    with pytest.raises(ValueError, match="not a shared variable of"):
        f.copy(swap={wb.shared(np.ones(3), "stranger"): w})
    with pytest.raises(TypeError, match="a shared variable is needed"):
        f.copy(swap={w: x})
    with pytest.raises(TypeError, match="swap must be a dict"):
        f.copy(swap=[(w, w)])
    with pytest.raises(NotImplementedError, match="share_memory"):
        f.copy(share_memory=True)
