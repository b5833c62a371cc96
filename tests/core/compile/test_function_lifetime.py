"""A discarded Function is freed, with its buffers, on every linker: nothing the
linker builds (the C runtime's FastCall, Program and NodeThunk objects, torch
kernels) keeps it alive."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import workbench.core.tensor as wt
from workbench.core.compile import function, shared


def gpu_on_cpu() -> Any:
    pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")
    from workbench.core.link.gpu import GpuLinker

    return GpuLinker(device="cpu")


LINKERS: dict[str, Callable[[], Any]] = {
    "py": lambda: "py",
    "c": lambda: "c",
    "gpu": gpu_on_cpu,
}


def plain(linker: Any) -> tuple[Any, tuple[Any, ...]]:
    x = wt.dvector("x")
    return function([x], (wt.exp(x) * 2 + 1).sum(), linker=linker), (np.ones(5),)


def with_updates(linker: Any) -> tuple[Any, tuple[Any, ...]]:
    x = wt.dvector("x")
    total = shared(np.zeros(5), name="total")
    f = function([x], [x * 2, total], updates=[(total, total + x)], linker=linker)
    return f, (np.ones(5),)


def trusted(linker: Any) -> tuple[Any, tuple[Any, ...]]:
    x = wt.dvector("x")
    f = function([x], wt.tanh(x) - x, linker=linker)
    f.trust_input = True
    return f, (np.ones(5),)


@pytest.mark.parametrize("build", [plain, with_updates, trusted])
@pytest.mark.parametrize("linker", sorted(LINKERS))
def test_a_discarded_function_is_collected(linker: str, build: Callable[..., Any]) -> None:
    refs = []
    for _ in range(3):
        f, args = build(LINKERS[linker]())
        f(*args)
        f(*args)
        refs.append(weakref.ref(f))
        del f
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_the_c_call_path_takes_part_in_garbage_collection() -> None:
    # the C call object holds a bound method of its Function: a cycle that only the
    # collector can see, if the object tells it what it holds
    x = wt.dvector("x")
    f = function([x], x * 2, linker="c")
    call = f._call
    assert type(call).__name__ == "FastCall"
    assert gc.is_tracked(call) and gc.is_tracked(f.linker.program)
    assert any(getattr(held, "__self__", None) is f for held in gc.get_referents(call))
