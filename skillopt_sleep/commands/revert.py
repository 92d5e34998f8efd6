"""``skillopt-sleep revert``: undo an adoption, restoring the exact previous bytes."""

from __future__ import annotations

import argparse
import json
import os

from skillopt_sleep import staging
from skillopt_sleep.errors import EXIT_OK, UserError
from skillopt_sleep.report import sanitize


def format_revert(result: staging.RevertResult) -> str:
    lines = [f"Reverted night {result.night_id}: {len(result.files)} file(s)"]
    for entry in result.files:
        lines.append(f"  {entry['action']:<8} {sanitize(entry['path'])}")
    return "\n".join(lines)


def revert(project: str | os.PathLike[str] | None, night_id: str | None = None,
           as_json: bool = False) -> int:
    """Revert and print the outcome; a refusal surfaces as ``UserError`` (and a JSON error
    object on stdout with ``--json``)."""
    try:
        root = staging.resolve_project(project)
        result = staging.revert(root, night_id)
    except UserError as exc:
        if as_json:
            print(json.dumps({"ok": False, "error": exc.message, "code": exc.code}))
        raise
    if as_json:
        print(json.dumps({"ok": True, "project": str(root), **result.to_dict()}))
    else:
        print(format_revert(result))
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "revert", help="undo an adoption (restores the previous bytes)",
        description="Restore the documents an adoption overwrote (latest adoption, or --night "
        "ID). Refuses when a file was edited after adoption.")
    parser.add_argument("--project", metavar="PATH", help="project directory (default: cwd)")
    parser.add_argument("--night", metavar="ID", help="the night to revert (default: latest)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=lambda args: revert(args.project, args.night, args.json))
