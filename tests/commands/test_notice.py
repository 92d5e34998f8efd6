from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from skillopt_sleep.staging.adoption import adopt
from skillopt_sleep.cli import main
from skillopt_sleep.commands import notice as notice_cmd

from tests.support.staged_project import project_with_memory, stage_memory

NOW = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
# The notices themselves (when they are written, their wording, what a reader refuses):
# tests/report/test_notices.py; the hooks that read them: tests/plugins/test_hook.py.


@pytest.fixture
def project(tmp_path) -> Path:
    return project_with_memory(tmp_path, b"# rules\n")


def _stage(project: Path, night_id: str, n_rules: int) -> Path:
    return stage_memory(project, b"# rules\n- new\n", night_id, rules=n_rules)


def test_cli_json_and_text(project, capsys):
    _stage(project, "n1", 2)
    assert main(["notice", "--project", str(project), "--json", "--agent", "claude"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] and data["event"] == "session-start"
    assert data["notices"] and "/skillopt-sleep review" in data["notices"][0]
    assert main(["notice", "--project", str(project)]) == 0
    assert capsys.readouterr().out == (
        "skillopt-sleep: last night proposed 2 rules for this project — skillopt-sleep review\n"
    )
    adopt(project)
    assert main(["notice", "--project", str(project)]) == 0
    assert capsys.readouterr().out == ""


def test_session_end_records_the_project_and_prints_nothing(project, capsys):
    assert main(["notice", "--project", str(project), "--event", "session-end", "--agent", "claude"]) == 0
    assert capsys.readouterr().out == ""
    seen = notice_cmd.projects_seen()
    assert list(seen) == [str(project.resolve())]
    assert seen[str(project.resolve())][1] == "claude"


def test_missing_project_is_a_one_line_usage_error(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "skillopt_sleep", "notice", "--project", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
