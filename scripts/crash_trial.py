"""One trial of ``bench_crash.py``: a throwaway home and project (the bench's own key shared into
it, so what the bench stages in-process is a proposal to the trial's commands), the engine's
commands run in it, and a command launched — plainly, or under strace with every fsync slowed —
and killed with SIGKILL."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillopt_sleep.staging import adoption_journal as journal  # noqa: E402
from skillopt_sleep.staging.stage import StagedFile, stage  # noqa: E402
from skillopt_sleep.store.state_key import KEY_FILE, share_key, state_key  # noqa: E402
from skillopt_sleep.types import NightReport  # noqa: E402

MEMORY_OLD = b"# Project rules\n\nKeep it short.\n"
MEMORY_NEW = MEMORY_OLD + (
    b"\n<!-- skillopt-sleep:learned:start -->\n- Use conventional commits.\n<!-- skillopt-sleep:learned:end -->\n"
)
SKILL_NEW = b"---\nname: skillopt-sleep-learned\ndescription: learned rules\n---\n- rule\n"
FSYNC_DELAY_US = 200_000
COMMAND_TIMEOUT = 120


def give_key(home: Path) -> None:
    """The bench's own key in a trial's home, so what the bench stages in-process (sealed with it)
    is a proposal to the trial's commands."""
    key, problem = state_key()
    if key is None:
        raise SystemExit(f"bench_crash: no key to seal proposals with ({problem})")
    share_key(key, home / "state" / "keys" / KEY_FILE)


@dataclass
class Trial:
    directory: Path
    home: Path
    project: Path
    tmp: Path

    @classmethod
    def make(cls) -> Trial:
        directory = Path(tempfile.mkdtemp(prefix="bench-crash-"))
        trial = cls(directory, directory / "home", directory / "proj", directory / "tmp")
        for path in (trial.home, trial.project, trial.tmp):
            path.mkdir()
        (trial.project / "CLAUDE.md").write_bytes(MEMORY_OLD)
        give_key(trial.home)
        return trial

    @property
    def skill(self) -> Path:
        return self.project / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"

    def env(self, pause: float | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_SLEEP_")}
        env.update(SKILLOPT_SLEEP_HOME=str(self.home), TMPDIR=str(self.tmp), PYTHONPATH=str(ROOT))
        env.pop(journal.PAUSE_ENV, None)
        if pause is not None:
            env[journal.PAUSE_ENV] = f"{pause:.3f}"
        return env

    def cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "skillopt_sleep", *args, "--project", str(self.project)]

    def run(self, *args: str) -> tuple[int, str, str]:
        proc = subprocess.run(self.cli(*args), env=self.env(), capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        return proc.returncode, proc.stdout, proc.stderr

    def stage_two_files(self, night_id: str, memory_new: bytes = MEMORY_NEW) -> None:
        report = NightReport(night_id=night_id, project=str(self.project), mode="run", status="staged")
        stage(
            self.project,
            report,
            [
                StagedFile("memory", self.project / "CLAUDE.md", MEMORY_OLD, memory_new),
                StagedFile("skill", self.skill, None, SKILL_NEW),
            ],
        )

    def cleanup(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


# --------------------------------------------------------------------------- launching and killing


def launch(trial: Trial, args: list[str], mode: str, pause: float | None) -> tuple[subprocess.Popen, int]:
    """Start a command; returns the process and the pid to kill (the python, even under strace)."""
    command = trial.cli(*args)
    if mode != "strace":
        proc = subprocess.Popen(command, env=trial.env(pause), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return proc, proc.pid
    pid_file = trial.directory / "pid"
    pid_file.unlink(missing_ok=True)
    wrapped = [
        "strace",
        "-f",
        "-qq",
        "-o",
        "/dev/null",
        "-e",
        "trace=fsync",
        "-e",
        f"inject=fsync:delay_exit={FSYNC_DELAY_US}",
        "sh",
        "-c",
        'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"',
        str(pid_file),
        *command,
    ]
    proc = subprocess.Popen(wrapped, env=trial.env(pause), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not pid_file.exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("strace wrapper did not start")
        time.sleep(0.002)
    return proc, int(pid_file.read_text())


def run_killed(trial: Trial, args: list[str], mode: str, pause: float | None, after: float, once: Any = None) -> bool:
    """Run a command and SIGKILL it ``after`` seconds in (counted from when ``once()`` first
    holds, if given); True when it had already finished."""
    proc, pid = launch(trial, args, mode, pause)
    started = time.monotonic()
    while once is not None and not once():
        if proc.poll() is not None:
            return True
        if time.monotonic() - started > COMMAND_TIMEOUT:
            break
        time.sleep(0.001)
    started = time.monotonic()
    while time.monotonic() - started < after:
        if proc.poll() is not None:
            return True
        time.sleep(0.001)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=COMMAND_TIMEOUT)
    return False
