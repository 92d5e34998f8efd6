"""The engine's changes to the schedule: the file written or removed, and the notice that follows
from it refreshed with it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from skillopt_sleep.paths import user_dirs
from skillopt_sleep.store import notices
from skillopt_sleep.scheduler.schedule_changes import remove_schedule, save_schedule
from skillopt_sleep.scheduler.schedule_file import ProjectEntry, Schedule, load_schedule


def _schedule() -> Schedule:
    return Schedule(at="03:00", via="cron", python="/usr/bin/python3", projects=[ProjectEntry("/p", {})])


def test_saving_writes_the_file_and_its_notice_and_removing_clears_both(tmp_path: Path) -> None:
    later = datetime.now(timezone.utc) + timedelta(days=3)  # past the next slot and its grace
    path = save_schedule(_schedule())
    assert path == user_dirs().schedule_file and load_schedule(path).at == "03:00"
    [line] = notices.read_notices(tmp_path, now=later)
    assert "has not run" in line, "the missed-night notice is computed from the new file"
    assert remove_schedule() and not path.exists()
    assert notices.read_notices(tmp_path, now=later) == [], "no schedule: no missed night to say"
    assert remove_schedule() is False, "nothing to remove"
