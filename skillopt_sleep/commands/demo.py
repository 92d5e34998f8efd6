"""``demo``: a whole night on bundled sample transcripts with the offline ``sim`` backend.

It builds a throwaway home (its own skillopt-sleep state, a Claude Code data directory holding the
bundled transcripts, and a small project with a hand-written CLAUDE.md), runs a stateful night
there with noise on, and prints the report. Nothing outside the throwaway directory is touched;
no keys or network are needed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import tempfile
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from skillopt_sleep.store import state_key
from skillopt_sleep.commands.run import add_whole_skill_flag
from skillopt_sleep.errors import EXIT_OK, EXIT_USAGE, UserError

PLACEHOLDER_CWD = "/home/dev/acme-invoices"
DEFAULT_SIM = "follow=0.9,base=0.15,correct=0.6,harmful=0.3"
CLAUDE_MD = """# acme-invoices

Invoicing service for ACME: PDF invoices, reminders and exports. Python 3.11, pytest.

## Conventions
- Money is always `Decimal`, never float.
- Release notes always have a "## Fixes" section listing every fix.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="a whole night on bundled sample transcripts (offline sim backend)",
        description="Run a complete night — harvest, mine, dream, reflect, gate, stage — "
        "on bundled Claude Code transcripts of a sample project, with the offline `sim` "
        "backend and noise on, in a throwaway directory. Needs no keys or network.",
    )
    p.add_argument("--seed", type=int, default=1, help="sim seed (default 1)")
    p.add_argument("--sim", default=DEFAULT_SIM, help=f"sim knobs, comma-separated (default {DEFAULT_SIM!r})")
    p.add_argument("--dir", type=Path, help="where to build the demo (default: a new temp directory)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--max-calls",
        type=int,
        metavar="N",
        help="a per-night call cap (as `run --max-calls`): see what a night learns within it",
    )
    add_whole_skill_flag(p)
    p.set_defaults(func=cmd_demo)


def _slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def _moved(value: Any, project: str) -> Any:
    """A transcript record with the sample project's path replaced by ``project`` in every string
    (the cwd, file paths, commands), so the record is serialised again whatever the path holds."""
    if isinstance(value, str):
        return value.replace(PLACEHOLDER_CWD, project)
    if isinstance(value, list):
        return [_moved(v, project) for v in value]
    if isinstance(value, dict):
        return {k: _moved(v, project) for k, v in value.items()}
    return value


def build_demo_home(root: Path) -> tuple[Path, Path, Path]:
    """Create (skillopt home, claude home, project) under ``root`` with the bundled transcripts,
    their cwd rewritten to the new project."""
    home, claude, project = root / "skillopt-home", root / "claude", root / "acme-invoices"
    project.mkdir(parents=True, exist_ok=True)
    (project / "src" / "acme").mkdir(parents=True, exist_ok=True)
    (project / "src" / "acme" / "money.py").write_text(
        "from decimal import Decimal\n\n\ndef parse_amount(text: str) -> Decimal:\n    return Decimal(text.strip())\n",
        encoding="utf-8",
    )
    (project / "CLAUDE.md").write_text(CLAUDE_MD, encoding="utf-8")
    target_dir = claude / "projects" / _slug(str(project))
    target_dir.mkdir(parents=True, exist_ok=True)
    bundled = resources.files("skillopt_sleep") / "data" / "demo" / "claude" / "projects" / _slug(PLACEHOLDER_CWD)
    for entry in bundled.iterdir():
        if not entry.name.endswith(".jsonl"):
            continue
        lines = []
        for line in entry.read_text(encoding="utf-8").splitlines():
            lines.append(json.dumps(_moved(json.loads(line), str(project))))
        (target_dir / entry.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    home.mkdir(parents=True, exist_ok=True)
    return home, claude, project


@contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_demo(
    root: Path,
    seed: int = 1,
    sim: str = DEFAULT_SIM,
    quiet: bool = False,
    edit_whole_skill: bool = False,
    max_calls: int | None = None,
) -> dict[str, Any]:
    from skillopt_sleep.commands.run import progress_printer
    from skillopt_sleep.config import Config
    from skillopt_sleep.night import NightOptions, run_night

    if max_calls is not None and max_calls < 1:
        raise UserError("--max-calls must be a positive number of calls", EXIT_USAGE)
    home, claude, project = build_demo_home(root)
    config = Config(
        backend=f"sim:{sim},seed={seed}", agent="claude", source="claude", claude_home=str(claude), max_calls=max_calls
    )
    key, _ = state_key.state_key()  # the person's own; without one, the demo keeps its own
    with _environ(SKILLOPT_SLEEP_HOME=str(home)):
        if key is not None:
            state_key.share_key(key)
        report = run_night(
            NightOptions(
                project=project,
                config=config,
                mode="demo",
                progress=progress_printer(not quiet),
                edit_whole_skill=edit_whole_skill,
            )
        )
    data = report.to_dict()
    data["calls_total"] = sum(report.calls.values())
    data["demo_dir"] = str(root)
    # The demo's rules come from the simulator, so adopting them (into the throwaway project)
    # needs the same explicit flag as any simulated proposal.
    allow = " --allow-simulated" if report.simulated else ""
    where = f"SKILLOPT_SLEEP_HOME={shlex.quote(str(home))} skillopt-sleep"
    data["adopt_command"] = f"{where} adopt --project {shlex.quote(str(project))}{allow}"
    data["review_command"] = f"{where} review --project {shlex.quote(str(project))}"
    return data


def cmd_demo(args: argparse.Namespace) -> int:
    root = args.dir.expanduser().resolve() if args.dir else Path(tempfile.mkdtemp(prefix="skillopt-sleep-demo-"))
    if args.dir and root.exists() and any(root.iterdir()):
        raise UserError(f"--dir {root} is not empty; give a new or empty directory", EXIT_USAGE)
    data = run_demo(
        root,
        seed=args.seed,
        sim=args.sim,
        quiet=args.quiet,
        edit_whole_skill=args.edit_whole_skill,
        max_calls=args.max_calls,
    )
    if args.json:
        print(json.dumps(data, indent=2))
        return EXIT_OK
    from skillopt_sleep.report.markdown import render_text
    from skillopt_sleep.types import NightReport

    print(render_text(NightReport.from_dict(data)))
    print(f"\n{data['calls_total']} model calls (sim backend). Demo directory: {root}")
    if data.get("staging_dir"):
        print(f"To review the proposal: {data['review_command']} (or open {Path(data['staging_dir']) / 'report.html'})")
        print(f"To adopt it into the demo project: {data['adopt_command']}")
    return EXIT_OK
