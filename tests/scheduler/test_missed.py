"""What became of the last scheduled night (scheduler/missed.py): the missed-night notice tells
what is known: the entry never started (the machine was asleep or off), the entry started but
failed before the night (its output log says why), the night ran and failed, or there is no trace
to tell by. Each case is produced for real where it can be: the installed crontab line runs in a
bare shell (tests/support/os_entries.py)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler import missed_night_notice
from skillopt_sleep.scheduler.base import MARKER
from skillopt_sleep.commands.schedule import schedule
from tests.support.os_entries import run_cron_line
from tests.support.scheduler_tools import FakeTools

pytestmark = pytest.mark.skipif(os.name != "posix" or not Path("/bin/sh").exists(), reason="needs /bin/sh")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def _install(tools: FakeTools, project: Path, via: str = "cron", **options) -> datetime:
    """Schedule a night two minutes ago (as if installed yesterday); returns tonight's slot."""
    slot = (datetime.now().astimezone() - timedelta(minutes=2)).replace(second=0, microsecond=0)
    assert schedule(projects=[str(project)], at=f"{slot:%H:%M}", via=via, platform="linux", **options) == 0
    path = user_dirs().schedule_file
    data = json.loads(path.read_text())
    data["updated"] = (datetime.now(timezone.utc) - timedelta(days=1)).isoformat()
    path.write_text(json.dumps(data))
    return slot


def _cron_line(tools: FakeTools) -> str:
    lines = tools.table().splitlines()
    return next(lines[i + 1] for i, text in enumerate(lines) if MARKER in text)


def _morning(slot: datetime) -> datetime:
    return slot + timedelta(hours=1)


def test_an_entry_that_never_started_blames_the_sleeping_machine(fake_tools: FakeTools, project: Path) -> None:
    slot = _install(fake_tools, project)
    notice = missed_night_notice(_morning(slot))
    assert notice is not None and f"{slot:%H:%M}" in notice
    assert "its entry did not start (was the machine asleep or off?" in notice
    assert "failed" not in notice and "skillopt-sleep nightly" in notice


def test_a_systemd_timer_that_never_started_names_the_logged_out_user(fake_tools: FakeTools, project: Path) -> None:
    slot = _install(fake_tools, project, via="systemd")
    notice = missed_night_notice(_morning(slot))
    assert "its entry did not start" in notice and "loginctl enable-linger" in notice


def test_an_entry_that_failed_to_start_says_why(
    fake_tools: FakeTools, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter the entry runs is gone (a removed virtualenv): the shell's own error is in
    the entry's output log, and the notice quotes it instead of blaming the machine."""
    wrapper = tmp_path / "venv-gone" / "python"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(wrapper))
    slot = _install(fake_tools, project)
    shutil.rmtree(wrapper.parent)
    ran = run_cron_line(_cron_line(fake_tools), fake_tools.home)
    assert ran.returncode != 0 and ran.output == ""  # it all went to the entry's log
    notice = missed_night_notice(_morning(slot))
    assert notice is not None
    assert "its entry started but failed before the night began" in notice
    assert str(wrapper) in notice and "not found" in notice and "scheduler-output.log" in notice
    assert "asleep" not in notice


def test_a_night_that_ran_and_failed_says_so(fake_tools: FakeTools, tmp_path: Path) -> None:
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    slot = _install(fake_tools, doomed)
    doomed.rmdir()  # tonight's night fails: the project is gone
    ran = run_cron_line(_cron_line(fake_tools), fake_tools.home)
    assert ran.returncode != 0
    notice = missed_night_notice(_morning(slot))
    assert notice is not None and "ran, but 1 of 1 project(s) failed" in notice
    assert str(doomed) in notice and "not a directory" in notice
    assert "asleep" not in notice and "did not run" not in notice


def test_a_night_that_could_not_start_says_why(fake_tools: FakeTools, project: Path, tmp_path: Path) -> None:
    env = tmp_path / "keys.env"
    env.write_text("X=1\n")
    env.chmod(0o600)
    slot = _install(fake_tools, project, env_file=str(env))
    env.chmod(0o644)  # the job refuses a key file others can read
    run_cron_line(_cron_line(fake_tools), fake_tools.home)
    notice = missed_night_notice(_morning(slot))
    assert notice is not None and "could not run: env file" in notice and "chmod 600" in notice


def test_a_night_that_never_finished_says_so(fake_tools: FakeTools, project: Path) -> None:
    slot = _install(fake_tools, project)
    runs = user_dirs().scheduled_runs
    started = slot + timedelta(seconds=5)
    (runs / "last-run.json").write_text(
        json.dumps(
            {
                "started": started.isoformat(),
                "finished": None,
                "log": str(runs / "logs" / "night-x.log"),
                "projects": [],
            }
        )
    )
    assert missed_night_notice(_morning(slot)) is None  # may still be running
    late = missed_night_notice(started + timedelta(hours=13))
    assert late is not None and "never finished" in late and "skillopt-sleep nightly" in late


def test_no_trace_at_all_is_unknown_not_a_sleeping_machine(fake_tools: FakeTools, project: Path) -> None:
    """An entry whose log directory is gone (removed by hand, or an entry from before `schedule`
    made it) cannot have left a trace: the notice says it does not know."""
    slot = _install(fake_tools, project)
    shutil.rmtree(user_dirs().state)
    notice = missed_night_notice(_morning(slot))
    assert notice is not None and "left no trace" in notice and "unknown" in notice
    assert "skillopt-sleep schedule" in notice and "skillopt-sleep nightly" in notice


def test_the_notice_is_one_clean_line(fake_tools: FakeTools, project: Path) -> None:
    slot = _install(fake_tools, project)
    key = "sk-ant-api03-" + "Lg4" * 30 + "DD"
    out = user_dirs().scheduled_runs / "scheduler-output.log"
    out.write_text(f"Traceback...\nRuntimeError: bad key {key}\x1b[31m red\n\n")
    notice = missed_night_notice(_morning(slot))
    assert notice is not None and "RuntimeError: bad key" in notice
    assert key not in notice and "\x1b" not in notice and "\n" not in notice
