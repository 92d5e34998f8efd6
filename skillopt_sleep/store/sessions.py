"""The sessions record: one line per agent session (project, time, agent) in the user state dir,
so a scheduled night knows which projects to look at; compacted to each project's last session
once it grows."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from skillopt_sleep.files import append_jsonl, atomic_write_text, read_jsonl
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.types import format_time

# The sessions record keeps one line per session; past this size it is compacted to the last
# session of each project.
SESSIONS_COMPACT_BYTES = 64 * 1024


def record_session(project: Path, agent: str, now: datetime | None = None) -> None:
    """Append ``{project, at, agent}`` to the sessions record, compacting it when it grows."""
    path = user_dirs().sessions_seen
    moment = format_time((now or datetime.now(timezone.utc)).replace(microsecond=0))
    append_jsonl(path, {"project": str(project), "at": moment, "agent": agent})
    try:
        too_big = path.stat().st_size > SESSIONS_COMPACT_BYTES
    except OSError:
        return
    if too_big:
        latest = projects_seen()
        atomic_write_text(
            path, "".join(json.dumps({"project": p, "at": at, "agent": a}) + "\n" for p, (at, a) in latest.items())
        )


def projects_seen() -> dict[str, tuple[str, str]]:
    """project path -> (time of its last recorded session, agent), oldest first."""
    latest: dict[str, tuple[str, str]] = {}
    for entry in read_jsonl(user_dirs().sessions_seen):
        project, at = entry.get("project"), entry.get("at")
        if isinstance(project, str) and isinstance(at, str):
            latest.pop(project, None)
            latest[project] = (at, str(entry.get("agent") or ""))
    return latest
