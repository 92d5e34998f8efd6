"""Claude Code transcripts: ``<claude home>/projects/<slug>/<session id>.jsonl`` (DESIGN §9).

Excluded: sub-agent transcripts (``<session>/subagents/agent-*.jsonl``, older ``agent-*.jsonl``,
inline ``isSidechain`` records) and our own replays (cwd named ``REPLAY_DIR_PREFIX…``).

Headless is decided per turn, not per session: an interactive session may later be continued
with ``claude -p --resume`` / ``-p -c``, which appends ``sdk-cli`` turns to the same file. Claude
Code 2.1 marks each prompt with ``promptSource`` (``typed`` / ``sdk`` / ``system``) and
``turnOrigin`` (``human`` / ``sdk`` / ``task_notification``); older files only have the record's
``entrypoint`` (``sdk-cli`` = headless). A session with no typed prompt at all is a headless
session and yields nothing.

Not user intent: meta messages, slash-command bodies, command output, interrupted-request notes,
system reminders, task notifications, compaction summaries, tool results, and the many 2.1 record
types that carry context rather than conversation (``attachment`` — CLAUDE.md arrives as one —,
``mode``, ``api-request``, ``prompt_snapshot``, ``cost-state``, …).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict
from collections.abc import Iterator

import msgspec

from .. import paths
from .base import IGNORED, USED, TranscriptParser, as_str, clip, open_regular

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
# A user record starting with one of these ends the open turn: what follows answers the harness.
TURN_BREAKERS = ("<task-notification>", "This session is being continued from a previous conversation")
_SYSTEM_REMINDER = re.compile(r"<system-reminder>[\s\S]{0,200000}?</system-reminder>")
_HEAD_CWD = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.){1,4096})"')

# The fields ``record`` reads, at every depth (``TranscriptParser.fields``): any other value — a
# tool's output, an attachment, an API request, token usage — is checked but never built.
# A JSON value of the wrong kind for a field still decodes (as what it is) and is judged by ``record``.
Scalar = str | int | float | bool | None
# keys computed from FILE_TOOLS, not a literal: a type checker cannot read them
_ToolInput = TypedDict("_ToolInput", {name: Any for name in {"skill", *FILE_TOOLS.values()}}, total=False)  # type: ignore[misc]


class _Block(TypedDict, total=False):
    type: Any
    text: Any
    name: Any
    input: _ToolInput | list | Scalar


class _Opaque(TypedDict, total=False):
    """An object where ``record`` expects a string or a list: nothing in it is read."""


class _Message(TypedDict, total=False):
    content: str | list[_Block | list | Scalar] | _Opaque | int | float | bool | None
    model: Any
    id: Any


class _Snapshot(TypedDict, total=False):
    trackedFileBackups: Any


class _Record(TypedDict, total=False):
    type: Any
    isSidechain: Any
    cwd: Any
    gitBranch: Any
    timestamp: Any
    uuid: Any
    isMeta: Any
    isCompactSummary: Any
    isApiErrorMessage: Any
    promptSource: Any
    turnOrigin: Any
    entrypoint: Any
    message: _Message | list | Scalar
    snapshot: _Snapshot | list | Scalar


def user_text(text: str) -> str:
    """The user's own words in a message, or "" when it is meta / harness output."""
    if "<system-reminder>" in text:
        text = _SYSTEM_REMINDER.sub("", text)
    text = text.strip()
    if not text or text.startswith(META_PREFIXES):
        return ""
    return text


HEADLESS = "headless"
TYPED = "typed"
OTHER = "other"  # the harness speaking: task notifications and the like


def prompt_origin(record: dict[str, Any]) -> str:
    """Who wrote a user record: ``typed`` (a person), ``headless`` (``claude -p``) or ``other``."""
    source, origin = record.get("promptSource"), record.get("turnOrigin")
    if source == "sdk" or origin == "sdk":
        return HEADLESS
    if source == "typed" or origin == "human":
        return TYPED
    if isinstance(source, str) or isinstance(origin, str):
        return OTHER
    return HEADLESS if record.get("entrypoint") == "sdk-cli" else TYPED  # files before 2.1


def explicitly_typed(record: dict[str, Any]) -> bool:
    return record.get("promptSource") == "typed" or record.get("turnOrigin") == "human"


class ClaudeParser(TranscriptParser):
    """Parses one session file, possibly resuming after the bytes a previous harvest consumed."""

    source = NAME
    fields = msgspec.json.Decoder(_Record)

    def __init__(self, path: str, state: dict[str, Any]) -> None:
        super().__init__(path, state, Path(path).stem)
        msg_id = state.get("msg_id")
        self.msg_id: str | None = msg_id if isinstance(msg_id, str) else None
        self.msg_has_final = state.get("msg_final") is True
        self.headless = state.get("headless") is True  # a headless prompt was seen

    def record(self, record: dict[str, Any]) -> str:
        kind = record.get("type")
        if not isinstance(kind, str):
            return "wrong_field_type"
        if record.get("isSidechain") is True:
            return "sidechain"
        status = self.project_cwd(record.get("cwd"))
        if status != USED:
            return status
        branch = record.get("gitBranch")
        if isinstance(branch, str) and branch and branch != self.builder.branch:
            self.builder.branch = clip(branch, 300)
        if kind == "user":
            return self._user(record)
        if kind == "assistant":
            return self._assistant(record)
        if kind == "file-history-snapshot":
            return self._snapshot(record)
        return IGNORED  # summary, system, attachment, mode, api-request, cost-state, ...: no intent, no reply

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
            if not texts and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                return IGNORED  # a tool's answer: part of the open turn
        else:
            return "wrong_field_type"
        self.builder.touch(record.get("timestamp"))
        if record.get("isMeta") is True:
            return IGNORED
        if record.get("isCompactSummary") is True:
            self.builder.close_turn()
            return IGNORED
        origin = prompt_origin(record)
        if origin == TYPED and self.started_headless() and not explicitly_typed(record):
            origin = HEADLESS  # a `claude -p` session stays headless unless a prompt says it was typed
        if origin == HEADLESS:
            self.builder.close_turn()
            first = not self.headless and not (self.builder.prompt_base or self.builder.n_user_turns)
            self.headless = True
            return "headless_session" if first else "headless_turn"
        text = user_text("\n".join(texts))
        if origin == OTHER or not text:
            if "\n".join(texts).lstrip().startswith(TURN_BREAKERS):
                self.builder.close_turn()
            return IGNORED  # meta, interrupted-request notes, notifications
        self.builder.add_prompt(text)
        self.msg_id, self.msg_has_final = None, False
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
        tool_uses: list[dict[str, Any]] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = as_str(block.get("text"))
                if text and text.strip():
                    texts.append(text.strip())
            elif kind == "tool_use":
                tool_uses.append(block)
        self.builder.touch(record.get("timestamp"))
        if not self.builder.in_turn:
            return IGNORED  # a reply to a notification, a compaction or a headless turn
        for block in tool_uses:
            self._tool_use(block)
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
        if isinstance(backups, dict) and self.builder.in_turn:
            for name in backups:
                if isinstance(name, str):
                    self.builder.add_file(name)
        return USED

    def started_headless(self) -> bool:
        return self.headless and not (self.builder.prompt_base or self.builder.n_user_turns)

    def extra_state(self) -> dict[str, Any]:
        return {"msg_id": self.msg_id, "msg_final": self.msg_has_final, "headless": self.headless}

    def left_out(self) -> bool:
        return self.excluded is not None or self.started_headless()


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
    whole_file = False

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
            with open_regular(path) as handle:
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
