"""When nights run: parsing ``--at``, the next run, and noticing a night the machine missed.

Every mechanism fires at a local wall-clock time. cron never catches up on a night the machine
slept through, and a powered-off Mac or a logged-out systemd user manager can miss one too;
``missed_night_notice`` lets the next CLI use say so and tells a night the machine missed from one
whose entry or night failed; ``first_unserved_slot`` lets the SessionStart hook's precomputed
notice say it from the right moment.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from skillopt_sleep.errors import EXIT_USAGE, UserError
from skillopt_sleep.types import parse_time, time_of_day

DEFAULT_AT = "03:00"  # when neither --at, the [schedule] section nor an earlier schedule says
GRACE = timedelta(minutes=20)  # a job may start this late before its night counts as missed


def parse_at(text: str) -> tuple[int, int]:
    parsed = time_of_day(text)
    if parsed is None:
        raise UserError(f"--at {text!r} is not a time of day HH:MM (00:00 to 23:59)", EXIT_USAGE)
    return parsed


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
    tells which), else None. Never raises: it runs on every CLI use (the SessionStart hook reads
    ``scheduler.notice.schedule_notices``, precomputed)."""
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


def missed_night_text(slot: datetime) -> str:
    """The precomputed notice for a slot no night answered: written before the slot, it cannot
    know why (the machine asleep, an entry that failed to start), so it blames nothing and points
    to ``status``, which reads the traces (``missed.what_happened``)."""
    return (
        f"skillopt-sleep: the scheduled night of {slot:%a %d %b %H:%M} has not run; "
        "`skillopt-sleep status` says why, `skillopt-sleep nightly` runs it now"
    )


def last_run_started(runs_dir) -> datetime | None:
    from skillopt_sleep.scheduler.missed import read_last_run

    last = read_last_run(runs_dir)
    return parse_time(last.get("started")) if last else None


def first_unserved_slot(
    at: str, updated: datetime | None, started: datetime | None, now: datetime | None = None
) -> datetime:
    """The first scheduled time no night has answered yet: after the schedule was last changed
    and after the last scheduled night started (a start up to a minute early counts for its
    slot). ``missed_night_notice`` reports a slot once it is ``GRACE`` late; a precomputed
    notice shows from then on."""
    anchors = [moment for moment in (updated, started and started + timedelta(minutes=1)) if moment]
    return next_run(at, max(anchors) if anchors else now)
