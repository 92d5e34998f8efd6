from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from skillopt_sleep.errors import EXIT_LOCKED, UserError
from skillopt_sleep.store.locks import ProjectLock, exclusive, holder_path, lock_holder
from skillopt_sleep.types import format_time

HOLD = """
import sys, time
from skillopt_sleep.store.locks import ProjectLock
lock = ProjectLock(sys.argv[1], "night", "n-child")
lock.acquire()
print("held", flush=True)
time.sleep(60)
"""


def _holder_process(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_lock_is_exclusive_and_names_the_holder(tmp_path):
    path = tmp_path / "night.lock"
    with ProjectLock(path, "adopt", "n1"):
        assert json.loads(holder_path(path).read_text())["pid"] == os.getpid()
        with pytest.raises(UserError) as info:
            with ProjectLock(path, wait=0.1):
                pass
        assert info.value.code == EXIT_LOCKED
        assert f"another adopt n1 (pid {os.getpid()} on {socket.gethostname()}, since " in info.value.message
    assert not holder_path(path).exists()
    with ProjectLock(path):  # free again
        pass


def test_a_killed_holder_releases_the_lock_at_once(tmp_path):
    path = tmp_path / "night.lock"
    proc = _holder_process(path)
    try:
        assert lock_holder(path)["night_id"] == "n-child"
        with pytest.raises(UserError, match=f"another night n-child \\(pid {proc.pid} "):
            ProjectLock(path, wait=0.2).acquire()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert holder_path(path).exists()  # the killed process's note is still there ...
    assert lock_holder(path) is None  # ... but the OS says nobody holds the lock
    started = time.monotonic()
    with ProjectLock(path, wait=0.0):
        assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    "leftover",
    [
        b"",  # a crash between creating and writing the old-style pid file
        json.dumps(
            {
                "pid": 1,
                "hostname": socket.gethostname(),  # pid 1 is always alive in a container
                "started": format_time(datetime.now(timezone.utc)),
            }
        ).encode(),
        json.dumps(
            {"pid": 4242, "hostname": "a-recreated-container", "started": format_time(datetime.now(timezone.utc))}
        ).encode(),
    ],
)
def test_leftover_lock_files_never_block(tmp_path, leftover):
    path = tmp_path / "night.lock"
    path.write_bytes(leftover)
    holder_path(path).write_bytes(leftover)
    assert lock_holder(path) is None
    with ProjectLock(path, wait=0.0):
        pass


def test_lock_holder_creates_nothing(tmp_path):
    assert lock_holder(tmp_path / "none" / "night.lock") is None
    assert not (tmp_path / "none").exists()


def test_lock_is_not_reentrant(tmp_path):
    lock = ProjectLock(tmp_path / "night.lock")
    with lock, pytest.raises(RuntimeError):
        lock.acquire()


def test_exclusive_times_out_with_a_clear_error(tmp_path):
    path = tmp_path / "harvest.lock"
    with exclusive(path):
        with pytest.raises(UserError, match="timed out after 0 s waiting for the lock") as info:
            with exclusive(path, wait=0.05):
                pass
    assert info.value.code == EXIT_LOCKED
    with exclusive(path, wait=0.05):
        pass
