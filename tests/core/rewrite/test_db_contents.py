"""The rewrite database holds the same rewrites whatever was imported before: the transfer
rules and the passes linking needs are registered with the others, not by a backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import workbench as wb
from workbench.core.rewrite import rewrite_db

SCRIPT = """
import json, sys
import workbench
from workbench.core.rewrite import rewrite_db

workbench.function  # the public API loaded (workbench imports it on first use)

def contents():
    return [[name, sorted(rewrite_db.tags_of(name))] for name in rewrite_db.names()]

before = contents()
import workbench.core.link.gpu  # the GPU backend (imports torch)
x = workbench.tensor.dvector("x")
workbench.function([x], workbench.tensor.exp(x.transfer("gpu")).transfer("cpu"))
json.dump({"before": before, "after": contents()}, sys.stdout)
"""


def test_the_database_is_the_same_before_and_after_importing_the_gpu_backend():
    pytest.importorskip("torch", reason="the GPU backend needs PyTorch")
    env = dict(os.environ, PYTHONPATH=str(Path(wb.__file__).parent.parent))
    result = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    contents = json.loads(result.stdout)
    assert contents["before"] == contents["after"]
    names = [name for name, _ in contents["before"]]
    assert "local_cut_transfer_pairs" in names and "local_compute_on_device" in names


def test_the_transfer_rules_and_linking_passes_are_named_and_tagged():
    assert {"canonicalize", "transfer"} <= rewrite_db.tags_of("local_cut_transfer_pairs")
    assert {"canonicalize", "transfer"} <= rewrite_db.tags_of("local_compute_on_device")
    assert {"always", "casting"} <= rewrite_db.tags_of("backend_dtypes")
    assert "always" in rewrite_db.tags_of("protect_inputs")
