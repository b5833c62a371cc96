"""How long the `workbench` command takes to start: `--version` and `--help`.

Each command runs `--repeats` times in a fresh process (`python -m workbench.cli`),
interleaved with a bare `python -c pass` so that a load spike hits all alike. The
figures are medians of wall-clock time and of CPU time (user + system of the child;
on a shared machine CPU time is the faithful measure), and the ratio to the bare
interpreter. Target (issue 16): under 0.3 s, which the command meets by importing
the engine (NumPy, ml_dtypes, the tensor library) only when a command needs it.

    python benchmarks/bench_cli_startup.py              # 9 repeats
    python benchmarks/bench_cli_startup.py --repeats 21
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "workbench --version": [sys.executable, "-m", "workbench.cli", "--version"],
    "workbench --help": [sys.executable, "-m", "workbench.cli", "--help"],
}


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `argv` in a child process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, command in COMMANDS.items():
            runs[name].append(timed(command))
    base_wall = statistics.median(w for w, _ in runs["python -c pass"])
    print(f"{'command':22s} {'wall s':>7s} {'cpu s':>7s} {'wall / python':>14s}")
    for name, samples in runs.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        print(f"{name:22s} {wall:7.3f} {cpu:7.3f} {wall / base_wall:14.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
