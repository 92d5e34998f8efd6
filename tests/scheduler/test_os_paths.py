"""The Linux (systemd, cron), macOS (launchd) and Windows (schtasks) code paths, run on any OS
by injecting the platform, against the fake tools."""

from __future__ import annotations

import json
import plistlib
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from skillopt_sleep.commands.schedule import schedule, unschedule
from skillopt_sleep.errors import EXIT_SCHEDULER, UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler import default_via
from skillopt_sleep.scheduler.base import MARKER, Job
from skillopt_sleep.scheduler.cron import job_line
from skillopt_sleep.scheduler.launchd import LABEL, plist_bytes
from skillopt_sleep.scheduler.systemd import UNIT, service_text
from tests.support.os_entries import cron_command, exec_start_argv, job_argv
from tests.support.scheduler_tools import FakeTools

TASK_NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def test_default_via_follows_the_os() -> None:
    assert default_via("linux", systemd_available=lambda: True) == "systemd"
    assert default_via("linux", systemd_available=lambda: False) == "cron"
    assert default_via("darwin") == "launchd"
    assert default_via("win32") == "schtasks"


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


def test_switching_via_removes_the_old_entry(fake_tools: FakeTools, project: Path) -> None:
    fake_tools.crontab.write_text("0 1 * * * /bin/true\n")
    assert schedule(projects=[str(project)], via="cron", platform="linux") == 0
    assert MARKER in fake_tools.table()
    assert schedule(projects=[str(project)], via="systemd", platform="linux") == 0
    assert fake_tools.table() == "0 1 * * * /bin/true\n"
    assert (fake_tools.unit_dir / f"{UNIT}.timer").exists()


def test_macos_gets_a_launch_agent(fake_tools: FakeTools, project: Path) -> None:
    assert schedule(projects=[str(project)], at="02:05", platform="darwin") == 0
    plist_path = fake_tools.agents_dir / f"{LABEL}.plist"
    plist = plistlib.loads(plist_path.read_bytes())
    assert plist["Label"] == LABEL
    assert plist["StartCalendarInterval"] == {"Hour": 2, "Minute": 5}
    argv = job_argv(plist["ProgramArguments"])
    assert argv[:4] == [sys.executable, "-m", "skillopt_sleep", "nightly"]
    assert argv[-1] == str(user_dirs().schedule_file)
    calls = [c["argv"] for c in fake_tools.calls("launchctl")]
    assert calls[-1][:2] == ["bootstrap", calls[-1][1]] and calls[-1][1].startswith("gui/")
    assert schedule(projects=[str(project)], at="03:00", platform="darwin") == 0  # reload, no error
    assert plistlib.loads(plist_path.read_bytes())["StartCalendarInterval"] == {"Hour": 3, "Minute": 0}
    loaded = json.loads((fake_tools.root / "launchd.json").read_text())
    assert list(loaded) == [LABEL]
    foreign = fake_tools.agents_dir / "com.example.backup.plist"
    foreign.write_bytes(plistlib.dumps({"Label": "com.example.backup", "ProgramArguments": ["/bin/true"]}))
    assert unschedule(platform="darwin") == 0
    assert [p.name for p in fake_tools.agents_dir.iterdir()] == ["com.example.backup.plist"]
    assert json.loads((fake_tools.root / "launchd.json").read_text()) == {}


def test_windows_gets_a_scheduled_task(fake_tools: FakeTools, project: Path) -> None:
    assert schedule(projects=[str(project)], at="01:40", platform="win32") == 0
    (task_file,) = fake_tools.tasks_dir.iterdir()
    root = ET.fromstring(task_file.read_text().split("?>", 1)[1])
    assert root.findtext("t:Settings/t:StartWhenAvailable", namespaces=TASK_NS) == "true"
    assert root.findtext("t:Triggers/t:CalendarTrigger/t:StartBoundary", namespaces=TASK_NS).endswith("T01:40:00")
    assert root.findtext("t:Actions/t:Exec/t:Command", namespaces=TASK_NS) == sys.executable
    assert "nightly --schedule-file" in root.findtext("t:Actions/t:Exec/t:Arguments", namespaces=TASK_NS)
    assert MARKER in root.findtext("t:RegistrationInfo/t:Description", namespaces=TASK_NS)
    assert unschedule(platform="win32") == 0
    assert list(fake_tools.tasks_dir.iterdir()) == []
    assert fake_tools.calls("schtasks")[-1]["argv"][:1] == ["/Delete"]


def test_a_foreign_task_with_our_name_is_not_replaced(fake_tools: FakeTools, project: Path) -> None:
    fake_tools.tasks_dir.mkdir(parents=True)
    foreign = fake_tools.tasks_dir / "skillopt-sleep__nightly.xml"
    foreign.write_text("<Task/>")
    with pytest.raises(UserError, match="not ours"):
        schedule(projects=[str(project)], platform="win32")
    assert unschedule(platform="win32") == 0
    assert foreign.read_text() == "<Task/>"


def test_print_on_each_os_changes_nothing(fake_tools: FakeTools, project: Path, capsys) -> None:
    for platform, expect in (
        ("linux", "Persistent=true"),
        ("darwin", "StartCalendarInterval"),
        ("win32", "StartWhenAvailable"),
    ):
        assert schedule(projects=[str(project)], platform=platform, print_only=True) == 0
        assert expect in capsys.readouterr().out
    assert fake_tools.written_files() == []
    mutating = [c for c in fake_tools.calls() if c["argv"] != ["--user", "show-environment"]]
    assert mutating == []
    assert not user_dirs().schedule_file.exists()


def test_awkward_paths_are_quoted_for_each_mechanism(tmp_path: Path) -> None:
    odd = tmp_path / '50% it\'s $HOME "quoted"'
    job = Job(
        3, 0, ("/usr/bin/python3", "-m", "skillopt_sleep", "nightly", "--schedule-file", str(odd)), tmp_path / "out.log"
    )
    line = job_line(job)
    assert "\\%" in line and "50%" not in line.replace("\\%", "")
    assert job_argv(["/bin/sh", "-c", cron_command(line)]) == list(job.argv)
    exec_start = next(x for x in service_text(job).splitlines() if x.startswith("ExecStart="))
    assert "50%%" in exec_start and "$$HOME" in exec_start and "50% " not in exec_start
    assert job_argv(exec_start_argv(service_text(job))) == list(job.argv)
    assert job_argv(plistlib.loads(plist_bytes(job))["ProgramArguments"]) == list(job.argv)
