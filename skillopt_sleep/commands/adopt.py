"""``skillopt-sleep adopt``: write a staged proposal back to the live documents."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from functools import partial
from pathlib import Path
from typing import Any
from collections.abc import Callable

from skillopt_sleep.staging import adoption
from skillopt_sleep.staging import stage as staging
from skillopt_sleep.errors import EXIT_OK, UserError
from skillopt_sleep.sanitize import sanitize


def recovery_lines(result: adoption.AdoptResult | adoption.RevertResult) -> list[str]:
    """The line saying an interrupted adopt/revert was finished first (none when there was none)."""
    return [f"First {result.recovered}."] if result.recovered else []


def format_adopt(result: adoption.AdoptResult, project: Path) -> str:
    lines = recovery_lines(result)
    lines.append(f"Adopted night {result.night_id}: wrote {len(result.files)} file(s)")
    for entry in result.files:
        was = f"backup {entry['backup']}" if entry["backup"] else "new file"
        lines.append(f"  {entry['role']:<6} {sanitize(entry['path'])} ({sanitize(was)})")
    lines.append(f"Backups: {sanitize(str(result.backup_dir))}")
    lines.append(f"Undo with: skillopt-sleep revert --project {shlex.quote(str(project))} --night {result.night_id}")
    return "\n".join(lines)


def run_and_print(
    operation: Callable[[Path, str | None], Any],
    formatter: Callable[[Any, Path], str],
    project: str | os.PathLike[str] | None,
    night_id: str | None,
    as_json: bool,
) -> int:
    """Shared by ``adopt`` and ``revert``: run, print the outcome as text or one JSON object.

    A refusal still surfaces as ``UserError`` (for the exit code and the stderr line); with
    ``--json`` a JSON error object is printed on stdout first, so machines always get one object.
    """
    try:
        root = staging.resolve_project(project)
        result = operation(root, night_id)
    except UserError as exc:
        if as_json:
            print(json.dumps({"ok": False, "error": exc.message, "code": exc.code}))
            exc.json_printed = True
        raise
    if as_json:
        print(json.dumps({"ok": True, "project": str(root), **result.to_dict()}))
    else:
        print(formatter(result, root))
    return EXIT_OK


def adopt(
    project: str | os.PathLike[str] | None,
    night_id: str | None = None,
    as_json: bool = False,
    allow_simulated: bool = False,
    skill_path: Path | None = None,
) -> int:
    return run_and_print(
        partial(adoption.adopt, allow_simulated=allow_simulated, skill_path=skill_path),
        format_adopt,
        project,
        night_id,
        as_json,
    )


def add_target_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target-skill-path",
        type=Path,
        metavar="PATH",
        help="the SKILL.md the night evolved, when it ran with --target-skill-path",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "adopt",
        help="write a staged proposal back (backed up, revertible)",
        description="Write the latest staged proposal (or --night ID) to the live skill and "
        "memory documents. Refuses when a live file changed since the night read it.",
    )
    parser.add_argument("--project", metavar="PATH", help="project directory (default: cwd)")
    parser.add_argument("--night", metavar="ID", help="the night to adopt (default: latest)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--allow-simulated",
        action="store_true",
        help="adopt a proposal the offline sim backend made (refused by default)",
    )
    add_target_flag(parser)
    parser.set_defaults(
        func=lambda args: adopt(args.project, args.night, args.json, args.allow_simulated, args.target_skill_path)
    )
