"""Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` and
``$CODEX_HOME/archived_sessions/`` (DESIGN §9).

Codex writes each prompt and each reply twice: a ``response_item`` message and an ``event_msg``
(``user_message`` / ``agent_message``). A message is counted once by pairing twins: a message
whose text equals the previous unpaired message of the same role from the *other* record kind is
its twin. A user who really repeats a prompt produces two pairs, so nothing real is dropped, and
old rollouts with only one kind are still counted.

Excluded: ``codex exec`` sessions (``originator: "codex_exec"`` / ``source: "exec"``), which
include our own ``codex-cli`` backend, and sessions run in our replay dirs. Injected context
(``# AGENTS.md instructions for …``, ``<environment_context>``, …) is not user intent.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from .. import paths
from .base import (
    IGNORED,
    USED,
    DigestBuilder,
    as_str,
    builder_state,
    clip,
    decode_json_line,
    is_replay_dir,
    resume_builder,
)

NAME = "codex"
INJECTED_PREFIXES = (
    "# AGENTS.md instructions for",
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
)
_UUID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")
_PATCH_FILE = re.compile(r"\*\*\* (?:Add|Update|Delete) File: ([^\n\\\"]{1,1000})")
_TOOL_ITEMS = {"local_shell_call": "local_shell", "web_search_call": "web_search"}
# Payload types of response items that carry only model-internal or bulky data.
_ITEM_TYPES = {"message", "function_call", "custom_tool_call", "reasoning", "function_call_output",
               "custom_tool_call_output", "local_shell_call", "web_search_call"}


def session_id_for(path: str) -> str:
    match = _UUID.search(path)
    return match.group(1).lower() if match else Path(path).stem


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


class CodexParser:
    def __init__(self, path: str, state: dict[str, Any]) -> None:
        self.session_id = session_id_for(path)
        self.builder = resume_builder(NAME, self.session_id, path, state)
        excluded = state.get("excluded")
        self.excluded: str | None = excluded if isinstance(excluded, str) else None
        pending = state.get("pending")
        # role -> [record kind, twin key] of the last message not yet paired with its twin
        self.pending: dict[str, list[str]] = pending if isinstance(pending, dict) else {}

    def feed(self, line: bytes) -> str:
        if self.excluded or not line.strip():
            return IGNORED
        status, record = decode_json_line(line)
        if status != "ok":
            return status
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
            return self._cwd(payload.get("cwd"), first=False)
        if kind == "response_item":
            return self._item(payload, timestamp)
        if kind == "event_msg":
            return self._event(payload, timestamp)
        return IGNORED  # compacted, ...

    def _exclude(self, reason: str) -> str:
        self.excluded = reason
        return reason

    def _cwd(self, cwd: Any, *, first: bool) -> str:
        if isinstance(cwd, str) and cwd:
            if is_replay_dir(cwd):
                return self._exclude("own_replay")
            if first or not self.builder.project:
                self.builder.project = clip(cwd, 4096)
        return USED

    def _meta(self, payload: dict[str, Any]) -> str:
        if payload.get("originator") == "codex_exec" or payload.get("source") == "exec":
            return self._exclude("headless_session")
        git = payload.get("git")
        if isinstance(git, dict):
            branch = as_str(git.get("branch"))
            if branch:
                self.builder.branch = clip(branch, 300)
        return self._cwd(payload.get("cwd"), first=True)

    def _item(self, payload: dict[str, Any], timestamp: Any) -> str:
        item = payload.get("type")
        if not isinstance(item, str):
            return "wrong_field_type"
        if item == "message":
            role = payload.get("role")
            text = _text_of(payload.get("content"))
            if text is None:
                return "wrong_field_type"
            if role == "user":
                return self._user(text, "item", timestamp)
            if role == "assistant":
                return self._reply(text, "item", timestamp)
            return IGNORED  # developer / system instructions
        if item in ("function_call", "custom_tool_call"):
            name = as_str(payload.get("name"))
            if not name:
                return "wrong_field_type"
            self.builder.add_tool(name)
            self.builder.touch(timestamp)
            raw = payload.get("arguments") if item == "function_call" else payload.get("input")
            if isinstance(raw, str) and "*** Begin Patch" in raw:
                for match in _PATCH_FILE.finditer(raw):
                    self.builder.add_file(match.group(1).strip())
            return USED
        if item in _TOOL_ITEMS:
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
        return IGNORED  # token_count, task_started, task_complete, ...

    def _is_twin(self, role: str, record_kind: str, text: str) -> bool:
        key = _twin_key(text)
        pending = self.pending.get(role)
        if pending and pending[0] != record_kind and pending[1] == key:
            del self.pending[role]
            return True
        self.pending[role] = [record_kind, key]
        return False

    def _user(self, text: str, record_kind: str, timestamp: Any) -> str:
        text = text.strip()
        if not text or text.startswith(INJECTED_PREFIXES):
            return IGNORED
        self.builder.touch(timestamp)
        if self._is_twin("user", record_kind, text):
            return IGNORED
        self.builder.add_prompt(text)
        return USED

    def _reply(self, text: str, record_kind: str, timestamp: Any) -> str:
        text = text.strip()
        if not text:
            return IGNORED
        self.builder.touch(timestamp)
        if self._is_twin("assistant", record_kind, text):
            return IGNORED
        self.builder.new_reply(text)
        return USED

    def finish(self) -> tuple[list[DigestBuilder], dict[str, Any], list[str]]:
        state = builder_state(self.builder)
        state.update(excluded=self.excluded, pending=self.pending)
        if self.excluded:
            return [], state, [self.session_id]
        return ([self.builder] if self.builder.has_content else []), state, []


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
            with open(path, "rb") as handle:
                first = handle.readline(1024 * 1024)
        except OSError:
            return set()
        status, record = decode_json_line(first.rstrip(b"\r\n"))
        payload = record.get("payload") if status == "ok" else None
        if not isinstance(payload, dict) or record.get("type") != "session_meta":
            return set()
        if payload.get("originator") == "codex_exec" or payload.get("source") == "exec":
            return set()
        cwd = payload.get("cwd")
        return {cwd} if isinstance(cwd, str) and cwd else set()
