"""Gemini CLI sessions: ``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`` (older
versions: one ``.json`` document per session), see ``docs/agents/gemini.md``.

A session file is a log of records: the session's metadata first (``sessionId``, ``projectHash``,
``startTime``, ``kind``), then messages (``id``, ``timestamp``, ``type`` user | gemini | info |
error | warning, ``content``), and edits: a message written again under its ``id`` replaces the
earlier one in place (a reply gains its tool calls and token counts that way), ``{"$set": {...}}``
updates the metadata (``$set.messages`` lists the whole conversation again: at the start, on every
resume, after a compression), ``{"$rewindTo": id}`` drops that message and all after it from what
the CLI resends. The file is read whole (``whole_file``) and what it says replaces what it said
before; rewinds and compressions do not take back prompts the person typed (``Session``).

What a person typed: the CLI's interactive prompt writes every submitted line to the project's
``logs.json`` (``[{sessionId, messageId, type: "user", message, timestamp}]``); headless runs
(``gemini -p``, also ``-p --resume`` on an interactive session) write none. A user message counts
as typed when it is the next line that session logged (its ``displayContent`` when the CLI
expanded it, e.g. ``@file`` references); a session with no logged line is headless and left
out; without a ``logs.json`` every user text counts. Injected context — ``<session_context>``
(environment, folder tree, the GEMINI.md files) and ``<hook_context>`` — and tool results (user
messages of ``functionResponse`` parts) are not prompts.

Sub-agent threads live in ``chats/<parent session id>/<agent id>.jsonl`` (``kind: "subagent"``)
and are not discovered. The cwd is the project root the CLI wrote to ``<project>/.project_root``
(else the ``projects.json`` entry naming the dir, else the first workspace directory of the
``<session_context>`` block).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import paths
from .base import (
    WholeFileSource,
    MAX_WHOLE_FILE_BYTES,
    DigestBuilder,
    as_str,
    clip,
    is_replay_dir,
    open_regular,
    whole_file_records,
)
from .decode import decode_json_line

NAME = "gemini"
# the environment and GEMINI.md block, hook output, and the summary a compression puts first
INJECTED_PREFIXES = ("<session_context>", "<hook_context>", "<state_snapshot>")
MAX_SMALL_FILE_BYTES = 1024 * 1024  # .project_root; projects.json is read up to 16 MiB
_WORKSPACE = re.compile(r"\*\*Workspace Directories:\*\*\s*\n\s*-\s+(\S[^\n]*)")
_WORKING_IN = re.compile(r"I'm currently working in the directory: (\S[^\n]*)")
# args that name the file a tool reads or writes
_PATH_ARGS = ("file_path", "absolute_path", "path", "dir_path")
_FILE_TOOLS = {"read_file", "write_file", "replace", "read_many_files", "list_directory", "edit", "ls"}


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes, else None."""
    try:
        with open_regular(path) as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


def _project_root(chats: Path, home: Path) -> str:
    """The project dir a ``tmp/<project>/chats`` dir belongs to, from the CLI's own markers."""
    marker = _read_bounded(chats.parent / ".project_root", MAX_SMALL_FILE_BYTES)
    if marker:
        text = marker.decode("utf-8", "replace").strip()
        if text:
            return text
    registry = _read_bounded(home / "projects.json", 16 * MAX_SMALL_FILE_BYTES)
    if registry:
        status, value = decode_json_line(registry)
        projects = value.get("projects") if status == "ok" else None
        if isinstance(projects, dict):
            slug = chats.parent.name
            for root, name in projects.items():
                if name == slug and isinstance(root, str) and root:
                    return root
    return ""


# Parsed prompt logs, keyed by path and what tells they changed: many sessions share one log.
_LOGS: dict[str, tuple[tuple[int, int, int], dict[str, list[str]] | None]] = {}


def typed_lines(project_dir: Path, skipped: Counter[str]) -> dict[str, list[str]] | None:
    """session id -> the lines a person submitted at its interactive prompt, in order; None when
    the project has no readable prompt log (``logs.json``)."""
    path = project_dir / "logs.json"
    try:
        stat = os.stat(path)
    except OSError:
        return None
    key = str(path)
    stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    cached = _LOGS.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    data = _read_bounded(path, MAX_WHOLE_FILE_BYTES)
    lines: dict[str, list[str]] | None = None
    if data is not None:
        status, value = decode_json_line(b'{"entries":' + data + b"}")
        entries = value.get("entries") if status == "ok" else None
        if isinstance(entries, list):
            ordered: dict[str, list[tuple[int, str, str]]] = {}
            for entry in entries:
                if not isinstance(entry, dict) or entry.get("type") != "user":
                    continue
                session, message = entry.get("sessionId"), entry.get("message")
                number, when = entry.get("messageId"), entry.get("timestamp")
                if isinstance(session, str) and isinstance(message, str):
                    rank = number if isinstance(number, int) and not isinstance(number, bool) else 0
                    ordered.setdefault(session, []).append((rank, when if isinstance(when, str) else "", message))
            lines = {s: [m.strip() for _, _, m in sorted(found, key=lambda e: e[:2])] for s, found in ordered.items()}
    if lines is None:
        skipped["unreadable_prompt_log"] += 1
    if len(_LOGS) > 16:
        _LOGS.clear()
    _LOGS[key] = (stamp, lines)
    return lines


def _text(content: Any) -> str | None:
    """The text of a message's content (a string or a list of parts; thoughts left out); None
    when it holds no text part (tool results, wrong types)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    ]
    return "".join(texts) if texts else None


class Session:
    """A session file read back: its metadata, and every message it recorded, by id in the order
    first written.

    Unlike the CLI, which reads back only what it will send the model next, this keeps what a
    rewind (``$rewindTo``) or a compression (a ``$set.messages`` without the earlier turns) left
    out: the person did type those prompts. A ``$set.messages`` updates the messages already read;
    it adds new ones only to a file that has recorded none yet (the list a new session starts
    with), since a compression lists the turns it keeps again under new ids.
    """

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.messages: dict[str, dict[str, Any]] = {}

    def add_message(self, record: dict[str, Any], skipped: Counter[str], *, new: bool = True) -> None:
        if not isinstance(record.get("type"), str):
            skipped["wrong_field_type"] += 1
            return
        if new or record["id"] in self.messages:
            self.messages[record["id"]] = record

    def add_messages(self, messages: Any, skipped: Counter[str], *, new: bool = True) -> None:
        if not isinstance(messages, list):
            if messages is not None:
                skipped["wrong_field_type"] += 1
            return
        for message in messages:
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                self.add_message(message, skipped, new=new)

    def apply(self, record: dict[str, Any], skipped: Counter[str]) -> None:
        update = record.get("$set")
        if isinstance(record.get("$rewindTo"), str):
            return  # what the model is sent next, not what was typed
        if isinstance(record.get("id"), str):
            self.add_message(record, skipped)
        elif isinstance(update, dict):
            self.add_messages(update.get("messages"), skipped, new=not self.messages)
            self.meta.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(record.get("sessionId"), str):
            self.meta.update({k: v for k, v in record.items() if k != "messages"})
            self.add_messages(record.get("messages"), skipped)  # an older version's whole document
        else:
            skipped["unknown_record"] += 1


def load(data: bytes, legacy: bool, skipped: Counter[str]) -> Session:
    session = Session()
    if legacy:  # one JSON document
        status, value = decode_json_line(data)
        if status != "ok":
            skipped[status] += 1
        else:
            session.apply(value, skipped)
        return session
    for value in whole_file_records(data, skipped):
        session.apply(value, skipped)
    return session


class Turns:
    """Walks a session's messages into a DigestBuilder."""

    def __init__(self, builder: DigestBuilder, typed: list[str] | None) -> None:
        self.builder = builder
        self.typed = typed  # the session's logged prompt lines; None = no log: every text counts
        self.next_typed = 0
        self.headless_turns = 0

    def is_typed(self, text: str) -> bool:
        if self.typed is None:
            return True
        wanted = text.strip()
        for index in range(self.next_typed, len(self.typed)):
            if self.typed[index] == wanted:
                self.next_typed = index + 1
                return True
        return False

    def message(self, message: dict[str, Any], skipped: Counter[str]) -> None:
        kind = message.get("type")
        if kind == "user":
            self.user(message, skipped)
        elif kind == "gemini":
            self.reply(message, skipped)
        # info / error / warning: the CLI's own notes, never sent to the model

    def user(self, message: dict[str, Any], skipped: Counter[str]) -> None:
        content = _text(message.get("content"))
        if content is None:
            if not isinstance(message.get("content"), list):
                skipped["wrong_field_type"] += 1
            return  # tool results: part of the turn
        shown = _text(message.get("displayContent"))
        text = (shown if shown is not None else content).strip()
        if not text or text.startswith(INJECTED_PREFIXES):
            self.builder.close_turn()
            return
        if not self.is_typed(text):
            self.builder.close_turn()
            skipped["headless_turn"] += 1
            return
        self.builder.touch(message.get("timestamp"))
        self.builder.add_prompt(text)

    def reply(self, message: dict[str, Any], skipped: Counter[str]) -> None:
        content = message.get("content")
        calls = message.get("toolCalls")
        if content is not None and not isinstance(content, (str, list)):
            skipped["wrong_field_type"] += 1
            return
        text = _text(content)  # None: only function calls
        if not self.builder.new_reply((text or "").strip()):
            return
        self.builder.touch(message.get("timestamp"))
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict):
                    self.tool(call)

    def tool(self, call: dict[str, Any]) -> None:
        name = as_str(call.get("name"))
        if not name:
            return
        self.builder.add_tool(name)
        args = call.get("args")
        if not isinstance(args, dict):
            return
        if name == "activate_skill":
            skill = as_str(args.get("name"))
            if skill:
                self.builder.add_skill(skill)
        elif name in _FILE_TOOLS:
            for key in _PATH_ARGS:
                target = as_str(args.get(key))
                if target:
                    self.builder.add_file(target)
            paths_arg = args.get("paths") or args.get("include")
            if isinstance(paths_arg, list):
                for target in paths_arg:
                    if isinstance(target, str) and target:
                        self.builder.add_file(target)


def _cwd_from_context(session: Session) -> str:
    for message in session.messages.values():
        text = _text(message.get("content")) if message.get("type") == "user" else None
        if text and text.lstrip().startswith("<session_context>"):
            found = _WORKSPACE.search(text) or _WORKING_IN.search(text)
            if found:
                return found.group(1).strip()
    return ""


def read_session(path: str, home: Path, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
    file = Path(path)
    with open_regular(file) as handle:
        data = handle.read(MAX_WHOLE_FILE_BYTES + 1)
    if len(data) > MAX_WHOLE_FILE_BYTES:
        skipped["whole_file_too_large"] += 1
        return [], []
    session = load(data, file.suffix == ".json", skipped)
    session_id = as_str(session.meta.get("sessionId")) or file.stem
    session_id = clip(session_id, 200)
    if session.meta.get("kind") == "subagent":
        skipped["subagent_thread"] += 1
        return [], [session_id]
    builder = DigestBuilder(source=NAME, session_id=session_id, path=path)
    cwd = _project_root(file.parent, home) or _cwd_from_context(session)
    if cwd and is_replay_dir(cwd):
        skipped["own_replay"] += 1
        return [], [session_id]
    builder.project = clip(cwd, 4096)
    logged = typed_lines(file.parent.parent, skipped)
    typed = None if logged is None else logged.get(session_id, [])
    if typed == [] and session.messages:
        skipped["headless_session"] += 1
        return [], [session_id]
    builder.touch(session.meta.get("startTime"))
    turns = Turns(builder, typed)
    for message in session.messages.values():
        turns.message(message, skipped)
    builder.settle()
    return ([builder] if builder.has_content else []), []


class GeminiSource(WholeFileSource):
    name = NAME

    def default_home(self) -> Path:
        return paths.gemini_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        """``tmp/<project>/chats/session-*.jsonl`` (and ``.json`` unless resumed into a ``.jsonl``);
        sub-agent threads, one directory further down, are not sessions of their own."""
        try:
            with os.scandir(home / "tmp") as entries:
                projects = sorted(entry.path for entry in entries if entry.is_dir(follow_symlinks=False))
        except OSError as error:
            if not isinstance(error, FileNotFoundError):
                skipped["unreadable_dir"] += 1
            return
        for project in projects:
            chats = Path(project) / "chats"
            try:
                names = sorted(os.listdir(chats))
            except FileNotFoundError:
                continue
            except OSError:
                skipped["unreadable_dir"] += 1
                continue
            present = set(names)
            for name in names:
                if not name.startswith("session-"):
                    continue
                if name.endswith(".json") and name + "l" in present:
                    skipped["superseded_json"] += 1  # resuming copied it into the .jsonl
                    continue
                if name.endswith((".json", ".jsonl")):
                    yield chats / name

    def read_whole(self, path: str, skipped: Counter[str]) -> tuple[list[DigestBuilder], list[str]]:
        return read_session(path, home_of(path), skipped)

    def head_cwds(self, path: Path) -> set[str]:
        """The project the session's directory belongs to, unless the file is a sub-agent's or a
        headless run's (its id absent from the project's prompt log)."""
        try:
            with open_regular(path) as handle:
                first = handle.readline(1024 * 1024)
        except OSError:
            return set()
        status, record = decode_json_line(first.rstrip(b"\r\n"))
        if status != "ok" or record.get("kind") == "subagent":
            return set()
        logged = typed_lines(path.parent.parent, Counter())
        if logged is not None and record.get("sessionId") not in logged:
            return set()
        cwd = _project_root(path.parent, home_of(str(path)))
        return {cwd} if cwd else set()


def home_of(path: str) -> Path:
    """The ``.gemini`` dir of ``<home>/tmp/<project>/chats/<file>``."""
    return Path(path).parent.parent.parent.parent
