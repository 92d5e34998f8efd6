"""The systemd user timer (scheduler/systemd.py), run on any OS by injecting the platform, against
the fake tools: a persistent timer and its oneshot service, updated in place and removed alone; a
foreign unit with our name is never overwritten."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from skillopt_sleep.commands.schedule import schedule, unschedule
from skillopt_sleep.errors import EXIT_SCHEDULER, UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.base import MARKER
from skillopt_sleep.scheduler.systemd import UNIT
from tests.support.os_entries import exec_start_argv, job_argv
from tests.support.scheduler_tools import FakeTools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def test_linux_with_a_user_manager_gets_a_persistent_systemd_timer(fake_tools: FakeTools, project: Path) -> None:
    assert schedule(projects=[str(project)], at="04:20", platform="linux") == 0
    timer = (fake_tools.unit_dir / f"{UNIT}.timer").read_text()
    service = (fake_tools.unit_dir / f"{UNIT}.service").read_text()
    assert "OnCalendar=*-*-* 04:20:00" in timer and "Persistent=true" in timer and MARKER in timer
    assert job_argv(exec_start_argv(service))[:4] == [sys.executable, "-m", "skillopt_sleep", "nightly"]
    assert "Type=oneshot" in service
    calls = [c["argv"] for c in fake_tools.calls("systemctl")]
    assert ["--user", "daemon-reload"] in calls and ["--user", "enable", "--now", f"{UNIT}.timer"] in calls
    enable = next(c for c in fake_tools.calls("systemctl") if "enable" in c["argv"])
    assert f"{UNIT}.timer" in enable["units"]  # the unit existed when it was enabled
    assert fake_tools.table() == ""  # no cron entry as well
    foreign = fake_tools.unit_dir / "backup.timer"
    foreign.write_text("[Timer]\nOnCalendar=daily\n")
    assert schedule(projects=[str(project)], at="05:00", platform="linux") == 0
    assert "OnCalendar=*-*-* 05:00:00" in (fake_tools.unit_dir / f"{UNIT}.timer").read_text()
    assert unschedule(platform="linux") == 0
    assert sorted(p.name for p in fake_tools.unit_dir.iterdir()) == ["backup.timer"]
    assert ["--user", "disable", "--now", f"{UNIT}.timer"] in [c["argv"] for c in fake_tools.calls("systemctl")]


def test_a_foreign_unit_with_our_name_is_not_overwritten(fake_tools: FakeTools, project: Path) -> None:
    fake_tools.unit_dir.mkdir(parents=True)
    mine = fake_tools.unit_dir / f"{UNIT}.timer"
    mine.write_text("[Timer]\nOnCalendar=weekly\n")
    with pytest.raises(UserError) as info:
        schedule(projects=[str(project)], platform="linux")
    assert info.value.code == EXIT_SCHEDULER and "not ours" in info.value.message
    assert mine.read_text() == "[Timer]\nOnCalendar=weekly\n"
    assert not user_dirs().schedule_file.exists()  # a failed install leaves no schedule behind
