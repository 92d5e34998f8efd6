"""The Windows scheduled task (scheduler/schtasks.py), run on any OS by injecting the platform,
against the fake tools: the task's XML, removed alone; a foreign task with our name is never
replaced."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from skillopt_sleep.commands.schedule import schedule, unschedule
from skillopt_sleep.errors import UserError
from skillopt_sleep.scheduler.base import MARKER
from tests.support.scheduler_tools import FakeTools


TASK_NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


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
