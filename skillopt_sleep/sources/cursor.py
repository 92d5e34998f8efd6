"""Cursor's agent and chat ("composer") conversations: SQLite key-value stores under Cursor's User
dir — ``~/.config/Cursor/User`` on Linux, ``~/Library/Application Support/Cursor/User`` on macOS,
``%APPDATA%\\Cursor\\User`` on Windows (``docs/agents/cursor.md``; from the documented format, not
recorded).

``globalStorage/state.vscdb`` holds every conversation of every workspace in its ``cursorDiskKV``
table (``key TEXT``, ``value BLOB`` holding JSON):

- ``composerData:<composerId>``: the conversation — ``createdAt`` / ``lastUpdatedAt``
  (milliseconds), ``fullConversationHeadersOnly`` (``[{bubbleId, type}]`` in order: ``type`` 1 a
  user message, 2 an assistant one), or in older builds ``conversation``, the messages inline;
  ``subComposerIds`` and ``isBestOfNSubcomposer`` mark conversations the agent ran itself.
- ``bubbleId:<composerId>:<bubbleId>``: one message — ``type``, ``text`` (a user message: what
  the person typed), ``createdAt`` (ISO), and for an assistant step that called a tool
  ``toolFormerData`` (``name``, ``params`` / ``rawArgs``: the arguments as JSON text). Attached
  files, rules and other context are in fields of their own (``context``, ``attachedCodeChunks``,
  ``cursorRules``, …), none of which is read.

Which workspace a conversation belongs to is only in the workspace's own store:
``workspaceStorage/<id>/state.vscdb``, table ``ItemTable``, key ``composer.composerData``
(``{"allComposers": [{"composerId", …}]}``; an array of the same in some builds), and the folder
in ``workspaceStorage/<id>/workspace.json``. The global store is the one file discovered; reading it
reads the workspace stores too. Every store is copied with its write-ahead log into a private
directory and opened read-only there (``opencode.snapshot``, which copies a store again only when
it changed), so Cursor's files are never locked or written.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import msgspec

from .. import paths
from .base import MAX_PROMPT_CHARS, DigestBuilder, as_str, clip, is_replay_dir, WholeFileSource
from .decode import decode_json_line, decode_record
from .opencode import snapshot
from .workspace_storage import millis, unwrap, workspace_dirs, workspace_folder

NAME = "cursor"
GLOBAL_STORE = Path("globalStorage") / "state.vscdb"
WORKSPACE_STORE = "state.vscdb"
COMPOSER_INDEX = "composer.composerData"
USER, ASSISTANT = 1, 2
# Cursor's agent transcripts wrap the typed text in ``<user_query>`` beside context blocks; a
# bubble's ``text`` is the typed text, so these reach a prompt only if a build ever stores them there.
INJECTED_TAGS = (
    "<user_info>",
    "<attached_files>",
    "<rules>",
    "<project_layout>",
    "<additional_data>",
    "<system_reminder>",
)
# the arguments that name the file a tool reads or writes
PATH_ARGS = ("target_file", "file_path", "relative_workspace_path", "path")
MAX_ARGS_CHARS = 4 * MAX_PROMPT_CHARS  # of a tool's arguments, read for the file they name
# A workspace store holds the workspace's editor state; one this large is not what it should be.
MAX_WORKSPACE_STORE_BYTES = 64 * 1024 * 1024


class _Tool(TypedDict, total=False):
    name: Any
    params: Any
    rawArgs: Any


class _Bubble(TypedDict, total=False):
    bubbleId: Any
    type: Any
    text: Any
    createdAt: Any
    toolFormerData: _Tool


class _Header(TypedDict, total=False):
    bubbleId: Any
    type: Any


class _Composer(TypedDict, total=False):
    composerId: Any
    createdAt: Any
    lastUpdatedAt: Any
    fullConversationHeadersOnly: list[_Header]
    conversation: list[_Bubble]
    subComposerIds: Any
    isBestOfNSubcomposer: Any


_BUBBLE = msgspec.json.Decoder(_Bubble)
_COMPOSER = msgspec.json.Decoder(_Composer)


def _bytes(value: Any) -> bytes | None:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return None


def _is_table(connection: sqlite3.Connection, table: str) -> bool:
    """Whether ``table`` is a table (a view's reading could run anything) with ``key`` and ``value``."""
    kind = connection.execute("SELECT type FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    if kind is None or kind[0] != "table":
        return False
    return {"key", "value"} <= {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}


def _rows(connection: sqlite3.Connection, prefix: str, skipped: Counter[str]) -> Iterator[tuple[str, bytes]]:
    """``cursorDiskKV`` rows whose key starts with ``prefix`` (a key range, so the index is used).
    The connection gives text as bytes: a value that is not UTF-8 is the decoder's to count, not an
    error that would end the whole read."""
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    for key, value in connection.execute(
        "SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ? ORDER BY key", (prefix, upper)
    ):
        data = _bytes(value)
        try:
            name = key.decode("utf-8") if isinstance(key, bytes) else key
        except UnicodeDecodeError:
            skipped["bad_utf8"] += 1
            continue
        if isinstance(name, str) and data is not None:
            yield name, data
        else:
            skipped["wrong_field_type"] += 1


def _decode(data: bytes, fields: msgspec.json.Decoder[Any], skipped: Counter[str]) -> dict[str, Any] | None:
    status, value = decode_record(data, fields)
    if status != "ok":
        skipped[status] += 1
        return None
    return value


def _index_ids(value: Any) -> list[str]:
    """The composer ids a workspace's ``composer.composerData`` lists."""
    if isinstance(value, dict):
        value = value.get("allComposers")
    if not isinstance(value, list):
        return []
    return [head["composerId"] for head in value if isinstance(head, dict) and isinstance(head.get("composerId"), str)]


def workspace_composers(home: Path, skipped: Counter[str]) -> dict[str, str]:
    """composer id -> the folder of the workspace whose store lists it."""
    folders: dict[str, str] = {}
    for workspace in workspace_dirs(home, skipped):
        store = workspace / WORKSPACE_STORE
        try:
            if os.path.getsize(store) > MAX_WORKSPACE_STORE_BYTES:
                skipped["whole_file_too_large"] += 1
                continue
        except OSError:
            continue  # a workspace Cursor opened without ever writing its state
        try:
            with snapshot(str(store), NAME) as connection:
                if not _is_table(connection, "ItemTable"):
                    skipped["unknown_schema"] += 1
                    continue
                connection.text_factory = bytes
                row = connection.execute("SELECT value FROM ItemTable WHERE key = ?", (COMPOSER_INDEX,)).fetchone()
        except (OSError, sqlite3.Error):
            skipped["unreadable_file"] += 1
            continue
        data = _bytes(row[0]) if row else None
        if data is None:
            continue
        status, value = decode_json_line(b'{"v":' + data + b"}")
        if status != "ok":
            skipped[status] += 1
            continue
        ids = _index_ids(value.get("v"))
        if not ids:
            continue
        folder = workspace_folder(workspace, skipped)
        for composer_id in ids:
            folders.setdefault(composer_id, folder)
    return folders


def _tool_file(tool: dict[str, Any]) -> str:
    """The file a tool call's arguments name (``params``, else ``rawArgs``: JSON text)."""
    for key in ("params", "rawArgs"):
        raw = tool.get(key)
        if isinstance(raw, dict):
            args = raw
        elif isinstance(raw, str) and len(raw) <= MAX_ARGS_CHARS:
            try:
                args = json.loads(raw)
            except (ValueError, RecursionError):
                continue
        else:
            continue
        if isinstance(args, dict):
            for name in PATH_ARGS:
                target = as_str(args.get(name))
                if target:
                    return target
    return ""


def _time(value: Any) -> Any:
    """A message's ``createdAt``: ISO text, or milliseconds in some builds."""
    return value if isinstance(value, str) else millis(value)


def _bubble(builder: DigestBuilder, bubble: dict[str, Any], skipped: Counter[str]) -> None:
    kind, text = bubble.get("type"), bubble.get("text")
    if text is not None and not isinstance(text, str):
        skipped["wrong_field_type"] += 1
        return
    if kind == USER:
        typed = unwrap(text or "", "user_query", INJECTED_TAGS)
        if not typed:
            builder.close_turn()  # only attachments, or context the editor added
            if typed is None:
                skipped["injected_context"] += 1
            return
        builder.touch(_time(bubble.get("createdAt")))
        builder.add_prompt(typed)
    elif kind == ASSISTANT:
        if not builder.new_reply((text or "").strip()):
            return
        builder.touch(_time(bubble.get("createdAt")))
        tool = bubble.get("toolFormerData")
        if isinstance(tool, dict):
            name = as_str(tool.get("name"))
            if name:
                builder.add_tool(name)
                target = _tool_file(tool)
                if target:
                    builder.add_file(target)
    else:
        skipped["wrong_field_type"] += 1


def _messages(
    composer_id: str, composer: dict[str, Any], bubbles: dict[str, bytes], skipped: Counter[str]
) -> Iterator[dict[str, Any]]:
    """A conversation's messages in order: its headers' bubbles, else the inline ``conversation``."""
    headers = composer.get("fullConversationHeadersOnly")
    if isinstance(headers, list) and headers:
        for header in headers:
            bubble_id = header.get("bubbleId") if isinstance(header, dict) else None
            if not isinstance(bubble_id, str):
                skipped["wrong_field_type"] += 1
                continue
            data = bubbles.get(f"bubbleId:{composer_id}:{bubble_id}")
            if data is None:
                skipped["missing_bubble"] += 1
                continue
            bubble = _decode(data, _BUBBLE, skipped)
            if bubble is not None:
                yield bubble
        return
    inline = composer.get("conversation")
    for bubble in inline if isinstance(inline, list) else ():
        if isinstance(bubble, dict):
            yield bubble
        else:
            skipped["wrong_field_type"] += 1


def _conversations(
    connection: sqlite3.Connection, skipped: Counter[str]
) -> tuple[list[tuple[str, dict[str, Any]]], set[str]]:
    """Every ``composerData`` row decoded, and the ids other conversations started."""
    decoded: list[tuple[str, dict[str, Any]]] = []
    children: set[str] = set()
    for key, data in _rows(connection, "composerData:", skipped):
        composer = _decode(data, _COMPOSER, skipped)
        if composer is None:
            continue
        decoded.append((key.removeprefix("composerData:"), composer))
        subs = composer.get("subComposerIds")
        if isinstance(subs, list):
            children.update(s for s in subs if isinstance(s, str))
    return decoded, children


def read_store(path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
    """Every conversation in the global store at ``path`` -> (digests, excluded ids)."""
    folders = workspace_composers(Path(path).parent.parent, skipped)
    digests: list[DigestBuilder] = []
    excluded: list[str] = []
    with snapshot(path, NAME) as connection:
        try:
            if not _is_table(connection, "cursorDiskKV"):
                skipped["unknown_schema"] += 1
                return [], []
            connection.text_factory = bytes
            decoded, children = _conversations(connection, skipped)
            for composer_id, composer in decoded:
                session_id = clip(composer_id, 200)
                folder = folders.get(composer_id, "")
                reason = None
                if composer_id in children or composer.get("isBestOfNSubcomposer") is True:
                    reason = "subagent_thread"
                elif folder and is_replay_dir(folder):
                    reason = "own_replay"
                if reason is not None:
                    skipped[reason] += 1
                    excluded.append(session_id)
                    continue
                # one conversation's messages at a time: a store may hold many thousands
                bubbles = dict(_rows(connection, f"bubbleId:{composer_id}:", skipped))
                builder = DigestBuilder(source=NAME, session_id=session_id, path=path)
                builder.project = clip(folder, 4096)
                builder.touch(millis(composer.get("createdAt")))
                builder.touch(millis(composer.get("lastUpdatedAt")))
                for bubble in _messages(composer_id, composer, bubbles, skipped):
                    _bubble(builder, bubble, skipped)
                builder.settle()
                if builder.has_content:
                    digests.append(builder)
        except sqlite3.Error as exc:
            raise OSError(errno.EIO, f"not a readable database: {exc}", path) from None
    return digests, excluded


class CursorSource(WholeFileSource):
    name = NAME

    def default_home(self) -> Path:
        return paths.cursor_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        store = home / GLOBAL_STORE
        if os.path.lexists(store):
            yield store

    def read_whole(self, path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
        return read_store(path, skipped)

    def head_cwds(self, path: Path) -> set[str]:
        """The folders of the workspaces that list a conversation."""
        folders = workspace_composers(path.parent.parent, Counter())
        return {folder for folder in folders.values() if folder}
