"""The Cursor CLI's chats (``cursor-agent``, ``agent``): one SQLite store per chat under its config
dir, ``<home>/chats/<workspace hash>/<chat id>/store.db`` (``docs/agents/cursor.md``; from the
documented format, not recorded: no store written by the CLI was recorded for it).

A store has two tables:

- ``meta`` (``key``, ``value``): the row ``"0"`` holds the chat's metadata as hex-encoded JSON —
  ``agentId`` (the chat id), ``latestRootBlobId``, ``name``, ``mode``, ``createdAt``
  (milliseconds), ``lastUsedModel`` and a ``blobEncryptionKey``, which is never read.
- ``blobs`` (``id``, ``data``): content-addressed blobs (``id`` is the SHA-256 of ``data``). The
  root blob (``latestRootBlobId``) is a protobuf message whose repeated field 1 holds the ids of the
  chat's message blobs in order (32 raw bytes each) and whose field 9 is the workspace as a
  ``file://`` URI. A message blob is JSON, ``{"role", "content"}`` with ``role`` ``system`` /
  ``user`` / ``assistant`` / ``tool`` and ``content`` text or ``[{"type": "text" | "reasoning" |
  "tool-call" | "tool-result", …}]``.

A typed prompt is a ``user`` message's ``<user_query>…</user_query>``; the CLI sends the same
message blob again around tool calls, so a message id is read once. ``user`` messages that are only
context (``<user_info>``, attached files, rules) and ``system`` messages are not prompts. Newer
builds write ``meta.json`` beside the store (``cwd``, ``updatedAtMs``, ``isSubagent``): a chat it
marks as a sub-agent's is left out. The workspace hash is the MD5 of the workspace path: a chat
whose own store names no workspace takes the ``cwd`` of a sibling chat whose path hashes to its
directory's name. No time is stored per message: a chat spans its ``createdAt`` to its
``updatedAtMs`` (else the store's last write).

Each store is copied with its write-ahead log into a private directory and opened read-only there
(``opencode.snapshot``); a symlinked or special file is refused, and every blob read is bounded.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import sqlite3
import stat as stat_module
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import msgspec

from .. import paths
from ..files import open_regular
from .base import DigestBuilder, as_str, clip, is_replay_dir, WholeFileSource
from .cursor import _tool_file
from .decode import decode_record
from .opencode import _columns, snapshot
from .workspace_storage import file_uri_path, millis, unwrap

NAME = "cursor-cli"
CHATS = "chats"
STORE = "store.db"
META_FILE = "meta.json"
MAX_META_FILE_BYTES = 64 * 1024
MAX_META_ROW_CHARS = 256 * 1024  # of the hex text of the ``meta`` row
MAX_BLOB_BYTES = 8 * 1024 * 1024  # a larger blob is skipped (counted), never read
MAX_MESSAGES = 20_000  # message ids read from one root blob; the rest are counted
ROOT_MESSAGES, ROOT_WORKSPACE = 1, 9  # root blob fields
BLOB_ID_BYTES = 32
# What the CLI puts around a typed prompt (``<user_query>``) or sends as a message of its own.
INJECTED_TAGS = (
    "<user_info>",
    "<attached_files>",
    "<rules>",
    "<project_layout>",
    "<additional_data>",
    "<system_reminder>",
    "<git_status>",
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_HASH_DIR = re.compile(r"[0-9a-f]{32}")


class _Meta(TypedDict, total=False):
    agentId: Any
    latestRootBlobId: Any
    createdAt: Any


class _SideMeta(TypedDict, total=False):
    cwd: Any
    updatedAtMs: Any
    isSubagent: Any


class _Block(TypedDict, total=False):
    type: Any
    text: Any
    toolName: Any
    args: Any


class _Message(TypedDict, total=False):
    role: Any
    content: Any


_META = msgspec.json.Decoder(_Meta)
_SIDE_META = msgspec.json.Decoder(_SideMeta)
_MESSAGE = msgspec.json.Decoder(_Message)


def workspace_hash(path: str) -> str:
    """The name of the directory the CLI keeps a workspace's chats in: the MD5 of its path."""
    return hashlib.md5(path.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


# -- the files beside the store ---------------------------------------------------------------------


def side_meta(chat_dir: Path, skipped: Counter[str]) -> dict[str, Any]:
    """The chat's ``meta.json`` ({} when there is none; counted when it is not what it should be)."""
    try:
        with open_regular(chat_dir / META_FILE, nofollow=True) as handle:
            data = handle.read(MAX_META_FILE_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError:
        skipped["unreadable_file"] += 1
        return {}
    if len(data) > MAX_META_FILE_BYTES:
        skipped["whole_file_too_large"] += 1
        return {}
    status, value = decode_record(data.strip(), _SIDE_META)
    if status != "ok":
        skipped[status] += 1
        return {}
    return value


def _absolute(cwd: Any) -> str:
    return cwd if isinstance(cwd, str) and os.path.isabs(cwd) and "\x00" not in cwd else ""


def sibling_folder(chat_dir: Path, skipped: Counter[str]) -> str:
    """The ``cwd`` of another chat of the same workspace directory whose path hashes to its name."""
    hash_dir = chat_dir.parent
    if not _HASH_DIR.fullmatch(hash_dir.name):
        return ""
    try:
        with os.scandir(hash_dir) as entries:
            siblings = sorted(e.name for e in entries if e.name != chat_dir.name and e.is_dir(follow_symlinks=False))
    except OSError:
        return ""
    for name in siblings:
        cwd = _absolute(side_meta(hash_dir / name, Counter()).get("cwd"))
        if cwd and workspace_hash(cwd) == hash_dir.name:
            return cwd
    return ""


# -- the store --------------------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        try:
            return value.decode("ascii")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def store_meta(connection: sqlite3.Connection, skipped: Counter[str]) -> dict[str, Any] | None:
    """The ``meta`` row ``"0"``: hex text of a JSON object (None, counted, when it is not)."""
    row = connection.execute(
        "SELECT CASE WHEN length(value) <= ? THEN value END FROM meta WHERE key = '0'", (MAX_META_ROW_CHARS,)
    ).fetchone()
    if row is None or row[0] is None:
        skipped["no_chat_metadata"] += 1
        return None
    text = _text(row[0])
    try:
        data = bytes.fromhex(text) if text is not None else None
    except ValueError:
        data = None
    if data is None:
        skipped["wrong_field_type"] += 1
        return None
    status, value = decode_record(data, _META)
    if status != "ok":
        skipped[status] += 1
        return None
    return value


def _blob(connection: sqlite3.Connection, blob_id: str, skipped: Counter[str]) -> bytes | None:
    row = connection.execute(
        "SELECT length(data), CASE WHEN length(data) <= ? THEN data END FROM blobs WHERE id = ?",
        (MAX_BLOB_BYTES, blob_id),
    ).fetchone()
    if row is None:
        skipped["missing_blob"] += 1
        return None
    if row[1] is None:
        skipped["oversized_blob" if row[0] else "missing_blob"] += 1
        return None
    data = row[1]
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return data if isinstance(data, bytes) else None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while at < len(data) and shift < 64:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
    raise ValueError("truncated varint")


def root_fields(data: bytes) -> tuple[list[str], str]:
    """The message blob ids (field 1, in order) and the workspace URI (field 9) of a root blob.
    ``ValueError`` when it is not a protobuf message."""
    ids: list[str] = []
    workspace = ""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            length, at = _varint(data, at)
            value = data[at : at + length]
            at += length
            if field == ROOT_MESSAGES and length == BLOB_ID_BYTES:
                ids.append(value.hex())
            elif field == ROOT_WORKSPACE and not workspace:
                workspace = value.decode("utf-8", "replace")
        else:
            raise ValueError(f"wire type {wire}")
        if at > len(data):
            raise ValueError("truncated field")
    return ids, workspace


def _blocks(content: Any, skipped: Counter[str]) -> list[dict[str, Any]] | None:
    """A message's content as blocks (text alone is one ``text`` block); None (counted) when it is
    neither."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        blocks = [block for block in content if isinstance(block, dict)]
        if len(blocks) != len(content):
            skipped["wrong_field_type"] += 1
        return blocks
    skipped["wrong_field_type"] += 1
    return None


def _joined(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(text for b in blocks if b.get("type") == "text" and (text := as_str(b.get("text"))))


def _message(builder: DigestBuilder, message: dict[str, Any], skipped: Counter[str]) -> None:
    role = message.get("role")
    if role not in ("user", "assistant"):
        if role not in ("system", "tool"):
            skipped["wrong_field_type"] += 1
        return
    blocks = _blocks(message.get("content"), skipped)
    if blocks is None:
        return  # a message of another shape: neither a prompt nor a reply
    if role == "user":
        typed = unwrap(_joined(blocks), "user_query", INJECTED_TAGS)
        if not typed:
            builder.close_turn()
            if typed is None:
                skipped["injected_context"] += 1
            return
        builder.add_prompt(typed)
    else:
        if not builder.new_reply(_THINK.sub("", _joined(blocks)).strip()):
            return
        for block in blocks:
            name = as_str(block.get("toolName")) if block.get("type") == "tool-call" else None
            if name:
                builder.add_tool(name)
                target = _tool_file({"params": block.get("args")})  # the editor's argument names
                if target:
                    builder.add_file(target)


def _last_write(path: str) -> str | None:
    """When the store (or its write-ahead log) was last written, as ISO text."""
    times = []
    for name in (path, path + "-wal"):
        try:
            times.append(os.stat(name).st_mtime_ns // 1_000_000)
        except OSError:
            continue
    return millis(max(times)) if times else None


def _check_regular(path: str) -> None:
    """Refuse a symlink or a special file where a store should be (``OSError``)."""
    mode = os.lstat(path).st_mode
    if not stat_module.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file", path)


def _project(chat_dir: Path, side: dict[str, Any], workspace_uri: str, skipped: Counter[str]) -> str:
    """The chat's workspace: its ``meta.json`` ``cwd``, else the root blob's workspace URI, else a
    sibling's ``cwd`` that hashes to the directory's name; "" (counted) when none does."""
    folder = _absolute(side.get("cwd")) or file_uri_path(workspace_uri) or sibling_folder(chat_dir, skipped)
    if not folder:
        skipped["no_workspace_folder"] += 1
    return folder


def read_chat(path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
    """The chat in the store at ``path`` -> (digests, excluded chat ids)."""
    _check_regular(path)
    chat_dir = Path(path).parent
    session_id = clip(chat_dir.name, 200)
    side = side_meta(chat_dir, skipped)
    if side.get("isSubagent") is True:
        skipped["subagent_thread"] += 1
        return [], [session_id]
    builder = DigestBuilder(source=NAME, session_id=session_id, path=path)
    with snapshot(path, NAME) as connection:
        try:
            if not {"key", "value"} <= _columns(connection, "meta") or not {"id", "data"} <= _columns(
                connection, "blobs"
            ):
                skipped["unknown_schema"] += 1
                return [], []
            meta = store_meta(connection, skipped)
            if meta is None:
                return [], []
            root_id = meta.get("latestRootBlobId")
            root = _blob(connection, root_id, skipped) if isinstance(root_id, str) else None
            try:
                ids, workspace_uri = root_fields(root) if root is not None else ([], "")
            except ValueError:
                skipped["malformed_blob"] += 1
                ids, workspace_uri = [], ""
            project = _project(chat_dir, side, workspace_uri, skipped)
            if project and is_replay_dir(project):
                skipped["own_replay"] += 1
                return [], [session_id]
            builder.project = clip(project, 4096)
            builder.touch(millis(meta.get("createdAt")))
            if len(ids) > MAX_MESSAGES:
                skipped["messages_capped"] += len(ids) - MAX_MESSAGES
            seen: set[str] = set()
            for blob_id in ids[:MAX_MESSAGES]:
                if blob_id in seen:
                    continue  # the same message sent again (the CLI repeats the prompt around tool calls)
                seen.add(blob_id)
                data = _blob(connection, blob_id, skipped)
                if data is None:
                    continue
                status, message = decode_record(data, _MESSAGE)
                if status != "ok":
                    skipped[status] += 1
                    continue
                _message(builder, message, skipped)
        except sqlite3.Error as exc:
            raise OSError(errno.EIO, f"not a readable database: {exc}", path) from None
    builder.touch(millis(side.get("updatedAtMs")) or _last_write(path))
    builder.settle()
    return ([builder] if builder.has_content else []), []


class CursorCliSource(WholeFileSource):
    name = NAME

    def default_home(self) -> Path:
        return paths.cursor_cli_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        """``<home>/chats/<hash>/<chat id>/store.db``; a symlinked directory or store is refused."""
        for hash_dir in _dirs(home / CHATS, skipped):
            for chat_dir in _dirs(hash_dir, skipped):
                store = chat_dir / STORE
                if os.path.islink(store):
                    skipped["not_a_regular_file"] += 1
                elif os.path.lexists(store):
                    yield store

    def read_whole(self, path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
        return read_chat(path, skipped)

    def head_cwds(self, path: Path) -> set[str]:
        """The chat's workspace (a sub-agent's chat names none)."""
        scratch: Counter[str] = Counter()
        side = side_meta(path.parent, scratch)
        if side.get("isSubagent") is True:
            return set()
        try:
            digests, _ = read_chat(str(path), scratch)
        except OSError:
            return set()
        return {d.project for d in digests if d.project}


def _dirs(parent: Path, skipped: Counter[str]) -> list[Path]:
    """The directories in ``parent`` (not symlinks), sorted."""
    try:
        with os.scandir(parent) as entries:
            found = []
            for entry in entries:
                if entry.is_symlink():
                    skipped["not_a_regular_file"] += 1
                elif entry.is_dir(follow_symlinks=False):
                    found.append(Path(entry.path))
            return sorted(found)
    except FileNotFoundError:
        return []
    except OSError:
        skipped["unreadable_dir"] += 1
        return []
