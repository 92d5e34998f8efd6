"""Locks held by the operating system, not judged by heuristics.

``ProjectLock`` is the one lock per project that a night, an adoption and a revert all take. It is
an OS file lock (``fcntl.flock`` / ``msvcrt.locking``, through the well-kept ``filelock`` library)
on ``<project>/.skillopt-sleep/night.lock``, held on an open file for the process's lifetime: the
kernel releases it when the process exits or is killed, so a crash never leaves a project stuck and
no pid, hostname or age is ever used to decide whether a lock is stale.

Who holds the lock (pid, host, what, since when) is written beside it, only to name the holder
when someone else is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from skillopt_sleep.errors import EXIT_LOCKED, UserError
from skillopt_sleep.files import atomic_write_text, read_json
from skillopt_sleep.types import format_time

# A second process waits this long before giving up: long enough that a momentary holder (status
# probing the lock, an adopt finishing) never makes anyone fail, short enough to never hang.
DEFAULT_WAIT = 2.0


def holder_path(lock_path: Path) -> Path:
    return lock_path.with_name(lock_path.name + ".holder.json")


def _read_holder(lock_path: Path) -> dict[str, Any]:
    try:
        value = read_json(holder_path(lock_path), 1024 * 1024)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def describe_holder(holder: dict[str, Any]) -> str:
    """``night 2026…-ab12 (pid 4242 on host, since 2026-…)``, or a generic phrase when unknown."""
    if not holder.get("pid"):
        return "another skillopt-sleep process"
    what = str(holder.get("purpose") or "process")
    if holder.get("night_id"):
        what += f" {holder['night_id']}"
    return (
        f"another {what} (pid {holder.get('pid')} on {holder.get('hostname', '?')}, since {holder.get('started', '?')})"
    )


class ProjectLock:
    """One night, adopt or revert per project at a time; see the module docstring."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        purpose: str = "night",
        night_id: str | None = None,
        wait: float = DEFAULT_WAIT,
    ):
        self.path = Path(path)
        self.purpose = purpose
        self.night_id = night_id
        self.wait = wait
        self._lock: FileLock | None = None

    @property
    def held(self) -> bool:
        return self._lock is not None

    def __enter__(self) -> ProjectLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        if self._lock is not None:
            raise RuntimeError("ProjectLock is not reentrant")
        deadline = time.monotonic() + self.wait
        while True:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(self.path), timeout=max(0.0, deadline - time.monotonic()))
            try:
                lock.acquire()
                break
            except Timeout:
                raise UserError(
                    f"{describe_holder(_read_holder(self.path))} holds this project's lock "
                    f"({self.path}); try again when it has finished",
                    EXIT_LOCKED,
                ) from None
            except FileNotFoundError:
                # A refused night removed the folder it had made (footprint.py) while we waited:
                # make it again and go on waiting for what is left of the wait.
                if time.monotonic() >= deadline:
                    raise UserError(
                        f"this project's lock ({self.path}) kept disappearing; try again", EXIT_LOCKED
                    ) from None
        self._lock = lock
        try:
            atomic_write_text(
                holder_path(self.path),
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "hostname": socket.gethostname(),
                        "purpose": self.purpose,
                        "night_id": self.night_id,
                        "started": format_time(datetime.now(timezone.utc)),
                    }
                )
                + "\n",
            )
        except OSError:
            pass  # the holder note only improves a message; the lock itself is held

    def release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is None:
            return
        with contextlib.suppress(OSError):
            holder_path(self.path).unlink()
        lock.release()


def lock_holder(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Who holds the lock at ``path`` (``{}`` when unknown), or None when nobody does.

    Asks the OS with one non-blocking attempt (released at once), so it is never fooled by a
    holder note a killed process left behind. Creates nothing when there is no lock file.
    """
    lock_path = Path(path)
    if not lock_path.exists():
        return None
    probe = FileLock(str(lock_path), timeout=0)
    try:
        probe.acquire()
    except Timeout:
        return _read_holder(lock_path)
    except OSError:
        return None
    probe.release()
    return None


@contextlib.contextmanager
def exclusive(path: str | os.PathLike[str], wait: float = 120.0) -> Iterator[None]:
    """Hold an OS lock on ``path`` for a short critical section (waits at most ``wait`` s)."""
    lock_path = Path(path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_path), timeout=wait)
    try:
        lock.acquire()
    except Timeout:
        raise UserError(f"timed out after {wait:.0f} s waiting for the lock {lock_path}", EXIT_LOCKED) from None
    try:
        yield
    finally:
        lock.release()
