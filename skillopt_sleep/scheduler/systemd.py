"""A systemd user timer + service (Linux with a user session).

``Persistent=true`` makes systemd start a night the machine slept through as soon as it can. The
two unit files carry our marker; a foreign file with the same name is never overwritten or
removed. Without ``loginctl enable-linger`` the user manager (and so the timer) runs only while
the user is logged in.
"""

from __future__ import annotations

import os
from pathlib import Path

from skillopt_sleep.errors import EXIT_SCHEDULER, UserError
from skillopt_sleep.scheduler.base import MARKER, MARKER_NOTE, SHELL, Artifact, Job, Plan, entry_command, run_tool
from skillopt_sleep.files import atomic_write_text, read_regular_text

UNIT = "skillopt-sleep-nightly"
SYSTEMCTL = "systemctl"


def default_unit_dir() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def _exec_quote(arg: str) -> str:
    """One ExecStart= argument: double-quoted, with systemd's specifier (%) and variable ($)
    expansion escaped."""
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{escaped}"'


def service_text(job: Job) -> str:
    # Through the shell (base.entry_command), not StandardOutput=append:, which fails the unit
    # (status 209/STDOUT) when the log's directory is missing.
    argv = (SHELL, "-c", entry_command(job))
    return (
        f"# {MARKER_NOTE}\n"
        "[Unit]\nDescription=skillopt-sleep: the nightly run for every scheduled project\n\n"
        "[Service]\nType=oneshot\n"
        f"ExecStart={' '.join(_exec_quote(a) for a in argv)}\n"
    )


def timer_text(job: Job) -> str:
    return (
        f"# {MARKER_NOTE}\n"
        "[Unit]\nDescription=skillopt-sleep: nightly timer\n\n"
        f"[Timer]\nOnCalendar=*-*-* {job.at}:00\nPersistent=true\nUnit={UNIT}.service\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )


class Systemd:
    name = "systemd"

    def __init__(self, unit_dir: Path | None = None, systemctl: str = SYSTEMCTL):
        self.unit_dir = unit_dir or default_unit_dir()
        self.systemctl = systemctl

    @property
    def service(self) -> Path:
        return self.unit_dir / f"{UNIT}.service"

    @property
    def timer(self) -> Path:
        return self.unit_dir / f"{UNIT}.timer"

    def _ours(self, path: Path) -> bool:
        try:
            return MARKER in read_regular_text(path, 1024 * 1024, "replace")
        except OSError:
            return False

    def plan(self, job: Job) -> Plan:
        ctl = [self.systemctl, "--user"]
        return Plan(
            self.name,
            [Artifact(str(self.service), service_text(job)), Artifact(str(self.timer), timer_text(job))],
            [ctl + ["daemon-reload"], ctl + ["enable", "--now", f"{UNIT}.timer"]],
            [
                "Persistent=true: a night the machine slept through runs at the next boot or wake",
                "without `loginctl enable-linger $USER` the timer runs only while you are logged in",
            ],
        )

    def install(self, job: Job) -> Plan:
        plan = self.plan(job)
        for path in (self.service, self.timer):
            if path.exists() and not self._ours(path):
                raise UserError(f"{path} exists and is not ours; refusing to overwrite it", EXIT_SCHEDULER)
        self.unit_dir.mkdir(parents=True, exist_ok=True)
        for artifact in plan.artifacts:
            atomic_write_text(artifact.where, artifact.content)
        for command in plan.commands:
            run_tool(command)
        return plan

    def uninstall(self) -> bool:
        ours = [p for p in (self.timer, self.service) if p.exists() and self._ours(p)]
        if not ours:
            return False
        if self.timer in ours:
            run_tool([self.systemctl, "--user", "disable", "--now", f"{UNIT}.timer"], check=False)
        for path in ours:
            path.unlink()
        run_tool([self.systemctl, "--user", "daemon-reload"], check=False)
        return True

    def installed(self) -> bool:
        return self.timer.exists() and self._ours(self.timer)


def user_manager_running(systemctl: str = SYSTEMCTL) -> bool:
    """Whether a systemd user manager answers (``systemctl --user show-environment``)."""
    import shutil
    import subprocess

    if shutil.which(systemctl) is None:
        return False
    try:
        proc = subprocess.run([systemctl, "--user", "show-environment"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0
