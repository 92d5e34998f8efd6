"""``skillopt-sleep revert``: undo an adoption, restoring the exact previous bytes."""

from __future__ import annotations

import argparse
import os
from functools import partial
from pathlib import Path

from skillopt_sleep.staging import adoption
from skillopt_sleep.commands.adopt import add_target_flag, recovery_lines, run_and_print
from skillopt_sleep.sanitize import sanitize


def format_revert(result: adoption.RevertResult, project: Path | None = None) -> str:
    lines = recovery_lines(result)
    lines.append(f"Reverted night {result.night_id}: {len(result.files)} file(s)")
    for entry in result.files:
        lines.append(f"  {entry['action']:<8} {sanitize(entry['path'])}")
    return "\n".join(lines)


def revert(
    project: str | os.PathLike[str] | None,
    night_id: str | None = None,
    as_json: bool = False,
    skill_path: Path | None = None,
) -> int:
    return run_and_print(partial(adoption.revert, skill_path=skill_path), format_revert, project, night_id, as_json)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "revert",
        help="undo an adoption (restores the previous bytes)",
        description="Restore the documents an adoption overwrote (latest adoption, or --night "
        "ID). Refuses when a file was edited after adoption.",
    )
    parser.add_argument("--project", metavar="PATH", help="project directory (default: cwd)")
    parser.add_argument("--night", metavar="ID", help="the night to revert (default: latest)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_target_flag(parser)
    parser.set_defaults(func=lambda args: revert(args.project, args.night, args.json, args.target_skill_path))
