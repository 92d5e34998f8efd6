"""What became of the last scheduled night, told from the traces it leaves, for the notice the
next CLI use and the session-start hook show.

Three traces, in the state dir's ``scheduled/``: ``last-run.json`` (the night began: written
first thing by ``nightly``), the OS entry's own output log (the shell appends what failed before
Python could write anything, e.g. an interpreter that is gone), and the directory itself (the
entry creates it, so on Unix its absence means the entry never ran our command or is an older
one that could not). From them:

- the night ran and failed, or never finished: say so, with its error and log;
- the entry started but failed before the night: quote the output log's last line;
- no trace where the entry would have left one: it did not start (the machine was asleep or
  off, or for systemd, the user was logged out);
- no trace where none may be left (Windows, or no log directory): say that it is unknown.

Everything here reads small files with a size bound and never raises to its caller.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from skillopt_sleep.files import open_regular, parse_json
from skillopt_sleep.types import parse_time

STALE = timedelta(hours=12)  # a night still unfinished this long after it began was stopped
READ_LIMIT = 64 * 1024  # last-run.json is a few hundred bytes
TAIL = 4096  # the output log is read from its end
LINE_MAX = 200
# The Unix entries run through the shell, which logs its own failures (base.entry_command).
LOGS_FAILED_STARTS = ("cron", "systemd", "launchd")
NO_START = {
    "cron": "was the machine asleep or off? cron does not catch up",
    "systemd": "was the machine off, or were you logged out? see `loginctl enable-linger`",
    "launchd": "was the Mac off? launchd catches up after sleep, not after power-off",
}
CATCH_UP = "`skillopt-sleep nightly` runs it now"
TRACE_MAX = 160  # the session-start notice is one line of at most 240 characters


def _read_tail(path: Path, limit: int) -> bytes | None:
    """Up to the last ``limit`` bytes of a regular file; None when it is not one."""
    try:
        with open_regular(path) as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - limit))
            return handle.read(limit)
    except OSError:
        return None


def _clean(text: Any, limit: int = LINE_MAX) -> str:
    from skillopt_sleep.redact import redact
    from skillopt_sleep.sanitize import clean_text

    text = " ".join(clean_text(redact(str(text))).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def read_last_run(runs: Path) -> dict[str, Any] | None:
    data = _read_tail(runs / "last-run.json", READ_LIMIT)
    if data is None or len(data) >= READ_LIMIT:
        return None
    try:
        record = parse_json(data)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def output_since(path: Path, since: datetime) -> str | None:
    """The last line of the OS entry's output log, when it was written at or after ``since``."""
    try:
        if os.stat(path).st_mtime < since.timestamp():
            return None
    except OSError:
        return None
    data = _read_tail(path, TAIL)
    lines = [line for line in (data or b"").decode("utf-8", "replace").splitlines() if line.strip()]
    return _clean(lines[-1], TRACE_MAX) if lines else "(its output log is empty)"


def _night_result(head: str, last: dict[str, Any], started: datetime, now: datetime) -> str | None:
    """The notice for a night that began: None when it succeeded or is still running."""
    if last.get("error"):
        return f"{head} could not run: {_clean(last['error'], TRACE_MAX)}"
    if not last.get("finished"):
        if now - started < STALE:
            return None
        return f"{head} started at {started.astimezone():%H:%M} and never finished (stopped or killed); {CATCH_UP}"
    results = [r for r in last.get("projects") or [] if isinstance(r, dict)]
    failed = [r for r in results if not r.get("ok")]
    if not failed:
        return None
    first = failed[0]
    return (
        f"{head} ran, but {len(failed)} of {len(results)} project(s) failed: "
        f"{_clean(first.get('project'), 80)}: {_clean(first.get('message') or 'no message', TRACE_MAX)}"
    )


def what_happened(via: str, slot: datetime, now: datetime, runs: Path) -> str | None:
    """One line about the night scheduled at ``slot`` (local), or None when it went well or
    may still be running. The most telling part comes first: the session-start notice is
    clipped to one short line."""
    head = f"skillopt-sleep: the scheduled night of {slot:%a %d %b %H:%M}"
    last = read_last_run(runs)
    started = parse_time(last.get("started")) if last else None
    if last is not None and started is not None and started >= slot - timedelta(minutes=1):
        return _night_result(head, last, started, now)
    from skillopt_sleep.scheduler.schedule_file import OUTPUT_LOG

    trace = output_since(runs / OUTPUT_LOG, slot - timedelta(minutes=1))
    if trace is not None:
        return (
            f"{head} did not run: its entry started but failed before the night began: {trace} "
            f"(log {runs / OUTPUT_LOG})"
        )
    if via in LOGS_FAILED_STARTS and runs.is_dir():
        return f"{head} did not run: its entry did not start ({NO_START[via]}); {CATCH_UP}"
    where = "no log directory" if not runs.is_dir() else f"{via} logs no failed start"
    return (
        f"{head} did not run and left no trace ({where}): unknown whether its entry started; "
        f"`skillopt-sleep schedule` reinstalls it, {CATCH_UP}"
    )
