"""Durable file primitives: atomic replace, fsynced JSONL appends, tolerant JSONL reads.

Everything here is written so that a crash at any moment leaves either the old bytes or the new
bytes on disk, never a mix, and so that readers survive a half-written last line. The temp files
of an interrupted write have one recognisable name (``.<name>.<12 hex>.tmp``, beside the target),
so the next run can remove exactly those and nothing else (``remove_temp_files``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any, BinaryIO

from skillopt_sleep.errors import EXIT_CONFIG
from skillopt_sleep.sanitize import utf8

TEMP_NAME = re.compile(r"^\.(?P<target>.+)\.[0-9a-f]{12}\.tmp$")


def fsync_dir(directory: Path) -> None:
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


def temp_name(target: Path) -> Path:
    """Where an atomic write of ``target`` stages its bytes (matched by ``TEMP_NAME``)."""
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` all at once: temp file in the same dir, fsync, rename.

    An existing file keeps its permission bits; a new one gets the usual umask-derived mode.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(target)
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
    fsync_dir(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """UTF-8, newlines written exactly as given (no platform translation)."""
    atomic_write_bytes(path, utf8(text))


def remove_temp_files(directory: Path, targets: set[str] | None = None) -> list[Path]:
    """Remove the temp files interrupted atomic writes left in ``directory`` (not recursive).

    Only call this while holding the lock every writer of that directory holds: a temp file of a
    write in progress looks exactly like debris. ``targets`` limits it to temp files of those
    names (for directories shared with the user's own files). Returns what was removed.
    """
    removed: list[Path] = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = TEMP_NAME.match(entry.name)
        if not match or (targets is not None and match.group("target") not in targets):
            continue
        try:
            if entry.is_file() and not entry.is_symlink():
                entry.unlink()
                removed.append(entry)
        except OSError:
            pass
    return removed


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` for files a person or a cloned repository may have planted: nesting too deep
    for the parser is a ValueError (malformed) like any other bad JSON, never a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# the most any reader takes from one file unless it asks for less: far above any document, report
# or journal a night writes, far below what exhausts memory
READ_LIMIT = 64 * 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFile(OSError):
    """A path that is there but is no regular file of a sane size (a FIFO, a device, a socket, a
    directory, or something larger than the reader's bound). An ``OSError``, so readers that skip
    damaged files skip this too; ``message`` and ``code`` make it one clear line like ``UserError``."""

    def __init__(self, path: str | os.PathLike[str], reason: str):
        super().__init__(errno.EINVAL, reason, str(path))
        self.message = f"cannot read {path}: {reason}"
        self.code = EXIT_CONFIG
        self.json_printed = False

    def __str__(self) -> str:
        return self.message


def open_regular(path: str | os.PathLike[str], *, nofollow: bool = False) -> BinaryIO:
    """Open ``path`` for binary reading only if it is a regular file, without ever blocking.

    ``O_NONBLOCK`` makes opening a FIFO return at once (it has no effect on a regular file's
    reads); the type is checked on the open descriptor, so a path swapped after it was found is
    caught too. ``nofollow`` refuses a symlink (``OSError``). Missing files raise
    ``FileNotFoundError`` as usual; anything that is not a regular file raises ``UnreadableFile``.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise UnreadableFile(path, "not a regular file (a directory)") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "a special file")
            raise UnreadableFile(path, f"not a regular file ({kind})")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int = READ_LIMIT, *, nofollow: bool = False) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (``open_regular``); a larger file
    raises ``UnreadableFile``."""
    with open_regular(path, nofollow=nofollow) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UnreadableFile(path, f"larger than {limit} bytes")
    return data


def read_regular_text(path: str | os.PathLike[str], limit: int = READ_LIMIT, errors: str = "strict") -> str:
    """``read_regular`` decoded as UTF-8 (a decoding failure is a ``ValueError``)."""
    return read_regular(path, limit).decode("utf-8", errors=errors)


def read_json(path: str | os.PathLike[str], limit: int = READ_LIMIT) -> Any:
    """``parse_json`` of a bounded regular file: ``OSError`` (incl. ``UnreadableFile``) or ``ValueError``."""
    return parse_json(read_regular_text(path, limit))


def read_bytes_or_none(path: str | os.PathLike[str], limit: int = READ_LIMIT) -> bytes | None:
    try:
        return read_regular(path, limit)
    except (FileNotFoundError, NotADirectoryError):  # a folder on the way is not one: no such file
        return None


def append_jsonl(path: str | os.PathLike[str], *objs: Any) -> None:
    """Append JSON lines in one write, flushed and fsynced.

    Several records go out in a single ``write`` so a killed process leaves all of them or none
    (short of a power cut, which at worst tears the last line; readers skip it). If a previous
    writer crashed mid-line, the new records start on a fresh line so only the torn one is lost.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(utf8(json.dumps(o, ensure_ascii=False, default=str)) + b"\n" for o in objs)
    flags = (
        os.O_RDWR
        | os.O_APPEND
        | os.O_CREAT
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_BINARY", 0)
        | getattr(os, "O_NOFOLLOW", 0)
    )
    try:
        fd = os.open(target, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or target.is_symlink():  # a journal never appends through a link
            raise UnreadableFile(target, "a link; refusing to append through it") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO, a device: no journal to append to
        os.close(fd)
        raise UnreadableFile(target, "not a regular file")
    with os.fdopen(fd, "ab+") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() > 0:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                data = b"\n" + data
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every JSON object in the file, skipping malformed, truncated or non-object lines."""
    try:
        raw = read_regular(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    records: list[dict[str, Any]] = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            value = parse_json(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records
