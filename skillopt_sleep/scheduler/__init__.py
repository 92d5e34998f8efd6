"""The nightly schedule: one OS entry per user (cron, a systemd user timer, a launchd
LaunchAgent or a Windows scheduled task) that runs ``skillopt-sleep nightly``, which runs a night
for every project registered in the schedule file. The mechanisms are built by name in
``registry.py``.
"""

from skillopt_sleep.scheduler.registry import (
    MECHANISMS,
    default_via,
    format_schedule,
    make_mechanism,
    os_family,
    schedule_summary,
    supported_vias,
)
from skillopt_sleep.scheduler.schedule_file import Schedule
from skillopt_sleep.scheduler.timing import missed_night_notice, next_run

__all__ = [
    "Schedule",
    "MECHANISMS",
    "default_via",
    "format_schedule",
    "make_mechanism",
    "missed_night_notice",
    "next_run",
    "os_family",
    "schedule_summary",
    "supported_vias",
]
