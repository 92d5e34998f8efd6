"""The macOS LaunchAgent (scheduler/launchd.py), run on any OS by injecting the platform, against
the fake tools: installed, reloaded and removed alone."""

from __future__ import annotations

import json
import plistlib
import sys
from pathlib import Path

import pytest

from skillopt_sleep.commands.schedule import schedule, unschedule
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.launchd import LABEL
from tests.support.os_entries import job_argv
from tests.support.scheduler_tools import FakeTools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


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
