"""Starting the compiler from a thread while another thread changes os.environ
(spawn.py): CPython's vfork child read the C library's `environ`, which the other
thread's setenv moved and freed, and exec failed with EFAULT ("[Errno 14] Bad address:
'/usr/bin/gcc'"), losing tiered compilation's -O3 builds."""

from __future__ import annotations

import os
import shutil
import sys
import threading

import pytest

from workbench.core.link.c import spawn


def _spawn_while_environ_changes(start, count: int) -> list[BaseException]:
    """Call `start()` `count` times in a thread while this thread sets and unsets
    environment variables; the exceptions raised."""
    errors: list[BaseException] = []
    done = threading.Event()

    def spawner() -> None:
        try:
            for _ in range(count):
                try:
                    start()
                except Exception as exc:  # noqa: BLE001 - collected, asserted below
                    errors.append(exc)
        finally:
            done.set()

    names = [f"WB_TEST_SPAWN_{i}" for i in range(40)]
    thread = threading.Thread(target=spawner)
    thread.start()
    k = 0
    try:
        while not done.is_set():
            os.environ[names[k % 40]] = "v" * (k % 29)  # setenv: may move `environ`
            if k % 3 == 0:
                os.environ.pop(names[(k * 7) % 40], None)
            k += 1
    finally:
        thread.join()
        for name in names:
            os.environ.pop(name, None)
    return errors


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("true") is None,
                    reason="the race is in CPython's vfork path on Linux")
def test_children_start_while_another_thread_changes_the_environment():
    true = shutil.which("true")
    errors = _spawn_while_environ_changes(lambda: spawn.run([true], timeout=60), 150)
    assert errors == []


def test_the_child_receives_the_environment_as_it_is_when_started(monkeypatch):
    monkeypatch.setenv("WB_TEST_SPAWN_SEEN", "yes")
    code = "import os; print(os.environ.get('WB_TEST_SPAWN_SEEN'))"
    done = spawn.run([sys.executable, "-c", code], timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "yes"
    monkeypatch.delenv("WB_TEST_SPAWN_SEEN")
    done = spawn.run([sys.executable, "-c", code], timeout=60)
    assert done.stdout.strip() == "None"


def test_the_environment_copy_survives_concurrent_changes():
    errors = _spawn_while_environ_changes(spawn.child_environment, 2000)
    assert errors == []
