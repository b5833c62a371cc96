"""A backend is one record that modes read; config.linker / config.mode and their
environment variables choose the linker and mode, an explicit argument wins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench.config import config
from workbench.core import dtypes
from workbench.core.compile import backends
from workbench.core.compile.backends import Backend, get_backend, register_backend
from workbench.core.compile.mode import (
    LinkerUnavailableError,
    available_linkers,
    get_default_mode,
    get_linker,
)
from workbench.core.link.vm import VMLinker


def test_the_built_in_backends_are_records():
    assert {"py", "c", "gpu", "debug"} <= set(backends.registered_backends())
    c = get_backend("c")
    assert c.fast_call is not None and c.declare_dtypes is not None and c.preference == 0
    gpu = get_backend("gpu")
    assert gpu.transfer is not None and gpu.shared is not None and gpu.computes is not None
    assert gpu.preference is None  # only when asked for
    assert get_backend("debug").checking and "debug" not in available_linkers()
    with pytest.raises(ValueError, match="unknown linker 'nope'; known linkers: py"):
        get_backend("nope")


@pytest.fixture
def toy_backend():
    """A backend declared in one record: the Python VM without float16."""
    declared = []

    def declare() -> None:
        declared.append(True)
        dtypes.register_backend_dtypes("toy", [d for d in dtypes.all_dtypes
                                               if d != dtypes.float16])

    record = register_backend(Backend("toy", VMLinker, declare_dtypes=declare))
    yield record, declared
    backends.unregister_backend("toy")


def test_one_record_adds_a_backend_with_its_dtypes(toy_backend):
    record, declared = toy_backend
    assert "toy" in available_linkers() and not declared  # declared when first asked
    x = wt.dvector("x")
    f = wb.function([x], wt.exp(x), linker="toy")
    assert isinstance(f.linker, VMLinker) and f.maker.linker_name == "toy"
    assert "toy" in dtypes.registered_backends() and declared
    h = wt.tensor("float16", shape=(None,))
    with pytest.raises(dtypes.UnsupportedDtypeError, match="toy"):
        wb.function([h], wt.exp(h), linker="toy")


def test_an_unavailable_backend_says_why():
    record = register_backend(Backend("absent", VMLinker, unavailable=lambda: "not here"))
    try:
        assert "absent" not in available_linkers()
        with pytest.raises(LinkerUnavailableError, match="linker 'absent' is unavailable: "
                                                         "not here"):
            get_linker("absent")
    finally:
        backends.unregister_backend(record.name)


def test_config_linker_chooses_the_linker_in_process():
    x = wt.dvector("x")
    with config.change(linker="py"):
        f = wb.function([x], wt.exp(x))
        assert f.maker.linker_name == "py"
        if "c" in available_linkers():  # an explicit argument wins
            assert wb.function([x], wt.exp(x), linker="c").maker.linker_name == "c"
    np.testing.assert_allclose(f(np.zeros(2)), np.ones(2))


def test_config_mode_chooses_the_mode_in_process():
    x = wt.dvector("x")
    with config.change(mode="FAST_COMPILE"):
        assert get_default_mode().name == "FAST_COMPILE"
        f = wb.function([x], wt.exp(x) * 1.0)
        assert f.maker.mode.name == "FAST_COMPILE" and f.maker.linker_name == "py"
        g = wb.function([x], wt.exp(x), mode="FAST_RUN")  # an explicit argument wins
        assert g.maker.mode.name == "FAST_RUN"
    with config.change(mode="NO_SUCH_MODE"), pytest.raises(ValueError, match="config.mode"):
        wb.function([x], x * 2)


SCRIPT = """
import workbench as wb, workbench.tensor as wt
x = wt.dvector("x")
f = wb.function([x], wt.exp(x))
named = wb.function([x], wt.exp(x), mode="FAST_RUN", linker="{explicit}")
print(f.maker.linker_name, f.maker.mode.name, named.maker.linker_name, named.maker.mode.name)
"""


@pytest.mark.parametrize("variable, value, expected", [
    ("WORKBENCH_LINKER", "py", ["py", "FAST_RUN"]),
    ("WORKBENCH_MODE", "FAST_COMPILE", ["py", "FAST_COMPILE"]),
])
def test_the_environment_variables_are_honoured(variable, value, expected):
    explicit = "c" if "c" in available_linkers() else "py"
    env = dict(os.environ, PYTHONPATH=str(Path(wb.__file__).parent.parent), **{variable: value})
    env.pop("WORKBENCH_LINKER" if variable == "WORKBENCH_MODE" else "WORKBENCH_MODE", None)
    result = subprocess.run([sys.executable, "-c", SCRIPT.format(explicit=explicit)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [*expected, explicit, "FAST_RUN"]


def test_config_takes_any_registered_linker_and_refuses_unknown_ones_at_compile(toy_backend):
    x = wt.dvector("x")
    with config.change(linker="toy"):
        assert wb.function([x], x * 2).maker.linker_name == "toy"
    with config.change(linker="fortran"), pytest.raises(ValueError, match="unknown linker"):
        wb.function([x], x * 2)
    with pytest.raises(ValueError, match="config.linker"):
        config.linker = ""


def test_a_function_linked_by_a_backend_includes_the_rewrites_of_its_tag():
    from workbench.core.rewrite import GraphRewriter, rewrite_db

    class Count(GraphRewriter):
        name = "count_for_tagged"
        graphs = 0

        def apply(self, fgraph):
            type(self).graphs += 1

    rewrite_db.register("count_for_tagged", Count(), "tagged_only", position=6.5)
    record = register_backend(Backend("tagged", VMLinker, rewrite_tag="tagged_only"))
    try:
        x = wt.dvector("x")
        wb.function([x], x * 2, linker="py")
        assert Count.graphs == 0  # not a FAST_RUN rewrite
        f = wb.function([x], x * 2, linker="tagged")
        assert Count.graphs == 1 and "tagged_only" in f.maker.mode.rewriter.include
    finally:
        backends.unregister_backend(record.name)
        rewrite_db.remove("count_for_tagged")
