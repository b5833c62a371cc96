"""The GPU linker: each node lowered to torch, run by the Python VMs on device tensors.

`GpuLinker(device=None)` binds a FunctionGraph like any Linker. At link time
every Apply node gets a thunk:

- a *device* thunk (backend "gpu") running the kernel its lowering returned;
- a *host* thunk (backend "host") when the Op has no lowering, or its lowering
  declines this node: the inputs are copied to the host, `Op.perform` runs,
  the outputs are copied back (the profile's backend column shows "host");
- a lazy thunk for `IfElse`: only the taken branch is computed (StackVM);
- a *host shape* thunk (backend "host shape") for a shape read from a tensor and used
  only as a shape: Python ints, no device tensor (host_shapes.py).

The storage cells of the graph hold tensors on the device. At each call, the
input values (NumPy) are moved to the device (a shared variable's tensor is
kept from one call to the next while its value object is unchanged, and a
`DeviceCell` already holds one), and the outputs are moved back to NumPy,
except outputs the graph computes with `ToDevice` (`y.transfer("gpu")`), every
output with `device_outputs=True`, and updates of device shared variables.

Profiling (`profile=True`): wall time per node on the CPU; on CUDA, CUDA
events around each node, read after the call (the kernels are asynchronous).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.core.graph.basic import Apply, Constant, Variable
from workbench.core.graph.inner_graph import InnerGraphOp
from workbench.core.graph.op import Thunk
from workbench.core.link.gpu.device import import_torch, resolve_device, to_device, to_host
from workbench.core.link.gpu.host_shapes import host_shape_kernel, host_shape_values
from workbench.core.link.gpu.registry import LowerContext, lowering_for
from workbench.core.link.vm import MAX_PROFILE_EVENTS, Cell, Linker, LoopVM, StackVM

__all__ = ["GpuLinker", "host_nodes"]


class _DeviceTimed:
    """VM mixin: per-node timing with CUDA events when the device is a GPU."""

    cuda_timing = False

    def _wrap(self, thunk: Thunk) -> Callable[[], Any]:
        if not self.cuda_timing:
            return super()._wrap(thunk)  # type: ignore[misc]
        torch = import_torch()
        fn, node = thunk.fn, thunk.node
        self.node_time[node] = 0.0  # type: ignore[attr-defined]
        self.node_calls[node] = 0  # type: ignore[attr-defined]
        pending = self.__dict__.setdefault("pending", [])
        clock = time.perf_counter

        def timed() -> Any:
            start_event = torch.cuda.Event(enable_timing=True)
            end_event = torch.cuda.Event(enable_timing=True)
            start = clock()
            start_event.record()
            try:
                return fn()
            finally:
                end_event.record()
                pending.append((node, start_event, end_event, start, clock()))

        return timed

    def collect_timings(self) -> None:
        """Wait for the device and add the CUDA event times of the last call."""
        pending = self.__dict__.get("pending")
        if not pending:
            return
        import_torch().cuda.synchronize()
        for node, start_event, end_event, start, end in pending:
            self.node_time[node] += start_event.elapsed_time(end_event) / 1e3  # type: ignore
            self.node_calls[node] += 1  # type: ignore[attr-defined]
            if len(self.events) < MAX_PROFILE_EVENTS:  # type: ignore[attr-defined]
                self.events.append((node, start, end))  # type: ignore[attr-defined]
        pending.clear()


class GpuLoopVM(_DeviceTimed, LoopVM):
    """LoopVM over device tensors."""


class GpuStackVM(_DeviceTimed, StackVM):
    """StackVM over device tensors (graphs with lazy nodes)."""


def host_nodes(fn: Any) -> list[Apply]:
    """The nodes of a compiled Function that run on the host (no torch lowering)."""
    return [t.node for t in fn.thunks if getattr(t, "impl", None) == "host"]


class GpuLinker(Linker):
    """Lowers every node to torch and runs the graph on `device` (None: config.device).

    `device_outputs`: return every output as a device tensor instead of NumPy.
    `compile_fused`: run fused elementwise nodes (Composite) through torch.compile.
    `allow_gc`, `lazy`, `profile`: as for the Python linker. `make_thunk` makes its own
    device cells: a `storage_map` passed to it is not used.
    """

    name = "gpu"

    def __init__(self, device: Any = None, allow_gc: bool = True, lazy: bool | None = None,
                 profile: bool = False, device_outputs: bool = False,
                 compile_fused: bool = False) -> None:
        super().__init__()
        self.device = resolve_device(device)
        self.allow_gc = allow_gc
        self.lazy = lazy
        self.profile = profile
        self.device_outputs = device_outputs
        self.compile_fused = compile_fused
        self.vm: Any = None
        from workbench.core.link.gpu.dtype_support import register_torch_dtypes

        register_torch_dtypes(self.device)

    def clone(self) -> GpuLinker:
        return GpuLinker(self.device, self.allow_gc, self.lazy, self.profile,
                         self.device_outputs, self.compile_fused)

    def __repr__(self) -> str:
        return f"GpuLinker(device={str(self.device)!r})"

    # -- linking ---------------------------------------------------------------------------
    def make_thunk(
        self,
        input_storage: Sequence[Cell] | None = None,
        output_storage: Sequence[Cell] | None = None,
        storage_map: dict[Variable, Cell] | None = None,
    ) -> tuple[Callable[[], None], list[Cell], list[Cell], list[Thunk], list[Apply]]:
        fg = self.fgraph
        if fg is None:
            raise ValueError("GpuLinker.make_thunk: call accept(fgraph) first")
        torch = import_torch()
        device = self.device
        order = fg.toposort()
        user_in = list(input_storage) if input_storage is not None else \
            [[None] for _ in fg.inputs]
        user_out = list(output_storage) if output_storage is not None else \
            [[None] for _ in fg.outputs]
        if len(user_in) != len(fg.inputs) or len(user_out) != len(fg.outputs):
            raise ValueError(f"GpuLinker: {len(user_in)} input / {len(user_out)} output cells "
                             f"for {len(fg.inputs)} inputs / {len(fg.outputs)} outputs")
        smap: dict[Variable, Cell] = {}
        cmap: dict[Variable, Cell] = {}
        constant_tensors: list[Any] = []
        for var in [*fg.inputs, *(v for n in order for v in (*n.inputs, *n.outputs)),
                    *fg.outputs]:
            if var in smap:
                continue
            if isinstance(var, Constant):
                value = to_device(var.data, device)
                if isinstance(value, torch.Tensor):
                    constant_tensors.append(value)
                smap[var] = [value]
            else:
                smap[var] = [None]
            cmap[var] = [1 if var.owner is None else 0]
        ctx = LowerContext(torch, device, {"compile_fused": self.compile_fused})
        host_shapes = host_shape_values(fg)
        thunks = [self._thunk_for(node, smap, cmap, ctx, host_shapes) for node in order]
        lazy = self.lazy if self.lazy is not None else any(t.lazy for t in thunks)
        vm_class = GpuStackVM if lazy else GpuLoopVM
        vm = vm_class.__new__(vm_class)
        vm.cuda_timing = bool(self.profile and device.type == "cuda")
        vm.__init__(fg, order, thunks, smap, cmap, self.no_recycling, allow_gc=self.allow_gc,
                    profile=self.profile)
        self.vm = vm
        run = self._runner(vm, user_in, user_out, smap, constant_tensors)
        return run, user_in, user_out, thunks, order

    def _runner(self, vm: Any, user_in: list[Cell], user_out: list[Cell],
                smap: dict[Variable, Cell], constant_tensors: list[Any]) -> Callable[[], None]:
        from workbench.core.link.gpu.transfer import DeviceCell, ToDevice
        from workbench.core.link.shared import SharedVariable

        fg = self.fgraph
        assert fg is not None
        torch = import_torch()
        device = self.device
        # inputs: (user cell, device cell, kind) with kind 0: argument, 1: shared, 2: device
        inputs = []
        for var, cell in zip(fg.inputs, user_in):
            kind = 2 if isinstance(cell, DeviceCell) else \
                1 if isinstance(var, SharedVariable) else 0
            inputs.append((cell, smap[var], kind, [None, None]))
        updates = getattr(fg, "update_mapping", None) or {}
        outputs = []
        for k, (var, cell) in enumerate(zip(fg.outputs, user_out)):
            keep = self.device_outputs or (
                var.owner is not None and isinstance(var.owner.op, ToDevice)) or (
                k in updates and isinstance(user_in[updates[k]], DeviceCell))
            outputs.append((cell, smap[var], keep))
        constant_storages = {t.untyped_storage().data_ptr() for t in constant_tensors}
        vm_run = vm.run
        collect = getattr(vm, "collect_timings", None) if vm.cuda_timing else None

        def run() -> None:
            owned = set(constant_storages)
            for user, dev, kind, cache in inputs:
                if kind == 2:
                    value = to_device(user.tensor, device)  # moved if on another device
                else:
                    value = user[0]
                    if kind == 1 and value is cache[0]:
                        value = cache[1]
                    else:
                        host = value
                        value = to_device(value, device)
                        if kind == 1:
                            cache[0], cache[1] = host, value
                dev[0] = value
                if isinstance(value, torch.Tensor):
                    owned.add(value.untyped_storage().data_ptr())
            vm_run()
            if collect is not None:
                collect()
            for user, dev, keep in outputs:
                value = dev[0]
                if isinstance(value, torch.Tensor):
                    if value.untyped_storage().data_ptr() in owned:
                        value = value.clone()  # never hand out an input's or constant's memory
                    if not keep:
                        value = to_host(value)
                user[0] = value

        return run

    def _thunk_for(self, node: Apply, smap: dict[Variable, Cell], cmap: dict[Variable, Cell],
                   ctx: LowerContext, host_shapes: frozenset[Variable] = frozenset()) -> Thunk:
        from workbench.core.ifelse import IfElse

        in_cells = [smap[v] for v in node.inputs]
        out_cells = [smap[v] for v in node.outputs]
        done = [cmap[v] for v in node.outputs]
        if isinstance(node.op, IfElse) and self.lazy is not False:
            return _ifelse_thunk(node, in_cells, out_cells,
                                 [cmap[v] for v in node.inputs], done)
        if isinstance(node.op, InnerGraphOp):  # (a loop) its inner graph on the device too
            thunk = node.op.make_linked_thunk(node, smap, cmap, self.no_recycling, self)
            if thunk is not None:
                return thunk
        if node.outputs and node.outputs[0] in host_shapes:  # lengths kept as host ints
            return self._kernel_thunk(node, host_shape_kernel(node), in_cells, out_cells, done,
                                      "host shape")
        lowering = lowering_for(node.op)
        kernel = lowering(node, ctx) if lowering is not None else None
        if kernel is not None and ctx.options.get("compile_fused"):
            from workbench.core.link.gpu.fused import maybe_compile

            kernel = maybe_compile(node, kernel, ctx)
        if kernel is None:
            return _host_thunk(node, in_cells, out_cells, done, ctx.device)
        return self._kernel_thunk(node, kernel, in_cells, out_cells, done, "gpu")

    @staticmethod
    def _kernel_thunk(node: Apply, kernel: Callable[..., list[Any]], in_cells: list[Cell],
                      out_cells: list[Cell], done: list[Cell], impl: str) -> Thunk:
        """The thunk running `kernel` on the node's input values."""
        n_out = len(out_cells)

        def thunk() -> None:
            args = [cell[0] for cell in in_cells]
            try:
                results = kernel(*args)
            except RuntimeError as exc:
                mistake = shape_mistake(node, args, exc)
                if mistake is None:
                    raise
                raise mistake from exc
            if len(results) != n_out:
                raise RuntimeError(f"the torch kernel of {node.op} gave {len(results)} "
                                   f"outputs, the node has {n_out}")
            for cell, value, flag in zip(out_cells, results, done):
                cell[0] = value
                flag[0] = 1

        return Thunk(thunk, node, in_cells, out_cells, lazy=False, impl=impl)


#: What torch's messages say when shapes do not fit (broadcasting, products, joins,
#: reshapes, writes into a region).
_SHAPE_WORDS = re.compile(r"\bsizes?\b|\bshapes?\b|\bdimensions?\b|mismatch|cannot be "
                          r"multiplied", re.IGNORECASE)


def shape_mistake(node: Apply, args: Sequence[Any], exc: RuntimeError) -> ValueError | None:
    """The ValueError the py and c linkers raise for the same mistake, when torch's
    RuntimeError says the inputs' shapes do not fit (None for other errors: running out
    of memory, a device error)."""
    torch = import_torch()
    if isinstance(exc, getattr(torch, "OutOfMemoryError", ())) or not _SHAPE_WORDS.search(
            str(exc)):
        return None
    shapes = ", ".join(str(tuple(a.shape)) for a in args if hasattr(a, "shape"))
    return ValueError(f"{node.op}: the input shapes {shapes} do not fit: {exc}")


def _host_thunk(node: Apply, in_cells: list[Cell], out_cells: list[Cell], done: list[Cell],
                device: Any) -> Thunk:
    """`Op.perform` on the host, with the inputs and outputs copied across."""
    destroyed = {i for ins in node.op.destroy_map.values() for i in ins}

    def thunk() -> None:
        values = []
        for i, cell in enumerate(in_cells):
            value = to_host(cell[0])
            if isinstance(value, tuple | int):  # lengths kept on the host (host_shapes.py)
                value = np.asarray(value, dtype=node.inputs[i].type.numpy_dtype)
            if i in destroyed and hasattr(value, "copy"):
                value = value.copy()  # perform writes into it: not into the device's memory
            values.append(value)
        cells: list[list[Any]] = [[None] for _ in out_cells]
        node.op.perform(node, values, cells)
        for cell, tmp, flag in zip(out_cells, cells, done):
            cell[0] = to_device(tmp[0], device)
            flag[0] = 1

    return Thunk(thunk, node, in_cells, out_cells, lazy=False, impl="host")


def _ifelse_thunk(node: Apply, in_cells: list[Cell], out_cells: list[Cell],
                  in_done: list[Cell], out_done: list[Cell]) -> Thunk:
    """IfElse, lazily: ask for the condition, then only for the taken branch."""
    n = node.op.n_outs

    def thunk() -> list[int]:
        if not in_done[0][0]:
            return [0]
        cond = in_cells[0][0]
        first = 1 if bool(cond) else 1 + n
        needed = [first + k for k in range(n) if not in_done[first + k][0]]
        if needed:
            return needed
        for k in range(n):
            out_cells[k][0] = in_cells[first + k][0]
            out_done[k][0] = 1
        return []

    return Thunk(thunk, node, in_cells, out_cells, lazy=True, impl="gpu")
