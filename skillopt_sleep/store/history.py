"""The night history: one compact JSONL line per night, across projects, in the user state dir."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from skillopt_sleep.files import append_jsonl, read_jsonl
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.types import NightReport, format_time


def project_key(project: str | os.PathLike[str]) -> str:
    return str(Path(project).expanduser().resolve())


def summarize_night(report: NightReport) -> dict[str, Any]:
    """The compact per-night record kept in the history."""
    return {
        "night_id": report.night_id,
        "project": project_key(report.project) if report.project else "",
        "mode": report.mode,
        "status": report.status,
        "started": format_time(report.started),
        "finished": format_time(report.finished),
        "baseline": report.baseline,
        "candidate": report.candidate,
        "test_baseline": report.test_baseline,
        "test_candidate": report.test_candidate,
        "n_sessions": report.n_sessions,
        "agents": dict(report.agents),
        "n_tasks": report.n_tasks,
        "n_accepted": len(report.accepted_edits),
        "n_rejected": len(report.rejected_edits),
        "calls": dict(report.calls),
        "usage": report.usage.to_dict(),
        "staging_dir": report.staging_dir,
        "simulated": report.simulated,
    }


class History:
    """One JSONL line per night, across projects, in the user state dir."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else user_dirs().history

    def record(self, report: NightReport) -> dict[str, Any]:
        summary = summarize_night(report)
        append_jsonl(self.path, summary)
        return summary

    def nights(self, project: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
        """Recorded nights, oldest first; only ``project``'s when given."""
        entries = read_jsonl(self.path)
        if project is None:
            return entries
        key = project_key(project)
        return [e for e in entries if isinstance(e.get("project"), str) and e["project"] == key]
