"""Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` and
``$CODEX_HOME/archived_sessions/`` (DESIGN §9).

Codex writes each prompt and each reply twice: a ``response_item`` message and an ``event_msg``
(``user_message`` / ``agent_message``). A message is counted once by pairing twins: a message
whose text equals the previous unpaired message of the same role from the *other* record kind is
its twin. A user who really repeats a prompt produces two pairs, so nothing real is dropped, and
old rollouts with only one kind are still counted.

Codex 0.169 no longer writes those twins (it writes ``event_msg item_completed``, ignored here:
the ``response_item`` is the record of the message) and labels each message's parts with
``content_item_kinds``: a typed prompt is ``["user.text"]`` (``user.*``), injected context is
``agents_md.instructions``, ``environments.environment_context``,
``multi_agent.subagent_notification``, … Older rollouts are recognised by their text instead.

Excluded sessions: ``codex exec`` sessions (``originator: "codex_exec"`` / ``source: "exec"``),
which include our own ``codex-cli`` backend; sub-agent threads (``source: {"subagent": …}``,
``thread_source: "subagent"``, ``parent_thread_id``); sessions run in our replay dirs.

Turns: each turn starts with ``event_msg task_started`` whose ``turn_attribution.turn_trigger`` is
``user`` or ``exec`` (``codex exec resume`` appends such turns to an interactive session): an
``exec`` turn is headless and its prompt is not counted. Replies are paired with the typed prompt
of their turn; a compaction turn's output (``compaction_output``) or a reply in a turn without a
typed prompt is not counted.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict
from collections.abc import Iterator

import msgspec

from .. import paths
from .base import IGNORED, USED, TranscriptParser, as_str, clip, open_regular, session_id_for
from .decode import decode_json_line

NAME = "codex"
INJECTED_PREFIXES = (
    "# AGENTS.md instructions",  # " for <dir>" for a project's file; the global one has no dir
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
)
_PATCH_FILE = re.compile(r"\*\*\* (?:Add|Update|Delete) File: ([^\n\\\"]{1,1000})")
_TOOL_ITEMS = {"local_shell_call": "local_shell", "web_search_call": "web_search"}
# Payload types of response items that carry only model-internal or bulky data.
_ITEM_TYPES = {
    "message",
    "function_call",
    "custom_tool_call",
    "reasoning",
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
}

# The fields ``record`` reads, at every depth (``TranscriptParser.fields``): any other value —
# instructions, world state, tool output, reasoning, token counts — is checked but never built.
# A JSON value of the wrong kind for a field still decodes (as what it is) and is judged by ``record``.
Scalar = str | int | float | bool | None


class _Block(TypedDict, total=False):
    type: Any
    text: Any


class _Opaque(TypedDict, total=False):
    """An object where ``record`` expects a string or a list: nothing in it is read."""


class _Payload(TypedDict, total=False):
    """Every payload field ``record`` reads, whatever the record's type."""

    type: Any
    cwd: Any  # session_meta, turn_context
    originator: Any
    source: Any
    thread_source: Any
    parent_thread_id: Any
    git: Any
    role: Any  # response items
    content: str | list[_Block | list | Scalar] | _Opaque | int | float | bool | None
    metadata: Any
    internal_chat_message_metadata_passthrough: Any
    content_item_kinds: Any
    compaction_output: Any
    name: Any
    arguments: Any
    input: Any
    message: Any  # events
    turn_attribution: Any


class _Record(_Payload, total=False):
    """A record: its payload, or (pre-2025 rollouts) a response item's fields at the top level."""

    timestamp: Any
    payload: _Payload | list | Scalar
    instructions: Any


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") in ("input_text", "output_text", "text"):
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts)


def _twin_key(text: str) -> str:
    normal = " ".join(text.split())
    return hashlib.blake2b(normal.encode("utf-8", "replace"), digest_size=8).hexdigest()


def _same_text(pending: list[str], text: str) -> bool:
    """Whether ``text`` is the pending message's twin: equal once whitespace is collapsed.
    ``pending`` is ``[kind, twin key]`` from a checkpoint or ``[kind, "", text]`` read this time."""
    if len(pending) == 2:
        return pending[1] == _twin_key(text)
    seen = pending[2]
    return seen == text or " ".join(seen.split()) == " ".join(text.split())


def message_metadata(payload: dict[str, Any]) -> dict[str, Any]:
    """A message's metadata: top level in some versions, under a passthrough key in 0.169."""
    merged: dict[str, Any] = {}
    for key in ("metadata", "internal_chat_message_metadata_passthrough"):
        value = payload.get(key)
        if isinstance(value, dict):
            merged.update(value)
    for key in ("content_item_kinds", "compaction_output"):
        if key in payload:
            merged[key] = payload[key]
    return merged


def is_subagent_thread(payload: dict[str, Any]) -> bool:
    source = payload.get("source")
    return (
        (isinstance(source, dict) and "subagent" in source)
        or source == "subagent"
        or payload.get("thread_source") == "subagent"
        or bool(payload.get("parent_thread_id"))
    )


def is_headless_session(payload: dict[str, Any]) -> bool:
    return payload.get("originator") == "codex_exec" or payload.get("source") == "exec"


class CodexParser(TranscriptParser):
    source = NAME
    fields = msgspec.json.Decoder(_Record)

    def __init__(self, path: str, state: dict[str, Any]) -> None:
        super().__init__(path, state, session_id_for(path))
        pending = state.get("pending")
        # role -> [record kind, twin key] of the last message not yet paired with its twin
        # ([record kind, "", text] for a message read by this parser: see ``_is_twin``)
        self.pending: dict[str, list[str]] = {
            role: entry
            for role, entry in (pending.items() if isinstance(pending, dict) else ())
            if isinstance(entry, list) and len(entry) == 2 and all(isinstance(part, str) for part in entry)
        }
        trigger = state.get("trigger")
        self.trigger: str | None = trigger if isinstance(trigger, str) else None  # of the current turn

    def record(self, record: dict[str, Any]) -> str:
        kind = record.get("type")
        payload = record.get("payload")
        if not isinstance(kind, str):
            kind = None
        if payload is None and kind in _ITEM_TYPES:
            kind, payload = "response_item", record  # pre-2025 rollouts: items are top level
        if not isinstance(kind, str) or not isinstance(payload, dict):
            if payload is None and kind is None and "instructions" in record:
                return IGNORED  # pre-2025 rollouts: the first line is a bare session header
            return "wrong_field_type"
        timestamp = record.get("timestamp")
        if kind == "session_meta":
            return self._meta(payload)
        if kind == "turn_context":
            return self.project_cwd(payload.get("cwd"))
        if kind == "response_item":
            return self._item(payload, timestamp)
        if kind == "event_msg":
            return self._event(payload, timestamp)
        return IGNORED  # compacted, world_state, token_usage_record, ...

    def _meta(self, payload: dict[str, Any]) -> str:
        if is_headless_session(payload):
            return self.exclude("headless_session")
        if is_subagent_thread(payload):
            return self.exclude("subagent_thread")
        git = payload.get("git")
        if isinstance(git, dict):
            branch = as_str(git.get("branch"))
            if branch:
                self.builder.branch = clip(branch, 300)
        return self.project_cwd(payload.get("cwd"), first=True)

    def _item(self, payload: dict[str, Any], timestamp: Any) -> str:
        item = payload.get("type")
        if not isinstance(item, str):
            return "wrong_field_type"
        if item == "message":
            role = payload.get("role")
            text = _text_of(payload.get("content"))
            if text is None:
                return "wrong_field_type"
            metadata = message_metadata(payload)
            if role == "user":
                kinds = metadata.get("content_item_kinds")
                if (
                    isinstance(kinds, list)
                    and kinds
                    and not all(isinstance(k, str) and k.startswith("user.") for k in kinds)
                ):
                    self.builder.close_turn()
                    return IGNORED  # injected: AGENTS.md, environment, sub-agent notifications, ...
                return self._user(text, "item", timestamp)
            if role == "assistant":
                if metadata.get("compaction_output") is True:
                    self.builder.close_turn()
                    return IGNORED
                return self._reply(text, "item", timestamp)
            return IGNORED  # developer / system instructions
        if item in ("function_call", "custom_tool_call"):
            name = as_str(payload.get("name"))
            if not name:
                return "wrong_field_type"
            if not self.builder.in_turn:
                return IGNORED
            self.builder.add_tool(name)
            self.builder.touch(timestamp)
            raw = payload.get("arguments") if item == "function_call" else payload.get("input")
            if isinstance(raw, str) and "*** Begin Patch" in raw:
                for match in _PATCH_FILE.finditer(raw):
                    self.builder.add_file(match.group(1).strip())
            return USED
        if item in _TOOL_ITEMS:
            if not self.builder.in_turn:
                return IGNORED
            self.builder.add_tool(_TOOL_ITEMS[item])
            self.builder.touch(timestamp)
            return USED
        return IGNORED  # reasoning, tool outputs

    def _event(self, payload: dict[str, Any], timestamp: Any) -> str:
        event = payload.get("type")
        if not isinstance(event, str):
            return "wrong_field_type"
        if event == "user_message":
            text = payload.get("message")
            return self._user(text, "event", timestamp) if isinstance(text, str) else "wrong_field_type"
        if event == "agent_message":
            text = payload.get("message")
            return self._reply(text, "event", timestamp) if isinstance(text, str) else "wrong_field_type"
        if event == "task_started":
            attribution = payload.get("turn_attribution")
            trigger = attribution.get("turn_trigger") if isinstance(attribution, dict) else None
            self.trigger = trigger if isinstance(trigger, str) else None
            self.builder.close_turn()  # a typed prompt opens it again
            return USED
        return IGNORED  # token_count, task_complete, item_completed, ...

    def _is_twin(self, role: str, record_kind: str, text: str) -> bool:
        """The text is kept as it is while the file is read and hashed only for the checkpoint
        (``extra_state``): most messages are never compared, and a twin is usually byte-equal."""
        pending = self.pending.get(role)
        if pending and pending[0] != record_kind and _same_text(pending, text):
            del self.pending[role]
            return True
        self.pending[role] = [record_kind, "", text]
        return False

    def _user(self, text: str, record_kind: str, timestamp: Any) -> str:
        text = text.strip()
        if not text or text.startswith(INJECTED_PREFIXES):
            if text.startswith("<subagent_notification>"):
                self.builder.close_turn()
            return IGNORED
        self.builder.touch(timestamp)
        if self._is_twin("user", record_kind, text):
            return IGNORED
        if self.trigger == "exec":
            self.builder.close_turn()
            return "headless_turn"  # ``codex exec resume`` on an interactive session
        self.builder.add_prompt(text)
        return USED

    def _reply(self, text: str, record_kind: str, timestamp: Any) -> str:
        text = text.strip()
        if not text:
            return IGNORED
        self.builder.touch(timestamp)
        if self._is_twin("assistant", record_kind, text):
            return IGNORED
        return USED if self.builder.new_reply(text) else IGNORED

    def extra_state(self) -> dict[str, Any]:
        pending = {
            role: entry if len(entry) == 2 else [entry[0], _twin_key(entry[2])] for role, entry in self.pending.items()
        }
        return {"pending": pending, "trigger": self.trigger}


def _walk(root: Path, skipped: Counter[str]) -> Iterator[Path]:
    def on_error(error: OSError) -> None:
        if not isinstance(error, FileNotFoundError):
            skipped["unreadable_dir"] += 1

    for directory, subdirs, files in os.walk(root, onerror=on_error):
        subdirs.sort()
        for name in sorted(files):
            if name.startswith("rollout-") and name.endswith(".jsonl"):
                yield Path(directory) / name


class CodexSource:
    name = NAME
    whole_file = False

    def default_home(self) -> Path:
        return paths.codex_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        yield from _walk(home / "sessions", skipped)
        yield from _walk(home / "archived_sessions", skipped)

    def parser(self, path: str, state: dict[str, Any]) -> CodexParser:
        return CodexParser(path, state)

    def head_cwds(self, path: Path) -> set[str]:
        """The cwd of the session_meta line (the first line), unless it is a headless session."""
        try:
            with open_regular(path) as handle:
                first = handle.readline(1024 * 1024)
        except OSError:
            return set()
        status, record = decode_json_line(first.rstrip(b"\r\n"))
        payload = record.get("payload") if status == "ok" else None
        if not isinstance(payload, dict) or record.get("type") != "session_meta":
            return set()
        if is_headless_session(payload) or is_subagent_thread(payload):
            return set()
        cwd = payload.get("cwd")
        return {cwd} if isinstance(cwd, str) and cwd else set()
