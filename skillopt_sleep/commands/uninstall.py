"""``skillopt-sleep uninstall``: unschedule, revert what was adopted, remove the engine's state."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from skillopt_sleep import uninstall as plan_module
from skillopt_sleep.errors import EXIT_CONFLICT, EXIT_OK, EXIT_USAGE, UserError
from skillopt_sleep.sanitize import sanitize


# What removes the plugins themselves, one shell line per agent. Claude Code deletes the plugin's
# data directory (where the plugin set its engine up) on uninstall; Codex leaves it.
PLUGIN_REMOVAL = (
    "claude plugin uninstall skillopt-sleep@skillopt-sleep && claude plugin marketplace remove skillopt-sleep",
    "codex plugin remove skillopt-sleep@skillopt-sleep && codex plugin marketplace remove skillopt-sleep"
    ' && rm -rf "${CODEX_HOME:-$HOME/.codex}/plugins/data/skillopt-sleep-skillopt-sleep"',
)


def _confirm(question: str) -> bool:
    print(question, end="", flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def uninstall(
    *,
    projects: Sequence[str] | None = None,
    yes: bool = False,
    keep_documents: bool = False,
    dry_run: bool = False,
    as_json: bool = False,
    platform: str | None = None,
) -> int:
    plan = plan_module.make_plan(projects or (), platform)
    revert_documents = not keep_documents
    listing = plan_module.describe(plan, revert_documents)
    if dry_run:
        if as_json:
            print(json.dumps({"dry_run": True, "would": listing}))
            return EXIT_OK
        print("skillopt-sleep uninstall would:" if listing else "skillopt-sleep: nothing to uninstall")
        for line in listing:
            print(f"  {sanitize(line)}")
        print("(--dry-run: nothing was changed)")
        return EXIT_OK
    if not listing:
        print(json.dumps({"done": [], "kept": []}) if as_json else "skillopt-sleep: nothing to uninstall")
        return EXIT_OK
    if not yes:
        if as_json or not sys.stdin.isatty():
            raise UserError(
                "uninstall needs a confirmation: run it in a terminal, or pass --yes "
                "(--dry-run lists what it would remove)",
                EXIT_USAGE,
            )
        print("skillopt-sleep uninstall will:")
        for line in listing:
            print(f"  {sanitize(line)}")
        if plan.adoptions and revert_documents:
            revert_documents = _confirm(
                f"Revert the {plan.adoptions} adopted proposal(s) above, restoring the documents as they were? [y/N] "
            )
        if not _confirm("Unschedule and remove the engine's state listed above? [y/N] "):
            print("skillopt-sleep: nothing was changed")
            return EXIT_OK
    outcome = plan_module.carry_out(plan, revert_documents, platform)
    if as_json:
        print(json.dumps(outcome.to_dict()))
    else:
        for line in outcome.done:
            print(f"  {sanitize(line)}")
        for line in outcome.kept:
            print(f"  kept {sanitize(line)}")
        print("skillopt-sleep: uninstalled" + ("; some state was kept (above)" if outcome.kept else "") + ".")
        print("To remove the plugins too:")
        for line in PLUGIN_REMOVAL:
            print(f"  {line}")
    return EXIT_CONFLICT if outcome.kept else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "uninstall",
        help="unschedule, revert adopted proposals and remove the engine's state",
        description="Remove the nightly OS entry and the schedule file; revert every adopted proposal "
        "still in effect in the projects skillopt-sleep knows (scheduled, seen by the session hooks, "
        "or in the night history), never a file edited after adoption; remove each project's "
        ".skillopt-sleep/ directory, the user-level config, state and cache directories and the "
        "engine's leftovers in the temp directory. On a terminal it asks first; elsewhere it needs --yes.",
    )
    p.add_argument(
        "--project",
        action="append",
        metavar="DIR",
        help="also clean this project (repeatable; the known projects are always included)",
    )
    p.add_argument(
        "--yes", action="store_true", help="do it without asking (reverting adopted proposals unless --keep-documents)"
    )
    p.add_argument(
        "--keep-documents",
        action="store_true",
        help="leave adopted rules in CLAUDE.md / AGENTS.md / SKILL.md as they are",
    )
    p.add_argument("--dry-run", action="store_true", help="list what would be undone and removed; change nothing")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(
        func=lambda a: uninstall(
            projects=a.project, yes=a.yes, keep_documents=a.keep_documents, dry_run=a.dry_run, as_json=a.json
        )
    )
