"""Per-backend dtype support (seed 004) on the GPU linker, and workbench's promotion kept.

The torch backend's dtypes come from probing the installed torch; for every one of
the 15 dtypes and every available linker, a graph either runs with workbench's
promoted dtype or raises `UnsupportedDtypeError` naming the dtype, the Op and the
backend; each casting mode then inserts visible cast nodes. Torch's own promotion
(tests/data/dtypes/promotion_torch_reference.csv) differs from workbench's on many
pairs: results always have workbench's dtype.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the GPU linker needs PyTorch (workbench[gpu])")

import workbench.tensor as wt  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.core import dtypes  # noqa: E402
from workbench.core.compile.mode import available_linkers  # noqa: E402
from workbench.core.link.gpu import GpuLinker, probe_dtypes  # noqa: E402
from workbench.core.link.gpu.dtype_support import torch_promotion  # noqa: E402

CSV = Path(__file__).parents[3] / "data" / "dtypes" / "promotion_torch_reference.csv"
CPU = torch.device("cpu")
LINKERS = sorted(set(available_linkers()) | {"gpu"})


@pytest.fixture(scope="module", autouse=True)
def _declared() -> None:
    GpuLinker(device="cpu")  # declares backend "gpu"


def _value(d: dtypes.Dtype) -> np.ndarray:
    return np.array([1, 2, 3]).astype(d.numpy)


def test_declared_dtypes_are_what_the_probe_found() -> None:
    report = probe_dtypes(CPU)
    assert set(report) == set(dtypes.all_dtypes)
    assert set(dtypes.supported_dtypes("gpu")) == {d for d, missing in report.items()
                                                   if not missing}
    for d, missing in report.items():
        if missing:  # e.g. uint16/32/64: torch stores them but lacks the kernels
            a = torch.ones(2, dtype=getattr(torch, str(d)))
            with pytest.raises((RuntimeError, NotImplementedError)):
                a + a
    assert {dtypes.float32, dtypes.float64, dtypes.int64, dtypes.bool_} <= set(
        dtypes.supported_dtypes("gpu"))


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", [str(d) for d in dtypes.all_dtypes])
def test_every_dtype_runs_promoted_or_raises(linker: str, dtype: str) -> None:
    d = dtypes.as_dtype(dtype)
    x = wt.tensor(d, shape=(None,), name="x")
    y = wt.tensor("int8", shape=(None,), name="y")
    out = x * y
    backend = linker
    declared = backend in dtypes.registered_backends()
    # (a dtype the backend runs through `perform`, float16 on c, computes like the others)
    if declared and not dtypes.is_supported(backend, d) and not dtypes.runs_in_python(backend, d):
        with pytest.raises(dtypes.UnsupportedDtypeError) as info:
            wb.function([x, y], out, linker=linker)
        assert info.value.dtype == d and info.value.backend == backend
        assert str(d) in str(info.value)
        return
    got = wb.function([x, y], out, linker=linker)(_value(d), _value(dtypes.int8))
    assert dtypes.as_dtype(got.dtype) == dtypes.promote_types(d, dtypes.int8)
    expected = _value(d) * _value(dtypes.int8).astype(got.dtype)
    np.testing.assert_array_equal(got.astype(np.complex128), expected.astype(np.complex128))


UNSUPPORTED = [d for d, missing in probe_dtypes(CPU).items() if missing]


@pytest.mark.parametrize("mode", dtypes.CASTING_MODES)
def test_each_casting_mode_on_the_gpu_backend(mode: str) -> None:
    if not UNSUPPORTED:
        pytest.skip("this torch supports every dtype: no casting needed")
    d = UNSUPPORTED[0]  # uint16 with torch 2.x
    x = wt.tensor(d, shape=(None,), name="x")
    with dtypes.casting_mode_as(mode):
        try:
            target = dtypes.resolve_unsupported(d, "gpu", None, mode)
        except dtypes.UnsupportedDtypeError:
            with pytest.raises(dtypes.UnsupportedDtypeError):
                wb.function([x], x + x, linker="gpu")
            return
        f = wb.function([x], x + x, linker="gpu")
    text = wb.dprint(f, file="str")
    assert f"Cast{{{target}}}" in text and f"Cast{{{d}}}" in text  # visible cast nodes
    got = f(np.array([1, 2, 3], dtype=d.numpy))
    assert dtypes.as_dtype(got.dtype) == d  # the graph's dtype, not the backend's
    np.testing.assert_array_equal(got.astype(np.int64), [2, 4, 6])


def _pairs() -> list[tuple[str, str, str]]:
    with CSV.open() as stream:
        return [(r["a"], r["b"], r["result"]) for r in csv.DictReader(stream)]


def test_the_reference_csv_is_what_this_torch_does() -> None:
    rows = _pairs()
    assert len(rows) == 225
    for a, b, result in rows:
        assert torch_promotion(a, b) == result, (a, b)


def test_outputs_have_workbench_promotion_where_torch_disagrees() -> None:
    supported = set(dtypes.supported_dtypes("gpu"))
    checked = 0
    for a, b, torch_result in _pairs():
        da, db = dtypes.as_dtype(a), dtypes.as_dtype(b)
        if da not in supported or db not in supported:
            continue
        wanted = dtypes.promote_types(da, db)
        if torch_result == str(wanted):
            continue
        x, y = wt.tensor(da, shape=(None,), name="x"), wt.tensor(db, shape=(None,), name="y")
        got = wb.function([x, y], x + y, linker="gpu")(_value(da), _value(db))
        assert dtypes.as_dtype(got.dtype) == wanted, (a, b, torch_result)
        checked += 1
    assert checked >= 20  # e.g. int64 + float32 -> float64 where torch says float32
