"""A schedule as the engine saves it, for tests of what a missed or failed scheduled night says."""

from __future__ import annotations

from datetime import datetime, timezone

from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.schedule_changes import save_schedule
from skillopt_sleep.scheduler.schedule_file import ProjectEntry, Schedule


def schedule_nightly(projects: list[str] | None = None) -> None:
    """A nightly schedule at 03:00 by cron, saved as ``schedule`` saves it (the notice refreshed)."""
    save_schedule(
        Schedule(
            at="03:00",
            via="cron",
            python="/usr/bin/python3",
            projects=[ProjectEntry(p, {}) for p in (projects or ["/p"])],
        )
    )


def missed_notice_due() -> datetime:
    """When the schedule's notice file says its missed-night line starts to apply."""
    first = user_dirs().schedule_notice.read_text().splitlines()[3]
    return datetime.fromtimestamp(int(first.split("\t")[0]), timezone.utc)
