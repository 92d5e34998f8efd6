"""The scheduled night itself (``skillopt-sleep nightly``, what every OS entry runs): for each
registered project, one after another, a ``run`` night with that project's recorded
configuration. A failing project is logged and never stops the others.

The job starts with a bare environment: it restores the recorded location variables, reads the
env file (re-checking its mode), and puts the recorded directories first on PATH. Each night
writes one log file (the newest ``KEEP_LOGS`` are kept) and ``last-run.json``, which ``status``
and the missed-night notice read. Everything written is redacted and free of control characters.
"""

from __future__ import annotations

import json
import os
import re
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from skillopt_sleep.config import SECTION_OF, Config, validate
from skillopt_sleep.errors import EXIT_CONFIG, EXIT_ERROR, EXIT_OK, UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.redact import redact
from skillopt_sleep.scheduler.envfile import read_env_file
from skillopt_sleep.scheduler.schedule_file import OUTPUT_LOG, ProjectEntry, Schedule, load_schedule
from skillopt_sleep.files import atomic_write_text
from skillopt_sleep.scheduler.notice import refresh_schedule_notice

KEEP_LOGS = 30
OUTPUT_LOG_LIMIT = 256 * 1024  # the OS-level stdout/stderr file is emptied past this size
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

RunProject = Callable[[ProjectEntry, Callable[[str], None]], dict[str, Any]]


def clean(text: str) -> str:
    return _CONTROLS.sub("", redact(text))


def config_from_record(values: dict[str, Any]) -> Config:
    unknown = sorted(set(values) - set(SECTION_OF))
    if unknown:
        raise UserError(
            f"recorded config has unknown settings {unknown}; run `skillopt-sleep schedule` again", EXIT_CONFIG
        )
    return validate(Config(**values))


def prepare_environment(schedule: Schedule) -> None:
    """The job's environment: recorded locations, the env file's variables, the recorded PATH."""
    for name, value in schedule.locations.items():
        os.environ[name] = value
    if schedule.env_file:
        os.environ.update(read_env_file(schedule.env_file))
    current = [p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if p]
    os.environ["PATH"] = os.pathsep.join(dict.fromkeys(schedule.path + current))


def _open_log(runs: Path, started: datetime) -> tuple[Path, TextIO]:
    logs = runs / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    stem = f"night-{started:%Y%m%dT%H%M%SZ}"
    path = logs / f"{stem}.log"
    if path.exists():
        path = logs / f"{stem}-{os.getpid()}.log"
    return path, open(path, "w", encoding="utf-8")


def rotate_logs(runs: Path, keep: int = KEEP_LOGS) -> None:
    logs = sorted((runs / "logs").glob("night-*.log"), key=lambda p: p.name)
    for old in logs[:-keep] if keep > 0 else logs:
        try:
            old.unlink()
        except OSError:
            pass


def _trim_output_log(runs: Path) -> None:
    out = runs / OUTPUT_LOG
    try:
        if out.stat().st_size > OUTPUT_LOG_LIMIT:
            out.write_text("", encoding="utf-8")
    except OSError:
        pass


def _write_last_run(runs: Path, record: dict[str, Any]) -> None:
    runs.mkdir(parents=True, exist_ok=True)
    atomic_write_text(runs / "last-run.json", json.dumps(record, indent=2) + "\n")
    refresh_schedule_notice()  # a night started: the missed-night notice moves to the next slot


def tally(results: list[dict[str, Any]]) -> str:
    """``2 ok, 1 failed``, with ``, 1 skipped (nothing new)`` when projects were skipped."""
    failed = sum(1 for r in results if not r.get("ok"))
    skipped = sum(1 for r in results if r.get("ok") and r.get("status") == "skipped")
    text = f"{len(results) - failed - skipped} ok, {failed} failed"
    return text + (f", {skipped} skipped (nothing new)" if skipped else "")


def read_last_run() -> dict[str, Any] | None:
    from skillopt_sleep.scheduler.missed import read_last_run as read

    return read(user_dirs().scheduled_runs)


def run_scheduled(run_project: RunProject, schedule_file: Path | None = None) -> int:
    """Run every registered project's night with ``run_project`` (``commands.schedule``'s: a ``run``
    night with the project's recorded configuration); returns 0 when all succeeded, else the first
    failing project's exit code."""
    schedule = load_schedule(schedule_file)
    if schedule is None:
        raise UserError(
            f"nothing is scheduled ({schedule_file or 'no schedule file'}); see `skillopt-sleep schedule`", EXIT_CONFIG
        )
    for name, value in schedule.locations.items():  # before any user-level path is computed
        os.environ[name] = value
    runs = user_dirs().scheduled_runs
    started = datetime.now(timezone.utc)
    log_path, fh = _open_log(runs, started)
    record: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "finished": None,
        "log": str(log_path),
        "projects": [],
    }

    def log(message: str) -> None:
        fh.write(clean(message).rstrip("\n") + "\n")
        fh.flush()

    try:
        _trim_output_log(runs)
        _write_last_run(runs, record)
        log(f"skillopt-sleep scheduled night, started {record['started']}, {len(schedule.projects)} project(s)")
        try:
            prepare_environment(schedule)
        except UserError as exc:
            log(f"cannot start: {exc.message}")
            record["error"] = clean(exc.message)
            return exc.code
        for entry in schedule.projects:
            log(f"== {entry.project}")
            result: dict[str, Any] = {"project": entry.project, "ok": False, "code": EXIT_OK}
            try:
                result.update(run_project(entry, log))
                result["ok"] = True
            except UserError as exc:
                report = getattr(exc, "report", None)
                if report is not None:
                    result["night_id"] = report.night_id
                result.update(code=exc.code, message=clean(exc.message))
                log(f"failed (exit {exc.code}): {exc.message}")
            except Exception as exc:  # a bug in one project's night must not stop the others
                result.update(code=EXIT_ERROR, message=clean(f"internal error: {exc!r}"))
                log("failed with an internal error:\n" + traceback.format_exc())
            record["projects"].append(result)
        log(f"done: {tally(record['projects'])}")
        failed = [r for r in record["projects"] if not r["ok"]]
        return failed[0]["code"] if failed else EXIT_OK
    finally:
        record["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        fh.close()
        _write_last_run(runs, record)
        rotate_logs(runs)
