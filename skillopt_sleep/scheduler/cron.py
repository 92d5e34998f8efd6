"""A user crontab line (Linux, and any Unix with cron).

Our entry is two lines: a marker comment, then the job line. ``crontab -l`` / ``crontab -`` read
and replace the whole table, so every foreign line is carried over untouched; ``unschedule``
drops only a marker line together with the job line that follows it. cron runs a missed night
never; the next CLI use or the SessionStart hook notices it (``timing.missed_night_notice``).
"""

from __future__ import annotations

from skillopt_sleep.scheduler.base import (
    MARKER, MARKER_NOTE, NIGHTLY_VERB, Artifact, Job, Plan, entry_command, run_tool, tool_failure)

CRONTAB = "crontab"


def job_line(job: Job) -> str:
    # cron turns an unescaped % into a newline before the shell sees the command
    command = entry_command(job).replace("%", "\\%")
    return f"{job.minute} {job.hour} * * * {command}"


def _is_ours(marker_line: str, next_line: str | None) -> bool:
    return (marker_line.strip().startswith("#") and MARKER in marker_line and next_line is not None
            and f"skillopt_sleep {NIGHTLY_VERB}" in next_line)


def without_ours(lines: list[str]) -> tuple[list[str], bool]:
    """The table's lines minus our marker + job pairs; whether any pair was found."""
    kept: list[str] = []
    found = False
    i = 0
    while i < len(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if _is_ours(lines[i], nxt):
            found = True
            i += 2
            continue
        kept.append(lines[i])
        i += 1
    return kept, found


class Cron:
    name = "cron"

    def __init__(self, crontab: str = CRONTAB):
        self.crontab = crontab

    def read_table(self) -> list[str]:
        proc = run_tool([self.crontab, "-l"], check=False)
        if proc.returncode != 0:
            if "no crontab" in (proc.stderr + proc.stdout).lower():
                return []
            raise tool_failure([self.crontab, "-l"], proc)
        return proc.stdout.splitlines()

    def plan(self, job: Job) -> Plan:
        return Plan(self.name, [Artifact("user crontab (two lines added; every other line kept)",
                                         f"# {MARKER_NOTE}\n{job_line(job)}\n")],
                    [[self.crontab, "-"]],
                    ["cron never runs a night the machine slept through; the next skillopt-sleep "
                     "command or Claude Code session start says so"])

    def install(self, job: Job) -> Plan:
        plan = self.plan(job)
        kept, _ = without_ours(self.read_table())
        table = "\n".join(kept + [f"# {MARKER_NOTE}", job_line(job)]) + "\n"
        run_tool([self.crontab, "-"], stdin=table)
        return plan

    def uninstall(self) -> bool:
        kept, found = without_ours(self.read_table())
        if not found:
            return False
        if any(line.strip() for line in kept):
            run_tool([self.crontab, "-"], stdin="\n".join(kept) + "\n")
        else:
            run_tool([self.crontab, "-r"])
        return True

    def installed(self) -> bool:
        return without_ours(self.read_table())[1]
