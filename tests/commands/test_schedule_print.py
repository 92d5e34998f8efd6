"""``schedule --print`` changes nothing, so it shows the entry even when the job would not find
what it needs (no agent CLI, no key, a loose env file): the finding is a warning on stderr."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.base import MARKER
from tests.support.scheduler_tools import FakeTools

KEY = "sk-ant-api03-" + "Pr1" * 30 + "CC"


@pytest.fixture
def cron(fake_tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    monkeypatch.setenv("SKILLOPT_FAKE_NO_USER_MANAGER", "1")
    # no claude / codex anywhere the job could look
    monkeypatch.setenv("PATH", f"{fake_tools.root / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return fake_tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def _nothing_changed(tools: FakeTools) -> None:
    assert tools.table() == "" and tools.written_files() == []
    assert [c for c in tools.calls() if c["argv"] != ["--user", "show-environment"]] == []
    assert not user_dirs().schedule_file.exists() and not user_dirs().state.exists()


@pytest.mark.parametrize(
    "argv, finding",
    [
        (["--backend", "auto"], "backend auto: a scheduled night would find neither"),
        (["--backend", "codex-cli"], "`codex` is not on PATH"),
        (["--backend", "anthropic"], "a scheduled night needs ANTHROPIC_API_KEY"),
    ],
)
def test_print_shows_the_entry_when_no_cli_or_key_is_found(
    cron: FakeTools, project: Path, argv: list[str], finding: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # in this shell only: the job would not see it
    assert main(["schedule", "--project", str(project), "--print", *argv]) == 0
    out, err = capsys.readouterr()
    assert MARKER in out and "skillopt_sleep nightly --schedule-file" in out and str(project) in out
    assert "(--print: nothing was changed)" in out
    (line,) = [x for x in err.splitlines() if x.strip()]
    assert line.startswith("skillopt-sleep: warning: ") and finding in line
    assert "without --print refuses" in line
    assert KEY not in out + err
    _nothing_changed(cron)
    # installing it is still refused, with the same finding
    assert main(["schedule", "--project", str(project), *argv]) == 3
    assert finding in capsys.readouterr().err


def test_print_json_carries_the_warnings(cron: FakeTools, project: Path, tmp_path: Path, capsys) -> None:
    loose = tmp_path / "keys.env"
    loose.write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    loose.chmod(0o644)
    assert (
        main(
            [
                "schedule",
                "--project",
                str(project),
                "--backend",
                "anthropic",
                "--env-file",
                str(loose),
                "--print",
                "--json",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["plan"]["mechanism"] == "cron" and data["schedule"]["projects"][0]["project"] == str(project)
    assert any("chmod 600" in w for w in data["warnings"])
    assert any("ANTHROPIC_API_KEY" in w for w in data["warnings"])  # the loose file was not read
    assert len([x for x in err.splitlines() if x.strip()]) == len(data["warnings"]) == 2
    assert KEY not in out + err
    _nothing_changed(cron)


def test_print_still_refuses_what_would_corrupt_the_entry(cron: FakeTools, project: Path, capsys) -> None:
    assert main(["schedule", "--project", str(project), "--print", "--at", "03:00\n* * * * * x"]) == 2
    assert "control character" in capsys.readouterr().err
