"""``harvest``: show the sessions and recurring tasks found in the transcripts, or write a
``skillopt_sleep.tasks.v1`` draft (``reviewed: false``) to review and replay with ``--tasks-file``.

Read-only: it saves no checkpoints and touches no documents.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from skillopt_sleep.commands.flags import add_source_flags, home_overrides
from skillopt_sleep.config import HarvestSettings, load_config
from skillopt_sleep.errors import EXIT_OK, EXIT_USAGE, UserError
from skillopt_sleep.sanitize import sanitize
from skillopt_sleep.types import SessionDigest, TaskRecord


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "harvest",
        help="show harvested sessions and mined tasks, or write a tasks draft",
        description="Read the agents' session transcripts (read-only), mine the recurring "
        "tasks, and show them; --output writes a skillopt_sleep.tasks.v1 draft "
        "(reviewed: false) to check by hand and replay with `run --tasks-file`.",
    )
    p.add_argument("--project", default=".", help="project directory (default: the current one)")
    p.add_argument("--all-projects", action="store_true", help="every project found in the transcripts")
    add_source_flags(p)
    p.add_argument("--since", default="all", help='only sessions active since this ISO-8601 time, or "all"')
    p.add_argument("--output", type=Path, help="write a tasks draft (reviewed: false) to this file")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_harvest)


def mine_by_project(digests: list[SessionDigest], harvest: HarvestSettings) -> tuple[list[TaskRecord], dict[str, int]]:
    from skillopt_sleep.mining import mine

    by_project: dict[str, list[SessionDigest]] = defaultdict(list)
    for d in digests:
        by_project[d.project].append(d)
    tasks: list[TaskRecord] = []
    counts = {"one_off_groups": 0, "uncheckable_groups": 0}
    for project in sorted(by_project):
        result = mine(
            by_project[project],
            min_recurrence=harvest.min_recurrence,
            seed=harvest.split_seed,
            val_fraction=harvest.val_fraction,
            test_fraction=harvest.test_fraction,
        )
        tasks.extend(result.tasks)
        counts["one_off_groups"] += result.one_off
        counts["uncheckable_groups"] += result.uncheckable
    return tasks, counts


def cmd_harvest(args: argparse.Namespace) -> int:
    from skillopt_sleep.commands.run import parse_since, progress_printer
    from skillopt_sleep.mining import save_tasks
    from skillopt_sleep.sources import harvest

    project = Path(args.project).expanduser().resolve()
    if not args.all_projects and not project.is_dir():
        raise UserError(f"project {project} is not a directory", EXIT_USAGE)
    config = load_config(project, {"source": args.source, **home_overrides(args)})
    homes = config.harvest.homes()
    result = harvest(
        None if args.all_projects else project,
        source=config.harvest.source,
        homes=homes,
        since=parse_since(args.since),
        all_projects=args.all_projects,
        state_dir=None,
        progress=progress_printer(not args.quiet),
    )
    from skillopt_sleep.sources import describe_read, home_warnings

    warnings = home_warnings(result, {name: True for name in homes})
    for line in warnings:
        print(f"skillopt-sleep: warning: {sanitize(line)}", file=sys.stderr)
    if not args.quiet:
        print(f"skillopt-sleep: {sanitize(describe_read(result))}", file=sys.stderr)
    tasks, counts = mine_by_project(result.digests, config.harvest)
    if args.output:
        save_tasks(args.output, tasks, reviewed=False)
    if args.json:
        from skillopt_sleep.sanitize import clean_obj

        print(
            json.dumps(
                clean_obj(
                    {
                        "sessions": [d.to_dict() for d in result.digests],
                        "tasks": [t.to_dict() for t in tasks],
                        "skipped": dict(result.skipped),
                        "sources": list(result.sources_used),
                        "files_read": result.files_read,
                        "homes": {
                            name: {"path": home, "files": result.files_found.get(name, 0)}
                            for name, home in result.homes.items()
                        },
                        "warnings": warnings,
                        "bytes_read": result.bytes_read,
                        "mining": counts,
                        "output": str(args.output) if args.output else None,
                    }
                ),
                indent=2,
            )
        )
        return EXIT_OK
    print_summary(result, tasks, counts, args.output)
    return EXIT_OK


def print_summary(result: Any, tasks: list[TaskRecord], counts: dict[str, int], output: Path | None) -> None:
    from skillopt_sleep.sanitize import sanitize

    sources = ", ".join(result.sources_used) or "none"
    print(
        f"{len(result.digests)} session(s) from {sources}; {result.files_read} file(s), "
        f"{result.bytes_read:,} bytes read"
    )
    if result.skipped:
        print("skipped: " + ", ".join(f"{k} {v}" for k, v in sorted(result.skipped.items())))
    kinds: dict[str, list[TaskRecord]] = defaultdict(list)
    for t in tasks:
        kinds[t.skill_hint or t.id].append(t)
    print(
        f"{len(tasks)} task(s) in {len(kinds)} recurring kind(s); "
        f"{counts['one_off_groups']} one-off and {counts['uncheckable_groups']} uncheckable group(s) not promoted"
    )
    for kind, items in sorted(kinds.items()):
        checks = "; ".join(_check_text(c) for c in items[0].judge.get("checks", []))
        print(
            f"  {sanitize(kind, 60)}  x{items[0].recurrence} sessions, {len(items)} task(s)  checks: {sanitize(checks, 200)}"
        )
        for t in items[:3]:
            print(f"    [{t.split}] {sanitize(t.intent, 100)}")
    if output:
        print(
            f'wrote a draft to {output} (reviewed: false) — check it, set "reviewed": true, then '
            f"`skillopt-sleep run --tasks-file {output}`"
        )


def _check_text(check: dict[str, Any]) -> str:
    from skillopt_sleep.checks.judges import describe_check

    return describe_check(check)
