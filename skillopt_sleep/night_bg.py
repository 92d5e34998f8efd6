"""``run --estimate``, ``run --detach``, and a night in the foreground with its estimate first
and the whole night's progress (``night_state``) beside it."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.errors import EXIT_ERROR, EXIT_LOCKED, EXIT_OK, UserError
from skillopt_sleep.sanitize import clean_obj, sanitize


def _say(line: str) -> None:
    print(f"skillopt-sleep: {sanitize(line)}", file=sys.stderr, flush=True)


# -- run --estimate ------------------------------------------------------------------------------


def print_estimate(opts: Any, as_json: bool) -> int:
    """Print tonight's estimate; no model call, nothing staged."""
    from skillopt_sleep.estimate import estimate, render

    est = estimate(opts)
    if as_json:
        print(json.dumps(clean_obj(est.to_dict()), indent=2))
    else:
        print(sanitize(render(est)))
        print(
            "nothing was run or staged; start the night with: skillopt-sleep run"
            + ("" if opts.project == Path.cwd() else f" --project {shlex.quote(str(opts.project))}")
        )
    return EXIT_OK


# -- a night in the foreground -------------------------------------------------------------------


def night_with_estimate(opts: Any, args: argparse.Namespace, mode: str) -> int:
    """``run`` / ``dry-run`` in the foreground: the report on stdout (``followed_night`` does the
    rest)."""
    from skillopt_sleep.night import NightStopped

    try:
        report = followed_night(opts, mode, show=not args.quiet, log=getattr(args, "night_log", None))
    except NightStopped as stopped:
        print_report(stopped.report, args.json)
        stopped.json_printed = True
        raise
    print_report(report, args.json)  # a dry-run's report ends by saying nothing was staged
    return EXIT_OK


def followed_night(opts: Any, mode: str = "run", *, show: bool = True, log: str | None = None) -> Any:
    """A night with its estimate said first (dry-run: in full, it costs as much as run), the
    whole night's progress on stderr (``show``) and, for a run, in the state file; a run's
    spending is then kept beside its estimate, with its optimizer's answers, for the next
    estimate. Returns the report; raises what ``run_night`` raises."""
    from skillopt_sleep.estimate import one_line, render
    from skillopt_sleep.estimate_answers import AnswerLog
    from skillopt_sleep.night import NightStopped, run_night
    from skillopt_sleep.night_state import NightProgress

    est = None
    try:
        est = _estimate(opts)
    except UserError:
        est = None  # the night itself says what is wrong, in its own words
    if est is not None and opts.harvested is None:
        opts.harvested = est.rehearsal.harvested  # the night reads what its rehearsals read
    if est is not None and show:
        for line in render(est).splitlines() if mode == "dry-run" else [one_line(est)]:
            _say(line.strip())
    progress = NightProgress(
        opts.project,
        planned=est.calls if est else None,
        payer=est.payer if est else None,
        mode=mode,
        log=log,
        show=show,
        write=mode == "run",
    )
    answers = AnswerLog() if mode == "run" else None
    if answers is not None:
        opts.stores = [*opts.stores, answers]
    shout = opts.progress

    def both(message: str) -> None:
        shout(message)
        progress.on_phase(message)

    opts.progress = both
    opts.call_progress = progress
    code, report = EXIT_ERROR, None
    try:
        report = run_night(opts)
        code = EXIT_OK
        return report
    except NightStopped as stopped:
        report, code = stopped.report, stopped.code
        raise
    except UserError as exc:
        code = exc.code
        raise
    except KeyboardInterrupt:
        code = 130
        raise
    finally:
        progress.end(
            code, report.status if report is not None else None, report.night_id if report is not None else None
        )
        if report is not None and mode == "run":
            _remember(opts.project, est, report, answers)


def _remember(project: Path, est: Any, report: Any, answers: Any) -> None:
    """What the next estimate learns from this night: its spending beside its estimate, and the
    optimizer's answers. Neither written costs the next estimate accuracy, never a night."""
    from skillopt_sleep.estimate import record

    try:
        if est is not None:
            record(project, est.rehearsal, report)
        if answers is not None:
            answers.save(project)
    except OSError:
        pass


def _estimate(opts: Any) -> Any:
    from skillopt_sleep.estimate import estimate

    return estimate(opts)


# -- run --detach --------------------------------------------------------------------------------


def detach(args: argparse.Namespace, project: Path) -> int:
    """Start ``run`` (the same options) in its own session, stdin closed, output to a log under
    the project's ``.skillopt-sleep/logs/``; say so, and how to follow it."""
    from skillopt_sleep.store.locks import describe_holder, lock_holder
    from skillopt_sleep.night_state import log_dir, night_status, write_starting
    from skillopt_sleep.paths import project_dirs

    if not project.is_dir():
        raise UserError(f"project {project} is not a directory", 2)
    follow = "skillopt-sleep status" + ("" if project == Path.cwd() else f" --project {shlex.quote(str(project))}")
    holder = lock_holder(project_dirs(project).lock)
    state = night_status(project)
    if holder is not None or (state is not None and state.get("state") == "running"):
        who = describe_holder(holder) if holder else f"pid {state.get('pid')}" if state else "another process"
        raise UserError(f"a night is already running for {project} ({who}); follow it with: {follow}", EXIT_LOCKED)
    logs = log_dir(project)
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / ("night-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}.log")
    argv = [sys.executable, "-m", "skillopt_sleep", "run", *_rebuild(args, project), "--night-log", str(log)]
    kwargs: dict[str, Any] = {"start_new_session": True}
    if sys.platform == "win32":  # pragma: no cover - Windows has no sessions
        kwargs = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS}
    with open(log, "ab") as out:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=str(project),
            close_fds=True,
            **kwargs,
        )
    write_starting(project, child.pid, str(log))
    if getattr(args, "json", False):
        print(json.dumps(clean_obj({"ok": True, "started": True, "pid": child.pid, "log": str(log), "follow": follow})))
    else:
        print(sanitize(f"skillopt-sleep: night started in the background (pid {child.pid}); log: {log}"))
        print(sanitize(f"follow it with: {follow}"))
    return EXIT_OK


def _rebuild(args: argparse.Namespace, project: Path) -> list[str]:
    """The command line of ``run`` from its parsed options, without ``--detach`` and with the
    project made absolute."""
    parser = getattr(args, "night_parser", None)
    out = ["--project", str(project)]
    for action in getattr(parser, "_actions", []):
        if not action.option_strings or action.dest in ("help", "detach", "project", "json", "night_log"):
            continue
        value = getattr(args, action.dest, None)
        if value is None or value is False or value == action.default:
            continue
        flag = action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0]
        if value is True:
            out.append(flag)
        else:
            out += [flag, str(value)]
    return out


def print_report(report: Any, as_json: bool) -> None:
    """The night's report on stdout: one JSON object, or the text a person reads."""
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
        return
    from skillopt_sleep.report.markdown import render_text

    print(render_text(report.redacted()))
