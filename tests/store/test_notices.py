"""The precomputed session-start notices: written whenever what a session start shows changes
(stage, adopt, revert, anything under the project lock, the schedule, a scheduled night), read
back only when trustworthy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from skillopt_sleep.store import notices
from skillopt_sleep.staging.adoption import adopt, revert
from skillopt_sleep.errors import UserError
from skillopt_sleep.files import append_jsonl
from skillopt_sleep.paths import notice_key, project_dirs, project_fingerprint, user_dirs
from skillopt_sleep.types import Edit, NightReport

from tests.support.schedules import missed_notice_due, schedule_nightly
from tests.support.staged_project import project_with_memory, stage_memory

WAITING = "skillopt-sleep: last night proposed 2 rules for this project — skillopt-sleep review"


@pytest.fixture
def project(tmp_path) -> Path:
    return project_with_memory(tmp_path, b"# rules\n")


def _stage(project: Path, night_id: str = "n1", rules: int = 2, **report) -> Path:
    made = NightReport(
        night_id=night_id,
        project=str(project),
        mode="run",
        status="staged",
        accepted_edits=[Edit("memory", "add", f"rule {i}") for i in range(rules)],
        **report,
    )
    return stage_memory(project, b"# rules\n- new\n", night_id, report=made)


def _file(project: Path) -> Path:
    return user_dirs().project_notice(project)


def _later(**delta: float) -> datetime:
    return datetime.now(timezone.utc) + timedelta(**delta)


# --------------------------------------------------------------------------- when it is written


def test_nothing_staged_means_no_notice_and_no_file(project):
    assert notices.read_notices(project) == []
    assert not _file(project).exists()


def test_staging_writes_it_adopt_clears_it_revert_keeps_it_cleared(project):
    _stage(project)
    assert notices.read_notices(project) == [WAITING]
    adopt(project)
    assert notices.read_notices(project) == []
    assert _file(project).read_text().count("\n") == 3  # the header, and no notice
    revert(project)
    assert notices.read_notices(project) == []  # a reverted proposal is not news


def test_a_newer_proposal_after_a_revert_is_announced(project):
    _stage(project, "n1")
    adopt(project)
    revert(project)
    _stage(project, "n2", rules=1)
    assert notices.read_notices(project) == [WAITING.replace("2 rules", "1 rule")]


def test_whatever_changed_under_the_lock_is_said_when_it_is_released(project):
    """A roll-forward of an adoption a killed process committed changes the ledger under the lock;
    any lock holder, even one that then fails, leaves the notice true."""
    _stage(project)
    append_jsonl(project_dirs(project).ledger, {"event": "adopt", "night_id": "n1", "adoption_id": "a1"})
    assert notices.read_notices(project) == [WAITING]  # stale until someone takes the lock
    with pytest.raises(UserError):
        adopt(project, "no-such-night")
    assert notices.read_notices(project) == []


def test_wording_per_agent(project):
    _stage(project, rules=1)
    assert notices.read_notices(project, "claude") == [
        "skillopt-sleep: last night proposed 1 rule for this project — /skillopt-sleep review"
    ]
    assert notices.read_notices(project, "codex")[0].endswith("— ask for the skillopt-sleep review")


def test_after_a_day_and_a_half_the_proposal_is_named_by_its_date(project):
    staged = _stage(project, rules=3)
    created = json.loads((staged / "manifest.json").read_text())["created"]
    day = created[:10]
    assert notices.read_notices(project, now=_later(hours=35)) == [WAITING.replace("2 rules", "3 rules")]
    assert notices.read_notices(project, now=_later(hours=37)) == [
        f"skillopt-sleep: the night of {day} proposed 3 rules for this project — skillopt-sleep review"
    ]


def test_simulated_and_unknown_counts(project):
    _stage(project, simulated=True)
    assert "(simulated, from the offline simulator)" in notices.read_notices(project)[0]
    (project_dirs(project).staging / "n1" / "report.json").write_bytes(b"\x00not json")
    notices.refresh_project_notice(project)
    assert notices.read_notices(project)[0].startswith("skillopt-sleep: last night proposed changes")


def test_a_notice_that_cannot_be_written_is_removed_not_left_stale(project, monkeypatch):
    _stage(project)

    def full_disk(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(notices, "atomic_write_text", full_disk)
    adopt(project)  # adopt itself succeeds
    assert not _file(project).exists()
    assert notices.read_notices(project) == []


def test_lines_are_redacted_and_sanitized_when_written_and_again_when_read(project):
    secret = "sk-ant-api03-" + "A" * 40
    notices.write_notice_file(_file(project), [notices.make_notice(f"a\x1b[31m b\n{secret}\x07 c")], project)
    assert "\t-\tcli\ta b [REDACTED:anthropic_key] c\n" in _file(project).read_text()
    _file(project).write_text(
        _file(project).read_text().replace("a b [REDACTED:anthropic_key] c", "x\x1b]0;title\x07y\u202ez" + "w" * 400)
    )
    (line,) = notices.read_notices(project)
    assert line.startswith("xyzw") and len(line) <= notices.NOTICE_MAX_CHARS and "\x1b" not in line


# --------------------------------------------------------------------------- what a reader refuses


@pytest.mark.parametrize("damage", ["format", "project", "garbage", "torn", "bad bound", "huge", "fifo", "directory"])
def test_an_untrustworthy_file_says_nothing(project, tmp_path, damage):
    _stage(project)
    path = _file(project)
    text = path.read_text()
    if damage == "format":
        path.write_text(text.replace("notice v1", "notice v0"))
    elif damage == "project":  # another project's notice under this project's name
        path.write_text(text.replace(project_fingerprint(project), project_fingerprint(tmp_path)))
    elif damage == "garbage":
        path.write_bytes(b"\xff{[" * 10)
    elif damage == "torn":  # cut short (never by our atomic writes; by a full disk elsewhere)
        path.write_text(text[:-10])
    elif damage == "bad bound":
        path.write_text(text.replace("-\t", "0x10\t"))
    elif damage == "huge":  # valid, but past the bound
        path.write_text(text + "-\t-\tcodex\tpadding\n" * notices.MAX_FILE_BYTES)
    elif damage == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        path.unlink()
        path.mkdir()
    if damage == "fifo":  # in a process of its own: a reader that blocks would hang the test run
        out = subprocess.run(
            [sys.executable, "-m", "skillopt_sleep", "notice", "--project", str(project)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (out.returncode, out.stdout) == (0, "")
    else:
        assert notices.read_notices(project) == []


def test_the_file_name_is_the_resolved_project(project, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(project)
    assert notice_key(link) == notice_key(project) and len(notice_key(project)) == 16
    assert notice_key(tmp_path) != notice_key(project)


# --------------------------------------------------------------------------- the schedule


def test_project_notices_come_first_and_at_most_three_lines_show(project):
    _stage(project)
    schedule_nightly()
    lines = notices.read_notices(project, now=missed_notice_due() + timedelta(minutes=1))
    assert lines[0] == WAITING and "has not run" in lines[1] and len(lines) == 2
    many = [notices.make_notice(f"line {i}") for i in range(5)]
    notices.write_notice_file(_file(project), many, project)
    assert notices.read_notices(project) == ["line 0", "line 1", "line 2"]
