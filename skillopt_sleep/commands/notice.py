"""``skillopt-sleep notice``: what an agent's session hooks ask the engine, answered fast.

The Claude Code plugin calls it from two hooks, under a hard timeout:

- ``--event session-start`` prints at most a few one-line notices for the project (today: a
  proposal is waiting for review). It reads only small files — the staging manifests, the
  adoption ledger, the proposal's report — and never harvests or calls a model.
- ``--event session-end`` records that the project had a session (project path + time, in the
  user state dir) so a scheduled night knows where to look. It prints nothing.

Each notice comes from one producer in ``NOTICE_PRODUCERS`` (``(project, now, agent) -> line or
None``); adding a notice is adding a producer. A producer that fails is skipped, so one broken
file never hides the other notices nor fails the hook.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep import __version__, adoption, staging
from skillopt_sleep.errors import EXIT_OK
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.redact import redact
from skillopt_sleep.sanitize import sanitize
from skillopt_sleep.files import append_jsonl, atomic_write_text, parse_json, read_jsonl
from skillopt_sleep.types import format_time, parse_time

EVENTS = ("session-start", "session-end")
AGENTS = ("claude", "codex", "cli")
NOTICE_MAX_CHARS = 240
MAX_NOTICES = 3
# report.json is read only to count the proposed rules; a bigger file is not worth the time.
REPORT_READ_LIMIT = 2 * 1024 * 1024
# The sessions record keeps one line per session; past this size it is compacted to the last
# session of each project.
SESSIONS_COMPACT_BYTES = 64 * 1024

REVIEW_HINTS = {
    "claude": "/skillopt-sleep:skillopt-sleep review",
    "codex": "ask for the skillopt-sleep review",
    "cli": "skillopt-sleep review",
}

NoticeProducer = Callable[[Path, datetime, str], str | None]


def _rules_proposed(staging_dir: Path) -> int | None:
    """How many rules the staged night accepted, from its report; None when unknown."""
    report = staging_dir / "report.json"
    try:
        if report.stat().st_size > REPORT_READ_LIMIT:
            return None
        data = parse_json(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    edits = data.get("accepted_edits") if isinstance(data, dict) else None
    return len(edits) if isinstance(edits, list) else None


def _when(created: Any, now: datetime) -> str:
    moment = parse_time(created)
    if moment is None:
        return "a night"
    if now - moment <= timedelta(hours=36):
        return "last night"
    return f"the night of {moment.date().isoformat()}"


def proposal_notice(project: Path, now: datetime, agent: str) -> str | None:
    """One line when the newest staged proposal is still waiting for review (not adopted, not
    reverted, and it changes at least one document)."""
    proposals = adoption.list_proposals(project)
    if not proposals:
        return None
    newest = proposals[0]
    if newest["state"] != "staged" or not newest["files"]:
        return None
    count = _rules_proposed(Path(newest["staging_dir"]))
    if count == 1:
        what = "1 rule"
    elif count:
        what = f"{count} rules"
    else:
        what = "changes"
    simulated = " (simulated, from the offline simulator)" if newest.get("simulated") else ""
    return (f"skillopt-sleep: {_when(newest.get('created'), now)} proposed {what} for this "
            f"project{simulated} — {REVIEW_HINTS[agent]}")


def missed_night_notice(project: Path, now: datetime, agent: str) -> str | None:
    """One line when the scheduled night did not run (cron never catches up on one)."""
    from skillopt_sleep.scheduler import missed_night_notice as missed

    return missed(now)


NOTICE_PRODUCERS: list[NoticeProducer] = [proposal_notice, missed_night_notice]


def clean_line(text: str) -> str:
    """One line, safe for a terminal and for a model's context: no control characters, no
    secrets, bounded length."""
    return sanitize(" ".join(redact(text).split()), NOTICE_MAX_CHARS)


def collect_notices(project: Path, now: datetime | None = None, agent: str = "cli") -> list[str]:
    moment = now or datetime.now(timezone.utc)
    lines: list[str] = []
    for producer in NOTICE_PRODUCERS:
        try:
            line = producer(project, moment, agent)
        except Exception:  # noqa: BLE001 - a hook must never fail on one unreadable file
            continue
        if line:
            lines.append(clean_line(line))
    return lines[:MAX_NOTICES]


# --------------------------------------------------------------------------- sessions record


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
        atomic_write_text(path, "".join(
            json.dumps({"project": p, "at": at, "agent": a}) + "\n" for p, (at, a) in latest.items()))


def projects_seen() -> dict[str, tuple[str, str]]:
    """project path -> (time of its last recorded session, agent), oldest first."""
    latest: dict[str, tuple[str, str]] = {}
    for entry in read_jsonl(user_dirs().sessions_seen):
        project, at = entry.get("project"), entry.get("at")
        if isinstance(project, str) and isinstance(at, str):
            latest.pop(project, None)
            latest[project] = (at, str(entry.get("agent") or ""))
    return latest


# --------------------------------------------------------------------------- verb


def notice(project: str | os.PathLike[str] | None, event: str = "session-start",
           agent: str = "cli", as_json: bool = False) -> int:
    root = staging.resolve_project(project)
    if event == "session-end":
        record_session(root, agent)
        lines: list[str] = []
    else:
        lines = collect_notices(root, agent=agent)
    if as_json:
        print(json.dumps({"version": __version__, "event": event, "project": clean_line(str(root)),
                          "notices": lines}))
    elif lines:
        print("\n".join(lines))
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "notice", help="fast one-line notices for an agent's session hooks",
        description="For session hooks: at session start, print one line per notice (a proposal "
        "waiting for review); at session end, record that the project had a session. Reads only "
        "small files; never harvests or calls a model.")
    parser.add_argument("--project", metavar="PATH", help="project directory (default: cwd)")
    parser.add_argument("--event", choices=EVENTS, default="session-start",
                        help="which session event (default: session-start)")
    parser.add_argument("--agent", choices=AGENTS, default="cli",
                        help="whose hook asks: decides how the review hint is worded (default: cli)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object: {version, event, project, notices}")
    parser.set_defaults(func=lambda args: notice(args.project, args.event, args.agent, args.json))
