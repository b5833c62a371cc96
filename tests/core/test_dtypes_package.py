"""`workbench.core.dtypes` is a package split by concept; its public names stay in one place.

Callers import from ``workbench.core.dtypes`` only; the submodules (`base`,
`promotion`, `defaults`, `backends`) are an implementation detail.
"""

from __future__ import annotations

import importlib
import pickle

import workbench.core.dtypes as dtypes_module
from workbench.core import dtypes


def test_both_import_spellings_give_the_package():
    assert dtypes is dtypes_module
    assert dtypes.__name__ == "workbench.core.dtypes"


def test_every_public_name_is_exported_from_the_package():
    for name in dtypes.__all__:
        assert getattr(dtypes, name) is not None, name
    assert dtypes.bool is dtypes.bool_  # the alias that cannot be a plain module attribute


def test_each_name_has_one_definition():
    """A re-export is the same object as the submodule's: one registry, one setting."""
    submodules = [importlib.import_module(f"workbench.core.dtypes.{name}")
                  for name in ("base", "promotion", "defaults", "backends")]
    for name in dtypes.__all__:
        homes = [m for m in submodules if name in vars(m)]
        assert homes, name
        assert all(vars(m)[name] is getattr(dtypes, name) for m in homes), name


def test_pickles_name_the_public_module():
    assert dtypes.Dtype.__module__ == "workbench.core.dtypes"
    assert b"workbench.core.dtypes\x94" in pickle.dumps(dtypes.float32)
    err = dtypes.UnsupportedDtypeError("bfloat16", "py")
    assert type(pickle.loads(pickle.dumps(err))) is dtypes.UnsupportedDtypeError


def test_settings_are_shared_between_submodules():
    from workbench.core.dtypes import backends, promotion

    with dtypes.default_float_dtype_as("float16"):
        assert promotion.result_type("int8", 0.5) == "float16"
    with dtypes.casting_mode_as("upcast"):
        assert backends.casting_mode() == "upcast"
