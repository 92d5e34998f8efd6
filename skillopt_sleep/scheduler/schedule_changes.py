"""The engine's changes to the schedule file: each writes or removes it (``schedule_file``) and
then refreshes the schedule's notice (``store.notices``), which says when a scheduled night was
missed and is computed from the file."""

from __future__ import annotations

from pathlib import Path

from skillopt_sleep.scheduler.notice import refresh_schedule_notice
from skillopt_sleep.scheduler.schedule_file import Schedule, delete_schedule, write_schedule


def save_schedule(schedule: Schedule, path: Path | None = None) -> Path:
    """Write ``schedule`` and refresh the notice; the path written."""
    written = write_schedule(schedule, path)
    refresh_schedule_notice()
    return written


def remove_schedule(path: Path | None = None) -> bool:
    """Remove the schedule file and refresh the notice; whether there was one."""
    removed = delete_schedule(path)
    if removed:
        refresh_schedule_notice()
    return removed
