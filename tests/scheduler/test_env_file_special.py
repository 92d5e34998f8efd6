"""The env file is read by ``schedule`` and again by every scheduled night: a FIFO, a device or a
link to one in its place is refused with one line, at once — never a hang (a FIFO blocks an
ordinary open) and never a read of an endless device."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.nightly import read_last_run, run_scheduled
from tests.support.scheduler_tools import FakeTools

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


def _fifo(path: Path) -> Path:
    os.mkfifo(path, 0o600)
    return path


def _link(path: Path, target: str | Path) -> Path:
    path.symlink_to(target)
    return path


SPECIAL = {
    "a FIFO": lambda tmp: _fifo(tmp / "keys.env"),
    "a link to /dev/zero": lambda tmp: _link(tmp / "keys.env", "/dev/zero"),
    "a link to a FIFO": lambda tmp: _link(tmp / "keys.env", _fifo(tmp / "pipe")),
}


def _bounded(call, seconds: float = 20.0):
    """Run ``call`` in a thread; a hang fails the test instead of stalling the suite."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    return out[0]


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_schedule_refuses_a_special_env_file_in_one_line(kind: str, cron: FakeTools, tmp_path: Path, capsys) -> None:
    project = tmp_path / "p"
    project.mkdir()
    env = SPECIAL[kind](tmp_path)
    code = _bounded(lambda: main(["schedule", "--project", str(project), "--env-file", str(env)]))
    err = capsys.readouterr().err.strip()
    assert code == 3
    assert "\n" not in err and "is not a regular file" in err
    assert not user_dirs().schedule_file.exists()


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_scheduled_night_refuses_an_env_file_swapped_for_a_special_file(
    kind: str, cron: FakeTools, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    env = tmp_path / "keys.env"
    env.write_text("X=1\n")
    env.chmod(0o600)
    assert main(["schedule", "--project", str(project), "--env-file", str(env)]) == 0
    env.unlink()
    SPECIAL[kind](tmp_path)
    ran: list = []
    assert _bounded(lambda: run_scheduled(run_project=lambda entry, log: ran.append(entry) or {})) == 3
    assert ran == []
    last = read_last_run()
    assert "is not a regular file" in last["error"] and "\n" not in last["error"] and last["finished"]
