"""``skillopt-sleep status``: the nights so far, the score trend, the latest proposal."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from skillopt_sleep import scheduler
from skillopt_sleep.store import proposals as staged
from skillopt_sleep.staging import adoption_journal as journal
from skillopt_sleep.staging import stage as staging
from skillopt_sleep.agent_surface import ask_for, calling_agent
from skillopt_sleep.config import config_problem
from skillopt_sleep.errors import EXIT_OK
from skillopt_sleep.files import read_json
from skillopt_sleep.paths import project_dirs
from skillopt_sleep.store.history import History, summarize_night
from skillopt_sleep.store.locks import describe_holder, lock_holder
from skillopt_sleep.night_state import format_night, night_status
from skillopt_sleep.sanitize import clean_obj, sanitize
from skillopt_sleep.report.night_numbers import agents_named
from skillopt_sleep.report.score_trend import NightScores, night_state, score_trend, trend_lines
from skillopt_sleep.types import NightReport


REPORT_READ_LIMIT = 4 * 1024 * 1024  # a staged report.json bigger than this is not read


def _staged_nights(proposals: list[dict[str, Any]], recorded: set[str]) -> list[dict[str, Any]]:
    """Nights known only from a staged proposal's report.json: their history lives in another
    state dir (``demo`` keeps its own ``SKILLOPT_SLEEP_HOME``; so does a night run under a
    different user). Marked ``"recorded": "staging"``."""
    out = []
    for proposal in proposals:
        if str(proposal.get("night_id")) in recorded:
            continue
        path = Path(proposal["staging_dir"]) / "report.json"
        try:
            report = NightReport.from_dict(read_json(path, REPORT_READ_LIMIT))
        except (OSError, ValueError, TypeError, RecursionError):
            continue
        out.append({**summarize_night(report), "recorded": "staging"})
    return out


def collect_status(project: Path, recent: int = 5) -> dict[str, Any]:
    """Everything ``status`` shows, as one JSON-ready dict."""
    nights = History().nights(project)
    proposals = staged.list_proposals(project)
    extra = _staged_nights(proposals, {str(n.get("night_id")) for n in nights})
    if extra:
        nights = sorted(nights + extra, key=lambda n: str(n.get("started") or ""))
    adoptions = staged.adoptions(project)
    states = staged.adoption_states(project)
    latest = None
    if proposals:
        p = proposals[0]
        latest = {
            "night_id": p.get("night_id"),
            "created": p.get("created"),
            "staging_dir": p["staging_dir"],
            "state": p["state"],
            "adopted": p["adopted"],
            "simulated": bool(p.get("simulated")),
            "files": [{"role": f.get("role"), "live_path": f.get("live_path")} for f in p["files"]],
        }
    last_adoption = None
    if adoptions:
        a = adoptions[-1]
        last_adoption = {
            "night_id": a["night_id"],
            "adopted_at": a["adopted_at"],
            "reverted": a["reverted"],
            "reverted_at": a.get("reverted_at"),
            "files": [f.get("path") for f in a["files"]],
        }
    return {
        "project": str(project),
        "n_nights": len(nights),
        "nights": [dict(n, state=night_state(n, states)) for n in nights[-recent:]] if recent > 0 else [],
        "trend": [asdict(t) for t in score_trend(nights, states)],
        "n_proposals": len(proposals),
        "latest_proposal": latest,
        "last_adoption": last_adoption,
        "running": lock_holder(project_dirs(project).lock),
        "night": night_status(project),
        "interrupted": journal.pending(project),
        "schedule": scheduler.schedule_summary(str(project)),
        "config_problem": config_problem(project),
    }


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def format_status(data: dict[str, Any]) -> str:
    project = sanitize(data["project"])
    lines = [f"skillopt-sleep status for {project}"]
    lines += _config_line(data.get("config_problem"))
    lines += _night_section(data)
    interrupted = data["interrupted"]
    if interrupted is not None:
        lines.append(
            f"  an interrupted {sanitize(interrupted['op'])} of night "
            f"{sanitize(interrupted['night_id'])} (started {sanitize(interrupted['started'])}) "
            "is pending: the next adopt, revert or run finishes or rolls it back first"
        )
    if not data["n_nights"]:
        lines.append(_no_nights_line())
    else:
        lines.append(f"  nights: {data['n_nights']} (last {len(data['nights'])}):")
        for n in reversed(data["nights"]):
            when = sanitize(n.get("finished") or n.get("started") or "?")
            lines.append(
                f"    {when}  {sanitize(n.get('night_id'))}  {sanitize(n.get('state') or n.get('status')):<9} "
                f"val {_fmt(n.get('baseline'))} → {_fmt(n.get('candidate'))}  "
                f"edits +{n.get('n_accepted', 0)} / refused {n.get('n_rejected', 0)}"
                + ("  (from its staged report; history kept elsewhere)" if n.get("recorded") == "staging" else "")
            )
        agents = (data["nights"][-1].get("agents") if data["nights"] else None) or {}
        if isinstance(agents, dict) and agents:
            lines.append(f"  sessions the last night read: {sanitize(agents_named(agents))}")
        lines += ["  " + line for line in trend_lines([NightScores(**t) for t in data["trend"]])]
    latest = data["latest_proposal"]
    if latest is None:
        lines.append("  latest proposal: none")
    else:
        simulated = ", simulated" if latest.get("simulated") else ""
        lines.append(
            f"  latest proposal: night {sanitize(latest['night_id'])} "
            f"({latest['state']}{simulated}) at {sanitize(latest['staging_dir'])}"
        )
        for f in latest["files"]:
            lines.append(f"    {sanitize(f['role']):<6} {sanitize(f['live_path'])}")
        if latest["state"] != "adopted" and latest["files"]:
            lines += _next_steps(project, latest)
    last = data["last_adoption"]
    if last is None:
        lines.append("  last adoption: none")
    else:
        state = f"reverted {last['reverted_at']}" if last["reverted"] else "in effect"
        lines.append(
            f"  last adoption: night {sanitize(last['night_id'])} at {sanitize(last['adopted_at'])} ({sanitize(state)})"
        )
    lines += scheduler.format_schedule(data.get("schedule"), data["project"])
    return "\n".join(lines)


def _no_nights_line() -> str:
    if calling_agent() is None:
        return "  no nights yet; run `skillopt-sleep run` (or `demo` to try it)"
    return f"  no nights yet; start one with `{ask_for('run')}`"


def _next_steps(project: str, latest: dict[str, Any]) -> list[str]:
    """How to review and adopt the latest proposal, in the words of where status is read."""
    adopt = ["--night", sanitize(latest["night_id"])] + (["--allow-simulated"] if latest.get("simulated") else [])
    return [
        f"    review with: {ask_for('review', project=project)}",
        f"    adopt with: {ask_for('adopt', *adopt, project=project)}",
    ]


def _config_line(problem: str | None) -> list[str]:
    if not problem:
        return []
    return [f"  config is broken: {sanitize(problem, 600)} — every night stops at once until it is fixed"]


def _night_section(data: dict[str, Any]) -> list[str]:
    """A running night (phase, calls done / planned, ETA, spending), or how the last one ended:
    from its state file (``night_state``); the project lock's holder when there is none."""
    night = data.get("night")
    shown = format_night(night)
    if data["running"] is not None and not (night and night.get("state") == "running"):
        shown.insert(0, f"  running now: {sanitize(describe_holder(data['running']))}")
    return shown


def status(project: str | os.PathLike[str] | None, as_json: bool = False, recent: int = 5) -> int:
    data = collect_status(staging.resolve_project(project), recent)
    print(json.dumps(clean_obj(data)) if as_json else format_status(data))
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status",
        help="nights so far, score trend, latest proposal",
        description="Show this project's nights, the val score trend, the latest staged "
        "proposal and the last adoption.",
    )
    parser.add_argument("--project", metavar="PATH", help="project directory (default: cwd)")
    parser.add_argument("--last", type=int, default=5, metavar="N", help="how many recent nights to list (default: 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=lambda args: status(args.project, args.json, args.last))
