"""``skillopt-sleep adopt``: write a staged proposal back to the live documents."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from pathlib import Path

from skillopt_sleep import staging
from skillopt_sleep.errors import EXIT_OK, UserError
from skillopt_sleep.report import sanitize


def format_adopt(result: staging.AdoptResult, project: Path) -> str:
    lines = [f"Adopted night {result.night_id}: wrote {len(result.files)} file(s)"]
    for entry in result.files:
        was = f"backup {entry['backup']}" if entry["backup"] else "new file"
        lines.append(f"  {entry['role']:<6} {sanitize(entry['path'])} ({sanitize(was)})")
    lines.append(f"Backups: {sanitize(str(result.backup_dir))}")
    lines.append(f"Undo with: skillopt-sleep revert --project {shlex.quote(str(project))} "
                 f"--night {result.night_id}")
    return "\n".join(lines)


def adopt(project: str | os.PathLike[str] | None, night_id: str | None = None,
          as_json: bool = False) -> int:
    """Adopt and print the outcome; a refusal surfaces as ``UserError`` (and a JSON error object
    on stdout with ``--json``)."""
    try:
        root = staging.resolve_project(project)
        result = staging.adopt(root, night_id)
    except UserError as exc:
        if as_json:
            print(json.dumps({"ok": False, "error": exc.message, "code": exc.code}))
        raise
    if as_json:
        print(json.dumps({"ok": True, "project": str(root), **result.to_dict()}))
    else:
        print(format_adopt(result, root))
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "adopt", help="write a staged proposal back (backed up, revertible)",
        description="Write the latest staged proposal (or --night ID) to the live skill and "
        "memory documents. Refuses when a live file changed since the night read it.")
    parser.add_argument("--project", metavar="PATH", help="project directory (default: cwd)")
    parser.add_argument("--night", metavar="ID", help="the night to adopt (default: latest)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=lambda args: adopt(args.project, args.night, args.json))
