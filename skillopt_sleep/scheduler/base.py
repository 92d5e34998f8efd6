"""What every OS mechanism shares: the job it installs, the protocol it implements, the marker
that identifies our entries, and the checks that keep control characters and secrets out of
anything written to the OS.

A mechanism (cron, systemd, launchd, schtasks) turns one ``Job`` into one per-user OS entry.
``plan`` says exactly what ``install`` would write and run (``schedule --print`` shows it and
changes nothing); ``uninstall`` removes only an entry that carries our marker.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from skillopt_sleep.errors import EXIT_SCHEDULER, EXIT_USAGE, UserError
from skillopt_sleep.redact import redact
from skillopt_sleep.sanitize import clean_text

SHELL = "/bin/sh"
MARKER = "skillopt-sleep:nightly"
MARKER_NOTE = f"{MARKER} (managed by `skillopt-sleep schedule`; remove with `skillopt-sleep unschedule`)"
NIGHTLY_VERB = "nightly"
TOOL_TIMEOUT = 30.0  # seconds; crontab / systemctl / launchctl / schtasks never take this long


@dataclass(frozen=True)
class Job:
    """One nightly run: at ``hour:minute`` local time, run ``argv`` (absolute interpreter first);
    the process's own stdout/stderr go to ``output_log`` where the mechanism can redirect them."""

    hour: int
    minute: int
    argv: tuple[str, ...]
    output_log: Path

    @property
    def at(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}"


def entry_command(job: Job) -> str:
    """The one shell command every Unix entry runs (cron as its line, systemd and launchd through
    ``/bin/sh -c``): create the output log's directory, then run the job with its stdout and
    stderr appended there.

    The shell opens the log, not the OS scheduler: cron, systemd's ``append:`` and launchd's
    ``StandardOutPath`` all fail before the job starts when the directory is missing (a fresh
    machine, a removed state directory), and leave no trace where ``status`` looks. Here the
    directory always exists when the redirection happens, and even an interpreter that is gone
    leaves its "not found" in the log, which the missed-night notice reads."""
    log = job.output_log
    run = " ".join(shlex.quote(arg) for arg in job.argv)
    return f"mkdir -p {shlex.quote(str(log.parent))} && exec {run} >>{shlex.quote(str(log))} 2>&1"


def runs_our_job(argv: list[str] | tuple[str, ...]) -> bool:
    """Whether an entry's argv is our nightly job: run directly (older entries) or through
    ``entry_command``."""
    if not isinstance(argv, (list, tuple)):
        return False
    return NIGHTLY_VERB in argv or any(f"skillopt_sleep {NIGHTLY_VERB}" in str(a) for a in argv)


@dataclass
class Artifact:
    """One thing an install writes: a file (``where`` is its path) or a crontab line."""

    where: str
    content: str


@dataclass
class Plan:
    """Everything ``install`` would do, in order: write the artifacts, then run the commands."""

    mechanism: str
    artifacts: list[Artifact] = field(default_factory=list)
    commands: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"via {self.mechanism}:"]
        for artifact in self.artifacts:
            lines.append(f"--- {artifact.where}")
            lines.extend(artifact.content.rstrip("\n").splitlines())
        if self.commands:
            lines.append("--- then run:")
            lines.extend("  " + " ".join(cmd) for cmd in self.commands)
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


class Mechanism(Protocol):
    name: str

    def plan(self, job: Job) -> Plan:
        """What ``install`` would write and run; no side effects."""

    def install(self, job: Job) -> Plan:
        """Install (or replace) our entry; returns the plan it carried out."""

    def uninstall(self) -> bool:
        """Remove our entry, keeping every foreign one; True when something was removed."""

    def installed(self) -> bool:
        """Whether our entry is present."""


def has_control_chars(value: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)


def refuse_control_chars(what: str, value: str) -> str:
    """``value`` unchanged, or a usage error when it holds a newline or other control character
    (it would split or corrupt a crontab line, a unit file or a plist)."""
    if has_control_chars(value):
        raise UserError(
            f"{what} contains a newline or control character ({value!r}); refusing to schedule it", EXIT_USAGE
        )
    return value


def refuse_secrets(plan: Plan) -> None:
    """Last check before anything reaches the OS: no artifact or command may hold a secret."""
    texts = [a.content for a in plan.artifacts] + [" ".join(c) for c in plan.commands]
    for text in texts:
        if redact(text) != text:
            raise UserError(
                f"refusing to write a {plan.mechanism} entry that would contain a "
                "secret; keep keys in the --env-file instead",
                EXIT_USAGE,
            )


def run_tool(argv: list[str], stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run an OS scheduler tool with a timeout; a missing tool or a failure is one clear line."""
    proc = _spawn(argv, input=stdin, text=True, encoding="utf-8", errors="replace")
    if check and proc.returncode != 0:
        raise tool_failure(argv, proc)
    return proc


def run_tool_bytes(
    argv: list[str], stdin: bytes | None = None, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """``run_tool`` for a tool whose input and output must pass through as exact bytes (a user's
    crontab: its line ends, encodings and control characters are the user's, not ours)."""
    proc = _spawn(argv, input=stdin)
    if check and proc.returncode != 0:
        raise tool_failure(argv, proc)
    return proc


def _spawn(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    try:
        return subprocess.run(argv, capture_output=True, timeout=TOOL_TIMEOUT, **kwargs)
    except FileNotFoundError:
        raise UserError(
            f"{argv[0]} not found on PATH; choose another mechanism (--via, or via in [schedule])", EXIT_SCHEDULER
        ) from None
    except subprocess.TimeoutExpired:
        raise UserError(f"{' '.join(argv)} did not finish within {TOOL_TIMEOUT:g}s", EXIT_SCHEDULER) from None
    except OSError as exc:
        raise UserError(f"cannot run {argv[0]}: {exc}", EXIT_SCHEDULER) from None


def tool_output(proc: subprocess.CompletedProcess[Any]) -> str:
    """What a tool printed (stderr, else stdout) as text, whether it was run for text or bytes."""
    out = proc.stderr or proc.stdout or ""
    return out.decode("utf-8", "replace") if isinstance(out, bytes) else out


def tool_failure(argv: list[str], proc: subprocess.CompletedProcess[Any]) -> UserError:
    """One line: the command, its exit code and the last line it printed."""
    lines = [line for line in tool_output(proc).splitlines() if line.strip()]
    detail = clean_text(lines[-1]).replace("\t", " ")[:200].strip() if lines else ""  # no colour codes
    return UserError(
        f"{' '.join(argv)} failed (exit {proc.returncode})" + (f": {detail}" if detail else ""), EXIT_SCHEDULER
    )
