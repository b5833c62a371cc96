"""Graph files from strangers: random bytes in every name-like field never run code,
never crash the process, and give either a GraphFileError or a clean result.

The fuzzing runs in a child process (this file run as a script), so that a crash is
seen as a signal instead of taking pytest down. Each name of a seeded pool goes into
every name-like field of a small graph file; the file is loaded, and when it loads
it is compiled on the C linker and called with operands that do not broadcast. A
share of the names carry shell commands that would create a canary file if they ever
reached generated C as code. A second pass builds Ops with the pool's names directly
(past the file checks) to show that the C linker takes them as data: every error
message carries the name intact.

`WORKBENCH_FUZZ_NAMES` sets the pool size (at least 1,000; default 1,000).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

POOL = max(1000, int(os.environ.get("WORKBENCH_FUZZ_NAMES", "1000")))

#: Names that would escape a C string literal, a comment or a format string.
PAYLOADS = (
    '");}}system("touch {canary}");{{printf("',
    '"); system("touch {canary}"); ("',
    '*/ system("touch {canary}"); /*',
    '\\"); system(\\"touch {canary}\\"); //',
    '??/"); system("touch {canary}"); //',
    '\n#define wb_failure system("touch {canary}")\n',
    "%s%s%s%s%s%n%n%n",
    "%999999999s%p%x%ld",
    "\0hidden\0",
    "\\",
    '"',
)


def name_pool(n: int, seed: int, canary_dir: str) -> list[str]:
    """`n` names: random byte strings (read as Latin-1, or as UTF-8 with lone
    surrogates where they are invalid), some wrapped around an escape payload."""
    rng = random.Random(seed)
    names = []
    for k in range(n):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
        text = raw.decode("latin-1") if k % 2 else raw.decode("utf-8", "surrogateescape")
        if k % 3 == 0:
            canary = os.path.join(canary_dir, f"CANARY_{k}")
            payload = PAYLOADS[(k // 3) % len(PAYLOADS)].format(canary=canary)
            text = text[: len(text) // 2] + payload + text[len(text) // 2:]
        names.append(text)
    return names


# -- the child process --------------------------------------------------------------


def base_document() -> dict[str, Any]:
    """A small graph file: named inputs, a named constant, two named Elemwise nodes."""
    import numpy as np
    import workbench.tensor as wt

    from workbench import io

    x, y = wt.dvector("x"), wt.dvector("y")
    two = wt.constant(np.array([2.0, 3.0, 4.0]), name="two")
    z = x * y
    z.name = "z"
    w = z + two
    w.name = "w"
    return io.to_document(w, [x, y])


def name_fields(doc: dict[str, Any]) -> dict[str, Any]:
    """Per name-like field of `doc`, a function putting a name there (in place)."""
    def var(kind: str) -> dict[str, Any]:
        return next(v for v in doc["variables"] if v["kind"] == kind)

    def scalar_op() -> dict[str, Any]:
        return doc["nodes"][0]["op"]["props"]["scalar_op"]

    def set_key(mapping: dict[str, Any], name: str) -> None:
        mapping[name] = mapping.pop(next(iter(mapping)))

    return {
        "input name": lambda n: var("input").__setitem__("name", n),
        "constant name": lambda n: var("constant").__setitem__("name", n),
        "computed name": lambda n: var("computed").__setitem__("name", n),
        "op name": lambda n: scalar_op().__setitem__("name", n),
        "op class": lambda n: doc["nodes"][1]["op"].__setitem__("op", n),
        "type class": lambda n: var("input")["type"].__setitem__("type", n),
        "type name prop": lambda n: var("input")["type"]["props"].__setitem__("name", n),
        "prop key": lambda n: set_key(scalar_op()["props"], n),
        "dtype": lambda n: var("input")["type"]["props"]["dtype"].__setitem__("dtype", n),
        "variable kind": lambda n: var("constant").__setitem__("kind", n),
        "function name": lambda n: scalar_op()["props"]["output_types_preference"]
        .__setitem__("function", n),
        "format": lambda n: doc.__setitem__("format", n),
    }


def fuzz_graph_files(names: list[str], workdir: Path) -> dict[str, Any]:
    """Every name in every field: load, and compile and call what loads."""
    import numpy as np

    import workbench as wb
    from workbench import io

    base = json.dumps(base_document())
    good = (np.ones(3), np.ones(3))
    bad = (np.ones(3), np.ones(4))
    counts: dict[str, dict[str, int]] = {}
    for field in name_fields(json.loads(base)):
        tally = counts.setdefault(field, {"refused": 0, "ran": 0})
        for k, name in enumerate(names):
            doc = json.loads(base)
            name_fields(doc)[field](name)
            path = workdir / f"{k}.json"  # (a new file: truncating one is slower)
            path.write_text(json.dumps(doc), encoding="utf-8")
            try:
                inputs, outputs = io.load(path)
            except io.GraphFileError:
                tally["refused"] += 1
                continue
            finally:
                path.unlink()
            f = wb.function(inputs, outputs, mode="FAST_COMPILE", linker="c")
            np.testing.assert_allclose(f(*good)[0], [3.0, 4.0, 5.0])
            try:
                f(*bad)
            except ValueError as exc:
                assert "do not broadcast" in str(exc), exc
            else:
                raise AssertionError(f"{field}={name!r}: bad shapes were accepted")
            tally["ran"] += 1
    return counts


def fuzz_c_labels(names: list[str]) -> int:
    """Ops named by the pool, past the file checks, compiled on C: each one's error
    message carries its name as data. Returns how many names were checked."""
    import numpy as np
    import workbench.tensor as wt

    import workbench as wb
    from workbench.core.link.c.codegen import node_labels
    from workbench.core.scalar.basic import upcast_out
    from workbench.core.scalar.math import Mul
    from workbench.core.tensor.elemwise import Elemwise

    checked = 0
    batch = 100
    for start in range(0, len(names), batch):
        chunk = names[start:start + batch]
        xs = [wt.dvector(f"x{k}") for k in range(len(chunk))]
        ys = [wt.dvector(f"y{k}") for k in range(len(chunk))]
        outs = [Elemwise(Mul(upcast_out, name=name))(x, y)
                for name, x, y in zip(chunk, xs, ys)]
        f = wb.function([*xs, *ys], outs, mode="FAST_COMPILE", linker="c")
        assert f.linker.report.py_nodes == []
        nodes = {node.inputs[1]: node for node in f.maker.fgraph.apply_nodes}
        for k, name in enumerate(chunk):
            args = [np.ones(3)] * (2 * len(chunk))
            args[len(chunk) + k] = np.ones(4)  # y_k does not broadcast against x_k
            try:
                f(*args)
            except ValueError as exc:
                node = nodes[f.maker.fgraph.inputs[len(chunk) + k]]
                label = node_labels(node)[0].decode("utf-8")
                assert str(exc).startswith(f"{label}: input 1 has length 4"), \
                    (str(exc)[:120], label)
                if len(name) < 40 and "\0" not in name and name.isprintable():
                    assert name in str(exc)
            else:
                raise AssertionError(f"the Op named {name!r} accepted bad shapes")
            checked += 1
    return checked


def child(pool: int, seed: int, canary_dir: str, workdir: str) -> None:
    names = name_pool(pool, seed, canary_dir)
    summary = {"graph_files": fuzz_graph_files(names, Path(workdir)),
               "c_labels": fuzz_c_labels(names), "names": len(names)}
    print(json.dumps(summary))


# -- the test -----------------------------------------------------------------------


def test_random_names_in_graph_files_never_run_code_or_crash(tmp_path: Path) -> None:
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                         env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, __file__, str(POOL), "14", str(canaries),
                           str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=1200)
    assert done.returncode >= 0, f"the child died of signal {-done.returncode}: " \
                                 f"{done.stderr[-2000:]}"
    assert done.returncode == 0, done.stderr[-4000:]
    assert list(canaries.iterdir()) == []
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["names"] >= 1000
    for field, tally in summary["graph_files"].items():
        assert tally["refused"] + tally["ran"] == summary["names"], field
    files = summary["graph_files"]
    # the checks refuse what is not a name, and let ordinary text through
    assert files["op name"]["ran"] < files["op name"]["refused"]
    assert files["input name"]["ran"] > 0
    assert summary["c_labels"] == summary["names"]


@pytest.mark.parametrize("name", ["add", "Cast{float64}", "int_div", "my_op2"])
def test_op_names_a_file_may_hold(name: str) -> None:
    from workbench import io

    assert io.checked_op_name(name, "here") == name


@pytest.mark.parametrize("name", ['");system("x', "%s%s", "a b", "", "1abc", "a\nb",
                                  "x" * 80, 3])
def test_op_names_a_file_may_not_hold(name: Any) -> None:
    from workbench import io

    with pytest.raises(io.GraphFileError, match="an Op name must be an identifier"):
        io.checked_op_name(name, "nodes[0].op.name")


if __name__ == "__main__":
    child(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
