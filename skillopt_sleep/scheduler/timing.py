"""When nights run: parsing ``--at``, the next run, and noticing a night the machine missed.

Every mechanism fires at a local wall-clock time. cron never catches up on a night the machine
slept through, and a powered-off Mac or a logged-out systemd user manager can miss one too;
``missed_night_notice`` lets the next CLI use and the SessionStart hook say so, and tells a night
the machine missed from one whose entry or night failed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from skillopt_sleep.errors import EXIT_USAGE, UserError
from skillopt_sleep.types import parse_time

DEFAULT_AT = "03:00"
GRACE = timedelta(minutes=20)  # a job may start this late before its night counts as missed


def parse_at(text: str) -> tuple[int, int]:
    hour, sep, minute = text.strip().partition(":")
    if sep and hour.isdigit() and minute.isdigit() and len(minute) == 2:
        h, m = int(hour), int(minute)
        if 0 <= h < 24 and 0 <= m < 60:
            return h, m
    raise UserError(f"--at {text!r} is not a time of day HH:MM (00:00 to 23:59)", EXIT_USAGE)


def _local(now: datetime | None) -> datetime:
    return (now or datetime.now().astimezone()).astimezone()


def next_run(at: str, now: datetime | None = None) -> datetime:
    """The first local ``at`` strictly after ``now``."""
    now = _local(now)
    h, m = parse_at(at)
    slot = now.replace(hour=h, minute=m, second=0, microsecond=0)
    return slot if slot > now else slot + timedelta(days=1)


def last_slot(at: str, now: datetime | None = None) -> datetime:
    """The latest local ``at`` at or before ``now``."""
    return next_run(at, now) - timedelta(days=1)


def missed_night_notice(now: datetime | None = None) -> str | None:
    """One line when the last scheduled night did not run or failed (``missed.what_happened``
    tells which), else None. Never raises: it runs on every CLI use and in the SessionStart hook."""
    try:
        from skillopt_sleep.paths import user_dirs
        from skillopt_sleep.scheduler.missed import what_happened
        from skillopt_sleep.scheduler.schedule_file import load_schedule

        schedule = load_schedule()
        if schedule is None or not schedule.projects:
            return None
        now = _local(now)
        slot = last_slot(schedule.at, now)
        scheduled_since = parse_time(schedule.updated)
        if now - slot < GRACE or (scheduled_since is not None and scheduled_since > slot):
            return None
        return what_happened(schedule.via, slot, now, user_dirs().scheduled_runs)
    except Exception:
        return None
