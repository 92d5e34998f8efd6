"""OpenCode sessions: the SQLite database ``<data dir>/opencode.db`` (``opencode-<channel>.db`` for a
build of a channel other than latest, beta or prod), the data dir being ``$XDG_DATA_HOME/opencode``
or ``~/.local/share/opencode`` (docs/agents/opencode.md).

OpenCode keeps every session of every project in one database in WAL mode: a ``session`` row
(its ``directory`` is the cwd; ``parent_id`` names the session that started it through the
``task`` tool), ``message`` rows (``data``: JSON with ``role`` and, for a compaction summary,
``summary: true``) and their ``part`` rows (``data``: JSON of ``type`` ``text`` / ``tool`` /
``patch`` / ``compaction`` / ``file`` / ``reasoning`` / ``step-*``). The database is read whole:
copied with its write-ahead log into a private directory (again only when either file changed)
and opened read-only there, so nothing is ever written next to the person's database (a reader in
WAL mode writes to the ``-shm`` file).
Only the ``session``, ``message`` and ``part`` tables are read: the database also holds account
tokens and credentials.

Excluded sessions: sub-agent sessions (``parent_id`` set); ``opencode run`` sessions, which are
created with the run command's permission rules (``question``, ``plan_enter`` and ``plan_exit``
denied: it cannot ask a person anything), a mark no interactive session carries; sessions run in
our replay dirs. Turns that ``opencode run --continue`` / ``--session`` appends to an interactive
session carry no mark at all in the store (same message and part records as typed ones), so they
are counted as prompts.

Not user intent: ``synthetic`` or ``ignored`` text parts (what the harness writes, such as the note
that a ``!`` shell command ran), file and agent parts, and the user message that asks for a compaction
(a ``compaction`` part); the compaction summary is not a reply. The instruction files
(``AGENTS.md``) and the environment block go into the system prompt and never into the database.
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import re
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .. import paths
from .base import (
    MAX_PROMPT_CHARS,
    MAX_WHOLE_FILE_BYTES,
    DigestBuilder,
    clip,
    is_replay_dir,
    open_regular,
    WholeFileSource,
)

NAME = "opencode"
DATABASE = re.compile(r"opencode(?:-[A-Za-z0-9._-]{1,100})?\.db")
# The rules ``opencode run`` creates its sessions with: a headless run cannot answer a question.
RUN_DENIED = frozenset({"question", "plan_enter", "plan_exit"})
FILE_TOOLS = frozenset({"edit", "write", "multiedit", "patch"})
_PATCH_FILE = re.compile(r"\*\*\* (?:Add|Update|Delete) File: ([^\n]{1,1000})")
# A text part longer than this is cut before it reaches Python: ``clip`` keeps less of it anyway.
TEXT_CHARS = 4 * MAX_PROMPT_CHARS
PATCH_CHARS = 1024 * 1024  # of an ``apply_patch`` call, read for the names of the files it changes
COPY_ATTEMPTS = 3
MAX_READ_SECONDS = 300.0  # for the queries over one database
COPY_CHUNK = 1024 * 1024


def _stamp(path: str) -> tuple[int, int, int]:
    stat = os.stat(path)
    return (int(stat.st_ino), int(stat.st_size), int(stat.st_mtime_ns))


def _copy(source: str, target: str, limit: int) -> None:
    """Copy a regular file of at most ``limit`` bytes (``OSError`` otherwise)."""
    copied = 0
    with open_regular(source) as src, open(target, "wb") as dst:
        while chunk := src.read(COPY_CHUNK):
            copied += len(chunk)
            if copied > limit:
                raise OSError(errno.EFBIG, "larger than a whole file may be", source)
            dst.write(chunk)


@dataclass
class _PrivateCopy:
    directory: tempfile.TemporaryDirectory[str]
    database: str
    stamps: tuple[tuple[int, int, int], tuple[int, int, int] | None]


# (agent, database path) -> the newest private copy of it; each copy lives in a directory of its
# own, removed once no reader holds it, so a reader never sees its copy replaced underneath it.
_COPIES: dict[tuple[str, str], _PrivateCopy] = {}
_COPIES_LOCK = threading.Lock()


def _stamps(path: str) -> tuple[tuple[int, int, int], tuple[int, int, int] | None]:
    try:
        wal: tuple[int, int, int] | None = _stamp(path + "-wal")
    except FileNotFoundError:
        wal = None
    return _stamp(path), wal


def _private_copy(path: str, agent: str) -> _PrivateCopy:
    """A new private copy of the database and its log, with the stamps they had before copying.

    The log is copied before the database, and the copy is kept only if the database file did not
    change meanwhile (a checkpoint moves the log into it): then the copied log belongs to the
    copied database. The log may have grown during the copy; SQLite ignores a torn last frame, and
    the stamps taken before it no longer match the log, so the next reader copies again.
    """
    directory = tempfile.TemporaryDirectory(prefix=f"skillopt-{agent}-")
    copy = os.path.join(directory.name, f"{agent}.db")
    try:
        for attempt in range(COPY_ATTEMPTS):
            before = _stamps(path)
            try:
                _copy(path + "-wal", copy + "-wal", MAX_WHOLE_FILE_BYTES)
            except FileNotFoundError:
                if os.path.exists(copy + "-wal"):
                    os.remove(copy + "-wal")
            _copy(path, copy, MAX_WHOLE_FILE_BYTES)
            if _stamp(path) == before[0]:
                return _PrivateCopy(directory, copy, before)
            if attempt < COPY_ATTEMPTS - 1:
                time.sleep(0.2 * (attempt + 1))
        raise OSError(errno.EAGAIN, "the database kept changing while it was copied", path)
    except BaseException:
        directory.cleanup()
        raise


@contextmanager
def snapshot(path: str, agent: str = NAME) -> Iterator[sqlite3.Connection]:
    """The database as it is now, read-only, from a private copy of it and its write-ahead log.

    A copy is reused while the database and its log keep the inode, size and modification time
    they had when it was made: ``status`` and the harvest open the same stores several times, and
    an unchanged store need not be copied again. Any change to either file makes a new copy.
    ``agent`` names the private copy: other agents' SQLite stores (Cursor's) are read this way too.
    """
    key = (agent, os.path.abspath(path))
    # A pool worker ends with os._exit, which removes no temporary directory: it keeps no copy.
    keep = multiprocessing.parent_process() is None
    with _COPIES_LOCK:
        private = _COPIES.get(key) if keep else None
        if private is None or private.stamps != _stamps(path):
            private = _private_copy(path, agent)
            if keep:
                _COPIES[key] = private
    try:
        with _read_only(private.database, path) as connection:
            yield connection
    finally:
        if not keep:
            private.directory.cleanup()


@contextmanager
def _read_only(copy: str, path: str) -> Iterator[sqlite3.Connection]:
    try:
        connection = sqlite3.connect(f"file:{quote(copy)}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise OSError(errno.EIO, f"not a readable database: {exc}", path) from None
    deadline = time.monotonic() + MAX_READ_SECONDS
    # a query past the deadline is interrupted (sqlite3.OperationalError): a view defined to
    # never end cannot hold the harvest
    connection.set_progress_handler(lambda: time.monotonic() > deadline, 100_000)
    try:
        yield connection
    finally:
        connection.close()


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    """The columns of ``table`` when it is a table (not a view, whose reading could run anything)."""
    kind = connection.execute("SELECT type FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    if kind is None or kind[0] != "table":
        return set()
    return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}


def _json(column: str, path: str, kind: str = "text", limit: int | None = None) -> str:
    """The value at ``path`` when it is of JSON type ``kind``, NULL when it is absent (or the
    column is not JSON), 0 when it is of another type (the caller counts it). A ``CASE`` keeps
    ``json_type`` from failing the whole query on a value that is not JSON: SQLite evaluates only
    one branch of a ``CASE``, but both sides of an ``AND``. ``limit``: the characters of a string
    kept (the rest never reaches Python)."""
    value = f"json_type({column}, '{path}')"
    extract = f"json_extract({column}, '{path}')"
    if limit is not None:
        extract = f"substr({extract}, 1, {limit})"
    return (
        f"(CASE WHEN json_valid({column}) THEN CASE WHEN {value} IS NULL THEN NULL "
        f"WHEN {value} = '{kind}' THEN {extract} ELSE 0 END END)"
    )


def _is_true(column: str, path: str) -> str:
    return f"(CASE WHEN json_valid({column}) THEN coalesce(json_type({column}, '{path}') = 'true', 0) ELSE 0 END)"


def is_headless(permission: Any) -> bool:
    """Whether a session's ``permission`` column holds the rules ``opencode run`` creates it with."""
    if not isinstance(permission, str) or "plan_exit" not in permission:
        return False
    try:
        rules = json.loads(permission)
    except ValueError:
        return False
    if not isinstance(rules, list):
        return False
    denied = {
        rule.get("permission")
        for rule in rules
        if isinstance(rule, dict) and rule.get("action") == "deny" and rule.get("pattern") == "*"
    }
    return RUN_DENIED <= denied


def _when(value: Any) -> str | None:
    """A row's time (milliseconds since the epoch) as ISO text, for ``DigestBuilder.touch``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


class _Part:
    __slots__ = ("kind", "text", "hidden", "tool", "file", "skill", "patch", "files")

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.kind, self.text, self.hidden, self.tool, self.file, self.skill, self.patch, self.files = row


class _Message:
    __slots__ = ("id", "role", "summary", "time", "parent", "parts")

    def __init__(self, message_id: str, role: Any, summary: Any, when: Any, parent: Any) -> None:
        self.id, self.role, self.summary, self.time, self.parent = message_id, role, summary, when, parent
        self.parts: list[_Part] = []


def _sessions(connection: sqlite3.Connection, skipped: Counter[str]) -> list[tuple[Any, ...]] | None:
    columns = _columns(connection, "session")
    if not {"id", "directory"} <= columns:
        skipped["unknown_schema"] += 1
        return None
    wanted = ("id", "directory", "parent_id", "permission")
    select = ", ".join(name if name in columns else "NULL" for name in wanted)
    return connection.execute(f"SELECT {select} FROM session").fetchall()


def _messages(connection: sqlite3.Connection, skipped: Counter[str]) -> dict[str, list[_Message]] | None:
    """Every message with its parts, by session, in the order they were written."""
    if not {"id", "session_id", "time_created", "data"} <= _columns(connection, "message") or not {
        "id",
        "message_id",
        "data",
    } <= _columns(connection, "part"):
        skipped["unknown_schema"] += 1
        return None
    by_session: dict[str, list[_Message]] = {}
    by_id: dict[str, _Message] = {}
    rows = connection.execute(
        f"SELECT id, session_id, time_created, json_valid(data), {_json('data', '$.role')}, "
        f"{_is_true('data', '$.summary')}, {_json('data', '$.parentID')} "
        "FROM message ORDER BY session_id, time_created, id"
    )
    for message_id, session_id, when, valid, role, summary, parent in rows:
        if not valid:
            skipped["malformed_json"] += 1
            continue
        if not isinstance(message_id, str) or not isinstance(session_id, str):
            skipped["wrong_field_type"] += 1
            continue
        message = _Message(message_id, role, bool(summary), when, parent)
        by_session.setdefault(session_id, []).append(message)
        by_id[message_id] = message
    kind, name = _json("data", "$.type"), _json("data", "$.tool")
    rows = connection.execute(
        f"SELECT message_id, json_valid(data), {kind}, "
        f"CASE WHEN {kind} = 'text' THEN {_json('data', '$.text', limit=TEXT_CHARS)} END, "
        f"{_is_true('data', '$.synthetic')} OR {_is_true('data', '$.ignored')}, "
        f"CASE WHEN {kind} = 'tool' THEN {name} END, {_json('data', '$.state.input.filePath')}, "
        f"CASE WHEN {name} = 'skill' THEN {_json('data', '$.state.input.name')} END, "
        f"CASE WHEN {name} = 'apply_patch' THEN {_json('data', '$.state.input.patchText', limit=PATCH_CHARS)} END, "
        f"CASE WHEN {kind} = 'patch' THEN {_json('data', '$.files', 'array')} END "
        "FROM part ORDER BY message_id, id"
    )
    for row in rows:
        owner = by_id.get(row[0]) if isinstance(row[0], str) else None
        if owner is None:
            continue  # a part of a message skipped above, or of none
        if not row[1]:
            skipped["malformed_json"] += 1
            continue
        owner.parts.append(_Part(row[2:]))
    return by_session


def _session_digest(
    session_id: str, directory: str, path: str, messages: list[_Message], skipped: Counter[str]
) -> DigestBuilder:
    builder = DigestBuilder(source=NAME, session_id=session_id, path=path)
    builder.project = clip(directory, 4096)
    for message in by_turn(messages):
        builder.touch(_when(message.time))
        if message.role == "user":
            _user(builder, message, skipped)
        elif message.role == "assistant":
            _assistant(builder, message, skipped)
        else:
            skipped["wrong_field_type"] += 1
    return builder


def by_turn(messages: list[_Message]) -> list[_Message]:
    """Each user message followed by the assistant messages that answer it (their ``parentID``),
    everything else in the order written. For the sessions recorded the order of writing gives the
    same; the parent is what OpenCode itself says a reply answers, so it decides. (A prompt typed
    while the agent works is written when it is sent, and OpenCode parents the rest of the running
    turn to it.)
    """
    users = {m.id for m in messages if m.role == "user"}
    answers: dict[str, list[_Message]] = {}
    ordered: list[_Message] = []
    for message in messages:
        if message.role == "assistant" and isinstance(message.parent, str) and message.parent in users:
            answers.setdefault(message.parent, []).append(message)
        else:
            ordered.append(message)
    turns: list[_Message] = []
    for message in ordered:
        turns.append(message)
        turns.extend(answers.get(message.id, ()))
    return turns


def _texts(message: _Message, skipped: Counter[str]) -> list[str]:
    texts = []
    for part in message.parts:
        if part.kind != "text" or part.hidden:
            continue
        if not isinstance(part.text, str):
            skipped["wrong_field_type"] += 1
            continue
        if part.text.strip():
            texts.append(part.text.strip())
    return texts


def _user(builder: DigestBuilder, message: _Message, skipped: Counter[str]) -> None:
    if any(part.kind == "compaction" for part in message.parts):
        builder.close_turn()  # asks for a summary of the session so far: not a prompt
        return
    texts = _texts(message, skipped)
    if not texts:
        builder.close_turn()  # only attachments, or text the harness wrote
        return
    builder.add_prompt("\n".join(texts))


def _assistant(builder: DigestBuilder, message: _Message, skipped: Counter[str]) -> None:
    if message.summary:
        builder.close_turn()  # a compaction summary
        return
    if not builder.in_turn:
        return
    for part in message.parts:
        if part.kind == "tool":
            _tool(builder, part, skipped)
        elif part.kind == "patch":
            _patch_files(builder, part.files, skipped)
    builder.new_reply("\n".join(_texts(message, skipped)))


def _tool(builder: DigestBuilder, part: _Part, skipped: Counter[str]) -> None:
    if not isinstance(part.tool, str) or not part.tool:
        skipped["wrong_field_type"] += 1
        return
    builder.add_tool(part.tool)
    if part.tool == "skill" and isinstance(part.skill, str) and part.skill:
        builder.add_skill(part.skill)
    if part.tool in FILE_TOOLS and isinstance(part.file, str) and part.file:
        builder.add_file(part.file)
    if isinstance(part.patch, str):
        for match in _PATCH_FILE.finditer(part.patch):
            builder.add_file(match.group(1).strip())


def _patch_files(builder: DigestBuilder, files: Any, skipped: Counter[str]) -> None:
    """A ``patch`` part: the files a step changed (from OpenCode's snapshot of the worktree)."""
    if files is None:
        return
    if not isinstance(files, str):
        skipped["wrong_field_type"] += 1
        return
    try:
        names = json.loads(files)
    except ValueError:
        skipped["malformed_json"] += 1
        return
    for name in names if isinstance(names, list) else ():
        if isinstance(name, str) and name:
            builder.add_file(name)


def read_database(path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
    """Every main interactive session in the database at ``path`` -> (digests, excluded ids)."""
    digests: list[DigestBuilder] = []
    excluded: list[str] = []
    with snapshot(path) as connection:
        try:
            sessions = _sessions(connection, skipped)
            messages = _messages(connection, skipped) if sessions is not None else None
        except sqlite3.Error as exc:
            raise OSError(errno.EIO, f"not a readable database: {exc}", path) from None
    if sessions is None or messages is None:
        return [], []
    for session_id, directory, parent, permission in sessions:
        if not isinstance(session_id, str) or not session_id:
            skipped["wrong_field_type"] += 1
            continue
        reason = None
        if parent:
            reason = "subagent_thread"
        elif is_headless(permission):
            reason = "headless_session"
        elif not isinstance(directory, str) or not directory:
            reason = "wrong_field_type"
        elif is_replay_dir(directory):
            reason = "own_replay"
        if reason is not None:
            skipped[reason] += 1
            excluded.append(session_id)
            continue
        builder = _session_digest(session_id, directory, path, messages.get(session_id, []), skipped)
        if builder.has_content:
            digests.append(builder)
    return digests, excluded


class OpenCodeSource(WholeFileSource):
    name = NAME

    def default_home(self) -> Path:
        return paths.opencode_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        try:
            names = sorted(os.listdir(home))
        except FileNotFoundError:
            return
        except OSError:
            skipped["unreadable_dir"] += 1
            return
        for name in names:
            if DATABASE.fullmatch(name):
                yield home / name

    def read_whole(self, path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
        return read_database(path, skipped)

    def head_cwds(self, path: Path) -> set[str]:
        """The directories of the database's main interactive sessions (read from a private copy)."""
        try:
            if os.path.getsize(path) > MAX_WHOLE_FILE_BYTES:
                return set()
            with snapshot(str(path)) as connection:
                rows = _sessions(connection, Counter()) or []
        except (OSError, sqlite3.Error):
            return set()
        return {
            directory
            for _, directory, parent, permission in rows
            if isinstance(directory, str) and directory and not parent and not is_headless(permission)
        }
