"""The GPU linker on torch's CPU device: devices, outputs, host fallback, laziness, profiles."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")

import workbench.tensor as wt  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.config import config  # noqa: E402
from workbench.core.compile.mode import available_linkers, get_linker, get_mode  # noqa: E402
from workbench.core.link import gpu  # noqa: E402
from workbench.core.link.gpu import GpuLinker, GpuUnavailableError, host_nodes  # noqa: E402

NO_CUDA = "no CUDA device on this machine (the CUDA path runs on a GPU machine)"


def test_gpu_is_a_registered_linker_and_mode() -> None:
    assert "gpu" in available_linkers()
    assert isinstance(get_linker("gpu"), GpuLinker)
    assert get_mode("GPU").linker == "gpu"


def test_auto_device_falls_back_to_cpu_with_one_notice(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu.device, "_notified", False)
    with pytest.warns(RuntimeWarning, match="no CUDA device"):
        assert gpu.resolve_device("auto") == torch.device("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gpu.resolve_device("auto") == torch.device("cpu")  # no second notice


def test_device_comes_from_config_or_the_linker_argument() -> None:
    with config.change(device="cpu"):
        assert GpuLinker().device == torch.device("cpu")
    assert GpuLinker(device="cpu").device.type == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        GpuLinker(device="tpu-7")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_asking_for_cuda_without_a_gpu_is_a_clear_error() -> None:
    with pytest.raises(GpuUnavailableError, match="no CUDA device"):
        GpuLinker(device="cuda")


def test_outputs_are_numpy_unless_device_arrays_are_asked_for() -> None:
    x = wt.dvector("x")
    value = np.array([1.0, 2.0, 3.0])
    f = wb.function([x], wt.exp(x) * 2, linker=GpuLinker(device="cpu"))
    result = f(value)
    assert isinstance(result, np.ndarray) and result.dtype == np.float64
    np.testing.assert_allclose(result, np.exp(value) * 2)
    on_device = wb.function([x], wt.exp(x) * 2, linker=GpuLinker(device="cpu",
                                                                   device_outputs=True))
    assert isinstance(on_device(value), torch.Tensor)
    asked = wb.function([x], [(wt.exp(x) * 2).transfer("gpu"), x + 1],
                        linker=GpuLinker(device="cpu"))
    tensor, array = asked(value)
    assert isinstance(tensor, torch.Tensor) and isinstance(array, np.ndarray)


def test_outputs_never_share_memory_with_inputs_or_constants() -> None:
    x = wt.dvector("x")
    value = np.array([1.0, 2.0])
    f = wb.function([x], [x, wt.constant(np.array([5.0, 6.0])), x[::1]],
                    mode=wb.Mode(linker=GpuLinker(device="cpu")))
    for out in f(value):
        assert not np.shares_memory(out, value)
        out[...] = -1
    np.testing.assert_array_equal(value, [1.0, 2.0])
    np.testing.assert_array_equal(f(value)[1], [5.0, 6.0])


def test_ops_without_a_torch_kernel_run_on_the_host_and_the_profile_says_so() -> None:
    x = wt.tensor("int32", shape=(None, None), name="x")
    out = _bitwise_or_reduce(x)  # bitwise-or of integers: torch has no reduction for it
    f = wb.function([x], [out, x.sum()], linker=GpuLinker(device="cpu"), profile=True)
    value = np.array([[1, 2], [4, 8]], dtype="int32")
    got, total = f(value)
    np.testing.assert_array_equal(got, np.bitwise_or.reduce(value, axis=0))
    assert total == value.sum()
    hosted = host_nodes(f)
    assert [type(n.op).__name__ for n in hosted] == ["CAReduce"]
    rows = {row.op_class: row for row in f.profile.by_node()}
    assert rows["CAReduce"].backend == "host" and rows["Sum"].backend == "GPU"
    assert rows["Sum"].calls == 1 and rows["Sum"].time > 0
    assert "host" in str(f.profile) and f.profile.summary()["linker"] == "gpu"


def _bitwise_or_reduce(x):
    from workbench.core.scalar import math as sm
    from workbench.core.tensor.reduction import CAReduce

    return CAReduce(sm.or_, axis=(0,))(x)


def test_ifelse_is_lazy_on_the_device() -> None:
    x = wt.dvector("x")
    cond = wt.tensor("bool", shape=(), name="c")
    broken = wt.reshape(x, (7, 7)).sum()  # fails whenever it runs on a 3-vector
    out = wb.ifelse(cond, x.sum(), broken)
    f = wb.function([cond, x], out, linker=GpuLinker(device="cpu"), profile=True,
                    mode=wb.Mode(linker="gpu"))
    assert f(True, np.array([1.0, 2.0, 3.0])) == 6.0
    reshape_rows = [r for r in f.profile.by_node() if r.op_class == "Reshape"]
    assert reshape_rows and reshape_rows[0].calls == 0
    with pytest.raises(ValueError, match="reshape"):
        f(False, np.array([1.0, 2.0, 3.0]))


def test_errors_name_the_node_and_the_input_values() -> None:
    x = wt.dvector("x")
    f = wb.function([x], wt.reshape(x, (2, 2)), linker=GpuLinker(device="cpu"))
    with pytest.raises(ValueError, match="cannot reshape") as info:
        f(np.ones(3))
    assert "Reshape" in "\n".join(getattr(info.value, "__notes__", []))


def test_graphs_with_several_linkers_agree_on_a_small_network() -> None:
    x, w = wt.dmatrix("x"), wt.dmatrix("w")
    out = wt.softmax(wt.tanh(x @ w), axis=-1)
    cost = -wt.log(out).mean()
    rng = np.random.default_rng(0)
    values = [rng.standard_normal((4, 3)), rng.standard_normal((3, 5))]
    reference = wb.function([x, w], [cost, *wb.grad(cost, [x, w])], linker="py")(*values)
    got = wb.function([x, w], [cost, *wb.grad(cost, [x, w])], linker="gpu")(*values)
    for a, b in zip(got, reference):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_profile_uses_cuda_events() -> None:  # pragma: no cover - needs a GPU
    x = wt.fmatrix("x")
    f = wb.function([x], wt.exp(x) @ x, linker=GpuLinker(device="cuda"), profile=True)
    f(np.ones((64, 64), dtype="float32"))
    assert f.vm.cuda_timing and all(r.calls == 1 for r in f.profile.by_node())


class _Twice(wb.Op):
    """A user's Op: 2 * x."""

    __props__ = ()

    def make_node(self, x):
        from workbench.core.graph.basic import Apply

        x = wt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * 2


def test_a_user_op_runs_on_the_host_until_it_registers_a_lowering() -> None:
    from workbench.core.link.gpu import registry

    x = wt.dvector("x")
    value = np.array([1.0, 2.0])
    f = wb.function([x], _Twice()(x) + 1, linker=GpuLinker(device="cpu"))
    np.testing.assert_array_equal(f(value), [3.0, 5.0])
    assert [type(n.op) for n in host_nodes(f)] == [_Twice]
    try:
        @gpu.register_lowering(_Twice)
        def lower_twice(node, ctx):
            return lambda t: [t * 2]

        g = wb.function([x], _Twice()(x) + 1, linker=GpuLinker(device="cpu"))
        np.testing.assert_array_equal(g(value), [3.0, 5.0])
        assert host_nodes(g) == []
    finally:
        registry._lowerings.pop(_Twice, None)
    with pytest.raises(TypeError, match="Op class"):
        gpu.register_lowering(_Twice())


def test_without_torch_the_linker_is_unavailable_with_the_reason(monkeypatch) -> None:
    import importlib.util

    from workbench.core.compile import backends, mode

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    backends.recheck_availability("gpu")
    try:
        assert "gpu" not in available_linkers()
        with pytest.raises(mode.LinkerUnavailableError, match="PyTorch is not installed"):
            get_linker("gpu")
    finally:
        monkeypatch.undo()
        backends.recheck_availability("gpu")
    assert "gpu" in available_linkers()


def test_workbench_profile_measures_a_gpu_function() -> None:
    x = wt.dmatrix("x")
    f = wb.function([x], wt.softmax(x @ x.T, axis=-1), linker="gpu")
    stats = wb.profile(f, np.ones((8, 8)), calls=3)
    assert stats.linker == "gpu" and stats.calls == 3
    rows = stats.by_node()
    assert {r.backend for r in rows} == {"GPU"} and all(r.calls == 3 for r in rows)
    assert stats.memory().peak_with_gc > 0
    assert stats.chrome_trace()["traceEvents"]


# -- the same mistakes raise the same errors as on py and c --------------------------------
def test_integers_to_negative_integer_powers_raise_as_numpy_does() -> None:
    i, j = wt.lvector("i"), wt.lvector("j")
    base = wb.shared(np.array([2, 3]), name="base")
    f = wb.function([j], i ** j, givens={i: base}, updates={base: base ** j}, linker="gpu")
    np.testing.assert_array_equal(f(np.array([1, 2])), [2, 9])
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        f(np.array([-1, 2]))
    np.testing.assert_array_equal(base.get_value(), [2, 9])  # the update was not stored
    x = wt.dvector("x")
    np.testing.assert_allclose(wb.function([x, j], x ** j, linker="gpu")(
        np.array([2.0, 4.0]), np.array([-1, -2])), [0.5, 0.0625])


SHAPE_MISTAKES = {
    "elementwise": (lambda x, y, m: x + y, (np.ones(2), np.ones(3), np.ones((2, 3)))),
    "product": (lambda x, y, m: wt.dot(m, x), (np.ones(2), np.ones(3), np.ones((2, 3)))),
    "join": (lambda x, y, m: wt.concatenate([m, x[None]]), (np.ones(2), np.ones(3),
                                                              np.ones((2, 3)))),
    "region": (lambda x, y, m: wt.set_subtensor(y[:2], y), (np.ones(2), np.ones(3),
                                                            np.ones((2, 3)))),
}


@pytest.mark.parametrize("mistake", sorted(SHAPE_MISTAKES))
def test_shape_mistakes_raise_value_error_on_every_linker(mistake: str) -> None:
    build, values = SHAPE_MISTAKES[mistake]
    x, y, m = wt.dvector("x"), wt.dvector("y"), wt.dmatrix("m")
    for linker in ("py", "c", "gpu"):
        f = wb.function([x, y, m], build(x, y, m), linker=linker, on_unused_input="ignore")
        with pytest.raises(ValueError):
            f(*values)


def test_uint64_is_not_advised_a_cast_that_would_wrap_its_values() -> None:
    u = wt.vector("u", "uint64")
    with pytest.raises(TypeError) as info:
        wb.function([u], u + 1, linker="gpu")
    message = str(info.value)
    assert "no casting mode can convert it without changing values" in message
    assert "'downcast' (-> uint8)" in message and "not advised" in message
    assert info.value.suggested_modes == []
