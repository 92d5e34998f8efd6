from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from skillopt_sleep.adoption import adopt, revert
from skillopt_sleep.cli import main
from skillopt_sleep.commands import notice as notice_cmd
from skillopt_sleep.paths import user_dirs

from tests.support.staged_project import project_with_memory, stage_memory

NOW = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)


@pytest.fixture
def project(tmp_path) -> Path:
    return project_with_memory(tmp_path, b"# rules\n")


def _stage(project: Path, night_id: str, n_rules: int) -> Path:
    return stage_memory(project, b"# rules\n- new\n", night_id, rules=n_rules)


def test_nothing_staged_means_no_notice(project):
    assert notice_cmd.collect_notices(project, NOW) == []


def test_staged_proposal_is_announced_until_adopted(project):
    _stage(project, "n1", 2)
    lines = notice_cmd.collect_notices(project, agent="claude")
    assert lines == ["skillopt-sleep: last night proposed 2 rules for this project — "
                     "/skillopt-sleep:skillopt-sleep review"]
    adopt(project)
    assert notice_cmd.collect_notices(project) == []
    revert(project)
    assert notice_cmd.collect_notices(project) == []  # a reverted proposal is not news


def test_wording_per_agent_and_count(project):
    _stage(project, "n1", 1)
    assert notice_cmd.collect_notices(project, agent="cli")[0].endswith(
        "proposed 1 rule for this project — skillopt-sleep review")
    assert "skillopt-sleep review" in notice_cmd.collect_notices(project, agent="codex")[0]


def test_an_old_proposal_names_its_date(project):
    staged = _stage(project, "n1", 3)
    manifest = json.loads((staged / "manifest.json").read_text())
    manifest["created"] = (NOW - timedelta(days=4)).isoformat()
    (staged / "manifest.json").write_text(json.dumps(manifest))
    assert notice_cmd.collect_notices(project, NOW) == [
        "skillopt-sleep: the night of 2026-02-26 proposed 3 rules for this project — "
        "skillopt-sleep review"]


def test_unreadable_report_still_announces_the_proposal(project):
    staged = _stage(project, "n1", 2)
    (staged / "report.json").write_bytes(b"\x00not json")
    assert notice_cmd.collect_notices(project)[0].startswith(
        "skillopt-sleep: last night proposed changes for this project")


def test_simulated_proposal_says_so(project):
    staged = _stage(project, "n1", 2)
    manifest = json.loads((staged / "manifest.json").read_text())
    manifest["simulated"] = True
    (staged / "manifest.json").write_text(json.dumps(manifest))
    assert "(simulated" in notice_cmd.collect_notices(project)[0]


def test_a_failing_producer_is_skipped(project, monkeypatch):
    def broken(*_args):
        raise RuntimeError("boom")

    monkeypatch.setattr(notice_cmd, "NOTICE_PRODUCERS",
                        [broken, lambda *_: "second\x1b[31m line\nwith sk-ant-api03-" + "A" * 40 + "\x07 end"])
    assert notice_cmd.collect_notices(project) == ["second line with [REDACTED:anthropic_key] end"]


def test_cli_json_and_text(project, capsys):
    _stage(project, "n1", 2)
    assert main(["notice", "--project", str(project), "--json", "--agent", "claude"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] and data["event"] == "session-start"
    assert data["notices"] and "/skillopt-sleep:skillopt-sleep review" in data["notices"][0]
    assert main(["notice", "--project", str(project)]) == 0
    assert capsys.readouterr().out.count("\n") == 1


def test_session_end_records_the_project_and_prints_nothing(project, capsys):
    assert main(["notice", "--project", str(project), "--event", "session-end", "--agent", "claude"]) == 0
    assert capsys.readouterr().out == ""
    seen = notice_cmd.projects_seen()
    assert list(seen) == [str(project.resolve())]
    assert seen[str(project.resolve())][1] == "claude"


def test_sessions_record_is_compacted(project, tmp_path, monkeypatch):
    monkeypatch.setattr(notice_cmd, "SESSIONS_COMPACT_BYTES", 2000)
    other = tmp_path / "other"
    other.mkdir()
    for i in range(40):
        notice_cmd.record_session(project if i % 2 else other, "claude", NOW + timedelta(minutes=i))
    assert user_dirs().sessions_seen.stat().st_size <= 2000
    seen = notice_cmd.projects_seen()
    assert set(seen) == {str(project), str(other)}
    assert seen[str(project)][0] == "2026-03-02T08:39:00Z"


def test_missing_project_is_a_one_line_usage_error(tmp_path):
    out = subprocess.run([sys.executable, "-m", "skillopt_sleep", "notice", "--project",
                          str(tmp_path / "nope")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
