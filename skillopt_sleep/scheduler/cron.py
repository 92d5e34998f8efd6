"""A user crontab line (Linux, and any Unix with cron).

Our entry is two lines: a marker comment, then the job line. ``crontab -l`` / ``crontab -`` read
and replace the whole table as bytes, split only at ``\n``: every foreign line passes through
exactly as it was (its CRLF, encoding, form feeds and other separators, a missing final newline).
Our entry is found by a marker line equal, byte for byte, to one we write, followed by a line
that runs our nightly job; a foreign line that merely mentions the marker is foreign. cron runs a
missed night never; the next CLI use or the SessionStart hook notices it
(``timing.missed_night_notice``).
"""

from __future__ import annotations

from skillopt_sleep.scheduler.base import (
    MARKER,
    MARKER_NOTE,
    NIGHTLY_VERB,
    Artifact,
    Job,
    Plan,
    entry_command,
    run_tool_bytes,
    tool_failure,
    tool_output,
)

CRONTAB = "crontab"
MARKER_LINE = f"# {MARKER_NOTE}".encode()
# Written instead of MARKER_LINE when the table it is appended to lacked a final newline: removing
# the entry then takes that newline back out, so the table is left as it was found.
MARKER_LINE_JOINED = (
    f"# {MARKER} (managed by `skillopt-sleep schedule`, which ended the line above "
    "with a newline; remove with `skillopt-sleep unschedule`)"
).encode()
_JOB = f"skillopt_sleep {NIGHTLY_VERB}".encode()


def job_line(job: Job) -> str:
    # cron turns an unescaped % into a newline before the shell sees the command
    command = entry_command(job).replace("%", "\\%")
    return f"{job.minute} {job.hour} * * * {command}"


def table_lines(table: bytes) -> list[bytes]:
    """The table's lines, each with its ``\n`` (the last one may have none); nothing else ends a
    line, so ``b"".join(table_lines(t)) == t``."""
    parts = table.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _marker_at(lines: list[bytes], i: int) -> bytes | None:
    """The marker line at ``i`` when it starts one of our entries (it is exactly a marker we write
    and the next line runs our job; the job line's format changed over versions, the marker not)."""
    text = lines[i].removesuffix(b"\n")
    if text not in (MARKER_LINE, MARKER_LINE_JOINED) or i + 1 >= len(lines):
        return None
    job = lines[i + 1].strip()
    return text if job and not job.startswith(b"#") and _JOB in job else None


def without_ours(table: bytes) -> tuple[bytes, bool]:
    """The table minus every entry of ours, every other byte kept; whether any entry was found."""
    lines = table_lines(table)
    kept: list[bytes] = []
    found = take_back_newline = False
    i = 0
    while i < len(lines):
        marker = _marker_at(lines, i)
        if marker is None:
            kept.append(lines[i])
            take_back_newline = False
            i += 1
            continue
        found = True
        take_back_newline = marker == MARKER_LINE_JOINED and bool(kept)
        i += 2
    if take_back_newline and kept[-1].endswith(b"\n"):
        kept[-1] = kept[-1][:-1]
    return b"".join(kept), found


def with_entry(table: bytes, job: Job) -> bytes:
    """The table with our entry (replacing any earlier one) appended after every foreign line."""
    kept, _ = without_ours(table)
    marker = MARKER_LINE
    if kept and not kept.endswith(b"\n"):
        kept, marker = kept + b"\n", MARKER_LINE_JOINED
    return kept + marker + b"\n" + job_line(job).encode("utf-8", "surrogateescape") + b"\n"


class Cron:
    name = "cron"

    def __init__(self, crontab: str = CRONTAB):
        self.crontab = crontab

    def read_table(self) -> bytes:
        proc = run_tool_bytes([self.crontab, "-l"], check=False)
        if proc.returncode != 0:
            if "no crontab" in tool_output(proc).lower():
                return b""
            raise tool_failure([self.crontab, "-l"], proc)
        return proc.stdout

    def plan(self, job: Job) -> Plan:
        return Plan(
            self.name,
            [
                Artifact(
                    "user crontab (two lines added; every other line kept as it is)",
                    f"# {MARKER_NOTE}\n{job_line(job)}\n",
                )
            ],
            [[self.crontab, "-"]],
            [
                "cron never runs a night the machine slept through; the next skillopt-sleep "
                "command or Claude Code session start says so"
            ],
        )

    def install(self, job: Job) -> Plan:
        plan = self.plan(job)
        run_tool_bytes([self.crontab, "-"], stdin=with_entry(self.read_table(), job))
        return plan

    def uninstall(self) -> bool:
        kept, found = without_ours(self.read_table())
        if not found:
            return False
        if kept:
            run_tool_bytes([self.crontab, "-"], stdin=kept)
        else:
            run_tool_bytes([self.crontab, "-r"])
        return True

    def installed(self) -> bool:
        return without_ours(self.read_table())[1]
