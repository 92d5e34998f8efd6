"""``skillopt-sleep review``: the staged proposal (the latest, or one night's) as Markdown
(``report.review``) or as one JSON object."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from skillopt_sleep.errors import EXIT_CONFLICT, EXIT_OK, UserError
from skillopt_sleep.report.proposal import load_view
from skillopt_sleep.report.review import render_review
from skillopt_sleep.sanitize import sanitize
from skillopt_sleep.staging import stage as staging
from skillopt_sleep.store import proposals as staged


def _pick(project: Path, night_id: str | None) -> dict | None:
    proposals = staged.list_proposals(project)
    if night_id is None:
        return proposals[0] if proposals else None
    for proposal in proposals:
        if proposal.get("night_id") == night_id:
            return proposal
    raise UserError(f"no staged proposal for night {sanitize(night_id, 80)} in {project}", EXIT_CONFLICT)


def review(project: str | os.PathLike[str] | None, night_id: str | None = None, as_json: bool = False) -> int:
    root = staging.resolve_project(project)
    proposal = _pick(root, night_id)
    if proposal is None:
        if as_json:
            print(json.dumps({"project": str(root), "proposal": None}))
        else:
            print(f"No proposal is staged for {sanitize(str(root))}; a night stages one (`skillopt-sleep run`).")
        return EXIT_OK
    view = load_view(proposal)
    if as_json:
        print(json.dumps({"project": str(root), "proposal": view.to_dict()}))
    else:
        print(render_review(view))
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "review",
        help="show the staged proposal: rules, evidence, per-task gain, diffs",
        description="Print the latest staged proposal (or --night ID) as Markdown: each proposed "
        "rule with its scope, the evidence it came from and the per-task gain that justified it, "
        "the refused edits and why, and the diff of each document. report.html beside the "
        "staged report.md shows the same with the score trend.",
    )
    parser.add_argument("--project", metavar="PATH", help="project directory (default: cwd)")
    parser.add_argument("--night", metavar="ID", help="the night to review (default: latest)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=lambda args: review(args.project, args.night, args.json))
