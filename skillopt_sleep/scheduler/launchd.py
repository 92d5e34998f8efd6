"""A launchd LaunchAgent (macOS): ``~/Library/LaunchAgents/<label>.plist`` loaded into the
user's GUI domain.

launchd's ``StartCalendarInterval`` starts a job whose time passed while the Mac slept as soon as
it wakes (a night the Mac was powered off through is not replayed; the next CLI use notices it).
Our plist is identified by its label and our nightly verb in ``ProgramArguments``; a foreign plist
with our label is never overwritten.
"""

from __future__ import annotations

import os
import plistlib
from pathlib import Path

from skillopt_sleep.errors import EXIT_SCHEDULER, UserError
from skillopt_sleep.scheduler.base import SHELL, Artifact, Job, Plan, entry_command, run_tool, runs_our_job
from skillopt_sleep.files import atomic_write_bytes, read_regular

LABEL = "com.skillopt-sleep.nightly"
LAUNCHCTL = "launchctl"


def plist_bytes(job: Job) -> bytes:
    # No StandardOutPath: launchd opens it before the job starts, and a missing directory
    # stops the job there (exit 78). The shell appends to the log instead (base.entry_command).
    return plistlib.dumps(
        {
            "Label": LABEL,
            "ProgramArguments": [SHELL, "-c", entry_command(job)],
            "StartCalendarInterval": {"Hour": job.hour, "Minute": job.minute},
            "RunAtLoad": False,
            "ProcessType": "Background",
        }
    )


class Launchd:
    name = "launchd"

    def __init__(self, agents_dir: Path | None = None, uid: int | None = None, launchctl: str = LAUNCHCTL):
        self.agents_dir = agents_dir or Path.home() / "Library" / "LaunchAgents"
        self.uid = uid if uid is not None else (os.getuid() if hasattr(os, "getuid") else 0)
        self.launchctl = launchctl

    @property
    def plist(self) -> Path:
        return self.agents_dir / f"{LABEL}.plist"

    @property
    def domain(self) -> str:
        return f"gui/{self.uid}"

    def _ours(self) -> bool:
        try:
            data = plistlib.loads(read_regular(self.plist, 1024 * 1024))
        except (OSError, ValueError, plistlib.InvalidFileException):
            return False
        return (
            isinstance(data, dict) and data.get("Label") == LABEL and runs_our_job(data.get("ProgramArguments") or [])
        )

    def plan(self, job: Job) -> Plan:
        return Plan(
            self.name,
            [Artifact(str(self.plist), plist_bytes(job).decode("utf-8"))],
            [
                [self.launchctl, "bootout", f"{self.domain}/{LABEL}"],
                [self.launchctl, "bootstrap", self.domain, str(self.plist)],
            ],
            ["a night the Mac slept through starts when it wakes"],
        )

    def install(self, job: Job) -> Plan:
        plan = self.plan(job)
        if self.plist.exists() and not self._ours():
            raise UserError(f"{self.plist} exists and is not ours; refusing to overwrite it", EXIT_SCHEDULER)
        self.agents_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.plist, plist_bytes(job))
        bootout, bootstrap = plan.commands
        run_tool(bootout, check=False)  # not loaded yet is fine
        run_tool(bootstrap)
        return plan

    def uninstall(self) -> bool:
        if not self._ours():
            return False
        run_tool([self.launchctl, "bootout", f"{self.domain}/{LABEL}"], check=False)
        self.plist.unlink()
        return True

    def installed(self) -> bool:
        return self._ours()
