"""``run`` (a stateful night: stage a proposal, save state) and ``dry-run`` (the same work;
nothing staged or saved)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from skillopt_sleep.commands.flags import add_source_flags, home_overrides
from skillopt_sleep.config import load_config
from skillopt_sleep.errors import EXIT_USAGE, UserError
from skillopt_sleep.paths import TRANSCRIPT_SOURCES
from skillopt_sleep.types import parse_time


def progress_printer(enabled: bool = True):
    def emit(message: str) -> None:
        if enabled:
            print(f"skillopt-sleep: {message}", file=sys.stderr, flush=True)

    return emit


def add_night_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by run and dry-run (and, in part, demo)."""
    p.add_argument("--project", default=".", help="project directory (default: the current one)")
    p.add_argument(
        "--tasks-file", type=Path, help="replay a reviewed skillopt_sleep.tasks.v1 file instead of harvesting"
    )
    p.add_argument(
        "--backend",
        help='model backend for both roles, e.g. "sim", "anthropic", '
        '"openai:base_url=http://127.0.0.1:8080/v1", "claude-cli", "codex-cli", '
        '"sim:follow=0.9,base=0.15,correct=0.6,harmful=0.2,seed=7"',
    )
    p.add_argument("--optimizer-backend", help="a different backend for the optimizer role")
    p.add_argument("--model", help="model name for the target (and optimizer, unless set in config)")
    p.add_argument(
        "--target-skill-path", type=Path, help="the SKILL.md to evolve instead of the managed .claude/.agents skill"
    )
    p.add_argument(
        "--agent",
        choices=(*TRANSCRIPT_SOURCES, "auto"),
        help="whose documents to evolve (auto: those the agents whose sessions were harvested read)",
    )
    add_source_flags(p)
    p.add_argument("--since", help='only sessions active since this ISO-8601 time, or "all" (the default)')
    p.add_argument(
        "--miner",
        choices=("auto", "heuristic", "llm"),
        help="how recurring requests become checkable tasks (llm: the optimizer model; "
        "auto, the default: llm unless the backend is the simulator)",
    )
    p.add_argument("--k", type=int, help="samples per train task (default 4)")
    p.add_argument(
        "--batch",
        action="store_true",
        default=None,
        help="send bulk phases through the provider's batch API (half price, slower)",
    )
    p.add_argument("--max-tokens", type=int, help="per-night token budget")
    p.add_argument("--max-cost", type=float, dest="max_cost_usd", help="per-night cost budget in USD")
    p.add_argument(
        "--max-calls",
        type=int,
        metavar="N",
        help="per-night cap on model calls: the night plans to fit it and still stages what it "
        "proved; an edit left undecided is tried again on a later night (no ban). Default: 400 "
        "when a model answers, none on the sim backend; 0: no cap",
    )
    p.add_argument(
        "--deadline",
        type=_duration_arg,
        dest="night_deadline",
        metavar="DURATION",
        help='time for the whole night\'s model work, e.g. "90m", "3h" or "600" (seconds; default: '
        "night_deadline in config, 4h); past it the night ends with exit 4, nothing staged",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_whole_skill_flag(p)


def add_whole_skill_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--edit-whole-skill",
        action="store_true",
        help="this night may also replace or delete hand-written lines of the skill (shown "
        "as a diff in review; revert restores the exact bytes). Config: edit_whole_skill = "
        '["<skill name>", ...]',
    )


_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: str) -> float:
    """``--deadline``: seconds, or a number with s / m / h."""
    text = value.strip().lower()
    unit = text[-1:] if text[-1:] in ("s", "m", "h") else ""
    try:
        number = float(text[: len(text) - len(unit)])
    except ValueError:
        number = -1.0
    if not number > 0 or number == float("inf"):
        raise UserError(f'--deadline {value!r} is not a duration (e.g. "90m", "3h" or "600")', EXIT_USAGE)
    return number * _DURATION_UNITS[unit]


def _duration_arg(value: str) -> float:
    try:
        return parse_duration(value)
    except UserError as exc:  # argparse reports it as a usage error (exit 2)
        raise argparse.ArgumentTypeError(exc.message) from None


def parse_since(value: str | None) -> datetime | None:
    """``--since`` for every verb that harvests: an ISO-8601 time, or "all" (no cutoff)."""
    if value is None or value.strip().lower() == "all":
        return None
    when = parse_time(value)
    if when is None:
        raise UserError(f'--since {value!r} is not an ISO-8601 time in years 1-9999 (or "all")', EXIT_USAGE)
    return when


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser(
        "run",
        help="run a night: learn, gate and stage a proposal",
        description="Harvest, mine, dream, reflect, gate and stage a proposal "
        "for review (see `adopt`). Saves harvest checkpoints and history.",
    )
    add_night_flags(run)
    run.add_argument(
        "--auto-adopt", action="store_true", help="adopt the proposal right away when the gate accepted edits"
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue the night a crash, kill or stop interrupted: calls it had finished "
        "are not made again (with nothing to resume, a new night starts)",
    )
    run.add_argument(
        "--detach",
        action="store_true",
        help="start the night in the background and return at once; its log goes under the "
        "project's .skillopt-sleep/logs/, and `skillopt-sleep status` follows it",
    )
    run.add_argument(
        "--estimate",
        action="store_true",
        help="print what tonight's night would cost (model calls, tokens, $ or which login, "
        "minutes) and stop: no model call, nothing staged",
    )
    run.add_argument("--night-log", help=argparse.SUPPRESS)  # a detached night's log, named by its parent
    run.set_defaults(func=lambda a: cmd_night(a, "run"), night_parser=run)
    dry = sub.add_parser(
        "dry-run",
        help="the same work as run; nothing staged or saved",
        description="Everything `run` does, but nothing is staged and no state (checkpoints, history) is saved.",
    )
    add_night_flags(dry)
    dry.set_defaults(func=lambda a: cmd_night(a, "dry-run"))


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    keys = (
        "backend",
        "optimizer_backend",
        "model",
        "agent",
        "source",
        "miner",
        "k",
        "batch",
        "max_tokens",
        "max_cost_usd",
        "max_calls",
        "night_deadline",
    )
    return {**{k: getattr(args, k, None) for k in keys}, **home_overrides(args)}


def cmd_night(args: argparse.Namespace, mode: str) -> int:
    from skillopt_sleep.night import NightOptions

    project = Path(args.project).expanduser().resolve()
    since = parse_since(args.since)
    config = load_config(project, overrides_from(args))  # a broken config is said here, detached or not
    if getattr(args, "detach", False) and not getattr(args, "estimate", False):
        from skillopt_sleep.night_bg import detach

        return detach(args, project)
    if args.backend and not getattr(args, "optimizer_backend", None):
        config.models.target_backend = config.models.optimizer_backend = None
    opts = NightOptions(
        project=project,
        config=config,
        mode=mode,
        tasks_file=args.tasks_file,
        target_skill_path=args.target_skill_path,
        since=since,
        auto_adopt=getattr(args, "auto_adopt", False),
        resume=getattr(args, "resume", False),
        edit_whole_skill=getattr(args, "edit_whole_skill", False),
        progress=progress_printer(not args.quiet),
    )
    from skillopt_sleep.night_bg import night_with_estimate, print_estimate

    if getattr(args, "estimate", False):
        return print_estimate(opts, args.json)
    return night_with_estimate(opts, args, mode)
