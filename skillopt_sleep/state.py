"""Persisted state: atomic writes, JSONL logs, the per-project night lock, history, refusals.

Everything here is written so that a crash at any moment leaves either the old bytes or the new
bytes on disk, never a mix, and so that readers survive a half-written last line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_sleep.errors import EXIT_LOCKED, UserError
from skillopt_sleep.paths import user_dirs
from skillopt_sleep.types import Edit, NightReport, format_time, parse_time

DEFAULT_LOCK_MAX_AGE = 6 * 3600.0  # seconds; no night legitimately runs longer
_BREAKER_MAX_AGE = 60.0  # a takeover marker older than this was left by a crash mid-takeover


# --------------------------------------------------------------------------- atomic files


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable. Not possible on every platform (Windows); best effort there."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` all at once: temp file in the same dir, fsync, rename.

    An existing file keeps its permission bits; a new one gets the usual umask-derived mode.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        except FileNotFoundError:
            pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """UTF-8, newlines written exactly as given (no platform translation)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bytes_or_none(path: str | os.PathLike[str]) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None


# --------------------------------------------------------------------------- JSONL


def append_jsonl(path: str | os.PathLike[str], obj: Any) -> None:
    """Append one JSON line, flushed and fsynced.

    If a previous writer crashed mid-line, the new record starts on a fresh line so that only the
    torn record is lost.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8") + b"\n"
    with open(target, "ab+") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() > 0:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = b"\n" + line
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every JSON object in the file, skipping malformed, truncated or non-object lines."""
    try:
        raw = Path(path).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return []
    records: list[dict[str, Any]] = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


# --------------------------------------------------------------------------- night lock


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (True when we cannot tell)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill(pid, 0) would terminate the process on Windows
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return kernel32.GetLastError() != 87  # ERROR_INVALID_PARAMETER: no such process
        try:
            code = ctypes.c_ulong()
            if kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return code.value == 259  # STILL_ACTIVE
            return True
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists but belongs to someone else
        return True
    return True


def read_lock(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The holder recorded in a lock file, ``{}`` when unreadable, None when there is no lock."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class NightLock:
    """One night per project at a time.

    The lock is a file created with ``O_CREAT | O_EXCL`` holding pid, hostname and start time. A
    lock is stale when its process is dead on this host, or it is older than ``max_age``; a stale
    lock is taken over. Takeover is serialised by a second ``O_EXCL`` marker file, and the stale
    lock is only removed if it is still the very one we judged stale.
    """

    def __init__(self, path: str | os.PathLike[str], max_age: float = DEFAULT_LOCK_MAX_AGE):
        self.path = Path(path)
        self.max_age = max_age
        self.token = secrets.token_hex(8)
        self.held = False

    def __enter__(self) -> NightLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(5):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = read_lock(self.path)
                if holder is None:
                    continue  # released between our two calls: try again
                if not self._is_stale(holder):
                    raise UserError(self._held_message(holder), EXIT_LOCKED) from None
                self._break(holder)
                continue
            info = {
                "pid": os.getpid(),
                "hostname": socket.gethostname(),
                "started": format_time(datetime.now(timezone.utc)),
                "token": self.token,
            }
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(info))
                fh.flush()
                os.fsync(fh.fileno())
            self.held = True
            return
        raise UserError(
            f"could not take the night lock {self.path}: other nights keep competing for it",
            EXIT_LOCKED,
        )

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        holder = read_lock(self.path)
        if holder and holder.get("token") == self.token:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def _age(self, holder: dict[str, Any]) -> float:
        started = parse_time(holder.get("started"))
        if started is not None:
            return (datetime.now(timezone.utc) - started).total_seconds()
        try:
            return time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def _is_stale(self, holder: dict[str, Any]) -> bool:
        age = self._age(holder)
        if age > self.max_age:
            return True
        if not holder:
            # Unreadable: a crash between creating and writing, or a writer mid-write right now.
            return age > _BREAKER_MAX_AGE
        pid = holder.get("pid")
        if holder.get("hostname") == socket.gethostname() and isinstance(pid, int):
            return not _pid_alive(pid)
        return False

    def _break(self, judged: dict[str, Any]) -> None:
        breaker = self.path.with_name(self.path.name + ".break")
        try:
            fd = os.open(breaker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                if time.time() - breaker.stat().st_mtime > _BREAKER_MAX_AGE:
                    breaker.unlink()
            except FileNotFoundError:
                pass
            time.sleep(0.05)
            return
        os.close(fd)
        try:
            if read_lock(self.path) == judged:
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass
        finally:
            try:
                breaker.unlink()
            except FileNotFoundError:
                pass

    def _held_message(self, holder: dict[str, Any]) -> str:
        if not holder:
            who = "an unidentified process (the lock file is unreadable)"
        else:
            who = (
                f"pid {holder.get('pid', '?')} on {holder.get('hostname', '?')}, "
                f"started {holder.get('started', '?')}"
            )
        return (
            f"another night is running for this project ({who}); lock file {self.path}. "
            "If no night is running, delete that file."
        )


# --------------------------------------------------------------------------- night history


def _project_key(project: str | os.PathLike[str]) -> str:
    return str(Path(project).expanduser().resolve())


def summarize_night(report: NightReport) -> dict[str, Any]:
    """The compact per-night record kept in the history."""
    return {
        "night_id": report.night_id,
        "project": _project_key(report.project) if report.project else "",
        "mode": report.mode,
        "status": report.status,
        "started": format_time(report.started),
        "finished": format_time(report.finished),
        "baseline": report.baseline,
        "candidate": report.candidate,
        "test_baseline": report.test_baseline,
        "test_candidate": report.test_candidate,
        "n_sessions": report.n_sessions,
        "n_tasks": report.n_tasks,
        "n_accepted": len(report.accepted_edits),
        "n_rejected": len(report.rejected_edits),
        "calls": dict(report.calls),
        "usage": report.usage.to_dict(),
        "staging_dir": report.staging_dir,
        "simulated": report.simulated,
    }


def night_score(night: dict[str, Any]) -> float | None:
    """The val score of the documents a night left staged (a history entry): candidate when an
    edit was accepted, else the baseline."""
    if night.get("n_accepted") and night.get("candidate") is not None:
        return night["candidate"]
    return night.get("baseline")


class History:
    """One JSONL line per night, across projects, in the user state dir."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else user_dirs().history

    def record(self, report: NightReport) -> dict[str, Any]:
        summary = summarize_night(report)
        append_jsonl(self.path, summary)
        return summary

    def nights(self, project: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
        """Recorded nights, oldest first; only ``project``'s when given."""
        entries = read_jsonl(self.path)
        if project is None:
            return entries
        key = _project_key(project)
        return [e for e in entries if isinstance(e.get("project"), str) and e["project"] == key]


# --------------------------------------------------------------------------- refused edits

_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


def edit_key(edit: Edit) -> str:
    """Identity of a rule for "was this refused before": target + op + normalised text.

    Case, spacing, a leading list bullet and trailing punctuation do not make a rule new.
    """
    text = edit.anchor if edit.op == "delete" and not edit.content else edit.content
    norm = " ".join(text.casefold().split())
    norm = _BULLET.sub("", norm).rstrip(" .;:!")
    return sha256_bytes(f"{edit.target}\0{edit.op}\0{norm}".encode())


class RejectedLedger:
    """Edits the gate refused, so the optimizer is not offered the same rule night after night."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else user_dirs().rejected_ledger
        self._keys: set[tuple[str, str]] | None = None
        self._stamp: tuple[int, int] | None = None

    def _current_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_size, st.st_mtime_ns)

    def _load(self) -> set[tuple[str, str]]:
        stamp = self._current_stamp()
        if self._keys is None or stamp != self._stamp:
            self._keys = {
                (str(e.get("project")), str(e.get("key")))
                for e in read_jsonl(self.path)
                if e.get("key")
            }
            self._stamp = stamp
        return self._keys

    def add(
        self, project: str | os.PathLike[str], edit: Edit, reasons: list[str], night_id: str
    ) -> None:
        entry = {
            "project": _project_key(project),
            "key": edit_key(edit),
            "night_id": night_id,
            "at": format_time(datetime.now(timezone.utc)),
            "edit": edit.to_dict(),
            "reasons": list(reasons),
        }
        append_jsonl(self.path, entry)
        self._load().add((entry["project"], entry["key"]))
        self._stamp = self._current_stamp()

    def contains(self, project: str | os.PathLike[str], edit: Edit) -> bool:
        return (_project_key(project), edit_key(edit)) in self._load()

    def entries(self, project: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
        entries = read_jsonl(self.path)
        if project is None:
            return entries
        key = _project_key(project)
        return [e for e in entries if e.get("project") == key]
