"""The schedule's notice (``schedule.json`` among the notice files, ``store.notices``): what a
session start shows when the scheduled night did not run, or ran and failed. Recomputed whenever
the schedule changes and whenever a scheduled night starts or ends."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from skillopt_sleep.errors import UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.missed import what_happened
from skillopt_sleep.scheduler.schedule_file import load_schedule
from skillopt_sleep.scheduler.timing import GRACE, first_unserved_slot, last_run_started, last_slot, missed_night_text
from skillopt_sleep.store.notices import Notice, make_notice, write_or_remove
from skillopt_sleep.types import parse_time


def schedule_notices() -> list[Notice]:
    """The missed-night notice of the schedule, shown from the moment the first slot no night
    has answered is ``GRACE`` late (a night that starts rewrites it)."""
    try:
        schedule = load_schedule()
    except UserError:
        return []
    if schedule is None or not schedule.projects:
        return []
    runs = user_dirs().scheduled_runs
    started = last_run_started(runs)
    slot = first_unserved_slot(schedule.at, parse_time(schedule.updated), started)
    notices = [make_notice(missed_night_text(slot), start=slot + GRACE)]
    if started is not None:  # the last night that began, if it failed, is told until the next slot
        failed = what_happened(
            schedule.via, last_slot(schedule.at, started + timedelta(minutes=1)), datetime.now(timezone.utc), runs
        )
        if failed:
            notices.insert(0, make_notice(failed, end=slot + GRACE))
    return notices


def refresh_schedule_notice() -> None:
    """Recompute the schedule's notice file. Never raises."""
    try:
        notices = schedule_notices()
    except Exception:  # noqa: BLE001 - a notice must not fail schedule or a night
        notices = []
    write_or_remove(user_dirs().schedule_notice, notices, None)
