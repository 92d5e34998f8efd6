"""``schedule`` / ``unschedule``: install or remove the nightly OS entry and register projects;
``nightly``: what that entry runs (also usable by hand to catch up on a missed night)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skillopt_sleep import scheduler
from skillopt_sleep.config import load_config
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_OK, EXIT_USAGE, UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.scheduler.base import NIGHTLY_VERB, Job, refuse_control_chars, refuse_secrets
from skillopt_sleep.scheduler.envfile import read_env_file
from skillopt_sleep.redact import redact
from skillopt_sleep.sanitize import sanitize
from skillopt_sleep.scheduler.preflight import Needs, check_backends, config_record
from skillopt_sleep.scheduler.schedule_file import (
    LOCATION_VARS,
    OUTPUT_LOG,
    ProjectEntry,
    Schedule,
    load_schedule,
    now_iso,
    schedule_path,
)
from skillopt_sleep.scheduler.schedule_changes import remove_schedule, save_schedule
from skillopt_sleep.scheduler.timing import DEFAULT_AT, parse_at


def _project_dirs(projects: Sequence[str] | None) -> list[str]:
    out = []
    for raw in projects or ["."]:
        refuse_control_chars("--project", raw)
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            raise UserError(f"project {path} is not a directory", EXIT_USAGE)
        out.append(str(path))
    return list(dict.fromkeys(out))


def build_job(schedule: Schedule, schedule_file: Path) -> Job:
    hour, minute = parse_at(schedule.at)
    argv = (schedule.python, "-m", "skillopt_sleep", NIGHTLY_VERB, "--schedule-file", str(schedule_file))
    for value in argv:
        refuse_control_chars("a path in the scheduled command", value)
    return Job(hour, minute, argv, user_dirs().scheduled_runs / OUTPUT_LOG)


def _overrides(**flags: Any) -> dict[str, Any]:
    """The flags given, by the settings they set (an absent flag leaves the config's value)."""
    return {k: v for k, v in flags.items() if v is not None}


Warn = Callable[[str], None]


def _preflight(warn: Warn | None, fallback: Any, check: Callable[..., Any], *args: Any) -> Any:
    """``check(*args)``; with ``warn`` (``--print``), a finding about the job's environment (a
    missing CLI, key, env file or importable interpreter) is reported and ``fallback`` used instead."""
    try:
        return check(*args)
    except UserError as exc:
        if warn is None or exc.code != EXIT_CONFIG:
            raise
        warn(exc.message)
        return fallback


def plan_schedule(
    *,
    at: str | None = None,
    projects: Sequence[str] | None = None,
    backend: str | None = None,
    model: str | None = None,
    via: str | None = None,
    env_file: str | None = None,
    auto_adopt: bool | None = None,
    platform: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
    warn: Warn | None = None,
) -> tuple[Schedule, Schedule | None]:
    """The schedule ``schedule`` would save (and the one it replaces); checks everything, changes
    nothing. With ``warn``, what the job would not find is passed to it instead of refused.

    Each of ``at``, ``via``, ``env_file``: the flag, else the ``[schedule]`` setting (the user
    config file or the environment: a project's file may not set them), else what is already
    scheduled, else the default (03:00, the OS's own mechanism, none). ``auto_adopt``: the flag,
    else each project's ``auto_adopt`` setting (its own config file may set it)."""
    for label, value in (("--at", at), ("--backend", backend), ("--model", model), ("--env-file", env_file)):
        if value is not None:
            refuse_control_chars(label, value)
    if at is not None:
        parse_at(at)  # a bad flag is a usage error; a bad config value is one naming its file
    previous = load_schedule()
    mine = load_config(None, _overrides(at=at, via=via, env_file=env_file)).schedule
    hour, minute = parse_at(mine.at or (previous.at if previous else DEFAULT_AT))
    at = f"{hour:02d}:{minute:02d}"
    via = mine.via or (
        previous.via
        if previous and previous.via in scheduler.supported_vias(platform)
        else scheduler.default_via(platform)
    )
    scheduler.make_mechanism(via, platform)
    env_file = mine.env_file or (previous.env_file if previous else None)
    env_vars: dict[str, str] = {}
    if env_file:
        refuse_control_chars("env_file", env_file)
        env_file = str(Path(env_file).expanduser().resolve())
        env_vars = _preflight(warn, {}, read_env_file, env_file)
    python = str(Path(sys.executable).absolute())
    schedule = Schedule(
        at=at,
        via=via,
        python=python,
        env_file=env_file,
        locations={k: os.environ[k] for k in LOCATION_VARS if os.environ.get(k)},
    )
    for value in schedule.locations.values():
        refuse_control_chars("a location variable", value)
    from skillopt_sleep.scheduler.nightly import config_from_record

    entries = {p.project: p for p in (previous.projects if previous else [])}
    named = _project_dirs(projects)
    path: list[str] = []
    for project in named:
        config = load_config(Path(project), _overrides(backend=backend, model=model, auto_adopt=auto_adopt))
        if backend:
            config.models.target_backend = config.models.optimizer_backend = None
        needs = _preflight(warn, Needs(), check_backends, config, env_vars, which)
        path += needs.path
        entries[project] = ProjectEntry(project, config_record(config, needs), config.schedule.auto_adopt, now_iso())
    for project, entry in entries.items():  # the others, re-checked against today's env file and PATH
        if project not in named:
            recorded = config_from_record(entry.config)
            path += _preflight(warn, Needs(), check_backends, recorded, env_vars, which).path
    schedule.projects = list(entries.values())
    schedule.path = list(dict.fromkeys(path))
    _preflight(warn, None, check_interpreter, python)
    return schedule, previous


def check_interpreter(python: str) -> None:
    """The job's interpreter must import the engine with an empty environment (no PYTHONPATH,
    no activated virtualenv), from a neutral directory, as the OS scheduler will run it."""
    import subprocess

    try:
        proc = subprocess.run(
            [python, "-c", "import skillopt_sleep"],
            env={},
            cwd=Path(python).anchor or "/",
            capture_output=True,
            timeout=60,
        )
        ok = proc.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        raise UserError(
            f"{python} cannot import skillopt_sleep without your shell's environment (is it "
            "found through PYTHONPATH?); install it into that interpreter, e.g. "
            f"`{python} -m pip install skillopt-sleep`, then schedule again",
            EXIT_CONFIG,
        )


def schedule(*, print_only: bool = False, as_json: bool = False, platform: str | None = None, **options: Any) -> int:
    warnings: list[str] = []
    new, previous = plan_schedule(platform=platform, warn=warnings.append if print_only else None, **options)
    warnings = [sanitize(redact(w), 400) for w in warnings]
    for warning in warnings:  # --print shows the entry anyway; installing it would be refused
        print(
            f"skillopt-sleep: warning: {warning} (`schedule` without --print refuses until this is fixed)",
            file=sys.stderr,
        )
    target = schedule_path()
    job = build_job(new, target)
    mechanism = scheduler.make_mechanism(new.via, platform)
    plan = mechanism.plan(job)
    refuse_secrets(plan)
    if print_only:
        if as_json:
            print(
                json.dumps(
                    {
                        "plan": {
                            "mechanism": plan.mechanism,
                            "artifacts": [a.__dict__ for a in plan.artifacts],
                            "commands": plan.commands,
                            "notes": plan.notes,
                        },
                        "schedule_file": str(target),
                        "schedule": new.to_dict(),
                        "warnings": warnings,
                    },
                    indent=2,
                )
            )
        else:
            print(plan.render())
            print(f"--- {target}")
            print(new.to_json().rstrip("\n"))
            print("(--print: nothing was changed)")
        return EXIT_OK
    save_schedule(new, target)
    try:
        # The entry creates it too (base.entry_command); made here, the first night's log has a
        # home even for an entry someone edits by hand.
        job.output_log.parent.mkdir(parents=True, exist_ok=True)
        mechanism.install(job)
    except BaseException:
        if previous is not None:
            save_schedule(previous, target)
        else:
            remove_schedule(target)
        raise
    if previous is not None and previous.via != new.via and previous.via in scheduler.supported_vias(platform):
        scheduler.make_mechanism(previous.via, platform).uninstall()  # one entry per user
    next_at = scheduler.next_run(new.at)
    if as_json:
        print(
            json.dumps(
                {
                    "via": new.via,
                    "at": new.at,
                    "next_run": next_at.isoformat(timespec="minutes"),
                    "schedule_file": str(target),
                    "projects": [p.project for p in new.projects],
                }
            )
        )
        return EXIT_OK
    print(
        f"skillopt-sleep: nightly at {new.at} via {new.via} (next {next_at:%a %d %b %H:%M}) for "
        f"{len(new.projects)} project(s):"
    )
    for entry in new.projects:
        cfg = entry.config
        print(
            f"  {entry.project}  backend {cfg.get('backend')}, agent {cfg.get('agent')}, "
            f"auto-adopt {'on' if entry.auto_adopt else 'off'}"
        )
    for note in plan.notes:
        print(f"  note: {note}")
    print(
        f"  each project's configuration is recorded in {target}; after changing a config, run "
        "`skillopt-sleep schedule` again"
    )
    return EXIT_OK


def unschedule(
    *,
    projects: Sequence[str] | None = None,
    print_only: bool = False,
    as_json: bool = False,
    platform: str | None = None,
) -> int:
    current = load_schedule()
    named = _project_dirs(projects) if projects else []
    remaining = [p for p in (current.projects if current else []) if p.project not in named] if named else []
    vias = (
        [current.via]
        if current and current.via in scheduler.supported_vias(platform)
        else list(scheduler.supported_vias(platform))
    )
    remove_entry = not remaining
    if print_only:
        if remove_entry:
            print(f"would remove our {' / '.join(vias)} entry (foreign entries are kept) and {schedule_path()}")
        else:
            print(f"would unregister {', '.join(named)}; {len(remaining)} project(s) stay scheduled")
        print("(--print: nothing was changed)")
        return EXIT_OK
    removed_from = []
    if remove_entry:
        for via in vias:
            try:
                if scheduler.make_mechanism(via, platform).uninstall():
                    removed_from.append(via)
            except UserError:
                if current is not None:
                    raise
                # nothing recorded: we only looked for a stray entry, and this tool is missing
        remove_schedule()
    elif current is not None:
        current.projects = remaining
        save_schedule(current)
    if as_json:
        print(json.dumps({"removed_entry": removed_from, "remaining": [p.project for p in remaining]}))
    elif remove_entry:
        print(
            "skillopt-sleep: "
            + (f"removed the nightly {' and '.join(removed_from)} entry" if removed_from else "nothing was scheduled")
        )
    else:
        print(f"skillopt-sleep: unregistered {', '.join(named)}; {len(remaining)} project(s) stay scheduled")
    return EXIT_OK


def run_project_night(entry: ProjectEntry, log: Callable[[str], None]) -> dict[str, Any]:
    """One project's night with its recorded config; raises what ``run`` would. Skipped, with
    no model call, when the project has nothing new to learn from (``news.nothing_new``)."""
    from skillopt_sleep.night import NightOptions
    from skillopt_sleep.night_bg import followed_night
    from skillopt_sleep.report.markdown import render_text
    from skillopt_sleep.scheduler.news import nothing_new
    from skillopt_sleep.scheduler.nightly import config_from_record

    config = config_from_record(entry.config)
    skipped = nothing_new(Path(entry.project), config)
    if skipped:
        log(f"skipped: {skipped}")
        return {"status": "skipped", "skipped": skipped}
    # A night that a crash, a kill or a stop interrupted is continued, not paid for again.
    opts = NightOptions(
        project=Path(entry.project), config=config, mode="run", auto_adopt=entry.auto_adopt, progress=log, resume=True
    )
    report = followed_night(opts, show=False)  # status follows it (night_state) like a run
    log(render_text(report))
    return {"night_id": report.night_id, "status": report.status}


def nightly(schedule_file: str | None) -> int:
    from skillopt_sleep.scheduler.nightly import read_last_run, run_scheduled, tally

    code = run_scheduled(run_project_night, Path(schedule_file) if schedule_file else None)
    last = read_last_run() or {}
    if last.get("error"):
        print(f"skillopt-sleep: the scheduled night could not start: {last['error']}", file=sys.stderr)
        return code
    results = last.get("projects") or []
    print(f"skillopt-sleep: scheduled night done: {tally(results)}; log {last.get('log')}")
    for result in results:
        if result.get("skipped"):
            print(f"  skipped {result.get('project')}: {result['skipped']}")
    return code


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "schedule",
        help="run a night for your projects every night (cron, systemd, launchd, schtasks)",
        description="Install one per-user OS entry that runs a night for every registered "
        "project, each with its configuration as resolved now. Re-running adds projects "
        "and updates the time; it never duplicates the entry. A flag left out takes its "
        "setting from the [schedule] section of the user config file or SKILLOPT_SLEEP_<SETTING> "
        "(at, via, env_file; a project's config file may set only auto_adopt), then what is "
        "already scheduled, then the default.",
    )
    p.add_argument(
        "--at",
        metavar="HH:MM",
        help=f"local time of the nightly run (default: [schedule] at, else the time already scheduled, else {DEFAULT_AT})",
    )
    p.add_argument(
        "--project",
        action="append",
        metavar="DIR",
        help="register this project (repeatable; default: the current directory)",
    )
    p.add_argument("--backend", help="model backend for these projects' nights (default: their config)")
    p.add_argument("--model", help="model name for these projects' nights")
    p.add_argument(
        "--via",
        choices=tuple(scheduler.MECHANISMS),
        help="OS mechanism (default: [schedule] via, else the one already scheduled, else systemd or cron "
        "on Linux, launchd on macOS, schtasks on Windows)",
    )
    p.add_argument(
        "--env-file",
        metavar="FILE",
        help="KEY=VALUE file (mode 0600) the nightly job reads API keys from (default: [schedule] env_file, "
        "else the one already scheduled)",
    )
    p.add_argument(
        "--auto-adopt",
        action=argparse.BooleanOptionalAction,
        help="adopt these projects' proposals right away when the gate accepts edits (default: each "
        "project's auto_adopt setting, off unless set)",
    )
    p.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        help="show exactly what would be installed, with a warning for anything the "
        "night would not find (a CLI, a key); change nothing",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(
        func=lambda a: schedule(
            at=a.at,
            projects=a.project,
            backend=a.backend,
            model=a.model,
            via=a.via,
            env_file=a.env_file,
            auto_adopt=a.auto_adopt,
            print_only=a.print_only,
            as_json=a.json,
        )
    )
    u = sub.add_parser(
        "unschedule",
        help="remove the nightly entry, or unregister projects",
        description="Without --project: remove our OS entry (every foreign entry is kept) "
        "and the schedule file. With --project: unregister those projects; the entry is "
        "removed when none remain.",
    )
    u.add_argument("--project", action="append", metavar="DIR", help="unregister only this project (repeatable)")
    u.add_argument("--print", dest="print_only", action="store_true", help="show what would be removed")
    u.add_argument("--json", action="store_true", help="print one JSON object")
    u.set_defaults(func=lambda a: unschedule(projects=a.project, print_only=a.print_only, as_json=a.json))
    n = sub.add_parser(
        NIGHTLY_VERB,
        help="run the scheduled night now for every registered project",
        description="What the scheduled OS entry runs: a night for every registered "
        "project, one after another, each with its recorded configuration. A failing "
        "project is logged and the others still run; a project with no session "
        "written since its last night is skipped, with no model call. Run it by hand "
        "to catch up on a missed night.",
    )
    n.add_argument("--schedule-file", metavar="FILE", help="(default: the user schedule file)")
    n.set_defaults(func=lambda a: nightly(a.schedule_file))
