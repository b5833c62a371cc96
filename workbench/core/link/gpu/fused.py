"""The optional torch.compile path for fused elementwise regions (off by default).

The fusion rewrite turns chains of elementwise Ops into one
`Elemwise{Composite{...}}` node; eagerly, torch still runs one kernel per inner
step. With `GpuLinker(compile_fused=True)` such a node's kernel goes through
`torch.compile`, which can emit a single fused kernel. Compilation happens on
the first call (seconds); if it fails (no compiler, an unsupported construct),
the node falls back to the eager kernel with a warning.
"""

from __future__ import annotations

import warnings
from typing import Any

from workbench.core.graph.basic import Apply
from workbench.core.link.gpu.registry import Kernel, LowerContext

__all__ = ["is_fused_region", "maybe_compile"]


def is_fused_region(node: Apply) -> bool:
    """Whether `node` is an Elemwise of a Composite (a fused elementwise region)."""
    from workbench.core.scalar.composite import Composite
    from workbench.core.tensor.elemwise import Elemwise

    return isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, Composite)


def maybe_compile(node: Apply, kernel: Kernel, ctx: LowerContext) -> Kernel:
    """`kernel` through torch.compile for fused regions; other nodes unchanged."""
    if not is_fused_region(node):
        return kernel
    compiled = ctx.torch.compile(kernel, dynamic=True)
    state = {"fn": compiled}

    def run(*xs: Any) -> list[Any]:
        try:
            return state["fn"](*xs)
        except Exception as exc:
            if state["fn"] is kernel:
                raise
            warnings.warn(f"torch.compile failed for {node.op}; running it eagerly ({exc})",
                          RuntimeWarning, stacklevel=2)
            state["fn"] = kernel
            return kernel(*xs)

    return run
