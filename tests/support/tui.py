"""A CLI's TUI driven in tmux, and the waits on the fake model server behind it: what the
transcript recorders (``scripts/record_*.py``) and the real-CLI tests of the sources share."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Sized
from pathlib import Path
from typing import Protocol

TURN_TIMEOUT = 90.0


class Tmux:
    """One detached tmux session running a CLI in a fixed-size window."""

    def __init__(self, name: str, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.name = name
        assignments = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
        shell = f"cd {shlex.quote(str(cwd))} && exec env -i {assignments} {shlex.join(command)}"
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=10)
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", name, "-x", "150", "-y", "45", shell], check=True, timeout=10
        )

    def screen(self) -> str:
        out = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True, timeout=10
        )
        return out.stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run(
            ["tmux", "send-keys", "-t", self.name, *(["-l"] if literal else []), *keys], check=True, timeout=10
        )

    def type_line(self, text: str) -> None:
        """Type ``text``, wait until it shows (the TUIs treat a fast Enter as part of a paste), press Enter."""
        self.keys(text, literal=True)
        try:
            wait_until(f"{text[:30]!r} on screen", lambda: text[-20:] in self.screen().replace("\n", ""), 30)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; the screen:\n{self.screen()}") from None
        time.sleep(1.0)
        self.keys("Enter")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True, timeout=10).returncode == 0

    def kill(self) -> None:
        """End the session and every process the CLI started: some CLIs (Gemini CLI) relaunch
        themselves in a session of their own, which the hangup of a closed pane never reaches."""
        started = self._processes()
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True, timeout=10)
        for pid in started:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _processes(self) -> list[int]:
        """The pane's process and all its descendants, by the process table's parent links."""
        out = subprocess.run(
            ["tmux", "list-panes", "-t", self.name, "-F", "#{pane_pid}"], capture_output=True, text=True, timeout=10
        )
        found = [int(pid) for pid in out.stdout.split() if pid.isdigit()]
        table = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True, timeout=10).stdout
        children: dict[int, list[int]] = {}
        for line in table.splitlines():
            fields = line.split()
            if len(fields) == 2 and all(f.isdigit() for f in fields):
                children.setdefault(int(fields[1]), []).append(int(fields[0]))
        for pid in found:  # grows while it is walked: a breadth-first walk of the tree
            found.extend(c for c in children.get(pid, []) if c not in found)
        return found


def wait_until(what: str, check: Callable[..., bool], timeout: float = TURN_TIMEOUT) -> None:
    """Poll ``check()`` until it holds. It is called with no arguments; ``...`` lets a loop pass a
    lambda that binds its turn's values as defaults (``lambda b=before: ...``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


class Requested(Protocol):
    """A fake model server: the requests it has had so far (``tests/support/http_base.py``)."""

    @property
    def requests(self) -> Sized: ...


def settle(fake: Requested, quiet: float = 3.0, timeout: float = TURN_TIMEOUT) -> None:
    """Wait until the fake has had no request for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    count, since = len(fake.requests), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if len(fake.requests) != count:
            count, since = len(fake.requests), time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    raise TimeoutError("the CLI kept calling the model")


def files_containing(root: Path, needle: str) -> list[Path]:
    """The ``*.jsonl`` files under ``root`` whose text holds ``needle``."""
    found = []
    for path in root.rglob("*.jsonl"):
        try:
            if needle in path.read_text(encoding="utf-8", errors="replace"):
                found.append(path)
        except OSError:
            continue
    return found
