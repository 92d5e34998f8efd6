"""The schedule's session-start notice (``scheduler/notice.py``): a night that did not run is said
from its slot plus the grace until a night starts; a night that ran and failed is said at once."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.nightly import _write_last_run, run_scheduled
from skillopt_sleep.scheduler.schedule_changes import remove_schedule
from skillopt_sleep.scheduler.timing import GRACE
from skillopt_sleep.store import notices

from tests.support.schedules import missed_notice_due, schedule_nightly
from tests.support.staged_project import project_with_memory


@pytest.fixture
def project(tmp_path) -> Path:
    return project_with_memory(tmp_path, b"# rules\n")


def _later(**delta: float) -> datetime:
    return datetime.now(timezone.utc) + timedelta(**delta)


def test_a_missed_night_is_said_from_its_slot_plus_grace_until_its_night_starts(project, monkeypatch):
    schedule_nightly()
    due = missed_notice_due()
    assert timedelta(0) < due - datetime.now(timezone.utc) <= timedelta(days=1) + GRACE
    assert notices.read_notices(project, now=due - timedelta(minutes=1)) == []
    (line,) = notices.read_notices(project, now=due + timedelta(minutes=1))
    slot = (due - GRACE).astimezone()
    assert f"the scheduled night of {slot:%a %d %b %H:%M} has not run" in line
    assert notices.read_notices(project, "claude", now=due) == [line]  # the same in every project and agent
    monkeypatch.setattr("skillopt_sleep.scheduler.nightly.prepare_environment", lambda _schedule: None)
    assert run_scheduled(run_project=lambda entry, log: {}) == 0  # a night by hand, before the slot
    assert missed_notice_due() == due  # does not answer for tonight's slot
    _write_last_run(user_dirs().scheduled_runs, {"started": (slot + timedelta(seconds=30)).isoformat()})
    assert missed_notice_due() - due == timedelta(days=1)  # the night of the slot started: the next slot is watched


def test_unscheduling_clears_the_missed_night(project):
    schedule_nightly()
    remove_schedule()
    assert notices.read_notices(project, now=_later(days=3)) == []


def test_a_scheduled_night_that_failed_is_said_at_once_and_blames_no_sleep(project):
    """The last night began and a project failed: the hook says so (from the night's record)
    until the next slot, without calling the machine asleep."""
    schedule_nightly()
    started = datetime.now(timezone.utc) - timedelta(hours=1)
    _write_last_run(
        user_dirs().scheduled_runs,
        {
            "started": started.isoformat(),
            "finished": datetime.now(timezone.utc).isoformat(),
            "projects": [{"project": "/p", "ok": False, "message": "provider failed (auth)"}],
        },
    )
    (line,) = notices.read_notices(project, now=datetime.now(timezone.utc))
    assert "1 of 1 project(s) failed" in line and "provider failed (auth)" in line
    assert "asleep" not in line
