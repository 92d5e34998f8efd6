"""Claude Code transcripts: ``<claude home>/projects/<slug>/<session id>.jsonl`` (DESIGN §9).

Excluded: sub-agent transcripts (``<session>/subagents/agent-*.jsonl``, older ``agent-*.jsonl``,
inline ``isSidechain`` records), headless ``claude -p`` sessions (``entrypoint: "sdk-cli"``) and
our own replays (cwd named ``REPLAY_DIR_PREFIX…``). Not user intent: meta messages, slash-command
bodies, command output, interrupted-request notes, system reminders, compaction summaries and
tool results.
"""

from __future__ import annotations

import json
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

NAME = "claude"
FILE_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
# A user message starting with one of these is harness chatter, not something the user asked for.
META_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<command-contents>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat:",
    "<system-reminder>",
    "[Request interrupted by user",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-prompt-submit-hook>",
    "<task-notification>",
    "This session is being continued from a previous conversation",
)
_SYSTEM_REMINDER = re.compile(r"<system-reminder>[\s\S]{0,200000}?</system-reminder>")
_HEAD_CWD = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.){1,4096})"')


def user_text(text: str) -> str:
    """The user's own words in a message, or "" when it is meta / harness output."""
    if "<system-reminder>" in text:
        text = _SYSTEM_REMINDER.sub("", text)
    text = text.strip()
    if not text or text.startswith(META_PREFIXES):
        return ""
    return text


class ClaudeParser:
    """Parses one session file, possibly resuming after the bytes a previous harvest consumed."""

    def __init__(self, path: str, state: dict[str, Any]) -> None:
        self.session_id = Path(path).stem
        self.builder = resume_builder(NAME, self.session_id, path, state)
        excluded = state.get("excluded")
        self.excluded: str | None = excluded if isinstance(excluded, str) else None
        msg_id = state.get("msg_id")
        self.msg_id: str | None = msg_id if isinstance(msg_id, str) else None
        self.msg_has_final = state.get("msg_final") is True

    def feed(self, line: bytes) -> str:
        if self.excluded or not line.strip():
            return IGNORED
        status, record = decode_json_line(line)
        if status != "ok":
            return status
        kind = record.get("type")
        if not isinstance(kind, str):
            return "wrong_field_type"
        if record.get("isSidechain") is True:
            return "sidechain"
        if record.get("entrypoint") == "sdk-cli":
            return self._exclude("headless_session")
        cwd = record.get("cwd")
        if isinstance(cwd, str) and cwd:
            if is_replay_dir(cwd):
                return self._exclude("own_replay")
            if not self.builder.project:
                self.builder.project = clip(cwd, 4096)
        branch = record.get("gitBranch")
        if isinstance(branch, str) and branch and branch != self.builder.branch:
            self.builder.branch = clip(branch, 300)
        if kind == "user":
            return self._user(record)
        if kind == "assistant":
            return self._assistant(record)
        if kind == "file-history-snapshot":
            return self._snapshot(record)
        return IGNORED  # summary, system, queue-operation, ...: no user intent, no reply

    def _exclude(self, reason: str) -> str:
        self.excluded = reason
        return reason

    def _user(self, record: dict[str, Any]) -> str:
        message = record.get("message")
        if not isinstance(message, dict):
            return "wrong_field_type"
        content = message.get("content")
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = [
                block["text"]
                for block in content
                if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
            ]
        else:
            return "wrong_field_type"
        self.builder.touch(record.get("timestamp"))
        if record.get("isMeta") is True or record.get("isCompactSummary") is True:
            return IGNORED
        text = user_text("\n".join(texts))
        if not text:
            return IGNORED  # tool results, meta, interrupted-request notes
        self.builder.add_prompt(text)
        return USED

    def _assistant(self, record: dict[str, Any]) -> str:
        message = record.get("message")
        if not isinstance(message, dict):
            return "wrong_field_type"
        if record.get("isApiErrorMessage") is True or message.get("model") == "<synthetic>":
            return IGNORED  # written by the harness, not the model
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        elif not isinstance(content, list):
            return "wrong_field_type"
        texts: list[str] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = as_str(block.get("text"))
                if text and text.strip():
                    texts.append(text.strip())
            elif kind == "tool_use":
                self._tool_use(block)
        self.builder.touch(record.get("timestamp"))
        text = "\n".join(texts)
        message_id = as_str(message.get("id")) or as_str(record.get("uuid"))
        if message_id is not None and message_id == self.msg_id:
            self.msg_has_final = self.builder.extend_reply(text, has_final=self.msg_has_final)
        else:
            self.msg_id = message_id
            self.builder.new_reply(text)
            self.msg_has_final = bool(text)
        return USED

    def _tool_use(self, block: dict[str, Any]) -> None:
        name = as_str(block.get("name"))
        if not name:
            return
        self.builder.add_tool(name)
        tool_input = block.get("input")
        if not isinstance(tool_input, dict):
            return
        if name == "Skill":
            skill = as_str(tool_input.get("skill"))
            if skill:
                self.builder.add_skill(skill)
        field = FILE_TOOLS.get(name)
        if field:
            target = as_str(tool_input.get(field))
            if target:
                self.builder.add_file(target)

    def _snapshot(self, record: dict[str, Any]) -> str:
        snapshot = record.get("snapshot")
        if not isinstance(snapshot, dict):
            return "wrong_field_type"
        backups = snapshot.get("trackedFileBackups")
        if isinstance(backups, dict):
            for name in backups:
                if isinstance(name, str):
                    self.builder.add_file(name)
        return USED

    def finish(self) -> tuple[list[DigestBuilder], dict[str, Any], list[str]]:
        state = builder_state(self.builder)
        state.update(excluded=self.excluded, msg_id=self.msg_id, msg_final=self.msg_has_final)
        if self.excluded:
            return [], state, [self.session_id]
        return ([self.builder] if self.builder.has_content else []), state, []


def _scan(path: Path, skipped: Counter[str]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as entries:
            return list(entries)
    except FileNotFoundError:
        return []
    except OSError:
        skipped["unreadable_dir"] += 1
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


class ClaudeCodeSource:
    name = NAME

    def default_home(self) -> Path:
        return paths.claude_home()

    def discover(self, home: Path, skipped: Counter[str]) -> Iterator[Path]:
        for project_dir in sorted(_scan(home / "projects", skipped), key=lambda e: e.name):
            if not _is_dir(project_dir):
                continue
            for entry in sorted(_scan(Path(project_dir.path), skipped), key=lambda e: e.name):
                if _is_dir(entry):
                    # <session>/subagents/agent-*.jsonl: sub-agent work, never the user's own
                    for sub in _scan(Path(entry.path) / "subagents", skipped):
                        if sub.name.endswith(".jsonl"):
                            skipped["subagent_file"] += 1
                    continue
                if not entry.name.endswith(".jsonl"):
                    continue
                if entry.name.startswith("agent-"):
                    skipped["subagent_file"] += 1
                    continue
                yield Path(entry.path)

    def parser(self, path: str, state: dict[str, Any]) -> ClaudeParser:
        return ClaudeParser(path, state)

    def head_cwds(self, path: Path) -> set[str]:
        try:
            with open(path, "rb") as handle:
                head = handle.read(256 * 1024)
        except OSError:
            return set()
        if re.search(rb'"entrypoint"\s*:\s*"sdk-cli"', head):
            return set()
        cwds: set[str] = set()
        for match in _HEAD_CWD.finditer(head):
            try:
                cwds.add(json.loads(b'"' + match.group(1) + b'"'))
            except ValueError:
                continue
        return cwds
