"""``skillopt-sleep notice``: the session-start notices, and the session-end record.

- ``--event session-start`` prints the notices that apply now for the project (a proposal is
  waiting for review; the scheduled night did not run), read from the precomputed notice files
  (``notices.py``) that the agents' SessionStart hooks read too. It never harvests or calls a
  model.
- ``--event session-end`` records that the project had a session (project path + time, in the
  user state dir) so a scheduled night knows where to look. It prints nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from skillopt_sleep import __version__
from skillopt_sleep.staging import stage as staging
from skillopt_sleep.documents.containment import OutsideDocument
from skillopt_sleep.errors import EXIT_OK
from skillopt_sleep.store.notices import AGENTS, clean_line, read_notices
from skillopt_sleep.store.sessions import SESSIONS_COMPACT_BYTES, projects_seen, record_session

__all__ = ["EVENTS", "SESSIONS_COMPACT_BYTES", "notice", "projects_seen", "record_session"]

EVENTS = ("session-start", "session-end")


# --------------------------------------------------------------------------- verb


def notice(
    project: str | os.PathLike[str] | None, event: str = "session-start", agent: str = "cli", as_json: bool = False
) -> int:
    try:
        root = staging.resolve_project(project)
    except OutsideDocument as exc:  # a state folder that is a link elsewhere or not a folder:
        print(f"skillopt-sleep: {exc.message}", file=sys.stderr)  # said, but never a failed session
        return EXIT_OK
    if event == "session-end":
        try:
            record_session(root, agent)
        except OSError:  # best-effort, like every notice: a broken state dir never fails the session
            pass
        lines: list[str] = []
    else:
        lines = read_notices(root, agent)
    if as_json:
        print(json.dumps({"version": __version__, "event": event, "project": clean_line(str(root)), "notices": lines}))
    elif lines:
        print("\n".join(lines))
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "notice",
        help="the notices a session start shows (a proposal waiting, a missed night)",
        description="At session start, print one line per notice that applies now (a proposal "
        "waiting for review, a scheduled night that did not run); at session end, record that the "
        "project had a session. Reads only small files; never harvests or calls a model.",
    )
    parser.add_argument("--project", metavar="PATH", help="project directory (default: cwd)")
    parser.add_argument(
        "--event", choices=EVENTS, default="session-start", help="which session event (default: session-start)"
    )
    parser.add_argument(
        "--agent",
        choices=AGENTS,
        default="cli",
        help="whose hook asks: decides how the review hint is worded (default: cli)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object: {version, event, project, notices}")
    parser.set_defaults(func=lambda args: notice(args.project, args.event, args.agent, args.json))
