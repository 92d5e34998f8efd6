"""Which OS mechanism a platform schedules with, built by name, and the schedule as ``status``
shows it. Adding a mechanism is adding a module with a class implementing ``base.Mechanism``, one
line in ``MECHANISMS`` and its name in config's ``SCHEDULE_VIAS``."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillopt_sleep.errors import EXIT_USAGE, UserError
from skillopt_sleep.scheduler.schedule_file import load_schedule
from skillopt_sleep.scheduler.timing import missed_night_notice, next_run

if TYPE_CHECKING:
    from skillopt_sleep.scheduler.base import Mechanism


# Imported on use: the missed-night notice runs on every CLI use and must stay light. The names
# are the ``via`` setting's choices (config ``SCHEDULE_VIAS``, not imported here for the same reason).
MECHANISMS: dict[str, str] = {
    "cron": "skillopt_sleep.scheduler.cron:Cron",
    "systemd": "skillopt_sleep.scheduler.systemd:Systemd",
    "launchd": "skillopt_sleep.scheduler.launchd:Launchd",
    "schtasks": "skillopt_sleep.scheduler.schtasks:Schtasks",
}


def os_family(platform: str | None = None) -> str:
    platform = platform or sys.platform
    if platform.startswith("win"):
        return "windows"
    if platform == "darwin":
        return "macos"
    return "linux" if platform.startswith("linux") else "unix"


def supported_vias(platform: str | None = None) -> tuple[str, ...]:
    return {"windows": ("schtasks",), "macos": ("launchd", "cron"), "linux": ("systemd", "cron")}.get(
        os_family(platform), ("cron",)
    )


def default_via(platform: str | None = None, systemd_available: Callable[[], bool] | None = None) -> str:
    """What this OS has: systemd when a user manager answers, else cron (Linux); launchd on
    macOS; schtasks on Windows."""
    family = os_family(platform)
    if family == "linux":
        if systemd_available is None:
            from skillopt_sleep.scheduler.systemd import user_manager_running

            systemd_available = user_manager_running
        return "systemd" if systemd_available() else "cron"
    return supported_vias(platform)[0]


def make_mechanism(via: str, platform: str | None = None) -> Mechanism:
    if via not in supported_vias(platform):
        raise UserError(
            f"--via {via} is not available on {os_family(platform)}; choose one of: "
            f"{', '.join(supported_vias(platform))}",
            EXIT_USAGE,
        )
    module, _, name = MECHANISMS[via].partition(":")
    return getattr(importlib.import_module(module), name)()


def schedule_summary(project: str | None = None, now: datetime | None = None) -> dict[str, Any] | None:
    """What ``status`` shows about the schedule: when, how, the next run, whether ``project``
    is registered, and the last scheduled night's result. None when nothing is scheduled."""
    from skillopt_sleep.scheduler.nightly import read_last_run

    schedule = load_schedule()
    if schedule is None:
        return None
    resolved = str(Path(project).expanduser().resolve()) if project else None
    return {
        "at": schedule.at,
        "via": schedule.via,
        "next_run": next_run(schedule.at, now).isoformat(timespec="minutes"),
        "projects": [p.project for p in schedule.projects],
        "this_project": resolved is not None and schedule.entry(resolved) is not None,
        "last_run": read_last_run(),
        "missed": missed_night_notice(now),
    }


def format_schedule(summary: dict[str, Any] | None, project: str) -> list[str]:
    """``status`` lines about the schedule (text is sanitized by the caller's rules: every value
    here comes from our own files)."""
    from skillopt_sleep.agent_surface import ask_for, calling_agent
    from skillopt_sleep.sanitize import sanitize
    from skillopt_sleep.scheduler.nightly import tally

    if summary is None:
        return [f"  schedule: none (`{ask_for('schedule')}` runs a night every night)"]
    when = datetime.fromisoformat(summary["next_run"])
    # inside an agent its command works on the agent's project; in a terminal, name the project
    schedule = ask_for("schedule") if calling_agent() else f"skillopt-sleep schedule --project {sanitize(project)}"
    registered = (
        "this project is registered" if summary["this_project"] else f"this project is not registered: {schedule}"
    )
    lines = [
        f"  schedule: nightly at {summary['at']} via {summary['via']}, next run "
        f"{when:%a %d %b %H:%M} ({len(summary['projects'])} project(s); {registered})"
    ]
    last = summary["last_run"]
    if not last:
        lines.append("  last scheduled night: none (no scheduled night has run yet)")
    else:
        results = last.get("projects") or []
        failed = [r for r in results if not r.get("ok")]
        state = "running" if not last.get("finished") else tally(results)
        if last.get("error"):
            state = f"could not start: {last['error']}"
        lines.append(
            f"  last scheduled night: {sanitize(last.get('started'))}, {sanitize(state)}; "
            f"log {sanitize(last.get('log'))}"
        )
        for r in failed:
            lines.append(f"    failed {sanitize(r.get('project'))}: {sanitize(r.get('message'), 160)}")
    if summary["missed"]:  # missed.py names the terminal's `schedule`; inside an agent, the agent's
        lines.append(
            "  " + sanitize(summary["missed"]).replace("`skillopt-sleep schedule`", f"`{ask_for('schedule')}`")
        )
    return lines
