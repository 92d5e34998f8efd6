"""Every command of the README's Scheduling section, run as written (with fake OS tools)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.base import MARKER
from tests.support.scheduler_tools import FakeTools

README = Path(__file__).resolve().parents[2] / "README.md"


def scheduling_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Scheduling\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the Scheduling section has a sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def restore_environ():
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_readme_scheduling_commands(fake_tools: FakeTools, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("SKILLOPT_FAKE_NO_USER_MANAGER", "1")  # cron, whose table we can read
    monkeypatch.setenv("SKILLOPT_SLEEP_BACKEND", "sim")  # offline nights
    home = fake_tools.home
    for name in ("app", "api"):
        (home / "code" / name).mkdir(parents=True)
    commands = scheduling_commands()
    assert [c.split()[:2] for c in commands if c.startswith("skillopt-sleep")] == [
        ["skillopt-sleep", "schedule"],
        ["skillopt-sleep", "schedule"],
        ["skillopt-sleep", "status"],
        ["skillopt-sleep", "nightly"],
        ["skillopt-sleep", "schedule"],
        ["skillopt-sleep", "unschedule"],
        ["skillopt-sleep", "unschedule"],
    ]
    outputs = []
    for command in commands:
        if command.startswith("skillopt-sleep "):
            argv = shlex.split(command.replace("~/", f"{home}/"))[1:]
            assert main(argv) == 0, command
        else:
            argv = []
            subprocess.run(["bash", "-c", command], check=True, env={**os.environ, "HOME": str(home)}, timeout=30)
        outputs.append(capsys.readouterr().out)
        if argv == ["schedule", "--print"]:
            assert MARKER not in fake_tools.table() and not user_dirs().schedule_file.exists()
        if "--project" in argv and argv[0] == "schedule" and "--backend" not in argv:
            assert fake_tools.table().count(MARKER) == 1
    assert "nightly at 03:00 via cron" in outputs[2]
    assert (home / ".skillopt-sleep.env").stat().st_mode & 0o077 == 0
    assert fake_tools.table() == "" or MARKER not in fake_tools.table()
    assert not user_dirs().schedule_file.exists()
