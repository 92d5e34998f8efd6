"""Next run, and the notice for a night the machine missed (what cron never catches up on)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from skillopt_sleep.cli import main
from skillopt_sleep.scheduler.notice import refresh_schedule_notice
from skillopt_sleep.errors import UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler import missed_night_notice
from skillopt_sleep.scheduler.schedule_changes import save_schedule
from skillopt_sleep.scheduler.schedule_file import ProjectEntry, Schedule
from skillopt_sleep.scheduler.timing import last_slot, next_run, parse_at

UTC = timezone.utc


def test_parse_at() -> None:
    assert parse_at("03:00") == (3, 0) and parse_at("23:59") == (23, 59) and parse_at("7:05") == (7, 5)
    for bad in ("24:00", "3", "03:60", "03:5", "ab:cd", "-1:00", ""):
        with pytest.raises(UserError):
            parse_at(bad)


def test_next_run_and_last_slot() -> None:
    now = datetime(2026, 11, 23, 2, 0, tzinfo=UTC).astimezone()
    nxt = next_run(now.strftime("%H:%M"), now)
    assert nxt == now.replace(second=0, microsecond=0) + timedelta(days=1)  # strictly after now
    later = (now + timedelta(hours=1)).strftime("%H:%M")
    assert next_run(later, now) - now == timedelta(hours=1)
    assert last_slot(later, now) == next_run(later, now) - timedelta(days=1)


def _schedule(at: str, updated: datetime) -> None:
    save_schedule(Schedule(at=at, via="cron", python="/usr/bin/python3", projects=[ProjectEntry("/p", {})]))
    path = user_dirs().schedule_file
    data = json.loads(path.read_text())
    data["updated"] = updated.isoformat()
    path.write_text(json.dumps(data))
    refresh_schedule_notice()  # as every change the engine makes to the schedule does


def _last_run(started: datetime) -> None:
    runs = user_dirs().scheduled_runs
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "last-run.json").write_text(json.dumps({"started": started.isoformat(), "projects": []}))


def test_missed_night_notice() -> None:
    slot = datetime(2026, 11, 23, 3, 0).astimezone()
    morning = slot + timedelta(hours=6)
    assert missed_night_notice(morning) is None  # nothing scheduled
    _schedule("03:00", slot - timedelta(days=3))
    notice = missed_night_notice(morning)
    assert notice is not None and "did not run" in notice and "skillopt-sleep nightly" in notice
    assert "03:00" in notice
    assert missed_night_notice(slot + timedelta(minutes=5)) is None  # may still be starting
    _last_run(slot.astimezone(UTC) - timedelta(days=1))  # yesterday's night ran, tonight's did not
    assert missed_night_notice(morning) is not None
    _last_run(slot.astimezone(UTC) + timedelta(seconds=4))
    assert missed_night_notice(morning) is None
    _schedule("03:00", slot + timedelta(hours=2))  # scheduled after tonight's slot: nothing missed yet
    (user_dirs().scheduled_runs / "last-run.json").unlink()
    assert missed_night_notice(morning) is None


def test_missed_night_notice_never_raises() -> None:
    path = user_dirs().schedule_file
    path.parent.mkdir(parents=True)
    path.write_text("{ broken")
    assert missed_night_notice() is None


def test_the_next_cli_use_says_a_night_was_missed(capsys) -> None:
    # the slot six hours ago, whatever the time of day the test runs at (within GRACE of a
    # slot, a night may still be starting and nothing is said)
    at = (datetime.now().astimezone() - timedelta(hours=6)).strftime("%H:%M")
    _schedule(at, datetime.now(UTC) - timedelta(days=5))
    assert main(["status"]) == 0
    err = capsys.readouterr().err
    assert err.count("did not run") == 1


def test_the_session_start_notice_says_a_night_was_missed(tmp_path, capsys) -> None:
    _schedule("03:00", datetime.now(UTC) - timedelta(days=5))
    assert main(["notice", "--project", str(tmp_path), "--event", "session-start", "--agent", "claude"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("has not run") == 1 and captured.err == ""
