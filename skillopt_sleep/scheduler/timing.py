"""When nights run: parsing ``--at``, the next run, and noticing a night the machine missed.

Every mechanism fires at a local wall-clock time. cron never catches up on a night the machine
slept through, and a powered-off Mac or a logged-out systemd user manager can miss one too;
``missed_night_notice`` lets the next CLI use and the SessionStart hook say so.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from skillopt_sleep.errors import EXIT_USAGE, UserError
from skillopt_sleep.types import parse_time
from skillopt_sleep.files import parse_json

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


def last_run_started(runs_dir) -> datetime | None:
    try:
        data = parse_json((runs_dir / "last-run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return parse_time(data.get("started")) if isinstance(data, dict) else None


def missed_night_notice(now: datetime | None = None) -> str | None:
    """One line when the last scheduled night did not start, else None. Never raises: it runs
    on every CLI use and in the SessionStart hook."""
    try:
        from skillopt_sleep.paths import user_dirs
        from skillopt_sleep.scheduler.schedule_file import load_schedule

        schedule = load_schedule()
        if schedule is None or not schedule.projects:
            return None
        now = _local(now)
        slot = last_slot(schedule.at, now)
        scheduled_since = parse_time(schedule.updated)
        if now - slot < GRACE or (scheduled_since is not None and scheduled_since > slot):
            return None
        started = last_run_started(user_dirs().scheduled_runs)
        if started is not None and started >= slot - timedelta(minutes=1):
            return None
        return missed_night_text(slot)
    except Exception:
        return None


def missed_night_text(slot: datetime) -> str:
    return (f"skillopt-sleep: the scheduled night of {slot:%a %d %b %H:%M} did not run (was the "
            "machine asleep or off?); run it now with `skillopt-sleep nightly`")


def first_unserved_slot(at: str, updated: datetime | None, started: datetime | None,
                        now: datetime | None = None) -> datetime:
    """The first scheduled time no night has answered yet: after the schedule was last changed
    and after the last scheduled night started (a start up to a minute early counts for its
    slot). ``missed_night_notice`` reports a slot once it is ``GRACE`` late; a precomputed
    notice shows from then on."""
    anchors = [moment for moment in (updated, started and started + timedelta(minutes=1)) if moment]
    return next_run(at, max(anchors) if anchors else now)
