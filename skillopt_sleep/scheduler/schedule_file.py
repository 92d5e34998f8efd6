"""The schedule file (``<user config dir>/schedule.json``): when the night runs, how the OS entry
was made, and for every registered project the full configuration its night runs with, resolved
when ``schedule`` ran. The scheduled job reads only this file (and the env file it names), never
the shell environment it was scheduled from. It holds no secret (``schedule`` refuses a config
that contains one) and is written atomically with mode 0600.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.files import atomic_write_text, read_json

FORMAT = "skillopt_sleep.schedule.v1"
# In the state dir's ``scheduled/``: what the OS entry's own stdout/stderr appended (a shell that
# could not start the interpreter, a traceback before the night's log opened).
OUTPUT_LOG = "scheduler-output.log"
# Environment variables that only locate things (our state, the agents' data); the job restores
# them so it reads and writes the same places the user's shell does.
LOCATION_VARS = (
    "SKILLOPT_SLEEP_HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
)


@dataclass
class ProjectEntry:
    project: str
    config: dict[str, Any]  # every Config field, resolved when scheduled
    auto_adopt: bool = False
    registered: str = ""


@dataclass
class Schedule:
    at: str  # "HH:MM", local time
    via: str  # cron | systemd | launchd | schtasks
    python: str  # absolute interpreter the OS entry runs
    env_file: str | None = None
    locations: dict[str, str] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)  # directories put first on the job's PATH
    projects: list[ProjectEntry] = field(default_factory=list)
    updated: str = ""
    format: str = FORMAT

    def entry(self, project: str) -> ProjectEntry | None:
        return next((p for p in self.projects if p.project == project), None)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def schedule_path() -> Path:
    return user_dirs().schedule_file


def _broken(path: Path, why: str) -> UserError:
    return UserError(f"schedule file {path} is broken ({why}); run `skillopt-sleep schedule` again", EXIT_CONFIG)


def load_schedule(path: Path | None = None) -> Schedule | None:
    """The schedule, or None when nothing is scheduled; a broken file is a clear error."""
    path = path or schedule_path()
    try:
        raw = read_json(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise _broken(path, str(exc)) from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise _broken(path, f"not a {FORMAT} document")
    try:
        projects = [ProjectEntry(**p) for p in raw.pop("projects", [])]
        return Schedule(projects=projects, **raw)
    except TypeError as exc:
        raise _broken(path, str(exc)) from None


def write_schedule(schedule: Schedule, path: Path | None = None) -> Path:
    """Write ``schedule`` (atomically, mode 0600). The engine's own changes go through
    ``scheduler.schedule_changes``, which also refreshes the notice that follows from it."""
    path = path or schedule_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    schedule.updated = now_iso()
    atomic_write_text(path, schedule.to_json())
    if os.name == "posix":
        os.chmod(path, 0o600)
    return path


def delete_schedule(path: Path | None = None) -> bool:
    """Remove the schedule file; whether there was one."""
    path = path or schedule_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
