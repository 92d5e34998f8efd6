"""The fake OS scheduler tools (tests/support/os_tools/{crontab,systemctl,launchctl,schtasks}) on PATH,
with their state in a temp dir, and helpers to read what they were asked to do."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parent / "os_tools"
TOOLS = ("crontab", "systemctl", "launchctl", "schtasks")


@dataclass
class FakeTools:
    root: Path
    home: Path  # the fake user's home (HOME): systemd units, LaunchAgents live under it

    @property
    def log(self) -> Path:
        return self.root / "calls.jsonl"

    @property
    def crontab(self) -> Path:
        return self.root / "crontab.txt"

    @property
    def unit_dir(self) -> Path:
        return self.home / ".config" / "systemd" / "user"

    @property
    def agents_dir(self) -> Path:
        return self.home / "Library" / "LaunchAgents"

    @property
    def tasks_dir(self) -> Path:
        return self.root / "tasks"

    def calls(self, tool: str | None = None) -> list[dict]:
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]
        return [r for r in rows if tool is None or r["tool"] == tool]

    def table(self) -> str:
        """The stored table as text, line ends untranslated (``crontab.read_bytes()`` for bytes)."""
        return self.crontab.read_bytes().decode("utf-8", "surrogateescape") if self.crontab.exists() else ""

    def written_files(self) -> list[Path]:
        """Every file the tools or the mechanisms may have written."""
        out = [self.crontab] if self.crontab.exists() else []
        for base in (self.unit_dir, self.agents_dir, self.tasks_dir):
            if base.exists():
                out += [p for p in base.rglob("*") if p.is_file()]
        return out


@pytest.fixture
def fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    root = tmp_path / "fake-os"
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(FAKES / tool)
    home = tmp_path / "user-home"
    home.mkdir()
    tools = FakeTools(root, home)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("SKILLOPT_FAKE_SCHED_LOG", str(tools.log))
    monkeypatch.setenv("SKILLOPT_FAKE_CRONTAB", str(tools.crontab))
    monkeypatch.setenv("SKILLOPT_FAKE_UNIT_DIR", str(tools.unit_dir))
    monkeypatch.setenv("SKILLOPT_FAKE_LAUNCHD_STATE", str(root / "launchd.json"))
    monkeypatch.setenv("SKILLOPT_FAKE_SCHTASKS_DIR", str(tools.tasks_dir))
    monkeypatch.setenv("SKILLOPT_SLEEP_BACKEND", "sim")  # offline nights unless a test picks a backend
    return tools
