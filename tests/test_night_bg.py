"""``run --detach`` (night_bg.py): the command returns at once, the night goes on in its own
session with its log under the project's ``.skillopt-sleep/logs/``, ``status`` follows it to its
result; a second one is refused while it runs; one killed mid-night is shown as stopped, with its
log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skillopt_sleep.errors import EXIT_LOCKED
from tests.support.tasks import make_tasks, write_tasks_file

# simulated latency per call: a night of about ten seconds, still running when status (two
# subprocesses a look) has seen its first calls, even on a loaded machine
SLOW_SIM = "sim:seed=3,latency=0.15"
# a night of minutes: however long status takes to see its first calls, it is still running then
SLOWER_SIM = "sim:seed=3,latency=1.0"


def engine(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_SLEEP_")}
    env["SKILLOPT_SLEEP_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "skillopt_sleep", *args], capture_output=True, text=True, env=env, timeout=120, cwd=cwd
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "my project"  # a space in the path
    project.mkdir()
    (project / "CLAUDE.md").write_text("# p\n", encoding="utf-8")
    write_tasks_file(tmp_path / "tasks.json", make_tasks(4))
    return project


def status(project: Path, home: Path) -> tuple[dict[str, Any], str]:
    data = engine("status", "--json", home=home, cwd=project)
    text = engine("status", home=home, cwd=project)
    assert data.returncode == 0 and text.returncode == 0, data.stderr + text.stderr
    return json.loads(data.stdout), text.stdout


def wait_for(check, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


def start(
    project: Path, home: Path, *extra: str, backend: str = SLOW_SIM
) -> tuple[subprocess.CompletedProcess[str], int]:
    done = engine(
        "run",
        "--detach",
        "--tasks-file",
        str(project.parent / "tasks.json"),
        "--backend",
        backend,
        "--agent",
        "claude",
        *extra,
        home=home,
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    state = json.loads((project / ".skillopt-sleep" / "night-state.json").read_text(encoding="utf-8"))
    return done, state["pid"]


@pytest.mark.slow  # a whole night in a detached process
def test_detach_returns_while_the_night_runs_and_status_follows_it_to_the_result(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    done, pid = start(project, home)
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and "started in the background" in lines[0] and f"pid {pid}" in lines[0]
    assert lines[1] == "follow it with: skillopt-sleep status"
    log = Path(lines[0].split("log: ", 1)[1])
    assert log.parent == project / ".skillopt-sleep" / "logs"
    try:
        os.kill(pid, 0)  # the night is still running after the command returned
        assert os.getsid(pid) == pid  # in a session of its own: closing the agent's terminal spares it
        data, text = status(project, home)
        assert data["night"]["state"] == "running" and data["night"]["pid"] == pid
        assert "night running now" in text
        refused = engine("run", "--detach", "--backend", SLOW_SIM, home=home, cwd=project)
        assert refused.returncode == EXIT_LOCKED and "already running" in refused.stderr
        # while the night makes calls: its calls against the whole night's plan, and an ETA
        running = wait_for(
            lambda: (lambda d: d if d["night"]["state"] == "running" and d["night"]["calls_done"] else None)(
                status(project, home)[0]
            )
        )
        assert running["night"]["calls_planned"] >= running["night"]["calls_done"] > 0
        assert running["night"]["eta_s"] is not None and running["night"]["phase"]
        finished = wait_for(
            lambda: (lambda d: d if d["night"]["state"] != "running" else None)(status(project, home)[0])
        )
    finally:
        with_pid_gone(pid)
    assert finished["night"]["state"] == "finished" and finished["night"]["exit_code"] == 0
    _, text = status(project, home)
    assert "last night finished" in text and str(log) in text
    assert finished["nights"] and finished["nights"][-1]["status"] == finished["night"]["result"]
    assert "staged at" in log.read_text(encoding="utf-8") or "no change" in log.read_text(encoding="utf-8").lower()


@pytest.mark.slow  # a whole night in a detached process
def test_a_detached_night_killed_midway_is_shown_as_stopped_with_its_log(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    done, pid = start(project, home, backend=SLOWER_SIM)
    try:
        wait_for(lambda: status(project, home)[0]["night"]["calls_done"] > 0)
        os.killpg(pid, signal.SIGKILL)  # the night's own session: nothing else is in it
    finally:
        with_pid_gone(pid)
    data, text = status(project, home)
    assert data["night"]["state"] == "stopped"
    assert "stopped without finishing" in text and data["night"]["log"] in text
    again = engine(
        "run",
        "--detach",
        "--tasks-file",
        str(project.parent / "tasks.json"),
        "--backend",
        "sim:seed=3",
        "--agent",
        "claude",
        home=home,
        cwd=project,
    )
    assert again.returncode == 0, again.stderr  # a stopped night does not block the next
    with_pid_gone(
        json.loads((project / ".skillopt-sleep" / "night-state.json").read_text(encoding="utf-8"))["pid"], wait=True
    )


@pytest.mark.slow  # a whole night in a detached process
def test_detach_json_says_where_to_follow(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    done, pid = start(project, home, "--json")
    try:
        out = json.loads(done.stdout)
        assert out["ok"] is True and out["pid"] == pid and out["follow"] == "skillopt-sleep status"
        assert Path(out["log"]).parent == project / ".skillopt-sleep" / "logs"
    finally:
        with_pid_gone(pid, wait=True)


def with_pid_gone(pid: int, wait: bool = False) -> None:
    """End the night this test started (by its pid), or wait for it to end."""
    deadline = time.monotonic() + (90 if wait else 0)
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() >= deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 5
        time.sleep(0.2)
        if _zombie(pid):
            return


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
